package leakcheck

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

type handle struct{ _ [16]byte }

// TestWatchPanicsOnLeak runs a leak in a child process (the panic of a
// finalizer ends the process) and checks what it says; a released handle
// that becomes unreachable says nothing.
func TestWatchPanicsOnLeak(t *testing.T) {
	if !Enabled {
		t.Skip("leakcheck checks only in race builds (go test -race)")
	}
	if mode := os.Getenv("LEAKCHECK_CHILD"); mode != "" {
		open := mode == "leak"
		Watch(&handle{}, "test handle", func() bool { return open })
		for range 20 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
	for _, mode := range []string{"leak", "released"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWatchPanicsOnLeak$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LEAKCHECK_CHILD="+mode)
		out, err := cmd.CombinedOutput()
		leaked := strings.Contains(string(out), "leakcheck: a test handle was dropped without being released; it was created at") &&
			strings.Contains(string(out), "TestWatchPanicsOnLeak")
		switch {
		case mode == "leak" && (err == nil || !leaked):
			t.Errorf("a leaked handle: err %v, output:\n%s", err, out)
		case mode == "released" && (err != nil || leaked):
			t.Errorf("a released handle: err %v, output:\n%s", err, out)
		}
	}
}
