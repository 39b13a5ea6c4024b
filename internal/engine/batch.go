package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/graphtide/graphtide/internal/core"
)

// MaxVertex is the largest vertex id the store accepts.
const MaxVertex = core.MaxVertex

// Batch collects operations to apply atomically with one sequence number.
// A Batch is not safe for concurrent use; reuse it with Reset.
type Batch struct {
	ops   []core.Op
	vrecs []vrec      // PutVertex calls, ascending by at (vertex.go)
	pays  []opPayload // SetPayload calls, ascending by at (payload.go)
	// sources: some payload has a source position (SetSourcePayload).
	sources bool
	srcpos  []byte
	tags    []tag // ascending by from
	typed   bool  // some op has a type other than 0
	err     error
}

// tag gives the operations from index from on (up to the next tag) the
// reference ref.
type tag struct {
	from int
	ref  uint64
}

// MaxEdgeTypes is the number of edge types: a type is 0 to MaxEdgeTypes-1.
const MaxEdgeTypes = core.MaxEdgeTypes

// Insert adds or updates edge (src, dst) with weight 1.
func (b *Batch) Insert(src, dst uint64) { b.InsertWeighted(src, dst, 1) }

// InsertWeighted adds edge (src, dst), or updates its weight if present.
func (b *Batch) InsertWeighted(src, dst uint64, weight float64) {
	if b.err == nil {
		switch {
		case src > MaxVertex || dst > MaxVertex:
			b.err = fmt.Errorf("%w: vertex id out of range in op %d (max %d)", ErrInvalid, len(b.ops), MaxVertex)
		case math.IsNaN(weight) || math.IsInf(weight, 0):
			b.err = fmt.Errorf("%w: weight of op %d must be finite, got %v", ErrInvalid, len(b.ops), weight)
		}
	}
	b.add(core.Op{Src: src, Dst: dst, Weight: weight, Kind: core.OpUpsert})
}

// add appends op (with no event time).
func (b *Batch) add(op core.Op) { b.ops = append(b.ops, op) }

// SetType gives the last operation added the edge type t (0 to
// MaxEdgeTypes-1; operations have type 0 until set): (src, dst, type) is an
// edge's identity, so an insert or delete of type t touches only the edge
// of that type. A vertex delete removes edges of every type and takes
// none.
func (b *Batch) SetType(t uint16) {
	if len(b.ops) == 0 {
		return
	}
	op := &b.ops[len(b.ops)-1]
	if b.err == nil {
		switch {
		case int(t) >= MaxEdgeTypes:
			b.err = fmt.Errorf("%w: edge type %d of op %d out of range (max %d)", ErrInvalid, t, len(b.ops)-1, MaxEdgeTypes-1)
		case op.Kind == core.OpDeleteVertex && t != 0:
			b.err = fmt.Errorf("%w: op %d deletes a vertex, which removes edges of every type: it takes no type", ErrInvalid, len(b.ops)-1)
		}
	}
	op.Type = uint32(t)
	if t != 0 {
		b.typed = true
	}
}

// Err is the first invalid operation's error (an id out of range, a
// weight that is not finite, a bad type), which Apply returns; nil when
// every operation is valid.
func (b *Batch) Err() error { return b.err }

// Typed reports whether some operation has a type other than 0.
func (b *Batch) Typed() bool { return b.typed }

// SetEventTime gives the last operation added the event time us (Unix
// microseconds, above 0): when what it records happened, as its source
// says. The store keeps an insert's or delete's with its edge version and
// reads return it (Page.Times, ScanBuffer.Times); the apply observer sees
// every operation's (Op.EventTime), and the views' windows run on it.
func (b *Batch) SetEventTime(us int64) {
	if len(b.ops) == 0 || us <= 0 {
		return
	}
	b.ops[len(b.ops)-1].Time = us
}

