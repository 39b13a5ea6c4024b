package decode

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/jsontext"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
)

// Op is the kind of an edge operation.
type Op uint8

const (
	// OpUpsert inserts the edge (src, dst) or updates its weight.
	OpUpsert Op = 0
	// OpDeleteEdge removes the edge (src, dst).
	OpDeleteEdge Op = 1
	// OpDeleteVertex removes vertex src, its edges and its record; Dst is 0.
	OpDeleteVertex Op = 2
	// OpPutVertex sets the record of vertex src: Label and Props; Dst is 0.
	OpPutVertex Op = 3
)

// String returns "upsert", "delete_edge", "delete_vertex" or
// "put_vertex".
func (o Op) String() string {
	switch o {
	case OpUpsert:
		return "upsert"
	case OpDeleteEdge:
		return "delete_edge"
	case OpDeleteVertex:
		return "delete_vertex"
	case OpPutVertex:
		return "put_vertex"
	default:
		return fmt.Sprintf("Op(%d)", uint8(o))
	}
}

// MaxVertex is the largest vertex id, numeric or key.
const MaxVertex = keydict.MaxVertex

// Edge is one decoded edge operation. See the package documentation for the
// rules every emitted Edge obeys.
type Edge struct {
	Op        Op
	Src, Dst  uint64
	Weight    float64 // 0 unless HasWeight
	HasWeight bool
	EventTime time.Time // zero if absent; otherwise UTC, microsecond precision
	// Type is the edge's type, below MaxEdgeTypes; 0 (the default type)
	// when the record names none, and always for OpDeleteVertex and
	// OpPutVertex.
	Type uint16
	// Label and Props are an OpPutVertex's record (empty otherwise): a
	// label of at most MaxVertexLabel bytes of UTF-8, and a property
	// document, a JSON object of at most MaxVertexProps bytes (empty:
	// none). An OpUpsert of the mapped format may have Props too, its
	// edge properties (a JSON object of at most MaxEdgeProps bytes), and
	// an EventRef (at most MaxEventRef bytes of UTF-8; empty: none). All
	// are valid only during the emit call (views of the value or of
	// scratch space): copy what is kept.
	Label, Props []byte
	EventRef     []byte
}

// The limits of a vertex record (engine.MaxVertexLabel and
// engine.MaxVertexProps; a test holds them equal).
const (
	MaxVertexLabel = 255
	MaxVertexProps = 4 << 10
)

// labelReason says why a vertex record's label is refused, or "".
func labelReason(label []byte) string {
	switch {
	case len(label) > MaxVertexLabel:
		return fmt.Sprintf("a vertex label has at most %d bytes, got %d", MaxVertexLabel, len(label))
	case !utf8.Valid(label):
		return "a vertex label must be UTF-8"
	}
	return ""
}

// propsReason says why a vertex record's property document is refused,
// or "": its size, that it is an object, and jsontext's rules (which the
// engine applies too: a document a format let through that the engine
// refuses would fail its whole batch). Its JSON syntax is the format's to
// check: the JSON paths scan it, the binary format calls json.Valid.
func propsReason(props []byte) string {
	switch {
	case len(props) > MaxVertexProps:
		return fmt.Sprintf("a vertex's props have at most %d bytes, got %d", MaxVertexProps, len(props))
	case len(props) > 0 && props[0] != '{':
		return "a vertex's props must be a JSON object"
	}
	if off, why := jsontext.Check(props); why != "" {
		return fmt.Sprintf("a vertex's props: %s at byte %d of them", why, off)
	}
	return ""
}

// MaxEdgeTypes is the number of edge types (engine.MaxEdgeTypes).
const MaxEdgeTypes = typedict.MaxTypes

// TypeResolver maps edge type names to type numbers; *typedict.Dict
// implements it. ID must not keep name past the call (it may be a view of
// the record's bytes): it copies a name it keeps. An error that is a
// *typedict.NameError is the record's fault (dead-lettered); any other is
// returned as is, as a KeyResolver's.
type TypeResolver interface {
	ID(name string) (uint16, error)
}

