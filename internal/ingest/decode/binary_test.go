package decode

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/graphtide/graphtide/internal/keydict"
)

// entry builds a raw binary entry; extra holds the optional fields in order.
func entry(op, flags byte, src, dst uint64, extra ...uint64) []byte {
	b := []byte{op, flags}
	b = binary.LittleEndian.AppendUint64(b, src)
	b = binary.LittleEndian.AppendUint64(b, dst)
	for _, x := range extra {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestBinaryLayoutIsDocumented(t *testing.T) {
	// The exact bytes of the package documentation's layout.
	e := Edge{Op: OpUpsert, Src: 0x0102030405060708, Dst: 9, Weight: 1.5, HasWeight: true, EventTime: us(0x1122)}
	want := []byte{
		0, 0b11,
		8, 7, 6, 5, 4, 3, 2, 1,
		9, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0xf8, 0x3f, // 1.5
		0x22, 0x11, 0, 0, 0, 0, 0, 0,
	}
	if got := AppendBinary(nil, e); !bytes.Equal(got, want) {
		t.Fatalf("AppendBinary = % x\nwant          % x", got, want)
	}
	if got := AppendBinary([]byte{0xaa}, Edge{Op: OpDeleteVertex, Src: 3}); !bytes.Equal(got, cat([]byte{0xaa}, entry(2, 0, 3, 0))) {
		t.Fatalf("AppendBinary vertex delete = % x", got)
	}
}

func TestBinaryValid(t *testing.T) {
	w := math.Float64bits
	cases := []struct {
		name  string
		keys  bool
		value []byte
		want  []Edge
	}{
		{"upsert", false, entry(0, 0, 1, 2), []Edge{{Op: OpUpsert, Src: 1, Dst: 2}}},
		{"weight", false, entry(0, 1, 1, 2, w(0.25)), []Edge{{Src: 1, Dst: 2, Weight: 0.25, HasWeight: true}}},
		{"negative zero weight", false, entry(0, 1, 1, 2, w(math.Copysign(0, -1))), []Edge{{Src: 1, Dst: 2, Weight: math.Copysign(0, -1), HasWeight: true}}},
		{"max finite weight", false, entry(0, 1, 1, 2, w(-math.MaxFloat64)), []Edge{{Src: 1, Dst: 2, Weight: -math.MaxFloat64, HasWeight: true}}},
		{"weight and time", false, entry(0, 3, 1, 2, w(-3), 1_700_000_000_123_456), []Edge{{Src: 1, Dst: 2, Weight: -3, HasWeight: true, EventTime: us(1_700_000_000_123_456)}}},
		{"time only", false, entry(0, 2, 1, 2, 7), []Edge{{Src: 1, Dst: 2, EventTime: us(7)}}},
		{"epoch time", false, entry(0, 2, 1, 2, 0), []Edge{{Src: 1, Dst: 2, EventTime: us(0)}}},
		{"last time", false, entry(0, 2, 1, 2, uint64(maxEventMicros)), []Edge{{Src: 1, Dst: 2, EventTime: us(maxEventMicros)}}},
		{"delete edge with time", false, entry(1, 2, 5, 6, 9), []Edge{{Op: OpDeleteEdge, Src: 5, Dst: 6, EventTime: us(9)}}},
		{"delete vertex", false, entry(2, 0, 5, 0), []Edge{{Op: OpDeleteVertex, Src: 5}}},
		{"self loop and zero ids", false, entry(0, 0, 0, 0), []Edge{{Src: 0, Dst: 0}}},
		{"max vertex without keys", false, entry(0, 0, MaxVertex, MaxVertex), []Edge{{Src: MaxVertex, Dst: MaxVertex}}},
		{"below key base with keys", true, entry(0, 0, keydict.KeyBase-1, 0), []Edge{{Src: keydict.KeyBase - 1}}},
		{"several entries", false, cat(
			entry(0, 1, 1, 2, w(1)),
			entry(1, 0, 3, 4),
			entry(2, 2, 5, 0, 11),
			entry(0, 0, 6, 7),
		), []Edge{
			{Src: 1, Dst: 2, Weight: 1, HasWeight: true},
			{Op: OpDeleteEdge, Src: 3, Dst: 4},
			{Op: OpDeleteVertex, Src: 5, EventTime: us(11)},
			{Src: 6, Dst: 7},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys KeyResolver
			if c.keys {
				keys = newFakeKeys()
			}
			got, err := decodeAll(New(FormatBinary, keys), c.value)
			if err != nil {
				t.Fatal(err)
			}
			checkEdges(t, got, c.want)
			// Re-encoding reproduces the value byte for byte.
			var re []byte
			for _, e := range got {
				re = AppendBinary(re, e)
			}
			if !bytes.Equal(re, c.value) {
				t.Fatalf("re-encoded % x\nwant        % x", re, c.value)
			}
		})
	}
}

func TestBinaryInvalid(t *testing.T) {
	w := math.Float64bits
	good := entry(0, 0, 1, 2)
	cases := []struct {
		name   string
		keys   bool
		value  []byte
		off    int
		reason string
	}{
		{"empty", false, nil, 0, "empty value"},
		{"short entry", false, good[:17], 0, "truncated entry: 17 bytes left"},
		{"one byte", false, []byte{0}, 0, "truncated entry"},
		{"short second entry", false, cat(good, good[:5]), 18, "truncated entry"},
		{"missing weight", false, entry(0, 1, 1, 2), 0, "this entry takes 26"},
		{"missing time after weight", false, entry(0, 3, 1, 2, w(1)), 0, "this entry takes 34"},
		{"weight cut short", false, cat(entry(0, 1, 1, 2), []byte{1, 2, 3}), 0, "truncated entry"},
		{"unknown op", false, entry(4, 0, 1, 2), 0, "unknown op 4"},
		{"unknown op 255 in second entry", false, cat(good, entry(255, 0, 1, 2)), 18, "unknown op 255"},
		{"unknown flag", false, entry(0, 8, 1, 2), 1, "unknown flag bits 0x08"},
		{"high flag", false, entry(0, 0x81, 1, 2, w(1)), 1, "unknown flag bits 0x80"},
		{"src too large", false, entry(0, 0, MaxVertex+1, 2), 2, "vertex id 9223372036854775808 out of range"},
		{"dst too large", false, entry(0, 0, 1, 1<<64-1), 10, "vertex id 18446744073709551615 out of range"},
		{"src at key base with keys", true, entry(0, 0, keydict.KeyBase, 2), 2, "vertex id 4611686018427387904 out of range (numeric ids must be below"},
		{"dst in key range with keys", true, entry(1, 0, 1, MaxVertex), 10, "out of range (numeric ids must be below"},
		{"vertex delete with dst", false, entry(2, 0, 1, 2), 10, "dst must be 0 for delete_vertex"},
		{"weight on edge delete", false, entry(1, 1, 1, 2, w(1)), 1, "weight not allowed for delete_edge"},
		{"weight on vertex delete", false, entry(2, 1, 1, 0, w(1)), 1, "weight not allowed for delete_vertex"},
		{"nan weight", false, entry(0, 1, 1, 2, w(math.NaN())), 18, "weight NaN is not finite"},
		{"inf weight", false, entry(0, 1, 1, 2, w(math.Inf(1))), 18, "weight +Inf is not finite"},
		{"-inf weight in 2nd entry", false, cat(good, entry(0, 1, 1, 2, w(math.Inf(-1)))), 36, "not finite"},
		{"negative time", false, entry(0, 2, 1, 2, 1<<64-1), 18, "event time -1 us out of range"},
		{"time too late", false, entry(0, 3, 1, 2, w(1), uint64(maxEventMicros)+1), 26, "out of range"},
		{"bad entry after good ones", false, cat(good, good, entry(0, 0, 1<<63, 0)), 38, "out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys KeyResolver
			if c.keys {
				keys = newFakeKeys()
			}
			got, err := decodeAll(New(FormatBinary, keys), c.value)
			checkDecodeError(t, FormatBinary, got, err, c.off, c.reason)
		})
	}
}

func TestBinaryDecoderReuse(t *testing.T) {
	d := New(FormatBinary, nil)
	big := bytes.Repeat(entry(0, 0, 1, 2), 100)
	if got, err := decodeAll(d, big); err != nil || len(got) != 100 {
		t.Fatalf("first value: %d edges, %v", len(got), err)
	}
	// A failing value after a good one emits nothing and does not disturb the next.
	if got, err := decodeAll(d, cat(entry(0, 0, 3, 4), []byte{9})); err == nil || len(got) != 0 {
		t.Fatalf("bad value: %d edges, %v", len(got), err)
	}
	got, err := decodeAll(d, entry(1, 0, 7, 8))
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, []Edge{{Op: OpDeleteEdge, Src: 7, Dst: 8}})
	if n := testing.AllocsPerRun(100, func() { _ = d.Decode(big, func(Edge) {}) }); n != 0 {
		t.Fatalf("binary Decode allocates %v times per value", n)
	}
}
