package env

import (
	"fmt"
	"math"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fusiongo/transport/internal/redact"
	"github.com/fusiongo/transport/internal/setting"
)

// field is one setting key: how a file value decodes into Settings, how a
// source schema inherits it, and what a change of it rebuilds on each path.
// settingFields is the one list of keys that the loader, inheritance, the
// environment mapping, the config command and a reload share.
type field struct {
	key     string // dotted, under defaults or source_schemas.<name>
	decode  func(errs *errorList, key string, v any, s *Settings)
	inherit func(dst, parent *Settings)
	isSet   func(s *Settings) bool
	// format writes the value as a file would, secrets included: what
	// diffSettings compares, so that a changed secret is a change.
	format func(s *Settings) string
	// show writes the value for people (Explain, the config command) with
	// its secrets hidden; nil for a key that holds none: format then.
	show func(s *Settings) string
	// sockets and legacy are what a change of the key rebuilds on each
	// path (rebuild.go), set by rebuilds.
	sockets, legacy setting.Rebuild
}

// display is the value of the key in s as Explain shows it.
func (f field) display(s *Settings) string {
	if f.show != nil {
		return f.show(s)
	}
	return f.format(s)
}

// settingFields are the setting keys in documentation order. The last
// column says what a change of the key rebuilds on the sockets path, then
// on the legacy path (setting.Rebuild).
var settingFields = []field{
	durationField("connect_timeout", func(s *Settings) *time.Duration { return &s.ConnectTimeout }).rebuilds(setting.RebuildPool, setting.RebuildShared),
	durationField("conn_lifetime", func(s *Settings) *time.Duration { return &s.ConnLifetime }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("conn_lifetime_jitter", func(s *Settings) *time.Duration { return &s.ConnLifetimeJitter }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("idle_conn_timeout", func(s *Settings) *time.Duration { return &s.IdleConnTimeout }).rebuilds(setting.RebuildPool, setting.RebuildShared),
	limitField("max_conns_per_host", func(s *Settings) *int { return &s.MaxConnsPerHost }).rebuilds(setting.RebuildPool, setting.RebuildShared),
	limitField("max_idle_conns_per_host", func(s *Settings) *int { return &s.MaxIdleConnsPerHost }).rebuilds(setting.RebuildPool, setting.RebuildShared),
	limitField("max_pending_requests", func(s *Settings) *int { return &s.MaxPendingRequests }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("dns_refresh", func(s *Settings) *time.Duration { return &s.DNSRefresh }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	toggleField("outlier_detection.enabled", func(s *Settings) *Toggle { return &s.OutlierDetection.Enabled }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	countField("outlier_detection.consecutive_failures", func(s *Settings) *int { return &s.OutlierDetection.ConsecutiveFailures }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("outlier_detection.interval", func(s *Settings) *time.Duration { return &s.OutlierDetection.Interval }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("outlier_detection.base_ejection", func(s *Settings) *time.Duration { return &s.OutlierDetection.BaseEjection }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("outlier_detection.max_ejection", func(s *Settings) *time.Duration { return &s.OutlierDetection.MaxEjection }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	percentField("outlier_detection.max_ejection_percent", func(s *Settings) *int { return &s.OutlierDetection.MaxEjectionPercent }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	limitField("max_response_header_bytes", func(s *Settings) *int { return &s.MaxResponseHeaderBytes }).rebuilds(setting.RebuildPool, setting.RebuildShared),
	durationField("keep_alive", func(s *Settings) *time.Duration { return &s.KeepAlive }).rebuilds(setting.RebuildPool, setting.RebuildShared),
	durationField("header_timeout", func(s *Settings) *time.Duration { return &s.HeaderTimeout }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	durationField("request_timeout", func(s *Settings) *time.Duration { return &s.RequestTimeout }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	durationField("tls_handshake_timeout", func(s *Settings) *time.Duration { return &s.TLSHandshakeTimeout }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	enumField("engine", engines, func(s *Settings) *string { return &s.Engine }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	enumField("http_version", []string{"1.1", "2", "h2c"}, func(s *Settings) *string { return &s.HTTPVersion }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	enumField("version_policy", []string{"exact", "or_lower"}, func(s *Settings) *string { return &s.VersionPolicy }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("http2.ping_interval", func(s *Settings) *time.Duration { return &s.HTTP2.PingInterval }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	durationField("http2.ping_timeout", func(s *Settings) *time.Duration { return &s.HTTP2.PingTimeout }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	toggleField("http2.multiple_connections", func(s *Settings) *Toggle { return &s.HTTP2.MultipleConnections }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	stringField("tls.ca_file", func(s *Settings) *string { return &s.TLS.CAFile }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	stringField("tls.cert_file", func(s *Settings) *string { return &s.TLS.CertFile }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	stringField("tls.key_file", func(s *Settings) *string { return &s.TLS.KeyFile }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	stringField("tls.server_name", func(s *Settings) *string { return &s.TLS.ServerName }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	enumField("tls.min_version", []string{"1.2", "1.3"}, func(s *Settings) *string { return &s.TLS.MinVersion }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	enumField("tls.max_version", []string{"1.2", "1.3"}, func(s *Settings) *string { return &s.TLS.MaxVersion }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	toggleField("tls.insecure_skip_verify", func(s *Settings) *Toggle { return &s.TLS.InsecureSkipVerify }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	urlField("proxy", func(s *Settings) *string { return &s.Proxy }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	listField("decompression", func(s *Settings) *[]string { return &s.Decompression }).rebuilds(setting.RebuildNothing, setting.RebuildIgnored),
	stringField("unix_socket", func(s *Settings) *string { return &s.UnixSocket }).rebuilds(setting.RebuildPool, setting.RebuildIgnored),
	listField("headers.forward", func(s *Settings) *[]string { return &s.Headers.Forward }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	listField("headers.forward_matching", func(s *Settings) *[]string { return &s.Headers.ForwardMatching }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	mapField("headers.rename", func(s *Settings) *map[string]string { return &s.Headers.Rename }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	secretMapField("headers.set", func(s *Settings) *map[string]string { return &s.Headers.Set }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	limitField("headers.max_forwarded_bytes", func(s *Settings) *int { return &s.Headers.MaxForwardedBytes }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	attemptsField("retry.max_attempts", func(s *Settings) *int { return &s.Retry.MaxAttempts }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	durationField("retry.wait_min", func(s *Settings) *time.Duration { return &s.Retry.WaitMin }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	durationField("retry.wait_max", func(s *Settings) *time.Duration { return &s.Retry.WaitMax }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	intListField("retry.statuses", func(s *Settings) *[]int { return &s.Retry.Statuses }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	ratioField("retry.budget_ratio", true, func(s *Settings) *float64 { return &s.Retry.BudgetRatio }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	floorField("retry.budget_min_per_second", func(s *Settings) *int { return &s.Retry.BudgetMinPerSecond }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	toggleField("dedupe", func(s *Settings) *Toggle { return &s.Dedupe }).rebuilds(setting.RebuildNothing, setting.RebuildNothing),
	toggleField("circuit_breaker.enabled", func(s *Settings) *Toggle { return &s.CircuitBreaker.Enabled }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	ratioField("circuit_breaker.failure_ratio", false, func(s *Settings) *float64 { return &s.CircuitBreaker.FailureRatio }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	countField("circuit_breaker.min_requests", func(s *Settings) *int { return &s.CircuitBreaker.MinRequests }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("circuit_breaker.window", func(s *Settings) *time.Duration { return &s.CircuitBreaker.Window }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("circuit_breaker.open_for", func(s *Settings) *time.Duration { return &s.CircuitBreaker.OpenFor }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	countField("circuit_breaker.half_open_requests", func(s *Settings) *int { return &s.CircuitBreaker.HalfOpenRequests }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	intListField("circuit_breaker.statuses", func(s *Settings) *[]int { return &s.CircuitBreaker.Statuses }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	toggleField("hedge.enabled", func(s *Settings) *Toggle { return &s.Hedge.Enabled }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	hedgeDelayField("hedge.delay", func(s *Settings) *HedgeDelay { return &s.Hedge.Delay }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	countField("hedge.max_extra", func(s *Settings) *int { return &s.Hedge.MaxExtra }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	enumField("request_compression.codec", []string{CodecOff, CodecGzip, CodecZstd}, func(s *Settings) *string { return &s.RequestCompression.Codec }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	countField("request_compression.min_bytes", func(s *Settings) *int { return &s.RequestCompression.MinBytes }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	ratioField("rate_limit.requests_per_second", true, func(s *Settings) *float64 { return &s.RateLimit.RequestsPerSecond }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	burstField("rate_limit.burst", func(s *Settings) *int { return &s.RateLimit.Burst }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("rate_limit.wait", func(s *Settings) *time.Duration { return &s.RateLimit.Wait }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	enumField("rate_limit.store", limitStores, func(s *Settings) *string { return &s.RateLimit.Store }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	enumField("rate_limit.on_store_error", onStoreErrors, func(s *Settings) *string { return &s.RateLimit.OnStoreError }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	ratioField("rate_limit.local_share", false, func(s *Settings) *float64 { return &s.RateLimit.LocalShare }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("rate_limit.store_timeout", func(s *Settings) *time.Duration { return &s.RateLimit.StoreTimeout }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	// The response cache is route state, as the breaker is: a change builds
	// the schema's cache anew and never a pool or the shared client.
	toggleField("response_cache.enabled", func(s *Settings) *Toggle { return &s.ResponseCache.Enabled }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	enumField("response_cache.mode", cacheModes, func(s *Settings) *string { return &s.ResponseCache.Mode }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	enumField("response_cache.store", cacheStores, func(s *Settings) *string { return &s.ResponseCache.Store }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	countField("response_cache.max_bytes", func(s *Settings) *int { return &s.ResponseCache.MaxBytes }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	countField("response_cache.max_entry_bytes", func(s *Settings) *int { return &s.ResponseCache.MaxEntryBytes }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("response_cache.default_ttl", func(s *Settings) *time.Duration { return &s.ResponseCache.DefaultTTL }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("response_cache.max_ttl", func(s *Settings) *time.Duration { return &s.ResponseCache.MaxTTL }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	toggleField("response_cache.shared", func(s *Settings) *Toggle { return &s.ResponseCache.Shared }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("response_cache.stale_if_error", func(s *Settings) *time.Duration { return &s.ResponseCache.StaleIfError }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	limitField("response_cache.local_max_bytes", func(s *Settings) *int { return &s.ResponseCache.LocalMaxBytes }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	durationField("response_cache.local_ttl", func(s *Settings) *time.Duration { return &s.ResponseCache.LocalTTL }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	headerListField("response_cache.vary", func(s *Settings) *[]string { return &s.ResponseCache.Vary }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	// Persisted queries are route state: a change, as any reload, builds
	// the schema's state anew (persisted queries on again), never a pool.
	enumField("persisted_queries.mode", persistedModes, func(s *Settings) *string { return &s.PersistedQueries.Mode }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	toggleField("persisted_queries.get", func(s *Settings) *Toggle { return &s.PersistedQueries.GET }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
	countField("persisted_queries.max_url_bytes", func(s *Settings) *int { return &s.PersistedQueries.MaxURLBytes }).rebuilds(setting.RebuildRoute, setting.RebuildRoute),
}

// settingKeys returns the keys a source schema or defaults section may
// hold, dotted, in documentation order (setting.Keys).
func settingKeys() []string {
	keys := make([]string, len(settingFields))
	for i, f := range settingFields {
		keys[i] = f.key
	}
	return keys
}

// sections are the nested mappings among the setting keys.
var sections = []string{"http2", "tls", "headers", "retry", "circuit_breaker", "hedge", "outlier_detection", "request_compression", "rate_limit", "response_cache", "persisted_queries"}

func fieldByKey(key string) (field, bool) {
	for _, f := range settingFields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

func durationField(key string, p func(*Settings) *time.Duration) field {
	return field{
		key:     key,
		decode:  func(e *errorList, k string, v any, s *Settings) { *p(s) = duration(e, k, v) },
		inherit: func(d, par *Settings) { inheritZero(p(d), *p(par)) },
		isSet:   func(s *Settings) bool { return *p(s) != 0 },
		format: func(s *Settings) string {
			if *p(s) < 0 {
				return "off"
			}
			return p(s).String()
		},
	}
}

func limitField(key string, p func(*Settings) *int) field {
	return field{
		key:     key,
		decode:  func(e *errorList, k string, v any, s *Settings) { *p(s) = limit(e, k, v) },
		inherit: func(d, par *Settings) { inheritZero(p(d), *p(par)) },
		isSet:   func(s *Settings) bool { return *p(s) != 0 },
		format: func(s *Settings) string {
			switch {
			case *p(s) < 0:
				return "0 (" + zeroLimit(key) + ")"
			case *p(s) == 0:
				return "(the path's default)"
			}
			return strconv.Itoa(*p(s))
		},
	}
}

// attemptsField reads a count of tries: a whole number, at least 1.
func attemptsField(key string, p func(*Settings) *int) field {
	f := limitField(key, p)
	f.decode = func(e *errorList, k string, v any, s *Settings) {
		n, ok := number(v)
		if str, isString := v.(string); isString {
			parsed, err := strconv.Atoi(strings.TrimSpace(str))
			n, ok = float64(parsed), err == nil
		}
		if !ok || n != float64(int(n)) || n < 1 {
			e.add(k, v, nil, "invalid value %v: want a whole number of tries, at least 1 (1 does not retry)", v)
			return
		}
		*p(s) = int(n)
	}
	f.format = func(s *Settings) string { return strconv.Itoa(*p(s)) }
	return f
}

// countField reads a count: a whole number, at least 1.
func countField(key string, p func(*Settings) *int) field {
	f := limitField(key, p)
	f.decode = func(e *errorList, k string, v any, s *Settings) {
		n, ok := wholeNumber(v)
		if !ok || n < 1 {
			e.add(k, v, nil, "invalid value %v: want a whole number, at least 1", v)
			return
		}
		*p(s) = n
	}
	f.format = func(s *Settings) string { return strconv.Itoa(*p(s)) }
	return f
}

// percentField reads a percentage: a whole number from 1 to 100.
func percentField(key string, p func(*Settings) *int) field {
	f := countField(key, p)
	f.decode = func(e *errorList, k string, v any, s *Settings) {
		n, ok := wholeNumber(v)
		if !ok || n < 1 || n > 100 {
			e.add(k, v, nil, "invalid value %v: want a whole number of percent, from 1 to 100", v)
			return
		}
		*p(s) = n
	}
	return f
}

// burstField reads a token bucket's size: a whole number, at least 1; zero
// at every level means one second's worth (RateLimitSettings.EffectiveBurst).
func burstField(key string, p func(*Settings) *int) field {
	f := countField(key, p)
	f.format = func(s *Settings) string {
		if *p(s) == 0 {
			return "(requests_per_second, rounded up)"
		}
		return strconv.Itoa(*p(s))
	}
	return f
}

// floorField reads a rate floor: a whole number, 0 for none (stored as
// NoLimit, since zero inherits).
func floorField(key string, p func(*Settings) *int) field {
	f := limitField(key, p)
	f.decode = func(e *errorList, k string, v any, s *Settings) {
		n, ok := wholeNumber(v)
		switch {
		case !ok || n < 0:
			e.add(k, v, nil, "invalid value %v: want a whole number, 0 or more (0: none)", v)
		case n == 0:
			*p(s) = NoLimit
		default:
			*p(s) = n
		}
	}
	f.format = func(s *Settings) string {
		if *p(s) < 0 {
			return "0"
		}
		return strconv.Itoa(*p(s))
	}
	return f
}

// wholeNumber reads a YAML number or a string of digits.
func wholeNumber(v any) (int, bool) {
	n, ok := number(v)
	if str, isString := v.(string); isString {
		parsed, err := strconv.Atoi(strings.TrimSpace(str))
		n, ok = float64(parsed), err == nil
	}
	if !ok || n != float64(int(n)) {
		return 0, false
	}
	return int(n), true
}

// ratioField reads a positive ratio; with allowOff, "off" too (RatioOff).
// A ratio field that is not allowOff must be at most 1.
func ratioField(key string, allowOff bool, p func(*Settings) *float64) field {
	return field{
		key: key,
		decode: func(e *errorList, k string, v any, s *Settings) {
			n, ok := number(v)
			if str, isString := v.(string); isString {
				str = strings.TrimSpace(str)
				if allowOff && strings.EqualFold(str, "off") {
					*p(s) = RatioOff
					return
				}
				parsed, err := strconv.ParseFloat(str, 64)
				n, ok = parsed, err == nil
			}
			switch {
			case ok && n > 0 && (allowOff || n <= 1) && !math.IsInf(n, 0):
				*p(s) = n
			case allowOff:
				e.add(k, v, nil, "invalid value %v: want a positive number, or off", v)
			default:
				e.add(k, v, nil, "invalid value %v: want a number above 0, at most 1", v)
			}
		},
		inherit: func(d, par *Settings) { inheritZero(p(d), *p(par)) },
		isSet:   func(s *Settings) bool { return *p(s) != 0 },
		format: func(s *Settings) string {
			if *p(s) < 0 {
				return "off"
			}
			return strconv.FormatFloat(*p(s), 'g', -1, 64)
		},
	}
}

// hedgeDelayField reads a hedge delay: a positive duration ("50ms") or a
// quantile ("p95", "p99.9").
func hedgeDelayField(key string, p func(*Settings) *HedgeDelay) field {
	return field{
		key: key,
		decode: func(e *errorList, k string, v any, s *Settings) {
			str, ok := v.(string)
			if !ok {
				e.add(k, v, nil, "invalid value %v: want a duration such as 50ms, or a quantile such as p95", v)
				return
			}
			d, err := ParseHedgeDelay(str)
			if err != nil {
				e.add(k, v, err, "invalid value %q: %v", str, err)
				return
			}
			*p(s) = d
		},
		inherit: func(d, par *Settings) { inheritZero(p(d), *p(par)) },
		isSet:   func(s *Settings) bool { return *p(s) != HedgeDelay{} },
		format:  func(s *Settings) string { return p(s).String() },
	}
}

// ParseHedgeDelay reads a hedge delay as a file spells it: a positive
// duration ("50ms") or a quantile of the recent times to headers, "p"
// and a percentage above 0 and below 100 ("p95", "p99.9").
func ParseHedgeDelay(s string) (HedgeDelay, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(strings.ToLower(s), "p"); ok {
		pct, err := strconv.ParseFloat(rest, 64)
		if err != nil || !(pct > 0 && pct < 100) {
			return HedgeDelay{}, fmt.Errorf("want a quantile such as p95 or p99.9: p and a percentage above 0 and below 100")
		}
		return HedgeDelay{Quantile: pct / 100}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return HedgeDelay{}, fmt.Errorf("want a positive duration such as 50ms, or a quantile such as p95")
	}
	return HedgeDelay{After: d}, nil
}

func stringField(key string, p func(*Settings) *string) field {
	return field{
		key: key,
		decode: func(e *errorList, k string, v any, s *Settings) {
			str, ok := scalarString(v)
			if !ok {
				e.add(k, v, nil, "invalid value %v: want a string", shown(k, v))
				return
			}
			*p(s) = strings.TrimSpace(str)
		},
		inherit: func(d, par *Settings) { inheritZero(p(d), *p(par)) },
		isSet:   func(s *Settings) bool { return *p(s) != "" },
		format: func(s *Settings) string {
			if *p(s) == "" {
				return "(none)"
			}
			return *p(s)
		},
	}
}

// urlField is a string setting that holds a URL, such as proxy: shown with
// its password hidden.
func urlField(key string, p func(*Settings) *string) field {
	f := stringField(key, p)
	format := f.format
	f.show = func(s *Settings) string { return redact.URL(format(s)) }
	return f
}

func enumField(key string, allowed []string, p func(*Settings) *string) field {
	f := stringField(key, p)
	f.decode = func(e *errorList, k string, v any, s *Settings) {
		str, ok := scalarString(v)
		str = strings.ToLower(strings.TrimSpace(str))
		if !ok || !contains(allowed, str) {
			e.add(k, v, nil, "invalid value %q: allowed %s", fmt.Sprint(v), strings.Join(allowed, ", "))
			return
		}
		*p(s) = str
	}
	return f
}

func toggleField(key string, p func(*Settings) *Toggle) field {
	return field{
		key: key,
		decode: func(e *errorList, k string, v any, s *Settings) {
			switch x := v.(type) {
			case bool:
				*p(s) = map[bool]Toggle{true: Enabled, false: Disabled}[x]
				return
			case int:
				if x == 0 || x == 1 {
					*p(s) = map[int]Toggle{1: Enabled, 0: Disabled}[x]
					return
				}
			case string:
				switch strings.ToLower(strings.TrimSpace(x)) {
				case "true", "on", "1", "yes":
					*p(s) = Enabled
					return
				case "false", "off", "0", "no":
					*p(s) = Disabled
					return
				}
			}
			e.add(k, v, nil, "invalid value %v: want true or false", v)
		},
		inherit: func(d, par *Settings) { inheritZero(p(d), *p(par)) },
		isSet:   func(s *Settings) bool { return *p(s) != Inherit },
		format:  func(s *Settings) string { return p(s).String() },
	}
}

func listField(key string, p func(*Settings) *[]string) field {
	return field{
		key: key,
		decode: func(e *errorList, k string, v any, s *Settings) {
			if str, ok := v.(string); ok && strings.EqualFold(strings.TrimSpace(str), "off") {
				*p(s) = []string{}
				return
			}
			list := stringList(e, k, v)
			if list == nil {
				list = []string{}
			}
			*p(s) = list
		},
		inherit: func(d, par *Settings) {
			if *p(d) == nil {
				*p(d) = *p(par)
			}
		},
		isSet:  func(s *Settings) bool { return *p(s) != nil },
		format: func(s *Settings) string { return "[" + strings.Join(*p(s), ", ") + "]" },
	}
}

// headerListField is a listField of header names, each stored in its
// canonical form (x-tenant as X-Tenant), so that Explain and a reload's
// comparison see one spelling. A name that is not valid is kept as written,
// for Validate to report.
func headerListField(key string, p func(*Settings) *[]string) field {
	f := listField(key, p)
	decode := f.decode
	f.decode = func(e *errorList, k string, v any, s *Settings) {
		decode(e, k, v, s)
		for i, n := range *p(s) {
			(*p(s))[i] = textproto.CanonicalMIMEHeaderKey(n)
		}
	}
	return f
}

func intListField(key string, p func(*Settings) *[]int) field {
	return field{
		key: key,
		decode: func(e *errorList, k string, v any, s *Settings) {
			var items []any
			switch x := v.(type) {
			case []any:
				items = x
			case string:
				for _, it := range splitList(x) {
					items = append(items, it)
				}
			case int:
				items = []any{x}
			default:
				e.add(k, v, nil, "invalid value %v: want a list of whole numbers", v)
				return
			}
			out := []int{}
			for i, it := range items {
				n, ok := number(it)
				if str, isString := it.(string); isString {
					parsed, err := strconv.Atoi(strings.TrimSpace(str))
					n, ok = float64(parsed), err == nil
				}
				if !ok || n != float64(int(n)) || n < 100 || n > 599 {
					e.add(fmt.Sprintf("%s[%d]", k, i), it, nil, "invalid status %v: want a number from 100 to 599", it)
					continue
				}
				out = append(out, int(n))
			}
			*p(s) = out
		},
		inherit: func(d, par *Settings) {
			if *p(d) == nil {
				*p(d) = *p(par)
			}
		},
		isSet:  func(s *Settings) bool { return *p(s) != nil },
		format: func(s *Settings) string { return strings.Trim(fmt.Sprint(*p(s)), "[]") },
	}
}

func mapField(key string, p func(*Settings) *map[string]string) field {
	return field{
		key: key,
		decode: func(e *errorList, k string, v any, s *Settings) {
			out := map[string]string{}
			switch x := v.(type) {
			case map[string]any:
				for name, val := range x {
					str, ok := scalarString(val)
					if !ok {
						e.add(k+"."+name, val, nil, "invalid value %v: want a string", shown(k+"."+name, val))
						continue
					}
					out[name] = str
				}
			case string: // from the environment: Name=Value,Name=Value
				for i, pair := range splitList(x) {
					name, val, ok := strings.Cut(pair, "=")
					if !ok {
						// Which item, since a secret's value is not shown:
						// a pair without "=" is most often a bare value.
						e.add(k, v, nil, "invalid value %s: want Name=Value pairs, comma-separated; item %d has no \"=\"", shownQuoted(k, x), i+1)
						return
					}
					out[strings.TrimSpace(name)] = strings.TrimSpace(val)
				}
			default:
				e.add(k, v, nil, "invalid value %v: want a mapping of header names", shown(k, v))
				return
			}
			*p(s) = out
		},
		inherit: func(d, par *Settings) {
			if *p(d) == nil {
				*p(d) = *p(par)
			}
		},
		isSet: func(s *Settings) bool { return *p(s) != nil },
		format: func(s *Settings) string {
			m := *p(s)
			names := make([]string, 0, len(m))
			for n := range m {
				names = append(names, n)
			}
			sort.Strings(names)
			for i, n := range names {
				names[i] = n + ": " + m[n]
			}
			return "{" + strings.Join(names, ", ") + "}"
		},
	}
}

// secretMapField is a mapping of header names to secret values, such as
// headers.set: shown with its names and every value as redact.Value.
func secretMapField(key string, p func(*Settings) *map[string]string) field {
	f := mapField(key, p)
	f.show = func(s *Settings) string {
		names := sortedStrings(*p(s))
		for i, n := range names {
			names[i] = n + ": " + redact.Value
		}
		return "{" + strings.Join(names, ", ") + "}"
	}
	return f
}

func inheritZero[T comparable](dst *T, parent T) {
	var zero T
	if *dst == zero {
		*dst = parent
	}
}

// scalarString reads a YAML scalar as text.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x), true
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
