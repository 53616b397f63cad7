package env

import (
	"fmt"
	"slices"

	"github.com/fusiongo/transport/internal/redact"
)

// Value is one effective setting of a source schema and where it came
// from.
type Value struct {
	// Key is the setting's key path under the source schema, e.g.
	// "tls.ca_file" or "url".
	Key string
	// Value is the effective value as a file would write it, with its
	// secrets hidden: a url's or proxy's password as xxxxx, each
	// headers.set value as [redacted] (its header name stays).
	Value string
	// Origin says where it came from: "built-in default", "file
	// transport.yaml (defaults)", "file transport.yaml", "environment
	// FUSION_DEFAULTS__CONNECT_TIMEOUT (defaults)", and so on.
	Origin string
}

// Explain loads like Load, reading each file once, and also reports, for
// every source schema, every effective setting with its origin, in key
// order. The values are for people to read: secrets are hidden (see
// Value). Its errors are Load's.
func (l Loader) Explain(files ...string) (Config, map[string][]Value, error) {
	cfg, origin, err := l.load(files)
	if err != nil {
		return Config{}, nil, err
	}
	if l.LookupEnv != nil {
		if _, ok := l.LookupEnv(ForwardHeadersVar); ok {
			origin["forward_headers"] = "environment " + ForwardHeadersVar
		}
	}
	out := make(map[string][]Value, len(cfg.SourceSchemas))
	for name, sc := range cfg.SourceSchemas {
		eff, _ := cfg.Effective(name)
		prefix := "source_schemas." + name + "."
		from := func(key string) string {
			if o, ok := lookupOrigin(origin, prefix+key); ok {
				return o
			}
			if o, ok := lookupOrigin(origin, "defaults."+key); ok {
				return o + " (defaults)"
			}
			return "built-in default"
		}
		vals := []Value{{Key: "url", Value: redact.URL(sc.URL), Origin: from("url")}}
		fwd := slices.Concat(cfg.ForwardHeaders, sc.ForwardHeaders)
		fwdOrigin := from("forward_headers")
		if o, ok := lookupOrigin(origin, "forward_headers"); ok {
			fwdOrigin = o + " (global list)"
			if len(sc.ForwardHeaders) > 0 {
				fwdOrigin += " and " + from("forward_headers")
			}
		}
		vals = append(vals, Value{Key: "forward_headers", Value: fmt.Sprint(fwd), Origin: fwdOrigin})
		for _, f := range settingFields {
			vals = append(vals, Value{Key: f.key, Value: f.display(&eff), Origin: from(f.key)})
		}
		out[name] = vals
	}
	return cfg, out, nil
}

// lookupOrigin finds the origin of key, or of a list or mapping it is an
// item of (koanf reports the leaves of mappings).
func lookupOrigin(origin map[string]string, key string) (string, bool) {
	if o, ok := origin[key]; ok {
		return o, true
	}
	for k, o := range origin {
		if len(k) > len(key) && k[:len(key)] == key && k[len(key)] == '.' {
			return o, true
		}
	}
	return "", false
}

// diffSettings returns the keys whose values differ between a and b, in
// key order, secrets compared too (setting.Diff).
func diffSettings(a, b Settings) []string {
	var keys []string
	for _, f := range settingFields {
		if f.format(&a) != f.format(&b) {
			keys = append(keys, f.key)
		}
	}
	return keys
}
