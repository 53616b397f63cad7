package env_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
)

func TestEffective(t *testing.T) {
	const url = "http://products/graphql"
	tests := []struct {
		name     string
		defaults env.Settings
		schema   env.Settings
		want     env.Settings
	}{
		{
			name: "zero everywhere: built-in defaults",
			want: builtinSettings,
		},
		{
			name:     "defaults fill what the schema leaves zero",
			defaults: env.Settings{ConnectTimeout: 3 * time.Second, MaxConnsPerHost: 8},
			schema:   env.Settings{ConnLifetime: 30 * time.Second},
			want: env.Settings{
				ConnectTimeout:  3 * time.Second,
				ConnLifetime:    30 * time.Second,
				IdleConnTimeout: 90 * time.Second,
				MaxConnsPerHost: 8,
				HeaderTimeout:   100 * time.Second,
			},
		},
		{
			name:     "schema wins over defaults",
			defaults: env.Settings{ConnectTimeout: 3 * time.Second, ConnLifetime: time.Minute, IdleConnTimeout: time.Minute, MaxConnsPerHost: 8, HeaderTimeout: time.Minute},
			schema:   env.Settings{ConnectTimeout: time.Second, ConnLifetime: 2 * time.Second, IdleConnTimeout: 3 * time.Second, MaxConnsPerHost: 4, HeaderTimeout: 5 * time.Second},
			want:     env.Settings{ConnectTimeout: time.Second, ConnLifetime: 2 * time.Second, IdleConnTimeout: 3 * time.Second, MaxConnsPerHost: 4, HeaderTimeout: 5 * time.Second},
		},
		{
			name:     "Off and NoLimit in the schema override non-zero defaults",
			defaults: env.Settings{ConnectTimeout: 3 * time.Second, ConnLifetime: time.Minute, IdleConnTimeout: time.Minute, MaxConnsPerHost: 8, HeaderTimeout: time.Minute},
			schema:   env.Settings{ConnectTimeout: env.Off, ConnLifetime: env.Off, IdleConnTimeout: env.Off, MaxConnsPerHost: env.NoLimit, HeaderTimeout: env.Off},
			want:     env.Settings{ConnectTimeout: env.Off, ConnLifetime: env.Off, IdleConnTimeout: env.Off, MaxConnsPerHost: env.NoLimit, HeaderTimeout: env.Off},
		},
		{
			name:     "Off and NoLimit in defaults are inherited",
			defaults: env.Settings{ConnLifetime: env.Off, MaxConnsPerHost: env.NoLimit},
			want: env.Settings{
				ConnectTimeout:  15 * time.Second,
				ConnLifetime:    env.Off,
				IdleConnTimeout: 90 * time.Second,
				MaxConnsPerHost: env.NoLimit,
				HeaderTimeout:   100 * time.Second,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := env.Config{
				Defaults:      tt.defaults,
				SourceSchemas: map[string]env.SourceSchema{"products": {URL: url, Settings: tt.schema}},
			}
			got, ok := cfg.Effective("products")
			if !ok || core(got) != core(tt.want) {
				t.Errorf("Effective(products) = %+v, %v\nwant %+v, true", got, ok, tt.want)
			}
			// Defaults are applied where they are read, never written back.
			if core(cfg.Defaults) != core(tt.defaults) || core(cfg.SourceSchemas["products"].Settings) != core(tt.schema) {
				t.Errorf("Effective changed the Config: %+v", cfg)
			}
		})
	}
}

