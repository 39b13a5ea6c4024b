package decode

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"time"
)

// Binary entry layout; see the package documentation.
const (
	binFixedSize = 18 // op, flags, src, dst
	binOptSize   = 8  // the weight and the event time
	binTypeSize  = 2  // the edge type

	flagWeight    = 1 << 0
	flagEventTime = 1 << 1
	flagType      = 1 << 2
	flagsKnown    = flagWeight | flagEventTime | flagType
)

// AppendBinary appends e as one binary entry to dst and returns the extended
// slice. The weight is written if e.HasWeight, the event time if
// e.EventTime is not zero (as Unix microseconds), the type if e.Type is
// not 0; a vertex record (OpPutVertex) is written with its label and
// props, and no flags. AppendBinary does not
// validate e: an Edge that breaks the rules yields an entry that Decode
// rejects.
func AppendBinary(dst []byte, e Edge) []byte {
	var flags byte
	if e.HasWeight {
		flags |= flagWeight
	}
	if !e.EventTime.IsZero() {
		flags |= flagEventTime
	}
	if e.Type != 0 {
		flags |= flagType
	}
	if e.Op == OpPutVertex {
		dst = append(dst, byte(e.Op), 0)
		dst = binary.LittleEndian.AppendUint64(dst, e.Src)
		dst = binary.LittleEndian.AppendUint64(dst, 0)
		dst = append(dst, byte(len(e.Label)))
		dst = append(dst, e.Label...)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(e.Props)))
		return append(dst, e.Props...)
	}
	dst = append(dst, byte(e.Op), flags)
	dst = binary.LittleEndian.AppendUint64(dst, e.Src)
	dst = binary.LittleEndian.AppendUint64(dst, e.Dst)
	if e.HasWeight {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Weight))
	}
	if !e.EventTime.IsZero() {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(e.EventTime.UnixMicro()))
	}
	if e.Type != 0 {
		dst = binary.LittleEndian.AppendUint16(dst, e.Type)
	}
	return dst
}

// binaryDecoder checks a whole value in a first pass and decodes and emits
// it in a second: parsing an entry twice is cheaper than storing it, and it
// needs no scratch space.
type binaryDecoder struct {
	rules
	ids []uint64 // scratch: the mapped ids of the value, in order (see Decode)
}

func (d *binaryDecoder) Format() Format { return FormatBinary }

func (d *binaryDecoder) Decode(v []byte, emit func(Edge)) error {
	if len(v) == 0 {
		return d.errorf(0, "empty value")
	}
	anyMapped := false
	for off := 0; off < len(v); {
		size, err := d.check(v, off)
		if err != nil {
			return err
		}
		anyMapped = anyMapped || d.mapped(binary.LittleEndian.Uint64(v[off+2:])) || d.mapped(binary.LittleEndian.Uint64(v[off+10:]))
		off += size
	}
	// Mapped ids are taken before anything is emitted, so that a failure
	// emits nothing; the emitting pass then takes them in order.
	ids := d.ids[:0]
	if anyMapped {
		for off := 0; off < len(v); off += entrySizeAt(v[off:]) {
			e := v[off:]
			src, dst := binary.LittleEndian.Uint64(e[2:]), binary.LittleEndian.Uint64(e[10:])
			if d.mapped(src) || d.mapped(dst) {
				if err := d.mapIDs(Op(e[0]), &src, &dst); err != nil {
					return err
				}
				ids = append(ids, src, dst)
			}
		}
	}
	if cap(ids) <= maxRetainedEdges {
		d.ids = ids[:0]
	} else {
		d.ids = nil
	}
	for off := 0; off < len(v); {
		rest := v[off:]
		flags := rest[1]
		e := Edge{
			Op:  Op(rest[0]),
			Src: binary.LittleEndian.Uint64(rest[2:]),
			Dst: binary.LittleEndian.Uint64(rest[10:]),
		}
		if len(ids) > 0 && (d.mapped(e.Src) || d.mapped(e.Dst)) {
			e.Src, e.Dst, ids = ids[0], ids[1], ids[2:]
		}
		p := binFixedSize
		if e.Op == OpPutVertex {
			e.Label, e.Props, p = vertexFields(rest)
			emit(e)
			off += p
			continue
		}
		if flags&flagWeight != 0 {
			e.Weight = math.Float64frombits(binary.LittleEndian.Uint64(rest[p:]))
			e.HasWeight = true
			p += binOptSize
		}
		if flags&flagEventTime != 0 {
			e.EventTime = time.UnixMicro(int64(binary.LittleEndian.Uint64(rest[p:]))).UTC()
			p += binOptSize
		}
		if flags&flagType != 0 {
			e.Type = binary.LittleEndian.Uint16(rest[p:])
			p += binTypeSize
		}
		emit(e)
		off += p
	}
	return nil
}

// vertexFields are the label and props of the valid vertex record entry
// e, and the entry's size.
func vertexFields(e []byte) (label, props []byte, size int) {
	p := binFixedSize
	n := int(e[p])
	label = e[p+1 : p+1+n]
	p += 1 + n
	m := int(binary.LittleEndian.Uint16(e[p:]))
	props = e[p+2 : p+2+m]
	if m == 0 {
		props = nil
	}
	return label, props, p + 2 + m
}

