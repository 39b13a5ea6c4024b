package decode

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unsafe"
)

// Mapping says where each part of an edge operation is in a Kafka record
// whose value is JSON of any shape (a payment event, a login, ...): the
// mapped JSON format. Every field names a source:
//
//	/a/b        a JSON pointer (RFC 6901) into the value
//	key         the whole record key, as a string key
//	key:/a/b    a JSON pointer into the record key, itself JSON
//	key:N       the N-th part (from 0) of the record key split at KeySeparator
//	header:NAME the value of the record header NAME (the last one of that name)
//	const:TEXT  TEXT itself, for every record (const:payment, const:delete)
//
// Src and Dst are required; the rest are optional. What a source may hold:
//
//	src, dst  a JSON string, which is always a string key (even "123"), or a
//	          JSON unsigned integer, a numeric id; from the record key, a
//	          header or a constant, the text is a string key
//	op        add or upsert (the default when missing or null), delete (the
//	          edge), delete_vertex, add_vertex (a vertex record: src, label
//	          and props; dst, weight, time and type are not read); with
//	          OpValues, its names instead (only those)
//	weight    a JSON number, or a string holding a decimal number ("12.50");
//	          read for upserts only; missing or null: no weight
//	time      an RFC 3339 string ("T" and "Z" in either case, a leap
//	          second counts as the next, a fraction truncated to
//	          microseconds), or a number of TimeUnit since the Unix epoch
//	          (a JSON number or a string of digits, a fraction allowed, no
//	          exponent); missing or null: none
//	type      a string, the edge type's name (const:login), or an integer,
//	          its number (0 to MaxEdgeTypes-1); missing or null: type 0,
//	          the default; not read for delete_vertex
//	label     a string, an add_vertex's label (at most MaxVertexLabel
//	          bytes); missing or null: none
//	props     a JSON object, an add_vertex's property document (at most
//	          MaxVertexProps bytes of its text) and an upsert's edge
//	          properties (at most MaxEdgeProps), from the value or the
//	          key's JSON; missing or null: none. Or (PropsMapping.Fields) a
//	          map of property name -> source that builds the object: each
//	          source's JSON value (a string from the key, a header or a
//	          constant), a missing or null one left out
//	event_id  a string or a number, an upsert's event reference (at most
//	          MaxEventRef bytes of UTF-8 as a string: a number's text is
//	          its digits as written); missing or null: none
//
// Types (the mapping's types section) gives edge types an aggregate:
// replace (the default: the newest upsert is the edge) or accumulate
// (each upsert is an event that adds to the edge), with a retain duration
// of event time for which an accumulate type's events stay readable one
// by one (at most MaxRetain). They are the store's, not the topic's:
// TypeAggregates reads them, serve gives them to the store, and two
// mappings may not give one type two aggregates.
//
// Fields of the value that no source names are ignored; of a repeated
// member the last counts. A value is one JSON object, or an array of them
// (each an operation). A header with a null value is null. Several fields
// may share a source. A record whose
// value is null (a tombstone, as on a compacted topic) is, as Tombstone
// says: ignored ("ignore", the default), a delete of the edge its key
// names ("delete": TombstoneSrc and TombstoneDst, or Src and Dst when
// they do not read the value), or dead-lettered ("dead-letter"). A
// record that does not fit is an *Error whose reason names the field, its
// source and what was found.
type Mapping struct {
	Src          string            `yaml:"src" json:"src"`
	Dst          string            `yaml:"dst" json:"dst"`
	Op           string            `yaml:"op,omitempty" json:"op,omitempty"`
	Weight       string            `yaml:"weight,omitempty" json:"weight,omitempty"`
	Time         string            `yaml:"time,omitempty" json:"time,omitempty"`
	Type         string            `yaml:"type,omitempty" json:"type,omitempty"`
	TimeUnit     string            `yaml:"time_unit,omitempty" json:"time_unit,omitempty"` // s, ms (default) or us
	OpValues     map[string]string `yaml:"op_values,omitempty" json:"op_values,omitempty"`
	KeySeparator string            `yaml:"key_separator,omitempty" json:"key_separator,omitempty"`
	Tombstone    string            `yaml:"tombstone,omitempty" json:"tombstone,omitempty"` // ignore (default), delete or dead-letter
	TombstoneSrc string            `yaml:"tombstone_src,omitempty" json:"tombstone_src,omitempty"`
	TombstoneDst string            `yaml:"tombstone_dst,omitempty" json:"tombstone_dst,omitempty"`
	Label        string            `yaml:"label,omitempty" json:"label,omitempty"`
	Props        PropsMapping      `yaml:"props,omitempty" json:"props,omitempty"`
	EventID      string            `yaml:"event_id,omitempty" json:"event_id,omitempty"`
	// Types gives edge types (by name, "default" or number) their
	// aggregate.
	Types map[string]TypeSettings `yaml:"types,omitempty" json:"types,omitempty"`
}

// Header is a Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is what a mapped decoder reads of a Kafka record. Value is nil
// for a tombstone (a null value); an empty value is not one.
type Record struct {
	Key, Value []byte
	Headers    []Header
}

