package benchrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/load"
)

// Run runs the benchmark that o describes and returns its report. It stops
// every child process it started before it returns, also when ctx ends.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Binary == "" {
		return nil, errors.New("benchrun: Options.Binary is required")
	}
	fi, err := os.Stat(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("benchrun: the fusion-transport binary: %w", err)
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("benchrun: profile directory: %w", err)
		}
	}
	rep := &Report{
		Date:    time.Now(),
		Command: o.Command,
		Machine: Machine{
			CPUs:      runtime.NumCPU(),
			CPUModel:  cpuModel(),
			GoVersion: runtime.Version(),
			OS:        runtime.GOOS,
			Arch:      runtime.GOARCH,
			LoadStart: loadAverage(),
		},
		Sides:           sideNames(o.sides()),
		Subgraphs:       o.subgraphs(),
		Distinct:        o.Distinct,
		Rounds:          o.rounds(),
		VUs:             o.vus(),
		DurationSeconds: o.duration().Seconds(),
		WarmupSeconds:   o.warmup().Seconds(),
		BinaryBytes:     fi.Size(),
	}
	prog := newProgress(o.Progress, o.LiveProgress, len(o.modes())*o.rounds()*len(o.sides()), o.warmup()+o.duration())
	defer prog.close()
	for _, mode := range o.modes() {
		mr, err := runMode(ctx, o, mode, prog)
		if err != nil {
			return nil, err
		}
		rep.Modes = append(rep.Modes, mr)
	}
	rep.ElapsedSeconds = time.Since(rep.Date).Seconds()
	rep.Machine.LoadEnd = loadAverage()
	prog.finish(time.Since(rep.Date))
	return rep, nil
}

// runMode starts the source schemas with the mode's latency and runs every
// round of every side against them.
func runMode(ctx context.Context, o Options, mode Mode, prog *progress) (ModeReport, error) {
	mr := ModeReport{Mode: mode.Name, LatencyMS: float64(mode.Latency) / float64(time.Millisecond)}
	urls, stop, err := startSchemas(ctx, o, mode)
	if err != nil {
		return mr, err
	}
	defer stop()
	sides := o.sides()
	for round := 1; round <= o.rounds(); round++ {
		for _, side := range sides {
			prog.start(round, o.rounds(), mode.Name, side.Name)
			profile := o.ProfileDir != "" && round == o.rounds()
			s, err := runOne(ctx, o, urls, mode, side, profile)
			if err != nil {
				return mr, fmt.Errorf("round %d, %s, %s: %w", round, mode.Name, sideLabel(side.Name), err)
			}
			s.Round = round
			mr.Samples = append(mr.Samples, s)
			prog.done()
		}
	}
	mr.summarize(sideNames(sides))
	return mr, nil
}

// summarize fills in the mode's Summary per side from its Samples, and,
// when the first side is legacy, the Targets of each sockets side against
// it: they are the sockets path's targets, not an engine's.
func (mr *ModeReport) summarize(sides []string) {
	mr.Summary = make(map[string]map[string]Summary, len(sides))
	for _, name := range sides {
		var own []Sample
		for _, s := range mr.Samples {
			if s.Path == name {
				own = append(own, s)
			}
		}
		mr.Summary[name] = summarizeSamples(own)
	}
	mr.Targets = nil
	if len(sides) > 1 && strings.HasSuffix(sides[1], APQSuffix) {
		mr.Targets = apqTargets(mr.Summary, sides)
		return
	}
	if sides[0] != "legacy" {
		return
	}
	for _, name := range sides[1:] {
		if !strings.HasPrefix(name, "sockets") {
			continue
		}
		ts := targets(mr.Summary[sides[0]], mr.Summary[name])
		if len(sides) > 2 {
			for i := range ts {
				ts[i].Side = name
			}
		}
		mr.Targets = append(mr.Targets, ts...)
	}
}

// sideNames returns the names of sides, in order.
func sideNames(sides []Side) []string {
	names := make([]string, len(sides))
	for i, s := range sides {
		names[i] = s.Name
	}
	return names
}

// sideLabel names a side in an error as the report always did: "legacy
// path", "sockets path"; "sockets:h1 side".
func sideLabel(name string) string {
	if name == "legacy" || name == "sockets" {
		return name + " path"
	}
	return name + " side"
}

// startSchemas starts "fusion-transport schemas" (with -replay for
// SubgraphsReplay) and returns the source
// schemas' URLs, in the form the gateway's -schemas flag takes.
func startSchemas(ctx context.Context, o Options, mode Mode) (string, func(), error) {
	args := []string{"schemas"}
	if o.subgraphs() == SubgraphsReplay {
		args = append(args, "-replay")
	}
	if mode.Latency > 0 {
		args = append(args, "-latency", mode.Latency.String())
	}
	if !o.APQ {
		args = append(args, "-apq", "off") // nothing in front of the answers
	}
	c, err := startChild("source schemas", o.Binary, args, o.Environ)
	if err != nil {
		return "", nil, err
	}
	urls := make(map[string]string)
	for len(urls) < 4 {
		line, err := c.readLine(ctx)
		if err != nil {
			c.stop()
			return "", nil, err
		}
		name, u, ok := strings.Cut(line, " ")
		if !ok {
			c.stop()
			return "", nil, fmt.Errorf("source schemas: unexpected line %q: want NAME URL", line)
		}
		urls[name] = u
	}
	var list []string
	for _, name := range []string{"accounts", "inventory", "products", "reviews"} {
		u, ok := urls[name]
		if !ok {
			c.stop()
			return "", nil, fmt.Errorf("source schemas: no URL for %s in %v", name, urls)
		}
		list = append(list, name+"="+u)
	}
	return strings.Join(list, ","), c.stop, nil
}

