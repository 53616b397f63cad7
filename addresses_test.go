package transport_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"slices"
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
	"github.com/fusiongo/transport/internal/testsupport/testpki"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

// The replica modes: how a replica answers.
const (
	answerOK    int32 = iota // 200 and a small JSON body
	answer503                // 503
	answerReset              // closes the connection without a byte
)

// replica is one loopback server of a source schema with several
// addresses: every replica of a set listens on its own 127.0.0.x and the
// same port, so that one URL reaches any of them, as DNS would give.
type replica struct {
	ip    netip.Addr
	mode  atomic.Int32 // answerOK, answer503, answerReset
	delay atomic.Int64 // a pause before each answer, in nanoseconds
	hits  atomic.Int64 // requests that reached it
	// dials counts the connections it accepted; open those open now.
	dials, open atomic.Int64
	// changed is signalled (non-blocking, capacity 1) whenever open
	// changes, for waitClosed.
	changed chan struct{}
	// hold, when not nil, holds a request whose body is "hold" until it is
	// closed; held receives one value per request held. Set before the
	// first request, or under holdMu (withHolds, release).
	holdMu sync.Mutex
	hold   chan struct{}
	held   chan struct{}
}

// withHolds makes every replica of set hold the requests whose body is
// "hold" (holdOn), until releaseHeld.
func withHolds(set *replicaSet) {
	for _, r := range set.r {
		r.holdMu.Lock()
		r.hold, r.held = make(chan struct{}), make(chan struct{}, 8)
		r.holdMu.Unlock()
	}
}

// release lets the requests held at r answer, and holds the next ones
// until the next release.
func (r *replica) release() {
	r.holdMu.Lock()
	defer r.holdMu.Unlock()
	close(r.hold)
	r.hold = make(chan struct{})
}

// replicaSet is n replicas and the URL that reaches them through a
// stubResolver: http://replicas.test:PORT/graphql.
type replicaSet struct {
	r    []*replica
	port string
	url  string

	// closes counts the connections closed at every replica; closedSig
	// is signalled (non-blocking, capacity 1) after each, for awaitClose.
	closes    atomic.Int64
	closedSig chan struct{}

	mu    sync.Mutex
	order []int // the replica of each connection accepted, in order
	open  int   // connections open now, at every replica
	most  int   // the most open at once
}

// maxOpen is the most connections that were open at once, at all the
// replicas together.
func (s *replicaSet) maxOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// A replicaOption changes how newReplicas serves.
type replicaOption int

const (
	h2c      replicaOption = iota + 1 // HTTP/2 without TLS besides HTTP/1.1
	upgrades                          // a request asking Upgrade: echo-test switches
)

// withTLS makes newReplicas serve TLS with cert (HTTP/1.1 and HTTP/2 by
// ALPN), at https://replicas.test:PORT/graphql.
type withTLS struct{ cert tls.Certificate }

// newReplicas starts n replicas on 127.0.0.2, 127.0.0.3, ... with one port.
func newReplicas(t *testing.T, n int, opts ...replicaOption) *replicaSet {
	t.Helper()
	return newReplicasTLS(t, n, nil, opts...)
}

