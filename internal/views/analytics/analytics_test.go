package analytics

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/views"
)

// harness drives a store with random batches from the test goroutine,
// recording the oracle graph after every batch, and hands a stateful
// stream's updates to one analytic.
type harness struct {
	t      *testing.T
	s      *engine.Store
	m      *views.Manager
	r      *rand.Rand
	states map[uint64]edges
	cur    edges
	step   int
	ids    idMode
	// prev and at are the seqs before and after the last update drive
	// made (what check gets describes it).
	prev, at uint64
	// unit: every upsert has weight 1 (an unweighted graph).
	unit bool
	// log is every operation applied, in order.
	log []engine.Op
}

// idMode is how a harness names its vertices.
type idMode int

const (
	denseIDs  idMode = iota // small numbers
	keyBand                 // small numbers and a few string-key ids
	spreadIDs               // numbers over the whole 62-bit range, keys and small numbers, mixed (spreadID)
)

// spreadID names vertex number x: a quarter stay small numbers (so that
// the vertex index's identity region grows and its layout is rebuilt), a
// quarter are string-key ids, a quarter scatter over [0, 2^62) and a
// quarter lie right below 2^62.
func spreadID(x uint64) uint64 {
	switch x % 4 {
	case 0:
		return x / 4
	case 1:
		return engine.HighIDBase + x/4
	case 2:
		return (x*0x9E3779B97F4A7C15)>>2 | 1<<40
	}
	return engine.HighIDBase - 1 - x/4
}

func newHarness(t *testing.T, seed uint64, inEdges bool, ids idMode) *harness {
	s, err := engine.Open(t.TempDir(), &engine.Options{MemGraphBytes: 64 << 10, TargetSegmentBytes: 16 << 10,
		SizeRatio: 3, L0CompactionTrigger: 2, MaxLevels: 4, InEdges: inEdges})
	if err != nil {
		t.Fatal(err)
	}
	// Rebuild the vertex index's layout as soon as 8 vertices are hashed,
	// so that analytics meet new generations (and move their state) often.
	m, err := views.NewManager(s, views.Config{IndexRebuildMin: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return &harness{t: t, s: s, m: m, r: rand.New(rand.NewPCG(seed, 5)), states: map[uint64]edges{0: {}}, cur: edges{}, ids: ids}
}

// vertex draws from a universe that grows with the steps (so the low id
// band grows under the high one and dense indexes move).
func (h *harness) vertex() uint64 {
	nv := uint64(12 + h.step/3)
	switch h.ids {
	case keyBand:
		if h.r.IntN(6) == 0 {
			return engine.HighIDBase + h.r.Uint64N(8)
		}
	case spreadIDs:
		return spreadID(h.r.Uint64N(nv))
	}
	return h.r.Uint64N(nv)
}

// batch applies one random batch: mostly inserts (some re-weighting
// existing edges; weights in quarters from 0 to 4.75, zero included), some
// edge deletes (mostly of existing edges) and a few vertex deletes when
// vdel.
func (h *harness) batch(n int, insertOnly, vdel bool) {
	var b engine.Batch
	var ops []engine.Op
	var keys []ekey
	for k := range h.cur {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	for i := 0; i < n; i++ {
		x := h.r.IntN(100)
		switch {
		case x < 65 || insertOnly:
			s, d, w := h.vertex(), h.vertex(), float64(h.r.IntN(20))/4
			if h.unit {
				w = 1
			}
			if len(keys) > 0 && h.r.IntN(5) == 0 {
				k := keys[h.r.IntN(len(keys))]
				s, d = k[0], k[1]
			}
			ops = append(ops, engine.Op{Src: s, Dst: d, Weight: w, Kind: engine.OpUpsert})
		case x < 95 || !vdel:
			s, d := h.vertex(), h.vertex()
			if len(keys) > 0 && h.r.IntN(4) != 0 {
				k := keys[h.r.IntN(len(keys))]
				s, d = k[0], k[1]
			}
			ops = append(ops, engine.Op{Src: s, Dst: d, Kind: engine.OpDeleteEdge})
		default:
			ops = append(ops, engine.Op{Src: h.vertex(), Kind: engine.OpDeleteVertex})
		}
	}
	for _, o := range ops {
		testref.AddOp(&b, o)
		h.cur.Apply(o)
	}
	h.log = append(h.log, ops...)
	seq, err := h.s.Apply(&b)
	if err != nil {
		h.t.Fatal(err)
	}
	h.states[seq] = h.cur.Clone()
	h.step++
	switch h.r.IntN(12) {
	case 0:
		if err := h.s.Flush(); err != nil {
			h.t.Fatal(err)
		}
	case 1:
		if err := h.s.CompactAll(); err != nil {
			h.t.Fatal(err)
		}
	}
}

// drive registers a on a topology stream, computes it, then runs rounds of
// a few batches and one pull + Update, calling check after each with the
// oracle graph at the update's seq. It returns how many updates were
// incremental and how many recomputed.
func (h *harness) drive(a Analytic, rounds int, insertOnly, vdel bool,
	check func(g edges, u *views.Update)) (incr, recomp int) {
	h.t.Helper()
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		h.batch(20, true, false)
	}
	// pull returns the next update's seq, whether it recomputed, and what
	// check gets (nil for the first compute).
	var pull func(first bool) (uint64, bool, *views.Update)
	switch a := a.(type) {
	case TopoAnalytic:
		pu, withPrior := a.(priorUpdater)
		st, err := h.m.Topology().Stream(views.StreamOptions{Presence: withPrior})
		if err != nil {
			h.t.Fatal(err)
		}
		defer st.Close()
		pull = func(first bool) (uint64, bool, *views.Update) {
			u, err := st.Pull(ctx)
			if err != nil {
				h.t.Fatal(err)
			}
			defer u.Done()
			if first != u.Lost {
				h.t.Fatalf("first pull %v, lost %v", first, u.Lost)
			}
			if first {
				if err := a.Recompute(ctx, u.G); err != nil {
					h.t.Fatal(err)
				}
				return u.G.Seq, true, nil
			}
			var re bool
			if withPrior {
				re, err = pu.UpdatePrior(ctx, u)
			} else {
				re, err = a.Update(ctx, u.G, u.Edges)
			}
			if err != nil {
				h.t.Fatalf("update: %v", err)
			}
			return u.G.Seq, re, &views.Update{Edges: u.Edges}
		}
	default:
		h.t.Fatalf("%T is not driven by a topology", a)
	}
	seq, _, _ := pull(true)
	h.prev, h.at = 0, seq
	check(h.states[seq], nil)
	for round := 0; round < rounds; round++ {
		for i := 0; i < 1+h.r.IntN(3); i++ {
			h.batch(1+h.r.IntN(12), insertOnly, vdel)
		}
		seq, re, u := pull(false)
		h.prev, h.at = h.at, seq
		if re {
			recomp++
		} else {
			incr++
		}
		g, ok := h.states[seq]
		if !ok {
			h.t.Fatalf("no oracle state at seq %d", seq)
		}
		check(g, u)
	}
	ix := h.m.IndexStats()
	h.t.Logf("vertex index: %+v", ix)
	indexed := false
	switch a.(type) {
	case *bfs, *wcc, *pagerank, *sssp: // per-vertex state over the index
		indexed = true
	}
	if indexed && h.ids == spreadIDs && (ix.Generations < 3 || ix.Hashed == 0 || ix.Dense == 0 || ix.Keys == 0) {
		h.t.Fatalf("the analytic met too few index layouts: %+v", ix)
	}
	return incr, recomp
}

// allIDs lists every id of the oracle graph plus a few absent ones.
func allIDs(g edges) []uint64 {
	vs := []uint64{0, 1, 2, 999, engine.HighIDBase + 3, engine.HighIDBase - 1, 1<<61 + 12345, spreadID(2), spreadID(3)}
	for v := range g.Vertices() {
		vs = append(vs, v)
	}
	return vs
}

// sampleVariant skips variant i under the race detector unless it is one
// of the two richest (deletes, vertex deletes and in-edges, over dense
// ids and over spread ids: in-edges and spread-ids-in-edges): every
// variant runs without the race detector (volume.Mark).
func sampleVariant(t *testing.T, i int) {
	t.Helper()
	if i%4 != 3 {
		volume.Mark(t)
	}
}

type variant struct {
	name                      string
	inEdges, insertOnly, vdel bool
	ids                       idMode
	root                      uint64 // of bfs and sssp
}

var variants = []variant{
	{"inserts", false, true, false, denseIDs, 1},
	{"inserts-deletes", false, false, false, denseIDs, 1},
	{"vertex-deletes", false, false, true, denseIDs, 1},
	{"in-edges", true, false, true, denseIDs, 1},
	{"key-band", true, false, true, keyBand, 1},
	{"spread-ids-inserts", false, true, false, spreadIDs, spreadID(2)},
	{"spread-ids", false, false, true, spreadIDs, spreadID(2)},
	{"spread-ids-in-edges", true, false, true, spreadIDs, spreadID(3)},
}

func TestBFSMatchesReference(t *testing.T) {
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			sampleVariant(t, i)
			h := newHarness(t, uint64(i+1), v.inEdges, v.ids)
			a := newBFS(Spec{Name: "bfs", Type: "bfs"}, v.root)
			incr, recomp := h.drive(a, 120, v.insertOnly, v.vdel, func(g edges, u *views.Update) {
				want := refBFS(g, v.root)
				for _, x := range allIDs(g) {
					got, _ := a.Vertex(x)
					wl, ok := want[x]
					if !ok {
						wl = -1
					}
					if got.(VertexLevel).Level != wl {
						t.Fatalf("seq %d: level of %d = %d, reference %d", a.Seq(), x, got.(VertexLevel).Level, wl)
					}
				}
				if s := a.Summary().(BFSSummary); s.Reached != len(want) {
					t.Fatalf("reached %d, reference %d", s.Reached, len(want))
				}
				checkParents(t, a, g, want)
			})
			t.Logf("%d incremental, %d recomputed", incr, recomp)
			if v.insertOnly && recomp > 0 {
				t.Fatalf("inserts only, yet %d recomputes", recomp)
			}
			if incr < 20 {
				t.Fatalf("only %d incremental updates", incr)
			}
		})
	}
}

