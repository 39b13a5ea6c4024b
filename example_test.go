package graphtide_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/graphtide/graphtide"
)

// check stops an example at an error.
func check(err error) {
	if err != nil {
		panic(err)
	}
}

// Open a store, apply a batch of payments between string keys, and read a
// snapshot.
func Example() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()

	id := func(key string) uint64 {
		v, err := db.VertexID(key)
		check(err)
		return v
	}
	var b graphtide.Batch
	b.Insert(id("alice"), id("bob"), 12.5)
	b.Insert(id("alice"), id("carol"), 3)
	b.Insert(id("carol"), id("bob"), 7)
	seq, err := db.Apply(&b)
	check(err)

	sn, err := db.Snapshot()
	check(err)
	defer sn.Release()
	nbrs, _ := sn.Neighbors(id("alice"), graphtide.Out)
	for _, n := range nbrs {
		key, _ := db.Key(n.ID)
		fmt.Printf("alice -> %s (%v)\n", key, n.Weight)
	}
	in, _ := sn.Degree(id("bob"), graphtide.In)
	fmt.Println("bob's in-degree:", in, "at seq", seq)
	// Output:
	// alice -> bob (12.5)
	// alice -> carol (3)
	// bob's in-degree: 2 at seq 1
}

// A built-in analytic follows every batch: BFS levels from a root,
// registered with typed options and read as named types.
func ExampleDB_Register() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()

	name, err := db.Register(graphtide.BFS{Name: "reach", Root: 1})
	check(err)
	var b graphtide.Batch
	for v := uint64(1); v < 5; v++ {
		b.Insert(v, v+1, 1) // 1 -> 2 -> 3 -> 4 -> 5
	}
	_, err = db.Apply(&b)
	check(err)
	b.Reset()
	b.Insert(1, 4, 1) // a shortcut
	b.Delete(4, 5)
	seq, err := db.Apply(&b)
	check(err)

	r, err := db.Wait(context.Background(), name, seq)
	check(err)
	sum := r.Summary.(graphtide.BFSSummary)
	fmt.Println("reached:", sum.Reached, "levels:", sum.Levels)
	for v := uint64(1); v <= 5; v++ {
		x, _, err := db.VertexResult(name, v)
		check(err)
		fmt.Println(v, "is at level", x.(graphtide.VertexLevel).Level)
	}
	// Output:
	// reached: 4 levels: [1 2 1]
	// 1 is at level 0
	// 2 is at level 1
	// 3 is at level 2
	// 4 is at level 1
	// 5 is at level -1
}

// outDegreeMax is an analytic of one's own: the largest out-degree, kept
// up to date from the changes (recomputed only when the top vertex loses
// edges).
type outDegreeMax struct {
	mu       sync.Mutex // guards what Result reads
	deg      map[uint64]int
	top      uint64
	topDeg   int
	computes int
}

func (a *outDegreeMax) Recompute(_ context.Context, g *graphtide.Graph) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deg, a.top, a.topDeg = map[uint64]int{}, 0, 0
	a.computes++
	for i := 0; i < g.Len(); i++ {
		if d := len(g.Out(i)); d > 0 {
			a.deg[g.ID(i)] = d
			a.bump(g.ID(i))
		}
	}
	return nil
}

func (a *outDegreeMax) bump(v uint64) {
	if d := a.deg[v]; d > a.topDeg || d == a.topDeg && v < a.top {
		a.top, a.topDeg = v, d
	}
}

func (a *outDegreeMax) Update(ctx context.Context, g *graphtide.Graph, changes []graphtide.Change) (bool, error) {
	a.mu.Lock()
	shrunk := false
	for _, c := range changes {
		// The degrees after the batch are g's: read them for the vertices
		// the batch touched.
		i, ok := g.Index(c.Src)
		if !ok {
			continue
		}
		a.deg[c.Src] = len(g.Out(i))
		shrunk = shrunk || c.Src == a.top && a.deg[c.Src] < a.topDeg
		a.bump(c.Src)
	}
	a.mu.Unlock()
	if shrunk {
		return true, a.Recompute(ctx, g)
	}
	return false, nil
}

func (a *outDegreeMax) Result() any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("vertex %d has %d out-edges (%d full computes)", a.top, a.topDeg, a.computes)
}

