package graphtide_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/parquet-go/parquet-go"

	"github.com/graphtide/graphtide"
)

// Export a snapshot as Parquet (for Spark: docs/spark.md), while writes
// go on, and read its edges back.
func ExampleDB_Export() {
	dir, _ := os.MkdirTemp("", "graphtide-export")
	defer os.RemoveAll(dir)
	db, err := graphtide.Open(filepath.Join(dir, "data"), nil)
	check(err)
	defer db.Close()
	alice, err := db.VertexID("alice")
	check(err)
	bob, err := db.VertexID("bob")
	check(err)
	var b graphtide.Batch
	b.Insert(alice, bob, 12.5)
	b.Insert(alice, 7, 1)
	b.Insert(7, bob, 2)
	b.Delete(alice, 7)
	_, err = db.Apply(&b)
	check(err)

	sn, err := db.Snapshot()
	check(err)
	defer sn.Release()
	b.Reset()
	b.Insert(bob, 7, 4) // applied after the snapshot: not in the export
	_, err = db.Apply(&b)
	check(err)

	m, err := db.Export(context.Background(), sn, filepath.Join(dir, "export"), graphtide.ExportOptions{Part: "a"})
	check(err)
	fmt.Printf("part %s: %d edges, %d vertex records, files %s and %s\n", m.Part, m.Edges, m.Vertices, m.Files[0].Name, m.Files[1].Name)

	type edge struct {
		Src    string  `parquet:"src"`
		Dst    string  `parquet:"dst"`
		Type   string  `parquet:"type"`
		Weight float64 `parquet:"weight"`
	}
	rows, err := parquet.ReadFile[edge](filepath.Join(dir, "export", m.Files[0].Name))
	check(err)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Src+rows[i].Dst < rows[j].Src+rows[j].Dst })
	for _, r := range rows {
		fmt.Printf("%s -> %s %s %g\n", r.Src, r.Dst, r.Type, r.Weight)
	}
	// Output:
	// part a: 2 edges, 0 vertex records, files a.edges.parquet and a.vertices.parquet
	// 7 -> bob default 2
	// alice -> bob default 12.5
}
