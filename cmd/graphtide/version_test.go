package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion: the version and the Go it was built with, then the modules
// linked in: the command's own (cobra, franz-go, Prometheus' client), and
// not the benchmarks' baselines (Pebble and what it pulls in), which live
// in graphtide-bench.
func TestVersion(t *testing.T) {
	out, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	want := "graphtide version dev\nbuilt with " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\nmodules:\n"
	if !strings.HasPrefix(out, want) {
		t.Fatalf("version printed %q, want it to start with %q", out, want)
	}
	for _, m := range []string{"github.com/spf13/cobra", "github.com/twmb/franz-go", "github.com/prometheus/client_golang"} {
		if !strings.Contains(out, "\n  "+m+" v") {
			t.Errorf("version does not list %s:\n%s", m, out)
		}
	}
	for _, m := range []string{"github.com/cockroachdb/pebble", "github.com/getsentry/sentry-go"} {
		if strings.Contains(out, m) {
			t.Errorf("version lists %s:\n%s", m, out)
		}
	}
}

func TestVersionOverride(t *testing.T) {
	old := version
	version = "v9.9.9" // what -ldflags "-X main.version=v9.9.9" does
	t.Cleanup(func() { version = old })
	out, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if want := "graphtide version v9.9.9\n"; len(out) < len(want) || out[:len(want)] != want {
		t.Errorf("version printed %q, want it to start with %q", out, want)
	}
}

func TestVersionRejectsArgs(t *testing.T) {
	if _, _, err := execute(t, "version", "extra"); err == nil {
		t.Error("version accepted a positional argument")
	}
}
