package env

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fusiongo/transport/internal/redact"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
)

// Load builds the configuration from the built-in defaults, then each YAML
// file in order (a later file overrides an earlier one key by key), then the
// process environment. It reports every bad key at once, each error naming
// its key path and value, with secrets hidden (a URL's password as xxxxx, a
// headers.set value and the invalidation token as [redacted]); see KeyError.
func Load(files ...string) (Config, error) {
	return Loader{LookupEnv: os.LookupEnv, Environ: os.Environ}.Load(files...)
}

// Loader loads configuration with an injectable environment.
// A zero Loader reads no environment variables.
type Loader struct {
	// LookupEnv reads an environment variable, as os.LookupEnv does. Nil
	// reads none.
	LookupEnv func(key string) (string, bool)

	// Environ lists the environment as os.Environ does, for the variables
	// that set any key (FUSION_DEFAULTS__*, FUSION_SOURCE_SCHEMAS__*,
	// FUSION_LEGACY__*, FUSION_REDIS__*, FUSION_RESPONSE_CACHE__*). Nil
	// reads none of those.
	Environ func() []string
}

// Load is Load with l's environment.
func (l Loader) Load(files ...string) (Config, error) {
	cfg, _, err := l.load(files)
	return cfg, err
}

// load is Load that also returns where each key a file or the environment
// set came from, by koanf's dotted path of the key (the leaves of
// mappings): "file F" or "environment NAME", the last layer's. Each file
// is read once, through boundedFile.
func (l Loader) load(files []string) (Config, map[string]string, error) {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(builtinMap(), "."), nil); err != nil {
		return Config{}, nil, fmt.Errorf("loading built-in defaults: %w", err)
	}
	from := map[string]string{}
	for _, f := range files {
		fk := koanf.New(".")
		if err := fk.Load(boundedFile(f), yaml.Parser()); err != nil {
			return Config{}, nil, fmt.Errorf("config file %s: %w", f, redactYAML(err))
		}
		for _, key := range fk.Keys() {
			from[key] = "file " + f
		}
		if err := k.Merge(fk); err != nil {
			return Config{}, nil, fmt.Errorf("config file %s: %w", f, redactYAML(err))
		}
	}
	envMap, origin, sw, envErr := l.environment(k.MapKeys("source_schemas"))
	for key, name := range origin {
		from[key] = "environment " + name
	}
	if err := k.Load(confmap.Provider(envMap, "."), nil); err != nil {
		return Config{}, nil, fmt.Errorf("loading the environment: %w", err)
	}
	cfg, decodeErr := decode(k.Raw(), sw)
	decodeErr = blameEnvironment(decodeErr, origin)
	// Validate what decoded even when some keys did not, so that one Load
	// reports every problem: a bad duration must not hide a missing url.
	var errs errorList
	errs.addAll(envErr)
	errs.addAll(decodeErr)
	errs.addAll(blameEnvironment(cfg.Validate(), origin))
	if err := errs.err(); err != nil {
		return Config{}, nil, err
	}
	return cfg, from, nil
}

// builtinMap is the first layer: the built-in defaults, as a file would
// write them.
func builtinMap() map[string]any {
	return map[string]any{
		"transport":                   string(PathLegacy),
		"defaults.connect_timeout":    DefaultConnectTimeout.String(),
		"defaults.conn_lifetime":      DefaultConnLifetime.String(),
		"defaults.idle_conn_timeout":  DefaultIdleConnTimeout.String(),
		"defaults.max_conns_per_host": 0,
		"defaults.header_timeout":     DefaultHeaderTimeout.String(),
		"legacy.handler_lifetime":     DefaultHandlerLifetime.String(),
	}
}

