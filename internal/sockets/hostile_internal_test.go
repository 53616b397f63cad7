package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/queuemodel"
	"github.com/fusiongo/transport/internal/testsupport/race"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// The hostile-server suite's rules of the pool and its engines: servers
// that misbehave on purpose, and crowds of callers, on both engines. The
// root's hostile_test.go keeps what the request path decides (an unasked
// upgrade, the forwarded-header rules and bounds, Do's target); its
// BenchmarkHostileStrayResponse and BenchmarkHostileStaleIdle measure the
// first two cases here on every path, the legacy path's net/http pool
// beside both engines, as docs/reliability.md compares.

// strayServer is wiretest.NewStrayServer (answers followed by stray bytes).
func strayServer(t *testing.T, kind string) *wiretest.RawServer {
	return wiretest.NewStrayServer(t, kind)
}

// TestHostileStrayResponse: with 8 callers sharing 2 connections, a server
// that follows each answer with an unasked one must never get its unasked
// answer to a caller (RFC 9112, section 9.2), on either engine. 1,000
// calls per case (300 with -short); a caller that got an answer that is
// not its own counts as a wrong answer, and there must be none. (The
// legacy path's rate, net/http's own pool, is measured beside
// both engines' by the root's BenchmarkHostileStrayResponse.)
func TestHostileStrayResponse(t *testing.T) {
	calls := 1000
	if testing.Short() {
		calls = 300
	}
	for _, kind := range []string{"response", "overrun"} {
		t.Run(kind, func(t *testing.T) {
			forEngines(t, func(t *testing.T, engine string) {
				srv := strayServer(t, kind)
				tr := openHooked(t, engineOn(engine, srv.URL, func(s *env.SourceSchema) { s.MaxConnsPerHost = 2 }), hooks{})
				ranOn(t, engine, tr)
				var wrong, errs failures
				next := make(chan int, calls)
				for i := range calls {
					next <- i
				}
				close(next)
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for i := range next {
							id := fmt.Sprint(i)
							body, err := sendRead(tr, gqlRequest(context.Background(), srv.URL, `{"query":"{ call }"}`, "X-Call", id))
							switch {
							case err != nil:
								errs.Add("call %s: %v", id, err)
							case body != `{"data":{"call":"`+id+`"}}`:
								wrong.Add("call %s got %s", id, body)
							}
						}
					})
				}
				wg.Wait()
				nWrong, firstWrong := wrong.Report()
				nErr, firstErr := errs.Report()
				t.Logf("%s, %s: %d calls, %d wrong answers, %d errors (first error: %q)", kind, engine, calls, nWrong, nErr, firstErr)
				if nWrong > 0 {
					t.Errorf("%d of %d callers got an answer that was not theirs; first:\n\t%s", nWrong, calls, firstWrong)
				}
			})
		})
	}
}

// TestHostileHeaderTimeoutCountsQueueing: behind max_conns_per_host 1, a
// second request waits for the first, which the server holds. The header
// bound the request path gives the pool (RoundTripWithin, 500ms) counts
// that wait: the second request fails with a *fault.HeaderTimeoutError
// while the first is still held, and the error says how much of the bound
// went to waiting.
func TestHostileHeaderTimeoutCountsQueueing(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		release := make(chan struct{})
		held := make(chan struct{}, 1)
		srv := wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Hold") != "" {
				held <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
			io.WriteString(w, `{"data":{}}`)
		}})
		defer close(release)
		u := srv.SchemaURL()
		tr := openHooked(t, engineOn(engine, u, func(s *env.SourceSchema) { s.MaxConnsPerHost = 1 }), hooks{})
		ranOn(t, engine, tr)
		first := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := sendRead(tr, gqlRequest(ctx, u, `{"query":"{ a }"}`, "X-Hold", "1"))
			first <- err
		}()
		<-held
		second := make(chan error, 1)
		go func() {
			resp, err := tr.RoundTripWithin(gqlRequest(context.Background(), u, `{"query":"{ b }"}`), 500*time.Millisecond)
			if err == nil {
				resp.Body.Close()
			}
			second <- err
		}()
		select {
		case err := <-second:
			var hte *fault.HeaderTimeoutError
			if !errors.As(err, &hte) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "header_timeout") {
				t.Fatalf("second request: %v, want a header timeout", err)
			}
			if hte.Queued <= 0 || !strings.Contains(err.Error(), "of it waiting for a connection") {
				t.Errorf("error %q (queued %v) does not say how long the request waited for a connection", err, hte.Queued)
			}
		case <-time.After(testTimeout):
			t.Fatal("the second request waited on behind the first: the header bound does not count the wait for a connection")
		}
		release <- struct{}{}
		if err := <-first; err != nil {
			t.Errorf("first request: %v", err)
		}
	})
}

