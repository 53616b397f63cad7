//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jensneuse/abstractlogger"
	"github.com/wundergraph/graphql-go-tools/execution/federationtesting/gateway"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

var (
	realBenchDown           = flag.String("realbench.down", "", "run TestRealGatewayDown: the `schema` (accounts, products, reviews or inventory) whose listener closes mid-run")
	realBenchDownStaleError = flag.Duration("realbench.down.stale", 10*time.Minute, "response_cache.stale_if_error of the cache side of TestRealGatewayDown")
)

// realDownCacheControl is what the replayed schemas answer in
// TestRealGatewayDown: a lifetime short enough that, within a second of
// the close, every entry is past it, so that what answers is
// stale-if-error and not a fresh hit.
const realDownCacheControl = "public, max-age=1"

// TestRealGatewayDown is a benchmark, not a test; it runs only with
// -realbench.down SCHEMA. graphql-go-tools' federation gateway over the
// benchmark's replayed source schemas (answering "public, max-age=1"), the
// schema SCHEMA reached through a reverse proxy of this process whose
// listener it closes mid-run: a source schema down. Two sides, each round
// in turn with a fresh gateway and proxy: sockets:h1 (no cache) and
// sockets:h1+cache (the response cache on, shared, in memory, with
// response_cache.stale_if_error -realbench.down.stale); both with the
// circuit breaker on (its defaults). -realbench.vus users (each its own
// Authorization, and every request its own X-Request-Id, named in every
// fetch's headers) send the deep-recursion query in a closed loop for
// -realbench.warmup with the schema up, then the proxy closes (its
// listener and connections), and they go on for -realbench.duration. A
// gateway request is answered when its answer is 200 with data and no
// errors; the table gives, after the close, the answered and failed
// requests and their latencies, median [min–max] over the rounds. It
// asserts no figure.
//
//	cd e2e && go test -run TestRealGatewayDown -v -args -realbench.down inventory -realbench.vus 8 -realbench.rounds 4 -realbench.warmup 3s -realbench.duration 5s
func TestRealGatewayDown(t *testing.T) {
	if *realBenchDown == "" {
		t.Skip("a benchmark: run with -args -realbench.down SCHEMA")
	}
	bin := buildFusionTransport(t)
	urls := startBenchSchemas(t, bin, *realBenchLatency, true, realDownCacheControl)
	if _, ok := urls[*realBenchDown]; !ok {
		t.Fatalf("-realbench.down %q: not one of the schemas %v", *realBenchDown, urls)
	}
	sides := []string{"sockets:h1", "sockets:h1+cache"}
	samples := map[string][]downSample{}
	began := time.Now()
	for round := 1; round <= *realBenchRounds; round++ {
		for _, side := range sides {
			s := runDownSide(t, urls, side)
			t.Logf("round %d/%d %s: before the close %d answered, %d failed; after: %d answered, %d failed; answered p50 %.2f ms p95 %.2f max %.2f; failed p50 %.2f ms p95 %.2f max %.2f",
				round, *realBenchRounds, side, s.before.ok, s.before.failed, s.after.ok, s.after.failed,
				s.after.okLat.p50, s.after.okLat.p95, s.after.okLat.max, s.after.failedLat.p50, s.after.failedLat.p95, s.after.failedLat.max)
			samples[side] = append(samples[side], s)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "Schema down (graphql-go-tools federation gateway), %s: %s's listener closed after %s of load; %d VUs, %d round(s), %s measured after the close; replayed source schemas answering %q; circuit breaker on (defaults); the +cache side with response_cache.stale_if_error %s. Median [min–max] over the rounds.\n",
		began.UTC().Format("2006-01-02 15:04 MST"), *realBenchDown, *realBenchWarmup, *realBenchVUs, *realBenchRounds, *realBenchDuration, realDownCacheControl, *realBenchDownStaleError)
	fmt.Fprintf(&out, "Machine: %d CPUs, %s; source schemas, gateway and load share them. Run time: %s.\n\n", runtime.NumCPU(), runtime.Version(), time.Since(began).Round(time.Second))
	writeDownTable(&out, sides, samples)
	fmt.Println(out.String())
}

// downSample is one side's run: the gateway requests before and after
// the close, and the calls to the schema that went down after it, as the
// engine's subgraph client saw them (from the call to its answer's
// headers).
type downSample struct{ before, after, calls downCounts }

// downCounts are gateway requests, answered and failed, and their
// latencies in ms.
type downCounts struct {
	slowestAt        time.Duration // when the slowest (answered or not) began, after the close
	ok, failed       int
	okLat, failedLat latencies
	okMS, failedMS   []float64
}

type latencies struct{ p50, p95, p99, max float64 }

func latenciesOf(ms []float64) latencies {
	if len(ms) == 0 {
		return latencies{}
	}
	slices.Sort(ms)
	at := func(q float64) float64 { return ms[min(len(ms)-1, int(q*float64(len(ms))))] }
	return latencies{at(0.50), at(0.95), at(0.99), ms[len(ms)-1]}
}

// runDownSide runs one side: a proxy in front of the schema that goes
// down, a transport and a gateway, the load, the close.
func runDownSide(t *testing.T, urls map[string]string, side string) downSample {
	t.Helper()
	target, err := url.Parse(urls[*realBenchDown])
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host}))
	defer proxy.Close()
	schemaURLs := map[string]string{}
	for name, u := range urls {
		schemaURLs[name] = u
	}
	schemaURLs[*realBenchDown] = proxy.URL + target.Path

	routerConfig := benchmarkRouterConfig
	for name, u := range schemaURLs {
		routerConfig = bytes.ReplaceAll(routerConfig, []byte("http://"+name+"-url-placeholder"), []byte(u))
	}
	routerConfig = withHeaderTemplate(t, routerConfig, "Authorization", "X-Request-Id")

	cfg := env.Config{
		Path:           env.PathSockets,
		ForwardHeaders: []string{"Authorization", "X-Request-Id"},
		Defaults:       env.Settings{Engine: env.EngineH1, CircuitBreaker: env.BreakerSettings{Enabled: env.Enabled}},
		SourceSchemas:  map[string]env.SourceSchema{},
	}
	for name, u := range schemaURLs {
		s := env.SourceSchema{URL: u}
		if strings.HasSuffix(side, "+cache") {
			s.ResponseCache = sharedCache()
			s.ResponseCache.StaleIfError = *realBenchDownStaleError
		}
		cfg.SourceSchemas[name] = s
	}
	inv, err := transport.New(cfg, transport.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	var (
		closed atomic.Bool
		stop   atomic.Bool
		mu     sync.Mutex
		sample downSample
		seq    atomic.Int64
		wg     sync.WaitGroup
		// closedAt is when the proxy closed, written before closed is
		// set; slowest is the slowest call to it since (under mu).
		closedAt time.Time
		slowest  float64
	)
	record := func(c *downCounts, ok bool, ms float64) {
		mu.Lock()
		defer mu.Unlock()
		if ok {
			c.ok++
			c.okMS = append(c.okMS, ms)
		} else {
			c.failed++
			c.failedMS = append(c.failedMS, ms)
		}
	}
	next := orDefault(inv.Client().Transport)
	client := &http.Client{Transport: transportFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host != target.Host && r.URL.Host != strings.TrimPrefix(proxy.URL, "http://") {
			return next.RoundTrip(r)
		}
		after := closed.Load()
		start := time.Now()
		resp, err := next.RoundTrip(r)
		if after && closed.Load() {
			ms := float64(time.Since(start)) / 1e6
			record(&sample.calls, err == nil && resp.StatusCode == http.StatusOK, ms)
			mu.Lock()
			if ms > slowest {
				slowest, sample.calls.slowestAt = ms, start.Sub(closedAt)
			}
			mu.Unlock()
		}
		return resp, err
	})}
	gw, err := gateway.NewGateway(routerConfig, client, abstractlogger.NoopLogger, false)
	if err != nil {
		t.Fatalf("gateway.NewGateway: %v", err)
	}
	srv := httptest.NewServer(transport.GatewayRequestHandler(gw))
	defer srv.Close()
	checkDeepRecursionAnswer(t, srv.URL, side)

	body := deepRecursionBody()
	users := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *realBenchVUs}}
	defer users.CloseIdleConnections()
	for vu := range *realBenchVUs {
		wg.Go(func() {
			for !stop.Load() {
				after := closed.Load()
				start := time.Now()
				ok := askDown(users, srv.URL, body, fmt.Sprintf("Bearer vu%03d", vu), fmt.Sprintf("down-%d", seq.Add(1)))
				ms := float64(time.Since(start)) / 1e6
				if after != closed.Load() {
					continue // under way at the close: neither before nor after
				}
				c := &sample.before
				if after {
					c = &sample.after
				}
				record(c, ok, ms)
			}
		})
	}
	time.Sleep(*realBenchWarmup)
	// The listener first, so that no connection is accepted after
	// the open ones are closed.
	proxy.Listener.Close()
	proxy.CloseClientConnections()
	closedAt = time.Now()
	closed.Store(true)
	time.Sleep(*realBenchDuration)
	stop.Store(true)
	wg.Wait()
	for _, c := range []*downCounts{&sample.before, &sample.after, &sample.calls} {
		c.okLat, c.failedLat = latenciesOf(c.okMS), latenciesOf(c.failedMS)
	}
	return sample
}