func TestWCCMatchesReference(t *testing.T) {
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			sampleVariant(t, i)
			h := newHarness(t, uint64(10+i), v.inEdges, v.ids)
			a := newWCC(Spec{Name: "wcc", Type: "wcc"})
			incr, recomp := h.drive(a, 120, v.insertOnly, v.vdel, func(g edges, _ *views.Update) { checkWCC(t, a, g) })
			t.Logf("%d incremental, %d recomputed", incr, recomp)
			if v.insertOnly && recomp > 0 {
				t.Fatalf("inserts only, yet %d recomputes", recomp)
			}
			if incr < 10 {
				t.Fatalf("only %d incremental updates", incr)
			}
		})
	}
}

// checkParents fails t unless every vertex a reaches but its root has a
// parent (a's repairs rely on them, repair.parent) that is an in-neighbor
// in g one level nearer by want, the reference's levels, and the root and
// the unreached have none (-1). A state loaded from a checkpoint has no
// parents until its first update.
func checkParents(t *testing.T, a *bfs, g edges, want map[uint64]int) {
	t.Helper()
	st := a.st
	if st.parent == nil {
		return
	}
	for i, l := range st.level {
		v := st.ids.ID(i)
		p := st.parent[i]
		if l <= 0 {
			if p != -1 { // the root, and the unreached
				t.Fatalf("seq %d: vertex %d at level %d has parent %d", a.Seq(), v, l, p)
			}
			continue
		}
		if p < 0 {
			t.Fatalf("seq %d: vertex %d at level %d has no parent", a.Seq(), v, l)
		}
		u := st.ids.ID(int(p))
		if _, ok := g[ekey{u, v}]; !ok || want[u]+1 != want[v] {
			t.Fatalf("seq %d: the parent of %d (level %d) is %d: edge %v, its level %d", a.Seq(), v, want[v], u, ok, want[u])
		}
	}
}

