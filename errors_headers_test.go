package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
)

// errCall sends one query to the source schema name, at url, with ctx
// (which may carry the gateway request), by one of the ways a caller has,
// and returns the error it got: a response is read and closed, and
// reported as no error.
type errCall struct {
	name string
	send func(t *testing.T, ctx context.Context, inv *transport.Transport, name, url string) error
}

const errQuery = `{"query":"{ ok }"}`

// errCalls are Post, PostFunc, Do and a request through Client (routed by
// its URL).
var errCalls = []errCall{
	{"Post", func(t *testing.T, ctx context.Context, inv *transport.Transport, name, _ string) error {
		resp, err := inv.Post(ctx, name, []byte(errQuery))
		if err == nil {
			readAll(t, resp)
		}
		return err
	}},
	{"PostFunc", func(t *testing.T, ctx context.Context, inv *transport.Transport, name, _ string) error {
		return inv.PostFunc(ctx, name, []byte(errQuery), func(resp *http.Response) error {
			_, err := io.Copy(io.Discard, resp.Body)
			return err
		})
	}},
	{"Do", func(t *testing.T, ctx context.Context, inv *transport.Transport, name, url string) error {
		resp, err := inv.Do(ctx, name, errRequest(t, ctx, url))
		if err == nil {
			readAll(t, resp)
		}
		return err
	}},
	{"Client", func(t *testing.T, ctx context.Context, inv *transport.Transport, _, url string) error {
		resp, err := inv.Client().Do(errRequest(t, ctx, url))
		if err == nil {
			readAll(t, resp)
		}
		return err
	}},
}

// errRequest is a GraphQL POST of errQuery to url.
func errRequest(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(errQuery))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// TestErrorsForwardedHeaders: a forwarded header that the rules refuse —
// over headers.max_forwarded_bytes, or with CR, LF or NUL in its value —
// fails every call (Post, PostFunc, Do, Client) on every path with an error
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
			for _, call := range errCalls {
				t.Run(fmt.Sprintf("%s/%s/%s", path, tc.name, call.name), func(t *testing.T) {
					srv := newSchemaServer(t, nil)
					inv := newInvoker(t, withSchema(path, srv.URL(), func(s *env.SourceSchema) {
						s.Headers.Forward = []string{name}
						s.Headers.MaxForwardedBytes = tc.maxBytes
					}))
					err := call.send(t, gatewayCtx(name, tc.value), inv, "products", srv.URL())
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
