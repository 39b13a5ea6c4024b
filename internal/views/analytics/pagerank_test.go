package analytics

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/testref"
	"github.com/graphtide/graphtide/internal/testref/volume"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// prRef is an independent PageRank reference for large graphs: plain
// float64 power iterations over a CSR of an oracle's edges (the vertices
// with an edge, in id order), written apart from the kernel and the
// pushes it checks.
type prRef struct {
	ids  []uint64
	idx  map[uint64]int
	off  []int // out-edges of ids[i]: dst[off[i]:off[i+1]]
	dst  []int
	d    float64
	rank []float64 // to an L1 change below 1e-13
}

func newPRRef(cur edges, d float64) *prRef {
	r := &prRef{idx: map[uint64]int{}, d: d}
	for v := range cur.Vertices() {
		r.ids = append(r.ids, v)
	}
	slices.Sort(r.ids)
	for i, v := range r.ids {
		r.idx[v] = i
	}
	deg := make([]int, len(r.ids)+1)
	for e := range cur {
		deg[r.idx[e[0]]+1]++
	}
	for i := range r.ids {
		deg[i+1] += deg[i]
	}
	r.off = slices.Clone(deg)
	r.dst = make([]int, len(cur))
	for e := range cur {
		i := r.idx[e[0]]
		r.dst[deg[i]] = r.idx[e[1]]
		deg[i]++
	}
	n := len(r.ids)
	r.rank = make([]float64, n)
	for i := range r.rank {
		r.rank[i] = 1 / float64(n)
	}
	for it := 0; it < 5000; it++ {
		next := r.step(r.rank)
		delta := 0.0
		for i := range next {
			delta += math.Abs(next[i] - r.rank[i])
		}
		r.rank = next
		if delta < 1e-13 {
			break
		}
	}
	return r
}

// step is one power iteration from x: (1-d)/N + d*(the in-neighbors'
// shares + the dangling mass over N).
func (r *prRef) step(x []float64) []float64 {
	n := len(r.ids)
	next := make([]float64, n)
	dangling := 0.0
	for u := range n {
		k := r.off[u+1] - r.off[u]
		if k == 0 {
			dangling += x[u]
			continue
		}
		share := x[u] / float64(k)
		for _, v := range r.dst[r.off[u]:r.off[u+1]] {
			next[v] += share
		}
	}
	for v := range next {
		next[v] = (1-r.d)/float64(n) + r.d*(next[v]+dangling/float64(n))
	}
	return next
}

// degreeStream is a stream that meets the graph's hubs in proportion to
// their degrees: the held-out edges of the same RMAT graph as inserts,
// deletes of existing edges drawn uniformly (so their endpoints in
// proportion to degree), and vertex deletes.
type degreeStream struct {
	held []engine.Op // inserts to come, in order
	keys []ekey      // the oracle's edges, for drawing deletes
	vs   []uint64    // the vertices loaded, in id order
	cur  edges
	r    *rand.Rand
}

// next returns n operations: each deletes an existing edge with
// probability del, else inserts the next held-out edge; then vdel vertex
// deletes of vertices with edges: drawn as an edge's tail when hubs (in
// proportion to out-degree: hubs first among them), else uniformly among
// the vertices loaded that have one to four edges (an ordinary vertex:
// deleting one of 250 edges is a change of 250 operations). It applies
// them to the oracle.
func (s *degreeStream) next(n int, del float64, vdel int, hubs bool) []engine.Op {
	var ops []engine.Op
	for range n {
		if s.r.Float64() < del || len(s.held) == 0 {
			k := s.r.IntN(len(s.keys))
			e := s.keys[k]
			s.keys[k] = s.keys[len(s.keys)-1]
			s.keys = s.keys[:len(s.keys)-1]
			ops = append(ops, engine.Op{Src: e[0], Dst: e[1], Kind: engine.OpDeleteEdge})
		} else {
			ops = append(ops, s.held[0])
			s.held = s.held[1:]
		}
	}
	for range vdel {
		v := s.keys[s.r.IntN(len(s.keys))][0]
		for !hubs {
			v = s.vs[s.r.IntN(len(s.vs))]
			deg := 0
			for e := range s.cur {
				if e[0] == v || e[1] == v {
					deg++
				}
			}
			if deg >= 1 && deg <= 4 {
				break
			}
		}
		ops = append(ops, engine.Op{Src: v, Kind: engine.OpDeleteVertex})
	}
	for _, op := range ops {
		if op.Kind == engine.OpUpsert {
			if _, ok := s.cur[ekey{op.Src, op.Dst}]; !ok {
				s.keys = append(s.keys, ekey{op.Src, op.Dst})
			}
		}
		s.cur.Apply(op)
	}
	if vdel > 0 { // drop the keys the vertex deletes took
		s.keys = slices.DeleteFunc(s.keys, func(e ekey) bool { _, ok := s.cur[e]; return !ok })
	}
	return ops
}

