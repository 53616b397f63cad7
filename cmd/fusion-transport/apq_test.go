package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusiongo/transport/cmd/fusion-transport/internal/schemas"
)

// TestCompareAPQ: compare with persisted queries on, over the embedded
// schemas serving them, finds the built-in corpus identical on the paths:
// it compares answers, whatever each side sent (the first side to send a
// text by its hash is refused and resends it, the other finds it known).
func TestCompareAPQ(t *testing.T) {
	srv, err := schemas.Start(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var yaml strings.Builder
	yaml.WriteString("forward_headers: [Authorization, X-Request-Id]\ndefaults:\n  persisted_queries:\n    mode: apq\nsource_schemas:\n")
	for _, name := range schemas.Names {
		fmt.Fprintf(&yaml, "  %s:\n    url: %s\n", name, srv.URLs[name])
	}
	cfgFile := filepath.Join(t.TempDir(), "transport.yaml")
	if err := os.WriteFile(cfgFile, []byte(yaml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"compare", "-config", cfgFile, "-sides", "legacy,sockets:nethttp,sockets:h1"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if n := strings.Count(out.String(), "53 requests: 53 identical, 0 different"); n != 2 {
		t.Errorf("report (want both pairs identical):\n%s", out.String())
	}
	var byHash, notFound int
	for _, st := range srv.PersistedQueryStats() {
		byHash += st.ByHash
		notFound += st.NotFound
	}
	if byHash == 0 || notFound == 0 {
		t.Errorf("the schemas ran %d requests by hash and refused %d: want both, the first side's refused and the others' known", byHash, notFound)
	}
}
