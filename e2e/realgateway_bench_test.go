//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jensneuse/abstractlogger"
	"github.com/wundergraph/graphql-go-tools/execution/federationtesting/gateway"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
	"github.com/fusiongo/transport/internal/testsupport/wirecount"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

// benchmarkRouterConfig is the benchmark's four source schemas (the SDLs of
// fusion-transport's embedded schemas, testdata/benchmark/*.graphql)
// composed by wgc, as Cosmo composes a supergraph:
//
//	cd testdata/benchmark && npx -y wgc@0.112.7 router compose -i graph.yaml -o config.json
//
// Its routing URLs are placeholders, replaced by the schemas' URLs.
//
//go:embed testdata/benchmark/config.json
var benchmarkRouterConfig []byte

var (
	realBench          = flag.Bool("realbench", false, "run TestRealGatewayBench: graphql-go-tools' federation gateway over the benchmark's source schemas under load")
	realBenchRounds    = flag.Int("realbench.rounds", 2, "rounds; each runs every side in turn (ABCD...)")
	realBenchDuration  = flag.Duration("realbench.duration", 10*time.Second, "measured window of each run")
	realBenchWarmup    = flag.Duration("realbench.warmup", 2*time.Second, "warm-up before each window")
	realBenchVUs       = flag.Int("realbench.vus", 50, "virtual users of the closed-loop load")
	realBenchLatency   = flag.Duration("realbench.latency", 0, "delay of every source schema answer (constant-latency: 4ms)")
	realBenchSubgraphs = flag.String("realbench.subgraphs", "replay", "source schemas: replay (fusion-transport schemas -replay -learn: each request's answer recorded from the embedded schemas on first sight, replayed after) or schemas (the embedded schemas executing every request)")
	realBenchDistinct  = flag.Bool("realbench.distinct", false, "every gateway request its own X-Request-Id (fusion-transport load -distinct), which the gateway forwards to every source schema, so that its deduplication (keyed on the subgraph request with its headers) collapses none, as with real traffic")
	realBenchProfile   = flag.String("realbench.profile", "", "write a CPU profile of the gateway (this process) for each side's measured window of the last round to `dir`/SIDE.cpu.pprof (':' written '-')")
	realBenchSides     = flag.String("realbench.sides", "default,legacy,sockets:nethttp,sockets:h1", "sides, comma-separated: default (the engine's own http.Client), legacy, sockets:nethttp, sockets:h1, the last three also with +cache (the transport's response cache on) or +wholecache (the same with its entity path off: whole-answer caching alone), and with +apq (automatic persisted queries on for every source schema, which the schemas serve) after it; the first is the one the others are compared with (with -realbench.cache, unless set: "+realCacheSides+")")
	realBenchCache     = flag.Bool("realbench.cache", false, "the cache mode: the source schemas answer Cache-Control: "+realCacheControl+", every virtual user sends its own Authorization (fusion-transport load -users), which the transport forwards and the router config names in every fetch's headers; the table adds the calls that reached the source schemas per request and the hit ratio")
)

// The cache mode's source schema answers and default sides: the sockets
// path (h1) without and with the response cache, and legacy without, the
// baseline users have today.
const (
	realCacheControl = "public, max-age=60"
	realCacheSides   = "legacy,sockets:h1,sockets:h1+cache"
)

