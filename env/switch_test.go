package env_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
)

// acceptedSwitch lists every value FUSION_SOCKETS_TRANSPORT and the file's
// transport key accept, with case and surrounding space varied.
var acceptedSwitch = []struct {
	value string
	want  env.Path
}{
	{"1", env.PathSockets},
	{"true", env.PathSockets},
	{"on", env.PathSockets},
	{"sockets", env.PathSockets},
	{"TRUE", env.PathSockets},
	{"True", env.PathSockets},
	{"ON", env.PathSockets},
	{"oN", env.PathSockets},
	{"Sockets", env.PathSockets},
	{" 1", env.PathSockets},
	{"on ", env.PathSockets},
	{"\ttrue\n", env.PathSockets},
	{"0", env.PathLegacy},
	{"false", env.PathLegacy},
	{"off", env.PathLegacy},
	{"legacy", env.PathLegacy},
	{"", env.PathLegacy},
	{"FALSE", env.PathLegacy},
	{"Off", env.PathLegacy},
	{"LEGACY", env.PathLegacy},
	{"  ", env.PathLegacy},
	{" 0 ", env.PathLegacy},
	{"\r\nfalse\t", env.PathLegacy},
}

// rejectedSwitch lists values that are close to accepted ones.
// Words such as "yes" or "socket" parse as a list of source schemas and
// fail in Validate instead (see TestLoadSwitchNamesUnknownSchema).
var rejectedSwitch = []string{
	"1.0", "tru e", "o n", "sockets!", "\x00", "on\x00", "１", ",", " , ", "products;reviews",
}

const acceptedValues = "want 1, true, on or sockets (sockets path); 0, false, off, legacy or empty (legacy path); a comma-separated list of source schemas (those on sockets, the rest on legacy); shadow or shadow:RATE with 0 < RATE <= 1 (legacy serves, sockets is compared); or canary:RATE or canary:RATE:schema1,schema2 with RATE as 0.05 or 5% (that share served by sockets, judged against legacy)"

func TestParseSwitch(t *testing.T) {
	for _, tt := range acceptedSwitch {
		t.Run(fmt.Sprintf("%q", tt.value), func(t *testing.T) {
			got, err := env.ParseSwitch(tt.value)
			if err != nil || got.Path != tt.want || got.Schemas != nil || got.ShadowRate != 0 {
				t.Errorf("ParseSwitch(%q) = %+v, %v; want %q, nil", tt.value, got, err, tt.want)
			}
		})
	}
	for _, value := range rejectedSwitch {
		t.Run(fmt.Sprintf("%q", value), func(t *testing.T) {
			got, err := env.ParseSwitch(value)
			want := fmt.Sprintf("invalid value %q: %s", value, acceptedValues)
			if err == nil || err.Error() != want || got.Path != "" {
				t.Errorf("ParseSwitch(%q) = %+v, %v; want error %s", value, got, err, want)
			}
		})
	}
}

func TestLoadSwitchVar(t *testing.T) {
	for _, tt := range acceptedSwitch {
		t.Run(fmt.Sprintf("%q", tt.value), func(t *testing.T) {
			cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(map[string]string{env.SwitchVar: tt.value})})
			if cfg.Path != tt.want || cfg.EffectivePath() != tt.want {
				t.Errorf("Transport = %q, Path() = %q; want %q", cfg.Path, cfg.EffectivePath(), tt.want)
			}
		})
	}
	for _, value := range rejectedSwitch {
		t.Run(fmt.Sprintf("%q", value), func(t *testing.T) {
			cfg, err := env.Loader{LookupEnv: lookupEnv(map[string]string{env.SwitchVar: value})}.Load()
			want := fmt.Sprintf("FUSION_SOCKETS_TRANSPORT: invalid value %q: %s", value, acceptedValues)
			if err == nil || err.Error() != want {
				t.Fatalf("Load() = %+v, %v; want error %s", cfg, err, want)
			}
			var ke *env.KeyError
			if !errors.As(err, &ke) || ke.Key != env.SwitchVar || ke.Value != value {
				t.Errorf("KeyError = %+v, want Key %s, Value %q", ke, env.SwitchVar, value)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(map[string]string{"OTHER": "1"})})
		if cfg.EffectivePath() != env.PathLegacy {
			t.Errorf("Path() = %q, want %q", cfg.EffectivePath(), env.PathLegacy)
		}
	})
}

