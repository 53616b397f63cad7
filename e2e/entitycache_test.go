package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	transport "github.com/fusiongo/transport"
)

// entityCall is one subgraph request as TestFederationEntityCache sees it:
// its schema, its X-Request-Id, and, for an _entities query, the query
// text and each representation (encoding/json's form: members sorted).
type entityCall struct {
	schema, requestID string
	text              string   // the query; "" for a body that is not one query
	reps              []string // variables.representations; nil: not an _entities query
}

// entities reports whether c is an _entities query.
func (c entityCall) entities() bool { return c.reps != nil }

// parseEntityCall reads a subgraph request's body as gqlgen does
// (encoding/json: a member name written with escapes is the same name).
func parseEntityCall(schema, requestID string, body []byte) entityCall {
	c := entityCall{schema: schema, requestID: requestID}
	var req struct {
		Query     string `json:"query"`
		Variables struct {
			Representations []map[string]any `json:"representations"`
		} `json:"variables"`
	}
	if json.Unmarshal(body, &req) != nil {
		return c
	}
	c.text = req.Query
	if !strings.Contains(req.Query, "_entities") {
		return c
	}
	c.reps = []string{}
	for _, r := range req.Variables.Representations {
		b, _ := json.Marshal(r)
		c.reps = append(c.reps, string(b))
	}
	return c
}

// entityCalls records subgraph requests.
type entityCalls struct {
	mu    sync.Mutex
	calls []entityCall // guarded by mu
}

func (r *entityCalls) add(c entityCall) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// take returns the calls since the last take, those whose X-Request-Id
// starts with prefix (all with ""), and forgets every call.
func (r *entityCalls) take(prefix string) []entityCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []entityCall
	for _, c := range r.calls {
		if strings.HasPrefix(c.requestID, prefix) {
			out = append(out, c)
		}
	}
	r.calls = nil
	return out
}

// readBody returns r's body and gives r a fresh reader over it.
func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// engineSide records the calls a gateway's engine makes through its
// subgraph client, before the transport.
type engineSide struct {
	next  http.RoundTripper
	hosts map[string]string // URL host -> subgraph; immutable
	rec   *entityCalls
}

func (e engineSide) RoundTrip(r *http.Request) (*http.Response, error) {
	e.rec.add(parseEntityCall(e.hosts[r.URL.Host], "", readBody(r)))
	return e.next.RoundTrip(r)
}

// wholeAnswersOnly is a SchemaOptions.Middleware that turns the response
// cache's entity path off for the calls through it, and only that: it
// writes the name of variables.representations with an escape
// ("representation\u0073"), which every JSON decoder (gqlgen's
// encoding/json) reads as the same name and the cache's entity parser,
// which compares a member's name as written, does not. The cache then
// keys and stores each _entities answer whole, as a cache without an
// entity path would: whole-answer caching alone, on the same traffic.
func wholeAnswersOnly(next http.RoundTripper) http.RoundTripper {
	return transportFunc(func(r *http.Request) (*http.Response, error) {
		b := bytes.Replace(readBody(r), []byte(`"representations":`), []byte(`"representation\u0073":`), 1)
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		r.ContentLength = int64(len(b))
		return next.RoundTrip(r)
	})
}

type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// entityPhases are the gateway queries of TestFederationEntityCache, phase
// by phase. In federationtesting, topProducts(first: 1) is [top-1] and
// topProducts [top-1, top-2]; me is user 1234, whose reviews are of
// top-1 and top-2. Phase 1 asks the reviews and the products subgraphs
// for top-1's entities; phase 2 asks the same query texts for the lists
// [top-1, top-2] (both subgraphs, from three queries at once, so that
// concurrent callers' lists overlap) and reviews for user 1234; phase 3
// asks everything again.
var entityPhases = [][]string{
	{
		`{ topProducts(first: 1) { upc name reviews { body } } }`,
		`{ topProducts(first: 1) { upc reviews { body product { upc name price } } } }`,
	},
	{
		`{ topProducts { upc name reviews { body } } }`,
		`{ topProducts { upc reviews { body product { upc name price } } } }`,
		`{ me { id username reviews { body product { upc name price } } } }`,
	},
	{
		`{ topProducts(first: 1) { upc name reviews { body } } }`,
		`{ topProducts(first: 1) { upc reviews { body product { upc name price } } } }`,
		`{ topProducts { upc name reviews { body } } }`,
		`{ topProducts { upc reviews { body product { upc name price } } } }`,
		`{ me { id username reviews { body product { upc name price } } } }`,
	},
}

