package ingest

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/graphid"
)

func sampleRecorded() Recorded {
	r := Recorded{ClusterID: "Vt3x9bW-QAqjP0zbYkq2wA", TopicIDs: map[string]TopicID{}, Position: Position{}}
	r.Position.Set("edges", 0, 17)
	r.Position.Set("edges", 3, 1<<40)
	r.Position.Set("payments", 1, 0)
	r.TopicIDs["edges"] = TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	r.TopicIDs["payments"] = TopicID{0xff, 0xfe}
	return r
}

func TestRecordedRoundTrip(t *testing.T) {
	r := sampleRecorded()
	b := r.Encode()
	got, err := DecodeRecorded(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v != %+v", got, r)
	}
	c := Recorded{ClusterID: r.ClusterID, TopicIDs: map[string]TopicID{}, Position: r.Position.Clone()}
	for k, v := range r.TopicIDs {
		c.TopicIDs[k] = v
	}
	if !bytes.Equal(b, c.Encode()) {
		t.Fatal("encoding is not deterministic")
	}
	empty, err := DecodeRecorded(nil)
	if err != nil || empty.ClusterID != "" || empty.TopicIDs == nil || empty.Position == nil || len(empty.Position) != 0 {
		t.Fatalf("empty input: %+v %v", empty, err)
	}
	// The offsets alone, through the Position helpers: no source.
	p, err := DecodePosition(r.Position.Encode())
	if err != nil || !reflect.DeepEqual(p, r.Position) {
		t.Fatalf("DecodePosition(Position.Encode()) = %v, %v", p, err)
	}
	if np, err := DecodeRecorded(r.Position.Encode()); err != nil || np.ClusterID != "" || np.TopicIDs["edges"] != (TopicID{}) {
		t.Fatalf("Position.Encode records a source: %+v %v", np, err)
	}
}

// TestRecordedLayout checks Encode against the documented layout, written
// out by hand.
func TestRecordedLayout(t *testing.T) {
	r := Recorded{ClusterID: "ab", TopicIDs: map[string]TopicID{"t": {9}}, Position: Position{"t": {2: 7, 1: 5}}}
	want := []byte{2, 2, 0, 'a', 'b', 1, 0, 0, 0, 1, 0, 't', 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 0, 0,
		1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0}
	if got := r.Encode(); !bytes.Equal(got, want) {
		t.Fatalf("Encode:\n got % x\nwant % x", got, want)
	}
	// A topic ID of a topic without offsets is not recorded.
	r.TopicIDs["other"] = TopicID{1}
	if got := r.Encode(); !bytes.Equal(got, want) {
		t.Fatalf("an ID without offsets was recorded:\n got % x\nwant % x", got, want)
	}
	// With a graph: version 3, the graph's name, then version 2's fields.
	r.Graph = "pay"
	if got, want3 := r.Encode(), append([]byte{3, 3, 0, 'p', 'a', 'y'}, want[1:]...); !bytes.Equal(got, want3) {
		t.Fatalf("Encode with a graph:\n got % x\nwant % x", got, want3)
	}
	if s := (TopicID{0xfb, 0xff}).String(); s != "-_8AAAAAAAAAAAAAAAAAAA" || len(s) != 22 {
		t.Errorf("TopicID.String() = %q, want Kafka's base64url without padding", s)
	}
}

func TestRecordedVersion1Refused(t *testing.T) {
	// What graphtide wrote before: u8 1, u32 entries, (u16 topic, topic,
	// i32 partition, i64 offset)...: a valid version-1 position.
	v1 := []byte{1}
	v1 = binary.LittleEndian.AppendUint32(v1, 1)
	v1 = binary.LittleEndian.AppendUint16(v1, 5)
	v1 = append(v1, "edges"...)
	v1 = binary.LittleEndian.AppendUint32(v1, 0)
	v1 = binary.LittleEndian.AppendUint64(v1, 42)
	_, err := DecodeRecorded(v1)
	if err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("a version-1 position: %v, want an error naming version 1", err)
	}
	if _, err := DecodePosition(v1); err == nil {
		t.Fatal("DecodePosition accepted a version-1 position")
	}
}

