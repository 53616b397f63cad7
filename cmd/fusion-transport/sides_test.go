package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/corpus"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/testsupport/wiretest"
	"github.com/google/go-cmp/cmp"
)

// Function name prefixes that tell which engine read a connection: the h1
// engine reads on the request's goroutine through package internal/h1,
// net/http's Transport through its own read loop.
const (
	h1Frames      = "github.com/fusiongo/transport/internal/h1."
	netHTTPFrames = "net/http."
)

// engineWatch records, per side and source schema, which engine read the
// side's connections (legacy's too: it dials through the hook). It is the compare command's
// compareSideOptions: a Dial for every source schema of a side, whose
// connections look at the call stack of each Read that returned bytes.
type engineWatch struct {
	mu    sync.Mutex
	reads map[string]map[string]string // side -> schema -> engine names seen, sorted, "+"-joined
}

func watchEngines(t *testing.T) *engineWatch {
	t.Helper()
	w := &engineWatch{reads: map[string]map[string]string{}}
	compareSideOptions = func(side string, cfg env.Config) []transport.Option {
		var opts []transport.Option
		for name := range cfg.SourceSchemas {
			d := &net.Dialer{}
			opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{
				Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := d.DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return &watchedRead{Conn: c, seen: func(engine string) { w.saw(side, name, engine) }}, nil
				},
			}))
		}
		return opts
	}
	t.Cleanup(func() { compareSideOptions = nil })
	return w
}

func (w *engineWatch) saw(side, schema, engine string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reads[side] == nil {
		w.reads[side] = map[string]string{}
	}
	seen := strings.Split(w.reads[side][schema], "+")
	if !slices.Contains(seen, engine) {
		seen = slices.DeleteFunc(append(seen, engine), func(s string) bool { return s == "" })
		slices.Sort(seen)
		w.reads[side][schema] = strings.Join(seen, "+")
	}
}

func (w *engineWatch) got() map[string]map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reads
}

// watchedRead is a connection that reports, for each Read that returned
// bytes, the engine whose code called it. It keeps SyscallConn so that
// the sockets path still peeks at idle connections as on a plain one.
type watchedRead struct {
	net.Conn
	seen func(engine string)
}

func (c *watchedRead) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.seen(callerEngine())
	}
	return n, err
}

func (c *watchedRead) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// callerEngine names the engine on the call stack: h1, nethttp, or
// "unknown" when it is neither (which no test expects).
func callerEngine() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	engine := "unknown"
	for {
		f, more := frames.Next()
		switch {
		case strings.HasPrefix(f.Function, h1Frames):
			return env.EngineH1 // h1 may use net/http's helpers, never the reverse
		case strings.HasPrefix(f.Function, netHTTPFrames):
			engine = env.EngineNetHTTP
		}
		if !more {
			return engine
		}
	}
}

// everySchema maps each embedded source schema to engine.
func everySchema(engine string) map[string]string {
	m := map[string]string{}
	for _, name := range schemas.Names {
		m[name] = engine
	}
	return m
}