// newReplicasTLS is newReplicas serving TLS when tlsOpt is not nil.
func newReplicasTLS(t *testing.T, n int, tlsOpt *withTLS, opts ...replicaOption) *replicaSet {
	t.Helper()
	ls, port := wiretest.ListenLoopbacks(t, n)
	set := &replicaSet{port: port, url: "http://replicas.test:" + port + "/graphql", closedSig: make(chan struct{}, 1)}
	if tlsOpt != nil {
		set.url = "https://replicas.test:" + port + "/graphql"
	}
	for i, l := range ls {
		r := &replica{ip: netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", i+2)), changed: make(chan struct{}, 1)}
		var h http.Handler = http.HandlerFunc(r.serve)
		if slices.Contains(opts, upgrades) {
			closed := make(chan error, 1)
			echo := echoUpgrade(t, "", closed)
			h = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				r.hits.Add(1)
				echo(w, req)
			})
		}
		srv := httptest.NewUnstartedServer(h)
		srv.Listener.Close()
		srv.Listener = l
		if slices.Contains(opts, h2c) {
			srv.Config.Protocols = new(http.Protocols)
			srv.Config.Protocols.SetHTTP1(true)
			srv.Config.Protocols.SetUnencryptedHTTP2(true)
		}
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				set.mu.Lock()
				set.order = append(set.order, i)
				set.open++
				set.most = max(set.most, set.open)
				set.mu.Unlock()
				r.dials.Add(1)
				r.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				set.mu.Lock()
				set.open--
				set.mu.Unlock()
				r.open.Add(-1)
				set.closes.Add(1)
				select {
				case set.closedSig <- struct{}{}:
				default:
				}
			}
			select {
			case r.changed <- struct{}{}:
			default:
			}
		}
		if tlsOpt != nil {
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{tlsOpt.cert}}
			srv.EnableHTTP2 = true
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
		set.r = append(set.r, r)
	}
	return set
}

func (r *replica) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.hits.Add(1)
	if d := time.Duration(r.delay.Load()); d > 0 {
		pause := time.NewTimer(d) // the replica is slow: that is what the test is about
		<-pause.C
	}
	r.holdMu.Lock()
	hold, held := r.hold, r.held
	r.holdMu.Unlock()
	if string(body) == "hold" && hold != nil {
		held <- struct{}{}
		<-hold
	}
	switch r.mode.Load() {
	case answer503:
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	case answerReset:
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // a reset, not a clean close
			}
			c.Close()
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		if id, ok := strings.CutPrefix(string(body), "id="); ok {
			// The answer names the request it answers, and the replica.
			io.WriteString(w, `{"data":{"id":"`+id+`","by":"`+r.ip.String()+`"}}`)
			return
		}
		io.WriteString(w, `{"data":{"ok":true}}`)
	}
}

// ips returns the addresses of replicas i... (all when none is named).
func (s *replicaSet) ips(which ...int) []netip.Addr {
	if len(which) == 0 {
		for i := range s.r {
			which = append(which, i)
		}
	}
	out := make([]netip.Addr, 0, len(which))
	for _, i := range which {
		out = append(out, s.r[i].ip)
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

// waitClosed waits until replica r has no open connection.
func (r *replica) waitClosed(t *testing.T) {
	t.Helper()
	deadline := time.After(gapGuard)
	for r.open.Load() != 0 {
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("replica %s still has %d connections open", r.ip, r.open.Load())
		}
	}
}

// stubResolver answers every lookup with its current answer and counts
// the lookups.
type stubResolver struct {
	mu      sync.Mutex
	answer  []netip.Addr
	hosts   []string // every host looked up
	lookups atomic.Int64
	notify  chan struct{} // signalled (capacity 1) after each lookup
}

func newStubResolver(ips []netip.Addr) *stubResolver {
	return &stubResolver{answer: ips, notify: make(chan struct{}, 1)}
}

func (r *stubResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	out := append([]netip.Addr(nil), r.answer...)
	r.hosts = append(r.hosts, network+" "+host)
	r.mu.Unlock()
	r.lookups.Add(1)
	select {
	case r.notify <- struct{}{}:
	default:
	}
	return out, nil
}

func (r *stubResolver) set(ips []netip.Addr) {
	r.mu.Lock()
	r.answer = ips
	r.mu.Unlock()
}

// waitApplied waits until the answer set now has been taken in: two more
// lookups, since the pool starts its next lookup only after it has taken
// in the last one.
func (r *stubResolver) waitApplied(t *testing.T) {
	t.Helper()
	target := r.lookups.Load() + 2
	deadline := time.After(gapGuard)
	for r.lookups.Load() < target {
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("the pool did not resolve its host again (%d lookups)", r.lookups.Load())
		}
	}
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

// TestAddressSpread: one name with three addresses, 600 calls from 8
// callers: every address takes between 20 % and 47 % of them, on both
// engines; the resolver was asked for the URL's host.
func TestAddressSpread(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		res := newStubResolver(set.ips())
		inv := newInvoker(t, addressConfig(engine, set.url, nil), transport.WithResolver(res))
		if errs := callAll(inv, 8, 600); len(errs) > 0 {
			t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
		}
		hits := set.hits()
		for i, h := range hits {
			if share := float64(h) / 600; share < 0.20 || share > 0.47 {
				t.Errorf("address %s took %d of 600 calls (%.0f %%), want 20-47 %%; all: %v", set.r[i].ip, h, share*100, hits)
			}
		}
		t.Logf("hits per address: %v", hits)
		res.mu.Lock()
		defer res.mu.Unlock()
		if len(res.hosts) == 0 || res.hosts[0] != "ip replicas.test" {
			t.Errorf("lookups %q, want \"ip replicas.test\"", res.hosts)
		}
	})
}

