package decode

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/jsontext"
)

// A scanner over one JSON text that picks out the values at a few JSON
// pointers and walks past everything else without building it: the
// mapped decoder's path (mapping.go). encoding/json's tokenizer, which
// the native JSON format uses, allocates per token; this allocates
// nothing.
//
// What it promises: scan accepts exactly the JSON texts of RFC 8259
// (objects, arrays, strings, numbers, true, false, null; whitespace
// between tokens) nested at most maxDepth deep, and rejects everything
// else with the byte offset of the fault; an invalid UTF-8 byte or an
// escaped lone surrogate anywhere is a fault. The oracle in the tests is
// encoding/json.Valid.

// maxDepth bounds the nesting of a mapped value (deeper is an error, not
// a deep recursion).
const maxDepth = jsontext.MaxDepth

// jkind is the kind of a picked JSON value.
type jkind uint8

const (
	jMissing jkind = iota
	jString
	jNumber
	jTrue
	jFalse
	jNull
	jObject
	jArray
)

func (k jkind) String() string {
	return [...]string{"missing", "a string", "a number", "true", "false", "null", "an object", "an array"}[k]
}

// jval is a picked value: v[start:end] is its text (for a string, between
// the quotes), escaped says a string holds backslash escapes.
type jval struct {
	kind       jkind
	start, end int
	escaped    bool
}

// offset is the byte offset of the value x picked (a string's quote).
func (x jval) offset() int {
	if x.kind == jString {
		return x.start - 1
	}
	return x.start
}

// jnode is one step of the compiled pointers: the members (or array
// elements, by decimal index) it descends into, the fields it fills when
// pointers end here (several fields may share a pointer), and every field
// of its subtree (cleared when a member of its name comes again: the last
// one wins, as in encoding/json).
type jnode struct {
	names  []string
	next   []*jnode
	fields []int
	sub    []int
	// strict: a member not named here, or named twice, is an error (the
	// JSON format's fields).
	strict bool
}

// child is the node of member name, or nil.
func (n *jnode) child(name []byte) *jnode {
	if i := n.index(name); i >= 0 {
		return n.next[i]
	}
	return nil
}

// index is the index of member name in names, or -1.
func (n *jnode) index(name []byte) int {
	for i, s := range n.names {
		if s == string(name) {
			return i
		}
	}
	return -1
}

// add compiles a pointer (its reference tokens, unescaped) for field f.
func (n *jnode) add(tokens []string, f int) {
	n.sub = append(n.sub, f)
	for _, t := range tokens {
		c := n.child([]byte(t))
		if c == nil {
			c = &jnode{}
			n.names, n.next = append(n.names, t), append(n.next, c)
		}
		n = c
		n.sub = append(n.sub, f)
	}
	n.fields = append(n.fields, f)
}

// clear forgets what n's subtree picked.
func (s *jscan) clear(n *jnode) {
	for _, f := range n.sub {
		s.vals[f] = jval{}
	}
}

// jscan scans one value. Protected by nothing: one per decoder.
type jscan struct {
	v    []byte
	vals []jval // per field, what the current event picked
	// name is scratch for member names that hold escapes.
	name []byte
}

// jerr is a scan error: the offset and what is wrong; field is set for a
// strict object's unknown or repeated member (not a syntax error).
type jerr struct {
	off    int
	reason string
	field  string
}

func (s *jscan) fail(off int, format string, args ...any) *jerr {
	return &jerr{off: off, reason: fmt.Sprintf(format, args...)}
}