// TestRealGatewayBench is a benchmark, not a test; it runs only with
// -realbench. It runs graphql-go-tools' federation gateway (the engine
// Cosmo Router embeds; federationtesting/gateway) in this process over the
// benchmark's four source schemas (fusion-transport schemas, a child
// process, by default replaying their answers), composed by wgc (benchmarkRouterConfig), with the deep-recursion
// query under fusion-transport's closed-loop load (a child process), as
// fusion-transport bench does with its own gateway. Per round it runs a
// fresh gateway per side, the sides in turn, each with its subgraph
// client: the engine's default (an http.Client as graphql-go-tools'
// NewFederationEngineConfigFactory builds it), or the transport's
// Client() on legacy, sockets:nethttp or sockets:h1. It prints a table of
// medians over the rounds with [min–max]: req/s, latencies, the gateway's
// CPU per request (this process's, getrusage: the schemas and the load run
// in other processes), subgraph calls per request. It asserts no figure.
//
// With -realbench.cache the source schemas answer
// "Cache-Control: public, max-age=60", each virtual user sends its own
// Authorization (forwarded by the transport, named in every fetch's
// headers so that the engine merges no two users' fetches), the sides
// default to legacy, sockets:h1 and sockets:h1+cache (the transport's
// response cache on, in memory, shared), and the table adds the calls that
// reached the source schemas (their own counts) per gateway request and
// the hit ratio (1 - calls reaching them / calls the engine made), and the
// ratio of each +cache side to the same side without.
//
//	cd e2e && go test -run TestRealGatewayBench -timeout 30m -v -args -realbench
//	cd e2e && go test -run TestRealGatewayBench -v -args -realbench -realbench.latency 4ms
//	cd e2e && go test -run TestRealGatewayBench -timeout 30m -v -args -realbench -realbench.cache -realbench.distinct -realbench.rounds 4
func TestRealGatewayBench(t *testing.T) {
	if !*realBench {
		t.Skip("a benchmark: run with -args -realbench")
	}
	list := *realBenchSides
	if *realBenchCache && !flagSet("realbench.sides") {
		list = realCacheSides
	}
	sides := strings.Split(list, ",")
	for _, s := range sides {
		if base, _, _, _ := sideParts(s); !slices.Contains([]string{"legacy", "sockets:nethttp", "sockets:h1"}, base) && s != "default" {
			t.Fatalf("-realbench.sides: unknown side %q", s)
		}
	}
	bin := buildFusionTransport(t)
	if *realBenchSubgraphs != "replay" && *realBenchSubgraphs != "schemas" {
		t.Fatalf("-realbench.subgraphs %q: want replay or schemas", *realBenchSubgraphs)
	}
	cc := ""
	if *realBenchCache {
		cc = realCacheControl
	}
	urls := startBenchSchemas(t, bin, *realBenchLatency, *realBenchSubgraphs == "replay", cc)
	routerConfig := benchmarkRouterConfig
	for name, u := range urls {
		routerConfig = bytes.ReplaceAll(routerConfig, []byte("http://"+name+"-url-placeholder"), []byte(u))
	}
	// As a Cosmo header rule forwards a client header: the engine renders
	// it into each fetch's input, from which it keys its deduplication, so
	// requests with distinct ids, or of distinct users, are never
	// collapsed (TestConcurrentUsers shows both on the wire).
	var templated []string
	if *realBenchDistinct {
		templated = append(templated, "X-Request-Id")
	}
	if *realBenchCache {
		templated = append(templated, "Authorization")
	}
	if templated != nil {
		routerConfig = withHeaderTemplate(t, routerConfig, templated...)
	}

	samples := map[string][]realSample{}
	began := time.Now()
	for round := 1; round <= *realBenchRounds; round++ {
		for _, side := range sides {
			profile := ""
			if *realBenchProfile != "" && round == *realBenchRounds {
				profile = filepath.Join(*realBenchProfile, strings.ReplaceAll(side, ":", "-")+".cpu.pprof")
			}
			s := runRealSide(t, bin, routerConfig, urls, side, profile)
			t.Logf("round %d/%d %s: %.0f req/s, p95 %.1f ms, %.3f ms CPU/request, %.1f calls one at a time, %.2f calls/request under load (%.3f reaching the source schemas, hit ratio %.3f), %.2f ms in flight per call, %d errors",
				round, *realBenchRounds, side, s.rps, s.p95, s.cpuMS, s.planCalls, s.calls, s.reached, s.hitRatio, s.callMS, s.errors)
			samples[side] = append(samples[side], s)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "Real-gateway benchmark (graphql-go-tools federation gateway), %s: %d VUs, %d round(s) of %s after %s warm-up per side; source schemas: %s with latency %s; median [min–max] over the rounds.\n",
		began.UTC().Format("2006-01-02 15:04 MST"), *realBenchVUs, *realBenchRounds, *realBenchDuration, *realBenchWarmup, subgraphsNote(*realBenchSubgraphs), *realBenchLatency)
	if *realBenchDistinct {
		fmt.Fprintf(&out, "Requests: distinct (every one its own X-Request-Id, forwarded to every source schema by the gateway).\n")
	}
	if *realBenchCache {
		fmt.Fprintf(&out, "Cache mode: the source schemas answer Cache-Control: %s; every virtual user sends its own Authorization, forwarded to every source schema; the sides named +cache run the transport's response cache (memory, shared).\n", realCacheControl)
	}
	fmt.Fprintf(&out, "Machine: %d CPUs, %s %s/%s; source schemas, gateway and load share them. Run time: %s.\n\n",
		runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, time.Since(began).Round(time.Second))
	writeRealTable(&out, sides, samples, *realBenchCache)
	fmt.Println(out.String())
}

// sideParts takes a side apart: its path, and its suffixes, +cache (the
// response cache on) or +wholecache (the same with its entity path off,
// wholeAnswersOnly: whole-answer caching alone), then +apq (automatic
// persisted queries on).
func sideParts(side string) (path string, cache, whole, apq bool) {
	path, apq = strings.CutSuffix(side, "+apq")
	if path, whole = strings.CutSuffix(path, "+wholecache"); whole {
		return path, true, true, apq
	}
	path, cache = strings.CutSuffix(path, "+cache")
	return path, cache, false, apq
}

// flagSet reports whether the flag name was set on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func subgraphsNote(s string) string {
	if s == "schemas" {
		return "the embedded schemas (graphql-go), executing every request"
	}
	return "replay (the embedded schemas' answers recorded on first sight, byte for byte)"
}