// WithTypes is keys with a type dictionary: pass it to New or NewMapped
// where records name edge types (keys may be nil: no key dictionary).
func WithTypes(keys KeyResolver, types TypeResolver) KeyResolver {
	return &withTypes{keys: keys, types: types}
}

// withTypes is WithTypes' resolver pair; newRules takes it apart. Its ID
// is never called.
type withTypes struct {
	keys  KeyResolver
	types TypeResolver
}

func (w *withTypes) ID(key string) (uint64, error) { return w.keys.ID(key) }

// KeyResolver maps string vertex keys to vertex ids; *keydict.Dict implements
// it. ID must return an id in [keydict.KeyBase, MaxVertex]. An error from ID
// is returned by Decode as is (wrapped), not as an *Error.
type KeyResolver interface {
	ID(key string) (uint64, error)
}

// bytesResolver is an optional KeyResolver method that resolves a key held in
// bytes without converting it to a string; *keydict.Dict implements it. The
// text decoder uses it so that known keys cost no allocation.
type bytesResolver interface {
	IDBytes(key []byte) (uint64, error)
}

// numResolver is an optional KeyResolver method set that maps large
// numeric ids to dense ids (*keydict.Dict implements it; see
// keydict.NumID). A decoder uses it when MapsNumbers is true at New.
type numResolver interface {
	MapsNumbers() bool
	NumID(n uint64) (uint64, error)
}

// Decoder decodes record values of one Format. It is not safe for concurrent
// use.
type Decoder interface {
	// Decode parses value and, only if the whole value is valid, calls emit
	// once per edge, in order. Errors about the value are *Error.
	Decode(value []byte, emit func(Edge)) error
	// Format returns the format that the Decoder reads.
	Format() Format
}

// Format is a record value format.
type Format int

const (
	// FormatBinary is the compact binary layout (see the package doc).
	FormatBinary Format = iota + 1
	// FormatJSON is one JSON object or an array of objects per value.
	FormatJSON
	// FormatText is SNAP-style edge list lines.
	FormatText
)

// ParseFormat parses a format name: "binary" or "bin", "json", "text" or
// "el".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "binary", "bin":
		return FormatBinary, nil
	case "json":
		return FormatJSON, nil
	case "text", "el":
		return FormatText, nil
	}
	return 0, fmt.Errorf("unknown record format %q: want binary, json or text", s)
}

// String returns "binary", "json" or "text".
func (f Format) String() string {
	switch f {
	case FormatBinary:
		return "binary"
	case FormatJSON:
		return "json"
	case FormatText:
		return "text"
	default:
		return fmt.Sprintf("Format(%d)", int(f))
	}
}

// Error reports a record value that cannot be decoded: the record is at
// fault and belongs in the dead-letter topic, with Reason in a header.
type Error struct {
	Format Format
	Offset int    // byte offset in the value
	Reason string // what is wrong, without the format and offset
}

func (e *Error) Error() string {
	return fmt.Sprintf("decode %s: byte offset %d: %s", e.Format, e.Offset, e.Reason)
}

// New returns a Decoder for format f. keys resolves string keys; if it is
// nil, string keys are an error and numeric ids may use the whole range up to
// MaxVertex. New panics if f is not a known Format (use ParseFormat to check
// user input).
func New(f Format, keys KeyResolver) Decoder {
	r := newRules(f, keys)
	switch f {
	case FormatBinary:
		return &binaryDecoder{rules: r}
	case FormatJSON:
		return newJSONDecoder(r)
	case FormatText:
		return &textDecoder{rules: r}
	}
	panic(fmt.Sprintf("decode: unknown format %v", f))
}

// newRules returns the rules of a decoder of format f with keys (see New).
func newRules(f Format, keys KeyResolver) rules {
	var types TypeResolver
	if w, ok := keys.(*withTypes); ok {
		keys, types = w.keys, w.types
	}
	r := rules{format: f, keys: keys, types: types, maxNumeric: MaxVertex}
	if keys != nil {
		r.maxNumeric = keydict.KeyBase - 1
		r.keysBytes, _ = keys.(bytesResolver)
		if n, ok := keys.(numResolver); ok && n.MapsNumbers() {
			r.nums = n
		}
	}
	return r
}

