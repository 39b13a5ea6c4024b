package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/core"

	"github.com/graphtide/graphtide/internal/testref/volume"
)

// The crash test re-runs this test binary as a child that writes batches
// with background flush and compaction until it is killed with SIGKILL.
// Batch i is a pure function of i, and each batch records i+1 as its source
// position, so after a crash the parent can rebuild exactly what the last
// completed flush covered.

const (
	crashChildEnv = "GRAPHTIDE_ENGINE_CRASH_CHILD"
	// crashPauseEnv makes the child's flushes or compactions stop at a core
	// test point (gt_test_point), where the parent kills it.
	crashPauseEnv = "GRAPHTIDE_ENGINE_CRASH_PAUSE"
	// crashManifestEnv sets the child's MANIFEST rewrite bound (bytes).
	crashManifestEnv = "GRAPHTIDE_ENGINE_CRASH_MANIFEST_BYTES"
	// crashTellEnv makes the child write a line to stdout once its first
	// flush has returned (its first batches are durable).
	crashTellEnv = "GRAPHTIDE_ENGINE_CRASH_TELL"
)

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

// replayOf rebuilds the oracle after the first n batches of batch.
func replayOf(batch func(uint64) *Batch) func(n uint64) oracle {
	return func(n uint64) oracle {
		o := oracle{}
		for i := uint64(0); i < n; i++ {
			o.applyOps(batch(i).ops)
		}
		return o
	}
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
	if os.Getenv(crashAggregateEnv) != "" {
		aggregateCrashChild(dir)
		return
	}
	o, batch, compactEvery := crashOptions(), crashBatch, uint64(0)
	if os.Getenv(crashVdelEnv) != "" {
		o, batch, compactEvery = vdelCrashOptions(), vdelCrashBatch, vdelCompactEvery
	}
	if os.Getenv(crashEventsEnv) != "" {
		o, batch = eventsCrashOptions(), eventsCrashBatch
	}
	if p := os.Getenv(crashPauseEnv); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			os.Stderr.WriteString("child: bad " + crashPauseEnv + "\n")
			os.Exit(2)
		}
		o.testPauseAt = uint32(n)
	}
	if p := os.Getenv(crashManifestEnv); p != "" {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			os.Stderr.WriteString("child: bad " + crashManifestEnv + "\n")
			os.Exit(2)
		}
		o.testManifestRewriteBytes = n
	}
	s, err := Open(dir, o)
	if err != nil {
		os.Stderr.WriteString("child open: " + err.Error() + "\n")
		os.Exit(2)
	}
	pos := positionOf(&childTB{}, s)
	tell := os.Getenv(crashTellEnv) != ""
	for i := pos; ; i++ {
		if _, err := s.Apply(batch(i)); err != nil {
			os.Stderr.WriteString("child apply: " + err.Error() + "\n")
			os.Exit(2)
		}
		if compactEvery > 0 && i%compactEvery == compactEvery-1 {
			if err := s.CompactAll(); err != nil {
				os.Stderr.WriteString("child compact: " + err.Error() + "\n")
				os.Exit(2)
			}
		}
		if i%97 == 0 {
			if err := s.Flush(); err != nil {
				os.Stderr.WriteString("child flush: " + err.Error() + "\n")
				os.Exit(2)
			}
			if tell {
				os.Stdout.WriteString("durable\n")
				tell = false
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

// startCrashChild starts a crash child writing to dir, with extra
// environment settings.
func startCrashChild(t *testing.T, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), crashChildEnv+"="+dir), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestCrashRecovery(t *testing.T) {
	volume.Mark(t)
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	crashRounds(t, 4)
}

// TestCrashRecoveryWithManifestRewrites is TestCrashRecovery with a tiny
// MANIFEST rewrite bound: the child rewrites its MANIFEST every few flushes
// and compactions, so the kills land before, during and after rewrites.
func TestCrashRecoveryWithManifestRewrites(t *testing.T) {
	volume.Mark(t)
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	crashRounds(t, 6, crashManifestEnv+"=1")
}

// crashRounds kills a crash child (started with env) at random moments,
// rounds times, and checks each time that the store reopens to exactly what
// its recorded position covers.
func crashRounds(t *testing.T, rounds int, env ...string) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	var last uint64
	for round := 0; round < rounds; round++ {
		cmd := startCrashChild(t, dir, env...)
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
		checkSnapshot(t, sn, replayOf(crashBatch)(pos), true, nil)
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

// checkRecovered opens dir after a crash and checks it against the oracle
// of the batches its recorded position covers; it returns that position.
func checkRecovered(t *testing.T, dir string, last uint64) uint64 {
	t.Helper()
	s, pos := reopenChecked(t, dir, last, crashOptions(), replayOf(crashBatch), true)
	s.Close()
	return pos
}

// reopenChecked opens dir with o after a kill and checks that it holds
// exactly want(pos), where pos is its recorded position (never behind
// last), in-edges too when inEdges, and that every file verifies. It
// returns the open store (the caller closes it) and pos.
func reopenChecked(t *testing.T, dir string, last uint64, o *Options, want func(uint64) oracle, inEdges bool) (*Store, uint64) {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	ok := false
	defer func() {
		if !ok { // a check failed (t.Fatal runs this): the caller gets nothing to close
			s.Close()
		}
	}()
	pos := positionOf(t, s)
	if pos < last {
		t.Fatalf("recorded position went back from %d to %d", last, pos)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	checkSnapshot(t, sn, want(pos), inEdges, nil)
	if err := s.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	ok = true
	return s, pos
}

// TestCrashAtEveryManifestEditPoint kills the writer exactly where a flush
// or a compaction stops (its files durable and its edit not yet written,
// or its edit durable and its file set not yet installed) and checks that
// the store then holds exactly what its recorded position covers, that a
// check finds no problem (only leftovers the next open deletes), and that
// the open leaves nothing behind.
func TestCrashAtEveryManifestEditPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	points := []struct {
		point uint32
		name  string
		notes bool // the kill leaves files a read-write open deletes
	}{
		{core.TestFlushBeforeEdit, "flush before its edit", true},
		{core.TestFlushAfterEdit, "flush after its edit", false},
		{core.TestCompactBeforeEdit, "compaction before its edit", true},
		{core.TestCompactAfterEdit, "compaction after its edit", true},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			last := seedDurable(t, dir)
			for round := 0; round < 2; round++ {
				killAtTestPoint(t, dir, p.point, round)
				rep, err := Check(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Problems) > 0 {
					t.Fatalf("round %d: check after the kill: %v", round, rep.Problems)
				}
				if p.notes && len(rep.Notes) == 0 {
					t.Errorf("round %d: the kill left no file for the open to delete", round)
				}
				last = checkRecovered(t, dir, last)
				checkNothingLeft(t, dir, round)
			}
		})
	}
}

// TestCrashDuringManifestRewrite kills the writer at each step of a MANIFEST
// rewrite (gt_test_point GT_TEST_MANIFEST_*): half of MANIFEST.tmp written;
// MANIFEST.tmp whole but not yet renamed; renamed over MANIFEST. After each
// kill a check finds no problem (a MANIFEST.tmp left before the switch is a
// note: a leftover the next open deletes), the store reopens to exactly
// what its recorded position covers, and the open leaves nothing behind.
func TestCrashDuringManifestRewrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	points := []struct {
		point    uint32
		name     string
		tmp      bool   // the kill leaves MANIFEST.tmp
		tmpWhole bool   // ... holding a whole rewritten MANIFEST
		format   uint32 // the MANIFEST's format after the kill (0: either)
	}{
		{core.TestManifestPartial, "tmp half written", true, false, 0},
		{core.TestManifestBeforeSwitch, "tmp whole, not switched", true, true, 0},
		{core.TestManifestAfterSwitch, "switched", false, false, 3},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			last := seedDurable(t, dir)
			for round := 0; round < 3; round++ {
				killAtTestPoint(t, dir, p.point, round, crashManifestEnv+"=1")
				tmp := filepath.Join(dir, "MANIFEST.tmp")
				data, err := os.ReadFile(tmp)
				if p.tmp != (err == nil) {
					t.Fatalf("round %d: MANIFEST.tmp present %v, want %v (%v)", round, err == nil, p.tmp, err)
				}
				if p.tmpWhole && (len(data) < 16 || string(data[:8]) != "GTMANI02" || binary.LittleEndian.Uint32(data[8:]) != 3) {
					t.Fatalf("round %d: MANIFEST.tmp is not a whole format-3 MANIFEST (%d bytes)", round, len(data))
				}
				if !p.tmpWhole && p.tmp && len(data) == 0 {
					t.Fatalf("round %d: MANIFEST.tmp is empty", round)
				}
				m, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
				if err != nil || len(m) < 16 {
					t.Fatalf("round %d: MANIFEST: %v (%d bytes)", round, err, len(m))
				}
				if f := binary.LittleEndian.Uint32(m[8:]); p.format != 0 && f != p.format {
					t.Fatalf("round %d: MANIFEST format %d, want %d", round, f, p.format)
				}
				rep, err := Check(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Problems) > 0 {
					t.Fatalf("round %d: check after the kill: %v", round, rep.Problems)
				}
				noted := false
				for _, n := range rep.Notes {
					noted = noted || (n.File == tmp && n.Kind == Leftover)
				}
				if noted != p.tmp {
					t.Fatalf("round %d: check notes MANIFEST.tmp %v, want %v: %v", round, noted, p.tmp, rep.Notes)
				}
				last = checkRecovered(t, dir, last)
				checkNothingLeft(t, dir, round)
				if _, err := os.Stat(tmp); err == nil {
					t.Fatalf("round %d: the open left MANIFEST.tmp", round)
				}
			}
		})
	}
}

