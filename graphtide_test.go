package graphtide

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
)

// edgeCount is a user-defined analytic: the edge count and every vertex's
// out-degree, by updates from the changes.
type edgeCount struct {
	mu      sync.Mutex
	out     map[uint64]int
	edges   int64
	updates int
}

func (a *edgeCount) Recompute(_ context.Context, g *Graph) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out = map[uint64]int{}
	for i := 0; i < g.Len(); i++ {
		if d := len(g.Out(i)); d > 0 {
			a.out[g.ID(i)] = d
		}
	}
	a.edges = g.Edges()
	return nil
}

func (a *edgeCount) Update(_ context.Context, g *Graph, changes []Change) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.updates++
	for _, c := range changes {
		for _, v := range []uint64{c.Src, c.Dst} {
			if i, ok := g.Index(v); ok {
				if d := len(g.Out(i)); d > 0 {
					a.out[v] = d
				} else {
					delete(a.out, v)
				}
			}
		}
	}
	a.edges = g.Edges()
	return false, nil
}

func (a *edgeCount) Result() any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.edges
}

func (a *edgeCount) VertexResult(v uint64) (any, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.out[v]
	return d, ok
}

// TestDBFollowsAnOracle: random batches (inserts, re-weights, deletes,
// vertex deletes, string keys) applied through the package: snapshots,
// views, a stream and a user-defined analytic agree with a map of edges
// after every batch, and after a reopen.
func TestDBFollowsAnOracle(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{MemGraphBytes: 64 << 10}) // in-edges: the default
	if err != nil {
		t.Fatal(err)
	}
	a := &edgeCount{}
	if err := db.RegisterAnalytic("count", a); err != nil {
		t.Fatal(err)
	}
	if err := db.RegisterAnalytic("count", a); err == nil {
		t.Fatal("a second analytic of one name was registered")
	}
	if _, err := db.Register(Spec("type=custom,name=x")); err == nil {
		t.Fatal("a custom analytic was registered from a spec")
	}
	st, err := db.Stream(1)
	if err != nil {
		t.Fatal(err)
	}
	want := testref.Edges{}
	r := rand.New(rand.NewPCG(3, 4))
	vertex := func() uint64 {
		if r.IntN(4) == 0 {
			id, err := db.VertexID(fmt.Sprintf("k%d", r.IntN(30)))
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		return uint64(r.IntN(120))
	}
	ctx := context.Background()
	var streamed []Change
	var sent []Change
	for batch := 0; batch < 40; batch++ {
		var b Batch
		var ops []engine.Op
		for range 1 + r.IntN(200) {
			var op engine.Op
			switch x := r.IntN(100); {
			case x < 20 && len(want) > 0:
				keys := make([][2]uint64, 0, len(want))
				for k := range want {
					keys = append(keys, k)
				}
				slices.SortFunc(keys, func(a, b [2]uint64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
				k := keys[r.IntN(len(keys))]
				op = engine.Op{Src: k[0], Dst: k[1], Kind: engine.OpDeleteEdge}
				b.Delete(op.Src, op.Dst)
			case x < 22:
				op = engine.Op{Src: vertex(), Kind: engine.OpDeleteVertex}
				b.DeleteVertex(op.Src)
			default:
				op = engine.Op{Src: vertex(), Dst: vertex(), Weight: float64(r.IntN(9)), Kind: engine.OpUpsert}
				b.Insert(op.Src, op.Dst, op.Weight)
			}
			ops = append(ops, op)
		}
		seq, err := db.Apply(&b)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			want.Apply(op)
			c := Change{Seq: seq, Src: op.Src, Dst: op.Dst, Weight: op.Weight}
			switch op.Kind {
			case engine.OpDeleteEdge:
				c.Op, c.Weight = DeleteEdge, 0
			case engine.OpDeleteVertex:
				c.Op, c.Dst, c.Weight = DeleteVertex, 0, 0
			}
			sent = append(sent, c)
		}
		for len(streamed) < len(sent) {
			cs, err := st.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				if c.Op != DeleteEdge || len(streamed) < len(sent) && sent[len(streamed)].Op == DeleteEdge && sent[len(streamed)].Src == c.Src && sent[len(streamed)].Dst == c.Dst {
					streamed = append(streamed, c)
				} // else: an edge delete a vertex delete applied
			}
		}
		checkDB(t, fmt.Sprintf("batch %d", batch), db, want)
		res, err := db.Wait(ctx, "count", seq)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.(int64) != int64(len(want)) {
			t.Fatalf("batch %d: the analytic counts %v edges, want %d", batch, res.Summary, len(want))
		}
		for v, d := range testref.Degrees(want, "out") {
			if got, ok, _ := db.VertexResult("count", v); !ok || uint64(got.(int)) != d {
				t.Fatalf("batch %d: out-degree of %d = %v (%v), want %d", batch, v, got, ok, d)
			}
		}
	}
	for i := range sent {
		if streamed[i] != sent[i] {
			t.Fatalf("change %d: streamed %+v, applied %+v", i, streamed[i], sent[i])
		}
	}
	if a.updates == 0 {
		t.Fatal("the analytic was never updated")
	}
	st.Close()
	db = reopen(t, db, dir)
	defer db.Close()
	if !db.InEdges() {
		t.Fatal("the reopened store lost its in-edges")
	}
	checkDB(t, "after a reopen", db, want)
}

