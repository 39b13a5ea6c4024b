package views

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
)

// adjOfSimple is a simple graph's out-lists as topoAdj gives a Topo's.
func adjOfSimple(g testref.Edges) map[uint64][]string {
	type nw struct {
		id uint64
		w  float64
	}
	ls := map[uint64][]nw{}
	for e, w := range g {
		ls[e[0]] = append(ls[e[0]], nw{e[1], w})
	}
	m := map[uint64][]string{}
	for v, l := range ls {
		slices.SortFunc(l, func(a, b nw) int {
			if a.id < b.id {
				return -1
			}
			if a.id > b.id {
				return 1
			}
			return 0
		})
		for _, x := range l {
			m[v] = append(m[v], fmt.Sprintf("%d@%g", x.id, x.w))
		}
	}
	return m
}

// Topologies of several type sets, over random typed upserts, deletes and
// vertex deletes (parallel edges of several types between the same
// vertices, flushes, compactions): each topology equals the oracle's
// simple graph of its types after every pull, and the operations its
// stream hands out, applied to a plain map from the previous pull's
// graph, give that graph too, with a Prior that says what was there.
func TestTypedTopologiesFollowTheOracle(t *testing.T) {
	s := smallStore(t, true)
	m, err := NewManager(s, Config{LogCapacity: 1 << 14, IndexRebuildMin: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	type follower struct {
		name  string
		types *engine.TypeSet
		st    *TopoStream
		g     testref.Edges // the graph as its stream's operations make it
		// logged is the operations of its types (and vertex deletes)
		// applied since its last pull, as logged.
		logged []engine.Op
	}
	r := rand.New(rand.NewPCG(7, 8))
	o := testref.TypedEdges{}
	var fs []*follower
	apply := func(ops []engine.Op) {
		if _, err := s.Apply(batchOf(ops)); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			o.Apply(op)
			for _, f := range fs {
				if op.Kind == engine.OpDeleteVertex || f.types == nil || f.types.Has(op.Type) {
					f.logged = append(f.logged, op)
				}
			}
		}
	}
	const nv = 30
	randomOps := func(types []uint16, n int) []engine.Op {
		var ops []engine.Op
		for range n {
			a, b := uint64(r.IntN(nv)), uint64(r.IntN(nv))
			ty := types[r.IntN(len(types))]
			switch x := r.IntN(100); {
			case x < 60:
				ops = append(ops, engine.Op{Src: a, Dst: b, Type: ty, Weight: float64(1 + r.IntN(9)), Kind: engine.OpUpsert})
			case x < 97:
				ops = append(ops, engine.Op{Src: a, Dst: b, Type: ty, Kind: engine.OpDeleteEdge})
			default:
				ops = append(ops, engine.Op{Src: a, Kind: engine.OpDeleteVertex})
			}
		}
		return ops
	}
	// Untyped edges first: the topology of every type starts as the plain
	// one, and must start normalizing when the first typed edge comes.
	apply(randomOps([]uint16{0}, 200))
	one, two := engine.TypesOf(1), engine.TypesOf(0, 2)
	for _, f := range []*follower{{name: "all"}, {name: "{1}", types: &one}, {name: "{0,2}", types: &two}} {
		if f.st, err = m.TopologyOf(f.types).Stream(StreamOptions{Presence: true}); err != nil {
			t.Fatal(err)
		}
		defer f.st.Close()
		fs = append(fs, f)
	}
	check := func(round int) {
		for _, f := range fs {
			u, err := f.st.PullNow(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer u.Done() // before a Fatalf's Close
			want := o.Simple(f.types)
			defer func() { f.logged = f.logged[:0] }()
			if got, w := topoAdj(t, u.G, engine.Out), adjOfSimple(want); !sameAdj(got, w) {
				t.Fatalf("round %d, %s: the topology differs from the oracle: %s", round, f.name, adjDiff(got, w))
			}
			if u.Lost {
				f.g = want.Clone()
			} else {
				// Each operation as logged (LoggedOp), but for the edge
				// deletes vertex deletes expand into: its own kind,
				// weight and type, whatever the topology made of it.
				var got []engine.Op
				for k := range u.Edges {
					if u.Prior[k] != Expansion {
						got = append(got, u.LoggedOp(k))
					} else if lo := u.LoggedOp(k); lo != u.Edges[k].Op {
						t.Fatalf("round %d, %s: an expansion logged as %+v", round, f.name, lo)
					}
				}
				if !slices.Equal(got, f.logged) {
					t.Fatalf("round %d, %s: the logged operations differ:\n got %v\nwant %v", round, f.name, got, f.logged)
				}
				if u.Logged != nil && len(u.Logged) != len(u.Edges) {
					t.Fatalf("round %d, %s: %d logged for %d edges", round, f.name, len(u.Logged), len(u.Edges))
				}
				for k, e := range u.Edges {
					key := [2]uint64{e.Op.Src, e.Op.Dst}
					_, had := f.g[key]
					switch e.Op.Kind {
					case engine.OpUpsert, engine.OpDeleteEdge:
						// An op of the set's one type as logged, or a
						// normalized one (type 0).
						if e.Op.Type != 0 && f.types != nil && !f.types.Has(e.Op.Type) {
							t.Fatalf("round %d, %s: an op of another type: %+v", round, f.name, e.Op)
						}
						if p := u.Prior[k]; p != Expansion && (p == WasPresent) != had {
							t.Fatalf("round %d, %s: op %d (%+v): prior %d, but the edge was there: %v", round, f.name, k, e.Op, p, had)
						}
						if e.Op.Kind == engine.OpUpsert {
							f.g[key] = e.Op.Weight
						} else {
							delete(f.g, key)
						}
					}
				}
				if got, w := adjOfSimple(f.g), adjOfSimple(want); !sameAdj(got, w) {
					t.Fatalf("round %d, %s: its stream's operations make %s", round, f.name, adjDiff(got, w))
				}
			}
		}
	}
	check(0)
	for round := 1; round <= 60; round++ {
		apply(randomOps([]uint16{0, 1, 2, 3}, 1+r.IntN(80)))
		switch r.IntN(6) {
		case 0:
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := s.CompactAll(); err != nil {
				t.Fatal(err)
			}
		}
		check(round)
	}
	// Topologies built on a typed store (every stream closed: they are
	// dropped) read parallel edges from their typed views.
	for _, f := range fs {
		f.st.Close()
	}
	for _, ts := range []*engine.TypeSet{nil, &two} {
		st, err := m.TopologyOf(ts).Stream(StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u, err := st.PullNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !u.Lost {
			t.Error("the first pull of a new topology is not a build")
		}
		got, w := topoAdj(t, u.G, engine.Out), adjOfSimple(o.Simple(ts))
		u.Done()
		st.Close()
		if !sameAdj(got, w) {
			t.Fatalf("a topology of %v built on a typed store: %s", ts, adjDiff(got, w))
		}
	}
}

// The vertex index the topologies share holds every vertex, whatever the
// types of the topology that built it first: a topology of type 1 built
// first, then one of every type, which must index vertices with edges of
// type 0 only.
func TestTypedTopologyFirstIndexesEveryVertex(t *testing.T) {
	s := smallStore(t, false)
	m, err := NewManager(s, Config{LogCapacity: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	o := testref.TypedEdges{}
	apply := func(ops ...engine.Op) {
		if _, err := s.Apply(batchOf(ops)); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			o.Apply(op)
		}
	}
	apply(engine.Op{Src: 1, Dst: 2, Type: 1, Weight: 1, Kind: engine.OpUpsert},
		engine.Op{Src: 5, Dst: 6, Weight: 1, Kind: engine.OpUpsert}) // 5 and 6: type 0 only
	one := engine.TypesOf(1)
	var sts []*TopoStream
	check := func(what string) {
		for k, ts := range []*engine.TypeSet{&one, nil} {
			u, err := sts[k].PullNow(ctx)
			if err != nil {
				t.Fatalf("%s, types %v: %v", what, ts, err)
			}
			got, w := topoAdj(t, u.G, engine.Out), adjOfSimple(o.Simple(ts))
			u.Done()
			if !sameAdj(got, w) {
				t.Fatalf("%s, types %v: %s", what, ts, adjDiff(got, w))
			}
		}
	}
	for _, ts := range []*engine.TypeSet{&one, nil} {
		st, err := m.TopologyOf(ts).Stream(StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sts = append(sts, st)
		u, err := st.PullNow(ctx) // the type-1 topology builds the index first
		if err != nil {
			t.Fatal(err)
		}
		u.Done()
	}
	check("built")
	apply(engine.Op{Src: 5, Dst: 7, Weight: 3, Kind: engine.OpUpsert}, engine.Op{Src: 6, Dst: 1, Type: 1, Weight: 2, Kind: engine.OpUpsert})
	check("advanced")
}