// realSample is one run of one side.
type realSample struct {
	rps, p50, p95, p99 float64
	cpuMS, calls       float64
	callMS             float64 // mean time a subgraph call was in flight under load
	bytesPerCall       float64 // request bytes written to the subgraphs per call, heads and bodies
	planCalls          float64 // of one request alone, before the load
	reached            float64 // calls that reached the source schemas (their counts) per request under load
	hitRatio           float64 // 1 - reached/calls, within [0, 1]
	errors             int64
}

// countingTransport counts the subgraph calls of a client and the time
// each is in flight: from RoundTrip to its body's Close (the engine reads
// every body to its end, then closes it). The engine deduplicates a
// subgraph request only while an identical one is in flight, so that time
// decides how many calls identical gateway requests make.
type countingTransport struct {
	next   http.RoundTripper
	calls  *atomic.Int64
	flight *atomic.Int64 // nanoseconds in flight, summed over the calls whose body closed
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	start := time.Now()
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		c.flight.Add(int64(time.Since(start)))
		return nil, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, start: start, flight: c.flight}
	return resp, nil
}

// timedBody adds the time since start to flight on its first Close.
type timedBody struct {
	io.ReadCloser
	start  time.Time
	flight *atomic.Int64
	closed atomic.Bool
}

func (b *timedBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.flight.Add(int64(time.Since(b.start)))
	}
	return b.ReadCloser.Close()
}

