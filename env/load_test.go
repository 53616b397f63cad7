package env_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// issueYAML is the example configuration of the issue that specified the
// package.
const issueYAML = `
transport: legacy
forward_headers: [Authorization, X-Request-Id]
defaults:
  connect_timeout: 15s
  conn_lifetime: 2m
  idle_conn_timeout: 90s
  max_conns_per_host: 0      # 0: no limit
  header_timeout: 100s
source_schemas:
  products:
    url: http://127.0.0.1:4001/graphql
    forward_headers: [X-Tenant]
    conn_lifetime: 30s
legacy:
  handler_lifetime: 2m
`

// builtinSettings are the built-in defaults as Load resolves them.
var builtinSettings = env.Settings{
	ConnectTimeout:  15 * time.Second,
	ConnLifetime:    2 * time.Minute,
	IdleConnTimeout: 90 * time.Second,
	MaxConnsPerHost: env.NoLimit,
	HeaderTimeout:   100 * time.Second,
}

// lookupEnv returns a LookupEnv that reads vars only, so that no test reads
// or changes the process environment.
func lookupEnv(vars map[string]string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		v, ok := vars[key]
		return v, ok
	}
}

// writeConfig writes content to a new file in a fresh temporary directory
// and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// keyErrors returns every *KeyError in err's tree, in order. It does not
// look inside a KeyError: its cause is not another bad key.
func keyErrors(err error) []*env.KeyError {
	var ke *env.KeyError
	switch e := err.(type) {
	case nil:
		return nil
	case interface{ Unwrap() []error }:
		var out []*env.KeyError
		for _, inner := range e.Unwrap() {
			out = append(out, keyErrors(inner)...)
		}
		return out
	}
	if errors.As(err, &ke) {
		return []*env.KeyError{ke}
	}
	return nil
}

// wantDefaultsError loads a file whose defaults section holds yaml (and
// one source schema), validates it, and fails unless the error contains
// want.
func wantDefaultsError(t *testing.T, yaml, want string) {
	t.Helper()
	cfg, err := env.Loader{LookupEnv: lookupEnv(nil), Environ: environ(nil)}.Load(writeConfig(t, "defaults:\n  "+yaml+"\nsource_schemas:\n  p:\n    url: http://p:1/graphql\n"))
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

func mustLoad(t *testing.T, l env.Loader, files ...string) env.Config {
	t.Helper()
	cfg, err := l.Load(files...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

func TestLoadBuiltinDefaults(t *testing.T) {
	want := env.Config{
		Path:     env.PathLegacy,
		Defaults: builtinSettings,
		Legacy:   env.LegacySettings{HandlerLifetime: 2 * time.Minute},
	}
	tests := []struct {
		name   string
		loader env.Loader
		files  func(t *testing.T) []string
	}{
		{"no files, zero Loader", env.Loader{}, func(*testing.T) []string { return nil }},
		{"no files, empty environment", env.Loader{LookupEnv: lookupEnv(nil)}, func(*testing.T) []string { return nil }},
		{"empty file", env.Loader{}, func(t *testing.T) []string { return []string{writeConfig(t, "")} }},
		{"comment only", env.Loader{}, func(t *testing.T) []string { return []string{writeConfig(t, "# nothing\n")} }},
		{"null document", env.Loader{}, func(t *testing.T) []string { return []string{writeConfig(t, "~\n")} }},
		{"empty sections", env.Loader{}, func(t *testing.T) []string {
			return []string{writeConfig(t, "defaults: {}\nlegacy: {}\nsource_schemas: {}\n")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.loader, tt.files(t)...)
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("Load() = %+v\nwant %+v", cfg, want)
			}
			if got := cfg.EffectiveDefaults(); core(got) != core(builtinSettings) {
				t.Errorf("EffectiveDefaults() = %+v, want %+v", got, builtinSettings)
			}
			if got, want := cfg.EffectiveLegacy().HandlerLifetime, 2*time.Minute; got != want {
				t.Errorf("EffectiveLegacy().HandlerLifetime = %v, want %v", got, want)
			}
			if got := cfg.EffectivePath(); got != env.PathLegacy {
				t.Errorf("Path() = %q, want %q", got, env.PathLegacy)
			}
		})
	}
}

func TestLoadIssueExample(t *testing.T) {
	cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(nil)}, writeConfig(t, issueYAML))
	want := env.Config{
		Path:           env.PathLegacy,
		ForwardHeaders: []string{"Authorization", "X-Request-Id"},
		Defaults:       builtinSettings,
		SourceSchemas: map[string]env.SourceSchema{
			"products": {
				URL:            "http://127.0.0.1:4001/graphql",
				ForwardHeaders: []string{"X-Tenant"},
				Settings:       env.Settings{ConnLifetime: 30 * time.Second},
			},
		},
		Legacy: env.LegacySettings{HandlerLifetime: 2 * time.Minute},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("Load() = %+v\nwant %+v", cfg, want)
	}
	got, ok := cfg.Effective("products")
	wantProducts := builtinSettings
	wantProducts.ConnLifetime = 30 * time.Second
	if !ok || core(got) != core(wantProducts) {
		t.Errorf("Effective(products) = %+v, %v; want %+v, true", got, ok, wantProducts)
	}
}