// killAtTestPoint starts a crash child with env that pauses at the core's
// test point, waits until it is there (its PAUSED-<point> mark) and kills
// it with SIGKILL; round names the attempt in a failure.
func killAtTestPoint(t *testing.T, dir string, point uint32, round int, env ...string) {
	t.Helper()
	cmd := startCrashChild(t, dir, append([]string{fmt.Sprintf("%s=%d", crashPauseEnv, point)}, env...)...)
	mark := filepath.Join(dir, fmt.Sprintf("PAUSED-%d", point))
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the child never reached test point %d", round, point)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
}

// seedDurable gives dir some durable data, from a crash child killed at a
// random moment after its first flush returned, and returns the recorded
// position it reopens to. (It waits for the flush rather than a fixed
// time: a child that starts slowly, on a loaded machine, may not have
// flushed within any fixed time.)
func seedDurable(t *testing.T, dir string) uint64 {
	t.Helper()
	cmd := startCrashChildSaying(t, dir, crashTellEnv, "durable", "the crash child ended before its first flush returned")
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	last := checkRecovered(t, dir, 0)
	if last == 0 {
		t.Fatal("no batch was made durable before the test points")
	}
	return last
}

// startCrashChildSaying starts this test binary as a crash child on dir
// with env set to 1, and returns once it has printed want (a line), failing
// with what (and what it printed) if it prints anything else or ends.
func startCrashChildSaying(t *testing.T, dir, env, want, what string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, env+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != want+"\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%s: %q, %v", what, line, err)
	}
	return cmd
}

// checkNothingLeft wants a check of dir, after a read-write open, to find
// neither a problem nor a leftover.
func checkNothingLeft(t *testing.T, dir string, round int) {
	t.Helper()
	rep, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems)+len(rep.Notes) > 0 {
		t.Fatalf("round %d: after the open: problems %v, notes %v", round, rep.Problems, rep.Notes)
	}
}
