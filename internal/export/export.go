// Package export writes a snapshot of a store as Parquet files, for
// engines that run graph-wide work on graphs larger than one instance
// (Apache Spark with GraphFrames: deploy/spark). One export is a part:
// an edges file, a vertices file and a manifest naming the store's seq
// and the Kafka position the snapshot is as of. The parts of several
// instances (partitioned owners) that share one cut are a set: together
// they are the graph as of one Kafka position (CheckSet).
//
// What it promises:
//   - A part is the snapshot whole: every out-edge of every vertex once,
//     every vertex record once, as of the snapshot's seq, whatever is
//     applied, flushed or compacted while it is written.
//   - Vertices are named as the sources named them (Name), never by a
//     store's own ids, which differ between instances: the parts of a set
//     join on names.
//   - Memory is bounded by the row group size (RowGroupRows rows are
//     buffered at a time), not by the graph.
//   - A part's files are complete when its manifest exists: the data
//     files are synced and renamed into place first, the manifest last,
//     and the manifest records each file's size and SHA-256, so a reader
//     refuses a truncated or damaged file (Verify) with its name.
package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
)

// EdgeRow is one edge of an export's edges file: an out-edge, keyed by
// (src, dst, type).
type EdgeRow struct {
	// Src and Dst name the vertices as the sources did (Name).
	Src string `parquet:"src"`
	Dst string `parquet:"dst"`
	// Type is the edge type's name ("default" for type 0).
	Type string `parquet:"type,dict"`
	// Weight is the edge's weight (an accumulate edge's: its events' sum).
	Weight float64 `parquet:"weight"`
	// Time is the event time, Unix µs (nil: none given).
	Time *int64 `parquet:"time,optional,timestamp(microsecond)"`
	// Count, FirstTime: an accumulate edge's events folded in, and the
	// least event time (nil for a replace type's edges).
	Count     *int64 `parquet:"count,optional"`
	FirstTime *int64 `parquet:"first_time,optional,timestamp(microsecond)"`
	// Ref is the event reference, Props the property document's JSON (nil:
	// none).
	Ref   *string `parquet:"ref,optional"`
	Props *string `parquet:"props,optional"`
}

// VertexRow is one vertex record of an export's vertices file. Vertices
// without a record exist through their edges only, and are not listed.
type VertexRow struct {
	ID    string  `parquet:"id"`
	Label string  `parquet:"label"`
	Props *string `parquet:"props,optional"`
}

// Source is what an export reads: a snapshot, the store's key
// dictionary (nil: the store has none) and type names, and which types
// accumulate.
type Source struct {
	Snap       *engine.Snapshot
	Keys       *keydict.Dict
	Types      *typedict.Dict
	Accumulate func(t uint16) bool
}

// Options are an export's settings.
type Options struct {
	// Part names this part of a set (its files are PART.edges.parquet,
	// PART.vertices.parquet and PART.manifest.json): [A-Za-z0-9._-], 1 to
	// 64 bytes.
	Part string
	// Graph is the graph's name (serve's --graph; "" for none).
	Graph string
	// Position is the Kafka position the snapshot is as of (the offset
	// after the records applied, for each partition the store holds);
	// Cut is the position of the whole set (nil: Position, a set of one).
	Position, Cut []Offset
	// RowGroupRows is how many rows a row group holds (0: 262,144): the
	// rows buffered in memory at a time.
	RowGroupRows int
	// Progress, when set, is called after each row group and at the end.
	Progress func(Progress)
	// Now is the clock for the manifest's creation time (nil: time.Now).
	Now func() time.Time
}

// Progress is how far an export is.
type Progress struct {
	Edges, Vertices int64
	// Bytes written so far.
	Bytes int64
	Done  bool
}

// DefaultRowGroupRows is Options.RowGroupRows' default.
const DefaultRowGroupRows = 1 << 18

// CheckPart reports what is wrong with a part name.
func CheckPart(p string) error {
	if p == "" || len(p) > 64 {
		return fmt.Errorf("export: part name must be 1 to 64 bytes, got %d", len(p))
	}
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') || p[0] == '.' {
			return fmt.Errorf("export: part name %q: only letters, digits, '.', '_' and '-', not starting with '.'", p)
		}
	}
	return nil
}

// Name names vertex id as the sources did: its string key (with the
// prefix "key:" when the key reads as a number, as a request names it),
// else the number the sources gave (a mapped number's, not its id).
func Name(keys *keydict.Dict, id uint64) string {
	if keys == nil {
		return strconv.FormatUint(id, 10)
	}
	n, key := keys.Name(id)
	if key == "" {
		return strconv.FormatUint(n, 10)
	}
	if _, err := strconv.ParseUint(key, 10, 64); err == nil {
		return "key:" + key
	}
	return key
}