func TestLoadInheritance(t *testing.T) {
	const url = "    url: http://127.0.0.1:4001/graphql\n"
	tests := []struct {
		name     string
		defaults string // the body of defaults:, indented two spaces
		schema   string // the settings of source schema products, indented four spaces
		want     env.Settings
	}{
		{
			name: "nothing set: built-in defaults",
			want: builtinSettings,
		},
		{
			name:     "defaults override built-in key by key",
			defaults: "  connect_timeout: 3s\n  max_conns_per_host: 8\n",
			want: env.Settings{
				ConnectTimeout:  3 * time.Second,
				ConnLifetime:    2 * time.Minute,
				IdleConnTimeout: 90 * time.Second,
				MaxConnsPerHost: 8,
				HeaderTimeout:   100 * time.Second,
			},
		},
		{
			name:     "schema overrides defaults key by key",
			defaults: "  connect_timeout: 3s\n  conn_lifetime: 5m\n  idle_conn_timeout: 1m\n  max_conns_per_host: 8\n  header_timeout: 20s\n",
			schema:   "    conn_lifetime: 30s\n    max_conns_per_host: 2\n",
			want: env.Settings{
				ConnectTimeout:  3 * time.Second,
				ConnLifetime:    30 * time.Second,
				IdleConnTimeout: time.Minute,
				MaxConnsPerHost: 2,
				HeaderTimeout:   20 * time.Second,
			},
		},
		{
			name:     "schema sets every key",
			defaults: "  connect_timeout: 3s\n",
			schema:   "    connect_timeout: 1s\n    conn_lifetime: 2s\n    idle_conn_timeout: 3s\n    max_conns_per_host: 4\n    header_timeout: 5s\n",
			want: env.Settings{
				ConnectTimeout:  time.Second,
				ConnLifetime:    2 * time.Second,
				IdleConnTimeout: 3 * time.Second,
				MaxConnsPerHost: 4,
				HeaderTimeout:   5 * time.Second,
			},
		},
		{
			name:     "explicit 0 in schema: Off and NoLimit over non-zero defaults",
			defaults: "  connect_timeout: 3s\n  conn_lifetime: 5m\n  idle_conn_timeout: 1m\n  max_conns_per_host: 8\n  header_timeout: 20s\n",
			schema:   "    connect_timeout: 0\n    conn_lifetime: 0\n    idle_conn_timeout: 0\n    max_conns_per_host: 0\n    header_timeout: 0\n",
			want: env.Settings{
				ConnectTimeout:  env.Off,
				ConnLifetime:    env.Off,
				IdleConnTimeout: env.Off,
				MaxConnsPerHost: env.NoLimit,
				HeaderTimeout:   env.Off,
			},
		},
		{
			name:     "off, OFF, 0s and quoted 0 in schema are Off",
			defaults: "  connect_timeout: 3s\n  conn_lifetime: 5m\n  idle_conn_timeout: 1m\n  max_conns_per_host: 8\n  header_timeout: 20s\n",
			schema:   "    connect_timeout: off\n    conn_lifetime: OFF\n    idle_conn_timeout: 0s\n    max_conns_per_host: \"0\"\n    header_timeout: \"0\"\n",
			want: env.Settings{
				ConnectTimeout:  env.Off,
				ConnLifetime:    env.Off,
				IdleConnTimeout: env.Off,
				MaxConnsPerHost: env.NoLimit,
				HeaderTimeout:   env.Off,
			},
		},
		{
			name:     "Off in defaults is inherited, not replaced by built-in",
			defaults: "  connect_timeout: 0\n  conn_lifetime: off\n  max_conns_per_host: 0\n",
			schema:   "    idle_conn_timeout: 10s\n",
			want: env.Settings{
				ConnectTimeout:  env.Off,
				ConnLifetime:    env.Off,
				IdleConnTimeout: 10 * time.Second,
				MaxConnsPerHost: env.NoLimit,
				HeaderTimeout:   100 * time.Second,
			},
		},
		{
			name:   "schema limit as quoted number and durations with spaces",
			schema: "    max_conns_per_host: \" 16 \"\n    header_timeout: \" 1m30s \"\n",
			want: env.Settings{
				ConnectTimeout:  15 * time.Second,
				ConnLifetime:    2 * time.Minute,
				IdleConnTimeout: 90 * time.Second,
				MaxConnsPerHost: 16,
				HeaderTimeout:   90 * time.Second,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := "source_schemas:\n  products:\n" + url + tt.schema
			if tt.defaults != "" {
				yaml = "defaults:\n" + tt.defaults + yaml
			}
			cfg := mustLoad(t, env.Loader{}, writeConfig(t, yaml))
			got, ok := cfg.Effective("products")
			if !ok || core(got) != core(tt.want) {
				t.Errorf("Effective(products) = %+v, %v\nwant %+v, true", got, ok, tt.want)
			}
		})
	}
}

