package sockets

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

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The addresses of a pool on the wire, in this package's own tests: a
// name resolved by a stub resolver to loopback servers on 127.0.0.2,
// 127.0.0.3, ... with one port (wireSet), each counting the connections
// it accepted and closed and the requests it got. Waits are on the
// servers' changes and the resolver's lookups, each bounded by
// testTimeout.

// wireSet is n loopback servers that one URL reaches through a
// wireResolver: http://replicas.test:PORT/graphql.
type wireSet struct {
	url  string
	port string
	r    []*wireReplica

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every accept and close
	order   []int         // the replica of each connection accepted, in order
	live    int           // connections open now, at every replica
	peak    int           // the most open at once
	// hold is closed to let the requests whose body is "hold" answer, and
	// replaced (release); held receives each held request's replica.
	hold chan struct{}
	held chan int
}

// wireReplica is one server of a wireSet. Its counts are guarded by
// wireSet.mu.
type wireReplica struct {
	ip             netip.Addr
	opened, closed int
	hits           atomic.Int64
	status         atomic.Int32 // the answer's status; 0: 200
	reset          atomic.Bool  // close the connection without a byte, not answer
	delay          atomic.Int64 // a pause before each answer, in nanoseconds
}

// newWireSet starts n replicas, each server set up further by opts (over
// TLS, h2c: harness_pool_internal_test.go) before it starts. A request
// whose body is "id=X" is answered {"data":{"id":"X","by":"IP"}}.
func newWireSet(t *testing.T, n int, opts ...wireOption) *wireSet {
	t.Helper()
	ls, port := wiretest.ListenLoopbacks(t, n)
	s := &wireSet{
		url: "http://replicas.test:" + port + "/graphql", port: port,
		changed: make(chan struct{}), hold: make(chan struct{}), held: make(chan int, 16),
	}
	for i, l := range ls {
		r := &wireReplica{ip: netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", i+2))}
		s.r = append(s.r, r)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			r.hits.Add(1)
			if req.Header.Get("Upgrade") == "echo-test" {
				s.upgrade(w, req, i)
				return
			}
			if d := time.Duration(r.delay.Load()); d > 0 {
				pause := time.NewTimer(d) // the replica is slow: what the test is about
				<-pause.C
			}
			if string(body) == "hold" {
				s.mu.Lock()
				hold := s.hold
				s.mu.Unlock()
				s.held <- i
				<-hold
			}
			if r.reset.Load() {
				resetConn(w)
				return
			}
			if st := r.status.Load(); st != 0 {
				w.WriteHeader(int(st))
			}
			if id, ok := strings.CutPrefix(string(body), "id="); ok {
				io.WriteString(w, `{"data":{"id":"`+id+`","by":"`+r.ip.String()+`"}}`)
				return
			}
			io.WriteString(w, `{"data":{}}`)
		}))
		srv.Listener.Close()
		srv.Listener = l
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			s.mu.Lock()
			defer s.mu.Unlock()
			switch st {
			case http.StateNew:
				r.opened++
				s.order = append(s.order, i)
				s.live++
				s.peak = max(s.peak, s.live)
			case http.StateClosed, http.StateHijacked:
				r.closed++
				s.live--
			default:
				return
			}
			close(s.changed)
			s.changed = make(chan struct{})
		}
		for _, o := range opts {
			o(srv)
		}
		if srv.TLS != nil {
			s.url = "https://replicas.test:" + port + "/graphql"
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
	}
	t.Cleanup(s.release) // a held request never outlives the test
	return s
}

// upgrade upgrades to an echo protocol: each line read is written back
// after "echo ". A request with X-Hold is held (as a "hold" body is)
// before its 101.
func (s *wireSet) upgrade(w http.ResponseWriter, req *http.Request, i int) {
	if req.Header.Get("X-Hold") != "" {
		s.mu.Lock()
		hold := s.hold
		s.mu.Unlock()
		s.held <- i
		<-hold
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo-test\r\nConnection: Upgrade\r\n\r\n")
	brw.Flush()
	for {
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		brw.WriteString("echo " + line)
		brw.Flush()
	}
}

// ips returns the addresses of the replicas named (all when none is).
func (s *wireSet) ips(which ...int) []netip.Addr {
	if len(which) == 0 {
		for i := range s.r {
			which = append(which, i)
		}
	}
	var out []netip.Addr
	for _, i := range which {
		out = append(out, s.r[i].ip)
	}
	return out
}

// open returns the connections open now at each replica, and how many
// each accepted.
func (s *wireSet) open() (open, opened []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.r {
		open = append(open, r.opened-r.closed)
		opened = append(opened, r.opened)
	}
	return open, opened
}

// waitUntil waits until cond holds for the connections open at each
// replica and those each accepted.
func (s *wireSet) waitUntil(t *testing.T, what string, cond func(open, opened []int) bool) {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		open, opened := s.open()
		if cond(open, opened) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("not within %v: %s (open %v, accepted %v)", testTimeout, what, open, opened)
		}
	}
}

