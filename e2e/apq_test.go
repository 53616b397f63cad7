package e2e

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
	accounts "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph"
	products "github.com/wundergraph/graphql-go-tools/execution/federationtesting/products/graph"
	reviews "github.com/wundergraph/graphql-go-tools/execution/federationtesting/reviews/graph"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/apqserve"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// peerAPQ is how the subgraphs of a test treat persisted queries.
type peerAPQ int

const (
	gqlgenAPQ       peerAPQ = iota // gqlgen's extension.AutomaticPersistedQuery, an LRU of 100 texts
	gqlgenPlain                    // gqlgen without it: a request without a query is a parse error (422)
	apqNotSupported                // PersistedQueryNotSupported (apqserve) in front of gqlgen
)

// apqSubgraphs are federationtesting's accounts, products and reviews,
// gqlgen servers, as peerAPQ says, each behind a switch that a restart
// turns to a fresh instance (which knows no hash), and a recorder that
// counts the forms of the requests: by hash alone, with text and hash,
// with text alone.
type apqSubgraphs struct {
	srv      map[string]*httptest.Server
	handlers map[string]*atomic.Pointer[http.Handler]
	peer     peerAPQ

	mu    sync.Mutex
	forms map[string]int // guarded by mu: "hash", "text+hash", "text", "get", and each per schema: "accounts hash", ...
}

func startAPQSubgraphs(t *testing.T, peer peerAPQ) *apqSubgraphs {
	t.Helper()
	sg := &apqSubgraphs{srv: map[string]*httptest.Server{}, handlers: map[string]*atomic.Pointer[http.Handler]{}, peer: peer, forms: map[string]int{}}
	for _, name := range []string{"accounts", "products", "reviews"} {
		p := &atomic.Pointer[http.Handler]{}
		sg.handlers[name] = p
		sg.restart(name)
		sg.srv[name] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sg.record(name, r)
			(*p.Load()).ServeHTTP(w, r)
		}))
		t.Cleanup(sg.srv[name].Close)
	}
	return sg
}

// restart gives schema name a fresh gqlgen server: every hash forgotten.
func (sg *apqSubgraphs) restart(name string) {
	var h http.Handler
	switch name {
	case "accounts":
		h = accounts.GraphQLEndpointHandler(accounts.TestOptions)
	case "products":
		h = products.GraphQLEndpointHandler(products.TestOptions)
	case "reviews":
		h = reviews.GraphQLEndpointHandler(reviews.TestOptions)
	}
	srv := h.(*handler.Server)
	srv.AddTransport(gqltransport.GET{})
	switch sg.peer {
	case gqlgenAPQ:
		srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](100)})
	case apqNotSupported:
		h = apqserve.New(srv, apqserve.Options{Mode: apqserve.NotSupported})
	}
	sg.handlers[name].Store(&h)
}

// record counts the form of r, a request to schema, and leaves its body
// readable.
func (sg *apqSubgraphs) record(schema string, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	form := "text"
	switch hash, text := bytes.Contains(body, []byte(`"persistedQuery"`)), bytes.Contains(body, []byte(`"query"`)); {
	case r.Method == http.MethodGet:
		form = "get"
	case hash && text:
		form = "text+hash"
	case hash:
		form = "hash"
	}
	sg.mu.Lock()
	sg.forms[form]++
	sg.forms[schema+" "+form]++
	sg.mu.Unlock()
}

// take returns the forms counted since the last take.
func (sg *apqSubgraphs) take() map[string]int {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	out := sg.forms
	sg.forms = map[string]int{}
	return out
}

// routerConfig and transportConfig are subgraphs' for these servers.
func (sg *apqSubgraphs) plain() *subgraphs {
	return &subgraphs{accounts: sg.srv["accounts"], products: sg.srv["products"], reviews: sg.srv["reviews"]}
}

