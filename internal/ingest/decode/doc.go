// Package decode turns Kafka record values into graphtide edge operations.
//
// A topic declares one Format; New returns a Decoder for it. Decode parses one
// record value, which may hold several edges, and hands each to a callback.
//
// What it promises:
//
//   - All or nothing: Decode decodes and checks every edge of the value
//     first (into a small scratch slice; the binary decoder instead checks
//     the value in one pass and decodes it in a second), and calls emit only
//     if the whole value is valid. A bad value emits nothing, so it can be
//     dead-lettered whole without half of it having reached the store.
//   - Every emitted Edge obeys the rules below, whatever the format:
//     Op is OpUpsert, OpDeleteEdge, OpDeleteVertex or OpPutVertex; Src and Dst are at most
//     MaxVertex (1<<63-1); when a KeyResolver is in use, numeric ids are below
//     keydict.KeyBase (1<<62), the range above being reserved for ids of
//     string keys; Dst is 0 for OpDeleteVertex and OpPutVertex; only
//     OpPutVertex has a Label (at most MaxVertexLabel bytes of UTF-8) and
//     Props (empty, or a JSON object of at most MaxVertexProps bytes),
//     and it has no event time; an OpUpsert of a JSON format may have an
//     EventRef (at most MaxEventRef bytes of UTF-8) and Props (a JSON
//     object of at most MaxEdgeProps bytes); only OpUpsert carries a
//     weight, and a weight is finite (no NaN or Inf), and Weight is 0 when
//     HasWeight is false; Type is below MaxEdgeTypes, and 0 for
//     OpDeleteVertex and OpPutVertex (the text format has no types); EventTime is either the zero Time or a UTC time with
//     microsecond precision between 1970-01-01T00:00:00Z and
//     9999-12-31T23:59:59.999999Z; a value holds at least one edge.
//   - A value that breaks a rule or the format's syntax yields an *Error with
//     the byte offset in the value and a reason meant for a dead-letter
//     header. Any other error comes from the KeyResolver (for example the key
//     dictionary failed to persist): the record is not at fault and must not be
//     dead-lettered; stop or retry instead.
//   - String keys are resolved only after the whole value has been parsed and
//     checked, in order of appearance (src before dst), so a value rejected by
//     a syntax or rule check never assigns dictionary ids. Keys are 1 to
//     keydict.MaxKeyLen bytes of valid UTF-8. Without a KeyResolver a string
//     key is an error. Type names likewise: resolved (by the TypeResolver of
//     WithTypes) only once the value is valid, before its keys; a name is
//     checked by typedict.NameReason; without a TypeResolver a type name is
//     an error.
//   - No path allocates, per edge or per value, once its scratch space has
//     grown (with string keys: when the resolver implements IDBytes as
//     *keydict.Dict does and the keys are known). Both JSON paths, the
//     format's and the mapped one, run on one scanner of their own
//     (jscan.go), which checks the whole value and picks the fields they
//     read.
//   - A Decoder keeps scratch space: it is not safe for concurrent use (make
//     one per goroutine), and emit must not call Decode on the same Decoder.
//     emit receives Edge values; nothing refers to the value after Decode
//     returns.
//
// # Binary format (FormatBinary)
//
// A value is one or more entries back to back, with no header. Each entry is
//
//	byte  0       op: 0 upsert, 1 delete edge, 2 delete vertex, 3 vertex
//	              record (others are errors)
//	byte  1       flags: bit 0 weight present, bit 1 event time present,
//	              bit 2 edge type present, bits 3-7 must be 0
//	bytes 2..9    src, uint64 little-endian
//	bytes 10..17  dst, uint64 little-endian; must be 0 for a vertex delete
//	then 8 bytes  weight, IEEE-754 float64 little-endian, if flags bit 0
//	              (only for op 0)
//	then 8 bytes  event time, int64 little-endian Unix microseconds, if flags
//	              bit 1
//	then 2 bytes  edge type, uint16 little-endian below MaxEdgeTypes, if
//	              flags bit 2 (not for op 2); absent: type 0
//
// so an edge entry is 18 to 36 bytes long. A vertex record (op 3) has flags
// 0 and dst 0, then
//
//	1 byte        label length n (at most MaxVertexLabel)
//	n bytes       the label, UTF-8
//	2 bytes       props length m, uint16 little-endian (at most MaxVertexProps)
//	m bytes       the props: a JSON object starting with '{' (m = 0: none)
//
// so it is 21 to 4,372 bytes long. An empty value, or one that ends
// inside an entry, is an error. AppendBinary writes an entry; decoding a valid
// value and appending its edges with AppendBinary reproduces the value byte
// for byte, but for an entry that gives type 0 explicitly (flags bit 2 with
// a type of 0), which AppendBinary writes without the type.
//
// # JSON format (FormatJSON)
//
// A value is one JSON object, or a non-empty JSON array of objects:
//
//	{"op":"add","src":1,"dst":2,"weight":0.5,"ts":"2024-05-01T12:00:00Z"}
//	[{"src":"alice","dst":"bob"},{"op":"delete_vertex","src":"carol"}]
//	{"op":"add_vertex","src":"alice","label":"account","props":{"country":"NZ"}}
//
// Fields:
//
//	op      "add" or "upsert" (the default), "delete" (an edge),
//	        "delete_vertex", or "add_vertex" (also "put_vertex": sets the
//	        vertex's record, replacing the one it had)
//	src     a vertex id written as plain digits (a JSON integer with no sign,
//	        fraction or exponent: 1.5, -1 and 1e3 are rejected), or a JSON
//	        string, which is always a key, even "123"
//	dst     the same; required except for "delete_vertex" and "add_vertex",
//	        where it must be absent
//	weight  a JSON number; optional; only for "add"/"upsert"; null = absent
//	ts      event time: an RFC 3339 string (fractions of a second below a
//	        microsecond are truncated) or Unix milliseconds as plain digits;
//	        optional; null = absent
//	type    the edge type: a name ("payment", resolved by the type
//	        dictionary, see WithTypes; "default" is type 0) or its number
//	        (an integer, or a string of digits, below MaxEdgeTypes);
//	        optional; null = absent = type 0; not for "delete_vertex" or
//	        "add_vertex"
//	label   "add_vertex" only: a string of at most MaxVertexLabel bytes;
//	        optional; null = absent
//	props   "add_vertex": a JSON object, the vertex's property
//	        document, at most MaxVertexProps bytes as written; "add"/
//	        "upsert": the edge's properties, at most MaxEdgeProps bytes;
//	        optional; null = absent
//	ref     "add"/"upsert" only: a string, the event's reference, at most
//	        MaxEventRef bytes of UTF-8; optional; null = absent
//
// An "add_vertex" takes no weight, ts or type.
//
// Unknown or repeated fields and trailing data after the value are errors.
// The offset of an error is that of the offending token (for some syntax
// errors, a byte inside it; for a missing field, the object's '{').
// AppendJSON writes an object.
//
// # Text format (FormatText)
//
// As in SNAP edge lists: one edge per line, lines ended by "\n" (a "\r"
// before it is ignored, the last line may lack it). Fields are separated by
// runs of spaces or tabs. Blank lines and lines whose first field starts with
// '#' or '%' are ignored. A line is one of
//
//	src dst [weight]    upsert, with an optional weight: a decimal number
//	                    such as 2, -0.5 or 1e-3 (no hex, inf or nan)
//	d src dst           delete the edge
//	dv src              delete the vertex
//	v src [label]       set the vertex's record: a label of one field
//	                    (no spaces), or none; no props (use JSON)
//
// Vertex ids are unsigned decimal integers. With a KeyResolver, a field that
// is not all ASCII digits is a key; so "d", "dv" and "v" cannot be the src key of
// an upsert line, nor can a src key start with '#' or '%' (use JSON for such
// keys). The text format has no event time.
// The offset of an error is that of the start of the bad line. AppendText
// writes a line.
package decode
