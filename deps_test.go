package transport_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoHarnessDependency: importing package transport links neither the
// differential harness (package compare) nor go-cmp; shadow mode compares
// through shadow.Comparer. It asks the go tool, and skips without one.
func TestNoHarnessDependency(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(gotool, "list", "-deps", "github.com/fusiongo/transport").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "go-cmp") || pkg == "github.com/fusiongo/transport/compare" {
			t.Errorf("package transport depends on %s", pkg)
		}
	}
}
