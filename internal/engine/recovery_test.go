package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The crash test re-runs this test binary as a child that writes batches
// with background flush and compaction until it is killed with SIGKILL.
// Batch i is a pure function of i, and each batch records i+1 as its source
// position, so after a crash the parent can rebuild exactly what the last
// completed flush covered.

const crashChildEnv = "GRAPHTIDE_ENGINE_CRASH_CHILD"

// crashBatch must not depend on the oracle: the batch stream has to be
// reproducible from the index alone.
func crashBatch(i uint64) *Batch {
	r := rand.New(rand.NewPCG(i, 4242))
	b := randomBatch(r, nil, 150, 300)
	var pos [8]byte
	binary.LittleEndian.PutUint64(pos[:], i+1)
	b.SetSourcePosition(pos[:])
	return b
}

func crashOptions() *Options {
	o := smallOptions(true)
	o.MemGraphBytes = 128 << 10
	return o
}

// replay rebuilds the oracle after n batches.
func replay(n uint64) oracle {
	o := oracle{}
	for i := uint64(0); i < n; i++ {
		o.applyOps(crashBatch(i).ops)
	}
	return o
}

func positionOf(t testing.TB, s *Store) uint64 {
	p, err := s.SourcePosition()
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		return 0
	}
	if len(p) != 8 {
		t.Fatalf("source position has %d bytes", len(p))
	}
	return binary.LittleEndian.Uint64(p)
}

// TestMain runs the crash child when asked to.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

func crashChild(dir string) {
	s, err := Open(dir, crashOptions())
	if err != nil {
		os.Stderr.WriteString("child open: " + err.Error() + "\n")
		os.Exit(2)
	}
	pos := positionOf(&childTB{}, s)
	for i := pos; ; i++ {
		if _, err := s.Apply(crashBatch(i)); err != nil {
			os.Stderr.WriteString("child apply: " + err.Error() + "\n")
			os.Exit(2)
		}
		if i%97 == 0 {
			if err := s.Flush(); err != nil {
				os.Stderr.WriteString("child flush: " + err.Error() + "\n")
				os.Exit(2)
			}
		}
	}
}

type childTB struct{ testing.TB }

func (childTB) Helper() {}
func (childTB) Fatal(args ...any) {
	os.Stderr.WriteString("child failed\n")
	os.Exit(2)
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	var last uint64
	for round := 0; round < 4; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(300+r.IntN(900)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("child exited on its own (%v) instead of being killed", err)
		}
		s, err := Open(dir, crashOptions())
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		pos := positionOf(t, s)
		if pos < last {
			t.Fatalf("round %d: recorded position went back from %d to %d", round, last, pos)
		}
		last = pos
		m, _ := s.Metrics()
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		checkSnapshot(t, sn, replay(pos), true, nil)
		sn.Release()
		if err := s.VerifyAll(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: recovered %d batches, seq %d, levels %+v", round, pos, m.LastSeq, m.Levels)
		s.Close()
	}
	if last == 0 {
		t.Fatal("no batch was ever made durable")
	}
}
