package export

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest"
	"github.com/graphtide/graphtide/internal/progress"
)

// SourceOf is d's store read through sn: d's keys, types and aggregates.
func SourceOf(d *datadir.Dir, sn *engine.Snapshot) Source {
	return Source{Snap: sn, Keys: d.Keys, Types: d.Types,
		Accumulate: func(t uint16) bool { return d.Store.AggregateOf(t).Accumulate }}
}

// Offsets is p as a list of offsets, sorted.
func Offsets(p ingest.Position) []Offset {
	out := []Offset{}
	for t, ps := range p {
		for part, o := range ps {
			out = append(out, Offset{Topic: t, Partition: part, Offset: o})
		}
	}
	return sortedOffsets(out)
}

// FromDir exports the data directory at dataDir, which no instance may
// be running on, into out: its durable state, as of the Kafka position
// its store recorded with it (none for a store that was loaded, not
// ingested). With o.Cut, the store's position must be the cut's in every
// partition it holds (else it is refused, naming both). o.Position and
// o.Graph are set from the store. Without o.Progress, progress is drawn
// on w (package progress) when w is not nil.
func FromDir(ctx context.Context, dataDir, out string, o Options, w io.Writer) (*Manifest, error) {
	d, err := datadir.OpenReadOnly(dataDir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	raw, err := d.Store.SourcePosition()
	if err != nil {
		return nil, err
	}
	o.Position = []Offset{}
	if len(raw) > 0 {
		rec, err := ingest.DecodeRecorded(raw)
		if err != nil {
			return nil, fmt.Errorf("export: the store's recorded position: %w", err)
		}
		o.Position, o.Graph = Offsets(rec.Position), rec.Graph
	}
	if o.Cut != nil {
		if err := positionWithinCut(o.Position, o.Cut); err != nil {
			return nil, fmt.Errorf("%w (the store in %s is at %s; a stopped store cannot move: export a running instance at the cut, which waits for it)", err, dataDir, offsetsText(o.Position))
		}
	}
	sn, err := d.Store.Snapshot()
	if err != nil {
		return nil, err
	}
	defer sn.Release()
	if w != nil && o.Progress == nil {
		bar := progress.New(w, progress.IsTerminal(w), "export", "rows", "", 0, progress.Every, time.Now())
		o.Progress = func(p Progress) {
			if rows := p.Edges + p.Vertices; p.Done {
				bar.Finish(rows, rows)
			} else {
				bar.Update(rows, rows)
			}
		}
	}
	return Write(ctx, SourceOf(d, sn), out, o)
}

// Summary is a manifest in a few lines, for a person.
func (m *Manifest) Summary(w io.Writer, dir string) {
	fmt.Fprintf(w, "part %s in %s: %d edges, %d vertex records, seq %d\n", m.Part, dir, m.Edges, m.Vertices, m.Seq)
	if len(m.Position) == 0 {
		fmt.Fprintln(w, "as of no Kafka position (the store was loaded, not ingested)")
	} else {
		fmt.Fprintf(w, "as of %s\n", offsetsText(m.Position))
	}
	if !slices.Equal(m.Position, m.Cut) {
		fmt.Fprintf(w, "its share of the cut %s\n", offsetsText(m.Cut))
	}
	files := append([]File(nil), m.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	for _, f := range files {
		fmt.Fprintf(w, "  %s  %d rows  %d bytes\n", f.Name, f.Rows, f.Bytes)
	}
}
