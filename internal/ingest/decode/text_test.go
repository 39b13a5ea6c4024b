package decode

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/keydict"
)

func TestTextValid(t *testing.T) {
	cases := []struct {
		name  string
		keys  bool
		value string
		want  []Edge
	}{
		{"one edge no newline", false, "1 2", []Edge{{Src: 1, Dst: 2}}},
		{"one edge", false, "1 2\n", []Edge{{Src: 1, Dst: 2}}},
		{"tabs and weight", false, "1\t2\t0.5\n", []Edge{{Src: 1, Dst: 2, Weight: 0.5, HasWeight: true}}},
		{"extra blanks and crlf", false, "  1 \t  2   \r\n", []Edge{{Src: 1, Dst: 2}}},
		{"comments and blank lines", false, "# FromNodeId\tToNodeId\n% matrix market\n\n \t \r\n1 2\n\t# indented comment\n3 4", []Edge{{Src: 1, Dst: 2}, {Src: 3, Dst: 4}}},
		{"delete edge", false, "d 1 2\n", []Edge{{Op: OpDeleteEdge, Src: 1, Dst: 2}}},
		{"delete vertex", false, "dv 5\n", []Edge{{Op: OpDeleteVertex, Src: 5}}},
		{"mixed", false, "1 2 3\nd 1 2\ndv 1\n4 5 -1e-3\n", []Edge{
			{Src: 1, Dst: 2, Weight: 3, HasWeight: true}, {Op: OpDeleteEdge, Src: 1, Dst: 2},
			{Op: OpDeleteVertex, Src: 1}, {Src: 4, Dst: 5, Weight: -1e-3, HasWeight: true},
		}},
		{"max vertex and leading zeros", false, "9223372036854775807 007", []Edge{{Src: MaxVertex, Dst: 7}}},
		{"weight forms", false, "1 2 -0\n1 2 .25\n1 2 +3.\n1 2 1E+2", []Edge{
			{Src: 1, Dst: 2, Weight: math.Copysign(0, -1), HasWeight: true}, {Src: 1, Dst: 2, Weight: 0.25, HasWeight: true},
			{Src: 1, Dst: 2, Weight: 3, HasWeight: true}, {Src: 1, Dst: 2, Weight: 100, HasWeight: true},
		}},
		{"keys", true, "alice bob 2\nbob 123\nd alice bob\ndv carol\n-1 é", []Edge{
			{Src: kb, Dst: kb + 1, Weight: 2, HasWeight: true}, {Src: kb + 1, Dst: 123},
			{Op: OpDeleteEdge, Src: kb, Dst: kb + 1}, {Op: OpDeleteVertex, Src: kb + 2}, {Src: kb + 3, Dst: kb + 4},
		}},
		{"keys named d and dv as dst", true, "1 d\n2 dv", []Edge{{Src: 1, Dst: kb}, {Src: 2, Dst: kb + 1}}},
		{"numeric below key base with keys", true, "4611686018427387903 0", []Edge{{Src: kb - 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys KeyResolver
			if c.keys {
				keys = newFakeKeys()
			}
			got, err := decodeAll(New(FormatText, keys), []byte(c.value))
			if err != nil {
				t.Fatal(err)
			}
			checkEdges(t, got, c.want)
		})
	}
}

func TestTextInvalid(t *testing.T) {
	cases := []struct {
		name   string
		keys   bool
		value  string
		off    int
		reason string
	}{
		{"empty", false, "", 0, "value holds no edges"},
		{"only comments", false, "# a\n\n% b\n", 0, "value holds no edges"},
		{"one field", false, "1", 0, "missing dst"},
		{"one field on crlf line 2", false, "1 2\r\n3\r\n", 5, "missing dst"},
		{"four fields", false, "1 2 3 4", 0, "too many fields"},
		{"bad weight on line 2", false, "1 2\n3 4 x", 4, `invalid weight "x"`},
		{"nan weight", false, "1 2 nan", 0, `invalid weight "nan"`},
		{"inf weight", false, "1 2 inf", 0, `invalid weight "inf"`},
		{"-inf weight", false, "1 2 -Infinity", 0, `invalid weight "-Infinity"`},
		{"hex weight", false, "1 2 0x1p-2", 0, `invalid weight "0x1p-2"`},
		{"malformed weight", false, "1 2 1e", 0, `invalid weight "1e"`},
		{"two dots", false, "1 2 1.2.3", 0, `invalid weight "1.2.3"`},
		{"weight overflow", false, "1 2 1e400", 0, `weight "1e400" out of range`},
		{"underscore weight", false, "1 2 1_000", 0, "invalid weight"},
		{"delete short", false, "d 1", 0, `delete line needs 2 fields after "d", has 1`},
		{"delete long", false, "d 1 2 3", 0, "delete line needs 2 fields"},
		{"vertex delete bare", false, "dv", 0, `vertex delete line needs 1 field after "dv", has 0`},
		{"vertex delete long", false, "dv 1 2", 0, "vertex delete line needs 1 field"},
		{"negative id", false, "1 -2", 0, `dst: invalid vertex id "-2": not an unsigned integer, and string keys need a key dictionary`},
		{"key without dictionary", false, "abc 2", 0, `src: invalid vertex id "abc"`},
		{"uppercase op is not an op", false, "D 1 2", 0, `src: invalid vertex id "D"`},
		{"uint64 overflow", false, "18446744073709551616 1", 0, "src: vertex id 18446744073709551616 out of range"},
		{"above max vertex", false, "1 9223372036854775808", 0, "dst: vertex id 9223372036854775808 out of range (max 9223372036854775807)"},
		{"key range with keys", true, "4611686018427387904 1", 0, "src: vertex id 4611686018427387904 out of range (numeric ids must be below"},
		{"vertex delete out of range", false, "dv 9223372036854775808", 0, "src: vertex id"},
		{"invalid utf8 key", true, "a\xff 1", 0, "src: key \"a\\xff\" is not valid utf-8"},
		{"long key", true, "1 " + strings.Repeat("k", keydict.MaxKeyLen+1), 0, "dst: key"},
		{"huge number is clipped", false, "1 " + strings.Repeat("9", 10000), 0, "dst: vertex id " + strings.Repeat("9", 64) + "... out of range"},
		{"bad line after comments", false, "1 2\n# c\n\n1 x y", 9, `invalid vertex id "x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys KeyResolver
			if c.keys {
				keys = newFakeKeys()
			}
			got, err := decodeAll(New(FormatText, keys), []byte(c.value))
			checkDecodeError(t, FormatText, got, err, c.off, c.reason)
		})
	}
}

func TestTextRoundTrip(t *testing.T) {
	edges := []Edge{
		{Src: 1, Dst: 2},
		{Src: 0, Dst: MaxVertex, Weight: 0.1, HasWeight: true},
		{Src: 3, Dst: 4, Weight: math.Copysign(0, -1), HasWeight: true},
		{Src: 3, Dst: 4, Weight: -1e300, HasWeight: true},
		{Src: 3, Dst: 4, Weight: 5e-324, HasWeight: true},
		{Op: OpDeleteEdge, Src: 5, Dst: 6},
		{Op: OpDeleteVertex, Src: 7},
	}
	var v []byte
	for _, e := range edges {
		v = AppendText(v, e)
	}
	want := "1 2\n0 9223372036854775807 0.1\n3 4 -0\n3 4 -1e+300\n3 4 5e-324\nd 5 6\ndv 7\n"
	if string(v) != want {
		t.Fatalf("AppendText wrote %q, want %q", v, want)
	}
	got, err := decodeAll(New(FormatText, nil), v)
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, edges)
	// Event times are dropped; weights of deletes are not written.
	if got := string(AppendText(nil, Edge{Op: OpDeleteEdge, Src: 1, Dst: 2, Weight: 3, HasWeight: true, EventTime: us(5)})); got != "d 1 2\n" {
		t.Fatalf("AppendText = %q", got)
	}
}

func TestTextDoesNotAllocate(t *testing.T) {
	var v []byte
	for i := uint64(0); i < 200; i++ {
		v = AppendText(v, Edge{Src: i * 7919, Dst: i*104729 + 3, Weight: float64(i) / 8, HasWeight: i%2 == 0})
		if i%50 == 0 {
			v = append(v, "# comment\n"...)
			v = AppendText(v, Edge{Op: OpDeleteVertex, Src: i})
		}
	}
	d := New(FormatText, nil)
	if n := testing.AllocsPerRun(50, func() {
		if err := d.Decode(v, func(Edge) {}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("text Decode allocates %v times per value", n)
	}

	// With a real dictionary, known keys cost nothing either.
	dict, err := keydict.Open(t.TempDir() + "/keys.log")
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	kv := []byte(strings.Repeat("account-0001 account-0002 1.5\nd account-0002 42\n", 50))
	dk := New(FormatText, dict)
	if err := dk.Decode(kv, func(Edge) {}); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { _ = dk.Decode(kv, func(Edge) {}) }); n != 0 {
		t.Fatalf("text Decode with known keys allocates %v times per value", n)
	}
}

func TestTextLongValueReusesScratch(t *testing.T) {
	d := New(FormatText, nil)
	v := bytes.Repeat([]byte("1 2\n"), 1000)
	for i := 0; i < 3; i++ {
		got, err := decodeAll(d, v)
		if err != nil || len(got) != 1000 {
			t.Fatalf("round %d: %d edges, %v", i, len(got), err)
		}
	}
	got, err := decodeAll(d, []byte("5 6"))
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, []Edge{{Src: 5, Dst: 6}})
}
