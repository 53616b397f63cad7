package sockets

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
)

// The rules of addrs.go and upgrade.go that the root package's tests
// caught alone: ejection's end and what it closes, a failed or empty
// lookup, a lookup at once after connect failures, the choice of an
// address, and a protocol upgrade's address, bound and connection.

// TestChooseLeastLoaded: choose takes the address with the least load
// (busy connections and dials; once multiplexed, the requests holding its
// connections), then the fewest connections, further ties in turn; never
// an ejected or gone one.
func TestChooseLeastLoaded(t *testing.T) {
	p := outlierPool(3, envoyRules)
	a := p.addrs
	// a0: 2 busy of 2; a1: 1 busy of 3; a2: 1 busy of 1 and one dial.
	a[0].conns, a[0].nidle = 2, 0
	a[1].conns, a[1].nidle = 3, 2
	a[2].conns, a[2].nidle, a[2].dialing = 1, 0, 1
	if got := p.choose(); got != a[1] {
		t.Errorf("chose %s, want %s (load 1, against 2 and 2)", got.ip, a[1].ip)
	}
	// Equal loads: the fewest connections.
	a[0].conns, a[0].nidle = 2, 1
	a[2].dialing = 0
	if got := p.choose(); got != a[2] {
		t.Errorf("chose %s, want %s (load 1 each, the fewest connections)", got.ip, a[2].ip)
	}
	// Equal loads and connections: each in turn.
	for _, x := range a {
		x.conns, x.nidle, x.dialing = 1, 1, 0
	}
	seen := map[*address]int{}
	for range 6 {
		seen[p.choose()]++
	}
	for _, x := range a {
		if seen[x] != 2 {
			t.Errorf("six choices at equal load gave %s %d, want 2 each", x.ip, seen[x])
		}
	}
	// Out of service: never chosen, however idle.
	a[0].ejected = true
	a[1].gone = true
	p.nlive = 2
	a[2].conns, a[2].nidle = 5, 0
	for range 3 {
		if got := p.choose(); got != a[2] {
			t.Fatalf("chose %s (ejected %t, gone %t), want the one in service", got.ip, got.ejected, got.gone)
		}
	}
	// Multiplexed: the requests holding its connections count.
	q := outlierPool(2, envoyRules)
	q.multiplexed.Store(true)
	q.addrs[0].conns, q.addrs[0].claims = 1, 3
	q.addrs[1].conns, q.addrs[1].claims = 1, 1
	if got := q.choose(); got != q.addrs[1] {
		t.Errorf("multiplexed: chose %s, want %s (1 request against 3)", got.ip, q.addrs[1].ip)
	}
}

// TestChooseDialLevel: a new connection goes to an address with no more
// than one connection over the fewest, the least dialled; an address
// that joins starts level with the least dialled of the others.
func TestChooseDialLevel(t *testing.T) {
	p := outlierPool(3, envoyRules)
	a := p.addrs
	a[0].conns, a[0].dials = 3, 3
	a[1].conns, a[1].dials = 1, 9
	a[2].conns, a[2].dials = 2, 5
	if got := p.chooseDial(); got != a[2] {
		t.Errorf("dial to %s, want %s (within one of the fewest, dialled least)", got.ip, a[2].ip)
	}
	p.setAddrs([]netip.Addr{a[0].ip, a[1].ip, a[2].ip, netip.MustParseAddr("10.0.0.9")})
	if n := p.addrs[3]; n.dials != 3 {
		t.Errorf("a joining address starts at %d dials, want 3 (the least of the others)", n.dials)
	}
}

