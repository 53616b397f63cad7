package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/corpus"
	"github.com/fusiongo/transport/internal/schemas"
)

// builtinForward lists the gateway headers forwarded in the built-in run:
// the ones the built-in corpus carries.
var builtinForward = []string{"Authorization", "X-Request-Id"}

// compareNames is a repeatable flag: each use adds a value, and a value may
// hold several, comma-separated.
type compareNames []string

func (n *compareNames) String() string { return strings.Join(*n, ",") }

func (n *compareNames) Set(v string) error {
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*n = append(*n, item)
		}
	}
	return nil
}

// compareFlags are the compare command's settings.
type compareFlags struct {
	configFile, corpusPath string
	concurrency            int
	timeout                time.Duration
	junitFile, jsonFile    string
	failOn                 string
	rules                  compare.Rules
	progress, verbose      bool
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f compareFlags
	var ignoreHeaders, ignorePaths, redact compareNames
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.configFile, "config", "", "YAML configuration `file` naming the source schemas to call (default: start the embedded source schemas on loopback)")
	fs.StringVar(&f.corpusPath, "corpus", "", "JSONL `file` of source schema requests, or a directory whose *.jsonl files are read in order, as compare.Recorder writes them (default: the built-in corpus of the embedded source schemas)")
	fs.IntVar(&f.concurrency, "concurrency", 4, "corpus requests in flight at once")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on one side of one request, body included")
	fs.StringVar(&f.failOn, "fail-on", "any", "`thresholds` over the differences beyond which the command exits 1 (see above)")
	fs.StringVar(&f.junitFile, "junit", "", "write a JUnit XML report to `file`: a testcase per request, a failure per request that differs")
	fs.StringVar(&f.jsonFile, "json", "", "write a JSON report to `file`: per-request results, grouped differences and the -fail-on verdict")
	fs.Var(&ignoreHeaders, "ignore-header", "response header `name` left out of the comparison, besides Date and the hop-by-hop headers (repeatable, or comma-separated)")
	fs.Var(&ignorePaths, "ignore-path", "JSON `path` left out of body comparison, e.g. extensions.tracing or errors.*.extensions; * matches any member or index (repeatable, or comma-separated)")
	fs.Var(&redact, "redact", "header `name` whose values are published as [REDACTED], besides Authorization, Cookie, Set-Cookie and Proxy-Authorization (repeatable, or comma-separated)")
	fs.Float64Var(&f.rules.TimingRatio, "timing-ratio", 0, "report a timing difference when one side took more than this many times as long as the other (0: timing is not compared)")
	fs.DurationVar(&f.rules.TimingMin, "timing-min", 0, "least extra time that makes a timing difference, with -timing-ratio")
	fs.BoolVar(&f.progress, "progress", false, "print \"compared N/M\" on stderr about once a second, for long corpora")
	fs.BoolVar(&f.verbose, "v", false, "list every request and its differences before the grouped report")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fusion-transport compare [flags]

Compare sends every request of a corpus through the legacy path and the
sockets path, against the same source schemas, and reports the differences
in status, headers (Date and hop-by-hop headers left out), body (JSON
compared as JSON), errors, redirects and, with -timing-ratio, timing.
Identical differences across requests are reported once, with a count and
the first %d request names. It exits 0 when the differences are within
-fail-on (by default: none at all), 1 when they did not stay within it, and
2 on a usage or setup error.

%s

With no flags it starts the embedded source schemas on loopback and runs the
built-in corpus. With -config, it calls the source schemas that the file
names (the environment's FUSION_* variables apply as usual; the file's
transport key and FUSION_SOCKETS_TRANSPORT are ignored: both paths run).
Values of Authorization, Cookie, Set-Cookie, Proxy-Authorization and -redact
headers never appear in a report.

