package transport_test

// Automatic persisted queries on the wire: what the source schema received
// (the hash alone, then text and hash after PersistedQueryNotFound, the
// text alone once APQ is off), what each caller got, on every path and
// engine.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/fault"
	"github.com/fusiongo/transport/internal/testsupport/apqserve"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/fusiongo/transport/telemetry"
)

// apqText is a query text long enough to go by its hash.
const apqText = `query Product($upc: String!) { product(upc: $upc) { upc name price weight inStock shippingEstimate reviews { id body author { id name } } } }`

// apqHash is apqText's SHA-256, as a server computes it.
var apqHash = func() string {
	sum := sha256.Sum256([]byte(apqText))
	return hex.EncodeToString(sum[:])
}()

// The bodies of the query by apqText: as the caller sends it, by its hash
// alone, with its text and hash.
var (
	apqQuoted   = mustJSON(apqText)
	apqBody     = `{"query":` + apqQuoted + `,"variables":{"upc":"1"}}`
	apqHashOnly = `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + apqHash + `"}},"variables":{"upc":"1"}}`
	apqWithHash = `{"query":` + apqQuoted + `,"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + apqHash + `"}},"variables":{"upc":"1"}}`
)

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// apqPeer is a source schema that serves automatic persisted queries
// (apqserve) in front of an answerer that runs any request with a query
// (counting it) and answers a request without one as graphql-go does, 400
// and a request error: on a recording wire server, so that a test reads
// what crossed the wire.
type apqPeer struct {
	*wireServer
	apq *apqserve.Handler
	ran atomic.Int64 // requests the answerer ran
	// answer, if set, writes the answer to a request that ran (its body,
	// or its query string for a GET); unset: {"data":{"ran":N}}.
	answer atomic.Pointer[func(w http.ResponseWriter, got string, n int64)]
	// before, if set, sees each request before persisted queries do, and
	// answers it itself when it returns true.
	before atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]
}

func newAPQPeer(t *testing.T, mode apqserve.Mode) *apqPeer {
	t.Helper()
	p := &apqPeer{}
	p.apq = apqserve.New(http.HandlerFunc(p.serve), apqserve.Options{Mode: mode})
	p.wireServer = newWireServer(t, wiretest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		if f := p.before.Load(); f != nil && (*f)(w, r) {
			return
		}
		p.apq.ServeHTTP(w, r)
	}})
	return p
}

