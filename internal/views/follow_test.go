package views

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
)

// TestFollowTheLog reads the edge log from every seq and every place
// within a batch, in reads of random sizes, and compares what it gets
// with the operations applied; a read that waits returns once a batch is
// applied; positions the ring dropped are a *LogGoneError naming the
// oldest seq to follow from; a seq above the newest and a skip past a
// batch's end are refused.
func TestFollowTheLog(t *testing.T) {
	const logCap = 64
	s, m := smallLogManager(t, false, logCap)
	type applied struct {
		seq uint64
		op  engine.Op
	}
	var all []applied
	batchLen := map[uint64]int{}
	r := rand.New(rand.NewPCG(4, 1))
	apply := func(n int) uint64 {
		var b engine.Batch
		var ops []engine.Op
		for range n {
			op := engine.Op{Src: uint64(r.IntN(20)), Dst: uint64(r.IntN(20)), Weight: float64(r.IntN(5)), Kind: engine.OpUpsert}
			b.InsertWeighted(op.Src, op.Dst, op.Weight)
			ops = append(ops, op)
		}
		seq, err := s.Apply(&b)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			all = append(all, applied{seq, op})
		}
		batchLen[seq] = n
		return seq
	}
	var seqs []uint64
	for range 8 {
		seqs = append(seqs, apply(1+r.IntN(6)))
	}
	ctx := context.Background()
	// readAll reads from pos, skip operations into batch seq, to the head
	// in reads of random sizes.
	readAll := func(pos, seq uint64, skip int) []Edge {
		var out []Edge
		for ended := false; ; {
			_, newest := m.LogSeqs()
			if ended && out[len(out)-1].Seq == newest {
				return out
			}
			n := 1 + r.IntN(5)
			es, ends, err := m.ReadLog(ctx, pos, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) == 0 || len(es) > n {
				t.Fatalf("a read of %d from %d returned %d", n, pos, len(es))
			}
			lastSeq := es[len(es)-1].Seq
			k := 0 // operations of lastSeq up to and with the last one returned
			if lastSeq == seq {
				k = skip
			}
			for _, e := range append(out, es...) {
				if e.Seq == lastSeq {
					k++
				}
			}
			if want := k == batchLen[lastSeq]; ends != want {
				t.Fatalf("a read ending with op %d of batch %d (of %d) says ends %v; read %v from %d: %v; before %v", k, lastSeq, batchLen[lastSeq], ends, n, pos, es, out)
			}
			out = append(out, es...)
			pos += uint64(len(es))
			ended = ends
		}
	}
	check := func(label string, got []Edge, from int) {
		t.Helper()
		want := all[from:]
		if len(got) != len(want) {
			t.Fatalf("%s: %d operations, want %d", label, len(got), len(want))
		}
		for i := range want {
			if got[i].Seq != want[i].seq || got[i].Op != want[i].op {
				t.Fatalf("%s: operation %d is %+v at seq %d, want %+v at %d", label, i, got[i].Op, got[i].Seq, want[i].op, want[i].seq)
			}
		}
	}
	first := 0 // index in all of each batch's first operation
	for _, seq := range append([]uint64{0}, seqs...) {
		p, err := m.LogPosition(seq, 0)
		if err != nil {
			t.Fatal(err)
		}
		for first < len(all) && all[first].seq <= seq {
			first++
		}
		if first < len(all) {
			check("after seq", readAll(p, seq, 0), first)
		}
		if seq == 0 {
			continue
		}
		start := first - batchLen[seq]
		for skip := 1; skip <= batchLen[seq]; skip++ {
			p, err := m.LogPosition(seq, uint64(skip))
			if err != nil {
				t.Fatalf("seq %d, skip %d: %v", seq, skip, err)
			}
			if start+skip < len(all) {
				check("within a batch", readAll(p, seq, skip), start+skip)
			}
		}
		if _, err := m.LogPosition(seq, uint64(batchLen[seq]+1)); err == nil {
			t.Fatalf("a skip past batch %d's %d operations was taken", seq, batchLen[seq])
		}
	}
	_, newest := m.LogSeqs()
	if _, err := m.LogPosition(newest+1, 0); err == nil {
		t.Fatal("a seq above the newest was taken")
	}

	// A read at the head waits for the next batch.
	head, err := m.LogPosition(newest, 0)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if _, _, err := m.ReadLog(wctx, head, 10, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read at the head with nothing new: %v", err)
	}
	cancel()
	got := make(chan []Edge, 1)
	go func() {
		es, _, err := m.ReadLog(ctx, head, 100, nil)
		if err != nil {
			t.Error(err)
		}
		got <- es
	}()
	time.Sleep(50 * time.Millisecond)
	seq := apply(3)
	if es := <-got; len(es) != 3 || es[0].Seq != seq {
		t.Fatalf("a waiting read got %v, want the 3 operations of seq %d", es, seq)
	}

	// Past the ring: gone, and the oldest seq says from where to follow.
	big := apply(logCap + 5)
	var gone *LogGoneError
	if _, err := m.LogPosition(0, 0); !errors.As(err, &gone) || gone.Oldest != big {
		t.Fatalf("following from seq 0 after a batch larger than the log: %v, want gone with oldest %d", err, big)
	}
	if _, _, err := m.ReadLog(ctx, head, 10, nil); !errors.As(err, &gone) || gone.Oldest != big {
		t.Fatalf("a read of a dropped position: %v", err)
	}
	if oldest, newest := m.LogSeqs(); oldest != big || newest != big {
		t.Fatalf("LogSeqs = %d, %d; want %d, %d", oldest, newest, big, big)
	}
	if _, _, err := m.ReadLog(ctx, 1<<40, 1, nil); err == nil {
		t.Fatal("a read past the head was taken")
	}
	head, err = m.LogPosition(big, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		m.Close()
	}()
	if _, _, err := m.ReadLog(ctx, head, 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("a read waiting when the manager closes: %v", err)
	}
}
