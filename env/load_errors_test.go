package env_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

// loadKeyErrorCase is a row of the loader's table: a file and variables
// that hold one bad key, its message, and the Key and Value of its
// *KeyError.
type loadKeyErrorCase struct {
	name    string
	yaml    string
	vars    map[string]string
	wantErr string
	key     string
	value   any
}

// loadKeyErrorCases is the loader's table: TestLoadKeyErrors checks each
// case, TestLoadHidesSecrets plants secrets into it.
func loadKeyErrorCases() []loadKeyErrorCase {
	const schema = "source_schemas:\n  products:\n    url: http://products/graphql\n"
	return []loadKeyErrorCase{
		{
			name:    "unknown top-level key",
			yaml:    "transprot: sockets\n",
			wantErr: "transprot: unknown key (known keys: transport, shadow, forward_headers, defaults, source_schemas, legacy, canary, redis, response_cache)",
			key:     "transprot", value: "sockets",
		},
		{
			name:    "unknown key in defaults",
			yaml:    "defaults:\n  conn_lifetme: 1m\n",
			wantErr: "defaults.conn_lifetme: unknown key (did you mean conn_lifetime?)",
			key:     "defaults.conn_lifetme", value: "1m",
		},
		{
			name:    "unknown key in a source schema",
			yaml:    schema + "    timeout: 5s\n",
			wantErr: "source_schemas.products.timeout: unknown key (docs/configuration.md lists the keys)",
			key:     "source_schemas.products.timeout", value: "5s",
		},
		{
			name:    "unknown key in legacy",
			yaml:    "legacy:\n  handler_lifetme: 1m\n",
			wantErr: "legacy.handler_lifetme: unknown key (known keys: handler_lifetime)",
			key:     "legacy.handler_lifetme", value: "1m",
		},
		{
			name:    "malformed duration",
			yaml:    schema + "    conn_lifetime: 2x\n",
			wantErr: `source_schemas.products.conn_lifetime: invalid duration "2x"`,
			key:     "source_schemas.products.conn_lifetime", value: "2x",
		},
		{
			name:    "duration without unit",
			yaml:    "defaults:\n  connect_timeout: 5\n",
			wantErr: `defaults.connect_timeout: invalid duration 5: a number needs a unit, for example "5s"`,
			key:     "defaults.connect_timeout", value: 5,
		},
		{
			name:    "negative duration",
			yaml:    "defaults:\n  idle_conn_timeout: -1s\n",
			wantErr: `defaults.idle_conn_timeout: invalid duration "-1s": must not be negative (write off or 0 to turn the bound off)`,
			key:     "defaults.idle_conn_timeout", value: "-1s",
		},
		{
			name:    "negative handler lifetime",
			yaml:    "legacy:\n  handler_lifetime: -2m\n",
			wantErr: `legacy.handler_lifetime: invalid duration "-2m": must not be negative (write off or 0 to turn the bound off)`,
			key:     "legacy.handler_lifetime", value: "-2m",
		},
		{
			name:    "duration without value",
			yaml:    schema + "    header_timeout:\n",
			wantErr: "source_schemas.products.header_timeout: missing duration",
			key:     "source_schemas.products.header_timeout", value: nil,
		},
		{
			name:    "duration of the wrong type",
			yaml:    "defaults:\n  header_timeout: [1s]\n",
			wantErr: "defaults.header_timeout: invalid duration [1s]",
			key:     "defaults.header_timeout", value: []any{"1s"},
		},
		{
			name:    "negative limit",
			yaml:    "defaults:\n  max_conns_per_host: -1\n",
			wantErr: "defaults.max_conns_per_host: invalid limit -1: must not be negative (0 means no limit)",
			key:     "defaults.max_conns_per_host", value: -1,
		},
		{
			name:    "negative limit in a source schema",
			yaml:    schema + "    max_conns_per_host: -4\n",
			wantErr: "source_schemas.products.max_conns_per_host: invalid limit -4: must not be negative (0 means no limit)",
			key:     "source_schemas.products.max_conns_per_host", value: -4,
		},
		{
			name:    "negative response header limit, whose 0 is 10 MiB",
			yaml:    schema + "    max_response_header_bytes: -1\n",
			wantErr: "source_schemas.products.max_response_header_bytes: invalid limit -1: must not be negative (0 means net/http's bound, 10 MiB)",
			key:     "source_schemas.products.max_response_header_bytes", value: -1,
		},
		{
			name:    "negative shadow limit, whose 0 is the default",
			yaml:    schema + "shadow:\n  max_concurrent: -1\n",
			wantErr: "shadow.max_concurrent: invalid limit -1: must not be negative (0 means the default)",
			key:     "shadow.max_concurrent", value: -1,
		},
		{
			name:    "fractional limit",
			yaml:    "defaults:\n  max_conns_per_host: 1.5\n",
			wantErr: "defaults.max_conns_per_host: invalid limit 1.5: want a whole number",
			key:     "defaults.max_conns_per_host", value: 1.5,
		},
		{
			name:    "limit not a number",
			yaml:    "defaults:\n  max_conns_per_host: unlimited\n",
			wantErr: "defaults.max_conns_per_host: invalid limit unlimited: want a whole number",
			key:     "defaults.max_conns_per_host", value: "unlimited",
		},
		{
			name:    "url without scheme",
			yaml:    "source_schemas:\n  products:\n    url: //products/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "//products/graphql": want scheme http or https`,
			key:     "source_schemas.products.url", value: "//products/graphql",
		},
		{
			name:    "url with another scheme",
			yaml:    "source_schemas:\n  products:\n    url: ftp://products/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "ftp://products/graphql": want scheme http or https`,
			key:     "source_schemas.products.url", value: "ftp://products/graphql",
		},
		{
			name:    "url without host",
			yaml:    "source_schemas:\n  products:\n    url: http:///graphql\n",
			wantErr: `source_schemas.products.url: invalid url "http:///graphql": no host`,
			key:     "source_schemas.products.url", value: "http:///graphql",
		},
		{
			name:    "url port over 65535",
			yaml:    "source_schemas:\n  products:\n    url: http://h:65536/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "http://h:65536/graphql": port 65536 is not between 1 and 65535`,
			key:     "source_schemas.products.url", value: "http://h:65536/graphql",
		},
		{
			name:    "url port 0",
			yaml:    "source_schemas:\n  products:\n    url: http://h:0/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "http://h:0/graphql": port 0 is not between 1 and 65535`,
			key:     "source_schemas.products.url", value: "http://h:0/graphql",
		},
		{
			name:    "url that does not parse",
			yaml:    "source_schemas:\n  products:\n    url: 127.0.0.1:4001/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "127.0.0.1:4001/graphql": parse "127.0.0.1:4001/graphql": first path segment in URL cannot contain colon`,
			key:     "source_schemas.products.url", value: "127.0.0.1:4001/graphql",
		},
		{
			name:    "url not a string",
			yaml:    "source_schemas:\n  products:\n    url: 4001\n",
			wantErr: "source_schemas.products.url: invalid value 4001: want a URL string",
			key:     "source_schemas.products.url", value: 4001,
		},
		{
			name:    "schema without url",
			yaml:    "source_schemas:\n  products:\n    conn_lifetime: 30s\n",
			wantErr: "source_schemas.products.url: missing url: every source schema needs its GraphQL endpoint, for example http://127.0.0.1:4001/graphql",
			key:     "source_schemas.products.url", value: "",
		},
		{
			name:    "port 0",
			yaml:    "source_schemas:\n  products:\n    url: http://products:0/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "http://products:0/graphql": port 0 is not between 1 and 65535`,
			key:     "source_schemas.products.url", value: "http://products:0/graphql",
		},
		{
			name:    "port 99999",
			yaml:    "source_schemas:\n  products:\n    url: http://products:99999/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "http://products:99999/graphql": port 99999 is not between 1 and 65535`,
			key:     "source_schemas.products.url", value: "http://products:99999/graphql",
		},
		{
			name:    "host not UTF-8",
			yaml:    "source_schemas:\n  products:\n    url: \"http://prod%ffucts/graphql\"\n",
			wantErr: `source_schemas.products.url: invalid url "http://prod%ffucts/graphql": host "prod\xffucts" is not valid UTF-8 or holds spaces or control characters`,
			key:     "source_schemas.products.url", value: "http://prod%ffucts/graphql",
		},
		{
			name:    "unix socket with NUL",
			yaml:    schema + "    unix_socket: \"/run/a\\0b.sock\"\n",
			wantErr: `source_schemas.products.unix_socket: invalid unix_socket "/run/a\x00b.sock": holds a NUL byte`,
			key:     "source_schemas.products.unix_socket", value: "/run/a\x00b.sock",
		},
		{
			name:    "unix socket path too long",
			yaml:    schema + "    unix_socket: /" + strings.Repeat("s", 120) + "\n",
			wantErr: `source_schemas.products.unix_socket: invalid unix_socket "/` + strings.Repeat("s", 120) + `": 121 bytes, the most a socket path can have is 107`,
			key:     "source_schemas.products.unix_socket", value: "/" + strings.Repeat("s", 120),
		},
		{
			name:    "schema without any key",
			yaml:    "source_schemas:\n  products:\n",
			wantErr: "source_schemas.products.url: missing url: every source schema needs its GraphQL endpoint, for example http://127.0.0.1:4001/graphql",
			key:     "source_schemas.products.url", value: "",
		},
		{
			name:    "schema not a mapping",
			yaml:    "source_schemas:\n  products: http://products/graphql\n",
			wantErr: "source_schemas.products: invalid value http://products/graphql: want a mapping",
			key:     "source_schemas.products", value: "http://products/graphql",
		},
		{
			name:    "section not a mapping",
			yaml:    "defaults: 30s\n",
			wantErr: "defaults: invalid value 30s: want a mapping",
			key:     "defaults", value: "30s",
		},
		{
			name:    "invalid header name",
			yaml:    "forward_headers: [Authorization, X Request Id]\n",
			wantErr: `forward_headers[1]: invalid header name "X Request Id"`,
			key:     "forward_headers[1]", value: "X Request Id",
		},
		{
			name:    "invalid header name in a source schema",
			yaml:    schema + "    forward_headers: [\"X-Tenant:\"]\n",
			wantErr: `source_schemas.products.forward_headers[0]: invalid header name "X-Tenant:"`,
			key:     "source_schemas.products.forward_headers[0]", value: "X-Tenant:",
		},
		{
			name:    "invalid header name in the variable",
			vars:    map[string]string{env.ForwardHeadersVar: "Authorization,X(Bad)"},
			wantErr: `forward_headers[1]: invalid header name "X(Bad)"`,
			key:     "forward_headers[1]", value: "X(Bad)",
		},
		{
			name:    "header not a string",
			yaml:    "forward_headers: [Authorization, 42]\n",
			wantErr: "forward_headers[1]: invalid value 42: want a string",
			key:     "forward_headers[1]", value: 42,
		},
		{
			name:    "header list not a list",
			yaml:    "forward_headers: {Authorization: true}\n",
			wantErr: "forward_headers: invalid value map[Authorization:true]: want a list of strings",
			key:     "forward_headers", value: map[string]any{"Authorization": true},
		},
		{
			name:    "transport word",
			yaml:    "transport: fast!\n",
			wantErr: `transport: invalid value "fast!": want 1, true, on or sockets (sockets path); 0, false, off, legacy or empty (legacy path); a comma-separated list of source schemas (those on sockets, the rest on legacy); shadow or shadow:RATE with 0 < RATE <= 1 (legacy serves, sockets is compared); or canary:RATE or canary:RATE:schema1,schema2 with RATE as 0.05 or 5% (that share served by sockets, judged against legacy)`,
			key:     "transport", value: "fast!",
		},
		{
			name:    "transport number",
			yaml:    "transport: 2.5\n",
			wantErr: `transport: invalid value "2.5": want 1, true, on or sockets (sockets path); 0, false, off, legacy or empty (legacy path); a comma-separated list of source schemas (those on sockets, the rest on legacy); shadow or shadow:RATE with 0 < RATE <= 1 (legacy serves, sockets is compared); or canary:RATE or canary:RATE:schema1,schema2 with RATE as 0.05 or 5% (that share served by sockets, judged against legacy)`,
			key:     "transport", value: 2.5,
		},
		{
			name:    "transport list",
			yaml:    "transport: [sockets]\n",
			wantErr: `transport: invalid value [sockets]: "sockets" is a switch word, not a source schema; write transport: sockets`,
			key:     "transport", value: []any{"sockets"},
		},
		{
			name:    "switch variable",
			vars:    map[string]string{env.SwitchVar: "yes!"},
			wantErr: `FUSION_SOCKETS_TRANSPORT: invalid value "yes!": want 1, true, on or sockets (sockets path); 0, false, off, legacy or empty (legacy path); a comma-separated list of source schemas (those on sockets, the rest on legacy); shadow or shadow:RATE with 0 < RATE <= 1 (legacy serves, sockets is compared); or canary:RATE or canary:RATE:schema1,schema2 with RATE as 0.05 or 5% (that share served by sockets, judged against legacy)`,
			key:     env.SwitchVar, value: "yes!",
		},
		// Secrets in the values, from files and variables: the message
		// and the KeyError's Value show them redacted
		// (TestLoadHidesSecrets plants more into every case).
		{
			name:    "url with a password, port out of range",
			yaml:    "source_schemas:\n  products:\n    url: http://svc:" + urlSecret + "@127.0.0.1:99999/graphql\n",
			wantErr: `source_schemas.products.url: invalid url "http://svc:xxxxx@127.0.0.1:99999/graphql": port 99999 is not between 1 and 65535`,
			key:     "source_schemas.products.url", value: "http://svc:xxxxx@127.0.0.1:99999/graphql",
		},
		{
			name:    "url with a password that does not parse, from a variable",
			vars:    map[string]string{"FUSION_SOURCE_SCHEMAS__PRODUCTS__URL": "http://svc:" + urlSecret + "@[::1"},
			wantErr: `source_schemas.products.url: invalid url "http://xxxxx@[::1": parse "http://xxxxx@[::1": missing ']' in host (set by FUSION_SOURCE_SCHEMAS__PRODUCTS__URL)`,
			key:     "source_schemas.products.url", value: "http://xxxxx@[::1",
		},
		{
			name:    "url a list holding a password",
			yaml:    "source_schemas:\n  products:\n    url: [\"http://svc:" + urlSecret + "@products/graphql\"]\n",
			wantErr: "source_schemas.products.url: invalid value [http://svc:xxxxx@products/graphql]: want a URL string",
			key:     "source_schemas.products.url", value: []any{"http://svc:xxxxx@products/graphql"},
		},
		{
			name:    "schema written as a url with a password",
			yaml:    "source_schemas:\n  products: http://svc:" + urlSecret + "@products/graphql\n",
			wantErr: "source_schemas.products: invalid value http://svc:xxxxx@products/graphql: want a mapping",
			key:     "source_schemas.products", value: "http://svc:xxxxx@products/graphql",
		},
		{
			name:    "proxy with a password and another scheme",
			yaml:    "defaults:\n  proxy: ftp://pu:" + proxySecret + "@proxy:21\n",
			wantErr: `defaults.proxy: invalid proxy "ftp://pu:xxxxx@proxy:21": want off, environment, or a URL with scheme http, https or socks5`,
			key:     "defaults.proxy", value: "ftp://pu:xxxxx@proxy:21",
		},
		{
			name:    "proxy with a password that does not parse, from a variable",
			vars:    map[string]string{"FUSION_DEFAULTS__PROXY": "http://pu:" + proxySecret + "@[::1"},
			wantErr: `defaults.proxy: invalid proxy "http://xxxxx@[::1": parse "http://xxxxx@[::1": missing ']' in host (set by FUSION_DEFAULTS__PROXY)`,
			key:     "defaults.proxy", value: "http://xxxxx@[::1",
		},
		{
			name:    "proxy a mapping holding a password",
			yaml:    "defaults:\n  proxy: {url: \"http://pu:" + proxySecret + "@proxy:3128\"}\n",
			wantErr: "defaults.proxy: invalid value map[url:http://pu:xxxxx@proxy:3128]: want a string",
			key:     "defaults.proxy", value: map[string]any{"url": "http://pu:xxxxx@proxy:3128"},
		},
		{
			name:    "set value with CR LF in a schema",
			yaml:    schema + "    headers:\n      set: {Authorization: \"Bearer " + setSecretSchema + "\\r\\n\"}\n",
			wantErr: "source_schemas.products.headers.set.Authorization: invalid header value [redacted]: control characters such as CR or LF are not allowed",
			key:     "source_schemas.products.headers.set.Authorization", value: "[redacted]",
		},
		{
			name:    "set value not a string",
			yaml:    "defaults:\n  headers:\n    set: {X-Api-Key: [" + setSecretDefaults + "]}\n",
			wantErr: "defaults.headers.set.X-Api-Key: invalid value [redacted]: want a string",
			key:     "defaults.headers.set.X-Api-Key", value: "[redacted]",
		},
		{
			name:    "set not a mapping",
			yaml:    "defaults:\n  headers:\n    set: [" + setSecretDefaults + "]\n",
			wantErr: "defaults.headers.set: invalid value [redacted]: want a mapping of header names",
			key:     "defaults.headers.set", value: "[redacted]",
		},
		{
			name:    "headers not a mapping",
			yaml:    "defaults:\n  headers: \"Authorization: Bearer " + setSecretDefaults + "\"\n",
			wantErr: "defaults.headers: invalid value [redacted]: want a mapping",
			key:     "defaults.headers", value: "[redacted]",
		},
		{
			name:    "set pair without = from a variable",
			vars:    map[string]string{"FUSION_DEFAULTS__HEADERS__SET": "X-Gateway=fusion,Bearer " + setSecretEnv},
			wantErr: `defaults.headers.set: invalid value [redacted]: want Name=Value pairs, comma-separated; item 2 has no "=" (set by FUSION_DEFAULTS__HEADERS__SET)`,
			key:     "defaults.headers.set", value: "[redacted]",
		},
		{
			name:    "set name invalid, from a variable",
			yaml:    schema,
			vars:    map[string]string{"FUSION_SOURCE_SCHEMAS__PRODUCTS__HEADERS__SET": "X Api Key=" + setSecretEnv},
			wantErr: `source_schemas.products.headers.set.X Api Key: invalid header name "X Api Key"`,
			key:     "source_schemas.products.headers.set.X Api Key", value: "[redacted]",
		},
		{
			name:    "unknown key near headers.set",
			yaml:    "defaults:\n  headers:\n    sett: {X-Api-Key: " + setSecretDefaults + "}\n",
			wantErr: "defaults.headers.sett: unknown key (did you mean headers.set?)",
			key:     "defaults.headers.sett", value: "[redacted]",
		},
		{
			name:    "unknown key header, holding set",
			yaml:    schema + "    header:\n      set: {Authorization: " + setSecretSchema + "}\n",
			wantErr: "source_schemas.products.header: unknown key (docs/configuration.md lists the keys)",
			key:     "source_schemas.products.header", value: map[string]any{"set": "[redacted]"},
		},
		{
			name:    "unknown variable near headers.set",
			vars:    map[string]string{"FUSION_DEFAULTS__HEADERS__SETS": "X-Api-Key=" + setSecretEnv},
			wantErr: "FUSION_DEFAULTS__HEADERS__SETS: unknown key defaults.headers.sets",
			key:     "FUSION_DEFAULTS__HEADERS__SETS", value: "[redacted]",
		},
		{
			name:    "invalidation token not a string",
			yaml:    "response_cache:\n  invalidation_token: [" + tokenSecret + "]\n",
			wantErr: "response_cache.invalidation_token: invalid value [redacted]: want a string (quote a value that YAML reads as a number or a boolean)",
			key:     "response_cache.invalidation_token", value: "[redacted]",
		},
		{
			name:    "invalidation token with a space, from a variable",
			vars:    map[string]string{"FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN": "Bearer " + tokenSecret},
			wantErr: "response_cache.invalidation_token: invalid value [redacted]: a bearer token holds no spaces or control characters (set by FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN)",
			key:     "response_cache.invalidation_token", value: "[redacted]",
		},
		{
			name:    "unknown key near invalidation_token",
			yaml:    "response_cache:\n  invalidation_tokn: " + tokenSecret + "\n",
			wantErr: "response_cache.invalidation_tokn: unknown key (known keys: invalidation_token)",
			key:     "response_cache.invalidation_tokn", value: "[redacted]",
		},
		{
			name:    "unknown top-level key near response_cache, holding the token",
			yaml:    "response_cach:\n  invalidation_token: " + tokenSecret + "\n",
			wantErr: "response_cach: unknown key (known keys: transport, shadow, forward_headers, defaults, source_schemas, legacy, canary, redis, response_cache)",
			key:     "response_cach", value: map[string]any{"invalidation_token": "[redacted]"},
		},
		{
			name:    "response_cache not a mapping",
			yaml:    "response_cache: " + tokenSecret + "\n",
			wantErr: "response_cache: invalid value [redacted]: want a mapping",
			key:     "response_cache", value: "[redacted]",
		},
		{
			name:    "unknown variable near the invalidation token",
			vars:    map[string]string{"FUSION_RESPONSE_CACHE__TOKEN": tokenSecret},
			wantErr: "FUSION_RESPONSE_CACHE__TOKEN: unknown key response_cache.token",
			key:     "FUSION_RESPONSE_CACHE__TOKEN", value: "[redacted]",
		},
		{
			name:    "redis url with a password, bad port",
			yaml:    "redis:\n  url: redis://svc:" + redisSecret + "@cache:99999/0\n",
			wantErr: `redis.url: invalid url "redis://svc:xxxxx@cache:99999/0": port 99999 is not between 1 and 65535`,
			key:     "redis.url", value: "redis://svc:xxxxx@cache:99999/0",
		},
		{
			name:    "redis url with a password that breaks the parse",
			yaml:    "redis:\n  url: redis://svc:" + redisSecret + "/x@cache:6379\n",
			wantErr: `redis.url: invalid url "redis://xxxxx@cache:6379": parse "redis://xxxxx@cache:6379": invalid port "xxxxx" after host`,
			key:     "redis.url", value: "redis://xxxxx@cache:6379",
		},
		{
			name:    "redis url from a variable",
			vars:    map[string]string{"FUSION_REDIS__URL": "http://svc:" + redisSecret + "@cache:6379"},
			wantErr: `redis.url: invalid url "http://svc:xxxxx@cache:6379": want scheme redis or rediss (TLS) (set by FUSION_REDIS__URL)`,
			key:     "redis.url", value: "http://svc:xxxxx@cache:6379",
		},
		{
			name:    "unknown redis variable holding a url",
			vars:    map[string]string{"FUSION_REDIS__ADDR": "redis://svc:" + redisSecret + "@cache:6379"},
			wantErr: "FUSION_REDIS__ADDR: unknown key redis.addr",
			key:     "FUSION_REDIS__ADDR", value: "redis://svc:xxxxx@cache:6379",
		},
		{
			name:    "redis not a mapping, a url with a password",
			yaml:    "redis: redis://svc:" + redisSecret + "@cache:6379\n",
			wantErr: "redis: invalid value redis://svc:xxxxx@cache:6379: want a mapping",
			key:     "redis", value: "redis://svc:xxxxx@cache:6379",
		},
	}
}

