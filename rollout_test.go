package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/shadow"
)

// viaSockets tells the paths apart at the source schema: the legacy path
// asks for gzip (Go's transparent decompression), the sockets path does not.
func viaSockets(r *http.Request) bool { return r.Header.Get("Accept-Encoding") == "" }

// TestMixedSwitch: each source schema goes through the path the switch
// names, as the source schema sees it.
func TestMixedSwitch(t *testing.T) {
	products := newSchemaServer(t, nil)
	reviews := newSchemaServer(t, nil)
	accounts := newSchemaServer(t, nil)
	file := filepath.Join(t.TempDir(), "transport.yaml")
	yaml := fmt.Sprintf("source_schemas:\n  products: {url: %q}\n  reviews: {url: %q}\n  accounts: {url: %q}\n", products.URL(), reviews.URL(), accounts.URL())
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Loader{LookupEnv: func(k string) (string, bool) {
		if k == env.SwitchVar {
			return "products,reviews", true
		}
		return "", false
	}}.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	inv := newInvoker(t, cfg)
	for _, s := range []string{"products", "reviews", "accounts"} {
		post(t, inv, context.Background(), s)
	}
	for _, c := range []struct {
		srv     *schemaServer
		sockets bool
	}{{products, true}, {reviews, true}, {accounts, false}} {
		r := c.srv.Last(t)
		if got := r.Header.Get("Accept-Encoding") == ""; got != c.sockets {
			t.Errorf("%s: sockets path = %v, want %v (Accept-Encoding %q)", r.Path, got, c.sockets, r.Header.Get("Accept-Encoding"))
		}
	}
	// A reload keeps the split, and may not drop a schema that is on sockets.
	next := config(env.PathMixed, "reviews", reviews.URL(), "accounts", accounts.URL())
	next.SocketsSchemas = []string{"reviews"}
	if err := inv.Reload(next); err == nil || !strings.Contains(err.Error(), `source schema "products" is on the sockets path`) {
		t.Errorf("Reload without products: %v", err)
	}
}

// recorder is a shadow.Publisher that keeps what it is told.
type recorder struct {
	mu         sync.Mutex
	mismatches []shadow.Mismatch
	dropped    map[string]int
	compared   chan bool
}

func newRecorder() *recorder {
	return &recorder{dropped: map[string]int{}, compared: make(chan bool, 1000)}
}

func (r *recorder) Publish(_ context.Context, m shadow.Mismatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mismatches = append(r.mismatches, m)
}
func (r *recorder) Compared(_ context.Context, _ string, equal bool) { r.compared <- equal }
func (r *recorder) Dropped(_ context.Context, _, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped[reason]++
}

func shadowConfig(rate float64, urls ...string) env.Config {
	cfg := config(env.PathLegacy, urls...)
	cfg.Shadow.Rate = rate
	return cfg
}

