package env

import (
	"math"
	"strings"
)

// validateShaping checks the request compression and rate limit values set
// at one level (as Go code may set them; a file's decoding already refuses
// the same values), naming their keys.
func validateShaping(errs *errorList, prefix string, s Settings) {
	c := s.RequestCompression
	if allowed := []string{CodecOff, CodecGzip, CodecZstd}; c.Codec != "" && !contains(allowed, c.Codec) {
		errs.add(prefix+".request_compression.codec", c.Codec, nil, "invalid value %q: allowed %s", c.Codec, strings.Join(allowed, ", "))
	}
	if c.MinBytes < 0 {
		errs.add(prefix+".request_compression.min_bytes", c.MinBytes, nil, "invalid value %d: want a whole number, at least 1", c.MinBytes)
	}
	r := s.RateLimit
	if rps := r.RequestsPerSecond; rps < 0 && rps != RatioOff || math.IsNaN(rps) || math.IsInf(rps, 0) {
		errs.add(prefix+".rate_limit.requests_per_second", rps, nil, "invalid value %v: want a positive number, or off", rps)
	}
	if r.Burst < 0 {
		errs.add(prefix+".rate_limit.burst", r.Burst, nil, "invalid value %d: want a whole number, at least 1", r.Burst)
	}
	if r.Wait < Off {
		errs.add(prefix+".rate_limit.wait", r.Wait.String(), nil, "invalid value %s: want a positive duration, or 0 to fail at once", r.Wait)
	}
	validateLimitStoreKeys(errs, prefix, r)
}

// validateLimitStoreKeys checks the rate limit's store keys set at one
// level.
func validateLimitStoreKeys(errs *errorList, prefix string, r RateLimitSettings) {
	if r.Store != "" && !contains(limitStores, r.Store) {
		errs.add(prefix+".rate_limit.store", r.Store, nil, "invalid value %q: allowed %s", r.Store, strings.Join(limitStores, ", "))
	}
	if r.OnStoreError != "" && !contains(onStoreErrors, r.OnStoreError) {
		errs.add(prefix+".rate_limit.on_store_error", r.OnStoreError, nil, "invalid value %q: allowed %s", r.OnStoreError, strings.Join(onStoreErrors, ", "))
	}
	if share := r.LocalShare; share < 0 || share > 1 || math.IsNaN(share) {
		errs.add(prefix+".rate_limit.local_share", share, nil, "invalid value %v: want a number above 0, at most 1", share)
	}
	if r.StoreTimeout < 0 {
		errs.add(prefix+".rate_limit.store_timeout", "off", nil, "invalid value off: want a positive duration (a check of the redis store needs a bound)")
	}
}

// validateLimitStore refuses a rate limit on the redis store without a
// Redis, as validateCacheStore does for the response cache: at key,
// "defaults" or "source_schemas.NAME", whose own settings are own and
// effective settings eff. A schema that inherits both the limit and its
// store from defaults is reported once, under defaults.
func validateLimitStore(errs *errorList, key string, own, eff Settings, redisURL string) {
	r := eff.RateLimit
	if !r.On() || r.Store != StoreRedis || redisURL != "" {
		return
	}
	if key != "defaults" && own.RateLimit.RequestsPerSecond == 0 && own.RateLimit.Store == "" {
		return // both inherited: the defaults' own error names the cause
	}
	errs.add(key+".rate_limit.store", r.Store, nil, "invalid value %q: the redis store needs redis.url, which is not set", r.Store)
}
