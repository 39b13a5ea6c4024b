package engine

import "testing"

func TestSmoke(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{InEdges: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	b.Insert(1, 2)
	b.InsertWeighted(1, 3, 2.5)
	b.Insert(2, 3)
	b.DeleteEdge(2, 3)
	b.Insert(5, 1)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	want := oracle{}
	want.applyOps(b.ops)
	sn, _ := s.Snapshot()
	checkSnapshot(t, sn, want, true, []uint64{1, 2, 3, 5, 9})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, sn, want, true, []uint64{1, 2, 3, 5, 9})
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, sn, want, true, []uint64{1, 2, 3, 5, 9})
	sn.Release()
	sn2, _ := s.Snapshot()
	checkSnapshot(t, sn2, want, true, []uint64{1, 2, 3, 5, 9})
}
