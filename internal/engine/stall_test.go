package engine

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadersNeverStallTheWriter: four readers take fresh snapshots and
// scan them whole (in large pages, so that some reader is almost always
// inside the core) and gather a hub's neighbors, without pause, while one
// writer applies batches of 100 ops without pause. Within the first 48
// scans the writer must apply at least one batch per scan. It measures
// progress, never time: before MemGraph readers went lock-free, a reader
// held the MemGraph's shared lock for a whole scan call and new readers
// were let in ahead of a waiting writer, and the writer applied a batch
// or two in all that time. The wall-clock budget only bounds a run on a
// slow machine; running out of it is not a failure unless the writer is
// behind the readers.
func TestReadersNeverStallTheWriter(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{MemGraphBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const hub = 7
	rng := rand.New(rand.NewPCG(1, 2))
	batch := func(b *Batch, n int) {
		b.Reset()
		for i := 0; i < n; i++ {
			switch r := rng.IntN(100); {
			case r < 10:
				b.Insert(hub, rng.Uint64N(1<<14))
			case r < 15:
				b.DeleteEdge(rng.Uint64N(1<<14), rng.Uint64N(1<<14))
			default:
				b.Insert(rng.Uint64N(1<<14), rng.Uint64N(1<<14))
			}
		}
	}
	// Preload: some data in files, some in the MemGraph.
	var b Batch
	for i := 0; i < 6; i++ {
		batch(&b, 10000)
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}

	const readers, wantScans = 4, 48
	var (
		scans, batches atomic.Int64
		stop           atomic.Bool
		wg             sync.WaitGroup
		errMu          sync.Mutex
		firstErr       error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		stop.Store(true)
	}
	enough := make(chan struct{})
	var once sync.Once
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := NewScanBuffer(1<<14, 1<<18, false)
			gb := NewGatherBuffer(1<<12, false)
			for !stop.Load() {
				sn, err := s.Snapshot()
				if err != nil {
					fail(err)
					return
				}
				for lo, hi := uint64(0), sn.VertexBound(); lo < hi; {
					if lo, err = sn.Scan(lo, hi, Out, buf); err != nil {
						break
					}
				}
				if err == nil {
					_, err = sn.Gather([]uint64{hub}, Out, gb)
				}
				sn.Release()
				if err != nil {
					fail(err)
					return
				}
				if scans.Add(1) >= wantScans {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var wb Batch
		for !stop.Load() {
			batch(&wb, 100)
			if _, err := s.Apply(&wb); err != nil {
				fail(err)
				return
			}
			batches.Add(1)
		}
	}()
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
	}
	applied, scanned := batches.Load(), scans.Load()
	stop.Store(true)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("the writer applied %d batches while %d readers finished %d scans", applied, readers, scanned)
	if scanned == 0 {
		t.Fatal("no reader finished a scan")
	}
	if applied < scanned {
		t.Errorf("the writer applied %d batches while the readers finished %d scans: readers stall it", applied, scanned)
	}
}