func (p *apqPeer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	got := string(body)
	if r.Method == http.MethodGet {
		got = r.URL.RawQuery
	}
	w.Header().Set("Content-Type", "application/json")
	if !strings.Contains(got, "query") {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"errors":[{"message":"the request has no query"}]}`)
		return
	}
	n := p.ran.Add(1)
	if f := p.answer.Load(); f != nil {
		(*f)(w, got, n)
		return
	}
	fmt.Fprintf(w, `{"data":{"ran":%d}}`, n)
}

// wire returns, for each request received since the mark, its method and
// body, or for a GET its request URI.
func (p *apqPeer) wire(from int) []string {
	var out []string
	for _, r := range p.Requests()[from:] {
		if r.Method == http.MethodGet {
			out = append(out, "GET "+r.RequestURI)
			continue
		}
		out = append(out, r.Method+" "+r.Body)
	}
	return out
}

// apqConfig is a Config for path with products at url and persisted
// queries on; edit, if non-nil, changes the schema further.
func apqConfig(path env.Path, url string, edit func(*env.SourceSchema)) env.Config {
	return withSchema(path, url, func(s *env.SourceSchema) {
		s.PersistedQueries.Mode = env.PersistedQueriesAPQ
		if edit != nil {
			edit(s)
		}
	})
}

// postAPQ sends body with Post and returns the answer's body; an error
// fails the test.
func postAPQ(t *testing.T, inv transport.Invoker, body string) string {
	t.Helper()
	resp, err := inv.Post(context.Background(), "products", []byte(body))
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	return readAll(t, resp)
}

// checkWire fails the test unless the peer received want since from.
func checkWire(t *testing.T, p *apqPeer, from int, what string, want ...string) {
	t.Helper()
	if got := p.wire(from); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: the schema received\n%q\nwant\n%q", what, got, want)
	}
}

// TestPersistedQueriesWire, on every path and engine: the first call goes
// by its hash alone, the schema answers PersistedQueryNotFound and the
// same request goes again with text and hash, and the caller gets the
// answer of that one; later calls (Post, PostFunc, and a request of
// Transport.Client, as graphql-go-tools sends it) go by the hash alone;
// after a restart of the schema, which forgets every hash, the next call
// is refused and resent once more. Each resend is counted, and marked on
// the call's span.
func TestPersistedQueriesWire(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			peer := newAPQPeer(t, apqserve.On)
			reader := sdkmetric.NewManualReader()
			spans := tracetest.NewSpanRecorder()
			tel, err := telemetry.New(telemetry.Options{
				MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
				TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
			})
			if err != nil {
				t.Fatal(err)
			}
			inv := newInvoker(t, apqConfig(path, peer.URL(), nil), transport.WithTelemetry(tel))

			if got := postAPQ(t, inv, apqBody); got != `{"data":{"ran":1}}` {
				t.Errorf("first call: the caller got %s, want the answer to the text", got)
			}
			checkWire(t, peer, 0, "first call", "POST "+apqHashOnly, "POST "+apqWithHash)

			mark := len(peer.Requests())
			postAPQ(t, inv, apqBody)
			err = inv.PostFunc(context.Background(), "products", []byte(apqBody), func(resp *http.Response) error {
				_, err := io.Copy(io.Discard, resp.Body)
				return err
			})
			if err != nil {
				t.Fatalf("PostFunc: %v", err)
			}
			req, _ := http.NewRequest(http.MethodPost, peer.URL(), strings.NewReader(apqBody))
			req.Header.Set("Content-Type", "application/json")
			resp, err := inv.Client().Do(req)
			if err != nil {
				t.Fatalf("Client().Do: %v", err)
			}
			if got := readAll(t, resp); got != `{"data":{"ran":4}}` {
				t.Errorf("Client().Do: the caller got %s", got)
			}
			checkWire(t, peer, mark, "Post, PostFunc and Client by a known hash", "POST "+apqHashOnly, "POST "+apqHashOnly, "POST "+apqHashOnly)

			peer.apq.Forget() // the schema restarted
			mark = len(peer.Requests())
			postAPQ(t, inv, apqBody)
			checkWire(t, peer, mark, "after the restart", "POST "+apqHashOnly, "POST "+apqWithHash)

			if n := resendsCounted(t, reader)["not_found"]; n != 2 {
				t.Errorf("%s counted %d resends for not_found, want 2", telemetry.MetricPersistedQueryResends, n)
			}
			events := 0
			for _, s := range spans.Ended() {
				for _, e := range s.Events() {
					if e.Name == telemetry.EventPersistedQueryResend {
						events++
					}
				}
			}
			if events != 2 {
				t.Errorf("%d spans have the event %s, want the 2 calls that were resent", events, telemetry.EventPersistedQueryResend)
			}
		})
	}
}

// resendsCounted returns the persisted query resends counted, by reason.
func resendsCounted(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	return int64Sums(t, reader, func(name string, attrs attribute.Set) (string, bool) {
		reason, _ := attrs.Value(telemetry.AttrPersistedQueryReason)
		return reason.AsString(), name == telemetry.MetricPersistedQueryResends
	})
}

// int64Sums collects reader's int64 sums: the value of each data point
// that key takes, added up under the key it gives (by the metric's name
// and the point's attributes).
func int64Sums(t *testing.T, reader *sdkmetric.ManualReader, key func(name string, attrs attribute.Set) (string, bool)) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			s, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, p := range s.DataPoints {
				if k, ok := key(m.Name, p.Attributes); ok {
					got[k] += p.Value
				}
			}
		}
	}
	return got
}

// TestPersistedQueriesOffWire, on every path and engine: a schema that
// answers PersistedQueryNotSupported, and one that knows nothing of
// persisted queries (it answers a request without a query with a request
// error), gets the request again with its text alone; persisted queries
// are then off for it, said once in the log, and later calls carry the
// text alone, until a reload turns them on again.
func TestPersistedQueriesOffWire(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		mode         apqserve.Mode
	}{
		{"not supported", "not_supported", apqserve.NotSupported},
		{"no APQ", "no_apq", apqserve.Off},
	} {
		for _, path := range paths {
			t.Run(tc.name+"/"+string(path), func(t *testing.T) {
				peer := newAPQPeer(t, tc.mode)
				var log logBuffer
				cfg := apqConfig(path, peer.URL(), nil)
				inv := newInvoker(t, cfg, infoLog(&log))
				for range 3 {
					postAPQ(t, inv, apqBody)
				}
				checkWire(t, peer, 0, "three calls", "POST "+apqHashOnly, "POST "+apqBody, "POST "+apqBody, "POST "+apqBody)
				if n := strings.Count(log.String(), "automatic persisted queries off"); n != 1 || !strings.Contains(log.String(), "reason="+tc.reason) {
					t.Errorf("%d log lines say persisted queries are off, want 1 with reason=%s:\n%s", n, tc.reason, log.String())
				}
				if got := persistedOnPage(t, inv); got != fmt.Sprintf("on=false off=%s by_hash=1", tc.reason) {
					t.Errorf("the status page says %s", got)
				}
				if err := inv.Reload(cfg); err != nil {
					t.Fatal(err)
				}
				if got := persistedOnPage(t, inv); got != "on=true off= by_hash=0" {
					t.Errorf("after the reload the status page says %s", got)
				}
				mark := len(peer.Requests())
				postAPQ(t, inv, apqBody)
				checkWire(t, peer, mark, "after a reload", "POST "+apqHashOnly, "POST "+apqBody)
			})
		}
	}
}

// TestPersistedQueriesMutationWire, on every path and engine: a mutation
// goes by its hash too; refused as not found it runs once, by its text; a
// mutation the schema ran by its hash and whose field failed (an error at
// its path, data null) is not sent again.
func TestPersistedQueriesMutationWire(t *testing.T) {
	text := `mutation AddReview($upc: String!, $body: String!) { addReview(upc: $upc, body: $body) { id body author { id name } product { upc } } }`
	sum := sha256.Sum256([]byte(text))
	ext := `"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
	body := `{"query":` + mustJSON(text) + `,"variables":{"upc":"1","body":"great"}}`
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			peer := newAPQPeer(t, apqserve.On)
			inv := newInvoker(t, apqConfig(path, peer.URL(), nil))
			postAPQ(t, inv, body)
			checkWire(t, peer, 0, "first mutation",
				"POST {"+ext+`,"variables":{"upc":"1","body":"great"}}`,
				"POST "+`{"query":`+mustJSON(text)+`,`+ext+`,"variables":{"upc":"1","body":"great"}}`)
			if n := peer.ran.Load(); n != 1 {
				t.Fatalf("the schema ran the mutation %d times, want once", n)
			}
			failed := func(w http.ResponseWriter, _ string, _ int64) {
				io.WriteString(w, `{"errors":[{"message":"out of stock","path":["addReview"]}],"data":null}`)
			}
			peer.answer.Store(&failed)
			mark := len(peer.Requests())
			if got := postAPQ(t, inv, body); !strings.Contains(got, "out of stock") {
				t.Errorf("the caller got %s, want the schema's error", got)
			}
			checkWire(t, peer, mark, "a mutation that failed at its field", "POST {"+ext+`,"variables":{"upc":"1","body":"great"}}`)
			if n := peer.ran.Load(); n != 2 {
				t.Errorf("the schema ran the mutations %d times, want twice: once each", n)
			}
		})
	}
}

