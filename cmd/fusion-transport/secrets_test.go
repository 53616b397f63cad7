package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The secrets TestConfigHidesSecrets plants, each distinct so that a
// failure says which kind leaked; the NEW configuration adds "-2" to each.
const (
	urlSecret         = "s3cr3t-url-pw"
	proxySecret       = "s3cr3t-proxy-pw"
	setSecretDefaults = "s3cr3t-set-default"
	setSecretSchema   = "s3cr3t-set-schema"
	setSecretEnv      = "s3cr3t-set-env"
	querySecret       = "s3cr3t-query-key"
	redisSecret       = "s3cr3t-redis-pw"
	tokenSecret       = "s3cr3t-cache-token"
	tokenSecretEnv    = "s3cr3t-cache-token-env"
)

// secretYAML is a valid configuration with a secret in every place that
// holds one; n tells OLD and NEW apart. products changes its proxy (a new
// pool), reviews only per-request values.
func secretYAML(n string) string {
	return `redis:
  url: rediss://svc:` + redisSecret + n + `@cache.test:6380/0
response_cache:
  invalidation_token: ` + tokenSecret + n + `
defaults:
  headers:
    set: {X-Api-Key: ` + setSecretDefaults + n + `}
source_schemas:
  products:
    url: http://svc:` + urlSecret + n + `@127.0.0.1:4001/graphql
    proxy: http://pu:` + proxySecret + n + `@proxy.test:3128
    headers:
      set: {Authorization: "Bearer ` + setSecretSchema + n + `"}
  reviews:
    url: http://svc:` + urlSecret + n + `@127.0.0.1:4002/graphql?api_key=` + querySecret + `
`
}

// badYAML breaks secretYAML in each way that touches a secret.
const badYAML = `redis:
  url: redis://svc:` + redisSecret + `@cache.test:99999/0
response_cache:
  invalidation_token: "Bearer ` + tokenSecret + `"
defaults:
  proxy: ftp://pu:` + proxySecret + `@proxy.test:21
  headers:
    set: {X-Api-Key: "` + setSecretDefaults + `\r\n"}
source_schemas:
  products:
    url: http://svc:` + urlSecret + `@127.0.0.1:99999/graphql
    headers:
      set: {Api Key: ` + setSecretSchema + `}
  reviews:
    url: http://svc:` + urlSecret + `/x@127.0.0.1:4002/graphql?api_key=` + querySecret + `
`