// runRealSide starts a gateway with side's client, measures it under load
// and stops it.
func runRealSide(t *testing.T, bin string, routerConfig []byte, urls map[string]string, side, profile string) realSample {
	t.Helper()
	var client *http.Client
	wire := &wirecount.Bytes{} // every side counts its request bytes alike
	switch side {
	case "default":
		// As graphql-go-tools' NewFederationEngineConfigFactory builds its
		// default client.
		tr := &http.Transport{MaxIdleConnsPerHost: 1024, DialContext: wire.Dial}
		defer tr.CloseIdleConnections()
		client = &http.Client{Timeout: 10 * time.Second, Transport: tr}
	default:
		cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{}}
		opts := []transport.Option{transport.WithLookupEnv(func(string) (string, bool) { return "", false })}
		path, cache, whole, apq := sideParts(side)
		for name, u := range urls {
			s := env.SourceSchema{URL: u}
			if cache {
				s.ResponseCache = sharedCache()
			}
			if whole {
				opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{
					Middleware: []func(http.RoundTripper) http.RoundTripper{wholeAnswersOnly},
				}))
			}
			cfg.SourceSchemas[name] = s
			opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{Dial: wire.Dial}))
		}
		if *realBenchCache {
			cfg.ForwardHeaders = append(cfg.ForwardHeaders, "Authorization")
		}
		if *realBenchDistinct {
			cfg.ForwardHeaders = append(cfg.ForwardHeaders, "X-Request-Id")
		}
		if engine, ok := strings.CutPrefix(path, "sockets:"); ok {
			cfg.Path = env.PathSockets
			cfg.Defaults.Engine = engine
		}
		if apq {
			cfg.Defaults.PersistedQueries.Mode = env.PersistedQueriesAPQ
		}
		inv, err := transport.New(cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer inv.Close()
		client = inv.Client()
	}
	var calls, requests, flight atomic.Int64
	client = &http.Client{Transport: countingTransport{next: orDefault(client.Transport), calls: &calls, flight: &flight}, Timeout: client.Timeout}
	gw, err := gateway.NewGateway(routerConfig, client, abstractlogger.NoopLogger, false)
	if err != nil {
		t.Fatalf("gateway.NewGateway: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw.ServeHTTP(w, r)
		requests.Add(1)
	}))
	defer srv.Close()
	// The plan's calls, of requests one at a time after a first (which
	// plans the query): 8 or 9 in graphql-go-tools, whose loader
	// deduplicates identical fetches in flight at once (also across
	// requests, so that under load there are fewer).
	checkDeepRecursionAnswer(t, srv.URL, side)
	const alone = 5
	before := calls.Load()
	for range alone {
		checkDeepRecursionAnswer(t, srv.URL, side)
	}
	planCalls := float64(calls.Load()-before) / alone

	var cpu0, calls0, req0, flight0, cpu1, calls1, req1, flight1, reached0, reached1 int64
	var bytes0, bytes1 uint64
	var prof *os.File
	var countErr error
	res := runBenchLoad(t, bin, srv.URL,
		func() {
			cpu0, calls0, req0, flight0 = rawhttp.CPUTime(), calls.Load(), requests.Load(), flight.Load()
			reached0, countErr = schemaCalls(urls)
			bytes0 = wire.Total()
			if profile != "" {
				prof = startCPUProfile(t, profile)
			}
		},
		func() {
			cpu1, calls1, req1, flight1 = rawhttp.CPUTime(), calls.Load(), requests.Load(), flight.Load()
			var err error
			reached1, err = schemaCalls(urls)
			countErr = cmp.Or(countErr, err)
			bytes1 = wire.Total()
			if prof != nil {
				pprof.StopCPUProfile()
				prof.Close()
			}
		})
	if countErr != nil {
		t.Fatalf("%s: %v", side, countErr)
	}
	n := req1 - req0
	if n == 0 {
		t.Fatalf("%s: the gateway answered no request in the window (load: %+v)", side, res)
	}
	sample := realSample{
		rps: res.RequestsPerSecond, p50: res.P50, p95: res.P95, p99: res.P99, errors: res.Errors,
		cpuMS: float64(cpu1-cpu0) / float64(n) / 1e6, calls: float64(calls1-calls0) / float64(n),
		planCalls: planCalls,
	}
	sample.reached = float64(reached1-reached0) / float64(n)
	if c := calls1 - calls0; c > 0 {
		sample.callMS = float64(flight1-flight0) / float64(c) / 1e6
		sample.bytesPerCall = float64(bytes1-bytes0) / float64(c)
		// The engine counts a call when it makes it, a schema when it
		// arrives, a moment later: at the window's edges a few calls fall
		// on one side only.
		sample.hitRatio = min(max(1-float64(reached1-reached0)/float64(c), 0), 1)
	}
	return sample
}

