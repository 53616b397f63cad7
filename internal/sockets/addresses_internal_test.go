package sockets

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/internal/testsupport/testpki"
)

// The address-aware pool on the wire, moved from the root package's
// addresses_test.go (issue 31): one name resolved by a stub resolver to
// replicas on 127.0.0.2, 127.0.0.3, ... (wireSet, openWire). The root
// keeps what needs the request path: the resilience events and the
// telemetry of the addresses, a reload that keeps a pool, the breaker
// when every address fails, and the schema's name in a pool's error.

// TestWireAddressSpread: one name with three addresses, 600 requests from
// 8 callers: every address takes between 20 % and 47 % of them, on both
// engines; the resolver was asked for the URL's host.
func TestWireAddressSpread(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		res := newWireResolver(set.ips())
		tr := openWire(t, engine, set, res, nil, nil)
		mustPostAll(t, tr, set.url, 8, 600)
		checkShares(t, set, 600)
		res.mu.Lock()
		defer res.mu.Unlock()
		if len(res.hosts) == 0 || res.hosts[0] != "ip replicas.test" {
			t.Errorf("lookups %q, want \"ip replicas.test\"", res.hosts)
		}
	})
}

// checkShares fails the test unless every replica of set took between
// 20 % and 47 % of the n requests sent.
func checkShares(t *testing.T, set *wireSet, n int) {
	t.Helper()
	hits := set.hits()
	for i, h := range hits {
		if share := float64(h) / float64(n); share < 0.20 || share > 0.47 {
			t.Errorf("address %s took %d of %d requests (%.0f %%), want 20-47 %%; all: %v", set.r[i].ip, h, n, share*100, hits)
		}
	}
	t.Logf("hits per address: %v", hits)
}

// TestWireSlowReplica: a replica that answers 5 ms later than the others
// gets less than its third of the requests: the least-loaded choice sees
// its requests stay in flight longer.
func TestWireSlowReplica(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		set.r[0].delay.Store(int64(5 * time.Millisecond))
		tr := openWire(t, engine, set, newWireResolver(set.ips()), nil, nil)
		mustPostAll(t, tr, set.url, 8, 600)
		hits := set.hits()
		if slow := float64(hits[0]) / 600; slow >= 0.25 {
			t.Errorf("the slow replica took %d of 600 requests (%.0f %%), want under 25 %%; all %v", hits[0], slow*100, hits)
		}
		t.Logf("hits per address, the first slow: %v", hits)
	})
}

// TestWireLifetimeSpread is the case measured before addresses: one name,
// three addresses, conn_lifetime 200ms. The first 24 connections opened
// spread over the addresses within one of even (they all went to the
// first address before).
func TestWireLifetimeSpread(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		tr := openWire(t, engine, set, newWireResolver(set.ips()), nil, func(s *env.SourceSchema) {
			s.ConnLifetime = 200 * time.Millisecond
		})
		// Driven by the connections, not by a number of rounds: a round of
		// requests opens connections, and the next round goes once one of
		// them has closed at its lifetime's end, until 24 were opened. A
		// machine under load only makes the lifetimes end later.
		for set.accepted() < 24 {
			closes := set.closes()
			mustPostAll(t, tr, set.url, 8, 64)
			if set.accepted() >= 24 {
				break
			}
			set.waitUntil(t, "a connection closed at its lifetime's end", func(open, opened []int) bool {
				n := 0
				for i := range open {
					n += opened[i] - open[i]
				}
				return n > closes
			})
		}
		per, _ := set.firstConns(24)
		for i, n := range per {
			if n < 7 || n > 9 {
				t.Errorf("address %s got %d of the first 24 connections, want within one of 8; all %v", set.r[i].ip, n, per)
			}
		}
		t.Logf("first 24 connections per address: %v", per)
	})
}

// TestWireOutlierEjection: an address that answers 503 (or resets) is
// ejected after exactly five failures in a row, the others take its
// share, and it returns after base_ejection; on both engines.
func TestWireOutlierEjection(t *testing.T) {
	for _, mode := range []string{"503", "reset"} {
		t.Run(mode, func(t *testing.T) {
			forEngines(t, func(t *testing.T, engine string) { outlierEjection(t, engine, mode) })
		})
	}
}

