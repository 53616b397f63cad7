package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchrun"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", benchrun.DefaultRounds, "rounds per mode; each round runs a fresh gateway per side of -sides, in order")
	duration := fs.Duration("duration", benchrun.DefaultDuration, "measured window of each run")
	warmup := fs.Duration("warmup", benchrun.DefaultWarmup, "warm-up before each measured window (0: none)")
	vus := fs.Int("vus", benchrun.DefaultVUs, "virtual users of the closed-loop load")
	modes := fs.String("modes", "constant,constant-latency", "`modes` to run: constant (source schemas answer at once), constant-latency (each waits 4ms)")
	jsonFile := fs.String("json", "", "also write the report, with every round's values, as JSON to `file`")
	htmlFile := fs.String("html", "", "also write the report as a self-contained HTML page to `file`: per mode the latency percentile curves, CPU and allocations per round, the targets")
	profileDir := fs.String("profile", "", "write CPU and allocation profiles of the gateway, per mode and path, from the last round to `dir`")
	gatewayConfig := fs.String("config", "", "YAML configuration `file` for every gateway (docs/configuration.md), e.g. to tune a path; the source schemas' URLs are set over it")
	sidesList := ""
	fs.StringVar(&sidesList, "sides", sidesList, "the `sides` each round runs, comma-separated, two or three of "+benchrun.SideNames+", each with +cache or not (its gateway's response cache on); the first is the one the others are compared with (as compare -sides) (default \"legacy,sockets\"; with -cache \"sockets,sockets+cache\")")
	fs.StringVar(&sidesList, "paths", sidesList, "the old name of -sides, still read")
	afterSwitch := fs.String("after-switch", "", "FUSION_SOCKETS_TRANSPORT `value` of the sockets sides instead of 1 (sockets), e.g. canary:0.5; the report still calls them as -sides does")
	subgraphs := fs.String("subgraphs", string(benchrun.SubgraphsReplay), "the source `schemas` the gateways call: replay (the embedded schemas' recorded answers, costing next to nothing) or schemas (the embedded schemas, executing every request)")
	apq := fs.Bool("apq", false, "run each side twice per round, without and with automatic persisted queries (SIDE and SIDE+apq; the source schemas serve them), and report the request bytes per source schema call and the targets of APQ (bytes ≤ 0.3 ×, CPU ≤ 1.0 × without); -sides may then name one side")
	distinct := fs.Bool("distinct", false, "every gateway request its own X-Request-Id, forwarded to the source schemas, so that none is identical to another in flight (real traffic); default: all the same, as the public benchmark")
	cache := fs.Bool("cache", false, "the cache mode: the source schemas answer Cache-Control: "+benchrun.CacheControl+", every virtual user sends its own Authorization (forwarded), and the sides default to sockets,sockets+cache (a side named +cache runs its gateway with the response cache on); the table adds the calls that reached the source schemas per request, the hit ratio and the cache targets")
	bin := fs.String("bin", "", "the fusion-transport `binary` that runs the source schemas, gateways and load (default: this executable)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fusion-transport bench [flags]

Bench compares the legacy and the sockets path on loopback. Per mode it
starts the source schemas (-subgraphs: by default the embedded schemas'
recorded answers, replayed byte for byte, so that they cost next to
nothing), then for each round a fresh gateway
process per path (legacy, sockets, legacy, sockets, ...), each under a
closed-loop load of its own process running the deep-recursion query. It
prints per mode a table of medians over the rounds with [min–max]: req/s,
p50/p95/p99 latency, gateway CPU, allocated bytes and objects per request,
source schema calls per request, idle and peak RSS, startup time and binary
size, with Before = legacy, After = sockets and their ratio, then the
targets. Progress goes to stderr. Linux only (it reads /proc).

-sides sets other sides side by side: sockets:nethttp and sockets:h1 run the
sockets path with that engine for every source schema (the gateway's
-engine), sockets with the configuration's own. With three, e.g. -sides
legacy,sockets:nethttp,sockets:h1, each round runs them in turn (ABCABC...)
and the table has a column per side, the ratio of each to the first and
sockets:h1/sockets:nethttp; the targets are checked for each sockets side
against legacy.

-cache measures the response cache: the source schemas answer every request
with Cache-Control: public, max-age=60 and each virtual user sends its own
Authorization, which the gateways forward; by default the sides are sockets
and sockets+cache (the same gateway with its response cache on, in memory,
shared), and the table adds the calls that reached the source schemas per
gateway request (their own counts), the hit ratio, and the cache targets of
the side with the cache against the side without.

With no flags it takes about 2 minutes: 2 modes x 2 rounds x 2 paths x 12s.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, true, stderr); !ok {
		return code
	}
	modeList, err := benchrun.ParseModes(*modes)
	if err != nil {
		fmt.Fprintf(stderr, "bench: -modes: %v\n", err)
		return 2
	}
	var sides []benchrun.Side // nil: the mode's default
	sidesSet := false
	fs.Visit(func(f *flag.Flag) { sidesSet = sidesSet || f.Name == "sides" || f.Name == "paths" })
	parse := benchrun.ParseSides
	if *apq {
		parse = benchrun.ParseAPQSides
	}
	if sidesSet {
		if sides, err = parse(sidesList); err != nil {
			fmt.Fprintf(stderr, "bench: -sides %q: %v\n", sidesList, err)
			return 2
		}
	}
	subgraphList, err := benchrun.ParseSubgraphs(*subgraphs)
	if err != nil {
		fmt.Fprintf(stderr, "bench: -subgraphs: %v\n", err)
		return 2
	}
	if *rounds <= 0 || *duration <= 0 || *vus <= 0 || *warmup < 0 {
		fmt.Fprintf(stderr, "bench: -rounds, -duration and -vus must be positive, -warmup not negative\n")
		return 2
	}
	binary := *bin
	if binary == "" {
		if binary, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "bench: finding this executable: %v (use -bin)\n", err)
			return 2
		}
	}
	o := benchrun.Options{
		Binary:        binary,
		Rounds:        *rounds,
		Duration:      *duration,
		Warmup:        *warmup,
		VUs:           *vus,
		Modes:         modeList,
		ProfileDir:    *profileDir,
		GatewayConfig: *gatewayConfig,
		AfterSwitch:   *afterSwitch,
		Sides:         sides,
		Subgraphs:     subgraphList,
		Distinct:      *distinct,
		Cache:         *cache,
		APQ:           *apq,
		Progress:      stderr,
		Command:       strings.TrimSpace("fusion-transport bench " + strings.Join(args, " ")),
	}
	if *warmup == 0 {
		o.Warmup = -1 // benchrun's way to say none
	}
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			o.LiveProgress = true
		}
	}
	rep, err := benchrun.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	for _, out := range []struct {
		file  string
		write func(io.Writer) error
	}{{*jsonFile, rep.WriteJSON}, {*htmlFile, rep.WriteHTML}} {
		if out.file == "" {
			continue
		}
		var buf bytes.Buffer
		err := out.write(&buf)
		if err == nil {
			err = os.WriteFile(out.file, buf.Bytes(), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "bench: writing %s: %v\n", out.file, err)
			return 2
		}
	}
	return 0
}
