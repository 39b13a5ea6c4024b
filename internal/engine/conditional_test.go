package engine

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// holdsIn evaluates c on a map of type-0 edges (an oracle of the graph).
func holdsIn(g map[edgeKey]float64, c Condition) bool {
	w, there := g[edgeKey{c.Src, c.Dst}]
	switch c.Kind {
	case CondEdgeExists:
		return there
	case CondEdgeAbsent:
		return !there
	case CondWeightEquals:
		return there && w == c.Value
	case CondWeightBelow:
		return there && w < c.Value
	case CondVertexExists:
		for k := range g {
			if k[0] == c.Src || k[1] == c.Src {
				return true
			}
		}
		return false
	case CondDegreeAtMost:
		d := 0
		for k := range g {
			if k[0] == c.Src {
				d++
			}
		}
		return float64(d) <= c.Value
	}
	return false
}

// TestApplyIfIsSerializable runs four clients that race each other with
// conditional batches, flushes and compactions running: a counter raised
// by compare-and-swap on an edge's weight, pairs claimed while absent and
// released by their owner only, and inserts bounded by an out-degree. Then
// it replays the applied batches serially, in seq order, on a map: each
// one's conditions held at its point, each refused one's failed condition
// failed as of the seq it names, the counter counts the successful swaps,
// and the store holds what the replay ends with.
func TestApplyIfIsSerializable(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type applied struct {
		seq   uint64
		ops   []Batch
		conds []Condition
	}
	type refused struct {
		err *PreconditionError
	}
	var (
		mu      sync.Mutex
		done    []applied
		refs    []refused
		swaps   int
		wg      sync.WaitGroup
		errc    = make(chan error, 4)
		counter = edgeKey{0, 1}
	)
	for client := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(client), 9))
			owner := float64(client + 1)
			for range 200 {
				var b Batch
				var conds []Condition
				swap := false
				switch x := r.IntN(4); x {
				case 0: // raise the counter from what this client read
					sn, err := s.Snapshot()
					if err != nil {
						errc <- err
						return
					}
					c, err := sn.Edge(counter[0], counter[1])
					sn.Release()
					if err != nil {
						errc <- err
						return
					}
					if len(c.Weights) == 0 {
						b.InsertWeighted(counter[0], counter[1], 1)
						conds = []Condition{{Kind: CondEdgeAbsent, Src: counter[0], Dst: counter[1]}}
					} else {
						b.InsertWeighted(counter[0], counter[1], c.Weights[0]+1)
						conds = []Condition{{Kind: CondWeightEquals, Src: counter[0], Dst: counter[1], Value: c.Weights[0]}}
					}
					swap = true
				case 1: // claim a pair while nobody holds it
					a, d := 10+r.Uint64N(6), 20+r.Uint64N(6)
					b.InsertWeighted(a, d, owner)
					conds = []Condition{{Kind: CondEdgeAbsent, Src: a, Dst: d}}
				case 2: // release it, the owner only
					a, d := 10+r.Uint64N(6), 20+r.Uint64N(6)
					b.DeleteEdge(a, d)
					conds = []Condition{{Kind: CondWeightEquals, Src: a, Dst: d, Value: owner}}
				default: // insert from a vertex while it has at most 3 out-edges, if it exists
					a, d := 40+r.Uint64N(3), 50+r.Uint64N(40)
					b.InsertWeighted(a, d, owner)
					b.InsertWeighted(d, a, owner) // (so that a exists from then on)
					conds = []Condition{{Kind: CondDegreeAtMost, Src: a, Value: 3}}
					if r.IntN(2) == 0 {
						conds = append(conds, Condition{Kind: CondVertexExists, Src: a})
					}
				}
				seq, err := s.ApplyIf(&b, conds)
				var pe *PreconditionError
				mu.Lock()
				switch {
				case errors.As(err, &pe):
					refs = append(refs, refused{pe})
				case err != nil:
					mu.Unlock()
					errc <- err
					return
				default:
					done = append(done, applied{seq, []Batch{b}, conds})
					if swap {
						swaps++
					}
				}
				mu.Unlock()
				if r.IntN(30) == 0 {
					if _, err := s.FlushAsync(); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	slices.SortFunc(done, func(a, b applied) int { return int(a.seq) - int(b.seq) })
	slices.SortFunc(refs, func(a, b refused) int { return int(a.err.Seq) - int(b.err.Seq) })
	g := oracle{}
	ri := 0
	// A refusal as of seq q saw every batch up to q: check it once the
	// replay has applied them.
	checkRefusals := func(upTo uint64) {
		for ; ri < len(refs) && refs[ri].err.Seq <= upTo; ri++ {
			if holdsIn(g, refs[ri].err.Cond) {
				t.Fatalf("refused as of seq %d: %v; it holds there in the serial replay", refs[ri].err.Seq, refs[ri].err)
			}
		}
	}
	for i, a := range done {
		if i > 0 && a.seq <= done[i-1].seq {
			t.Fatalf("two batches applied with seq %d", a.seq)
		}
		checkRefusals(a.seq - 1)
		for _, c := range a.conds {
			if !holdsIn(g, c) {
				t.Fatalf("batch of seq %d applied with %s false at its point of the serial replay", a.seq, c)
			}
		}
		g.applyOps(a.ops[0].ops)
	}
	checkRefusals(^uint64(0))
	if w := g[counter]; int(w) != swaps {
		t.Fatalf("the counter is %v after %d successful swaps", w, swaps)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	if d := diffOracle(g, scanAll(t, sn, Out)); d != "" {
		t.Fatalf("the store differs from the serial replay: %s", d)
	}
	if len(refs) < 50 || len(done) < 200 {
		t.Fatalf("%d batches applied and %d refused: the clients should conflict often", len(done), len(refs))
	}
	t.Logf("%d applied, %d refused, %d swaps", len(done), len(refs), swaps)
}

func TestApplyIfRefusesBadConditions(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	b.Insert(1, 2)
	for _, c := range []Condition{{Kind: 0}, {Kind: CondDegreeAtMost + 1}, {Kind: CondEdgeExists, Type: uint16(MaxEdgeTypes)}} {
		if _, err := s.ApplyIf(&b, []Condition{c}); !errors.Is(err, ErrInvalid) {
			t.Errorf("condition %+v: %v, want ErrInvalid", c, err)
		}
	}
	seq, err := s.ApplyIf(&b, []Condition{{Kind: CondEdgeAbsent, Src: 1, Dst: 2}})
	if err != nil || seq != 1 {
		t.Fatalf("a batch whose condition holds: %d, %v", seq, err)
	}
	_, err = s.ApplyIf(&b, []Condition{{Kind: CondEdgeAbsent, Src: 1, Dst: 2}})
	var pe *PreconditionError
	if !errors.As(err, &pe) || pe.Seq != 1 || pe.Index != 0 || err.Error() != "engine: precondition 0 (edge (1, 2, type 0) is absent) failed as of seq 1: it exists" {
		t.Fatalf("a batch whose condition fails: %v", err)
	}
	if m, _ := s.Metrics(); m.LastSeq != 1 {
		t.Fatalf("a refused batch was applied: the newest seq is %d", m.LastSeq)
	}
}

// TestApplyIfThenToldTheSeqItGets checks the seq ApplyIfThen's step is
// told against the seq the batch gets, with empty batches, refused ones
// and plain applies from another goroutine in between; a failing step
// applies nothing.
func TestApplyIfThenToldTheSeqItGets(t *testing.T) {
	s, err := Open(t.TempDir(), smallOptions(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // plain applies racing the conditional ones
		defer wg.Done()
		var b Batch
		for i := uint64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b.Reset()
			b.Insert(1000+i%50, 2000)
			if _, err := s.Apply(&b); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	r := rand.New(rand.NewPCG(3, 4))
	refused := 0
	for i := range 2000 {
		var b Batch
		if r.IntN(3) > 0 {
			b.Insert(r.Uint64N(20), r.Uint64N(20))
		}
		conds := []Condition{{Kind: CondEdgeAbsent, Src: r.Uint64N(20), Dst: r.Uint64N(20)}}
		var told uint64
		var toldErr *PreconditionError
		seq, err := s.ApplyIfThen(&b, conds, func(next uint64, perr *PreconditionError) error {
			told, toldErr = next, perr
			return nil
		})
		var perr *PreconditionError
		switch {
		case errors.As(err, &perr):
			refused++
			if toldErr != perr || perr.Seq+1 != told {
				t.Fatalf("batch %d refused at seq %d, but the step was told %d, %v", i, perr.Seq, told, toldErr)
			}
		case err != nil:
			t.Fatal(err)
		case seq != told || toldErr != nil:
			t.Fatalf("batch %d got seq %d, but the step was told %d, %v", i, seq, told, toldErr)
		}
	}
	close(stop)
	wg.Wait()
	if refused == 0 || refused == 2000 {
		t.Fatalf("%d of 2000 refused: the test exercises one outcome only", refused)
	}
	// A failing step applies nothing.
	before, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Release()
	var b Batch
	b.Insert(77, 78)
	boom := errors.New("boom")
	if _, err := s.ApplyIfThen(&b, nil, func(uint64, *PreconditionError) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the step's error", err)
	}
	after, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Release()
	if d, _ := after.Degree(77, Out); d != 0 || after.Seq() != before.Seq() {
		t.Fatalf("a failed step applied its batch: degree %d, seq %d -> %d", d, before.Seq(), after.Seq())
	}
}
