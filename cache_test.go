package transport_test

// The response cache on the wire: what the source schema received (how
// many requests, with which headers) and what each caller got, on every
// path and engine.

import (
	"context"
	"encoding/json"
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
	"github.com/fusiongo/transport/internal/testsupport/race"
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
		{"trailers", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "max-age=60")
			w.Header().Set("Trailer", "X-Checksum")
		}, nil, cacheQuery, nil, false},
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

// echoCaller is a body that tells who asked: the request's number, its
// Authorization and its X-Tenant.
func echoCaller(r *http.Request, n int64) string {
	return fmt.Sprintf(`{"data":{"n":%d,"auth":%q,"tenant":%q}}`, n, r.Header.Get("Authorization"), r.Header.Get("X-Tenant"))
}

// caller is one gateway caller of the scope tests.
type caller struct{ auth, tenant string }

func (c caller) ctx() context.Context {
	return gatewayCtx("Authorization", c.auth, "X-Tenant", c.tenant)
}

var (
	aliceA = caller{"Bearer alice", "a"}
	bobA   = caller{"Bearer bob", "a"}
	carolB = caller{"Bearer carol", "b"}
)

// TestResponseCacheWhoShares: a stored answer reaches only a caller the
// source schema could not tell from the one that stored it, unless the
// answer is public and response_cache.shared is on; then only the headers
// its Vary and response_cache.vary name tell callers apart. Callers call
// in order: each wants a request of its own (sent) or the stored answer of
// an earlier caller (from, by index).
func TestResponseCacheWhoShares(t *testing.T) {
	type call struct {
		who  caller
		from int // -1: sent; else the index of the call whose answer it gets
	}
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, n int64)
		edit   func(*env.ResponseCacheSettings)
		calls  []call
	}{
		{"public, not shared: each identity its own entry", cacheControl("public, max-age=60"), nil,
			[]call{{aliceA, -1}, {bobA, -1}, {aliceA, 0}, {bobA, 1}}},
		{"public, shared", cacheControl("public, max-age=60"), shared,
			[]call{{aliceA, -1}, {bobA, 0}, {carolB, 0}}},
		{"s-maxage, shared", cacheControl("s-maxage=60"), shared,
			[]call{{aliceA, -1}, {bobA, 0}}},
		{"max-age alone, shared: not public", cacheControl("max-age=60"), shared,
			[]call{{aliceA, -1}, {bobA, -1}, {aliceA, 0}}},
		{"private, shared: never across callers", cacheControl("public, private, max-age=60"), shared,
			[]call{{aliceA, -1}, {bobA, -1}, {aliceA, 0}, {bobA, 1}}},
		{"Vary: X-Tenant", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.Header().Set("Vary", "X-Tenant")
		}, shared, []call{{aliceA, -1}, {bobA, 0}, {carolB, -1}, {carolB, 2}}},
		{"response_cache.vary: X-Tenant", cacheControl("public, max-age=60"), func(s *env.ResponseCacheSettings) {
			shared(s)
			s.Vary = []string{"x-tenant"}
		}, []call{{aliceA, -1}, {bobA, 0}, {carolB, -1}, {aliceA, 0}}},
		{"Vary: Authorization", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.Header().Set("Vary", "authorization")
		}, shared, []call{{aliceA, -1}, {bobA, -1}, {carolB, -1}, {bobA, 1}}},
		{"Vary: *", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.Header().Set("Vary", "*")
		}, shared, []call{{aliceA, -1}, {aliceA, -1}}},
		{"Set-Cookie: not across callers", func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Cache-Control", "public, max-age=60")
			w.Header().Set("Set-Cookie", "session=1")
		}, shared, []call{{aliceA, -1}, {bobA, -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range paths {
				t.Run(string(path), func(t *testing.T) {
					s := newCacheServer(t, tt.answer)
					s.body = echoCaller
					cfg := cachedConfig(path, s.URL, tt.edit)
					cfg.ForwardHeaders = []string{"Authorization", "X-Tenant"}
					inv := newInvoker(t, cfg)
					var got []string
					sent := int64(0)
					for i, c := range tt.calls {
						body, _ := postBody(t, inv, c.who.ctx(), cacheQuery)
						got = append(got, body)
						if c.from < 0 {
							sent++
							if want := echoCaller(&http.Request{Header: http.Header{"Authorization": {c.who.auth}, "X-Tenant": {c.who.tenant}}}, sent); body != want {
								t.Fatalf("call %d (%s) got %s, want its own answer %s", i, c.who.auth, body, want)
							}
						} else if body != got[c.from] {
							t.Fatalf("call %d (%s) got %s, want call %d's stored answer %s", i, c.who.auth, body, c.from, got[c.from])
						}
						if n := s.requests(); n != sent {
							t.Fatalf("after call %d the source schema got %d requests, want %d", i, n, sent)
						}
					}
				})
			}
		})
	}
}

