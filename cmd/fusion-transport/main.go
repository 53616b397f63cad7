// Command fusion-transport runs the transport's jobs on loopback or against
// real source schemas:
//
//	fusion-transport compare [flags]   run a corpus through both paths and report differences
//	fusion-transport schemas [flags]   serve the embedded source schemas
//
// Run "fusion-transport <command> -h" for a command's flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
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

// defaultCommand runs when no command is named.
const defaultCommand = "compare"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
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
	fmt.Fprintf(w, "Usage: fusion-transport [command] [flags]\n\nCommands (default %s):\n", defaultCommand)
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