// Limits on event times: [1970-01-01T00:00:00Z, 9999-12-31T23:59:59.999999Z],
// so that every format can carry them and the zero Time means "absent".
const (
	minEventMicros int64 = 0
	maxEventMicros int64 = 253402300799999999
	maxEventMillis int64 = maxEventMicros / 1000
)

// maxRetainedEdges bounds the scratch space a Decoder keeps between values.
const maxRetainedEdges = 1 << 16

// rules holds the validation settings shared by all decoders.
type rules struct {
	format     Format
	keys       KeyResolver   // nil: string keys are an error
	types      TypeResolver  // nil: type names are an error (type numbers are not)
	keysBytes  bytesResolver // keys, if it implements IDBytes
	maxNumeric uint64        // largest numeric vertex id accepted
	nums       numResolver   // maps numeric ids from keydict.MapFrom up; nil: kept as they are
}

// mapped reports whether the numeric id id is one the decoder maps.
func (r *rules) mapped(id uint64) bool {
	return r.nums != nil && keydict.Mappable(id)
}

// mapIDs replaces src and, but for a vertex delete, dst by their mapped
// ids where they are numbers the decoder maps. Called only once the whole
// value is valid, so a bad record takes no ids; an error (the dictionary
// failed or is full) is not an *Error.
func (r *rules) mapIDs(op Op, src, dst *uint64) error {
	for i, p := range [2]*uint64{src, dst} {
		if i == 1 && (op == OpDeleteVertex || op == OpPutVertex) || !r.mapped(*p) {
			continue
		}
		id, err := r.nums.NumID(*p)
		if err != nil {
			return fmt.Errorf("decode %s: map vertex id %d: %w", r.format, *p, err)
		}
		*p = id
	}
	return nil
}

