package engine

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkApply measures ingest through the Go API in batches of 10,000
// random edges over 2^20 vertices, background flush and compaction included.
// Run: go test -bench Apply -benchtime 2000000x ./internal/engine
func BenchmarkApply(b *testing.B) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(1, 1))
	var batch Batch
	b.ResetTimer()
	for i := 0; i < b.N; i += 10000 {
		batch.Reset()
		for j := 0; j < 10000; j++ {
			batch.Insert(r.Uint64N(1<<20), r.Uint64N(1<<20))
		}
		if _, err := s.Apply(&batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "edges/s")
}

// BenchmarkScanCompacted measures a full out-neighbor scan of a compacted
// store of 1M random edges; bytes/op is per full scan.
func BenchmarkScanCompacted(b *testing.B) {
	s := scanStore(b, 0, false)
	defer s.Close()
	benchScan(b, s)
}

// benchScan times full out-neighbor scans of one snapshot of s.
func benchScan(b *testing.B, s *Store) {
	sn, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer sn.Release()
	buf := NewScanBuffer(1<<14, 1<<18, false)
	b.ResetTimer()
	var edges uint64
	for i := 0; i < b.N; i++ {
		for lo := uint64(0); lo < sn.VertexBound(); {
			if lo, err = sn.Scan(lo, sn.VertexBound(), Out, buf); err != nil {
				b.Fatal(err)
			}
			edges += uint64(len(buf.Dsts))
		}
	}
	b.ReportMetric(float64(edges)/b.Elapsed().Seconds(), "edges/s")
}

// applyRandomEdges applies batches batches of 10,000 random edges over
// vertices [0, n).
func applyRandomEdges(b *testing.B, s *Store, r *rand.Rand, batches int, n uint64) {
	var batch Batch
	for i := 0; i < batches; i++ {
		batch.Reset()
		for j := 0; j < 10000; j++ {
			batch.Insert(r.Uint64N(n), r.Uint64N(n))
		}
		if _, err := s.Apply(&batch); err != nil {
			b.Fatal(err)
		}
	}
}

