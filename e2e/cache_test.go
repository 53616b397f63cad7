package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
	accounts "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph"
	accountsgen "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph/generated"
	accountsmodel "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph/model"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// callerKey is the context key under which perUserAccounts hands its
// resolvers the caller's user id.
type callerKey struct{}

// callerRoot is the accounts subgraph's resolvers with Query.me answering
// the caller: the user's username is the caller's user id.
type callerRoot struct{ *accounts.Resolver }

func (r callerRoot) Query() accountsgen.QueryResolver { return callerQuery{r.Resolver.Query()} }

type callerQuery struct{ accountsgen.QueryResolver }

func (q callerQuery) Me(ctx context.Context) (*accountsmodel.User, error) {
	u, err := q.QueryResolver.Me(ctx)
	if err != nil || u == nil {
		return u, err
	}
	u.Username, _ = ctx.Value(callerKey{}).(string)
	return u, nil
}

// perUserAccounts is federationtesting's accounts subgraph (gqlgen) whose
// data holds the caller's user id: me's username is the id that the
// request's Authorization (Bearer <id>), or else its X-User, names. A
// request with neither gets 401, so that a header that did not reach it
// shows.
func perUserAccounts() http.Handler {
	srv := handler.New(accountsgen.NewExecutableSchema(accountsgen.Config{Resolvers: callerRoot{&accounts.Resolver{}}}))
	srv.AddTransport(gqltransport.POST{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if user == "" {
			user = r.Header.Get("X-User")
		}
		if user == "" {
			http.Error(w, "no user", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, user)))
	})
}

// cacheQueries are the gateway queries of TestFederationResponseCache:
// between them every subgraph, public data alone, the caller's alone, and
// both in one answer (me asks for the caller's username).
var cacheQueries = []struct {
	name, query string
	me          bool
}{
	{"products", `{ topProducts { upc name price } }`, false},
	{"multiple_upstream", `{ topProducts { name reviews { body author { username } } } }`, false},
	{"me", `{ me { id username } }`, true},
	{"me and products", `{ topProducts { __typename price upc } me { __typename id username } }`, true},
	{"my reviews", `{ me { username reviews { body product { upc name } } } }`, true},
}

// userID matches the user ids of TestFederationResponseCache (userName).
var userID = regexp.MustCompile(`user-[0-9]+`)

func userName(i int) string { return fmt.Sprintf("user-%02d", i) }

// cacheUsers is how many users round 1 of TestFederationResponseCache
// has; round 2 has them again and as many new ones.
const cacheUsers = 12

// engineCalls counts the calls a gateway's engine makes through its
// subgraph client, per subgraph (by the URL's host).
type engineCalls struct {
	next   http.RoundTripper
	schema map[string]string // host -> subgraph; immutable

	mu sync.Mutex
	n  map[string]int // guarded by mu
}