func outlierEjection(t *testing.T, engine, mode string) {
	set := newWireSet(t, 3)
	bad := set.r[1]
	failing := func(on bool) {
		if mode == "reset" {
			bad.reset.Store(on)
		} else if on {
			bad.status.Store(http.StatusServiceUnavailable)
		} else {
			bad.status.Store(0)
		}
	}
	failing(true)
	events := make(chan backend.AddressEvent, 16)
	tr := openWire(t, engine, set, newWireResolver(set.ips()), events, func(s *env.SourceSchema) {
		s.OutlierDetection.BaseEjection = 500 * time.Millisecond
	})
	// One caller: every failure of the bad address is its own, in a row.
	ev := untilEjected(t, tr, set.url, events)
	if ev.Address != bad.ip || ev.For != 500*time.Millisecond || ev.Failures != 5 {
		t.Fatalf("event %+v, want the ejection of %s after 5 failures for 500ms", ev, bad.ip)
	}
	if got := bad.hits.Load(); got != 5 {
		t.Errorf("the bad address was ejected after %d requests, want 5 (consecutive_failures)", got)
	}
	// While it is ejected (a short run, well within base_ejection),
	// requests succeed and none reaches it.
	before := set.hits()
	if errs := postAll(tr, set.url, 4, 40); len(errs) > 0 {
		t.Errorf("%d requests failed while the bad address was ejected, first: %v", len(errs), errs[0])
	}
	if got := set.hits()[1] - before[1]; got != 0 {
		t.Errorf("the ejected address got %d requests, want 0", got)
	}
	// The two in service take its share: with one request held on one of
	// them, the least-loaded choice sends the next to the other (never to
	// the ejected one), whichever answers faster.
	held := holdPosts(t, tr, set, 2)
	if h := perReplica(held, 3); h[0] != 1 || h[2] != 1 || h[1] != 0 {
		t.Errorf("two requests held at once went to %v (per address), want one on each address in service", h)
	}
	set.release()
	awaitHeld(t, held)
	failing(false)
	select {
	case ev = <-events:
	case <-time.After(testTimeout):
		t.Fatal("the ejected address never returned")
	}
	if ev.Ejected || ev.Address != bad.ip {
		t.Fatalf("event %+v, want the return of %s", ev, bad.ip)
	}
	// Back in service, it takes requests again, its share at equal load:
	// with one request held on each of the two others, the third goes to
	// it.
	held = holdPosts(t, tr, set, 3)
	if h := perReplica(held, 3); h[0] != 1 || h[1] != 1 || h[2] != 1 {
		t.Errorf("three requests held at once went to %v (per address), want one on each, the returned address too", h)
	}
	set.release()
	awaitHeld(t, held)
	// And one caller at a time (nothing in flight at each choice), at
	// least its third of 30 requests.
	before = set.hits()
	mustPostAll(t, tr, set.url, 1, 30)
	if got := set.hits()[1] - before[1]; got < 10 {
		t.Errorf("the returned address took %d of 30 requests one at a time, want at least 10; hits before %v, after %v", got, before, set.hits())
	}
}

// TestWireOutlierEveryAddressFailing: with every address answering 503,
// at most one of three is ejected at once (max_ejection_percent 10
// allows one): at least one is, and the two others stay in service. (The
// root's TestOutlierEveryAddressFailing: the breaker then decides.)
func TestWireOutlierEveryAddressFailing(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		for _, r := range set.r {
			r.status.Store(http.StatusServiceUnavailable)
		}
		var ejected, maxEjected atomic.Int64
		events := make(chan backend.AddressEvent, 64)
		tr := openWire(t, engine, set, newWireResolver(set.ips()), events, func(s *env.SourceSchema) {
			s.OutlierDetection.BaseEjection = time.Minute
		})
		for range 60 {
			if st, _, err := wireCall(tr, set.url, "{}"); err != nil || st != http.StatusServiceUnavailable {
				t.Fatalf("status %d, %v; want the replica's 503", st, err)
			}
			for drained := false; !drained; {
				select {
				case ev := <-events:
					if ev.Ejected {
						maxEjected.Store(max(maxEjected.Load(), ejected.Add(1)))
					} else {
						ejected.Add(-1)
					}
				default:
					drained = true
				}
			}
		}
		if m := maxEjected.Load(); m != 1 {
			t.Errorf("%d addresses were ejected at once, want 1 (at least one ejected, two of three in service)", m)
		}
		served := 0
		for _, h := range set.hits() {
			if h > 5 {
				served++
			}
		}
		if served < 2 {
			t.Errorf("hits %v: want at least two addresses kept in service", set.hits())
		}
	})
}