// checkDB compares a snapshot (out- and in-neighbors, degrees) and a
// static view with want.
func checkDB(t *testing.T, label string, db *DB, want testref.Edges) {
	t.Helper()
	sn, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	vs := map[uint64]bool{}
	for k := range want {
		vs[k[0]], vs[k[1]] = true, true
	}
	got := testref.Edges{}
	for v := range vs {
		nb, err := sn.Neighbors(v, Out)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nb {
			got[[2]uint64{v, n.ID}] = n.Weight
		}
		in, err := sn.Neighbors(v, In)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := sn.Degree(v, In); d != len(in) {
			t.Fatalf("%s: in-degree of %d = %d, in-neighbors %d", label, v, d, len(in))
		}
		for _, n := range in {
			if w, ok := want[[2]uint64{n.ID, v}]; !ok || w != n.Weight {
				out, _ := sn.Neighbors(n.ID, Out)
				t.Fatalf("%s: in-edge %d->%d (%v) is not in the oracle (%v %v); out of %d: %v", label, n.ID, v, n.Weight, w, ok, n.ID, out)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d edges, want %d", label, len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Fatalf("%s: edge %v = %v (%v), want %v", label, k, g, ok, w)
		}
	}
	v, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	n := 0
	if err := v.Each(Out, func(u uint64, nbrs []uint64, ws []float64) {
		for i, x := range nbrs {
			if want[[2]uint64{u, x}] != ws[i] {
				t.Errorf("%s: the view's edge %d->%d (%v) differs", label, u, x, ws[i])
			}
			n++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("%s: the view holds %d edges, want %d", label, n, len(want))
	}
}

// TestDBEmptyBatchesAndClose: an empty batch applies nothing and Wait for
// its seq returns at once; after Close, Apply, Wait and a stream's Next
// say ErrClosed; a stream that falls behind says ErrStreamLost.
func TestDBEmptyBatchesAndClose(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{ViewLogCapacity: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Register(Spec("type=wcc")); err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Insert(1, 2, 1)
	seq, err := db.Apply(&b)
	if err != nil {
		t.Fatal(err)
	}
	var empty Batch
	if s2, err := db.Apply(&empty); err != nil || s2 != seq {
		t.Fatalf("an empty batch: seq %d, %v; want %d", s2, err, seq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.Wait(ctx, "wcc", seq); err != nil {
		t.Fatal(err)
	}
	st, err := db.Stream(1)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // more than the log holds: the stream loses them
		b.Reset()
		for i := range uint64(1000) {
			b.Insert(i, i+1, 1)
		}
		if _, err := db.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Next(ctx); !errors.Is(err, ErrStreamLost) {
		t.Fatalf("a stream behind the log: %v, want ErrStreamLost", err)
	}
	st.Close()
	if _, err := st.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Apply(&b); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	if _, err := db.Wait(ctx, "wcc", seq); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a second Close: %v", err)
	}
}

// Edge types from the root package: named types, two edges of different
// types between the same vertices (one with an event time, which reads
// return), reads of some types, an analytic of one type, and the names
// after a reopen.
func TestDBEdgeTypes(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	pay, err := db.TypeID("payment")
	if err != nil {
		t.Fatal(err)
	}
	login, err := db.TypeID("login")
	if err != nil || pay == login || pay == 0 || login == 0 {
		t.Fatalf("types payment %d, login %d: %v", pay, login, err)
	}
	if _, err := db.Register(Spec("name=paid,type=wcc,types=payment")); err != nil {
		t.Fatal(err)
	}
	var b Batch
	paidAt := time.Date(2026, 11, 23, 10, 15, 0, 123456000, time.UTC)
	b.Insert(1, 2, 10)
	b.SetType(pay)
	b.SetEventTime(paidAt)
	b.Insert(1, 2, 1)
	b.SetType(login)
	b.Insert(2, 3, 1)
	b.SetType(login)
	b.Insert(4, 5, 1) // the default type
	seq, err := db.Apply(&b)
	if err != nil {
		t.Fatal(err)
	}
	sn, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	all, err := sn.Neighbors(1, Out)
	want := []Neighbor{{ID: 2, Weight: 1, Type: login}, {ID: 2, Weight: 10, Type: pay, Time: paidAt}}
	if login < pay {
		want[0], want[1] = want[1], want[0]
	}
	if err != nil || fmt.Sprint(all) != fmt.Sprint(want) {
		t.Errorf("neighbors of 1: %v, %v; want %v", all, err, want)
	}
	// Edge lookups: both types of 1 -> 2, as Neighbors lists them; one
	// through a type filter; none the other way.
	if es, err := sn.Edges(1, 2); err != nil || fmt.Sprint(es) != fmt.Sprint(want) {
		t.Errorf("edges 1 -> 2: %v, %v; want %v", es, err, want)
	}
	if es, err := sn.OfTypes(pay).Edges(1, 2); err != nil || len(es) != 1 || es[0].Type != pay || es[0].Weight != 10 || !es[0].Time.Equal(paidAt) {
		t.Errorf("payment edges 1 -> 2: %v, %v", es, err)
	}
	for _, c := range []struct {
		src, dst uint64
		want     bool
	}{{1, 2, true}, {2, 1, false}, {4, 5, true}, {5, 4, false}, {1, 3, false}} {
		if has, err := sn.HasEdge(c.src, c.dst); err != nil || has != c.want {
			t.Errorf("has edge %d -> %d: %v, %v; want %v", c.src, c.dst, has, err, c.want)
		}
	}
	if d, err := sn.OfTypes(pay).Degree(1, Out); err != nil || d != 1 {
		t.Errorf("payment degree of 1: %d, %v", d, err)
	}
	if d, err := sn.OfTypes(pay).Degree(2, Out); err != nil || d != 0 {
		t.Errorf("payment degree of 2: %d, %v", d, err)
	}
	sn.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.Wait(ctx, "paid", seq); err != nil {
		t.Fatal(err)
	}
	// Over payments only, 3 is not joined to 1 (login edges do not count).
	c1, _, err1 := db.VertexResult("paid", 1)
	c3, _, err3 := db.VertexResult("paid", 3)
	if err1 != nil || err3 != nil || fmt.Sprint(c1) == fmt.Sprint(c3) {
		t.Errorf("paid components of 1 and 3: %v %v (%v %v)", c1, c3, err1, err3)
	}
	db = reopen(t, db, dir)
	defer db.Close()
	if db.TypeName(pay) != "payment" || db.TypeName(0) != "default" {
		t.Errorf("after a reopen: %q %q", db.TypeName(pay), db.TypeName(0))
	}
}

// reopen closes db and opens its directory again.
func reopen(t *testing.T, db *DB, dir string) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDBSnapshotAt reads the graph as of each earlier batch within the
// history, across a reopen (which flushes), against the edges each batch
// left (a map oracle), and refuses a seq the history let go.
func TestDBSnapshotAt(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{HistorySeqs: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]map[[2]uint64]float64{}
	cur := map[[2]uint64]float64{}
	var last uint64
	for i := range 40 {
		var b Batch
		b.Insert(uint64(i%7), uint64(i%5), float64(i))
		if i%3 == 0 {
			b.Delete(uint64((i+2)%7), uint64((i+1)%5))
			delete(cur, [2]uint64{uint64((i + 2) % 7), uint64((i + 1) % 5)})
		}
		cur[[2]uint64{uint64(i % 7), uint64(i % 5)}] = float64(i)
		if last, err = db.Apply(&b); err != nil {
			t.Fatal(err)
		}
		want[last] = maps.Clone(cur)
		if i == 25 { // a reopen with the same history
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = Open(dir, &Options{HistorySeqs: 20}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(seq uint64) {
		sn, err := db.SnapshotAt(seq)
		if err != nil {
			t.Fatalf("snapshot at %d: %v", seq, err)
		}
		defer sn.Release()
		got := map[[2]uint64]float64{}
		for v := uint64(0); v < 7; v++ {
			ns, err := sn.Neighbors(v, Out)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range ns {
				got[[2]uint64{v, n.ID}] = n.Weight
			}
		}
		if !maps.Equal(got, want[seq]) {
			t.Errorf("as of seq %d: %v, want %v", seq, got, want[seq])
		}
	}
	for seq := last - 20; seq <= last; seq++ {
		check(seq)
	}
	var se *SeqError
	if _, err := db.SnapshotAt(last - 21); !errors.As(err, &se) || se.Seq != last-21 || se.Oldest != last-20 || se.Newest != last ||
		!strings.Contains(err.Error(), fmt.Sprintf("the store reads seqs %d to %d", last-20, last)) || !errors.Is(err, ErrInvalid) {
		t.Errorf("a snapshot before the history: %v (%+v)", err, se)
	}
	db.Close()
}

// TestDBApplyIf: a transfer edge added only while the accounts are not
// linked, a weight raised only while it is still below a bound, and a
// typed condition; a refused batch changes nothing and says why.
func TestDBApplyIf(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pay, err := db.TypeID("payment")
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Insert(1, 2, 10)
	b.SetType(pay)
	if _, err := db.ApplyIf(&b, EdgeAbsent(1, 2).OfType(pay)); err != nil {
		t.Fatal(err)
	}
	var pe *PreconditionError
	if _, err := db.ApplyIf(&b, EdgeAbsent(1, 2).OfType(pay)); !errors.As(err, &pe) || pe.Actual != "it exists" {
		t.Fatalf("a second link: %v", err)
	}
	if _, err := db.ApplyIf(&b, EdgeAbsent(1, 2)); err != nil { // the default type: not linked
		t.Fatalf("a condition on the default type: %v", err)
	}
	b.Reset()
	b.Insert(1, 2, 20)
	b.SetType(pay)
	if _, err := db.ApplyIf(&b, WeightBelow(1, 2, 15).OfType(pay), VertexExists(1), DegreeAtMost(1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplyIf(&b, WeightBelow(1, 2, 15).OfType(pay)); !errors.As(err, &pe) || pe.Actual != "its weight is 20" {
		t.Fatalf("raised past the bound: %v", err)
	}
	sn, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	es, err := sn.OfTypes(pay).Edges(1, 2)
	if err != nil || len(es) != 1 || es[0].Weight != 20 {
		t.Fatalf("the payment 1 -> 2: %v, %v", es, err)
	}
}

// TestDBVertexRecords: a record makes an isolated vertex exist, a later
// put replaces it (as of the earlier seq the old one reads), and a vertex
// delete removes it; the records survive a reopen.
func TestDBVertexRecords(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{HistorySeqs: 10})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.PutVertex(1, "account", []byte(`{"limit":100}`))
	b.PutVertex(2, "", nil)
	first, err := db.Apply(&b)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.PutVertex(1, "merchant", nil)
	b.DeleteVertex(2)
	if _, err := db.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, &Options{HistorySeqs: 10}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check := func(sn *Snapshot, v uint64, label, props string, ok bool) {
		t.Helper()
		rec, got, err := sn.Vertex(v)
		if err != nil || got != ok || rec.Label != label || string(rec.Props) != props {
			t.Errorf("seq %d vertex %d: (%q, %s, %v), %v; want (%q, %s, %v)", sn.Seq(), v, rec.Label, rec.Props, got, err, label, props, ok)
		}
		if ex, err := sn.VertexExists(v); err != nil || ex != ok {
			t.Errorf("seq %d vertex %d exists: %v, %v; want %v", sn.Seq(), v, ex, err, ok)
		}
	}
	sn, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	check(sn, 1, "merchant", "", true)
	check(sn, 2, "", "", false)
	sn.Release()
	if sn, err = db.SnapshotAt(first); err != nil {
		t.Fatal(err)
	}
	check(sn, 1, "account", `{"limit":100}`, true)
	check(sn, 2, "", "", true)
	sn.Release()
}

// outWeights is a user-defined analytic that reads every edge with its
// weight through Out, OutWeights and OutWeight, on each pull.
type outWeights struct {
	mu  sync.Mutex
	got testref.Edges
	bad error
}

func (a *outWeights) read(g *Graph) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = testref.Edges{}
	for i := 0; i < g.Len(); i++ {
		ws := g.OutWeights(i)
		for k, j := range g.Out(i) {
			w := 1.0
			if ws != nil {
				w = ws[k]
			}
			if x := g.OutWeight(i, k); x != w && a.bad == nil {
				a.bad = fmt.Errorf("edge (%d, %d): OutWeight %v, OutWeights %v", g.ID(i), g.ID(int(j)), x, w)
			}
			a.got[[2]uint64{g.ID(i), g.ID(int(j))}] = w
		}
	}
}

func (a *outWeights) Recompute(_ context.Context, g *Graph) error { a.read(g); return nil }

func (a *outWeights) Update(_ context.Context, g *Graph, _ []Change) (bool, error) {
	a.read(g)
	return false, nil
}

func (a *outWeights) Result() any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.got.Clone()
}

func (a *outWeights) VertexResult(uint64) (any, bool) { return nil, false }

// TestGraphOutWeights: a user-defined analytic reads the weights the
// store holds, while every weight is whole (kept packed) and after
// weights that are not (kept as float64s), with re-weights, deletes and
// vertex deletes.
func TestGraphOutWeights(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{MemGraphBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := &outWeights{}
	if err := db.RegisterAnalytic("w", a); err != nil {
		t.Fatal(err)
	}
	want := testref.Edges{}
	r := rand.New(rand.NewPCG(8, 9))
	ctx := context.Background()
	for batch := 0; batch < 20; batch++ {
		var b Batch
		for range 200 {
			src, dst := uint64(r.IntN(100)), uint64(r.IntN(100))
			switch x := r.IntN(100); {
			case x < 15:
				b.Delete(src, dst)
				want.Apply(engine.Op{Src: src, Dst: dst, Kind: engine.OpDeleteEdge})
			case x < 17:
				b.DeleteVertex(src)
				want.Apply(engine.Op{Src: src, Kind: engine.OpDeleteVertex})
			default:
				w := float64(r.IntN(9))
				if batch >= 10 && x%4 == 0 {
					w += 0.5
				}
				b.Insert(src, dst, w)
				want.Apply(engine.Op{Src: src, Dst: dst, Weight: w, Kind: engine.OpUpsert})
			}
		}
		seq, err := db.Apply(&b)
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.Wait(ctx, "w", seq)
		if err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		bad := a.bad
		a.mu.Unlock()
		if bad != nil {
			t.Fatalf("batch %d: %v", batch, bad)
		}
		if got := res.Summary.(testref.Edges); !maps.Equal(got, want) {
			t.Fatalf("batch %d: the analytic read %d edges, the oracle holds %d (or weights differ)", batch, len(got), len(want))
		}
	}
}

// TestDBInEdgesByDefault: a new store keeps in-edges unless NoInEdges (the
// in-neighbors read back are the edges applied, transposed); an existing
// store keeps what it was created with, whatever the options of a later
// Open say; InEdges with NoInEdges is refused.
func TestDBInEdgesByDefault(t *testing.T) {
	edges := [][2]uint64{{1, 3}, {2, 3}, {4, 3}, {3, 1}}
	wantIn := map[uint64][]uint64{} // dst -> srcs, ascending
	for _, e := range edges {
		wantIn[e[1]] = append(wantIn[e[1]], e[0])
	}
	for _, srcs := range wantIn {
		slices.Sort(srcs)
	}
	fill := func(db *DB) {
		t.Helper()
		var b Batch
		for _, e := range edges {
			b.Insert(e[0], e[1], 1)
		}
		if _, err := db.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	// check reads in-neighbors of every vertex, or expects ErrNoInEdges.
	check := func(label string, db *DB, in bool) {
		t.Helper()
		if db.InEdges() != in {
			t.Fatalf("%s: InEdges() = %v, want %v", label, db.InEdges(), in)
		}
		sn, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		for v := uint64(1); v <= 4; v++ {
			ns, err := sn.Neighbors(v, In)
			if !in {
				if !errors.Is(err, ErrNoInEdges) {
					t.Fatalf("%s: in-neighbors of %d in a store without in-edges: %v, want ErrNoInEdges", label, v, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: in-neighbors of %d: %v", label, v, err)
			}
			var got []uint64
			for _, n := range ns {
				got = append(got, n.ID)
			}
			if !slices.Equal(got, wantIn[v]) {
				t.Fatalf("%s: in-neighbors of %d = %v, want %v", label, v, got, wantIn[v])
			}
		}
	}
	def, out := t.TempDir(), t.TempDir()
	for _, c := range []struct {
		dir string
		o   *Options
		in  bool
	}{{def, nil, true}, {out, &Options{NoInEdges: true}, false}} {
		db, err := Open(c.dir, c.o)
		if err != nil {
			t.Fatal(err)
		}
		fill(db)
		check("new", db, c.in)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// Reopened with the other setting, and with none: as created.
		for _, o := range []*Options{nil, {NoInEdges: c.in}, {}} {
			db, err := Open(c.dir, o)
			if err != nil {
				t.Fatalf("reopening a store created with in-edges %v with %+v: %v", c.in, o, err)
			}
			check(fmt.Sprintf("reopened with %+v", o), db, c.in)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := Open(t.TempDir(), &Options{InEdges: true, NoInEdges: true}); err == nil || !strings.Contains(err.Error(), "contradict") {
		t.Fatalf("InEdges with NoInEdges: %v, want a refusal", err)
	}
}
