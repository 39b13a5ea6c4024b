package analytics

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// openStore opens a store with in-edges in a temporary directory, and a
// view manager over it, both closed when t ends.
func openStore(t *testing.T) (*engine.Store, *views.Manager) {
	t.Helper()
	s, err := engine.Open(t.TempDir(), &engine.Options{InEdges: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := views.NewManager(s, views.Config{})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return s, m
}

// applyOps applies ops to the store s, as one batch, and to cur, the
// reference's edges.
func applyOps(t testing.TB, s *engine.Store, cur edges, ops []engine.Op) {
	t.Helper()
	var b engine.Batch
	for _, op := range ops {
		testref.AddOp(&b, op)
		cur.Apply(op)
	}
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
}

// bigGraph is a store over an RMAT graph of 2^scale vertices (hubs
// included) under ids of both bands (spreadID), its oracle, and the
// topology stream the analytics follow.
type bigGraph struct {
	t    *testing.T
	s    *engine.Store
	m    *views.Manager
	cur  edges
	keys []ekey // the oracle's edges, for drawing deletes
	r    *rand.Rand
	nv   uint64
}

// newBigGraph loads an RMAT graph (uniform: edges between uniformly drawn
// vertices, plus 8 hubs of 256 out- and 256 in-edges, so that the degrees
// do not grow with the scale).
func newBigGraph(t *testing.T, scale, edgeFactor int, seed uint64, uniform bool) *bigGraph {
	t.Helper()
	s, m := openStore(t)
	g := &bigGraph{t: t, s: s, m: m, cur: edges{}, r: rand.New(rand.NewPCG(seed, 3)), nv: 1 << scale}
	var b engine.Batch
	es := (gen.RMAT{Scale: scale, EdgeFactor: edgeFactor, Seed: seed}).Generate()
	if uniform {
		for i := range es {
			es[i] = gen.Edge{Src: g.r.Uint64N(g.nv), Dst: g.r.Uint64N(g.nv)}
		}
		for h := range uint64(8) {
			for range 256 {
				es = append(es, gen.Edge{Src: h, Dst: g.r.Uint64N(g.nv)}, gen.Edge{Src: g.r.Uint64N(g.nv), Dst: h})
			}
		}
	}
	for _, e := range es {
		op := engine.Op{Src: spreadID(e.Src), Dst: spreadID(e.Dst), Weight: float64(1+g.r.IntN(36)) / 4, Kind: engine.OpUpsert}
		b.InsertWeighted(op.Src, op.Dst, op.Weight)
		if _, ok := g.cur[ekey{op.Src, op.Dst}]; !ok {
			g.keys = append(g.keys, ekey{op.Src, op.Dst})
		}
		g.cur.Apply(op)
	}
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.CompactAll(); err != nil {
		t.Fatal(err)
	}
	return g
}

// batch applies n random operations: upserts (new edges, and new weights
// of existing ones), deletes of existing edges (share del), deletes of
// missing ones, and vertex deletes (share vdel, a hub now and then).
// restart opens a new views manager over g's store (the last one closed)
// and a registry over it, as a restarted process does.
func (g *bigGraph) restart() *Registry {
	m, err := views.NewManager(g.s, views.Config{})
	if err != nil {
		g.t.Fatal(err)
	}
	g.m = m
	return NewRegistry(m, RegistryConfig{})
}

func (g *bigGraph) batch(n int, del, vdel float64) *engine.Batch {
	var b engine.Batch
	for range n {
		var op engine.Op
		switch x := g.r.Float64(); {
		case x < del && len(g.keys) > 0:
			k := g.r.IntN(len(g.keys))
			e := g.keys[k]
			g.keys[k] = g.keys[len(g.keys)-1]
			g.keys = g.keys[:len(g.keys)-1]
			op = engine.Op{Src: e[0], Dst: e[1], Kind: engine.OpDeleteEdge}
		case x < del+vdel:
			v := spreadID(g.r.Uint64N(g.nv))
			if g.r.IntN(4) == 0 && len(g.keys) > 0 {
				v = g.keys[g.r.IntN(len(g.keys))][0] // a vertex with edges, often a hub
			}
			op = engine.Op{Src: v, Kind: engine.OpDeleteVertex}
		case x < del+vdel+0.02:
			op = engine.Op{Src: spreadID(g.r.Uint64N(g.nv)), Dst: spreadID(g.r.Uint64N(g.nv)), Kind: engine.OpDeleteEdge}
		default:
			op = engine.Op{Src: spreadID(g.r.Uint64N(g.nv)), Dst: spreadID(g.r.Uint64N(g.nv)), Weight: float64(1+g.r.IntN(36)) / 4, Kind: engine.OpUpsert}
			if _, ok := g.cur[ekey{op.Src, op.Dst}]; !ok {
				g.keys = append(g.keys, ekey{op.Src, op.Dst})
			}
		}
		testref.AddOp(&b, op)
		g.cur.Apply(op)
	}
	if _, err := g.s.Apply(&b); err != nil {
		g.t.Fatal(err)
	}
	// Keys of edges a vertex delete removed stay: deleting them again is
	// a delete of a missing edge.
	return &b
}

// TestAnalyticsLargeGraphsReference: bfs, wcc, sssp, pagerank and the
// degree monitor follow a 16384-vertex RMAT graph (hubs; numbers, sparse numbers and keys) through
// batches of inserts, re-weights, deletes and vertex deletes (weights in
// quarters from 0.25 to 9; zero weights, which make sssp's repair larger,
// are in the small graphs' tests), checked
// against the reference algorithms after every batch, and none of bfs,
// wcc and sssp recomputes. bfs's repair decides every level of more than
// 16 vertices on every core here (at scale the threshold is 2048).
func TestAnalyticsLargeGraphsReference(t *testing.T) {
	if testing.Short() {
		t.Skip("a large graph")
	}
	defer func(p int) { repair.ParallelLevel = p }(repair.ParallelLevel)
	repair.ParallelLevel = 16
	// Scale 11 under the race detector: the parallel kernels (above
	// repair.ParallelLevel) run all the same.
	g := newBigGraph(t, volume.Size(14, 11), 8, 7, false)
	root := g.keys[0][0]
	ctx := context.Background()
	type run struct {
		a  Analytic
		ts *views.TopoStream
		re int
	}
	prSpec := Spec{Name: "pr", Type: "pagerank", Tolerance: 1e-10, MaxIterations: 1000}
	if err := prSpec.Validate(); err != nil {
		t.Fatal(err)
	}
	const degThreshold = 24
	deg := newDegree(Spec{Name: "deg", Type: "degree", Direction: "both", Threshold: degThreshold}, nil)
	runs := []*run{{a: newBFS(Spec{Name: "bfs", Type: "bfs"}, root)}, {a: newWCC(Spec{Name: "wcc", Type: "wcc"})},
		{a: newSSSP(Spec{Name: "sssp", Type: "sssp"}, root)}, {a: newPageRank(prSpec)}, {a: deg}}
	for _, r := range runs {
		var err error
		if r.ts, err = g.m.Topology().Stream(views.StreamOptions{Presence: NeedsPresence(r.a.Spec())}); err != nil {
			t.Fatal(err)
		}
		defer r.ts.Close()
	}
	pull := func(r *run) {
		u, err := r.ts.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Done()
		re, err := UpdateTopo(ctx, r.a.(TopoAnalytic), u)
		if re && !u.Lost {
			r.re++
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		pull(r)
	}
	for batch := 0; batch < 12; batch++ {
		del := 0.05
		if batch >= 8 {
			del = 0.5 // then half of each batch deletes
		}
		n := 1000
		if batch == 7 {
			n = 6000 // enough inserts for the repairs' parallel filter (improving)
		}
		g.batch(n, del, 0.002)
		for _, r := range runs {
			pull(r)
		}
		checkGraphResults(t, fmt.Sprintf("batch %d", batch), g.cur, root, batch%4 == 3, func(typ string, x uint64) any {
			v, _ := runs[map[string]int{"bfs": 0, "wcc": 1, "sssp": 2, "pagerank": 3}[typ]].a.Vertex(x)
			return v
		})
		checkParents(t, runs[0].a.(*bfs), g.cur, refBFS(g.cur, root))
		// The degree monitor: exactly the vertices above, with their
		// degrees (out plus in).
		above := 0
		for x, d := range refDegrees(g.cur, "both") {
			if d > degThreshold {
				above++
				if v, ok := deg.Vertex(x); !ok || v.(VertexValue).Value != float64(d) {
					t.Fatalf("batch %d: vertex %d of degree %d: the monitor has %v, %v", batch, x, d, v, ok)
				}
			}
		}
		if s := deg.Summary().(MonitorSummary); s.Above != above || above == 0 {
			t.Fatalf("batch %d: %d above, the reference %d", batch, s.Above, above)
		}
	}
	// pagerank pushes only changes within repair's pushRatio of its target: these
	// batches are far larger than its tolerance, so it iterates (warm).
	for _, r := range append(runs[:3:3], runs[4]) {
		if r.re != 0 {
			t.Errorf("%s recomputed %d times", r.a.Spec().Type, r.re)
		}
	}
}

// TestRepairsSeeEdgesGoneInTheirBatch: bfs and sssp repairs meet upserts
// that the same batch deletes again (by an edge delete or a vertex
// delete), re-inserts, or re-weights, each one a shortcut from the root,
// and wcc upserts joining components that the batch cuts again;
// in a small batch and in one large enough for the parallel filter
// (improving). Their results match the references after each.
func TestRepairsSeeEdgesGoneInTheirBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("a large graph")
	}
	g := newBigGraph(t, 14, 8, 11, false)
	root := g.keys[0][0]
	ctx := context.Background()
	as := []Analytic{newBFS(Spec{Name: "bfs", Type: "bfs"}, root), newSSSP(Spec{Name: "sssp", Type: "sssp"}, root),
		newWCC(Spec{Name: "wcc", Type: "wcc"})}
	// Components of their own for wcc: pairs of new vertices, each to be
	// joined to the root's component by an upsert that its batch deletes
	// again (merging them would name them after the root's).
	var pairs [][2]uint64
	{
		var b engine.Batch
		for i := range uint64(80) {
			p := [2]uint64{spreadID(4*g.nv + 2*i), spreadID(4*g.nv + 2*i + 1)}
			op := engine.Op{Src: p[0], Dst: p[1], Weight: 1, Kind: engine.OpUpsert}
			testref.AddOp(&b, op)
			g.cur.Apply(op)
			pairs = append(pairs, p)
		}
		if _, err := g.s.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	var ts []*views.TopoStream
	for _, a := range as {
		s, err := g.m.Topology().Stream(views.StreamOptions{Presence: NeedsPresence(a.Spec())})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ts = append(ts, s)
	}
	pulls := 0
	pull := func() {
		pulls++
		for i, a := range as {
			u, err := ts[i].Pull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			re, err := UpdateTopo(ctx, a.(TopoAnalytic), u)
			u.Done()
			if err != nil {
				t.Fatal(err)
			}
			if re && pulls > 1 {
				t.Errorf("%s recomputed at pull %d", a.Spec().Type, pulls)
			}
		}
	}
	pull()
	for _, pad := range []int{0, 3000} {
		level := refBFS(g.cur, root)
		var far []uint64 // vertices a shortcut from the root brings closer
		for v := range g.cur.Vertices() {
			if l, ok := level[v]; v != root && (!ok || l >= 2) {
				far = append(far, v)
			}
		}
		slices.Sort(far)
		g.r.Shuffle(len(far), func(i, j int) { far[i], far[j] = far[j], far[i] })
		if len(far) < 40 {
			t.Fatalf("only %d vertices two levels from the root", len(far))
		}
		up := func(v uint64, w float64) engine.Op {
			return engine.Op{Src: root, Dst: v, Weight: w, Kind: engine.OpUpsert}
		}
		del := func(v uint64) engine.Op { return engine.Op{Src: root, Dst: v, Kind: engine.OpDeleteEdge} }
		var ops []engine.Op
		for i := 0; i < pad; i++ {
			ops = append(ops, engine.Op{Src: spreadID(g.r.Uint64N(g.nv)), Dst: spreadID(g.r.Uint64N(g.nv)), Weight: 9, Kind: engine.OpUpsert}) // long: few change a distance
		}
		for i, v := range far[:40] {
			switch i % 4 {
			case 0: // in, then out again
				ops = append(ops, up(v, 0.25), del(v))
			case 1: // in, out and in again
				ops = append(ops, up(v, 0.25), del(v), up(v, 0.5))
			case 2: // in, then its head deleted
				ops = append(ops, up(v, 0.25), engine.Op{Src: v, Kind: engine.OpDeleteVertex})
			case 3: // in short, then longer
				ops = append(ops, up(v, 0.25), up(v, 9))
			}
		}
		for i, p := range pairs[:40] {
			if pad > 0 {
				p = pairs[40+i]
			}
			switch i % 2 {
			case 0: // joined, then cut again
				ops = append(ops, up(p[0], 1), del(p[0]))
			case 1: // joined, then the joining vertex deleted (its pair's edge too)
				ops = append(ops, up(p[0], 1), engine.Op{Src: p[0], Kind: engine.OpDeleteVertex})
			}
		}
		g.r.Shuffle(len(ops[:pad]), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		applyOps(t, g.s, g.cur, ops)
		pull()
		wantL, wantD, wantC := refBFS(g.cur, root), refSSSP(g.cur, root), refWCC(g.cur)
		for _, x := range allIDs(g.cur) {
			wc, ok := wantC[x]
			if !ok {
				wc = x
			}
			if c, _ := as[2].Vertex(x); c.(VertexComponent).Component != wc {
				t.Fatalf("pad %d: component of %d = %d, reference %d", pad, x, c.(VertexComponent).Component, wc)
			}
			wl, ok := wantL[x]
			if !ok {
				wl = -1
			}
			if l, _ := as[0].Vertex(x); l.(VertexLevel).Level != wl {
				t.Fatalf("pad %d: level of %d = %d, reference %d", pad, x, l.(VertexLevel).Level, wl)
			}
			wd, ok := wantD[x]
			if d, _ := as[1].Vertex(x); d.(VertexDistance).Reachable != ok || ok && d.(VertexDistance).Distance != wd {
				t.Fatalf("pad %d: distance of %d = %+v, reference %v (%v)", pad, x, d, wd, ok)
			}
		}
	}
}

// checkGraphResults fails unless the per-vertex results get gives for bfs,
// wcc and sssp (from root), and for pagerank when withPR, match the
// reference algorithms on cur, over every vertex with an edge.
func checkGraphResults(t *testing.T, label string, cur edges, root uint64, withPR bool, get func(typ string, x uint64) any) {
	t.Helper()
	wantL, wantD, wantC := refBFS(cur, root), refSSSP(cur, root), refWCC(cur)
	vs := allIDs(cur)
	for _, x := range vs {
		wl, ok := wantL[x]
		if !ok {
			wl = -1
		}
		if l := get("bfs", x).(VertexLevel).Level; l != wl {
			t.Fatalf("%s: level of %d = %d, reference %d", label, x, l, wl)
		}
		wc, ok := wantC[x]
		if !ok {
			wc = x
		}
		if c := get("wcc", x).(VertexComponent).Component; c != wc {
			t.Fatalf("%s: component of %d = %d, reference %d", label, x, c, wc)
		}
		wd, ok := wantD[x]
		if d := get("sssp", x).(VertexDistance); d.Reachable != ok || ok && d.Distance != wd {
			t.Fatalf("%s: distance of %d = %+v, reference %v (%v)", label, x, d, wd, ok)
		}
	}
	if withPR {
		want := refPageRank(cur, 0.85)
		l1 := 0.0
		for _, x := range vs {
			l1 += math.Abs(get("pagerank", x).(VertexRank).Rank - want[x])
		}
		if l1 > 1e-8 {
			t.Fatalf("%s: pagerank is %g from the reference in L1", label, l1)
		}
	}
}

// TestUpdateWorkFollowsTheChange: the edges bfs, sssp, wcc and pagerank
// updates read for a batch of changes (inserts, 20% deletes, 1% vertex
// deletes, hubs among them) grow with the change, not with the graph: on
// a graph 16 times larger (of the same degrees: uniform edges and fixed
// hubs), the same batches cost less than 4 times as much, and a batch 8
// times larger costs more. pagerank's tolerance is one at which its
// pushes finish these changes (repair's pushRatio), and its ranks stay within
// their stated bound of the exact ones after every update.
//
// bfs and sssp, more closely: every update reads at most twice the size
// of its change (changeSize: its operations, the in-lists of the heads
// that lost an edge that may have supported them, the edges of every
// vertex whose distance changed); and bfs reads less than 1.4 times as
// many edges per vertex it moved on the larger graph (the same batches
// move more vertices there: it is deeper). A repair that also read a
// thousandth of the graph's edges per update fails the latter, a
// five-hundredth both.
func TestUpdateWorkFollowsTheChange(t *testing.T) {
	volume.Mark(t)
	if testing.Short() {
		t.Skip("large graphs")
	}
	prSpec := Spec{Name: "pr", Type: "pagerank", Tolerance: 0.05}
	if err := prSpec.Validate(); err != nil {
		t.Fatal(err)
	}
	// work measures the mean edges read per update over batches of n ops.
	work := func(scale, n int) map[string]float64 {
		g := newBigGraph(t, scale, 6, 11, true)
		root := g.keys[0][0]
		ctx := context.Background()
		as := []Analytic{newBFS(Spec{Name: "bfs", Type: "bfs"}, root), newSSSP(Spec{Name: "sssp", Type: "sssp"}, root), newWCC(Spec{Name: "wcc", Type: "wcc"}),
			newPageRank(prSpec)}
		ts, err := g.m.Topology().Stream(views.StreamOptions{Presence: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		out := map[string]float64{}
		for b := 0; b < 7; b++ {
			if b > 0 {
				g.batch(n, 0.2, 0.01)
			}
			u, err := ts.Pull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range as {
				ta := a.(TopoAnalytic)
				was := distsOf(a)
				if u.Lost {
					err = ta.Recompute(ctx, u.G)
				} else if re, err2 := UpdateTopo(ctx, ta, u); re || err2 != nil {
					u.Done()
					t.Fatalf("%s: recomputed %v, %v", a.Spec().Type, re, err2)
				}
				if err != nil {
					t.Fatal(err)
				}
				if b < 2 { // the first update builds wcc's forest
					continue
				}
				switch x := a.(type) {
				case *bfs, *sssp:
					typ, work := "bfs", 0
					if bf, ok := x.(*bfs); ok {
						work = bf.work
					} else {
						typ, work = "sssp", x.(*sssp).work
					}
					out[typ] += float64(work)
					size, moved := changeSize(u, was, distsOf(a))
					if work > 2*size {
						t.Errorf("%s, batch %d on 2^%d vertices: the update read %d edges, its change is %d", typ, b, scale, work, size)
					}
					out[typ+" moved"] += float64(moved)
				case *wcc:
					out["wcc"] += float64(x.st.Work)
					x.st.Work = 0
				case *pagerank:
					out["pagerank"] += float64(x.st.Read)
					if scale == 11 || b == 6 {
						checkPageRankBound(t, x, g.cur)
					}
				}
			}
			if b == 1 {
				for _, a := range as {
					if x, ok := a.(*wcc); ok {
						x.st.Work = 0
					}
				}
			}
			u.Done()
		}
		return out
	}
	small, large, largeMore := work(11, 100), work(15, 100), work(15, 800)
	for _, k := range []string{"bfs", "sssp", "wcc", "pagerank"} {
		t.Logf("%s: edges read for 100 ops: %.0f on 2^11 vertices, %.0f on 2^15; for 800 ops on 2^15: %.0f", k, small[k], large[k], largeMore[k])
		if k == "bfs" {
			// Per vertex moved: on the larger graph the same batches move
			// more vertices (it is deeper).
			ps, pl := small[k]/small[k+" moved"], large[k]/large[k+" moved"]
			t.Logf("bfs: %.0f and %.0f vertices moved; %.1f and %.1f edges read per vertex moved", small[k+" moved"], large[k+" moved"], ps, pl)
			if pl > 1.4*ps {
				t.Errorf("bfs: a graph 16 times larger made an update read %.1f times as many edges per vertex moved", pl/ps)
			}
		}
		if large[k] > 4*small[k] {
			t.Errorf("%s: a graph 16 times larger made the same change cost %.1f times as much", k, large[k]/small[k])
		}
		if largeMore[k] <= large[k] {
			t.Errorf("%s: 8 times the change read no more edges (%.0f vs %.0f)", k, largeMore[k], large[k])
		}
	}
}

// dists is a single-source analytic's distances by vertex id.
type dists struct {
	ids views.IDSpace
	d   []float64
}

// of is v's distance (+Inf: unreached, or not in the space).
func (x *dists) of(v uint64) float64 {
	if i, ok := x.ids.Index(v); ok && i < len(x.d) {
		return x.d[i]
	}
	return math.Inf(1)
}

// distsOf copies a bfs's levels or an sssp's distances (+Inf: unreached),
// or returns nil for another analytic or one with no state yet.
func distsOf(a Analytic) *dists {
	switch x := a.(type) {
	case *bfs:
		if x.st != nil {
			d := make([]float64, len(x.st.level))
			for i, l := range x.st.level {
				d[i] = float64(l)
				if l < 0 {
					d[i] = math.Inf(1)
				}
			}
			return &dists{x.st.ids, d}
		}
	case *sssp:
		if x.st != nil {
			return &dists{x.st.ids, slices.Clone(x.st.dist)}
		}
	}
	return nil
}

// changeSize is the size of u's change to a single-source analytic whose
// distances went from was to now, in the spirit of Ramalingam and Reps
// (the changed edges and the changed vertices with their edges), counted
// as a repair must read it (in u.G): each operation; the in-edges of the
// head of each edge that may have supported its head and is gone or
// longer (an existing edge deleted, or upserted anew with a weight, from
// a nearer tail: its head must look for another support); the in- and
// out-edges of every vertex whose distance changed. It returns the size
// and how many vertices moved (their distance changed). Its stream must
// have Presence (u.Prior).
func changeSize(u *views.TopoUpdate, was, now *dists) (size, moved int) {
	g := u.G
	dist := was.of
	for k, e := range u.Edges {
		size++
		if e.Op.Kind == engine.OpDeleteVertex || u.Prior[k] == views.WasAbsent {
			continue // (a vertex delete's edges follow it as edge deletes)
		}
		if e.Op.Kind == engine.OpUpsert && !g.Out.Weighted() {
			continue // an upsert of an edge without weights lengthens nothing
		}
		if j, ok := g.IDs.Index(e.Op.Dst); ok && dist(e.Op.Src) < dist(e.Op.Dst) {
			size += int(g.In.Deg(int32(j)))
		}
	}
	for j, d := range now.d {
		if d == dist(now.ids.ID(j)) {
			continue
		}
		moved++
		if j < g.Len() {
			size += int(g.In.Deg(int32(j)) + g.Out.Deg(int32(j)))
		}
	}
	return size, moved
}

// checkPageRankBound fails unless a's ranks are within the bound its
// residual states of the exact PageRank of cur: with R/S = Residual, the
// L1 error of z is at most R/(1-d), so the ranks' is at most
// 2(R/S)/((1-d)(1 - (R/S)/(1-d))) (normalizing by the exact sum, which is
// at least S - R/(1-d)).
func checkPageRankBound(t *testing.T, a *pagerank, cur edges) {
	t.Helper()
	d := a.spec.Damping
	res := a.Summary().(PageRankSummary).Residual
	bound := 2 * res / ((1 - d) * (1 - res/(1-d)))
	if res > d*a.spec.Tolerance/2*(1+1e-9) && res > a.st.Floor*(1+1e-9) {
		t.Fatalf("pagerank: residual %g above its target %g", res, max(d*a.spec.Tolerance/2, a.st.Floor))
	}
	want := refPageRank(cur, d)
	l1 := 0.0
	for _, x := range allIDs(cur) {
		got, _ := a.Vertex(x)
		l1 += math.Abs(got.(VertexRank).Rank - want[x])
	}
	if l1 > bound {
		t.Fatalf("pagerank: L1 distance %g to the exact ranks, above the bound %g its residual %g states", l1, bound, res)
	}
}

// TestPartialPulls: an analytic whose stream (with Presence) falls
// further behind than MaxBehind gets the operations a part at a time
// (TopoUpdate.Partial, G already at the newest seq), and its seq never
// claims a part it has not applied. pagerank turns each part into
// residuals and pushes once it has them all (the changes are small
// against its tolerance: no update recomputes), its ranks then within
// their stated bound of the exact ones; sssp skips the parts and the pull
// that ends them recomputes, its distances then the reference's.
func TestPartialPulls(t *testing.T) {
	if testing.Short() {
		t.Skip("a large graph")
	}
	for _, typ := range []string{"pagerank", "sssp"} {
		t.Run(typ, func(t *testing.T) {
			g := newBigGraph(t, 11, 6, 5, true)
			root := g.keys[0][0]
			var a interface {
				TopoAnalytic
				Analytic
			}
			var check func(round int)
			if typ == "pagerank" {
				spec := Spec{Name: "pr", Type: "pagerank", Tolerance: 1e-2, MaxIterations: 1000}
				if err := spec.Validate(); err != nil {
					t.Fatal(err)
				}
				pr := newPageRank(spec)
				a, check = pr, func(int) { checkPageRankBound(t, pr, g.cur) }
			} else {
				sp := newSSSP(Spec{Name: "sssp", Type: "sssp"}, root)
				a = sp
				check = func(round int) {
					want := refSSSP(g.cur, root)
					for _, x := range allIDs(g.cur) {
						wd, ok := want[x]
						got, _ := sp.Vertex(x)
						if d := got.(VertexDistance); d.Reachable != ok || ok && d.Distance != wd {
							t.Fatalf("round %d: distance of %d = %+v, reference %v (%v)", round, x, d, wd, ok)
						}
					}
				}
			}
			ctx := context.Background()
			st, err := g.m.Topology().Stream(views.StreamOptions{Presence: true, MaxBehind: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			partials := 0
			for round := 0; round < 10; round++ {
				if round > 0 {
					for range 4 {
						g.batch(3, 0.3, 0.02)
					}
				}
				afterPartial := false
				for {
					u, err := st.Pull(ctx)
					if err != nil {
						t.Fatal(err)
					}
					before := a.Seq()
					re, err := UpdateTopo(ctx, a, u)
					lost, partial, seq := u.Lost, u.Partial, u.G.Seq
					u.Done()
					if err != nil {
						t.Fatal(err)
					}
					if want := lost || typ == "sssp" && afterPartial && !partial; re != want {
						t.Fatalf("round %d: recomputed %v, want %v (lost %v, partial %v)", round, re, want, lost, partial)
					}
					if partial {
						partials++
						afterPartial = true
						if a.Seq() != before {
							t.Fatalf("round %d: a partial pull moved the seq from %d to %d", round, before, a.Seq())
						}
						continue
					}
					if a.Seq() != seq {
						t.Fatalf("round %d: at seq %d after a pull to %d", round, a.Seq(), seq)
					}
					break
				}
				check(round)
			}
			if partials == 0 {
				t.Fatal("no pull was partial: the test checks nothing")
			}
			t.Logf("%d partial pulls", partials)
		})
	}
}

// TestPageRankPushesOnALargeGraph: pagerank follows a 16384-vertex RMAT
// graph (hubs; numbers, sparse numbers and keys) through small batches of
// inserts, deletes and vertex deletes, its ranks within their stated
// bound of the exact ones after every batch. The batches are small
// against its tolerance, so most updates push; one that deletes a hub
// may be beyond repair's pushRatio and iterate instead.
func TestPageRankPushesOnALargeGraph(t *testing.T) {
	volume.Mark(t)
	if testing.Short() {
		t.Skip("a large graph")
	}
	g := newBigGraph(t, 14, 8, 9, false)
	spec := Spec{Name: "pr", Type: "pagerank", Tolerance: 1e-3}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	a := newPageRank(spec)
	ctx := context.Background()
	st, err := g.m.Topology().Stream(views.StreamOptions{Presence: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pushed, batches, vdels := 0, 16, 0
	for b := 0; b <= batches; b++ {
		if b > 0 {
			g.batch(10, 0.3, 0.02)
		}
		u, err := st.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range u.Edges {
			if e.Op.Kind == engine.OpDeleteVertex {
				vdels++
			}
		}
		re, err := UpdateTopo(ctx, a, u)
		u.Done()
		if err != nil {
			t.Fatal(err)
		}
		if b > 0 && !re {
			pushed++
		}
		checkPageRankBound(t, a, g.cur)
	}
	if pushed < batches/2 || vdels == 0 {
		t.Fatalf("only %d of %d updates pushed, %d vertex deletes", pushed, batches, vdels)
	}
	t.Logf("%d of %d updates pushed, %d vertex deletes", pushed, batches, vdels)
}

// TestPageRankSinglePrecisionWithinItsTolerance: at the default tolerance
// the kernel gathers float32 contributions (kernels.SinglePrecision); on a
// 16384-vertex RMAT graph with hubs, a recompute, and again after a batch
// with deletes and vertex deletes, stops before its iteration cap and lands
// within d*tol/(1-d) plus the rounding's share (RoundingL1) of the exact
// ranks, and within the bound its own residual states.
func TestPageRankSinglePrecisionWithinItsTolerance(t *testing.T) {
	volume.Mark(t)
	if testing.Short() {
		t.Skip("a large graph")
	}
	g := newBigGraph(t, 14, 8, 11, false)
	spec := Spec{Name: "pr", Type: "pagerank"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if !kernels.SinglePrecision(spec.Damping, spec.Tolerance) {
		t.Fatalf("the default tolerance %g takes the float64 path: this test covers the float32 one", spec.Tolerance)
	}
	a := newPageRank(spec)
	ctx := context.Background()
	st, err := g.m.Topology().Stream(views.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := spec.Damping
	for round := range 2 {
		if round > 0 {
			g.batch(2000, 0.3, 0.01)
		}
		recomputeOnPull(ctx, t, st, a)
		if it := a.Summary().(PageRankSummary).Iterations; it >= spec.MaxIterations {
			t.Fatalf("round %d: ran to the cap of %d iterations", round, it)
		}
		checkPageRankBound(t, a, g.cur)
		want := refPageRank(g.cur, d)
		l1 := 0.0
		for _, x := range allIDs(g.cur) {
			got, _ := a.Vertex(x)
			l1 += math.Abs(got.(VertexRank).Rank - want[x])
		}
		if lim := d*spec.Tolerance/(1-d) + kernels.RoundingL1(d, spec.Tolerance); l1 > lim {
			t.Fatalf("round %d: L1 distance %g to the exact ranks, above %g", round, l1, lim)
		}
	}
}
