package env_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
)

// The secrets the tests plant: each is distinct, so that a failure says
// which kind leaked.
const (
	urlSecret         = "s3cr3t-url-pw"      // a url's password
	proxySecret       = "s3cr3t-proxy-pw"    // a proxy's password
	setSecretDefaults = "s3cr3t-set-default" // a headers.set value under defaults
	setSecretSchema   = "s3cr3t-set-schema"  // a headers.set value of a source schema
	setSecretEnv      = "s3cr3t-set-env"     // a headers.set value from a variable
	redisSecret       = "s3cr3t-redis-pw"    // redis.url's password
	tokenSecret       = "s3cr3t-cache-token" // response_cache.invalidation_token
)

var plantedSecrets = []string{urlSecret, proxySecret, setSecretDefaults, setSecretSchema, setSecretEnv, redisSecret, tokenSecret}

// withUserinfo returns raw with a user and urlSecret as its password, if it
// has a "://" and no userinfo yet.
func withUserinfo(raw, secret string) string {
	i := strings.Index(raw, "://")
	if i < 0 || strings.Contains(raw, "@") {
		return raw
	}
	return raw[:i+3] + "svc:" + secret + "@" + raw[i+3:]
}

// plantSettings returns s with a valid proxy holding proxySecret (unless s
// has a proxy) and a valid headers.set value, secret, added.
func plantSettings(s env.Settings, secret string) env.Settings {
	if s.Proxy == "" {
		s.Proxy = "http://pu:" + proxySecret + "@proxy:3128"
	}
	set := maps.Clone(s.Headers.Set)
	if set == nil {
		set = map[string]string{}
	}
	set["X-Planted"] = secret
	s.Headers.Set = set
	return s
}

// plantSecrets returns cfg with secrets in every place that holds one: a
// password in each schema's url and in redis.url (if it has one), a proxy
// password and a headers.set value under defaults and in each schema, and
// an invalidation token (if it has none). All are valid, so cfg's problems
// stay what they were.
func plantSecrets(cfg env.Config) env.Config {
	cfg.Redis.URL = withUserinfo(cfg.Redis.URL, redisSecret)
	if cfg.ResponseCache.InvalidationToken == "" {
		cfg.ResponseCache.InvalidationToken = tokenSecret
	}
	cfg.Defaults = plantSettings(cfg.Defaults, setSecretDefaults)
	schemas := make(map[string]env.SourceSchema, len(cfg.SourceSchemas))
	for name, s := range cfg.SourceSchemas {
		s.URL = withUserinfo(s.URL, urlSecret)
		s.Settings = plantSettings(s.Settings, setSecretSchema)
		schemas[name] = s
	}
	if cfg.SourceSchemas != nil {
		cfg.SourceSchemas = schemas
	}
	return cfg
}

// checkNoSecret fails t if the text of err, or of any of its KeyErrors'
// values, reasons and causes, holds a planted secret.
func checkNoSecret(t *testing.T, what string, err error) {
	t.Helper()
	texts := []string{err.Error()}
	for _, ke := range keyErrors(err) {
		texts = append(texts, fmt.Sprintf("%v %#v", ke.Value, ke.Value), ke.Reason)
		for cause := ke.Err; cause != nil; cause = errors.Unwrap(cause) {
			texts = append(texts, cause.Error())
		}
	}
	for _, text := range texts {
		for _, s := range plantedSecrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the planted secret %q:\n%s", what, s, text)
			}
		}
	}
}

func errorKeys(err error) []string {
	var keys []string
	for _, ke := range keyErrors(err) {
		keys = append(keys, ke.Key)
	}
	return keys
}

// TestValidateHidesSecrets plants secrets into every invalid case of the
// validator's table: the problems stay the same, each naming its key, and
// no secret shows in any error.
func TestValidateHidesSecrets(t *testing.T) {
	for _, tt := range validateCases() {
		if tt.wantErr == "" {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			err := plantSecrets(tt.cfg).Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want %s", tt.wantErr)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, w.Key)
			}
			if got := errorKeys(err); !slices.Equal(got, want) {
				t.Errorf("with secrets planted, the keys in error are %q, want %q", got, want)
			}
			checkNoSecret(t, "Validate()", err)
		})
	}
}

// plantFile is a configuration file loaded before each case's own: valid
// secrets under defaults, in the products schema, in redis.url and as the
// invalidation token, which the case's file overrides key by key.
const plantFile = `redis:
  url: redis://svc:` + redisSecret + `@cache:6379/0
response_cache:
  invalidation_token: ` + tokenSecret + `
defaults:
  proxy: http://pu:` + proxySecret + `@proxy:3128
  headers:
    set: {X-Planted: ` + setSecretDefaults + `}
source_schemas:
  products:
    proxy: http://pu:` + proxySecret + `@proxy:3128
    headers:
      set: {X-Planted: ` + setSecretSchema + `}
`

