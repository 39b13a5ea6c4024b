package doctest

import (
	"strings"
	"testing"
)

const exampleFile = `package graphtide_test

import "fmt"

func helper() {
	db := open()
}

// TestOpen is a test, not example code.
func TestOpen(t *testing.T) {
	db := mustOpen(t)
}

// ExampleOpen opens a store.
func ExampleOpen() {
	db, err := graphtide.Open(dir, nil)
	if err != nil {
		panic(err)
	}

	defer db.Close()
	fmt.Println("ok")
	// Output: ok
}
`

func TestCheckGoBlock(t *testing.T) {
	exs, err := Examples("x_test.go", exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 1 || exs[0].Name != "ExampleOpen" || exs[0].Internal {
		t.Fatalf("examples %+v, want the file's, named by ExampleOpen", exs)
	}
	if none, err := Examples("y_test.go", "package x\n\nfunc TestX(t *testing.T) {\n\tdb := open()\n}\n"); err != nil || none != nil {
		t.Errorf("a file without Example functions: %v %v, want none", none, err)
	}
	for _, tc := range []struct {
		block []string
		want  string // "" or a part of the message
	}{
		{[]string{"db, err := graphtide.Open(dir, nil)", "if err != nil {", "    panic(err)", "}", "", "", "defer db.Close()"}, ""},
		{[]string{"func ExampleOpen() {", "\tdb, err := graphtide.Open(dir, nil)"}, ""},
		{[]string{"fmt.Println(\"ok\")", "// Output: ok", "}"}, ""},
		{[]string{"func helper() {", "db := open()", "}"}, ""}, // what the Examples use
		{[]string{"db := mustOpen(t)"}, "in no example file"},  // in a test
		{[]string{"db, err := graphtide.Open(dir, nil)", "defer db.Close()"}, "x_test.go has its first 1 lines, then \"if err != nil {\""},
		{[]string{"defer db.Close() // closes"}, "in no example file"}, // a comment differs
		{[]string{"", "  "}, "empty"},
	} {
		msg := CheckGoBlock(tc.block, exs)
		if tc.want == "" && msg != "" || tc.want != "" && !strings.Contains(msg, tc.want) {
			t.Errorf("CheckGoBlock(%q) = %q, want %q", tc.block, msg, tc.want)
		}
	}
	for file, src := range map[string]string{
		"internal/views/x_test.go": "package views_test\n\nfunc ExampleViews() {\n\tv := views.New()\n}\n",
		"x_test.go":                "package graphtide_test\n\nimport \"github.com/graphtide/graphtide/internal/engine\"\n\nfunc ExampleEngine() {\n\tv := views.New()\n}\n",
	} {
		internal, err := Examples(file, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(internal) != 1 || !internal[0].Internal {
			t.Fatalf("%s: %+v, want one Internal example", file, internal)
		}
		msg := CheckGoBlock([]string{"v := views.New()"}, append(exs, internal...))
		if !strings.Contains(msg, "it is code of "+file+", which uses internal packages another module cannot import") {
			t.Errorf("a block of an example of %s: %q", file, msg)
		}
	}
	if _, err := Examples("bad_test.go", "package x\nfunc {"); err == nil {
		t.Error("a file that does not parse was accepted")
	}
}