// entityUsers is how many users phase 1 has; the later phases have them
// and as many new ones.
const entityUsers = 6

// TestFederationEntityCache runs the response cache's entity path inside
// graphql-go-tools' federation gateway over federationtesting's subgraphs
// (gqlgen's federation runtime: real _entities resolvers), whose answers a
// wrapper marks "Cache-Control: public, max-age=60". Three gateways over
// the same subgraphs, each with its own transport: plain (no cache, the
// reference), entity (the cache on, in memory, shared) and whole (the same
// cache with its entity path turned off by wholeAnswersOnly: whole-answer
// caching alone). Distinct users (each its own Authorization, named in
// every fetch's headers, so that the engine merges no two users' fetches)
// send the phases' queries (entityPhases) to the three gateways at once,
// phase after phase; the subgraphs record what they receive, each request
// told apart by its gateway request's X-Request-Id, and a wrapper around
// each gateway's subgraph client what its engine asked.
//
//   - Every answer of entity and whole equals plain's, byte for byte (200,
//     no errors).
//   - entity, on the wire: no _entities request carries a representation
//     that an earlier phase stored for its query text (the overlap
//     top-1 of phase 2's lists is never sent again); each representation
//     the engine asked for that no earlier phase stored reached the
//     subgraph; in phase 3 no request reaches any subgraph, although the
//     engine made every call.
//   - whole: in phase 2 the lists that overlap phase 1's are sent whole,
//     top-1 again (its answers were stored per list, not per entity); in
//     phase 3 no request reaches any subgraph.
//   - plain: every call the engine made reached the subgraphs.
//
// The representations sent per phase and gateway are logged beside the
// ones the engine asked for.
func TestFederationEntityCache(t *testing.T) {
	kinds := []string{"plain", "entity", "whole"}
	for _, p := range cachePaths {
		t.Run(p.name, func(t *testing.T) {
			wire := &entityCalls{}
			sg := startSubgraphsWrapped(t, nil, func(schema string, h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					wire.add(parseEntityCall(schema, r.Header.Get("X-Request-Id"), readBody(r)))
					w.Header().Set("Cache-Control", "public, max-age=60")
					h.ServeHTTP(w, r)
				})
			})
			routerConfig := withHeaderTemplate(t, sg.routerConfig(), "Authorization")
			hosts := subgraphHosts(t, sg)
			urls := map[string]string{}
			engine := map[string]*entityCalls{}
			for _, kind := range kinds {
				cfg := sg.transportConfig()
				cfg.Path, cfg.Defaults.Engine = p.path, p.engine
				var opts []transport.Option
				for name, s := range cfg.SourceSchemas {
					if kind == "plain" {
						continue
					}
					s.ResponseCache = sharedCache()
					cfg.SourceSchemas[name] = s
					if kind == "whole" {
						opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{
							Middleware: []func(http.RoundTripper) http.RoundTripper{wholeAnswersOnly},
						}))
					}
				}
				inv, err := transport.New(cfg, append(opts, transport.WithLookupEnv(func(string) (string, bool) { return "", false }))...)
				if err != nil {
					t.Fatalf("transport.New: %v", err)
				}
				t.Cleanup(func() { inv.Close() })
				engine[kind] = &entityCalls{}
				client := &http.Client{Transport: engineSide{next: orDefault(inv.Client().Transport), hosts: hosts, rec: engine[kind]}}
				urls[kind] = startGateway(t, routerConfig, client, transport.GatewayRequestHandler).URL
			}

			// stored: per gateway, the representations its cache holds,
			// per schema and query text (every answer is public and
			// without errors: each entity the engine asked for is stored
			// once its phase is over).
			stored := map[string]map[string]bool{"entity": {}, "whole": {}}
			for phase, queries := range entityPhases {
				users := entityUsers
				if phase > 0 {
					users *= 2
				}
				answers := make([][][]cacheAnswer, users) // [user][query][kind]
				var wg sync.WaitGroup
				for u := range users {
					answers[u] = make([][]cacheAnswer, len(queries))
					for i, q := range queries {
						answers[u][i] = make([]cacheAnswer, len(kinds))
						for k, kind := range kinds {
							wg.Go(func() {
								id := fmt.Sprintf("%s/%d/%s/%d", kind, phase+1, userName(u), i)
								answers[u][i][k] = askGateway(t.Context(), urls[kind], q, userName(u), id)
							})
						}
					}
				}
				wg.Wait()
				for u := range users {
					for i, q := range queries {
						want := answers[u][i][0]
						if want.err != nil || want.status != http.StatusOK || bytes.Contains(want.body, []byte(`"errors"`)) {
							t.Fatalf("phase %d, %s, %s: plain answered %d %s (%v)", phase+1, userName(u), q, want.status, want.body, want.err)
						}
						for k, kind := range kinds[1:] {
							if got := answers[u][i][k+1]; got.err != nil || got.status != want.status || !bytes.Equal(got.body, want.body) {
								t.Errorf("phase %d, %s, %s: %s answered %d %s (%v)\nplain %s", phase+1, userName(u), q, kind, got.status, got.body, got.err, want.body)
							}
						}
					}
				}

				calls := wire.take("")
				for _, kind := range kinds {
					var onWire []entityCall
					for _, c := range calls {
						if strings.HasPrefix(c.requestID, fmt.Sprintf("%s/%d/", kind, phase+1)) {
							onWire = append(onWire, c)
						}
					}
					asked := engine[kind].take("")
					if len(asked) == 0 {
						t.Fatalf("phase %d: %s's engine made no call", phase+1, kind)
					}
					checkEntityPhase(t, phase+1, kind, stored[kind], asked, onWire)
					if kind != "plain" {
						for _, c := range asked {
							for _, r := range c.reps {
								stored[kind][c.schema+" "+c.text+" "+r] = true
							}
						}
					}
				}
			}
		})
	}
}

