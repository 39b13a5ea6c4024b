package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSnapshotAtFollowsTheOracle applies random batches (updates, deletes
// and vertex deletes) with flushes and background compaction running and
// checks snapshots at random past seqs within the retention against the
// oracle as it was at each: scans in both directions, lists, degrees,
// gathers and edge lookups. A seq below the oldest readable one, or above
// the newest, is refused and named.
func TestSnapshotAtFollowsTheOracle(t *testing.T) {
	o := smallOptions(true)
	o.KeepHistory, o.HistorySeqs = true, 40
	s, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(31, 32))
	want := oracle{}
	at := map[uint64]oracle{}
	const nv = 40
	for step := range 300 {
		b := randomBatch(r, want, nv, 30)
		seq, err := s.Apply(b)
		if err != nil {
			t.Fatal(err)
		}
		want.applyOps(b.ops)
		at[seq] = want.clone()
		if r.IntN(10) == 0 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if step%10 != 9 {
			continue
		}
		m, err := s.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if m.OldestReadableSeq != m.LastSeq-min(m.LastSeq, o.HistorySeqs) {
			t.Fatalf("oldest readable seq %d with the newest %d, want the newest less %d", m.OldestReadableSeq, m.LastSeq, o.HistorySeqs)
		}
		for range 3 {
			seq := m.OldestReadableSeq + r.Uint64N(m.LastSeq-m.OldestReadableSeq+1)
			sn, err := s.SnapshotAt(seq)
			if err != nil {
				t.Fatal(err)
			}
			if sn.Seq() != seq {
				t.Fatalf("a snapshot at %d says it is at %d", seq, sn.Seq())
			}
			probe := []uint64{r.Uint64N(nv), r.Uint64N(nv)}
			checkSnapshot(t, sn, at[seq], true, probe)
			sn.Release()
		}
		if m.OldestReadableSeq > 0 {
			_, err := s.SnapshotAt(m.OldestReadableSeq - 1)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "oldest readable") {
				t.Fatalf("a snapshot below the oldest readable seq: %v", err)
			}
		}
		if _, err := s.SnapshotAt(m.LastSeq + 1); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not applied yet") {
			t.Fatalf("a snapshot above the newest seq: %v", err)
		}
	}
	m, _ := s.Metrics()
	if m.Compactions == 0 {
		t.Fatal("no compaction ran: the history was never rewritten")
	}
}

// TestNeighborsPageRefills reads a vertex of 1,000 edges (two types to
// most neighbors) in pages of several limits, below and above the buffer
// a page starts with: each page holds the limit's next edges, in order,
// and the pages together are the whole list.
func TestNeighborsPageRefills(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	var want []EdgeCursor
	for d := uint64(0); d < 600; d++ {
		for _, ty := range []uint16{7, 2} { // (dst asc, type desc)
			if d%3 == 0 && ty == 7 {
				continue
			}
			b.InsertWeighted(1, d, float64(d))
			b.SetType(ty)
			want = append(want, EdgeCursor{Dst: d, Type: ty})
		}
	}
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	for _, limit := range []int{1, 63, 64, 65, 200, 999, 1000, 5000} {
		var got []EdgeCursor
		var after *EdgeCursor
		for pages := 0; ; pages++ {
			p, err := sn.NeighborsPage(1, Out, after, limit, true)
			if err != nil || pages > len(want) {
				t.Fatalf("limit %d, page %d: %v", limit, pages, err)
			}
			if len(p.Dsts) > limit || p.More && len(p.Dsts) != limit {
				t.Fatalf("limit %d, page %d: %d edges, more %v", limit, pages, len(p.Dsts), p.More)
			}
			for i, d := range p.Dsts {
				if p.Weights[i] != float64(d) {
					t.Fatalf("limit %d: edge to %d has weight %v", limit, d, p.Weights[i])
				}
				got = append(got, EdgeCursor{Dst: d, Type: p.Types[i]})
			}
			last, ok := p.Last()
			if !p.More || !ok {
				break
			}
			after = &last
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("limit %d: %d edges read, want %d (first differences: %v / %v)", limit, len(got), len(want), got[:min(5, len(got))], want[:5])
		}
	}
}
