package env

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// CanarySettings configure a canary rollout: with a positive Rate (and
// Transport PathLegacy), a share of each canaried source schema's gateway
// requests is served by the sockets path instead of the legacy path. The
// two are judged side by side per schema; when sockets fails more often
// than legacy, the schema's share drops to zero for Cooldown. A zero field
// means the default (see EffectiveCanary). Every field is read at startup
// only: Reload keeps the canary the invoker started with.
type CanarySettings struct {
	// Rate is the starting share of gateway requests served by sockets,
	// in (0, 1]. Zero: the canary is off.
	Rate float64

	// MaxRate is the share a healthy schema grows to, in [Rate, 1].
	// Default: Rate (no growth).
	MaxRate float64

	// Step is what a healthy schema's share grows by, at most once per
	// Interval, up to MaxRate. Zero: the share never grows.
	Step float64

	// Interval is the least time between two changes of a schema's share
	// by growth. Default: DefaultCanaryInterval.
	Interval time.Duration

	// Window is how many of the latest requests per schema and path are
	// judged. Default: DefaultCanaryWindow.
	Window int

	// MinRequests is how many requests each path needs in its window
	// before the schema is judged. At most Window.
	// Default: DefaultCanaryMinRequests.
	MinRequests int

	// MaxErrorRatioDelta is how far sockets' error ratio may exceed
	// legacy's, in the windows, before the schema falls back.
	// Default: DefaultCanaryMaxErrorRatioDelta.
	MaxErrorRatioDelta float64

	// Cooldown is how long a schema that fell back stays at share zero
	// before it starts again at Rate. Default: DefaultCanaryCooldown.
	Cooldown time.Duration

	// Schemas limits the canary to these source schemas. Nil: every
	// source schema, those added by a reload included.
	Schemas []string

	// KeyHeader is the gateway request header whose value decides which
	// path serves the request, so that every call of one gateway request
	// takes one path. Default: DefaultCanaryKeyHeader.
	KeyHeader string
}

// Defaults of CanarySettings, defined here once (package canary and the
// documentation read them from here).
const (
	DefaultCanaryWindow             = 200
	DefaultCanaryMinRequests        = 50
	DefaultCanaryMaxErrorRatioDelta = 0.05
	DefaultCanaryCooldown           = 5 * time.Minute
	DefaultCanaryInterval           = time.Minute
	DefaultCanaryKeyHeader          = "X-Request-Id"
)

// canaryKeys are the keys of the file's canary mapping.
var canaryKeys = []string{"rate", "max_rate", "step", "interval", "window", "min_requests", "max_error_ratio_delta", "cooldown", "schemas", "key_header"}

// EffectiveCanary returns the canary settings with defaults applied.
func (c Config) EffectiveCanary() CanarySettings {
	s := c.Canary
	if s.MaxRate <= 0 || s.MaxRate < s.Rate {
		s.MaxRate = s.Rate
	}
	if s.Step < 0 {
		s.Step = 0
	}
	if s.Interval <= 0 {
		s.Interval = DefaultCanaryInterval
	}
	if s.Window <= 0 {
		s.Window = DefaultCanaryWindow
	}
	if s.MinRequests <= 0 {
		s.MinRequests = DefaultCanaryMinRequests
	}
	if s.MinRequests > s.Window {
		s.MinRequests = s.Window
	}
	if s.MaxErrorRatioDelta <= 0 {
		s.MaxErrorRatioDelta = DefaultCanaryMaxErrorRatioDelta
	}
	if s.Cooldown <= 0 {
		s.Cooldown = DefaultCanaryCooldown
	}
	if s.KeyHeader == "" {
		s.KeyHeader = DefaultCanaryKeyHeader
	}
	return s
}

