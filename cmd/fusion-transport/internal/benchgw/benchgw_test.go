package benchgw_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchgw"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/env"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startSchemas starts the embedded source schemas for one test.
func startSchemas(t testing.TB) map[string]string {
	t.Helper()
	srv, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatalf("schemas.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("closing the source schemas: %v", err)
		}
	})
	return srv.URLs
}

// newInvoker builds the invoker of path for the source schemas at urls.
func newInvoker(t *testing.T, path env.Path, urls map[string]string, forward ...string) transport.Invoker {
	t.Helper()
	cfg := env.Config{Path: path, ForwardHeaders: forward, SourceSchemas: map[string]env.SourceSchema{}}
	for name, u := range urls {
		cfg.SourceSchemas[name] = env.SourceSchema{URL: u}
	}
	inv, err := transport.New(cfg)
	if err != nil {
		t.Fatalf("transport.New(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = inv.Close() })
	return inv
}

// post sends one gateway request to h and returns the status and body.
func post(t *testing.T, h http.Handler, header http.Header) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query":"query TestQuery { users { id } }"}`))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// The test's own view of the answer, independent of the gateway's types.
type (
	product struct {
		UPC              string   `json:"upc"`
		Name             *string  `json:"name"`
		Price            *int     `json:"price"`
		Weight           *int     `json:"weight"`
		InStock          *bool    `json:"inStock"`
		ShippingEstimate *int     `json:"shippingEstimate"`
		Reviews          []review `json:"reviews"`
	}
	review struct {
		ID      string   `json:"id"`
		Body    *string  `json:"body"`
		Product *product `json:"product"`
		Author  *user    `json:"author"`
	}
	user struct {
		ID       string   `json:"id"`
		Username *string  `json:"username"`
		Name     *string  `json:"name"`
		Reviews  []review `json:"reviews"`
	}
	gatewayAnswer struct {
		Data struct {
			Users       []user    `json:"users"`
			TopProducts []product `json:"topProducts"`
		} `json:"data"`
		Errors []struct{ Message string } `json:"errors"`
	}
)

func TestPathsGiveTheSameCorrectAnswer(t *testing.T) {
	urls := startSchemas(t)
	bodies := map[env.Path]string{}
	for _, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		g := benchgw.New(newInvoker(t, path, urls))
		h := transport.GatewayRequestHandler(g)
		status, body := post(t, h, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, status, body)
		}
		// A second request on warm connections answers the same.
		if _, again := post(t, h, nil); again != body {
			t.Errorf("%s: a second request answered differently", path)
		}
		if got, want := g.Stats(), (benchgw.Stats{Requests: 2, SourceSchemaCalls: 12}); got != want {
			t.Errorf("%s: Stats() = %+v, want %+v (six source schema calls per request)", path, got, want)
		}
		bodies[path] = body
	}
	if diff := cmp.Diff(bodies[env.PathLegacy], bodies[env.PathSockets]); diff != "" {
		t.Fatalf("the paths answer differently (-legacy +sockets):\n%s", diff)
	}

	var a gatewayAnswer
	if err := json.Unmarshal([]byte(bodies[env.PathLegacy]), &a); err != nil {
		t.Fatalf("the answer is not JSON: %v", err)
	}
	checkKnownValues(t, a)
	checkComplete(t, a)
}

// checkKnownValues compares parts of the answer with the demo data of
// cmd/fusion-transport/internal/schemas.
func checkKnownValues(t *testing.T, a gatewayAnswer) {
	t.Helper()
	users, tops := a.Data.Users, a.Data.TopProducts
	if len(users) != 6 {
		t.Fatalf("%d users, want 6", len(users))
	}
	if len(tops) != 5 {
		t.Fatalf("%d top products, want 5", len(tops))
	}
	first := users[0]
	got := []string{first.ID, deref(first.Name), deref(first.Username)}
	if diff := cmp.Diff([]string{"1", "Uri Goldshtein", "urigo"}, got); diff != "" {
		t.Errorf("first user mismatch (-want +got):\n%s", diff)
	}
	// User 1 wrote reviews 1, 7 and 13, on the table, the chair and the sofa.
	var ids, products []string
	for _, r := range first.Reviews {
		ids = append(ids, r.ID)
		products = append(products, fmt.Sprintf("%s %s", r.Product.UPC, deref(r.Product.Name)))
	}
	if diff := cmp.Diff([]string{"1", "7", "13"}, ids); diff != "" {
		t.Errorf("first user's reviews mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1 Table", "4 Chair", "9 Sofa"}, products); diff != "" {
		t.Errorf("first user's reviewed products mismatch (-want +got):\n%s", diff)
	}
	// The table (price 899, weight 100) ships for half its weight; the couch
	// (price 1299) ships free.
	table, couch := tops[0], tops[1]
	if table.UPC != "1" || deref(table.ShippingEstimate) != 50 || !deref(table.InStock) {
		t.Errorf("topProducts[0] = upc %s, shippingEstimate %v, inStock %v; want upc 1, 50, true", table.UPC, deref(table.ShippingEstimate), deref(table.InStock))
	}
	if couch.UPC != "2" || deref(couch.ShippingEstimate) != 0 || deref(couch.InStock) {
		t.Errorf("topProducts[1] = upc %s, shippingEstimate %v, inStock %v; want upc 2, 0, false", couch.UPC, deref(couch.ShippingEstimate), deref(couch.InStock))
	}
	// The deepest level: the table's reviews' authors' reviews' products.
	// Review 2 is by user 2 (Dotan Simha), who also wrote review 8 on the
	// chair.
	r := first.Reviews[0].Product.Reviews[1]
	if r.ID != "2" || r.Author == nil || deref(r.Author.Name) != "Dotan Simha" || deref(r.Author.Username) != "dotansimha" {
		t.Fatalf("users[0].reviews[0].product.reviews[1] = %+v, want review 2 by Dotan Simha", r)
	}
	deep := r.Author.Reviews[1].Product
	if deep == nil || deep.UPC != "4" || deref(deep.Name) != "Chair" || deref(deep.Price) != 499 || deref(deep.ShippingEstimate) != 50 {
		t.Errorf("...author.reviews[1].product = %+v, want the chair (upc 4, price 499, shippingEstimate 50)", deep)
	}
}