// TestHostileStaleIdleConnections: a server closes each connection once it
// has been idle 5ms, and each Post is sent only after the server has
// closed the previous one's connection (its ConnState hook says so, after
// the close): a connection the server has closed is never handed out, so
// every Post succeeds, each on a new connection, on either engine. A Post
// on the closed connection would be written and fail reading (a POST
// without an idempotency key is not sent twice), so one handed out shows
// as an error here. How often Posts spaced around a server's idle timeout
// meet its close, which no client can avoid for a request already written
// (RFC 9112, section 9.3.1), is measured on every path by the root's
// BenchmarkHostileStaleIdle; TestHostileUnsentPostSentAgain checks that a
// Post never written is sent again.
func TestHostileStaleIdleConnections(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 20
	}
	forEngines(t, func(t *testing.T, engine string) {
		closed := make(chan string, rounds+1) // the remote address of each connection the server closed
		var mu sync.Mutex
		remotes := map[string]bool{} // by the server's remote address: the connections that carried a Post
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			remotes[r.RemoteAddr] = true
			mu.Unlock()
			io.WriteString(w, `{"data":{}}`)
		}))
		srv.Config.IdleTimeout = 5 * time.Millisecond
		srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				closed <- c.RemoteAddr().String()
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		u := srv.URL + "/graphql"
		tr := openHooked(t, engineOn(engine, u, nil), hooks{})
		ranOn(t, engine, tr)
		for i := range rounds {
			if _, err := sendRead(tr, gqlRequest(context.Background(), u, `{"query":"{ ok }"}`)); err != nil {
				t.Fatalf("Post %d, after the server closed the idle connection of Post %d: %v", i, i-1, err)
			}
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatalf("the server did not close the connection of Post %d when it was idle", i)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(remotes) != rounds {
			t.Errorf("%d Posts came on %d connections, want each on a new one (the server had closed the one before)", rounds, len(remotes))
		}
	})
}

// crowdDeadline is each crowd caller's deadline: four times the server's
// own work for 2,000 requests on 4 connections (500ms); three times that
// under the race detector, which slows the client about as much.
var crowdDeadline = map[bool]time.Duration{false: 2 * time.Second, true: 6 * time.Second}[race.Enabled]

// TestHostileCrowd: 2,000 callers (500 with -short) at once behind
// max_conns_per_host 4, each with a 2s deadline, against a server that
// takes about 1ms a request, on each engine. Every request must finish
// within its deadline, and the pool must serve those that wait exactly in
// the order they joined its queue: each request is numbered, and its
// events reach the queue hook under the pool's lock; one served while an
// older one waits fails the test (overtaken 0). BenchmarkCrowd, in the
// root, reports the CPU per request.
func TestHostileCrowd(t *testing.T) {
	callers := 2000
	if testing.Short() {
		callers = 500
	}
	forEngines(t, func(t *testing.T, engine string) {
		srv := wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Millisecond) // the server's work
			io.WriteString(w, `{"data":{}}`)
		}})
		u := srv.SchemaURL()
		var q queuemodel.Model
		tr := openHooked(t, engineOn(engine, u, func(s *env.SourceSchema) {
			s.MaxConnsPerHost = 4
			s.MaxIdleConnsPerHost = 4
			s.MaxPendingRequests = env.NoLimit // the whole crowd may wait (max_pending_requests' default is 1024)
		}), hooks{onQueue: queueHook(&q)})
		ranOn(t, engine, tr)
		start := make(chan struct{})
		var failed failures
		var wg sync.WaitGroup
		for n := range callers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), callKey{}, n), crowdDeadline)
				defer cancel()
				<-start
				if _, err := sendRead(tr, gqlRequest(ctx, u, `{"query":"{ ok }"}`)); err != nil {
					failed.Add("call %d: %v", n, err)
				}
			})
		}
		began := time.Now()
		close(start)
		wg.Wait()
		c := q.Counts()
		t.Logf("%s: %d callers took %v; %d joined the pool's queue, %d served, %d left it", engine, callers, time.Since(began), c.Joined, c.Served, c.Left)
		if n, first := failed.Report(); n > 0 {
			t.Errorf("%d of %d requests failed (missed their %v deadline?); first:\n\t%s", n, callers, crowdDeadline, first)
		}
		if c.Overtaken != 0 || c.Waiting != 0 {
			t.Errorf("the pool served %d requests while an older one waited (first: %s), %d left in its queue; want queue order exactly", c.Overtaken, c.FirstBad, c.Waiting)
		}
		if c.Joined == 0 {
			t.Error("no request waited in the pool's queue: the test measured nothing")
		}
	})
}