// APQVar is the variable that turns persisted queries on for every source
// schema of a gateway.
const APQVar = "FUSION_DEFAULTS__PERSISTED_QUERIES__MODE"

// gatewayCommand returns the arguments and the environment of side's
// gateway: FUSION_SOCKETS_TRANSPORT picks the path, -engine the engine,
// APQVar persisted queries.
func gatewayCommand(o Options, schemaURLs string, side Side) (args, environ []string) {
	environ = append(withoutVar(o.Environ, "FUSION_SOCKETS_TRANSPORT"), "FUSION_SOCKETS_TRANSPORT="+side.Switch)
	if o.Distinct {
		environ = append(withoutVar(environ, "FUSION_FORWARD_HEADERS"), "FUSION_FORWARD_HEADERS="+load.RequestIDHeader)
	}
	args = []string{"gateway", "-addr", "127.0.0.1:0", "-schemas", schemaURLs}
	if o.APQ {
		mode := "off" // whatever this process's environment says
		if side.APQ {
			mode = "apq"
		}
		environ = append(withoutVar(environ, APQVar), APQVar+"="+mode)
		args = append(args, "-count-wire") // on both twins, so that they pay alike
	}
	if o.GatewayConfig != "" {
		args = append(args, "-config", o.GatewayConfig)
	}
	if side.Engine != "" {
		args = append(args, "-engine", side.Engine)
	}
	return args, environ
}

// runOne starts a gateway for side, measures it under load and stops it.
func runOne(ctx context.Context, o Options, schemaURLs string, mode Mode, side Side, profile bool) (Sample, error) {
	s := Sample{Path: side.Name}
	args, environ := gatewayCommand(o, schemaURLs, side)
	began := time.Now()
	gw, err := startChild(side.Name+" gateway", o.Binary, args, environ)
	if err != nil {
		return s, err
	}
	defer gw.stop()
	line, err := gw.readLine(ctx)
	if err != nil {
		return s, err
	}
	base, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		return s, fmt.Errorf("gateway: unexpected first line %q: want ready URL", line)
	}
	s.StartupMS = float64(time.Since(began)) / float64(time.Millisecond)
	probe := newProbe(base, gw.pid())
	defer probe.client.CloseIdleConnections()

	// Idle: after one answered request, before any load.
	if err := probe.warm(ctx); err != nil {
		return s, err
	}
	if s.IdleRSS, err = memory(gw.pid(), "VmRSS"); err != nil {
		return s, err
	}

	var before, after snapshot
	var probeErr error
	var prof *profiler
	res, err := runLoad(ctx, o, base+"/graphql",
		func() {
			before, probeErr = probe.snapshot(ctx)
			if profile && probeErr == nil {
				prof = startProfile(ctx, probe, o.ProfileDir, mode.Name+"-"+strings.ReplaceAll(side.Name, ":", "-"), o.duration())
			}
		},
		func() {
			var err error
			after, err = probe.snapshot(ctx)
			probeErr = errors.Join(probeErr, err)
			if prof != nil {
				prof.allocs(ctx)
			}
		})
	if prof != nil {
		err = errors.Join(err, prof.wait())
	}
	if err = errors.Join(err, probeErr); err != nil {
		return s, err
	}
	if s.PeakRSS, err = memory(gw.pid(), "VmHWM"); err != nil {
		return s, err
	}

	s.Requests, s.Errors, s.FirstError = res.Requests, res.Errors, res.FirstError
	s.RequestsPerSecond, s.P50, s.P95, s.P99 = res.RequestsPerSecond, res.P50, res.P95, res.P99
	s.Percentiles = res.Percentiles
	n := after.stats.Requests - before.stats.Requests
	s.GatewayRequests = n
	if n == 0 {
		return s, fmt.Errorf("the gateway answered no request in the measured window (load: %+v)", res)
	}
	per := func(d float64) float64 { return d / float64(n) }
	s.CPUPerRequest = per(float64(after.cpu-before.cpu) / float64(time.Millisecond))
	s.AllocBytesPerRequest = per(float64(after.allocBytes() - before.allocBytes()))
	s.AllocObjectsPerRequest = per(float64(after.allocObjects() - before.allocObjects()))
	calls := after.stats.SourceSchemaCalls - before.stats.SourceSchemaCalls
	s.CallsPerRequest = per(float64(calls))
	if calls > 0 {
		s.RequestBytesPerCall = float64(after.stats.SourceSchemaRequestBytes-before.stats.SourceSchemaRequestBytes) / float64(calls)
	}
	return s, nil
}

// withoutVar returns environ without the variable name.
func withoutVar(environ []string, name string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