// TestAddressSlowReplica: a replica that answers 5 ms later than the
// others gets less than its third of the calls: the least-loaded choice
// sees its requests stay in flight longer.
func TestAddressSlowReplica(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		set.r[0].delay.Store(int64(5 * time.Millisecond))
		res := newStubResolver(set.ips())
		inv := newInvoker(t, addressConfig(engine, set.url, nil), transport.WithResolver(res))
		if errs := callAll(inv, 8, 600); len(errs) > 0 {
			t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
		}
		hits := set.hits()
		if slow := float64(hits[0]) / 600; slow >= 0.25 {
			t.Errorf("the slow replica took %d of 600 calls (%.0f %%), want under 25 %%; all %v", hits[0], slow*100, hits)
		}
		t.Logf("hits per address, the first slow: %v", hits)
	})
}

// TestAddressLifetimeSpread is the case measured before addresses: one
// name, three addresses, conn_lifetime 200ms. The connections opened
// spread over the addresses within one of even (they all went to the
// first address before).
func TestAddressLifetimeSpread(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		res := newStubResolver(set.ips())
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.ConnLifetime = 200 * time.Millisecond
		}), transport.WithResolver(res))
		dials := func() (n int64) {
			for _, r := range set.r {
				n += r.dials.Load()
			}
			return n
		}
		// Driven by the connections, not by a number of rounds: a round of
		// calls opens connections, and the next round goes once one of
		// them has closed at its lifetime's end (a replica saw a close),
		// until 24 were opened. A machine under load only makes the
		// lifetimes end later; gapGuard, per round, keeps a lifetime that
		// never ends from hanging the test.
		for dials() < 24 {
			closes := set.closes.Load()
			if errs := callAll(inv, 8, 64); len(errs) > 0 {
				t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
			}
			if dials() >= 24 {
				break
			}
			if !awaitClose(set, closes, gapGuard) {
				t.Fatalf("only %d connections opened, and none closed within %v: the lifetime did not end them", dials(), gapGuard)
			}
		}
		// The first 24 connections, as the case measured before addresses.
		set.mu.Lock()
		first := append([]int(nil), set.order[:24]...)
		set.mu.Unlock()
		per := make([]int, len(set.r))
		for _, i := range first {
			per[i]++
		}
		for i, n := range per {
			if n < 7 || n > 9 {
				t.Errorf("address %s got %d of the first 24 connections, want within one of 8; all %v", set.r[i].ip, n, per)
			}
		}
		t.Logf("first 24 connections per address: %v", per)
	})
}