// TestKeyKeepsAddressPool: the pool side of the root's
// TestAddressReloadKeepsEjection. A change of a per-request setting
// (header_timeout) gives an equal Key, so a reload keeps the pool, with
// its addresses, connections and ejections; Plan says kept. A change of
// an address setting (outlier_detection.base_ejection, dns_refresh) gives
// another Key: a new pool.
func TestKeyKeepsAddressPool(t *testing.T) {
	set := newWireSet(t, 1)
	base := func(s *env.SourceSchema) {
		s.DNSRefresh = 20 * time.Millisecond
		s.OutlierDetection.BaseEjection = time.Minute
	}
	keyOf := func(cfg env.Config) backend.Key {
		settings, _ := cfg.Effective("products")
		s := &backend.Schema{Name: "products", URL: parseURL(set.url), Settings: settings, Config: &cfg}
		k, err := Backend{}.Key(s)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, engine := range setting.Engines() {
		prev := engineSchema(engine, set.url, base)
		for _, tc := range []struct {
			name string
			edit func(*env.SourceSchema)
			kept bool
		}{
			{"header_timeout", func(s *env.SourceSchema) { s.HeaderTimeout = 30 * time.Second }, true},
			{"outlier_detection.base_ejection", func(s *env.SourceSchema) { s.OutlierDetection.BaseEjection = time.Hour }, false},
			{"dns_refresh", func(s *env.SourceSchema) { s.DNSRefresh = time.Hour }, false},
		} {
			next := engineSchema(engine, set.url, func(s *env.SourceSchema) {
				base(s)
				tc.edit(s)
			})
			if got := keyOf(prev).Equal(keyOf(next)); got != tc.kept {
				t.Errorf("%s, %s changed: keys equal %t, want %t", engine, tc.name, got, tc.kept)
			}
			want := map[bool]string{true: "kept", false: "replaced"}[tc.kept]
			if plan := Plan(prev, next); len(plan) != 1 || plan[0].Action != want || !slices.Contains(plan[0].Reasons, tc.name) {
				t.Errorf("%s, %s changed: Plan %+v, want %s naming it", engine, tc.name, plan, want)
			}
		}
	}
}

// TestWireDialHookWins: with a Dial hook (SchemaOptions.Dial), the pool
// asks no resolver and the hook gets the URL's host and port.
func TestWireDialHookWins(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 2)
		res := newWireResolver(set.ips())
		var mu sync.Mutex
		var addrs []string
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			addrs = append(addrs, addr)
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, set.r[0].ip.String()+":"+set.port)
		}
		tr := openSchemaWith(t, engineSchema(engine, set.url, func(s *env.SourceSchema) { s.DNSRefresh = 10 * time.Millisecond }), func(s *backend.Schema) {
			s.Resolver = res
			s.Options.Dial = dial
		})
		ranOn(t, engine, tr)
		mustPostAll(t, tr, set.url, 4, 40)
		if n := res.lookups.Load(); n != 0 {
			t.Errorf("the resolver was asked %d times, want 0 with a Dial hook", n)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, a := range addrs {
			if a != "replicas.test:"+set.port {
				t.Errorf("the Dial hook got %q, want the URL's host and port", a)
			}
		}
		if h := set.hits(); h[1] != 0 || h[0] != 40 {
			t.Errorf("hits %v: want all 40 where the hook dialled", h)
		}
	})
}

