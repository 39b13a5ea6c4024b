package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBenchRunsTheBenchmarkBinary: `graphtide bench ARGS` replaces itself
// with graphtide-bench ARGS (every argument, flags and --help included),
// found on PATH when it is not beside the running executable; without it,
// the error says how to build it.
func TestBenchRunsTheBenchmarkBinary(t *testing.T) {
	var gotPath string
	var gotArgv []string
	orig := execBench
	t.Cleanup(func() { execBench = orig })
	execBench = func(path string, argv, _ []string) error {
		gotPath, gotArgv = path, argv
		return nil
	}

	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if _, _, err := execute(t, "bench", "ingest", "--scale", "4"); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("without graphtide-bench: %v", err)
	}
	fake := filepath.Join(dir, "graphtide-bench")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ingest", "--scale", "4", "--dir", "/tmp/x"}, {"dgs", "--help"}, {}} {
		gotPath, gotArgv = "", nil
		if _, _, err := execute(t, append([]string{"bench"}, args...)...); err != nil {
			t.Fatal(err)
		}
		if want := append([]string{"graphtide-bench"}, args...); gotPath != fake || !slices.Equal(gotArgv, want) {
			t.Errorf("bench %q ran %s %q; want %s %q", args, gotPath, gotArgv, fake, want)
		}
	}
}