// TestLoadKeyErrors covers each kind of bad key: the full message, and the
// Key and Value of the one *KeyError.
func TestLoadKeyErrors(t *testing.T) {
	for _, tt := range loadKeyErrorCases() {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := env.Loader{LookupEnv: lookupEnv(tt.vars), Environ: environ(tt.vars)}.Load(writeConfig(t, tt.yaml))
			if err == nil {
				t.Fatalf("Load() = %+v, want error %q", cfg, tt.wantErr)
			}
			if got := err.Error(); got != tt.wantErr {
				t.Errorf("Load() error:\n got %s\nwant %s", got, tt.wantErr)
			}
			if !reflect.DeepEqual(cfg, env.Config{}) {
				t.Errorf("Load() config = %+v, want the zero Config with an error", cfg)
			}
			var ke *env.KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("errors.As(%T, *KeyError) = false", err)
			}
			if ke.Key != tt.key || !reflect.DeepEqual(ke.Value, tt.value) {
				t.Errorf("KeyError{Key: %q, Value: %#v}, want {Key: %q, Value: %#v}", ke.Key, ke.Value, tt.key, tt.value)
			}
			if n := len(keyErrors(err)); n != 1 {
				t.Errorf("Load() reported %d key errors, want 1: %v", n, err)
			}
		})
	}
}