func TestEffectiveUnknownSchema(t *testing.T) {
	tests := []struct {
		name string
		cfg  env.Config
	}{
		{"zero Config", env.Config{}},
		{"other schema", env.Config{
			Defaults:      env.Settings{ConnectTimeout: time.Second},
			SourceSchemas: map[string]env.SourceSchema{"products": {URL: "http://products/graphql"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"reviews", "", "Products"} {
				if got, ok := tt.cfg.Effective(name); ok || core(got) != core((env.Settings{})) {
					t.Errorf("Effective(%q) = %+v, %v; want zero Settings, false", name, got, ok)
				}
			}
		})
	}
}

func TestEffectiveDefaults(t *testing.T) {
	tests := []struct {
		name     string
		defaults env.Settings
		want     env.Settings
	}{
		{"zero", env.Settings{}, builtinSettings},
		{"partial", env.Settings{IdleConnTimeout: env.Off, MaxConnsPerHost: 100}, env.Settings{
			ConnectTimeout:  15 * time.Second,
			ConnLifetime:    2 * time.Minute,
			IdleConnTimeout: env.Off,
			MaxConnsPerHost: 100,
			HeaderTimeout:   100 * time.Second,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := env.Config{
				Defaults: tt.defaults,
				// A schema's settings are not the shared transport's.
				SourceSchemas: map[string]env.SourceSchema{"products": {Settings: env.Settings{ConnectTimeout: time.Second}}},
			}
			if got := cfg.EffectiveDefaults(); core(got) != core(tt.want) {
				t.Errorf("EffectiveDefaults() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestEffectiveDefaultsSameForLoadedAndBuilt checks that a Config built by
// hand and one loaded from nothing resolve to equal settings, so that a
// component comparing them (the legacy path decides to rotate on a change)
// sees no change.
func TestEffectiveDefaultsSameForLoadedAndBuilt(t *testing.T) {
	loaded := mustLoad(t, env.Loader{}, writeConfig(t, "source_schemas:\n  products:\n    url: http://products/graphql\n"))
	built := env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: "http://products/graphql"}}}
	if l, b := loaded.EffectiveDefaults(), built.EffectiveDefaults(); core(l) != core(b) {
		t.Errorf("EffectiveDefaults: loaded %+v, built %+v; want equal", l, b)
	}
	l, _ := loaded.Effective("products")
	b, _ := built.Effective("products")
	if core(l) != core(b) {
		t.Errorf("Effective(products): loaded %+v, built %+v; want equal", l, b)
	}
}

func TestEffectiveLegacy(t *testing.T) {
	tests := []struct {
		name     string
		lifetime time.Duration
		want     time.Duration
	}{
		{"zero: built-in 2m", 0, 2 * time.Minute},
		{"Off stays Off", env.Off, env.Off},
		{"set", 5 * time.Minute, 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := env.Config{Legacy: env.LegacySettings{HandlerLifetime: tt.lifetime}}
			if got := cfg.EffectiveLegacy().HandlerLifetime; got != tt.want {
				t.Errorf("EffectiveLegacy().HandlerLifetime = %v, want %v", got, tt.want)
			}
			if cfg.Legacy.HandlerLifetime != tt.lifetime {
				t.Errorf("EffectiveLegacy changed the Config: %v", cfg.Legacy.HandlerLifetime)
			}
		})
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		transport env.Path
		want      env.Path
	}{
		{"", env.PathLegacy},
		{env.PathLegacy, env.PathLegacy},
		{env.PathSockets, env.PathSockets},
	}
	for _, tt := range tests {
		t.Run(string(tt.transport), func(t *testing.T) {
			if got := (env.Config{Path: tt.transport}).EffectivePath(); got != tt.want {
				t.Errorf("Config{Path: %q}.EffectivePath() = %q, want %q", tt.transport, got, tt.want)
			}
		})
	}
}

// kv is a KeyError's Key and Value, as the tests compare them.
type kv struct {
	Key   string
	Value any
}

// validateCase is a row of the validator's table: TestValidate checks its
// message and key errors, TestValidateHidesSecrets plants secrets into it.
type validateCase struct {
	name    string
	cfg     env.Config
	wantErr string // empty: valid
	want    []kv
}

// validateCases is the validator's table of cases, valid and invalid.
func validateCases() []validateCase {
	products := func(s env.SourceSchema) map[string]env.SourceSchema {
		return map[string]env.SourceSchema{"products": s}
	}
	const url = "http://products/graphql"
	return append([]validateCase{
		{name: "zero Config"},
		{name: "full", cfg: env.Config{
			Path:           env.PathSockets,
			ForwardHeaders: []string{"Authorization", "X-Request-Id"},
			Defaults:       env.Settings{ConnectTimeout: env.Off, MaxConnsPerHost: env.NoLimit},
			SourceSchemas: map[string]env.SourceSchema{
				"products": {URL: url, ForwardHeaders: []string{"X-Tenant"}, Settings: env.Settings{MaxConnsPerHost: 4}},
				"reviews":  {URL: "https://reviews:8443/graphql"},
			},
			Legacy: env.LegacySettings{HandlerLifetime: env.Off},
		}},
		{
			name:    "unknown path",
			cfg:     env.Config{Path: "fast"},
			wantErr: `transport: invalid value "fast": want legacy, sockets or mixed`,
			want:    []kv{{"transport", "fast"}},
		},
		{
			// Config.Path holds a Path, not the switch's words.
			name:    "switch word as path",
			cfg:     env.Config{Path: "on"},
			wantErr: `transport: invalid value "on": want legacy, sockets or mixed`,
			want:    []kv{{"transport", "on"}},
		},
		{
			name:    "limit below NoLimit in defaults",
			cfg:     env.Config{Defaults: env.Settings{MaxConnsPerHost: -2}},
			wantErr: "defaults.max_conns_per_host: invalid limit -2: must not be negative (0 means no limit)",
			want:    []kv{{"defaults.max_conns_per_host", -2}},
		},
		{
			name:    "limit below NoLimit in a schema",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: url, Settings: env.Settings{MaxConnsPerHost: -5}})},
			wantErr: "source_schemas.products.max_conns_per_host: invalid limit -5: must not be negative (0 means no limit)",
			want:    []kv{{"source_schemas.products.max_conns_per_host", -5}},
		},
		{
			name:    "missing url",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{})},
			wantErr: "source_schemas.products.url: missing url: every source schema needs its GraphQL endpoint, for example http://127.0.0.1:4001/graphql",
			want:    []kv{{"source_schemas.products.url", ""}},
		},
		{
			name:    "relative url",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "/graphql"})},
			wantErr: `source_schemas.products.url: invalid url "/graphql": want scheme http or https`,
			want:    []kv{{"source_schemas.products.url", "/graphql"}},
		},
		{
			name:    "url without host",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "https:graphql"})},
			wantErr: `source_schemas.products.url: invalid url "https:graphql": no host`,
			want:    []kv{{"source_schemas.products.url", "https:graphql"}},
		},
		{
			name:    "empty schema name",
			cfg:     env.Config{SourceSchemas: map[string]env.SourceSchema{" ": {URL: url}}},
			wantErr: "source_schemas: a source schema needs a name",
			want:    []kv{{"source_schemas", " "}},
		},
		{
			name:    "invalid header names",
			cfg:     env.Config{ForwardHeaders: []string{"Authorization", "", "X Id"}},
			wantErr: "forward_headers[1]: invalid header name \"\"\nforward_headers[2]: invalid header name \"X Id\"",
			want:    []kv{{"forward_headers[1]", ""}, {"forward_headers[2]", "X Id"}},
		},
		// Secrets in the values: the message and the KeyError's Value
		// show them redacted (TestValidateHidesSecrets plants more into
		// every case).
		{
			name:    "url with a password, port out of range",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "http://svc:" + urlSecret + "@127.0.0.1:99999/graphql"})},
			wantErr: `source_schemas.products.url: invalid url "http://svc:xxxxx@127.0.0.1:99999/graphql": port 99999 is not between 1 and 65535`,
			want:    []kv{{"source_schemas.products.url", "http://svc:xxxxx@127.0.0.1:99999/graphql"}},
		},
		{
			name:    "url with a password that does not parse",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "http://svc:" + urlSecret + "@[::1"})},
			wantErr: `source_schemas.products.url: invalid url "http://xxxxx@[::1": parse "http://xxxxx@[::1": missing ']' in host`,
			want:    []kv{{"source_schemas.products.url", "http://xxxxx@[::1"}},
		},
		{
			name:    "url with a '/' in the password",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "http://svc:" + urlSecret + "/x@products/graphql"})},
			wantErr: `source_schemas.products.url: invalid url "http://xxxxx@products/graphql": parse "http://xxxxx@products/graphql": invalid port "xxxxx" after host`,
			want:    []kv{{"source_schemas.products.url", "http://xxxxx@products/graphql"}},
		},
		{
			name:    "url with a password and no //",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "svc:" + urlSecret + "@products/graphql"})},
			wantErr: `source_schemas.products.url: invalid url "xxxxx@products/graphql": want scheme http or https`,
			want:    []kv{{"source_schemas.products.url", "xxxxx@products/graphql"}},
		},
		{
			name:    "url with a password and another scheme",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "ftp://svc:" + urlSecret + "@products/graphql"})},
			wantErr: `source_schemas.products.url: invalid url "ftp://svc:xxxxx@products/graphql": want scheme http or https`,
			want:    []kv{{"source_schemas.products.url", "ftp://svc:xxxxx@products/graphql"}},
		},
		{
			name:    "h2c over https, url with a password",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: "https://svc:" + urlSecret + "@products/graphql", Settings: env.Settings{HTTPVersion: "h2c"}})},
			wantErr: `source_schemas.products.http_version: invalid value "h2c" for url https://svc:xxxxx@products/graphql: h2c is cleartext HTTP/2 and needs an http url (use "2" over https)`,
			want:    []kv{{"source_schemas.products.http_version", "h2c"}},
		},
		{
			name:    "proxy with a password and another scheme",
			cfg:     env.Config{Defaults: env.Settings{Proxy: "ftp://pu:" + proxySecret + "@proxy:21"}},
			wantErr: `defaults.proxy: invalid proxy "ftp://pu:xxxxx@proxy:21": want off, environment, or a URL with scheme http, https or socks5`,
			want:    []kv{{"defaults.proxy", "ftp://pu:xxxxx@proxy:21"}},
		},
		{
			name:    "proxy with a password that does not parse",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: url, Settings: env.Settings{Proxy: "http://pu:" + proxySecret + "@[::1"}})},
			wantErr: `source_schemas.products.proxy: invalid proxy "http://xxxxx@[::1": parse "http://xxxxx@[::1": missing ']' in host`,
			want:    []kv{{"source_schemas.products.proxy", "http://xxxxx@[::1"}},
		},
		{
			name:    "proxy with a password and no host",
			cfg:     env.Config{Defaults: env.Settings{Proxy: "http://pu:" + proxySecret + "@"}},
			wantErr: `defaults.proxy: invalid proxy "http://pu:xxxxx@": no host`,
			want:    []kv{{"defaults.proxy", "http://pu:xxxxx@"}},
		},
		{
			name:    "set value with CR LF in defaults",
			cfg:     env.Config{Defaults: env.Settings{Headers: env.HeaderSettings{Set: map[string]string{"Authorization": "Bearer " + setSecretDefaults + "\r\n"}}}},
			wantErr: `defaults.headers.set.Authorization: invalid header value [redacted]: control characters such as CR or LF are not allowed`,
			want:    []kv{{"defaults.headers.set.Authorization", "[redacted]"}},
		},
		{
			name:    "set name invalid in a schema",
			cfg:     env.Config{SourceSchemas: products(env.SourceSchema{URL: url, Settings: env.Settings{Headers: env.HeaderSettings{Set: map[string]string{"X Api Key": setSecretSchema}}}})},
			wantErr: `source_schemas.products.headers.set.X Api Key: invalid header name "X Api Key"`,
			want:    []kv{{"source_schemas.products.headers.set.X Api Key", "[redacted]"}},
		},
		{
			name: "every problem, schemas in name order",
			cfg: env.Config{
				Path:     "both",
				Defaults: env.Settings{MaxConnsPerHost: -9},
				SourceSchemas: map[string]env.SourceSchema{
					"reviews":  {URL: "ftp://reviews", ForwardHeaders: []string{"X\nY"}},
					"accounts": {Settings: env.Settings{MaxConnsPerHost: -3}},
				},
			},
			wantErr: strings.Join([]string{
				`transport: invalid value "both": want legacy, sockets or mixed`,
				"defaults.max_conns_per_host: invalid limit -9: must not be negative (0 means no limit)",
				"source_schemas.accounts.url: missing url: every source schema needs its GraphQL endpoint, for example http://127.0.0.1:4001/graphql",
				"source_schemas.accounts.max_conns_per_host: invalid limit -3: must not be negative (0 means no limit)",
				`source_schemas.reviews.url: invalid url "ftp://reviews": want scheme http or https`,
				`source_schemas.reviews.forward_headers[0]: invalid header name "X\nY"`,
			}, "\n"),
			want: []kv{
				{"transport", "both"},
				{"defaults.max_conns_per_host", -9},
				{"source_schemas.accounts.url", ""},
				{"source_schemas.accounts.max_conns_per_host", -3},
				{"source_schemas.reviews.url", "ftp://reviews"},
				{"source_schemas.reviews.forward_headers[0]", "X\nY"},
			},
		},
	}, cacheValidateCases()...)
}