// environment reads the variables the transport knows. An invalid switch
// value is an error here, at startup, naming the variable; the map still
// holds the other variables, so that Load reports their problems too.
func (l Loader) environment(schemas []string) (out map[string]any, origin map[string]string, sw *Switch, err error) {
	out = map[string]any{}
	origin = map[string]string{}
	var errs errorList
	if l.Environ != nil {
		for _, kv := range l.Environ() {
			name, value, _ := strings.Cut(kv, "=")
			path, err := envKey(name, schemas)
			if err != nil {
				errs.add(name, value, err, "%v", err)
				continue
			}
			if path != "" {
				out[path] = value
				origin[path] = name
			}
		}
	}
	if l.LookupEnv == nil {
		return out, origin, nil, errs.err()
	}
	var switchErr error
	if v, ok := l.LookupEnv(SwitchVar); ok {
		parsed, err := ParseSwitch(v)
		if err != nil {
			switchErr = &KeyError{Key: SwitchVar, Value: v, Reason: err.Error(), Err: err}
		} else {
			// The variable picks the rollout stage: it replaces the file's
			// transport (decode applies sw) and shadow rate (the other
			// shadow keys stay).
			sw = &parsed
			out["shadow.rate"] = sw.ShadowRate
			origin["transport"] = SwitchVar
			origin["shadow.rate"] = SwitchVar
			// And the canary rate; the file's canary list stays unless
			// the variable names schemas (canary:RATE:a,b).
			out["canary.rate"] = sw.CanaryRate
			origin["canary.rate"] = SwitchVar
			if sw.CanarySchemas != nil {
				items := make([]any, len(sw.CanarySchemas))
				for i, n := range sw.CanarySchemas {
					items[i] = n
				}
				out["canary.schemas"] = items
				origin["canary.schemas"] = SwitchVar
			}
		}
	}
	if v, ok := l.LookupEnv(ForwardHeadersVar); ok {
		list := splitList(v)
		items := make([]any, len(list))
		for i, h := range list {
			items[i] = h
		}
		out["forward_headers"] = items
	}
	if switchErr != nil {
		errs = append(errorList{switchErr}, errs...)
	}
	return out, origin, sw, errs.err()
}

// The keys a file may hold, per level. Anything else is an unknown key.
var (
	topKeys    = []string{"transport", "shadow", "forward_headers", "defaults", "source_schemas", "legacy", "canary", "redis", "response_cache"}
	shadowKeys = []string{"rate", "max_concurrent", "max_body_bytes", "timeout"}
	schemaOnly = []string{"url", "forward_headers"}
	legacyKeys = []string{"handler_lifetime"}
)

// decode turns koanf's merged map into a Config, strictly: unknown keys and
// malformed values are errors that name the key path. sw, if not nil, is
// FUSION_SOCKETS_TRANSPORT, parsed by environment: it replaces the
// transport key.
func decode(raw map[string]any, sw *Switch) (Config, error) {
	var errs errorList
	var cfg Config
	unknown(&errs, "", raw, topKeys)
	if sw != nil {
		cfg.applySwitch(*sw)
	} else if v, ok := raw["transport"]; ok {
		decodeTransport(&errs, v, &cfg)
	}
	if v, ok := raw["shadow"]; ok {
		decodeShadow(&errs, v, &cfg.Shadow)
	}
	if v, ok := raw["canary"]; ok {
		decodeCanary(&errs, v, &cfg.Canary)
	}
	cfg.ForwardHeaders = stringList(&errs, "forward_headers", raw["forward_headers"])
	if m, ok := section(&errs, "defaults", raw["defaults"]); ok {
		cfg.Defaults = settings(&errs, "defaults", m, nil)
	}
	if m, ok := section(&errs, "legacy", raw["legacy"]); ok {
		unknown(&errs, "legacy", m, legacyKeys)
		if v, ok := m["handler_lifetime"]; ok {
			cfg.Legacy.HandlerLifetime = duration(&errs, "legacy.handler_lifetime", v)
		}
	}
	if v, ok := raw["redis"]; ok {
		decodeRedis(&errs, v, &cfg.Redis) // cache.go
	}
	if v, ok := raw["response_cache"]; ok {
		decodeResponseCache(&errs, v, &cfg.ResponseCache)
	}
	if m, ok := section(&errs, "source_schemas", raw["source_schemas"]); ok && len(m) > 0 {
		cfg.SourceSchemas = decodeSourceSchemas(&errs, m)
	}
	return cfg, errs.err()
}

// applySwitch sets the path, and the shadow and canary rates, that a
// switch value picks.
func (c *Config) applySwitch(sw Switch) {
	c.Path, c.SocketsSchemas = sw.Path, sw.Schemas
	c.Shadow.Rate = sw.ShadowRate
	c.Canary.Rate, c.Canary.Schemas = sw.CanaryRate, sw.CanarySchemas
}

// decodeTransport reads the file's transport key: a switch word (YAML may
// read it as a bool or a number), or a list of source schemas. The value
// is parsed once.
func decodeTransport(errs *errorList, v any, cfg *Config) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case bool, int, float64:
		// YAML reads true and 1 as a bool and a number: the same words
		// as in FUSION_SOCKETS_TRANSPORT, which ParseSwitch knows.
		text = fmt.Sprint(x)
	case nil: // "transport:" with no value is empty: legacy
	case []any: // a YAML list is always a list of source schemas
		names := stringList(errs, "transport", x)
		if len(names) == 0 || slices.ContainsFunc(names, func(n string) bool { return !schemaName(n) }) {
			text = "[" + strings.Join(names, ",") + "]" // fails: not every name is one
			break
		}
		if len(names) == 1 {
			if sw, err := ParseSwitch(names[0]); err == nil && sw.Path != PathMixed {
				errs.add("transport", v, nil, "invalid value %v: %q is a switch word, not a source schema; write transport: %s", v, names[0], names[0])
				return
			}
		}
		cfg.Path, cfg.SocketsSchemas = PathMixed, names
		return
	default:
		text = fmt.Sprint(x)
	}
	if errs.has("transport") {
		return
	}
	sw, err := ParseSwitch(text)
	if err != nil {
		errs.add("transport", v, err, "%v", err)
		return
	}
	cfg.applySwitch(sw)
}

