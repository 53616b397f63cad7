package env_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestParseSwitchCanary: the canary forms of the switch, and the errors
// that name the value.
func TestParseSwitchCanary(t *testing.T) {
	for _, tt := range []struct {
		value   string
		rate    float64
		schemas []string
		err     string
	}{
		{value: "canary:0.05", rate: 0.05},
		{value: " CANARY:5% ", rate: 0.05},
		{value: "canary:1", rate: 1},
		{value: "canary:100%", rate: 1},
		{value: "canary:0.1:products,reviews", rate: 0.1, schemas: []string{"products", "reviews"}},
		{value: "canary:10%: Products , reviews", rate: 0.1, schemas: []string{"Products", "reviews"}},
		{value: "canary", err: `invalid value "canary": a canary needs its starting rate`},
		{value: "canary:", err: `invalid value "canary:": the canary rate must be above 0 and at most 1`},
		{value: "canary:0", err: `invalid value "canary:0": the canary rate must be above 0 and at most 1`},
		{value: "canary:1.5", err: `invalid value "canary:1.5": the canary rate`},
		{value: "canary:150%", err: `invalid value "canary:150%": the canary rate`},
		{value: "canary:-5%", err: `invalid value "canary:-5%": the canary rate`},
		{value: "canary:NaN", err: `invalid value "canary:NaN": the canary rate`},
		{value: "canary:five", err: `invalid value "canary:five": the canary rate`},
		{value: "canary:0.1:", err: `invalid value "canary:0.1:": no source schema after the canary rate`},
		{value: "canary:0.1:a b", err: `invalid value "canary:0.1:a b": "a b" is not a source schema name`},
		{value: "canary,products", err: `"canary" is a switch word, not a source schema`},
	} {
		t.Run(tt.value, func(t *testing.T) {
			sw, err := env.ParseSwitch(tt.value)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseSwitch(%q) = %+v, %v; want error %s", tt.value, sw, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sw.Path != env.PathLegacy || sw.CanaryRate != tt.rate || !reflect.DeepEqual(sw.CanarySchemas, tt.schemas) || sw.ShadowRate != 0 {
				t.Fatalf("ParseSwitch(%q) = %+v, want legacy with canary rate %v and schemas %q", tt.value, sw, tt.rate, tt.schemas)
			}
			again, err := env.ParseSwitch(sw.String())
			if err != nil || again.CanaryRate != sw.CanaryRate || !reflect.DeepEqual(again.CanarySchemas, sw.CanarySchemas) {
				t.Fatalf("String %q parses to %+v, %v", sw.String(), again, err)
			}
		})
	}
}