// TestJudge: which outcomes count against an address.
func TestJudge(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://x/", nil)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	left := req.WithContext(gone)
	timedOut, cancel2 := context.WithCancelCause(context.Background())
	cancel2(&fault.RequestTimeoutError{})
	late := req.WithContext(timedOut)
	for _, tc := range []struct {
		name string
		req  *http.Request
		code int
		err  error
		want verdict
	}{
		{"200", req, 200, nil, succeeded},
		{"499", req, 499, nil, succeeded},
		{"500", req, 500, nil, failed},
		{"503", req, 503, nil, failed},
		{"header timeout", req, 0, &fault.HeaderTimeoutError{}, failed},
		{"attempt to send again", req, 0, &backend.AttemptError{Err: io.EOF}, unjudged},
		{"caller left", left, 0, context.Canceled, unjudged},
		{"request timeout", late, 0, context.Canceled, failed},
		{"reset", req, 0, errors.New("connection reset"), failed},
	} {
		var resp *http.Response
		if tc.err == nil {
			resp = &http.Response{StatusCode: tc.code}
		}
		if got := judge(tc.req, resp, tc.err); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSetAddrsKeepsOneInService: an answer that leaves only an ejected
// address ends its ejection: one address stays in service.
func TestSetAddrsKeepsOneInService(t *testing.T) {
	o := envoyRules
	o.percent = 50
	p := outlierPool(2, o)
	defer p.stopAddressing()
	for range o.consecutive {
		p.outcome(p.addrs[1], failed)
	}
	if !p.addrs[1].ejected {
		t.Fatal("not ejected")
	}
	p.setAddrs([]netip.Addr{p.addrs[1].ip})
	if a, _ := p.target(); a == nil || a.ejected || p.nejected != 0 {
		t.Errorf("target %v, %d ejected: want the one left, back in service", a, p.nejected)
	}
}

// TestWireEjectionEndsAndCloses: an address that answers 503 five times
// in a row is ejected: its idle connections close at once, with no
// request sent; none reaches it while it is out; after base_ejection it
// is back (its return reported) and takes requests again. On both
// engines.
func TestWireEjectionEndsAndCloses(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		set := newWireSet(t, 2)
		res := newWireResolver(set.ips())
		events := make(chan backend.AddressEvent, 8)
		tr := openWire(t, engine, set, res, events, func(s *env.SourceSchema) {
			s.OutlierDetection.MaxEjectionPercent = 50
			s.OutlierDetection.BaseEjection = 100 * time.Millisecond
		})
		// Two connections to each address, idle.
		held := holdPosts(t, tr, set, 4)
		if h := perReplica(held, 2); h[0] != 2 || h[1] != 2 {
			t.Fatalf("four held requests went to %v, want two at each address", h)
		}
		set.release()
		awaitHeld(t, held)
		bad := set.r[1]
		bad.status.Store(http.StatusServiceUnavailable)
		var ev backend.AddressEvent
		for i := 0; ; i++ {
			if i == 40 {
				t.Fatalf("no ejection after 40 calls; the bad address got %d", bad.hits.Load())
			}
			wirePost(tr, set.url, "{}")
			select {
			case ev = <-events:
			default:
				continue
			}
			break
		}
		if !ev.Ejected || ev.Address != bad.ip || ev.For != 100*time.Millisecond || ev.Failures != 5 {
			t.Fatalf("event %+v, want the ejection of %s after 5 failures for 100ms", ev, bad.ip)
		}
		set.waitUntil(t, "the ejected address's connections closed", func(open, _ []int) bool { return open[1] == 0 })
		// The return is the ejection's own clock.
		select {
		case ev = <-events:
		case <-time.After(testTimeout):
			t.Fatalf("the ejected address did not return within %v", testTimeout)
		}
		if ev.Ejected || ev.Address != bad.ip {
			t.Fatalf("event %+v, want the return of %s", ev, bad.ip)
		}
		bad.status.Store(0)
		// Back in service: with one request held on the other address,
		// the next goes to it.
		held = holdPosts(t, tr, set, 2)
		if h := perReplica(held, 2); h[0] != 1 || h[1] != 1 {
			t.Errorf("two held requests after the return went to %v, want one at each address", h)
		}
		set.release()
		awaitHeld(t, held)
	})
}

