package graphtide

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
)

// TestSurfaceNamesOnlyItsOwnTypes reads the package's source as go doc
// does: no exported type is an alias (go doc shows an alias's target,
// whose fields another module cannot see), no exported function, method
// or field takes or returns a type of an internal package (another module
// cannot name it), no exported constant or variable is an internal one's
// (go doc would show its name, not its value), and every exported field
// of an exported struct has a comment (go doc shows it with its meaning).
func TestSurfaceNamesOnlyItsOwnTypes(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) < 3 {
		t.Fatalf("%d files of the package", len(files))
	}
	var problems []string
	bad := func(pos token.Pos, f string, a ...any) {
		p := fset.Position(pos)
		problems = append(problems, p.Filename+":"+strconv.Itoa(p.Line)+": "+fmt.Sprintf(f, a...))
	}
	for _, file := range files {
		internal := map[string]bool{} // the names of the file's imports of internal packages
		for _, im := range file.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if !strings.Contains(path, "/internal/") {
				continue
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			internal[name] = true
		}
		// leaks reports the internal types expr names.
		leaks := func(expr ast.Node) []string {
			var out []string
			ast.Inspect(expr, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
						out = append(out, id.Name+"."+sel.Sel.Name)
					}
				}
				return true
			})
			return out
		}
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Recv != nil && !exportedRecv(d.Recv) {
					continue
				}
				if l := leaks(d.Type); len(l) > 0 {
					bad(d.Pos(), "%s takes or returns %v", d.Name.Name, l)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok && vs.Names[0].IsExported() {
						for _, v := range vs.Values {
							if l := leaks(v); len(l) > 0 {
								bad(vs.Pos(), "%s is %v: go doc shows no value", vs.Names[0].Name, l)
							}
						}
						if vs.Type != nil {
							if l := leaks(vs.Type); len(l) > 0 {
								bad(vs.Pos(), "%s is of %v", vs.Names[0].Name, l)
							}
						}
						continue
					}
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					if ts.Assign.IsValid() {
						bad(ts.Pos(), "%s is an alias: go doc shows no fields of it", ts.Name.Name)
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						if it, ok := ts.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								if len(m.Names) > 0 && m.Names[0].IsExported() {
									if l := leaks(m.Type); len(l) > 0 {
										bad(m.Pos(), "%s.%s takes or returns %v", ts.Name.Name, m.Names[0].Name, l)
									}
								}
							}
						} else if l := leaks(ts.Type); len(l) > 0 {
							bad(ts.Pos(), "%s is made of %v", ts.Name.Name, l)
						}
						continue
					}
					for _, f := range st.Fields.List {
						if len(f.Names) == 0 || !f.Names[0].IsExported() {
							continue
						}
						if l := leaks(f.Type); len(l) > 0 {
							bad(f.Pos(), "%s.%s is of %v", ts.Name.Name, f.Names[0].Name, l)
						}
						if f.Doc == nil && f.Comment == nil {
							bad(f.Pos(), "%s.%s has no comment", ts.Name.Name, f.Names[0].Name)
						}
					}
				}
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(r *ast.FieldList) bool {
	e := r.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}

// TestVertexLimitsAreTheStores: the limits of a vertex record this
// package states (as numbers, so that go doc shows them) are the store's.
func TestVertexLimitsAreTheStores(t *testing.T) {
	if MaxVertexLabel != engine.MaxVertexLabel || MaxVertexProps != engine.MaxVertexProps {
		t.Errorf("MaxVertexLabel %d, MaxVertexProps %d; the store's: %d, %d", MaxVertexLabel, MaxVertexProps, engine.MaxVertexLabel, engine.MaxVertexProps)
	}
}
