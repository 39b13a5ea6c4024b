package graphtide_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// embedder is a program of another module: it embeds graphtide through the
// root package alone (internal/ is out of its reach), with a built-in and
// a user-defined analytic.
const embedder = `package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/graphtide/graphtide"
)

type edges struct {
	mu sync.Mutex
	n  int64
}

func (e *edges) Recompute(_ context.Context, g *graphtide.Graph) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n = g.Edges()
	return nil
}

func (e *edges) Update(ctx context.Context, g *graphtide.Graph, _ []graphtide.Change) (bool, error) {
	return false, e.Recompute(ctx, g)
}

func (e *edges) Result() any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func main() {
	db, err := graphtide.Open(os.Args[1], &graphtide.Options{InEdges: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Register(graphtide.Spec("type=wcc")); err != nil {
		log.Fatal(err)
	}
	if err := db.RegisterAnalytic("edges", &edges{}); err != nil {
		log.Fatal(err)
	}
	var b graphtide.Batch
	for _, k := range [][2]string{{"a", "b"}, {"b", "c"}, {"x", "y"}} {
		src, _ := db.VertexID(k[0])
		dst, _ := db.VertexID(k[1])
		b.Insert(src, dst, 1)
	}
	seq, err := db.Apply(&b)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"wcc", "edges"} {
		r, err := db.Wait(ctx, name, seq)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s at seq %d: %v\n", name, r.Seq, r.Summary)
	}
}
`

// TestAnotherModuleEmbedsGraphtide builds and runs embedder in a temporary
// module that requires this one (by a replace directive).
func TestAnotherModuleEmbedsGraphtide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go .*$`).Find(gomod)
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/embedder\n\n" + string(goLine) + "\n\nrequire github.com/graphtide/graphtide v0.0.0\n\nreplace github.com/graphtide/graphtide => " + root + "\n",
		"main.go": embedder,
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".", filepath.Join(t.TempDir(), "data"))
	cmd.Dir = mod
	// The modules come from the module cache this module's build filled
	// (or, missing there, from GOPROXY).
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run in another module: %v\n%s", err, out)
	}
	want := "edges at seq 1: 3"
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "wcc at seq 1: ") {
		t.Fatalf("the program printed:\n%s\nwant lines for wcc and %q", out, want)
	}
	t.Logf("%s", out)
}
