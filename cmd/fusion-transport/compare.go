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
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchrun"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/corpus"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/compare"
	"github.com/fusiongo/transport/env"
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
	htmlFile               string
	failOn                 string
	rules                  compare.Rules
	progress, verbose      bool
	sides                  []compareSide
}

// compareSide is one configuration that the compare command sets beside
// the others: a whole path and, on the sockets path, the engine every
// source schema uses.
type compareSide struct {
	name   string   // as given to -sides; names the side in the report
	path   env.Path // PathLegacy or PathSockets
	engine string   // env.EngineNetHTTP or env.EngineH1; empty: the configuration's own
}

// defaultSides is -sides when it is not given: the report is then the one
// pair legacy vs sockets, as it always was.
const defaultSides = "legacy,sockets"

// parseSides parses -sides with the grammar bench's -sides shares
// (benchrun.ParseSides): two or three side names, each at most once, none
// with the response cache (+cache).
func parseSides(list string) ([]compareSide, error) {
	parsed, err := benchrun.ParseSides(list)
	if err != nil {
		return nil, err
	}
	sides := make([]compareSide, len(parsed))
	for i, p := range parsed {
		if p.Cache {
			// The harness sends both sides of every request for real.
			return nil, fmt.Errorf("side %q: compare never answers from a response cache; +cache is bench's", p.Name)
		}
		sides[i] = compareSide{name: p.Name, path: p.Path(), engine: p.Engine}
	}
	return sides, nil
}

// config returns cfg as this side runs it: its path, whole (neither a
// per-schema rollout nor shadow comparison from the environment applies),
// and its engine, if it names one, for the defaults and every source
// schema. cfg itself is left as it is.
func (s compareSide) config(cfg env.Config) env.Config {
	c := cfg
	c.Path, c.SocketsSchemas, c.Shadow = s.path, nil, env.ShadowSettings{}
	if s.engine != "" {
		c = withEngine(c, s.engine)
	}
	return c
}

// compareSideOptions, if set, gives options for the Invoker of a side,
// with the configuration it runs: tests use it to watch a side's
// connections.
var compareSideOptions func(side string, cfg env.Config) []transport.Option

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f compareFlags
	var sides string
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
	fs.StringVar(&f.htmlFile, "html", "", "write an HTML page to `file`, to look at: per pair the counts per source schema, each difference with both sides' values side by side, the identical requests folded")
	fs.Var(&ignoreHeaders, "ignore-header", "response header `name` left out of the comparison, besides Date and the hop-by-hop headers (repeatable, or comma-separated)")
	fs.Var(&ignorePaths, "ignore-path", "JSON `path` left out of body comparison, e.g. extensions.tracing or errors.*.extensions; * matches any member or index (repeatable, or comma-separated)")
	fs.Var(&redact, "redact", "header `name` whose values are published as [REDACTED], besides Authorization, Cookie, Set-Cookie and Proxy-Authorization (repeatable, or comma-separated)")
	fs.Float64Var(&f.rules.TimingRatio, "timing-ratio", 0, "report a timing difference when one side took more than this many times as long as the other (0: timing is not compared)")
	fs.DurationVar(&f.rules.TimingMin, "timing-min", 0, "least extra time that makes a timing difference, with -timing-ratio")
	fs.BoolVar(&f.progress, "progress", false, "print \"compared N/M\" on stderr about once a second, for long corpora")
	fs.StringVar(&sides, "sides", defaultSides, "the `sides` set side by side, comma-separated, two or three of "+benchrun.SideNames+"; the first is compared with each of the others")
	fs.BoolVar(&f.verbose, "v", false, "list every request and its differences before the grouped report")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fusion-transport compare [flags]

Compare sends every request of a corpus through the legacy path and the
sockets path (or the -sides given), against the same source schemas, and
reports the differences in status, headers (Date and hop-by-hop headers
left out), body (JSON compared as JSON), errors, redirects and, with
-timing-ratio, timing. Identical differences across requests are reported
once, with a count and the first %d request names. It exits 0 when the
differences are within -fail-on (by default: none at all),
1 when they did not stay within it, and 2 on a usage or setup error.

%s

With no flags it starts the embedded source schemas on loopback and runs the
built-in corpus. With -config, it calls the source schemas that the file
names (the environment's FUSION_* variables apply as usual; the file's
transport key and FUSION_SOCKETS_TRANSPORT are ignored: the -sides run).
Values of Authorization, Cookie, Set-Cookie, Proxy-Authorization and -redact
headers never appear in a report.

