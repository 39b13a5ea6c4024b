package decode

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// jsonOpNames maps the "op" values of the JSON format to ops.
var jsonOpNames = map[string]Op{
	"add":           OpUpsert,
	"upsert":        OpUpsert,
	"delete":        OpDeleteEdge,
	"delete_vertex": OpDeleteVertex,
	"add_vertex":    OpPutVertex,
	"put_vertex":    OpPutVertex,
}

// AppendJSON appends e as one JSON object to dst and returns the extended
// slice. src and dst are written as the strings srcKey and dstKey when those
// are not empty, else as numbers. The op is written as "add", "delete",
// "delete_vertex" or "add_vertex"; dst is left out for a vertex delete and
// a vertex record, which has its label and props when not empty; weight is written if
// e.HasWeight, ts (as an RFC 3339 string in UTC) if e.EventTime is not zero,
// type (its number) if e.Type is not 0, an upsert's ref and props when
// not empty.
// AppendJSON does not validate e or the keys.
func AppendJSON(dst []byte, e Edge, srcKey, dstKey string) []byte {
	dst = append(dst, `{"op":`...)
	switch e.Op {
	case OpUpsert:
		dst = append(dst, `"add"`...)
	case OpDeleteEdge:
		dst = append(dst, `"delete"`...)
	case OpDeleteVertex:
		dst = append(dst, `"delete_vertex"`...)
	case OpPutVertex:
		dst = append(dst, `"add_vertex"`...)
	default:
		dst = appendJSONString(dst, e.Op.String())
	}
	dst = append(dst, `,"src":`...)
	dst = appendJSONVertex(dst, e.Src, srcKey)
	if e.Op == OpPutVertex {
		if len(e.Label) > 0 {
			dst = append(dst, `,"label":`...)
			dst = appendJSONString(dst, string(e.Label))
		}
		if len(e.Props) > 0 {
			dst = append(dst, `,"props":`...)
			dst = append(dst, e.Props...)
		}
	} else if e.Op != OpDeleteVertex {
		dst = append(dst, `,"dst":`...)
		dst = appendJSONVertex(dst, e.Dst, dstKey)
	}
	if e.HasWeight {
		dst = append(dst, `,"weight":`...)
		dst = strconv.AppendFloat(dst, e.Weight, 'g', -1, 64)
	}
	if !e.EventTime.IsZero() {
		dst = append(dst, `,"ts":"`...)
		dst = e.EventTime.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	}
	if e.Type != 0 {
		dst = append(dst, `,"type":`...)
		dst = strconv.AppendUint(dst, uint64(e.Type), 10)
	}
	if e.Op == OpUpsert && len(e.EventRef) > 0 {
		dst = append(dst, `,"ref":`...)
		dst = appendJSONString(dst, string(e.EventRef))
	}
	if e.Op == OpUpsert && len(e.Props) > 0 {
		dst = append(dst, `,"props":`...)
		dst = append(dst, e.Props...)
	}
	return append(dst, '}')
}

