package env_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// TestLoadResilienceKeys: the circuit breaker, retry budget and hedge keys
// decode from a file under defaults and a source schema, inherit key by
// key, take their built-in defaults, and the FUSION_* variables override
// them.
func TestLoadResilienceKeys(t *testing.T) {
	yaml := `
defaults:
  circuit_breaker:
    enabled: true
    failure_ratio: 0.25
    window: 30s
  retry:
    budget_ratio: off
  hedge:
    enabled: true
    delay: p99.9
source_schemas:
  products:
    url: http://products:4001/graphql
    circuit_breaker:
      min_requests: 7
      statuses: [503]
    retry:
      budget_min_per_second: 0
    hedge:
      delay: 50ms
      max_extra: 2
  reviews:
    url: http://reviews:4002/graphql
`
	vars := map[string]string{
		"FUSION_SOURCE_SCHEMAS__REVIEWS__CIRCUIT_BREAKER__OPEN_FOR": "9s",
		"FUSION_SOURCE_SCHEMAS__REVIEWS__RETRY__BUDGET_RATIO":       "0.5",
		"FUSION_SOURCE_SCHEMAS__REVIEWS__HEDGE__DELAY":              "p95",
	}
	cfg, err := env.Loader{LookupEnv: lookupEnv(vars), Environ: environ(vars)}.Load(writeConfig(t, yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cfg.Effective("products")
	wantB := env.BreakerSettings{Enabled: env.Enabled, FailureRatio: 0.25, MinRequests: 7, Window: 30 * time.Second, OpenFor: 5 * time.Second, HalfOpenRequests: 1, Statuses: []int{503}}
	if b := p.CircuitBreaker; b.Enabled != wantB.Enabled || b.FailureRatio != wantB.FailureRatio || b.MinRequests != wantB.MinRequests ||
		b.Window != wantB.Window || b.OpenFor != wantB.OpenFor || b.HalfOpenRequests != wantB.HalfOpenRequests || len(b.Statuses) != 1 || b.Statuses[0] != 503 {
		t.Errorf("products circuit_breaker %+v, want %+v", b, wantB)
	}
	if r := p.Retry; r.BudgetRatio != env.RatioOff || r.BudgetMinPerSecond != env.NoLimit {
		t.Errorf("products retry budget %v / %v, want off / none", r.BudgetRatio, r.BudgetMinPerSecond)
	}
	if h := p.Hedge; h.Enabled != env.Enabled || h.Delay != (env.HedgeDelay{After: 50 * time.Millisecond}) || h.MaxExtra != 2 {
		t.Errorf("products hedge %+v", h)
	}
	r, _ := cfg.Effective("reviews")
	if b := r.CircuitBreaker; b.OpenFor != 9*time.Second || b.MinRequests != 20 || len(b.Statuses) != 4 {
		t.Errorf("reviews circuit_breaker %+v, want open_for 9s from the variable and the defaults", b)
	}
	if rs := r.Retry; rs.BudgetRatio != 0.5 || rs.BudgetMinPerSecond != 10 {
		t.Errorf("reviews retry budget %v / %v, want 0.5 / 10", rs.BudgetRatio, rs.BudgetMinPerSecond)
	}
	if h := r.Hedge; h.Delay.Quantile != 0.95 || h.MaxExtra != 1 {
		t.Errorf("reviews hedge %+v, want p95 from the variable, max_extra 1", h)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	d, _ := env.Config{SourceSchemas: map[string]env.SourceSchema{"x": {URL: "http://x"}}}.Effective("x")
	if d.CircuitBreaker.Enabled.On() || d.Hedge.Enabled.On() || d.Retry.BudgetRatio != 0.2 || d.Hedge.Delay.String() != "p95" {
		t.Errorf("built-in defaults: breaker %+v, hedge %+v, budget %v", d.CircuitBreaker, d.Hedge, d.Retry.BudgetRatio)
	}
}

// TestLoadResilienceErrors: a bad value of each key fails the load with
// an error naming the key and the value.
func TestLoadResilienceErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"circuit_breaker:\n    failure_ratio: 1.5", `defaults.circuit_breaker.failure_ratio: invalid value 1.5: want a number above 0, at most 1`},
		{"circuit_breaker:\n    failure_ratio: off", `defaults.circuit_breaker.failure_ratio: invalid value off: want a number above 0, at most 1`},
		{"circuit_breaker:\n    min_requests: 0", `defaults.circuit_breaker.min_requests: invalid value 0: want a whole number, at least 1`},
		{"circuit_breaker:\n    half_open_requests: 1.5", `defaults.circuit_breaker.half_open_requests: invalid value 1.5: want a whole number, at least 1`},
		{"circuit_breaker:\n    statuses: [503, 700]", `defaults.circuit_breaker.statuses[1]: invalid status 700: want a number from 100 to 599`},
		{"circuit_breaker:\n    enabled: maybe", `defaults.circuit_breaker.enabled: invalid value maybe: want true or false`},
		{"circuit_breaker:\n    window: 10", `defaults.circuit_breaker.window: invalid duration 10: a number needs a unit`},
		{"circuit_breaker:\n    open_for: off", `defaults.circuit_breaker.open_for: invalid value off: the breaker needs a positive duration`},
		{"retry:\n    budget_ratio: -1", `defaults.retry.budget_ratio: invalid value -1: want a positive number, or off`},
		{"retry:\n    budget_min_per_second: -3", `defaults.retry.budget_min_per_second: invalid value -3: want a whole number, 0 or more (0: none)`},
		{"hedge:\n    delay: p100", `defaults.hedge.delay: invalid value "p100": want a quantile such as p95 or p99.9`},
		{"hedge:\n    delay: soon", `defaults.hedge.delay: invalid value "soon": want a positive duration such as 50ms, or a quantile such as p95`},
		{"hedge:\n    delay: 0s", `defaults.hedge.delay: invalid value "0s": want a positive duration`},
		{"hedge:\n    max_extra: 0", `defaults.hedge.max_extra: invalid value 0: want a whole number, at least 1`},
		{"hedge:\n    max_extra: 17", `defaults.hedge.max_extra: invalid value 17: at most 16`},
		{"circuit_breaker:\n    ratio: 0.5", `defaults.circuit_breaker.ratio: unknown key`},
		{"circuit_breaker:\n    window: 1ms", `defaults.circuit_breaker.window: invalid value 1ms: want at least 10ms, or off`},
		{"retry:\n    budget_ratio: .inf", `defaults.retry.budget_ratio: invalid value +Inf: want a positive number, or off`},
		{"rate_limit:\n    requests_per_second: .inf", `defaults.rate_limit.requests_per_second: invalid value +Inf: want a positive number, or off`},
		{"dns_refresh: 1ns", `defaults.dns_refresh: invalid value 1ns: want at least 10ms, or off`},
	} {
		t.Run(tc.want, func(t *testing.T) { wantDefaultsError(t, tc.yaml, tc.want) })
	}
}

