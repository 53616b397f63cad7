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
}