// TestShadowServesLegacy: the caller gets the legacy answer byte for byte,
// the sockets path sees the same query, and equal answers are compared
// equal.
func TestShadowServesLegacy(t *testing.T) {
	var legacyN, socketsN atomic.Int32
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if viaSockets(r) {
			socketsN.Add(1)
		} else {
			legacyN.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"products":[{"upc":"1"}]}}`)
	})
	rec := newRecorder()
	inv := newInvoker(t, shadowConfig(1, "products", srv.URL()), transport.WithShadowPublisher(rec))
	_, body := post(t, inv, context.Background(), "products")
	if body != `{"data":{"products":[{"upc":"1"}]}}` {
		t.Errorf("caller got %q", body)
	}
	if equal := <-rec.compared; !equal {
		t.Errorf("equal answers compared unequal: %+v", rec.mismatches)
	}
	if legacyN.Load() != 1 || socketsN.Load() != 1 {
		t.Errorf("legacy saw %d, sockets %d; want 1 and 1", legacyN.Load(), socketsN.Load())
	}
}

// TestShadowNeverSendsAMutationTwice.
func TestShadowNeverSendsAMutationTwice(t *testing.T) {
	srv := newSchemaServer(t, nil)
	rec := newRecorder()
	inv := newInvoker(t, shadowConfig(1, "products", srv.URL()), transport.WithShadowPublisher(rec))
	for _, body := range []string{
		`{"query":"mutation { addReview(body: \"x\") { id } }"}`,
		`{"query":"subscription { reviewAdded { id } }"}`,
		`{"query":"query A { a } mutation B { b }","operationName":"B"}`,
		`{"id":"persisted-1"}`,
		`not json`,
	} {
		resp, err := inv.Post(context.Background(), "products", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("the source schema saw %d requests for 5 non-queries, want 5: something was sent twice", n)
	}
}

// TestShadowReportsADifference: a source schema that answers the sockets
// path differently is reported, with the Authorization value redacted, and
// the caller still gets the legacy answer.
func TestShadowReportsADifference(t *testing.T) {
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if viaSockets(r) {
			w.Header().Set("Authorization", "Bearer leaked-secret")
			io.WriteString(w, `{"data":{"price":900}}`)
			return
		}
		io.WriteString(w, `{"data":{"price":899}}`)
	})
	rec := newRecorder()
	cfg := shadowConfig(1, "products", srv.URL())
	cfg.ForwardHeaders = []string{"Authorization"}
	inv := newInvoker(t, cfg, transport.WithShadowPublisher(rec))
	_, body := post(t, inv, gatewayCtx("Authorization", "Bearer user"), "products")
	if body != `{"data":{"price":899}}` {
		t.Errorf("caller got %q, want the legacy answer", body)
	}
	if equal := <-rec.compared; equal {
		t.Fatal("a seeded difference compared equal")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.mismatches) != 1 {
		t.Fatalf("%d mismatches published", len(rec.mismatches))
	}
	var kinds []string
	for _, d := range rec.mismatches[0].Differences {
		kinds = append(kinds, string(d.Kind)+" "+d.Path)
		if strings.Contains(d.A+d.B+d.Explanation+d.Diff, "leaked-secret") {
			t.Errorf("a published difference carries the Authorization value: %+v", d)
		}
	}
	if got := strings.Join(kinds, ", "); !strings.Contains(got, "body data.price") || !strings.Contains(got, "header Authorization") {
		t.Errorf("differences %q, want the body's data.price and the Authorization header", got)
	}
}

// TestShadowMemoryBound: a burst of queries with large answers never runs
// more sockets requests at once than MaxConcurrent, drops what does not
// fit, and the callers all get their legacy answers whole.
func TestShadowMemoryBound(t *testing.T) {
	const maxConcurrent, maxBody = 2, 64 << 10
	big := bytes.Repeat([]byte("x"), 1<<20)
	var now, peak atomic.Int32
	release := make(chan struct{})
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		if viaSockets(r) {
			n := now.Add(1)
			defer now.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			<-release // hold the shadow requests so that the burst finds every slot taken
		}
		fmt.Fprintf(w, `{"data":{"blob":"%s"}}`, big)
	})
	rec := newRecorder()
	cfg := shadowConfig(1, "products", srv.URL())
	cfg.Shadow.MaxConcurrent, cfg.Shadow.MaxBodyBytes = maxConcurrent, maxBody
	inv := newInvoker(t, cfg, transport.WithShadowPublisher(rec))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, body := post(t, inv, context.Background(), "products")
			if len(body) != len(big)+len(`{"data":{"blob":""}}`) {
				t.Errorf("caller got %d bytes", len(body))
			}
		})
	}
	wg.Wait()
	close(release)
	inv.Close() // waits for the comparisons in flight
	if peak.Load() > maxConcurrent {
		t.Errorf("%d shadow requests ran at once, want at most %d", peak.Load(), maxConcurrent)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.dropped[shadow.DropBusy] < 20-maxConcurrent || rec.dropped[shadow.DropTooLarge] != maxConcurrent {
		t.Errorf("dropped %v, want %d busy and %d too large", rec.dropped, 20-maxConcurrent, maxConcurrent)
	}
}

// TestShadowComparerIgnore: with compare's rules, an ignored JSON path
// makes answers that differ only there compare equal.
func TestShadowComparerIgnore(t *testing.T) {
	srv := newSchemaServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":{"a":1},"extensions":{"tracing":{"sockets":%v}}}`, viaSockets(r))
	})
	rec := newRecorder()
	inv := newInvoker(t, shadowConfig(1, "products", srv.URL()), transport.WithShadowPublisher(rec),
		transport.WithShadowComparer(compare.ShadowComparer(compare.Rules{IgnorePaths: []string{"extensions.tracing"}})))
	post(t, inv, context.Background(), "products")
	if equal := <-rec.compared; !equal {
		t.Errorf("answers that differ only in an ignored path compared unequal: %+v", rec.mismatches)
	}
}
