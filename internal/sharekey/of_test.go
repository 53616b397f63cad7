package sharekey_test

import (
	"net/http"
	"testing"

	"github.com/fusiongo/transport/internal/sharekey"
)

// request is a source schema request as dedupe keys it: a POST of a query
// with the headers of h (in map form, names as given) and host, if set, as
// its Host.
func keyRequest(t *testing.T, method, url, host string, h http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range h {
		req.Header[k] = v
	}
	return req
}

// TestOf is the rule for which requests may share an answer: two requests
// that a source schema would receive differently (method, URL with its
// query, Host, body, any header but the per-call ones, name or value, in
// any split) never have one key; two that differ only in the trace context
// or X-Request-Id, in any case, always do.
func TestOf(t *testing.T) {
	const url = "http://products:4001/graphql"
	body := []byte(`{"query":"{ a }"}`)
	// base has enough headers that a key that depended on the map's
	// iteration order would differ between calls.
	base := func() http.Header {
		return http.Header{
			"Authorization": {"Bearer alice"}, "Cookie": {"s=1"}, "X-Tenant": {"acme"},
			"Accept": {"application/json"}, "X-Role": {"a", "b"}, "Baggage": {"user=alice"},
			"X-A": {"1"}, "X-B": {"2"}, "X-C": {"3"},
		}
	}
	with := func(edit func(h http.Header)) http.Header {
		h := base()
		edit(h)
		return h
	}
	type req struct {
		method, url, host string
		h                 http.Header
		body              []byte
	}
	a := req{http.MethodPost, url, "", base(), body}
	for _, tc := range []struct {
		name  string
		b     req
		share bool
	}{
		{"the same request", req{http.MethodPost, url, "", base(), body}, true},
		{"another method", req{http.MethodGet, url, "", base(), body}, false},
		{"another URL query", req{http.MethodPost, url + "?tenant=b", "", base(), body}, false},
		{"another path", req{http.MethodPost, url + "2", "", base(), body}, false},
		{"another Host", req{http.MethodPost, url, "products.internal", base(), body}, false},
		{"another body", req{http.MethodPost, url, "", base(), []byte(`{"query":"{ b }"}`)}, false},
		{"no body", req{http.MethodPost, url, "", base(), nil}, false},
		{"another Authorization", req{http.MethodPost, url, "", with(func(h http.Header) { h["Authorization"] = []string{"Bearer bob"} }), body}, false},
		{"no Authorization", req{http.MethodPost, url, "", with(func(h http.Header) { delete(h, "Authorization") }), body}, false},
		{"another tenant header", req{http.MethodPost, url, "", with(func(h http.Header) { h["X-Tenant"] = []string{"other"} }), body}, false},
		{"a header's values in another order", req{http.MethodPost, url, "", with(func(h http.Header) { h["X-Role"] = []string{"b", "a"} }), body}, false},
		{"a header's values split elsewhere", req{http.MethodPost, url, "", with(func(h http.Header) { h["X-Role"] = []string{"ab"} }), body}, false},
		{"another Baggage", req{http.MethodPost, url, "", with(func(h http.Header) { h["Baggage"] = []string{"user=bob"} }), body}, false},
		{"a header in another case, another value", req{http.MethodPost, url, "", with(func(h http.Header) { h["x-user-id"] = []string{"bob"} }), body}, false},
		{"trace context and request id", req{http.MethodPost, url, "", with(func(h http.Header) {
			h["Traceparent"] = []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
			h["Tracestate"] = []string{"a=1"}
			h["B3"] = []string{"1-2"}
			for _, n := range []string{"X-B3-Traceid", "X-B3-Spanid", "X-B3-Parentspanid", "X-B3-Sampled", "X-B3-Flags", "X-Request-Id"} {
				h[n] = []string{"7"}
			}
		}), body}, true},
		{"trace context in lower case", req{http.MethodPost, url, "", with(func(h http.Header) {
			h["traceparent"] = []string{"00-x-y-01"}
			h["x-request-id"] = []string{"r2"}
			h["x-b3-traceid"] = []string{"9"}
		}), body}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ka := sharekey.Of(keyRequest(t, a.method, a.url, a.host, a.h), a.body)
			for range 20 { // a key that hangs on map order differs in one of them
				kb := sharekey.Of(keyRequest(t, tc.b.method, tc.b.url, tc.b.host, tc.b.h), tc.b.body)
				if (ka == kb) != tc.share {
					t.Fatalf("keys equal: %t, want %t", ka == kb, tc.share)
				}
			}
		})
	}
}

// TestOfPartsApart: parts that would read alike end to end, when split
// elsewhere across values or headers, give different keys.
func TestOfPartsApart(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b http.Header
	}{
		{"values split elsewhere", http.Header{"X-Tenant": {"ab", "c"}}, http.Header{"X-Tenant": {"a", "bc"}}},
		{"a value read as a header name", http.Header{"X-A": {"X-B"}, "X-C": {}}, http.Header{"X-A": {}, "X-B": {"X-C"}}},
		{"name and value split elsewhere", http.Header{"X-Ab": {"c"}}, http.Header{"X-A": {"bc"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := sharekey.Of(keyRequest(t, http.MethodPost, "http://h/graphql", "", tc.a), nil)
			b := sharekey.Of(keyRequest(t, http.MethodPost, "http://h/graphql", "", tc.b), nil)
			if a == b {
				t.Errorf("%v and %v have one key", tc.a, tc.b)
			}
		})
	}
}

// TestPerCall: the headers left out of a key, in any case, and only those.
func TestPerCall(t *testing.T) {
	for _, name := range []string{"Traceparent", "traceparent", "TRACESTATE", "b3", "X-B3-TraceId", "x-b3-spanid", "X-B3-ParentSpanId", "X-B3-Sampled", "x-b3-flags", "X-Request-ID", "x-request-id"} {
		if !sharekey.PerCall(name) {
			t.Errorf("PerCall(%q) = false, want true", name)
		}
	}
	for _, name := range []string{"Authorization", "Cookie", "Baggage", "X-Tenant", "X-Request", "Traceparent-X", ""} {
		if sharekey.PerCall(name) {
			t.Errorf("PerCall(%q) = true, want false", name)
		}
	}
}