// TestCompareSides sets three configurations side by side: every pair is
// identical on the built-in corpus, and each sockets side's connections
// were read by the engine the side names, whatever the configuration and
// the environment give the defaults and each source schema.
func TestCompareSides(t *testing.T) {
	srv, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// The defaults say h1 (from the environment), products says nethttp
	// (in the file): each sockets:ENGINE side must override both.
	var yaml strings.Builder
	yaml.WriteString("forward_headers: [Authorization, X-Request-Id]\nsource_schemas:\n")
	for _, name := range schemas.Names {
		fmt.Fprintf(&yaml, "  %s:\n    url: %s\n", name, srv.URLs[name])
		if name == "products" {
			yaml.WriteString("    engine: nethttp\n")
		}
	}
	cfgFile := filepath.Join(t.TempDir(), "transport.yaml")
	if err := os.WriteFile(cfgFile, []byte(yaml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	reqs, err := compare.ReadCorpus(bytes.NewReader(corpus.Builtin))
	if err != nil {
		t.Fatal(err)
	}
	n := len(reqs)
	mixed := everySchema(env.EngineH1)
	mixed["products"] = env.EngineNetHTTP

	for _, tc := range []struct {
		name    string
		args    []string
		environ bool // FUSION_DEFAULTS__ENGINE=h1
		pairs   []string
		engines map[string]map[string]string
	}{
		{
			name:  "embedded default",
			args:  []string{"-sides", "legacy,sockets:nethttp,sockets:h1"},
			pairs: []string{"legacy vs sockets:nethttp", "legacy vs sockets:h1"},
			engines: map[string]map[string]string{
				// legacy dials through the schema's Dial hook too; its
				// reads are net/http's.
				"legacy":          everySchema(env.EngineNetHTTP),
				"sockets:nethttp": everySchema(env.EngineNetHTTP),
				"sockets:h1":      everySchema(env.EngineH1),
			},
		},
		{
			name:    "engines set by the file and the environment, overridden",
			args:    []string{"-config", cfgFile, "-sides", " sockets , sockets:nethttp,sockets:h1"},
			environ: true,
			pairs:   []string{"sockets vs sockets:nethttp", "sockets vs sockets:h1"},
			engines: map[string]map[string]string{
				"sockets":         mixed,
				"sockets:nethttp": everySchema(env.EngineNetHTTP),
				"sockets:h1":      everySchema(env.EngineH1),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.environ {
				t.Setenv("FUSION_DEFAULTS__ENGINE", env.EngineH1)
			}
			w := watchEngines(t)
			code, stdout, stderr := runCmd(append([]string{"compare"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var want strings.Builder
			for _, p := range tc.pairs {
				fmt.Fprintf(&want, "== %s\n%[2]d requests: %[2]d identical, 0 different\nfail-on total>0: passed\n", p, n)
			}
			if stdout != want.String() {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want.String())
			}
			if diff := cmp.Diff(tc.engines, w.got()); diff != "" {
				t.Errorf("engines that read each side's connections (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompareSidesReportFiles: with three sides, the text, JSON and JUnit
// reports hold both pairs, each naming its sides; -fail-on applies to each.
func TestCompareSidesReportFiles(t *testing.T) {
	cfgFile, corpusFile := compareSetup(t)
	dir := t.TempDir()
	junitFile, jsonFile := filepath.Join(dir, "report.xml"), filepath.Join(dir, "report.json")
	code, stdout, stderr := runCmd("compare", "-config", cfgFile, "-corpus", corpusFile, "-sides", "legacy,sockets:nethttp,sockets:h1",
		"-junit", junitFile, "-json", jsonFile, "-fail-on", "status>0", "-progress")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, b := range []string{"sockets:nethttp", "sockets:h1"} {
		want := fmt.Sprintf("== legacy vs %[1]s\n2 distinct differences in 8 requests:\n"+
			"header Set-Cookie: legacy and %[1]s have different Set-Cookie values ([REDACTED]) (8 requests)\n"+
			"     products/1, products/2, products/3, products/4, products/5 and 3 more\n"+
			"status: legacy answered 200; %[1]s answered 502 (1 request)\n     products/status\n"+
			"8 requests: 0 identical, 8 different\n"+
			"fail-on status>0: failed\n  status>0: 1 of 8 requests (12.5%%) has a status difference\n", b)
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks the pair legacy vs %s:\n%s\nwant:\n%s", b, stdout, want)
		}
	}
	if !strings.HasSuffix(stderr, "compared 16/16\n") {
		t.Errorf("stderr does not end with the progress over both pairs:\n%s", stderr)
	}

	raw, err := os.ReadFile(junitFile)
	if err != nil {
		t.Fatal(err)
	}
	var junit struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &junit); err != nil {
		t.Fatalf("JUnit file does not parse: %v\n%s", err, raw)
	}
	if junit.Name != "fusion-transport compare" || junit.Tests != 16 || junit.Failures != 16 || len(junit.Suites) != 2 {
		t.Fatalf("JUnit document %q: %d tests, %d failures, %d suites; want 16, 16, 2\n%s", junit.Name, junit.Tests, junit.Failures, len(junit.Suites), raw)
	}
	for i, b := range []string{"sockets:nethttp", "sockets:h1"} {
		s := junit.Suites[i]
		if want := "fusion-transport compare legacy vs " + b; s.Name != want || s.Tests != 8 || s.Failures != 8 || len(s.Cases) != 8 {
			t.Errorf("JUnit suite %d: %q, %d tests, %d failures; want %q, 8, 8", i, s.Name, s.Tests, s.Failures, want)
			continue
		}
		if last := s.Cases[7]; last.Name != "products/status" || last.Failure == nil || !strings.Contains(last.Failure.Message, "legacy answered 200; "+b+" answered 502") {
			t.Errorf("JUnit suite %q, testcase products/status: %+v", s.Name, last)
		}
	}

	raw, err = os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sides  []string
		Passed *bool
		Pairs  []struct {
			Report struct {
				A, B   string
				Counts struct{ Requests, Different int }
			}
			FailOn struct {
				Passed   bool
				Breaches []struct{ Threshold string }
			} `json:"fail_on"`
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("JSON file does not parse: %v\n%s", err, raw)
	}
	if diff := cmp.Diff([]string{"legacy", "sockets:nethttp", "sockets:h1"}, doc.Sides); diff != "" {
		t.Errorf("JSON sides (-want +got):\n%s", diff)
	}
	if doc.Passed == nil || *doc.Passed || len(doc.Pairs) != 2 {
		t.Fatalf("JSON: passed %v, %d pairs; want false, 2\n%s", doc.Passed, len(doc.Pairs), raw)
	}
	for i, b := range []string{"sockets:nethttp", "sockets:h1"} {
		p := doc.Pairs[i]
		if p.Report.A != "legacy" || p.Report.B != b || p.Report.Counts.Requests != 8 || p.Report.Counts.Different != 8 ||
			p.FailOn.Passed || len(p.FailOn.Breaches) != 1 || p.FailOn.Breaches[0].Threshold != "status>0" {
			t.Errorf("JSON pair %d: %+v", i, p)
		}
	}
	for _, out := range []string{stdout, stderr, string(raw)} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("a secret is published:\n%s", out)
		}
	}
}

// TestCompareSidesDefault: without -sides, and with its default value
// given, the report is the one pair legacy vs sockets, as it always was:
// no pair heading, the JSON document of one report.
func TestCompareSidesDefault(t *testing.T) {
	cfgFile, corpusFile := compareSetup(t)
	var outs []string
	for _, flags := range [][]string{nil, {"-sides", "legacy,sockets"}} {
		jsonFile := filepath.Join(t.TempDir(), "report.json")
		args := append([]string{"compare", "-config", cfgFile, "-corpus", corpusFile, "-json", jsonFile}, flags...)
		code, stdout, stderr := runCmd(args...)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1\n%s", flags, code, stderr)
		}
		if strings.Contains(stdout, "==") || !strings.HasPrefix(stdout, "2 distinct differences in 8 requests:\n") {
			t.Errorf("%v: stdout is not the one-pair report:\n%s", flags, stdout)
		}
		raw, err := os.ReadFile(jsonFile)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc["report"]; !ok || len(doc) != 2 {
			t.Errorf("%v: JSON keys are not report and fail_on:\n%s", flags, raw)
		}
		outs = append(outs, stdout)
	}
	if outs[0] != outs[1] {
		t.Errorf("-sides legacy,sockets changes the report:\n%s\nwithout:\n%s", outs[1], outs[0])
	}
}

func TestCompareSidesInvalid(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"legacy,sockets:h2", `unknown side "sockets:h2": want legacy, sockets (the configuration's own engine), sockets:nethttp or sockets:h1`},
		{"legacy", "1 side: want two or three"},
		{"legacy,sockets,sockets:nethttp,sockets:h1", "4 sides: want two or three"},
		{"sockets:h1,sockets:h1", `side "sockets:h1" is listed twice`},
		{"legacy,,sockets", "an empty side between commas"},
		{"", "an empty side between commas"},
		{"sockets,sockets+cache", `side "sockets+cache": compare never answers from a response cache; +cache is bench's`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			code, stdout, stderr := runCmd("compare", "-sides", tc.value)
			want := fmt.Sprintf("compare: -sides %q: %s\n", tc.value, tc.want)
			if code != 2 || stderr != want || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and %q", code, stderr, stdout, want)
			}
		})
	}
}

// syncBuffer is a writer and a reader on different goroutines.
type syncBuffer = wiretest.LogBuffer

// TestGatewayEngine: the gateway's -engine sets the engine of the defaults
// and of every source schema over the file's, as bench's sides need it, and
// the startup line names the engines; a bad value exits 2.
func TestGatewayEngine(t *testing.T) {
	t.Setenv("FUSION_SOCKETS_TRANSPORT", "1")
	t.Setenv("FUSION_DEFAULTS__ENGINE", env.EngineH1)
	srv, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var list []string
	for _, name := range schemas.Names {
		list = append(list, name+"="+srv.URLs[name])
	}
	cfgFile := filepath.Join(t.TempDir(), "transport.yaml")
	if err := os.WriteFile(cfgFile, []byte("source_schemas:\n  products:\n    url: "+srv.URLs["products"]+"\n    engine: nethttp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "gateway: sockets path, engine h1 for accounts, inventory, reviews; nethttp for products, answering"},
		{[]string{"-engine", "h1"}, "gateway: sockets path, engine h1, answering"},
		{[]string{"-engine", "nethttp"}, "gateway: sockets path, engine nethttp, answering"},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			outR, outW := io.Pipe()
			var errOut syncBuffer
			exited := make(chan int, 1)
			go func() {
				args := append([]string{"gateway", "-config", cfgFile, "-schemas", strings.Join(list, ",")}, tc.flags...)
				exited <- run(ctx, args, outW, &errOut)
				outW.Close()
			}()
			line, err := bufio.NewReader(outR).ReadString('\n')
			if err != nil {
				t.Fatalf("no ready line: %v\n%s", err, errOut.String())
			}
			// One gateway request, answered through the source schemas.
			base := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
			resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(load.DefaultBody))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"data":{"users":[`)) {
				t.Errorf("gateway answered %d: %.200s", resp.StatusCode, body)
			}
			cancel()
			go io.Copy(io.Discard, outR)
			if code := <-exited; code != 0 {
				t.Errorf("exit %d\n%s", code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errOut.String())
			}
		})
	}
	code, _, stderr := runCmd("gateway", "-engine", "h2", "-schemas", strings.Join(list, ","))
	if want := "gateway: -engine \"h2\": want nethttp or h1\n"; code != 2 || stderr != want {
		t.Errorf("-engine h2: exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}

// TestBenchSidesInvalid: a bad -sides (or -paths, its old name) exits 2
// naming the flag and the value, before anything starts.
func TestBenchSidesInvalid(t *testing.T) {
	for _, flag := range []string{"-sides", "-paths"} {
		code, stdout, stderr := runCmd("bench", flag, "legacy,sockets:h3")
		want := `bench: -sides "legacy,sockets:h3": unknown side "sockets:h3": want legacy, sockets (the configuration's own engine), sockets:nethttp or sockets:h1` + "\n"
		if code != 2 || stderr != want || stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want 2 and %q", flag, code, stderr, stdout, want)
		}
	}
}