// checkEntityPhase checks one gateway's subgraph requests of one phase
// (onWire: what the subgraphs received; asked: what its engine asked for),
// stored being what its cache held before the phase (schema, query text,
// representation).
func checkEntityPhase(t *testing.T, phase int, kind string, stored map[string]bool, asked, onWire []entityCall) {
	t.Helper()
	sent := map[string]int{} // schema, text, representation -> times sent
	var repsOnWire, repsAsked, entitiesOnWire, entitiesAsked int
	for _, c := range onWire {
		if !c.entities() {
			continue
		}
		entitiesOnWire++
		repsOnWire += len(c.reps)
		for _, r := range c.reps {
			sent[c.schema+" "+c.text+" "+r]++
		}
	}
	resent := 0 // representations sent again that the cache held
	for k, n := range sent {
		if stored[k] {
			resent += n
		}
	}
	var missed []string // representations the engine asked for, neither held nor sent
	for _, c := range asked {
		if !c.entities() {
			continue
		}
		entitiesAsked++
		repsAsked += len(c.reps)
		for _, r := range c.reps {
			if k := c.schema + " " + c.text + " " + r; !stored[k] && sent[k] == 0 && !slices.Contains(missed, k) {
				missed = append(missed, k)
			}
		}
	}
	switch kind {
	case "plain":
		if len(onWire) != len(asked) || repsOnWire != repsAsked {
			t.Errorf("phase %d, plain: the subgraphs got %d requests (%d representations), the engine made %d (%d)", phase, len(onWire), repsOnWire, len(asked), repsAsked)
		}
	case "entity":
		if resent > 0 {
			t.Errorf("phase %d, entity: %d representations the cache held were sent again: %v", phase, resent, sent)
		}
		if len(missed) > 0 {
			t.Errorf("phase %d, entity: representations the cache lacked were never sent: %v", phase, missed)
		}
	case "whole":
		if phase == 2 && resent == 0 {
			t.Errorf("phase 2, whole: no representation of phase 1 was sent again; whole answers cannot split the overlapping lists: %v", sent)
		}
	}
	if phase == 3 && kind != "plain" && len(onWire) > 0 {
		t.Errorf("phase 3, %s: %d requests reached the subgraphs, want none: every answer and entity was stored", kind, len(onWire))
	}
	t.Logf("phase %d, %s: the engine made %d calls (%d _entities, %d representations); the subgraphs got %d (%d _entities, %d representations, %d of them held by the cache)",
		phase, kind, len(asked), entitiesAsked, repsAsked, len(onWire), entitiesOnWire, repsOnWire, resent)
}

// subgraphHosts maps each subgraph's URL host to its name.
func subgraphHosts(t *testing.T, sg *subgraphs) map[string]string {
	t.Helper()
	hosts := map[string]string{}
	for name, s := range map[string]string{"accounts": sg.accounts.URL, "products": sg.products.URL, "reviews": sg.reviews.URL} {
		hosts[strings.TrimPrefix(s, "http://")] = name
	}
	return hosts
}