func TestSwitchVarOverridesFile(t *testing.T) {
	tests := []struct {
		name string
		file string // the transport key's line, if any
		vars map[string]string
		want env.Path
	}{
		{"file sockets, variable unset", "transport: sockets\n", nil, env.PathSockets},
		{"file legacy, variable unset", "transport: legacy\n", nil, env.PathLegacy},
		{"no key, variable unset", "", nil, env.PathLegacy},
		{"no key, variable on", "", map[string]string{env.SwitchVar: "on"}, env.PathSockets},
		{"file legacy, variable 1", "transport: legacy\n", map[string]string{env.SwitchVar: "1"}, env.PathSockets},
		{"file sockets, variable 0", "transport: sockets\n", map[string]string{env.SwitchVar: "0"}, env.PathLegacy},
		{"file sockets, variable off", "transport: sockets\n", map[string]string{env.SwitchVar: "off"}, env.PathLegacy},
		{"file sockets, variable empty", "transport: sockets\n", map[string]string{env.SwitchVar: ""}, env.PathLegacy},
		{"file sockets, variable FALSE", "transport: sockets\n", map[string]string{env.SwitchVar: " FALSE "}, env.PathLegacy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(tt.vars)}, writeConfig(t, tt.file))
			if cfg.EffectivePath() != tt.want {
				t.Errorf("Path() = %q, want %q", cfg.EffectivePath(), tt.want)
			}
		})
	}
	t.Run("variable overrides an invalid file value", func(t *testing.T) {
		// The variable replaces the file's value before it is decoded.
		_, err := env.Loader{LookupEnv: lookupEnv(map[string]string{env.SwitchVar: "1"})}.Load(writeConfig(t, "transport: fast\n"))
		if err != nil {
			t.Fatalf("Load() error = %v; want the variable's value to replace the file's", err)
		}
	})
}

// TestFileTransport covers the file's transport key: the same words as the
// variable, including the ones YAML reads as a bool, a number or null.
func TestFileTransport(t *testing.T) {
	tests := []struct {
		yaml string
		want env.Path
	}{
		{"transport: sockets", env.PathSockets},
		{"transport: Sockets", env.PathSockets},
		{"transport: on", env.PathSockets},
		{"transport: true", env.PathSockets},
		{"transport: 1", env.PathSockets},
		{`transport: "1"`, env.PathSockets},
		{"transport: legacy", env.PathLegacy},
		{"transport: off", env.PathLegacy},
		{"transport: false", env.PathLegacy},
		{"transport: 0", env.PathLegacy},
		{`transport: ""`, env.PathLegacy},
		{"transport:", env.PathLegacy},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			cfg := mustLoad(t, env.Loader{}, writeConfig(t, tt.yaml+"\n"))
			if cfg.Path != tt.want {
				t.Errorf("Transport = %q, want %q", cfg.Path, tt.want)
			}
		})
	}
}