// RecordDecoder is a Decoder that reads the whole record (its key and
// headers too): the mapped decoder. DecodeRecord has Decode's promises.
type RecordDecoder interface {
	Decoder
	DecodeRecord(r *Record, emit func(Edge)) error
}

// The fields a mapping fills, in the order of mapped.srcs.
const (
	mSrc = iota
	mDst
	mOp
	mWeight
	mTime
	mType
	mTSrc // a tombstone's src
	mTDst
	mLabel
	mProps
	mEventID
	mFields // the fields of PropsMapping.Fields follow, in name order
)

var mappedFieldNames = [mFields]string{"src", "dst", "op", "weight", "time", "type", "tombstone_src", "tombstone_dst", "label", "props", "event_id"}

// source kinds
type srcKind uint8

const (
	sNone srcKind = iota
	sValue
	sKey
	sKeyJSON
	sKeyPart
	sHeader
	sConst
)

// source is one compiled source.
type source struct {
	kind srcKind
	spec string // as written, for reasons
	part int    // sKeyPart
	name string // sHeader; sConst: the text
}

// Tombstone handling.
const (
	tombIgnore = iota
	tombDelete
	tombDeadLetter
)

// mapped is the mapped JSON decoder. It is not safe for concurrent use.
type mapped struct {
	rules
	srcs      []source // per field: mFields, then the props' fields
	valueRoot *jnode   // the value pointers
	keyRoot   *jnode   // the key pointers (nil: none)
	unitMicro int64    // microseconds per epoch unit
	ops       map[string]Op
	sep       []byte // KeySeparator
	tomb      int

	vs, ks  jscan // value and key scanners
	keyVals []jval
	entries []jsonEntry
	kc      keyCache
	memo    []memo // per field, per record
	// level says which fields' sources are record-level (memo): props
	// built of fields is when all of theirs are. perRecord lists them.
	level     []bool
	perRecord []int
	// propNames are the names of the props' fields (sorted; field
	// mFields+i is propNames[i]).
	propNames []string
	// arena holds what one record's operations build (props of fields,
	// unescaped event references); reset per record. Entries keep views
	// of it: appending past its capacity moves it, and the views keep
	// the old array.
	arena []byte
	// gets counts get's calls (the tests check that a record-level source
	// is read once per record, whatever its operations).
	gets int
}

// sourceHelp is what a source may be, for errors.
const sourceHelp = "a source is /json/pointer, key, key:/json/pointer, key:N, header:NAME or const:TEXT"

// parseSource compiles the source s of field f.
func parseSource(f, s string) (source, []string, error) {
	src := source{spec: s}
	switch {
	case s == "":
		return src, nil, nil
	case strings.HasPrefix(s, "/"):
		toks, err := pointerTokens(s)
		if err != nil {
			return src, nil, fmt.Errorf("%s %q: %w", f, s, err)
		}
		src.kind = sValue
		return src, toks, nil
	case s == "key":
		src.kind = sKey
	case strings.HasPrefix(s, "key:/"):
		toks, err := pointerTokens(s[len("key:"):])
		if err != nil {
			return src, nil, fmt.Errorf("%s %q: %w", f, s, err)
		}
		src.kind = sKeyJSON
		return src, toks, nil
	case strings.HasPrefix(s, "key:"):
		t := s[len("key:"):]
		n, ok := parseDigits(t)
		if !ok || n > 64 || len(t) > 1 && t[0] == '0' {
			return src, nil, fmt.Errorf("%s %q: key:N needs N from 0 to 64, or key:/pointer", f, s)
		}
		src.kind, src.part = sKeyPart, int(n)
	case strings.HasPrefix(s, "header:") && len(s) > len("header:"):
		src.kind, src.name = sHeader, s[len("header:"):]
	case strings.HasPrefix(s, "const:") && len(s) > len("const:"):
		src.kind, src.name = sConst, s[len("const:"):]
	default:
		return src, nil, fmt.Errorf("%s %q: %s", f, s, sourceHelp)
	}
	return src, nil, nil
}

