package transport_test

// The layout's rule (docs/design.md, "The layout"): no library package
// depends on test support or on the command's machinery.

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/fusiongo/transport"

// goTool returns the go tool's path: the one on PATH, else GOROOT's; it
// skips the test if there is none.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no go tool: %v", err)
	}
	return p
}

// goList runs the go tool's list in the module's root, or skips the test
// if the machine has no go tool.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(goTool(t), append([]string{"list"}, args...)...).Output()
	if err != nil {
		if _, ok := err.(*exec.Error); ok {
			t.Skipf("no go tool: %v", err)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// TestLayout: every package that a gateway may run (all but the command,
// its machinery and test support) depends on no package under
// internal/testsupport or cmd/, directly or not.
func TestLayout(t *testing.T) {
	out := goList(t, "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...")
	library := 0
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		pkg := fields[0]
		if toolOnly(pkg) {
			continue
		}
		library++
		for _, dep := range fields[1:] {
			if toolOnly(dep) {
				t.Errorf("library package %s depends on %s", pkg, dep)
			}
		}
	}
	if library < 10 {
		t.Fatalf("found %d library packages in go list's output; want the whole library:\n%s", library, out)
	}
}

// toolOnly reports whether pkg is the command, its machinery or test
// support.
func toolOnly(pkg string) bool {
	return strings.HasPrefix(pkg, module+"/cmd/") || strings.HasPrefix(pkg, module+"/internal/testsupport/")
}
