package env_test

import (
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
)

// TestLoadMaxPendingRequests: max_pending_requests decodes under defaults
// and per schema, a schema without it inherits the defaults' value, 0 in a
// file is no bound (env.NoLimit), the built-in default is 1024, and
// FUSION_DEFAULTS__MAX_PENDING_REQUESTS sets it.
func TestLoadMaxPendingRequests(t *testing.T) {
	for _, tc := range []struct {
		name, defaults, products string
		vars                     map[string]string
		wantProducts, wantOthers int
	}{
		{name: "built-in", wantProducts: env.DefaultMaxPendingRequests, wantOthers: env.DefaultMaxPendingRequests},
		{name: "defaults", defaults: "max_pending_requests: 50", wantProducts: 50, wantOthers: 50},
		{name: "per schema", defaults: "max_pending_requests: 50", products: "max_pending_requests: 7", wantProducts: 7, wantOthers: 50},
		{name: "zero is no bound", products: "max_pending_requests: 0", wantProducts: env.NoLimit, wantOthers: env.DefaultMaxPendingRequests},
		{name: "variable", defaults: "max_pending_requests: 50", products: "max_pending_requests: 7",
			vars: map[string]string{"FUSION_DEFAULTS__MAX_PENDING_REQUESTS": "300"}, wantProducts: 7, wantOthers: 300},
		{name: "variable per schema", vars: map[string]string{"FUSION_SOURCE_SCHEMAS__PRODUCTS__MAX_PENDING_REQUESTS": "9"},
			wantProducts: 9, wantOthers: env.DefaultMaxPendingRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "defaults:\n  connect_timeout: 1s\n"
			if tc.defaults != "" {
				yaml += "  " + tc.defaults + "\n"
			}
			yaml += "source_schemas:\n  products:\n    url: http://products:4001/graphql\n"
			if tc.products != "" {
				yaml += "    " + tc.products + "\n"
			}
			yaml += "  reviews:\n    url: http://reviews:4002/graphql\n"
			cfg, err := env.Loader{LookupEnv: lookupEnv(tc.vars), Environ: environ(tc.vars)}.Load(writeConfig(t, yaml))
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			p, _ := cfg.Effective("products")
			r, _ := cfg.Effective("reviews")
			if p.MaxPendingRequests != tc.wantProducts || r.MaxPendingRequests != tc.wantOthers {
				t.Errorf("max_pending_requests products %d, reviews %d; want %d, %d", p.MaxPendingRequests, r.MaxPendingRequests, tc.wantProducts, tc.wantOthers)
			}
		})
	}
}

// TestMaxPendingRequestsErrors: an invalid value fails, naming the key and
// the value.
func TestMaxPendingRequestsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		vars       map[string]string
		want       string
	}{
		{name: "negative", yaml: "defaults:\n  max_pending_requests: -2\n", want: "defaults.max_pending_requests: invalid limit -2: must not be negative (0 means no limit)"},
		{name: "per schema", yaml: "source_schemas:\n  p:\n    url: http://p:1/graphql\n    max_pending_requests: many\n", want: "source_schemas.p.max_pending_requests"},
		{name: "variable", vars: map[string]string{"FUSION_DEFAULTS__MAX_PENDING_REQUESTS": "lots"}, want: "FUSION_DEFAULTS__MAX_PENDING_REQUESTS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := tc.yaml
			if !strings.Contains(yaml, "source_schemas") {
				yaml += "source_schemas:\n  p:\n    url: http://p:1/graphql\n"
			}
			cfg, err := env.Loader{LookupEnv: lookupEnv(tc.vars), Environ: environ(tc.vars)}.Load(writeConfig(t, yaml))
			if err == nil {
				err = cfg.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}
