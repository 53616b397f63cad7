//go:build linux

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/corpus"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/rawhttp"
	"github.com/fusiongo/transport/internal/testsupport/wirecount"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
)

var (
	apqBench       = flag.Bool("apqbench", false, "run TestAPQCorpusBench: the built-in corpus with and without automatic persisted queries, request bytes and client CPU per call")
	apqBenchRounds = flag.Int("apqbench.rounds", 4, "rounds; each runs every side, without and with APQ, in turn")
	apqBenchPasses = flag.Int("apqbench.passes", 200, "passes over the corpus per run, after one to warm up")
)

// apqChildVar makes this test binary serve the source schemas
// (TestAPQSchemasChild) for TestAPQCorpusBench, in a process of their own
// so that the CPU measured is the client's alone.
const apqChildVar = "FUSION_TEST_APQ_SCHEMAS"

// TestAPQSchemasChild serves the embedded schemas' replay, learning the
// answers on first sight, with persisted queries, as `fusion-transport
// schemas -replay -learn`: only as TestAPQCorpusBench's child.
func TestAPQSchemasChild(t *testing.T) {
	if os.Getenv(apqChildVar) == "" {
		t.Skip("TestAPQCorpusBench's child")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	runSchemas(ctx, []string{"-replay", "-learn"}, os.Stdout, os.Stderr)
}

// TestAPQCorpusBench is a benchmark, not a test; it runs only with
// -apqbench. It sends the built-in corpus (every request, with its
// gateway request's headers) through the transport on legacy, sockets
// nethttp and sockets h1, without and with persisted queries, to the
// embedded schemas' replay serving them in another process (so that this
// process's CPU time is the client's), from 4 goroutines, and prints per
// side the request bytes per call (heads and bodies, counted on the
// connections) and the client CPU per call: the median of the rounds
// with [min–max], and with APQ over without. It asserts no figure.
//
//	go test -run TestAPQCorpusBench -v ./cmd/fusion-transport -args -apqbench
func TestAPQCorpusBench(t *testing.T) {
	if !*apqBench {
		t.Skip("a benchmark: run with -args -apqbench")
	}
	reqs, err := compare.ReadCorpus(bytes.NewReader(corpus.Builtin))
	if err != nil {
		t.Fatal(err)
	}
	urls := startAPQChild(t)
	sides := []string{"legacy", "sockets:nethttp", "sockets:h1"}
	samples := map[string][][2]float64{} // side+apq -> rounds of {bytes, CPU µs} per call
	for round := range *apqBenchRounds {
		for _, side := range sides {
			for _, apq := range []bool{false, true} {
				name := side + map[bool]string{true: "+apq"}[apq]
				b, cpu := measureCorpus(t, urls, reqs, side, apq)
				t.Logf("round %d %s: %.0f B/call, %.2f µs CPU/call", round+1, name, b, cpu)
				samples[name] = append(samples[name], [2]float64{b, cpu})
			}
		}
	}
	fmt.Printf("Built-in corpus (%d requests), %d round(s) of %d passes, 4 goroutines; %s, %d CPUs; the schemas' replay in another process.\n\n",
		len(reqs), *apqBenchRounds, *apqBenchPasses, runtime.Version(), runtime.NumCPU())
	fmt.Println("| Side | request bytes/call | with APQ | ratio | client CPU/call | with APQ | ratio |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, side := range sides {
		off, on := samples[side], samples[side+"+apq"]
		bOff, bOn, cOff, cOn := spread(off, 0), spread(on, 0), spread(off, 1), spread(on, 1)
		fmt.Printf("| %s | %s B | %s B | %.3f | %s µs | %s µs | %.3f |\n", side, bOff.cell(0), bOn.cell(0), bOn.med/bOff.med, cOff.cell(2), cOn.cell(2), cOn.med/cOff.med)
	}
}

// measureCorpus sends the corpus through a transport to urls on side,
// with persisted queries if apq, and returns the request bytes and the
// microseconds of this process's CPU per call, over -apqbench.passes
// passes after one that warms up (the replay learns each answer, the
// schemas each hash).
func measureCorpus(t *testing.T, urls map[string]string, reqs []compare.Request, side string, apq bool) (bytesPerCall, cpuPerCall float64) {
	t.Helper()
	wire := &wirecount.Bytes{}
	cfg := env.Config{ForwardHeaders: []string{"Authorization", "X-Request-Id"}, SourceSchemas: map[string]env.SourceSchema{}}
	var opts []transport.Option
	for name, u := range urls {
		cfg.SourceSchemas[name] = env.SourceSchema{URL: u}
		opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{Dial: wire.Dial}))
	}
	if engine, ok := strings.CutPrefix(side, "sockets:"); ok {
		cfg.Path, cfg.Defaults.Engine = env.PathSockets, engine
	}
	if apq {
		cfg.Defaults.PersistedQueries.Mode = env.PersistedQueriesAPQ
	}
	inv, err := transport.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	ctxs := make([]context.Context, len(reqs))
	for i, r := range reqs {
		gw, _ := http.NewRequest(http.MethodPost, "http://gateway.test/graphql", nil)
		for k, v := range r.Headers {
			gw.Header.Set(k, v)
		}
		ctxs[i] = transport.WithGatewayRequest(context.Background(), gw)
	}
	pass := func() {
		for i, r := range reqs {
			resp, err := inv.Post(ctxs[i], r.Schema, r.Body)
			if err != nil {
				t.Errorf("%s: %v", r.Name, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	pass()
	const workers = 4
	b0, c0 := wire.Total(), rawhttp.CPUTime()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range *apqBenchPasses / workers {
				pass()
			}
		})
	}
	wg.Wait()
	calls := float64(*apqBenchPasses / workers * workers * len(reqs))
	return float64(wire.Total()-b0) / calls, float64(rawhttp.CPUTime()-c0) / 1e3 / calls
}

// startAPQChild starts this test binary as the schemas' process and
// returns their URLs.
func startAPQChild(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAPQSchemasChild$")
	cmd.Env = append(os.Environ(), apqChildVar+"=1")
	return wiretest.StartSchemaProcess(t, cmd, 4)
}

// spreadOf is a median with the smallest and largest value.
type spreadOf struct{ med, lo, hi float64 }

// spread returns the spread of field i of samples.
func spread(samples [][2]float64, i int) spreadOf {
	var v []float64
	for _, s := range samples {
		v = append(v, s[i])
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return spreadOf{m, v[0], v[len(v)-1]}
}

// cell writes s with digits decimals: the median [min–max].
func (s spreadOf) cell(digits int) string {
	return fmt.Sprintf("%.*f [%.*f–%.*f]", digits, s.med, digits, s.lo, digits, s.hi)
}