// An analytic of one's own, registered beside the built-in ones.
func ExampleDB_RegisterAnalytic() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	check(db.RegisterAnalytic("hub", &outDegreeMax{}))
	var b graphtide.Batch
	for _, e := range [][2]uint64{{1, 2}, {1, 3}, {2, 3}, {7, 1}, {7, 2}, {7, 3}} {
		b.Insert(e[0], e[1], 1)
	}
	seq, _ := db.Apply(&b)
	r, _ := db.Wait(context.Background(), "hub", seq)
	fmt.Println(r.Summary)
	b.Reset()
	b.Insert(1, 9, 1)
	b.Insert(1, 8, 1)
	seq, _ = db.Apply(&b)
	r, _ = db.Wait(context.Background(), "hub", seq)
	fmt.Println(r.Summary)
	// Output:
	// vertex 7 has 3 out-edges (1 full computes)
	// vertex 1 has 4 out-edges (1 full computes)
}

// A stream view hands out the operations applied after it opened.
func ExampleDB_Stream() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	st, err := db.Stream(3)
	check(err)
	defer st.Close()
	var b graphtide.Batch
	b.Insert(1, 2, 0.5)
	b.Insert(2, 3, 1)
	b.Delete(1, 2)
	_, err = db.Apply(&b)
	check(err)
	changes, err := st.Next(context.Background())
	check(err)
	for _, c := range changes {
		fmt.Println(c.Seq, c.Op, c.Src, c.Dst, c.Weight)
	}
	// Output:
	// 1 upsert 1 2 0.5
	// 1 upsert 2 3 1
	// 1 delete_edge 1 2 0
}

// A read-write transaction: link two accounts only while they are not
// linked, and raise a limit only while it is still below a bound. A
// refused batch applies nothing and says which condition failed.
func ExampleDB_ApplyIf() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()

	var b graphtide.Batch
	b.Insert(1, 2, 100) // account 1 may send account 2 up to 100
	_, err = db.ApplyIf(&b, graphtide.EdgeAbsent(1, 2))
	fmt.Println("linked:", err)
	_, err = db.ApplyIf(&b, graphtide.EdgeAbsent(1, 2))
	fmt.Println("linked again:", err)

	b.Reset()
	b.Insert(1, 2, 150)
	_, err = db.ApplyIf(&b, graphtide.WeightBelow(1, 2, 120))
	fmt.Println("raised to 150:", err)
	_, err = db.ApplyIf(&b, graphtide.WeightBelow(1, 2, 120))
	var refused *graphtide.PreconditionError
	fmt.Println("raised again:", errors.As(err, &refused), refused.Actual)
	// Output:
	// linked: <nil>
	// linked again: precondition 0 failed as of seq 1: edge (1, 2, type default) is absent, but it exists; nothing of the batch was applied: read the graph again and retry with conditions that hold
	// raised to 150: <nil>
	// raised again: true its weight is 150
}

// Reads as of an earlier batch, kept by Options.HistorySeqs.
func ExampleDB_SnapshotAt() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, &graphtide.Options{HistorySeqs: 100})
	check(err)
	defer db.Close()

	var b graphtide.Batch
	b.Insert(1, 2, 1)
	before, err := db.Apply(&b)
	check(err)
	b.Reset()
	b.Delete(1, 2)
	_, err = db.Apply(&b)
	check(err)

	for _, read := range []func() (*graphtide.Snapshot, error){db.Snapshot, func() (*graphtide.Snapshot, error) { return db.SnapshotAt(before) }} {
		sn, err := read()
		check(err)
		has, err := sn.HasEdge(1, 2)
		check(err)
		fmt.Printf("seq %d: 1 -> 2 %v\n", sn.Seq(), has)
		sn.Release()
	}
	// Output:
	// seq 2: 1 -> 2 false
	// seq 1: 1 -> 2 true
}

// Edge types and vertex records: a payment beside a default-type edge of
// the same accounts, read together or by type, and an account's record.
func ExampleDB_TypeID() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	alice, err := db.VertexID("alice")
	check(err)
	bob, err := db.VertexID("bob")
	check(err)
	pay, err := db.TypeID("payment")
	check(err)

	var b graphtide.Batch
	b.Insert(alice, bob, 1) // the default type: alice knows bob
	b.Insert(alice, bob, 40)
	b.SetType(pay) // and paid bob 40
	b.PutVertex(alice, "account", []byte(`{"limit":5000}`))
	_, err = db.Apply(&b)
	check(err)

	sn, err := db.Snapshot()
	check(err)
	defer sn.Release()
	both, err := sn.Edges(alice, bob)
	check(err)
	for _, e := range both {
		fmt.Println("alice -> bob:", db.TypeName(e.Type), e.Weight)
	}
	paid, err := sn.OfTypes(pay).Degree(alice, graphtide.Out)
	check(err)
	fmt.Println("payments out of alice:", paid)
	rec, ok, err := sn.Vertex(alice)
	check(err)
	fmt.Println(ok, rec.Label, string(rec.Props))
	// Output:
	// alice -> bob: payment 40
	// alice -> bob: default 1
	// payments out of alice: 1
	// true account {"limit":5000}
}