// plantVars are variables added to each case's: a source schema whose url
// and proxy hold a password and are invalid, and a valid headers.set value.
var plantVars = map[string]string{
	"FUSION_SOURCE_SCHEMAS__PLANTED__URL":          "http://svc:" + urlSecret + "@127.0.0.1:99999/graphql",
	"FUSION_SOURCE_SCHEMAS__PLANTED__PROXY":        "ftp://pu:" + proxySecret + "@proxy:21",
	"FUSION_SOURCE_SCHEMAS__PLANTED__HEADERS__SET": "X-Planted=" + setSecretEnv,
}

// TestLoadHidesSecrets plants secrets into every case of the loader's
// table, in a file and in variables: the case's problem is still reported
// under its key, and no secret shows in any error.
func TestLoadHidesSecrets(t *testing.T) {
	for _, tt := range loadKeyErrorCases() {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for line := range strings.Lines(tt.yaml) {
				if strings.Contains(line, "url: ") {
					line = withUserinfo(line, urlSecret)
				}
				lines = append(lines, line)
			}
			vars := maps.Clone(plantVars)
			maps.Copy(vars, tt.vars)
			l := env.Loader{LookupEnv: lookupEnv(vars), Environ: environ(vars)}
			_, err := l.Load(writeConfig(t, plantFile), writeConfig(t, strings.Join(lines, "")))
			if err == nil {
				t.Fatalf("Load() = nil, want %s", tt.wantErr)
			}
			keys := errorKeys(err)
			for _, want := range []string{tt.key, "source_schemas.planted.url", "source_schemas.planted.proxy"} {
				if !slices.Contains(keys, want) {
					t.Errorf("with secrets planted, no error for %s: %v", want, err)
				}
			}
			checkNoSecret(t, "Load()", err)
		})
	}
}

// TestExplainHidesSecrets: what fusion-transport config prints, Explain's
// values, shows url and proxy passwords as xxxxx and headers.set values as
// [redacted] with their names, from files and variables; setting.Diff
// still sees a change of any of them.
func TestExplainHidesSecrets(t *testing.T) {
	file := writeConfig(t, `defaults:
  proxy: http://pu:`+proxySecret+`@proxy:3128
  headers:
    set: {X-Api-Key: `+setSecretDefaults+`}
source_schemas:
  products:
    url: http://svc:`+urlSecret+`@127.0.0.1:4001/graphql
    headers:
      set: {Authorization: "Bearer `+setSecretSchema+`", X-Gateway: fusion}
  reviews:
    url: http://127.0.0.1:4002/graphql
redis:
  url: rediss://svc:`+redisSecret+`@cache:6380/0
response_cache:
  invalidation_token: `+tokenSecret+`
`)
	vars := map[string]string{"FUSION_SOURCE_SCHEMAS__REVIEWS__HEADERS__SET": "X-Token=" + setSecretEnv + ",X-Gateway=fusion"}
	cfg, explained, err := env.Loader{LookupEnv: lookupEnv(vars), Environ: environ(vars)}.Explain(file)
	if err != nil {
		t.Fatalf("Explain: %v", err)
	}
	want := map[string]map[string]string{
		"products": {
			"url":         "http://svc:xxxxx@127.0.0.1:4001/graphql",
			"proxy":       "http://pu:xxxxx@proxy:3128",
			"headers.set": "{Authorization: [redacted], X-Gateway: [redacted]}",
		},
		"reviews": {
			"url":         "http://127.0.0.1:4002/graphql",
			"proxy":       "http://pu:xxxxx@proxy:3128",
			"headers.set": "{X-Gateway: [redacted], X-Token: [redacted]}",
		},
	}
	for schema, keys := range want {
		for _, v := range explained[schema] {
			for _, s := range plantedSecrets {
				if strings.Contains(v.Value, s) {
					t.Errorf("%s %s = %q holds the planted secret %q", schema, v.Key, v.Value, s)
				}
			}
			if w, ok := keys[v.Key]; ok && v.Value != w {
				t.Errorf("%s %s = %q, want %q", schema, v.Key, v.Value, w)
			}
		}
	}

	// The comparison reads the values themselves.
	a, _ := cfg.Effective("products")
	b := a
	b.Proxy = "http://pu:other@proxy:3128"
	b.Headers.Set = map[string]string{"Authorization": "Bearer other", "X-Gateway": "fusion"}
	if got, want := setting.Diff(a, b), []string{"proxy", "headers.set"}; !slices.Equal(got, want) {
		t.Errorf("setting.Diff of a changed proxy password and set value = %v, want %v", got, want)
	}
}
