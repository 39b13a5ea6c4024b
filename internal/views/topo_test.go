package views

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/testref/volume"
)

// topoAdj is a Topo's adjacency as adjOf gives the oracle's (in-lists
// carry their out-edge's weight, through Weight), and fails unless every
// invariant of the Topo holds.
func topoAdj(t testing.TB, g *Topo, dir engine.Direction) map[uint64][]string {
	t.Helper()
	if g.Out.Len() != g.IDs.Len() || g.In.Len() != g.IDs.Len() {
		t.Fatalf("spans: out %d in %d, id space %d", g.Out.Len(), g.In.Len(), g.IDs.Len())
	}
	var sumDeg [2]int64
	for k, a := range []*Adj{&g.Out, &g.In} {
		for i := range a.spans {
			s := a.spans[i]
			b := a.blockOf(int32(i))
			if s.beg < 0 || s.deg > s.cap || s.beg+int64(s.cap) > b.used || b.used > int64(len(b.dst)) {
				t.Fatalf("span %d of %d out of [0, %d)", i, k, b.used)
			}
			sumDeg[k] += int64(s.deg)
			if i >= g.Bound() && s.deg > 0 {
				t.Fatalf("vertex %d (dir %d) has edges at or past the bound %d", g.IDs.ID(i), k, g.Bound())
			}
			nb := a.Nbrs(int32(i))
			for x := 1; x < len(nb); x++ {
				if nb[x-1] >= nb[x] {
					t.Fatalf("list of %d (dir %d) not sorted and unique: %v", g.IDs.ID(i), k, nb)
				}
			}
		}
		if a.Edges() != sumDeg[k] {
			t.Fatalf("dir %d: live %d, degrees %d", k, a.Edges(), sumDeg[k])
		}
	}
	if sumDeg[0] != sumDeg[1] {
		t.Fatalf("out-edges %d, in-edges %d", sumDeg[0], sumDeg[1])
	}
	m := map[uint64][]string{}
	a := &g.Out
	if dir == engine.In {
		a = &g.In
	}
	type nw struct {
		id uint64
		w  float64
	}
	for i := range a.spans {
		var l []nw
		for _, j := range a.Nbrs(int32(i)) {
			src, dst := int32(i), j
			if dir == engine.In {
				src, dst = j, int32(i)
			}
			w, ok := g.Weight(src, dst)
			if !ok {
				t.Fatalf("edge %d->%d in one direction only", g.IDs.ID(int(src)), g.IDs.ID(int(dst)))
			}
			l = append(l, nw{g.IDs.ID(int(j)), w})
		}
		slices.SortFunc(l, func(a, b nw) int { return cmp.Compare(a.id, b.id) })
		for _, x := range l {
			m[g.IDs.ID(i)] = append(m[g.IDs.ID(i)], fmt.Sprintf("%d@%g", x.id, x.w))
		}
	}
	return m
}

// The shared topology, advanced from the log by streams pulling at their
// own pace (and built again when the log wraps), equals the oracle at
// every sequence number a Pull returns, over random upserts, deletes and
// vertex deletes of ids of every band, with flushes and compactions.
func TestTopologyFollowsTheOracle(t *testing.T) {
	for _, inEdges := range []bool{false, true} {
		s := smallStore(t, inEdges)
		m, err := NewManager(s, Config{LogCapacity: 4096, IndexRebuildMin: 16})
		if err != nil {
			t.Fatal(err)
		}
		h := newHistory()
		ctx := context.Background()
		var wg sync.WaitGroup
		var final atomic.Uint64 // the last seq, once written
		final.Store(math.MaxUint64)
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			writer(t, s, h, 8, 420, 300, true)
		}()
		// Some edges before the first stream opens: the build reads them.
		for {
			h.mu.Lock()
			n := len(h.states)
			h.mu.Unlock()
			if n > 20 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		for k, bs := range []int{1, 50} {
			st, err := m.Topology().Stream(StreamOptions{BatchSize: bs, Presence: k == 1})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer st.Close()
				prev := uint64(0)
				wrapped := 0 // builds in a row that the writer outran
				for pulls := 0; ; pulls++ {
					u, err := st.Pull(ctx)
					if errors.Is(err, ErrLogWrapped) && wrapped < 100 {
						// The writer wrote more than the 4096-operation log
						// holds while the build ran (a loaded machine): the
						// pull changed nothing, and the next one builds
						// again, as the registry's retry does.
						wrapped++
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					wrapped = 0
					// The checks release the pull however they end (topoAdj's
					// Fatal ends this goroutine: the pull still held would
					// stall the topology's Close).
					func() {
						defer u.Done()
						g := u.G
						want := h.at(g.Seq)
						if got, w := topoAdj(t, g, engine.Out), adjOf(want, engine.Out); !sameAdj(got, w) {
							t.Errorf("stream %d, seq %d (lost %v, pull %d): out-lists differ from the oracle: %s", k, g.Seq, u.Lost, pulls, adjDiff(got, w))
						}
						if got, w := topoAdj(t, g, engine.In), adjOf(want, engine.In); !sameAdj(got, w) {
							t.Errorf("stream %d, seq %d: in-lists differ from the oracle", k, g.Seq)
						}
						if !u.Lost {
							for _, e := range u.Edges {
								if e.Seq <= prev || e.Seq > g.Seq {
									t.Errorf("stream %d: op of seq %d outside (%d, %d]", k, e.Seq, prev, g.Seq)
								}
							}
							if err := checkExpanded(h.at(prev), u.Edges); err != nil {
								t.Errorf("stream %d, seq %d: %v", k, g.Seq, err)
							}
							if k == 1 {
								if err := checkPriors(h.at(prev), u.Edges, u.Prior); err != nil {
									t.Errorf("stream %d, seq %d: %v", k, g.Seq, err)
								}
							} else if u.Prior != nil {
								t.Errorf("stream %d without presence has priors", k)
							}
						}
						prev = g.Seq
					}()
					if t.Failed() || prev == final.Load() {
						return
					}
				}
			}()
		}
		<-wrote
		// A last batch larger than every stream's batch size, so that each
		// reaches it.
		var ops []engine.Op
		for i := range 60 {
			ops = append(ops, engine.Op{Src: spread(uint64(i)), Dst: spread(uint64(i + 1)), Weight: 2, Kind: engine.OpUpsert})
		}
		h.mu.Lock()
		seq, err := s.Apply(batchOf(ops))
		if err != nil {
			t.Fatal(err)
		}
		cur := h.states[seq-1].Clone()
		for _, o := range ops {
			cur.Apply(o)
		}
		h.states[seq] = cur
		h.mu.Unlock()
		final.Store(seq)
		wg.Wait()
		if st := m.Topology().Stats(); st.Builds == 0 || st.Advances == 0 || st.Bytes != 0 {
			t.Fatalf("stats after both streams closed: %+v", st)
		}
		m.Close()
	}
}