func TestValidate(t *testing.T) {
	for _, tt := range validateCases() {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Validate() = %v\nwant %s", err, tt.wantErr)
			}
			var got []kv
			for _, ke := range keyErrors(err) {
				got = append(got, kv{ke.Key, ke.Value})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("key errors = %v, want %v", got, tt.want)
			}
			var ke *env.KeyError
			if !errors.As(err, &ke) || ke.Key != tt.want[0].Key {
				t.Errorf("errors.As finds %+v, want key %q", ke, tt.want[0].Key)
			}
		})
	}
}

func TestValidateURLCause(t *testing.T) {
	err := env.Config{SourceSchemas: map[string]env.SourceSchema{"products": {URL: "http://[::1"}}}.Validate()
	var ke *env.KeyError
	if !errors.As(err, &ke) || ke.Key != "source_schemas.products.url" {
		t.Fatalf("Validate() = %v, want a KeyError for source_schemas.products.url", err)
	}
	const want = `source_schemas.products.url: invalid url "http://[::1": parse "http://[::1": missing ']' in host`
	if err.Error() != want {
		t.Errorf("Validate() = %q, want %q", err, want)
	}
	if ke.Err == nil {
		t.Error("KeyError.Err = nil, want the url.Parse error")
	}
}

func TestKeyError(t *testing.T) {
	cause := errors.New("cause")
	ke := &env.KeyError{Key: "defaults.conn_lifetime", Value: "2x", Reason: `invalid duration "2x"`, Err: cause}
	if got, want := ke.Error(), `defaults.conn_lifetime: invalid duration "2x"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(ke, cause) {
		t.Error("errors.Is(KeyError, cause) = false, want true")
	}
	if got := (&env.KeyError{Key: "k", Reason: "r"}).Unwrap(); got != nil {
		t.Errorf("Unwrap() without cause = %v, want nil", got)
	}
}
