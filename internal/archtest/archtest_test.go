// Package archtest checks the layering docs/architecture.md states, so that
// the toolchain, not review, keeps it: which package may import which.
package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/graphtide/graphtide"

// pkg is what `go list -json` says of one package (its production code:
// test files may import anything).
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func under(path string, prefixes ...string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// tools are the packages that exist for benchmarks, generators and test
// references: production code must not depend on them.
var tools = append([]string{"internal/bench", "internal/gen", "internal/genkafka", "internal/staticcsr", "cmd/graphtide-bench"}, testHelpers...)

// testHelpers are the packages only tests import: oracles, fixtures and
// harnesses. No other package may depend on one, directly or through
// another package, so that nothing of them reaches a binary.
var testHelpers = []string{"internal/testkit", "internal/testref", "internal/doctest", "internal/memdir", "internal/archtest", "test"}

// commandMayUse says whether the command at path may import the tool l:
// graphtide its generators, graphtide-bench the benchmarks and generators;
// neither a test package.
func commandMayUse(path, l string) bool {
	switch path {
	case "cmd/graphtide":
		return under(l, "internal/gen", "internal/genkafka")
	case "cmd/graphtide-bench":
		return under(l, "internal/bench", "internal/gen", "internal/genkafka", "internal/staticcsr")
	}
	return false
}

func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	local := func(imp string) (string, bool) {
		if !strings.HasPrefix(imp, module) {
			return "", false
		}
		return strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"), true
	}
	for path, p := range pkgs {
		for _, imp := range p.Imports {
			l, ok := local(imp)
			if !ok {
				continue
			}
			// Only the engine calls the C++ core.
			if l == "internal/core" && path != "internal/engine" {
				t.Errorf("%s imports the core package (internal/core): only internal/engine may", path)
			}
			// Production packages do not depend on tools. graphtide may
			// run generators (gen), graphtide-bench benchmarks: those are
			// their subcommands; tools may use each other.
			if under(l, tools...) && !under(path, tools...) && !commandMayUse(path, l) {
				t.Errorf("%s imports %s, a benchmark, generator or test package", path, l)
			}
		}
		// The engine and the views know nothing of Kafka, Prometheus or
		// HTTP: those are the ingest, metrics and api layers'.
		if under(path, "internal/engine", "internal/views") {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/twmb/franz-go") || strings.HasPrefix(d, "github.com/prometheus/") || d == "net/http" {
					t.Errorf("%s depends on %s", path, d)
				}
			}
		}
		// Only tests reach a test helper.
		if !under(path, testHelpers...) {
			for _, d := range p.Deps {
				if l, ok := local(d); ok && under(l, testHelpers...) {
					t.Errorf("%s depends on %s, a test helper: only tests may import it", path, l)
				}
			}
		}
		// The product binary does not link the benchmarks' baselines.
		if path == "cmd/graphtide" {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/cockroachdb/pebble") || strings.HasPrefix(d, "github.com/getsentry/") {
					t.Errorf("%s depends on %s, a baseline of the benchmarks (graphtide-bench's)", path, d)
				}
			}
		}
		// Nothing below cmd depends on cmd; the root package (the surface
		// other modules embed) is on top: nothing here depends on it, and
		// it does not pull in Kafka or Prometheus.
		for _, d := range p.Deps {
			if l, ok := local(d); ok && (under(l, "cmd") || l == "" && path != "") {
				t.Errorf("%s depends on %s", path, d)
			}
			if path == "" && (strings.HasPrefix(d, "github.com/twmb/franz-go") || strings.HasPrefix(d, "github.com/prometheus/")) {
				t.Errorf("the root package depends on %s", d)
			}
		}
	}
	// The rules check something: the packages they name exist.
	for _, want := range []string{"", "internal/engine", "internal/views", "internal/core", "cmd/graphtide", "cmd/graphtide-bench", "internal/bench/analyticsbench",
		"internal/testkit/metricstest", "internal/testkit/writestest", "internal/testref"} {
		if _, ok := pkgs[want]; !ok {
			t.Errorf("package %s not found: the layering rules are out of date", want)
		}
	}
	if !slices.Contains(pkgs["internal/engine"].Imports, module+"/internal/core") {
		t.Error("internal/engine does not import the core: the layering rules are out of date")
	}
	for _, e := range analyticsLayering(pkgs) {
		t.Error(e)
	}
}

