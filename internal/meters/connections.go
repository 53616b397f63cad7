package meters

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

// newConnectionInstruments creates the connection gauges.
func (s *Set) newConnectionInstruments(m metric.Meter, check func(error)) {
	var err error
	s.connsOpen, err = m.Int64ObservableGauge(MetricConnectionsOpen,
		metric.WithUnit("{connection}"),
		metric.WithDescription("Open connections to a source schema, busy and idle."))
	check(err)
	s.connsIdle, err = m.Int64ObservableGauge(MetricConnectionsIdle,
		metric.WithUnit("{connection}"),
		metric.WithDescription("Idle connections to a source schema, a subset of the open ones."))
	check(err)
}

// ObserveConnections makes f feed the fusion.transport.connections.open
// and .idle gauges of path ("legacy" or "sockets"), with fusion.source_schema
// and fusion.transport.path as attributes. A path registers once, when it
// starts, and calls unregister when it closes. Two registrations that yield
// the same schema on the same path report the same series, and the
// gauge keeps only one of their values.
//
// On a nil *Set it registers nothing, and unregister does nothing.
func (s *Set) ObserveConnections(path string, f ConnectionsFunc) (unregister func() error, err error) {
	if s == nil || f == nil {
		return func() error { return nil }, nil
	}
	pathAttr := AttrPath.String(path)
	reg, err := s.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		f(func(schema string, open, idle int) {
			attrs := metric.WithAttributeSet(attribute.NewSet(AttrSourceSchema.String(schema), pathAttr))
			o.ObserveInt64(s.connsOpen, int64(open), attrs)
			o.ObserveInt64(s.connsIdle, int64(idle), attrs)
		})
		return nil
	}, s.connsOpen, s.connsIdle)
	if err != nil {
		return nil, fmt.Errorf("telemetry: observing the connections of path %q: %w", path, err)
	}
	return reg.Unregister, nil
}
