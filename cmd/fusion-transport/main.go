// Command fusion-transport runs the transport's jobs on loopback or against
// real source schemas:
//
//	fusion-transport [-html DIR]       the compare report, then a short bench, on the embedded default (pages in DIR)
//	fusion-transport compare [flags]   run a corpus through both paths and report differences
//	fusion-transport config [flags]    the effective configuration, or what a reload would change
//	fusion-transport schemas [flags]   serve the embedded source schemas (and, with -faults, faulty ones)
//	fusion-transport gateway [flags]   serve the benchmark gateway
//	fusion-transport load [flags]      a closed-loop load against a GraphQL endpoint
//	fusion-transport bench [flags]     the A/B benchmark of both paths
//
// Run "fusion-transport <command> -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand. run returns the process exit code: 0 for
// success, 1 for a negative result (such as differences found), 2 for a
// usage or setup error.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"config":  {"print the effective configuration per source schema with the origin of each value, or what a reload would change (-diff)", runConfig},
	"compare": {"run a corpus of source schema requests through both paths and report the differences", runCompare},
	"schemas": {"serve the embedded source schemas (accounts, inventory, products, reviews) on loopback", runSchemas},
	"gateway": {"serve the benchmark gateway, which answers the deep-recursion query through the selected path", runGateway},
	"load":    {"run a closed-loop load (virtual users, duration, warm-up) against a GraphQL endpoint", runLoad},
	"bench":   {"benchmark the two paths on loopback: source schemas, a gateway per path and round, load, a table", runBench},
}

// defaultCommand runs when flags but no command are given.
const defaultCommand = "compare"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runDefault(ctx, "", stdout, stderr)
	}
	if dir, ok := defaultHTML(args); ok {
		return runDefault(ctx, dir, stdout, stderr)
	}
	name := defaultCommand
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	} else if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		usage(stdout)
		return 0
	}
	if name == "help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "fusion-transport: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	return cmd.run(ctx, args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: fusion-transport [command] [flags]\n\nWith no arguments it runs the compare report and then a short bench on the\nembedded source schemas; with -html DIR only, it also writes them as pages,\nDIR/compare.html and DIR/bench.html. Commands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun \"fusion-transport <command> -h\" for the flags of a command.\n")
}

// runDefault is what a new user gets from "go run ./cmd/fusion-transport":
// the compare report on the embedded source schemas, then a short bench
// (one round of 3 s per mode and path). It exits with compare's code if
// that is not 0, else with bench's.
//
// With htmlDir (fusion-transport -html DIR) it also writes both reports as
// pages: DIR/compare.html and DIR/bench.html.
func runDefault(ctx context.Context, htmlDir string, stdout, stderr io.Writer) int {
	var compareArgs, benchHTML []string
	if htmlDir != "" {
		if err := os.MkdirAll(htmlDir, 0o755); err != nil {
			fmt.Fprintf(stderr, "fusion-transport: -html: %v\n", err)
			return 2
		}
		compareArgs = []string{"-html", filepath.Join(htmlDir, "compare.html")}
		benchHTML = []string{"-html", filepath.Join(htmlDir, "bench.html")}
	}
	fmt.Fprintln(stdout, "== compare: the built-in corpus through both paths, on the embedded source schemas")
	if code := runCompare(ctx, compareArgs, stdout, stderr); code != 0 {
		return code
	}
	fmt.Fprintln(stdout, "\n== bench (short: 1 round, 3s per run; \"fusion-transport bench -h\" for the full one)")
	code := runBench(ctx, append([]string{"-rounds", "1", "-duration", "3s", "-warmup", "1s", "-vus", "20"}, benchHTML...), stdout, stderr)
	if code == 0 && htmlDir != "" {
		fmt.Fprintf(stdout, "\npages: %s, %s\n", compareArgs[1], benchHTML[1])
	}
	return code
}

// defaultHTML reports whether args are the default run's only flag,
// "-html DIR" (or -html=DIR), and returns DIR.
func defaultHTML(args []string) (string, bool) {
	switch {
	case len(args) == 2 && (args[0] == "-html" || args[0] == "--html"):
		return args[1], true
	case len(args) == 1 && strings.HasPrefix(args[0], "-html="):
		return strings.TrimPrefix(args[0], "-html="), true
	}
	return "", false
}

// parseFlags parses args with fs. It returns the exit code and false when
// the command must stop: 0 after -h, 2 on a bad flag, or, when noArgs is
// true, on arguments left over (named, with the usage).
func parseFlags(fs *flag.FlagSet, args []string, noArgs bool, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if noArgs && fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		fs.Usage()
		return 2, false
	}
	return 0, true
}