// entrySizeAt is the size of the valid entry at the start of e.
func entrySizeAt(e []byte) int {
	if Op(e[0]) == OpPutVertex {
		_, _, size := vertexFields(e)
		return size
	}
	return entrySize(e[1])
}

// entrySize is the size of a valid edge entry with these flags.
func entrySize(flags byte) int {
	size := binFixedSize
	if flags&flagWeight != 0 {
		size += binOptSize
	}
	if flags&flagEventTime != 0 {
		size += binOptSize
	}
	if flags&flagType != 0 {
		size += binTypeSize
	}
	return size
}

// checkVertex validates the vertex record entry at v[off:] and returns its
// size.
func (d *binaryDecoder) checkVertex(v []byte, off int) (int, error) {
	rest := v[off:]
	if rest[1] != 0 {
		return 0, d.errorf(off+1, "flags must be 0 for a vertex record, got %#02x", rest[1])
	}
	if src := binary.LittleEndian.Uint64(rest[2:]); src > d.maxNumeric {
		return 0, d.errorf(off+2, "src: %s", d.idReason(src))
	}
	if dst := binary.LittleEndian.Uint64(rest[10:]); dst != 0 {
		return 0, d.errorf(off+10, "dst must be 0 for a vertex record, got %d", dst)
	}
	p := binFixedSize
	if len(rest) < p+1 {
		return 0, d.errorf(off, "truncated vertex record: no label length")
	}
	p += 1 + int(rest[p])
	if len(rest) < p+2 {
		return 0, d.errorf(off, "truncated vertex record: %d bytes left, its label ends at %d and a props length follows", len(rest), p)
	}
	m := int(binary.LittleEndian.Uint16(rest[p:]))
	if len(rest) < p+2+m {
		return 0, d.errorf(off, "truncated vertex record: %d bytes left, it takes %d", len(rest), p+2+m)
	}
	label, props, size := vertexFields(rest)
	if why := labelReason(label); why != "" {
		return 0, d.errorf(off+binFixedSize, "%s", why)
	}
	propsOff := off + binFixedSize + 1 + len(label) + 2
	if why := propsReason(props); why != "" {
		return 0, d.errorf(propsOff, "%s", why)
	}
	if len(props) > 0 && !json.Valid(props) {
		return 0, d.errorf(propsOff, "a vertex's props must be a JSON object (invalid JSON)")
	}
	return size, nil
}

// check validates the entry at v[off:] and returns its size.
func (d *binaryDecoder) check(v []byte, off int) (int, error) {
	rest := v[off:]
	if len(rest) < binFixedSize {
		return 0, d.errorf(off, "truncated entry: %d bytes left, an entry takes at least %d", len(rest), binFixedSize)
	}
	op := Op(rest[0])
	if op > OpPutVertex {
		return 0, d.errorf(off, "unknown op %d", rest[0])
	}
	flags := rest[1]
	if op == OpPutVertex {
		return d.checkVertex(v, off)
	}
	if flags&^flagsKnown != 0 {
		return 0, d.errorf(off+1, "unknown flag bits %#02x", flags&^flagsKnown)
	}
	if flags&flagWeight != 0 && op != OpUpsert {
		return 0, d.errorf(off+1, "weight not allowed for %s", op)
	}
	if flags&flagType != 0 && op == OpDeleteVertex {
		return 0, d.errorf(off+1, "an edge type is not allowed for delete_vertex (it deletes edges of every type)")
	}
	size := entrySize(flags)
	if len(rest) < size {
		return 0, d.errorf(off, "truncated entry: %d bytes left, this entry takes %d", len(rest), size)
	}
	if src := binary.LittleEndian.Uint64(rest[2:]); src > d.maxNumeric {
		return 0, d.errorf(off+2, "src: %s", d.idReason(src))
	}
	dst := binary.LittleEndian.Uint64(rest[10:])
	if op == OpDeleteVertex {
		if dst != 0 {
			return 0, d.errorf(off+10, "dst must be 0 for delete_vertex, got %d", dst)
		}
	} else if dst > d.maxNumeric {
		return 0, d.errorf(off+10, "dst: %s", d.idReason(dst))
	}
	p := binFixedSize
	if flags&flagWeight != 0 {
		w := math.Float64frombits(binary.LittleEndian.Uint64(rest[p:]))
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return 0, d.errorf(off+p, "%s", weightReason(w))
		}
		p += binOptSize
	}
	if flags&flagEventTime != 0 {
		us := int64(binary.LittleEndian.Uint64(rest[p:]))
		if us < minEventMicros || us > maxEventMicros {
			return 0, d.errorf(off+p, "event time %d us out of range [%d, %d]", us, minEventMicros, maxEventMicros)
		}
		p += binOptSize
	}
	if flags&flagType != 0 {
		if t := binary.LittleEndian.Uint16(rest[p:]); int(t) >= MaxEdgeTypes {
			return 0, d.errorf(off+p, "edge type %d out of range (max %d)", t, MaxEdgeTypes-1)
		}
	}
	return size, nil
}