func TestLoadKeyErrorCause(t *testing.T) {
	_, err := env.Loader{}.Load(writeConfig(t, "defaults:\n  conn_lifetime: 2x\n"))
	var ke *env.KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("errors.As(%v, *KeyError) = false", err)
	}
	// The cause is time.ParseDuration's error, kept for errors.Unwrap.
	if ke.Err == nil || errors.Unwrap(ke) != ke.Err || !strings.Contains(ke.Err.Error(), `time: unknown unit "x"`) {
		t.Errorf("KeyError.Err = %v, want time.ParseDuration's error", ke.Err)
	}
	if ke.Reason != `invalid duration "2x"` {
		t.Errorf("KeyError.Reason = %q, want %q", ke.Reason, `invalid duration "2x"`)
	}
}

// TestLoadReportsAllErrors checks that one Load reports every bad key: from
// the environment, from decoding the files and from validation.
func TestLoadReportsAllErrors(t *testing.T) {
	yaml := `
transport: fast!
colour: blue
forward_headers: [X Bad, Authorization]
defaults:
  connect_timeout: 2x
  max_conns_per_host: -3
legacy:
  handler_lifetime: -1m
source_schemas:
  products:
    url: ftp://products/graphql
    conn_lifetime: 2x
    timeout: 5s
  reviews:
    forward_headers: ["X:Bad"]
`
	vars := map[string]string{env.SwitchVar: "maybe!"}
	cfg, err := env.Loader{LookupEnv: lookupEnv(vars)}.Load(writeConfig(t, yaml))
	if err == nil {
		t.Fatalf("Load() = %+v, want errors", cfg)
	}
	const accepted = "want 1, true, on or sockets (sockets path); 0, false, off, legacy or empty (legacy path); a comma-separated list of source schemas (those on sockets, the rest on legacy); shadow or shadow:RATE with 0 < RATE <= 1 (legacy serves, sockets is compared); or canary:RATE or canary:RATE:schema1,schema2 with RATE as 0.05 or 5% (that share served by sockets, judged against legacy)"
	wantErr := strings.Join([]string{
		`FUSION_SOCKETS_TRANSPORT: invalid value "maybe!": ` + accepted,
		"colour: unknown key (known keys: transport, shadow, forward_headers, defaults, source_schemas, legacy, canary, redis, response_cache)",
		`transport: invalid value "fast!": ` + accepted,
		`defaults.connect_timeout: invalid duration "2x"`,
		"defaults.max_conns_per_host: invalid limit -3: must not be negative (0 means no limit)",
		`legacy.handler_lifetime: invalid duration "-1m": must not be negative (write off or 0 to turn the bound off)`,
		"source_schemas.products.timeout: unknown key (docs/configuration.md lists the keys)",
		`source_schemas.products.conn_lifetime: invalid duration "2x"`,
		`forward_headers[0]: invalid header name "X Bad"`,
		`source_schemas.products.url: invalid url "ftp://products/graphql": want scheme http or https`,
		"source_schemas.reviews.url: missing url: every source schema needs its GraphQL endpoint, for example http://127.0.0.1:4001/graphql",
		`source_schemas.reviews.forward_headers[0]: invalid header name "X:Bad"`,
	}, "\n")
	if got := err.Error(); got != wantErr {
		t.Errorf("Load() error:\n%s\nwant:\n%s", got, wantErr)
	}

	type kv struct {
		Key   string
		Value any
	}
	want := []kv{
		{env.SwitchVar, "maybe!"},
		{"colour", "blue"},
		{"transport", "fast!"},
		{"defaults.connect_timeout", "2x"},
		{"defaults.max_conns_per_host", -3},
		{"legacy.handler_lifetime", "-1m"},
		{"source_schemas.products.timeout", "5s"},
		{"source_schemas.products.conn_lifetime", "2x"},
		{"forward_headers[0]", "X Bad"},
		{"source_schemas.products.url", "ftp://products/graphql"},
		{"source_schemas.reviews.url", ""},
		{"source_schemas.reviews.forward_headers[0]", "X:Bad"},
	}
	var got []kv
	for _, ke := range keyErrors(err) {
		got = append(got, kv{ke.Key, ke.Value})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("key errors:\n got %v\nwant %v", got, want)
	}
	var ke *env.KeyError
	if !errors.As(err, &ke) || ke.Key != env.SwitchVar {
		t.Errorf("errors.As finds %+v, want the first error, for %s", ke, env.SwitchVar)
	}
}