// checkComplete walks the whole answer: every field the query selects is
// there and not null, so every wave reached every level.
func checkComplete(t *testing.T, a gatewayAnswer) {
	t.Helper()
	var products, users, reviews int
	var checkProduct func(where string, p *product, withReviews bool)
	var checkUser func(where string, u *user, top bool)
	checkReview := func(where string, r review) {
		reviews++
		if r.ID == "" || r.Body == nil || len(*r.Body) < 150 {
			t.Errorf("%s: review %q without a full body", where, r.ID)
		}
	}
	checkProduct = func(where string, p *product, withReviews bool) {
		products++
		if p == nil || p.UPC == "" || p.Name == nil || p.Price == nil || p.Weight == nil || p.InStock == nil || p.ShippingEstimate == nil {
			t.Errorf("%s: incomplete product %+v", where, p)
			return
		}
		if withReviews != (p.Reviews != nil) {
			t.Errorf("%s: product %s has reviews %v, want them: %v", where, p.UPC, p.Reviews, withReviews)
		}
		for i, r := range p.Reviews {
			w := fmt.Sprintf("%s.reviews[%d]", where, i)
			checkReview(w, r)
			checkUser(w+".author", r.Author, false)
		}
	}
	checkUser = func(where string, u *user, top bool) {
		users++
		if u == nil || u.ID == "" || u.Username == nil || u.Name == nil || u.Reviews == nil {
			t.Errorf("%s: incomplete user %+v", where, u)
			return
		}
		for i, r := range u.Reviews {
			w := fmt.Sprintf("%s.reviews[%d]", where, i)
			checkReview(w, r)
			checkProduct(w+".product", r.Product, top)
		}
	}
	for i := range a.Data.Users {
		checkUser(fmt.Sprintf("users[%d]", i), &a.Data.Users[i], true)
	}
	for i := range a.Data.TopProducts {
		checkProduct(fmt.Sprintf("topProducts[%d]", i), &a.Data.TopProducts[i], true)
	}
	if len(a.Errors) > 0 {
		t.Errorf("errors in the answer: %v", a.Errors)
	}
	t.Logf("%d products, %d users, %d reviews in the answer", products, users, reviews)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestForwardsGatewayHeaders checks that Handler serves behind
// transport.GatewayRequestHandler: a configured gateway request header reaches every
// source schema on both paths.
func TestForwardsGatewayHeaders(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{}
	urls := map[string]string{}
	for _, name := range schemas.Names {
		h, err := schemas.Handler(name, schemas.Options{})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = append(seen[name], r.Header.Get("X-Request-Id"))
			mu.Unlock()
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		urls[name] = srv.URL
	}
	for _, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		t.Run(string(path), func(t *testing.T) {
			clear(seen)
			h := benchgw.Handler(newInvoker(t, path, urls, "X-Request-Id"))
			status, body := post(t, h, http.Header{"X-Request-Id": {"r-42"}})
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			want := map[string][]string{
				"accounts":  {"r-42", "r-42"},
				"products":  {"r-42", "r-42"},
				"reviews":   {"r-42"},
				"inventory": {"r-42"},
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("X-Request-Id seen by the source schemas mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	urls := startSchemas(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	broken := map[string]string{}
	for k, v := range urls {
		broken[k] = v
	}
	broken["inventory"] = down.URL

	t.Run("GET", func(t *testing.T) {
		h := benchgw.Handler(newInvoker(t, env.PathSockets, urls))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/graphql", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
			t.Errorf("GET: status %d, Allow %q; want 405, POST", rec.Code, rec.Header().Get("Allow"))
		}
	})
	for _, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		t.Run("failing source schema/"+string(path), func(t *testing.T) {
			g := benchgw.New(newInvoker(t, path, broken))
			status, body := post(t, transport.GatewayRequestHandler(g), nil)
			if status != http.StatusBadGateway || !strings.Contains(body, `source schema \"inventory\": status 503`) {
				t.Errorf("status %d, body %s; want 502 naming inventory's 503", status, body)
			}
			if s := g.Stats(); s.Requests != 1 || s.Failures != 1 {
				t.Errorf("Stats() = %+v, want one request, failed", s)
			}
		})
	}
}

func TestStatsHandler(t *testing.T) {
	urls := startSchemas(t)
	g := benchgw.New(newInvoker(t, env.PathLegacy, urls))
	post(t, transport.GatewayRequestHandler(g), nil)
	rec := httptest.NewRecorder()
	g.StatsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/stats", nil))
	var s benchgw.DebugStats
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatalf("decoding %s: %v", rec.Body, err)
	}
	if s.Requests != 1 || s.SourceSchemaCalls != 6 {
		t.Errorf("requests %d, calls %d; want 1, 6", s.Requests, s.SourceSchemaCalls)
	}
	for _, m := range []string{benchgw.AllocBytesMetric, benchgw.AllocObjectsMetric} {
		if s.Metrics[m] == 0 {
			t.Errorf("metric %s missing or zero in %s", m, rec.Body)
		}
	}
}