// TestWireResolverRecovers: while the resolver gives no address, a
// request fails unsent with an error that names the host (the pool does
// not dial the name behind the resolver's back); once the resolver
// answers, requests reach the replicas.
func TestWireResolverRecovers(t *testing.T) {
	set := newWireSet(t, 2)
	res := newWireResolver(nil) // an empty answer: the addresses known (none) stay
	tr := openWire(t, env.EngineH1, set, res, nil, nil)
	if _, _, err := wireCall(tr, set.url, "{}"); err == nil || !strings.Contains(err.Error(), `no address known for host "replicas.test"`) {
		t.Fatalf("request with no address: %v, want an error naming the host", err)
	}
	if h := set.hits(); h[0]+h[1] != 0 {
		t.Errorf("hits %v with no address known", h)
	}
	res.set(set.ips(), nil)
	res.waitApplied(t)
	mustPostAll(t, tr, set.url, 2, 20)
	if h := set.hits(); h[0] == 0 || h[1] == 0 {
		t.Errorf("hits %v: want both addresses used", h)
	}
}

// TestWireSpreadHTTP2: over h2c (nethttp), requests spread over the
// addresses too, on multiplexed connections: with
// http2.multiple_connections disabled, one connection per address.
func TestWireSpreadHTTP2(t *testing.T) {
	for _, multiple := range []env.Toggle{env.Enabled, env.Disabled} {
		t.Run("multiple_connections="+multiple.String(), func(t *testing.T) {
			set := newWireSet(t, 3, h2cReplicas)
			tr := openWire(t, env.EngineNetHTTP, set, newWireResolver(set.ips()), nil, func(s *env.SourceSchema) {
				s.HTTPVersion = "h2c"
				s.HTTP2.MultipleConnections = multiple
			})
			mustPostAll(t, tr, set.url, 8, 600)
			checkShares(t, set, 600)
			if multiple == env.Disabled {
				if _, opened := set.open(); slices.ContainsFunc(opened, func(n int) bool { return n != 1 }) {
					t.Errorf("connections per address %v, want 1 each (one HTTP/2 connection per address)", opened)
				}
			}
		})
	}
}

// TestWireTLSChecksTheName: over https the pool dials the addresses, and
// the server's certificate is checked against the URL's host name, sent
// as SNI, not against the address dialled: a certificate for
// replicas.test passes on every address, one for the addresses only
// (127.0.0.2...) fails. On nethttp (HTTP/2 by ALPN) and h1 (1.1).
func TestWireTLSChecksTheName(t *testing.T) {
	pki := testpki.New(t, t.TempDir())
	forEngines(t, func(t *testing.T, engine string) {
		for _, tc := range []struct {
			name  string
			names []string
			ok    bool
		}{
			{"cert for the name", []string{"replicas.test"}, true},
			{"cert for the addresses", []string{"127.0.0.2", "127.0.0.3"}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				set := newWireSet(t, 2, tlsReplicas(pki.Server(t, tc.names...)))
				tr := openWire(t, engine, set, newWireResolver(set.ips()), nil, overTLS(engine, pki.CAFile))
				errs := postAll(tr, set.url, 4, 40)
				if tc.ok {
					if len(errs) > 0 {
						t.Fatalf("%d requests failed, first: %v", len(errs), errs[0])
					}
					if h := set.hits(); h[0] == 0 || h[1] == 0 {
						t.Errorf("hits %v: want both addresses used", h)
					}
					return
				}
				if len(errs) != 40 || !strings.Contains(errs[0].Error(), "certificate") {
					t.Fatalf("%d of 40 requests failed (first: %v), want all, on the certificate", len(errs), errs)
				}
				if h := set.hits(); h[0]+h[1] != 0 {
					t.Errorf("hits %v with a certificate that does not name the host", h)
				}
			})
		}
	})
}

// TestWireRemovedFirstIdle: the first of three addresses leaves the
// answer while its connections are all idle: they close at once, it gets
// no request, and the two others, which follow it in the pool's list,
// are all still served (dropping it once shifted the list under the loop
// that walked it).
func TestWireRemovedFirstIdle(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		res := newWireResolver(set.ips())
		tr := openWire(t, engine, set, res, nil, nil)
		mustPostAll(t, tr, set.url, 8, 90)
		res.set(set.ips(1, 2), nil)
		res.waitApplied(t)
		set.waitUntil(t, "the removed address's connections closed", func(open, _ []int) bool { return open[0] == 0 })
		before := set.hits()
		mustPostAll(t, tr, set.url, 8, 90)
		after := set.hits()
		if after[0] != before[0] || after[1] == before[1] || after[2] == before[2] {
			t.Errorf("hits before %v, after %v: want none on the removed address, some on each other", before, after)
		}
	})
}