func (r *rules) errorf(off int, format string, args ...any) *Error {
	return &Error{Format: r.format, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// idReason returns why the numeric vertex id is rejected, or "".
func (r *rules) idReason(id uint64) string {
	if id <= r.maxNumeric {
		return ""
	}
	if r.keys != nil && id <= MaxVertex {
		return fmt.Sprintf("vertex id %d out of range (numeric ids must be below %d when string keys are in use)", id, keydict.KeyBase)
	}
	return fmt.Sprintf("vertex id %d out of range (max %d)", id, MaxVertex)
}

// weightReason returns why the weight is rejected, or "".
func weightReason(w float64) string {
	if math.IsNaN(w) || math.IsInf(w, 0) {
		return fmt.Sprintf("weight %v is not finite", w)
	}
	return ""
}

// eventTime converts Unix microseconds to an event time, checking the range.
func eventTime(us int64) (time.Time, bool) {
	if us < minEventMicros || us > maxEventMicros {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}

// keyReason returns why key cannot be a dictionary key, or "". It agrees
// with keydict.CheckKey.
func keyReason(key string) string {
	switch {
	case len(key) == 0:
		return "empty key"
	case len(key) > keydict.MaxKeyLen:
		return fmt.Sprintf("key %s of %d bytes is longer than %d", clip(key), len(key), keydict.MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Sprintf("key %s is not valid utf-8", clip(key))
	case key[0] == 0:
		return fmt.Sprintf("key %s starts with a NUL byte, which the key dictionary keeps for the numbers it maps", clip(key))
	}
	return ""
}

// keyReasonBytes is keyReason for a key held in bytes.
func keyReasonBytes(key []byte) string {
	if len(key) == 0 || len(key) > keydict.MaxKeyLen || !utf8.Valid(key) || key[0] == 0 {
		return keyReason(string(key))
	}
	return ""
}

// resolveKey returns the id of the string key whose JSON text is raw (its
// escapes decoded into *scratch when it has any) at byte offset off of
// the value: the JSON paths' one resolution.
func (r *rules) resolveKey(raw []byte, escaped bool, off int, scratch *[]byte) (uint64, error) {
	k := unescaped(raw, escaped, scratch)
	var id uint64
	var err error
	if r.keysBytes != nil {
		id, err = r.keysBytes.IDBytes(k)
	} else {
		id, err = r.keys.ID(string(k))
	}
	if err != nil {
		return 0, fmt.Errorf("decode %s: resolve key %s at byte offset %d: %w", r.format, clip(string(k)), off, err)
	}
	if id > MaxVertex {
		return 0, r.badResolvedID(string(k), id, off)
	}
	return id, nil
}

// badResolvedID is the error for a KeyResolver that gave key an id above
// MaxVertex: a fault of the resolver, not of the record.
func (r *rules) badResolvedID(key string, id uint64, off int) error {
	return fmt.Errorf("decode %s: key resolver gave key %s at byte offset %d the id %d, above the maximum %d", r.format, clip(key), off, id, MaxVertex)
}

// short shortens s, a number token that needs no quoting, for an error
// reason.
func short(s string) string {
	const most = 64
	if len(s) > most {
		return s[:most] + "..."
	}
	return s
}

// clip quotes s for an error reason, shortened to a readable length.
func clip(s string) string {
	const most = 64
	if len(s) > most {
		return fmt.Sprintf("%q...", s[:most])
	}
	return fmt.Sprintf("%q", s)
}

// typeRef is the edge type of a parsed operation (either JSON path): a
// number, or a name (its raw text in the record, escapes and all)
// resolved once the whole value is valid (rules.resolveType).
type typeRef struct {
	id      uint16
	name    []byte // nil: a number
	escaped bool
	off     int
}

// typeOf checks a type value of kind k whose text is raw (a string's,
// between the quotes, decoded into *scratch when escaped): a string names
// a type, an integer below MaxEdgeTypes is one, missing or null is type 0.
// It returns why the value is no type, or "".
func (r *rules) typeOf(k jkind, raw []byte, escaped bool, off int, scratch *[]byte) (typeRef, string) {
	t := typeRef{off: off}
	switch k {
	case jMissing, jNull:
	case jNumber:
		var why string
		t.id, why = typeNumber(bytesString(raw))
		return t, why
	case jString:
		name := bytesString(unescaped(raw, escaped, scratch))
		id, named, why := typeText(name)
		if why != "" || !named {
			t.id = id
			return t, why
		}
		if r.types == nil {
			return t, fmt.Sprintf("is the type name %s, but no type dictionary is configured", clip(name))
		}
		t.name, t.escaped = raw, escaped
	default:
		return t, fmt.Sprintf("is %s: want a type name or number", k)
	}
	return t, ""
}

// typeNumber reads s as a type number; why says what is wrong, or "".
func typeNumber(s string) (id uint16, why string) {
	n, ok := parseDigits(s)
	if !ok || n >= uint64(MaxEdgeTypes) {
		return 0, fmt.Sprintf("is the number %s: a type number is an integer from 0 to %d", short(s), MaxEdgeTypes-1)
	}
	return uint16(n), ""
}

// typeText reads a type given as text: digits are its number,
// typedict.Default is type 0, anything else a name (named) that
// typedict.NameReason must accept. why says what is wrong, or "".
func typeText(s string) (id uint16, named bool, why string) {
	switch {
	case isDigits(s):
		id, why = typeNumber(s)
		return id, false, why
	case s == typedict.Default:
		return 0, false, ""
	}
	return 0, true, typedict.NameReason(s)
}

// resolveType replaces the name of t, if any, by its number. A name the
// dictionary refuses (it is full) is an *Error; any other failure is the
// dictionary's.
func (r *rules) resolveType(t *typeRef, scratch *[]byte) error {
	if t.name == nil {
		return nil
	}
	// A view of the record's bytes: the dictionary copies a name it keeps.
	name := bytesString(unescaped(t.name, t.escaped, scratch))
	id, err := r.types.ID(name)
	if err != nil {
		var bad *typedict.NameError
		if errors.As(err, &bad) {
			return r.errorf(t.off, "type %s: %s", clip(name), bad.Reason)
		}
		return fmt.Errorf("decode %s: resolve type %s at byte offset %d: %w", r.format, clip(name), t.off, err)
	}
	if int(id) >= MaxEdgeTypes {
		return fmt.Errorf("decode %s: type resolver gave type %s the number %d, above the maximum %d", r.format, clip(name), id, MaxEdgeTypes-1)
	}
	t.id, t.name = id, nil
	return nil
}