// hits returns each replica's request count.
func (s *wireSet) hits() []int64 {
	var out []int64
	for _, r := range s.r {
		out = append(out, r.hits.Load())
	}
	return out
}

// release lets the held requests answer; the next ones are held again.
func (s *wireSet) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.hold)
	s.hold = make(chan struct{})
}

// wireResolver answers each lookup with its answer (or err), counts the
// lookups and signals each.
type wireResolver struct {
	mu      sync.Mutex
	answer  []netip.Addr
	err     error
	hosts   []string // each lookup's "network host"
	lookups atomic.Int64
	notify  chan struct{} // capacity 1
}

func newWireResolver(ips []netip.Addr) *wireResolver {
	return &wireResolver{answer: ips, notify: make(chan struct{}, 1)}
}

func (r *wireResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	out, err := append([]netip.Addr(nil), r.answer...), r.err
	r.hosts = append(r.hosts, network+" "+host)
	r.mu.Unlock()
	r.lookups.Add(1)
	select {
	case r.notify <- struct{}{}:
	default:
	}
	return out, err
}

func (r *wireResolver) set(ips []netip.Addr, err error) {
	r.mu.Lock()
	r.answer, r.err = ips, err
	r.mu.Unlock()
}

// waitApplied waits until what the resolver answers now has been taken
// in: two more lookups, since the pool starts a lookup only once it has
// taken the last one in.
func (r *wireResolver) waitApplied(t *testing.T) {
	t.Helper()
	target := r.lookups.Load() + 2
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for r.lookups.Load() < target {
		select {
		case <-r.notify:
		case <-deadline.C:
			t.Fatalf("the pool did not look its host up again within %v (%d lookups)", testTimeout, r.lookups.Load())
		}
	}
}

// openWire opens schema products at set's URL on engine, resolved by res,
// refreshing every 10ms, edited further by edit (nil: none); events
// receives its address events (nil: none kept).
func openWire(t *testing.T, engine string, set *wireSet, res backend.Resolver, events chan<- backend.AddressEvent, edit func(*env.SourceSchema)) *poolTransport {
	t.Helper()
	cfg := engineSchema(engine, set.url, func(s *env.SourceSchema) {
		s.DNSRefresh = 10 * time.Millisecond
		if edit != nil {
			edit(s)
		}
	})
	tr := openSchemaWith(t, cfg, func(s *backend.Schema) {
		s.Resolver = res
		if events != nil {
			s.OnAddress = func(_ context.Context, ev backend.AddressEvent) { events <- ev }
		}
	})
	ranOn(t, engine, tr)
	return tr
}

// wirePost sends body to u on tr and reads the answer: its status, or
// the error.
func wirePost(tr http.RoundTripper, u, body string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// mustPost sends n requests one after the other; each must be answered
// 200.
func mustPost(t *testing.T, tr http.RoundTripper, u string, n int) {
	t.Helper()
	for range n {
		if st, err := wirePost(tr, u, "{}"); err != nil || st != http.StatusOK {
			t.Fatalf("status %d, %v", st, err)
		}
	}
}

// heldPost is a request held at a replica: which one, and its end.
type heldPost struct {
	at   int
	done chan error
}

// holdPosts sends n requests whose body is "hold", each once the one
// before is held at a replica, so that each choice sees those before it
// in flight.
func holdPosts(t *testing.T, tr http.RoundTripper, set *wireSet, n int) []heldPost {
	t.Helper()
	var out []heldPost
	for range n {
		done := make(chan error, 1)
		go func() {
			_, err := wirePost(tr, set.url, "hold")
			done <- err
		}()
		select {
		case i := <-set.held:
			out = append(out, heldPost{at: i, done: done})
		case err := <-done:
			t.Fatalf("a request to hold ended unheld: %v", err)
		case <-time.After(testTimeout):
			t.Fatalf("a request to hold was held nowhere within %v", testTimeout)
		}
	}
	return out
}

// perReplica counts the held requests at each of n replicas.
func perReplica(held []heldPost, n int) []int {
	out := make([]int, n)
	for _, h := range held {
		out[h.at]++
	}
	return out
}

// awaitHeld waits for the held requests' ends (once released).
func awaitHeld(t *testing.T, held []heldPost) {
	t.Helper()
	for _, h := range held {
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("a held request failed: %v", err)
			}
		case <-time.After(testTimeout):
			t.Fatalf("a released request did not end within %v", testTimeout)
		}
	}
}

