package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/graphtide/graphtide/internal/core"
)

// TestVertexDeletePurgeModel drives a store whose batches delete vertices
// often and checks, against the oracle, that vertex deletes leave no scar:
// with no snapshot pinned, CompactAll leaves no vertex-delete record; a
// snapshot pinned before a delete keeps seeing the vertex's old edges across
// compactions until it is released; and a reopen after purges recovers the
// same graph (and, with background compaction off, the same record count).
func TestVertexDeletePurgeModel(t *testing.T) {
	for _, auto := range []bool{false, true} {
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run("", func(t *testing.T) { runVertexDeletePurge(t, seed, auto) })
		}
	}
}

func vertexDeletes(t *testing.T, s *Store) int64 {
	t.Helper()
	m, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	return m.VertexDeletes
}

func runVertexDeletePurge(t *testing.T, seed uint64, auto bool) {
	const nv = 200
	r := rand.New(rand.NewPCG(seed, 1212))
	dir := t.TempDir()
	opts := func() *Options {
		o := smallOptions(true)
		o.DisableAutoCompaction = !auto
		return o
	}
	s, err := Open(dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	want := oracle{}
	var pins []pinned
	purgedAll, keptForPin, reopened := 0, 0, 0
	checkPins := func() {
		t.Helper()
		for _, p := range pins {
			checkSnapshot(t, p.sn, p.want, true, nil)
		}
	}
	compactAll := func() {
		t.Helper()
		if err := s.CompactAll(); err != nil {
			t.Fatal(err)
		}
		checkPins()
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		checkSnapshot(t, sn, want, true, nil)
		sn.Release()
	}
	for step := 0; step < 160; step++ {
		b := randomBatch(r, want, nv, 40)
		for i := r.IntN(3); i > 0; i-- {
			b.DeleteVertex(r.Uint64N(nv))
		}
		if _, err := s.Apply(b); err != nil {
			t.Fatalf("step %d: apply: %v", step, err)
		}
		want.applyOps(b.ops)
		switch x := r.IntN(100); {
		case x < 10:
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		case x < 25 && len(pins) < 3:
			sn, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			pins = append(pins, pinned{sn, want.clone()})
		case x < 40 && len(pins) > 0:
			i := r.IntN(len(pins))
			checkSnapshot(t, pins[i].sn, pins[i].want, true, nil)
			pins[i].sn.Release()
			pins = append(pins[:i], pins[i+1:]...)
		case x < 52:
			compactAll()
			if n := vertexDeletes(t, s); len(pins) == 0 && n != 0 {
				t.Fatalf("step %d: %d vertex deletes left after CompactAll with no snapshot pinned", step, n)
			} else if n > 0 {
				keptForPin++
			} else {
				purgedAll++
			}
			// Deletes newer than a compacted level: scans copy the segments
			// they do not touch in bulk and filter the others.
			var dels Batch
			dels.DeleteVertex(r.Uint64N(nv))
			dels.DeleteVertex(r.Uint64N(nv))
			if _, err := s.Apply(&dels); err != nil {
				t.Fatal(err)
			}
			want.applyOps(dels.ops)
			sn, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			checkSnapshot(t, sn, want, true, nil)
			sn.Release()
		case x < 57:
			checkPins()
			for _, p := range pins {
				p.sn.Release()
			}
			pins = nil
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			before := vertexDeletes(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, opts()); err != nil {
				t.Fatalf("reopen: %v", err)
			}
			if n := vertexDeletes(t, s); n > before || (!auto && n != before) {
				t.Fatalf("step %d: %d vertex deletes after reopen, %d before", step, n, before)
			}
			compactAll()
			if n := vertexDeletes(t, s); n != 0 {
				t.Fatalf("step %d: %d vertex deletes left after reopen and CompactAll", step, n)
			}
			reopened++
		}
	}
	checkPins()
	for _, p := range pins {
		p.sn.Release()
	}
	pins = nil
	compactAll()
	if n := vertexDeletes(t, s); n != 0 {
		t.Fatalf("%d vertex deletes left after the final CompactAll", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, opts()); err != nil {
		t.Fatal(err)
	}
	if n := vertexDeletes(t, s); n != 0 {
		t.Fatalf("%d vertex deletes after reopening a purged store", n)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, sn, want, true, nil)
	sn.Release()
	t.Logf("seed %d auto=%v: full purges %d, kept for a pin %d, reopens %d", seed, auto, purgedAll, keptForPin, reopened)
	if purgedAll < 3 || keptForPin < 2 || reopened < 2 {
		t.Fatalf("too few purges (%d), pinned compactions (%d) or reopens (%d)", purgedAll, keptForPin, reopened)
	}
}

// The crash child in vertex-delete mode (crashVdelEnv): out-edges only,
// compaction only by CompactAll, which it runs every vdelCompactEvery
// batches, and batches that delete several vertices. Every CompactAll then
// is one L0->L1 compaction of every file, which purges every vertex delete
// (no snapshot is pinned), and the test points stop exactly that compaction.
const (
	crashVdelEnv     = "GRAPHTIDE_ENGINE_CRASH_VDEL"
	vdelCompactEvery = 120
)

func vdelCrashOptions() *Options {
	o := smallOptions(false)
	o.MemGraphBytes = 128 << 10
	o.DisableAutoCompaction = true
	return o
}

func vdelCrashBatch(i uint64) *Batch {
	b := crashBatch(i)
	r := rand.New(rand.NewPCG(i, 777))
	for k := 0; k < 3; k++ {
		b.DeleteVertex(r.Uint64N(150))
	}
	return b
}

// checkVdelRecovered opens dir after a kill, checks it holds exactly what
// its recorded position covers, and returns the position and the number of
// vertex-delete records recovered.
func checkVdelRecovered(t *testing.T, dir string, last uint64) (uint64, int64) {
	t.Helper()
	s, pos := reopenChecked(t, dir, last, vdelCrashOptions(), replayOf(vdelCrashBatch), false)
	defer s.Close()
	return pos, vertexDeletes(t, s)
}

// TestCrashAroundPurgingCompaction kills the writer where the compaction
// that purges vertex deletes stops (outputs durable and edit not written;
// edit durable and file set not installed): the reopened store holds
// exactly the recorded graph, recovers the purge when its edit is durable
// (no record left) and not otherwise, and a CompactAll after the reopen
// purges every record, for good.
func TestCrashAroundPurgingCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	for _, p := range []struct {
		point  uint32
		name   string
		purged bool // the purging edit is durable at the kill
	}{
		{core.TestCompactBeforeEdit, "before its edit", false},
		{core.TestCompactAfterEdit, "after its edit", true},
	} {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			var last uint64
			for round := 0; round < 2; round++ {
				killAtTestPoint(t, dir, p.point, round, crashVdelEnv+"=1")
				var n int64
				last, n = checkVdelRecovered(t, dir, last)
				if p.purged && n != 0 {
					t.Fatalf("round %d: %d vertex deletes recovered after the purging edit was durable", round, n)
				}
				if !p.purged && n == 0 {
					t.Fatalf("round %d: no vertex delete recovered before the purging edit", round)
				}
				// A CompactAll after the reopen purges what is left, for good.
				s, err := Open(dir, vdelCrashOptions())
				if err != nil {
					t.Fatal(err)
				}
				if err := s.CompactAll(); err != nil {
					t.Fatal(err)
				}
				if n := vertexDeletes(t, s); n != 0 {
					t.Fatalf("round %d: %d vertex deletes left after CompactAll", round, n)
				}
				s.Close()
				if _, n = checkVdelRecovered(t, dir, last); n != 0 {
					t.Fatalf("round %d: %d vertex deletes after reopening a purged store", round, n)
				}
			}
		})
	}
}
