package decode

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/typedict"
)

// typesFor is a real type dictionary in a temporary directory.
func typesFor(t *testing.T) *typedict.Dict {
	t.Helper()
	d, err := typedict.Open(filepath.Join(t.TempDir(), "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEdgeTypesInEveryFormat(t *testing.T) {
	types := typesFor(t)
	keys := newFakeKeys()
	res := WithTypes(keys, types)
	// Native JSON: a name, a number, a string of digits, "default", none.
	got, err := decodeAll(New(FormatJSON, res), []byte(`[{"src":"a","dst":"b","type":"payment"},{"src":"a","dst":"b","type":"login"},
		{"src":"a","dst":"b","type":"payment"},{"src":1,"dst":2,"type":7},{"src":1,"dst":2,"type":"9"},
		{"src":1,"dst":2,"type":"default"},{"src":1,"dst":2},{"op":"delete","src":1,"dst":2,"type":"login"},{"src":1,"dst":2,"type":null}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []uint16{1, 2, 1, 7, 9, 0, 0, 2, 0}
	if len(got) != len(want) {
		t.Fatalf("%d edges, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Type != want[i] {
			t.Errorf("edge %d: type %d, want %d", i, e.Type, want[i])
		}
	}
	if types.Name(1) != "payment" || types.Name(2) != "login" {
		t.Errorf("names %v", types.Names())
	}
	// The mapped format: a pointer, a constant, a header.
	for _, c := range []struct {
		m    Mapping
		r    Record
		want uint16
	}{
		{Mapping{Src: "/s", Dst: "/d", Type: "/kind"}, Record{Value: []byte(`{"s":"a","d":"b","kind":"login"}`)}, 2},
		{Mapping{Src: "/s", Dst: "/d", Type: "const:shares-device"}, Record{Value: []byte(`{"s":"a","d":"b"}`)}, 3},
		{Mapping{Src: "/s", Dst: "/d", Type: "header:t"}, Record{Value: []byte(`{"s":"a","d":"b"}`), Headers: []Header{{"t", []byte("payment")}}}, 1},
		{Mapping{Src: "/s", Dst: "/d", Type: "/kind"}, Record{Value: []byte(`{"s":"a","d":"b","kind":5}`)}, 5},
		{Mapping{Src: "/s", Dst: "/d", Type: "/kind"}, Record{Value: []byte(`{"s":"a","d":"b"}`)}, 0},
		{Mapping{Src: "key:0", Dst: "key:1", KeySeparator: "|", Type: "const:login", Tombstone: "delete"}, Record{Key: []byte("a|b")}, 2},
	} {
		got, err := decodeRecord(mustMapped(t, c.m, res), &c.r)
		if err != nil || len(got) != 1 || got[0].Type != c.want {
			t.Errorf("%+v on %q: %+v, %v; want type %d", c.m, c.r.Value, got, err, c.want)
		}
	}
	// Binary: round trip, and a type on a vertex delete is refused.
	var v []byte
	for _, e := range []Edge{{Op: OpUpsert, Src: 1, Dst: 2, Type: 3}, {Op: OpDeleteEdge, Src: 1, Dst: 2, Type: 1023}, {Op: OpUpsert, Src: 4, Dst: 5, HasWeight: true, Weight: 2, Type: 9}} {
		v = AppendBinary(v, e)
	}
	got, err = decodeAll(New(FormatBinary, nil), v)
	if err != nil || len(got) != 3 || got[0].Type != 3 || got[1].Type != 1023 || got[2].Type != 9 || got[2].Weight != 2 {
		t.Errorf("binary: %+v, %v", got, err)
	}
	bad := AppendBinary(nil, Edge{Op: OpUpsert, Src: 1, Dst: 2, Type: 1024})
	if _, err := decodeAll(New(FormatBinary, nil), bad); err == nil || !strings.Contains(err.Error(), "edge type 1024 out of range") {
		t.Errorf("type 1024: %v", err)
	}
	vdel := []byte{2, flagType, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0}
	if _, err := decodeAll(New(FormatBinary, nil), vdel); err == nil || !strings.Contains(err.Error(), "not allowed for delete_vertex") {
		t.Errorf("vertex delete with a type: %v", err)
	}
}

func TestBadEdgeTypesAreRecordFaults(t *testing.T) {
	types := typesFor(t)
	res := WithTypes(newFakeKeys(), types)
	for _, c := range []struct{ value, why string }{
		{`{"src":1,"dst":2,"type":1024}`, "a type number is an integer from 0 to 1023"},
		{`{"src":1,"dst":2,"type":-1}`, "a type number is an integer from 0 to 1023"},
		{`{"src":1,"dst":2,"type":""}`, "must not be empty"},
		{`{"src":1,"dst":2,"type":"a,b"}`, "has a comma"},
		{`{"src":1,"dst":2,"type":"` + strings.Repeat("x", 65) + `"}`, "at most 64 bytes"},
		{`{"src":1,"dst":2,"type":true}`, "want a type name or number"},
		{`{"op":"delete_vertex","src":1,"type":"login"}`, "not allowed for delete_vertex"},
	} {
		_, err := decodeAll(New(FormatJSON, res), []byte(c.value))
		var de *Error
		if !errors.As(err, &de) || !strings.Contains(de.Reason, c.why) {
			t.Errorf("%s: %v, want an *Error saying %q", c.value, err, c.why)
		}
	}
	if len(types.Names()) != 1 {
		t.Errorf("bad records named types: %v", types.Names())
	}
	// Without a type dictionary, names are refused, numbers are not.
	if _, err := decodeAll(New(FormatJSON, nil), []byte(`{"src":1,"dst":2,"type":"login"}`)); err == nil || !strings.Contains(err.Error(), "no type dictionary") {
		t.Errorf("no dictionary: %v", err)
	}
	if got, err := decodeAll(New(FormatJSON, nil), []byte(`{"src":1,"dst":2,"type":4}`)); err != nil || got[0].Type != 4 {
		t.Errorf("a number without a dictionary: %+v, %v", got, err)
	}
	// A mapped field that is no type names the field and its source.
	_, err := decodeRecord(mustMapped(t, Mapping{Src: "/s", Dst: "/d", Type: "/kind"}, res), &Record{Value: []byte(`{"s":1,"d":2,"kind":[1]}`)})
	if err == nil || !strings.Contains(err.Error(), "type (/kind) is an array") {
		t.Errorf("mapped: %v", err)
	}
}

func TestMappingTypeConstantsAreCheckedAtStart(t *testing.T) {
	if _, err := NewMapped(Mapping{Src: "/s", Dst: "/d", Type: "const:a,b"}, nil); err == nil || !strings.Contains(err.Error(), "comma") {
		t.Errorf("a constant type with a comma: %v", err)
	}
	if _, err := NewMapped(Mapping{Src: "/s", Dst: "/d", Type: "const:login"}, nil); err != nil {
		t.Errorf("a good constant type without a dictionary (checked at start): %v", err)
	}
	topic, m, err := ParseMappingFlag("logins:src=/user,dst=/owner,type=const:login")
	if err != nil || topic != "logins" || m.Type != "const:login" {
		t.Errorf("--mapping with a type: %q %+v %v", topic, m, err)
	}
}

// Known type names cost no allocation, in the mapped and the native JSON
// paths (the decoders' promise, types included).
func TestKnownTypeNamesAllocateNothing(t *testing.T) {
	types := typesFor(t)
	res := WithTypes(newFakeKeys(), types)
	m := Mapping{Src: "/s", Dst: "/d", Type: "/kind"}
	mapped := mustMapped(t, m, res)
	native := New(FormatJSON, res)
	r := &Record{Value: []byte(`{"s":1,"d":2,"kind":"payment"}`)}
	v := []byte(`{"src":1,"dst":2,"type":"payment"}`)
	got, err := decodeRecord(mapped, r)
	if err != nil || got[0].Type != 1 {
		t.Fatalf("%+v, %v", got, err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = mapped.DecodeRecord(r, func(Edge) {}) }); n != 0 {
		t.Errorf("mapped: %v allocations per record", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = native.Decode(v, func(Edge) {}) }); n != 0 {
		t.Errorf("native: %v allocations per value", n)
	}
	// A name the dictionary adds is its own copy, not a view of the record.
	v2 := []byte(`{"src":1,"dst":2,"type":"wire"}`)
	if _, err := decodeAll(native, v2); err != nil {
		t.Fatal(err)
	}
	copy(v2, `{"src":1,"dst":2,"type":"XXXX"}`)
	if id, err := types.Lookup("wire"); err != nil || types.Name(id) != "wire" {
		t.Errorf("after the record's bytes changed: %q (%v)", types.Name(id), err)
	}
}