// checkWCC fails t unless a names every vertex of g by the component the
// reference finds.
func checkWCC(t *testing.T, a *wcc, g edges) {
	t.Helper()
	want := refWCC(g)
	for _, x := range allIDs(g) {
		got, _ := a.Vertex(x)
		wc, ok := want[x]
		if !ok {
			wc = x // no edges: alone
		}
		if c := got.(VertexComponent).Component; c != wc {
			t.Fatalf("component of %d = %d, reference %d", x, c, wc)
		}
	}
}

// stepped is an analytic driven batch by batch on a store of its own:
// apply applies ops to the store and to cur (the reference's edges),
// brings the analytic to them (its first compute, then updates, which
// must not recompute) and calls check.
type stepped struct {
	t  *testing.T
	s  *engine.Store
	ts *views.TopoStream
	a  interface {
		Analytic
		TopoAnalytic
	}
	cur   edges
	check func(ops []engine.Op)
}

func newStepped(t *testing.T, a interface {
	Analytic
	TopoAnalytic
}, check func(cur edges, ops []engine.Op)) *stepped {
	s, m := openStore(t)
	ts, err := m.Topology().Stream(views.StreamOptions{Presence: NeedsPresence(a.Spec())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	st := &stepped{t: t, s: s, ts: ts, a: a, cur: edges{}}
	st.check = func(ops []engine.Op) { check(st.cur, ops) }
	return st
}

func (st *stepped) apply(ops ...engine.Op) {
	t, ctx := st.t, context.Background()
	t.Helper()
	applyOps(t, st.s, st.cur, ops)
	u, err := st.ts.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Done()
	if st.a.Seq() == 0 {
		err = st.a.Recompute(ctx, u.G)
	} else if re, err2 := UpdateTopo(ctx, st.a, u); re || err2 != nil {
		t.Fatalf("recomputed %v, %v", re, err2)
	}
	if err != nil {
		t.Fatal(err)
	}
	st.check(ops)
}

// TestWCCSplitSeesNewEdgesBetweenComponents: a vertex cut from its
// component in the same batch that gives it an edge (out, or in) to a
// vertex of another component, one level below it in that one's support
// forest, is not supported by it (their labels differ): it leaves its
// component and joins the other, whose label it reads only because the
// batch inserted that edge.
func TestWCCSplitSeesNewEdgesBetweenComponents(t *testing.T) {
	for _, out := range []bool{true, false} {
		t.Run(fmt.Sprintf("out=%v", out), func(t *testing.T) {
			a := newWCC(Spec{Name: "wcc", Type: "wcc"})
			apply := newStepped(t, a, func(cur edges, _ []engine.Op) { checkWCC(t, a, cur) }).apply
			up := func(x, y uint64) engine.Op { return engine.Op{Src: x, Dst: y, Weight: 1, Kind: engine.OpUpsert} }
			del := func(x, y uint64) engine.Op { return engine.Op{Src: x, Dst: y, Kind: engine.OpDeleteEdge} }
			// Component 1: hub 1 (its forest's root), 2 at level 1, and 3
			// at level 2 below 2 only. Component 10: hub 10, 11 at level 1.
			apply(up(1, 2), up(2, 3), up(1, 4), up(1, 5), up(1, 6),
				up(10, 11), up(10, 12), up(10, 13), up(10, 14), up(11, 15))
			apply(del(1, 6)) // the first delete builds the forest
			if out {
				apply(del(2, 3), up(3, 11))
			} else {
				apply(del(2, 3), up(11, 3))
			}
			c3, _ := a.Vertex(3)
			c11, _ := a.Vertex(11)
			if c3 != c11 || c3.(VertexComponent).Size != 7 {
				t.Fatalf("vertex 3 is in component %+v, 11 in %+v: want one of 7", c3, c11)
			}
		})
	}
}

// TestRepairsReadInsertsThroughTheAffected: a unit repair filters the
// batch's inserts on the levels before the batch (in the background, while
// it decides the cut vertices). An insert that shortens its head only
// after the repair has raised or restarted a level is one into or out of
// an affected vertex: the restart must read the first, the search the
// second, or the results differ from the reference.
func TestRepairsReadInsertsThroughTheAffected(t *testing.T) {
	for _, typ := range []string{"bfs", "sssp"} {
		t.Run(typ, func(t *testing.T) {
			var a interface {
				Analytic
				TopoAnalytic
			} = newBFS(Spec{Name: "bfs", Type: "bfs"}, 1)
			if typ == "sssp" {
				a = newSSSP(Spec{Name: "sssp", Type: "sssp"}, 1)
			}
			apply := newStepped(t, a, func(cur edges, ops []engine.Op) {
				want := refBFS(cur, 1)
				for _, x := range allIDs(cur) {
					got, _ := a.Vertex(x)
					wl, ok := want[x]
					if !ok {
						wl = -1
					}
					gl := -1
					switch g := got.(type) {
					case VertexLevel:
						gl = g.Level
					case VertexDistance:
						if g.Reachable {
							gl = int(g.Distance)
						}
					}
					if gl != wl {
						t.Fatalf("after %v: level of %d = %d, reference %d", ops, x, gl, wl)
					}
				}
			}).apply
			up := func(x, y uint64) engine.Op { return engine.Op{Src: x, Dst: y, Weight: 1, Kind: engine.OpUpsert} }
			del := func(x, y uint64) engine.Op { return engine.Op{Src: x, Dst: y, Kind: engine.OpDeleteEdge} }
			// Levels: 1 (the root) 0; 2, 3, 10 1; 4, 5, 11 2; 6, 9 3.
			apply(up(1, 2), up(1, 3), up(2, 4), up(3, 5), up(4, 6), up(1, 10), up(10, 11), up(11, 9))
			// Into an affected vertex: 4 loses its only support, and the
			// insert from 5 (level 2 as 4 was: shortening nothing then)
			// is its way back, at 3.
			apply(del(2, 4), up(5, 4))
			// Out of one: 5 loses its only support and comes back nearer
			// by an insert from the root; its insert to 9 (level 3, as 5's
			// 2 + 1 was) then makes 9 2.
			apply(del(3, 5), up(1, 5), up(5, 9))
		})
	}
}

func TestPageRankMatchesReference(t *testing.T) {
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			sampleVariant(t, i)
			h := newHarness(t, uint64(20+i), v.inEdges, v.ids)
			// 0.85^k < 1e-11 takes k > 155 iterations from a cold start.
			spec := Spec{Name: "pr", Type: "pagerank", Tolerance: 1e-11, MaxIterations: 1000}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			a := newPageRank(spec)
			iters := 0
			h.drive(a, 60, v.insertOnly, v.vdel, func(g edges, u *views.Update) {
				want := refPageRank(g, 0.85)
				l1 := 0.0
				for _, x := range allIDs(g) {
					got, _ := a.Vertex(x)
					l1 += math.Abs(got.(VertexRank).Rank - want[x])
				}
				if l1 > 1e-8 {
					t.Fatalf("seq %d: L1 distance to the reference %g", a.Seq(), l1)
				}
				if u != nil {
					iters += a.Summary().(PageRankSummary).Iterations
				}
			})
			t.Logf("%d iterations over 60 warm-started updates", iters)
		})
	}
}

