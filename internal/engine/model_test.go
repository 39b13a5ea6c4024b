package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/memdir"
	"github.com/graphtide/graphtide/internal/testref/volume"
)

// smallOptions make flushes and compactions happen every few batches.
func smallOptions(inEdges bool) *Options {
	return &Options{
		MemGraphBytes:       64 << 10,
		TargetSegmentBytes:  16 << 10,
		SizeRatio:           3,
		L0CompactionTrigger: 2,
		MaxLevels:           4,
		InEdges:             inEdges,
	}
}

// randomBatch draws a batch over a small vertex space so that updates,
// deletes of existing edges and vertex deletes all hit live data.
func randomBatch(r *rand.Rand, o oracle, nv uint64, maxOps int) *Batch {
	var b Batch
	n := 1 + r.IntN(maxOps)
	keys := make([]edgeKey, 0, 16)
	for k := range o {
		keys = append(keys, k)
		if len(keys) == 16 {
			break
		}
	}
	for i := 0; i < n; i++ {
		switch x := r.IntN(100); {
		case x < 70:
			b.InsertWeighted(r.Uint64N(nv), r.Uint64N(nv), float64(r.IntN(4))+0.5)
		case x < 78 && len(keys) > 0:
			k := keys[r.IntN(len(keys))]
			b.InsertWeighted(k[0], k[1], float64(r.IntN(100))) // update
		case x < 93:
			if len(keys) > 0 && r.IntN(2) == 0 {
				k := keys[r.IntN(len(keys))]
				b.DeleteEdge(k[0], k[1])
			} else {
				b.DeleteEdge(r.Uint64N(nv), r.Uint64N(nv))
			}
		case x < 95:
			b.DeleteVertex(r.Uint64N(nv))
		default:
			// Same edge twice in one batch: the later op must win.
			s, d := r.Uint64N(nv), r.Uint64N(nv)
			b.InsertWeighted(s, d, 7)
			if r.IntN(2) == 0 {
				b.DeleteEdge(s, d)
			} else {
				b.InsertWeighted(s, d, 9)
			}
		}
	}
	return &b
}

type pinned struct {
	sn   *Snapshot
	want oracle
}

// TestModelRandomized drives the store with random batches and checks it
// after every step against the oracle, with snapshots that must keep their
// contents while later writes, flushes and compactions run.
func TestModelRandomized(t *testing.T) {
	for _, inEdges := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run("", func(t *testing.T) {
				if seed > 1 {
					volume.Mark(t) // under the race detector, seed 1 only
				}
				runModel(t, seed, inEdges, 250, 120, 150, 1)
			})
		}
	}
}

// TestModelDeepLevels writes enough distinct edges that compaction pushes
// data down to L2 and L3 while the oracle checks run.
func TestModelDeepLevels(t *testing.T) {
	volume.Mark(t)
	runModel(t, 11, true, 200, 3000, 600, 3)
}

func runModel(t *testing.T, seed uint64, inEdges bool, steps int, nv uint64, maxOps int, wantDepth int) {
	r := rand.New(rand.NewPCG(seed, 99))
	// Hundreds of flushes and compactions (each fsyncs its files): on
	// tmpfs (memdir), not the disk: the model checks contents, not what
	// a crash leaves.
	dir := memdir.TempDir(t)
	s, err := Open(dir, smallOptions(inEdges))
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
	depth := 0                     // deepest level seen holding files
	var flushes, compactions int64 // summed over reopens
	var pooled int64               // largest MemGraph pool seen: later MemGraphs wrote into recycled memory
	count := func() {
		m, _ := s.Metrics()
		flushes += m.Flushes
		compactions += m.Compactions
	}
	for step := 0; step < steps; step++ {
		b := randomBatch(r, want, nv, maxOps)
		if _, err := s.Apply(b); err != nil {
			t.Fatalf("step %d: apply: %v", step, err)
		}
		want.applyOps(b.ops)
		switch x := r.IntN(100); {
		case x < 5:
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		case x < 8:
			if err := s.CompactAll(); err != nil {
				t.Fatal(err)
			}
		case x < 10:
			// Reopen: only flushed data survives a close, so flush first.
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			for _, p := range pins {
				p.sn.Release()
			}
			pins = nil
			count()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, smallOptions(inEdges)); err != nil {
				t.Fatalf("reopen: %v", err)
			}
		}
		if m, _ := s.Metrics(); true {
			if m.MemGraphPoolBytes > smallOptions(inEdges).MemGraphBytes {
				t.Fatalf("step %d: the MemGraph pool holds %d bytes, more than one MemGraph's %d", step, m.MemGraphPoolBytes, smallOptions(inEdges).MemGraphBytes)
			}
			pooled = max(pooled, m.MemGraphPoolBytes)
			for i, l := range m.Levels {
				if l.Files > 0 && i > depth {
					depth = i
				}
			}
		}
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		probe := []uint64{r.Uint64N(nv), r.Uint64N(nv), r.Uint64N(nv)}
		checkSnapshot(t, sn, want, inEdges, probe)
		if r.IntN(10) == 0 && len(pins) < 4 {
			pins = append(pins, pinned{sn, want.clone()})
		} else {
			sn.Release()
		}
		if len(pins) > 0 && r.IntN(8) == 0 {
			i := r.IntN(len(pins))
			checkSnapshot(t, pins[i].sn, pins[i].want, inEdges, probe)
			if r.IntN(2) == 0 {
				pins[i].sn.Release()
				pins = append(pins[:i], pins[i+1:]...)
			}
		}
	}
	for _, p := range pins {
		checkSnapshot(t, p.sn, p.want, inEdges, nil)
		p.sn.Release()
	}
	m, _ := s.Metrics()
	count()
	t.Logf("seed %d in=%v: flushes=%d compactions=%d levels=%+v", seed, inEdges, flushes, compactions, m.Levels)
	if pooled == 0 {
		t.Fatal("no flushed MemGraph's memory was ever pooled for the next")
	}
	if flushes < 5 || compactions < 3 {
		t.Fatalf("expected many flushes and compactions during the run, got %d and %d", flushes, compactions)
	}
	if depth < wantDepth {
		t.Fatalf("data reached level %d, want at least %d", depth, wantDepth)
	}
}

