package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/core"
	"github.com/graphtide/graphtide/internal/jsontext"
)

// Vertex records. A vertex has a record once PutVertex set one: a label
// and a small property document (a JSON object). A vertex with a record
// exists even with no edge (an isolated vertex); DeleteVertex removes the
// record with the edges.
//
// Storage: the core keeps a record as a row of cells of its src (see
// GT_OP_PUT_CELL in internal/core/graphtide.h), in a tree of their own beside the
// edges, so records are versioned, flushed, compacted, retained for reads
// as of the past and hidden by vertex deletes exactly as edges are. This
// file gives the cells their meaning:
//
//	cell 0:      weight = the payload's length in bytes, time = recordFormat
//	cell 1..k:   13 bytes of the payload each: 6 in the weight (an integer
//	             below 2^48, so exact in a float64) and 7 in the time (an
//	             integer below 2^56, so at least 0 as the core wants)
//	payload:     u8 label length, the label, the property document
//
// A put writes cells 0..k of its record and nothing else: it does not read
// the record it replaces (a read there would cost every put the versions
// the MemGraph holds of the vertex, so one vertex put over and over would
// slow ingestion for everyone). So cells past k may be left live by a
// longer record before; a read takes the k its header cell names and
// ignores the rest. They are at most maxRecordCells a vertex, and a
// vertex delete hides them with the rest.
// INVARIANT: cells 0..k of a vertex's newest record are all of the same
// put (a put writes every one of them, in one batch).

// The limits of a vertex record.
const (
	MaxVertexLabel = 255     // bytes of UTF-8
	MaxVertexProps = 4 << 10 // bytes of the property document's JSON
)

const (
	recordFormat   = 1  // cell 0's time
	cellBytes      = 13 // payload bytes per data cell
	weightBytes    = 6
	maxRecordCells = 1 + (1+MaxVertexLabel+MaxVertexProps+cellBytes-1)/cellBytes
)

// Vertex is a vertex record.
type Vertex struct {
	Label string
	// Props is the property document, a JSON object (nil: none).
	Props json.RawMessage
}

// vrec is a PutVertex of a batch, applied before the batch's operation at
// (the number of operations added before it).
type vrec struct {
	at      int
	v       uint64
	payload []byte
}

// CheckVertex is the error PutVertex would record for this label and
// document, or nil.
func CheckVertex(label string, props []byte) error {
	switch {
	case len(label) > MaxVertexLabel:
		return fmt.Errorf("%w: a vertex label has at most %d bytes, got %d", ErrInvalid, MaxVertexLabel, len(label))
	case !utf8.ValidString(label):
		return fmt.Errorf("%w: a vertex label must be UTF-8", ErrInvalid)
	case len(props) > MaxVertexProps:
		return fmt.Errorf("%w: a vertex's property document has at most %d bytes, got %d", ErrInvalid, MaxVertexProps, len(props))
	case len(props) > 0 && (!json.Valid(props) || bytes.TrimSpace(props)[0] != '{'):
		return fmt.Errorf("%w: a vertex's property document must be a JSON object", ErrInvalid)
	}
	// The decoders' rules too (valid UTF-8, no escaped lone surrogate,
	// nesting at most jsontext.MaxDepth): what a record of any format
	// cannot carry, the Go API does not store either, and a document read
	// back is valid JSON text.
	if off, why := jsontext.Check(props); why != "" {
		return fmt.Errorf("%w: a vertex's property document: %s at byte %d", ErrInvalid, why, off)
	}
	return nil
}

// PutVertex sets v's record: its label (may be empty) and its property
// document (a JSON object of at most MaxVertexProps bytes, or empty for
// none), replacing the record it had. v exists from then on, with or
// without edges. Like every operation it takes effect in batch order: a
// DeleteVertex of v later in the batch removes it.
func (b *Batch) PutVertex(v uint64, label string, props []byte) {
	if b.err == nil {
		if v > MaxVertex {
			b.err = fmt.Errorf("%w: vertex id out of range in op %d (max %d)", ErrInvalid, len(b.ops), MaxVertex)
		} else if err := CheckVertex(label, props); err != nil {
			b.err = fmt.Errorf("vertex %d: %w", v, err)
		}
	}
	p := make([]byte, 0, 1+len(label)+len(props))
	p = append(p, byte(len(label)))
	p = append(p, label...)
	p = append(p, bytes.TrimSpace(props)...)
	b.vrecs = append(b.vrecs, vrec{at: len(b.ops), v: v, payload: p})
}