// shared turns response_cache.shared on.
func shared(s *env.ResponseCacheSettings) { s.Shared = env.Enabled }

// TestResponseCacheConcurrentMisses: concurrent misses of one key send one
// request, dedupe on or off; callers of two identities send one each, and
// every caller gets the answer of its own identity.
func TestResponseCacheConcurrentMisses(t *testing.T) {
	const perUser = 4
	for _, dedupe := range []env.Toggle{env.Disabled, env.Enabled} {
		for _, path := range paths {
			t.Run(fmt.Sprintf("dedupe %s/%s", dedupe, path), func(t *testing.T) {
				release := make(chan struct{})
				var once sync.Once
				s := newCacheServer(t, func(w http.ResponseWriter, r *http.Request, n int64) {
					<-release
					w.Header().Set("Cache-Control", "public, max-age=60")
				})
				s.body = echoCaller
				cfg := cachedConfig(path, s.URL, nil)
				cfg.ForwardHeaders = []string{"Authorization", "X-Tenant"}
				cfg.Defaults.Dedupe = dedupe
				// Each identity's key has one call in flight that its
				// other callers join; once both keys hold all their
				// callers, the schema answers.
				var mu sync.Mutex
				full := 0
				inv := newInvoker(t, cfg, transport.WithDedupeJoinedHook(func(waiters int) {
					mu.Lock()
					defer mu.Unlock()
					if waiters == perUser {
						if full++; full == 2 {
							once.Do(func() { close(release) })
						}
					}
				}))
				type result struct {
					who  caller
					body string
					err  error
				}
				results := make(chan result, 2*perUser)
				for _, who := range []caller{aliceA, bobA} {
					for range perUser {
						go func() {
							resp, err := inv.Post(who.ctx(), "products", []byte(cacheQuery))
							if err != nil {
								results <- result{who: who, err: err}
								return
							}
							b, err := io.ReadAll(resp.Body)
							resp.Body.Close()
							results <- result{who, string(b), err}
						}()
					}
				}
				for range 2 * perUser {
					r := <-results
					if r.err != nil {
						t.Fatalf("%s: %v", r.who.auth, r.err)
					}
					if !strings.Contains(r.body, fmt.Sprintf("%q", r.who.auth)) {
						t.Errorf("%s got %s, another caller's answer", r.who.auth, r.body)
					}
				}
				if n := s.requests(); n != 2 {
					t.Errorf("the source schema got %d requests, want 2: one per identity", n)
				}
			})
		}
	}
}