// TestLoadErrorsAcrossFiles checks that bad keys of two files are all
// reported, each under its key path.
func TestLoadErrorsAcrossFiles(t *testing.T) {
	first := writeConfig(t, "defaults:\n  conn_lifetime: 2x\n")
	second := writeConfig(t, "legacy:\n  handler_lifetime: soon\n")
	_, err := env.Loader{}.Load(first, second)
	want := "defaults.conn_lifetime: invalid duration \"2x\"\nlegacy.handler_lifetime: invalid duration \"soon\""
	if err == nil || err.Error() != want {
		t.Fatalf("Load() error = %v, want:\n%s", err, want)
	}
	// A later file that fixes a key hides the earlier bad value.
	fix := writeConfig(t, "defaults:\n  conn_lifetime: 1m\nlegacy:\n  handler_lifetime: 1m\n")
	cfg := mustLoad(t, env.Loader{}, first, second, fix)
	if cfg.Defaults.ConnLifetime != time.Minute || cfg.Legacy.HandlerLifetime != time.Minute {
		t.Errorf("Load(first, second, fix) = %+v, want both lifetimes 1m", cfg)
	}
}

// TestLoadFileErrors covers files that cannot be read or parsed: the error
// names the file and keeps the cause, and is not a KeyError. Explain (the
// config command) reads files as Load does and returns the same errors.
func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	malformed := writeConfig(t, "transport: [sockets\n")
	notMapping := writeConfig(t, "- transport\n- sockets\n")
	valid := writeConfig(t, issueYAML)
	huge := writeConfig(t, "# "+strings.Repeat("x", env.MaxConfigFileBytes)+"\n")
	// yaml's errors quote the value that does not fit, which may be a
	// secret: a file that is all one token, a url tagged as a number.
	scalar := writeConfig(t, "Bearer "+setSecretDefaults+"\n")
	tagged := writeConfig(t, "source_schemas:\n  p:\n    url: !!int http://svc:"+urlSecret+"@p/graphql\n")
	tests := []struct {
		name    string
		files   []string
		wantErr string
		is      error
	}{
		{
			name:    "missing file",
			files:   []string{missing},
			wantErr: "config file " + missing + ": open " + missing + ": no such file or directory",
			is:      fs.ErrNotExist,
		},
		{
			name:    "missing second file",
			files:   []string{valid, missing},
			wantErr: "config file " + missing + ": open " + missing + ": no such file or directory",
			is:      fs.ErrNotExist,
		},
		{
			name:    "directory",
			files:   []string{dir},
			wantErr: "config file " + dir + ": read " + dir + ": is a directory",
		},
		{
			name:    "file over the size bound",
			files:   []string{huge},
			wantErr: "config file " + huge + ": larger than 16777216 bytes (env.MaxConfigFileBytes); is it the right file?",
		},
		{
			name:    "a device that never ends",
			files:   []string{"/dev/zero"},
			wantErr: "config file /dev/zero: larger than 16777216 bytes (env.MaxConfigFileBytes); is it the right file?",
		},
		{
			name:    "malformed YAML",
			files:   []string{malformed},
			wantErr: "config file " + malformed + ": yaml: line 1: did not find expected ',' or ']'",
		},
		{
			name:    "YAML that is not a mapping",
			files:   []string{notMapping},
			wantErr: "config file " + notMapping + ": yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into map[string]interface {}",
		},
		{
			name:    "YAML that is one token",
			files:   []string{scalar},
			wantErr: "config file " + scalar + ": yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `[redacted]` into map[string]interface {}",
		},
		{
			name:    "YAML value of the wrong tag",
			files:   []string{tagged},
			wantErr: "config file " + tagged + ": yaml: cannot decode !!str `[redacted]` as a !!int",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A bad switch value must not hide the file's error.
			l := env.Loader{LookupEnv: lookupEnv(map[string]string{env.SwitchVar: "bogus"})}
			for _, load := range []struct {
				name string
				run  func(files ...string) (env.Config, error)
			}{
				{"Load", l.Load},
				{"Explain", func(files ...string) (env.Config, error) { cfg, _, err := l.Explain(files...); return cfg, err }},
			} {
				cfg, err := load.run(tt.files...)
				if err == nil {
					t.Fatalf("%s() = %+v, want an error", load.name, cfg)
				}
				if got := err.Error(); got != tt.wantErr {
					t.Errorf("%s() error:\n got %q\nwant %q", load.name, got, tt.wantErr)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("%s: errors.Is(%v, %v) = false", load.name, err, tt.is)
				}
				checkNoSecret(t, load.name+"()", err)
				var ke *env.KeyError
				if errors.As(err, &ke) {
					t.Errorf("%s: errors.As(*KeyError) = %+v, want no KeyError for a file error", load.name, ke)
				}
			}
		})
	}
}
