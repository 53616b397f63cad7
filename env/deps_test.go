package env_test

// Reading configuration links no implementation: package env depends on
// no package of this module but its leaves (internal/defaults,
// internal/redact, internal/setting), so that a command that only loads a
// file links neither the middleware (retryablehttp, oauth2,
// klauspost/compress, x/time) nor a backend.

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fusiongo/transport"

// envLeaves are the packages of this module that env may import: each
// imports nothing of the module itself.
var envLeaves = []string{module + "/internal/defaults", module + "/internal/redact", module + "/internal/setting"}

// TestEnvDependsOnLeavesOnly: go list -deps of package env holds, of this
// module, env itself and envLeaves, and each leaf depends on no package of
// the module; it skips on a machine without a go tool.
func TestEnvDependsOnLeavesOnly(t *testing.T) {
	tool, err := exec.LookPath("go")
	if err != nil {
		tool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if _, err := os.Stat(tool); err != nil {
		t.Skipf("no go tool: %v", err)
	}
	out, err := exec.Command(tool, "list", "-deps", "-f", `{{.ImportPath}} {{join .Deps " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := fields[0]
		if pkg != module+"/env" && !slices.Contains(envLeaves, pkg) {
			if strings.HasPrefix(pkg, module+"/") {
				t.Errorf("package env depends on %s; want only its leaves %v", pkg, envLeaves)
			}
			continue
		}
		seen++
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, module+"/") && pkg != module+"/env" {
				t.Errorf("leaf %s of package env depends on %s", pkg, dep)
			}
		}
	}
	if seen == 0 {
		t.Fatalf("go list -deps printed no package env:\n%s", out)
	}
}
