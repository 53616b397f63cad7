package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/backend"
	"github.com/fusiongo/transport/internal/gqlhttp"
	"github.com/fusiongo/transport/internal/redact"
)

// Client returns an *http.Client for gateways that take one (or an
// http.RoundTripper) and send each source schema request to a URL: its
// Transport is inv.RoundTripper(); it has no cookie jar and no Timeout
// (each source schema's header_timeout and request_timeout bound its
// requests), and it follows no redirect itself: a 3xx that inv returns
// reaches the caller as it is. So the path alone decides about redirects:
// legacy follows them once, inside itself; sockets never does. Each call
// returns a new Client; all of them share inv's connections.
func (inv *Transport) Client() *http.Client {
	return &http.Client{
		Transport: inv.RoundTripper(),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// RoundTripper returns an http.RoundTripper that sends each request with
// inv.Do, as for the source schema the request names:
//
//   - the name that WithSourceSchema put in the request's context, if any;
//     on the sockets path the request's URL must still point at that
//     schema (fault.ErrWrongTarget otherwise);
//   - else the source schema whose configured url has the request's
//     scheme, host and port (compared as URLs are: host without case,
//     default ports filled in) and the longest path prefix, compared by
//     whole segments: a schema at http://h/a takes /a and /a/x, not /ab.
//     The configuration is the one in force for each request: the routing
//     follows Reload.
//
// A request that matches no source schema, or two at the same URL, fails
// with an error that names its redacted URL and wraps fault.ErrUnknownSchema;
// nothing is sent. The gateway request travels in the request's context,
// as for Do; so does the request's deadline. On every error the request's
// body is closed. After Close, every request fails with fault.ErrClosed.
func (inv *Transport) RoundTripper() http.RoundTripper {
	return &roundTripper{inv: inv}
}

// WithSourceSchema returns a copy of ctx that names source schema name:
// a request sent by Transport.RoundTripper or Transport.Client with that
// context goes to
// name whatever its URL, for gateways whose URLs the configuration does not
// know.
func WithSourceSchema(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, sourceSchemaKey{}, name)
}

// sourceSchemaKey is the context key of WithSourceSchema. It has no
// fields, so looking it up allocates nothing.
type sourceSchemaKey struct{}

// roundTripper is Transport.RoundTripper's RoundTripper.
type roundTripper struct {
	inv   *Transport            // immutable
	table atomic.Pointer[table] // the routing table of the last state seen
}

// table routes URLs to the source schemas of one state. It is built once
// per state, on the first request that sees the state, and never modified.
type table struct {
	st      *state
	targets []target // longest prefix first, then by name
}

// target is one source schema's configured URL, ready for matching.
type target struct {
	name   string
	url    *url.URL // scheme, host and port are compared
	prefix string   // the escaped path without a trailing "/"; "" matches every path
	also   string   // another schema at the same scheme, host, port and prefix; "" if none
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req == nil || req.URL == nil {
		gqlhttp.CloseBody(req)
		return nil, errors.New("transport: nil request or URL")
	}
	ctx := req.Context()
	if name, ok := ctx.Value(sourceSchemaKey{}).(string); ok {
		return rt.inv.Do(ctx, name, req)
	}
	st := rt.inv.state.Load()
	if st == nil {
		gqlhttp.CloseBody(req)
		return nil, fmt.Errorf("%s %s: %w", method(req), redact.Request(req.URL), fault.ErrClosed)
	}
	tb := rt.table.Load()
	if tb == nil || tb.st != st {
		fresh := newTable(st)
		// A concurrent request may have stored a table already: keep
		// either; a stale one is rebuilt by the next request.
		rt.table.CompareAndSwap(tb, fresh)
		tb = fresh
	}
	t := tb.match(req.URL)
	switch {
	case t == nil:
		gqlhttp.CloseBody(req)
		return nil, fmt.Errorf("%s %s: no source schema is configured at this scheme, host, port and path: %w", method(req), redact.Request(req.URL), fault.ErrUnknownSchema)
	case t.also != "":
		gqlhttp.CloseBody(req)
		return nil, fmt.Errorf("%s %s: source schemas %q and %q share this URL; name one with transport.WithSourceSchema: %w", method(req), redact.Request(req.URL), t.name, t.also, fault.ErrUnknownSchema)
	}
	return rt.inv.Do(ctx, t.name, req)
}

func method(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}

// newTable builds the routing table of st from each source schema's
// serving route (a shadow or canary candidate has the same URL).
func newTable(st *state) *table {
	tb := &table{st: st, targets: make([]target, 0, len(st.schemas))}
	for name, e := range st.schemas {
		tb.targets = append(tb.targets, target{name: name, url: e.primary.url, prefix: strings.TrimRight(e.primary.url.EscapedPath(), "/")})
	}
	slices.SortFunc(tb.targets, func(a, b target) int {
		return cmp.Or(cmp.Compare(len(b.prefix), len(a.prefix)), cmp.Compare(a.name, b.name))
	})
	for i := range tb.targets {
		a := &tb.targets[i]
		for j := range tb.targets {
			if b := &tb.targets[j]; i != j && a.prefix == b.prefix && backend.SameTarget(a.url, b.url) {
				a.also = b.name
				break
			}
		}
	}
	return tb
}

// match returns the target of u: the same scheme, host and port and the
// longest prefix of u's path by whole segments; nil if none. Since targets
// are ordered longest prefix first, the first match is the longest. It
// allocates nothing for a URL whose path needs no escaping.
func (tb *table) match(u *url.URL) *target {
	p := u.EscapedPath()
	for i := range tb.targets {
		t := &tb.targets[i]
		if underPrefix(p, t.prefix) && backend.SameTarget(u, t.url) {
			return t
		}
	}
	return nil
}

// underPrefix reports whether path p is prefix or lies below it.
func underPrefix(p, prefix string) bool {
	return strings.HasPrefix(p, prefix) && (len(p) == len(prefix) || p[len(prefix)] == '/' || prefix == "")
}