Flags:
`, compare.GroupListed, compare.FailOnGrammar)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, true, stderr); !ok {
		return code
	}
	f.rules.IgnoreHeaders, f.rules.IgnorePaths, f.rules.Redact = ignoreHeaders, ignorePaths, redact
	failOn, err := compare.ParseFailOn(f.failOn)
	if err != nil {
		fmt.Fprintf(stderr, "compare: -fail-on: %v\n", err)
		return 2
	}
	if err := f.rules.Validate(); err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	return compareRun(ctx, &f, failOn, stdout, stderr)
}

// compareRun runs the comparison that f describes and reports it.
func compareRun(ctx context.Context, f *compareFlags, failOn compare.FailOn, stdout, stderr io.Writer) int {
	var cfg env.Config
	if f.configFile != "" {
		var err error
		if cfg, err = env.Load(f.configFile); err != nil {
			fmt.Fprintf(stderr, "compare: %v\n", err)
			return 2
		}
	} else {
		srv, err := schemas.Start(schemas.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "compare: starting the embedded source schemas: %v\n", err)
			return 2
		}
		defer srv.Close()
		cfg = env.Config{ForwardHeaders: builtinForward, SourceSchemas: map[string]env.SourceSchema{}}
		for name, u := range srv.URLs {
			cfg.SourceSchemas[name] = env.SourceSchema{URL: u}
		}
	}

	reqs, err := readCompareCorpus(f.corpusPath)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sides := [2]compare.Side{{Name: "legacy"}, {Name: "sockets"}}
	for i, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		c := cfg
		// One whole path per side: neither a per-schema rollout nor shadow
		// comparison from the environment applies here.
		c.Transport, c.SocketsSchemas, c.Shadow = path, nil, env.ShadowSettings{}
		inv, err := transport.New(c, transport.WithLogger(log))
		if err != nil {
			fmt.Fprintf(stderr, "compare: %s path: %v\n", path, err)
			return 2
		}
		defer inv.Close()
		sides[i].Invoker = inv
	}
	urls := make(map[string]string, len(cfg.SourceSchemas))
	for name, s := range cfg.SourceSchemas {
		urls[name] = s.URL
	}
	opts := compare.Options{URLs: urls, Concurrency: f.concurrency, Timeout: f.timeout, Rules: f.rules}
	if f.progress {
		p := &compareProgress{w: stderr, now: time.Now, every: time.Second}
		opts.Progress = p.update
	}
	report, err := compare.Run(ctx, reqs, sides[0], sides[1], opts)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	breaches := failOn.Check(report)
	if c := report.Counts(); c.Requests > 0 && c.BothFailed == c.Requests {
		fmt.Fprintf(stderr, "compare: warning: every request failed on both paths, which counts as identical: check -config and that the source schemas answer\n")
	}

	if err := writeCompareFiles(f, report, failOn, breaches); err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	if err := writeCompareText(stdout, f.verbose, report, failOn, breaches); err != nil {
		fmt.Fprintf(stderr, "compare: writing the report: %v\n", err)
		return 2
	}
	if len(breaches) > 0 {
		return 1
	}
	return 0
}

// writeCompareText prints the report on stdout: every request with -v, the
// grouped differences, the summary and the -fail-on verdict.
func writeCompareText(w io.Writer, verbose bool, report *compare.Report, failOn compare.FailOn, breaches []compare.Breach) error {
	if verbose {
		if err := report.Write(w); err != nil {
			return err
		}
	}
	if err := report.WriteGroups(w); err != nil {
		return err
	}
	var b strings.Builder
	if !verbose {
		fmt.Fprintf(&b, "%s\n", report.Counts())
	}
	if len(breaches) == 0 {
		fmt.Fprintf(&b, "fail-on %s: passed\n", failOn)
	} else {
		fmt.Fprintf(&b, "fail-on %s: failed\n", failOn)
		for _, br := range breaches {
			fmt.Fprintf(&b, "  %s\n", br)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// compareJSON is the document -json writes.
type compareJSON struct {
	Report compare.Report `json:"report"`
	FailOn struct {
		Spec     string           `json:"spec"`
		Passed   bool             `json:"passed"`
		Breaches []compare.Breach `json:"breaches"`
	} `json:"fail_on"`
}

// writeCompareFiles writes the -junit and -json reports.
func writeCompareFiles(f *compareFlags, report *compare.Report, failOn compare.FailOn, breaches []compare.Breach) error {
	if f.junitFile != "" {
		if err := writeCompareFile(f.junitFile, func(w io.Writer) error {
			return report.WriteJUnit(w, "fusion-transport compare")
		}); err != nil {
			return fmt.Errorf("-junit: %w", err)
		}
	}
	if f.jsonFile != "" {
		doc := compareJSON{Report: *report}
		doc.FailOn.Spec, doc.FailOn.Passed, doc.FailOn.Breaches = failOn.String(), len(breaches) == 0, breaches
		if doc.FailOn.Breaches == nil {
			doc.FailOn.Breaches = []compare.Breach{}
		}
		if err := writeCompareFile(f.jsonFile, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(doc)
		}); err != nil {
			return fmt.Errorf("-json: %w", err)
		}
	}
	return nil
}

// writeCompareFile writes a report file whole or not at all: into a
// temporary file beside it, renamed over it once complete.
func writeCompareFile(name string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil { // a CI artefact, readable by the uploader
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// compareProgress prints "compared N/M" lines, at most one per interval
// and always the last. compare.Run calls update one call at a time.
type compareProgress struct {
	w     io.Writer
	now   func() time.Time
	every time.Duration
	last  time.Time
}

func (p *compareProgress) update(done, total int) {
	now := p.now()
	if done < total && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	fmt.Fprintf(p.w, "compared %d/%d\n", done, total)
}

// readCompareCorpus reads the corpus at path: the built-in one if path is
// empty, a JSONL file, or every *.jsonl file of a directory, in the order a
// Recorder numbers them.
func readCompareCorpus(path string) ([]compare.Request, error) {
	if path == "" {
		reqs, err := compare.ReadCorpus(bytes.NewReader(corpus.Builtin))
		if err != nil {
			return nil, fmt.Errorf("built-in corpus: %w", err)
		}
		return reqs, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.jsonl")); err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no *.jsonl files", path)
		}
		slices.SortFunc(files, compareFileOrder)
	}
	var all []compare.Request
	seen := make(map[string]string) // name -> file it is in
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		reqs, err := compare.ReadCorpus(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, r := range reqs {
			if first, ok := seen[r.Name]; ok {
				return nil, fmt.Errorf("%s: duplicate name %q (first in %s)", file, r.Name, first)
			}
			seen[r.Name] = file
		}
		all = append(all, reqs...)
	}
	return all, nil
}

// compareFileOrder orders corpus files as a Recorder numbers them:
// corpus.jsonl, corpus-2.jsonl, ..., corpus-10.jsonl.
func compareFileOrder(a, b string) int {
	sa, na := splitFileNumber(a)
	sb, nb := splitFileNumber(b)
	if c := strings.Compare(sa, sb); c != 0 {
		return c
	}
	if na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

// splitFileNumber splits "dir/corpus-12.jsonl" into "dir/corpus" and 12;
// a name without a number has 0.
func splitFileNumber(name string) (string, int) {
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	i := strings.LastIndexByte(stem, '-')
	if i < 0 {
		return stem, 0
	}
	n, err := strconv.Atoi(stem[i+1:])
	if err != nil || n < 0 {
		return stem, 0
	}
	return stem[:i], n
}
