package transport_test

import (
	"context"
	"errors"
	"fmt"
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
// every path and engine, for Post and PostFunc, also under a (later)
// request_timeout, whose context the h1 engine does not watch itself (it
// watches the caller's). internal/sockets' TestEngineCancelDuringBodyRead
// has the same for the engines under the request path.
func TestCancelDuringBodyRead(t *testing.T) {
	for _, call := range bodyCalls {
		for _, requestTimeout := range []time.Duration{0, time.Hour} {
			t.Run(fmt.Sprintf("%s/request_timeout=%v", call.name, requestTimeout), func(t *testing.T) {
				forPaths(t, func(t *testing.T, path env.Path) { cancelDuringBodyRead(t, path, call, requestTimeout) })
			})
		}
	}
}

// cancelDuringBodyRead is one case of TestCancelDuringBodyRead.
func cancelDuringBodyRead(t *testing.T, path env.Path, call bodyCall, requestTimeout time.Duration) {
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
	cfg := withSchema(path, srv.URL(), func(s *env.SourceSchema) { s.RequestTimeout = requestTimeout })
	cfg.ForwardHeaders = []string{"X-Hold"}
	inv := newInvoker(t, cfg)
	ctx, cancel := context.WithCancel(gatewayCtx("X-Hold", "1"))
	defer cancel()
	var first string
	var err error
	_, cerr := call.call(inv, ctx, func(body io.Reader) error {
		part := make([]byte, 5)
		if _, err := io.ReadFull(body, part); err != nil || string(part) != "part:" {
			return fmt.Errorf("read %q, %w; want the part the server sent", part, err)
		}
		first = srv.Last(t).Remote
		read := make(chan error, 1)
		go func() {
			_, err := body.Read(make([]byte, 64))
			read <- err
		}()
		cancel()
		select {
		case err = <-read:
		case <-time.After(engineGuard):
			return errors.New("Read still blocked after the context was cancelled")
		}
		return err
	})
	if first == "" {
		t.Fatal(cerr)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(cerr, context.Canceled) {
		t.Errorf("Read error %v (call: %v), want one matching context.Canceled", err, cerr)
	}
	waitCtx, stop := context.WithTimeout(context.Background(), engineGuard)
	defer stop()
	srv.WaitClosed(t, waitCtx, first)
	post(t, inv, context.Background(), "products")
	if got := srv.Last(t).Remote; got == first || len(srv.Opened()) != 2 {
		t.Errorf("the next request came on %s (opened %v), want a new connection after %s", got, srv.Opened(), first)
	}
}