// TestWireFewerConnsThanAddresses: with max_conns_per_host 2 and three
// addresses, the pool cannot open a connection to every address: a
// request whose chosen address has none takes an idle connection to
// another address in service instead of waiting for one it may not open.
func TestWireFewerConnsThanAddresses(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		tr := openWire(t, engine, set, newWireResolver(set.ips()), nil, func(s *env.SourceSchema) { s.MaxConnsPerHost = 2 })
		mustPostAll(t, tr, set.url, 8, 400) // each within testTimeout: one stuck in the queue fails
		if m := set.maxOpen(); m > 2 {
			t.Errorf("%d connections were open at once, want at most max_conns_per_host 2", m)
		}
	})
}

// TestWireEjectionFreesRoom: at max_conns_per_host 2 with two addresses,
// the ejected one's idle connection closes, so the pool opens a second
// connection to the address in service instead of serving every request
// on one.
func TestWireEjectionFreesRoom(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 2)
		set.r[0].status.Store(http.StatusServiceUnavailable)
		events := make(chan backend.AddressEvent, 8)
		tr := openWire(t, engine, set, newWireResolver(set.ips()), events, func(s *env.SourceSchema) {
			s.MaxConnsPerHost = 2
			s.OutlierDetection.BaseEjection = time.Minute
			s.OutlierDetection.MaxEjectionPercent = 50
		})
		untilEjected(t, tr, set.url, events)
		set.waitUntil(t, "the ejected address's connection closed", func(open, _ []int) bool { return open[0] == 0 })
		mustPostAll(t, tr, set.url, 4, 200)
		if open, _ := set.open(); open[1] != 2 {
			t.Errorf("the address in service has %d connections, want 2 (the ejected one's slot freed)", open[1])
		}
	})
}

// TestWireAnswersStayWithTheirCaller: 8 callers send 800 requests with
// their own ids over three addresses while one address flips between
// answering, 503 and resets (ejected and back) and DNS drops and
// restores another: every answer a caller gets is its own request's,
// never another caller's, on both engines.
func TestWireAnswersStayWithTheirCaller(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		res := newWireResolver(set.ips())
		tr := openWire(t, engine, set, res, nil, func(s *env.SourceSchema) {
			s.OutlierDetection.BaseEjection = 20 * time.Millisecond
			s.OutlierDetection.MaxEjectionPercent = 50
		})
		var (
			wg           sync.WaitGroup
			next         atomic.Int64
			ok, mismatch atomic.Int64
			first        atomic.Value
		)
		const calls = 800
		flip := set.r[1]
		for range 8 {
			wg.Go(func() {
				for n := next.Add(1); n <= calls; n = next.Add(1) {
					switch n % 100 { // the faults, driven by the requests' progress
					case 10:
						flip.status.Store(http.StatusServiceUnavailable)
					case 30:
						flip.status.Store(0)
						flip.reset.Store(true)
					case 50:
						flip.reset.Store(false)
						res.set(set.ips(0, 1), nil)
					case 70:
						res.set(set.ips(), nil)
					}
					id := fmt.Sprintf("call-%d", n)
					st, body, err := wireCall(tr, set.url, "id="+id)
					if err != nil || st != http.StatusOK {
						continue // a reset or a 503 of the flipping address: not an answer
					}
					ok.Add(1)
					if !strings.Contains(body, `"id":"`+id+`"`) {
						mismatch.Add(1)
						first.CompareAndSwap(nil, fmt.Sprintf("%s got %s", id, body))
					}
				}
			})
		}
		wg.Wait()
		if m := mismatch.Load(); m > 0 {
			t.Fatalf("%d of %d answers were another request's; first: %v", m, ok.Load(), first.Load())
		}
		if ok.Load() < calls/2 {
			t.Errorf("only %d of %d requests answered", ok.Load(), calls)
		}
	})
}