// schemaCalls sums the requests the source schemas at urls have received,
// as each of fusion-transport schemas' servers counts them at
// /debug/calls (its schemas.CallsPath).
func schemaCalls(urls map[string]string) (int64, error) {
	var sum int64
	for name, u := range urls {
		resp, err := http.Get(strings.TrimSuffix(u, "/graphql") + "/debug/calls")
		if err != nil {
			return 0, fmt.Errorf("%s's call count: %w", name, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s's call count: %d %q %v", name, resp.StatusCode, b, err)
		}
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s's call count: %w", name, err)
		}
		sum += n
	}
	return sum, nil
}

// startCPUProfile starts a CPU profile of this process into the file at
// path; the caller stops it and closes the file.
func startCPUProfile(t *testing.T, path string) *os.File {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		t.Fatalf("CPU profile: %v", err)
	}
	return f
}

func orDefault(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}

// checkDeepRecursionAnswer sends the query once and wants data without
// errors: the load counts a 200 as an answer, and a gateway that answered
// errors would be measured doing less.
func checkDeepRecursionAnswer(t *testing.T, url, side string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(deepRecursionBody()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var got struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []json.RawMessage          `json:"errors"`
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || len(got.Errors) > 0 || len(got.Data) == 0 {
		t.Fatalf("%s: the gateway's answer to the deep-recursion query: %d %.500s", side, resp.StatusCode, body)
	}
}

// deepRecursionBody is the body the load sends: the benchmark's query.
func deepRecursionBody() []byte {
	q, err := os.ReadFile(filepath.Join("..", "cmd", "fusion-transport", "internal", "load", "deep-recursion.graphql"))
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(map[string]string{"query": string(q), "operationName": "TestQuery"})
	return b
}

// buildFusionTransport builds the fusion-transport binary of the root module.
func buildFusionTransport(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fusion-transport")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/fusion-transport")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startBenchSchemas starts "fusion-transport schemas" and returns their
// URLs; cacheControl, if not empty, is on every answer.
func startBenchSchemas(t *testing.T, bin string, latency time.Duration, replayed bool, cacheControl string) map[string]string {
	t.Helper()
	args := []string{"schemas"}
	if replayed {
		args = append(args, "-replay", "-learn")
	}
	if latency > 0 {
		args = append(args, "-latency", latency.String())
	}
	if cacheControl != "" {
		args = append(args, "-cache-control", cacheControl)
	}
	return wiretest.StartSchemaProcess(t, exec.Command(bin, args...), 4)
}

// loadResult is the load command's result line (its load.Result).
type loadResult struct {
	Requests          int64   `json:"requests"`
	Errors            int64   `json:"errors"`
	RequestsPerSecond float64 `json:"req_per_s"`
	P50               float64 `json:"p50_ms"`
	P95               float64 `json:"p95_ms"`
	P99               float64 `json:"p99_ms"`
	FirstError        string  `json:"first_error"`
}

// runBenchLoad runs "fusion-transport load" against url, calling onMeasure
// and onWindowEnd when it says that the measured window starts and ends
// (its "load: measuring" and "load: window ended" lines).
func runBenchLoad(t *testing.T, bin, url string, onMeasure, onWindowEnd func()) loadResult {
	t.Helper()
	args := []string{"load", "-url", url + "/graphql", "-vus", fmt.Sprint(*realBenchVUs),
		"-duration", realBenchDuration.String(), "-warmup", realBenchWarmup.String()}
	if *realBenchDistinct {
		args = append(args, "-distinct")
	}
	if *realBenchCache {
		args = append(args, "-users")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var other strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "load: measuring"):
			onMeasure()
		case line == "load: window ended":
			onWindowEnd()
		default:
			other.WriteString(line + "\n")
		}
	}
	waitErr := cmd.Wait()
	var res loadResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		t.Fatalf("load: %v; no result line (%v): %s", waitErr, err, other.String())
	}
	return res
}