// Apply on a Topo built from a CSR-like graph matches the oracle op by op,
// including weights that appear after an unweighted start, hub lists that
// outgrow the free tail, and a vertex delete of a hub with a self-loop.
func TestTopoApplyOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s, m := smallLogManager(t, false, 0)
	cur := oracle{}
	var ops []engine.Op
	for i := 0; i < 2000; i++ {
		ops = append(ops, engine.Op{Src: spread(uint64(r.IntN(200))), Dst: spread(uint64(r.IntN(200))), Weight: 1, Kind: engine.OpUpsert})
	}
	if _, err := s.Apply(batchOf(ops)); err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		cur.Apply(o)
	}
	g := freshTopo(t, m)
	if g.Out.Weighted() {
		t.Fatal("a graph of weight-1 edges keeps no weights")
	}
	hub := spread(5)
	for round := 0; round < 30; round++ {
		ops = ops[:0]
		for i := 0; i < 300; i++ {
			src := spread(uint64(r.IntN(400)))
			if i%3 == 0 {
				src = hub
			}
			w := 1.0
			if round >= 10 {
				w = float64(1 + r.IntN(5))
			}
			if round >= 25 && i%7 == 0 {
				w += 0.5 // the first weight that is not whole: unpacked
			}
			switch x := r.IntN(100); {
			case x < 75:
				ops = append(ops, engine.Op{Src: src, Dst: spread(uint64(r.IntN(400))), Weight: w, Kind: engine.OpUpsert})
			case x < 98:
				ops = append(ops, engine.Op{Src: src, Dst: spread(uint64(r.IntN(400))), Kind: engine.OpDeleteEdge})
			default:
				ops = append(ops, engine.Op{Src: spread(uint64(r.IntN(400))), Kind: engine.OpDeleteVertex})
			}
		}
		if round == 20 {
			ops = append(ops, engine.Op{Src: hub, Dst: hub, Weight: 2, Kind: engine.OpUpsert}, engine.Op{Src: hub, Kind: engine.OpDeleteVertex},
				engine.Op{Src: hub, Dst: spread(1), Weight: 3, Kind: engine.OpUpsert})
		}
		seq, err := s.Apply(batchOf(ops))
		if err != nil {
			t.Fatal(err)
		}
		prevState := cur.Clone()
		for _, o := range ops {
			cur.Apply(o)
		}
		ids := freshIDs(t, m)
		es, expanded, was := applyRecorded(t, g, ids, seq, ops)
		// Whether each edge op's edge existed just before it, op by op.
		step := prevState.Clone()
		for k, o := range ops {
			if o.Kind != engine.OpDeleteVertex {
				if _, ok := step[ekey{o.Src, o.Dst}]; ok != was[k] {
					t.Fatalf("round %d, op %d %+v: present before it %v, Apply says %v", round, k, o, ok, was[k])
				}
			} else if was[k] {
				t.Fatalf("round %d: present called for vertex delete %d", round, k)
			}
			step.Apply(o)
		}
		if err := checkExpanded(prevState, interleaveExpanded(es, expanded)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, dir := range []engine.Direction{engine.Out, engine.In} {
			if got, want := topoAdj(t, g, dir), adjOf(cur, dir); !sameAdj(got, want) {
				t.Fatalf("round %d, dir %v: the topology differs from the oracle", round, dir)
			}
		}
		// Weights 1-5 from round 10 are kept packed; from round 25 some
		// are not whole, and all are kept as float64s.
		if g.Out.Whole() != (round >= 10 && round < 25) || g.Out.Weighted() != (round >= 10) {
			t.Fatalf("round %d: Weighted %v, Whole %v", round, g.Out.Weighted(), g.Out.Whole())
		}
	}
	if !g.Out.Weighted() {
		t.Fatal("weights other than 1 arrived: the topology must keep them")
	}
}