// decodeSourceSchemas reads the source_schemas mapping, in name order.
func decodeSourceSchemas(errs *errorList, m map[string]any) map[string]SourceSchema {
	out := make(map[string]SourceSchema, len(m))
	for _, name := range sortedKeys(m) {
		key := "source_schemas." + name
		sm, ok := section(errs, key, m[name])
		if !ok && m[name] != nil {
			continue
		}
		// A schema written without keys (products:) is kept, so that
		// Validate reports its missing url instead of dropping it.
		s := SourceSchema{Settings: settings(errs, key, sm, schemaOnly)}
		switch u := sm["url"].(type) {
		case string:
			s.URL = u
		case nil:
		default:
			errs.add(key+".url", u, nil, "invalid value %v: want a URL string", shown(key+".url", u))
		}
		s.ForwardHeaders = stringList(errs, key+".forward_headers", sm["forward_headers"])
		out[name] = s
	}
	return out
}

// decodeShadow reads the shadow key: a rate, or a mapping. A rate from the
// transport key (shadow:RATE) is kept unless the mapping sets one.
func decodeShadow(errs *errorList, v any, sh *ShadowSettings) {
	if n, ok := number(v); ok {
		v = map[string]any{"rate": n}
	}
	m, ok := section(errs, "shadow", v)
	if !ok {
		return
	}
	unknown(errs, "shadow", m, shadowKeys)
	if r, ok := m["rate"]; ok {
		n, isNum := number(r)
		if s, isString := r.(string); isString {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			n, isNum = f, err == nil
		}
		switch {
		case !isNum || n < 0 || n > 1:
			errs.add("shadow.rate", r, nil, "invalid rate %v: want a number from 0 (off) to 1 (every query)", r)
		case n > 0 || sh.Rate == 0:
			sh.Rate = n
		}
	}
	if c, ok := m["max_concurrent"]; ok {
		if n := limit(errs, "shadow.max_concurrent", c); n > 0 {
			sh.MaxConcurrent = n
		}
	}
	if b, ok := m["max_body_bytes"]; ok {
		if n := limit(errs, "shadow.max_body_bytes", b); n > 0 {
			sh.MaxBodyBytes = int64(n)
		}
	}
	if t, ok := m["timeout"]; ok {
		if d := duration(errs, "shadow.timeout", t); d > 0 {
			sh.Timeout = d
		}
	}
}

// settings decodes the setting keys present in m (see settingFields),
// reporting unknown keys other than those in also. An explicit 0 in a file
// means "off" or "no limit", so it is stored as Off or NoLimit: in the
// struct, 0 means "inherit".
func settings(errs *errorList, prefix string, m map[string]any, also []string) Settings {
	// Unknown keys first, then values, so that a typo reads before what it
	// may have caused.
	type entry struct {
		key string
		v   any
	}
	var known []entry
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch {
		case contains(also, k):
		case contains(sections, k):
			sub, ok := section(errs, prefix+"."+k, v)
			if !ok {
				continue
			}
			for _, sk := range sortedKeys(sub) {
				known = append(known, entry{k + "." + sk, sub[sk]})
			}
		default:
			known = append(known, entry{k, v})
		}
	}
	var s Settings
	var values []entry
	for _, e := range known {
		if _, ok := fieldByKey(e.key); !ok {
			errs.add(prefix+"."+e.key, e.v, nil, "unknown key%s", suggest(e.key, append(settingKeys(), also...)))
			continue
		}
		values = append(values, e)
	}
	for _, e := range values {
		f, _ := fieldByKey(e.key)
		f.decode(errs, prefix+"."+e.key, e.v, &s)
	}
	return s
}