// DeleteEdge removes edge (src, dst) if present.
func (b *Batch) DeleteEdge(src, dst uint64) {
	if b.err == nil && (src > MaxVertex || dst > MaxVertex) {
		b.err = fmt.Errorf("%w: vertex id out of range in op %d (max %d)", ErrInvalid, len(b.ops), MaxVertex)
	}
	b.add(core.Op{Src: src, Dst: dst, Kind: core.OpDeleteEdge})
}

// DeleteVertex removes every edge into or out of v, and v's record
// (PutVertex), that exist before this op. Edges and records added later
// (even later in the same batch) are kept.
func (b *Batch) DeleteVertex(v uint64) {
	if b.err == nil && v > MaxVertex {
		b.err = fmt.Errorf("%w: vertex id out of range in op %d (max %d)", ErrInvalid, len(b.ops), MaxVertex)
	}
	b.add(core.Op{Src: v, Kind: core.OpDeleteVertex})
}

// SetSourcePosition attaches an opaque position (for example Kafka offsets)
// that is recorded durably with the flush that covers this batch. The store
// keeps only the newest position, so it must describe everything applied
// up to and including this batch.
func (b *Batch) SetSourcePosition(p []byte) { b.srcpos = append(b.srcpos[:0], p...) }

// OpKind is the kind of one batch operation.
type OpKind uint8

// The kinds of operations.
const (
	OpUpsert       OpKind = 0 // insert or update edge (Src, Dst, Type) with Weight
	OpDeleteEdge   OpKind = 1 // delete edge (Src, Dst, Type)
	OpDeleteVertex OpKind = 2 // delete every edge of Src, of every type; Dst and Type are 0
)

// String names the kind as the JSON record format does.
func (k OpKind) String() string {
	switch k {
	case OpUpsert:
		return "add"
	case OpDeleteEdge:
		return "delete"
	case OpDeleteVertex:
		return "delete_vertex"
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// Op is one operation of a batch.
type Op struct {
	Src, Dst uint64
	Weight   float64 // 0 for deletes
	Kind     OpKind
	Type     uint16 // the edge's type (Batch.SetType)
	// EventTime is when what it records happened, Unix µs (0: not given);
	// see Batch.SetEventTime.
	EventTime int64
	// EventRef and Props are the upsert's payload (Batch.SetPayload): the
	// event's reference and its property document's JSON text ("": none).
	// Strings, so that an Op stays comparable and immutable.
	EventRef string
	Props    string
}

// Time is the operation's event time, the zero time when it has none.
func (o Op) Time() time.Time {
	if o.EventTime <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(o.EventTime).UTC()
}

// Op returns the i-th operation, 0 <= i < Len().
func (b *Batch) Op(i int) Op {
	o := &b.ops[i]
	ref, props := b.payload(i)
	return Op{Src: o.Src, Dst: o.Dst, Weight: o.Weight, Kind: OpKind(o.Kind), Type: uint16(o.Type), EventTime: o.Time,
		EventRef: ref, Props: props}
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.ops = b.ops[:0]
	b.vrecs = b.vrecs[:0]
	b.pays = b.pays[:0]
	b.sources = false
	b.srcpos = b.srcpos[:0]
	b.tags = b.tags[:0]
	b.typed = false
	b.err = nil
}

// Tag gives the operations added from now on (until the next Tag) the
// reference ref, an opaque number naming where they came from (ingest: the
// Kafka record); 0 is none. The store does not keep it: the apply observer
// sees it (Ref), and the views hand it out with each operation.
func (b *Batch) Tag(ref uint64) {
	n := len(b.ops)
	if k := len(b.tags); k > 0 && b.tags[k-1].from == n {
		b.tags[k-1].ref = ref
		return
	}
	b.tags = append(b.tags, tag{from: n, ref: ref})
}

// Refs calls f with the reference of every operation, in order (0 for the
// operations added before the first Tag).
func (b *Batch) Refs(f func(i int, ref uint64)) {
	k, ref := 0, uint64(0)
	for i := range b.ops {
		for k < len(b.tags) && b.tags[k].from <= i {
			ref = b.tags[k].ref
			k++
		}
		f(i, ref)
	}
}
