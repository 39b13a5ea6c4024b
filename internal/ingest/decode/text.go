package decode

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// AppendText appends e as one text line, ending in "\n", to dst and returns
// the extended slice: "src dst[ weight]" for an upsert, "d src dst" for an
// edge delete, "dv src" for a vertex delete, "v src[ label]" for a vertex
// record (its props are dropped: the text format has none). The weight is written in the
// shortest form that reads back exactly; the event time is dropped (the text
// format has none). AppendText does not validate e; an Op it does not know is
// written as an upsert line that Decode reads as an upsert.
func AppendText(dst []byte, e Edge) []byte {
	switch e.Op {
	case OpDeleteEdge:
		dst = append(dst, "d "...)
	case OpDeleteVertex:
		dst = append(dst, "dv "...)
		dst = strconv.AppendUint(dst, e.Src, 10)
		return append(dst, '\n')
	case OpPutVertex:
		dst = append(dst, "v "...)
		dst = strconv.AppendUint(dst, e.Src, 10)
		if len(e.Label) > 0 {
			dst = append(dst, ' ')
			dst = append(dst, e.Label...)
		}
		return append(dst, '\n')
	}
	dst = strconv.AppendUint(dst, e.Src, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, e.Dst, 10)
	if e.HasWeight && e.Op == OpUpsert {
		dst = append(dst, ' ')
		dst = strconv.AppendFloat(dst, e.Weight, 'g', -1, 64)
	}
	return append(dst, '\n')
}

// textRef is a vertex of a parsed line: a numeric id, or a key held in
// value[keyStart:keyEnd] when keyEnd > keyStart.
type textRef struct {
	id               uint64
	keyStart, keyEnd int
}

// textEntry is one parsed line.
type textEntry struct {
	op        Op
	hasWeight bool
	src, dst  textRef
	weight    float64
	line      int // byte offset of the line
	hasKeys   bool
	// A vertex record's label: value[labelStart:labelEnd].
	labelStart, labelEnd int
}

type textDecoder struct {
	rules
	entries []textEntry // scratch: the lines of the value being decoded
}

func (d *textDecoder) Format() Format { return FormatText }

// isBlank reports whether c separates fields.
func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func (d *textDecoder) Decode(v []byte, emit func(Edge)) error {
	entries := d.entries[:0]
	keys := false
	var fields [4][2]int // start and end of up to 3 fields, plus one to detect excess
	for line := 0; line < len(v); {
		end := len(v)
		next := len(v)
		if i := bytes.IndexByte(v[line:], '\n'); i >= 0 {
			end = line + i
			next = end + 1
		}
		lineEnd := end
		if lineEnd > line && v[lineEnd-1] == '\r' {
			lineEnd--
		}

		n := 0
		for i := line; i < lineEnd && n < len(fields); {
			for i < lineEnd && isBlank(v[i]) {
				i++
			}
			if i == lineEnd {
				break
			}
			start := i
			for i < lineEnd && !isBlank(v[i]) {
				i++
			}
			fields[n] = [2]int{start, i}
			n++
		}
		if n == 0 || v[fields[0][0]] == '#' || v[fields[0][0]] == '%' {
			line = next
			continue
		}
		e := textEntry{line: line}
		first, nids, weight := 0, 2, -1 // field indexes of src, count of ids, weight
		switch f0 := v[fields[0][0]:fields[0][1]]; {
		case string(f0) == "d":
			if n != 3 {
				return d.errorf(line, "delete line needs 2 fields after \"d\", has %d", n-1)
			}
			e.op, first = OpDeleteEdge, 1
		case string(f0) == "dv":
			if n != 2 {
				return d.errorf(line, "vertex delete line needs 1 field after \"dv\", has %d", n-1)
			}
			e.op, first, nids = OpDeleteVertex, 1, 1
		case string(f0) == "v":
			if n != 2 && n != 3 {
				return d.errorf(line, "vertex line needs 1 or 2 fields after \"v\" (src [label]), has %d", n-1)
			}
			e.op, first, nids = OpPutVertex, 1, 1
			if n == 3 {
				e.labelStart, e.labelEnd = fields[2][0], fields[2][1]
				if why := labelReason(v[e.labelStart:e.labelEnd]); why != "" {
					return d.errorf(line, "%s", why)
				}
			}
		case n == 1:
			return d.errorf(line, "missing dst: want \"src dst [weight]\"")
		case n > 3:
			return d.errorf(line, "too many fields: want \"src dst [weight]\"")
		default:
			e.op = OpUpsert
			if n == 3 {
				weight = 2
			}
		}
		for j := 0; j < nids; j++ {
			k := first + j
			ref, err := d.parseRef(v, fields[k][0], fields[k][1], line)
			if err != nil {
				if j == 0 {
					err.Reason = "src: " + err.Reason
				} else {
					err.Reason = "dst: " + err.Reason
				}
				return err
			}
			if ref.keyEnd > ref.keyStart {
				e.hasKeys = true
				keys = true
			}
			if j == 0 {
				e.src = ref
			} else {
				e.dst = ref
			}
		}
		if weight >= 0 {
			w, err := parseWeight(v[fields[weight][0]:fields[weight][1]])
			if err != "" {
				return d.errorf(line, "%s", err)
			}
			e.weight, e.hasWeight = w, true
		}
		entries = append(entries, e)
		line = next
	}
	if cap(entries) <= maxRetainedEdges {
		d.entries = entries[:0]
	} else {
		d.entries = nil
	}
	if len(entries) == 0 {
		return d.errorf(0, "value holds no edges")
	}
	if keys {
		for i := range entries {
			e := &entries[i]
			if !e.hasKeys {
				continue
			}
			if err := d.resolve(v, &e.src); err != nil {
				return err
			}
			if e.op != OpDeleteVertex && e.op != OpPutVertex {
				if err := d.resolve(v, &e.dst); err != nil {
					return err
				}
			}
		}
	}
	if d.nums != nil {
		for i := range entries {
			e := &entries[i]
			if err := d.mapIDs(e.op, &e.src.id, &e.dst.id); err != nil {
				return err
			}
		}
	}
	for i := range entries {
		e := &entries[i]
		var label []byte
		if e.labelEnd > e.labelStart {
			label = v[e.labelStart:e.labelEnd]
		}
		emit(Edge{Op: e.op, Src: e.src.id, Dst: e.dst.id, Weight: e.weight, HasWeight: e.hasWeight, Label: label})
	}
	return nil
}

