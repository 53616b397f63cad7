package transport_test

import (
	"log/slog"
	"strings"
	"testing"

	transport "github.com/fusiongo/transport"
	"github.com/fusiongo/transport/env"
)

// The secrets a configuration holds, planted by TestConfigSecretsHidden:
// each is distinct, so that a failure says which kind leaked.
const (
	cfgURLSecret         = "s3cr3t-url-pw"
	cfgProxySecret       = "s3cr3t-proxy-pw"
	cfgSetSecretDefaults = "s3cr3t-set-default"
	cfgSetSecretSchema   = "s3cr3t-set-schema"
)

var cfgSecrets = []string{cfgURLSecret, cfgProxySecret, cfgSetSecretDefaults, cfgSetSecretSchema}

// secretConfig is a valid configuration for path with a secret in every
// place that holds one: the password of products' url, a proxy password
// and a headers.set value under defaults and in the schema. n tells two
// such configurations apart, for a reload that changes every secret.
func secretConfig(path env.Path, n string) env.Config {
	cfg := config(path, "products", "http://svc:"+cfgURLSecret+n+"@127.0.0.1:4001/graphql")
	cfg.Defaults.Proxy = "http://pu:" + cfgProxySecret + n + "@proxy.test:3128"
	cfg.Defaults.Headers.Set = map[string]string{"X-Api-Key": cfgSetSecretDefaults + n}
	s := cfg.SourceSchemas["products"]
	s.Proxy = "http://pu:" + cfgProxySecret + n + "@proxy.test:3129"
	s.Headers.Set = map[string]string{"Authorization": "Bearer " + cfgSetSecretSchema + n}
	cfg.SourceSchemas["products"] = s
	return cfg
}

// checkNoCfgSecret fails t if text holds a planted secret.
func checkNoCfgSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range cfgSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the planted secret %q:\n%s", what, s, text)
		}
	}
}

// TestConfigSecretsHidden breaks a configuration that holds secrets in
// each way that touches one, and hands it to New and to Reload on both
// paths: each error names the key, and neither the errors nor the
// invoker's log (at Debug, through New, the rejected reload and an
// accepted one) nor the line a gateway logs for the rejected reload holds
// a secret.
func TestConfigSecretsHidden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(cfg *env.Config)
		want  string // in the error
	}{
		{"url port out of range", func(cfg *env.Config) {
			setSchema(cfg, func(s *env.SourceSchema) { s.URL = "http://svc:" + cfgURLSecret + "@127.0.0.1:99999/graphql" })
		}, `source_schemas.products.url: invalid url "http://svc:xxxxx@127.0.0.1:99999/graphql": port 99999 is not between 1 and 65535`},
		{"url that does not parse", func(cfg *env.Config) {
			setSchema(cfg, func(s *env.SourceSchema) { s.URL = "http://svc:" + cfgURLSecret + "/x@127.0.0.1:4001/graphql" })
		}, `source_schemas.products.url: invalid url "http://xxxxx@127.0.0.1:4001/graphql": parse "http://xxxxx@127.0.0.1:4001/graphql": invalid port "xxxxx" after host`},
		{"proxy of another scheme", func(cfg *env.Config) {
			cfg.Defaults.Proxy = "ftp://pu:" + cfgProxySecret + "@proxy.test:21"
		}, `defaults.proxy: invalid proxy "ftp://pu:xxxxx@proxy.test:21": want off, environment, or a URL with scheme http, https or socks5`},
		{"proxy that does not parse", func(cfg *env.Config) {
			setSchema(cfg, func(s *env.SourceSchema) { s.Proxy = "http://pu:" + cfgProxySecret + "@[::1" })
		}, `source_schemas.products.proxy: invalid proxy "http://xxxxx@[::1": parse "http://xxxxx@[::1": missing ']' in host`},
		{"set value with CR LF", func(cfg *env.Config) {
			cfg.Defaults.Headers.Set = map[string]string{"X-Api-Key": cfgSetSecretDefaults + "\r\n"}
		}, `defaults.headers.set.X-Api-Key: invalid header value [redacted]: control characters such as CR or LF are not allowed`},
		{"set name invalid", func(cfg *env.Config) {
			setSchema(cfg, func(s *env.SourceSchema) { s.Headers.Set = map[string]string{"Api Key": cfgSetSecretSchema} })
		}, `source_schemas.products.headers.set.Api Key: invalid header name "Api Key"`},
	} {
		for _, path := range []env.Path{env.PathLegacy, env.PathSockets} {
			t.Run(tc.name+"/"+string(path), func(t *testing.T) {
				var buf logBuffer
				log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
				bad := secretConfig(path, "")
				tc.spoil(&bad)

				inv, err := transport.New(bad, transport.WithLookupEnv(noEnv), transport.WithLogger(log))
				if err == nil {
					inv.Close()
					t.Fatal("New accepted the broken configuration")
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("New error:\n%v\nwant it to contain:\n%s", err, tc.want)
				}
				checkNoCfgSecret(t, "New's error", err.Error())

				inv = newInvoker(t, secretConfig(path, ""), transport.WithLogger(log))
				err = inv.Reload(bad)
				if err == nil {
					t.Fatal("Reload accepted the broken configuration")
				}
				if want := "reload rejected, old configuration kept: "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Reload error:\n%v\nwant %q and:\n%s", err, want, tc.want)
				}
				checkNoCfgSecret(t, "Reload's error", err.Error())
				// Reload logs nothing when it rejects; the caller does, as
				// a gateway would.
				log.Error("configuration reload failed", "error", err)

				if err := inv.Reload(secretConfig(path, "-2")); err != nil {
					t.Fatalf("Reload of a valid configuration: %v", err)
				}
				logged := buf.String()
				if !strings.Contains(logged, "configuration reload failed") || !strings.Contains(logged, "transport reloaded") {
					t.Errorf("log lacks the reload lines:\n%s", logged)
				}
				checkNoCfgSecret(t, "the log", logged)
			})
		}
	}
}

// setSchema runs edit on cfg's products schema.
func setSchema(cfg *env.Config, edit func(*env.SourceSchema)) {
	s := cfg.SourceSchemas["products"]
	edit(&s)
	cfg.SourceSchemas["products"] = s
}
