package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"-h"}, 0, []string{"compare", "schemas"}},
		{[]string{"nope"}, 2, []string{`unknown command "nope"`}},
		{[]string{"compare", "-h"}, 0, []string{"-config", "-corpus", "-concurrency", "-timeout", "1 when they did not"}},
		{[]string{"schemas", "-h"}, 0, []string{"-latency", "-cache-control"}},
		{[]string{"bench", "-h"}, 0, []string{"-cache", "sockets,sockets+cache", "each with +cache or not"}},
		{[]string{"gateway", "-h"}, 0, []string{"-cache", "-engine"}},
		{[]string{"load", "-h"}, 0, []string{"-users", "-distinct"}},
		{[]string{"compare", "-bogus"}, 2, []string{"flag provided but not defined"}},
		{[]string{"compare", "extra"}, 2, []string{"unexpected arguments"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errOut)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			all := out.String() + errOut.String()
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestCompareBuiltIn runs the README's first command in process.
func TestCompareBuiltIn(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"compare"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "53 requests: 53 identical, 0 different") {
		t.Errorf("report:\n%s", out.String())
	}
}

// TestCompareFindsDifference: a source schema that redirects makes the paths
// differ, and the command exits 1 with the explanation.
func TestCompareFindsDifference(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/graphql", http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":{"ok":true}}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "transport.yaml")
	os.WriteFile(cfgFile, []byte("source_schemas:\n  products:\n    url: "+srv.URL+"/old\n"), 0o600)
	corpusFile := filepath.Join(dir, "corpus.jsonl")
	os.WriteFile(corpusFile, []byte(`{"name":"products/ok","schema":"products","body":{"query":"{ ok }"}}`+"\n"), 0o600)

	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"compare", "-config", cfgFile, "-corpus", corpusFile}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "legacy followed a 307") || !strings.Contains(out.String(), "sockets returned the 307") {
		t.Errorf("report lacks the redirect explanation:\n%s", out.String())
	}
}

func TestCompareBadConfig(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(cfgFile, []byte("source_schemas:\n  products:\n    conn_lifetime: 2x\n"), 0o600)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"compare", "-config", cfgFile}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), `source_schemas.products.conn_lifetime: invalid duration "2x"`) {
		t.Errorf("stderr: %s", errOut.String())
	}
}

func TestConfigCommand(t *testing.T) {
	dir := t.TempDir()
	oldFile, newFile := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
	os.WriteFile(oldFile, []byte("defaults:\n  connect_timeout: 5s\nsource_schemas:\n  products:\n    url: http://127.0.0.1:4001/graphql\n    conn_lifetime: 30s\n  reviews:\n    url: http://127.0.0.1:4002/graphql\n  secure:\n    url: https://127.0.0.1:4004/graphql\n"), 0o600)
	os.WriteFile(newFile, []byte("defaults:\n  connect_timeout: 5s\nsource_schemas:\n  products:\n    url: http://127.0.0.1:4001/graphql\n    conn_lifetime: 60s\n  reviews:\n    url: http://127.0.0.1:4002/graphql\n    request_timeout: 3s\n  accounts:\n    url: http://127.0.0.1:4003/graphql\n"), 0o600)

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"config", oldFile}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"source schema products",
		"connect_timeout", "5s", "file " + oldFile + " (defaults)",
		"conn_lifetime", "30s", "built-in default",
		// h1, the default, cannot serve an https schema that may speak
		// HTTP/2: the command says which engine serves it instead.
		"source schema secure",
		"on the sockets path this schema uses engine nethttp: over https HTTP/2 is negotiated by ALPN",
		// The top-level redis and response_cache keys, defaults applied.
		"redis.url: (none)\nredis.key_prefix: fusion:\nredis.timeout: 100ms\nredis.pool_size: 0 (go-redis's default, 10 per CPU)\n",
		"response_cache.invalidation_token: (none: the invalidation handler refuses every request)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("config output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "on the sockets path this schema uses engine"); n != 1 {
		t.Errorf("%d engine lines, want 1 (only for the https schema):\n%s", n, out.String())
	}

	out.Reset()
	if code := run(context.Background(), []string{"config", "-diff", oldFile, newFile}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"added    accounts",
		"replaced products: changed conn_lifetime",
		"kept     reviews: warm connections stay; per-request settings change: request_timeout",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff output lacks %q:\n%s", want, out.String())
		}
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("source_schemas:\n  products:\n    url: http://p\n    http_version: \"3\"\n"), 0o600)
	errOut.Reset()
	if code := run(context.Background(), []string{"config", bad}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `source_schemas.products.http_version: invalid value "3": allowed 1.1, 2, h2c`) {
		t.Errorf("bad config: exit %d, stderr %s", code, errOut.String())
	}
}