// parseWeight parses a weight field: a decimal floating-point number. It
// returns a reason if the field is not one, or is out of range.
func parseWeight(tok []byte) (float64, string) {
	for _, c := range tok {
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, "invalid weight " + clip(string(tok)) + ": want a decimal number"
		}
	}
	w, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, "weight " + clip(string(tok)) + " out of range"
		}
		return 0, "invalid weight " + clip(string(tok)) + ": want a decimal number"
	}
	// Decimal digits cannot spell NaN or Inf, and overflow is ErrRange, so w
	// is finite; check anyway, the rule matters more than the cost.
	if reason := weightReason(w); reason != "" {
		return 0, reason
	}
	return w, ""
}

// parseRef parses the vertex field v[start:end] of the line at offset line.
func (d *textDecoder) parseRef(v []byte, start, end, line int) (textRef, *Error) {
	tok := v[start:end]
	var id uint64
	digits := true
	overflow := false
	for _, c := range tok {
		if c < '0' || c > '9' {
			digits = false
			break
		}
		x := uint64(c - '0')
		if id > (1<<64-1-x)/10 {
			overflow = true
		}
		id = id*10 + x
	}
	if digits {
		if overflow {
			return textRef{}, d.errorf(line, "vertex id %s out of range (max %d)", short(string(tok)), MaxVertex)
		}
		if reason := d.idReason(id); reason != "" {
			return textRef{}, d.errorf(line, "%s", reason)
		}
		return textRef{id: id}, nil
	}
	if d.keys == nil {
		return textRef{}, d.errorf(line, "invalid vertex id %s: not an unsigned integer, and string keys need a key dictionary", clip(string(tok)))
	}
	if reason := keyReasonBytes(tok); reason != "" {
		return textRef{}, d.errorf(line, "%s", reason)
	}
	return textRef{keyStart: start, keyEnd: end}, nil
}

// resolve replaces the key of r, if any, by its id.
func (d *textDecoder) resolve(v []byte, r *textRef) error {
	if r.keyEnd <= r.keyStart {
		return nil
	}
	key := v[r.keyStart:r.keyEnd]
	var (
		id  uint64
		err error
	)
	if d.keysBytes != nil {
		id, err = d.keysBytes.IDBytes(key)
	} else {
		id, err = d.keys.ID(string(key))
	}
	if err != nil {
		return fmt.Errorf("decode text: resolve key %s at byte offset %d: %w", clip(string(key)), r.keyStart, err)
	}
	if id > MaxVertex {
		return d.badResolvedID(string(key), id, r.keyStart)
	}
	r.id = id
	r.keyStart, r.keyEnd = 0, 0
	return nil
}