// Write writes src's snapshot into dir as the part o.Part and returns its
// manifest. dir is created if missing; a part of that name already there
// is refused, as is a write that fails half-way (its files are removed).
// ctx ends it between row groups.
func Write(ctx context.Context, src Source, dir string, o Options) (*Manifest, error) {
	if err := CheckPart(o.Part); err != nil {
		return nil, err
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	cut := o.Cut
	if cut == nil {
		cut = o.Position
	}
	if err := PositionWithinCut(o.Position, cut); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	m := &Manifest{Format: Format, Part: o.Part, Graph: o.Graph, Seq: src.Snap.Seq(),
		Position: SortedOffsets(o.Position), Cut: SortedOffsets(cut)}
	if _, err := os.Stat(filepath.Join(dir, m.fileName(manifestSuffix))); err == nil {
		return nil, fmt.Errorf("export: part %q is already in %s: choose another part name or directory", o.Part, dir)
	}
	w := &writer{src: src, o: o, m: m, ctx: ctx}
	if err := w.files(dir); err != nil {
		for _, f := range m.Files {
			_ = os.Remove(filepath.Join(dir, f.Name))
		}
		return nil, fmt.Errorf("export: part %q: %w", o.Part, err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	m.Created = now().UTC().Format(time.RFC3339)
	if err := m.write(dir); err != nil {
		for _, f := range m.Files {
			_ = os.Remove(filepath.Join(dir, f.Name))
		}
		return nil, err
	}
	if o.Progress != nil {
		o.Progress(Progress{Edges: m.Edges, Vertices: m.Vertices, Bytes: w.bytes, Done: true})
	}
	return m, nil
}

// writer is one Write's state.
type writer struct {
	src   Source
	o     Options
	m     *Manifest
	ctx   context.Context
	bytes int64 // of the files finished
}

// files writes the edges file, then the vertices file, each recorded in
// m.Files once it is synced and in place.
func (w *writer) files(dir string) error {
	f, err := writeFile(dir, w.m.fileName(edgesSuffix), func(out io.Writer, n *fileCount) error {
		return w.edges(out, n)
	})
	if err != nil {
		return err
	}
	w.m.Files = append(w.m.Files, f)
	w.m.Edges, w.bytes = f.Rows, w.bytes+f.Bytes
	f, err = writeFile(dir, w.m.fileName(verticesSuffix), func(out io.Writer, n *fileCount) error {
		return w.vertices(out, n)
	})
	if err != nil {
		return err
	}
	w.m.Files = append(w.m.Files, f)
	w.m.Vertices, w.bytes = f.Rows, w.bytes+f.Bytes
	return nil
}

// fileCount counts what a file's body function wrote.
type fileCount struct {
	rows  int64
	bytes *countingWriter
}

// writeFile writes a file through body into dir atomically (package
// durable: a temporary file synced, then renamed) and returns its
// record: rows, size and SHA-256.
func writeFile(dir, name string, body func(io.Writer, *fileCount) error) (File, error) {
	sum := sha256.New()
	var n fileCount
	err := durable.WriteFileFrom(filepath.Join(dir, name), 0o644, func(w io.Writer) error {
		n.bytes = &countingWriter{w: io.MultiWriter(w, sum)}
		return body(n.bytes, &n)
	})
	if err != nil {
		return File{}, err
	}
	return File{Name: name, Rows: n.rows, Bytes: n.bytes.n, SHA256: hexSum(sum)}, nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// parquetOptions are the writer options of every file: zstd pages, row
// groups of RowGroupRows rows, the writer named.
func (w *writer) parquetOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
		parquet.MaxRowsPerRowGroup(int64(w.o.RowGroupRows)),
		parquet.CreatedBy("graphtide", "", ""),
		parquet.KeyValueMetadata("graphtide.seq", strconv.FormatUint(w.m.Seq, 10)),
		parquet.KeyValueMetadata("graphtide.part", w.m.Part),
	}
}

// rowBuffer collects rows for a parquet writer and writes them a row
// group at a time.
type rowBuffer[T any] struct {
	pw   *parquet.GenericWriter[T]
	rows []T
	n    *fileCount
	w    *writer
}

func (b *rowBuffer[T]) add(r T) error {
	b.rows = append(b.rows, r)
	if len(b.rows) < b.w.o.RowGroupRows {
		return nil
	}
	return b.flush()
}

// flush writes the rows buffered as one row group and reports progress.
func (b *rowBuffer[T]) flush() error {
	if err := b.w.ctx.Err(); err != nil {
		return err
	}
	if len(b.rows) == 0 {
		return nil
	}
	if _, err := b.pw.Write(b.rows); err != nil {
		return err
	}
	if err := b.pw.Flush(); err != nil {
		return err
	}
	b.n.rows += int64(len(b.rows))
	clear(b.rows)
	b.rows = b.rows[:0]
	if b.w.o.Progress != nil {
		p := Progress{Edges: b.w.m.Edges, Vertices: b.w.m.Vertices, Bytes: b.w.bytes + b.n.bytes.n}
		if len(b.w.m.Files) == 0 {
			p.Edges = b.n.rows
		} else {
			p.Vertices = b.n.rows
		}
		b.w.o.Progress(p)
	}
	return nil
}

func (b *rowBuffer[T]) close() error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.pw.Close()
}

func newRowBuffer[T any](out io.Writer, n *fileCount, w *writer) *rowBuffer[T] {
	return &rowBuffer[T]{pw: parquet.NewGenericWriter[T](out, w.parquetOptions()...), n: n, w: w,
		rows: make([]T, 0, w.o.RowGroupRows)}
}

// ranges are the two bands of vertex ids a snapshot may hold.
func ranges(sn *engine.Snapshot) [][2]uint64 {
	low, high := sn.VertexBounds()
	out := [][2]uint64{{0, low}}
	if high > engine.HighIDBase {
		out = append(out, [2]uint64{engine.HighIDBase, high})
	}
	return out
}

// edges writes every out-edge of the snapshot: Scan finds the vertices
// with out-edges, a page of every column at a time reads each one's.
func (w *writer) edges(out io.Writer, n *fileCount) error {
	b := newRowBuffer[EdgeRow](out, n, w)
	sn, names := w.src.Snap, map[uint64]string{}
	name := func(id uint64) string {
		if s, ok := names[id]; ok {
			return s
		}
		s := Name(w.src.Keys, id)
		if len(names) > 1<<16 {
			clear(names)
		}
		names[id] = s
		return s
	}
	typeNames := map[uint16]string{}
	typeName := func(t uint16) string {
		s, ok := typeNames[t]
		if !ok {
			s = w.src.Types.Name(t)
			typeNames[t] = s
		}
		return s
	}
	buf := &engine.ScanBuffer{Vertices: make([]uint64, 1024), Dsts: make([]uint64, 1<<16)}
	for _, r := range ranges(sn) {
		for lo := r[0]; lo < r[1]; {
			next, err := sn.Scan(lo, r[1], engine.Out, buf)
			if err != nil {
				return err
			}
			for i := 0; i < buf.Len(); i++ {
				v := buf.Vertices[i]
				if err := w.vertexEdges(b, v, name(v), name, typeName); err != nil {
					return err
				}
			}
			if next <= lo {
				return fmt.Errorf("no progress scanning from vertex %d (a bug)", lo)
			}
			lo = next
		}
	}
	return b.close()
}

// edgePage is how many edges of one vertex are read at a time.
const edgePage = 4096

// vertexEdges adds v's out-edges, with every column, a page at a time.
func (w *writer) vertexEdges(b *rowBuffer[EdgeRow], v uint64, src string, name func(uint64) string, typeName func(uint16) string) error {
	var after *engine.EdgeCursor
	for {
		p, err := w.src.Snap.NeighborsPageExt(v, engine.Out, after, edgePage)
		if err != nil {
			return err
		}
		for i, d := range p.Dsts {
			r := EdgeRow{Src: src, Dst: name(d), Type: typeName(p.Types[i]), Weight: p.Weights[i]}
			if t := p.Times[i]; t != 0 {
				r.Time = &t
			}
			if w.src.Accumulate != nil && w.src.Accumulate(p.Types[i]) {
				c := int64(p.Counts[i])
				r.Count = &c
				if ft := p.FirstTimes[i]; ft != 0 {
					r.FirstTime = &ft
				}
			}
			if s := p.Refs[i]; s != "" {
				r.Ref = &s
			}
			if s := p.Props[i]; s != "" {
				r.Props = &s
			}
			if err := b.add(r); err != nil {
				return err
			}
		}
		c, ok := p.Last()
		if !p.More || !ok {
			return nil
		}
		after = &c
	}
}

// vertices writes every vertex record of the snapshot.
func (w *writer) vertices(out io.Writer, n *fileCount) error {
	b := newRowBuffer[VertexRow](out, n, w)
	for _, r := range ranges(w.src.Snap) {
		err := w.src.Snap.ScanVertices(r[0], r[1], func(v uint64, rec engine.Vertex) error {
			row := VertexRow{ID: Name(w.src.Keys, v), Label: rec.Label}
			if rec.Props != nil {
				s := string(rec.Props)
				row.Props = &s
			}
			return b.add(row)
		})
		if err != nil {
			return err
		}
	}
	return b.close()
}