// TestHostileResponseHeaderBound: a server that answers with 100 KiB of
// headers is refused under the default bound (64 KiB), on each engine;
// max_response_header_bytes raises the bound. (That the caller's error
// names the schema is the request path's, the root's.)
func TestHostileResponseHeaderBound(t *testing.T) {
	big := strings.Repeat("h", 100<<10)
	forEngines(t, func(t *testing.T, engine string) {
		srv := wiretest.NewServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Big", big)
			io.WriteString(w, `{"data":{}}`)
		}})
		u := srv.SchemaURL()
		tr := openHooked(t, engineOn(engine, u, nil), hooks{})
		ranOn(t, engine, tr)
		resp, err := sendResending(tr, gqlRequest(context.Background(), u, `{"query":"{ ok }"}`))
		if err == nil {
			resp.Body.Close()
			t.Fatal("Post accepted 100 KiB of response headers under the 64 KiB default")
		}
		if !strings.Contains(err.Error(), "exceeded") {
			t.Errorf("error %q: want the bound named", err)
		}
		raised := openHooked(t, engineOn(engine, u, func(s *env.SourceSchema) { s.MaxResponseHeaderBytes = 256 << 10 }), hooks{})
		ranOn(t, engine, raised)
		resp, body := mustSendRead(t, raised, context.Background(), u)
		if len(resp.Header.Get("X-Big")) != len(big) || body != `{"data":{}}` {
			t.Errorf("with a 256 KiB bound: header %d bytes, body %q", len(resp.Header.Get("X-Big")), body)
		}
	})
}

// failingWrites is a connection whose writes fail from the nth on, before
// any byte leaves, as a write to a connection the server reset does. It
// shows its socket (NetConn), so that the engines reuse it: a connection
// whose socket they cannot look at carries one request, and its second
// write would never come.
type failingWrites struct {
	net.Conn
	mu     sync.Mutex
	writes int
	from   int
}

func (c *failingWrites) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	fail := c.writes >= c.from
	c.mu.Unlock()
	if fail {
		c.Conn.Close()
		return 0, errors.New("write: connection reset by peer (test)")
	}
	return c.Conn.Write(p)
}

func (c *failingWrites) NetConn() net.Conn { return c.Conn }

// TestHostileUnsentPostSentAgain: a Post (a mutation) whose write failed
// before any byte of it left comes back as an attempt the request path
// sends again (backend.Resend: Unsent), and goes on a new connection: the
// server sees it exactly once, and the caller gets its answer, on either
// engine. The first connection's second write fails.
func TestHostileUnsentPostSentAgain(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		srv := wiretest.NewServer(t, wiretest.Options{})
		u := srv.SchemaURL()
		var mu sync.Mutex
		dials := 0
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			dials++
			first := dials == 1
			mu.Unlock()
			if first {
				return &failingWrites{Conn: c, from: 2}, nil
			}
			return c, nil
		}
		tr := openHooked(t, engineOn(engine, u, nil), hooks{dial: dial})
		ranOn(t, engine, tr)
		mustSendRead(t, tr, context.Background(), u) // warms the first connection
		mutation := `{"query":"mutation { buy }"}`
		if _, err := sendRead(tr, gqlRequest(context.Background(), u, mutation)); err != nil {
			t.Fatalf("the unsent mutation was not sent again: %v", err)
		}
		n := 0
		for _, r := range srv.Requests() {
			if r.Body == mutation {
				n++
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if n != 1 || dials != 2 {
			t.Errorf("the server saw the mutation %d times over %d dials, want once on a second connection", n, dials)
		}
	})
}