// scanStore builds a compacted store of 1M random edges over 2^17 vertices,
// deleting frac of the vertices (in batches of 100 deletes) before
// CompactAll, or with fresh after it (the deletes then wait in the MemGraph).
func scanStore(b *testing.B, frac float64, fresh bool) *Store {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	applyRandomEdges(b, s, r, 100, 1<<17)
	var batch Batch
	if fresh {
		if err := s.CompactAll(); err != nil {
			b.Fatal(err)
		}
	}
	del := int(frac * (1 << 17))
	for i := 0; i < del; i += 100 {
		batch.Reset()
		for j := i; j < del && j < i+100; j++ {
			batch.DeleteVertex(r.Uint64N(1 << 17))
		}
		if _, err := s.Apply(&batch); err != nil {
			b.Fatal(err)
		}
	}
	if !fresh {
		if err := s.CompactAll(); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkScanAfterVertexDeletes measures a full out-neighbor scan of a
// compacted store of 1M random edges, clean and after deleting 1% of the
// vertices; compare the ns/op. deleted1pct_fresh deletes them after the
// CompactAll: the scan then reads a compacted level under deletes newer
// than all of it.
// Run: go test -run '^$' -bench ScanAfterVertexDeletes ./internal/engine
func BenchmarkScanAfterVertexDeletes(b *testing.B) {
	for _, c := range []struct {
		name  string
		frac  float64
		fresh bool
	}{{"clean", 0, false}, {"deleted1pct", 0.01, false}, {"deleted1pct_fresh", 0.01, true}} {
		b.Run(c.name, func(b *testing.B) {
			s := scanStore(b, c.frac, c.fresh)
			defer s.Close()
			benchScan(b, s)
		})
	}
}

// BenchmarkApplyVertexDelete measures one Apply of a batch holding a
// vertex delete (and 10 edges) once the store holds 40,000 vertex deletes.
// Run: go test -run '^$' -bench ApplyVertexDelete ./internal/engine
func BenchmarkApplyVertexDelete(b *testing.B) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(3, 3))
	var batch Batch
	for i := 0; i < 4000; i++ {
		batch.Reset()
		for j := 0; j < 10; j++ {
			batch.DeleteVertex(r.Uint64N(1 << 20))
		}
		if _, err := s.Apply(&batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch.Reset()
		for j := 0; j < 10; j++ {
			batch.Insert(r.Uint64N(1<<20), r.Uint64N(1<<20))
		}
		batch.DeleteVertex(r.Uint64N(1 << 20))
		if _, err := s.Apply(&batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrentNeighbors measures point reads (Neighbors of a random
// vertex on one shared snapshot) from parallel goroutines while a writer
// applies small batches, so that reads race the writer's Version installs.
// Run: go test -run '^$' -bench ConcurrentNeighbors -cpu 1,2,4 ./internal/engine
func BenchmarkConcurrentNeighbors(b *testing.B) {
	o := &Options{MemGraphBytes: 1 << 20}
	s, err := Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	applyRandomEdges(b, s, rand.New(rand.NewPCG(3, 3)), 20, 1<<16)
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer sn.Release()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := rand.New(rand.NewPCG(4, 4))
		var wb Batch
		for {
			select {
			case <-stop:
				return
			default:
			}
			wb.Reset()
			for j := 0; j < 16; j++ {
				v := w.Uint64N(1 << 16)
				if j == 0 {
					wb.DeleteVertex(v) // a vertex delete installs a new Version
				} else {
					wb.Insert(v, w.Uint64N(1<<16))
				}
			}
			if _, err := s.Apply(&wb); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	var seed atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		pr := rand.New(rand.NewPCG(seed.Add(1), 5))
		dsts := make([]uint64, 0, 64)
		for pb.Next() {
			var err error
			if dsts, _, err = sn.Neighbors(pr.Uint64N(1<<16), Out, dsts[:0], nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	close(stop)
	<-done
}

// BenchmarkEdgeLookupCompacted looks up edges in a compacted store of 16M
// random edges over 2^20 vertices (the size of a scale-20 graph), on one
// goroutine: every other lookup is of an edge the store holds, the others
// of random pairs (almost never an edge).
// Run: go test -run '^$' -bench EdgeLookupCompacted -benchtime 2000000x ./internal/engine
func BenchmarkEdgeLookupCompacted(b *testing.B) { benchLookupStore(b, true) }

// BenchmarkEdgeLookupUncompacted is BenchmarkEdgeLookupCompacted on the
// store as ingest leaves it: L0 files, levels that background compaction
// has not merged yet and a MemGraph, each searched.
// Run: go test -run '^$' -bench EdgeLookupUncompacted -benchtime 2000000x ./internal/engine
func BenchmarkEdgeLookupUncompacted(b *testing.B) { benchLookupStore(b, false) }

func benchLookupStore(b *testing.B, compact bool) {
	s, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 1 << 20
	// The edges are those applyRandomEdges draws from this seed: the first
	// million of them, drawn again, are the ones looked up.
	applyRandomEdges(b, s, rand.New(rand.NewPCG(3, 3)), 1600, n)
	if compact {
		if err := s.CompactAll(); err != nil {
			b.Fatal(err)
		}
	}
	if m, err := s.Metrics(); err == nil {
		b.Logf("levels: %+v", m.Levels)
	}
	again := rand.New(rand.NewPCG(3, 3))
	held := make([][2]uint64, 1<<20)
	for i := range held {
		held[i] = [2]uint64{again.Uint64N(n), again.Uint64N(n)}
	}
	benchLookups(b, s, func(r *rand.Rand, i int) (uint64, uint64) {
		if i%2 == 0 {
			e := held[r.IntN(len(held))]
			return e[0], e[1]
		}
		return r.Uint64N(n), r.Uint64N(n)
	})
}

// BenchmarkEdgeLookupHub looks up edges of one hub whose 2M versions are
// all in the MemGraph (after one read of its list, which makes the hub's
// sorted cache), to random vertices (about a fifth of them present).
// Run: go test -run '^$' -bench EdgeLookupHub -benchtime 200000x ./internal/engine
func BenchmarkEdgeLookupHub(b *testing.B) {
	s, err := Open(b.TempDir(), &Options{MemGraphBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(4, 4))
	const n = 1 << 23
	var batch Batch
	for i := 0; i < 200; i++ {
		batch.Reset()
		for j := 0; j < 10000; j++ {
			batch.Insert(0, r.Uint64N(n))
		}
		if _, err := s.Apply(&batch); err != nil {
			b.Fatal(err)
		}
	}
	if m, _ := s.Metrics(); m.Flushes != 0 {
		b.Fatalf("the hub's versions were flushed (%d flushes): the MemGraph must hold them", m.Flushes)
	}
	sn, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sn.Degree(0, Out); err != nil { // the read that sorts the hub once
		b.Fatal(err)
	}
	sn.Release()
	benchLookups(b, s, func(r *rand.Rand, _ int) (uint64, uint64) { return 0, r.Uint64N(n) })
}

// benchLookups times b.N edge lookups of the pairs pick gives (lookup i
// is pick(r, i)) on one snapshot of s, and reports lookups/s and the
// edges found per lookup.
func benchLookups(b *testing.B, s *Store, pick func(r *rand.Rand, i int) (uint64, uint64)) {
	sn, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer sn.Release()
	r := rand.New(rand.NewPCG(5, 5))
	found := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := sn.Edge(pick(r, i))
		if err != nil {
			b.Fatal(err)
		}
		found += len(c.Types)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	b.ReportMetric(float64(found)/float64(b.N), "found/op")
}

// BenchmarkApplyHistory measures what keeping history costs a stream that
// overwrites: batches of 10,000 upserts and 5% deletes over 2^16
// vertices (so edges repeat), with no history and with the last 10, 100
// and all of the batches readable; it reports the ingest rate and the
// bytes on disk per operation once everything is flushed and compacted.
// Run: go test -run '^$' -bench ApplyHistory -benchtime 2000000x ./internal/engine
func BenchmarkApplyHistory(b *testing.B) {
	for _, c := range []struct {
		name string
		keep bool
		seqs uint64
	}{{"none", false, 0}, {"last10", true, 10}, {"last100", true, 100}, {"all", true, 0}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), &Options{KeepHistory: c.keep, HistorySeqs: c.seqs})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r := rand.New(rand.NewPCG(6, 6))
			var batch Batch
			b.ResetTimer()
			for i := 0; i < b.N; i += 10000 {
				batch.Reset()
				for j := 0; j < 10000; j++ {
					if j%20 == 0 {
						batch.DeleteEdge(r.Uint64N(1<<16), r.Uint64N(64))
					} else {
						batch.InsertWeighted(r.Uint64N(1<<16), r.Uint64N(64), float64(j))
					}
				}
				if _, err := s.Apply(&batch); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := s.CompactAll(); err != nil {
				b.Fatal(err)
			}
			m, _ := s.Metrics()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(m.DiskBytes())/float64(b.N), "disk_bytes/op")
		})
	}
}

// BenchmarkApplyEvents measures a payments-like stream (2^20 events over
// 20,000 accounts, amounts and event times) ingested as replace or as
// accumulate edges, with and without properties: the core's CPU per event
// (Apply, both threads) and, after a full compaction, the bytes on disk
// per distinct edge (accumulate with retain 0 folds every event older
// than the newest into one version; with a retain of the whole stream it
// keeps every event). Run:
// go test -run '^$' -bench ApplyEvents -benchtime 1x ./internal/engine
func BenchmarkApplyEvents(b *testing.B) {
	for _, c := range []struct {
		name   string
		agg    *Aggregate
		props  bool
		retain time.Duration
	}{
		{"replace", nil, false, 0},
		{"replace+props", nil, true, 0},
		{"accumulate", &Aggregate{Accumulate: true}, false, 0},
		{"accumulate+props", &Aggregate{Accumulate: true}, true, 0},
		{"accumulate-keep-all+props", &Aggregate{Accumulate: true, Retain: time.Hour}, true, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := &Options{}
			if c.agg != nil {
				o.Aggregates = map[uint16]Aggregate{0: *c.agg}
			}
			s, err := Open(b.TempDir(), o)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const events = 1 << 20
			r := rand.New(rand.NewPCG(7, 7))
			distinct := map[[2]uint64]struct{}{}
			var batch Batch
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for i := 0; i < events; i += 10000 {
					batch.Reset()
					for j := i; j < i+10000; j++ {
						src, dst := r.Uint64N(20000), r.Uint64N(20000)
						if r.IntN(4) != 0 { // repeat payments between the same pairs
							dst = (src*7 + uint64(r.IntN(5))) % 20000
						}
						distinct[[2]uint64{src, dst}] = struct{}{}
						batch.InsertWeighted(src, dst, float64(1+r.IntN(100000))/100)
						batch.SetEventTime(1_700_000_000_000_000 + int64(j)*1000)
						if c.props {
							batch.SetPayload(fmt.Sprintf("e-%d", j), []byte(`{"currency":"EUR","channel":"card"}`))
						}
					}
					if _, err := s.Apply(&batch); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := s.CompactAll(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			m, err := s.Metrics()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(m.ApplyCPU.Nanoseconds())/float64(events*b.N), "apply-ns/event")
			b.ReportMetric(float64(m.DiskBytes())/float64(len(distinct)), "disk-bytes/edge")
		})
	}
}