// TestWireLookupFailsKeepsAddresses: a lookup that fails, or answers no
// address, leaves the addresses known in use: requests still reach both.
func TestWireLookupFailsKeepsAddresses(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"error", errors.New("SERVFAIL")}, {"empty", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			set := newWireSet(t, 2)
			res := newWireResolver(set.ips())
			tr := openWire(t, env.EngineH1, set, res, nil, nil)
			mustPost(t, tr, set.url, 1)
			res.set(nil, tc.err)
			res.waitApplied(t)
			before := set.hits()
			held := holdPosts(t, tr, set, 2)
			if h := perReplica(held, 2); h[0] != 1 || h[1] != 1 {
				t.Errorf("two held requests went to %v after a failed lookup, want one at each known address", h)
			}
			set.release()
			awaitHeld(t, held)
			if after := set.hits(); after[0] == before[0] || after[1] == before[1] {
				t.Errorf("hits before %v, after %v", before, after)
			}
		})
	}
}

// TestWireConnectFailuresLookUpAtOnce: when every known address fails to
// connect, the pool looks its host up at once (dns_refresh is an hour),
// and a request then reaches the address the answer gives. On both
// engines.
func TestWireConnectFailuresLookUpAtOnce(t *testing.T) {
	forEngines(t, connectFailuresLookUpAtOnce)
}

func connectFailuresLookUpAtOnce(t *testing.T, engine string) {
	set := newWireSet(t, 1)
	dead := netip.MustParseAddr("127.0.0.9") // no server at the set's port
	res := newWireResolver([]netip.Addr{dead})
	tr := openWire(t, engine, set, res, nil, func(s *env.SourceSchema) { s.DNSRefresh = time.Hour })
	if _, err := wirePost(tr, set.url, "{}"); err == nil {
		t.Fatal("a request to an address with no server succeeded")
	}
	res.set(set.ips(), nil)
	deadline := time.After(testTimeout)
	for ok := false; !ok; {
		if _, err := wirePost(tr, set.url, "{}"); err == nil {
			ok = true
			break
		}
		// A failed request starts a lookup unless one is under way: its
		// answer comes in next. The resolver tells of a lookup when it
		// starts, not when the pool has taken its answer in, so a request
		// sent on that news may still fail while the lookup it would start
		// is already under way: then no news comes, and the next try goes
		// after a short pause. With dns_refresh at an hour, only the
		// failures' lookups can bring the new answer in.
		pause := time.NewTimer(50 * time.Millisecond)
		select {
		case <-res.notify:
		case <-pause.C:
		case <-deadline:
			t.Fatalf("requests still fail within %v after the answer changed (%d lookups)", testTimeout, res.lookups.Load())
		}
		pause.Stop()
	}
	if h := set.hits(); h[0] != 1 {
		t.Errorf("hits %v, want the request on the address given after the failure", h)
	}
	if n := res.lookups.Load(); n < 2 {
		t.Errorf("%d lookups, want the start's and one after the connect failure", n)
	}
}

// upgradeServer is two replicas, which upgrade to an echo protocol on a
// request asking Upgrade: echo-test (wireSet.upgrade), and their
// resolver.
func upgradeServer(t *testing.T) (*wireSet, *wireResolver) {
	set := newWireSet(t, 2)
	return set, newWireResolver(set.ips())
}