// Vertices is the number of PutVertex calls in the batch (Len counts the
// edge and vertex-delete operations only).
func (b *Batch) Vertices() int { return len(b.vrecs) }

// Empty reports whether the batch holds no operation at all (no edge
// operation, vertex delete or vertex record).
func (b *Batch) Empty() bool { return len(b.ops) == 0 && len(b.vrecs) == 0 }

// VertexAt returns the i-th PutVertex of the batch (0 <= i < Vertices()).
func (b *Batch) VertexAt(i int) (v uint64, rec Vertex) {
	r := b.vrecs[i]
	return r.v, decodePayload(r.payload)
}

// InOrder calls op(i) for the i-th operation (Op(i)) and vertex(k) for
// the k-th PutVertex (VertexAt(k)), all in the order they were added: the
// order they apply in.
func (b *Batch) InOrder(op func(i int), vertex func(k int)) {
	k := 0
	for i := 0; i <= len(b.ops); i++ {
		for ; k < len(b.vrecs) && b.vrecs[k].at == i; k++ {
			vertex(k)
		}
		if i < len(b.ops) {
			op(i)
		}
	}
}

func decodePayload(p []byte) Vertex {
	n := int(p[0])
	rec := Vertex{Label: string(p[1 : 1+n])}
	if len(p) > 1+n {
		rec.Props = json.RawMessage(append([]byte(nil), p[1+n:]...))
	}
	return rec
}

// cellCount is how many cells (the header included) a payload of n bytes
// takes.
func cellCount(n int) int { return 1 + (n+cellBytes-1)/cellBytes }

// appendCells appends the cell ops of v's record.
func appendCells(ops []core.Op, v uint64, payload []byte) []core.Op {
	k := cellCount(len(payload))
	ops = append(ops, core.Op{Src: v, Dst: core.CellBase, Kind: core.OpPutCell, Weight: float64(len(payload)), Time: recordFormat})
	var chunk [cellBytes]byte
	for i := 1; i < k; i++ {
		chunk = [cellBytes]byte{}
		copy(chunk[:], payload[(i-1)*cellBytes:])
		var w, t uint64
		for j := weightBytes - 1; j >= 0; j-- {
			w = w<<8 | uint64(chunk[j])
		}
		for j := cellBytes - 1; j >= weightBytes; j-- {
			t = t<<8 | uint64(chunk[j])
		}
		ops = append(ops, core.Op{Src: v, Dst: core.CellBase + uint64(i), Kind: core.OpPutCell, Weight: float64(w), Time: int64(t)})
	}
	return ops
}

// vertexOps is b's operations with its vertex records' cells in their
// places (a record's cells where its PutVertex was added).
func (b *Batch) vertexOps() []core.Op {
	ops := make([]core.Op, 0, len(b.ops)+len(b.vrecs)*4)
	b.InOrder(func(i int) { ops = append(ops, b.ops[i]) },
		func(k int) { ops = appendCells(ops, b.vrecs[k].v, b.vrecs[k].payload) })
	return ops
}

// Vertex is v's record in the snapshot, and whether v has one (a vertex
// with edges but no record has none: see VertexExists).
func (sn *Snapshot) Vertex(v uint64) (Vertex, bool, error) {
	var rec Vertex
	var ok bool
	err := sn.read(func(c *core.Snapshot) error {
		var e error
		rec, ok, e = readVertex(c, v)
		return e
	})
	return rec, ok, err
}

// cellBufs are a record's cells as read.
type cellBufs struct {
	dsts  []uint64
	w     []float64
	times []int64
}

// cellPool holds cellBufs between reads: each is 8 KiB, which a read
// allocating its own spent most of its time on.
var cellPool = sync.Pool{New: func() any { return new(cellBufs) }}

func readCells(c *core.Snapshot, v uint64, buf *cellBufs) (int, error) {
	n := maxRecordCells
	for {
		buf.dsts, buf.w, buf.times = fit(buf.dsts, n), fit(buf.w, n), fit(buf.times, n)
		got, e := c.Neighbors(v, core.DirVertex, nil, buf.dsts, buf.w, nil, buf.times)
		if e != nil && e.Code == core.CodeBuffer && got > n {
			n = got
			continue
		}
		if e != nil {
			return 0, fmt.Errorf("vertex record of %d: %w", v, fromCore(e))
		}
		return got, nil
	}
}

