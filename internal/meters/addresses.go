package meters

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Address is one address of a source schema's pool, as AddressesFunc
// reports it.
type Address struct {
	Address  string // an IP address, without the port
	Conns    int    // open connections to it
	InFlight int    // requests in flight to it
	Ejected  bool   // out of service for now (outlier detection)
	Gone     bool   // no longer in DNS's answer; its connections drain
}

// AddressesFunc reports the addresses of a path's pools: it calls yield
// once per source schema whose pool knows its addresses. Like
// ConnectionsFunc it runs at every collection, concurrently with requests
// and reloads, and reads counts only.
type AddressesFunc func(yield func(schema string, addrs []Address))

// addressInstruments are the address gauges and the ejection counter.
type addressInstruments struct {
	addresses metric.Int64ObservableGauge
	conns     metric.Int64ObservableGauge
	inFlight  metric.Int64ObservableGauge
	ejected   metric.Int64ObservableGauge
	ejections metric.Int64Counter
}

func newAddressInstruments(m metric.Meter, check func(error)) addressInstruments {
	var a addressInstruments
	var err error
	a.addresses, err = m.Int64ObservableGauge(MetricAddresses,
		metric.WithUnit("{address}"),
		metric.WithDescription("Addresses a source schema's host resolves to, in service or ejected (gone ones excluded)."))
	check(err)
	a.conns, err = m.Int64ObservableGauge(MetricAddressConnections,
		metric.WithUnit("{connection}"),
		metric.WithDescription("Open connections to one address of a source schema."))
	check(err)
	a.inFlight, err = m.Int64ObservableGauge(MetricAddressInFlight,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests in flight to one address of a source schema: the load the pool balances on."))
	check(err)
	a.ejected, err = m.Int64ObservableGauge(MetricAddressEjected,
		metric.WithUnit("1"),
		metric.WithDescription("1 while an address of a source schema is ejected by outlier detection, 0 otherwise."))
	check(err)
	a.ejections, err = m.Int64Counter(MetricEjections,
		metric.WithUnit("{ejection}"),
		metric.WithDescription("Ejections of an address of a source schema by outlier detection."))
	check(err)
	return a
}

// ObserveAddresses makes f feed the address gauges of path, with
// fusion.source_schema, fusion.transport.path and, per address,
// fusion.transport.address as attributes. Registration and unregister
// work as ObserveConnections'.
//
// On a nil *Set it registers nothing, and unregister does nothing.
func (s *Set) ObserveAddresses(path string, f AddressesFunc) (unregister func() error, err error) {
	if s == nil || f == nil {
		return func() error { return nil }, nil
	}
	a := s.addresses
	pathAttr := AttrPath.String(path)
	reg, err := s.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		f(func(schema string, addrs []Address) {
			schemaAttr := AttrSourceSchema.String(schema)
			live := 0
			for _, ad := range addrs {
				attrs := metric.WithAttributeSet(attribute.NewSet(schemaAttr, pathAttr, AttrAddress.String(ad.Address)))
				o.ObserveInt64(a.conns, int64(ad.Conns), attrs)
				o.ObserveInt64(a.inFlight, int64(ad.InFlight), attrs)
				ejected := int64(0)
				if ad.Ejected {
					ejected = 1
				}
				o.ObserveInt64(a.ejected, ejected, attrs)
				if !ad.Gone {
					live++
				}
			}
			o.ObserveInt64(a.addresses, int64(live), metric.WithAttributeSet(attribute.NewSet(schemaAttr, pathAttr)))
		})
		return nil
	}, a.addresses, a.conns, a.inFlight, a.ejected)
	if err != nil {
		return nil, fmt.Errorf("telemetry: observing the addresses of path %q: %w", path, err)
	}
	return reg.Unregister, nil
}

// RecordEjection counts an ejection of an address of source schema
// schema on path. ctx is that of the request whose failure ejected it.
//
// On a nil *Set it does nothing.
func (s *Set) RecordEjection(ctx context.Context, schema, path string) {
	if s == nil {
		return
	}
	s.addresses.ejections.Add(ctx, 1, schemaPath(schema, path))
}
