package doctest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strconv"
	"strings"
)

// Example is the example code of a _test.go file that has Example
// functions: the file without its Test, Benchmark and Fuzz functions (so
// its Examples and what they use: helpers, types, methods). go test
// compiles all of it and runs the Examples, checking their output.
type Example struct {
	File  string
	Name  string   // its first Example function, for messages
	Lines []string // normalized (see normalize)
	// Internal: the file is in an internal directory or imports an
	// internal package, so another module cannot write the same code.
	Internal bool
}

// Examples returns the example code of a _test.go file's source: none if
// it has no Example function.
func Examples(file, src string) ([]Example, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	lines := splitLines(src)
	ex := Example{File: file, Internal: hasInternal(path.Dir(file))}
	for _, im := range f.Imports {
		if p, err := strconv.Unquote(im.Path.Value); err == nil && hasInternal(p) {
			ex.Internal = true
		}
	}
	drop := make([]bool, len(lines)) // the lines of tests, benchmarks and fuzz targets
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil {
			continue
		}
		name := fd.Name.Name
		switch {
		case strings.HasPrefix(name, "Example"):
			if ex.Name == "" {
				ex.Name = name
			}
		case strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Benchmark") || strings.HasPrefix(name, "Fuzz"):
			from := fset.Position(fd.Pos()).Line
			if fd.Doc != nil {
				from = fset.Position(fd.Doc.Pos()).Line
			}
			for l := from; l <= fset.Position(fd.End()).Line; l++ {
				drop[l-1] = true
			}
		}
	}
	if ex.Name == "" {
		return nil, nil
	}
	var kept []string
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, l)
		}
	}
	ex.Lines = normalize(kept)
	return []Example{ex}, nil
}

// hasInternal reports whether a path has an element "internal" (Go lets
// only the tree above it import it).
func hasInternal(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// normalize is what "verbatim, modulo indentation" compares: each line
// without its leading and trailing white space, blank lines left out.
func normalize(lines []string) []string {
	var out []string
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// CheckGoBlock returns "" if the lines of a go block appear, in order and
// contiguous (indentation and blank lines aside), in one of the examples
// that is not Internal; else why not: the internal example that holds it,
// or what is closest (the example that holds the longest prefix of the
// block and the first line that differs).
func CheckGoBlock(block []string, examples []Example) string {
	var public, internal []Example
	for _, ex := range examples {
		if ex.Internal {
			internal = append(internal, ex)
		} else {
			public = append(public, ex)
		}
	}
	msg := checkGoBlock(block, public)
	if msg == "" {
		return ""
	}
	for _, ex := range internal {
		if checkGoBlock(block, []Example{ex}) == "" {
			return fmt.Sprintf("it is code of %s, which uses internal packages another module cannot import: a page shows what a program of another module can write", ex.File)
		}
	}
	return msg
}

func checkGoBlock(block []string, examples []Example) string {
	want := normalize(block)
	if len(want) == 0 {
		return "the go block is empty"
	}
	best, bestEx, bestAt := -1, -1, 0
	for ei, ex := range examples {
		for i := range ex.Lines {
			n := 0
			for n < len(want) && i+n < len(ex.Lines) && ex.Lines[i+n] == want[n] {
				n++
			}
			if n == len(want) {
				return ""
			}
			if n > best {
				best, bestEx, bestAt = n, ei, i
			}
		}
	}
	if best <= 0 {
		return fmt.Sprintf("its first line %q is in no example file (a _test.go file with Example functions; a go block of the docs is its code, copied verbatim)", want[0])
	}
	ex := examples[bestEx]
	got := "(the end of the file)"
	if bestAt+best < len(ex.Lines) {
		got = fmt.Sprintf("%q", ex.Lines[bestAt+best])
	}
	return fmt.Sprintf("it is not the code of an example file: %s has its first %d lines, then %s where the block has %q",
		ex.File, best, got, want[best])
}
