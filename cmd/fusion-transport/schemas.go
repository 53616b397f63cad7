package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
	"github.com/fusiongo/transport/internal/testsupport/faults"
)

func runSchemas(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("schemas", flag.ContinueOnError)
	fs.SetOutput(stderr)
	latency := fs.Duration("latency", 0, "fixed delay before each source schema request is answered (the benchmark's constant-latency mode, e.g. 4ms)")
	withFaults := fs.Bool("faults", false, "also serve the fault-injecting source schema (connection refused, resets, stalls, bad framing, 5xx, 429, redirect loops, oversized headers, endless body, TLS failure) and print a URL per fault")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fusion-transport schemas [flags]\n\nServes the embedded source schemas (accounts, inventory, products, reviews)\non loopback, prints their URLs, and runs until interrupted.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, false, stderr); !ok {
		return code
	}
	srv, err := schemas.Start(schemas.Options{Latency: *latency})
	if err != nil {
		fmt.Fprintf(stderr, "schemas: %v\n", err)
		return 2
	}
	defer srv.Close()
	for _, name := range schemas.Names {
		fmt.Fprintf(stdout, "%s %s\n", name, srv.URLs[name])
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
