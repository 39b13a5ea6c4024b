package graphtide

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
)

// viewCase is a static view the oracle test keeps open, with what it
// must show.
type viewCase struct {
	name  string
	o     ViewOptions
	v     *View
	types map[uint16]bool // nil: every type
}

// modelNeighbors is u's edges in direction d of g (of the types ts; nil:
// all), in the order a view lists them: neighbor ascending, type
// descending; every weight 1 when noWeights.
func modelNeighbors(g testref.TypedEdges, u uint64, d Direction, ts map[uint16]bool, noWeights bool) []Neighbor {
	var out []Neighbor
	for k, w := range g {
		if ts != nil && !ts[uint16(k[2])] {
			continue
		}
		a, b := k[0], k[1]
		if d == In {
			a, b = b, a
		}
		if a != u {
			continue
		}
		if noWeights {
			w = 1
		}
		out = append(out, Neighbor{ID: b, Weight: w, Type: uint16(k[2])})
	}
	slices.SortFunc(out, func(x, y Neighbor) int { return cmp.Or(cmp.Compare(x.ID, y.ID), cmp.Compare(y.Type, x.Type)) })
	return out
}

// checkView compares v with the model g (its state at v.Seq()) on every
// vertex of vs: neighbors and degrees both ways (in-edges when the view
// has them), edge lookups, and a whole scan.
func checkView(t *testing.T, label string, v *View, g testref.TypedEdges, vs []uint64, ts map[uint16]bool, noWeights bool) {
	t.Helper()
	dirs := []Direction{Out}
	if v.HasIn() {
		dirs = append(dirs, In)
	}
	total := 0
	for _, u := range vs {
		for _, d := range dirs {
			got, err := v.Neighbors(u, d)
			if err != nil {
				t.Fatalf("%s: neighbors of %d (%d): %v", label, u, d, err)
			}
			want := modelNeighbors(g, u, d, ts, noWeights)
			if !slices.Equal(got, want) {
				t.Fatalf("%s at seq %d: %d's neighbors (dir %d) are %v, the model's %v", label, v.Seq(), u, d, got, want)
			}
			if n, err := v.Degree(u, d); err != nil || n != len(want) {
				t.Fatalf("%s: degree of %d (dir %d) = %d, %v; want %d", label, u, d, n, err, len(want))
			}
			if d == Out {
				total += len(want)
				for _, x := range vs {
					has, err := v.HasEdge(u, x)
					if err != nil {
						t.Fatal(err)
					}
					if want := slices.ContainsFunc(want, func(n Neighbor) bool { return n.ID == x }); has != want {
						t.Fatalf("%s: HasEdge(%d, %d) = %v, want %v", label, u, x, has, want)
					}
				}
			}
		}
	}
	n := 0
	if err := v.Each(Out, func(u uint64, nbrs []uint64, _ []float64) { n += len(nbrs) }); err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Fatalf("%s: a whole scan reads %d edges, the model holds %d", label, n, total)
	}
}

