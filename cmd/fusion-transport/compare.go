package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
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

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "YAML configuration `file` naming the source schemas to call (default: start the embedded source schemas on loopback)")
	corpusFile := fs.String("corpus", "", "JSONL `file` of source schema requests (default: the built-in corpus of the embedded source schemas)")
	concurrency := fs.Int("concurrency", 4, "corpus requests in flight at once")
	timeout := fs.Duration("timeout", 30*time.Second, "bound on one side of one request, body included")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fusion-transport compare [flags]

Compare sends every request of a corpus through the legacy path and the
sockets path, against the same source schemas, and reports per request the
differences in status, headers (Date and hop-by-hop headers left out) and
body (JSON compared as JSON). It exits 0 when both paths gave the same
results, 1 when they did not, and 2 on a usage or setup error.

With no flags it starts the embedded source schemas on loopback and runs the
built-in corpus. With -config, it calls the source schemas that the file
names (the environment's FUSION_* variables apply as usual; the file's
transport key is ignored: both paths run).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "compare: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}

	var cfg env.Config
	if *configFile != "" {
		var err error
		if cfg, err = env.Load(*configFile); err != nil {
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

	raw := corpus.Builtin
	if *corpusFile != "" {
		var err error
		if raw, err = os.ReadFile(*corpusFile); err != nil {
			fmt.Fprintf(stderr, "compare: %v\n", err)
			return 2
		}
	}
	reqs, err := compare.ReadCorpus(bytes.NewReader(raw))
	if err != nil {
		fmt.Fprintf(stderr, "compare: %s: %v\n", corpusName(*corpusFile), err)
		return 2
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sides := [2]compare.Side{{Name: "legacy"}, {Name: "sockets"}}
	for i, path := range []env.Path{env.PathLegacy, env.PathSockets} {
		c := cfg
		c.Transport = path
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
	report, err := compare.Run(ctx, reqs, sides[0], sides[1], compare.Options{URLs: urls, Concurrency: *concurrency, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return 2
	}
	if err := report.Write(stdout); err != nil {
		fmt.Fprintf(stderr, "compare: writing the report: %v\n", err)
		return 2
	}
	if !report.Identical() {
		return 1
	}
	return 0
}

func corpusName(file string) string {
	if file == "" {
		return "built-in corpus"
	}
	return file
}