// TestConfigHidesSecrets runs the commands that print a configuration,
// its problems or a reload's plan, on configurations with secrets in files
// and variables: no output holds a secret, and each says what it must
// (the keys, the redacted values, that a secret changed).
func TestConfigHidesSecrets(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldFile, newFile, badFile := file("old.yaml", secretYAML("")), file("new.yaml", secretYAML("-2")), file("bad.yaml", badYAML)
	setVar := map[string]string{"FUSION_SOURCE_SCHEMAS__REVIEWS__HEADERS__SET": "X-Token=" + setSecretEnv}
	badErrors := []string{
		`redis.url: invalid url "redis://svc:xxxxx@cache.test:99999/0": port 99999 is not between 1 and 65535`,
		`response_cache.invalidation_token: invalid value [redacted]: a bearer token holds no spaces or control characters`,
		`defaults.proxy: invalid proxy "ftp://pu:xxxxx@proxy.test:21": want off, environment, or a URL with scheme http, https or socks5`,
		`defaults.headers.set.X-Api-Key: invalid header value [redacted]: control characters such as CR or LF are not allowed`,
		`source_schemas.products.url: invalid url "http://svc:xxxxx@127.0.0.1:99999/graphql": port 99999 is not between 1 and 65535`,
		`source_schemas.products.headers.set.Api Key: invalid header name "Api Key"`,
		`source_schemas.reviews.url: invalid url "http://xxxxx@127.0.0.1:4002/graphql?api_key=xxxxx": parse "http://xxxxx@127.0.0.1:4002/graphql?api_key=xxxxx": invalid port "xxxxx" after host`,
	}
	for _, tc := range []struct {
		name       string
		args       []string
		vars       map[string]string
		code       int
		wantOut    []string // in stdout, each run of blanks as one space
		wantStderr []string
	}{
		{
			name: "config",
			args: []string{"config", oldFile},
			vars: setVar,
			wantOut: []string{
				"url http://svc:xxxxx@127.0.0.1:4001/graphql file " + oldFile,
				"url http://svc:xxxxx@127.0.0.1:4002/graphql?api_key=xxxxx file " + oldFile,
				"proxy http://pu:xxxxx@proxy.test:3128 file " + oldFile,
				"headers.set {Authorization: [redacted]} file " + oldFile,
				"headers.set {X-Token: [redacted]} environment FUSION_SOURCE_SCHEMAS__REVIEWS__HEADERS__SET",
				"redis.url: rediss://svc:xxxxx@cache.test:6380/0",
				"response_cache.invalidation_token: [redacted]",
			},
		},
		{
			name:    "config with the token from a variable",
			args:    []string{"config", oldFile},
			vars:    map[string]string{"FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN": tokenSecretEnv, "FUSION_REDIS__URL": "redis://:" + redisSecret + "-env@cache.test:6379"},
			wantOut: []string{"redis.url: redis://:xxxxx@cache.test:6379", "response_cache.invalidation_token: [redacted]"},
		},
		{
			name:       "config with a bad token variable",
			args:       []string{"config", oldFile},
			vars:       map[string]string{"FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN": "Bearer " + tokenSecretEnv},
			code:       2,
			wantStderr: []string{"config: response_cache.invalidation_token: invalid value [redacted]: a bearer token holds no spaces or control characters (set by FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN)"},
		},
		{
			name: "config -diff",
			args: []string{"config", "-diff", oldFile, newFile},
			wantOut: []string{
				"replaced products: changed proxy; per-request settings change too: headers.set, url userinfo",
				"kept reviews: warm connections stay; per-request settings change: headers.set, url userinfo",
			},
		},
		{name: "config of a bad file", args: []string{"config", badFile}, code: 2, wantStderr: badErrors},
		{name: "config -diff from a bad file", args: []string{"config", "-diff", badFile, newFile}, code: 2, wantStderr: append([]string{"config: OLD: "}, badErrors...)},
		{name: "config -diff to a bad file", args: []string{"config", "-diff", oldFile, badFile}, code: 2, wantStderr: append([]string{"config: NEW: "}, badErrors...)},
		{
			name:       "config with a bad variable",
			args:       []string{"config", oldFile},
			vars:       map[string]string{"FUSION_DEFAULTS__HEADERS__SET": "Bearer " + setSecretEnv},
			code:       2,
			wantStderr: []string{`config: defaults.headers.set: invalid value [redacted]: want Name=Value pairs, comma-separated; item 1 has no "=" (set by FUSION_DEFAULTS__HEADERS__SET)`},
		},
		{name: "compare of a bad file", args: []string{"compare", "-config", badFile}, code: 2, wantStderr: badErrors},
		{
			name:       "gateway with a url but no name",
			args:       []string{"gateway", "-schemas", "http://svc:" + urlSecret + "@127.0.0.1:4001/graphql"},
			code:       2,
			wantStderr: []string{`gateway: -schemas: invalid item "http://svc:xxxxx@127.0.0.1:4001/graphql": want name=url`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.vars {
				t.Setenv(k, v)
			}
			code, stdout, stderr := runCmd(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			columns := strings.Join(strings.FieldsFunc(stdout, func(r rune) bool { return r == ' ' || r == '\t' }), " ")
			for _, want := range tc.wantOut {
				if !strings.Contains(columns, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, s := range []string{urlSecret, proxySecret, setSecretDefaults, setSecretSchema, setSecretEnv, querySecret, redisSecret, tokenSecret, tokenSecretEnv} {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("the output holds the planted secret %q:\nstdout:\n%s\nstderr:\n%s", s, stdout, stderr)
				}
			}
		})
	}
}
