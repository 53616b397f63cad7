package env_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
)

// TestDocsListEveryKey: docs/configuration.md has a table row for every
// setting key (setting.Keys) naming its defaults variable, and one for
// each key of the top-level redis and response_cache blocks naming its
// variable, so that a new key cannot go undocumented.
func TestDocsListEveryKey(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // key -> the table rows it starts
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			if key, _, ok := strings.Cut(rest, "` |"); ok {
				rows[key] = append(rows[key], line)
			}
		}
	}
	want := map[string]string{}
	for _, k := range setting.Keys() {
		want[k] = env.EnvVar("", k)
	}
	for _, k := range []string{"url", "key_prefix", "timeout", "pool_size", "tls.ca_file", "tls.cert_file", "tls.key_file"} {
		want["redis."+k] = "FUSION_REDIS__" + strings.ToUpper(strings.ReplaceAll(k, ".", "__"))
	}
	want["response_cache.invalidation_token"] = "FUSION_RESPONSE_CACHE__INVALIDATION_TOKEN"
	for key, variable := range want {
		if !slices.ContainsFunc(rows[key], func(row string) bool { return strings.Contains(row, "`"+variable+"`") }) {
			t.Errorf("docs/configuration.md has no table row for %s naming %s", key, variable)
		}
	}
}

// TestDocsFullExampleLoads: the full example of docs/configuration.md
// (the YAML block that starts "# gateway.yaml") loads with Load, as the
// docs say.
func TestDocsFullExampleLoads(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\n# gateway.yaml\n")
	example, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatal("docs/configuration.md has no ```yaml block starting # gateway.yaml")
	}
	cfg, err := env.Loader{}.Load(writeConfig(t, example))
	if err != nil {
		t.Fatalf("the full example does not load: %v", err)
	}
	if s, _ := cfg.Effective("products"); !s.ResponseCache.On() || cfg.Redis.URL == "" {
		t.Errorf("the full example's products cache %+v, redis %+v: want products cached on redis", s.ResponseCache, cfg.Redis)
	}
}
