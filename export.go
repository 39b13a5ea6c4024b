package graphtide

import (
	"context"

	"github.com/graphtide/graphtide/internal/export"
)

// ExportOptions are the settings of DB.Export.
type ExportOptions struct {
	// Part names the part: its files are PART.edges.parquet,
	// PART.vertices.parquet and PART.manifest.json ([A-Za-z0-9._-], 1 to
	// 64 bytes; default "part-0").
	Part string
	// RowGroupRows is how many rows a Parquet row group holds, the rows
	// held in memory at a time (0: 262,144).
	RowGroupRows int
	// Progress, when set, is called with the edges and vertex records
	// written so far, after each row group.
	Progress func(edges, vertices int64)
}

// ExportManifest describes a part DB.Export wrote (its manifest file
// holds the same, and each file's SHA-256).
type ExportManifest struct {
	Part     string       // the part's name (ExportOptions.Part)
	Seq      uint64       // the sequence number of the snapshot exported
	Edges    int64        // edges written
	Vertices int64        // vertex records written
	Files    []ExportFile // the edges file, then the vertices file
}

// ExportFile is one file of a part.
type ExportFile struct {
	Name  string // in the directory given to Export
	Rows  int64  // rows it holds
	Bytes int64  // its size
}

// Export writes the graph of s (nil: a snapshot of everything applied
// so far) into the directory dir as Parquet files, for engines that run
// graph-wide work (Apache Spark with GraphFrames: docs/spark.md): every
// edge with its type, weight, event time, aggregate, reference and
// properties, every vertex record, vertices named as Batch's callers
// named them (numbers, or string keys). A part of that name already in
// dir is refused; a write that fails leaves none. ctx ends it between
// row groups.
func (db *DB) Export(ctx context.Context, s *Snapshot, dir string, o ExportOptions) (ExportManifest, error) {
	if db.closed.Load() {
		return ExportManifest{}, ErrClosed
	}
	if s == nil {
		var err error
		if s, err = db.Snapshot(); err != nil {
			return ExportManifest{}, err
		}
		defer s.Release()
	}
	if o.Part == "" {
		o.Part = "part-0"
	}
	eo := export.Options{Part: o.Part, RowGroupRows: o.RowGroupRows}
	if o.Progress != nil {
		eo.Progress = func(p export.Progress) { o.Progress(p.Edges, p.Vertices) }
	}
	m, err := export.Write(ctx, export.SourceOf(db.dir, s.sn), dir, eo)
	if err != nil {
		return ExportManifest{}, db.err(err)
	}
	out := ExportManifest{Part: m.Part, Seq: m.Seq, Edges: m.Edges, Vertices: m.Vertices}
	for _, f := range m.Files {
		out.Files = append(out.Files, ExportFile{Name: f.Name, Rows: f.Rows, Bytes: f.Bytes})
	}
	return out, nil
}
