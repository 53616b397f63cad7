package sockets

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/testsupport/queuemodel"
)

// What the pool tests moved from the root package (addresses, connections,
// pending, churn) need beside the harnesses of addrs_wire_internal_test.go,
// engines_test.go and dial_internal_test.go: options of a wireSet's
// servers, callers in parallel, a recorder of the wait queue, and the load
// tests' closed loop.

// wireOption sets up one server of a wireSet before it starts.
type wireOption func(*httptest.Server)

// h2cReplicas serves HTTP/2 without TLS besides HTTP/1.1.
func h2cReplicas(srv *httptest.Server) {
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
}

// tlsReplicas serves TLS with cert, HTTP/1.1 and HTTP/2 by ALPN: the set's
// URL is https://replicas.test:PORT/graphql.
func tlsReplicas(cert tls.Certificate) wireOption {
	return func(srv *httptest.Server) {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.EnableHTTP2 = true
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are what some tests expect
	}
}

// resetConn closes the connection of w without a byte, as a reset (no
// clean close).
func resetConn(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// closes returns how many connections closed at every replica.
func (s *wireSet) closes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.r {
		n += r.closed
	}
	return n
}

// closedAt returns how many connections closed at each replica.
func (s *wireSet) closedAt() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, r := range s.r {
		out = append(out, r.closed)
	}
	return out
}

// accepted returns how many connections every replica accepted.
func (s *wireSet) accepted() int {
	_, opened := s.open()
	n := 0
	for _, o := range opened {
		n += o
	}
	return n
}

// firstConns counts, per replica, the first n connections accepted at
// every replica; false if fewer were.
func (s *wireSet) firstConns(n int) ([]int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) < n {
		return nil, false
	}
	per := make([]int, len(s.r))
	for _, i := range s.order[:n] {
		per[i]++
	}
	return per, true
}

// maxOpen is the most connections that were open at once, at every
// replica together.
func (s *wireSet) maxOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// wireCall sends body to u on tr within testTimeout and reads the answer
// to its end: its status and body, or the error.
func wireCall(tr http.RoundTripper, u, body string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), err
}

// postAll sends n requests to u from callers goroutines at once, each
// within testTimeout (one stuck in the queue fails instead of hanging
// the test), and returns the errors, a status other than 200 among them.
func postAll(tr http.RoundTripper, u string, callers, n int) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				st, _, err := wireCall(tr, u, `{"query":"{ok}"}`)
				if err == nil && st != http.StatusOK {
					err = fmt.Errorf("status %d", st)
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

// mustPostAll is postAll failing the test on any error.
func mustPostAll(t *testing.T, tr http.RoundTripper, u string, callers, n int) {
	t.Helper()
	if errs := postAll(tr, u, callers, n); len(errs) > 0 {
		t.Fatalf("%d of %d calls failed, first: %v", len(errs), n, errs[0])
	}
}

// untilEjected sends one request at a time to u until events has an
// ejection, at most 100 requests, and returns it.
func untilEjected(t *testing.T, tr http.RoundTripper, u string, events <-chan backend.AddressEvent) backend.AddressEvent {
	t.Helper()
	for range 100 {
		wireCall(tr, u, "{}")
		select {
		case ev := <-events:
			if !ev.Ejected {
				t.Fatalf("event %+v before any ejection", ev)
			}
			return ev
		default:
		}
	}
	t.Fatal("no ejection after 100 requests")
	return backend.AddressEvent{}
}

// callKey is the context key of a request's caller number, which
// queueHook reads.
type callKey struct{}

// queueHook feeds m the pool's queue events (backend.Schema.OnQueue) of
// the requests numbered by callKey in their context.
func queueHook(m *queuemodel.Model) func(context.Context, backend.QueueEvent) {
	return func(ctx context.Context, ev backend.QueueEvent) {
		if n, ok := ctx.Value(callKey{}).(int); ok {
			m.Event(n, ev)
		}
	}
}

// soakVar, set to 0, skips the long versions of the load tests without
// -short, as in the root package (FUSION_SOAK). They run whenever -short
// is off, as in go test -race ./... and CI; -short runs the short ones.
const soakVar = "FUSION_SOAK"

// soakEnabled reports whether the long versions run.
func soakEnabled() bool { return !testing.Short() && os.Getenv(soakVar) != "0" }

// loadCall sends one request to u on tr, within testTimeout, and records
// a failure: an error, or another answer than a wiretest.CountingServer's.
func loadCall(tr http.RoundTripper, u string, fails *failures) {
	st, body, err := wireCall(tr, u, `{"query":"{ ok }"}`)
	if err != nil || st != http.StatusOK || body != `{"data":{"ok":true}}` {
		fails.Add("%d %q, %v", st, body, err)
	}
}

// closedLoop runs callers goroutines that each send to u on tr, one
// request after the other, until stop; it returns the requests sent.
func closedLoop(tr http.RoundTripper, u string, callers int, stop <-chan struct{}, fails *failures) int64 {
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				loadCall(tr, u, fails)
			}
		})
	}
	wg.Wait()
	return sent.Load()
}

// warmUp opens what the process keeps for its whole life before any count
// of descriptors: the network poller's.
func warmUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}
