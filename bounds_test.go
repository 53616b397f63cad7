package transport_test

// The time bounds on the wire, on both paths: request_timeout against a
// later caller deadline, connect_timeout over a TLS handshake.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
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

// TestConnectTimeoutCoversTLS: on the sockets path connect_timeout
// bounds the TLS handshake too. The server accepts and never speaks; with
// tls_handshake_timeout and header_timeout off and a caller context
// without deadline, only connect_timeout can end the call.
func TestConnectTimeoutCoversTLS(t *testing.T) {
	forEngines(t, func(t *testing.T, engine string) {
		addr := wiretest.SilentListener(t)
		var logs logBuffer
		inv := newInvoker(t, engineConfig(engine, "https://"+addr+"/graphql", func(s *env.SourceSchema) {
			s.ConnectTimeout = 300 * time.Millisecond
			s.TLSHandshakeTimeout = env.Off
			s.HeaderTimeout = env.Off
		}), infoLog(&logs))
		ctx, cancel := context.WithCancel(context.Background()) // no deadline
		defer cancel()
		done := make(chan error, 1)
		go func() {
			resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(gapGuard):
			t.Error("Post still waited for the TLS handshake long after connect_timeout")
			cancel()
			err = <-done
		}
		errorNamesSchema(t, err)
		var ne net.Error
		if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("error %v, want a timeout (context.DeadlineExceeded or a net.Error whose Timeout() is true)", err)
		}
		checkRanOn(t, engine, logs.String())
	})
}