// awaitClose waits until a connection of set closes after closes (the
// count of closes set had before), at most within; false if none did.
func awaitClose(set *replicaSet, closes int64, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for set.closes.Load() <= closes {
		select {
		case <-set.closedSig:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// TestAddressRemovedFromDNS: an address that leaves the resolver's answer
// gets no new request after the next refresh, its idle connections close,
// and its busy one closes once its request ends; the request in flight on
// it finishes with its answer.
func TestAddressRemovedFromDNS(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		gone := set.r[2]
		gone.hold, gone.held = make(chan struct{}), make(chan struct{}, 8)
		res := newStubResolver(set.ips())
		inv := newInvoker(t, addressConfig(engine, set.url, nil), transport.WithResolver(res))
		if errs := callAll(inv, 8, 90); len(errs) > 0 {
			t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
		}
		// Hold one request on the address to remove: send held requests
		// until one reaches it (the others answer at once).
		heldDone := make(chan error, 1)
		for tries := 0; ; tries++ {
			if tries == 20 {
				t.Fatal("no held request reached the address to remove")
			}
			done := make(chan error, 1)
			go func() {
				resp, err := inv.Post(context.Background(), "products", []byte("hold"))
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			select {
			case <-gone.held:
				heldDone = done
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				continue
			}
			break
		}
		res.set(set.ips(0, 1))
		res.waitApplied(t)
		before := gone.hits.Load()
		if errs := callAll(inv, 8, 120); len(errs) > 0 {
			t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
		}
		if got := gone.hits.Load() - before; got != 0 {
			t.Errorf("the removed address got %d new requests after the refresh, want 0", got)
		}
		if open := gone.open.Load(); open != 1 {
			t.Errorf("the removed address has %d connections open while its request is held, want 1 (idle ones closed)", open)
		}
		close(gone.hold)
		if err := <-heldDone; err != nil {
			t.Errorf("the request in flight on the removed address failed: %v", err)
		}
		gone.waitClosed(t)
	})
}

// TestOutlierEjection: an address that answers 503 (or resets) is ejected
// after exactly five failures in a row, the others take its share, and it
// returns after base_ejection; on both engines.
func TestOutlierEjection(t *testing.T) {
	for _, mode := range []struct {
		name string
		m    int32
	}{{"503", answer503}, {"reset", answerReset}} {
		t.Run(mode.name, func(t *testing.T) {
			forEngines(t, func(t *testing.T, engine string) {
				set := newReplicas(t, 3)
				bad := set.r[1]
				bad.mode.Store(mode.m)
				withHolds(set)
				res := newStubResolver(set.ips())
				events := make(chan transport.ResilienceEvent, 16)
				inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
					s.OutlierDetection.BaseEjection = 500 * time.Millisecond
				}), transport.WithResolver(res), transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
					if ev.Kind == transport.AddressEjected || ev.Kind == transport.AddressReturned {
						events <- ev
					}
				}))
				// One caller: every failure of the bad address is its own,
				// in a row.
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
				if ev.Kind != transport.AddressEjected || ev.Address != bad.ip.String() || ev.Schema != "products" || ev.For != 500*time.Millisecond {
					t.Fatalf("event %+v, want the ejection of %s for 500ms", ev, bad.ip)
				}
				if got := bad.hits.Load(); got != 5 {
					t.Errorf("the bad address was ejected after %d requests, want 5 (consecutive_failures)", got)
				}
				// While it is ejected (a short run, well within
				// base_ejection), calls succeed and none reaches it.
				before := set.hits()
				if errs := callAll(inv, 4, 40); len(errs) > 0 {
					t.Errorf("%d calls failed while the bad address was ejected, first: %v", len(errs), errs[0])
				}
				after := set.hits()
				if got := after[1] - before[1]; got != 0 {
					t.Errorf("the ejected address got %d requests, want 0", got)
				}
				// The two in service take its share: with one request held
				// on one of them, the least-loaded choice sends the next to
				// the other (never to the ejected one), whichever answers
				// faster.
				held := holdOn(t, inv, set, 2)
				if h := heldWhere(held); h[0] != 1 || h[2] != 1 || h[1] != 0 {
					t.Errorf("two requests held at once went to %v (per address), want one on each address in service", h)
				}
				releaseHeld(t, set, held)
				bad.mode.Store(answerOK)
				select {
				case ev = <-events:
				case <-time.After(gapGuard):
					t.Fatal("the ejected address never returned")
				}
				if ev.Kind != transport.AddressReturned || ev.Address != bad.ip.String() {
					t.Fatalf("event %+v, want the return of %s", ev, bad.ip)
				}
				// Back in service, it takes requests again, its share at
				// equal load: with one request held on each of the two
				// others, the third goes to it.
				held = holdOn(t, inv, set, 3)
				if h := heldWhere(held); h[0] != 1 || h[1] != 1 || h[2] != 1 {
					t.Errorf("three requests held at once went to %v (per address), want one on each, the returned address too", h)
				}
				releaseHeld(t, set, held)
				// And one caller at a time (nothing in flight at each
				// choice), at least its third of 30 calls.
				before = set.hits()
				if errs := callAll(inv, 1, 30); len(errs) > 0 {
					t.Errorf("%d calls failed after the return, first: %v", len(errs), errs[0])
				}
				if got := set.hits()[1] - before[1]; got < 10 {
					t.Errorf("the returned address took %d of 30 calls one at a time, want at least 10; hits before %v, after %v", got, before, set.hits())
				}
			})
		})
	}
}