func TestRecordedDecodeErrors(t *testing.T) {
	good := Recorded{ClusterID: "c", TopicIDs: map[string]TopicID{"a": {1}, "b": {2}},
		Position: Position{"a": {0: 5, 1: 6}, "b": {0: 1}}}.Encode()
	// Offsets into good: version 0, cluster length 1, cluster 3, topic
	// count 4, topic "a": length 8, name 10, ID 11, count 27, partition 0
	// at 31, offset at 35, partition 1 at 43, offset at 47; topic "b"
	// at 55.
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	put32 := func(at int, v uint32) []byte {
		return mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[at:], v); return b })
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"version 4":             {mod(func(b []byte) []byte { b[0] = 4; return b }), "unknown version 4"},
		"version 3, no graph":   {append([]byte{3, 0, 0}, good[1:]...), "graph name must not be empty"},
		"version 3, bad graph":  {append([]byte{3, 3, 0, 'a', ' ', 'b'}, good[1:]...), "byte 1: graph name \"a b\""},
		"version 3, graph cut":  {[]byte{3, 5, 0, 'a'}, "truncated at byte 3"},
		"version 0":             {[]byte{0}, "unknown version 0"},
		"only the version":      {good[:1], "truncated at byte 1"},
		"cluster ID cut":        {good[:3], "truncated at byte 3"},
		"no topic count":        {good[:5], "truncated at byte 4"},
		"topic cut":             {good[:12], "truncated at byte 11"},
		"partition cut":         {good[:40], "truncated at byte 35"},
		"last byte missing":     {good[:len(good)-1], "truncated"},
		"trailing byte":         {append(append([]byte(nil), good...), 0), "1 trailing bytes"},
		"more topics than data": {put32(4, 3), "truncated"},
		"huge topic count":      {put32(4, math.MaxUint32), "truncated"},
		"no partitions":         {mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[27:], 0); return b[:31] }), "no partitions"},
		"partition repeated":    {put32(43, 0), "not after 0"},
		"partition order": {mod(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[31:], 1)
			binary.LittleEndian.PutUint32(b[43:], 0)
			return b
		}), "not after 1"},
		"negative partition": {put32(31, math.MaxUint32), "negative partition -1"},
		"negative offset":    {mod(func(b []byte) []byte { b[42] = 0x80; return b }), "negative offset"},
		"topic order":        {mod(func(b []byte) []byte { b[10], b[57] = 'b', 'a'; return b }), "must be sorted"},
		"topic repeated":     {mod(func(b []byte) []byte { b[57] = 'a'; return b }), "must be sorted"},
		"empty topic name": {func() []byte {
			b := []byte{2, 0, 0, 1, 0, 0, 0, 0, 0}
			b = append(b, make([]byte, 16)...)
			b = binary.LittleEndian.AppendUint32(b, 1)
			return append(b, make([]byte, 12)...)
		}(), "empty topic name"},
	} {
		_, err := DecodeRecorded(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
	if _, err := DecodeRecorded(good); err != nil {
		t.Fatalf("the unmodified input: %v", err)
	}
}

// randomRecorded builds a Recorded from r: 0-4 topics of 1-4 partitions,
// names and cluster IDs of arbitrary bytes, IDs for every topic.
func randomRecorded(r *rand.Rand) Recorded {
	x := Recorded{TopicIDs: map[string]TopicID{}, Position: Position{}}
	randBytes := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	x.ClusterID = randBytes(r.IntN(30))
	if r.IntN(2) == 0 {
		x.Graph = graphid.Derive([]string{randBytes(1 + r.IntN(20))})
	}
	for range r.IntN(5) {
		t := randBytes(1 + r.IntN(12))
		var id TopicID
		for i := range id {
			id[i] = byte(r.IntN(256))
		}
		x.TopicIDs[t] = id
		for range 1 + r.IntN(4) {
			o := r.Int64()
			if r.IntN(3) == 0 {
				o = r.Int64N(100)
			}
			x.Position.Set(t, int32(r.Uint32()>>1), o)
		}
	}
	return x
}

func TestRecordedRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 9))
	for range 2000 {
		x := randomRecorded(r)
		got, err := DecodeRecorded(x.Encode())
		if err != nil || !reflect.DeepEqual(got, x) {
			t.Fatalf("round trip of %+v: %+v, %v", x, got, err)
		}
	}
}

// FuzzDecodeRecorded: arbitrary bytes never panic the decoder, and what it
// accepts is canonical: encoding it again gives the same bytes, and
// decoding those gives the same value.
func FuzzDecodeRecorded(f *testing.F) {
	f.Add([]byte{})
	f.Add(sampleRecorded().Encode())
	f.Add(Position{"t": {0: 5}}.Encode())
	f.Add([]byte{1, 1, 0, 0, 0, 1, 0, 't', 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{2, 0xff, 0xff})
	f.Add([]byte{2, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{3, 1, 0, 'g', 0, 0, 0, 0, 0, 0})
	r := rand.New(rand.NewPCG(2, 2))
	for range 8 {
		f.Add(randomRecorded(r).Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeRecorded(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "source position: ") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		enc := x.Encode()
		if len(b) > 0 && !bytes.Equal(enc, b) {
			t.Fatalf("accepted % x, which encodes back as % x", b, enc)
		}
		y, err := DecodeRecorded(enc)
		if err != nil || !reflect.DeepEqual(x, y) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", x, y, err)
		}
	})
}

// FuzzRecordedRoundTrip: decode(encode(x)) == x for values built from the
// fuzzer's seed.
func FuzzRecordedRoundTrip(f *testing.F) {
	for s := range uint64(8) {
		f.Add(s, s*7919)
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		x := randomRecorded(rand.New(rand.NewPCG(s1, s2)))
		got, err := DecodeRecorded(x.Encode())
		if err != nil || !reflect.DeepEqual(got, x) {
			t.Fatalf("round trip of %+v: %+v, %v", x, got, err)
		}
	})
}

// TestPositionBehind: p is behind q when some partition of q is further
// than p has it, or missing from p; never for partitions only p holds.
func TestPositionBehind(t *testing.T) {
	q := Position{}
	q.Set("edges", 0, 48000)
	q.Set("edges", 1, 10)
	for _, c := range []struct {
		name   string
		p      func() Position
		behind bool
	}{
		{"equal", func() Position { return q.Clone() }, false},
		{"ahead", func() Position { p := q.Clone(); p.Set("edges", 0, 50000); return p }, false},
		{"replaying", func() Position { p := q.Clone(); p.Set("edges", 0, 28000); return p }, true},
		{"a partition missing", func() Position { p := Position{}; p.Set("edges", 0, 48000); return p }, true},
		{"more partitions", func() Position { p := q.Clone(); p.Set("other", 3, 1); return p }, false},
	} {
		if _, _, got := c.p().Behind(q); got != c.behind {
			t.Errorf("%s: Behind %v, want %v", c.name, got, c.behind)
		}
	}
	if tp, part, _ := func() Position { p := q.Clone(); p.Set("edges", 1, 9); return p }().Behind(q); tp != "edges" || part != 1 {
		t.Errorf("Behind names %s/%d, want edges/1", tp, part)
	}
}