// TestResponseCacheHitIsTheCallersOwn: a hit through Post, PostFunc, Do
// and Client is a response of the caller's own: changing its headers or
// reading its body changes nothing another caller gets.
func TestResponseCacheHitIsTheCallersOwn(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newCacheServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
				w.Header().Set("Cache-Control", "max-age=60")
				w.Header().Add("X-Values", "a")
				w.Header().Add("X-Values", "b")
			})
			inv := newInvoker(t, cachedConfig(path, s.URL, nil))
			want, _ := postBody(t, inv, context.Background(), cacheQuery)
			spoil := func(resp *http.Response) string {
				t.Helper()
				if got := resp.Header.Values("X-Values"); strings.Join(got, ",") != "a,b" {
					t.Errorf("X-Values %q, want the stored a,b", got)
				}
				if resp.Header.Get("Age") == "" || resp.StatusCode != http.StatusOK {
					t.Errorf("status %d, Age %q; want 200 with an Age", resp.StatusCode, resp.Header.Get("Age"))
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				resp.Header["X-Values"][0] = "spoiled"
				resp.Header.Add("X-Values", "more")
				resp.Header.Set("Age", "spoiled")
				return string(b)
			}
			for i := range 2 {
				resp, err := inv.Post(context.Background(), "products", []byte(cacheQuery))
				if err != nil {
					t.Fatal(err)
				}
				if got := spoil(resp); got != want {
					t.Fatalf("Post %d got %q, want %q", i, got, want)
				}
				resp.Body.Close()
				err = inv.PostFunc(context.Background(), "products", []byte(cacheQuery), func(resp *http.Response) error {
					if got := spoil(resp); got != want {
						t.Errorf("PostFunc %d got %q, want %q", i, got, want)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(cacheQuery))
				// The headers of a Post: the same request, the same entry.
				req.Header.Set("Content-Type", "application/json; charset=utf-8")
				req.Header.Set("Accept", "application/graphql-response+json; charset=utf-8, application/json; charset=utf-8")
				resp, err = inv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if got := spoil(resp); got != want {
					t.Fatalf("Client %d got %q, want %q", i, got, want)
				}
				resp.Body.Close()
			}
			if n := s.requests(); n != 1 {
				t.Errorf("the source schema got %d requests, want 1", n)
			}
		})
	}
}

// queryN is the query text of call n of the invalidation tests: each its
// own entry.
func queryN(n int) string { return fmt.Sprintf(`{"query":"{ products(n: %d) { id } }"}`, n) }

// TestInvalidateCache: InvalidateCache removes every entry of the schema,
// or those of a tag (from Cache-Tag, Surrogate-Key or
// extensions.apolloCacheTags), and says how many; the next call of a
// removed entry is sent, of a kept one answered.
func TestInvalidateCache(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			// Query n is tagged "even" or "odd" by header, and "n<N>" in
			// its extensions.
			s := newCacheServer(t, nil)
			var mu sync.Mutex
			tags := map[int64]int{} // request number -> query n
			s.answer = func(w http.ResponseWriter, r *http.Request, n int64) {
				w.Header().Set("Cache-Control", "max-age=60")
			}
			s.Server.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				var q int
				fmt.Sscanf(strings.TrimPrefix(string(b), `{"query":"{ products(n: `), "%d", &q)
				n := s.n.Add(1)
				mu.Lock()
				tags[n] = q
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "max-age=60")
				if q%2 == 0 {
					w.Header().Set("Cache-Tag", "even, all")
				} else {
					w.Header().Set("Surrogate-Key", "odd all")
				}
				fmt.Fprintf(w, `{"data":{"q":%d},"extensions":{"apolloCacheTags":["n%d"]}}`, q, q)
			})
			inv := newInvoker(t, cachedConfig(path, s.URL, nil))
			ctx := context.Background()
			fill := func() {
				for q := range 4 {
					postBody(t, inv, ctx, queryN(q))
				}
			}
			sentFor := func(qs ...int) {
				t.Helper()
				before := s.requests()
				for q := range 4 {
					postBody(t, inv, ctx, queryN(q))
				}
				var want int64
				for range qs {
					want++
				}
				if got := s.requests() - before; got != want {
					t.Errorf("after the invalidation %d of 4 queries were sent, want %d (%v)", got, want, qs)
				}
			}
			fill()
			if n := s.requests(); n != 4 {
				t.Fatalf("filling sent %d requests, want 4", n)
			}
			if n, err := inv.InvalidateCache(ctx, "products", "even"); err != nil || n != 2 {
				t.Fatalf("InvalidateCache(even) = %d, %v; want 2", n, err)
			}
			sentFor(0, 2)
			if n, err := inv.InvalidateCache(ctx, "products", "n3", "nothing"); err != nil || n != 1 {
				t.Fatalf("InvalidateCache(n3) = %d, %v; want 1", n, err)
			}
			sentFor(3)
			if n, err := inv.InvalidateCache(ctx, "products"); err != nil || n != 4 {
				t.Fatalf("InvalidateCache() = %d, %v; want 4", n, err)
			}
			sentFor(0, 1, 2, 3)
			if _, err := inv.InvalidateCache(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
				t.Errorf("InvalidateCache of an unknown schema: %v, want an error naming it", err)
			}
		})
	}
}

