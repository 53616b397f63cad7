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

// TestPublicAPINoInternalTypes: no exported name of a public package (the
// root, sockets, legacy, fault, env, middleware, ...) has an internal
// package's type in its signature, fields or definition, so that go doc
// shows every type a user meets and a user can name it (issue 31: the
// paths' public faces return no internal type; errors are fault's, not
// aliases of internal ones).
func TestPublicAPINoInternalTypes(t *testing.T) {
	out := goList(t, "-f", "{{.ImportPath}} {{.Dir}}", "./...")
	checked := 0
	for line := range strings.Lines(out) {
		pkg, dir, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.Contains(pkg, "/internal/") || toolOnly(pkg) {
			continue
		}
		checked++
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				for _, where := range internalTypesIn(f) {
					t.Errorf("%s: %s: %s", pkg, filepath.Base(name), where)
				}
			}
		}
	}
	if checked < 8 {
		t.Fatalf("checked %d public packages; the list is wrong", checked)
	}
}

// internalTypesIn returns the exported declarations of f whose types name
// a package under internal/.
func internalTypesIn(f *ast.File) []string {
	internal := map[string]bool{} // import name -> is internal
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		internal[name] = strings.Contains(path, "/internal/")
	}
	var found []string
	var check func(what string, e ast.Expr)
	check = func(what string, e ast.Expr) {
		if e == nil {
			return
		}
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.StructType:
				for _, fld := range n.Fields.List {
					if exportedField(fld) {
						check(what, fld.Type)
					}
				}
				return false
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && internal[id.Name] {
					found = append(found, what+" uses "+id.Name+"."+n.Sel.Name)
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
				check(d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						check(s.Name.Name, s.Type)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							check(n.Name, s.Type)
						}
					}
				}
			}
		}
	}
	return found
}

// exportedField reports whether a struct field (or embedded type) is
// visible to importers.
func exportedField(f *ast.Field) bool {
	if len(f.Names) == 0 {
		t := f.Type
		if st, ok := t.(*ast.StarExpr); ok {
			t = st.X
		}
		switch t := t.(type) {
		case *ast.Ident:
			return t.IsExported()
		case *ast.SelectorExpr:
			return t.Sel.IsExported()
		}
		return false
	}
	for _, n := range f.Names {
		if n.IsExported() {
			return true
		}
	}
	return false
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// TestCommandUsesNoPathInternals: the command and its machinery use the
// paths through their public packages (sockets, legacy, transport), never
// the backends under internal/ that the request path builds on: what the
// command shows of a path, a user's program can show too.
func TestCommandUsesNoPathInternals(t *testing.T) {
	out := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}}", "./cmd/...")
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			switch imp {
			case module + "/internal/sockets", module + "/internal/legacy", module + "/internal/backend":
				t.Errorf("%s imports %s", fields[0], imp)
			}
		}
	}
}
