package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	accounts "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/answer"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
)

// libraryModule is the module that the e2e module's replace points at:
// its directory is the repository root, where the compare command is built.
const libraryModule = "github.com/fusiongo/transport"

// replayHeaders are the gateway request headers the Recorder keeps with
// each entry and the compare command's configuration forwards, so that
// header forwarding is part of the replay. Authorization is recorded as
// answer.Redacted: the corpus says it was there, never what it held.
var replayHeaders = []string{"Authorization", "X-Request-Id"}

// compareDir is the temporary directory of the command that buildCompare
// built, removed by TestMain; empty if none was built.
var compareDir string

// buildCompare builds the fusion-transport command from the library's
// module (the repository root) once per test binary run.
var buildCompare = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", libraryModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", libraryModule, err)
	}
	dir, err := os.MkdirTemp("", "fusion-transport-e2e-")
	if err != nil {
		return "", fmt.Errorf("building the compare command: %w", err)
	}
	compareDir = dir
	bin := filepath.Join(dir, "fusion-transport")
	build := exec.Command("go", "build", "-o", bin, libraryModule+"/cmd/fusion-transport")
	build.Dir = strings.TrimSpace(string(out))
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s/cmd/fusion-transport in %s: %w\n%s", libraryModule, build.Dir, err, msg)
	}
	return bin, nil
})

// TestMain removes the compare command built by buildCompare.
func TestMain(m *testing.M) {
	code := m.Run()
	if compareDir != "" {
		os.RemoveAll(compareDir)
	}
	os.Exit(code)
}

// entryKey is what identifies a subgraph request on both sides of the
// wire: the source schema and the gateway request's X-Request-Id.
type entryKey struct{ schema, requestID string }

// compareReport is the part of `fusion-transport compare -json` that the
// test reads.
type compareReport struct {
	Report struct {
		Counts  compare.Counts `json:"counts"`
		Results []struct {
			Name      string `json:"name"`
			Schema    string `json:"schema"`
			Identical bool   `json:"identical"`
			A         struct {
				Status int    `json:"status"`
				Error  string `json:"error"`
			} `json:"a"`
			B struct {
				Status int    `json:"status"`
				Error  string `json:"error"`
			} `json:"b"`
		} `json:"results"`
	} `json:"report"`
	FailOn struct {
		Passed bool `json:"passed"`
	} `json:"fail_on"`
}

