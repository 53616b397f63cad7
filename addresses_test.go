package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

// The addresses of a sockets schema as the request path sees them: the
// resilience events and the telemetry of its addresses, a reload that
// keeps its pool, the breaker when every address fails, the schema's name
// in the error of a pool that knows no address. The pool's own rules of
// addresses (spread, ejection, DNS changes, TLS names, HTTP/2, a Dial
// hook) are tested beside it, in internal/sockets
// (addresses_internal_test.go, addrs_*_internal_test.go).

// The replica modes: how a replica answers.
const (
	answerOK  int32 = iota // 200 and a small JSON body
	answer503              // 503
)

// replica is one loopback server of a source schema with several
// addresses: every replica of a set listens on its own 127.0.0.x and the
// same port, so that one URL reaches any of them, as DNS would give.
type replica struct {
	ip   netip.Addr
	mode atomic.Int32 // answerOK, answer503
	hits atomic.Int64 // requests that reached it
	// dials counts the connections it accepted.
	dials atomic.Int64
}

// replicaSet is n replicas and the URL that reaches them through a
// stubResolver: http://replicas.test:PORT/graphql.
type replicaSet struct {
	r    []*replica
	port string
	url  string
}

// newReplicas starts n replicas on 127.0.0.2, 127.0.0.3, ... with one port.
func newReplicas(t *testing.T, n int) *replicaSet {
	t.Helper()
	ls, port := wiretest.ListenLoopbacks(t, n)
	set := &replicaSet{port: port, url: "http://replicas.test:" + port + "/graphql"}
	for i, l := range ls {
		r := &replica{ip: netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", i+2))}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
		srv.Listener.Close()
		srv.Listener = l
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				r.dials.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		set.r = append(set.r, r)
	}
	return set
}

func (r *replica) serve(w http.ResponseWriter, req *http.Request) {
	io.Copy(io.Discard, req.Body)
	r.hits.Add(1)
	if r.mode.Load() == answer503 {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"data":{"ok":true}}`)
}

// ips returns the addresses of the replicas.
func (s *replicaSet) ips() []netip.Addr {
	out := make([]netip.Addr, 0, len(s.r))
	for _, r := range s.r {
		out = append(out, r.ip)
	}
	return out
}

// hits returns each replica's request count.
func (s *replicaSet) hits() []int64 {
	out := make([]int64, len(s.r))
	for i, r := range s.r {
		out[i] = r.hits.Load()
	}
	return out
}

// stubResolver answers every lookup with its answer.
type stubResolver struct {
	answer []netip.Addr
}

func newStubResolver(ips []netip.Addr) *stubResolver { return &stubResolver{answer: ips} }

func (r *stubResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return append([]netip.Addr(nil), r.answer...), nil
}

// addressConfig is a sockets configuration on engine for a schema at the
// replicas' URL, refreshing DNS every 20ms; edit changes it further.
func addressConfig(engine, url string, edit func(*env.SourceSchema)) env.Config {
	return engineConfig(engine, url, func(s *env.SourceSchema) {
		s.DNSRefresh = 20 * time.Millisecond
		if edit != nil {
			edit(s)
		}
	})
}

// callAll sends n Posts from callers goroutines at once and returns the
// errors, each answer read to its end.
func callAll(inv transport.Invoker, callers, n int) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ok}"}`))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// untilEjected sends one call at a time until ejected receives (the
// resilience hook saw an AddressEjected), at most 100 calls.
func untilEjected(t *testing.T, inv transport.Invoker, ejected <-chan struct{}) {
	t.Helper()
	for range 100 {
		callAll(inv, 1, 1)
		select {
		case <-ejected:
			return
		default:
		}
	}
	t.Fatal("no ejection after 100 calls")
}

// TestAddressEventsReported: the pool's ejection of an address and its
// return reach the resilience hook as AddressEjected and AddressReturned,
// with the schema, the address and the ejection's length, on both
// engines. (When and what the pool ejects: internal/sockets'
// TestWireOutlierEjection.)
func TestAddressEventsReported(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		bad := set.r[1]
		bad.mode.Store(answer503)
		events := make(chan transport.ResilienceEvent, 16)
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.OutlierDetection.BaseEjection = 100 * time.Millisecond
		}), transport.WithResolver(newStubResolver(set.ips())), transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
			if ev.Kind == transport.AddressEjected || ev.Kind == transport.AddressReturned {
				events <- ev
			}
		}))
		var ev transport.ResilienceEvent
		for i := 0; ; i++ {
			if i == 100 {
				t.Fatalf("no ejection after 100 calls; the bad address got %d", bad.hits.Load())
			}
			callAll(inv, 1, 1)
			select {
			case ev = <-events:
			default:
				continue
			}
			break
		}
		if ev.Kind != transport.AddressEjected || ev.Address != bad.ip.String() || ev.Schema != "products" || ev.Path != env.PathSockets || ev.For != 100*time.Millisecond {
			t.Fatalf("event %+v, want the ejection of %s from products for 100ms", ev, bad.ip)
		}
		bad.mode.Store(answerOK)
		select {
		case ev = <-events:
		case <-time.After(gapGuard):
			t.Fatal("the ejected address never returned")
		}
		if ev.Kind != transport.AddressReturned || ev.Address != bad.ip.String() || ev.Schema != "products" || ev.For != 0 {
			t.Fatalf("event %+v, want the return of %s to products", ev, bad.ip)
		}
	})
}

