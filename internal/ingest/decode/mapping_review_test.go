package decode

import (
	"strings"
	"testing"
	"time"
)

// Cases found by an adversarial review of the mapped decoder, each once a
// bug: they must decode as the Mapping's documentation says.
func TestMappingReviewCases(t *testing.T) {
	decode := func(t *testing.T, m Mapping, r Record) ([]Edge, *fakeKeys, error) {
		t.Helper()
		keys := newFakeKeys()
		got, err := decodeRecord(mustMapped(t, m, keys), &r)
		return got, keys, err
	}
	one := func(t *testing.T, m Mapping, r Record) Edge {
		t.Helper()
		got, _, err := decode(t, m, r)
		if err != nil || len(got) != 1 {
			t.Fatalf("got %+v, %v; want one edge", got, err)
		}
		return got[0]
	}
	t.Run("two fields of one pointer", func(t *testing.T) {
		if e := one(t, Mapping{Src: "/id", Dst: "/id"}, Record{Value: []byte(`{"id":"a"}`)}); e.Src != e.Dst {
			t.Errorf("src and dst of one pointer differ: %+v", e)
		}
		e := one(t, Mapping{Src: "/s", Dst: "/d", Weight: "/x", Time: "/x", TimeUnit: "s"}, Record{Value: []byte(`{"s":"a","d":"b","x":1700000000}`)})
		if !e.HasWeight || e.Weight != 1700000000 || e.EventTime.Unix() != 1700000000 {
			t.Errorf("weight and time of one pointer: %+v", e)
		}
		one(t, Mapping{Src: "key:/s", Dst: "/d", Tombstone: "delete", TombstoneSrc: "key:/s", TombstoneDst: "header:d"},
			Record{Key: []byte(`{"s":"a"}`), Value: []byte(`{"d":"b"}`)})
	})
	t.Run("a tombstone deleting by JSON key pointers", func(t *testing.T) {
		got, keys, err := decode(t, Mapping{Src: "key:/s", Dst: "key:/d", Tombstone: "delete"}, Record{Key: []byte(`{"s":"a","d":"b"}`)})
		if err != nil || len(got) != 1 || got[0].Op != OpDeleteEdge || spell(keys, got[0].Src) != "a" || spell(keys, got[0].Dst) != "b" {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("an escaped op name", func(t *testing.T) {
		if e := one(t, Mapping{Src: "/s", Dst: "/d", Op: "/op"}, Record{Value: []byte(`{"s":"a","d":"b","op":"\u0064elete"}`)}); e.Op != OpDeleteEdge {
			t.Errorf("op %v", e.Op)
		}
		if e := one(t, Mapping{Src: "/s", Dst: "/d", Op: "/op", OpValues: map[string]string{"löschen": "delete"}},
			Record{Value: []byte(`{"s":"a","d":"b","op":"l\u00f6schen"}`)}); e.Op != OpDeleteEdge {
			t.Errorf("op %v", e.Op)
		}
	})
	t.Run("record-level sources are read once per record", func(t *testing.T) {
		for _, m := range []Mapping{
			{Src: "key:1", Dst: "key:1", KeySeparator: "|"},
			{Src: "header:s", Dst: "header:s", Weight: "header:w", Time: "header:t", Op: "header:op"},
		} {
			keys := newFakeKeys()
			d := mustMapped(t, m, keys).(*mapped)
			for _, n := range []int{10, 1000} {
				r := Record{Key: []byte(strings.Repeat("x", 800) + "|b"), Value: []byte("[" + strings.TrimSuffix(strings.Repeat("{},", n), ",") + "]"),
					Headers: []Header{{"s", []byte("a")}, {"w", []byte("2.5")}, {"t", []byte("1700000000000")}, {"op", []byte("add")}}}
				d.gets, keys.calls = 0, 0
				got, err := decodeRecord(d, &r)
				if err != nil || len(got) != n {
					t.Fatalf("%+v: %d edges, %v", m, len(got), err)
				}
				if d.gets > 5 || keys.calls > 1 {
					t.Errorf("%+v, %d operations: %d reads of the sources, %d key resolutions; want each source read once", m, n, d.gets, keys.calls)
				}
			}
		}
	})
	t.Run("an ignored tombstone whose key is not JSON", func(t *testing.T) {
		if got, _, err := decode(t, Mapping{Src: "key:/s", Dst: "/d"}, Record{Key: []byte(`not json`)}); err != nil || len(got) != 0 {
			t.Errorf("got %v, %v; want it ignored", got, err)
		}
	})
	t.Run("a null header is null", func(t *testing.T) {
		e := one(t, Mapping{Src: "/s", Dst: "/d", Op: "header:op", Weight: "header:w", Time: "header:t"},
			Record{Value: []byte(`{"s":"a","d":"b"}`), Headers: []Header{{"op", nil}, {"w", nil}, {"t", nil}}})
		if e.Op != OpUpsert || e.HasWeight || !e.EventTime.IsZero() {
			t.Errorf("got %+v", e)
		}
	})
	t.Run("a repeated member: the last one wins", func(t *testing.T) {
		if got, _, err := decode(t, Mapping{Src: "/a/b", Dst: "/d"}, Record{Value: []byte(`{"a":{"b":"x"},"a":1,"d":"y"}`)}); err == nil {
			t.Errorf("got %v: /a/b picked from the first of two members a", got)
		}
	})
	t.Run("RFC 3339 as written", func(t *testing.T) {
		m := Mapping{Src: "/s", Dst: "/d", Time: "/t"}
		for in, want := range map[string]string{
			"2024-05-01t12:00:00z":              "2024-05-01T12:00:00Z",
			"2016-12-31T23:59:60Z":              "2017-01-01T00:00:00Z",
			"2026-11-23T11:15:00.1234567+05:30": "2026-11-23T05:45:00.123456Z",
			"2024-02-29T00:00:00-00:00":         "2024-02-29T00:00:00Z",
		} {
			e := one(t, m, Record{Value: []byte(`{"s":"a","d":"b","t":"` + in + `"}`)})
			if got := e.EventTime.Format(time.RFC3339Nano); got != want {
				t.Errorf("%s: %s, want %s", in, got, want)
			}
		}
		for _, in := range []string{"2024-05-01T12:00:00,5Z", "2023-02-29T00:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:00:00", "2024-05-01T12:00:00.Z", "2024-05-01 12:00:00Z", "2024-05-01T12:00:00+5:30"} {
			if got, _, err := decode(t, m, Record{Value: []byte(`{"s":"a","d":"b","t":"` + in + `"}`)}); err == nil {
				t.Errorf("%s accepted: %+v", in, got)
			}
		}
	})
	t.Run("the member named by the pointer /", func(t *testing.T) {
		got, keys, err := decode(t, Mapping{Src: "/", Dst: "/d"}, Record{Value: []byte(`{"":"x","d":"y"}`)})
		if err != nil || len(got) != 1 || spell(keys, got[0].Src) != "x" {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
}

// TestMappedTimesAllocateNothing: no offset makes a time allocate.
func TestMappedTimesAllocateNothing(t *testing.T) {
	d := mustMapped(t, Mapping{Src: "/s", Dst: "/d", Time: "/t"}, nil)
	for _, off := range []string{"Z", "+05:30", "-03:30", "+05:45", "+01:01", "-00:00"} {
		r := &Record{Value: []byte(`{"s":1,"d":2,"t":"2026-11-23T11:15:00` + off + `"}`)}
		emit := func(Edge) {}
		if err := d.DecodeRecord(r, emit); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(50, func() { _ = d.DecodeRecord(r, emit) }); n != 0 {
			t.Errorf("offset %s: %v allocations per record", off, n)
		}
	}
}
