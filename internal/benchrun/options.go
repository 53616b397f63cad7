// Package benchrun runs the gateway benchmark on loopback and reports it:
// the source schemas, then per round a fresh gateway process per path, the
// paths alternating (legacy, sockets, legacy, sockets, ...) so that machine
// noise falls on both, each under a closed-loop load from a process of its
// own. Every process is the fusion-transport binary (its schemas, gateway
// and load commands).
//
//	rep, err := benchrun.Run(ctx, benchrun.Options{Binary: "/tmp/fusion-transport"})
//	if err != nil { ... }
//	rep.WriteTable(os.Stdout)
//
// Per round and path it measures, over the load's measured window: req/s and
// latency percentiles (from the load process), gateway CPU per request (user
// and system time from /proc/PID/stat), allocated bytes and objects per
// request (the gateway's runtime/metrics, from its /debug/stats), source
// schema calls per request; and per gateway process the idle RSS (VmRSS after
// one request), the peak RSS (VmHWM at the end) and the time from exec to the
// ready line. The report gives per mode and path the median over rounds with
// min and max, and the ratio of the medians. It needs Linux (/proc).
package benchrun

import (
	"fmt"
	"io"
	"time"
)

// Mode is a load mode of the benchmark.
type Mode struct {
	// Name is the mode's name in the report.
	Name string
	// Latency is the delay of every source schema answer; zero: none.
	Latency time.Duration
}

// The benchmark's two modes.
var (
	// Constant: the source schemas answer as fast as they can.
	Constant = Mode{Name: "constant"}
	// ConstantLatency: each source schema request waits 4 ms first.
	ConstantLatency = Mode{Name: "constant-latency", Latency: 4 * time.Millisecond}
)

// DefaultModes are the modes of a run whose Options.Modes is nil.
var DefaultModes = []Mode{Constant, ConstantLatency}

// Defaults of Options.
const (
	DefaultRounds   = 2
	DefaultDuration = 10 * time.Second
	DefaultWarmup   = 2 * time.Second
	DefaultVUs      = 50
)

// Options configure Run. Every zero field but Binary means its default.
type Options struct {
	// Binary is the fusion-transport executable that every child process
	// runs. Required.
	Binary string

	// Rounds per mode; each round runs both paths. Default: 2.
	Rounds int

	// Duration is the measured window of each run. Default: 10s.
	Duration time.Duration

	// Warmup runs before each measured window. Default: 2s; negative: none.
	Warmup time.Duration

	// VUs is the number of virtual users of the load. Default: 50.
	VUs int

	// Modes to run, in order. Nil: DefaultModes.
	Modes []Mode

	// ProfileDir, if set, receives a CPU profile and an allocation profile
	// of the gateway per mode and path, taken in the measured window of the
	// last round: MODE-PATH.cpu.pprof and MODE-PATH.allocs.pprof. CPU
	// profiling costs the gateway some CPU in that round, on both paths.
	ProfileDir string

	// Progress, if set, receives the progress display: the round, mode, path
	// and the time left.
	Progress io.Writer

	// LiveProgress rewrites one progress line every second (for a terminal)
	// instead of writing a line per run.
	LiveProgress bool

	// GatewayConfig, if set, is a YAML configuration file passed to every
	// gateway (its -config flag); the source schemas' URLs are set over it.
	GatewayConfig string

	// Environ is the environment of the child processes, to which each
	// gateway's FUSION_SOCKETS_TRANSPORT is added. Nil: the environment of
	// this process.
	Environ []string

	// Command is recorded in the report as the command that made it.
	Command string

	// AfterSwitch, if set, is the FUSION_SOCKETS_TRANSPORT value of the
	// After side instead of "1", e.g. "canary:0.5" to measure a canary
	// against legacy. The report still names the side "sockets".
	AfterSwitch string
}

// paths returns the sides in the order each round runs them, with
// AfterSwitch applied.
func (o Options) paths() []path {
	if o.AfterSwitch == "" {
		return paths
	}
	return []path{paths[0], {paths[1].name, o.AfterSwitch}}
}

func (o Options) rounds() int {
	if o.Rounds <= 0 {
		return DefaultRounds
	}
	return o.Rounds
}

func (o Options) duration() time.Duration {
	if o.Duration <= 0 {
		return DefaultDuration
	}
	return o.Duration
}

func (o Options) warmup() time.Duration {
	switch {
	case o.Warmup < 0:
		return 0
	case o.Warmup == 0:
		return DefaultWarmup
	}
	return o.Warmup
}

func (o Options) vus() int {
	if o.VUs <= 0 {
		return DefaultVUs
	}
	return o.VUs
}

func (o Options) modes() []Mode {
	if o.Modes == nil {
		return DefaultModes
	}
	return o.Modes
}

// ParseModes parses a comma-separated list of mode names.
func ParseModes(list string) ([]Mode, error) {
	var out []Mode
	for _, name := range splitComma(list) {
		switch name {
		case Constant.Name:
			out = append(out, Constant)
		case ConstantLatency.Name:
			out = append(out, ConstantLatency)
		default:
			return nil, fmt.Errorf("unknown mode %q: want %s or %s", name, Constant.Name, ConstantLatency.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mode in %q: want %s, %s or both", list, Constant.Name, ConstantLatency.Name)
	}
	return out, nil
}

// path is one side of the comparison and the FUSION_SOCKETS_TRANSPORT value
// that selects it.
type path struct {
	name, switchValue string
}

// paths in the order each round runs them: Before, then After.
var paths = []path{{"legacy", "0"}, {"sockets", "1"}}
