package sibling

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeExec(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}

// TestFindPrefersTheSiblingThenPath: the executable beside the running
// one wins over one on PATH; a file there that is not executable is
// passed over; without either, the error names the place looked at and
// how to build it.
func TestFindPrefersTheSiblingThenPath(t *testing.T) {
	bin, other := t.TempDir(), t.TempDir()
	self := filepath.Join(bin, "graphtide")
	writeExec(t, self, 0o755)
	t.Setenv("PATH", other)

	if _, err := find(self, "graphtide-bench"); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(bin, "graphtide-bench")) || !strings.Contains(err.Error(), "make build") {
		t.Errorf("nothing anywhere: got %v", err)
	}

	writeExec(t, filepath.Join(bin, "graphtide-bench"), 0o644)
	writeExec(t, filepath.Join(other, "graphtide-bench"), 0o755)
	if got, err := find(self, "graphtide-bench"); err != nil || got != filepath.Join(other, "graphtide-bench") {
		t.Errorf("a sibling not executable, one on PATH: got %q, %v", got, err)
	}

	if err := os.Chmod(filepath.Join(bin, "graphtide-bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := find(self, "graphtide-bench"); err != nil || got != filepath.Join(bin, "graphtide-bench") {
		t.Errorf("a sibling and one on PATH: got %q, %v", got, err)
	}
}

// TestFindFollowsASymlinkedExecutable: graphtide run through a symlink
// (e.g. /usr/local/bin/graphtide -> checkout/bin/graphtide) finds the
// executable beside its target.
func TestFindFollowsASymlinkedExecutable(t *testing.T) {
	bin, links := t.TempDir(), t.TempDir()
	writeExec(t, filepath.Join(bin, "graphtide"), 0o755)
	writeExec(t, filepath.Join(bin, "graphtide-bench"), 0o755)
	link := filepath.Join(links, "graphtide")
	if err := os.Symlink(filepath.Join(bin, "graphtide"), link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	want, err := filepath.EvalSymlinks(filepath.Join(bin, "graphtide-bench"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := find(link, "graphtide-bench"); err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}