// TestWireRemovedAddressIdleClosed: an address that leaves DNS's answer
// has its idle connections closed by the refresh that takes the answer
// in, with no request sent after it; its busy connection closes once its
// request ends, and the request gets its answer. The others keep theirs,
// and take every request while its busy one is held. On both engines.
func TestWireRemovedAddressIdleClosed(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 3)
		res := newWireResolver(set.ips())
		tr := openWire(t, engine, set, res, nil, nil)
		// Six held at once, each sent once the one before is held: the
		// least-loaded choice puts two on each address, on two
		// connections to each.
		held := holdPosts(t, tr, set, 6)
		if h := perReplica(held, 3); h[0] != 2 || h[1] != 2 || h[2] != 2 {
			t.Fatalf("six requests held at once went to %v, want two at each address", h)
		}
		set.release()
		awaitHeld(t, held)
		// One held: its connection is busy, the other to its address
		// idle. That address leaves DNS's answer.
		busy := holdPosts(t, tr, set, 1)[0]
		gone := busy.at
		var keep []int
		for i := range set.r {
			if i != gone {
				keep = append(keep, i)
			}
		}
		before, _ := set.open()
		closedBefore := set.closedAt()
		if before[gone] != 2 {
			t.Fatalf("open %v: want two connections to the address to remove", before)
		}
		res.set(set.ips(keep...), nil)
		res.waitApplied(t)
		// Its idle connection closes with no request sent; its busy one
		// stays open under its request.
		set.waitUntil(t, "the removed address's idle connection closed", func(open, _ []int) bool { return open[gone] == 1 })
		// While its request is held, 8 callers' 120 requests go to the
		// others only, and no connection to it is opened.
		hits := set.hits()
		mustPostAll(t, tr, set.url, 8, 120)
		if after := set.hits(); after[gone] != hits[gone] {
			t.Errorf("the removed address got %d new requests after the refresh, want 0", after[gone]-hits[gone])
		}
		if open, _ := set.open(); open[gone] != 1 {
			t.Errorf("the removed address has %d connections open while its request is held, want 1 (idle ones closed)", open[gone])
		}
		hits = set.hits()
		set.release()
		awaitHeld(t, []heldPost{busy})
		set.waitUntil(t, "the removed address's busy connection closed after its request", func(open, _ []int) bool { return open[gone] == 0 })
		closedNow := set.closedAt()
		for _, i := range keep {
			if closedNow[i] != closedBefore[i] {
				t.Errorf("connections closed per address before the refresh %v, after %v: the other addresses' connections closed too", closedBefore, closedNow)
			}
		}
		mustPost(t, tr, set.url, 10)
		if after := set.hits(); after[gone] != hits[gone] {
			t.Errorf("the removed address got %d requests after the refresh", after[gone]-hits[gone])
		}
	})
}

// TestWireMaxPending: with max_conns_per_host 1 and max_pending_requests
// 2, while one request holds the connection and two wait, a third is
// refused at once with the overload error, unsent; the server saw one
// connection and one request. Once the held request ends, the two that
// waited are served. On both engines.
func TestWireMaxPending(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 1)
		res := newWireResolver(set.ips())
		tr := openWire(t, engine, set, res, nil, func(s *env.SourceSchema) {
			s.MaxConnsPerHost = 1
			s.MaxPendingRequests = 2
		})
		held := holdPosts(t, tr, set, 1)
		waiting := make([]chan error, 2)
		for i := range waiting {
			waiting[i] = make(chan error, 1)
			go func() {
				_, err := wirePost(tr, set.url, "{}")
				waiting[i] <- err
			}()
			waitForWaiters(t, tr.pool, i+1)
		}
		refused := make(chan error, 1)
		go func() {
			_, err := wirePost(tr, set.url, "{}")
			refused <- err
		}()
		select {
		case err := <-refused:
			if !errors.Is(err, fault.ErrOverloaded) {
				t.Errorf("the request over max_pending_requests got %v, want the overload error", err)
			}
		case <-time.After(testTimeout):
			t.Fatalf("the request over max_pending_requests (2 waiting) was not refused within %v", testTimeout)
		}
		if h := set.hits(); h[0] != 1 {
			t.Errorf("the server got %d requests while one was held, want 1", h[0])
		}
		set.release()
		awaitHeld(t, held)
		for _, ch := range waiting {
			select {
			case err := <-ch:
				if err != nil {
					t.Errorf("a request that waited failed: %v", err)
				}
			case <-time.After(testTimeout):
				t.Fatalf("a request that waited was not served within %v", testTimeout)
			}
		}
		if _, opened := set.open(); opened[0] != 1 {
			t.Errorf("%d connections accepted, want 1 (max_conns_per_host)", opened[0])
		}
	})
}