// TestValidateBounds: each value that Go code may set and that makes no
// sense (a quantile of 1, an infinite ratio, a lookup every nanosecond, a
// breaker window of a microsecond) fails Validate alone, naming the key
// and the value; the value just inside each bound passes.
func TestValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*env.Settings)
		want string // "": valid
	}{
		{"quantile 1", func(s *env.Settings) { s.Hedge.Delay = env.HedgeDelay{Quantile: 1} }, "hedge.delay: invalid quantile 1"},
		{"quantile 0.999", func(s *env.Settings) { s.Hedge.Delay = env.HedgeDelay{Quantile: 0.999} }, ""},
		{"budget ratio +Inf", func(s *env.Settings) { s.Retry.BudgetRatio = math.Inf(1) }, "retry.budget_ratio: invalid value +Inf"},
		{"budget ratio 1e9", func(s *env.Settings) { s.Retry.BudgetRatio = 1e9 }, ""},
		{"rate +Inf", func(s *env.Settings) { s.RateLimit.RequestsPerSecond = math.Inf(1) }, "rate_limit.requests_per_second: invalid value +Inf"},
		{"dns_refresh 1ns", func(s *env.Settings) { s.DNSRefresh = time.Nanosecond }, "dns_refresh: invalid value 1ns: want at least 10ms"},
		{"dns_refresh 10ms", func(s *env.Settings) { s.DNSRefresh = env.MinDNSRefresh }, ""},
		{"dns_refresh off", func(s *env.Settings) { s.DNSRefresh = env.Off }, ""},
		{"window 1us", func(s *env.Settings) { s.CircuitBreaker.Window = time.Microsecond }, "circuit_breaker.window: invalid value 1µs: want at least 10ms"},
		{"window 10ms", func(s *env.Settings) { s.CircuitBreaker.Window = env.MinBreakerWindow }, ""},
		{"base_ejection 2000000h", func(s *env.Settings) { s.OutlierDetection.BaseEjection = 2000000 * time.Hour }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s env.Settings
			tc.set(&s)
			cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"p": {URL: "http://p:1/graphql", Settings: s}}}
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v; want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "source_schemas.p."+tc.want)):
				t.Errorf("Validate: %v; want %q", err, "source_schemas.p."+tc.want)
			}
		})
	}
}

// TestValidateResilience: values that Go code sets out of range fail
// Validate, naming the key.
func TestValidateResilience(t *testing.T) {
	cfg := env.Config{SourceSchemas: map[string]env.SourceSchema{"p": {URL: "http://p:1/graphql", Settings: env.Settings{
		CircuitBreaker: env.BreakerSettings{FailureRatio: 2, MinRequests: -1, Window: env.Off},
		Retry:          env.RetrySettings{BudgetRatio: -0.5},
		Hedge:          env.HedgeSettings{Delay: env.HedgeDelay{Quantile: 1.2}},
	}}}}
	err := cfg.Validate()
	for _, want := range []string{
		"source_schemas.p.circuit_breaker.failure_ratio: invalid value 2",
		"source_schemas.p.circuit_breaker.min_requests: invalid value -1",
		"source_schemas.p.circuit_breaker.window: invalid value off",
		"source_schemas.p.retry.budget_ratio: invalid value -0.5",
		"source_schemas.p.hedge.delay: invalid quantile 1.2",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want %q", err, want)
		}
	}
	nan := math.NaN()
	cfg.SourceSchemas["p"] = env.SourceSchema{URL: "http://p:1/graphql", Settings: env.Settings{
		CircuitBreaker: env.BreakerSettings{FailureRatio: nan},
		Retry:          env.RetrySettings{BudgetRatio: nan},
		Hedge:          env.HedgeSettings{Delay: env.HedgeDelay{Quantile: nan}},
	}}
	err = cfg.Validate()
	for _, key := range []string{"circuit_breaker.failure_ratio", "retry.budget_ratio", "hedge.delay"} {
		if err == nil || !strings.Contains(err.Error(), "source_schemas.p."+key+": invalid") {
			t.Errorf("Validate with NaN: %v; want an error for %s", err, key)
		}
	}
}