// TestPersistedQueriesGETWire, on every path and engine: with get, a query
// whose URL stays within max_url_bytes goes as a GET with its hash and
// variables in the URL (not found: again by POST with text and hash), a
// longer one by POST, and a mutation by POST.
func TestPersistedQueriesGETWire(t *testing.T) {
	get := "GET /graphql?variables=" + url.QueryEscape(`{"upc":"1"}`) + "&extensions=" + url.QueryEscape(`{"persistedQuery":{"version":1,"sha256Hash":"`+apqHash+`"}}`)
	long := `{"query":` + apqQuoted + `,"variables":{"upc":"` + strings.Repeat("9", 600) + `"}}`
	longHashOnly := `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + apqHash + `"}},"variables":{"upc":"` + strings.Repeat("9", 600) + `"}}`
	mutation := `{"query":` + mustJSON(`mutation { addReview(upc: "1", body: "`+strings.Repeat("good ", 30)+`") { id } }`) + `}`
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			peer := newAPQPeer(t, apqserve.On)
			inv := newInvoker(t, apqConfig(path, peer.URL(), func(s *env.SourceSchema) {
				s.PersistedQueries.GET = env.Enabled
				s.PersistedQueries.MaxURLBytes = 512
			}))
			postAPQ(t, inv, apqBody)
			postAPQ(t, inv, apqBody)
			checkWire(t, peer, 0, "two queries", get, "POST "+apqWithHash, get)
			if h := peer.Requests()[0].Header; h.Get("Content-Type") != "" || h.Get("Accept") == "" {
				t.Errorf("the GET carried Content-Type %q and Accept %q: want none, and the Post's", h.Get("Content-Type"), h.Get("Accept"))
			}
			mark := len(peer.Requests())
			postAPQ(t, inv, long)
			checkWire(t, peer, mark, "a query whose URL is over 512 bytes", "POST "+longHashOnly)
			mark = len(peer.Requests())
			postAPQ(t, inv, mutation)
			if got := peer.wire(mark); len(got) == 0 || !strings.HasPrefix(got[0], "POST ") {
				t.Errorf("a mutation: the schema received %q, want a POST", got)
			}
		})
	}
}

