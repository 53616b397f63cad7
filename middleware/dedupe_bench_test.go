package middleware

import (
	"net/http"
	"testing"
)

// BenchmarkDedupeKey measures the dedupe key of a typical source schema
// request: the headers of a Post with forwarded credentials, a user header
// and trace context.
func BenchmarkDedupeKey(b *testing.B) {
	req, err := http.NewRequest(http.MethodPost, "http://products.test/graphql", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header = http.Header{
		"Content-Type":  {"application/json"},
		"Accept":        {"application/graphql-response+json, application/json"},
		"Authorization": {"Bearer abc"},
		"X-User-Id":     {"alice"},
		"Traceparent":   {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"X-Request-Id":  {"r-1"},
	}
	body := []byte(`{"query":"{ topProducts { upc name } }"}`)
	d := newDedupe(nil, maxSharedBody)(http.DefaultTransport).(*deduper)
	b.ReportAllocs()
	for b.Loop() {
		_ = d.key(req, body)
	}
}