func FuzzParseSwitch(f *testing.F) {
	for _, tt := range acceptedSwitch {
		f.Add(tt.value)
	}
	for _, v := range rejectedSwitch {
		f.Add(v)
	}
	f.Add("shadow:0.05")
	f.Add("canary:5%:products,reviews")
	f.Add("canary:0.05")
	f.Add("products,reviews")
	f.Fuzz(func(t *testing.T, value string) {
		sw, err := env.ParseSwitch(value)
		if err != nil {
			if sw.Path != "" {
				t.Errorf("ParseSwitch(%q) = %+v with error %v", value, sw, err)
			}
			return
		}
		// A parsed value writes back to one that parses the same.
		again, err := env.ParseSwitch(sw.String())
		if err != nil || again.Path != sw.Path || again.ShadowRate != sw.ShadowRate || strings.Join(again.Schemas, ",") != strings.Join(sw.Schemas, ",") {
			t.Fatalf("ParseSwitch(%q) = %+v; its String %q parses to %+v, %v", value, sw, sw.String(), again, err)
		}
		switch sw.Path {
		case env.PathLegacy, env.PathSockets:
			if sw.Schemas != nil || sw.ShadowRate < 0 || sw.ShadowRate > 1 {
				t.Errorf("ParseSwitch(%q) = %+v", value, sw)
			}
		case env.PathMixed:
			if len(sw.Schemas) == 0 || sw.ShadowRate != 0 {
				t.Errorf("ParseSwitch(%q) = %+v", value, sw)
			}
		default:
			t.Fatalf("ParseSwitch(%q) = %+v: not a valid Path", value, sw)
		}
	})
}

// TestSwitchGrammar covers the per-schema list and shadow forms, through
// the variable and the file, with the errors that name the value.
func TestSwitchGrammar(t *testing.T) {
	const schemas = "source_schemas:\n  products:\n    url: http://p/graphql\n  reviews:\n    url: http://r/graphql\n  accounts:\n    url: http://a/graphql\n"
	for _, tt := range []struct {
		name, file, variable string
		path                 env.Path
		list                 []string
		rate                 float64
		err                  string
	}{
		{name: "list", variable: "products, reviews", path: env.PathMixed, list: []string{"products", "reviews"}},
		{name: "yaml list", file: "transport: [products]\n", path: env.PathMixed, list: []string{"products"}},
		{name: "yaml string list", file: "transport: products,accounts\n", path: env.PathMixed, list: []string{"products", "accounts"}},
		{name: "shadow", variable: "shadow", path: env.PathLegacy, rate: 1},
		{name: "shadow rate", variable: "SHADOW:0.05", path: env.PathLegacy, rate: 0.05},
		{name: "yaml shadow", file: "shadow: 0.25\n", path: env.PathLegacy, rate: 0.25},
		{name: "yaml shadow mapping", file: "transport: shadow:0.5\nshadow:\n  max_concurrent: 8\n", path: env.PathLegacy, rate: 0.5},
		{name: "variable replaces the file's shadow", file: "shadow: 0.25\n", variable: "1", path: env.PathSockets},
		{name: "unknown schema", variable: "products,ratings", err: `transport: unknown source schema "ratings" in the sockets list (configured: accounts, products, reviews) (set by FUSION_SOCKETS_TRANSPORT)`},
		{name: "a word that is no schema", variable: "yes", err: `transport: unknown source schema "yes" in the sockets list`},
		{name: "bad rate", variable: "shadow:1.5", err: `FUSION_SOCKETS_TRANSPORT: invalid value "shadow:1.5": the shadow rate must be a number above 0 and at most 1, e.g. shadow:0.05`},
		{name: "bad yaml rate", file: "shadow: 2\n", err: `shadow.rate: invalid rate 2: want a number from 0 (off) to 1 (every query)`},
		{name: "shadow with sockets", file: "transport: sockets\nshadow: 0.1\n", err: `shadow.rate: shadow comparison needs the legacy path serving; transport is "sockets"`},
		{name: "unknown shadow key", file: "shadow:\n  rat: 0.1\n", err: `shadow.rat: unknown key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{}
			if tt.variable != "" {
				vars[env.SwitchVar] = tt.variable
			}
			cfg, err := env.Loader{LookupEnv: lookupEnv(vars)}.Load(writeConfig(t, tt.file+schemas))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.EffectivePath() != tt.path || strings.Join(cfg.SocketsSchemas, ",") != strings.Join(tt.list, ",") || cfg.Shadow.Rate != tt.rate {
				t.Errorf("got path %q, list %q, rate %v; want %q, %q, %v", cfg.EffectivePath(), cfg.SocketsSchemas, cfg.Shadow.Rate, tt.path, tt.list, tt.rate)
			}
		})
	}
}