// TestPersistedQueriesRetryWire, on every path and engine: each attempt of
// a retried query carries its hash, and a refusal by hash on a retry is
// resent with the text once, not retried.
func TestPersistedQueriesRetryWire(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			var calls atomic.Int64
			peer := newAPQPeer(t, apqserve.On)
			unavailable := func(w http.ResponseWriter, _ *http.Request) bool {
				if calls.Add(1) > 1 {
					return false
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			}
			peer.before.Store(&unavailable)
			inv := newInvoker(t, apqConfig(path, peer.URL(), func(s *env.SourceSchema) {
				s.Retry = env.RetrySettings{MaxAttempts: 3, WaitMin: 1, WaitMax: 1}
			}))
			if got := postAPQ(t, inv, apqBody); got != `{"data":{"ran":1}}` {
				t.Errorf("the caller got %s", got)
			}
			checkWire(t, peer, 0, "a 503, then not found", "POST "+apqHashOnly, "POST "+apqHashOnly, "POST "+apqWithHash)
		})
	}
}

// TestPersistedQueriesCacheKeysWire, on every path and engine: the
// response cache keys a call by its text, whatever goes on the wire: an
// answer stored with persisted queries off answers the same call with
// them on, and one stored with them on answers it with them off, the
// schema receiving nothing.
func TestPersistedQueriesCacheKeysWire(t *testing.T) {
	other := strings.Replace(apqBody, `"upc":"1"`, `"upc":"2"`, 1)
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			peer := newAPQPeer(t, apqserve.On)
			cacheable := func(w http.ResponseWriter, _ string, n int64) {
				w.Header().Set("Cache-Control", "max-age=60")
				fmt.Fprintf(w, `{"data":{"ran":%d}}`, n)
			}
			peer.answer.Store(&cacheable)
			off := cachedConfig(path, peer.URL(), nil)
			on := off
			on.SourceSchemas = map[string]env.SourceSchema{"products": off.SourceSchemas["products"]}
			s := on.SourceSchemas["products"]
			s.PersistedQueries.Mode = env.PersistedQueriesAPQ
			on.SourceSchemas["products"] = s

			inv := newInvoker(t, off)
			stored := postAPQ(t, inv, apqBody)
			checkWire(t, peer, 0, "APQ off, stored", "POST "+apqBody)
			if err := inv.Reload(on); err != nil {
				t.Fatal(err)
			}
			if got := postAPQ(t, inv, apqBody); got != stored {
				t.Errorf("APQ on: the caller got %s, want the answer stored with APQ off, %s", got, stored)
			}
			mark := len(peer.Requests())
			storedOn := postAPQ(t, inv, other)
			if got := peer.wire(mark); len(got) != 2 || !strings.Contains(got[0], `"sha256Hash"`) || strings.Contains(got[0], `"query"`) {
				t.Errorf("APQ on, a new call: the schema received %q, want it by hash, then with its text", got)
			}
			if err := inv.Reload(off); err != nil {
				t.Fatal(err)
			}
			mark = len(peer.Requests())
			if got := postAPQ(t, inv, other); got != storedOn {
				t.Errorf("APQ off: the caller got %s, want the answer stored with APQ on, %s", got, storedOn)
			}
			checkWire(t, peer, mark, "APQ off, answered from the cache")
		})
	}
}