// TestInvalidateCacheDuringRequest: an answer whose request began before
// an invalidation that covers it is not stored after it, whichever comes
// first: the answer's headers or the invalidation.
func TestInvalidateCacheDuringRequest(t *testing.T) {
	for _, tags := range [][]string{nil, {"t"}} {
		for _, path := range paths {
			t.Run(fmt.Sprintf("%v/%s", tags, path), func(t *testing.T) {
				arrived, release := make(chan struct{}, 1), make(chan struct{})
				s := newCacheServer(t, func(w http.ResponseWriter, _ *http.Request, n int64) {
					w.Header().Set("Cache-Control", "max-age=60")
					w.Header().Set("Cache-Tag", "t")
					if n == 1 {
						arrived <- struct{}{}
						<-release
					}
				})
				inv := newInvoker(t, cachedConfig(path, s.URL, nil))
				done := make(chan string)
				go func() {
					resp, err := inv.Post(context.Background(), "products", []byte(cacheQuery))
					if err != nil {
						done <- err.Error()
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					done <- string(b)
				}()
				<-arrived
				if _, err := inv.InvalidateCache(context.Background(), "products", tags...); err != nil {
					t.Fatal(err)
				}
				close(release)
				if got := <-done; got != `{"data":{"n":1}}` {
					t.Fatalf("the caller got %q", got)
				}
				postBody(t, inv, context.Background(), cacheQuery)
				if n := s.requests(); n != 2 {
					t.Errorf("the source schema got %d requests, want 2: the answer of the request the invalidation overtook was stored", n)
				}
			})
		}
	}
}

// TestResponseCacheReload: a reload whose cache settings and URL are equal
// keeps the schema's entries; one that changes them, or turns the cache
// off, starts afresh; a refused reload keeps the old cache in force.
func TestResponseCacheReload(t *testing.T) {
	tests := []struct {
		name string
		edit func(*env.Config, string)
		sent bool // the call after the reload is sent
	}{
		{"unchanged", func(*env.Config, string) {}, false},
		{"another key changed", func(c *env.Config, _ string) { c.Defaults.HeaderTimeout = time.Minute }, false},
		{"max_ttl changed", func(c *env.Config, _ string) { c.Defaults.ResponseCache.MaxTTL = time.Minute }, true},
		{"cache off", func(c *env.Config, _ string) {
			s := c.SourceSchemas["products"]
			s.ResponseCache.Enabled = env.Disabled
			c.SourceSchemas["products"] = s
		}, true},
		{"URL changed", func(c *env.Config, url string) {
			s := c.SourceSchemas["products"]
			s.URL = url + "/"
			c.SourceSchemas["products"] = s
		}, true},
	}
	for _, tt := range tests {
		for _, path := range paths {
			t.Run(tt.name+"/"+string(path), func(t *testing.T) {
				s := newCacheServer(t, cacheControl("max-age=60"))
				cfg := cachedConfig(path, s.URL, nil)
				inv := newInvoker(t, cfg)
				postBody(t, inv, context.Background(), cacheQuery)
				next := cachedConfig(path, s.URL, nil)
				tt.edit(&next, s.URL)
				if err := inv.Reload(next); err != nil {
					t.Fatal(err)
				}
				postBody(t, inv, context.Background(), cacheQuery)
				want := int64(1)
				if tt.sent {
					want = 2
				}
				if n := s.requests(); n != want {
					t.Errorf("the source schema got %d requests, want %d", n, want)
				}
				bad := cachedConfig(path, s.URL, func(c *env.ResponseCacheSettings) { c.Store = "nowhere" })
				if err := inv.Reload(bad); err == nil {
					t.Fatal("a reload with an unknown store was accepted")
				}
				before := s.requests()
				postBody(t, inv, context.Background(), cacheQuery)
				postBody(t, inv, context.Background(), cacheQuery)
				if got := s.requests() - before; tt.name != "cache off" && got != 0 {
					t.Errorf("after a refused reload %d calls were sent, want 0: the cache in force answers", got)
				}
			})
		}
	}
}

// TestResponseCacheCanaryAndShadow: a canary's two sides share the
// schema's cache; a shadowed query is really sent on both sides, never
// answered from the cache.
func TestResponseCacheCanaryAndShadow(t *testing.T) {
	t.Run("canary", func(t *testing.T) {
		s := newCacheServer(t, cacheControl("max-age=60"))
		cfg := cachedConfig(env.PathLegacy, s.URL, nil)
		cfg.Canary = env.CanarySettings{Rate: 0.5}
		inv := newInvoker(t, cfg)
		for range 20 {
			postBody(t, inv, gatewayCtx(), cacheQuery)
		}
		if n := s.requests(); n != 1 {
			t.Errorf("the source schema got %d requests for 20 calls over both canary sides, want 1", n)
		}
	})
	t.Run("shadow", func(t *testing.T) {
		s := newCacheServer(t, cacheControl("max-age=60"))
		cfg := cachedConfig(env.PathLegacy, s.URL, nil)
		cfg.Shadow = env.ShadowSettings{Rate: 1, MaxConcurrent: 64}
		inv := newInvoker(t, cfg)
		for range 3 {
			postBody(t, inv, context.Background(), cacheQuery)
		}
		inv.Close() // waits for the comparisons
		if n := s.requests(); n != 6 {
			t.Errorf("the source schema got %d requests for 3 shadowed calls, want 6: both sides, every time", n)
		}
	})
}

// TestResponseCacheAttemptCredentials: a credential that
// SchemaOptions.AttemptMiddleware adds per attempt is in the cache's key,
// as in dedupe's: alice's entry never answers bob.
func TestResponseCacheAttemptCredentials(t *testing.T) {
	for creds, so := range credentials {
		for _, path := range paths {
			t.Run(creds+"/"+string(path), func(t *testing.T) {
				s := newCacheServer(t, cacheControl("max-age=60"))
				s.body = echoCaller
				inv := newInvoker(t, cachedConfig(path, s.URL, nil), transport.WithSchemaOptions("products", so))
				alice, _ := postBody(t, inv, asUser("alice"), cacheQuery)
				bob, _ := postBody(t, inv, asUser("bob"), cacheQuery)
				again, _ := postBody(t, inv, asUser("alice"), cacheQuery)
				if !strings.Contains(alice, tokenFor("alice")) || !strings.Contains(bob, tokenFor("bob")) || again != alice {
					t.Errorf("alice got %s, bob %s, alice again %s: want each their own, alice's stored", alice, bob, again)
				}
				if n := s.requests(); n != 2 {
					t.Errorf("the source schema got %d requests, want 2", n)
				}
			})
		}
	}
}

// TestResponseCacheStatus: the status page and its JSON show each cached
// schema's counts, hit ratio and what its store holds, and agree.
func TestResponseCacheStatus(t *testing.T) {
	s := newCacheServer(t, cacheControl("max-age=60"))
	inv := newInvoker(t, cachedConfig(pathH1, s.URL, nil))
	for range 3 {
		postBody(t, inv, context.Background(), cacheQuery)
	}
	postBody(t, inv, context.Background(), `{"query":"mutation { buy }"}`)
	h := inv.StatusHandler()
	js, _ := callStatus(t, h, "/status", "application/json")
	var doc struct {
		Schemas []struct {
			Cache *struct {
				Store                string
				Hits, Misses, Stored int64
				HitRatio             float64 `json:"hit_ratio"`
				Entries              *int64
				Health               string
			}
		}
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Schemas[0].Cache
	if c == nil || c.Store != "memory" || c.Hits != 2 || c.Misses != 1 || c.Stored != 1 || c.Entries == nil || *c.Entries != 1 || c.Health != "ok" {
		t.Fatalf("cache status %s, want memory, 2 hits, 1 miss, 1 stored, 1 entry, ok", js)
	}
	page, _ := callStatus(t, h, "/status", "text/html")
	row := pageCells(t, page, "cache")["products"]
	if row["hits"] != "2" || row["misses"] != "1" || row["hit_ratio"] != "0.6667" || row["entries"] != "1" || row["health"] != "ok" {
		t.Errorf("page row %v, want the JSON's figures", row)
	}
}

// newCacheServerB is newCacheServer for a benchmark: every answer is
// max-age=60.
func newCacheServerB(b *testing.B) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, `{"data":{"n":1}}`)
	}))
	b.Cleanup(s.Close)
	return s
}

