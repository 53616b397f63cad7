package middleware

import (
	"context"
	"net/http"
	"testing"

	"github.com/fusiongo/transport/internal/sharekey"
)

// keyedRequest is the request of the key benchmarks: the headers of a
// typical source schema Post with a user header and trace context, and
// Authorization if auth is set, and its body.
func keyedRequest(b *testing.B, auth string) (*http.Request, []byte) {
	req, err := http.NewRequest(http.MethodPost, "http://products.test/graphql", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header = http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/graphql-response+json, application/json"},
		"X-User-Id":    {"alice"},
		"Traceparent":  {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"X-Request-Id": {"r-1"},
	}
	if auth != "" {
		req.Header["Authorization"] = []string{auth}
	}
	return req, []byte(`{"query":"{ topProducts { upc name } }"}`)
}

// BenchmarkDedupeKey measures the dedupe key of a typical source schema
// request: the headers of a Post with forwarded credentials, a user header
// and trace context.
func BenchmarkDedupeKey(b *testing.B) {
	req, body := keyedRequest(b, "Bearer abc")
	d := newDedupe(nil, nil, maxSharedBody)(http.DefaultTransport).(*deduper)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = d.key(req, body)
	}
}

// BenchmarkDedupeKeyProbe measures the key of the same request when
// Dedupe keys it as a Token further in would send it (the request path's
// dedupe with SchemaOptions.AttemptMiddleware): the probe's run of the
// middleware on top of the key.
func BenchmarkDedupeKeyProbe(b *testing.B) {
	req, body := keyedRequest(b, "")
	token := Token(func(context.Context) (string, error) { return "Bearer abc", nil })
	d := newDedupe(sharekey.NewProbe([]Middleware{token}), nil, maxSharedBody)(http.DefaultTransport).(*deduper)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := d.key(req, body); !ok {
			b.Fatal("the probe did not key the request")
		}
	}
}