func (s *jscan) ws(i int) int {
	for i < len(s.v) {
		switch s.v[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value scans the value at i (after whitespace), descending into n's
// members where n is not nil, and returns the offset after it.
func (s *jscan) value(i int, n *jnode, depth int) (int, *jerr) {
	i = s.ws(i)
	if i >= len(s.v) {
		return i, s.fail(i, "unexpected end of JSON input")
	}
	start := i
	var kind jkind
	var end int
	escaped := false
	var err *jerr
	switch c := s.v[i]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, s.fail(i, "JSON nested deeper than %d", maxDepth)
		}
		if c == '{' {
			kind = jObject
			i, err = s.object(i, n, depth+1)
		} else {
			kind = jArray
			i, err = s.array(i, n, depth+1)
		}
		end = i
	case c == '"':
		kind = jString
		start = i + 1
		i, escaped, err = s.str(i)
		end = i - 1
	case c == '-' || c >= '0' && c <= '9':
		kind = jNumber
		i, err = s.number(i)
		end = i
	case c == 't':
		kind, i, err = jTrue, s.literal(i, "true"), nil
		end = i
	case c == 'f':
		kind, i, err = jFalse, s.literal(i, "false"), nil
		end = i
	case c == 'n':
		kind, i, err = jNull, s.literal(i, "null"), nil
		end = i
	default:
		return i, s.fail(i, "invalid character %s looking for the beginning of a value", quoteByte(c))
	}
	if err != nil {
		return i, err
	}
	if i < 0 {
		return start, s.fail(start, "invalid literal (want true, false or null)")
	}
	if n != nil {
		for _, f := range n.fields {
			s.vals[f] = jval{kind: kind, start: start, end: end, escaped: escaped}
		}
	}
	return i, nil
}

// literal returns the offset after word at i, or -1.
func (s *jscan) literal(i int, word string) int {
	if len(s.v)-i < len(word) || string(s.v[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

func (s *jscan) object(i int, n *jnode, depth int) (int, *jerr) {
	i = s.ws(i + 1)
	if i < len(s.v) && s.v[i] == '}' {
		return i + 1, nil
	}
	var seen uint64 // a strict object's members so far
	for {
		if i >= len(s.v) {
			return i, s.fail(i, "unexpected end of JSON input")
		}
		if s.v[i] != '"' {
			return i, s.fail(i, "invalid character %s looking for the beginning of an object key", quoteByte(s.v[i]))
		}
		ks := i + 1
		j, escaped, err := s.str(i)
		if err != nil {
			return j, err
		}
		var child *jnode
		if n != nil && (len(n.names) > 0 || n.strict) {
			name := s.v[ks : j-1]
			name = unescaped(name, escaped, &s.name)
			k := n.index(name)
			switch {
			case k >= 0 && n.strict && seen&(1<<k) != 0:
				return i, &jerr{off: i, reason: fmt.Sprintf("repeated field %q", name), field: string(name)}
			case k >= 0:
				seen |= 1 << k
				child = n.next[k]
				s.clear(child) // a repeated name: the last one wins
			case n.strict:
				return i, &jerr{off: i, reason: "unknown field " + clip(string(name)), field: string(name)}
			}
		}
		i = s.ws(j)
		if i >= len(s.v) || s.v[i] != ':' {
			if i >= len(s.v) {
				return i, s.fail(i, "unexpected end of JSON input")
			}
			return i, s.fail(i, "invalid character %s after an object key", quoteByte(s.v[i]))
		}
		if i, err = s.value(i+1, child, depth); err != nil {
			return i, err
		}
		done := false
		if i, done, err = s.after(i, '}', "an object member"); err != nil || done {
			return i, err
		}
	}
}

// after reads past what follows a member or an element that ends at i: a
// ',' (and the space after it), or closer (done).
func (s *jscan) after(i int, closer byte, what string) (int, bool, *jerr) {
	i = s.ws(i)
	if i >= len(s.v) {
		return i, false, s.fail(i, "unexpected end of JSON input")
	}
	switch s.v[i] {
	case ',':
		return s.ws(i + 1), false, nil
	case closer:
		return i + 1, true, nil
	}
	return i, false, s.fail(i, "invalid character %s after %s", quoteByte(s.v[i]), what)
}

func (s *jscan) array(i int, n *jnode, depth int) (int, *jerr) {
	i = s.ws(i + 1)
	if i < len(s.v) && s.v[i] == ']' {
		return i + 1, nil
	}
	var idx [20]byte
	for k := 0; ; k++ {
		var child *jnode
		if n != nil && len(n.names) > 0 {
			child = n.child(strconv.AppendInt(idx[:0], int64(k), 10))
		}
		var err *jerr
		if i, err = s.value(i, child, depth); err != nil {
			return i, err
		}
		done := false
		if i, done, err = s.after(i, ']', "an array element"); err != nil || done {
			return i, err
		}
	}
}

// str scans the string whose '"' is at i; it returns the offset after the
// closing quote and whether it holds escapes.
func (s *jscan) str(i int) (int, bool, *jerr) {
	escaped := false
	for j := i + 1; j < len(s.v); {
		c := s.v[j]
		switch {
		case c == '"':
			return j + 1, escaped, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(s.v) {
				return j, escaped, s.fail(j, "unexpected end of JSON input")
			}
			switch s.v[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				u, ok := jsontext.Hex4(s.v, j+2)
				if !ok {
					return j, escaped, s.fail(j, "invalid \\u escape in a string")
				}
				switch {
				case u >= 0xd800 && u <= 0xdbff:
					lo, ok := jsontext.Hex4(s.v, j+8)
					if !ok || s.v[j+6] != '\\' || s.v[j+7] != 'u' || lo < 0xdc00 || lo > 0xdfff {
						return j, escaped, s.fail(j, "escaped lone surrogate \\u%04x in a string (not followed by a low surrogate)", u)
					}
					j += 12
				case u >= 0xdc00 && u <= 0xdfff:
					return j, escaped, s.fail(j, "escaped lone surrogate \\u%04x in a string (no high surrogate before it)", u)
				default:
					j += 6
				}
			default:
				return j, escaped, s.fail(j, "invalid escape %s in a string", quoteByte(s.v[j+1]))
			}
		case c < 0x20:
			return j, escaped, s.fail(j, "control character %s in a string", quoteByte(c))
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(s.v[j:])
			if r == utf8.RuneError && size == 1 {
				return j, escaped, s.fail(j, "invalid UTF-8 (byte 0x%02x)", c)
			}
			j += size
		default:
			j++
		}
	}
	return len(s.v), escaped, s.fail(len(s.v), "unexpected end of JSON input (an unterminated string)")
}

// unescaped is the JSON string text raw (between its quotes) with its
// escapes decoded: raw itself when it has none, else *scratch, which it
// fills.
func unescaped(raw []byte, escaped bool, scratch *[]byte) []byte {
	if !escaped {
		return raw
	}
	*scratch = unescape((*scratch)[:0], raw)
	return *scratch
}

// unescape appends the JSON string text src (between its quotes, its
// escapes checked by str) to dst with the escapes decoded.
func unescape(dst, src []byte) []byte {
	for j := 0; j < len(src); {
		c := src[j]
		if c != '\\' {
			dst = append(dst, c)
			j++
			continue
		}
		switch e := src[j+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			u, _ := jsontext.Hex4(src, j+2)
			if u >= 0xd800 && u <= 0xdbff {
				lo, _ := jsontext.Hex4(src, j+8)
				dst = utf8.AppendRune(dst, 0x10000+(u-0xd800)<<10+(lo-0xdc00))
				j += 12
				continue
			}
			dst = utf8.AppendRune(dst, u)
			j += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		j += 2
	}
	return dst
}

// number scans a JSON number at i.
func (s *jscan) number(i int) (int, *jerr) {
	start := i
	v := s.v
	if v[i] == '-' {
		i++
	}
	switch {
	case i < len(v) && v[i] == '0':
		i++
	case i < len(v) && v[i] >= '1' && v[i] <= '9':
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
	default:
		return i, s.fail(start, "invalid number")
	}
	if i < len(v) && v[i] == '.' {
		i++
		if i >= len(v) || v[i] < '0' || v[i] > '9' {
			return i, s.fail(start, "invalid number (no digit after '.')")
		}
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		if i >= len(v) || v[i] < '0' || v[i] > '9' {
			return i, s.fail(start, "invalid number (no digit in the exponent)")
		}
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
	}
	return i, nil
}

// quoteByte names a byte for an error reason.
func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}