// TestResponseCacheHitAllocs: a memory-store hit costs a PostFunc call at
// most 2 allocations (its lent response is pooled), and a Post at most
// what an h1 Post to the source schema costs the client (7, see
// TestIdleSettingAllocs).
func TestResponseCacheHitAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates, and drops pooled items")
	}
	s := newCacheServer(t, cacheControl("max-age=60"))
	inv := newInvoker(t, cachedConfig(pathH1, s.URL, nil))
	body := []byte(cacheQuery)
	ctx := context.Background()
	postBody(t, inv, ctx, cacheQuery)
	read := func(resp *http.Response) error { _, err := io.Copy(io.Discard, resp.Body); return err }
	postFunc := testing.AllocsPerRun(100, func() {
		if err := inv.PostFunc(ctx, "products", body, read); err != nil {
			t.Fatal(err)
		}
	})
	post := testing.AllocsPerRun(100, func() {
		resp, err := inv.Post(ctx, "products", body)
		if err != nil {
			t.Fatal(err)
		}
		read(resp)
		resp.Body.Close()
	})
	if n := s.requests(); n != 1 {
		t.Fatalf("the source schema got %d requests, want 1: the calls measured were not hits", n)
	}
	if postFunc > 2 || post > 7 {
		t.Errorf("a hit costs PostFunc %v allocations (want at most 2) and Post %v (want at most 7)", postFunc, post)
	}
}

