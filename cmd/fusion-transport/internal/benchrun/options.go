// Package benchrun runs the gateway benchmark on loopback and reports it:
// the source schemas, then per round a fresh gateway process per side, the
// sides alternating (legacy, sockets, legacy, sockets, ...; or with three
// sides, such as legacy, sockets:nethttp, sockets:h1, ABCABC...) so that
// machine noise falls on all, each under a closed-loop load from a process
// of its own. Every process is the fusion-transport binary (its schemas, gateway
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
// ready line. The report gives per mode and side the median over rounds with
// min and max, and the ratios of the medians to the first side's (and, when
// both sockets engines run, of h1 to nethttp). It needs Linux (/proc).
package benchrun

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fusiongo/transport/env"
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

	// Rounds per mode; each round runs every side. Default: 2.
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
	// of the gateway per mode and side, taken in the measured window of the
	// last round: MODE-SIDE.cpu.pprof and MODE-SIDE.allocs.pprof, with a
	// ':' in the side's name written '-' (constant-sockets-h1.cpu.pprof).
	// CPU profiling costs the gateway some CPU in that round, on every side.
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

	// AfterSwitch, if set, is the FUSION_SOCKETS_TRANSPORT value of every
	// sockets side instead of "1", e.g. "canary:0.5" to measure a canary
	// against legacy. The report still names the side as Sides does.
	AfterSwitch string

	// Sides are the configurations each round runs, in order (ABCABC...):
	// two or three, the first the one the others are compared with. Nil:
	// DefaultSides, legacy then sockets; in the cache mode
	// DefaultCacheSides, sockets then sockets+cache.
	Sides []Side

	// Subgraphs are the source schemas the gateways call: the embedded
	// schemas' recorded answers (SubgraphsReplay) or the schemas
	// themselves (SubgraphsSchemas). Default: SubgraphsReplay.
	Subgraphs Subgraphs

	// Distinct makes every gateway request differ from the others in
	// flight: the load sends each its own load.RequestIDHeader and every
	// gateway forwards it to the source schemas (FUSION_FORWARD_HEADERS),
	// as real traffic from different users differs, so that nothing in
	// the way may collapse two into one. The replayed source schemas
	// answer by body and ignore it. Default: false, every request the
	// same, as the public benchmark sends them.
	Distinct bool

	// Cache is the cache mode: the source schemas answer every request
	// with Cache-Control CacheControl, every virtual user sends its own
	// Authorization (load.Config.Users), which every gateway forwards (so
	// that its answers are keyed per user unless marked public), and the
	// report adds, per side, the calls that reached the source schemas
	// per gateway request and the response cache's hit ratio, and checks
	// the cache targets of each side with the cache against the same side
	// without. The sides with the cache are named with "+cache"
	// (ParseSides). Default: false.
	Cache bool

	// APQ runs each side twice per round, without and with automatic
	// persisted queries (persisted_queries.mode: apq for every source
	// schema; the source schemas serve them): the side as named, then
	// its twin named with APQSuffix. Every gateway then counts the request
	// bytes it writes to the source schemas, and the report has them per
	// call, with each twin compared with its side (targets: request bytes
	// per call ≤ 0.3 ×, CPU per request ≤ 1.0 ×). Default: false, and the
	// source schemas serve no persisted queries.
	APQ bool
}

// APQSuffix ends the name of a side's twin with automatic persisted
// queries (Options.APQ): "sockets:h1+apq".
const APQSuffix = "+apq"

// CacheControl is what the source schemas answer in the cache mode
// (Options.Cache): every answer may be shared, for a minute.
const CacheControl = "public, max-age=60"

// cacheSuffix ends the name of a side whose gateway runs with the
// response cache on (gateway -cache).
const cacheSuffix = "+cache"

// Side is one configuration of the benchmark: a gateway process on a path
// and, on the sockets path, an engine.
type Side struct {
	// Name names the side in the report and its profiles: legacy,
	// sockets, sockets:nethttp or sockets:h1 (see ParseSides).
	Name string
	// Switch is the gateway's FUSION_SOCKETS_TRANSPORT: "0" for legacy,
	// "1" for sockets.
	Switch string
	// Engine is the gateway's -engine, which sets the engine of the
	// defaults and of every source schema: env.EngineNetHTTP or
	// env.EngineH1. Empty: the configuration's own (Options.GatewayConfig,
	// FUSION_DEFAULTS__ENGINE), the built-in default unless they say
	// otherwise.
	Engine string
	// Cache runs the gateway with the response cache on for every source
	// schema (its -cache); the side's name ends in "+cache".
	Cache bool
	// APQ turns automatic persisted queries on for every source schema
	// (FUSION_DEFAULTS__PERSISTED_QUERIES__MODE=apq); set on the twins
	// that Options.APQ adds.
	APQ bool
}

