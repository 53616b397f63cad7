package schemas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSDLCopiesForTheRealGateway: e2e/testdata/benchmark holds each
// schema's subgraph SDL as a file, the input of the composed router config
// the real-gateway bench runs (wgc composes files, not Go constants). A
// change to a schema here must reach those files, and the composition be
// made again (e2e/realgateway_bench_test.go says how): this test fails
// while they differ.
func TestSDLCopiesForTheRealGateway(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "e2e", "testdata", "benchmark")
	for name, sdl := range map[string]string{
		"accounts":  accountsSubgraphSDL,
		"inventory": inventorySubgraphSDL,
		"products":  productsSubgraphSDL,
		"reviews":   reviewsSubgraphSDL,
	} {
		b, err := os.ReadFile(filepath.Join(dir, name+".graphql"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := strings.TrimSpace(string(b)); got != strings.TrimSpace(sdl) {
			t.Errorf("e2e/testdata/benchmark/%s.graphql differs from the %s schema's subgraph SDL; copy it and compose again:\nfile:\n%s\nschema:\n%s", name, name, got, sdl)
		}
	}
}
