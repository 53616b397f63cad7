package env_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestShapingInheritance: request_compression and rate_limit inherit key by
// key from defaults, and "off" and 0 spell their off values.
func TestShapingInheritance(t *testing.T) {
	file := writeConfig(t, `
defaults:
  request_compression:
    codec: gzip
  rate_limit:
    requests_per_second: 100
    burst: 10
source_schemas:
  products:
    url: http://products/graphql
    request_compression:
      min_bytes: 4096
    rate_limit:
      wait: 20ms
  reviews:
    url: http://reviews/graphql
    request_compression:
      codec: "off"
    rate_limit:
      requests_per_second: "off"
      wait: 0
`)
	cfg := mustLoad(t, env.Loader{LookupEnv: lookupEnv(nil), Environ: environ(nil)}, file)
	for _, tc := range []struct {
		schema string
		comp   env.RequestCompressionSettings
		limit  env.RateLimitSettings
		on     [2]bool
	}{
		{"products", env.RequestCompressionSettings{Codec: "gzip", MinBytes: 4096}, env.RateLimitSettings{RequestsPerSecond: 100, Burst: 10, Wait: 20 * time.Millisecond}, [2]bool{true, true}},
		{"reviews", env.RequestCompressionSettings{Codec: "off", MinBytes: 1024}, env.RateLimitSettings{RequestsPerSecond: env.RatioOff, Burst: 10, Wait: env.Off}, [2]bool{false, false}},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			s, _ := cfg.Effective(tc.schema)
			if s.RequestCompression != tc.comp {
				t.Errorf("request_compression %+v, want %+v", s.RequestCompression, tc.comp)
			}
			if s.RateLimit != tc.limit {
				t.Errorf("rate_limit %+v, want %+v", s.RateLimit, tc.limit)
			}
			if got := [2]bool{s.RequestCompression.On(), s.RateLimit.On()}; got != tc.on {
				t.Errorf("On() = %v, want %v", got, tc.on)
			}
		})
	}
}

func TestRateLimitEffectiveBurst(t *testing.T) {
	for _, tc := range []struct {
		s    env.RateLimitSettings
		want int
	}{
		{env.RateLimitSettings{RequestsPerSecond: 100}, 100},
		{env.RateLimitSettings{RequestsPerSecond: 2.5}, 3},
		{env.RateLimitSettings{RequestsPerSecond: 0.1}, 1},
		{env.RateLimitSettings{RequestsPerSecond: 100, Burst: 10}, 10},
	} {
		if got := tc.s.EffectiveBurst(); got != tc.want {
			t.Errorf("%+v: EffectiveBurst() = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestShapingErrors: invalid values in a file name the key and the value.
func TestShapingErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"request_compression:\n    codec: br", `defaults.request_compression.codec: invalid value "br": allowed off, gzip, zstd`},
		{"request_compression:\n    min_bytes: 0", `defaults.request_compression.min_bytes: invalid value 0: want a whole number, at least 1`},
		{"rate_limit:\n    requests_per_second: 0", `defaults.rate_limit.requests_per_second: invalid value 0: want a positive number, or off`},
		{"rate_limit:\n    requests_per_second: -5", `defaults.rate_limit.requests_per_second: invalid value -5: want a positive number, or off`},
		{"rate_limit:\n    burst: 0", `defaults.rate_limit.burst: invalid value 0: want a whole number, at least 1`},
		{"rate_limit:\n    wait: 10", `defaults.rate_limit.wait: invalid duration 10: a number needs a unit`},
		{"rate_limit:\n    rate: 5", `defaults.rate_limit.rate: unknown key`},
	} {
		t.Run(tc.want, func(t *testing.T) { wantDefaultsError(t, tc.yaml, tc.want) })
	}
}

// TestValidateShaping: values that Go code sets out of range fail
// Validate, naming the key.
func TestValidateShaping(t *testing.T) {
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"p": {URL: "http://p:1/graphql", Settings: env.Settings{
		RequestCompression: env.RequestCompressionSettings{Codec: "brotli", MinBytes: -1},
		RateLimit:          env.RateLimitSettings{RequestsPerSecond: -3, Burst: -1, Wait: -2 * time.Second},
	}}}}
	err := cfg.Validate()
	for _, want := range []string{
		`source_schemas.p.request_compression.codec: invalid value "brotli"`,
		"source_schemas.p.request_compression.min_bytes: invalid value -1",
		"source_schemas.p.rate_limit.requests_per_second: invalid value -3",
		"source_schemas.p.rate_limit.burst: invalid value -1",
		"source_schemas.p.rate_limit.wait: invalid value -2s",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, want)
		}
	}
}
