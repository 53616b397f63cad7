package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
)

// headerCall sends one query to the source schema products, at url, with
// ctx (which carries the gateway request), and returns the error it got:
// a response is read and closed, and reported as no error.
type headerCall struct {
	name string
	send func(t *testing.T, ctx context.Context, inv *transport.Transport, url string) error
}

var headerCalls = []headerCall{
	{"Post", func(t *testing.T, ctx context.Context, inv *transport.Transport, _ string) error {
		resp, err := inv.Post(ctx, "products", []byte(`{"query":"{ ok }"}`))
		if err == nil {
			readAll(t, resp)
		}
		return err
	}},
	{"PostFunc", func(t *testing.T, ctx context.Context, inv *transport.Transport, _ string) error {
		return inv.PostFunc(ctx, "products", []byte(`{"query":"{ ok }"}`), func(*http.Response) error { return nil })
	}},
	{"Client", func(t *testing.T, ctx context.Context, inv *transport.Transport, url string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"query":"{ ok }"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := inv.Client().Do(req)
		if err == nil {
			readAll(t, resp)
		}
		return err
	}},
}

// TestErrorsForwardedHeaders: a forwarded header that the rules refuse —
// over headers.max_forwarded_bytes, or with CR, LF or NUL in its value —
// fails every call (Post, PostFunc, Client) on every path with an error
// that matches package fault's sentinel under errors.Is and names the
// header and the source schema; the source schema sees no connection, let
// alone a request. A header within the bound and clean reaches it, the
// control that shows the rules forward at all.
func TestErrorsForwardedHeaders(t *testing.T) {
	const name = "X-Tenant"
	cases := []struct {
		name     string
		value    string
		maxBytes int
		want     error // nil: the header reaches the source schema
		text     string
	}{
		{"within the bound", "acme", 64, nil, ""},
		{"over max_forwarded_bytes", strings.Repeat("a", 64), 32, fault.ErrHeadersTooLarge, "headers.max_forwarded_bytes"},
		{"CR LF", "acme\r\nX-Injected: 1", 0, fault.ErrInvalidHeaderValue, "CR, LF or NUL"},
		{"LF", "acme\nX-Injected: 1", 0, fault.ErrInvalidHeaderValue, "CR, LF or NUL"},
		{"NUL", "acme\x00", 0, fault.ErrInvalidHeaderValue, "CR, LF or NUL"},
	}
	for _, path := range paths {
		for _, tc := range cases {
			for _, call := range headerCalls {
				t.Run(fmt.Sprintf("%s/%s/%s", path, tc.name, call.name), func(t *testing.T) {
					srv := newSchemaServer(t, nil)
					inv := newInvoker(t, withSchema(path, srv.URL(), func(s *env.SourceSchema) {
						s.Headers.Forward = []string{name}
						s.Headers.MaxForwardedBytes = tc.maxBytes
					}))
					err := call.send(t, gatewayCtx(name, tc.value), inv, srv.URL())
					if tc.want == nil {
						if err != nil {
							t.Fatalf("%s: %v", call.name, err)
						}
						if got := srv.Last(t).Header.Get(name); got != tc.value {
							t.Errorf("%s = %q on the wire, want %q", name, got, tc.value)
						}
						return
					}
					if err == nil {
						t.Fatalf("%s sent the header, want it refused", call.name)
					}
					if !errors.Is(err, tc.want) {
						t.Errorf("error %q (chain: %s) does not match fault's %q under errors.Is", err, chain(err), tc.want)
					}
					for _, part := range []string{name, `source schema "products"`, tc.text} {
						if !strings.Contains(err.Error(), part) {
							t.Errorf("error %q does not name %s", err, part)
						}
					}
					if reqs, conns := srv.Requests(), srv.Opened(); len(reqs) != 0 || len(conns) != 0 {
						t.Errorf("the source schema saw %d requests on %d connections, want none", len(reqs), len(conns))
					}
				})
			}
		}
	}
}