func readVertex(c *core.Snapshot, v uint64) (Vertex, bool, error) {
	buf := cellPool.Get().(*cellBufs)
	defer cellPool.Put(buf)
	n, err := readCells(c, v, buf)
	if err != nil || n == 0 {
		return Vertex{}, false, err
	}
	rec, err := decodeCells(v, buf.dsts[:n], buf.w[:n], buf.times[:n])
	return rec, err == nil, err
}

// decodeCells is the record of v's live cells (dsts, weights and times,
// in index order, at least one).
func decodeCells(v uint64, dsts []uint64, ws []float64, times []int64) (Vertex, error) {
	bad := func(what string) (Vertex, error) {
		return Vertex{}, fmt.Errorf("engine: the vertex record of %d is malformed: %s", v, what)
	}
	if dsts[0] != core.CellBase || times[0] != recordFormat {
		return bad(fmt.Sprintf("no header cell of format %d", recordFormat))
	}
	size := ws[0]
	if size < 1 || size > 1+MaxVertexLabel+MaxVertexProps || size != math.Trunc(size) {
		return bad(fmt.Sprintf("a length of %v", size))
	}
	k := cellCount(int(size))
	if len(dsts) < k {
		return bad(fmt.Sprintf("%d cells where its length needs %d", len(dsts), k))
	}
	p := make([]byte, 0, (k-1)*cellBytes)
	for i := 1; i < k; i++ {
		if dsts[i] != core.CellBase+uint64(i) {
			return bad(fmt.Sprintf("cell %d is missing", i))
		}
		w, t := uint64(ws[i]), uint64(times[i])
		for j := 0; j < weightBytes; j++ {
			p = append(p, byte(w>>(8*j)))
		}
		for j := 0; j < cellBytes-weightBytes; j++ {
			p = append(p, byte(t>>(8*j)))
		}
	}
	p = p[:int(size)]
	if int(p[0]) > len(p)-1 {
		return bad("a label longer than the record")
	}
	return decodePayload(p), nil
}

// ScanVertices calls f with every vertex in [lo, hi) that has a record,
// in id order, and its record (SCANVTX), reading them in pages of bounded
// memory. It stops at f's first error and returns it.
func (sn *Snapshot) ScanVertices(lo, hi uint64, f func(v uint64, rec Vertex) error) error {
	const vcap, ecap = 256, 256 * 8
	vids, offs := make([]uint64, vcap), make([]uint64, vcap+1)
	dsts, ws, times := make([]uint64, ecap), make([]float64, ecap), make([]int64, ecap)
	for lo < hi {
		var nv, ne int
		var next uint64
		err := sn.read(func(c *core.Snapshot) error {
			var e *core.Error
			nv, ne, next, e = c.Scan(lo, hi, core.DirVertex, nil, vids, offs, dsts, ws, nil, times)
			if e != nil && e.Code == core.CodeBuffer && ne > len(dsts) {
				dsts, ws, times = make([]uint64, ne), make([]float64, ne), make([]int64, ne)
				nv, next = 0, lo // read the page again with room for it
				return nil
			}
			if e != nil {
				return fmt.Errorf("vertex records from %d: %w", lo, fromCore(e))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i := 0; i < nv; i++ {
			b, e := offs[i], offs[i+1]
			rec, err := decodeCells(vids[i], dsts[b:e], ws[b:e], times[b:e])
			if err != nil {
				return err
			}
			if err := f(vids[i], rec); err != nil {
				return err
			}
		}
		lo = next
	}
	return nil
}

// VertexExists reports whether v exists in the snapshot: it has a record
// or an edge (out, or in when the store keeps in-edges), of any type.
func (sn *Snapshot) VertexExists(v uint64) (bool, error) {
	var ok bool
	err := sn.read(func(c *core.Snapshot) error {
		for _, dir := range []uint32{core.DirVertex, uint32(Out), uint32(In)} {
			if dir == uint32(In) && !sn.store.InEdges() {
				continue
			}
			d, e := c.Degree(v, dir, nil)
			if e != nil {
				return fmt.Errorf("vertex %d: %w", v, fromCore(e))
			}
			if d > 0 {
				ok = true
				return nil
			}
		}
		return nil
	})
	return ok, err
}
