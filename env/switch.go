package env

import (
	"fmt"
	"strconv"
	"strings"
)

// SwitchVar is the environment variable that picks the path at startup.
const SwitchVar = "FUSION_SOCKETS_TRANSPORT"

// ForwardHeadersVar is the environment variable that lists the gateway
// request headers forwarded to every source schema, comma-separated.
const ForwardHeadersVar = "FUSION_FORWARD_HEADERS"

// Switch is a parsed value of FUSION_SOCKETS_TRANSPORT or of the file's
// transport key: which path serves which source schema, and whether the
// sockets path shadows the legacy one.
type Switch struct {
	// Path is PathLegacy, PathSockets or PathMixed.
	Path Path
	// Schemas names the source schemas served by the sockets path when
	// Path is PathMixed; the others are served by the legacy path.
	Schemas []string
	// ShadowRate, when positive, is the share of queries that the sockets
	// path also sends, to compare, while the legacy path serves every
	// request. Path is PathLegacy then.
	ShadowRate float64
	// CanaryRate, when positive, is the starting share of gateway
	// requests served by the sockets path instead of the legacy path, per
	// canaried source schema. Path is PathLegacy then.
	CanaryRate float64
	// CanarySchemas limits the canary to these source schemas; nil: all.
	CanarySchemas []string
}

// DefaultShadowRate is the sample rate of a bare "shadow": every query.
const DefaultShadowRate = 1.0

// switchGrammar lists the accepted values, for error messages.
const switchGrammar = "want 1, true, on or sockets (sockets path); 0, false, off, legacy or empty (legacy path); a comma-separated list of source schemas (those on sockets, the rest on legacy); shadow or shadow:RATE with 0 < RATE <= 1 (legacy serves, sockets is compared); or canary:RATE or canary:RATE:schema1,schema2 with RATE as 0.05 or 5% (that share served by sockets, judged against legacy)"

// ParseSwitch parses a value of FUSION_SOCKETS_TRANSPORT or of the file's
// transport key, the one place that knows the grammar:
//
//	1, true, on, sockets          the sockets path
//	0, false, off, legacy, empty  the legacy path
//	products,reviews              those source schemas on sockets, the rest on legacy
//	shadow, shadow:0.05           legacy serves; a sample of queries (all, 5%) also
//	                              goes through sockets and is compared
//	canary:0.05, canary:5%        legacy serves; 5% of gateway requests are served by
//	canary:0.05:products,reviews  sockets instead (every schema, or those listed),
//	                              judged against legacy, falling back by themselves
//
// Case and surrounding space are ignored. Whether the named source schemas
// exist is checked by Config.Validate. Any other value is an error that
// lists the accepted ones.
func ParseSwitch(value string) (Switch, error) {
	v := strings.ToLower(strings.TrimSpace(value))
	switch v {
	case "1", "true", "on", "sockets":
		return Switch{Path: PathSockets}, nil
	case "", "0", "false", "off", "legacy":
		return Switch{Path: PathLegacy}, nil
	case "shadow":
		return Switch{Path: PathLegacy, ShadowRate: DefaultShadowRate}, nil
	}
	if rate, ok := strings.CutPrefix(v, "shadow:"); ok {
		r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		if err != nil || !(r > 0 && r <= 1) {
			return Switch{}, fmt.Errorf("invalid value %q: the shadow rate must be a number above 0 and at most 1, e.g. shadow:0.05", value)
		}
		return Switch{Path: PathLegacy, ShadowRate: r}, nil
	}
	if v == "canary" {
		return Switch{}, fmt.Errorf("invalid value %q: a canary needs its starting rate, e.g. canary:0.05 or canary:5%%", value)
	}
	if _, rest, ok := strings.Cut(strings.TrimSpace(value), ":"); ok && strings.HasPrefix(v, "canary:") {
		return parseCanary(value, rest)
	}
	names := splitList(strings.TrimSpace(value))
	for _, n := range names {
		if !schemaName(n) {
			return Switch{}, fmt.Errorf("invalid value %q: %s", value, switchGrammar)
		}
		if _, isWord := switchWords[strings.ToLower(n)]; isWord {
			return Switch{}, fmt.Errorf("invalid value %q: %q is a switch word, not a source schema; %s", value, n, switchGrammar)
		}
	}
	if len(names) == 0 {
		return Switch{}, fmt.Errorf("invalid value %q: %s", value, switchGrammar)
	}
	return Switch{Path: PathMixed, Schemas: names}, nil
}

// switchWords are the words that select a path; a list of source schemas
// cannot hold one, so that every value has one meaning.
var switchWords = map[string]struct{}{
	"1": {}, "true": {}, "on": {}, "sockets": {},
	"0": {}, "false": {}, "off": {}, "legacy": {},
	"shadow": {}, "canary": {},
}

// schemaName reports whether n can name a source schema in the switch: a
// word of letters, digits, '-' and '_' that is not a switch word.
func schemaName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range n {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// String writes s back in the grammar ParseSwitch reads.
func (s Switch) String() string {
	switch {
	case s.Path == PathMixed:
		return strings.Join(s.Schemas, ",")
	case s.ShadowRate > 0:
		return "shadow:" + strconv.FormatFloat(s.ShadowRate, 'g', -1, 64)
	case s.CanaryRate > 0 && s.CanarySchemas != nil:
		return "canary:" + strconv.FormatFloat(s.CanaryRate, 'g', -1, 64) + ":" + strings.Join(s.CanarySchemas, ",")
	case s.CanaryRate > 0:
		return "canary:" + strconv.FormatFloat(s.CanaryRate, 'g', -1, 64)
	case s.Path == "":
		return string(PathLegacy)
	}
	return string(s.Path)
}

// splitList splits a comma-separated list, dropping empty items and space.
func splitList(value string) []string {
	var out []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
