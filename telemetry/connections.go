package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ConnectionsFunc reports a path's connections: it calls yield once per
// source schema with the number of open connections (busy and idle) and
// the number of those that are idle. It runs whenever the MeterProvider
// collects, concurrently with requests and reloads, so it must be safe
// for that, and it should be quick: it reads counts, it does not compute
// them.
type ConnectionsFunc func(yield func(schema string, open, idle int))

// ObserveConnections makes f feed the fusion.transport.connections.open
// and .idle gauges of path ("legacy" or "sockets"), with fusion.source_schema
// and fusion.transport.path as attributes. A path registers once, when it
// starts, and calls unregister when it closes. Two registrations that yield
// the same schema on the same path report the same series, and the
// gauge keeps only one of their values.
//
// On a nil *Telemetry it registers nothing, and unregister does nothing.
func (t *Telemetry) ObserveConnections(path string, f ConnectionsFunc) (unregister func() error, err error) {
	if t == nil || f == nil {
		return func() error { return nil }, nil
	}
	pathAttr := AttrPath.String(path)
	reg, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		f(func(schema string, open, idle int) {
			attrs := metric.WithAttributeSet(attribute.NewSet(AttrSourceSchema.String(schema), pathAttr))
			o.ObserveInt64(t.connsOpen, int64(open), attrs)
			o.ObserveInt64(t.connsIdle, int64(idle), attrs)
		})
		return nil
	}, t.connsOpen, t.connsIdle)
	if err != nil {
		return nil, fmt.Errorf("telemetry: observing the connections of path %q: %w", path, err)
	}
	return reg.Unregister, nil
}
