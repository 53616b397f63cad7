package transport_test

// The layout's rule (docs/design.md, "The layout"): no library package
// depends on test support or on the command's machinery. And two house
// rules (issue 31): no library function is longer than 80 lines, and a
// type's methods share one receiver name.

import (
	"go/ast"
	"go/parser"
	"go/token"
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

// maxFuncLines is the longest a library function may be, from its func
// line to its closing brace.
const maxFuncLines = 80

// libraryFiles parses the non-test Go files of every library package
// (all but the command and test support; files of every platform), and
// returns them with their file set.
func libraryFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	out := goList(t, "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \"\\t\"}}\t{{join .IgnoredGoFiles \"\\t\"}}", "./...")
	fset := token.NewFileSet()
	var files []*ast.File
	for line := range strings.Lines(out) {
		fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if toolOnly(fields[0]) {
			continue
		}
		for _, name := range fields[2:] {
			if name == "" || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(fields[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	if len(files) < 50 {
		t.Fatalf("found %d library files in go list's output; want the whole library:\n%s", len(files), out)
	}
	return fset, files
}

// TestFunctionLength: no library function is longer than maxFuncLines;
// a longer one is split into named helpers.
func TestFunctionLength(t *testing.T) {
	fset, files := libraryFiles(t)
	for _, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, want at most %d: split it into helpers", start.Filename, start.Line, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

// TestReceiverNames: the methods of each library type share one receiver
// name (an unnamed receiver aside).
func TestReceiverNames(t *testing.T) {
	fset, files := libraryFiles(t)
	type typeKey struct{ dir, name string }
	first := map[typeKey]string{} // the receiver name seen first, with where
	for _, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List[0].Names) == 0 || fd.Recv.List[0].Names[0].Name == "_" {
				continue
			}
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			switch x := typ.(type) {
			case *ast.IndexExpr:
				typ = x.X
			case *ast.IndexListExpr:
				typ = x.X
			}
			ident, ok := typ.(*ast.Ident)
			if !ok {
				continue
			}
			pos := fset.Position(fd.Pos())
			k := typeKey{filepath.Dir(pos.Filename), ident.Name}
			name := fd.Recv.List[0].Names[0].Name
			seen, ok := first[k]
			if !ok {
				first[k] = name + " (" + filepath.Base(pos.Filename) + ")"
				continue
			}
			if want, _, _ := strings.Cut(seen, " "); name != want {
				t.Errorf("%s:%d: method %s of %s has receiver %s; other methods use %s", pos.Filename, pos.Line, fd.Name.Name, ident.Name, name, seen)
			}
		}
	}
}
