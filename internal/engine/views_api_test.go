package engine

import (
	"math/rand/v2"
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