// pointerTokens splits a JSON pointer into its reference tokens,
// unescaping ~1 and ~0.
func pointerTokens(p string) ([]string, error) {
	parts := strings.Split(p[1:], "/")
	for i, t := range parts {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 >= len(t) || t[j+1] != '0' && t[j+1] != '1') {
				return nil, errors.New("'~' in a JSON pointer must be ~0 or ~1")
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// NewMapped returns the decoder of mapping m (keys as in New), or an error
// saying what in m is wrong and what is allowed.
func NewMapped(m Mapping, keys KeyResolver) (RecordDecoder, error) {
	d := &mapped{rules: newRules(FormatJSON, keys), valueRoot: &jnode{}, ops: map[string]Op{}}
	if m.Src == "" || m.Dst == "" {
		return nil, errors.New("a mapping needs src and dst")
	}
	if m.Props.Source != "" && len(m.Props.Fields) > 0 {
		return nil, errors.New("props: either a source or a map of property name -> source, not both")
	}
	if len(m.Props.Fields) > MaxPropFields {
		return nil, fmt.Errorf("props: %d properties, at most %d", len(m.Props.Fields), MaxPropFields)
	}
	if _, err := m.TypeAggregates(); err != nil {
		return nil, err
	}
	specs := []string{m.Src, m.Dst, m.Op, m.Weight, m.Time, m.Type, m.TombstoneSrc, m.TombstoneDst, m.Label, m.Props.Source, m.EventID}
	for name := range m.Props.Fields {
		d.propNames = append(d.propNames, name)
	}
	sort.Strings(d.propNames)
	for _, name := range d.propNames {
		if why := propNameReason(name); why != "" {
			return nil, fmt.Errorf("props: property %s: %s", clip(name), why)
		}
		if m.Props.Fields[name] == "" {
			return nil, fmt.Errorf("props: property %s has no source: %s", clip(name), sourceHelp)
		}
		specs = append(specs, m.Props.Fields[name])
	}
	switch m.Tombstone {
	case "", "ignore":
		d.tomb = tombIgnore
	case "dead-letter":
		d.tomb = tombDeadLetter
	case "delete":
		d.tomb = tombDelete
		for _, p := range [][2]int{{mTSrc, mSrc}, {mTDst, mDst}} {
			if specs[p[0]] != "" {
				continue
			}
			if strings.HasPrefix(specs[p[1]], "/") {
				return nil, fmt.Errorf("tombstone delete: %s %q reads the value, which a tombstone does not have: set %s to a source in the key or a header", mappedFieldNames[p[1]], specs[p[1]], mappedFieldNames[p[0]])
			}
			specs[p[0]] = specs[p[1]]
		}
	default:
		return nil, fmt.Errorf("tombstone %q: want ignore, delete or dead-letter", m.Tombstone)
	}
	d.srcs = make([]source, len(specs))
	for f, s := range specs {
		src, toks, err := parseSource(d.fieldName(f), s)
		if err != nil {
			return nil, err
		}
		d.srcs[f] = src
		switch src.kind {
		case sValue:
			if f == mTSrc || f == mTDst {
				return nil, fmt.Errorf("%s %q: a tombstone has no value; read it from the key or a header", mappedFieldNames[f], s)
			}
			d.valueRoot.add(toks, f)
		case sKeyJSON:
			if d.keyRoot == nil {
				d.keyRoot = &jnode{}
			}
			d.keyRoot.add(toks, f)
		case sKeyPart:
			if m.KeySeparator == "" {
				return nil, fmt.Errorf("%s %q: key:N needs key_separator", d.fieldName(f), s)
			}
		}
	}
	if c := d.srcs[mType]; c.kind == sConst {
		// A constant type that can be none would dead-letter every record.
		if _, _, why := typeText(c.name); why != "" {
			return nil, fmt.Errorf("type %q %s", c.spec, why)
		}
	}
	if c := d.srcs[mEventID]; c.kind == sConst {
		if why := refReason([]byte(c.name)); why != "" {
			return nil, fmt.Errorf("event_id %q: %s", c.spec, why)
		}
	}
	d.sep = []byte(m.KeySeparator)
	switch m.TimeUnit {
	case "", "ms":
		d.unitMicro = 1000
	case "s":
		d.unitMicro = 1000000
	case "us", "µs":
		d.unitMicro = 1
	default:
		return nil, fmt.Errorf("time_unit %q: want s, ms or us", m.TimeUnit)
	}
	if len(m.OpValues) == 0 {
		for k, v := range jsonOpNames {
			d.ops[k] = v
		}
	}
	names := make([]string, 0, len(m.OpValues))
	for k := range m.OpValues {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		op, ok := jsonOpNames[m.OpValues[k]]
		if !ok {
			return nil, fmt.Errorf("op_values: %q maps to %q: want add, upsert, delete, delete_vertex or add_vertex", k, m.OpValues[k])
		}
		d.ops[k] = op
	}
	// A field without a source reads the same for every record: memoized
	// once. A record-level source's memo is reset per record.
	d.level = make([]bool, len(d.srcs))
	for f := range d.srcs {
		d.level[f] = d.srcs[f].kind != sValue
		if k := d.srcs[f].kind; k != sValue && k != sNone {
			d.perRecord = append(d.perRecord, f)
		}
	}
	if len(d.propNames) > 0 {
		for f := mFields; f < len(d.srcs); f++ {
			d.level[mProps] = d.level[mProps] && d.level[f]
		}
		if d.level[mProps] {
			d.perRecord = append(d.perRecord, mProps)
		}
	}
	d.memo = make([]memo, len(d.srcs))
	d.vs.vals = make([]jval, len(d.srcs))
	d.keyVals = make([]jval, len(d.srcs))
	d.ks.vals = d.keyVals
	return d, nil
}

// fieldName names field f (a props field as props.NAME).
func (d *mapped) fieldName(f int) string {
	if f < mFields {
		return mappedFieldNames[f]
	}
	return "props." + d.propNames[f-mFields]
}

func (d *mapped) Format() Format { return FormatJSON }

// Decode decodes a value alone (no key, no headers: as load reads a line).
func (d *mapped) Decode(value []byte, emit func(Edge)) error {
	if value == nil {
		value = []byte{}
	}
	return d.DecodeRecord(&Record{Value: value}, emit)
}

// DecodeRecord decodes one record; see Decoder.Decode.
func (d *mapped) DecodeRecord(r *Record, emit func(Edge)) error {
	if len(d.entries) > maxRetainedEdges {
		d.entries = nil
	}
	d.entries = d.entries[:0]
	for _, f := range d.perRecord {
		d.memo[f].done = false
	}
	if cap(d.arena) > maxArena {
		d.arena = nil
	}
	d.arena = d.arena[:0]
	if r.Value == nil {
		switch d.tomb {
		case tombIgnore:
			return nil
		case tombDeadLetter:
			return d.errorf(0, "a null value (a tombstone), and the mapping's tombstone setting is dead-letter")
		}
	}
	if d.keyRoot != nil && r.Key != nil {
		d.ks.v = r.Key
		clear(d.keyVals)
		end, err := d.ks.value(0, d.keyRoot, 0)
		if err == nil {
			if end = d.ks.ws(end); end < len(r.Key) {
				err = d.ks.fail(end, "data after the JSON key")
			}
		}
		if err != nil {
			return d.errorf(0, "the record key is not JSON: byte offset %d of the key: %s", err.off, err.reason)
		}
	}
	if r.Value == nil { // a tombstone to delete by
		e := jsonEntry{op: OpDeleteEdge}
		var v fieldVal
		if err := d.field(r, mTSrc, &v); err != nil {
			return err
		}
		e.src = v.ref
		if err := d.field(r, mTDst, &v); err != nil {
			return err
		}
		e.dst = v.ref
		if k := d.srcs[mType].kind; k != sValue && k != sNone { // the type, when the key, a header or a constant says it
			if err := d.field(r, mType, &v); err != nil {
				return err
			}
			e.typ = v.typ
		}
		d.entries = append(d.entries, e)
		return d.finish(emit)
	}
	d.vs.v = r.Value
	i := d.vs.ws(0)
	if i >= len(r.Value) {
		return d.errorf(i, "empty value: want a JSON object or an array of objects")
	}
	switch r.Value[i] {
	case '{':
		end, err := d.event(r, i, 0)
		if err != nil {
			return err
		}
		i = end
	case '[':
		i = d.vs.ws(i + 1)
		if i < len(r.Value) && r.Value[i] == ']' {
			return d.errorf(i, "empty array: want at least one object")
		}
		for {
			if i >= len(r.Value) || r.Value[i] != '{' {
				if i >= len(r.Value) {
					return d.errorf(i, "unexpected end of JSON input")
				}
				return d.errorf(i, "an array element is %s: want an object", d.kindAt(i))
			}
			end, err := d.event(r, i, 1) // inside the array
			if err != nil {
				return err
			}
			var done bool
			var jerr *jerr
			if i, done, jerr = d.vs.after(end, ']', "an array element"); jerr != nil {
				return d.errorf(jerr.off, "%s", jerr.reason)
			}
			if done {
				break
			}
		}
	default:
		return d.errorf(i, "the value is %s: want a JSON object or an array of objects", d.kindAt(i))
	}
	if i = d.vs.ws(i); i < len(r.Value) {
		return d.errorf(i, "data after the JSON value")
	}
	return d.finish(emit)
}

// kindAt names what the value at i starts, for an error.
func (d *mapped) kindAt(i int) string {
	switch c := d.vs.v[i]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case d.vs.literal(i, "true") > 0 || d.vs.literal(i, "false") > 0:
		return "a boolean"
	case d.vs.literal(i, "null") > 0:
		return "null"
	}
	return "not JSON (" + quoteByte(d.vs.v[i]) + ")"
}

// event scans the object at i, at nesting depth, into an entry.
func (d *mapped) event(r *Record, i, depth int) (int, error) {
	clear(d.vs.vals)
	end, jerr := d.vs.value(i, d.valueRoot, depth)
	if jerr != nil {
		return end, d.errorf(jerr.off, "%s", jerr.reason)
	}
	var e jsonEntry
	var v fieldVal
	if err := d.field(r, mOp, &v); err != nil {
		return end, err
	}
	e.op = v.op
	if err := d.field(r, mSrc, &v); err != nil {
		return end, err
	}
	e.src = v.ref
	if e.op == OpPutVertex {
		if err := d.record(r, &e); err != nil {
			return end, err
		}
		d.entries = append(d.entries, e)
		return end, nil
	}
	if e.op != OpDeleteVertex {
		if err := d.field(r, mDst, &v); err != nil {
			return end, err
		}
		e.dst = v.ref
	}
	if e.op == OpUpsert {
		if err := d.field(r, mWeight, &v); err != nil {
			return end, err
		}
		e.weight, e.hasWeight = v.w, v.has
	}
	if err := d.field(r, mTime, &v); err != nil {
		return end, err
	}
	e.eventTime = v.t
	if e.op != OpDeleteVertex && d.srcs[mType].kind != sNone {
		if err := d.field(r, mType, &v); err != nil {
			return end, err
		}
		e.typ = v.typ
	}
	if e.op == OpUpsert {
		if err := d.payload(r, &e); err != nil {
			return end, err
		}
	}
	d.entries = append(d.entries, e)
	return end, nil
}

// payload reads an upsert's event reference and edge properties into e,
// checked against the store's limits (a record over them is
// dead-lettered, not a batch the store refuses).
func (d *mapped) payload(r *Record, e *jsonEntry) error {
	var v fieldVal
	if d.srcs[mEventID].kind != sNone {
		if err := d.field(r, mEventID, &v); err != nil {
			return err
		}
		e.ref = v.ref2
	}
	if d.srcs[mProps].kind == sNone && len(d.propNames) == 0 {
		return nil
	}
	if err := d.field(r, mProps, &v); err != nil {
		return err
	}
	e.props = v.props
	if why := edgePropsReason(e.props); why != "" {
		return d.fieldError(mProps, d.get(r, mProps), "%s", why)
	}
	return nil
}

// eventIDOf reads an upsert's event reference: a string (unescaped) or a
// number (its text); nil when missing or null.
func (d *mapped) eventIDOf(r *Record) ([]byte, error) {
	g := d.get(r, mEventID)
	var ref []byte
	switch g.kind {
	case jMissing, jNull:
		return nil, nil
	case jNumber:
		ref = d.text(g)
	case jString:
		ref = d.text(g)
		if g.escaped {
			start := len(d.arena)
			d.arena = unescape(d.arena, ref)
			ref = d.arena[start:len(d.arena):len(d.arena)]
		}
	default:
		return nil, d.fieldError(mEventID, g, "is %s: want a string or a number", g.kind)
	}
	if why := refReason(ref); why != "" {
		return nil, d.fieldError(mEventID, g, "%s", why)
	}
	if len(ref) == 0 {
		return nil, nil
	}
	return ref, nil
}

// buildProps builds the props object of the props' fields into the
// arena: each present, non-null field as a member (a JSON value of the
// value or of the key's JSON as written, else a JSON string of the
// text); nil when none is present. The scanner checked the value's JSON,
// so the object is JSON; its limits are the caller's to check.
func (d *mapped) buildProps(r *Record) []byte {
	start := len(d.arena)
	d.arena = append(d.arena, '{')
	for i, name := range d.propNames {
		f := mFields + i
		g := d.get(r, f)
		if g.kind == jMissing || g.kind == jNull {
			continue
		}
		if len(d.arena) > start+1 {
			d.arena = append(d.arena, ',')
		}
		d.arena = appendJSONString(d.arena, name)
		d.arena = append(d.arena, ':')
		switch k := d.srcs[f].kind; {
		case (k == sValue || k == sKeyJSON) && g.kind == jString:
			d.arena = append(d.arena, '"')
			d.arena = append(d.arena, d.text(g)...)
			d.arena = append(d.arena, '"')
		case k == sValue || k == sKeyJSON:
			d.arena = append(d.arena, d.text(g)...)
		default: // the text of the key, a header or a constant
			d.arena = appendJSONString(d.arena, bytesString(d.text(g)))
		}
	}
	if len(d.arena) == start+1 {
		d.arena = d.arena[:start]
		return nil
	}
	d.arena = append(d.arena, '}')
	return d.arena[start:len(d.arena):len(d.arena)]
}

// record reads an add_vertex's label and props into e.
func (d *mapped) record(r *Record, e *jsonEntry) error {
	var v fieldVal
	if err := d.field(r, mLabel, &v); err != nil {
		return err
	}
	e.label, e.labelEscaped = v.label, v.labelEscaped
	if err := d.field(r, mProps, &v); err != nil {
		return err
	}
	e.props = v.props
	label := e.label
	if e.labelEscaped {
		label = unescaped(label, true, &d.kc.scratch)
	}
	if why := labelReason(label); why != "" {
		return d.fieldError(mLabel, d.get(r, mLabel), "%s", why)
	}
	if why := propsReason(e.props); why != "" {
		return d.fieldError(mProps, d.get(r, mProps), "%s", why)
	}
	return nil
}

// labelOf reads an add_vertex's label (raw text; nil: none).
func (d *mapped) labelOf(r *Record) ([]byte, bool, error) {
	g := d.get(r, mLabel)
	switch g.kind {
	case jMissing, jNull:
		return nil, false, nil
	case jString:
		return d.text(g), g.escaped, nil
	}
	return nil, false, d.fieldError(mLabel, g, "is %s: want a string", g.kind)
}

// propsOf reads an operation's props (the object's text; nil: none).
func (d *mapped) propsOf(r *Record) ([]byte, error) {
	if len(d.propNames) > 0 {
		return d.buildProps(r), nil
	}
	g := d.get(r, mProps)
	switch g.kind {
	case jMissing, jNull:
		return nil, nil
	case jObject:
		return d.text(g), nil
	}
	return nil, d.fieldError(mProps, g, "is %s: want a JSON object", g.kind)
}

// got is what one source holds for one record: a JSON value of b's
// text, or (from the key, a header or a constant) the bytes of a string.
type got struct {
	jval
	b   []byte // the text the value's offsets index
	off int    // offset of the value in the record value (0 elsewhere)
}

// get returns what field f's source holds.
func (d *mapped) get(r *Record, f int) got {
	d.gets++
	s := &d.srcs[f]
	whole := func(b []byte) got { return got{jval: jval{kind: jString, end: len(b)}, b: b} }
	switch s.kind {
	case sValue:
		v := d.vs.vals[f]
		return got{jval: v, b: d.vs.v, off: v.offset()}
	case sKey:
		if r.Key == nil {
			return got{}
		}
		return whole(r.Key)
	case sKeyJSON:
		if r.Key == nil {
			return got{}
		}
		return got{jval: d.keyVals[f], b: r.Key}
	case sKeyPart:
		if r.Key == nil {
			return got{}
		}
		k := r.Key
		for n := 0; ; n++ {
			j := bytes.Index(k, d.sep)
			if n == s.part {
				if j >= 0 {
					k = k[:j]
				}
				return whole(k)
			}
			if j < 0 {
				return got{}
			}
			k = k[j+len(d.sep):]
		}
	case sHeader:
		for i := len(r.Headers) - 1; i >= 0; i-- {
			if r.Headers[i].Key == s.name {
				if r.Headers[i].Value == nil {
					return got{jval: jval{kind: jNull}} // a null header value
				}
				return whole(r.Headers[i].Value)
			}
		}
		return got{}
	case sConst:
		return whole(unsafe.Slice(unsafe.StringData(s.name), len(s.name)))
	}
	return got{}
}

// text is g's text (a string's raw text, escapes and all: see unescape).
func (d *mapped) text(g got) []byte { return g.b[g.start:g.end] }

// str is g's string with its escapes decoded (into scratch when it has
// any).
func (d *mapped) str(g got) []byte { return unescaped(d.text(g), g.escaped, &d.kc.scratch) }

// where names the source of field f for a reason.
func (d *mapped) where(f int) string {
	s := &d.srcs[f]
	switch s.kind {
	case sKey, sKeyJSON, sKeyPart:
		return fmt.Sprintf("%s (%s of the record key)", d.fieldName(f), s.spec)
	case sHeader:
		return fmt.Sprintf("%s (header %q)", d.fieldName(f), s.name)
	}
	return fmt.Sprintf("%s (%s)", d.fieldName(f), s.spec)
}

func (d *mapped) fieldError(f int, g got, format string, args ...any) *Error {
	return d.errorf(g.off, "%s %s", d.where(f), fmt.Sprintf(format, args...))
}

func (d *mapped) opNames() string {
	names := make([]string, 0, len(d.ops))
	for k := range d.ops {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// fieldVal is what one field of an operation reads to.
type fieldVal struct {
	op  Op
	ref jsonRef
	w   float64
	has bool // a weight
	t   time.Time
	typ typeRef
	// An add_vertex's label (raw text, and whether it has escapes) and
	// props.
	label        []byte
	labelEscaped bool
	props        []byte
	// An upsert's event reference (its bytes: unescaped), nil: none.
	ref2 []byte
}

// memo is what a record-level source (the key, a header, a constant: the
// same for every operation of a record) gave, read once per record: an
// array of many operations costs what one does.
type memo struct {
	done bool
	v    fieldVal
	err  error
}

// field reads field f of the current operation into *v (through the memo
// when its source is record-level).
func (d *mapped) field(r *Record, f int, v *fieldVal) error {
	if !d.level[f] {
		return d.read(r, f, v)
	}
	m := &d.memo[f]
	if !m.done {
		m.err = d.read(r, f, &m.v)
		m.done = true
	}
	*v = m.v
	return m.err
}

// read reads field f into *v.
func (d *mapped) read(r *Record, f int, v *fieldVal) (err error) {
	switch f {
	case mOp:
		v.op, err = d.opOf(r)
	case mWeight:
		v.w, v.has, err = d.weightOf(r)
	case mTime:
		v.t, err = d.eventTimeOf(r)
	case mType:
		v.typ, err = d.typeOfField(r)
	case mLabel:
		v.label, v.labelEscaped, err = d.labelOf(r)
	case mProps:
		v.props, err = d.propsOf(r)
	case mEventID:
		v.ref2, err = d.eventIDOf(r)
	default:
		v.ref, err = d.vertexOf(r, f)
	}
	return err
}

// opOf reads the operation: the default upsert when missing or null.
func (d *mapped) opOf(r *Record) (Op, error) {
	g := d.get(r, mOp)
	if g.kind == jMissing || g.kind == jNull {
		return OpUpsert, nil
	}
	if g.kind != jString {
		return 0, d.fieldError(mOp, g, "is %s: want a string", g.kind)
	}
	name := d.str(g)
	op, ok := d.ops[string(name)]
	if !ok {
		return 0, d.fieldError(mOp, g, "%s is not an operation: want %s", clip(string(name)), d.opNames())
	}
	return op, nil
}

// vertexOf reads src or dst (f): a key (resolved later, in finish) or a
// numeric id.
func (d *mapped) vertexOf(r *Record, f int) (jsonRef, error) {
	g := d.get(r, f)
	ref := jsonRef{off: g.off}
	switch g.kind {
	case jMissing:
		if d.srcs[f].kind == sValue {
			return ref, d.fieldError(f, g, "is missing")
		}
		return ref, d.fieldError(f, g, "is missing (the record has no such key part or header)")
	case jString:
		if d.keys == nil {
			return ref, d.fieldError(f, g, "is the string key %s, but no key dictionary is configured", clip(string(d.str(g))))
		}
		b := d.str(g)
		if reason := keyReasonBytes(b); reason != "" {
			return ref, d.fieldError(f, g, "is not a key: %s", reason)
		}
		ref.key, ref.escaped = d.text(g), g.escaped
	case jNumber:
		t := d.text(g)
		id, ok := parseDigits(bytesString(t))
		if !ok {
			if isDigits(bytesString(t)) {
				return ref, d.fieldError(f, g, "is the vertex id %s, out of range (max %d)", short(string(t)), MaxVertex)
			}
			return ref, d.fieldError(f, g, "is the number %s: want an unsigned integer or a string key", short(string(t)))
		}
		if reason := d.idReason(id); reason != "" {
			return ref, d.fieldError(f, g, "is the %s", reason)
		}
		ref.id = id
	default:
		return ref, d.fieldError(f, g, "is %s: want a string key or an unsigned integer", g.kind)
	}
	return ref, nil
}

// typeOfField reads the edge type: a name or a number.
func (d *mapped) typeOfField(r *Record) (typeRef, error) {
	g := d.get(r, mType)
	t, why := d.typeOf(g.kind, d.text(g), g.escaped, g.off, &d.kc.scratch)
	if why != "" {
		return t, d.fieldError(mType, g, "%s", why)
	}
	return t, nil
}

// weightOf reads the weight: a number, or a string holding one.
func (d *mapped) weightOf(r *Record) (float64, bool, error) {
	g := d.get(r, mWeight)
	switch g.kind {
	case jMissing, jNull:
		return 0, false, nil
	case jNumber, jString:
		t := d.text(g)
		if g.kind == jString && g.escaped {
			return 0, false, d.fieldError(mWeight, g, "is the string %s: want a decimal number", clip(string(d.str(g))))
		}
		w, why := parseWeight(t)
		if why != "" {
			return 0, false, d.fieldError(mWeight, g, "%s", why)
		}
		return w, true, nil
	}
	return 0, false, d.fieldError(mWeight, g, "is %s: want a number or a string holding one", g.kind)
}

// eventTimeOf reads the time: RFC 3339, or the epoch in the mapping's unit.
func (d *mapped) eventTimeOf(r *Record) (time.Time, error) {
	g := d.get(r, mTime)
	switch g.kind {
	case jMissing, jNull:
		return time.Time{}, nil
	case jNumber, jString:
	default:
		return time.Time{}, d.fieldError(mTime, g, "is %s: want an RFC 3339 string or a number since the epoch", g.kind)
	}
	t := d.text(g)
	if g.kind == jString && g.escaped {
		t = d.str(g)
	}
	var us int64
	ok := false
	switch {
	case len(t) > 0 && (t[0] >= '0' && t[0] <= '9') && !looksLikeDate(t):
		us, ok = epochMicros(t, d.unitMicro)
	case g.kind == jString:
		if us, ok = parseRFC3339(t); !ok {
			return time.Time{}, d.fieldError(mTime, g, "%s is neither RFC 3339 nor a number of %s since the epoch", clip(string(t)), d.unitName())
		}
	}
	if !ok { // digits that are no such time, or a number that is not digits
		return time.Time{}, d.fieldError(mTime, g, "%s is not a time since the epoch in %s between 1970 and 9999", clip(string(t)), d.unitName())
	}
	tm, ok := eventTime(us)
	if !ok {
		return time.Time{}, d.fieldError(mTime, g, "%s is out of range (1970 to 9999)", clip(string(t)))
	}
	return tm, nil
}

func (d *mapped) unitName() string {
	switch d.unitMicro {
	case 1:
		return "microseconds"
	case 1000:
		return "milliseconds"
	}
	return "seconds"
}

// parseRFC3339 parses an RFC 3339 date-time (section 5.6: "T" and "Z" in
// either case, a fraction of any length, truncated to microseconds, a
// leap second 60 counted as the next second) into Unix microseconds. It
// allocates nothing, whatever the offset.
func parseRFC3339(b []byte) (int64, bool) {
	num := func(i, n int) (int, bool) {
		if i+n > len(b) {
			return 0, false
		}
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	at := func(i int, c byte) bool { return i < len(b) && b[i] == c }
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	dd, ok3 := num(8, 2)
	hh, ok4 := num(11, 2)
	mi, ok5 := num(14, 2)
	ss, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || !at(4, '-') || !at(7, '-') || !(at(10, 'T') || at(10, 't')) || !at(13, ':') || !at(16, ':') {
		return 0, false
	}
	if mo < 1 || mo > 12 || dd < 1 || dd > daysIn(y, mo) || hh > 23 || mi > 59 || ss > 60 {
		return 0, false
	}
	i := 19
	var frac int64
	if at(i, '.') {
		i++
		scale, digits := int64(100000), 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			frac += int64(b[i]-'0') * scale
			scale /= 10
			i++
			digits++
		}
		if digits == 0 {
			return 0, false
		}
	}
	var off int
	switch {
	case at(i, 'Z') || at(i, 'z'):
		i++
	case at(i, '+') || at(i, '-'):
		oh, okh := num(i+1, 2)
		om, okm := num(i+4, 2)
		if !okh || !okm || !at(i+3, ':') || oh > 23 || om > 59 {
			return 0, false
		}
		off = (oh*60 + om) * 60
		if b[i] == '-' {
			off = -off
		}
		i += 6
	default:
		return 0, false
	}
	if i != len(b) {
		return 0, false
	}
	sec := time.Date(y, time.Month(mo), dd, hh, mi, ss, 0, time.UTC).Unix() - int64(off)
	return sec*1_000_000 + frac, true
}

// daysIn is the number of days of month mo of year y.
func daysIn(y, mo int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// looksLikeDate reports a digit string that is an RFC 3339 date
// (dddd-...), not an epoch number.
func looksLikeDate(t []byte) bool { return len(t) > 4 && t[4] == '-' }

// epochMicros parses digits[.digits] in units of unit microseconds.
func epochMicros(t []byte, unit int64) (int64, bool) {
	var whole int64
	i := 0
	for ; i < len(t) && t[i] >= '0' && t[i] <= '9'; i++ {
		if whole > maxEventMicros/10 {
			return 0, false
		}
		whole = whole*10 + int64(t[i]-'0')
	}
	if i == 0 || whole > maxEventMicros/unit {
		return 0, false
	}
	us := whole * unit
	if i < len(t) {
		if t[i] != '.' || i+1 == len(t) {
			return 0, false
		}
		scale := unit
		for i++; i < len(t); i++ {
			c := t[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			scale /= 10
			us += int64(c-'0') * scale // below a microsecond: truncated
		}
	}
	return us, us <= maxEventMicros
}

// finish resolves the entries' keys (the whole value is valid) and emits
// them.
func (d *mapped) finish(emit func(Edge)) error { return d.emitEntries(d.entries, &d.kc, emit) }

// bytesString views b as a string for a call that does not keep it (the
// parse functions, whose errors are turned into reasons at once).
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// ParseMappingFlag parses serve's --mapping value
// topic:field=source,field=source,... (fields src, dst, op, weight,
// time, type, label, props, event_id, time_unit, key_separator,
// tombstone, tombstone_src, tombstone_dst; props.NAME=source for a
// property of the props built of fields; op_values=name:op|name:op; and
// types=name:aggregate[:retain]|...). A source holding ',' needs the
// config file's mappings section instead.
func ParseMappingFlag(s string) (string, Mapping, error) {
	var m Mapping
	topic, rest, ok := strings.Cut(s, ":")
	if !ok || topic == "" || rest == "" {
		return "", m, fmt.Errorf("%q: want topic:src=SOURCE,dst=SOURCE[,weight=..,time=..,op=..]", s)
	}
	fields := map[string]*string{"src": &m.Src, "dst": &m.Dst, "op": &m.Op, "weight": &m.Weight, "time": &m.Time, "type": &m.Type,
		"time_unit": &m.TimeUnit, "key_separator": &m.KeySeparator, "tombstone": &m.Tombstone,
		"tombstone_src": &m.TombstoneSrc, "tombstone_dst": &m.TombstoneDst, "label": &m.Label, "props": &m.Props.Source, "event_id": &m.EventID}
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", m, fmt.Errorf("%q: %q is not field=source", s, kv)
		}
		if seen[k] {
			return "", m, fmt.Errorf("%q: %s given twice", s, k)
		}
		seen[k] = true
		switch {
		case k == "op_values":
			m.OpValues = map[string]string{}
			for _, p := range strings.Split(v, "|") {
				name, op, ok := strings.Cut(p, ":")
				if !ok || name == "" {
					return "", m, fmt.Errorf("%q: op_values wants name:op|name:op, got %q", s, v)
				}
				m.OpValues[name] = op
			}
			continue
		case k == "types":
			m.Types = map[string]TypeSettings{}
			for _, p := range strings.Split(v, "|") {
				parts := strings.SplitN(p, ":", 3)
				if len(parts) < 2 || parts[0] == "" {
					return "", m, fmt.Errorf("%q: types wants name:aggregate[:retain]|..., got %q", s, v)
				}
				ts := TypeSettings{Aggregate: parts[1]}
				if len(parts) == 3 {
					ts.Retain = parts[2]
				}
				m.Types[parts[0]] = ts
			}
			continue
		case strings.HasPrefix(k, "props."):
			if m.Props.Fields == nil {
				m.Props.Fields = map[string]string{}
			}
			m.Props.Fields[k[len("props."):]] = v
			continue
		}
		f, ok := fields[k]
		if !ok {
			return "", m, fmt.Errorf("%q: unknown field %q; allowed: src, dst, op, weight, time, type, label, props, props.NAME, event_id, types, time_unit, op_values, key_separator, tombstone, tombstone_src, tombstone_dst", s, k)
		}
		*f = v
	}
	if _, err := NewMapped(m, nil); err != nil {
		return "", m, fmt.Errorf("topic %s: %w", topic, err)
	}
	return topic, m, nil
}