// TestPersistedQueriesShadowWire: under shadow comparison the two sides
// may send a call differently (one by its hash alone, the other refused
// and resent with its text, or the other way round) and still compare
// equal: the comparison is of answers.
func TestPersistedQueriesShadowWire(t *testing.T) {
	peer := newAPQPeer(t, apqserve.On)
	same := func(w http.ResponseWriter, _ string, _ int64) { io.WriteString(w, `{"data":{"product":{"upc":"1"}}}`) }
	peer.answer.Store(&same)
	cfg := shadowConfig(1, "products", peer.URL())
	s := cfg.SourceSchemas["products"]
	s.PersistedQueries.Mode = env.PersistedQueriesAPQ
	cfg.SourceSchemas["products"] = s
	rec := newRecorder()
	inv := newInvoker(t, cfg, transport.WithShadowPublisher(rec))
	for i := range 4 {
		peer.apq.Forget() // each call's first side to arrive is refused
		postAPQ(t, inv, strings.Replace(apqBody, `"upc":"1"`, fmt.Sprintf(`"upc":"%d"`, i), 1))
		if equal := <-rec.compared; !equal {
			t.Errorf("call %d: the two sides compared unequal", i)
		}
	}
	inv.Close()
	forms := map[string]int{}
	for _, w := range peer.wire(0) {
		switch {
		case strings.Contains(w, `"query"`) && strings.Contains(w, `"sha256Hash"`):
			forms["text and hash"]++
		case strings.Contains(w, `"sha256Hash"`):
			forms["hash"]++
		}
	}
	if forms["hash"] != 8 || forms["text and hash"] < 4 {
		t.Errorf("the schema received %v, want each of 8 requests by hash, and at least the 4 first ones with text", forms)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.mismatches) != 0 {
		t.Errorf("shadow published %d mismatches, want none", len(rec.mismatches))
	}
}

// persistedOnPage returns what the status page (JSON) says of products'
// persisted queries: on, off and the requests by hash.
func persistedOnPage(t *testing.T, inv *transport.Transport) string {
	t.Helper()
	rec := httptest.NewRecorder()
	inv.StatusHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
	var page struct {
		Schemas []struct {
			Name             string
			PersistedQueries *struct {
				On     bool
				Off    string
				ByHash int `json:"by_hash"`
			} `json:"persisted_queries"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Schemas) != 1 || page.Schemas[0].PersistedQueries == nil {
		t.Fatalf("status page: %v: %s", err, rec.Body)
	}
	p := page.Schemas[0].PersistedQueries
	return fmt.Sprintf("on=%t off=%s by_hash=%d", p.On, p.Off, p.ByHash)
}

// TestPersistedQueriesBreakerAndLimitWire, on every path and engine: a
// refusal by hash is an answer, not a failure: calls refused and resent
// again and again leave the circuit breaker closed; and the resend takes a
// turn of the rate limit, since it reaches the schema: with a burst of two
// a refused call spends both, and the next call is refused unsent; with a
// burst of one the resend itself is refused.
func TestPersistedQueriesBreakerAndLimitWire(t *testing.T) {
	for _, path := range paths {
		t.Run(string(path), func(t *testing.T) {
			peer := newAPQPeer(t, apqserve.On)
			inv := newInvoker(t, apqConfig(path, peer.URL(), func(s *env.SourceSchema) {
				s.CircuitBreaker = env.BreakerSettings{Enabled: env.Enabled, MinRequests: 4, FailureRatio: 0.5, Window: time.Minute, OpenFor: time.Minute}
			}))
			for range 10 {
				peer.apq.Forget()
				postAPQ(t, inv, apqBody)
			}
			if got := len(peer.Requests()); got != 20 {
				t.Errorf("10 calls refused by hash: the schema got %d requests, want 20", got)
			}
			if _, err := call(inv, apqBody); err != nil {
				t.Errorf("after 10 refusals by hash: %v; want the breaker closed", err)
			}

			for _, burst := range []int{2, 1} {
				limited := newAPQPeer(t, apqserve.On)
				inv := newInvoker(t, apqConfig(path, limited.URL(), func(s *env.SourceSchema) {
					s.RateLimit = env.RateLimitSettings{RequestsPerSecond: 0.001, Burst: burst}
				}))
				_, err := call(inv, apqBody)
				switch burst {
				case 2:
					if err != nil {
						t.Fatalf("burst 2: the refused call and its resend: %v", err)
					}
					if _, err := call(inv, apqBody); !errors.Is(err, fault.ErrRateLimited) {
						t.Errorf("burst 2, the next call: %v, want fault.ErrRateLimited: the resend took the second turn", err)
					}
				case 1:
					if !errors.Is(err, fault.ErrRateLimited) {
						t.Errorf("burst 1: %v, want fault.ErrRateLimited: the resend needs a turn of its own", err)
					}
				}
				checkWire(t, limited, 0, fmt.Sprintf("burst %d", burst), []string{"POST " + apqHashOnly, "POST " + apqWithHash}[:burst]...)
			}
		})
	}
}
