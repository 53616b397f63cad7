package env

import (
	"fmt"
	"math"
	"time"

	"github.com/fusiongo/transport/internal/defaults"
)

// validateResilience checks the circuit breaker, retry budget and hedge
// values set at one level (as Go code may set them; a file's decoding
// already refuses the same values), naming their keys.
func validateResilience(errs *errorList, prefix string, s Settings) {
	b := s.CircuitBreaker
	if r := b.FailureRatio; r < 0 || r > 1 || math.IsNaN(r) {
		errs.add(prefix+".circuit_breaker.failure_ratio", r, nil, "invalid value %v: want a number above 0, at most 1", r)
	}
	for _, c := range []struct {
		key string
		n   int
	}{
		{"circuit_breaker.min_requests", b.MinRequests},
		{"circuit_breaker.half_open_requests", b.HalfOpenRequests},
		{"hedge.max_extra", s.Hedge.MaxExtra},
		{"outlier_detection.consecutive_failures", s.OutlierDetection.ConsecutiveFailures},
	} {
		if c.n < 0 {
			errs.add(prefix+"."+c.key, c.n, nil, "invalid value %d: want a whole number, at least 1", c.n)
		}
	}
	if n := s.OutlierDetection.MaxEjectionPercent; n < 0 || n > 100 {
		errs.add(prefix+".outlier_detection.max_ejection_percent", n, nil, "invalid value %d: want a whole number of percent, from 1 to 100", n)
	}
	if n := s.Hedge.MaxExtra; n > defaults.MaxHedgeExtra {
		errs.add(prefix+".hedge.max_extra", n, nil, "invalid value %d: at most %d", n, defaults.MaxHedgeExtra)
	}
	for _, d := range []struct {
		key string
		v   fmt.Stringer
		bad bool
		who string
	}{
		{"circuit_breaker.window", b.Window, b.Window < 0, "the breaker"},
		{"circuit_breaker.open_for", b.OpenFor, b.OpenFor < 0, "the breaker"},
		{"outlier_detection.interval", s.OutlierDetection.Interval, s.OutlierDetection.Interval < 0, "outlier ejection"},
		{"outlier_detection.base_ejection", s.OutlierDetection.BaseEjection, s.OutlierDetection.BaseEjection < 0, "outlier ejection"},
		{"outlier_detection.max_ejection", s.OutlierDetection.MaxEjection, s.OutlierDetection.MaxEjection < 0, "outlier ejection"},
	} {
		if d.bad {
			errs.add(prefix+"."+d.key, "off", nil, "invalid value off: %s needs a positive duration", d.who)
		}
	}
	for i, st := range b.Statuses {
		if st < 100 || st > 599 {
			errs.add(fmt.Sprintf("%s.circuit_breaker.statuses[%d]", prefix, i), st, nil, "invalid status %v: want a number from 100 to 599", st)
		}
	}
	if r := s.Retry.BudgetRatio; r < 0 && r != RatioOff || math.IsNaN(r) || math.IsInf(r, 0) {
		errs.add(prefix+".retry.budget_ratio", r, nil, "invalid value %v: want a positive number, or off", r)
	}
	// Values so small that the code acting on them would spin: a lookup
	// every nanosecond, a breaker window whose buckets wrap at once.
	for _, d := range []struct {
		key      string
		v, least time.Duration
	}{
		{"dns_refresh", s.DNSRefresh, MinDNSRefresh},
		{"circuit_breaker.window", b.Window, MinBreakerWindow},
	} {
		if d.v > 0 && d.v < d.least {
			errs.add(prefix+"."+d.key, d.v.String(), nil, "invalid value %s: want at least %s, or off", d.v, d.least)
		}
	}
	if n := s.Retry.BudgetMinPerSecond; n < NoLimit {
		errs.add(prefix+".retry.budget_min_per_second", n, nil, "invalid value %d: want a whole number, 0 or more (0: none)", n)
	}
	switch d := s.Hedge.Delay; {
	case d.Quantile != 0 && d.After != 0:
		errs.add(prefix+".hedge.delay", d.String(), nil, "invalid value: set a duration (After) or a quantile, not both")
	case d.Quantile < 0 || d.Quantile >= 1 || math.IsNaN(d.Quantile):
		errs.add(prefix+".hedge.delay", d.Quantile, nil, "invalid quantile %v: want a number above 0 and below 1 (p95 is 0.95)", d.Quantile)
	case d.After < 0:
		errs.add(prefix+".hedge.delay", d.After.String(), nil, "invalid value %s: want a positive duration such as 50ms, or a quantile such as p95", d.After)
	}
}