// clock is a test's cache clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// cacheEvents collects a transport's cache events as "kind reason".
type cacheEvents chan string

func (ch cacheEvents) hook(_, kind, reason string) {
	select {
	case ch <- strings.TrimSpace(kind + " " + reason):
	default:
	}
}

// await reads events until want, and fails if the channel closes first.
func (ch cacheEvents) await(t *testing.T, want string) {
	t.Helper()
	for ev := range ch {
		if ev == want {
			return
		}
	}
	t.Fatalf("no %q event", want)
}

// TestResponseCacheStaleWhileRevalidate: an entry past its lifetime but
// within stale-while-revalidate answers every caller at once, while one
// background request, whatever the number of callers, refreshes it; past
// the window the call is sent.
func TestResponseCacheStaleWhileRevalidate(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			refreshing, release := make(chan struct{}, 1), make(chan struct{})
			s := newCacheServer(t, func(w http.ResponseWriter, _ *http.Request, n int64) {
				w.Header().Set("Cache-Control", "max-age=10, stale-while-revalidate=60")
				if n == 2 {
					refreshing <- struct{}{}
					<-release
				}
			})
			clk := newClock()
			events := make(cacheEvents, 256)
			inv := newInvoker(t, cachedConfig(path, s.URL, nil), transport.WithCacheClock(clk.Now), transport.WithCacheEventHook(events.hook))
			first, _ := postBody(t, inv, context.Background(), cacheQuery)
			clk.add(20 * time.Second)
			for i := range 10 {
				body, age := postBody(t, inv, context.Background(), cacheQuery)
				if body != first || age != "20" {
					t.Fatalf("stale call %d got %q, Age %q; want the stale %q at once, Age 20", i, body, age, first)
				}
				if i == 0 {
					<-refreshing // the refresh is at the schema, held
				}
			}
			close(release)
			events.await(t, "refreshed")
			if n := s.requests(); n != 2 {
				t.Fatalf("the source schema got %d requests, want 2: one refresh for ten stale calls", n)
			}
			if body, age := postBody(t, inv, context.Background(), cacheQuery); body != `{"data":{"n":2}}` || age != "0" {
				t.Errorf("after the refresh the call got %q, Age %q; want the refreshed answer", body, age)
			}
			clk.add(71 * time.Second) // past lifetime and window
			if body, _ := postBody(t, inv, context.Background(), cacheQuery); body != `{"data":{"n":3}}` {
				t.Errorf("past the window the call got %q, want a fresh answer", body)
			}
		})
	}
}