func appendJSONVertex(dst []byte, id uint64, key string) []byte {
	if key != "" {
		return appendJSONString(dst, key)
	}
	return strconv.AppendUint(dst, id, 10)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 is copied as is.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// jsonDecoder is the JSON format's decoder, on the scanner of jscan.go
// (which the mapped format shares): the format's five fields, strictly
// (an unknown or repeated field is an error), picked in one pass that
// allocates nothing.
type jsonDecoder struct {
	rules
	s       jscan
	root    *jnode // the fields, at the top of each object
	entries []jsonEntry
	kc      keyCache
	// arena holds one value's unescaped event references (reset per
	// value; entries keep views of it).
	arena []byte
}

func (d *jsonDecoder) Format() Format { return FormatJSON }

// The fields, in the order of jscan.vals.
const (
	jOp = iota
	jSrc
	jDst
	jWeight
	jTS
	jType
	jLabel
	jProps
	jRef
	jFields
)

var jsonFieldNames = [jFields]string{"op", "src", "dst", "weight", "ts", "type", "label", "props", "ref"}

// jsonRef is src or dst of a parsed operation (either JSON path): a
// numeric id, or a key (its raw text in the record, escapes and all)
// resolved once the whole value is valid (emitEntries).
type jsonRef struct {
	id      uint64
	key     []byte // nil: numeric
	escaped bool
	off     int // byte offset of the value
}

// jsonEntry is one parsed operation (either JSON path).
type jsonEntry struct {
	op        Op
	src, dst  jsonRef
	weight    float64
	hasWeight bool
	eventTime time.Time
	typ       typeRef
	// An OpPutVertex's label (its raw text in the value, unescaped when
	// emitted) and props (the object's text).
	label        []byte
	labelEscaped bool
	props        []byte
	// An upsert's event reference (its bytes, unescaped; nil: none).
	ref []byte
}

// keyCache is a JSON decoder's scratch for unescaped strings and the key
// it resolved last (cleared per value): a key that a mapping reads from
// the record key, a header or a constant is the same bytes for every
// operation of a record, and is resolved once.
type keyCache struct {
	scratch     []byte
	lastKey     []byte
	lastEscaped bool
	lastID      uint64
}

// emitEntries resolves the type names of entries (the whole value is
// valid), then their keys, in order, src before dst; then maps the numbers
// the rules map; then emits them.
func (r *rules) emitEntries(entries []jsonEntry, kc *keyCache, emit func(Edge)) error {
	kc.lastKey = nil // a new value's bytes may sit where the last one's did
	for k := range entries {
		if err := r.resolveType(&entries[k].typ, &kc.scratch); err != nil {
			return err
		}
	}
	for k := range entries {
		e := &entries[k]
		if err := r.resolveRef(&e.src, kc); err != nil {
			return err
		}
		if e.op != OpDeleteVertex && e.op != OpPutVertex {
			if err := r.resolveRef(&e.dst, kc); err != nil {
				return err
			}
		}
	}
	if r.nums != nil {
		for k := range entries {
			e := &entries[k]
			if err := r.mapIDs(e.op, &e.src.id, &e.dst.id); err != nil {
				return err
			}
		}
	}
	for k := range entries {
		e := &entries[k]
		var label []byte
		if e.label != nil {
			label = unescaped(e.label, e.labelEscaped, &kc.scratch)
		}
		emit(Edge{Op: e.op, Src: e.src.id, Dst: e.dst.id, Weight: e.weight, HasWeight: e.hasWeight, EventTime: e.eventTime, Type: e.typ.id,
			Label: label, Props: e.props, EventRef: e.ref})
	}
	return nil
}

// resolveRef replaces the key of ref, if any, by its id.
func (r *rules) resolveRef(ref *jsonRef, kc *keyCache) error {
	if ref.key == nil {
		return nil
	}
	if len(ref.key) == len(kc.lastKey) && unsafe.SliceData(ref.key) == unsafe.SliceData(kc.lastKey) && ref.escaped == kc.lastEscaped {
		ref.id, ref.key = kc.lastID, nil
		return nil
	}
	id, err := r.resolveKey(ref.key, ref.escaped, ref.off, &kc.scratch)
	if err != nil {
		kc.lastKey = nil
		return err
	}
	kc.lastKey, kc.lastEscaped, kc.lastID = ref.key, ref.escaped, id
	ref.id, ref.key = id, nil
	return nil
}

// newJSONDecoder returns the JSON format's decoder of rules r.
func newJSONDecoder(r rules) *jsonDecoder {
	d := &jsonDecoder{rules: r, root: &jnode{strict: true}}
	for f, name := range jsonFieldNames {
		d.root.add([]string{name}, f)
	}
	d.s.vals = make([]jval, jFields)
	return d
}

func (d *jsonDecoder) Decode(v []byte, emit func(Edge)) error {
	if len(d.entries) > maxRetainedEdges {
		d.entries = nil
	}
	d.entries = d.entries[:0]
	if cap(d.arena) > maxArena {
		d.arena = nil
	}
	d.arena = d.arena[:0]
	d.s.v = v
	i := d.s.ws(0)
	if i == len(v) {
		return d.errorf(0, "empty value")
	}
	switch v[i] {
	case '{':
		end, err := d.object(i, 0)
		if err != nil {
			return err
		}
		i = end
	case '[':
		start := i
		i = d.s.ws(i + 1)
		if i < len(v) && v[i] == ']' {
			return d.errorf(start, "value holds no edges: empty array")
		}
		for {
			if i >= len(v) {
				return d.errorf(len(v), "unexpected end of json value")
			}
			if v[i] != '{' {
				if _, jerr := d.s.value(i, nil, 1); jerr != nil {
					return d.scanError(jerr)
				}
				return d.errorf(i, "array element must be an object")
			}
			end, err := d.object(i, 1)
			if err != nil {
				return err
			}
			var done bool
			var jerr *jerr
			if i, done, jerr = d.s.after(end, ']', "an array element"); jerr != nil {
				return d.scanError(jerr)
			}
			if done {
				break
			}
		}
	default:
		if _, jerr := d.s.value(i, nil, 0); jerr != nil {
			return d.scanError(jerr)
		}
		return d.errorf(i, "value must be a json object or an array of objects")
	}
	if end := d.s.ws(i); end != len(v) {
		if why := badUTF8At(v, end); why != "" {
			return d.errorf(end, "%s", why)
		}
		return d.errorf(end, "trailing data after the json value")
	}
	return d.emitEntries(d.entries, &d.kc, emit)
}

// scanError turns a scan error into the format's *Error.
func (d *jsonDecoder) scanError(e *jerr) *Error {
	if e.off >= len(d.s.v) {
		return d.errorf(len(d.s.v), "unexpected end of json value")
	}
	if why := badUTF8At(d.s.v, e.off); why != "" {
		return d.errorf(e.off, "%s", why)
	}
	return d.errorf(e.off, "invalid json: %s", e.reason)
}

// badUTF8At says why v[i] starts no valid UTF-8 sequence, or "".
func badUTF8At(v []byte, i int) string {
	if c := v[i]; c >= utf8.RuneSelf {
		if r, size := utf8.DecodeRune(v[i:]); r == utf8.RuneError && size == 1 {
			return fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c)
		}
	}
	return ""
}