// heldCall is one request held at a replica (holdOn): where it is held,
// and its end.
type heldCall struct {
	at   int // the replica's index
	done chan error
}

// holdOn sends n requests whose body is "hold", one after the other, each
// once the one before is held at a replica (so each choice sees those
// before it in flight), and returns them, held. Every replica of set must
// have hold and held set (withHolds).
func holdOn(t *testing.T, inv transport.Invoker, set *replicaSet, n int) []heldCall {
	t.Helper()
	var out []heldCall
	for range n {
		done := make(chan error, 1)
		go func() {
			resp, err := inv.Post(context.Background(), "products", []byte("hold"))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
		cases := make([]reflect.SelectCase, 0, len(set.r)+2)
		for _, r := range set.r {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.held)})
		}
		guard := time.NewTimer(gapGuard)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(done)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(guard.C)})
		i, v, _ := reflect.Select(cases)
		guard.Stop()
		switch {
		case i < len(set.r):
			out = append(out, heldCall{at: i, done: done})
		case i == len(set.r):
			t.Fatalf("a request to hold ended unheld: %v", v.Interface())
		default:
			t.Fatalf("a request to hold was not held at any replica within %v", gapGuard)
		}
	}
	return out
}

// heldWhere counts the held requests per replica (of three).
func heldWhere(held []heldCall) []int {
	per := make([]int, 3)
	for _, h := range held {
		per[h.at]++
	}
	return per
}

// releaseHeld lets the held requests answer and waits for their ends. The
// replicas' hold channels are replaced, for the next holdOn.
func releaseHeld(t *testing.T, set *replicaSet, held []heldCall) {
	t.Helper()
	for _, r := range set.r {
		r.release()
	}
	for _, h := range held {
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("a held request failed: %v", err)
			}
		case <-time.After(gapGuard):
			t.Fatalf("a released request did not end within %v", gapGuard)
		}
	}
}

// TestOutlierEveryAddressFailing: with every address answering 503, at
// most one of three is ejected (max_ejection_percent 10 allows one), at
// least two stay in service, and the circuit breaker decides: it opens.
func TestOutlierEveryAddressFailing(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		for _, r := range set.r {
			r.mode.Store(answer503)
		}
		res := newStubResolver(set.ips())
		var ejected, maxEjected atomic.Int64
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.OutlierDetection.BaseEjection = time.Minute
			s.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 30, OpenFor: time.Minute}
		}), transport.WithResolver(res), transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
			switch ev.Kind {
			case transport.AddressEjected:
				n := ejected.Add(1)
				for m := maxEjected.Load(); n > m && !maxEjected.CompareAndSwap(m, n); m = maxEjected.Load() {
				}
			case transport.AddressReturned:
				ejected.Add(-1)
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

// TestAddressDialHookWins: with a SchemaOptions.Dial hook, the pool asks
// no resolver and the hook gets the URL's host and port.
func TestAddressDialHookWins(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 2)
		res := newStubResolver(set.ips())
		var mu sync.Mutex
		var addrs []string
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			addrs = append(addrs, addr)
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, set.r[0].ip.String()+":"+set.port)
		}
		inv := newInvoker(t, addressConfig(engine, set.url, nil), transport.WithResolver(res),
			transport.WithSchemaOptions("products", transport.SchemaOptions{Dial: dial}))
		if errs := callAll(inv, 4, 40); len(errs) > 0 {
			t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
		}
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

