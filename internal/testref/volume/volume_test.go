package volume

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/testref/makevar"
)

// TestMarkedTestsRunWithoutRace: the Makefile's GO_TEST_VOLUME lists
// exactly the packages whose tests call Mark or Size, and
// GO_TEST_VOLUME_RUN exactly the tests that do (in their body, in a
// subtest's, or through a function of their package that calls it), so that make test's run
// without the race detector runs every marked test and nothing else.
func TestMarkedTestsRunWithoutRace(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var pkgs []string
	for _, p := range makevar.List(t, root, "GO_TEST_VOLUME") {
		pkgs = append(pkgs, strings.TrimPrefix(p, "./"))
	}
	run := makevar.List(t, root, "GO_TEST_VOLUME_RUN")

	byDir := map[string][]string{} // package dir -> its test files
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			dir, _ := filepath.Rel(root, filepath.Dir(path))
			if dir = filepath.ToSlash(dir); dir != "internal/testref/volume" {
				byDir[dir] = append(byDir[dir], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var marking, marked []string
	for dir, files := range byDir {
		tests := markedTests(t, files)
		if len(tests) > 0 {
			marking = append(marking, dir)
			marked = append(marked, tests...)
		}
	}
	slices.Sort(pkgs)
	slices.Sort(marking)
	slices.Sort(run)
	slices.Sort(marked)
	marked = slices.Compact(marked)
	if len(marked) == 0 {
		t.Fatal("no test calls volume.Mark: the walk found no test files?")
	}
	if !slices.Equal(pkgs, marking) {
		t.Errorf("GO_TEST_VOLUME lists %v; the packages with marked tests are %v", pkgs, marking)
	}
	if !slices.Equal(run, marked) {
		t.Errorf("GO_TEST_VOLUME_RUN lists %v; the marked tests are %v", run, marked)
	}
}

// markedTests parses one package's test files and returns its Test
// functions that call Mark or Size, directly or through one of the
// package's functions that does.
func markedTests(t *testing.T, files []string) []string {
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil {
				funcs[fn.Name.Name] = fn
			}
		}
	}
	calls := func(fn *ast.FuncDecl, want func(ast.Expr) bool) bool {
		found := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && want(c.Fun) {
				found = true
			}
			return !found
		})
		return found
	}
	isMark := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Mark" && sel.Sel.Name != "Size" {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == "volume"
	}
	helpers := map[string]bool{}
	for name, fn := range funcs {
		if !strings.HasPrefix(name, "Test") && calls(fn, isMark) {
			helpers[name] = true
		}
	}
	var out []string
	for name, fn := range funcs {
		if strings.HasPrefix(name, "Test") && name != "TestMain" && calls(fn, func(e ast.Expr) bool {
			id, ok := e.(*ast.Ident)
			return isMark(e) || ok && helpers[id.Name]
		}) {
			out = append(out, name)
		}
	}
	return out
}