// writeRealTable writes the medians [min–max] per side and each side's
// ratio of medians to the first, and of each +cache side to the same side
// without (when that is not the first); with cache, the cache mode's rows
// too.
func writeRealTable(w io.Writer, sides []string, samples map[string][]realSample, cache bool) {
	type row struct {
		name string
		get  func(realSample) float64
		unit string
	}
	rows := []row{
		{"req/s", func(s realSample) float64 { return s.rps }, ""},
		{"p50 latency", func(s realSample) float64 { return s.p50 }, " ms"},
		{"p95 latency", func(s realSample) float64 { return s.p95 }, " ms"},
		{"p99 latency", func(s realSample) float64 { return s.p99 }, " ms"},
		{"gateway CPU/request", func(s realSample) float64 { return s.cpuMS }, " ms"},
		{"subgraph calls/request, one at a time", func(s realSample) float64 { return s.planCalls }, ""},
		{"subgraph calls/request under load", func(s realSample) float64 { return s.calls }, ""},
		{"subgraph call in flight under load, mean", func(s realSample) float64 { return s.callMS }, " ms"},
		{"request bytes/subgraph call", func(s realSample) float64 { return s.bytesPerCall }, " B"},
		{"load errors", func(s realSample) float64 { return float64(s.errors) }, ""},
	}
	if cache {
		rows = slices.Insert(rows, 7,
			row{"subgraph calls/request reaching the source schemas", func(s realSample) float64 { return s.reached }, ""},
			row{"response cache hit ratio", func(s realSample) float64 { return s.hitRatio }, ""})
	}
	type ratio struct{ side, base string }
	var ratios []ratio
	for _, s := range sides[1:] {
		ratios = append(ratios, ratio{s, sides[0]})
	}
	for _, s := range sides[1:] {
		if base, cache, _, apq := sideParts(s); cache && !apq && base != sides[0] && slices.Contains(sides, base) {
			ratios = append(ratios, ratio{s, base})
		}
	}
	header := "| Metric |"
	sep := "|---|"
	for _, s := range sides {
		header += " " + s + " |"
		sep += "---|"
	}
	for _, r := range ratios {
		header += " " + r.side + "/" + r.base + " |"
		sep += "---|"
	}
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, sep)
	for _, r := range rows {
		line := "| " + r.name + " |"
		med := map[string]float64{}
		for _, s := range sides {
			var v []float64
			for _, x := range samples[s] {
				v = append(v, r.get(x))
			}
			slices.Sort(v)
			m := median(v)
			med[s] = m
			cell := fmt.Sprintf("%.3g%s", m, r.unit)
			if r.name == "req/s" || r.unit == " B" {
				cell = fmt.Sprintf("%.0f%s", m, r.unit)
			}
			if v[0] != v[len(v)-1] {
				cell += fmt.Sprintf(" [%.4g–%.4g]", v[0], v[len(v)-1])
			}
			line += " " + cell + " |"
		}
		for _, ra := range ratios {
			switch {
			case r.name == "response cache hit ratio":
				line += " |" // a ratio of two shares says nothing
			case med[ra.base] == 0:
				line += " – |"
			default:
				line += fmt.Sprintf(" %.3f |", med[ra.side]/med[ra.base])
			}
		}
		fmt.Fprintln(w, line)
	}
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