// TestPageRankColdStart: a recompute starts from 1/N at the N vertices
// with edges, whatever else the id space holds (here half of the numeric
// identity region has no edge), so a few iterations give the reference's
// ranks after as many iterations, under any ids.
func TestPageRankColdStart(t *testing.T) {
	for _, ids := range []idMode{denseIDs, spreadIDs} {
		h := newHarness(t, 77, false, ids)
		name := func(x uint64) uint64 {
			if ids == spreadIDs {
				return spreadID(x)
			}
			return x
		}
		var b engine.Batch
		g := edges{}
		for x := uint64(0); x < 200; x += 2 { // even numbers only: the odd ones have no edges
			for _, y := range []uint64{(x + 2) % 200, (x * 7) % 200, (x * x) % 200} {
				op := engine.Op{Src: name(x), Dst: name(y), Weight: 1, Kind: engine.OpUpsert}
				b.Insert(op.Src, op.Dst)
				g.Apply(op)
			}
		}
		if _, err := h.s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		v, err := h.m.Static(views.StaticOptions{Kind: views.Fresh})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := v.IDs()
		if err != nil {
			t.Fatal(err)
		}
		if ids == denseIDs && sp.Len() <= len(g.Vertices()) {
			t.Fatalf("the id space (%d) holds no id without edges: the test checks nothing", sp.Len())
		}
		for _, steps := range []int{1, 3} {
			spec := Spec{Name: "pr", Type: "pagerank", Tolerance: 1e-12, MaxIterations: steps}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			a := newPageRank(spec)
			if err := a.Recompute(context.Background(), topoOf(t, v)); err != nil {
				t.Fatal(err)
			}
			want := refPRSteps(g, 0.85, steps)
			for x := range g.Vertices() {
				got, _ := a.Vertex(x)
				if r := got.(VertexRank).Rank; math.Abs(r-want[x]) > 1e-12 {
					t.Fatalf("ids %d, %d iterations: vertex %d has rank %v, the reference %v", ids, steps, x, r, want[x])
				}
			}
		}
		v.Release()
	}
}

func TestSSSPMatchesReference(t *testing.T) {
	for i, v := range variants {
		for _, unit := range []bool{false, true} { // unweighted: the repair is bfs's
			t.Run(fmt.Sprintf("%s/unit=%v", v.name, unit), func(t *testing.T) {
				sampleVariant(t, i)
				h := newHarness(t, uint64(30+i), v.inEdges, v.ids)
				h.unit = unit
				a := newSSSP(Spec{Name: "sssp", Type: "sssp"}, v.root)
				incr, recomp := h.drive(a, 120, v.insertOnly, v.vdel, func(g edges, _ *views.Update) {
					want := refSSSP(g, v.root)
					for _, x := range allIDs(g) {
						got, _ := a.Vertex(x)
						d := got.(VertexDistance)
						wd, ok := want[x]
						if d.Reachable != ok || (ok && math.Abs(d.Distance-wd) > 1e-9) {
							t.Fatalf("seq %d: distance of %d = %+v, reference %v (reachable %v)", a.Seq(), x, d, wd, ok)
						}
					}
				})
				t.Logf("%d incremental, %d recomputed", incr, recomp)
				if incr < 10 {
					t.Fatalf("only %d incremental updates", incr)
				}
			})
		}
	}
}

func TestSSSPRejectsNegativeWeights(t *testing.T) {
	h := newHarness(t, 99, false, denseIDs)
	a := newSSSP(Spec{Name: "sssp", Type: "sssp"}, 1)
	var b engine.Batch
	b.InsertWeighted(1, 2, 3)
	b.InsertWeighted(2, 3, -1)
	if _, err := h.s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	v, _ := h.m.Static(views.StaticOptions{})
	defer v.Release()
	if err := a.Recompute(context.Background(), topoOf(t, v)); err != nil {
		t.Fatal(err)
	}
	if s := a.Summary().(SSSPSummary); s.Error == "" {
		t.Fatalf("a negative weight must be reported: %+v", s)
	}
}