// TestLoadCanary: the canary block in YAML and through the variable, with
// defaults applied by EffectiveCanary, and the errors that name the value.
func TestLoadCanary(t *testing.T) {
	const schemas = "source_schemas:\n  products:\n    url: http://p/graphql\n  reviews:\n    url: http://r/graphql\n"
	defaults := func(c env.CanarySettings) env.CanarySettings {
		return env.Config{Canary: c}.EffectiveCanary()
	}
	full := "canary:\n  rate: 5%\n  max_rate: 0.5\n  step: 0.05\n  interval: 10m\n  window: 400\n  min_requests: 100\n  max_error_ratio_delta: 0.02\n  cooldown: 1m\n  schemas: [products]\n  key_header: X-Trace\n"
	for _, tt := range []struct {
		name, file, variable string
		want                 env.CanarySettings // effective
		err                  string
	}{
		{name: "every key", file: full, want: env.CanarySettings{Rate: 0.05, MaxRate: 0.5, Step: 0.05, Interval: 10 * time.Minute, Window: 400, MinRequests: 100, MaxErrorRatioDelta: 0.02, Cooldown: time.Minute, Schemas: []string{"products"}, KeyHeader: "X-Trace"}},
		{name: "defaults", file: "canary:\n  rate: 0.1\n", want: env.CanarySettings{Rate: 0.1, MaxRate: 0.1, Interval: env.DefaultCanaryInterval, Window: env.DefaultCanaryWindow, MinRequests: env.DefaultCanaryMinRequests, MaxErrorRatioDelta: env.DefaultCanaryMaxErrorRatioDelta, Cooldown: env.DefaultCanaryCooldown, KeyHeader: env.DefaultCanaryKeyHeader}},
		{name: "bare rate", file: "canary: 0.2\n", want: defaults(env.CanarySettings{Rate: 0.2})},
		{name: "transport key", file: "transport: canary:0.1:reviews\n", want: defaults(env.CanarySettings{Rate: 0.1, Schemas: []string{"reviews"}})},
		{name: "variable", variable: "canary:3%", want: defaults(env.CanarySettings{Rate: 0.03})},
		{name: "variable keeps the file's other keys", file: "canary:\n  rate: 0.5\n  cooldown: 1m\n  schemas: [reviews]\n", variable: "canary:0.01", want: defaults(env.CanarySettings{Rate: 0.01, Cooldown: time.Minute, Schemas: []string{"reviews"}})},
		{name: "variable names schemas", file: "canary:\n  rate: 0.5\n  schemas: [reviews]\n", variable: "canary:0.01:products", want: defaults(env.CanarySettings{Rate: 0.01, Schemas: []string{"products"}})},
		{name: "variable turns it off", file: "canary: 0.5\n", variable: "legacy", want: defaults(env.CanarySettings{})},
		{name: "bad rate", file: "canary:\n  rate: 1.5\n", err: `canary.rate: invalid value 1.5: want a share from 0 to 1`},
		{name: "bad percentage", file: "canary:\n  rate: 120%\n", err: `canary.rate: invalid value 120%: want a share from 0 to 1`},
		{name: "bad variable", variable: "canary:2", err: `FUSION_SOCKETS_TRANSPORT: invalid value "canary:2": the canary rate must be above 0 and at most 1`},
		{name: "bad window", file: "canary:\n  rate: 0.1\n  window: 2.5\n", err: `canary.window: invalid limit 2.5: want a whole number`},
		{name: "min above window", file: "canary:\n  rate: 0.1\n  window: 10\n  min_requests: 20\n", err: `canary.min_requests: invalid value 20: above canary.window 10`},
		{name: "max below rate", file: "canary:\n  rate: 0.3\n  max_rate: 0.2\n", err: `canary.max_rate: invalid value 0.2: below canary.rate 0.3`},
		{name: "bad cooldown", file: "canary:\n  rate: 0.1\n  cooldown: 5x\n", err: `canary.cooldown: invalid duration "5x"`},
		{name: "zero cooldown", file: "canary:\n  rate: 0.1\n  cooldown: 0\n", err: `canary.cooldown: invalid duration 0: want a positive duration`},
		{name: "unknown schema", file: "canary:\n  rate: 0.1\n  schemas: [ratings]\n", err: `canary.schemas[0]: unknown source schema "ratings" in the canary list (configured: products, reviews)`},
		{name: "bad key header", file: "canary:\n  rate: 0.1\n  key_header: Bad Name\n", err: `canary.key_header: invalid header name "Bad Name"`},
		{name: "unknown key", file: "canary:\n  rat: 0.1\n", err: `canary.rat: unknown key (known keys: rate, max_rate, step, interval, window, min_requests, max_error_ratio_delta, cooldown, schemas, key_header)`},
		{name: "with shadow", file: "shadow: 0.1\ncanary: 0.05\n", err: `canary.rate: canary (rate 0.05) and shadow (shadow.rate 0.1) cannot run together: choose one`},
		{name: "with sockets", file: "transport: sockets\ncanary: 0.05\n", err: `canary.rate: a canary needs the legacy path serving the rest; transport is "sockets"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{}
			if tt.variable != "" {
				vars[env.SwitchVar] = tt.variable
			}
			cfg, err := env.Loader{LookupEnv: lookupEnv(vars)}.Load(writeConfig(t, tt.file+schemas))
			if tt.err != "" {
				var ke *env.KeyError
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &ke) {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.EffectiveCanary(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EffectiveCanary() = %+v\nwant %+v", got, tt.want)
			}
			if cfg.EffectivePath() != env.PathLegacy {
				t.Errorf("path %q, want legacy", cfg.EffectivePath())
			}
		})
	}
}
