package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jensneuse/abstractlogger"
	"github.com/wundergraph/graphql-go-tools/execution/federationtesting"
	accounts "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph"
	"github.com/wundergraph/graphql-go-tools/execution/federationtesting/gateway"
	products "github.com/wundergraph/graphql-go-tools/execution/federationtesting/products/graph"
	reviews "github.com/wundergraph/graphql-go-tools/execution/federationtesting/reviews/graph"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/shadow"
)

// executionModule is the graphql-go-tools module whose federationtesting
// package (subgraphs, composed config, query files) these tests run.
const executionModule = "github.com/wundergraph/graphql-go-tools/execution"

// seen is one request as a subgraph received it.
type seen struct {
	schema, auth, requestID string
}

// recorder records the requests that reach the subgraphs.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rec *recorder) wrap(schema string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{schema: schema, auth: r.Header.Get("Authorization"), requestID: r.Header.Get("X-Request-Id")})
		rec.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (rec *recorder) all() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.reqs)
}

// subgraphs are federationtesting's accounts, products and reviews
// subgraphs on loopback servers, as federationtesting.NewFederationSetup
// starts them, with a recorder in front of each handler.
type subgraphs struct {
	accounts, products, reviews *httptest.Server
	rec                         *recorder
}

func startSubgraphs(t *testing.T, accountsHandler http.Handler) *subgraphs {
	t.Helper()
	return startSubgraphsWrapped(t, accountsHandler, nil)
}

// startSubgraphsWrapped is startSubgraphs with each subgraph's handler
// wrapped in wrap (nil: none), inside the recorder: what wrap answers is
// what the subgraph answers.
func startSubgraphsWrapped(t *testing.T, accountsHandler http.Handler, wrap func(schema string, h http.Handler) http.Handler) *subgraphs {
	t.Helper()
	if accountsHandler == nil {
		accountsHandler = accounts.GraphQLEndpointHandler(accounts.TestOptions)
	}
	if wrap == nil {
		wrap = func(_ string, h http.Handler) http.Handler { return h }
	}
	rec := &recorder{}
	serve := func(schema string, h http.Handler) *httptest.Server {
		return httptest.NewServer(rec.wrap(schema, wrap(schema, h)))
	}
	sg := &subgraphs{
		accounts: serve("accounts", accountsHandler),
		products: serve("products", products.GraphQLEndpointHandler(products.TestOptions)),
		reviews:  serve("reviews", reviews.GraphQLEndpointHandler(reviews.TestOptions)),
		rec:      rec,
	}
	t.Cleanup(func() {
		sg.accounts.Close()
		sg.products.Close()
		sg.reviews.Close()
	})
	return sg
}

// routerConfig is federationtesting's composed config with the subgraphs'
// URLs in place of its placeholders, as its integration tests build it.
func (sg *subgraphs) routerConfig() []byte {
	cfg := bytes.Clone(federationtesting.RouterConfigJson)
	cfg = bytes.ReplaceAll(cfg, []byte("http://accounts-url-placeholder"), []byte(sg.accounts.URL))
	cfg = bytes.ReplaceAll(cfg, []byte("http://products-url-placeholder"), []byte(sg.products.URL))
	cfg = bytes.ReplaceAll(cfg, []byte("http://reviews-url-placeholder"), []byte(sg.reviews.URL))
	return cfg
}

// transportConfig is the library's configuration for the three subgraphs:
// each source schema's url is its subgraph's, so that Transport.Client routes the
// engine's requests by URL. Authorization and X-Request-Id are forwarded.
func (sg *subgraphs) transportConfig() env.Config {
	return env.Config{
		ForwardHeaders: []string{"Authorization", "X-Request-Id"},
		SourceSchemas: map[string]env.SourceSchema{
			"accounts": {URL: sg.accounts.URL},
			"products": {URL: sg.products.URL},
			"reviews":  {URL: sg.reviews.URL},
		},
	}
}

// startGateway starts the graphql-go-tools federation gateway with client
// as its subgraph HTTP client, wrapped in wrap (nil: none).
func startGateway(t *testing.T, routerConfig []byte, client *http.Client, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	gw, err := gateway.NewGateway(routerConfig, client, abstractlogger.NoopLogger, false)
	if err != nil {
		t.Fatalf("gateway.NewGateway: %v", err)
	}
	var h http.Handler = gw
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// query is one query file of federationtesting/testdata/queries.
type query struct {
	name string
	body []byte // the GraphQL-over-HTTP request body
}

// queryFiles reads every query file of federationtesting/testdata/queries
// from the module cache (the module is a dependency of this one, so `go
// list` finds its directory).
func queryFiles(t *testing.T) []query {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", executionModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", executionModule, err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "federationtesting", "testdata", "queries")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var qs []query
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(map[string]string{"query": string(src)})
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, query{name: e.Name(), body: body})
	}
	if len(qs) < 20 {
		t.Fatalf("found %d query files in %s, want the 25 or so of federationtesting", len(qs), dir)
	}
	return qs
}