func (c *engineCalls) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[c.schema[r.URL.Host]]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// take returns the counts since the last take and starts them anew.
func (c *engineCalls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// cacheAnswer is one gateway answer of TestFederationResponseCache.
type cacheAnswer struct {
	status int
	body   []byte
	err    error
}

// askGateway posts query to a gateway as user, with X-Request-Id id.
func askGateway(ctx context.Context, gw, query, user, id string) cacheAnswer {
	body := fmt.Appendf(nil, `{"query":%q}`, query)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, gw, bytes.NewReader(body))
	if err != nil {
		return cacheAnswer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return cacheAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return cacheAnswer{status: resp.StatusCode, body: b, err: err}
}

// TestFederationResponseCache runs the response cache inside
// graphql-go-tools' federation gateway: federationtesting's subgraphs,
// products and reviews answering shared data with the case's
// Cache-Control, accounts answering per user (me is the caller, from the
// forwarded Authorization) with "private, max-age=60"; the cache on for
// every schema with shared: true. Two gateways over the same subgraphs:
// one whose transport caches, one whose transport does not (the
// reference). Round 1: cacheUsers users at once, each sending every query
// of cacheQueries to both gateways; round 2: the same users and as many
// new ones. Each gateway request carries its own X-Request-Id (forwarded,
// and per call, so in no cache key), which tells on the wire which gateway,
// round and user a subgraph request came from.
//
//   - Every answer of the caching gateway equals the reference's, byte for
//     byte, and holds only its own user's id (never another's).
//   - accounts: every user's first requests reached it (a private answer
//     answers no one else) with their own Authorization; in round 2 the
//     returning users' were answered from the cache (none reached it) and
//     every new user's reached it.
//   - public, max-age=60: in round 2 no request reached products or
//     reviews, although the engine made calls to them for every user, the
//     new ones included: answered from the cache across users.
//   - no-store: every call the engine made reached them, in both rounds.
//
// The router config names Authorization in every fetch's headers (as a
// gateway forwarding a user's credential must, TestConcurrentUsers), so the
// engine merges no two users' fetches: what is shared, the cache shares.
func TestFederationResponseCache(t *testing.T) {
	cases := []struct {
		name         string
		cacheControl string // of products' and reviews' answers
		cached       bool   // the answers of round 1 answer round 2
	}{
		{"public", "public, max-age=60", true},
		// With a lifetime, so that only no-store keeps it out.
		{"no-store", "no-store, max-age=60", false},
	}
	paths := []struct {
		name   string
		path   env.Path
		engine string
	}{
		{"legacy", env.PathLegacy, ""},
		{"sockets:h1", env.PathSockets, env.EngineH1},
		{"sockets:nethttp", env.PathSockets, env.EngineNetHTTP},
	}
	for _, tc := range cases {
		for _, p := range paths {
			t.Run(tc.name+"/"+p.name, func(t *testing.T) {
				sg := startSubgraphsWrapped(t, perUserAccounts(), func(schema string, h http.Handler) http.Handler {
					cc := tc.cacheControl
					if schema == "accounts" {
						cc = "private, max-age=60"
					}
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Cache-Control", cc)
						h.ServeHTTP(w, r)
					})
				})
				routerConfig := withHeaderTemplate(t, sg.routerConfig(), "Authorization")
				hosts := map[string]string{}
				for name, s := range map[string]string{"accounts": sg.accounts.URL, "products": sg.products.URL, "reviews": sg.reviews.URL} {
					u, err := url.Parse(s)
					if err != nil {
						t.Fatal(err)
					}
					hosts[u.Host] = name
				}
				gateway := func(cache bool) (string, *engineCalls) {
					cfg := sg.transportConfig()
					cfg.Path, cfg.Defaults.Engine = p.path, p.engine
					if cache {
						for name, s := range cfg.SourceSchemas {
							s.ResponseCache = sharedCache()
							cfg.SourceSchemas[name] = s
						}
					}
					inv, err := transport.New(cfg, transport.WithLookupEnv(func(string) (string, bool) { return "", false }))
					if err != nil {
						t.Fatalf("transport.New: %v", err)
					}
					t.Cleanup(func() { inv.Close() })
					calls := &engineCalls{next: orDefault(inv.Client().Transport), schema: hosts, n: map[string]int{}}
					gw := startGateway(t, routerConfig, &http.Client{Transport: calls}, transport.GatewayRequestHandler)
					return gw.URL, calls
				}
				cachedURL, cachedCalls := gateway(true)
				plainURL, _ := gateway(false)

				for round := 1; round <= 2; round++ {
					users := cacheUsers * round
					answers := make([][][2]cacheAnswer, users) // [user][query][cached, plain]
					var wg sync.WaitGroup
					for u := range users {
						answers[u] = make([][2]cacheAnswer, len(cacheQueries))
						wg.Go(func() {
							for i, q := range cacheQueries {
								id := fmt.Sprintf("%d/%s/%d", round, userName(u), i)
								answers[u][i][0] = askGateway(t.Context(), cachedURL, q.query, userName(u), "cached/"+id)
								answers[u][i][1] = askGateway(t.Context(), plainURL, q.query, userName(u), "plain/"+id)
							}
						})
					}
					wg.Wait()
					engine := cachedCalls.take()

					for u := range users {
						for i, q := range cacheQueries {
							got, want := answers[u][i][0], answers[u][i][1]
							if got.err != nil || want.err != nil {
								t.Fatalf("round %d, %s, %s: %v; reference: %v", round, userName(u), q.name, got.err, want.err)
							}
							if got.status != want.status || !bytes.Equal(got.body, want.body) {
								t.Errorf("round %d, %s, %s: with the cache %d %s\nwithout %d %s", round, userName(u), q.name, got.status, got.body, want.status, want.body)
							}
							if got.status != http.StatusOK || bytes.Contains(got.body, []byte(`"errors"`)) {
								t.Errorf("round %d, %s, %s: %d %s", round, userName(u), q.name, got.status, got.body)
							}
							ids := userID.FindAll(got.body, -1)
							if q.me && len(ids) == 0 {
								t.Errorf("round %d, %s, %s: no user id in %s", round, userName(u), q.name, got.body)
							}
							for _, id := range ids {
								if string(id) != userName(u) {
									t.Errorf("round %d, %s, %s: the answer holds %s's id: %s", round, userName(u), q.name, id, got.body)
								}
							}
						}
					}

					// On the wire: which of the caching gateway's requests of
					// this round reached each subgraph, per user.
					wire := map[string]int{}
					accountsOf := map[string]int{} // per user
					for _, s := range sg.rec.all() {
						id, ok := strings.CutPrefix(s.requestID, fmt.Sprintf("cached/%d/", round))
						if !ok {
							continue
						}
						user, _, _ := strings.Cut(id, "/")
						if want := "Bearer " + user; s.auth != want {
							t.Errorf("round %d: %s request of %s had Authorization %q, want %q", round, s.schema, user, s.auth, want)
						}
						wire[s.schema]++
						if s.schema == "accounts" {
							accountsOf[user]++
						}
					}
					for u := range users {
						n := accountsOf[userName(u)]
						switch returning := round == 2 && u < cacheUsers; {
						case returning && n != 0:
							t.Errorf("round %d: %d of %s's requests reached accounts; their private answers were stored in round 1", round, n, userName(u))
						case !returning && n == 0:
							t.Errorf("round %d: no request of %s reached accounts: another user's private answer answered them", round, userName(u))
						}
					}
					for _, schema := range []string{"products", "reviews"} {
						switch {
						case engine[schema] == 0:
							t.Errorf("round %d: the engine made no call to %s", round, schema)
						case !tc.cached && wire[schema] != engine[schema]:
							t.Errorf("round %d: %s (%s) got %d of the engine's %d calls, want every one", round, schema, tc.cacheControl, wire[schema], engine[schema])
						case tc.cached && round == 2 && wire[schema] != 0:
							t.Errorf("round %d: %s (%s) got %d of the engine's %d calls, want none: every answer was stored in round 1", round, schema, tc.cacheControl, wire[schema], engine[schema])
						}
					}
					t.Logf("round %d, %d users: subgraph calls with the cache, on the wire / made by the engine: accounts %d/%d, products %d/%d, reviews %d/%d",
						round, users, wire["accounts"], engine["accounts"], wire["products"], engine["products"], wire["reviews"], engine["reviews"])
				}
			})
		}
	}
}

// sharedCache is the response cache settings of
// TestFederationResponseCache: on, in memory, shared; every setting given,
// so that the test does not depend on the defaults.
func sharedCache() env.ResponseCacheSettings {
	return env.ResponseCacheSettings{
		Enabled:       env.Enabled,
		Store:         env.StoreMemory,
		MaxBytes:      env.DefaultCacheMaxBytes,
		MaxEntryBytes: env.DefaultCacheMaxEntryBytes,
		MaxTTL:        time.Hour,
		Shared:        env.Enabled,
	}
}
