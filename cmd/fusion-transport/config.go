package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/sockets"
)

func runConfig(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	diff := fs.Bool("diff", false, "compare two configurations, OLD and NEW: say which source schemas a reload would keep and why the others would be rebuilt")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fusion-transport config [FILE...]
       fusion-transport config -diff OLD NEW

Config loads the configuration as the transport would (built-in defaults,
then each FILE in order, then the FUSION_* environment variables) and prints,
per source schema, every effective setting with where it came from. It exits
2 if the configuration is invalid, naming every bad key. Secrets are never
printed: a url's, proxy's or redis.url's password shows as xxxxx, a
headers.set value and the response cache's invalidation token as
[redacted].

With -diff it loads OLD and NEW (each one file, with the same environment)
and prints what a sockets reload from OLD to NEW would do to each source
schema: keep its pool and warm connections, or replace it, and why. It names
the keys that change, never their values: a new password or headers.set
value shows as "url userinfo", proxy or headers.set.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, false, stderr); !ok {
		return code
	}
	loader := env.Loader{LookupEnv: os.LookupEnv, Environ: os.Environ}
	if *diff {
		if fs.NArg() != 2 {
			fmt.Fprintln(stderr, "config: -diff needs two files, OLD and NEW")
			return 2
		}
		return configDiff(loader, fs.Arg(0), fs.Arg(1), stdout, stderr)
	}
	cfg, explained, err := loader.Explain(fs.Args()...)
	if err != nil {
		fmt.Fprintf(stderr, "config: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "path: %s\n", cfg.EffectivePath())
	fmt.Fprintf(stdout, "legacy.handler_lifetime: %s\n", cfg.EffectiveLegacy().HandlerLifetime)
	for _, line := range cacheLines(cfg) {
		fmt.Fprintln(stdout, line)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range explained {
			if !yield(n) {
				return
			}
		}
	})
	if len(names) == 0 {
		fmt.Fprintln(stdout, "no source schemas configured")
	}
	for _, name := range names {
		fmt.Fprintf(stdout, "\nsource schema %s\n", name)
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		for _, v := range explained[name] {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Key, v.Value, v.Origin)
		}
		tw.Flush()
		if line := servedEngine(cfg, name); line != "" {
			fmt.Fprintln(stdout, line)
		}
		if line := addressesLine(ctx, net.DefaultResolver, cfg, name); line != "" {
			fmt.Fprintln(stdout, line)
		}
	}
	return 0
}

// cacheLines are the top-level redis and response_cache keys as the config
// command prints them, defaults applied, secrets hidden: redis.url's
// password as xxxxx, the invalidation token as [redacted].
func cacheLines(cfg env.Config) []string {
	r := cfg.EffectiveRedis()
	orNone := func(v, none string) string {
		if v == "" {
			return none
		}
		return v
	}
	pool := strconv.Itoa(r.PoolSize)
	if r.PoolSize == 0 {
		pool = "0 (go-redis's default, 10 per CPU)"
	}
	token := cfg.ResponseCache.InvalidationToken
	if token != "" {
		token = redact.Value
	}
	return []string{
		"redis.url: " + orNone(redact.URL(r.URL), "(none)"),
		"redis.key_prefix: " + r.KeyPrefix,
		"redis.timeout: " + r.Timeout.String(),
		"redis.pool_size: " + pool,
		"redis.tls.ca_file: " + orNone(r.TLS.CAFile, "(none)"),
		"redis.tls.cert_file: " + orNone(r.TLS.CertFile, "(none)"),
		"redis.tls.key_file: " + orNone(r.TLS.KeyFile, "(none)"),
		"response_cache.invalidation_token: " + orNone(token, "(none: the invalidation handler refuses every request)"),
	}
}

func configDiff(loader env.Loader, oldFile, newFile string, stdout, stderr io.Writer) int {
	prev, err := loader.Load(oldFile)
	if err != nil {
		fmt.Fprintf(stderr, "config: OLD: %v\n", err)
		return 2
	}
	next, err := loader.Load(newFile)
	if err != nil {
		fmt.Fprintf(stderr, "config: NEW: %v\n", err)
		return 2
	}
	for _, c := range sockets.PlanReload(prev, next) {
		line := fmt.Sprintf("%-8s %s", c.Action, c.Schema)
		switch {
		case c.Action == "replaced":
			line += ": changed " + strings.Join(c.Reasons, ", ")
			if len(c.Also) > 0 {
				line += "; per-request settings change too: " + strings.Join(c.Also, ", ")
			}
		case c.Action == "kept" && len(c.Reasons) > 0:
			line += ": warm connections stay; per-request settings change: " + strings.Join(c.Reasons, ", ")
		case c.Action == "kept":
			line += ": unchanged"
		}
		fmt.Fprintln(stdout, line)
	}
	return 0
}

// configLookupTimeout bounds the config command's lookup of one host.
const configLookupTimeout = 2 * time.Second

// addressesLine says which addresses the sockets path's pool of the
// schema would spread over, resolved now with r when the host is a name:
// the line is what a person checks before a rollout ("does my name give
// the three replicas?"). Empty when the pool has no addresses of its own
// (a unix socket, a proxy).
func addressesLine(ctx context.Context, r sockets.Resolver, cfg env.Config, name string) string {
	settings, ok := cfg.Effective(name)
	if !ok || !sockets.SpreadsAddresses(settings) {
		return ""
	}
	u, err := url.Parse(cfg.SourceSchemas[name].URL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return "  addresses: " + ip.String()
	}
	refresh := "dns_refresh " + settings.DNSRefresh.String()
	if settings.DNSRefresh < 0 {
		refresh = "dns_refresh off: Go's dialer resolves at each dial, no spreading, no ejection"
	}
	lctx, cancel := context.WithTimeout(ctx, configLookupTimeout)
	defer cancel()
	ips, err := r.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return fmt.Sprintf("  addresses: cannot resolve %s now (%v); %s", host, err, refresh)
	}
	strs := make([]string, len(ips))
	for i, ip := range ips {
		strs[i] = ip.Unmap().String()
	}
	return fmt.Sprintf("  addresses: %s (%s resolved now; %s)", strings.Join(strs, ", "), host, refresh)
}

// servedEngine says which engine the sockets path would serve the schema
// with, when that is not the one its engine setting names: h1 falls back to
// nethttp where it cannot serve (sockets.EngineFor).
func servedEngine(cfg env.Config, name string) string {
	settings, ok := cfg.Effective(name)
	if !ok {
		return ""
	}
	u, err := url.Parse(cfg.SourceSchemas[name].URL)
	if err != nil {
		return ""
	}
	engine, key, why := sockets.EngineFor(settings, u.Scheme)
	if engine == settings.Engine {
		return ""
	}
	return fmt.Sprintf("  on the sockets path this schema uses engine %s: %s (%s)", engine, why, key)
}
