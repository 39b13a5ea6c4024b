package decode

import (
	"encoding/binary"
	"strings"
	"testing"
)

// ventry is a binary vertex record entry.
func ventry(src uint64, label, props string) []byte {
	b := entry(3, 0, src, 0)
	b = append(b, byte(len(label)))
	b = append(b, label...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(props)))
	return append(b, props...)
}

func vrec(src uint64, label, props string) Edge {
	e := Edge{Op: OpPutVertex, Src: src}
	if label != "" {
		e.Label = []byte(label)
	}
	if props != "" {
		e.Props = []byte(props)
	}
	return e
}

// TestVertexRecordsInEveryFormat: the same records decode alike from the
// binary, JSON, text and mapped formats, in order among edges, and each
// format's Append writes them back.
func TestVertexRecordsInEveryFormat(t *testing.T) {
	props := `{"owner":"ann","tags":["a","b"],"n":1.5}`
	want := []Edge{
		vrec(7, "account", props),
		{Op: OpUpsert, Src: 7, Dst: 8},
		vrec(8, "", ""),
		{Op: OpDeleteVertex, Src: 7},
		vrec(9, "ünïcödé", `{}`),
	}
	bin := cat(ventry(7, "account", props), entry(0, 0, 7, 8), ventry(8, "", ""), entry(2, 0, 7, 0), ventry(9, "ünïcödé", `{}`))
	js := `[{"op":"add_vertex","src":7,"label":"account","props":` + props + `},{"src":7,"dst":8},` +
		`{"op":"put_vertex","src":8,"label":null,"props":null},{"op":"delete_vertex","src":7},` +
		`{"op":"add_vertex","src":9,"label":"\u00fcn\u00efc\u00f6d\u00e9","props":{}}]`
	for _, c := range []struct {
		f Format
		v []byte
	}{{FormatBinary, bin}, {FormatJSON, []byte(js)}} {
		got, err := decodeAll(New(c.f, nil), c.v)
		if err != nil {
			t.Fatalf("%v: %v", c.f, err)
		}
		checkEdges(t, got, want)
	}
	// Text: labels, no props.
	got, err := decodeAll(New(FormatText, nil), []byte("v 7 account\n7 8\nv 8\ndv 7\nv 9 ünïcödé\n"))
	if err != nil {
		t.Fatal(err)
	}
	textWant := append([]Edge(nil), want...)
	textWant[0].Props, textWant[4].Props = nil, nil
	checkEdges(t, got, textWant)
	// Mapped: op, label and props from the value, and a label from a
	// header.
	m, err := NewMapped(Mapping{Src: "/id", Dst: "/to", Op: "/kind", Label: "/label", Props: PropsMapping{Source: "/attrs"},
		OpValues: map[string]string{"user": "add_vertex", "follow": "add", "gone": "delete_vertex"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = decodeRecord(m, &Record{Value: []byte(`[{"kind":"user","id":7,"label":"account","attrs":` + props + `},{"kind":"follow","id":7,"to":8},` +
		`{"kind":"user","id":8},{"kind":"gone","id":7},{"kind":"user","id":9,"label":"ünïcödé","attrs":{}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, want)
	m, err = NewMapped(Mapping{Src: "/id", Dst: "/to", Op: "const:add_vertex", Label: "header:kind"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = decodeRecord(m, &Record{Value: []byte(`{"id":3}`), Headers: []Header{{Key: "kind", Value: []byte("merchant")}}})
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, []Edge{vrec(3, "merchant", "")})
	// Written back, each decodes to itself.
	var reBin, reJSON []byte
	for i, e := range want {
		reBin = AppendBinary(reBin, e)
		if i > 0 {
			reJSON = append(reJSON, ',')
		}
		reJSON = AppendJSON(reJSON, e, "", "")
	}
	for _, c := range []struct {
		f Format
		v []byte
	}{{FormatBinary, reBin}, {FormatJSON, append(append([]byte{'['}, reJSON...), ']')}} {
		got, err := decodeAll(New(c.f, nil), c.v)
		if err != nil {
			t.Fatalf("%v written back: %v", c.f, err)
		}
		checkEdges(t, got, want)
	}
	if s := string(AppendText(nil, want[0])); s != "v 7 account\n" {
		t.Fatalf("AppendText = %q", s)
	}
}

// TestVertexRecordErrors: what each format refuses of a vertex record,
// with the offset and the reason; nothing of such a value is emitted.
func TestVertexRecordErrors(t *testing.T) {
	long := strings.Repeat("x", MaxVertexLabel+1)
	bigProps := `{"a":"` + strings.Repeat("y", MaxVertexProps) + `"}`
	for _, c := range []struct {
		name   string
		f      Format
		v      []byte
		off    int
		reason string
	}{
		{"json dst", FormatJSON, []byte(`{"op":"add_vertex","src":1,"dst":2}`), 33, "dst not allowed for put_vertex"},
		{"json weight", FormatJSON, []byte(`{"op":"add_vertex","src":1,"weight":2}`), 36, "weight not allowed for put_vertex"},
		{"json ts", FormatJSON, []byte(`{"op":"add_vertex","src":1,"ts":5}`), 32, "ts not allowed for add_vertex"},
		{"json type", FormatJSON, []byte(`{"op":"add_vertex","src":1,"type":3}`), 34, "type not allowed for add_vertex"},
		{"json label on an edge", FormatJSON, []byte(`{"src":1,"dst":2,"label":"x"}`), 25, "label not allowed for upsert"},
		{"json props on a delete", FormatJSON, []byte(`{"op":"delete_vertex","src":1,"props":{}}`), 38, "props not allowed for delete_vertex"},
		{"json label not a string", FormatJSON, []byte(`{"op":"add_vertex","src":1,"label":3}`), 35, "label must be a string"},
		{"json props not an object", FormatJSON, []byte(`{"op":"add_vertex","src":1,"props":[1]}`), 35, "props must be a JSON object"},
		{"json long label", FormatJSON, []byte(`{"op":"add_vertex","src":1,"label":"` + long + `"}`), 35, "at most 255 bytes"},
		{"json big props", FormatJSON, []byte(`{"op":"add_vertex","src":1,"props":` + bigProps + `}`), 35, "at most 4096 bytes"},
		{"json missing src", FormatJSON, []byte(`{"op":"add_vertex","label":"a"}`), 0, "missing src"},
		{"binary flags", FormatBinary, func() []byte { b := ventry(1, "a", ""); b[1] = 1; return b }(), 1, "flags must be 0"},
		{"binary dst", FormatBinary, func() []byte { b := ventry(1, "a", ""); b[10] = 1; return b }(), 10, "dst must be 0"},
		{"binary truncated label", FormatBinary, ventry(1, "abc", "")[:20], 0, "truncated vertex record"},
		{"binary truncated props", FormatBinary, ventry(1, "a", "{}")[:22], 0, "truncated vertex record"},
		{"binary props not an object", FormatBinary, ventry(1, "a", "[1]"), 22, "must be a JSON object"},
		{"binary props not JSON", FormatBinary, ventry(1, "a", `{"a":}`), 22, "invalid JSON"},
		{"binary label not UTF-8", FormatBinary, ventry(1, "\xff", ""), 18, "UTF-8"},
		{"binary big props", FormatBinary, ventry(1, "", bigProps), 21, "at most 4096 bytes"},
		{"binary props with a lone surrogate", FormatBinary, ventry(1, "a", `{"a":"\ud800"}`), 22, `escaped lone surrogate \ud800 in a string (not followed by a low surrogate) at byte 6 of them`},
		{"binary props nested too deep", FormatBinary, ventry(1, "a", `{"a":`+strings.Repeat("[", 64)+strings.Repeat("]", 64)+`}`), 22, "JSON nested deeper than 64 at byte 68 of them"},
		{"text too many fields", FormatText, []byte("1 2\nv 1 a b\n"), 4, "vertex line needs 1 or 2 fields"},
		{"text long label", FormatText, []byte("v 1 " + long + "\n"), 0, "at most 255 bytes"},
		{"text label not UTF-8", FormatText, []byte("v 1 \xff\n"), 0, "UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeAll(New(c.f, nil), c.v)
			checkDecodeError(t, c.f, got, err, c.off, c.reason)
		})
	}
	// Mapped: props from a header (a string) and a label that is a number.
	for _, c := range []struct {
		m      Mapping
		r      Record
		reason string
	}{
		{Mapping{Src: "/id", Dst: "/to", Op: "const:add_vertex", Props: PropsMapping{Source: "header:p"}}, Record{Value: []byte(`{"id":1}`), Headers: []Header{{Key: "p", Value: []byte("{}")}}}, `props (header "p") is a string: want a JSON object`},
		{Mapping{Src: "/id", Dst: "/to", Op: "const:add_vertex", Label: "/l"}, Record{Value: []byte(`{"id":1,"l":5}`)}, "label (/l) is a number: want a string"},
		{Mapping{Src: "/id", Dst: "/to", Op: "const:add_vertex", Label: "/l"}, Record{Value: []byte(`{"id":1,"l":"` + long + `"}`)}, "label (/l) a vertex label has at most 255 bytes"},
	} {
		m, err := NewMapped(c.m, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(m, &c.r)
		if len(got) != 0 || err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%+v: %v (%d emitted), want an error saying %q", c.m, err, len(got), c.reason)
		}
	}
}
