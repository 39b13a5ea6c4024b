package engine

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

// The parts of the API that views build on: durable snapshots, per-band
// vertex bounds, the apply observer and the file listing.

func TestDurableSnapshotSeesOnlyFlushedData(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(5, 5))
	want := oracle{}
	for i := 0; i < 30; i++ {
		b := randomBatch(r, want, 80, 40)
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		want.applyOps(b.ops)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := want.clone()
	for i := 0; i < 5; i++ {
		b := randomBatch(r, want, 80, 40)
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		want.applyOps(b.ops)
	}
	m, _ := s.Metrics()
	sn, err := s.DurableSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	if sn.Seq() != m.DurableSeq || sn.Seq() >= m.LastSeq {
		t.Fatalf("durable snapshot seq %d; durable %d last %d", sn.Seq(), m.DurableSeq, m.LastSeq)
	}
	checkSnapshot(t, sn, flushed, true, []uint64{1, 2, 3})
	// It keeps that state while the rest is flushed and compacted.
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, sn, flushed, true, []uint64{4, 5})
	fresh, _ := s.DurableSnapshot()
	defer fresh.Release()
	checkSnapshot(t, fresh, want, true, nil)
}

func TestVertexBoundsPerBand(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	b.Insert(3, 40)
	b.Insert(HighIDBase+9, 7)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	sn, _ := s.Snapshot()
	defer sn.Release()
	if lo, hi := sn.VertexBounds(); lo != 41 || hi != HighIDBase+10 {
		t.Fatalf("bounds = %d, %d; want 41, %d", lo, hi, HighIDBase+10)
	}
}

func TestApplyObserverSeesEveryBatchInOrder(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type seen struct {
		seq uint64
		ops []Op
	}
	var mu sync.Mutex
	var got []seen
	s.SetApplyObserver(func(seq uint64, b *Batch) {
		ops := make([]Op, b.Len())
		for i := range ops {
			ops[i] = b.Op(i)
		}
		mu.Lock()
		got = append(got, seen{seq, ops})
		mu.Unlock()
	})
	const writers, per = 4, 200
	sent := make(map[uint64][]Op) // seq -> ops, from Apply's result
	var smu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				var b Batch
				b.InsertWeighted(uint64(w), uint64(i), float64(i))
				b.DeleteEdge(uint64(w), uint64(i+1))
				if i%50 == 0 {
					b.DeleteVertex(uint64(w + 100))
				}
				seq, err := s.Apply(&b)
				if err != nil {
					t.Error(err)
					return
				}
				ops := make([]Op, b.Len())
				for k := range ops {
					ops[k] = b.Op(k)
				}
				smu.Lock()
				sent[seq] = ops
				smu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(got) != writers*per {
		t.Fatalf("observer saw %d batches, want %d", len(got), writers*per)
	}
	for i, g := range got {
		if i > 0 && g.seq != got[i-1].seq+1 {
			t.Fatalf("observer saw seq %d after %d", g.seq, got[i-1].seq)
		}
		want := sent[g.seq]
		if len(want) != len(g.ops) {
			t.Fatalf("seq %d: observer saw %d ops, Apply sent %d", g.seq, len(g.ops), len(want))
		}
		for k := range want {
			if want[k] != g.ops[k] {
				t.Fatalf("seq %d op %d: observer saw %+v, Apply sent %+v", g.seq, k, g.ops[k], want[k])
			}
		}
	}
	if got[2].ops[1].Kind != OpDeleteEdge || OpDeleteVertex.String() != "delete_vertex" {
		t.Fatalf("op kinds: %+v", got[2].ops)
	}
	s.SetApplyObserver(nil)
	var b Batch
	b.Insert(1, 1)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*per {
		t.Fatal("a removed observer was called")
	}
}

func TestFilesListsLiveFiles(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(1, 2))
	want := oracle{}
	for i := 0; i < 60; i++ {
		b := randomBatch(r, want, 500, 100)
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		want.applyOps(b.ops)
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	fs, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.Metrics()
	perLevel := make([]LevelMetrics, len(m.Levels))
	dirs := map[Direction]int{}
	for _, f := range fs {
		perLevel[f.Level].Files++
		perLevel[f.Level].Bytes += int64(f.Bytes)
		perLevel[f.Level].Entries += int64(f.Entries)
		dirs[f.Dir]++
		if f.Name == "" || f.MinSrc > f.MaxSrc {
			t.Fatalf("bad file info %+v", f)
		}
	}
	for i := range m.Levels {
		if perLevel[i] != m.Levels[i] {
			t.Fatalf("level %d: files say %+v, metrics %+v", i, perLevel[i], m.Levels[i])
		}
	}
	if dirs[Out] == 0 || dirs[In] == 0 {
		t.Fatalf("want files of both directions, got %v", dirs)
	}
}

