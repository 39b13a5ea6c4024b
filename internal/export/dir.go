package export

import (
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
)

// SourceOf is d's store read through sn: d's keys, types and aggregates.
func SourceOf(d *datadir.Dir, sn *engine.Snapshot) Source {
	return Source{Snap: sn, Keys: d.Keys, Types: d.Types,
		Accumulate: func(t uint16) bool { return d.Store.AggregateOf(t).Accumulate }}
}

// Summary is a manifest in a few lines, for a person.
func (m *Manifest) Summary(w io.Writer, dir string) {
	fmt.Fprintf(w, "part %s in %s: %d edges, %d vertex records, seq %d\n", m.Part, dir, m.Edges, m.Vertices, m.Seq)
	if len(m.Position) == 0 {
		fmt.Fprintln(w, "as of no Kafka position (the store was loaded, not ingested)")
	} else {
		fmt.Fprintf(w, "as of %s\n", FormatOffsets(m.Position))
	}
	if !slices.Equal(m.Position, m.Cut) {
		fmt.Fprintf(w, "its share of the cut %s\n", FormatOffsets(m.Cut))
	}
	files := append([]File(nil), m.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	for _, f := range files {
		fmt.Fprintf(w, "  %s  %d rows  %d bytes\n", f.Name, f.Rows, f.Bytes)
	}
}
