package graphtide_test

import (
	"context"
	"fmt"
	"os"

	"github.com/graphtide/graphtide"
)

// Static views of three kinds: a fresh view sees every batch applied, a
// stale one only what is flushed (it may lag, and reads cheaper), and a
// private one is a copy of its own that stays at its seq while the store
// moves on.
func ExampleDB_OpenView() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()

	var b graphtide.Batch
	b.Insert(1, 2, 1)
	_, err = db.Apply(&b)
	check(err)
	check(db.Flush()) // seq 1 is flushed
	b.Reset()
	b.Insert(1, 3, 1)
	_, err = db.Apply(&b) // seq 2 is not
	check(err)

	for _, kind := range []graphtide.ViewKind{graphtide.Fresh, graphtide.Stale, graphtide.Private} {
		v, err := db.OpenView(graphtide.ViewOptions{Kind: kind})
		check(err)
		d, err := v.Degree(1, graphtide.Out)
		check(err)
		fmt.Printf("%s view: seq %d, vertex 1 has %d out-edges\n", v.Kind(), v.Seq(), d)
		v.Release()
	}
	// Output:
	// fresh view: seq 2, vertex 1 has 2 out-edges
	// stale view: seq 1, vertex 1 has 1 out-edges
	// private view: seq 2, vertex 1 has 2 out-edges
}

// A private view is a copy that holds nothing of the store: keep it for
// a long computation while batches, flushes and compactions go on.
func ExampleDB_OpenView_private() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()

	var b graphtide.Batch
	b.Insert(1, 2, 0.5)
	b.Insert(3, 2, 2)
	_, err = db.Apply(&b)
	check(err)
	v, err := db.OpenView(graphtide.ViewOptions{Kind: graphtide.Private, InEdges: true})
	check(err)
	defer v.Release()

	b.Reset()
	b.DeleteVertex(2)
	_, err = db.Apply(&b)
	check(err)
	check(db.Flush())

	in, err := v.Neighbors(2, graphtide.In)
	check(err)
	fmt.Println("at seq", v.Seq(), "vertex 2's in-neighbors:", in[0].ID, in[1].ID)
	now, err := db.View()
	check(err)
	defer now.Release()
	d, err := now.Degree(2, graphtide.In)
	check(err)
	fmt.Println("at seq", now.Seq(), "its in-degree:", d)
	// Output:
	// at seq 1 vertex 2's in-neighbors: 1 3
	// at seq 2 its in-degree: 0
}

// A stateful stream view keeps a view of the whole graph that each Next
// moves to the newest batch, and says what changed: the operations, and
// the vertices whose edges they touched (what an incremental computation
// redoes).
func ExampleDB_StatefulStream() {
	dir, _ := os.MkdirTemp("", "graphtide-example")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(dir, nil)
	check(err)
	defer db.Close()
	st, err := db.StatefulStream(graphtide.StatefulOptions{})
	check(err)
	defer st.Close()

	var b graphtide.Batch
	b.Insert(1, 2, 1)
	b.Insert(2, 3, 1)
	_, err = db.Apply(&b)
	check(err)
	b.Reset()
	b.Insert(3, 4, 1)
	_, err = db.Apply(&b)
	check(err)

	u, err := st.Next(context.Background())
	check(err)
	fmt.Printf("from seq %d to %d: %d operations, changed vertices %v\n", u.Old.Seq(), u.View.Seq(), len(u.Changes), u.Changed)
	d, err := u.View.Degree(3, graphtide.Out)
	check(err)
	fmt.Println("vertex 3's out-degree in the new view:", d)
	// Output:
	// from seq 0 to 2: 3 operations, changed vertices [1 2 3 4]
	// vertex 3's out-degree in the new view: 1
}