// TestAddressResolverRecovers: while the resolver gives no address, a
// call fails unsent with an error that names the schema and the host
// (the pool does not dial the name behind the resolver's back); once the
// resolver answers, calls reach the replicas.
func TestAddressResolverRecovers(t *testing.T) {
	set := newReplicas(t, 2)
	res := newStubResolver(nil) // an empty answer: the addresses known (none) stay
	inv := newInvoker(t, addressConfig(env.EngineH1, set.url, nil), transport.WithResolver(res))
	_, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ok}"}`))
	if err == nil || !strings.Contains(err.Error(), `source schema "products"`) || !strings.Contains(err.Error(), `no address known for host "replicas.test"`) {
		t.Fatalf("call with no address: %v, want an error naming the schema and the host", err)
	}
	if h := set.hits(); h[0]+h[1] != 0 {
		t.Errorf("hits %v with no address known", h)
	}
	res.set(set.ips())
	res.waitApplied(t)
	if errs := callAll(inv, 2, 20); len(errs) > 0 {
		t.Fatalf("%d calls failed once the resolver answered, first: %v", len(errs), errs[0])
	}
	if h := set.hits(); h[0] == 0 || h[1] == 0 {
		t.Errorf("hits %v: want both addresses used", h)
	}
}

// TestAddressConnectFailuresResolveAtOnce: when every known address fails
// to connect, the pool looks its host up at once, without waiting for
// dns_refresh (an hour here): the next call reaches the address DNS gives
// now.
func TestAddressConnectFailuresResolveAtOnce(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 2)
		// Listen on the port nowhere else: 127.0.0.9 has no server.
		res := newStubResolver([]netip.Addr{netip.MustParseAddr("127.0.0.9")})
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.DNSRefresh = time.Hour
		}), transport.WithResolver(res))
		if _, err := inv.Post(context.Background(), "products", []byte(`{"query":"{ok}"}`)); err == nil {
			t.Fatal("a call to an address with no server succeeded")
		}
		res.set(set.ips(1))
		// The failed dial started a lookup; the pool takes its answer in
		// a moment. Call until a call gets through: a failed call starts
		// another lookup, unless one is under way (then its answer comes
		// in next). The pause only paces the calls; nothing is asserted
		// on time, and with dns_refresh an hour no lookup but those that
		// failures start can help.
		ok := false
		for try := 0; try < 200 && !ok; try++ {
			ok = len(callAll(inv, 1, 1)) == 0
			if !ok {
				pace := time.NewTimer(10 * time.Millisecond)
				select {
				case <-res.notify:
				case <-pace.C:
				}
				pace.Stop()
			}
		}
		if !ok {
			t.Fatalf("calls still fail after the answer changed (%d lookups)", res.lookups.Load())
		}
		if n := res.lookups.Load(); n < 2 {
			t.Errorf("%d lookups, want the start's and one after the connect failure", n)
		}
		if h := set.hits(); h[1] != 1 {
			t.Errorf("hits %v, want the call on the address DNS gave after the failure", h)
		}
	})
}

