package ingest

import "testing"

func TestRecordRefs(t *testing.T) {
	topics := []string{"a", "b", "c"}
	for _, c := range []SourceRecord{{"a", 0, 0}, {"c", 65535, 1<<40 - 1}, {"b", 7, 123456789}} {
		ti := map[string]int{"a": 0, "b": 1, "c": 2}[c.Topic]
		ref := recordRef(ti, c.Partition, c.Offset)
		if got, ok := SourceOf(topics, ref); !ok || got != c {
			t.Fatalf("%+v: ref %x reads back as %+v %v", c, ref, got, ok)
		}
	}
	for _, bad := range []struct {
		ti   int
		part int32
		off  int64
	}{{-1, 0, 0}, {255, 0, 0}, {0, -1, 0}, {0, 1 << 16, 0}, {0, 0, -1}, {0, 0, 1 << 40}} {
		if ref := recordRef(bad.ti, bad.part, bad.off); ref != 0 {
			t.Fatalf("%+v out of range: ref %x", bad, ref)
		}
	}
	if _, ok := SourceOf(topics, 0); ok {
		t.Fatal("ref 0 names a record")
	}
	if _, ok := SourceOf(topics, recordRef(5, 0, 0)); ok {
		t.Fatal("a topic index past the topics names a record")
	}
}