// post sends one GraphQL request to a gateway and returns the answer's
// status and body.
func post(t *testing.T, url string, body []byte, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// failing are the query files that the gateway refuses (500, empty body)
// before any subgraph request: the first three as graphql-go-tools'
// integration tests expect (an empty fragment, a fragment cycle);
// nested_object_merging.graphql, which those tests do not run, asks for a
// field (Query.interfaceField) that the composed config lacks.
var failing = map[string]bool{
	"empty_fragment.graphql":         true,
	"empty_fragment_variant.graphql": true,
	"recursive_fragment.graphql":     true,
	"nested_object_merging.graphql":  true,
}

// shadowRecorder is a shadow.Publisher that keeps what it is told.
type shadowRecorder struct {
	mu                sync.Mutex
	mismatches        []shadow.Mismatch
	drops             []string
	compared, unequal atomic.Int64
}

func (p *shadowRecorder) Publish(_ context.Context, m shadow.Mismatch) {
	p.mu.Lock()
	p.mismatches = append(p.mismatches, m)
	p.mu.Unlock()
}

func (p *shadowRecorder) Compared(_ context.Context, _ string, equal bool) {
	p.compared.Add(1)
	if !equal {
		p.unequal.Add(1)
	}
}

func (p *shadowRecorder) Dropped(_ context.Context, schema, reason string) {
	p.mu.Lock()
	p.drops = append(p.drops, schema+": "+reason)
	p.mu.Unlock()
}

// expected are answers that graphql-go-tools' own federation integration
// tests (execution/engine/federation_integration_test.go) require.
var expected = map[string]string{
	"single_upstream.query":   `{"data":{"me":{"id":"1234","username":"Me"}}}`,
	"multiple_upstream.query": `{"data":{"topProducts":[{"name":"Trilby","reviews":[{"body":"A highly effective form of birth control.","author":{"username":"Me"}}]},{"name":"Fedora","reviews":[{"body":"Fedoras are one of the most fashionable hats around and can look great with a variety of outfits.","author":{"username":"Me"}}]}]}}`,
	"union.query":             `{"data":{"me":{"username":"Me","history":[{"__typename":"Purchase","wallet":{"amount":123}},{"__typename":"Sale","rating":5},{"__typename":"Purchase","wallet":{"amount":123}}]}}}`,
	"interface.query":         `{"data":{"me":{"username":"Me","history":[{"wallet":{"amount":123,"specialField1":"some special value 1"}},{"rating":5},{"wallet":{"amount":123,"specialField2":"some special value 2"}}]}}}`,
}

// TestFederation runs every query file of graphql-go-tools' federation
// tests through its federation gateway twice: once with the library's
// Transport.Client as the gateway's subgraph client (on each path), once with
// http.DefaultClient (the reference). The answers must be byte for byte
// equal; the forwarded headers must reach the subgraphs through the
// library and only through it; shadow mode must find no mismatch.
func TestFederation(t *testing.T) {
	queries := queryFiles(t)
	all := []string{"accounts", "products", "reviews"}
	cases := []struct {
		name    string
		set     func(*env.Config)
		sockets []string // the schemas the sockets path serves (or shadows)
	}{
		{"legacy", func(c *env.Config) { c.Path = env.PathLegacy }, nil},
		{"sockets", func(c *env.Config) { c.Path = env.PathSockets }, all},
		{"mixed", func(c *env.Config) { c.Path = env.PathMixed; c.SocketsSchemas = []string{"products"} }, []string{"products"}},
		{"shadow", func(c *env.Config) {
			c.Path = env.PathLegacy
			c.Shadow = env.ShadowSettings{Rate: 1, MaxConcurrent: 256}
		}, all},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sg := startSubgraphs(t, nil)
			cfg := sg.transportConfig()
			tc.set(&cfg)
			pub := &shadowRecorder{}
			// Each schema's Dial (honoured by both paths) counts the
			// connections the sockets path dials: which schemas the
			// sockets path served.
			opts := []transport.Option{transport.WithShadowPublisher(pub)}
			dials := map[string]*atomic.Int64{}
			for name := range cfg.SourceSchemas {
				n := &atomic.Int64{}
				dials[name] = n
				opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
					if dialledBySockets() {
						n.Add(1)
					}
					return (&net.Dialer{}).DialContext(ctx, network, addr)
				}}))
			}
			inv, err := transport.New(cfg, opts...)
			if err != nil {
				t.Fatalf("transport.New: %v", err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					inv.Close()
				}
			})
			routerConfig := sg.routerConfig()
			lib := startGateway(t, routerConfig, inv.Client(), transport.GatewayRequestHandler)
			ref := startGateway(t, routerConfig, http.DefaultClient, nil)

			auth := "Bearer " + tc.name + "-user"
			for _, q := range queries {
				libID, refID := tc.name+"/"+q.name+"/lib", tc.name+"/"+q.name+"/ref"
				status, got := post(t, lib.URL, q.body, http.Header{"Authorization": {auth}, "X-Request-Id": {libID}})
				refStatus, want := post(t, ref.URL, q.body, http.Header{"Authorization": {auth}, "X-Request-Id": {refID}})
				if status != refStatus || !bytes.Equal(got, want) {
					t.Errorf("%s: through the library %d\n  %s\nreference %d\n  %s", q.name, status, got, refStatus, want)
				}
				if wantStatus := cmp.Or(map[bool]int{true: http.StatusInternalServerError}[failing[q.name]], http.StatusOK); status != wantStatus {
					t.Errorf("%s: status %d, want %d", q.name, status, wantStatus)
				}
				if bytes.Contains(got, []byte(`"errors"`)) {
					t.Errorf("%s: the answer has errors: %s", q.name, got)
				}
				if e, ok := expected[q.name]; ok && string(got) != e {
					t.Errorf("%s: got %s, graphql-go-tools' integration test expects %s", q.name, got, e)
				}
			}
			// Close waits for the shadow comparisons in flight.
			if err := inv.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			closed = true

			// The sockets path served the schemas that tc.sockets names,
			// and only those.
			for name, n := range dials {
				if on := slices.Contains(tc.sockets, name); on != (n.Load() > 0) {
					t.Errorf("%s: %d sockets connections, want some: %v", name, n.Load(), on)
				}
			}

			// Forwarded headers: every subgraph request made through the
			// library carries the gateway request's Authorization and
			// X-Request-Id; the reference gateway forwards neither, so
			// what arrived came through the library.
			perQuery := map[string]int{}
			libRequests, refRequests := 0, 0
			for _, s := range sg.rec.all() {
				switch {
				case strings.HasSuffix(s.requestID, "/lib"):
					libRequests++
					perQuery[s.requestID]++
					if s.auth != auth {
						t.Errorf("%s request of %s: Authorization %q, want %q", s.schema, s.requestID, s.auth, auth)
					}
				case s.requestID == "" && s.auth == "":
					refRequests++
				default:
					t.Errorf("%s request with Authorization %q and X-Request-Id %q: neither the library's nor the reference's", s.schema, s.auth, s.requestID)
				}
			}
			for _, q := range queries {
				if id := tc.name + "/" + q.name + "/lib"; !failing[q.name] && perQuery[id] == 0 {
					t.Errorf("%s: no subgraph request carried X-Request-Id %q", q.name, id)
				}
			}

			// Shadow: each subgraph request of the legacy path was also
			// sent through the sockets path and compared, with no
			// mismatch and nothing dropped.
			pub.mu.Lock()
			mismatches, drops := pub.mismatches, pub.drops
			pub.mu.Unlock()
			for _, m := range mismatches {
				t.Errorf("shadow mismatch on %s: legacy %d, sockets %d: %+v", m.Schema, m.PrimaryStatus, m.CandidateStatus, m.Differences)
			}
			if len(drops) > 0 {
				t.Errorf("shadow comparisons dropped: %v", drops)
			}
			compared := pub.compared.Load()
			if tc.name == "shadow" {
				if compared == 0 || 2*compared != int64(libRequests) {
					t.Errorf("shadow compared %d queries; the subgraphs got %d requests through the library, want twice as many as compared", compared, libRequests)
				}
			} else if compared != 0 {
				t.Errorf("shadow compared %d queries on the %s path", compared, tc.name)
			}
			t.Logf("%s: %d gateway queries through the library (and %d through the reference gateway); subgraph requests: %d through the library, %d by the reference; shadow comparisons: %d (%d unequal)",
				tc.name, len(queries), len(queries), libRequests, refRequests, compared, pub.unequal.Load())
		})
	}
}

// dialledBySockets reports whether the Dial hook it is called from was
// called by the sockets path's pool, not by the legacy path's shared
// transport (which honours the hook too): the call stack tells.
func dialledBySockets() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "fusiongo/transport/internal/sockets.") {
			return true
		}
		if !more {
			return false
		}
	}
}