// TestNeighborsPageAndGatherLimit pages through every vertex's neighbors
// with random page sizes, in the MemGraph, in L0 and after a full
// compaction (the binary-search path), and checks GatherLimit's contract.
func TestNeighborsPageAndGatherLimit(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(9, 9))
	want := oracle{}
	check := func(stage string) {
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		for _, dir := range []Direction{Out, In} {
			exp := map[uint64][]uint64{}
			for k := range want {
				a, b := k[0], k[1]
				if dir == In {
					a, b = b, a
				}
				exp[a] = append(exp[a], b)
			}
			for v := uint64(0); v < 60; v++ {
				e := exp[v]
				sort.Slice(e, func(i, j int) bool { return e[i] < e[j] })
				var got []uint64
				var after *EdgeCursor
				for pages := 0; ; pages++ {
					if pages > 1000 {
						t.Fatalf("%s: paging %d does not end", stage, v)
					}
					p, err := sn.NeighborsPage(v, dir, after, 1+r.IntN(4), true)
					if err != nil {
						t.Fatal(err)
					}
					ns, ws, more := p.Dsts, p.Weights, p.More
					for i, d := range ns {
						k := edgeKey{v, d}
						if dir == In {
							k = edgeKey{d, v}
						}
						if ws[i] != want[k] {
							t.Fatalf("%s: weight of %v = %v want %v", stage, k, ws[i], want[k])
						}
					}
					got = append(got, ns...)
					if !more {
						break
					}
					if len(ns) == 0 {
						t.Fatalf("%s: more with an empty page", stage)
					}
					last, _ := p.Last()
					after = &last
				}
				if fmt.Sprint(got) != fmt.Sprint(e) && !(len(got) == 0 && len(e) == 0) {
					t.Fatalf("%s dir %d: pages of %d = %v, want %v", stage, dir, v, got, e)
				}
			}
			// GatherLimit stops before the vertex that would pass the limit.
			vids := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
			limit := 1 + r.IntN(20)
			buf := NewGatherBuffer(1<<10, false)
			done, need, err := sn.GatherLimit(vids, dir, buf, limit)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for i := 0; i < done; i++ {
				total += len(exp[vids[i]])
			}
			if total > limit || int(buf.Offsets[done]) != total {
				t.Fatalf("%s: gathered %d edges over %d vertices, limit %d", stage, total, done, limit)
			}
			if done < len(vids) && total+len(exp[vids[done]]) <= limit {
				t.Fatalf("%s: stopped at vertex %d which fits", stage, vids[done])
			}
			if done == 0 && need != len(exp[vids[0]]) {
				t.Fatalf("%s: need %d, want %d", stage, need, len(exp[vids[0]]))
			}
		}
	}
	for step := 0; step < 3; step++ {
		for i := 0; i < 20; i++ {
			b := randomBatch(r, want, 60, 40)
			if _, err := s.Apply(b); err != nil {
				t.Fatal(err)
			}
			want.applyOps(b.ops)
		}
		check("memgraph")
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		check("flushed")
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	check("compacted")
}

// TestNeighborsPageSeeksCompactedRuns: without vertex deletes a compacted
// vertex is one clean run, which NeighborsPage seeks by binary search.
func TestNeighborsPageSeeksCompactedRuns(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	for d := uint64(0); d < 5000; d += 3 {
		b.InsertWeighted(7, d, float64(d))
	}
	b.DeleteEdge(7, 9)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	sn, _ := s.Snapshot()
	defer sn.Release()
	for _, after := range []uint64{0, 1, 3, 4, 4998, 4999, 10000} {
		a := EdgeCursor{Dst: after}
		p, err := sn.NeighborsPage(7, Out, &a, 3, true)
		if err != nil {
			t.Fatal(err)
		}
		ns, ws, more := p.Dsts, p.Weights, p.More
		var want []uint64
		for d := uint64(0); d < 5000; d += 3 {
			if d > after && d != 9 && len(want) < 3 {
				want = append(want, d)
			}
		}
		if fmt.Sprint(ns) != fmt.Sprint(want) && !(len(ns) == 0 && len(want) == 0) {
			t.Fatalf("after %d: %v, want %v", after, ns, want)
		}
		for i, d := range ns {
			if ws[i] != float64(d) {
				t.Fatalf("weight of %d = %v", d, ws[i])
			}
		}
		lastWant := want != nil && want[len(want)-1] < 4998
		if more != lastWant {
			t.Fatalf("after %d: more = %v", after, more)
		}
	}
}
