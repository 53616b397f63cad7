package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/cmd/fusion-transport/internal/benchgw"
	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/setting"
	"github.com/fusiongo/transport/internal/testsupport/wirecount"
)

func runGateway(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`; port 0 picks a free one")
	schemaList := fs.String("schemas", "", "source schema URLs as `name=url,...` for accounts, inventory, products and reviews; they set the URLs of the config file's schemas or add them")
	configFile := fs.String("config", "", "YAML configuration `file` (docs/configuration.md); FUSION_* variables apply over it")
	countWire := fs.Bool("count-wire", false, "count the request bytes written to the source schemas (a counting dialer per schema) and report them in /debug/stats as source_schema_request_bytes")
	engine := fs.String("engine", "", "the sockets path's `engine` for the defaults and every source schema, over the configuration: "+strings.Join(setting.Engines(), " or ")+" (default: the configuration's own)")
	cache := fs.Bool("cache", false, "turn the response cache on for every source schema, over the configuration: in memory, shared (an answer marked public answers every caller), at most 1h per entry")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fusion-transport gateway [flags]

Gateway serves the benchmark gateway: every POST to /graphql is answered with
the answer to the gateway benchmark's deep-recursion query, which the gateway
computes by running the query's fixed plan against the source schemas
accounts, inventory, products and reviews (package cmd/fusion-transport/internal/benchgw).
FUSION_SOCKETS_TRANSPORT picks the path, as in production; -engine the
sockets path's engine, whatever the configuration gives each source schema.

When it listens, it prints one line "ready http://HOST:PORT" on stdout, and it
serves until interrupted. On a loopback address it also serves /debug/stats
(request and source schema call counts and the heap allocations of the
process, as JSON), the transport's status page at /debug/transport (HTML for
a browser, JSON with Accept: application/json) and the net/http/pprof
handlers under /debug/pprof/.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, true, stderr); !ok {
		return code
	}
	if *engine != "" && !slices.Contains(setting.Engines(), *engine) {
		fmt.Fprintf(stderr, "gateway: -engine %q: want %s\n", *engine, strings.Join(setting.Engines(), " or "))
		return 2
	}
	cfg, err := gatewayConfig(*configFile, *schemaList)
	if err != nil {
		fmt.Fprintf(stderr, "gateway: %v\n", err)
		return 2
	}
	if *engine != "" {
		cfg = withEngine(cfg, *engine)
	}
	if *cache {
		cfg = withCache(cfg)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []transport.Option{transport.WithLogger(log)}
	var wire *wirecount.Bytes
	if *countWire {
		wire = &wirecount.Bytes{}
		for name := range cfg.SourceSchemas {
			opts = append(opts, transport.WithSchemaOptions(name, transport.SchemaOptions{Dial: wire.Dial}))
		}
	}
	inv, err := transport.New(cfg, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "gateway: %v\n", err)
		return 2
	}
	defer inv.Close()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "gateway: %v\n", err)
		return 2
	}
	g := benchgw.New(inv)
	if wire != nil {
		g.CountWire(wire)
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", transport.GatewayRequestHandler(g))
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		// Allocation counts and profiles are for the benchmark on this
		// machine, never for a reachable listener.
		mux.Handle("/debug/stats", g.StatsHandler())
		mux.Handle("/debug/transport", inv.StatusHandler())
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "ready http://%s\n", ln.Addr())
	cacheNote := ""
	if *cache {
		cacheNote = ", response cache on"
	}
	fmt.Fprintf(stderr, "gateway: %s path%s%s, answering the deep-recursion query at http://%s/graphql\n", cfg.EffectivePath(), engineNote(cfg), cacheNote, ln.Addr())

	select {
	case err := <-served:
		fmt.Fprintf(stderr, "gateway: %v\n", err)
		return 2
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	return 0
}

// withEngine returns cfg with engine set for the defaults and every source
// schema, so that no schema keeps an engine of its own; cfg's map of source
// schemas is left as it is.
func withEngine(cfg env.Config, engine string) env.Config {
	cfg.Defaults.Engine = engine
	schemas := make(map[string]env.SourceSchema, len(cfg.SourceSchemas))
	for name, s := range cfg.SourceSchemas {
		s.Engine = engine
		schemas[name] = s
	}
	cfg.SourceSchemas = schemas
	return cfg
}

// withCache returns cfg with the response cache on for every source
// schema (gateway -cache): in memory, shared, every setting given so that
// none depends on what the schema or the defaults say; cfg's map of
// source schemas is left as it is.
func withCache(cfg env.Config) env.Config {
	schemas := make(map[string]env.SourceSchema, len(cfg.SourceSchemas))
	for name, s := range cfg.SourceSchemas {
		s.ResponseCache = env.ResponseCacheSettings{
			Enabled:       env.Enabled,
			Store:         env.StoreMemory,
			MaxBytes:      env.DefaultCacheMaxBytes,
			MaxEntryBytes: env.DefaultCacheMaxEntryBytes,
			MaxTTL:        env.DefaultCacheMaxTTL,
			Shared:        env.Enabled,
		}
		schemas[name] = s
	}
	cfg.SourceSchemas = schemas
	return cfg
}

// engineNote says which engines the sockets path's source schemas are set
// to, for the startup line: ", engine h1", or per schema when they differ;
// nothing on the legacy path. A schema that h1 cannot serve as configured
// still says h1 here; the transport logs that it uses nethttp.
func engineNote(cfg env.Config) string {
	if cfg.EffectivePath() == env.PathLegacy {
		return ""
	}
	byEngine := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(cfg.SourceSchemas)) {
		s, _ := cfg.Effective(name)
		byEngine[s.Engine] = append(byEngine[s.Engine], name)
	}
	if len(byEngine) == 1 {
		for e := range byEngine {
			return ", engine " + e
		}
	}
	var parts []string
	for _, e := range slices.Sorted(maps.Keys(byEngine)) {
		parts = append(parts, e+" for "+strings.Join(byEngine[e], ", "))
	}
	return ", engine " + strings.Join(parts, "; ")
}

// gatewayConfig loads the configuration (defaults, the file if any, the
// environment), sets the URLs that list names, and checks that every source
// schema of the plan is there.
func gatewayConfig(file, list string) (env.Config, error) {
	var files []string
	if file != "" {
		files = append(files, file)
	}
	cfg, err := env.Load(files...)
	if err != nil {
		return env.Config{}, err
	}
	urls, err := parseSchemaList(list)
	if err != nil {
		return env.Config{}, err
	}
	if len(urls) > 0 {
		schemas := make(map[string]env.SourceSchema, len(cfg.SourceSchemas)+len(urls))
		for name, s := range cfg.SourceSchemas {
			schemas[name] = s
		}
		for name, u := range urls {
			s := schemas[name]
			s.URL = u
			schemas[name] = s
		}
		cfg.SourceSchemas = schemas
		if err := cfg.Validate(); err != nil {
			return env.Config{}, err
		}
	}
	var missing []string
	for _, name := range benchgw.SourceSchemas {
		if _, ok := cfg.SourceSchemas[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return env.Config{}, fmt.Errorf("no URL for source schema(s) %s: set them with -schemas name=url,... or -config", strings.Join(missing, ", "))
	}
	return cfg, nil
}

// parseSchemaList parses "accounts=http://...,products=http://...".
func parseSchemaList(list string) (map[string]string, error) {
	out := map[string]string{}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, u, ok := strings.Cut(item, "=")
		name, u = strings.TrimSpace(name), strings.TrimSpace(u)
		if !ok || name == "" || u == "" {
			// The item is most often a url without its name.
			return nil, fmt.Errorf("-schemas: invalid item %q: want name=url", redact.URL(item))
		}
		if !slices.Contains(benchgw.SourceSchemas, name) {
			return nil, fmt.Errorf("-schemas: unknown source schema %q: want one of %s", name, strings.Join(benchgw.SourceSchemas, ", "))
		}
		out[name] = u
	}
	return out, nil
}