// analyticsTree is internal/views/analytics by concern, from the bottom
// up: the static kernels, the incremental repairs, then the registry
// (with the built-in analytics and checkpoints) on top. Each may depend,
// directly or not, only on those before it: a kernel reaches neither
// incremental state nor the registry, a repair not the registry; and
// only the top writes or reads checkpoints (internal/checkpoint).
var analyticsTree = []string{
	"internal/views/analytics/kernels",
	"internal/views/analytics/repair",
	"internal/views/analytics",
}

// analyticsLayering returns what breaks analyticsTree's order in pkgs: a
// package that depends on one above it, a package of the tree the list
// does not rank, or one it ranks that does not exist.
func analyticsLayering(pkgs map[string]pkg) []string {
	var errs []string
	for i, low := range analyticsTree {
		p, ok := pkgs[low]
		if !ok {
			errs = append(errs, fmt.Sprintf("package %s not found: the analytics layering is out of date", low))
			continue
		}
		for _, high := range analyticsTree[i+1:] {
			if slices.Contains(p.Deps, module+"/"+high) {
				errs = append(errs, fmt.Sprintf("%s depends on %s, a layer above it", low, high))
			}
		}
		// Checkpoints are the top layer's: the layers below it neither
		// write nor read the checkpoint file (package views, under them,
		// saves the topology in it).
		if i < len(analyticsTree)-1 && slices.Contains(p.Imports, module+"/internal/checkpoint") {
			errs = append(errs, fmt.Sprintf("%s imports internal/checkpoint: checkpoints are the registry's", low))
		}
	}
	for path := range pkgs {
		if under(path, analyticsTree[len(analyticsTree)-1]) && !slices.Contains(analyticsTree, path) {
			errs = append(errs, fmt.Sprintf("%s is under internal/views/analytics but not in analyticsTree: give it its layer", path))
		}
	}
	slices.Sort(errs)
	return errs
}

// TestAnalyticsLayeringCatches: the analytics rule finds a kernel that
// depends on a repair, a repair that depends on the registry or imports
// the checkpoint file's package, a package of the tree it does not rank
// and a ranked one missing, and nothing in a tree in order (the registry
// on top imports it; the layers below reach it through package views).
func TestAnalyticsLayeringCatches(t *testing.T) {
	top := module + "/internal/views/analytics"
	good := map[string]pkg{
		"internal/views/analytics/kernels": {Deps: []string{module + "/internal/views", module + "/internal/checkpoint"}},
		"internal/views/analytics/repair":  {Deps: []string{module + "/internal/views", top + "/kernels", module + "/internal/checkpoint"}},
		"internal/views/analytics": {Deps: []string{module + "/internal/views", top + "/kernels", top + "/repair", module + "/internal/checkpoint"},
			Imports: []string{module + "/internal/checkpoint"}},
	}
	if errs := analyticsLayering(good); len(errs) > 0 {
		t.Errorf("a tree in order: %q", errs)
	}
	bad := map[string]pkg{
		"internal/views/analytics/kernels": {Deps: []string{top + "/repair"}},
		"internal/views/analytics/repair":  {Deps: []string{top + "/kernels", top}, Imports: []string{module + "/internal/checkpoint"}},
		"internal/views/analytics/extra":   {},
	}
	want := []string{
		"internal/views/analytics/extra is under internal/views/analytics but not in analyticsTree: give it its layer",
		"internal/views/analytics/kernels depends on internal/views/analytics/repair, a layer above it",
		"internal/views/analytics/repair depends on internal/views/analytics, a layer above it",
		"internal/views/analytics/repair imports internal/checkpoint: checkpoints are the registry's",
		"package internal/views/analytics not found: the analytics layering is out of date",
	}
	if errs := analyticsLayering(bad); !slices.Equal(errs, want) {
		t.Errorf("got %q\nwant %q", errs, want)
	}
}
