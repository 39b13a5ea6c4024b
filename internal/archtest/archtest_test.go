// Package archtest checks the layering docs/architecture.md states, so that
// the toolchain, not review, keeps it: which package may import which.
package archtest

import (
	"encoding/json"
	"errors"
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
var tools = []string{"internal/bench", "internal/gen", "internal/genkafka", "internal/staticcsr", "internal/testref",
	"internal/metrics/metricstest", "internal/archtest", "internal/doctest", "internal/memdir", "test"}

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
			// Production packages do not depend on tools. The command may
			// run benchmarks and generators (bench, gen): those are its
			// subcommands; tools may use each other.
			if under(l, tools...) && !under(path, tools...) && !(path == "cmd/graphtide" && !under(l, "internal/testref", "internal/metrics/metricstest", "internal/archtest", "test")) {
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
	for _, want := range []string{"", "internal/engine", "internal/views", "internal/core", "cmd/graphtide", "internal/bench/analyticsbench"} {
		if _, ok := pkgs[want]; !ok {
			t.Errorf("package %s not found: the layering rules are out of date", want)
		}
	}
	if !slices.Contains(pkgs["internal/engine"].Imports, module+"/internal/core") {
		t.Error("internal/engine does not import the core: the layering rules are out of date")
	}
}