// askDown sends the query as a user; true if the answer is 200 with data
// and no errors.
func askDown(client *http.Client, gw string, body []byte, auth, id string) bool {
	req, err := http.NewRequest(http.MethodPost, gw, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	req.Header.Set("X-Request-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return false
	}
	var got struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []json.RawMessage          `json:"errors"`
	}
	return json.Unmarshal(b, &got) == nil && len(got.Data) > 0 && len(got.Errors) == 0
}

// writeDownTable writes the medians [min–max] per side of the figures
// after the close.
func writeDownTable(w io.Writer, sides []string, samples map[string][]downSample) {
	rows := []struct {
		name string
		get  func(downSample) float64
	}{
		{"gateway requests before the close", func(s downSample) float64 { return float64(s.before.ok + s.before.failed) }},
		{"answered before the close, %", func(s downSample) float64 { return pct(s.before.ok, s.before.failed) }},
		{"gateway requests after the close", func(s downSample) float64 { return float64(s.after.ok + s.after.failed) }},
		{"answered after the close, %", func(s downSample) float64 { return pct(s.after.ok, s.after.failed) }},
		{"failed after the close", func(s downSample) float64 { return float64(s.after.failed) }},
		{"answered after the close: p50 ms", func(s downSample) float64 { return s.after.okLat.p50 }},
		{"answered after the close: p95 ms", func(s downSample) float64 { return s.after.okLat.p95 }},
		{"answered after the close: p99 ms", func(s downSample) float64 { return s.after.okLat.p99 }},
		{"answered after the close: max ms", func(s downSample) float64 { return s.after.okLat.max }},
		{"failed after the close: p50 ms", func(s downSample) float64 { return s.after.failedLat.p50 }},
		{"failed after the close: p95 ms", func(s downSample) float64 { return s.after.failedLat.p95 }},
		{"failed after the close: p99 ms", func(s downSample) float64 { return s.after.failedLat.p99 }},
		{"failed after the close: max ms", func(s downSample) float64 { return s.after.failedLat.max }},
		{"calls to the schema down, after the close", func(s downSample) float64 { return float64(s.calls.ok + s.calls.failed) }},
		{"… answered 200 (stale-if-error)", func(s downSample) float64 { return float64(s.calls.ok) }},
		{"… answered: p50 ms", func(s downSample) float64 { return s.calls.okLat.p50 }},
		{"… answered: p99 ms", func(s downSample) float64 { return s.calls.okLat.p99 }},
		{"… answered: max ms", func(s downSample) float64 { return s.calls.okLat.max }},
		{"… failed (refused, by the breaker once open)", func(s downSample) float64 { return float64(s.calls.failed) }},
		{"… failed: p50 ms", func(s downSample) float64 { return s.calls.failedLat.p50 }},
		{"… failed: p99 ms", func(s downSample) float64 { return s.calls.failedLat.p99 }},
		{"… failed: max ms", func(s downSample) float64 { return s.calls.failedLat.max }},
		{"… the slowest began, ms after the close", func(s downSample) float64 { return float64(s.calls.slowestAt) / 1e6 }},
	}
	fmt.Fprintf(w, "| Metric | %s |\n|---|%s\n", strings.Join(sides, " | "), strings.Repeat("---|", len(sides)))
	for _, r := range rows {
		line := "| " + r.name + " |"
		for _, side := range sides {
			var v []float64
			for _, s := range samples[side] {
				v = append(v, r.get(s))
			}
			slices.Sort(v)
			line += fmt.Sprintf(" %.4g [%.4g–%.4g] |", median(v), v[0], v[len(v)-1])
		}
		fmt.Fprintln(w, line)
	}
}

func pct(ok, failed int) float64 {
	if ok+failed == 0 {
		return 0
	}
	return 100 * float64(ok) / float64(ok+failed)
}