// TestViewsFollowAnOracle applies random batches of typed operations to a
// store and to a map of edges alongside, keeping the map's state at every
// seq, and checks every kind of static view against the state at its seq:
// fresh at the newest batch, stale at the last flush, private (of all
// batches and of flushed ones, with and without weights and in-edges)
// still showing its seq after many later batches and flushes, and a view
// of one edge type; and a stateful stream whose every update's view, old
// view, operations and changed vertices agree with the model.
func TestViewsFollowAnOracle(t *testing.T) {
	db, err := Open(t.TempDir(), nil) // in-edges: the default
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ss, err := db.StatefulStream(StatefulOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if ss.View().Seq() != 0 {
		t.Fatalf("the stateful stream of an empty store starts at seq %d", ss.View().Seq())
	}
	r := rand.New(rand.NewPCG(41, 6))
	model := testref.TypedEdges{}
	states := map[uint64]testref.TypedEdges{0: {}} // the model at each seq
	var sent []Change                              // every op applied, as a stream hands it out
	flushed := uint64(0)                           // seq of the last Flush
	vset := map[uint64]bool{}
	var kept []viewCase // views opened early, checked again at the end
	ctx := context.Background()
	streamed := 0 // of sent, what the stateful stream has handed out
	for round := range 60 {
		var b Batch
		for range 1 + r.IntN(30) {
			op := engine.Op{Src: uint64(r.IntN(25)), Dst: uint64(r.IntN(25)), Type: uint16(r.IntN(2)), Weight: float64(1 + r.IntN(9))}
			switch x := r.IntN(100); {
			case x < 20:
				op.Kind, op.Weight = engine.OpDeleteEdge, 0
				b.Delete(op.Src, op.Dst)
			case x < 23:
				op.Kind, op.Dst, op.Weight, op.Type = engine.OpDeleteVertex, 0, 0, 0
				b.DeleteVertex(op.Src)
			default:
				b.Insert(op.Src, op.Dst, op.Weight)
			}
			if op.Kind != engine.OpDeleteVertex {
				b.SetType(op.Type)
				vset[op.Dst] = true
			}
			vset[op.Src] = true
			model.Apply(op)
			c := Change{Op: Op(op.Kind), Src: op.Src, Dst: op.Dst, Weight: op.Weight, Type: op.Type}
			sent = append(sent, c)
		}
		seq, err := db.Apply(&b)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(sent) - b.Len(); i < len(sent); i++ {
			sent[i].Seq = seq
		}
		states[seq] = maps.Clone(model)
		if r.IntN(4) == 0 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			flushed = seq
		}
		vs := slices.Sorted(maps.Keys(vset))
		label := fmt.Sprintf("round %d", round)

		cases := []viewCase{
			{name: "fresh", o: ViewOptions{}},
			{name: "stale", o: ViewOptions{Kind: Stale}},
			{name: "private", o: ViewOptions{Kind: Private, InEdges: true}},
			{name: "private stale", o: ViewOptions{Kind: Private, StaleBase: true}},
			{name: "private without weights", o: ViewOptions{Kind: Private, NoWeights: true}},
			{name: "fresh of type 1", o: ViewOptions{Types: []uint16{1}}, types: map[uint16]bool{1: true}},
			{name: "private of type 0", o: ViewOptions{Kind: Private, Types: []uint16{0}}, types: map[uint16]bool{0: true}},
		}
		for _, c := range cases {
			v, err := db.OpenView(c.o)
			if err != nil {
				t.Fatalf("%s: %s: %v", label, c.name, err)
			}
			if v.Kind() != c.o.Kind {
				t.Fatalf("%s: a %v view says it is %v", label, c.o.Kind, v.Kind())
			}
			wantSeq := seq
			if c.o.Kind == Stale || c.o.StaleBase {
				wantSeq = flushed
			}
			if v.Seq() != wantSeq {
				t.Fatalf("%s: the %s view is at seq %d, want %d", label, c.name, v.Seq(), wantSeq)
			}
			if c.o.Kind == Private && !c.o.InEdges {
				if _, err := v.Neighbors(0, In); !errors.Is(err, ErrNoInEdges) {
					t.Fatalf("%s: in-neighbors of a private view without in-edges: %v", label, err)
				}
			}
			checkView(t, label+" "+c.name, v, states[v.Seq()], vs, c.types, c.o.NoWeights)
			c.v = v
			if round%15 == 0 && c.o.Kind != Fresh {
				kept = append(kept, c)
			} else {
				v.Release()
			}
		}

		// The stateful stream: its updates up to seq, against the model.
		for streamed < len(sent) {
			u, err := ss.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if u.Lost {
				t.Fatalf("%s: the stateful stream lost operations", label)
			}
			old, now := u.Old.Seq(), u.View.Seq()
			checkView(t, label+" stateful view", u.View, states[now], vs, nil, false)
			checkView(t, label+" stateful old view", u.Old, states[old], vs, nil, false)
			var want []Change
			for _, c := range sent[streamed:] {
				if c.Seq > old && c.Seq <= now {
					want = append(want, c)
				}
			}
			got := u.Changes
			for i := range got {
				got[i].EventTime = time.Time{}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: the stateful stream's changes from seq %d to %d are %v, want %v", label, old, now, got, want)
			}
			streamed += len(want)
			// Every vertex whose edges differ is named (or All).
			if !u.All {
				for _, v := range vs {
					for _, d := range []Direction{Out, In} {
						if !slices.Equal(modelNeighbors(states[old], v, d, nil, false), modelNeighbors(states[now], v, d, nil, false)) {
							if _, ok := slices.BinarySearch(u.Changed, v); !ok {
								t.Fatalf("%s: vertex %d's edges changed between seq %d and %d, and Changed (%v) leaves it out", label, v, old, now, u.Changed)
							}
						}
					}
				}
			}
			if !slices.IsSorted(u.Changed) || len(slices.Compact(slices.Clone(u.Changed))) != len(u.Changed) {
				t.Fatalf("%s: Changed is not sorted and unique: %v", label, u.Changed)
			}
			u.View.Release() // the stream's own: does nothing
			if _, err := u.View.Degree(0, Out); err != nil {
				t.Fatalf("%s: the stream's view after a Release of it: %v", label, err)
			}
		}
	}
	// The views kept open: at their seq still, however much came after.
	vs := slices.Sorted(maps.Keys(vset))
	for _, c := range kept {
		checkView(t, "kept "+c.name, c.v, states[c.v.Seq()], vs, c.types, c.o.NoWeights)
		c.v.Release()
		if _, err := c.v.Degree(0, Out); err == nil {
			t.Fatalf("a released %s view still reads", c.name)
		}
	}
}