// suggest returns " (did you mean x?)" for the known key nearest to key,
// or a pointer to the documentation when none is near.
func suggest(key string, known []string) string {
	best, bestDist := "", 4
	for _, k := range known {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return " (docs/configuration.md lists the keys)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// duration reads a duration such as "15s", 0 or "off". Zero and "off" give
// Off; a negative or malformed value is an error.
func duration(errs *errorList, key string, v any) time.Duration {
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		if strings.EqualFold(s, "off") || s == "0" {
			return Off
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			errs.add(key, v, err, "invalid duration %q", x)
			return 0
		}
		if d < 0 {
			errs.add(key, v, nil, "invalid duration %q: must not be negative (write off or 0 to turn the bound off)", x)
			return 0
		}
		if d == 0 {
			return Off
		}
		return d
	case int, int64, float64, uint64:
		if n, _ := number(x); n == 0 {
			return Off
		}
		errs.add(key, v, nil, "invalid duration %v: a number needs a unit, for example \"%vs\"", v, v)
	case nil:
		errs.add(key, v, nil, "missing duration")
	default:
		errs.add(key, v, nil, "invalid duration %v", v)
	}
	return 0
}

// limit reads a non-negative count; 0 gives NoLimit, whose meaning
// depends on the key (see zeroLimit).
func limit(errs *errorList, key string, v any) int {
	n, ok := number(v)
	if s, isString := v.(string); isString {
		parsed, err := strconv.Atoi(strings.TrimSpace(s))
		n, ok = float64(parsed), err == nil
	}
	switch {
	case !ok || n != float64(int(n)):
		errs.add(key, v, nil, "invalid limit %v: want a whole number", v)
	case n < 0:
		errs.add(key, v, nil, "invalid limit %v: must not be negative (0 means %s)", v, zeroLimit(key))
	case n == 0:
		return NoLimit
	default:
		return int(n)
	}
	return 0
}

// zeroLimit says what 0 in a file (NoLimit in Go) means for the limit at
// key, a key path: no limit, but for max_response_header_bytes net/http's
// bound of 10 MiB (net/http has no unbounded setting), and for the shadow
// and canary keys their default.
func zeroLimit(key string) string {
	switch {
	case strings.HasSuffix(key, "max_response_header_bytes"):
		return "net/http's bound, 10 MiB"
	case strings.HasPrefix(key, "shadow.") || strings.HasPrefix(key, "canary."):
		return "the default"
	}
	return "no limit"
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// stringList reads a YAML list of strings or a comma-separated string.
func stringList(errs *errorList, key string, v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return splitList(x)
	case []any:
		out := make([]string, 0, len(x))
		for i, item := range x {
			s, ok := item.(string)
			if !ok {
				errs.add(fmt.Sprintf("%s[%d]", key, i), item, nil, "invalid value %v: want a string", item)
				continue
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	errs.add(key, v, nil, "invalid value %v: want a list of strings", v)
	return nil
}

// section reads a nested mapping. A missing section is not an error.
func section(errs *errorList, key string, v any) (map[string]any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		return x, true
	}
	errs.add(key, v, nil, "invalid value %v: want a mapping", shown(key, v))
	return nil, false
}

// unknown reports the keys of m that are not in allowed.
func unknown(errs *errorList, prefix string, m map[string]any, allowed []string) {
	for _, k := range sortedKeys(m) {
		if slices.Contains(allowed, k) {
			continue
		}
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		errs.add(key, m[k], nil, "unknown key (known keys: %s)", strings.Join(allowed, ", "))
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// boundedFile is koanf's file provider with a size bound: a configuration
// file over MaxConfigFileBytes (or a device or pipe that never ends) is an
// error naming the bound, read no further than one byte past it.
type boundedFile string

// ReadBytes reads the file, up to MaxConfigFileBytes.
func (f boundedFile) ReadBytes() ([]byte, error) {
	fh, err := os.Open(string(f))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxConfigFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxConfigFileBytes {
		return nil, fmt.Errorf("larger than %d bytes (env.MaxConfigFileBytes); is it the right file?", MaxConfigFileBytes)
	}
	return b, nil
}

// yamlQuoted matches a value that a yaml error quotes, in backquotes:
// "cannot unmarshal !!str `...` into ...", "cannot decode !!str `...` as a
// !!int".
var yamlQuoted = regexp.MustCompile("`[^`]*`")

// redactYAML returns a file's parse error with every value it quotes
// hidden: the error names a line, not a key, so any value may be a secret
// (a file that is all one token, a url or headers.set value with the wrong
// tag). The new error does not wrap the old, whose text holds the value; a
// file system error, which quotes no value, is returned as it is.
func redactYAML(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) || !yamlQuoted.MatchString(err.Error()) {
		return err
	}
	return errors.New(yamlQuoted.ReplaceAllLiteralString(err.Error(), "`"+redact.Value+"`"))
}

// Read is not supported: the file needs a parser.
func (f boundedFile) Read() (map[string]any, error) {
	return nil, errors.New("boundedFile provider requires a parser")
}
