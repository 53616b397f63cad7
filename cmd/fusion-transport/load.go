package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
)

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "the gateway's GraphQL `URL`, e.g. http://127.0.0.1:4000/graphql (required)")
	vus := fs.Int("vus", load.DefaultVUs, "virtual users, each on its own keep-alive connection")
	duration := fs.Duration("duration", load.DefaultDuration, "length of the measured window")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up before the measured window, not counted (0: none)")
	bodyFile := fs.String("body", "", "`file` with the request: a JSON request object, sent as it is, or a GraphQL document (default: the deep-recursion query)")
	timeout := fs.Duration("timeout", load.DefaultTimeout, "bound on one request; one that runs out counts as an error")
	distinct := fs.Bool("distinct", false, "give every request its own "+load.RequestIDHeader+" header, so that no two in flight are identical (a gateway that forwards it cannot deduplicate them)")
	users := fs.Bool("users", false, "give every virtual user its own "+load.UserHeader+" header (\""+load.UserPrefix+"vuNNN\"), as distinct users send their own credentials (a gateway that forwards it keys per user what it keys by headers)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fusion-transport load -url URL [flags]

Load runs a closed loop against a GraphQL endpoint: each virtual user sends a
POST, waits for the whole answer and sends the next. Answers completed in the
measured window count; a status other than 200 is an error. It prints one
JSON line on stdout: requests, errors, req/s and the p50, p95 and p99
latencies in milliseconds (from an HDR histogram). On stderr it marks the
start and end of the measured window.

It exits 0 when every counted request succeeded, 1 when there were errors or
no answers, and 2 on a usage error.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, false, stderr); !ok {
		return code
	}
	if *url == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "load: -url is required and takes no arguments\n")
		fs.Usage()
		return 2
	}
	cfg := load.Config{
		URL:         *url,
		VUs:         *vus,
		Duration:    *duration,
		Warmup:      *warmup,
		Timeout:     *timeout,
		Distinct:    *distinct,
		Users:       *users,
		OnMeasure:   func() { fmt.Fprintf(stderr, "%s for %s\n", load.MeasureLine, *duration) },
		OnWindowEnd: func() { fmt.Fprintln(stderr, load.WindowEndLine) },
	}
	if *bodyFile != "" {
		raw, err := os.ReadFile(*bodyFile)
		if err != nil {
			fmt.Fprintf(stderr, "load: %v\n", err)
			return 2
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			cfg.Body = t
		} else {
			cfg.Body = load.QueryBody(string(raw), "")
		}
	}
	res, err := load.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 2
	}
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if res.Errors > 0 || res.Requests == 0 {
		if res.FirstError != "" {
			fmt.Fprintf(stderr, "load: %d errors; first: %s\n", res.Errors, res.FirstError)
		}
		return 1
	}
	return 0
}