// TestAddressNoAddressNamesSchema: while the resolver gives no address, a
// call fails unsent with an error that names the schema and the host.
// (The pool's recovery once the resolver answers: internal/sockets'
// TestWireResolverRecovers.)
func TestAddressNoAddressNamesSchema(t *testing.T) {
	set := newReplicas(t, 2)
	inv := newInvoker(t, addressConfig(env.EngineH1, set.url, nil), transport.WithResolver(newStubResolver(nil)))
	_, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ok}"}`))
	if err == nil || !strings.Contains(err.Error(), `source schema "products"`) || !strings.Contains(err.Error(), `no address known for host "replicas.test"`) {
		t.Fatalf("call with no address: %v, want an error naming the schema and the host", err)
	}
	if h := set.hits(); h[0]+h[1] != 0 {
		t.Errorf("hits %v with no address known", h)
	}
}

// TestOutlierEveryAddressFailing: with every address answering 503, the
// outlier detection keeps two of three in service (internal/sockets'
// TestWireOutlierEveryAddressFailing), so the 503s reach the request
// path and the circuit breaker decides: it opens.
func TestOutlierEveryAddressFailing(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		for _, r := range set.r {
			r.mode.Store(answer503)
		}
		var ejected atomic.Int64
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.OutlierDetection.BaseEjection = time.Minute
			s.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 30, OpenFor: time.Minute}
		}), transport.WithResolver(newStubResolver(set.ips())), transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
			if ev.Kind == transport.AddressEjected {
				ejected.Add(1)
			}
		}))
		var open bool
		for i := 0; i < 200 && !open; i++ {
			resp, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ok}"}`))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			open = errors.Is(err, fault.ErrCircuitOpen)
		}
		if !open {
			t.Fatal("the breaker did not open while every address failed")
		}
		if n := ejected.Load(); n != 1 {
			t.Errorf("%d ejections before the breaker opened, want 1 (two of three kept in service)", n)
		}
	})
}

// TestAddressReloadKeepsEjection: a reload that changes no address
// setting keeps the pool: its addresses, its connections and an ejection
// under way.
func TestAddressReloadKeepsEjection(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		bad := set.r[0]
		bad.mode.Store(answer503)
		res := newStubResolver(set.ips())
		ejectedCh := make(chan struct{}, 1)
		edit := func(s *env.SourceSchema) { s.OutlierDetection.BaseEjection = time.Minute }
		cfg := addressConfig(engine, set.url, edit)
		inv := newInvoker(t, cfg, transport.WithResolver(res), transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
			if ev.Kind == transport.AddressEjected {
				ejectedCh <- struct{}{}
			}
		}))
		untilEjected(t, inv, ejectedCh)
		dials := set.r[1].dials.Load() + set.r[2].dials.Load()
		cfg2 := addressConfig(engine, set.url, func(s *env.SourceSchema) {
			edit(s)
			s.HeaderTimeout = 30 * time.Second // a per-request setting: the pool stays
		})
		if err := inv.Reload(cfg2); err != nil {
			t.Fatal(err)
		}
		before := bad.hits.Load()
		if errs := callAll(inv, 1, 30); len(errs) > 0 {
			t.Fatalf("%d calls failed after the reload, first: %v", len(errs), errs[0])
		}
		if got := bad.hits.Load() - before; got != 0 {
			t.Errorf("the ejected address got %d requests after the reload, want 0 (ejection kept)", got)
		}
		if got := set.r[1].dials.Load() + set.r[2].dials.Load(); got != dials {
			t.Errorf("the reload opened %d new connections, want 0 (pool kept)", got-dials)
		}
	})
}

// TestAddressTelemetry: the gauges show a schema's addresses, the
// connections and in-flight requests of each, the one ejected, and the
// ejection is counted.
func TestAddressTelemetry(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	set := newReplicas(t, 3)
	set.r[2].mode.Store(answer503)
	res := newStubResolver(set.ips())
	ejected := make(chan struct{}, 1)
	inv := newInvoker(t, addressConfig(env.EngineH1, set.url, func(s *env.SourceSchema) {
		s.OutlierDetection.BaseEjection = time.Minute
	}), transport.WithResolver(res), transport.WithTelemetry(tel), transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
		if ev.Kind == transport.AddressEjected {
			ejected <- struct{}{}
		}
	}))
	untilEjected(t, inv, ejected)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	perAddr := map[string]map[string]int64{} // metric -> address -> value
	total := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			add := func(attrs attribute.Set, v int64) {
				total[m.Name] += v
				if a, ok := attrs.Value(telemetry.AttrAddress); ok {
					if perAddr[m.Name] == nil {
						perAddr[m.Name] = map[string]int64{}
					}
					perAddr[m.Name][a.AsString()] = v
				}
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			}
		}
	}
	if total[telemetry.MetricAddresses] != 3 || total[telemetry.MetricEjections] != 1 {
		t.Errorf("addresses %d, ejections %d; want 3 and 1", total[telemetry.MetricAddresses], total[telemetry.MetricEjections])
	}
	bad := set.r[2].ip.String()
	if e := perAddr[telemetry.MetricAddressEjected]; e[bad] != 1 || len(e) != 3 || total[telemetry.MetricAddressEjected] != 1 {
		t.Errorf("ejected gauge %v, want 1 for %s only, of three", e, bad)
	}
	// The ejected address's connection closed once its last answer was
	// read; the two others keep theirs.
	if c := perAddr[telemetry.MetricAddressConnections]; len(c) != 3 || c[bad] != 0 || total[telemetry.MetricAddressConnections] != 2 {
		t.Errorf("connections per address %v, want one each but none to the ejected %s", c, bad)
	}
	if f := total[telemetry.MetricAddressInFlight]; f != 0 {
		t.Errorf("%d in flight with no call under way", f)
	}
}
