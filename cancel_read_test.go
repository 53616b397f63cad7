package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// TestCancelDuringBodyRead: the caller's context is cancelled while
// it is blocked reading a body whose rest the server holds back. The Read
// returns an error matching context.Canceled, the connection closes (the
// server sees it), and the next request succeeds on a new connection, on
// every path and engine. internal/sockets' TestEngineCancelDuringBodyRead
// has the same for the engines under the request path.
func TestCancelDuringBodyRead(t *testing.T) {
	forPaths(t, func(t *testing.T, path env.Path) {
		release := make(chan struct{})
		srv := newWireServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Hold") == "" {
				io.WriteString(w, `{"data":{"ok":true}}`)
				return
			}
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "part:")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}})
		defer close(release)
		cfg := withSchema(path, srv.URL(), nil)
		cfg.ForwardHeaders = []string{"X-Hold"}
		inv := newInvoker(t, cfg)
		ctx, cancel := context.WithCancel(gatewayCtx("X-Hold", "1"))
		defer cancel()
		resp, err := inv.Post(ctx, "products", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		part := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, part); err != nil || string(part) != "part:" {
			t.Fatalf("read %q, %v; want the part the server sent", part, err)
		}
		first := srv.Last(t).Remote
		read := make(chan error, 1)
		go func() {
			_, err := resp.Body.Read(make([]byte, 64))
			read <- err
		}()
		cancel()
		select {
		case err = <-read:
		case <-time.After(engineGuard):
			t.Fatal("Read still blocked after the context was cancelled")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Read error %v, want one matching context.Canceled", err)
		}
		waitCtx, stop := context.WithTimeout(context.Background(), engineGuard)
		defer stop()
		srv.WaitClosed(t, waitCtx, first)
		post(t, inv, context.Background(), "products")
		if got := srv.Last(t).Remote; got == first || len(srv.Opened()) != 2 {
			t.Errorf("the next request came on %s (opened %v), want a new connection after %s", got, srv.Opened(), first)
		}
	})
}