// TestResponseCacheStaleIfError: within stale-if-error (the answer's, or
// response_cache.stale_if_error when it sent none), a call its source
// schema fails is answered from the stale entry, with its Age; past the
// window, or with must-revalidate, the failure reaches the caller.
func TestResponseCacheStaleIfError(t *testing.T) {
	tests := []struct {
		name   string
		cc     string
		config time.Duration // response_cache.stale_if_error
		fail   string        // "503" or "down"
		stale  bool          // answered stale at 20s
	}{
		{"the answer's window, 503", "max-age=10, stale-if-error=60", 0, "503", true},
		{"the answer's window, schema down", "max-age=10, stale-if-error=60", 0, "down", true},
		{"the configured window", "max-age=10", time.Minute, "503", true},
		{"no window", "max-age=10", 0, "503", false},
		{"must-revalidate", "max-age=10, must-revalidate", time.Minute, "503", false},
		{"the answer's window too short", "max-age=10, stale-if-error=5", time.Minute, "503", false},
	}
	for _, tt := range tests {
		for _, path := range paths {
			t.Run(tt.name+"/"+string(path), func(t *testing.T) {
				var failing atomic.Bool
				s := newCacheServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
					if failing.Load() {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					w.Header().Set("Cache-Control", tt.cc)
				})
				clk := newClock()
				cfg := cachedConfig(path, s.URL, func(c *env.ResponseCacheSettings) {
					if tt.config > 0 {
						c.StaleIfError = tt.config
					}
				})
				inv := newInvoker(t, cfg, transport.WithCacheClock(clk.Now))
				first, _ := postBody(t, inv, context.Background(), cacheQuery)
				if tt.fail == "down" {
					s.Close()
				} else {
					failing.Store(true)
				}
				clk.add(20 * time.Second)
				resp, err := inv.Post(context.Background(), "products", []byte(cacheQuery))
				switch {
				case tt.stale && err != nil:
					t.Fatalf("the call failed: %v; want the stale answer", err)
				case tt.stale:
					if body := readAll(t, resp); body != first || resp.Header.Get("Age") != "20" {
						t.Fatalf("got %q, Age %q; want the stale %q, Age 20", body, resp.Header.Get("Age"), first)
					}
				case err == nil:
					body := readAll(t, resp)
					if resp.StatusCode != http.StatusServiceUnavailable {
						t.Fatalf("got %d %q; want the schema's 503", resp.StatusCode, body)
					}
				}
				if !tt.stale && tt.fail == "down" && err == nil {
					t.Fatal("a call to a schema that is down did not fail")
				}
				clk.add(time.Hour) // past every window
				resp, err = inv.Post(context.Background(), "products", []byte(cacheQuery))
				if err == nil {
					readAll(t, resp)
					if resp.StatusCode == http.StatusOK {
						t.Errorf("past the window the call was answered stale")
					}
				}
			})
		}
	}
}