// text is the text of a picked value (a string's, between the quotes).
func (d *jsonDecoder) text(x jval) []byte { return d.s.v[x.start:x.end] }

// str is a picked string, its escapes decoded (into scratch).
func (d *jsonDecoder) str(x jval) []byte { return unescaped(d.text(x), x.escaped, &d.kc.scratch) }

// object scans the object at start (nesting depth depth) into an entry
// and checks it.
func (d *jsonDecoder) object(start, depth int) (int, error) {
	clear(d.s.vals)
	end, jerr := d.s.value(start, d.root, depth)
	if jerr != nil {
		if jerr.field != "" {
			return end, d.errorf(jerr.off, "%s", jerr.reason)
		}
		return end, d.scanError(jerr)
	}
	vals := d.s.vals
	e := jsonEntry{op: OpUpsert}
	if x := vals[jOp]; x.kind != jMissing {
		if x.kind != jString {
			return end, d.errorf(x.offset(), "op must be a string")
		}
		name := d.str(x)
		op, ok := jsonOpNames[string(name)]
		if !ok {
			return end, d.errorf(x.offset(), "unknown op %s: want add, upsert, delete, delete_vertex or add_vertex", clip(string(name)))
		}
		e.op = op
	}
	var err error
	if e.src, err = d.vertex("src", vals[jSrc]); err != nil {
		return end, err
	}
	if e.dst, err = d.vertex("dst", vals[jDst]); err != nil {
		return end, err
	}
	weightOff := 0
	switch x := vals[jWeight]; x.kind {
	case jMissing, jNull:
	case jNumber:
		weightOff = x.start
		w, perr := strconv.ParseFloat(bytesString(d.text(x)), 64)
		if perr != nil {
			return end, d.errorf(x.start, "weight %s out of range", short(string(d.text(x))))
		}
		if reason := weightReason(w); reason != "" {
			return end, d.errorf(x.start, "%s", reason)
		}
		e.weight, e.hasWeight = w, true
	default:
		return end, d.errorf(x.offset(), "weight must be a number")
	}
	switch x := vals[jTS]; x.kind {
	case jMissing, jNull:
	case jString:
		ts := d.str(x)
		us, ok := parseRFC3339(ts)
		if !ok {
			return end, d.errorf(x.offset(), "ts %s is not an RFC 3339 time", clip(string(ts)))
		}
		if e.eventTime, ok = eventTime(us); !ok {
			return end, d.errorf(x.offset(), "ts %s out of range [1970-01-01T00:00:00Z, 9999-12-31T23:59:59.999999Z]", clip(string(ts)))
		}
	case jNumber:
		ms, ok := parseDigits(bytesString(d.text(x)))
		if !ok || ms > uint64(maxEventMillis) {
			return end, d.errorf(x.start, "ts %s must be an RFC 3339 string or Unix milliseconds in [0, %d]", short(string(d.text(x))), maxEventMillis)
		}
		e.eventTime = time.UnixMilli(int64(ms)).UTC()
	default:
		return end, d.errorf(x.offset(), "ts must be an RFC 3339 string or Unix milliseconds")
	}
	if vals[jSrc].kind == jMissing {
		return end, d.errorf(start, "missing src")
	}
	vertexOp := e.op == OpDeleteVertex || e.op == OpPutVertex
	switch dst := vals[jDst]; {
	case vertexOp && dst.kind != jMissing:
		return end, d.errorf(dst.offset(), "dst not allowed for %s", e.op)
	case !vertexOp && dst.kind == jMissing:
		return end, d.errorf(start, "missing dst")
	}
	if e.hasWeight && e.op != OpUpsert {
		return end, d.errorf(weightOff, "weight not allowed for %s", e.op)
	}
	if err := d.record(&e, vals[jLabel], vals[jProps], vals[jTS]); err != nil {
		return end, err
	}
	if err := d.payload(&e, vals[jRef], vals[jProps]); err != nil {
		return end, err
	}
	if x := vals[jType]; x.kind != jMissing {
		if e.op == OpDeleteVertex && x.kind != jNull {
			return end, d.errorf(x.offset(), "type not allowed for delete_vertex (it deletes edges of every type)")
		}
		if e.op == OpPutVertex && x.kind != jNull {
			return end, d.errorf(x.offset(), "type not allowed for add_vertex (a vertex has a label)")
		}
		var why string
		if e.typ, why = d.typeOf(x.kind, d.text(x), x.escaped, x.offset(), &d.kc.scratch); why != "" {
			return end, d.errorf(x.offset(), "type %s", why)
		}
	}
	d.entries = append(d.entries, e)
	return end, nil
}

