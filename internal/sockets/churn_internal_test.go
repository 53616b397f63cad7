package sockets

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The pool's lifetime and idle rules under load, moved from the root
// package's churn_test.go (issue 31): callers in a closed loop against a
// wiretest.CountingServer. The root keeps TestReloadChurn, whose reloads
// are the request path's. docs/reliability.md has the figures of a run.

// loadShutdown drains tr, waits until srv has seen every connection
// close, closes srv and fails the test if a goroutine is left behind; it
// returns the goroutines and descriptors open after, for the log.
func loadShutdown(t *testing.T, tr *poolTransport, srv *wiretest.CountingServer, fdBefore int) (goAfter, fdAfter int) {
	t.Helper()
	tr.Drain()
	if n := srv.WaitOpen(0, testTimeout); n != 0 {
		t.Errorf("%d connections still open %v after the drain", n, testTimeout)
	}
	srv.Close()
	goleak.VerifyNone(t)
	return runtime.NumGoroutine(), wiretest.WaitFDs(fdBefore)
}

// TestConnLifetimeUnderLoad: with a short conn_lifetime and callers in a
// closed loop, connections rotate (the server sees several open and
// close), no request fails, and no more connections are open at once than
// there are callers; on both engines. Short version: lifetime 300 ms for
// 1.5 s; long (without -short): 1 s for 10 s.
func TestConnLifetimeUnderLoad(t *testing.T) {
	const callers = 8
	lifetime, duration := 300*time.Millisecond, 1500*time.Millisecond
	if soakEnabled() {
		lifetime, duration = time.Second, 10*time.Second
	}
	warmUp(t)
	forEngines(t, func(t *testing.T, engine string) {
		goleak.VerifyNone(t) // the previous test's goroutines may still be on their way out
		fdBefore, goBefore := wiretest.OpenFDs(), runtime.NumGoroutine()
		srv := wiretest.NewCountingServer(t)
		// The client side's own count of open connections, exact where the
		// server's lags: a connection counts from its dial until the pool
		// closes it.
		var clientOpen, clientMax atomic.Int64
		dialer := &net.Dialer{}
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			n := clientOpen.Add(1)
			for m := clientMax.Load(); n > m && !clientMax.CompareAndSwap(m, n); m = clientMax.Load() {
			}
			return wiretest.OnClose(c, func() { clientOpen.Add(-1) }), nil
		}
		u := srv.URL + "/graphql"
		tr := openWithDial(t, engineSchema(engine, u, func(s *env.SourceSchema) { s.ConnLifetime = lifetime }), dial)
		ranOn(t, engine, tr)

		var fails failures
		stop := make(chan struct{})
		timer := time.AfterFunc(duration, func() { close(stop) })
		defer timer.Stop()
		sent := closedLoop(tr, u, callers, stop, &fails)
		during := srv.Counts()
		goAfter, fdAfter := loadShutdown(t, tr, srv, fdBefore)

		failed, firstFails := fails.Report()
		t.Logf("\n| engine | lifetime × time | callers | sent | failed | conns opened / closed during the run | most open at once (server / client) | fds before / after | goroutines before / after |\n|---|---|---|---|---|---|---|---|---|\n| %s | %v × %v | %d | %d | %d | %d / %d | %d / %d | %d / %d | %d / %d |",
			engine, lifetime, duration, callers, sent, failed, during.Opened, during.Closed, during.MaxOpen, clientMax.Load(), fdBefore, fdAfter, goBefore, goAfter)
		if failed > 0 {
			t.Errorf("%d of %d requests failed while connections rotated; first errors:\n\t%s", failed, sent, firstFails)
		}
		// Every caller's connection must have been replaced at least once.
		if rotations := int(duration / lifetime); during.Opened < 2*callers || during.Closed < callers {
			t.Errorf("the server saw %d connections open and %d close in %v with a %v lifetime; want them to rotate (about %d generations of %d)", during.Opened, during.Closed, duration, lifetime, rotations, callers)
		}
		if m := clientMax.Load(); m > callers {
			t.Errorf("the pool had %d connections open at once for %d callers", m, callers)
		}
		// The server's count lags: it sees a connection close a moment
		// after the pool closed it and may already have dialled the next,
		// so it is held to a looser bound, which still catches connections
		// that are never closed.
		if during.MaxOpen > 2*callers {
			t.Errorf("the server saw %d connections open at once for %d callers", during.MaxOpen, callers)
		}
		if fdAfter != fdBefore {
			t.Errorf("%d descriptors open after the run, %d before", fdAfter, fdBefore)
		}
	})
}

// TestIdleTimeoutUnderLoad: with idle_conn_timeout 1 ms, 16 callers that
// pause 0.5 to 1.5 ms between requests keep picking connections just as
// their idle timers close them. No request may fail: a connection that
// the pool closes must never be one a request has just taken. It
// reproduces a race in pool.go (docs/reliability.md, "Bugs found by the
// load tests"), which hit one request in 4,000 to 23,000 under -race: the
// short version (1 s per engine) sees a few thousand requests and may
// miss it; the soak (without -short: 20 s per engine) catches it.
func TestIdleTimeoutUnderLoad(t *testing.T) {
	const callers = 16
	duration := time.Second
	if soakEnabled() {
		duration = 20 * time.Second
	}
	warmUp(t)
	forEngines(t, func(t *testing.T, engine string) {
		goleak.VerifyNone(t)
		fdBefore, goBefore := wiretest.OpenFDs(), runtime.NumGoroutine()
		srv := wiretest.NewCountingServer(t)
		u := srv.URL + "/graphql"
		tr := openSchemaWith(t, engineSchema(engine, u, func(s *env.SourceSchema) { s.IdleConnTimeout = time.Millisecond }), func(*backend.Schema) {})
		ranOn(t, engine, tr)

		var fails failures
		var sent atomic.Int64
		deadline := time.Now().Add(duration)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				pause := time.Duration(500+(i*997)%1000) * time.Microsecond
				for time.Now().Before(deadline) {
					sent.Add(1)
					loadCall(tr, u, &fails)
					time.Sleep(pause) // the callers' pace is the load under test
					pause = 500*time.Microsecond + (pause+137*time.Microsecond)%time.Millisecond
				}
			})
		}
		wg.Wait()
		during := srv.Counts()
		goAfter, fdAfter := loadShutdown(t, tr, srv, fdBefore)

		failed, firstFails := fails.Report()
		t.Logf("\n| engine | idle timeout × time | callers | sent | failed | schema saw | conns opened / closed | fds before / after | goroutines before / after |\n|---|---|---|---|---|---|---|---|---|\n| %s | 1ms × %v | %d | %d | %d | %d | %d / %d | %d / %d | %d / %d |",
			engine, duration, callers, sent.Load(), failed, srv.Requests(), during.Opened, during.Closed, fdBefore, fdAfter, goBefore, goAfter)
		if failed > 0 {
			t.Errorf("BUG: %d of %d requests failed because the pool closed the connection they had just taken "+
				"(pool.go: get reserves a picked HTTP/1 connection after releasing p.mu, so idleExpired, drain or an expiry can close it in between); first errors:\n\t%s",
				failed, sent.Load(), firstFails)
		}
		if fdAfter != fdBefore {
			t.Errorf("%d descriptors open after the run, %d before", fdAfter, fdBefore)
		}
	})
}