// uncached is the name of the side that is s without the cache.
func (s Side) uncached() string { return strings.TrimSuffix(s.Name, cacheSuffix) }

// Path is the path the side runs: legacy for Switch "0", else sockets.
func (s Side) Path() env.Path {
	if s.Switch == "0" {
		return env.PathLegacy
	}
	return env.PathSockets
}

// DefaultSides are the sides of a run whose Options.Sides is nil: Before
// (legacy), then After (sockets).
var DefaultSides = []Side{{Name: "legacy", Switch: "0"}, {Name: "sockets", Switch: "1"}}

// DefaultCacheSides are the sides of a run in the cache mode whose
// Options.Sides is nil: sockets without the cache, then with it.
var DefaultCacheSides = []Side{{Name: "sockets", Switch: "1"}, {Name: "sockets" + cacheSuffix, Switch: "1", Cache: true}}

// SideNames lists the names ParseSides accepts, each also with "+cache".
const SideNames = "legacy, sockets (the configuration's own engine), sockets:" + env.EngineNetHTTP + " or sockets:" + env.EngineH1

// ParseSides parses a comma-separated list of two or three side names,
// each at most once: legacy, sockets, sockets:nethttp, sockets:h1, each
// followed by "+cache" or not (the gateway's response cache on).
func ParseSides(list string) ([]Side, error) { return parseSides(list, 2) }

// ParseAPQSides parses the sides of a run with Options.APQ, where each
// side runs with its twin: as ParseSides, but one side is enough.
func ParseAPQSides(list string) ([]Side, error) { return parseSides(list, 1) }

// parseSides parses a list of at least least and at most three sides.
func parseSides(list string, least int) ([]Side, error) {
	var out []Side
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		base, cache := strings.CutSuffix(item, cacheSuffix)
		var s Side
		switch base {
		case "legacy":
			s = Side{Switch: "0"}
		case "sockets":
			s = Side{Switch: "1"}
		case "sockets:" + env.EngineNetHTTP, "sockets:" + env.EngineH1:
			s = Side{Switch: "1", Engine: strings.TrimPrefix(base, "sockets:")}
		case "":
			if cache {
				return nil, fmt.Errorf("unknown side %q: want %s, each with %s or not", item, SideNames, cacheSuffix)
			}
			return nil, errors.New("an empty side between commas")
		default:
			return nil, fmt.Errorf("unknown side %q: want %s", item, SideNames)
		}
		s.Name, s.Cache = item, cache
		if slices.ContainsFunc(out, func(o Side) bool { return o.Name == item }) {
			return nil, fmt.Errorf("side %q is listed twice", item)
		}
		out = append(out, s)
	}
	if n := len(out); n < least || n > 3 {
		word, want := "sides", "two or three"
		if n == 1 {
			word = "side"
		}
		if least == 1 {
			want = "one to three"
		}
		return nil, fmt.Errorf("%d %s: want %s", n, word, want)
	}
	return out, nil
}

// sides returns the sides in the order each round runs them, with
// AfterSwitch applied to the sockets ones, and with Options.APQ each
// followed by its twin with persisted queries.
func (o Options) sides() []Side {
	sides := o.Sides
	switch {
	case sides == nil && o.Cache:
		sides = DefaultCacheSides
	case sides == nil:
		sides = DefaultSides
	}
	if o.APQ {
		var twins []Side
		for _, s := range sides {
			twin := s
			twin.Name, twin.APQ = s.Name+APQSuffix, true
			twins = append(twins, s, twin)
		}
		sides = twins
	}
	if o.AfterSwitch == "" {
		return sides
	}
	out := slices.Clone(sides)
	for i := range out {
		if out[i].Switch == "1" {
			out[i].Switch = o.AfterSwitch
		}
	}
	return out
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
