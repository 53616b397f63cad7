package transport_test

import (
	"strings"
	"testing"
)

// TestNoHarnessDependency: importing package transport links neither the
// differential harness (package compare) nor go-cmp; shadow mode compares
// through shadow.Comparer, and compare.ShadowComparer is the caller's
// choice. Nor does it link the OpenFeature SDK: the runtime rollout reads
// flags through transport.RolloutFlags, and package featureflag, which a
// gateway imports only if it uses OpenFeature, adapts the SDK's client.
// Like TestLayout it asks the go tool, and skips without one.
func TestNoHarnessDependency(t *testing.T) {
	for _, pkg := range strings.Fields(goList(t, "-deps", module)) {
		if strings.Contains(pkg, "go-cmp") || pkg == module+"/compare" || strings.Contains(pkg, "open-feature") || pkg == module+"/featureflag" {
			t.Errorf("package transport depends on %s", pkg)
		}
	}
}