// TestAddressSpreadHTTP2: over h2c (nethttp), requests spread over the
// addresses too, on multiplexed connections.
func TestAddressSpreadHTTP2(t *testing.T) {
	for _, multiple := range []env.Toggle{env.Enabled, env.Disabled} {
		t.Run("multiple_connections="+multiple.String(), func(t *testing.T) {
			set := newReplicas(t, 3, h2c)
			res := newStubResolver(set.ips())
			inv := newInvoker(t, addressConfig(env.EngineNetHTTP, set.url, func(s *env.SourceSchema) {
				s.HTTPVersion = "h2c"
				s.HTTP2.MultipleConnections = multiple
			}), transport.WithResolver(res))
			if errs := callAll(inv, 8, 600); len(errs) > 0 {
				t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
			}
			hits := set.hits()
			for i, h := range hits {
				if share := float64(h) / 600; share < 0.20 || share > 0.47 {
					t.Errorf("address %s took %d of 600 calls (%.0f %%), want 20-47 %%; all: %v", set.r[i].ip, h, share*100, hits)
				}
			}
			t.Logf("hits per address: %v", hits)
			if multiple == env.Disabled {
				for _, r := range set.r {
					if d := r.dials.Load(); d != 1 {
						t.Errorf("address %s got %d connections, want 1 (one HTTP/2 connection per address)", r.ip, d)
					}
				}
			}
		})
	}
}

// TestAddressTLSChecksTheName: over https the pool dials the addresses,
// and the server's certificate is checked against the URL's host name,
// sent as SNI, not against the address dialled: a certificate for
// replicas.test passes on every address, one for the addresses only
// (127.0.0.2...) fails. On nethttp (HTTP/2 by ALPN) and h1 (1.1).
func TestAddressTLSChecksTheName(t *testing.T) {
	pki := testpki.New(t, "")
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
				set := newReplicasTLS(t, 2, &withTLS{cert: pki.Server(t, tc.names...)})
				res := newStubResolver(set.ips())
				inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
					s.TLS.CAFile = pki.CAFile
				}), transport.WithResolver(res))
				errs := callAll(inv, 4, 40)
				if tc.ok {
					if len(errs) > 0 {
						t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
					}
					if h := set.hits(); h[0] == 0 || h[1] == 0 {
						t.Errorf("hits %v: want both addresses used", h)
					}
					return
				}
				if len(errs) != 40 || !strings.Contains(errs[0].Error(), "certificate") {
					t.Fatalf("%d of 40 calls failed (first: %v), want all, on the certificate", len(errs), errs)
				}
				if h := set.hits(); h[0]+h[1] != 0 {
					t.Errorf("hits %v with a certificate that does not name the host", h)
				}
			})
		}
	})
}

// TestAddressUpgrade: on h1, a request that switches protocols goes to
// one of the addresses the resolver gave (the name itself resolves
// nowhere).
func TestAddressUpgrade(t *testing.T) {
	set := newReplicas(t, 2, upgrades)
	res := newStubResolver(set.ips())
	inv := newInvoker(t, addressConfig(env.EngineH1, set.url, nil), transport.WithResolver(res))
	resp, err := inv.Do(context.Background(), "products", upgradeRequest(t, set.url))
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	if h := set.hits(); h[0]+h[1] != 1 {
		t.Errorf("hits %v, want the one upgrade on a replica", h)
	}
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

// TestAddressRemovedIdle: the first of three addresses leaves the answer
// while its connections are all idle: they close at once, it gets no
// request, and the two others, which follow it in the pool's list, are
// all still served.
func TestAddressRemovedIdle(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		res := newStubResolver(set.ips())
		inv := newInvoker(t, addressConfig(engine, set.url, nil), transport.WithResolver(res))
		if errs := callAll(inv, 8, 90); len(errs) > 0 {
			t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
		}
		res.set(set.ips(1, 2))
		res.waitApplied(t)
		set.r[0].waitClosed(t)
		before := set.hits()
		if errs := callAll(inv, 8, 90); len(errs) > 0 {
			t.Fatalf("%d calls failed, first: %v", len(errs), errs[0])
		}
		after := set.hits()
		if after[0] != before[0] || after[1] == before[1] || after[2] == before[2] {
			t.Errorf("hits before %v, after %v: want none on the removed address, some on each other", before, after)
		}
	})
}

