package compare_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
)

// TestRunCached: by default both sides of every request are really sent,
// a side's response cache neither answering nor storing; with
// Options.Cached a side with its cache on answers the corpus's second pass
// from it, and a cache that changes no answer compares equal with the side
// without one.
func TestRunCached(t *testing.T) {
	for _, cached := range []bool{false, true} {
		var requests atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			requests.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "max-age=60")
			io.WriteString(w, `{"data":{"users":[{"id":"1"}]}}`)
		}))
		t.Cleanup(srv.Close)
		side := func(cache bool) *transport.Transport {
			cfg := env.Config{Path: env.PathSockets, SourceSchemas: map[string]env.SourceSchema{"accounts": {URL: srv.URL}}}
			if cache {
				cfg.Defaults.ResponseCache.Enabled = env.Enabled
			}
			inv, err := transport.New(cfg, transport.WithLookupEnv(func(string) (string, bool) { return "", false }))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { inv.Close() })
			return inv
		}
		plain, withCache := side(false), side(true)
		query := compare.Request{Name: "users", Schema: "accounts", Body: []byte(`{"query":"{ users { id } }"}`)}
		again := query
		again.Name = "users again"
		rep, err := compare.Run(context.Background(), []compare.Request{query, again},
			compare.Side{Name: "plain", Invoker: plain}, compare.Side{Name: "cached", Invoker: withCache},
			compare.Options{URLs: map[string]string{"accounts": srv.URL}, Cached: cached})
		if err != nil {
			t.Fatal(err)
		}
		if n := rep.Counts().Different; n != 0 {
			var buf strings.Builder
			rep.Write(&buf)
			t.Errorf("Cached %t: %d requests differ:\n%s", cached, n, buf.String())
		}
		want := int64(4) // both passes, both sides
		if cached {
			want = 3 // the cached side's second pass answered from its cache
		}
		if got := requests.Load(); got != want {
			t.Errorf("Cached %t: the source schema got %d requests, want %d", cached, got, want)
		}
	}
}
