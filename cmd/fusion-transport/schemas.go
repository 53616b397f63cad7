package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/replay"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/internal/testsupport/apqserve"
	"github.com/fusiongo/transport/internal/testsupport/faults"
)

func runSchemas(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("schemas", flag.ContinueOnError)
	fs.SetOutput(stderr)
	latency := fs.Duration("latency", 0, "fixed delay before each source schema request is answered (the benchmark's constant-latency mode, e.g. 4ms)")
	replayed := fs.Bool("replay", false, "serve the recorded answers of the schemas to the benchmark gateway's requests instead of running them (package replay): answers that cost nothing; other requests get 404")
	learn := fs.Bool("learn", false, "with -replay, answer a request that was not recorded by running the schema once and recording its answer (for other gateways than the benchmark's, e.g. graphql-go-tools)")
	apq := fs.String("apq", "on", "automatic persisted queries (APQ): on (served, as Apollo Server and gqlgen do), not-supported (refused: PersistedQueryNotSupported), off (a schema without APQ: a request by its hash alone gets 400); the last two try a client's fallback")
	cacheControl := fs.String("cache-control", "", "the Cache-Control `value` of every answer, e.g. \"public, max-age=60\" (the benchmarks' cache mode); default: none. Each schema's server also answers GET "+schemas.CallsPath+" with the number of requests the schema received")
	withFaults := fs.Bool("faults", false, "also serve the fault-injecting source schema (connection refused, resets, stalls, bad framing, 5xx, 429, redirect loops, oversized headers, endless body, TLS failure) and print a URL per fault")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fusion-transport schemas [flags]\n\nServes the embedded source schemas (accounts, inventory, products, reviews)\non loopback, prints their URLs, and runs until interrupted. With -replay it\nfirst records their answers to the benchmark gateway's requests and serves\nthose, byte for byte, looked up by the request body.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, false, stderr); !ok {
		return code
	}
	mode, ok := apqModes[*apq]
	if !ok {
		fmt.Fprintf(stderr, "schemas: -apq %q: want on, not-supported or off\n", *apq)
		return 2
	}
	urls, closeServers, err := startSchemas(ctx, schemas.Options{Latency: *latency, CacheControl: *cacheControl, APQ: mode}, *replayed, *learn, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "schemas: %v\n", err)
		return 2
	}
	defer closeServers()
	for _, name := range schemas.Names {
		fmt.Fprintf(stdout, "%s %s\n", name, urls[name])
	}
	if *withFaults {
		faultSrv, err := faults.Start(faults.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "schemas: starting the fault server: %v\n", err)
			return 2
		}
		defer faultSrv.Close()
		for _, f := range faults.All {
			fmt.Fprintf(stdout, "fault/%s %s\n", f, faultSrv.URL(f))
		}
	}
	<-ctx.Done()
	return 0
}

// apqModes are the values of schemas -apq.
var apqModes = map[string]apqserve.Mode{"on": apqserve.On, "not-supported": apqserve.NotSupported, "off": apqserve.Off}

// startSchemas starts the embedded source schemas with opts, or with
// replayed their recorded answers (learning the answers to other requests
// with learn; opts.APQ holds for them too), and returns their URLs and how
// to close them.
func startSchemas(ctx context.Context, opts schemas.Options, replayed, learn bool, stderr io.Writer) (map[string]string, func(), error) {
	if !replayed {
		srv, err := schemas.Start(opts)
		if err != nil {
			return nil, nil, err
		}
		return srv.URLs, func() { _ = srv.Close() }, nil
	}
	rec, err := replay.Record(ctx)
	if err != nil {
		return nil, nil, err
	}
	srv, err := replay.Start(rec, replay.Options{Latency: opts.Latency, Learn: learn, CacheControl: opts.CacheControl, APQ: opts.APQ})
	if err != nil {
		return nil, nil, err
	}
	return srv.URLs, func() {
		_ = srv.Close()
		if learn {
			fmt.Fprintf(stderr, "schemas: replay learnt %d answers\n", srv.Learnt())
		}
	}, nil
}