// record checks an entry's label and props (allowed for add_vertex only;
// null is absent) and takes them into e. An add_vertex has no event time.
func (d *jsonDecoder) record(e *jsonEntry, label, props, ts jval) error {
	if e.op != OpPutVertex {
		for _, x := range []struct {
			v    jval
			name string
		}{{label, "label"}, {props, "props"}} {
			if x.name == "props" && e.op == OpUpsert {
				continue // an upsert's edge properties (payload)
			}
			if x.v.kind != jMissing && x.v.kind != jNull {
				return d.errorf(x.v.offset(), "%s not allowed for %s (only for add_vertex)", x.name, e.op)
			}
		}
		return nil
	}
	if ts.kind != jMissing && ts.kind != jNull {
		return d.errorf(ts.offset(), "ts not allowed for add_vertex (a vertex record has no event time)")
	}
	var text []byte
	switch label.kind {
	case jMissing, jNull:
	case jString:
		e.label, e.labelEscaped = d.text(label), label.escaped
		text = d.str(label)
	default:
		return d.errorf(label.offset(), "label must be a string")
	}
	switch props.kind {
	case jMissing, jNull:
	case jObject:
		e.props = d.text(props)
	default:
		return d.errorf(props.offset(), "props must be a JSON object")
	}
	if why := labelReason(text); why != "" {
		return d.errorf(label.offset(), "%s", why)
	}
	if why := propsReason(e.props); why != "" {
		return d.errorf(props.offset(), "%s", why)
	}
	return nil
}

// payload checks an upsert's event reference (a string of at most
// MaxEventRef bytes of UTF-8) and edge properties (a JSON object of at
// most MaxEdgeProps bytes), null being absent, and takes them into e; no
// other operation has a ref.
func (d *jsonDecoder) payload(e *jsonEntry, ref, props jval) error {
	if e.op != OpUpsert {
		if ref.kind != jMissing && ref.kind != jNull {
			return d.errorf(ref.offset(), "ref not allowed for %s (only for add)", e.op)
		}
		return nil
	}
	switch ref.kind {
	case jMissing, jNull:
	case jString:
		r := d.text(ref)
		if ref.escaped {
			start := len(d.arena)
			d.arena = unescape(d.arena, r)
			r = d.arena[start:len(d.arena):len(d.arena)]
		}
		if why := refReason(r); why != "" {
			return d.errorf(ref.offset(), "ref: %s", why)
		}
		if len(r) > 0 {
			e.ref = r
		}
	default:
		return d.errorf(ref.offset(), "ref must be a string")
	}
	switch props.kind {
	case jMissing, jNull:
	case jObject:
		e.props = d.text(props)
		if why := edgePropsReason(e.props); why != "" {
			return d.errorf(props.offset(), "%s", why)
		}
	default:
		return d.errorf(props.offset(), "props must be a JSON object")
	}
	return nil
}

// vertex checks the value of src or dst (a missing one is not present).
func (d *jsonDecoder) vertex(field string, x jval) (jsonRef, error) {
	r := jsonRef{off: x.offset()}
	switch x.kind {
	case jMissing:
	case jNumber:
		t := d.text(x)
		id, ok := parseDigits(bytesString(t))
		if !ok {
			if isDigits(bytesString(t)) {
				return r, d.errorf(r.off, "%s: vertex id %s out of range (max %d)", field, short(string(t)), MaxVertex)
			}
			return r, d.errorf(r.off, "%s: vertex id %s is not a non-negative integer", field, short(string(t)))
		}
		if reason := d.idReason(id); reason != "" {
			return r, d.errorf(r.off, "%s: %s", field, reason)
		}
		r.id = id
	case jString:
		k := d.str(x)
		if d.keys == nil {
			return r, d.errorf(r.off, "%s: string key %s, but no key dictionary is configured", field, clip(string(k)))
		}
		if reason := keyReasonBytes(k); reason != "" {
			return r, d.errorf(r.off, "%s: %s", field, reason)
		}
		r.key, r.escaped = d.text(x), x.escaped
	default:
		return r, d.errorf(r.off, "%s must be an unsigned integer or a string key", field)
	}
	return r, nil
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseDigits parses s as plain decimal digits into a uint64.
func parseDigits(s string) (uint64, bool) {
	if !isDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