// TestRecordAndReplay records the subgraph traffic of the federation
// gateway on the legacy path with compare.Recorder (rate 1, Authorization
// and X-Request-Id kept), then replays the corpus with the real compare
// command, legacy against sockets, against the same subgraphs.
//
//   - clean: every subgraph request made is one corpus line, and the
//     replay finds no difference (exit 0, N compared, N the number
//     recorded); the replayed requests reach the subgraphs on both paths
//     with the recorded headers forwarded.
//   - differing: the control. During the replay the accounts subgraph puts
//     a per-call header on its answers, so that the two paths' answers to
//     each accounts entry differ: the command must exit 1 and report
//     exactly those entries, which shows that the clean case's zero is a
//     finding and not a blind spot.
//   - cached: the subgraphs answer "Cache-Control: public, max-age=60" and
//     the command runs with -cached -sides sockets,sockets+cache: the
//     corpus twice, the second side with the response cache on. No
//     difference in either pass; on the wire, the side without the cache
//     sent every entry twice and the side with it at most once in all
//     (its second pass answered from the cache).
func TestRecordAndReplay(t *testing.T) {
	bin, err := buildCompare()
	if err != nil {
		t.Fatal(err)
	}
	queries := queryFiles(t)
	for _, tc := range []struct {
		name   string
		differ bool // accounts answers the replay with a per-call header
		cached bool // compare -cached, sockets against sockets+cache
	}{
		{"clean", false, false},
		{"differing", true, false},
		{"cached", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The replay is told apart from the recording by the
			// Authorization it forwards: the recorded, redacted value.
			var calls atomic.Int64
			inner := accounts.GraphQLEndpointHandler(accounts.TestOptions)
			accountsHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.differ && r.Header.Get("Authorization") == answer.Redacted {
					w.Header().Set("X-Replay-Call", strconv.FormatInt(calls.Add(1), 10))
				}
				inner.ServeHTTP(w, r)
			})
			var wrap func(string, http.Handler) http.Handler
			if tc.cached {
				wrap = func(_ string, h http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Cache-Control", "public, max-age=60")
						h.ServeHTTP(w, r)
					})
				}
			}
			sg := startSubgraphsWrapped(t, accountsHandler, wrap)
			dir := t.TempDir()
			corpusFile := filepath.Join(dir, "corpus.jsonl")
			rec, err := compare.NewRecorder(compare.RecorderOptions{Path: corpusFile, Rate: 1, HeaderNames: replayHeaders})
			if err != nil {
				t.Fatal(err)
			}
			cfg := sg.transportConfig()
			cfg.Path = env.PathLegacy
			var opts []transport.Option
			for name := range cfg.SourceSchemas {
				opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{
					Middleware: []func(http.RoundTripper) http.RoundTripper{rec.Middleware(name)},
				}))
			}
			inv, err := transport.New(cfg, opts...)
			if err != nil {
				t.Fatalf("transport.New: %v", err)
			}
			gw := startGateway(t, sg.routerConfig(), inv.Client(), transport.GatewayRequestHandler)

			const auth = "Bearer replay-user"
			reached := 0 // gateway queries that made a subgraph request
			for _, q := range queries {
				before := len(sg.rec.all())
				status, got := post(t, gw.URL, q.body, http.Header{"Authorization": {auth}, "X-Request-Id": {q.name}})
				switch {
				case failing[q.name] && status != http.StatusInternalServerError:
					t.Errorf("%s: status %d, want 500", q.name, status)
				case !failing[q.name] && (status != http.StatusOK || bytes.Contains(got, []byte(`"errors"`))):
					t.Errorf("%s: status %d: %s", q.name, status, got)
				}
				if len(sg.rec.all()) > before {
					reached++
				}
			}
			if err := inv.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := rec.Close(); err != nil {
				t.Fatalf("Recorder.Close: %v", err)
			}

			// One corpus line per subgraph request made, with the
			// gateway request's headers as the Recorder keeps them.
			made := map[entryKey]int{}
			for _, s := range sg.rec.all() {
				made[entryKey{s.schema, s.requestID}]++
			}
			recorded := len(sg.rec.all())
			if recorded == 0 || rec.Recorded() != int64(recorded) || rec.Skipped() != 0 {
				t.Fatalf("the subgraphs got %d requests; the Recorder recorded %d and skipped %d", recorded, rec.Recorded(), rec.Skipped())
			}
			raw, err := os.ReadFile(corpusFile)
			if err != nil {
				t.Fatal(err)
			}
			corpus, err := compare.ReadCorpus(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("reading the recorded corpus: %v", err)
			}
			inCorpus := map[entryKey]int{}
			accountsEntries := 0
			for _, e := range corpus {
				inCorpus[entryKey{e.Schema, e.Headers["X-Request-Id"]}]++
				if e.Schema == "accounts" {
					accountsEntries++
				}
				if e.Headers["Authorization"] != answer.Redacted || e.Method != "" || len(e.Body) == 0 {
					t.Errorf("corpus entry %s: headers %v, method %q, body %d bytes: want a Post with Authorization recorded as %s", e.Name, e.Headers, e.Method, len(e.Body), answer.Redacted)
				}
			}
			if !maps.Equal(made, inCorpus) {
				t.Fatalf("subgraph requests by (schema, request id):\n  made     %v\n  recorded %v", made, inCorpus)
			}

			// The compare command, with a configuration naming the same
			// subgraph URLs and forwarding the recorded headers.
			var yaml strings.Builder
			fmt.Fprintf(&yaml, "forward_headers: [%s]\nsource_schemas:\n", strings.Join(replayHeaders, ", "))
			for _, name := range []string{"accounts", "products", "reviews"} {
				fmt.Fprintf(&yaml, "  %s:\n    url: %s\n", name, cfg.SourceSchemas[name].URL)
			}
			cfgFile, jsonFile := filepath.Join(dir, "transport.yaml"), filepath.Join(dir, "report.json")
			if err := os.WriteFile(cfgFile, []byte(yaml.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := []string{"compare", "-config", cfgFile, "-corpus", corpusFile, "-json", jsonFile}
			passes := 1
			if tc.cached {
				args = append(args, "-cached", "-sides", "sockets,sockets+cache")
				passes = 2
			}
			cmd := exec.CommandContext(t.Context(), bin, args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Env = withoutFusionVars(os.Environ())
			before := len(sg.rec.all())
			err = cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if code < 0 {
				t.Fatalf("compare: %v\n%s", err, stderr.String())
			}
			wantCode, wantDifferent := 0, 0
			if tc.differ {
				wantCode, wantDifferent = 1, accountsEntries
			}
			if code != wantCode {
				t.Errorf("compare exited %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, stdout.String(), stderr.String())
			}
			raw, err = os.ReadFile(jsonFile)
			if err != nil {
				t.Fatalf("compare wrote no JSON report: %v\nstderr:\n%s", err, stderr.String())
			}
			var report compareReport
			if err := json.Unmarshal(raw, &report); err != nil {
				t.Fatalf("compare's JSON report: %v", err)
			}
			counts := report.Report.Counts
			want := compare.Counts{Requests: passes * recorded, Identical: passes*recorded - wantDifferent, Different: wantDifferent}
			if counts != want || report.FailOn.Passed != (wantDifferent == 0) {
				t.Errorf("compare counted %+v (fail-on passed: %v), want %+v\n%s", counts, report.FailOn.Passed, want, stdout.String())
			}
			if line := fmt.Sprintf("%d requests: %d identical, %d different", want.Requests, want.Identical, want.Different); !strings.Contains(stdout.String(), line) {
				t.Errorf("compare's report lacks %q:\n%s", line, stdout.String())
			}
			for _, r := range report.Report.Results {
				if r.A.Status != http.StatusOK || r.B.Status != http.StatusOK {
					t.Errorf("replay of %s: legacy %d %s, sockets %d %s: want 200 on both", r.Name, r.A.Status, r.A.Error, r.B.Status, r.B.Error)
				}
				if r.Identical != (!tc.differ || r.Schema != "accounts") {
					t.Errorf("replay of %s (%s): identical %v", r.Name, r.Schema, r.Identical)
				}
			}

			// The replay went on the wire: each entry reached its
			// subgraph once per path (cached: twice from the side without
			// the cache, at most once from the side with it), with the
			// recorded headers forwarded.
			replayed := map[entryKey]int{}
			for _, s := range sg.rec.all()[before:] {
				replayed[entryKey{s.schema, s.requestID}]++
				if s.auth != answer.Redacted {
					t.Errorf("replayed %s request of %s: Authorization %q, want the recorded %q", s.schema, s.requestID, s.auth, answer.Redacted)
				}
			}
			twice := maps.Clone(inCorpus)
			for k := range twice {
				twice[k] *= 2
			}
			switch {
			case !tc.cached && !maps.Equal(replayed, twice):
				t.Errorf("replayed subgraph requests by (schema, request id):\n  got  %v\n  want %v (each entry once per path)", replayed, twice)
			case tc.cached:
				total := 0
				for k, n := range replayed {
					total += n
					if n < twice[k] || n > twice[k]+inCorpus[k] {
						t.Errorf("replayed %v: %d subgraph requests, want %d from the side without the cache and at most %d from the side with it", k, n, twice[k], inCorpus[k])
					}
				}
				if len(replayed) != len(twice) || total > 3*recorded {
					t.Errorf("replayed subgraph requests by (schema, request id): %v; want each entry's twice from the side without the cache and at most once in all from the side with it", replayed)
				}
			}
			t.Logf("%s: %d gateway queries on the legacy path (%d reached a subgraph); %d subgraph requests made and recorded (%d skipped); compare %s: %s, %d subgraph requests; exit %d",
				tc.name, len(queries), reached, recorded, rec.Skipped(), strings.Join(args[1:], " "), counts, len(sg.rec.all())-before, code)
		})
	}
}

// withoutFusionVars returns environ without the FUSION_* variables, which
// the compare command would apply over its configuration file.
func withoutFusionVars(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "FUSION_") {
			out = append(out, kv)
		}
	}
	return out
}
