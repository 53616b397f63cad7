package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// engineGuard bounds the waits of the root's wire tests (here, in
// cancel_read_test.go and upgrade_test.go), so that a broken path fails them
// instead of hanging them; no test asserts on it.
const engineGuard = 10 * time.Second

// forPaths runs f as one subtest per path (and engine) of paths.
func forPaths(t *testing.T, f func(t *testing.T, path env.Path)) {
	t.Helper()
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) { f(t, p) })
	}
}

// TestHeaderWaitEnds: a server that never answers. A caller's
// deadline ends the wait for the header with an error matching
// context.DeadlineExceeded that is not a header_timeout; the schema's
// header_timeout ends it with the header_timeout error, also under a
// later request_timeout, but not under a caller deadline; an earlier
// request_timeout ends it with its own error. Either way the connection
// closes and the next request gets a new one. On every path and engine.
func TestHeaderWaitEnds(t *testing.T) {
	cases := []struct {
		name           string
		headerTimeout  time.Duration
		requestTimeout time.Duration
		deadline       time.Duration // the caller's; 0: none
		want           string        // the bound the error names; "": none, the caller's deadline
	}{
		{"caller's deadline", 0, 0, 100 * time.Millisecond, ""},
		{"header_timeout, no caller deadline", 100 * time.Millisecond, 0, 0, "header_timeout"},
		// header_timeout applies only to a request without a deadline
		// (docs/configuration.md, Timeouts): the caller's deadline rules.
		{"header_timeout, a caller deadline", 100 * time.Millisecond, 0, 300 * time.Millisecond, ""},
		// request_timeout is no caller deadline: header_timeout still
		// applies under it.
		{"header_timeout, a later request_timeout", 100 * time.Millisecond, time.Hour, 0, "header_timeout"},
		{"request_timeout before header_timeout", time.Hour, 100 * time.Millisecond, 0, "request_timeout"},
		{"request_timeout before header_timeout and a caller deadline", time.Hour, 100 * time.Millisecond, time.Hour, "request_timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forPaths(t, func(t *testing.T, path env.Path) {
				release := make(chan struct{})
				hold := wiretest.HoldHandler(release)
				srv := newWireServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("X-Hold") != "" {
						hold(w, r)
						return
					}
					io.WriteString(w, `{"data":{"ok":true}}`)
				}})
				defer close(release)
				cfg := withSchema(path, srv.URL(), func(s *env.SourceSchema) {
					s.HeaderTimeout = c.headerTimeout
					s.RequestTimeout = c.requestTimeout
				})
				cfg.ForwardHeaders = []string{"X-Hold"}
				inv := newInvoker(t, cfg)
				ctx, cancel := context.WithCancel(gatewayCtx("X-Hold", "1"))
				defer cancel()
				if c.deadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, c.deadline)
					defer cancel()
				}
				res := postAsync(inv, ctx, "products", `{}`)
				var err error
				select {
				case r := <-res:
					err = r.err
				case <-time.After(engineGuard):
					cancel()
					t.Fatal("Post still waited for the header")
				}
				errorNamesSchema(t, err)
				for _, bound := range []string{"header_timeout", "request_timeout"} {
					if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), bound) != (bound == c.want) {
						t.Errorf("error %q, want one matching context.DeadlineExceeded that names %s: %v", err, bound, bound == c.want)
					}
				}
				_, header := errors.AsType[*fault.HeaderTimeoutError](err)
				_, request := errors.AsType[*fault.RequestTimeoutError](err)
				if header != (c.want == "header_timeout") || request != (c.want == "request_timeout") {
					t.Errorf("error %q: a *fault.HeaderTimeoutError %v, a *fault.RequestTimeoutError %v; want the %q bound's alone", err, header, request, c.want)
				}
				first := srv.Last(t).Remote
				waitCtx, stop := context.WithTimeout(context.Background(), engineGuard)
				defer stop()
				srv.WaitClosed(t, waitCtx, first)
				// The next request carries a deadline, so that the schema's
				// 100ms header_timeout does not bound it: on a loaded
				// machine its new connection alone may take longer.
				post(t, inv, waitCtx, "products")
				if got := srv.Last(t).Remote; got == first {
					t.Errorf("the next request came on the timed-out connection %s", first)
				}
			})
		})
	}
}
