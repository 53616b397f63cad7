package benchrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
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
		Cache:           o.Cache,
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
// when the first side is legacy, the Targets of each sockets side without
// the cache against it: they are the sockets path's targets, not an
// engine's; then the cache targets of each side with the cache against
// the same side without, if it ran.
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
		mr.Targets = apqTargets(mr.Summary, sides) // Options.APQ: each twin against its side
		return
	}
	for _, name := range sides[1:] {
		if sides[0] != "legacy" || !strings.HasPrefix(name, "sockets") || strings.HasSuffix(name, cacheSuffix) {
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
	for _, name := range sides {
		base, ok := strings.CutSuffix(name, cacheSuffix)
		if ok && slices.Contains(sides, base) {
			mr.Targets = append(mr.Targets, cacheTargets(name, base, mr.Summary[base], mr.Summary[name])...)
		}
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

// schemaURLs are the running source schemas' endpoints.
type schemaURLs struct {
	flag string   // as the gateway's -schemas flag takes them
	list []string // each schema's endpoint, for schemas.Calls
}

// startSchemas starts "fusion-transport schemas" (with -replay for
// SubgraphsReplay, -cache-control in the cache mode) and returns the
// source schemas' URLs.
func startSchemas(ctx context.Context, o Options, mode Mode) (schemaURLs, func(), error) {
	args := []string{"schemas"}
	if o.subgraphs() == SubgraphsReplay {
		args = append(args, "-replay")
	}
	if o.Cache {
		args = append(args, "-cache-control", CacheControl)
	}
	if mode.Latency > 0 {
		args = append(args, "-latency", mode.Latency.String())
	}
	if !o.APQ {
		args = append(args, "-apq", "off") // nothing in front of the answers
	}
	c, err := startChild("source schemas", o.Binary, args, o.Environ)
	if err != nil {
		return schemaURLs{}, nil, err
	}
	urls := make(map[string]string)
	for len(urls) < 4 {
		line, err := c.readLine(ctx)
		if err != nil {
			c.stop()
			return schemaURLs{}, nil, err
		}
		name, u, ok := strings.Cut(line, " ")
		if !ok {
			c.stop()
			return schemaURLs{}, nil, fmt.Errorf("source schemas: unexpected line %q: want NAME URL", line)
		}
		urls[name] = u
	}
	var su schemaURLs
	var flag []string
	for _, name := range []string{"accounts", "inventory", "products", "reviews"} {
		u, ok := urls[name]
		if !ok {
			c.stop()
			return schemaURLs{}, nil, fmt.Errorf("source schemas: no URL for %s in %v", name, urls)
		}
		flag = append(flag, name+"="+u)
		su.list = append(su.list, u)
	}
	su.flag = strings.Join(flag, ",")
	return su, c.stop, nil
}

// gatewayCommand returns the arguments and the environment of side's
// gateway: FUSION_SOCKETS_TRANSPORT picks the path, -engine the engine,
// -cache the response cache; FUSION_FORWARD_HEADERS forwards the load's
// request id (Distinct) and its users' Authorization (Cache).
func gatewayCommand(o Options, schemaURLs string, side Side) (args, environ []string) {
	environ = append(withoutVar(o.Environ, "FUSION_SOCKETS_TRANSPORT"), "FUSION_SOCKETS_TRANSPORT="+side.Switch)
	var forward []string
	if o.Distinct {
		forward = append(forward, load.RequestIDHeader)
	}
	if o.Cache {
		forward = append(forward, load.UserHeader)
	}
	if forward != nil {
		environ = append(withoutVar(environ, "FUSION_FORWARD_HEADERS"), "FUSION_FORWARD_HEADERS="+strings.Join(forward, ","))
	}
	args = []string{"gateway", "-addr", "127.0.0.1:0", "-schemas", schemaURLs}
	if o.GatewayConfig != "" {
		args = append(args, "-config", o.GatewayConfig)
	}
	if side.Engine != "" {
		args = append(args, "-engine", side.Engine)
	}
	if side.Cache {
		args = append(args, "-cache")
	}
	if o.APQ {
		mode := "off" // whatever this process's environment says
		if side.APQ {
			mode = "apq"
		}
		environ = append(withoutVar(environ, APQVar), APQVar+"="+mode)
		args = append(args, "-count-wire") // on both twins, so that they pay alike
	}
	return args, environ
}

// APQVar is the variable that turns persisted queries on for every source
// schema of a gateway.
const APQVar = "FUSION_DEFAULTS__PERSISTED_QUERIES__MODE"

// runOne starts a gateway for side, measures it under load and stops it.
func runOne(ctx context.Context, o Options, urls schemaURLs, mode Mode, side Side, profile bool) (Sample, error) {
	s := Sample{Path: side.Name}
	args, environ := gatewayCommand(o, urls.flag, side)
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
	probe := newProbe(base, gw.pid(), urls.list)
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
	made := float64(after.stats.SourceSchemaCalls - before.stats.SourceSchemaCalls)
	reached := float64(after.schemaCalls - before.schemaCalls)
	s.CallsPerRequest = per(made)
	if made > 0 {
		s.RequestBytesPerCall = float64(after.stats.SourceSchemaRequestBytes-before.stats.SourceSchemaRequestBytes) / made
	}
	s.SchemaCallsPerRequest = per(reached)
	if made > 0 {
		// The gateway counts a request's calls when it answers, the
		// schemas each call when it arrives, a moment apart: at the
		// window's edges a few calls fall on one side only, so the ratio
		// is kept within [0, 1].
		s.HitRatio = min(max(1-reached/made, 0), 1)
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