// TestResponseCacheShadowMode: in shadow mode every call is sent and gets
// its fresh answer; a fresh entry that differs from the fresh answer is
// counted and shown (kinds and paths, never values) on the status page,
// one that equals it is counted as equal.
func TestResponseCacheShadowMode(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newCacheServer(t, cacheControl("max-age=60"))
			s.body = func(_ *http.Request, n int64) string {
				if n == 3 {
					return `{"data":{"price":"secret-price-9"}}` // differs from the stored answer
				}
				return `{"data":{"price":"1"}}`
			}
			inv := newInvoker(t, cachedConfig(path, s.URL, func(c *env.ResponseCacheSettings) { c.Mode = env.CacheModeShadow }))
			for i := range 3 {
				body, age := postBody(t, inv, context.Background(), cacheQuery)
				want := `{"data":{"price":"1"}}`
				if i == 2 {
					want = `{"data":{"price":"secret-price-9"}}`
				}
				if body != want || age != "" {
					t.Fatalf("call %d got %q, Age %q; want the fresh %q", i, body, age, want)
				}
			}
			if n := s.requests(); n != 3 {
				t.Fatalf("the source schema got %d requests, want every call: 3", n)
			}
			js, _ := callStatus(t, inv.StatusHandler(), "/status", "application/json")
			var doc struct {
				Schemas []struct {
					Cache *struct {
						Mode              string
						ShadowEqual       int64 `json:"shadow_equal"`
						ShadowDiffer      int64 `json:"shadow_differ"`
						ShadowDifferences []struct {
							Kinds, Paths []string
						} `json:"shadow_differences"`
					}
				}
			}
			if err := json.Unmarshal(js, &doc); err != nil {
				t.Fatal(err)
			}
			c := doc.Schemas[0].Cache
			if c == nil || c.Mode != "shadow" || c.ShadowEqual != 1 || c.ShadowDiffer != 1 || len(c.ShadowDifferences) != 1 ||
				strings.Join(c.ShadowDifferences[0].Paths, ",") != "data.price" {
				t.Fatalf("status %s: want shadow mode, 1 equal, 1 differing at data.price", js)
			}
			if strings.Contains(string(js), "secret-price") {
				t.Error("the status shows an answer's value")
			}
		})
	}
}

// TestResponseCacheRequestDirectives: a request's own Cache-Control: with
// no-cache it is sent and its answer refreshes the entry the next calls
// get; with no-store it is sent and its answer is not stored.
func TestResponseCacheRequestDirectives(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newCacheServer(t, cacheControl("max-age=60"))
			inv := newInvoker(t, cachedConfig(path, s.URL, nil))
			do := func(cc string) string {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(cacheQuery))
				req.Header.Set("Content-Type", "application/json")
				if cc != "" {
					req.Header.Set("Cache-Control", cc)
				}
				resp, err := inv.Do(context.Background(), "products", req)
				if err != nil {
					t.Fatal(err)
				}
				return readAll(t, resp)
			}
			steps := []struct {
				cc, want string
			}{
				{"", `{"data":{"n":1}}`},         // stored
				{"", `{"data":{"n":1}}`},         // answered
				{"no-cache", `{"data":{"n":2}}`}, // sent, refreshes the entry
				{"", `{"data":{"n":2}}`},         // the refreshed entry
				{"max-age=0", `{"data":{"n":3}}`},
				{"no-store", `{"data":{"n":4}}`}, // sent, not stored
				{"", `{"data":{"n":3}}`},         // the entry before it
			}
			for i, st := range steps {
				if got := do(st.cc); got != st.want {
					t.Fatalf("step %d (Cache-Control %q) got %q, want %q", i, st.cc, got, st.want)
				}
			}
		})
	}
}
