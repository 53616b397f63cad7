package replay

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchgw"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/apqserve"
)

var recordOnce = sync.OnceValues(func() (Recording, error) { return Record(context.Background()) })

func recording(t testing.TB) Recording {
	t.Helper()
	rec, err := recordOnce()
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

type reply struct {
	Status      int
	ContentType string
	Body        string
}

func post(t *testing.T, url string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// As the gateway asks; the replay answers with the media type it got.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

// TestRecordCoversThePlan wants one recorded request per source schema
// request of the benchmark gateway's plan: six calls, to four schemas,
// inventory's and reviews' once and accounts' and products' twice.
func TestRecordCoversThePlan(t *testing.T) {
	rec := recording(t)
	got := map[string]int{}
	for name, m := range rec {
		got[name] = len(m)
	}
	want := map[string]int{"accounts": 2, "inventory": 1, "products": 2, "reviews": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded requests per schema (-want +got):\n%s", diff)
	}
}

// TestReplayMatchesSchemas sends every recorded request to the real schemas
// and to the replay: the same status, media type and bytes.
func TestReplayMatchesSchemas(t *testing.T) {
	rec := recording(t)
	real, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	rep, err := Start(rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	for name, m := range rec {
		for body := range m {
			want := post(t, real.URLs[name], []byte(body))
			got := post(t, rep.URLs[name], []byte(body))
			if want.Status != http.StatusOK {
				t.Errorf("%s: the real schema answered %d: %s", name, want.Status, want.Body)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %.80s: replay differs from the real schema (-want +got):\n%s", name, body, diff)
			}
		}
	}
}

// TestGatewayOverReplay runs the benchmark gateway on both paths over the
// real schemas and over the replay: the same answer, byte for byte.
func TestGatewayOverReplay(t *testing.T) {
	rec := recording(t)
	real, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	rep, err := Start(rec, Options{Latency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	want := gatewayAnswer(t, real.URLs, "", false)
	for _, engine := range []string{"", env.EngineH1, env.EngineNetHTTP} {
		if diff := cmp.Diff(want, gatewayAnswer(t, rep.URLs, engine, false)); diff != "" {
			t.Errorf("engine %q: the gateway's answer over the replay differs (-real +replay):\n%s", engine, diff)
		}
	}
}

// TestGatewayOverReplayAPQ: the benchmark gateway with persisted queries
// on, over the replay (which serves them in front of its recorded
// answers), on each path and engine, gets the real schemas' answer, byte
// for byte, the first time (each request refused by its hash, then sent
// with its text) and the second (by its hash alone).
func TestGatewayOverReplayAPQ(t *testing.T) {
	rec := recording(t)
	real, err := schemas.Start(schemas.Options{APQ: apqserve.Off})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	want := gatewayAnswer(t, real.URLs, "", false)
	for _, engine := range []string{"", env.EngineH1, env.EngineNetHTTP} {
		t.Run("engine "+engine, func(t *testing.T) {
			rep, err := Start(rec, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Close()
			for range 2 {
				if diff := cmp.Diff(want, gatewayAnswer(t, rep.URLs, engine, true)); diff != "" {
					t.Errorf("the gateway's answer with APQ over the replay differs (-real +replay):\n%s", diff)
				}
			}
			var st apqserve.Stats
			for _, s := range rep.PersistedQueryStats() {
				st.ByHash += s.ByHash
				st.NotFound += s.NotFound
				st.Registered += s.Registered
			}
			if st.NotFound == 0 || st.NotFound != st.Registered || st.ByHash < st.NotFound {
				t.Errorf("the replay's persisted queries: %+v; want each text refused once by hash, registered once, then run by hash", st)
			}
		})
	}
}

// gatewayAnswer is the benchmark gateway's answer over the schemas at
// urls, on legacy (engine "") or sockets with engine, with or without
// persisted queries.
func gatewayAnswer(t *testing.T, urls map[string]string, engine string, apq bool) string {
	t.Helper()
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{}}
	for name, u := range urls {
		cfg.SourceSchemas[name] = env.SourceSchema{URL: u, Settings: env.Settings{Engine: engine}}
	}
	if engine != "" {
		cfg.Path = env.PathSockets
	}
	if apq {
		cfg.Defaults.PersistedQueries.Mode = env.PersistedQueriesAPQ
	}
	inv, err := transport.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	w := httptest.NewRecorder()
	benchgw.Handler(inv).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(load.DefaultBody)))
	if w.Code != http.StatusOK {
		t.Fatalf("engine %q: %d %s", engine, w.Code, w.Body)
	}
	return w.Body.String()
}

// TestCacheControlAndCalls: the replay's servers put Options.CacheControl
// on every answer, recorded or learnt, and count each schema's requests at
// schemas.CallsPath.
func TestCacheControlAndCalls(t *testing.T) {
	rec := recording(t)
	srv, err := Start(rec, Options{Learn: true, CacheControl: "public, max-age=60"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var recorded string
	for body := range rec["accounts"] {
		recorded = body
		break
	}
	learnt := `{"query":"{ users { id } }"}`
	for _, body := range []string{recorded, learnt, learnt} {
		resp, err := http.Post(srv.URLs["accounts"], "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || got != "public, max-age=60" {
			t.Errorf("%.60s: %d, Cache-Control %q", body, resp.StatusCode, got)
		}
	}
	for name, want := range map[string]string{"accounts": "3", "products": "0"} {
		resp, err := http.Get(strings.TrimSuffix(srv.URLs[name], schemas.Path) + schemas.CallsPath)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("%s: %s says %q, want %q", name, schemas.CallsPath, b, want)
		}
	}
}

func TestNotRecorded(t *testing.T) {
	rep, err := Start(recording(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	got := post(t, rep.URLs["accounts"], []byte(`{"query":"{ users { id } }"}`))
	if got.Status != http.StatusNotFound || !strings.Contains(got.Body, "not recorded") || !strings.Contains(got.Body, `\"accounts\"`) {
		t.Errorf("got %+v, want 404 naming accounts and that the request was not recorded", got)
	}
	resp, err := http.Get(rep.URLs["accounts"])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
}

// discard is a ResponseWriter that keeps its header map across requests, as
// the lookup and write path is measured without net/http's own costs.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

// TestHandlerAllocs wants the handler's read, lookup and write to allocate
// nothing per request, with and without latency.
func TestHandlerAllocs(t *testing.T) {
	rec := recording(t)
	for _, latency := range []time.Duration{0, time.Microsecond} {
		h, err := NewHandler(rec, "reviews", Options{Latency: latency})
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		for b := range rec["reviews"] {
			body = []byte(b)
		}
		rd := bytes.NewReader(body)
		req := httptest.NewRequest(http.MethodPost, "/graphql", rd)
		req.Body = io.NopCloser(rd)
		w := &discard{h: http.Header{}}
		allocs := testing.AllocsPerRun(1000, func() {
			rd.Reset(body)
			h.ServeHTTP(w, req)
		})
		if allocs != 0 {
			t.Errorf("latency %v: %v allocations per request, want 0", latency, allocs)
		}
	}
}

// BenchmarkHandler measures the lookup and write path per request.
func BenchmarkHandler(b *testing.B) {
	rec := recording(b)
	h, err := NewHandler(rec, "reviews", Options{})
	if err != nil {
		b.Fatal(err)
	}
	var body []byte
	for k := range rec["reviews"] {
		body = []byte(k)
	}
	rd := bytes.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, "/graphql", rd)
	req.Body = io.NopCloser(rd)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		h.ServeHTTP(w, req)
	}
}

// TestLearn wants a body that was not recorded answered as the real schema
// answers it, on first sight and on later ones.
func TestLearn(t *testing.T) {
	real, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	rep, err := Start(Recording{"accounts": {}, "inventory": {}, "products": {}, "reviews": {}}, Options{Learn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	body := []byte(`{"query":"{ users { id name } }"}`)
	want := post(t, real.URLs["accounts"], body)
	for i := range 2 {
		if diff := cmp.Diff(want, post(t, rep.URLs["accounts"], body)); diff != "" {
			t.Errorf("sighting %d: the learnt answer differs from the real schema's (-want +got):\n%s", i+1, diff)
		}
	}
}