// parseShare reads a share written as a number (0.05) or a percentage
// (5%). ok is false if it is neither.
func parseShare(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	if pct {
		s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f { // NaN
		return 0, false
	}
	if pct {
		f /= 100
	}
	return f, true
}

// parseCanary parses the part of a switch value after "canary:": RATE or
// RATE:schema1,schema2.
func parseCanary(value, rest string) (Switch, error) {
	rate, list, hasList := strings.Cut(rest, ":")
	r, ok := parseShare(rate)
	if !ok || !(r > 0 && r <= 1) {
		return Switch{}, fmt.Errorf("invalid value %q: the canary rate must be above 0 and at most 1, as a number or a percentage, e.g. canary:0.05 or canary:5%%", value)
	}
	sw := Switch{Path: PathLegacy, CanaryRate: r}
	if hasList {
		names := splitList(list)
		if len(names) == 0 {
			return Switch{}, fmt.Errorf("invalid value %q: no source schema after the canary rate; write canary:RATE for every schema or canary:RATE:products,reviews", value)
		}
		for _, n := range names {
			if !schemaName(n) {
				return Switch{}, fmt.Errorf("invalid value %q: %q is not a source schema name (letters, digits, '-' and '_')", value, n)
			}
		}
		sw.CanarySchemas = names
	}
	return sw, nil
}

// decodeCanary reads the canary key: a rate, or a mapping. A rate and
// schema list from the transport key (canary:RATE[:list]) are kept unless
// the mapping sets them.
func decodeCanary(errs *errorList, v any, c *CanarySettings) {
	if _, ok := number(v); ok {
		v = map[string]any{"rate": v}
	}
	if s, ok := v.(string); ok {
		v = map[string]any{"rate": s}
	}
	m, ok := section(errs, "canary", v)
	if !ok {
		return
	}
	unknown(errs, "canary", m, canaryKeys)
	share := func(key string, lo float64) (float64, bool) {
		r, ok := m[key]
		if !ok {
			return 0, false
		}
		n, isNum := number(r)
		if s, isString := r.(string); isString {
			n, isNum = parseShare(s)
		}
		if !isNum || n < lo || n > 1 {
			errs.add("canary."+key, r, nil, "invalid value %v: want a share from %v to 1, as a number or a percentage (0.05 or 5%%)", r, lo)
			return 0, false
		}
		return n, true
	}
	if n, ok := share("rate", 0); ok && (n > 0 || c.Rate == 0) {
		c.Rate = n
	}
	if n, ok := share("max_rate", 0); ok {
		c.MaxRate = n
	}
	if n, ok := share("step", 0); ok {
		c.Step = n
	}
	if n, ok := share("max_error_ratio_delta", 0); ok {
		c.MaxErrorRatioDelta = n
	}
	for _, d := range []struct {
		key string
		to  *time.Duration
	}{{"interval", &c.Interval}, {"cooldown", &c.Cooldown}} {
		if x, ok := m[d.key]; ok {
			if got := duration(errs, "canary."+d.key, x); got > 0 {
				*d.to = got
			} else if got == Off {
				errs.add("canary."+d.key, x, nil, "invalid duration %v: want a positive duration such as 1m (leave it out for the default)", x)
			}
		}
	}
	for _, n := range []struct {
		key string
		to  *int
	}{{"window", &c.Window}, {"min_requests", &c.MinRequests}} {
		if x, ok := m[n.key]; ok {
			if got := limit(errs, "canary."+n.key, x); got > 0 {
				*n.to = got
			}
		}
	}
	if x, ok := m["schemas"]; ok {
		if names := stringList(errs, "canary.schemas", x); len(names) > 0 {
			c.Schemas = names
		}
	}
	if x, ok := m["key_header"]; ok {
		s, isString := x.(string)
		if !isString {
			errs.add("canary.key_header", x, nil, "invalid value %v: want a header name", x)
		} else {
			c.KeyHeader = strings.TrimSpace(s)
		}
	}
}

// validateCanary checks the canary settings: shares in range, a window that
// can be judged, configured schemas, and neither shadow nor another path
// beside it.
func validateCanary(errs *errorList, c Config) {
	k := c.Canary
	for _, s := range []struct {
		key string
		v   float64
	}{{"canary.rate", k.Rate}, {"canary.max_rate", k.MaxRate}, {"canary.step", k.Step}, {"canary.max_error_ratio_delta", k.MaxErrorRatioDelta}} {
		if s.v < 0 || s.v > 1 || s.v != s.v {
			errs.add(s.key, s.v, nil, "invalid value %v: want a share from 0 to 1", s.v)
		}
	}
	if k.Rate <= 0 {
		return
	}
	if c.EffectivePath() != PathLegacy {
		errs.add("canary.rate", k.Rate, nil, "a canary needs the legacy path serving the rest; transport is %q", c.EffectivePath())
	}
	if c.Shadow.Rate > 0 {
		errs.add("canary.rate", k.Rate, nil, "canary (rate %v) and shadow (shadow.rate %v) cannot run together: choose one", k.Rate, c.Shadow.Rate)
	}
	if k.MaxRate > 0 && k.MaxRate < k.Rate {
		errs.add("canary.max_rate", k.MaxRate, nil, "invalid value %v: below canary.rate %v", k.MaxRate, k.Rate)
	}
	if k.Window < 0 || k.MinRequests < 0 {
		errs.add("canary.window", k.Window, nil, "invalid value: window (%d) and min_requests (%d) must not be negative", k.Window, k.MinRequests)
	}
	if eff := c.EffectiveCanary(); k.MinRequests > eff.Window {
		errs.add("canary.min_requests", k.MinRequests, nil, "invalid value %d: above canary.window %d, so no schema would ever be judged", k.MinRequests, eff.Window)
	}
	if k.Interval < 0 || k.Cooldown < 0 {
		errs.add("canary.cooldown", k.Cooldown, nil, "invalid value: interval (%s) and cooldown (%s) must not be negative", k.Interval, k.Cooldown)
	}
	for i, n := range k.Schemas {
		if _, ok := c.SourceSchemas[n]; !ok {
			configured := strings.Join(sortedSchemaNames(c.SourceSchemas), ", ")
			if configured == "" {
				configured = "none"
			}
			errs.add(fmt.Sprintf("canary.schemas[%d]", i), n, nil, "unknown source schema %q in the canary list (configured: %s)", n, configured)
		}
	}
	if k.KeyHeader != "" && !httpguts.ValidHeaderFieldName(k.KeyHeader) {
		errs.add("canary.key_header", k.KeyHeader, nil, "invalid header name %q", k.KeyHeader)
	}
}
