package transport_test

// The time bounds on the wire, on both paths: request_timeout against a
// later caller deadline, connect_timeout over a TLS handshake.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestRequestTimeoutUnderLaterDeadline: request_timeout still cuts a
// streaming body when the caller's deadline is later, on both paths: the
// read fails with the request_timeout error and the server sees its
// request end.
func TestRequestTimeoutUnderLaterDeadline(t *testing.T) {
	for _, p := range paths {
		t.Run(string(p), func(t *testing.T) {
			release := make(chan struct{})
			var releaseOnce sync.Once
			cancelled := make(chan struct{})
			srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "chunk\n")
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					close(cancelled)
				case <-release:
				}
			})
			t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the server closes
			inv := newInvoker(t, withSchema(p, srv.URL(), func(s *env.SourceSchema) { s.RequestTimeout = 200 * time.Millisecond }))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			read := make(chan error, 1)
			go func() { read <- readBodyErr(resp, nil) }()
			select {
			case err = <-read:
			case <-time.After(gapGuard):
				releaseOnce.Do(func() { close(release) })
				t.Fatalf("the body still streamed long after request_timeout: the caller's later deadline replaced it (read after release: %v)", <-read)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "request_timeout") {
				t.Errorf("body read error %v, want a request_timeout matching context.DeadlineExceeded", err)
			}
			if ctx.Err() != nil {
				t.Errorf("the caller's context ended (%v): the test's deadline is a minute", ctx.Err())
			}
			select {
			case <-cancelled:
			case <-time.After(gapGuard):
				t.Error("the server never saw its request end")
			}
		})
	}
}