// TestOpenViewRefuses: options that do not fit a kind, an unknown kind, a
// private view of in-edges of a store without them, and a closed DB.
func TestOpenViewRefuses(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{NoInEdges: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.OpenView(ViewOptions{Kind: Private, InEdges: true}); !errors.Is(err, ErrNoInEdges) {
		t.Fatalf("a private view of in-edges of a store without them: %v", err)
	}
	if _, err := db.OpenView(ViewOptions{Kind: 7}); !errors.Is(err, ErrViewKind) {
		t.Fatalf("view kind 7: %v", err)
	}
	for _, o := range []ViewOptions{{StaleBase: true}, {Kind: Stale, NoWeights: true}, {InEdges: true}} {
		if _, err := db.OpenView(o); err == nil {
			t.Fatalf("%+v opened", o)
		}
	}
	v, err := db.OpenView(ViewOptions{Kind: Stale})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Degree(1, In); !errors.Is(err, ErrNoInEdges) {
		t.Fatalf("in-degree in a store without in-edges: %v", err)
	}
	v.Release()
	ss, err := db.StatefulStream(StatefulOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after the DB closed: %v", err)
	}
	ss.Close()
	if _, err := db.OpenView(ViewOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("OpenView after Close: %v", err)
	}
	if _, err := db.StatefulStream(StatefulOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("StatefulStream after Close: %v", err)
	}
}

// TestStaleStatefulStreamWaitsForAFlush: a stale stateful stream's Next
// returns only once a flush moved past its view, and then at the flushed
// seq with the operations up to it.
func TestStaleStatefulStreamWaitsForAFlush(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ss, err := db.StatefulStream(StatefulOptions{Stale: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var b Batch
	b.Insert(1, 2, 3)
	if _, err := db.Apply(&b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	_, err = ss.Next(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stale stream returned before any flush: %v", err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	u, err := ss.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u.View.Seq() != 1 || u.View.Kind() != Stale || len(u.Changes) != 1 || u.Changes[0].Src != 1 || u.Changes[0].Dst != 2 {
		t.Fatalf("after the flush: view at seq %d (%v), changes %v", u.View.Seq(), u.View.Kind(), u.Changes)
	}
	if ok, err := u.View.HasEdge(1, 2); err != nil || !ok {
		t.Fatalf("the stale view after the flush lacks 1->2: %v %v", ok, err)
	}
}