func TestDegreeMonitorMatchesReference(t *testing.T) {
	for i, v := range variants {
		for _, dir := range []string{"out", "in", "both"} {
			t.Run(v.name+"/"+dir, func(t *testing.T) {
				sampleVariant(t, i)
				h := newHarness(t, uint64(40+i), v.inEdges, v.ids)
				var got []Alert
				const thr = 3
				a := newDegree(Spec{Name: "deg", Type: "degree", Direction: dir, Threshold: thr}, func(al []Alert) { got = append(got, al...) })
				// The oracle takes the operations one at a time: an upsert
				// that takes its source (out, both) or its destination (in,
				// both) above the threshold raises that vertex's alert,
				// source first.
				g, above, done := edges{}, map[uint64]bool{}, 0
				alerts := 0
				h.drive(a, 100, v.insertOnly, v.vdel, func(at edges, u *views.Update) {
					var want []uint64
					for _, o := range h.log[done:] {
						g.Apply(o)
						now := map[uint64]bool{}
						for x, d := range refDegrees(g, dir) {
							if d > thr {
								now[x] = true
							}
						}
						if o.Kind == engine.OpUpsert && u != nil {
							var cand []uint64
							if dir != "in" {
								cand = append(cand, o.Src)
							}
							if dir != "out" && (len(cand) == 0 || o.Dst != o.Src) {
								cand = append(cand, o.Dst)
							}
							for _, x := range cand {
								if now[x] && !above[x] {
									want = append(want, x)
								}
							}
						}
						above = now
					}
					done = len(h.log)
					if fmt.Sprint(g) != fmt.Sprint(at) {
						t.Fatalf("seq %d: the oracle's operations do not make the pull's graph", a.Seq())
					}
					var gotV []uint64
					for _, al := range got {
						gotV = append(gotV, al.Vertex)
						if al.Kind != "degree" || !(al.Value > thr) {
							t.Fatalf("alert %+v", al)
						}
					}
					if fmt.Sprint(gotV) != fmt.Sprint(want) && !(len(gotV) == 0 && len(want) == 0) {
						t.Fatalf("seq %d: alerts for %v, reference %v", a.Seq(), gotV, want)
					}
					if s := a.Summary().(MonitorSummary); s.Above != len(above) {
						t.Fatalf("above %d, reference %d", s.Above, len(above))
					}
					alerts += len(got)
					got = nil
				})
				if alerts == 0 {
					t.Fatal("no alert was ever raised")
				}
			})
		}
	}
}

