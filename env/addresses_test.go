package env_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestLoadAddressKeys: dns_refresh and outlier_detection decode under
// defaults and per schema, inherit key by key, and take their variables.
func TestLoadAddressKeys(t *testing.T) {
	file := writeConfig(t, `
defaults:
  dns_refresh: 30s
  outlier_detection:
    consecutive_failures: 3
source_schemas:
  products:
    url: http://products:4001/graphql
    dns_refresh: off
    outlier_detection:
      base_ejection: 5s
  reviews:
    url: http://reviews:4002/graphql
`)
	cfg, err := env.Loader{
		LookupEnv: lookupEnv(map[string]string{"FUSION_SOURCE_SCHEMAS__REVIEWS__OUTLIER_DETECTION__MAX_EJECTION_PERCENT": "50"}),
		Environ:   environ(map[string]string{"FUSION_SOURCE_SCHEMAS__REVIEWS__OUTLIER_DETECTION__MAX_EJECTION_PERCENT": "50"}),
	}.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cfg.Effective("products")
	r, _ := cfg.Effective("reviews")
	if p.DNSRefresh != env.Off || r.DNSRefresh != 30*time.Second {
		t.Errorf("dns_refresh products %v, reviews %v; want off and 30s", p.DNSRefresh, r.DNSRefresh)
	}
	wantP := env.OutlierSettings{Enabled: env.Enabled, ConsecutiveFailures: 3, Interval: 10 * time.Second, BaseEjection: 5 * time.Second, MaxEjection: 300 * time.Second, MaxEjectionPercent: 10}
	wantR := env.OutlierSettings{Enabled: env.Enabled, ConsecutiveFailures: 3, Interval: 10 * time.Second, BaseEjection: 30 * time.Second, MaxEjection: 300 * time.Second, MaxEjectionPercent: 50}
	if p.OutlierDetection != wantP || r.OutlierDetection != wantR {
		t.Errorf("outlier_detection products %+v, reviews %+v; want %+v, %+v", p.OutlierDetection, r.OutlierDetection, wantP, wantR)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestLoadAddressErrors: a bad value of each key fails the load, naming
// the key and the value.
func TestLoadAddressErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"dns_refresh: soon", `defaults.dns_refresh: invalid duration "soon"`},
		{"dns_refresh: -5s", `defaults.dns_refresh: invalid duration "-5s": must not be negative`},
		{"outlier_detection:\n    consecutive_failures: 0", `defaults.outlier_detection.consecutive_failures: invalid value 0: want a whole number, at least 1`},
		{"outlier_detection:\n    max_ejection_percent: 101", `defaults.outlier_detection.max_ejection_percent: invalid value 101: want a whole number of percent, from 1 to 100`},
		{"outlier_detection:\n    max_ejection_percent: 0", `defaults.outlier_detection.max_ejection_percent: invalid value 0: want a whole number of percent, from 1 to 100`},
		{"outlier_detection:\n    base_ejection: off", `defaults.outlier_detection.base_ejection: invalid value off: outlier ejection needs a positive duration`},
		{"outlier_detection:\n    interval: 0", `defaults.outlier_detection.interval: invalid value off: outlier ejection needs a positive duration`},
		{"outlier_detection:\n    enabled: sometimes", `defaults.outlier_detection.enabled: invalid value sometimes: want true or false`},
		{"outlier_detection:\n    consecutive: 5", `defaults.outlier_detection.consecutive: unknown key`},
	} {
		t.Run(tc.want, func(t *testing.T) { wantDefaultsError(t, tc.yaml, tc.want) })
	}
	// Go code out of range: Validate names the key.
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"p": {URL: "http://p:1/graphql", Settings: env.Settings{
		OutlierDetection: env.OutlierSettings{ConsecutiveFailures: -1, MaxEjectionPercent: 200, MaxEjection: env.Off},
	}}}}
	err := cfg.Validate()
	for _, want := range []string{
		"source_schemas.p.outlier_detection.consecutive_failures: invalid value -1",
		"source_schemas.p.outlier_detection.max_ejection_percent: invalid value 200",
		"source_schemas.p.outlier_detection.max_ejection: invalid value off",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
}