// freshTopo is the topology built from a fresh view of m.
func freshTopo(t testing.TB, m *Manager) *Topo {
	t.Helper()
	v, err := m.Static(StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	g, err := BuildTopo(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// freshIDs is the id space of a fresh view of m.
func freshIDs(t testing.TB, m *Manager) IDSpace {
	t.Helper()
	v, err := m.Static(StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	ids, err := v.IDs()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// adjDiff describes the first vertex whose lists differ.
func adjDiff(got, want map[uint64][]string) string {
	for v, l := range want {
		if !slices.Equal(got[v], l) {
			return fmt.Sprintf("vertex %d: got %v, want %v", v, got[v], l)
		}
	}
	for v, l := range got {
		if _, ok := want[v]; !ok {
			return fmt.Sprintf("vertex %d: got %v, want none", v, l)
		}
	}
	return "none"
}

// checkPriors replays es on a copy of the graph before them and fails
// unless ps says, for each, what was there just before it.
func checkPriors(before oracle, es []Edge, ps []Prior) error {
	if len(ps) != len(es) {
		return fmt.Errorf("%d priors for %d operations", len(ps), len(es))
	}
	cur := before.Clone()
	for k, e := range es {
		_, was := cur[ekey{e.Op.Src, e.Op.Dst}]
		want := WasAbsent
		switch {
		case e.Op.Kind == engine.OpDeleteVertex:
			want = VertexOp
		case k > 0 && (ps[k-1] == VertexOp || ps[k-1] == Expansion) && e.Op.Kind == engine.OpDeleteEdge && e.Seq == es[k-1].Seq && ps[k] == Expansion:
			want = Expansion // checkExpanded checks what the expansion holds
		case was:
			want = WasPresent
		}
		if ps[k] != want {
			return fmt.Errorf("op %d %+v: prior %d, want %d", k, e.Op, ps[k], want)
		}
		// A vertex delete takes effect through its expansion's deletes.
		if ps[k] == Expansion && !was {
			return fmt.Errorf("op %d: an expansion of an edge that did not exist", k)
		}
		if ps[k] != VertexOp {
			cur.Apply(e.Op)
		}
	}
	return nil
}

// applyRecorded applies ops to g as the batch at seq and returns the
// batch's edges, what Apply reported they removed (each op whose vertex
// delete removed edges followed by edge deletes of those edges) and which
// ops' edges were present just before them.
func applyRecorded(t *testing.T, g *Topo, ids IDSpace, seq uint64, ops []engine.Op) (es, expanded []Edge, was []bool) {
	t.Helper()
	es = make([]Edge, len(ops))
	for k, o := range ops {
		es[k] = Edge{Seq: seq, Op: o}
	}
	was = make([]bool, len(es))
	err := g.Apply(es, ids, seq, func(k int, rm [][2]uint64) {
		expanded = append(expanded, es[k])
		for _, p := range rm {
			expanded = append(expanded, Edge{Seq: seq, Op: engine.Op{Src: p[0], Dst: p[1], Kind: engine.OpDeleteEdge}})
		}
	}, func(k int) { was[k] = true })
	if err != nil {
		t.Fatal(err)
	}
	return es, expanded, was
}

// interleaveExpanded puts the batch's ops (es) and what its vertex
// deletes expanded into (expanded: each vertex delete followed by the edge
// deletes of its edges, in order) together: each vertex delete followed
// by its edges.
func interleaveExpanded(es, expanded []Edge) []Edge {
	var all []Edge
	x := 0
	for _, e := range es {
		if e.Op.Kind != engine.OpDeleteVertex {
			all = append(all, e)
			continue
		}
		all = append(all, expanded[x])
		for x++; x < len(expanded) && expanded[x].Op.Kind == engine.OpDeleteEdge; x++ {
			all = append(all, expanded[x])
		}
	}
	return all
}

// checkExpanded replays es on a copy of the graph before them and fails
// unless every vertex delete is followed by exactly the edge deletes of
// the edges the vertex had then.
func checkExpanded(before oracle, es []Edge) error {
	cur := before.Clone()
	for k := 0; k < len(es); k++ {
		op := es[k].Op
		if op.Kind != engine.OpDeleteVertex {
			cur.Apply(op)
			continue
		}
		want := map[[2]uint64]bool{}
		for e := range cur {
			if e[0] == op.Src || e[1] == op.Src {
				want[e] = true
			}
		}
		got := map[[2]uint64]bool{}
		for k+1 < len(es) && es[k+1].Seq == es[k].Seq && es[k+1].Op.Kind == engine.OpDeleteEdge && (es[k+1].Op.Src == op.Src || es[k+1].Op.Dst == op.Src) && len(got) < len(want) {
			k++
			got[[2]uint64{es[k].Op.Src, es[k].Op.Dst}] = true
		}
		if len(got) != len(want) {
			return fmt.Errorf("vertex delete of %d: followed by %d edge deletes, it had %d edges", op.Src, len(got), len(want))
		}
		for e := range want {
			if !got[e] {
				return fmt.Errorf("vertex delete of %d: edge %v not among its edge deletes", op.Src, e)
			}
		}
		cur.Apply(op)
	}
	return nil
}

// A topology stream that falls behind the edge log gets Lost, with the
// topology built again from a view when the log no longer holds what it
// needs, and every later update is exact again.
func TestTopologyLostWhenTheLogWraps(t *testing.T) {
	s, m := smallLogManager(t, true, 20)
	st, err := m.Topology().Stream(StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cur := oracle{}
	apply := func(n int, base uint64) {
		for _, o := range fanIn(t, s, n, base) {
			cur.Apply(o)
		}
	}
	ctx := context.Background()
	check := func(u *TopoUpdate, lost bool) {
		t.Helper()
		defer u.Done()
		if u.Lost != lost {
			t.Fatalf("lost %v, want %v", u.Lost, lost)
		}
		if got, want := topoAdj(t, u.G, engine.In), adjOf(cur, engine.In); !sameAdj(got, want) {
			t.Fatalf("in-lists: %s", adjDiff(got, want))
		}
	}
	u, err := st.Pull(ctx) // the first: built
	if err != nil {
		t.Fatal(err)
	}
	check(u, true)
	apply(5, 100)
	if u, err = st.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	check(u, false)
	builds := m.Topology().Stats().Builds
	for i := range 4 {
		apply(10, uint64(200+100*i)) // 40 ops through a ring of 20
	}
	if u, err = st.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	check(u, true)
	if b := m.Topology().Stats().Builds; b != builds+1 {
		t.Fatalf("builds %d, want %d: the log no longer held what the topology needed", b, builds+1)
	}
	apply(3, 1000)
	if u, err = st.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	check(u, false)
	if len(u.Edges) != 3 {
		t.Fatalf("%d edges after the resync, want 3", len(u.Edges))
	}
}

// A stream with Presence that falls further behind than MaxBehind is not
// Lost: its pulls carry MaxBehind operations at a time, each up to the end
// of a batch (Seq that batch's), until it is at the newest; together they
// hand out every operation once, in order, with the right priors; and
// the operations a partial pull's G holds beyond them (EachAhead) set G
// back to the graph at the pull's seq.
func TestPresenceStreamCatchesUpInParts(t *testing.T) {
	s := smallStore(t, false)
	m, err := NewManager(s, Config{LogCapacity: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := newHistory()
	ctx := context.Background()
	st, err := m.Topology().Stream(StreamOptions{MaxBehind: 50, Presence: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.Pull(ctx) // the first: Lost, at seq 0
	if err != nil || !u.Lost {
		t.Fatalf("first pull: %v %v", u, err)
	}
	u.Done()
	writer(t, s, h, 3, 60, 120, true) // about 60 batches of up to 40 ops: far past 50
	last := uint64(0)
	for q := range h.states {
		last = max(last, q)
	}
	prev, parts := uint64(0), 0
	for prev < last {
		u, err := st.Pull(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if u.Lost {
			t.Fatalf("pull %d: Lost at seq %d", parts, prev)
		}
		if u.Partial {
			parts++
			if n := len(h.ops[u.Seq]); len(u.Edges) == 0 || u.Edges[len(u.Edges)-1].Seq != u.Seq || n == 0 {
				t.Fatalf("a partial pull to seq %d does not end with that batch", u.Seq)
			}
		} else if u.Seq != u.G.Seq {
			t.Fatalf("a whole pull at seq %d of %d", u.Seq, u.G.Seq)
		}
		for _, e := range u.Edges {
			if e.Seq <= prev || e.Seq > u.Seq {
				t.Fatalf("op of seq %d outside (%d, %d]", e.Seq, prev, u.Seq)
			}
		}
		if err := checkExpanded(h.at(prev), u.Edges); err != nil {
			t.Fatal(err)
		}
		if err := checkPriors(h.at(prev), u.Edges, u.Prior); err != nil {
			t.Fatal(err)
		}
		err = checkAhead(u, h.at(u.Seq))
		u.Done() // before a Fatal: the manager's Close takes the topology's lock
		if err != nil {
			t.Fatalf("pull to seq %d (partial %v): %v", u.Seq, u.Partial, err)
		}
		prev = u.Seq
	}
	if parts < 5 {
		t.Fatalf("only %d partial pulls", parts)
	}
}

// checkAhead checks that u.EachAhead gives the operations of G beyond
// u.Edges (their seqs in (u.Seq, G.Seq], none unless Partial), and that G
// with each edge they touch set back as its first touch's Prior says is
// want, the graph at u.Seq.
func checkAhead(u *TopoUpdate, want oracle) error {
	then := map[ekey]bool{}
	var bad error
	n := 0
	ok := u.EachAhead(func(e Edge, p Prior) {
		n++
		if (e.Seq <= u.Seq || e.Seq > u.G.Seq) && bad == nil {
			bad = fmt.Errorf("an operation of seq %d ahead of a pull to %d with G at %d", e.Seq, u.Seq, u.G.Seq)
		}
		if p == VertexOp {
			return
		}
		if _, seen := then[ekey{e.Op.Src, e.Op.Dst}]; !seen {
			then[ekey{e.Op.Src, e.Op.Dst}] = p != WasAbsent
		}
	})
	switch {
	case !ok:
		return errors.New("EachAhead: the log no longer holds them")
	case bad != nil:
		return bad
	case u.Partial != (n > 0):
		return fmt.Errorf("%d operations ahead", n)
	}
	got := map[ekey]bool{}
	for i := 0; i < u.G.Len(); i++ {
		for _, j := range u.G.Out.Nbrs(int32(i)) {
			got[ekey{u.G.IDs.ID(i), u.G.IDs.ID(int(j))}] = true
		}
	}
	for k, was := range then {
		if was {
			got[k] = true
		} else {
			delete(got, k)
		}
	}
	for k := range want {
		if !got[k] {
			return fmt.Errorf("edge %v of the graph at seq %d missing", k, u.Seq)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			return fmt.Errorf("edge %v not in the graph at seq %d", k, u.Seq)
		}
	}
	return nil
}

// PositiveLengths holds until a weight that is not above 0 is built,
// applied or loaded, and then stays false.
func TestTopoPositiveLengths(t *testing.T) {
	s, m := smallLogManager(t, false, 0)
	apply := func(ops ...engine.Op) uint64 {
		seq, err := s.Apply(batchOf(ops))
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	build := func() *Topo { return freshTopo(t, m) }
	apply(engine.Op{Src: 1, Dst: 2, Weight: 2.5, Kind: engine.OpUpsert}, engine.Op{Src: 2, Dst: 3, Weight: 1, Kind: engine.OpUpsert})
	g := build()
	if !g.PositiveLengths() {
		t.Fatal("weights 2.5 and 1: not positive")
	}
	path := filepath.Join(t.TempDir(), "ck")
	saveTopoFile(t, path, g)
	if !loadTopoFile(t, path).PositiveLengths() {
		t.Fatal("loaded: not positive")
	}
	op := engine.Op{Src: 3, Dst: 1, Weight: 0, Kind: engine.OpUpsert}
	seq := apply(op)
	if err := g.Apply([]Edge{{Seq: seq, Op: op}}, freshIDs(t, m), seq, nil, nil); err != nil {
		t.Fatal(err)
	}
	if g.PositiveLengths() {
		t.Fatal("a zero weight applied: still positive")
	}
	if build().PositiveLengths() {
		t.Fatal("built with a zero weight: positive")
	}
	saveTopoFile(t, path, build())
	if loadTopoFile(t, path).PositiveLengths() {
		t.Fatal("loaded with a zero weight: positive")
	}
}

// TestTopoKeepsNegativeZero: a weight of -0 is kept as written (not
// packed, where it would read back as +0), built, applied and loaded.
func TestTopoKeepsNegativeZero(t *testing.T) {
	s, m := smallLogManager(t, false, 0)
	negZero := math.Copysign(0, -1)
	check := func(label string, g *Topo, i, j uint64) {
		t.Helper()
		a, _ := g.IDs.Index(i)
		b, _ := g.IDs.Index(j)
		if w, ok := g.Weight(int32(a), int32(b)); !ok || w != 0 || !math.Signbit(w) {
			t.Fatalf("%s: weight of (%d, %d) = %v (present %v), want -0", label, i, j, w, ok)
		}
		if g.Out.Whole() {
			t.Fatalf("%s: a -0 weight is kept packed", label)
		}
	}
	if _, err := s.Apply(batchOf([]engine.Op{{Src: 1, Dst: 2, Weight: negZero, Kind: engine.OpUpsert}, {Src: 2, Dst: 3, Weight: 4, Kind: engine.OpUpsert}})); err != nil {
		t.Fatal(err)
	}
	g := freshTopo(t, m)
	check("built", g, 1, 2)
	path := filepath.Join(t.TempDir(), "ck")
	saveTopoFile(t, path, g)
	check("loaded", loadTopoFile(t, path), 1, 2)
	// Applied to a packed topology.
	op := engine.Op{Src: 3, Dst: 1, Weight: negZero, Kind: engine.OpUpsert}
	if _, err := s.Apply(batchOf([]engine.Op{{Src: 1, Dst: 2, Weight: 5, Kind: engine.OpUpsert}})); err != nil {
		t.Fatal(err)
	}
	if g = freshTopo(t, m); !g.Out.Whole() {
		t.Fatal("weights 5 and 4: not packed")
	}
	seq, err := s.Apply(batchOf([]engine.Op{op}))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Apply([]Edge{{Seq: seq, Op: op}}, freshIDs(t, m), seq, nil, nil); err != nil {
		t.Fatal(err)
	}
	check("applied", g, 3, 1)
}

// edgesGraph is a Graph of the edges of an oracle in a fixed id space
// (every id an index, with an edge or not), for BuildTopo: the CSR a
// topology must equal.
type edgesGraph struct {
	noGathers
	ids IDSpace
	g   oracle
}

func (e edgesGraph) IDs() (IDSpace, error) { return e.ids, nil }
func (e edgesGraph) Seq() uint64           { return 0 }
func (e edgesGraph) HasIn() bool           { return false }
func (e edgesGraph) Each(dir engine.Direction, weights bool, f func(v uint64, nbrs []uint64, ws []float64)) error {
	if dir != engine.Out {
		return errors.New("edgesGraph: out-edges only")
	}
	keys := make([]ekey, 0, len(e.g))
	for k := range e.g {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ekey) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for k := 0; k < len(keys); {
		var nb []uint64
		var ws []float64
		x := k
		for ; x < len(keys) && keys[x][0] == keys[k][0]; x++ {
			nb = append(nb, keys[x][1])
			ws = append(ws, e.g[keys[x]])
		}
		if !weights {
			ws = nil
		}
		f(keys[k][0], nb, ws)
		k = x
	}
	return nil
}

// noGathers is the part of a test's Graph that BuildTopo does not call:
// it gathers nothing.
type noGathers struct{}

func (noGathers) GatherEach([]uint64, engine.Direction, bool, func(int, []uint64, []float64)) error {
	return errors.New("a test graph: no gathers")
}

func (noGathers) GatherEachLimit([]uint64, engine.Direction, bool, int, func(int, []uint64, []float64)) (int, int, error) {
	return 0, 0, errors.New("a test graph: no gathers")
}

// checkAdjRooms fails unless a keeps Adj's invariants: its blocks cover
// its indexes, each over its window of the spans and in a's layout, and
// each block's rooms within [0, used), disjoint, each holding its list,
// held their sum, live the degrees' sum, the weights' arrays as long as
// the heads', and a packed weight's head its list's.
func checkAdjRooms(t testing.TB, a *Adj, label string) {
	t.Helper()
	if len(a.blocks) != blocksFor(len(a.spans), a.shift) {
		t.Fatalf("%s: %d blocks for %d indexes in blocks of %d", label, len(a.blocks), len(a.spans), 1<<a.shift)
	}
	for k := range a.blocks {
		b := &a.blocks[k]
		lo, hi := k<<a.shift, min(len(a.spans), (k+1)<<a.shift)
		if len(b.spans) != hi-lo || (hi > lo && &b.spans[0] != &a.spans[lo]) {
			t.Fatalf("%s: block %d's spans are not the window [%d, %d)", label, k, lo, hi)
		}
		if (b.pw != nil) != (a.weights == packedWeights) || (b.w != nil) != (a.weights == floatWeights) {
			t.Fatalf("%s: block %d keeps weights (w %v, pw %v) against the layout %d", label, k, b.w != nil, b.pw != nil, a.weights)
		}
		if len(a.heads) != len(a.blocks) || unsafe.SliceData(a.heads[k]) != unsafe.SliceData(b.dst) || len(a.heads[k]) != len(b.dst) ||
			unsafe.SliceData(a.floats[k]) != unsafe.SliceData(b.w) || len(a.floats[k]) != len(b.w) ||
			unsafe.SliceData(a.packed[k]) != unsafe.SliceData(b.pw) || len(a.packed[k]) != len(b.pw) {
			t.Fatalf("%s: the readers' arrays of block %d are not its own", label, k)
		}
		checkBlockRooms(t, b, fmt.Sprintf("%s, block %d", label, k))
	}
}

// checkBlockRooms fails unless a's rooms keep block's invariants.
func checkBlockRooms(t testing.TB, a *block, label string) {
	t.Helper()
	if a.used > int64(len(a.dst)) || (a.w != nil && a.pw != nil) ||
		(a.w != nil && len(a.w) != len(a.dst)) || (a.pw != nil && len(a.pw) != len(a.dst)) {
		t.Fatalf("%s: used %d, arrays %d %d %d", label, a.used, len(a.dst), len(a.w), len(a.pw))
	}
	var held, live int64
	var rooms []span
	for i, s := range a.spans {
		if s.deg < 0 || s.deg > s.cap || s.beg < 0 || s.beg+int64(s.cap) > a.used {
			t.Fatalf("%s: span %d %+v outside [0, %d)", label, i, s, a.used)
		}
		held += int64(s.cap)
		live += int64(s.deg)
		if s.cap > 0 {
			rooms = append(rooms, s)
		}
		if a.pw != nil {
			for k := s.beg; k < s.beg+int64(s.deg); k++ {
				if a.pw[k].V != a.dst[k] {
					t.Fatalf("%s: span %d, position %d: packed head %d, head %d", label, i, k, a.pw[k].V, a.dst[k])
				}
			}
		}
	}
	slices.SortFunc(rooms, func(x, y span) int { return cmp.Compare(x.beg, y.beg) })
	for k := 1; k < len(rooms); k++ {
		if rooms[k-1].beg+int64(rooms[k-1].cap) > rooms[k].beg {
			t.Fatalf("%s: rooms %+v and %+v overlap", label, rooms[k-1], rooms[k])
		}
	}
	if held != a.held || live != a.live {
		t.Fatalf("%s: held %d (rooms %d), live %d (degrees %d)", label, a.held, held, a.live, live)
	}
}

// sameAsBuilt fails unless g holds exactly the lists (heads, and weights
// bit for bit: -0 is not +0) that BuildTopo makes of the oracle's graph.
func sameAsBuilt(t testing.TB, g *Topo, want oracle, label string) {
	t.Helper()
	f, err := BuildTopo(context.Background(), edgesGraph{ids: g.IDs, g: want})
	if err != nil {
		t.Fatal(err)
	}
	if f.Out.Edges() != g.Out.Edges() || f.In.Edges() != g.In.Edges() || g.Bound() < f.Bound() {
		t.Fatalf("%s: edges %d/%d, built %d/%d; bound %d, built %d", label, g.Out.Edges(), g.In.Edges(), f.Out.Edges(), f.In.Edges(), g.Bound(), f.Bound())
	}
	for i := range int32(g.Len()) {
		for d, pair := range [][2]*Adj{{&g.Out, &f.Out}, {&g.In, &f.In}} {
			a, b := pair[0], pair[1]
			if !slices.Equal(a.Nbrs(i), b.Nbrs(i)) {
				t.Fatalf("%s: dir %d, list of %d: %v, built %v", label, d, g.IDs.ID(int(i)), a.Nbrs(i), b.Nbrs(i))
			}
			wa, wb := a.Weights(i), b.Weights(i)
			for k := range a.Nbrs(i) {
				if d == 0 && math.Float64bits(wa.At(k)) != math.Float64bits(wb.At(k)) {
					t.Fatalf("%s: weight %d of %d: %v, built %v", label, k, g.IDs.ID(int(i)), wa.At(k), wb.At(k))
				}
			}
		}
	}
}

// unweightedTopo is the graph of edges (each weight 1, repeats once)
// and BuildTopo's Topo of it over ids.
func unweightedTopo(t testing.TB, ids IDSpace, edges []gen.Edge) (*Topo, oracle) {
	t.Helper()
	cur := oracle{}
	for _, e := range edges {
		cur[ekey{e.Src, e.Dst}] = 1
	}
	g, err := BuildTopo(context.Background(), edgesGraph{ids: ids, g: cur})
	if err != nil {
		t.Fatal(err)
	}
	return g, cur
}

// sortedPairs is cur's edges in (source, destination) order.
func sortedPairs(cur oracle) []ekey {
	pairs := make([]ekey, 0, len(cur))
	for k := range cur {
		pairs = append(pairs, k)
	}
	slices.SortFunc(pairs, func(a, b ekey) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	return pairs
}

// smallRooms makes Adj compact and grow at every chance, in blocks of 8
// vertexes, for a test.
func smallRooms(t *testing.T) {
	gs, gm, bs := garbageShare, growMin, blockShift
	garbageShare, growMin, blockShift = 1<<40, 1, 3
	t.Cleanup(func() { garbageShare, growMin, blockShift = gs, gm, bs })
}

// Apply on degree-correlated streams (a few hubs take most operations)
// with 5% and 50% deletes equals the oracle and a fresh build of the
// oracle's graph after every batch, with every invariant of the rooms,
// while the arrays compact and grow at every chance: repeated operations
// on one pair in a batch, deletes of edges that do not exist, hub vertex
// deletes with operations on the hub before and after them (re-inserts)
// in the same batch, weights all 1, then whole, then not (with -0).
func TestTopoApplyStreamsOracle(t *testing.T) {
	volume.Mark(t)
	smallRooms(t)
	const nv = 300
	raw := make([]uint64, nv)
	for x := range raw {
		raw[x] = spread(uint64(x))
	}
	ids, err := NewIDSpace(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, delShare := range []int{5, 50} {
		r := rand.New(rand.NewPCG(uint64(delShare), 9))
		// skewed is a vertex, hub-heavy: index 0 is the largest hub.
		skewed := func() uint64 { u := r.Float64(); return spread(uint64(float64(nv) * u * u * u)) }
		cur := oracle{}
		for range 1500 {
			cur[ekey{skewed(), skewed()}] = 1
		}
		g, err := BuildTopo(context.Background(), edgesGraph{ids: ids, g: cur})
		if err != nil {
			t.Fatal(err)
		}
		negZero := math.Copysign(0, -1)
		for round := range 60 {
			weight := func() float64 {
				switch {
				case round < 15:
					return 1
				case round < 40:
					return float64(1 + r.IntN(5))
				case r.IntN(10) == 0:
					return negZero
				default:
					return float64(r.IntN(9)) / 2
				}
			}
			existing := sortedPairs(cur)
			var ops []engine.Op
			for range 200 {
				switch x := r.IntN(100); {
				case x < delShare && len(existing) > 0:
					e := existing[r.IntN(len(existing))]
					ops = append(ops, engine.Op{Src: e[0], Dst: e[1], Kind: engine.OpDeleteEdge})
				case x < delShare+3:
					ops = append(ops, engine.Op{Src: skewed(), Dst: skewed(), Kind: engine.OpDeleteEdge}) // mostly missing
				case x < delShare+6:
					a, b := skewed(), skewed()
					ops = append(ops, engine.Op{Src: a, Dst: b, Weight: weight(), Kind: engine.OpUpsert},
						engine.Op{Src: a, Dst: b, Kind: engine.OpDeleteEdge},
						engine.Op{Src: a, Dst: b, Weight: weight(), Kind: engine.OpUpsert},
						engine.Op{Src: a, Dst: b, Weight: weight(), Kind: engine.OpUpsert})
				default:
					ops = append(ops, engine.Op{Src: skewed(), Dst: skewed(), Weight: weight(), Kind: engine.OpUpsert})
				}
			}
			if round%4 == 1 {
				// A hub: touched, deleted, re-inserted, deleted again,
				// in one batch, with a neighbor deleted in between.
				hub := spread(uint64(r.IntN(3)))
				ops = append(ops, engine.Op{Src: hub, Dst: hub, Weight: weight(), Kind: engine.OpUpsert},
					engine.Op{Src: skewed(), Dst: hub, Weight: weight(), Kind: engine.OpUpsert},
					engine.Op{Src: hub, Kind: engine.OpDeleteVertex},
					engine.Op{Src: hub, Dst: spread(7), Weight: weight(), Kind: engine.OpUpsert},
					engine.Op{Src: spread(8), Dst: hub, Weight: weight(), Kind: engine.OpUpsert},
					engine.Op{Src: spread(7), Kind: engine.OpDeleteVertex},
					engine.Op{Src: hub, Dst: skewed(), Weight: weight(), Kind: engine.OpUpsert})
				if round%8 == 1 {
					ops = append(ops, engine.Op{Src: hub, Kind: engine.OpDeleteVertex})
				}
				r.Shuffle(len(ops)/2, func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
			}
			seq := uint64(round + 1)
			prev := cur.Clone()
			for _, o := range ops {
				cur.Apply(o)
			}
			es, expanded, was := applyRecorded(t, g, ids, seq, ops)
			label := fmt.Sprintf("deletes %d%%, round %d", delShare, round)
			step := prev.Clone()
			for k, o := range ops {
				if _, ok := step[ekey{o.Src, o.Dst}]; o.Kind != engine.OpDeleteVertex && ok != was[k] {
					t.Fatalf("%s, op %d %+v: present before it %v, Apply says %v", label, k, o, ok, was[k])
				} else if o.Kind == engine.OpDeleteVertex && was[k] {
					t.Fatalf("%s: present called for vertex delete %d", label, k)
				}
				step.Apply(o)
			}
			if err := checkExpanded(prev, interleaveExpanded(es, expanded)); err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			checkAdjRooms(t, &g.Out, label+", out")
			checkAdjRooms(t, &g.In, label+", in")
			for _, dir := range []engine.Direction{engine.Out, engine.In} {
				if got, want := topoAdj(t, g, dir), adjOf(cur, dir); !sameAdj(got, want) {
					t.Fatalf("%s, dir %v: %s", label, dir, adjDiff(got, want))
				}
			}
			sameAsBuilt(t, g, cur, label)
		}
		if st := g.Out.takeStats(); st.compactions < 5 {
			t.Fatalf("deletes %d%%: %d compactions: the test does not exercise them", delShare, st.compactions)
		}
	}
}

// On a skewed graph (R-MAT, scale 14) streamed with edges of the same
// generator (so that its inserts land on the graph's hubs, in proportion
// to their degrees) and 5% or 50% deletes of its edges, a steady-state
// advance costs what the batch changes: compactions and growths of the
// arrays copy a bounded number of heads per operation (amortized; a
// compaction of the whole graph per batch would be over a hundred),
// rewrites write at most the touched lists once over (a splice shifts a
// list's heads after its first change; a move copies the list) plus the
// operations, and the advance allocates a bounded number of bytes per
// operation (nothing of the graph's size).
func TestTopoApplyCostsTheChange(t *testing.T) {
	volume.Mark(t)
	const scale, batch, warm, measured = 14, 2000, 10, 50
	for _, delShare := range []int{5, 50} {
		r := gen.RMAT{Scale: scale, EdgeFactor: 16, Seed: 7}
		all := gen.RMAT{Scale: scale, EdgeFactor: 16 + 16*batch*(warm+measured)/(16<<scale) + 1, Seed: 7}.Generate()
		ids := identityIDs(t, int(r.NumVertices()))
		g, cur := unweightedTopo(t, ids, all[:r.NumEdges()])
		existing := sortedPairs(cur)
		rng := rand.New(rand.NewPCG(1, uint64(delShare)))
		next := r.NumEdges()
		es := make([]Edge, 0, batch)
		var compactions, copied, moved, touched, allocated uint64
		var ms runtime.MemStats
		seen := map[[2]int32]bool{}
		for b := range warm + measured {
			es = es[:0]
			for len(es) < batch {
				if rng.IntN(100) < delShare {
					x := rng.IntN(len(existing))
					e := existing[x]
					existing[x] = existing[len(existing)-1]
					existing = existing[:len(existing)-1]
					es = append(es, Edge{Op: engine.Op{Src: e[0], Dst: e[1], Kind: engine.OpDeleteEdge}})
					continue
				}
				e := all[next]
				next++
				es = append(es, Edge{Op: engine.Op{Src: e.Src, Dst: e.Dst, Weight: 1, Kind: engine.OpUpsert}})
				existing = append(existing, ekey{e.Src, e.Dst})
			}
			// The degrees, before the batch, of the lists it touches.
			clear(seen)
			td := uint64(0)
			for _, e := range es {
				s, d := int32(e.Op.Src), int32(e.Op.Dst)
				if !seen[[2]int32{0, s}] {
					seen[[2]int32{0, s}] = true
					td += uint64(g.Out.Deg(s))
				}
				if !seen[[2]int32{1, d}] {
					seen[[2]int32{1, d}] = true
					td += uint64(g.In.Deg(d))
				}
			}
			g.Out.takeStats()
			g.In.takeStats()
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			if err := g.Apply(es, ids, uint64(b+1), nil, nil); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&ms)
			if b >= warm {
				allocated += ms.TotalAlloc - before
				so, si := g.Out.takeStats(), g.In.takeStats()
				compactions += so.compactions + si.compactions
				copied += so.elementsCompacted + si.elementsCompacted
				moved += so.elementsMoved + si.elementsMoved
				touched += td
			}
		}
		ops := uint64(batch * measured)
		t.Logf("deletes %d%%: %.2f bytes per edge", delShare, float64(g.Bytes())/float64(g.Out.Edges()))
		t.Logf("deletes %d%%: %d edges; per op: %d/%d compactions, %.1f heads copied by them, %.1f written by rewrites (touched lists' degrees %.1f), %.1f bytes allocated",
			delShare, g.Out.Edges(), compactions, ops, float64(copied)/float64(ops), float64(moved)/float64(ops), float64(touched)/float64(ops), float64(allocated)/float64(ops))
		// Amortized: a compaction copies the rooms at most twice over
		// and then leaves at least a 32nd of them free for moves (a
		// growth, a 16th), a move takes about five slots per head its
		// list gains, and few inserts make their list move (most find
		// room). The stream grows the graph by a third here: the arrays
		// grow too, by a 16th at a time.
		if copied > 200*ops {
			t.Errorf("deletes %d%%: compactions copied %d heads for %d operations", delShare, copied, ops)
		}
		if moved > touched+4*ops {
			t.Errorf("deletes %d%%: rewrites wrote %d heads for %d operations on lists of %d", delShare, moved, ops, touched)
		}
		if allocated > 320*ops {
			t.Errorf("deletes %d%%: %d bytes allocated for %d operations", delShare, allocated, ops)
		}
	}
}

// locate finds each change's position, against a binary search of the
// same lists: rooms laid out in a random order with gaps and empty
// lists, lists of 0 to 3,000 heads (so that the searches of a group take
// different numbers of steps), heads sought that are in the list, below
// it, above it and between its heads.
func TestLocate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 43))
	for round := range 20 {
		n := 1 + r.IntN(3000)
		a := &block{spans: make([]span, n)}
		perm := r.Perm(n)
		for _, v := range perm {
			deg := int32(r.IntN(4) * r.IntN(1000))
			if r.IntN(5) == 0 {
				continue // no room
			}
			a.used += int64(r.IntN(3)) // a gap
			a.spans[v] = span{beg: a.used, deg: deg, cap: deg + int32(r.IntN(3))}
			if a.spans[v].cap == 0 {
				a.spans[v].cap = 1
			}
			a.used += int64(a.spans[v].cap)
		}
		a.dst = make([]int32, a.used)
		for v := range a.spans {
			s := a.spans[v]
			l := a.dst[s.beg : s.beg+int64(s.deg)]
			next := int32(0)
			for k := range l {
				next += 1 + int32(r.IntN(5))
				l[k] = next
			}
		}
		var lists []int32
		var cs []change
		for range 1 + r.IntN(200) {
			v := int32(r.IntN(n))
			lists = append(lists, v)
			cs = append(cs, change{j: int32(r.IntN(3 * int(a.spans[v].deg+1)))})
		}
		at := make([]int32, len(cs))
		whole := Adj{spans: a.spans, blocks: []block{*a}, shift: 12}
		whole.refresh(-1)
		whole.locate(lists, cs, at)
		for x, v := range lists {
			s := a.spans[v]
			p, found := slices.BinarySearch(a.dst[s.beg:s.beg+int64(s.deg)], cs[x].j)
			if q, f := located(at[x]); q != int32(p) || f != found {
				t.Fatalf("round %d: head %d in list %d (degree %d) located at %d (found %v), want %d (%v)", round, cs[x].j, v, s.deg, q, f, p, found)
			}
		}
	}
}

// identityIDs is the id space of the ids 0 to n-1, each at its own index.
func identityIDs(t testing.TB, n int) IDSpace {
	t.Helper()
	raw := make([]uint64, n)
	for x := range raw {
		raw[x] = uint64(x)
	}
	ids, err := NewIDSpace(raw)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A stream that deletes most of a graph's edges gives their memory back:
// each block that lost half its edges since its last compaction is
// compacted into arrays of its rooms' size (without it, deletes alone
// never compact a block, and its arrays stay as large as at the build).
func TestTopoGivesBackTheMemoryOfDeletes(t *testing.T) {
	bs := blockShift
	blockShift = 8 // 16 blocks
	t.Cleanup(func() { blockShift = bs })
	r := gen.RMAT{Scale: 12, EdgeFactor: 16, Seed: 3}
	ids := identityIDs(t, int(r.NumVertices()))
	g, cur := unweightedTopo(t, ids, r.Generate())
	// The arrays of the lists' heads and weights (not the spans nor the
	// edit queue, which deletes do not shrink).
	arrays := func(g *Topo) (n int64) {
		for _, a := range []*Adj{&g.Out, &g.In} {
			for k := range a.blocks {
				b := &a.blocks[k]
				n += int64(cap(b.dst))*4 + int64(cap(b.w))*8 + int64(cap(b.pw))*8
			}
		}
		return n
	}
	before := arrays(g)
	existing := sortedPairs(cur)
	rng := rand.New(rand.NewPCG(3, 3))
	rng.Shuffle(len(existing), func(i, j int) { existing[i], existing[j] = existing[j], existing[i] })
	left := len(existing) / 5
	for b, seq := 0, uint64(1); len(existing) > left; b, seq = b+1, seq+1 {
		var es []Edge
		for range min(1000, len(existing)-left) {
			e := existing[len(existing)-1]
			existing = existing[:len(existing)-1]
			delete(cur, e)
			es = append(es, Edge{Op: engine.Op{Src: e[0], Dst: e[1], Kind: engine.OpDeleteEdge}})
		}
		if err := g.Apply(es, ids, seq, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	checkAdjRooms(t, &g.Out, "out")
	checkAdjRooms(t, &g.In, "in")
	sameAsBuilt(t, g, cur, "after the deletes")
	f, err := BuildTopo(context.Background(), edgesGraph{ids: ids, g: cur})
	if err != nil {
		t.Fatal(err)
	}
	// A block shrinks to its rooms (a quarter more than their heads, and
	// 2) and a sixteenth, then again once it has lost half its edges: at
	// most about 2 * 1.25 * 17/16 times a build's sixteenth, and the 2.
	after, built := arrays(g), arrays(f)
	t.Logf("the lists' arrays: %d bytes before, %d after deleting 4 of 5 edges; a build of what is left takes %d", before, after, built)
	if after > 3*built {
		t.Fatalf("the lists' arrays held %d bytes before deleting 4 of 5 edges, %d after, more than thrice the %d of a build of what is left", before, after, built)
	}
}

// A Cursor reads every list as Adj.Nbrs does, over indexes in order
// (block by block, as a kernel's chunk) and out of order (a seek at almost
// every step), in blocks of 8 vertices.
func TestCursorReadsTheLists(t *testing.T) {
	smallRooms(t)
	r := gen.RMAT{Scale: 9, EdgeFactor: 8, Seed: 5}
	ids := identityIDs(t, int(r.NumVertices()))
	g, _ := unweightedTopo(t, ids, r.Generate())
	if len(g.Out.blocks) < 2 {
		t.Fatalf("%d blocks: the test wants several", len(g.Out.blocks))
	}
	order := make([]int32, g.Len())
	for i := range order {
		order[i] = int32(i)
	}
	shuffled := slices.Clone(order)
	rand.New(rand.NewPCG(5, 5)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, a := range []*Adj{&g.Out, &g.In} {
		for _, seq := range [][]int32{order, shuffled} {
			c := a.Cursor()
			for _, i := range seq {
				if got, want := c.Nbrs(i), a.Nbrs(i); !slices.Equal(got, want) {
					t.Fatalf("list of %d: the cursor reads %v, Nbrs %v", i, got, want)
				}
			}
		}
	}
}

// Apply counts the edge changes it applies (TopologyStats.Changes): each
// pair an operation touches once however often the run repeats it, and
// each edge a vertex delete removes (its out- and in-edges alike).
func TestTopoCountsEdgeChanges(t *testing.T) {
	ids := identityIDs(t, 64)
	var edges []gen.Edge
	for j := range uint64(20) {
		edges = append(edges, gen.Edge{Src: 7, Dst: 20 + j}) // 7's out-edges
	}
	edges = append(edges, gen.Edge{Src: 1, Dst: 7}, gen.Edge{Src: 2, Dst: 7}, gen.Edge{Src: 3, Dst: 4})
	g, _ := unweightedTopo(t, ids, edges)
	if c := g.takeChanges(); c != 0 {
		t.Fatalf("a build counts %d changes", c)
	}
	ops := []Edge{
		{Op: engine.Op{Src: 3, Dst: 5, Weight: 1, Kind: engine.OpUpsert}},
		{Op: engine.Op{Src: 3, Dst: 5, Weight: 2, Kind: engine.OpUpsert}}, // the same pair
		{Op: engine.Op{Src: 3, Dst: 4, Kind: engine.OpDeleteEdge}},
		{Op: engine.Op{Src: 7, Kind: engine.OpDeleteVertex}}, // 20 out-edges, 2 in-edges
		{Op: engine.Op{Src: 9, Dst: 10, Weight: 1, Kind: engine.OpUpsert}},
	}
	if err := g.Apply(ops, ids, 1, nil, nil); err != nil {
		t.Fatal(err)
	}
	if c, want := g.takeChanges(), uint64(2+22+1); c != want {
		t.Fatalf("%d edge changes, want %d", c, want)
	}
	if c := g.takeChanges(); c != 0 {
		t.Fatalf("taken twice: %d", c)
	}
}

// TestRadixSort: radixSort orders keys of every width as slices.Sort
// does, short inputs and long, with repeats.
func TestRadixSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, width := range []uint{1, 8, 11, 12, 33, 56, 64} {
		for _, n := range []int{0, 1, 255, 256, 1000, 20000} {
			keys := make([]uint64, n)
			for x := range keys {
				keys[x] = r.Uint64()
				if width < 64 {
					keys[x] &= 1<<width - 1
				}
			}
			want := slices.Sorted(slices.Values(keys))
			if got := radixSort(keys, width); !slices.Equal(got, want) {
				t.Fatalf("width %d, %d keys: not sorted as slices.Sort sorts them", width, n)
			}
		}
	}
}