// TestPageRankFollowsADegreeStream: pagerank at the default tolerance
// (1e-4) follows an RMAT graph (2^15 vertices, hubs) through a stream
// drawn from the graph itself (its held-out edges, deletes in proportion
// to degree, vertex deletes), checked after every batch against an
// independent power iteration to 1e-13:
//   - its ranks are within the bound its residual states of the exact
//     ones, that residual is at most its target (d*tol/2, or what the last
//     recompute left), so they are within d*tol/(1-d) of the exact ones as
//     a recompute's are;
//   - the residual it states is the one its ranks have: one power
//     iteration from them changes them by at most twice it (a state that
//     drifted from its graph, or lost a change, claims less than that);
//   - at 5% deletes (and a vertex delete now and then), batches whose
//     change is within its tolerance
//     (repair's pushRatio: a handful of operations on a graph this size) are pushed,
//     never iterated, and read on average under a twentieth of what a
//     recompute reads (one pass over the in-edges per iteration, and one
//     to build the state);
//   - at 50% deletes, with vertex deletes of hubs and batches ten times
//     larger, it may iterate instead, its ranks as close.
func TestPageRankFollowsADegreeStream(t *testing.T) {
	volume.Mark(t)
	if testing.Short() {
		t.Skip("a large graph")
	}
	s, m := openStore(t)
	all := (gen.RMAT{Scale: 15, EdgeFactor: 9, Seed: 21}).Generate()
	load := len(all) * 8 / 9
	st := &degreeStream{cur: edges{}, r: rand.New(rand.NewPCG(21, 5))}
	var b engine.Batch
	for i, e := range all {
		op := engine.Op{Src: spreadID(e.Src), Dst: spreadID(e.Dst), Weight: 1, Kind: engine.OpUpsert}
		if op.Src == op.Dst {
			continue
		}
		if i >= load {
			st.held = append(st.held, op)
			continue
		}
		testref.AddOp(&b, op)
		if _, ok := st.cur[ekey{op.Src, op.Dst}]; !ok {
			st.keys = append(st.keys, ekey{op.Src, op.Dst})
		}
		st.cur.Apply(op)
	}
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	for v := range st.cur.Vertices() {
		st.vs = append(st.vs, v)
	}
	slices.Sort(st.vs)
	spec := Spec{Name: "pr", Type: "pagerank"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	d, tol := spec.Damping, spec.Tolerance
	a := newPageRank(spec)
	ctx := context.Background()
	ts, err := m.Topology().Stream(views.StreamOptions{Presence: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	// pull applies ops (none: the first pull) and returns whether the
	// update recomputed, and the edges the graph then holds.
	pull := func(ops []engine.Op) (bool, int64) {
		if len(ops) > 0 {
			var b engine.Batch
			for _, op := range ops {
				testref.AddOp(&b, op)
			}
			if _, err := s.Apply(&b); err != nil {
				t.Fatal(err)
			}
		}
		u, err := ts.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Done()
		re, err := UpdateTopo(ctx, a, u)
		if err != nil {
			t.Fatal(err)
		}
		return re, u.G.Out.Edges()
	}
	// check compares the ranks with the reference's.
	check := func(label string) {
		t.Helper()
		ref := newPRRef(st.cur, d)
		sum := a.Summary().(PageRankSummary)
		res := sum.Residual
		if res > max(d*tol/2, a.st.Floor)*(1+1e-9) {
			t.Fatalf("%s: residual %g above its target %g", label, res, max(d*tol/2, a.st.Floor))
		}
		bound := 2 * res / ((1 - d) * (1 - res/(1-d)))
		x := make([]float64, len(ref.ids))
		l1 := 0.0
		for i, v := range ref.ids {
			got, _ := a.Vertex(v)
			x[i] = got.(VertexRank).Rank
			l1 += math.Abs(x[i] - ref.rank[i])
		}
		for _, v := range allIDs(st.cur) { // absent ones rank 0
			if _, ok := ref.idx[v]; !ok {
				if got, _ := a.Vertex(v); got.(VertexRank).Rank != 0 {
					t.Fatalf("%s: vertex %d without edges has rank %g", label, v, got.(VertexRank).Rank)
				}
			}
		}
		if l1 > bound || l1 > 2*d*tol/(1-d) {
			t.Fatalf("%s: L1 distance %g to the exact ranks, above the bound %g its residual %g states (tolerance %g)", label, l1, bound, res, tol)
		}
		change := 0.0
		for i, y := range ref.step(x) {
			change += math.Abs(y - x[i])
		}
		if change > 2*res*(1+1e-6)+1e-12 {
			t.Fatalf("%s: one iteration from the ranks changes them by %g, but the state claims a residual of %g", label, change, res)
		}
	}
	if re, _ := pull(nil); !re {
		t.Fatal("the first pull did not compute")
	}
	check("the first compute")
	first := a.Summary().(PageRankSummary)
	iters := first.Iterations
	pushed, recomputed := 0, 0
	var read, most float64 // edges read by the pushing updates, over the graph's
	for batch := range 40 {
		del, n, vdel := 0.05, 2, 0
		if batch%8 == 7 {
			vdel = 1
		}
		if batch >= 28 {
			del, n, vdel = 0.5, 40, batch%2 // a vertex delete every other batch
		}
		re, e := pull(st.next(n, del, vdel, batch >= 28))
		check(fmt.Sprintf("batch %d (%d ops, %.0f%% deletes, %d vertex deletes)", batch, n, 100*del, vdel))
		if batch >= 28 {
			if re {
				recomputed++
			}
			continue
		}
		if sum := a.Summary().(PageRankSummary); re || sum.Iterations != first.Iterations || sum.Delta != first.Delta {
			t.Fatalf("batch %d: %d operations at 5%% deletes iterated (recomputed %v; %d iterations, last change %g)", batch, n, re, sum.Iterations, sum.Delta)
		}
		pushed++
		w := float64(a.Summary().(PageRankSummary).EdgesRead) / float64(e)
		read += w
		most = max(most, w)
	}
	recompute := float64(iters + 1) // passes over the in-edges
	t.Logf("5%% deletes: %d batches pushed, reading %.4f of the graph's edges on average (at most %.4f), a recompute %.0f times it (%d iterations); 50%% deletes: %d of 12 batches recomputed",
		pushed, read/float64(pushed), most, recompute, iters, recomputed)
	if read/float64(pushed) > recompute/20 {
		t.Fatalf("the pushes read %.3f of the graph's edges per batch (at most %.3f): not well under a recompute's %.0f", read/float64(pushed), most, recompute)
	}
}

// TestPageRankRestoredKeepsItsSeqUntilDone: ranks restored from a
// checkpoint become a state on the first pull's graph; when that pull's
// change is too large to push, the update iterates, and until those
// iterations end (here they never start: the context is done) the
// analytic still answers at the checkpoint's seq, not at the graph's: its
// ranks then are the checkpoint's, far from the target on the new graph,
// and a reader waiting for the graph's seq must not take them for its
// result.
func TestPageRankRestoredKeepsItsSeqUntilDone(t *testing.T) {
	g := newBigGraph(t, 11, 8, 17, false)
	spec := Spec{Name: "pr", Type: "pagerank"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	ts, err := g.m.Topology().Stream(views.StreamOptions{Presence: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	ctx := context.Background()
	u, err := ts.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := newPageRank(spec)
	if err := ref.Recompute(ctx, u.G); err != nil {
		t.Fatal(err)
	}
	// As loadState leaves it.
	a := newPageRank(spec)
	a.swap(repair.LoadRanks(u.G.IDs, ref.st.Ranks(), u.G.Seq, ref.st.Present(), ref.st.Iterations, ref.st.Delta, spec.Damping*ref.st.Delta))
	seq := u.G.Seq
	u.Done()
	g.batch(300, 0.05, 0) // far beyond what pushes take
	u, err = ts.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Done()
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.UpdatePrior(done, u); err == nil {
		t.Fatal("the update neither pushed nor stopped with its context")
	}
	if a.Seq() != seq || u.G.Seq == seq {
		t.Fatalf("after an update that did not finish, the analytic claims seq %d (the checkpoint's %d, the graph's %d)", a.Seq(), seq, u.G.Seq)
	}
}

// TestPageRankIteratesOffTheTopology: a compute (the first pull), and an
// update whose change is too large to push, iterate on a copy of what
// they read and release the pull first, so the topology advances for the
// other analytics meanwhile (the advance waits for every pull: had they
// held it, the other stream's pull below would wait for the whole run);
// the ranks are still the exact ones of the pull's graph, not of the
// graph the topology moved on to.
func TestPageRankIteratesOffTheTopology(t *testing.T) {
	g := newBigGraph(t, 11, 8, 23, false)
	spec := Spec{Name: "pr", Type: "pagerank"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	d, tol := spec.Damping, spec.Tolerance
	ctx := context.Background()
	ts, err := g.m.Topology().Stream(views.StreamOptions{Presence: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	other, err := g.m.Topology().Stream(views.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a := newPageRank(spec)
	// run pulls pagerank's stream and updates it; while it iterates, the
	// hook applies a batch and pulls the other stream, which must reach it.
	run := func(label string) {
		t.Helper()
		old := maps.Clone(g.cur)
		u, err := ts.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Done()
		seq := u.Seq
		var moved uint64 // the other stream's seq, pulled while pagerank ran
		a.copied = func() {
			g.batch(50, 0.05, 0)
			done := make(chan uint64, 1)
			go func() {
				o, err := other.PullNow(ctx)
				if err != nil {
					t.Error(err)
					done <- 0
					return
				}
				done <- o.Seq
				o.Done()
			}()
			select {
			case moved = <-done:
			case <-time.After(10 * time.Second):
				t.Errorf("%s: the topology could not advance while pagerank iterated: the pull was still held", label)
			}
		}
		re, err := UpdateTopo(ctx, a, u)
		if err != nil {
			t.Fatal(err)
		}
		if !re || t.Failed() {
			t.Fatalf("%s: recomputed %v; the other stream reached seq %d", label, re, moved)
		}
		if moved <= seq || a.Seq() != seq {
			t.Fatalf("%s: the other stream reached seq %d while pagerank iterated on seq %d; pagerank answers at %d", label, moved, seq, a.Seq())
		}
		ref := newPRRef(old, d)
		l1 := 0.0
		for i, v := range ref.ids {
			got, _ := a.Vertex(v)
			l1 += math.Abs(got.(VertexRank).Rank - ref.rank[i])
		}
		if bound := d*tol/(1-d) + kernels.RoundingL1(d, tol); l1 > bound {
			t.Fatalf("%s: L1 distance %g to the exact ranks of seq %d, above %g", label, l1, seq, bound)
		}
	}
	run("the first compute")
	g.batch(300, 0.05, 0) // far beyond what pushes take
	run("an update that iterates")
}