// TestConcurrentReaders runs readers that take snapshots while a writer,
// background flushes and compactions run, and checks each snapshot against
// the oracle recorded for its sequence number.
func TestConcurrentReaders(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var hist sync.Map // seq -> oracle
	hist.Store(uint64(0), oracle{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var checked atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ft := &fatalRecorder{}
			for ctx.Err() == nil {
				sn, err := s.Snapshot()
				if err != nil {
					errc <- err
					return
				}
				var want any
				for {
					var ok bool
					if want, ok = hist.Load(sn.Seq()); ok || ctx.Err() != nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
				if want == nil {
					sn.Release()
					return
				}
				// Read it twice with a pause so compaction can run between;
				// then look up edges it holds and pairs it does not.
				for i := 0; i < 2; i++ {
					if d := diffOracle(want.(oracle), scanAllErr(ft, sn, Out)); d != "" || ft.err != nil {
						errc <- errors.Join(ft.err, errors.New("concurrent reader: "+d))
						sn.Release()
						return
					}
					time.Sleep(time.Millisecond)
				}
				if err := lookUpAgainst(sn, want.(oracle), rand.New(rand.NewPCG(uint64(g), sn.Seq()))); err != nil {
					errc <- err
					sn.Release()
					return
				}
				sn.Release()
				checked.Add(1)
			}
		}(g)
	}
	r := rand.New(rand.NewPCG(7, 7))
	want := oracle{}
	for step := 0; step < 400 && ctx.Err() == nil; step++ {
		b := randomBatch(r, want, 200, 200)
		seq, err := s.Apply(b)
		if err != nil {
			t.Fatal(err)
		}
		want.applyOps(b.ops)
		hist.Store(seq, want.clone())
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if checked.Load() == 0 {
		t.Fatal("readers checked no snapshot")
	}
	m, _ := s.Metrics()
	t.Logf("checked %d snapshots; flushes=%d compactions=%d", checked.Load(), m.Flushes, m.Compactions)
}

// lookUpAgainst looks up in sn every edge of want (up to 50) and as many
// random pairs, and reports the first answer that differs from want.
func lookUpAgainst(sn *Snapshot, want oracle, r *rand.Rand) error {
	n := 0
	check := func(k edgeKey) error {
		w, ok := want[k]
		c, err := sn.Edge(k[0], k[1])
		switch {
		case err != nil:
			return err
		case ok != (len(c.Weights) == 1) || ok && c.Weights[0] != w:
			return fmt.Errorf("concurrent reader: seq %d edge %v: %+v, want %v (present %v)", sn.Seq(), k, c, w, ok)
		}
		return nil
	}
	for k := range want {
		if n++; n > 50 {
			break
		}
		if err := check(k); err != nil {
			return err
		}
	}
	for range 50 {
		if err := check(edgeKey{r.Uint64N(200), r.Uint64N(200)}); err != nil {
			return err
		}
	}
	return nil
}

// fatalRecorder lets scanAll run on a goroutine other than the test's.
type fatalRecorder struct {
	testing.TB
	err error
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	if f.err == nil {
		f.err = errors.New("scan failed: " + format)
	}
	panic(f)
}

func scanAllErr(f *fatalRecorder, sn *Snapshot, dir Direction) (o oracle) {
	defer func() {
		if r := recover(); r != nil && r != any(f) {
			panic(r)
		}
	}()
	return scanAll(f, sn, dir)
}