func TestLoadLayeredFiles(t *testing.T) {
	base := `
transport: sockets
forward_headers: [A, B]
defaults:
  connect_timeout: 5s
  conn_lifetime: 1m
source_schemas:
  products:
    url: http://products/graphql
    forward_headers: [X-Tenant]
    conn_lifetime: 30s
    header_timeout: 10s
legacy:
  handler_lifetime: 1m
`
	overlay := `
forward_headers: [C]
defaults:
  conn_lifetime: 3m
source_schemas:
  products:
    header_timeout: 20s
  reviews:
    url: http://reviews/graphql
`
	t.Run("later file overrides key by key", func(t *testing.T) {
		cfg := mustLoad(t, env.Loader{}, writeConfig(t, base), writeConfig(t, overlay))
		want := env.Config{
			Path:           env.PathSockets,
			ForwardHeaders: []string{"C"}, // a list is replaced, not merged
			Defaults: env.Settings{
				ConnectTimeout:  5 * time.Second,
				ConnLifetime:    3 * time.Minute,
				IdleConnTimeout: 90 * time.Second,
				MaxConnsPerHost: env.NoLimit,
				HeaderTimeout:   100 * time.Second,
			},
			SourceSchemas: map[string]env.SourceSchema{
				"products": {
					URL:            "http://products/graphql",
					ForwardHeaders: []string{"X-Tenant"},
					Settings:       env.Settings{ConnLifetime: 30 * time.Second, HeaderTimeout: 20 * time.Second},
				},
				"reviews": {URL: "http://reviews/graphql"},
			},
			Legacy: env.LegacySettings{HandlerLifetime: time.Minute},
		}
		if !reflect.DeepEqual(cfg, want) {
			t.Errorf("Load(base, overlay) = %+v\nwant %+v", cfg, want)
		}
		reviews, ok := cfg.Effective("reviews")
		wantReviews := env.Settings{
			ConnectTimeout:  5 * time.Second,
			ConnLifetime:    3 * time.Minute,
			IdleConnTimeout: 90 * time.Second,
			MaxConnsPerHost: env.NoLimit,
			HeaderTimeout:   100 * time.Second,
		}
		if !ok || core(reviews) != core(wantReviews) {
			t.Errorf("Effective(reviews) = %+v, %v\nwant %+v, true", reviews, ok, wantReviews)
		}
	})
	t.Run("order matters", func(t *testing.T) {
		cfg := mustLoad(t, env.Loader{}, writeConfig(t, overlay), writeConfig(t, base))
		if got, want := cfg.ForwardHeaders, []string{"A", "B"}; !reflect.DeepEqual(got, want) {
			t.Errorf("ForwardHeaders = %q, want %q", got, want)
		}
		if got, want := cfg.Defaults.ConnLifetime, time.Minute; got != want {
			t.Errorf("Defaults.ConnLifetime = %v, want %v", got, want)
		}
		if got, want := cfg.SourceSchemas["products"].HeaderTimeout, 10*time.Second; got != want {
			t.Errorf("products HeaderTimeout = %v, want %v", got, want)
		}
	})
	t.Run("later explicit 0 turns an earlier bound off", func(t *testing.T) {
		off := "defaults:\n  conn_lifetime: 0\n  max_conns_per_host: 0\n"
		cfg := mustLoad(t, env.Loader{}, writeConfig(t, base), writeConfig(t, off))
		if got := cfg.Defaults.ConnLifetime; got != env.Off {
			t.Errorf("Defaults.ConnLifetime = %v, want Off", got)
		}
		if got := cfg.Defaults.MaxConnsPerHost; got != env.NoLimit {
			t.Errorf("Defaults.MaxConnsPerHost = %d, want NoLimit", got)
		}
		if got := cfg.Defaults.ConnectTimeout; got != 5*time.Second {
			t.Errorf("Defaults.ConnectTimeout = %v, want 5s from the first file", got)
		}
	})
}

