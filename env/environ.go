package env

import (
	"errors"
	"fmt"
	"strings"
)

// Environment variables that set configuration keys. A key path maps to a
// variable by upper-casing it, with "__" between levels and the FUSION_
// prefix:
//
//	defaults.connect_timeout            FUSION_DEFAULTS__CONNECT_TIMEOUT
//	defaults.tls.ca_file                FUSION_DEFAULTS__TLS__CA_FILE
//	source_schemas.products.url         FUSION_SOURCE_SCHEMAS__PRODUCTS__URL
//	legacy.handler_lifetime             FUSION_LEGACY__HANDLER_LIFETIME
//	redis.tls.ca_file                   FUSION_REDIS__TLS__CA_FILE
//	response_cache.invalidation_token   FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN
//
// Lists are comma-separated (FUSION_DEFAULTS__DECOMPRESSION=gzip,zstd) and
// mappings are Name=Value pairs (FUSION_DEFAULTS__HEADERS__SET=X-A=1,X-B=2).
// A schema segment matches a schema of the files regardless of case, with _
// standing for -; otherwise it names a new schema, lower-cased.
const envPrefix = "FUSION_"

var envSections = []string{"DEFAULTS__", "SOURCE_SCHEMAS__", "LEGACY__", "REDIS__", "RESPONSE_CACHE__"}

// EnvVar returns the environment variable that sets the key path under
// defaults, e.g. "tls.ca_file" gives FUSION_DEFAULTS__TLS__CA_FILE; with a
// schema name, the variable of that schema's key.
func EnvVar(schema, key string) string {
	k := strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
	if schema == "" {
		return envPrefix + "DEFAULTS__" + k
	}
	return envPrefix + "SOURCE_SCHEMAS__" + strings.ToUpper(strings.ReplaceAll(schema, "-", "_")) + "__" + k
}

// envKey maps a variable name to a key path, "" if the variable is not a
// key variable. A variable of one of envSections naming no known key is an
// error.
func envKey(name string, schemas []string) (string, error) {
	rest, ok := strings.CutPrefix(name, envPrefix)
	if !ok {
		return "", nil
	}
	var section string
	for _, s := range envSections {
		if r, ok := strings.CutPrefix(rest, s); ok {
			section, rest = strings.ToLower(strings.TrimSuffix(s, "__")), r
			break
		}
	}
	if section == "" {
		return "", nil
	}
	parts := strings.Split(strings.ToLower(rest), "__")
	switch section {
	case "legacy":
		if len(parts) == 1 && contains(legacyKeys, parts[0]) {
			return "legacy." + parts[0], nil
		}
	case "redis":
		if key := strings.Join(parts, "."); redisLeaf(key) {
			return "redis." + key, nil
		}
	case "response_cache":
		if len(parts) == 1 && contains(responseCacheKeys, parts[0]) {
			return "response_cache." + parts[0], nil
		}
	case "defaults":
		key := strings.Join(parts, ".")
		if _, ok := fieldByKey(key); ok {
			return "defaults." + key, nil
		}
	case "source_schemas":
		if len(parts) < 2 || parts[0] == "" {
			return "", errors.New("want FUSION_SOURCE_SCHEMAS__<NAME>__<KEY>")
		}
		schema := parts[0]
		for _, s := range schemas {
			if strings.EqualFold(strings.ReplaceAll(s, "-", "_"), schema) {
				schema = s
				break
			}
		}
		key := strings.Join(parts[1:], ".")
		if _, ok := fieldByKey(key); ok || contains(schemaOnly, key) {
			return "source_schemas." + schema + "." + key, nil
		}
	}
	return "", fmt.Errorf("unknown key %s.%s", section, strings.Join(parts, "."))
}

// blameEnvironment adds to each error about a key that a variable set the
// variable's name, so that the user knows where to look.
func blameEnvironment(err error, origin map[string]string) error {
	if err == nil || len(origin) == 0 {
		return err
	}
	list, ok := err.(joined)
	if !ok {
		list = joined{err}
	}
	for _, e := range list {
		var ke *KeyError
		if errors.As(e, &ke) {
			if name, ok := origin[ke.Key]; ok {
				ke.Reason += " (set by " + name + ")"
			}
		}
	}
	if len(list) == 1 {
		return list[0]
	}
	return list
}