// TestAddressFewerConnsThanAddresses: with max_conns_per_host 2 and three
// addresses, the pool cannot open a connection to every address: a
// request whose chosen address has none takes an idle connection to
// another address in service instead of waiting for one it may not open.
func TestAddressFewerConnsThanAddresses(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		res := newStubResolver(set.ips())
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.MaxConnsPerHost = 2
			s.HeaderTimeout = 5 * time.Second // a request stuck in the queue fails instead of hanging the test
		}), transport.WithResolver(res))
		if errs := callAll(inv, 8, 400); len(errs) > 0 {
			t.Fatalf("%d of 400 calls failed, first: %v", len(errs), errs[0])
		}
		if m := set.maxOpen(); m > 2 {
			t.Errorf("%d connections were open at once, want at most max_conns_per_host 2", m)
		}
	})
}

// TestOutlierEjectionFreesRoom: at max_conns_per_host 2 with two
// addresses, the ejected one's idle connection closes, so the pool opens
// a second connection to the address in service instead of serving every
// call on one.
func TestOutlierEjectionFreesRoom(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 2)
		set.r[0].mode.Store(answer503)
		res := newStubResolver(set.ips())
		ejected := make(chan struct{}, 1)
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.MaxConnsPerHost = 2
			s.OutlierDetection.BaseEjection = time.Minute
			s.OutlierDetection.MaxEjectionPercent = 50
		}), transport.WithResolver(res), transport.WithResilienceHook(func(ev transport.ResilienceEvent) {
			if ev.Kind == transport.AddressEjected {
				ejected <- struct{}{}
			}
		}))
		untilEjected(t, inv, ejected)
		set.r[0].waitClosed(t)
		if errs := callAll(inv, 4, 200); len(errs) > 0 {
			t.Fatalf("%d calls failed after the ejection, first: %v", len(errs), errs[0])
		}
		if open := set.r[1].open.Load(); open != 2 {
			t.Errorf("the address in service has %d connections, want 2 (the ejected one's slot freed)", open)
		}
	})
}

// TestAddressAnswersStayWithTheirCaller: 8 callers send 800 calls with
// their own ids over three addresses while one address flips between
// answering, 503 and resets (ejected and back) and DNS drops and restores
// another: every answer a caller gets is its own request's, never another
// caller's, on both engines.
func TestAddressAnswersStayWithTheirCaller(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newReplicas(t, 3)
		res := newStubResolver(set.ips())
		inv := newInvoker(t, addressConfig(engine, set.url, func(s *env.SourceSchema) {
			s.OutlierDetection.BaseEjection = 20 * time.Millisecond
			s.OutlierDetection.MaxEjectionPercent = 50
		}), transport.WithResolver(res))
		var (
			wg           sync.WaitGroup
			next         atomic.Int64
			ok, mismatch atomic.Int64
			first        atomic.Value
		)
		const calls = 800
		for range 8 {
			wg.Go(func() {
				for {
					n := next.Add(1)
					if n > calls {
						return
					}
					switch n % 100 { // the faults, driven by the calls' progress
					case 10:
						set.r[1].mode.Store(answer503)
					case 30:
						set.r[1].mode.Store(answerReset)
					case 50:
						set.r[1].mode.Store(answerOK)
						res.set(set.ips(0, 1))
					case 70:
						res.set(set.ips())
					}
					id := fmt.Sprintf("call-%d", n)
					resp, err := inv.Post(context.Background(), "products", []byte("id="+id))
					if err != nil {
						continue // a reset or a 503 of the flipping address: not an answer
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK {
						continue
					}
					ok.Add(1)
					if !strings.Contains(string(body), `"id":"`+id+`"`) {
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
			t.Errorf("only %d of %d calls answered", ok.Load(), calls)
		}
	})
}