func TestLoadForwardHeadersVar(t *testing.T) {
	file := "forward_headers: [Authorization]\nsource_schemas:\n  products:\n    url: http://products/graphql\n    forward_headers: [X-Tenant]\n"
	tests := []struct {
		name  string
		vars  map[string]string
		want  []string
		empty bool // want an empty list: the variable forwards none
	}{
		{name: "unset: the file's list", vars: nil, want: []string{"Authorization"}},
		{name: "replaces the file's list", vars: map[string]string{env.ForwardHeadersVar: "X-Request-Id"}, want: []string{"X-Request-Id"}},
		{name: "comma-separated", vars: map[string]string{env.ForwardHeadersVar: "Authorization,X-Request-Id"}, want: []string{"Authorization", "X-Request-Id"}},
		{name: "spaces trimmed", vars: map[string]string{env.ForwardHeadersVar: "  Authorization ,\tX-Request-Id  "}, want: []string{"Authorization", "X-Request-Id"}},
		{name: "empty items dropped", vars: map[string]string{env.ForwardHeadersVar: ",A,,B, ,"}, want: []string{"A", "B"}},
		{name: "empty: forwards none", vars: map[string]string{env.ForwardHeadersVar: ""}, empty: true},
		{name: "only commas and space: forwards none", vars: map[string]string{env.ForwardHeadersVar: " , ,"}, empty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(tt.vars)}, writeConfig(t, file))
			if tt.empty {
				if len(cfg.ForwardHeaders) != 0 {
					t.Errorf("ForwardHeaders = %q, want none", cfg.ForwardHeaders)
				}
			} else if !reflect.DeepEqual(cfg.ForwardHeaders, tt.want) {
				t.Errorf("ForwardHeaders = %q, want %q", cfg.ForwardHeaders, tt.want)
			}
			// The variable is about Config.ForwardHeaders only.
			if got, want := cfg.SourceSchemas["products"].ForwardHeaders, []string{"X-Tenant"}; !reflect.DeepEqual(got, want) {
				t.Errorf("products ForwardHeaders = %q, want %q", got, want)
			}
		})
	}
	t.Run("without a file", func(t *testing.T) {
		cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(map[string]string{env.ForwardHeadersVar: "A, B"})})
		if want := []string{"A", "B"}; !reflect.DeepEqual(cfg.ForwardHeaders, want) {
			t.Errorf("ForwardHeaders = %q, want %q", cfg.ForwardHeaders, want)
		}
	})
}

func TestLoadFileListAsString(t *testing.T) {
	// A file may write a list as a comma-separated string, as the variable does.
	cfg := mustLoad(t, env.Loader{}, writeConfig(t, "forward_headers: \"A, ,B,\"\n"))
	if want := []string{"A", "B"}; !reflect.DeepEqual(cfg.ForwardHeaders, want) {
		t.Errorf("ForwardHeaders = %q, want %q", cfg.ForwardHeaders, want)
	}
}

