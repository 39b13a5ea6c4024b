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

// PlanReplay returns the partitions behind the store's position, and
// refuses a position of another cluster or topic, ahead of the store's,
// naming a partition the store has no record of, or missing one it has.
func TestPlanReplay(t *testing.T) {
	pos := func(offs ...int64) Position {
		p := Position{}
		for i, o := range offs {
			p.Set("a", int32(i), o)
		}
		return p
	}
	ids := map[string]TopicID{"a": {1}}
	store := Recorded{ClusterID: "c", TopicIDs: ids, Position: pos(10, 20)}
	enc := func(r Recorded) []byte { return r.Encode() }
	behind, err := PlanReplay(store, enc(Recorded{ClusterID: "c", TopicIDs: ids, Position: pos(4, 20)}))
	if err != nil || len(behind) != 1 || behind["a"][0] != 4 || len(behind["a"]) != 1 {
		t.Fatalf("behind %v, %v", behind, err)
	}
	if behind, err := PlanReplay(store, enc(Recorded{ClusterID: "c", TopicIDs: ids, Position: pos(10, 20)})); err != nil || len(behind) != 0 {
		t.Fatalf("at the store's position: %v, %v", behind, err)
	}
	extra := pos(4, 20)
	extra.Set("a", 2, 0)
	for name, r := range map[string]Recorded{
		"another cluster":  {ClusterID: "d", TopicIDs: ids, Position: pos(4, 20)},
		"another topic":    {ClusterID: "c", TopicIDs: map[string]TopicID{"a": {2}}, Position: pos(4, 20)},
		"ahead":            {ClusterID: "c", TopicIDs: ids, Position: pos(4, 21)},
		"unknown to store": {ClusterID: "c", TopicIDs: ids, Position: extra},
		"missing one":      {ClusterID: "c", TopicIDs: ids, Position: pos(4)},
	} {
		if behind, err := PlanReplay(store, enc(r)); err == nil {
			t.Fatalf("%s: accepted, %v", name, behind)
		}
	}
	if _, err := PlanReplay(store, []byte("junk")); err == nil {
		t.Fatal("junk accepted")
	}
}
