package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// entityQuery is a federation gateway's _entities query text.
const entityQuery = `query($representations: [_Any!]!) { _entities(representations: $representations) { ... on Product { upc name } } }`

// entityServer is a source schema with an _entities resolver: each
// representation {"__typename":"Product","upc":U} resolves to
// {"upc":U,"name":"P-U"}, but a upc in fail resolves to null with an
// error. It records the upcs of every request, and answers
// Cache-Control cc.
type entityServer struct {
	*httptest.Server
	cc      string
	fail    map[string]bool
	failing atomic.Bool // every request answered 503, unrecorded
	// gate, if set, is called with each request's upcs once they are
	// recorded, before the answer is written.
	gate atomic.Pointer[func(upcs []string)]

	mu    sync.Mutex
	asked [][]string // the upcs of each request; guarded by mu
}

func newEntityServer(t testing.TB, cc string, fail ...string) *entityServer {
	s := &entityServer{cc: cc, fail: map[string]bool{}}
	for _, u := range fail {
		s.fail[u] = true
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var req struct {
			Variables struct {
				Representations []map[string]any `json:"representations"`
			} `json:"variables"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var upcs []string
		for _, rep := range req.Variables.Representations {
			upcs = append(upcs, fmt.Sprint(rep["upc"]))
		}
		s.mu.Lock()
		s.asked = append(s.asked, upcs)
		s.mu.Unlock()
		if g := s.gate.Load(); g != nil {
			(*g)(upcs)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", s.cc)
		io.WriteString(w, entityAnswer(s.fail, upcs...))
	}))
	t.Cleanup(s.Close)
	return s
}

// entityAnswer is what the entity server answers for upcs: the reference
// every cached answer must equal, byte for byte.
func entityAnswer(fail map[string]bool, upcs ...string) string {
	var ents, errs []string
	for i, u := range upcs {
		if fail[u] {
			ents = append(ents, "null")
			errs = append(errs, fmt.Sprintf(`{"message":"no product %s","path":["_entities",%d]}`, u, i))
			continue
		}
		ents = append(ents, fmt.Sprintf(`{"upc":%q,"name":"P-%s"}`, u, u))
	}
	out := `{"data":{"_entities":[` + strings.Join(ents, ",") + `]}`
	if len(errs) > 0 {
		out += `,"errors":[` + strings.Join(errs, ",") + `]`
	}
	return out + "}"
}

// entitiesBody is the request body of an _entities query for upcs; swapped
// writes each representation's members in the other order.
func entitiesBody(swapped bool, upcs ...string) string {
	var reps []string
	for _, u := range upcs {
		if swapped {
			reps = append(reps, fmt.Sprintf(`{"upc":%q,"__typename":"Product"}`, u))
		} else {
			reps = append(reps, fmt.Sprintf(`{"__typename":"Product","upc":%q}`, u))
		}
	}
	q, _ := json.Marshal(entityQuery)
	return `{"query":` + string(q) + `,"variables":{"representations":[` + strings.Join(reps, ",") + `]}}`
}

// lastAsked returns the upcs of the requests since the call number from.
func (s *entityServer) askedSince(from int) [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked[from:])
}

func (s *entityServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asked)
}

// TestResponseCacheEntities: an _entities query is cached entity by
// entity: a call sends only the representations the cache lacks (none if
// all hit), and gets every entity in its order, byte for byte what the
// source schema answers for its whole list; an entity with an error is not
// stored, and the error's index is the caller's.
func TestResponseCacheEntities(t *testing.T) {
	steps := []struct {
		upcs    []string
		swapped bool
		sent    [][]string // what the source schema is asked
	}{
		{[]string{"1", "2"}, false, [][]string{{"1", "2"}}},
		{[]string{"2", "3"}, false, [][]string{{"3"}}},
		{[]string{"3", "1", "2"}, false, nil},
		{[]string{"2"}, true, nil}, // members in another order: the same entity
		{[]string{"4", "5"}, false, [][]string{{"4", "5"}}},
		{[]string{"5", "4", "6"}, false, [][]string{{"5", "6"}}}, // 5 failed: not stored; its error renumbered
		{[]string{"1", "5"}, false, [][]string{{"5"}}},
	}
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newEntityServer(t, "max-age=60", "5")
			inv := newInvoker(t, cachedConfig(path, s.URL, nil))
			for i, st := range steps {
				before := s.requests()
				body, _ := postBody(t, inv, context.Background(), entitiesBody(st.swapped, st.upcs...))
				if want := entityAnswer(s.fail, st.upcs...); body != want {
					t.Fatalf("step %d %v: got\n%s\nwant the source schema's answer for the whole list\n%s", i, st.upcs, body, want)
				}
				if got := s.askedSince(before); !slices.EqualFunc(got, st.sent, slices.Equal) {
					t.Fatalf("step %d %v: the source schema was asked %v, want %v", i, st.upcs, got, st.sent)
				}
			}
		})
	}
}

// TestResponseCacheEntitiesScope: entity entries follow the whole answers'
// rules of who shares: without shared, another user's list is sent whole;
// with shared and a public answer, it is answered from the first user's
// entities; concurrent callers of two users asking overlapping lists each
// get the source schema's answer for their own list.
func TestResponseCacheEntitiesScope(t *testing.T) {
	for _, sharedOn := range []bool{false, true} {
		for _, path := range paths {
			t.Run(fmt.Sprintf("shared %t/%s", sharedOn, path), func(t *testing.T) {
				s := newEntityServer(t, "public, max-age=60")
				cfg := cachedConfig(path, s.URL, func(c *env.ResponseCacheSettings) {
					if sharedOn {
						c.Shared = env.Enabled
					}
				})
				cfg.ForwardHeaders = []string{"Authorization"}
				inv := newInvoker(t, cfg)
				postBody(t, inv, aliceA.ctx(), entitiesBody(false, "1", "2"))
				before := s.requests()
				postBody(t, inv, bobA.ctx(), entitiesBody(false, "2", "1"))
				want := [][]string{{"2", "1"}}
				if sharedOn {
					want = nil
				}
				if got := s.askedSince(before); !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("bob's call asked %v, want %v", got, want)
				}
				var wg sync.WaitGroup
				for k := range 16 {
					who := []caller{aliceA, bobA}[k%2]
					upcs := []string{fmt.Sprint(k % 5), fmt.Sprint(k%3 + 2), "1"}
					wg.Go(func() {
						resp, err := inv.Post(who.ctx(), "products", []byte(entitiesBody(k%4 == 0, upcs...)))
						if err != nil {
							t.Error(err)
							return
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if want := entityAnswer(nil, upcs...); string(b) != want {
							t.Errorf("%s %v got %s, want %s", who.auth, upcs, b, want)
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// TestResponseCacheEntitiesStaleIfError: stale-if-error holds for an
// _entities query as for a whole answer: when its source schema fails the
// call (a 503, or down: its listener closed) and every representation the
// cache lacks fresh has a stale entry within its stale-if-error window, the
// caller gets every entity in its order from the entries, with the Age of
// the oldest; a representation with no entry, or past its window, lets the
// failure through.
func TestResponseCacheEntitiesStaleIfError(t *testing.T) {
	for _, fail := range []string{"503", "down"} {
		for _, path := range paths {
			t.Run(fail+"/"+string(path), func(t *testing.T) {
				s := newEntityServer(t, "max-age=10, stale-if-error=60")
				clk := newClock()
				inv := newInvoker(t, cachedConfig(path, s.URL, nil), transport.WithCacheClock(clk.Now))
				postBody(t, inv, context.Background(), entitiesBody(false, "1", "2"))
				clk.add(5 * time.Second)
				postBody(t, inv, context.Background(), entitiesBody(false, "3"))
				if fail == "down" {
					s.Close()
				} else {
					s.failing.Store(true)
				}
				clk.add(15 * time.Second) // 1 and 2 are 20 s old, 3 15 s: all stale
				body, age := postBody(t, inv, context.Background(), entitiesBody(false, "3", "1", "2"))
				if want := entityAnswer(nil, "3", "1", "2"); body != want || age != "20" {
					t.Fatalf("got %s, Age %q; want the stale entities %s, Age 20", body, age, want)
				}
				// 4 was never stored: the failure reaches the caller.
				resp, err := inv.Post(context.Background(), "products", []byte(entitiesBody(false, "1", "4")))
				if err == nil {
					if b := readAll(t, resp); resp.StatusCode == http.StatusOK {
						t.Fatalf("a list with an entity never stored was answered %s", b)
					}
				}
				clk.add(time.Hour) // past every window
				resp, err = inv.Post(context.Background(), "products", []byte(entitiesBody(false, "1", "2")))
				if err == nil {
					if b := readAll(t, resp); resp.StatusCode == http.StatusOK {
						t.Fatalf("past the window the call was answered %s", b)
					}
				}
			})
		}
	}
}

// TestResponseCacheEntitiesStaleWhileRevalidate: stale-while-revalidate
// holds for an _entities query entity by entity: when every
// representation the cache lacks fresh has a stale entry within its
// window, every caller is answered at once from the entries (in its order,
// with the Age of the oldest), while one background request, whatever the
// number of callers, asks the source schema for the stale ones alone and
// stores them; a list with a representation the cache lacks is sent; past
// the window the call is sent.
func TestResponseCacheEntitiesStaleWhileRevalidate(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newEntityServer(t, "max-age=10, stale-while-revalidate=60")
			clk := newClock()
			events := make(cacheEvents, 256)
			inv := newInvoker(t, cachedConfig(path, s.URL, nil), transport.WithCacheClock(clk.Now), transport.WithCacheEventHook(events.hook))
			postBody(t, inv, context.Background(), entitiesBody(false, "1", "2"))
			clk.add(5 * time.Second)
			postBody(t, inv, context.Background(), entitiesBody(false, "3"))
			clk.add(7 * time.Second) // 1 and 2 are 12 s old: stale; 3 is 7 s old: fresh
			// A stale call is answered without waiting on the schema,
			// which holds the refresh: a call that waited for it would
			// fail at the guard's end instead of hanging.
			guard, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			refreshing, release := make(chan []string, 1), make(chan struct{})
			gate := func(upcs []string) {
				refreshing <- upcs
				select {
				case <-release:
				case <-guard.Done():
				}
			}
			s.gate.Store(&gate)
			before := s.requests()
			var wg sync.WaitGroup
			for i := range 8 {
				body, age := postBody(t, inv, guard, entitiesBody(i%2 == 0, "3", "1", "2"))
				if want := entityAnswer(nil, "3", "1", "2"); body != want || age != "12" {
					t.Fatalf("stale call %d got %s, Age %q; want %s at once, Age 12", i, body, age, want)
				}
				if i == 0 {
					if upcs := <-refreshing; !slices.Equal(upcs, []string{"1", "2"}) {
						t.Fatalf("the refresh asked for %v, want the stale [1 2] alone", upcs)
					}
				}
				wg.Go(func() { // concurrent stale callers too
					resp, err := inv.Post(guard, "products", []byte(entitiesBody(false, "2", "3")))
					if err != nil {
						t.Errorf("a concurrent stale call: %v", err)
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if want := entityAnswer(nil, "2", "3"); string(b) != want {
						t.Errorf("a concurrent stale call got %s, want %s", b, want)
					}
				})
			}
			wg.Wait()
			s.gate.Store(nil)
			close(release)
			events.await(t, "refreshed")
			if got := s.askedSince(before); !slices.EqualFunc(got, [][]string{{"1", "2"}}, slices.Equal) {
				t.Fatalf("the source schema was asked %v, want one refresh of [1 2] for 16 stale calls", got)
			}
			before = s.requests()
			if body, age := postBody(t, inv, context.Background(), entitiesBody(false, "1", "2")); body != entityAnswer(nil, "1", "2") || age != "0" {
				t.Errorf("after the refresh the call got %s, Age %q; want the refreshed entities, Age 0", body, age)
			}
			postBody(t, inv, context.Background(), entitiesBody(false, "1", "4")) // 4 never stored: sent
			clk.add(71 * time.Second)                                             // 1 and 2 past their window, 3 too
			postBody(t, inv, context.Background(), entitiesBody(false, "3", "1"))
			if got, want := s.askedSince(before), [][]string{{"4"}, {"3", "1"}}; !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("after the refresh the source schema was asked %v, want %v", got, want)
			}
		})
	}
}

// TestResponseCacheEntitiesVary: a shared entity entry is keyed by the
// request headers the answer's Vary names (and response_cache.vary): a
// caller of another user but the same tenant is answered from the first
// caller's entities; one of another tenant sends its list; each gets the
// source schema's answer for its own list.
func TestResponseCacheEntitiesVary(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newEntityServer(t, "public, max-age=60")
			inner := s.Config.Handler
			s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Vary", "X-Tenant")
				inner.ServeHTTP(w, r)
			})
			cfg := cachedConfig(path, s.URL, func(c *env.ResponseCacheSettings) { c.Shared = env.Enabled })
			cfg.ForwardHeaders = []string{"Authorization", "X-Tenant"}
			inv := newInvoker(t, cfg)
			for i, st := range []struct {
				who  caller
				upcs []string
				sent [][]string
			}{
				{aliceA, []string{"1", "2"}, [][]string{{"1", "2"}}},
				{bobA, []string{"2", "1"}, nil},
				{carolB, []string{"1", "3"}, [][]string{{"1", "3"}}},
				{aliceA, []string{"3", "2"}, [][]string{{"3"}}},
				{carolB, []string{"3", "1"}, nil},
			} {
				before := s.requests()
				if body, _ := postBody(t, inv, st.who.ctx(), entitiesBody(false, st.upcs...)); body != entityAnswer(nil, st.upcs...) {
					t.Fatalf("step %d, %s %v: got %s", i, st.who.auth, st.upcs, body)
				}
				if got := s.askedSince(before); !slices.EqualFunc(got, st.sent, slices.Equal) {
					t.Fatalf("step %d, %s of tenant %s %v: the source schema was asked %v, want %v", i, st.who.auth, st.who.tenant, st.upcs, got, st.sent)
				}
			}
		})
	}
}

// TestResponseCacheEntitiesWholeAnswer: an _entities query whose source
// schema does not answer in the _entities shape is cached as a whole
// answer, as any query's: the identical call is answered from the cache.
func TestResponseCacheEntitiesWholeAnswer(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newCacheServer(t, cacheControl("max-age=60"))
			s.body = func(_ *http.Request, n int64) string { return fmt.Sprintf(`{"data":{"things":[%d]}}`, n) }
			inv := newInvoker(t, cachedConfig(path, s.URL, nil))
			first, _ := postBody(t, inv, context.Background(), entitiesBody(false, "1", "2"))
			again, age := postBody(t, inv, context.Background(), entitiesBody(false, "1", "2"))
			if again != first || age == "" || s.requests() != 1 {
				t.Fatalf("the identical call got %q (Age %q) after %d requests; want the stored %q, 1 request", again, age, s.requests(), first)
			}
			if other, _ := postBody(t, inv, context.Background(), entitiesBody(false, "2")); other == first || s.requests() != 2 {
				t.Fatalf("another list got %q after %d requests; want its own answer", other, s.requests())
			}
		})
	}
}

// TestResponseCacheCloseEndsRefresh: Close ends a background refresh of a
// stale entry that its source schema holds (a whole answer's, and an
// _entities call's): the schema sees the refresh's request end, and Close
// returns.
func TestResponseCacheCloseEndsRefresh(t *testing.T) {
	for _, kind := range []string{"whole", "entities"} {
		for _, path := range paths {
			t.Run(kind+"/"+string(path), func(t *testing.T) {
				s := newEntityServer(t, "max-age=10, stale-while-revalidate=60")
				clk := newClock()
				inv, err := transport.New(cachedConfig(path, s.URL, nil), transport.WithLookupEnv(noEnv), transport.WithLogger(quiet), transport.WithCacheClock(clk.Now))
				if err != nil {
					t.Fatal(err)
				}
				body := entitiesBody(false, "1", "2")
				if kind == "whole" {
					body = `{"query":"{ products { upc } }","variables":{"representations":[]}}`
				}
				postBody(t, inv, context.Background(), body)
				clk.add(20 * time.Second)
				guard, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				held, ended := make(chan struct{}), make(chan struct{})
				s.Config.Handler = holdOnce(s.Config.Handler, held, ended, guard)
				postBody(t, inv, guard, body) // stale: answered at once, the refresh starts
				select {
				case <-held:
				case <-guard.Done():
					t.Fatal("no refresh reached the source schema")
				}
				closed := make(chan error, 1)
				go func() { closed <- inv.Close() }()
				select {
				case <-ended:
				case <-guard.Done():
					t.Fatal("Close did not end the held refresh")
				}
				select {
				case err := <-closed:
					if err != nil {
						t.Errorf("Close: %v", err)
					}
				case <-guard.Done():
					t.Fatal("Close did not return")
				}
			})
		}
	}
}

// holdOnce wraps h: the first request it gets is held, reported on held,
// until its context ends (reported on ended) or guard does; the others go
// to h.
func holdOnce(h http.Handler, held, ended chan struct{}, guard context.Context) http.Handler {
	var once atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !once.CompareAndSwap(false, true) {
			h.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body) // net/http watches the connection for its close only once the body is read
		close(held)
		select {
		case <-r.Context().Done():
			close(ended)
		case <-guard.Done():
		}
	})
}

// TestResponseCacheEntitiesPostFuncConcurrent: callers that borrow their
// answers (PostFunc), answered entity by entity from pooled memory, each
// get the source schema's answer for their own list, concurrently, while
// others' answers are built and given back.
func TestResponseCacheEntitiesPostFuncConcurrent(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			s := newEntityServer(t, "max-age=60")
			inv := newInvoker(t, cachedConfig(path, s.URL, nil))
			postBody(t, inv, context.Background(), entitiesBody(false, "1", "2", "3", "4", "5", "6", "7", "8", "9"))
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 100 {
						var upcs []string
						for k := range 1 + (g+i)%9 {
							upcs = append(upcs, fmt.Sprint(1+(g*3+k)%9))
						}
						want := entityAnswer(nil, upcs...)
						err := inv.PostFunc(context.Background(), "products", []byte(entitiesBody(i%2 == 0, upcs...)), func(resp *http.Response) error {
							b, err := io.ReadAll(resp.Body)
							if err != nil {
								return err
							}
							if string(b) != want || resp.Header.Get("Content-Length") != fmt.Sprint(len(want)) {
								return fmt.Errorf("got %s (Content-Length %q), want %s", b, resp.Header.Get("Content-Length"), want)
							}
							return nil
						})
						if err != nil {
							t.Errorf("caller %d call %d %v: %v", g, i, upcs, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if n := s.requests(); n != 1 {
				t.Errorf("the source schema got %d requests, want 1: every list was cached", n)
			}
		})
	}
}
