package legacy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// silentListener accepts connections and never writes: a TLS handshake
// with it never ends. Its connections close when the test ends.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestHandshakeTimeout: the legacy transport makes its TLS handshakes
// itself (dialTLS), so TLSHandshakeTimeout is its own to apply: a
// handshake that never ends fails with a net.Error that is a timeout, as
// net/http's does.
func TestHandshakeTimeout(t *testing.T) {
	r := newTestRotator(t, 0, nil)
	r.cur.Load().tr.TLSHandshakeTimeout = time.Millisecond // before any use
	req, err := http.NewRequest(http.MethodGet, "https://"+silentListener(t)+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.RoundTrip(req)
	var ne net.Error
	if !errors.Is(err, errHandshakeTimeout) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("RoundTrip: %v, want the TLS handshake timeout", err)
	}
}

// TestDialHookBounded: connect_timeout bounds a Dial hook as it bounds the
// dialer: the hook's context ends, and the request fails with the hook's
// error.
func TestDialHookBounded(t *testing.T) {
	cfg := &env.Config{Defaults: env.Settings{ConnectTimeout: time.Millisecond}, SourceSchemas: map[string]env.SourceSchema{"products": {URL: "http://products.invalid/graphql"}}}
	s := schema(t, cfg, "products")
	hadDeadline := make(chan bool, 1)
	s.Options.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, ok := ctx.Deadline()
		hadDeadline <- ok
		<-ctx.Done()
		return nil, ctx.Err()
	}
	b := New()
	defer b.Close()
	tr := openOn(t, b, s)
	defer tr.Drain()
	req, err := http.NewRequest(http.MethodGet, s.URL.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RoundTrip: %v, want the hook's context deadline", err)
	}
	if !<-hadDeadline {
		t.Error("the hook's context had no deadline")
	}
}
