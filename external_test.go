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
// root package alone (internal/ is out of its reach), using what
// docs/embedding.md shows: built-in analytics registered by typed options
// and by a spec, a user-defined analytic, the summaries and per-vertex
// results read as named types, the alerts' fields, and typed errors
// (errors.As, errors.Is). That it compiles is half the test: a result of
// an internal type could not be named here.
const embedder = `package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

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
	db, err := graphtide.Open(os.Args[1], nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// Registered by typed options and by a spec.
	for _, a := range []graphtide.BuiltIn{
		graphtide.WCC{},
		graphtide.BFS{Name: "reach", RootKey: "a"},
		graphtide.FanIn{Name: "mules", Threshold: 1, Window: time.Minute},
		graphtide.Spec("type=fraud,name=rings,threshold=100,max_cycle=4"),
	} {
		if _, err := db.Register(a); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.RegisterAnalytic("edges", &edges{}); err != nil {
		log.Fatal(err)
	}
	var b graphtide.Batch
	for _, k := range [][2]string{{"a", "b"}, {"b", "c"}, {"x", "y"}, {"c", "a"}, {"x", "c"}} {
		src, _ := db.VertexID(k[0])
		dst, _ := db.VertexID(k[1])
		b.Insert(src, dst, 1)
	}
	seq, err := db.Apply(&b)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	results := map[string]graphtide.Result{}
	for _, name := range []string{"wcc", "reach", "mules", "rings", "edges"} {
		if results[name], err = db.Wait(ctx, name, seq); err != nil {
			log.Fatal(err)
		}
	}
	// The summaries, as named types.
	var (
		wcc   graphtide.WCCSummary     = results["wcc"].Summary.(graphtide.WCCSummary)
		reach graphtide.BFSSummary     = results["reach"].Summary.(graphtide.BFSSummary)
		mules graphtide.MonitorSummary = results["mules"].Summary.(graphtide.MonitorSummary)
		rings graphtide.FraudSummary   = results["rings"].Summary.(graphtide.FraudSummary)
	)
	fmt.Printf("wcc: %d components, the largest of %d\n", wcc.Components, wcc.Largest)
	fmt.Printf("reach from %s: %d vertices, levels %v\n", reach.RootKey, reach.Reached, reach.Levels)
	fmt.Printf("mules: %d above %v, the first %s with %v\n", mules.Above, mules.Threshold, mules.Top[0].Key, mules.Top[0].Value)
	fmt.Printf("rings: %d cycles\n", rings.Cycles)
	fmt.Printf("edges at seq %d: %v\n", results["edges"].Seq, results["edges"].Summary)
	c, _ := db.VertexID("c")
	level, _, err := db.VertexResult("reach", c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("level of c:", level.(graphtide.VertexLevel).Level)
	// The alerts' fields.
	for _, al := range db.Alerts("", 10) {
		var kind graphtide.AlertKind = al.Kind
		fmt.Printf("alert %s %s: %s %v (keys %v)\n", al.Analytic, kind, al.Key, al.Value, al.CycleKeys)
	}
	// A typed error.
	_, err = db.Register(graphtide.FanIn{Threshold: -1})
	var bad *graphtide.OptionError
	if !errors.As(err, &bad) || !errors.Is(err, graphtide.ErrInvalid) {
		log.Fatalf("an invalid threshold: %v", err)
	}
	fmt.Printf("refused: %s (field %s)\n", err, bad.Field)
	var refused *graphtide.PreconditionError
	a, _ := db.VertexID("a")
	b.Reset()
	b.Insert(a, c, 1)
	if _, err := db.ApplyIf(&b, graphtide.EdgeExists(a, c)); !errors.As(err, &refused) {
		log.Fatalf("a condition that fails: %v", err)
	}
	fmt.Printf("refused: %s: %s\n", refused.Condition, refused.Actual)
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
	// The program uses only what docs/embedding.md shows.
	page, err := os.ReadFile(filepath.Join(root, "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`graphtide\.(\w+)`).FindAllStringSubmatch(embedder, -1) {
		if !regexp.MustCompile(`\b` + m[1] + `\b`).Match(page) {
			t.Errorf("the program uses graphtide.%s, which docs/embedding.md does not show", m[1])
		}
	}
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
	// (or, missing there, from GOPROXY); -trimpath as make test's go
	// commands, so the build cache serves the core compiled before.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false -trimpath", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run in another module: %v\n%s", err, out)
	}
	// What the program must print: the oracle is the graph it builds, a -> b -> c -> a and x -> y, x -> c.
	for _, want := range []string{
		"wcc: 1 components, the largest of 5\n",
		"reach from a: 3 vertices, levels [1 1 1]\n",
		"mules: 1 above 1, the first c with 2\n",
		"rings: 1 cycles\n",
		"edges at seq 1: 5\n",
		"level of c: 2\n",
		"alert mules fan_in: c 2 (keys [])\n",
		"alert rings cycle: a 3 (keys [a b c])\n", // a timed ring (one batch, one time) from its first payment, a's
		"refused: analytic \"fanin\": threshold -1 is out of range: fanin needs one in (0, 1e+15] (field Threshold)\n",
		"refused: edge (\"a\", \"c\", type default) exists: it is absent\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the program printed:\n%s\nwant the line %q", out, want)
		}
	}
	t.Logf("%s", out)
}
