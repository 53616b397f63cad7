package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/bound"
)

// The h1 engine under the request path's request bound (bound.Guard):
// the connection's own timer keeps the bound, and the engine watches the
// caller's context rather than the bound's, which then costs the call no
// context. On the wire: the bound cuts a body read in progress and closes
// the connection of a body left unread, the caller's cancel still ends a
// read, and the timer of a request that ended in time never reaches the
// connection's next request.

// boundEscalate are the request bounds a test tries in turn when the bound
// must pass after the response headers arrive: on a loaded machine a
// loopback answer may take longer than the first.
var boundEscalate = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}

// partAnswer writes the head of a 100-byte answer and its first 5 bytes
// ("part:") on c, and nothing more.
func partAnswer(c net.Conn) {
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart:")
}

// boundedPost sends a POST to u on tr under a Guard with request bound d
// over parent, as the request path does.
func boundedPost(t *testing.T, tr http.RoundTripper, parent context.Context, u string, d time.Duration) (*http.Response, error) {
	t.Helper()
	target, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	g := new(bound.Guard)
	ctx := g.Begin(parent, bound.Target{Schema: "products", Method: http.MethodPost, URL: target}, 0, d)
	if d > 0 {
		if _, _, ok := bound.RequestBound(ctx); !ok {
			t.Fatal("the Guard made no request bound's context")
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"query":"{ n }"}`))
	if err != nil {
		t.Fatal(err)
	}
	return g.Finish(tr.RoundTrip(req))
}

// TestH1RequestBoundCutsBody: the request bound cuts a body whose rest the
// server holds back: a Read in progress fails with the request timeout,
// and a body left unread loses its connection at the bound (the server
// sees it close while nothing reads), its next Read failing the same way.
// The next request gets a new connection.
func TestH1RequestBoundCutsBody(t *testing.T) {
	for _, idle := range []bool{false, true} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			for i, d := range boundEscalate {
				if h1BoundCut(t, idle, d, i == len(boundEscalate)-1) {
					return
				}
				t.Logf("the headers took longer than the bound %v; again with a larger one", d)
			}
		})
	}
}

// h1BoundCut is one attempt of TestH1RequestBoundCutsBody with the bound
// d; false: the headers came after d, try a larger one.
func h1BoundCut(t *testing.T, idle bool, d time.Duration, last bool) bool {
	s := newScriptServer(t, func(n int, _ *http.Request, c net.Conn) (string, bool) {
		if n == 1 {
			partAnswer(c)
			return "", false
		}
		return answer(nth(n)), false
	})
	tr := h1Transport(t, s.url)
	resp, err := boundedPost(t, tr, context.Background(), s.url, d)
	if err != nil {
		if _, ok := errors.AsType[*fault.RequestTimeoutError](err); ok && !last {
			return false
		}
		t.Fatal(err)
	}
	defer resp.Body.Close()
	part := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != "part:" {
		t.Fatalf("read %q, %v; want the part the server sent", part, err)
	}
	first := s.remotes()[0]
	if idle {
		s.waitClosed(t, first, "the bound passed while the body lay unread")
	}
	_, err = resp.Body.Read(make([]byte, 64))
	if rte, ok := errors.AsType[*fault.RequestTimeoutError](err); !ok || rte.Bound != d || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Read past the bound: %v, want the request timeout %v", err, d)
	}
	if !idle {
		s.waitClosed(t, first, "the bound cut the body")
	}
	next, err := roundTrip(t, context.Background(), tr, http.MethodPost, s.url, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readBody(t, next); got != nth(2) {
		t.Errorf("next answer %q, want %q", got, nth(2))
	}
	if r := s.remotes(); r[1] == first {
		t.Errorf("the next request came on the cut connection %s", first)
	}
	return true
}

// TestH1RequestBoundEndsWithRequest: a request whose answer came within its
// bound leaves its connection reusable, and the bound's timer does not
// reach the next request on it: that one, answered only after the first's
// bound has passed, still gets its answer on the same connection.
func TestH1RequestBoundEndsWithRequest(t *testing.T) {
	const d = 50 * time.Millisecond
	passed := make(chan (<-chan struct{}), 1)
	s := newScriptServer(t, func(n int, _ *http.Request, _ net.Conn) (string, bool) {
		if n == 2 {
			select {
			case <-<-passed:
			case <-time.After(testTimeout):
			}
		}
		return answer(nth(n)), false
	})
	tr := h1Transport(t, s.url)
	resp, err := boundedPost(t, tr, context.Background(), s.url, d)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := resp.Request.Context().Deadline()
	if got := readBody(t, resp); got != nth(1) {
		t.Fatalf("first answer %q", got)
	}
	past, stop := context.WithDeadline(context.Background(), end.Add(d))
	defer stop()
	passed <- past.Done()
	resp, err = roundTrip(t, context.Background(), tr, http.MethodPost, s.url, false)
	if err != nil {
		t.Fatalf("the request after a bounded one: %v", err)
	}
	if got := readBody(t, resp); got != nth(2) {
		t.Errorf("second answer %q, want %q", got, nth(2))
	}
	if r := s.remotes(); len(r) != 2 || r[0] != r[1] {
		t.Errorf("requests came on %v, want both on one connection", r)
	}
}

// TestH1RequestBoundCallerCancel: under a request bound that is far off,
// the caller's cancel ends a Read in progress with its cause, and the
// connection closes: the engine watches the caller's context itself.
func TestH1RequestBoundCallerCancel(t *testing.T) {
	s := newScriptServer(t, func(n int, _ *http.Request, c net.Conn) (string, bool) {
		partAnswer(c)
		return "", false
	})
	tr := h1Transport(t, s.url)
	errLeft := errors.New("the caller left")
	parent, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	resp, err := boundedPost(t, tr, parent, s.url, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 64))
		read <- err
	}()
	cancel(errLeft)
	select {
	case err = <-read:
	case <-time.After(testTimeout):
		t.Fatal("Read still blocked after the caller's context was cancelled")
	}
	if !errors.Is(err, errLeft) {
		t.Errorf("Read error %v, want the caller's cause", err)
	}
	s.waitClosed(t, s.remotes()[0], "the caller cancelled")
}