// TestWireUpgrade: on h1, a request that asks for a protocol upgrade goes to an
// address the resolver gave (the name resolves nowhere), within its
// header bound gets the connection handed over (a writable body that
// echoes), and a server that answers no header within the bound ends it
// with a *fault.HeaderTimeoutError.
func TestWireUpgrade(t *testing.T) {
	set, res := upgradeServer(t)
	tr := openWire(t, env.EngineH1, set, res, nil, nil)
	upgradeReq := func(hold bool) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, set.url, nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "echo-test")
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		return req
	}
	resp, err := tr.RoundTripWithin(upgradeReq(false), testTimeout)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	rw, ok := resp.Body.(io.ReadWriter)
	if !ok {
		t.Fatalf("the 101's body is a %T, not the connection handed over", resp.Body)
	}
	if _, err := io.WriteString(rw, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(rw).ReadString('\n')
	if err != nil || line != "echo ping\n" {
		t.Fatalf("read %q, %v; want the echo", line, err)
	}
	if h := set.hits(); h[0]+h[1] != 1 {
		t.Errorf("hits %v, want the upgrade on one address", h)
	}
	// Headers that never come within the bound.
	done := make(chan error, 1)
	go func() {
		resp, err := tr.RoundTripWithin(upgradeReq(true), 50*time.Millisecond)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-set.held:
	case err := <-done:
		t.Fatalf("the held upgrade ended unheld: %v", err)
	case <-time.After(testTimeout):
		t.Fatalf("the held upgrade reached no server within %v", testTimeout)
	}
	select {
	case err := <-done:
		if _, ok := errors.AsType[*fault.HeaderTimeoutError](err); !ok {
			t.Errorf("an upgrade whose headers never came got %v, want a *fault.HeaderTimeoutError", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("an upgrade whose headers never came was not ended by its bound within %v", testTimeout)
	}
}

// TestWireUpgradeNoAddress: with no address known (the lookup answered
// none), an upgrade fails unsent with an error naming the host, and does
// not dial the name behind the resolver's back.
func TestWireUpgradeNoAddress(t *testing.T) {
	set, res := upgradeServer(t)
	res.set(nil, nil)
	tr := openWire(t, env.EngineH1, set, res, nil, nil)
	req, _ := http.NewRequest(http.MethodGet, set.url, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo-test")
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("an upgrade with no address known got an answer")
	}
	if !strings.Contains(err.Error(), `no address known for host "replicas.test"`) {
		t.Errorf("error %v, want one naming the host with no address", err)
	}
	if h := set.hits(); h[0]+h[1] != 0 {
		t.Errorf("hits %v", h)
	}
}

// gatedResolver answers its first lookup with first at once, and every
// later one with then, once release is closed; blocked receives each
// later lookup as it starts.
type gatedResolver struct {
	first, then []netip.Addr
	n           atomic.Int32
	blocked     chan struct{}
	release     chan struct{}
}

func (r *gatedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if r.n.Add(1) == 1 {
		return r.first, nil
	}
	r.blocked <- struct{}{}
	<-r.release
	return r.then, nil
}

// TestResolveOneAtATime: a connect failure of every address while a
// refresh's lookup is out starts no second run of resolve alongside it
// (under -race, the two runs race on the lookup's answer; and a second
// run would wait for an answer the first took); the answer of the lookup
// out is then taken in and a request reaches it.
func TestResolveOneAtATime(t *testing.T) {
	set := newWireSet(t, 1)
	res := &gatedResolver{
		first: []netip.Addr{netip.MustParseAddr("127.0.0.9")}, // no server at the set's port
		then:  set.ips(), blocked: make(chan struct{}, 8), release: make(chan struct{}),
	}
	released := false
	t.Cleanup(func() {
		if !released {
			close(res.release)
		}
	})
	tr := openWire(t, env.EngineH1, set, res, nil, nil)
	select {
	case <-res.blocked: // the first refresh's lookup is out
	case <-time.After(testTimeout):
		t.Fatalf("no refresh within %v", testTimeout)
	}
	for range 3 {
		if _, err := wirePost(tr, set.url, "{}"); err == nil {
			t.Fatal("a request to an address with no server succeeded")
		}
	}
	released = true
	close(res.release)
	deadline := time.After(testTimeout)
	for {
		if _, err := wirePost(tr, set.url, "{}"); err == nil {
			break
		}
		select {
		case <-res.blocked:
		case <-deadline:
			t.Fatalf("requests still fail within %v of the lookup's answer", testTimeout)
		}
	}
}

// TestWatchedCountsWritten: a watched connection counts the bytes
// written on it (what decides whether a failed request left unsent).
func TestWatchedCountsWritten(t *testing.T) {
	client, server := loopbackPair(t)
	w := newWatchedConn(client)
	if _, err := io.WriteString(w, "hello"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("server read %q, %v", buf, err)
	}
	if n := w.written.Load(); n != 5 {
		t.Errorf("%d bytes counted written, want 5", n)
	}
}
