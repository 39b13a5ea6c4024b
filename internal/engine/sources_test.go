package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// A source position reads back as the text SetPayload would have given
// (edge, events, the apply observer), the store numbers each source once
// and keeps the numbers across a reopen, and bad input is refused before
// anything is applied.
func TestSourcePayloadRendersItsReference(t *testing.T) {
	dir := t.TempDir()
	o := &Options{Aggregates: map[uint16]Aggregate{0: {Accumulate: true, Retain: time.Hour}}}
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	s.SetApplyObserver(func(_ uint64, b *Batch) {
		for i := range b.Len() {
			seen = append(seen, b.Op(i).EventRef)
		}
	})
	var b Batch
	b.InsertWeighted(1, 2, 5)
	b.SetEventTime(1000)
	b.SetSourcePayload("payments/3", 1207, []byte(`{"currency":"EUR"}`))
	b.InsertWeighted(1, 2, 7)
	b.SetEventTime(2000)
	b.SetSourcePayload("payments/0", 0, nil)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if want := []string{"payments/3/1207", "payments/0/0"}; !slices.Equal(seen, want) {
		t.Fatalf("observer saw %q, want %q", seen, want)
	}
	check := func(what string) {
		t.Helper()
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer sn.Release()
		c, err := sn.Edge(1, 2)
		if err != nil || len(c.Refs) != 1 || c.Refs[0] != "payments/0/0" || c.Props[0] != "" || c.Counts[0] != 2 {
			t.Fatalf("%s: edge %+v %v", what, c, err)
		}
		evs, _, err := sn.Events(1, 2, 0, 0, 10)
		if err != nil || len(evs) != 2 || evs[1].EventRef != "payments/3/1207" || evs[1].Props != `{"currency":"EUR"}` || evs[0].EventRef != "payments/0/0" {
			t.Fatalf("%s: events %+v %v", what, evs, err)
		}
	}
	check("applied")
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, o); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reopened")
	if got := s.EventSources(); !slices.Equal(got, []string{"payments/3", "payments/0"}) {
		t.Fatalf("EventSources() = %q", got)
	}

	for _, c := range []struct {
		name string
		add  func(b *Batch)
		want string
	}{
		{"empty source", func(b *Batch) { b.Insert(1, 2); b.SetSourcePayload("", 1, nil) }, "must not be empty"},
		{"negative position", func(b *Batch) { b.Insert(1, 2); b.SetSourcePayload("t/0", -1, nil) }, "at least 0"},
		{"too long", func(b *Batch) { b.Insert(1, 2); b.SetSourcePayload(strings.Repeat("t", MaxEventRef-2), 100, nil) }, "at most 255 bytes"},
		{"not UTF-8", func(b *Batch) { b.Insert(1, 2); b.SetSourcePayload("t\xff/0", 1, nil) }, "UTF-8"},
		{"a delete", func(b *Batch) { b.DeleteEdge(1, 2); b.SetSourcePayload("t/0", 1, nil) }, "not an upsert"},
		{"bad props", func(b *Batch) { b.Insert(1, 2); b.SetSourcePayload("t/0", 1, []byte(`[1]`)) }, "JSON object"},
	} {
		var b Batch
		c.add(&b)
		if _, err := s.Apply(&b); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Apply = %v, want ErrInvalid saying %q", c.name, err, c.want)
		}
	}
	if got := s.EventSources(); len(got) != 2 {
		t.Fatalf("a refused batch numbered sources: %q", got)
	}
}