-sides chooses the configurations set side by side: legacy, sockets (on the
engine that the configuration gives each source schema), sockets:nethttp or
sockets:h1 (that engine for every source schema, whatever the configuration
says). With three sides the first is compared with each of the others, as
two pairs, e.g. -sides legacy,sockets:nethttp,sockets:h1 gives legacy vs
sockets:nethttp and legacy vs sockets:h1: the text report has a section per
pair, the JSON report a "pairs" list, the JUnit report a testsuite per pair,
and -fail-on applies to each pair.

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
	if f.sides, err = parseSides(sides); err != nil {
		fmt.Fprintf(stderr, "compare: -sides %q: %v\n", sides, err)
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
	if len(f.sides) == 0 { // runDefault and tests that build compareFlags
		f.sides, _ = parseSides(defaultSides)
	}
	sides := make([]compare.Side, len(f.sides))
	for i, side := range f.sides {
		c := side.config(cfg)
		opts := []transport.Option{transport.WithLogger(log)}
		if compareSideOptions != nil {
			opts = append(opts, compareSideOptions(side.name, c)...)
		}
		inv, err := transport.New(c, opts...)
		if err != nil {
			fmt.Fprintf(stderr, "compare: %s path: %v\n", side.name, err)
			return 2
		}
		defer inv.Close()
		sides[i] = compare.Side{Name: side.name, Invoker: inv}
	}
	urls := make(map[string]string, len(cfg.SourceSchemas))
	for name, s := range cfg.SourceSchemas {
		urls[name] = s.URL
	}
	opts := compare.Options{URLs: urls, Concurrency: f.concurrency, Timeout: f.timeout, Rules: f.rules}
	pairs := len(sides) - 1
	var progress *compareProgress
	if f.progress {
		progress = &compareProgress{w: stderr, now: time.Now, every: time.Second}
	}
	// The first side against each of the others, one pair after the other;
	// the progress counts the requests of every pair.
	reports := make([]*compare.Report, pairs)
	for i := range pairs {
		if progress != nil {
			done := i * len(reqs)
			opts.Progress = func(n, total int) { progress.update(done+n, pairs*total) }
		}
		report, err := compare.Run(ctx, reqs, sides[0], sides[i+1], opts)
		if err != nil {
			fmt.Fprintf(stderr, "compare: %v\n", err)
			return 2
		}
		reports[i] = report
	}
	results := make([]comparePair, pairs)
	failed := false
	for i, report := range reports {
		results[i] = comparePair{report: report, breaches: failOn.Check(report)}
		failed = failed || len(results[i].breaches) > 0
		if c := report.Counts(); c.Requests > 0 && c.BothFailed == c.Requests {
			what := "both paths"
			if pairs > 1 {
				what = report.A + " and " + report.B
			}
			fmt.Fprintf(stderr, "compare: warning: every request failed on %s, which counts as identical: check -config and that the source schemas answer\n", what)
		}
	}

	if err := writeCompareFiles(f, results, failOn); err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	for _, pair := range results {
		if pairs > 1 {
			if _, err := fmt.Fprintf(stdout, "== %s vs %s\n", pair.report.A, pair.report.B); err != nil {
				fmt.Fprintf(stderr, "compare: writing the report: %v\n", err)
				return 2
			}
		}
		if err := writeCompareText(stdout, f.verbose, pair.report, failOn, pair.breaches); err != nil {
			fmt.Fprintf(stderr, "compare: writing the report: %v\n", err)
			return 2
		}
	}
	if failed {
		return 1
	}
	return 0
}

// comparePair is the report of one pair of sides and the -fail-on
// thresholds it exceeds.
type comparePair struct {
	report   *compare.Report
	breaches []compare.Breach
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

// compareJSON is the document -json writes for one pair of sides, and
// each element of compareSidesJSON's pairs.
type compareJSON struct {
	Report compare.Report `json:"report"`
	FailOn struct {
		Spec     string           `json:"spec"`
		Passed   bool             `json:"passed"`
		Breaches []compare.Breach `json:"breaches"`
	} `json:"fail_on"`
}

// compareSidesJSON is the document -json writes for three sides: the
// sides, whether every pair passed -fail-on, and the pairs, the first side
// against each of the others in order.
type compareSidesJSON struct {
	Sides  []string      `json:"sides"`
	Passed bool          `json:"passed"`
	Pairs  []compareJSON `json:"pairs"`
}

func newCompareJSON(pair comparePair, failOn compare.FailOn) compareJSON {
	doc := compareJSON{Report: *pair.report}
	doc.FailOn.Spec, doc.FailOn.Passed, doc.FailOn.Breaches = failOn.String(), len(pair.breaches) == 0, pair.breaches
	if doc.FailOn.Breaches == nil {
		doc.FailOn.Breaches = []compare.Breach{}
	}
	return doc
}

// writeCompareFiles writes the -junit, -html and -json reports: for one
// pair as they always were, for more a testsuite per pair in one JUnit
// document, a section per pair on one page and a "pairs" list in one JSON
// document.
func writeCompareFiles(f *compareFlags, pairs []comparePair, failOn compare.FailOn) error {
	if f.junitFile != "" {
		if err := writeCompareFile(f.junitFile, func(w io.Writer) error {
			if len(pairs) == 1 {
				return pairs[0].report.WriteJUnit(w, "fusion-transport compare")
			}
			reports := make([]*compare.Report, len(pairs))
			for i, p := range pairs {
				reports[i] = p.report
			}
			return compare.WriteJUnitReports(w, "fusion-transport compare", reports...)
		}); err != nil {
			return fmt.Errorf("-junit: %w", err)
		}
	}
	if f.htmlFile != "" {
		if err := writeCompareFile(f.htmlFile, func(w io.Writer) error {
			reports := make([]*compare.Report, len(pairs))
			for i, p := range pairs {
				reports[i] = p.report
			}
			return compare.WriteHTMLReports(w, "fusion-transport compare", reports...)
		}); err != nil {
			return fmt.Errorf("-html: %w", err)
		}
	}
	if f.jsonFile != "" {
		var doc any
		if len(pairs) == 1 {
			doc = newCompareJSON(pairs[0], failOn)
		} else {
			all := compareSidesJSON{Sides: []string{pairs[0].report.A}, Passed: true}
			for _, p := range pairs {
				all.Sides = append(all.Sides, p.report.B)
				all.Passed = all.Passed && len(p.breaches) == 0
				all.Pairs = append(all.Pairs, newCompareJSON(p, failOn))
			}
			doc = all
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
