package transport_test

// The response cache on the wire: what the source schema received (how
// many requests, with which headers) and what each caller got, on every
// path and engine.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// cacheServer is a source schema whose answers the tests set per request:
// it records each request's headers, and answers with the number of the
// request in its body, so that a caller tells a stored answer from a
// fresh one.
type cacheServer struct {
	*httptest.Server
	answer func(w http.ResponseWriter, r *http.Request, n int64) // writes headers and status; nil: 200
	body   func(r *http.Request, n int64) string                 // the body; nil: {"data":{"n":N}}

	n    atomic.Int64
	mu   sync.Mutex
	seen []http.Header // guarded by mu
}

func newCacheServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int64)) *cacheServer {
	t.Helper()
	s := &cacheServer{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := s.n.Add(1)
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Clone())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if s.answer != nil {
			s.answer(w, r, n)
		}
		body := fmt.Sprintf(`{"data":{"n":%d}}`, n)
		if s.body != nil {
			body = s.body(r, n)
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns how many requests the schema got.
func (s *cacheServer) requests() int64 { return s.n.Load() }

// headers returns the headers of every request the schema got, in order.
func (s *cacheServer) headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.seen...)
}

// cacheControl answers every request with Cache-Control cc.
func cacheControl(cc string) func(w http.ResponseWriter, r *http.Request, n int64) {
	return func(w http.ResponseWriter, _ *http.Request, _ int64) { w.Header().Set("Cache-Control", cc) }
}

// cachedConfig is a Config for path with products at url and its response
// cache on; edit, if non-nil, changes the schema's cache settings further.
func cachedConfig(path env.Path, url string, edit func(*env.ResponseCacheSettings)) env.Config {
	return withSchema(path, url, func(s *env.SourceSchema) {
		s.ResponseCache.Enabled = env.Enabled
		s.ResponseCache.MaxEntryBytes, s.ResponseCache.MaxTTL, s.ResponseCache.Store = 1<<20, time.Hour, "memory" // TEMP until the keys inherit
		if edit != nil {
			edit(&s.ResponseCache)
		}
	})
}

// postBody posts body to products and returns the answer's body and Age.
func postBody(t *testing.T, inv transport.Invoker, ctx context.Context, body string) (string, string) {
	t.Helper()
	resp, err := inv.Post(ctx, "products", []byte(body))
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	return readAll(t, resp), resp.Header.Get("Age")
}

const cacheQuery = `{"query":"{ products { id } }"}`

// TestResponseCacheStores: an answer the policy stores answers the next
// identical call, unsent, with an Age; one it does not store never does.
func TestResponseCacheStores(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, n int64)
		body   func(r *http.Request, n int64) string
		query  string
		edit   func(*env.ResponseCacheSettings)
		stored bool
	}{
		{"max-age", cacheControl("max-age=60"), nil, cacheQuery, nil, true},
		{"public s-maxage", cacheControl("public, s-maxage=60"), nil, cacheQuery, nil, true},
		{"private", cacheControl("private, max-age=60"), nil, cacheQuery, nil, true},
		{"no Cache-Control", nil, nil, cacheQuery, nil, false},
		{"no Cache-Control, default_ttl", nil, nil, cacheQuery, func(s *env.ResponseCacheSettings) { s.DefaultTTL = time.Minute }, true},
		{"no-store", cacheControl("no-store, max-age=60"), nil, cacheQuery, nil, false},
		{"no-cache", cacheControl("no-cache, max-age=60"), nil, cacheQuery, nil, false},
		{"max-age=0", cacheControl("max-age=0"), nil, cacheQuery, nil, false},
		{"Age past max-age", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "max-age=60")
			w.Header().Set("Age", "60")
		}, nil, cacheQuery, nil, false},
		{"status 500", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "max-age=60")
			w.WriteHeader(http.StatusInternalServerError)
		}, nil, cacheQuery, nil, false},
		{"errors", cacheControl("max-age=60"), func(_ *http.Request, n int64) string {
			return fmt.Sprintf(`{"data":{"n":%d},"errors":[{"message":"partial"}]}`, n)
		}, cacheQuery, nil, false},
		{"empty errors", cacheControl("max-age=60"), func(_ *http.Request, n int64) string {
			return fmt.Sprintf(`{"errors":[],"data":{"n":%d}}`, n)
		}, cacheQuery, nil, true},
		{"over max_entry_bytes", cacheControl("max-age=60"), func(_ *http.Request, n int64) string {
			return fmt.Sprintf(`{"data":{"n":%d,"pad":"%s"}}`, n, strings.Repeat("x", 200))
		}, cacheQuery, func(s *env.ResponseCacheSettings) { s.MaxEntryBytes = 100 }, false},
		{"a mutation", cacheControl("max-age=60"), nil, `{"query":"mutation { buy }"}`, nil, false},
		{"a subscription", cacheControl("max-age=60"), nil, `{"query":"subscription { ticks }"}`, nil, false},
		{"an event stream", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "max-age=60")
			w.Header().Set("Content-Type", "text/event-stream")
		}, nil, cacheQuery, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range paths {
				t.Run(string(path), func(t *testing.T) {
					s := newCacheServer(t, tt.answer)
					s.body = tt.body
					inv := newInvoker(t, cachedConfig(path, s.URL, tt.edit))
					first, firstAge := postBody(t, inv, context.Background(), tt.query)
					second, age := postBody(t, inv, context.Background(), tt.query)
					want := int64(2)
					if tt.stored {
						want = 1
					}
					if got := s.requests(); got != want {
						t.Fatalf("the source schema got %d requests, want %d", got, want)
					}
					if firstAge != "" && tt.name != "Age past max-age" {
						t.Errorf("the first answer, from the schema, has Age %q", firstAge)
					}
					if tt.stored && (second != first || age != "0") {
						t.Errorf("the second answer is %q, Age %q; want the first, %q, Age 0", second, age, first)
					}
					if !tt.stored && second == first {
						t.Errorf("the second answer %q is the first's", second)
					}
				})
			}
		})
	}
}