// TestFederationAPQ runs every query file through graphql-go-tools'
// federation gateway with persisted queries on, over gqlgen subgraphs, on
// legacy, sockets nethttp and sockets h1, and compares each answer with
// the reference gateway's (http.DefaultClient, whose requests carry
// their text): byte for byte. Three runs: the first, in which each text
// is refused by its hash (PersistedQueryNotFound) and sent again with it;
// the second, by hash alone; the third, after every subgraph restarted
// and forgot every hash, refused and resent again. Over subgraphs
// without persisted queries, or refusing them, the answers are the same
// and persisted queries go off, said once per schema.
func TestFederationAPQ(t *testing.T) {
	queries := queryFiles(t)
	for _, peer := range []struct {
		name string
		apq  peerAPQ
		off  string
	}{{"gqlgen APQ", gqlgenAPQ, ""}, {"gqlgen without APQ", gqlgenPlain, "no_apq"}, {"not supported", apqNotSupported, "not_supported"}} {
		for _, side := range []struct{ path, engine string }{{"legacy", ""}, {"sockets", env.EngineNetHTTP}, {"sockets", env.EngineH1}} {
			t.Run(peer.name+"/"+side.path+side.engine, func(t *testing.T) {
				sg := startAPQSubgraphs(t, peer.apq)
				cfg := sg.plain().transportConfig()
				cfg.Path, cfg.Defaults.Engine = env.Path(side.path), side.engine
				cfg.Defaults.PersistedQueries.Mode = env.PersistedQueriesAPQ
				var log wiretest.LogBuffer
				inv, err := transport.New(cfg, transport.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { inv.Close() })
				routerConfig := sg.plain().routerConfig()
				lib := startGateway(t, routerConfig, inv.Client(), transport.GatewayRequestHandler)
				ref := startGateway(t, routerConfig, http.DefaultClient, nil)
				runs := make([]map[string]int, 3)
				for run := range runs {
					if run == 2 {
						for name := range sg.srv {
							sg.restart(name)
						}
					}
					for _, q := range queries {
						status, got := post(t, lib.URL, q.body, nil)
						refStatus, want := post(t, ref.URL, q.body, nil)
						if status != refStatus || !bytes.Equal(got, want) {
							t.Errorf("run %d, %s: with persisted queries %d\n  %s\nreference %d\n  %s", run+1, q.name, status, got, refStatus, want)
						}
					}
					runs[run] = sg.take()
				}
				checkAPQRuns(t, runs, peer.off, log.String())
			})
		}
	}
}

// checkAPQRuns fails the test unless the subgraphs got the forms of
// requests that persisted queries on (off == "") or turned off for off
// make; runs holds each run's forms, the reference gateway's text ones
// included.
func checkAPQRuns(t *testing.T, runs []map[string]int, off, log string) {
	t.Helper()
	t.Logf("request forms per run: %v", runs)
	if off != "" {
		// The gateway's query texts are short: only those of some
		// schemas are longer than the hash that would replace them.
		byHash := 0
		for _, name := range []string{"accounts", "products", "reviews"} {
			if runs[0][name+" hash"] > 0 {
				byHash++
			}
		}
		if n := strings.Count(log, "automatic persisted queries off"); byHash == 0 || n != byHash || strings.Count(log, "reason="+off) != n {
			t.Errorf("%d log lines say persisted queries are off, want one per subgraph sent a request by hash (%d) with reason=%s:\n%s", n, byHash, off, log)
		}
		if runs[1]["hash"]+runs[2]["hash"] != 0 {
			t.Errorf("requests by hash after persisted queries went off: %v", runs)
		}
		return
	}
	first, second, third := runs[0], runs[1], runs[2]
	// The same gateway queries send the same requests by hash in every
	// run; the first and the third (after the restart) have them refused
	// and resent with their text, the second none.
	if second["hash"] == 0 || second["text+hash"] != 0 {
		t.Errorf("second run: %d by hash, %d with text and hash; want every hash known", second["hash"], second["text+hash"])
	}
	for i, run := range []map[string]int{first, third} {
		if run["hash"] != second["hash"] || run["text+hash"] == 0 {
			t.Errorf("run %d: %d by hash, %d with text and hash; want %d by hash, and the texts resent", 2*i+1, run["hash"], run["text+hash"], second["hash"])
		}
	}
	if log != "" {
		t.Errorf("log: %s", log)
	}
}
