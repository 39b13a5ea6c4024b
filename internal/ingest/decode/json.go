package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// jsonOpNames maps the "op" values of the JSON format to ops.
var jsonOpNames = map[string]Op{
	"add":           OpUpsert,
	"upsert":        OpUpsert,
	"delete":        OpDeleteEdge,
	"delete_vertex": OpDeleteVertex,
}

// AppendJSON appends e as one JSON object to dst and returns the extended
// slice. src and dst are written as the strings srcKey and dstKey when those
// are not empty, else as numbers. The op is written as "add", "delete" or
// "delete_vertex"; dst is left out for a vertex delete; weight is written if
// e.HasWeight, ts (as an RFC 3339 string in UTC) if e.EventTime is not zero.
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
	default:
		dst = appendJSONString(dst, e.Op.String())
	}
	dst = append(dst, `,"src":`...)
	dst = appendJSONVertex(dst, e.Src, srcKey)
	if e.Op != OpDeleteVertex {
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

type jsonDecoder struct {
	rules
	reader bytes.Reader
}

func (d *jsonDecoder) Format() Format { return FormatJSON }

// jsonRef is src or dst of a parsed object.
type jsonRef struct {
	present bool
	id      uint64
	key     string // set if the vertex is given as a key
	off     int    // byte offset of the value
}

// jsonEntry is one parsed object.
type jsonEntry struct {
	op        Op
	src, dst  jsonRef
	weight    float64
	hasWeight bool
	eventTime time.Time
}

// Field bits, to detect repeated and missing fields.
const (
	fieldOp = 1 << iota
	fieldSrc
	fieldDst
	fieldWeight
	fieldTS
)

var jsonFields = map[string]int{"op": fieldOp, "src": fieldSrc, "dst": fieldDst, "weight": fieldWeight, "ts": fieldTS}

// jsonParser parses one value.
type jsonParser struct {
	*rules
	v   []byte
	dec *json.Decoder
}

func (d *jsonDecoder) Decode(v []byte, emit func(Edge)) error {
	// encoding/json turns invalid UTF-8 and escaped lone surrogates into
	// U+FFFD without a word, so that different keys would become one
	// vertex: refuse them first, byte for byte.
	if off, why := checkJSONText(v); why != "" {
		return d.errorf(off, "%s", why)
	}
	d.reader.Reset(v)
	p := jsonParser{rules: &d.rules, v: v, dec: json.NewDecoder(&d.reader)}
	p.dec.UseNumber()
	entries, err := p.value()
	if err != nil {
		return err
	}
	for i := range entries {
		e := &entries[i]
		if err := d.resolve(&e.src); err != nil {
			return err
		}
		if e.op != OpDeleteVertex {
			if err := d.resolve(&e.dst); err != nil {
				return err
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
		emit(Edge{Op: e.op, Src: e.src.id, Dst: e.dst.id, Weight: e.weight, HasWeight: e.hasWeight, EventTime: e.eventTime})
	}
	return nil
}

// resolve replaces the key of r, if any, by its id.
func (d *jsonDecoder) resolve(r *jsonRef) error {
	if r.key == "" {
		return nil
	}
	id, err := d.keys.ID(r.key)
	if err != nil {
		return fmt.Errorf("decode json: resolve key %s at byte offset %d: %w", clip(r.key), r.off, err)
	}
	if id > MaxVertex {
		return d.badResolvedID(r.key, id, r.off)
	}
	r.id = id
	return nil
}

// skip returns the offset at which the token after offset i starts: past
// whitespace and at most one ':' or ','.
func (p *jsonParser) skip(i int) int {
	i = p.skipWS(i)
	if i < len(p.v) && (p.v[i] == ':' || p.v[i] == ',') {
		i = p.skipWS(i + 1)
	}
	return i
}

// next returns the next token and the byte offset at which it starts.
func (p *jsonParser) next() (json.Token, int, error) {
	start := p.skip(int(p.dec.InputOffset()))
	tok, err := p.dec.Token()
	if err != nil {
		return nil, start, p.syntaxError(err, start)
	}
	return tok, start, nil
}

// syntaxError converts an error of json.Decoder.Token into an *Error.
func (p *jsonParser) syntaxError(err error, start int) *Error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return p.errorf(len(p.v), "unexpected end of json value")
	case errors.As(err, &se):
		// json.Decoder.Token reports the bad byte for errors between
		// tokens, and a byte at or into the token for errors inside one.
		off := int(se.Offset)
		if off < start {
			off = start
		}
		if off > len(p.v) {
			off = len(p.v)
		}
		return p.errorf(off, "invalid json: %v", err)
	default:
		return p.errorf(start, "invalid json: %v", err)
	}
}

// value parses the whole value: an object or an array of objects.
func (p *jsonParser) value() ([]jsonEntry, error) {
	if p.skipWS(0) == len(p.v) {
		return nil, p.errorf(0, "empty value")
	}
	tok, start, err := p.next()
	if err != nil {
		return nil, err
	}
	var entries []jsonEntry
	switch tok {
	case json.Delim('{'):
		e, err := p.object(start)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	case json.Delim('['):
		for p.dec.More() {
			tok, s, err := p.next()
			if err != nil {
				return nil, err
			}
			if tok != json.Delim('{') {
				return nil, p.errorf(s, "array element must be an object")
			}
			e, err := p.object(s)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
		if _, _, err := p.next(); err != nil { // ']'
			return nil, err
		}
		if len(entries) == 0 {
			return nil, p.errorf(start, "value holds no edges: empty array")
		}
	default:
		return nil, p.errorf(start, "value must be a json object or an array of objects")
	}
	if end := p.skipWS(int(p.dec.InputOffset())); end != len(p.v) {
		return nil, p.errorf(end, "trailing data after the json value")
	}
	return entries, nil
}

// skipWS returns the offset of the first non-whitespace byte at or after i.
func (p *jsonParser) skipWS(i int) int {
	for i < len(p.v) && (p.v[i] == ' ' || p.v[i] == '\t' || p.v[i] == '\n' || p.v[i] == '\r') {
		i++
	}
	return i
}

// object parses the fields of an object whose '{' at offset start has been
// read, up to and including its '}', and checks them.
func (p *jsonParser) object(start int) (jsonEntry, error) {
	e := jsonEntry{op: OpUpsert}
	seen := 0
	weightOff := 0
	for p.dec.More() {
		tok, koff, err := p.next()
		if err != nil {
			return e, err
		}
		name, _ := tok.(string) // object keys are always strings
		bit, known := jsonFields[name]
		if !known {
			return e, p.errorf(koff, "unknown field %s", clip(name))
		}
		if seen&bit != 0 {
			return e, p.errorf(koff, "repeated field %q", name)
		}
		seen |= bit
		val, voff, err := p.next()
		if err != nil {
			return e, err
		}
		switch bit {
		case fieldOp:
			s, ok := val.(string)
			if !ok {
				return e, p.errorf(voff, "op must be a string")
			}
			op, ok := jsonOpNames[s]
			if !ok {
				return e, p.errorf(voff, "unknown op %s: want add, upsert, delete or delete_vertex", clip(s))
			}
			e.op = op
		case fieldSrc:
			if e.src, err = p.vertex("src", val, voff); err != nil {
				return e, err
			}
		case fieldDst:
			if e.dst, err = p.vertex("dst", val, voff); err != nil {
				return e, err
			}
		case fieldWeight:
			weightOff = voff
			switch w := val.(type) {
			case nil:
			case json.Number:
				f, err := strconv.ParseFloat(string(w), 64)
				if err != nil {
					return e, p.errorf(voff, "weight %s out of range", short(string(w)))
				}
				if reason := weightReason(f); reason != "" {
					return e, p.errorf(voff, "%s", reason)
				}
				e.weight, e.hasWeight = f, true
			default:
				return e, p.errorf(voff, "weight must be a number")
			}
		case fieldTS:
			switch ts := val.(type) {
			case nil:
			case string:
				t, err := time.Parse(time.RFC3339, ts)
				if err != nil {
					return e, p.errorf(voff, "ts %s is not an RFC 3339 time", clip(ts))
				}
				// RFC 3339 years have 4 digits, so UnixMicro cannot overflow.
				et, ok := eventTime(t.Truncate(time.Microsecond).UnixMicro())
				if !ok {
					return e, p.errorf(voff, "ts %s out of range [1970-01-01T00:00:00Z, 9999-12-31T23:59:59.999999Z]", clip(ts))
				}
				e.eventTime = et
			case json.Number:
				ms, ok := parseDigits(string(ts))
				if !ok || ms > uint64(maxEventMillis) {
					return e, p.errorf(voff, "ts %s must be an RFC 3339 string or Unix milliseconds in [0, %d]", short(string(ts)), maxEventMillis)
				}
				e.eventTime = time.UnixMilli(int64(ms)).UTC()
			default:
				return e, p.errorf(voff, "ts must be an RFC 3339 string or Unix milliseconds")
			}
		}
	}
	if _, _, err := p.next(); err != nil { // '}'
		return e, err
	}

	if !e.src.present {
		return e, p.errorf(start, "missing src")
	}
	switch e.op {
	case OpDeleteVertex:
		if e.dst.present {
			return e, p.errorf(e.dst.off, "dst not allowed for delete_vertex")
		}
	default:
		if !e.dst.present {
			return e, p.errorf(start, "missing dst")
		}
	}
	if e.hasWeight && e.op != OpUpsert {
		return e, p.errorf(weightOff, "weight not allowed for %s", e.op)
	}
	return e, nil
}

// vertex parses the value of src or dst.
func (p *jsonParser) vertex(field string, val json.Token, off int) (jsonRef, error) {
	r := jsonRef{present: true, off: off}
	switch x := val.(type) {
	case json.Number:
		id, ok := parseDigits(string(x))
		if !ok {
			if isDigits(string(x)) {
				return r, p.errorf(off, "%s: vertex id %s out of range (max %d)", field, short(string(x)), MaxVertex)
			}
			return r, p.errorf(off, "%s: vertex id %s is not a non-negative integer", field, short(string(x)))
		}
		if reason := p.idReason(id); reason != "" {
			return r, p.errorf(off, "%s: %s", field, reason)
		}
		r.id = id
	case string:
		if p.keys == nil {
			return r, p.errorf(off, "%s: string key %s, but no key dictionary is configured", field, clip(x))
		}
		if reason := keyReason(x); reason != "" {
			return r, p.errorf(off, "%s: %s", field, reason)
		}
		r.key = x
	default:
		return r, p.errorf(off, "%s must be an unsigned integer or a string key", field)
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

// checkJSONText returns the offset of the first byte of v that is not
// valid UTF-8, or of the first escaped surrogate in a string that is not
// one half of a pair (\ud800-\udbff followed by \udc00-\udfff), and
// why; ("" when there is none). Other syntax is left to the parser.
func checkJSONText(v []byte) (int, string) {
	inString := false
	for i := 0; i < len(v); {
		c := v[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(v[i:])
			if r == utf8.RuneError && size == 1 {
				return i, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c)
			}
			i += size
			continue
		}
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(v) && v[i+1] == 'u':
			u, ok := hex4(v, i+2)
			switch {
			case !ok:
				// Not an escape: the parser says so.
			case u >= 0xd800 && u <= 0xdbff:
				if lo, ok := hex4(v, i+8); ok && v[i+6] == '\\' && v[i+7] == 'u' && lo >= 0xdc00 && lo <= 0xdfff {
					i += 12
					continue
				}
				return i, fmt.Sprintf("escaped lone surrogate \\u%04x in a string (not followed by a low surrogate)", u)
			case u >= 0xdc00 && u <= 0xdfff:
				return i, fmt.Sprintf("escaped lone surrogate \\u%04x in a string (no high surrogate before it)", u)
			default:
				i += 6
				continue
			}
		case c == '\\':
			i += 2 // an escaped character, '"' and '\\' included
			continue
		}
		i++
	}
	return 0, ""
}

// hex4 parses the four hex digits of v at i.
func hex4(v []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(v) {
		return 0, false
	}
	var r rune
	for _, c := range v[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
