package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/leakcheck"
)

// TestDroppedSnapshotIsCaught: in race builds a snapshot dropped without
// Release fails the run with the stack that took it; one released does
// not. The store runs in a child process, since
// the finalizer's panic ends the process.
func TestDroppedSnapshotIsCaught(t *testing.T) {
	if !leakcheck.Enabled {
		t.Skip("snapshots are watched only in race builds (go test -race)")
	}
	if mode := os.Getenv("GT_LEAK_CHILD"); mode != "" {
		s, err := Open(filepath.Join(os.Getenv("GT_LEAK_DIR"), mode), nil)
		if err != nil {
			t.Fatal(err)
		}
		func() { // the snapshot is unreachable once this returns
			sn, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if mode == "released" {
				sn.Release()
			}
		}()
		for range 20 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
	dir := t.TempDir()
	for _, mode := range []string{"leak", "released"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDroppedSnapshotIsCaught$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GT_LEAK_CHILD="+mode, "GT_LEAK_DIR="+dir)
		out, err := cmd.CombinedOutput()
		caught := strings.Contains(string(out), "leakcheck: a store snapshot was dropped without being released") &&
			strings.Contains(string(out), "TestDroppedSnapshotIsCaught")
		if (mode == "leak") != (err != nil && caught) {
			t.Errorf("%s snapshot: err %v, output:\n%s", mode, err, out)
		}
	}
}