// TestLoadDottedSchemaName pins that a schema name holding the key
// delimiter stays one name.
func TestLoadDottedSchemaName(t *testing.T) {
	cfg := mustLoad(t, env.Loader{}, writeConfig(t, "source_schemas:\n  products.v2:\n    url: http://products/graphql\n    max_conns_per_host: 3\n"))
	got, ok := cfg.Effective("products.v2")
	if !ok || got.MaxConnsPerHost != 3 || cfg.SourceSchemas["products.v2"].URL != "http://products/graphql" {
		t.Errorf("Effective(products.v2) = %+v, %v; SourceSchemas = %+v", got, ok, cfg.SourceSchemas)
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(issueYAML))
	f.Add([]byte(""))
	f.Add([]byte("transport: on\nforward_headers: A, B\n"))
	f.Add([]byte("defaults: {conn_lifetime: 0, max_conns_per_host: 0, header_timeout: off}\n"))
	f.Add([]byte("source_schemas:\n  products:\n  reviews: {url: 'http://r/', conn_lifetime: 2x}\n"))
	f.Add([]byte("source_schemas: {a.b: {url: 'https://h:1/g', max_conns_per_host: 1e300}}\n"))
	f.Add([]byte("legacy: {handler_lifetime: -1s}\ncolour: [1, {a: b}]\n"))
	f.Add([]byte("transport: [\n"))
	f.Add([]byte("? [a, b]\n: c\n1: 2\n~: ~\n"))
	f.Add([]byte("&a {x: *a}\n"))
	dir := f.TempDir()
	var n int
	f.Fuzz(func(t *testing.T, data []byte) {
		// Iterations of one fuzz worker run one after another; a new name
		// each time keeps a failed write from leaving the last input behind.
		n++
		path := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", n))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		cfg, err := env.Loader{}.Load(path)
		if err != nil {
			if strings.HasPrefix(err.Error(), "config file "+path+": ") {
				return
			}
			// Every other error is a list of bad keys.
			for _, leaf := range leaves(err) {
				if _, ok := leaf.(*env.KeyError); !ok {
					t.Errorf("Load error %T %q is neither a file error nor a *KeyError", leaf, leaf)
				}
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Load succeeded but Validate() = %v", err)
		}
		if p := cfg.EffectivePath(); p != env.PathLegacy && p != env.PathSockets {
			t.Errorf("Path() = %q", p)
		}
		resolved(t, "defaults", cfg.EffectiveDefaults())
		if l := cfg.EffectiveLegacy().HandlerLifetime; l <= 0 && l != env.Off {
			t.Errorf("EffectiveLegacy().HandlerLifetime = %v, want positive or Off", l)
		}
		for name := range cfg.SourceSchemas {
			s, ok := cfg.Effective(name)
			if !ok {
				t.Errorf("Effective(%q) not found", name)
			}
			resolved(t, name, s)
		}
	})
}

// resolved checks that every setting of s is a value to run with: positive,
// Off or NoLimit, never 0 ("inherit") or another negative.
func resolved(t *testing.T, name string, s env.Settings) {
	t.Helper()
	for _, d := range []time.Duration{s.ConnectTimeout, s.ConnLifetime, s.IdleConnTimeout, s.HeaderTimeout} {
		if d <= 0 && d != env.Off {
			t.Errorf("%s: settings %+v hold %v, want positive or Off", name, s, d)
		}
	}
	if s.MaxConnsPerHost <= 0 && s.MaxConnsPerHost != env.NoLimit {
		t.Errorf("%s: MaxConnsPerHost = %d, want positive or NoLimit", name, s.MaxConnsPerHost)
	}
}

// leaves returns the errors of a joined tree that join nothing.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// coreSettings are the settings the tests in this file check; the other
// settings have tests of their own.
type coreSettings struct {
	ConnectTimeout, ConnLifetime, IdleConnTimeout, HeaderTimeout time.Duration
	MaxConnsPerHost                                              int
}

func core(s env.Settings) coreSettings {
	return coreSettings{s.ConnectTimeout, s.ConnLifetime, s.IdleConnTimeout, s.HeaderTimeout, s.MaxConnsPerHost}
}

// TestExplainZeroLimits: Explain says what 0 means per limit: no limit for
// connections, net/http's 10 MiB for response headers.
func TestExplainZeroLimits(t *testing.T) {
	file := writeConfig(t, "defaults:\n  max_conns_per_host: 0\n  max_response_header_bytes: 0\nsource_schemas:\n  products:\n    url: http://products/graphql\n")
	_, explained, err := env.Loader{}.Explain(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"max_conns_per_host":        "0 (no limit)",
		"max_response_header_bytes": "0 (net/http's bound, 10 MiB)",
	}
	for _, v := range explained["products"] {
		if w, ok := want[v.Key]; ok {
			if v.Value != w {
				t.Errorf("%s = %q, want %q", v.Key, v.Value, w)
			}
			delete(want, v.Key)
		}
	}
	for key := range want {
		t.Errorf("Explain has no %s", key)
	}
}

// TestLoadURLPortRange: the ports at both ends of the range load (the
// refused ones, 0 and 65536, are rows of loadKeyErrorCases).
func TestLoadURLPortRange(t *testing.T) {
	for _, u := range []string{"http://h:1/graphql", "http://h:65535/graphql", "https://h:65535/graphql"} {
		t.Run(u, func(t *testing.T) {
			cfg, err := env.Loader{}.Load(writeConfig(t, "source_schemas:\n  products:\n    url: "+u+"\n"))
			if err != nil {
				t.Fatalf("Load with url %s: %v", u, err)
			}
			if got := cfg.SourceSchemas["products"].URL; got != u {
				t.Errorf("url = %q, want %q", got, u)
			}
		})
	}
}