// TestFanMonitorsMatchReference runs fanin and fanout, with count and
// time windows, over a plain stream against an oracle that takes the
// operations one at a time: after each pull, the alerts are exactly the
// upserts that took their vertex above the threshold, in order.
func TestFanMonitorsMatchReference(t *testing.T) {
	for _, typ := range []string{"fanin", "fanout"} {
		for _, win := range []views.Window{{Edges: 15}, {Duration: 5 * time.Second}} {
			t.Run(fmt.Sprintf("%s/%+v", typ, win), func(t *testing.T) {
				h := newHarness(t, 50, false, spreadIDs)
				now := time.Unix(100, 0)
				m2, err := views.NewManager(h.s, views.Config{Now: func() time.Time { return now }})
				if err != nil {
					t.Fatal(err)
				}
				defer m2.Close()
				var got []Alert
				const thr = 2
				spec := Spec{Name: typ, Type: typ, Threshold: thr, WindowEdges: win.Edges, WindowDuration: win.Duration}
				if err := spec.Validate(); err != nil {
					t.Fatal(err)
				}
				a := newFan(spec, func(al []Alert) { got = append(got, al...) })
				st, err := m2.Stream(views.StreamOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// The oracle's window: every operation (upsert or not) with
				// the time it was applied at (µs).
				type held struct {
					key uint64
					t   int64
					up  bool
				}
				var q []held
				count, above := map[uint64]int{}, map[uint64]bool{}
				done, total := 0, 0
				for round := 0; round < 80; round++ {
					for i := 0; i < 1+h.r.IntN(3); i++ {
						h.batch(1+h.r.IntN(6), false, true)
					}
					b, err := st.Pull(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					a.Consume(b)
					var want []uint64
					for _, o := range h.log[done:] {
						x := held{o.Src, now.UnixMicro(), o.Kind == engine.OpUpsert}
						if typ == "fanin" {
							x.key = o.Dst
						}
						q = append(q, x)
						if x.up {
							count[x.key]++
						}
						for len(q) > 0 && (win.Edges > 0 && len(q) > win.Edges || win.Duration > 0 && q[0].t <= x.t-win.Duration.Microseconds()) {
							if q[0].up {
								if count[q[0].key]--; count[q[0].key] <= thr {
									delete(above, q[0].key)
								}
							}
							q = q[1:]
						}
						if x.up && count[x.key] > thr && !above[x.key] {
							above[x.key] = true
							want = append(want, x.key)
						}
					}
					done = len(h.log)
					var gotV []uint64
					for _, al := range got {
						gotV = append(gotV, al.Vertex)
					}
					if fmt.Sprint(gotV) != fmt.Sprint(want) && !(len(gotV) == 0 && len(want) == 0) {
						t.Fatalf("round %d: alerts %v, reference %v", round, gotV, want)
					}
					if s := a.Summary().(MonitorSummary); s.Above != len(above) {
						t.Fatalf("round %d: above %d, reference %d", round, s.Above, len(above))
					}
					total += len(got)
					got = nil
					now = now.Add(time.Duration(h.r.IntN(2000)) * time.Millisecond)
				}
				if total == 0 {
					t.Fatal("no alert was ever raised")
				}
			})
		}
	}
}

// TestFraudCyclesMatchReference: after every pull, the cycles reported are
// exactly the cycles of length <= k in the new graph that were not in the
// old one.
func TestFraudCyclesMatchReference(t *testing.T) {
	for i, v := range variants {
		for _, k := range []int{3, 4} {
			t.Run(fmt.Sprintf("%s/k=%d", v.name, k), func(t *testing.T) {
				sampleVariant(t, i)
				h := newHarness(t, uint64(60+i), v.inEdges, v.ids)
				var got []Alert
				spec := Spec{Name: "fraud", Type: "fraud", Threshold: 1e9, MaxCycle: k, RingSearch: "any"}
				if err := spec.Validate(); err != nil {
					t.Fatal(err)
				}
				a := newFraud(spec, func(al []Alert) { got = append(got, al...) })
				total := 0
				h.drive(a, 100, v.insertOnly, v.vdel, func(g edges, u *views.Update) {
					if u == nil {
						return
					}
					want := refNewCycles(h.states[h.prev], g, k)
					gotK := map[string]bool{}
					for _, al := range got {
						if al.Kind != "cycle" {
							continue
						}
						key := refKey(al.Cycle)
						if gotK[key] {
							t.Fatalf("cycle %v reported twice", al.Cycle)
						}
						gotK[key] = true
						if len(al.Cycle) > k {
							t.Fatalf("cycle %v longer than %d", al.Cycle, k)
						}
						checkAnyEvidence(t, al, g)
					}
					if fmt.Sprint(sortedKeys(gotK)) != fmt.Sprint(sortedKeys(want)) {
						t.Fatalf("seq %d: new cycles %v, reference %v", h.at, sortedKeys(gotK), sortedKeys(want))
					}
					total += len(gotK)
					got = nil
				})
				if total < 5 {
					t.Fatalf("only %d new cycles over the run", total)
				}
				if s := a.Summary().(FraudSummary); s.Truncated != 0 || s.Cycles != uint64(total) {
					t.Fatalf("summary %+v, %d cycles seen", s, total)
				}
			})
		}
	}
}

// checkAnyEvidence checks the evidence of a cycle of ring_search=any:
// one event per hop, in cycle order; one the monitor did not see (from
// before its first pull) carries the edge's weight in g; the totals sum
// them.
func checkAnyEvidence(t *testing.T, al Alert, g edges) {
	t.Helper()
	if len(al.Evidence) != len(al.Cycle) || al.Totals == nil || al.Totals.Events != len(al.Cycle) {
		t.Fatalf("cycle %v: evidence %+v, totals %+v", al.Cycle, al.Evidence, al.Totals)
	}
	sum := 0.0
	for i, e := range al.Evidence {
		if e.Src != al.Cycle[i] || e.Dst != al.Cycle[(i+1)%len(al.Cycle)] {
			t.Fatalf("cycle %v: evidence %d is %d->%d", al.Cycle, i, e.Src, e.Dst)
		}
		if w, ok := g[ekey{e.Src, e.Dst}]; e.Seq == 0 && (!ok || w != e.Amount) {
			t.Fatalf("cycle %v: evidence %d of an edge weighing %v (%v): %+v", al.Cycle, i, w, ok, e)
		}
		sum += e.Amount
	}
	if al.Totals.Amount != sum {
		t.Fatalf("cycle %v: totals %+v, evidence sums %v", al.Cycle, al.Totals, sum)
	}
}

// refNewCycles are the keys of the cycles of length <= k in after that are
// not in before, by the reference enumerator.
func refNewCycles(before, after edges, k int) map[string]bool {
	old, now := refCycles(before, k), refCycles(after, k)
	want := map[string]bool{}
	for key := range now {
		if _, ok := old[key]; !ok {
			want[key] = true
		}
	}
	return want
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestFraudPullLimits: with a pull memory limit of a few KiB, or a clock
// that runs a second per reading against a 2s pull timeout, pulls are cut
// short and counted; a cut pull reports only real new cycles (each once),
// every pull is processed, and the monitor keeps up to the last batch.
func TestFraudPullLimits(t *testing.T) {
	volume.Mark(t)
	for _, limit := range []string{"memory", "time"} {
		t.Run(limit, func(t *testing.T) {
			h := newHarness(t, 71, true, denseIDs)
			var got []Alert
			spec := Spec{Name: "fraud", Type: "fraud", Threshold: 1e9, MaxCycle: 4, RingSearch: "any"}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			a := newFraud(spec, func(al []Alert) { got = append(got, al...) })
			if limit == "memory" {
				a.maxPullBytes = 4 << 10
			} else {
				var clock time.Time
				a.now = func() time.Time { clock = clock.Add(time.Second); return clock }
			}
			pulls, missed, last := 0, 0, uint64(0)
			h.drive(a, 60, true, false, func(g edges, u *views.Update) {
				if u == nil {
					return
				}
				pulls++
				last = h.at
				want := refNewCycles(h.states[h.prev], g, 4)
				gotK := map[string]bool{}
				for _, al := range got {
					if al.Kind != "cycle" {
						continue
					}
					key := refKey(al.Cycle)
					if gotK[key] || !want[key] {
						t.Fatalf("seq %d: cycle %v reported twice, or not a new cycle", h.at, al.Cycle)
					}
					gotK[key] = true
				}
				missed += len(want) - len(gotK)
				got = nil
			})
			s := a.Summary().(FraudSummary)
			t.Logf("%d pulls, %d cut short, %d searches truncated, %d new cycles missed", pulls, s.CutShort, s.Truncated, missed)
			if s.CutShort == 0 || missed == 0 {
				t.Fatalf("the %s limit never cut a pull short (%+v, %d missed)", limit, s, missed)
			}
			if a.Seq() != last || a.PullsCutShort() != s.CutShort || a.pullBytes.Load() != 0 {
				t.Fatalf("after the run: seq %d (last pull %d), cut short %d, pull bytes %d", a.Seq(), last, a.PullsCutShort(), a.pullBytes.Load())
			}
		})
	}
}

// topoOf builds the topology of a view.
func topoOf(t testing.TB, v views.Graph) *views.Topo {
	t.Helper()
	g, err := views.BuildTopo(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestMonitorsRunOnEventTime: fanin and the fraud monitor's fan-in window,
// with a duration and a lateness, follow the operations' event times,
// which arrive out of order: after every pull their alerts are exactly the
// upserts an oracle of the definition (views.Window) makes cross a vertex,
// each with the event time and the reference of the upsert,
// and the late operations are counted, never counted in.
func TestMonitorsRunOnEventTime(t *testing.T) {
	h := newHarness(t, 61, false, denseIDs)
	const dur, lateness, thr = 10 * time.Second, 2 * time.Second, 2
	const du, lat = int64(dur / time.Microsecond), int64(lateness / time.Microsecond)
	spec := Spec{Name: "in", Type: "fanin", Threshold: thr, WindowDuration: dur, Lateness: lateness}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []Alert
	fan := newFan(spec, func(al []Alert) { got = append(got, al...) })
	st, err := h.m.Stream(views.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fspec := Spec{Name: "fr", Type: "fraud", Threshold: thr, WindowDuration: dur, Lateness: lateness, MaxCycle: 3}
	if err := fspec.Validate(); err != nil {
		t.Fatal(err)
	}
	var fgot []Alert
	fr := newFraud(fspec, func(al []Alert) {
		for _, a := range al {
			if a.Kind == "fan_in" {
				fgot = append(fgot, a)
			}
		}
	})
	ts, err := h.m.Topology().Stream(views.StreamOptions{Presence: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recomputeOnPull(ctx, t, ts, fr) // the graph before the stream: empty
	type held struct{ dst, t int64 }
	var win []held // the oracle's window
	count := map[uint64]int{}
	above := map[uint64]bool{}
	var maxT int64
	late := 0
	clock := int64(1_700_000_000_000_000)
	ref := uint64(0)
	for round := 0; round < 150; round++ {
		var b engine.Batch
		type want struct {
			v   uint64
			t   int64
			ref uint64
		}
		var wants []want
		for range 1 + h.r.IntN(6) {
			clock += int64(h.r.IntN(1_500_000))
			t := clock - int64(h.r.IntN(3_000_000))
			if h.r.IntN(15) == 0 {
				t = clock - 12_000_000 - int64(h.r.IntN(4_000_000)) // most likely late
			}
			dst := uint64(h.r.IntN(6))
			ref++
			b.Tag(ref)
			b.InsertWeighted(uint64(100+h.r.IntN(50)), dst, 1)
			b.SetEventTime(t)
			// The oracle, op by op.
			ns := t // µs
			if maxT != 0 && ns <= maxT-lat-du {
				late++
				continue
			}
			maxT = max(maxT, ns)
			win = append(win, held{int64(dst), ns})
			count[dst]++
			keep := win[:0]
			for _, x := range win {
				if x.t <= maxT-lat-du {
					count[uint64(x.dst)]--
					continue
				}
				keep = append(keep, x)
			}
			win = keep
			for v, c := range count {
				if c <= thr {
					delete(above, v)
				}
			}
			if count[dst] > thr && !above[dst] {
				above[dst] = true
				wants = append(wants, want{dst, t, ref})
			}
		}
		if _, err := h.s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		// The fraud monitor takes its window in one op at a time: its
		// alerts are exactly the oracle's.
		u, err := ts.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fr.UpdatePrior(ctx, u)
		u.Done()
		if err != nil {
			t.Fatal(err)
		}
		if len(fgot) != len(wants) {
			t.Fatalf("round %d: fraud's fan-in raised %d alerts, the oracle %d", round, len(fgot), len(wants))
		}
		for i, w := range wants {
			a := fgot[i]
			if a.Vertex != w.v || a.EventTime.UnixMicro() != w.t || a.Ref != w.ref {
				t.Fatalf("round %d: fraud alert %+v, want vertex %d at %d by ref %d", round, a, w.v, w.t, w.ref)
			}
		}
		fgot = nil
		// So does fanin, over a plain stream.
		pb, err := st.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fan.Consume(pb)
		if len(got) != len(wants) {
			t.Fatalf("round %d: fanin raised %d alerts, the oracle %d", round, len(got), len(wants))
		}
		for i, w := range wants {
			a := got[i]
			if a.Vertex != w.v || a.EventTime.UnixMicro() != w.t || a.Ref != w.ref || a.Kind != "fan_in" {
				t.Fatalf("round %d: fanin alert %+v, want vertex %d at %d by ref %d", round, a, w.v, w.t, w.ref)
			}
		}
		got = nil
		if s := fan.Summary().(MonitorSummary); s.Above != len(above) || s.Late != uint64(late) {
			t.Fatalf("round %d: fanin has %d above, %d late; the oracle %d, %d", round, s.Above, s.Late, len(above), late)
		}
		if s := fr.Summary().(FraudSummary); s.FanIn.Above != len(above) || s.FanIn.Late != uint64(late) {
			t.Fatalf("round %d: fraud has %d above, %d late; the oracle %d, %d", round, s.FanIn.Above, s.FanIn.Late, len(above), late)
		}
	}
	if late == 0 || len(above) == 0 {
		t.Fatalf("the stream made %d late and %d above: it checks too little", late, len(above))
	}
}

// TestFanAlertsCreditTheCrossingUpsert: a fan monitor's alert names the
// upsert that took the count above the threshold, whichever pull brings
// the upserts after it.
func TestFanAlertsCreditTheCrossingUpsert(t *testing.T) {
	up := func(ref uint64) views.Edge {
		return views.Edge{Seq: ref, Ref: ref, Op: engine.Op{Src: ref, Dst: 9, Weight: 1, Kind: engine.OpUpsert, EventTime: int64(ref)}}
	}
	for _, cuts := range [][][]uint64{{{1}, {2, 3}}, {{1, 2}, {3}}, {{1, 2, 3}}} {
		var got []Alert
		a := newFan(Spec{Name: "in", Type: "fanin", Threshold: 1}, func(al []Alert) { got = append(got, al...) })
		for _, pull := range cuts {
			var b views.StreamBatch
			for _, r := range pull {
				b.Edges = append(b.Edges, up(r))
			}
			b.Seq = pull[len(pull)-1]
			a.Consume(&b)
		}
		if len(got) != 1 || got[0].Ref != 2 || got[0].EventTime.UnixMicro() != 2 {
			t.Errorf("pulls %v: alerts %+v, want one credited to upsert 2", cuts, got)
		}
	}
}

// recomputeOnPull pulls ts once and recomputes a on the graph it gives.
func recomputeOnPull(ctx context.Context, t *testing.T, ts *views.TopoStream, a TopoAnalytic) {
	t.Helper()
	u, err := ts.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Recompute(ctx, u.G)
	u.Done()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDegreeRecomputeAfterLostOperations: the first compute raises no
// alert; a later one (its stream lost operations) raises one for each
// vertex above the threshold that was not, naming no operation.
func TestDegreeRecomputeAfterLostOperations(t *testing.T) {
	h := newHarness(t, 3, false, denseIDs)
	var got []Alert
	a := newDegree(Spec{Name: "deg", Type: "degree", Direction: "out", Threshold: 3}, func(al []Alert) { got = append(got, al...) })
	apply := func(src uint64, dsts ...uint64) {
		var b engine.Batch
		for _, d := range dsts {
			b.Insert(src, d)
		}
		if _, err := h.s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	compute := func() {
		v, err := h.m.Static(views.StaticOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Release()
		if err := a.Recompute(context.Background(), topoOf(t, v)); err != nil {
			t.Fatal(err)
		}
	}
	apply(1, 10, 11, 12, 13)
	apply(2, 10)
	compute()
	if len(got) != 0 {
		t.Fatalf("the first compute raised %+v", got)
	}
	apply(2, 11, 12, 13)
	apply(3, 10, 11, 12, 13, 14)
	compute()
	if len(got) != 2 || got[0].Vertex != 2 || got[1].Vertex != 3 || got[0].Ref != 0 || got[1].Value != 5 {
		t.Fatalf("after lost operations: %+v, want vertices 2 and 3", got)
	}
	got = nil
	compute()
	if len(got) != 0 {
		t.Fatalf("a compute of the same graph raised %+v", got)
	}
}

// TestFraudFollowsPartialPulls: a fraud monitor whose stream is far
// behind gets its operations a few at a time (partial pulls, G already at
// the newest seq): the cycles each pull reports are exactly those of the
// graph after its operations (the reference's at the pull's seq) that
// were not in the graph before them; none is reported early, by the pull
// of an edge it holds, and again by the pull that closes it, and none
// that operations beyond the pull break is missed.
func TestFraudFollowsPartialPulls(t *testing.T) {
	for i, v := range []variant{variants[0], variants[1], variants[2]} {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, uint64(90+i), v.inEdges, v.ids)
			const k = 4
			var got []Alert
			spec := Spec{Name: "fraud", Type: "fraud", Threshold: 1e9, MaxCycle: k, RingSearch: "any"}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			a := newFraud(spec, func(al []Alert) { got = append(got, al...) })
			st, err := h.m.Topology().Stream(views.StreamOptions{Presence: true, MaxBehind: 6})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			recomputeOnPull(ctx, t, st, a) // an empty graph
			partial, total := 0, 0
			for range 60 {
				for range 2 + h.r.IntN(4) {
					h.batch(1+h.r.IntN(6), v.insertOnly, v.vdel)
				}
				for head := lastSeq(t, h.s); a.Seq() < head; {
					before := a.Seq()
					u, err := st.PullNow(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if u.Partial {
						partial++
					}
					seq := u.Seq
					re, err := UpdateTopo(ctx, a, u)
					u.Done()
					if err != nil || re || u.Lost {
						t.Fatalf("update: %v, recomputed %v, lost %v", err, re, u.Lost)
					}
					want := refNewCycles(h.states[before], h.states[seq], k)
					gotK := map[string]bool{}
					for _, al := range got {
						key := refKey(al.Cycle)
						if gotK[key] {
							t.Fatalf("seq %d to %d: cycle %v reported twice", before, seq, al.Cycle)
						}
						gotK[key] = true
					}
					if fmt.Sprint(sortedKeys(gotK)) != fmt.Sprint(sortedKeys(want)) {
						t.Fatalf("seq %d to %d (partial %v): new cycles %v, reference %v", before, seq, u.Partial, sortedKeys(gotK), sortedKeys(want))
					}
					total += len(got)
					got = nil
				}
			}
			if s := a.Summary().(FraudSummary); partial == 0 || total < 5 || s.CutShort != 0 || s.Truncated != 0 || s.Cycles != uint64(total) {
				t.Fatalf("%d partial pulls, %d cycles; summary %+v", partial, total, s)
			}
			t.Logf("%d partial pulls, %d cycles", partial, total)
		})
	}
}

// TestDegreeFollowsPartialPulls: a degree monitor whose stream is far
// behind gets its operations a few at a time (partial pulls, the graph
// ahead of them): its alerts are still exactly those of the oracle
// operation by operation, and its above set the oracle's at the end.
func TestDegreeFollowsPartialPulls(t *testing.T) {
	h := newHarness(t, 77, false, spreadIDs)
	var got []Alert
	const thr = 3
	a := newDegree(Spec{Name: "deg", Type: "degree", Direction: "both", Threshold: thr}, func(al []Alert) { got = append(got, al...) })
	st, err := h.m.Topology().Stream(views.StreamOptions{Presence: true, MaxBehind: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	recomputeOnPull(ctx, t, st, a) // an empty graph
	partial := 0
	for range 40 {
		for range 1 + h.r.IntN(3) {
			h.batch(1+h.r.IntN(5), false, true)
		}
		for head := lastSeq(t, h.s); a.Seq() < head; {
			u, err := st.PullNow(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if u.Partial {
				partial++
			}
			re, err := UpdateTopo(ctx, a, u)
			u.Done()
			if err != nil || re || u.Lost {
				t.Fatalf("update: %v, recomputed %v, lost %v", err, re, u.Lost)
			}
		}
	}
	g, above := edges{}, map[uint64]bool{}
	var want []uint64
	for _, o := range h.log {
		g.Apply(o)
		now := map[uint64]bool{}
		for x, d := range refDegrees(g, "both") {
			if d > thr {
				now[x] = true
			}
		}
		if o.Kind == engine.OpUpsert {
			cand := []uint64{o.Src} // source first; a self-loop's one vertex once
			if o.Dst != o.Src {
				cand = append(cand, o.Dst)
			}
			for _, x := range cand {
				if now[x] && !above[x] {
					want = append(want, x)
				}
			}
		}
		above = now
	}
	var gotV []uint64
	for _, al := range got {
		gotV = append(gotV, al.Vertex)
	}
	if fmt.Sprint(gotV) != fmt.Sprint(want) {
		t.Fatalf("alerts %v, reference %v", gotV, want)
	}
	if s := a.Summary().(MonitorSummary); s.Above != len(above) || partial == 0 || len(want) == 0 {
		t.Fatalf("above %d, reference %d; %d partial pulls, %d alerts", s.Above, len(above), partial, len(want))
	}
}
