package engine

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestEventsFromPages: reading an edge's events a page at a time (skip,
// limit) lists exactly what one read of them all lists, in order, with
// more set on every page but the last, in the write buffer and flushed.
func TestEventsFromPages(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store"), &Options{Aggregates: map[uint16]Aggregate{3: {Accumulate: true, Retain: 1000 * time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 300 {
		var b Batch
		b.InsertWeighted(1, 2, float64(i))
		b.SetType(3)
		b.SetEventTime(int64(1+i) * 1_000_000)
		b.SetPayload(fmt.Sprintf("e-%d", i), []byte(fmt.Sprintf(`{"i":%d}`, i)))
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		if i == 150 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	for _, since := range []int64{0, 100_000_000} {
		all, _, err := sn.Events(1, 2, 3, since, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		if want := 300 - int(max(since/1_000_000-1, 0)); len(all) != want {
			t.Fatalf("since %d: %d events, want %d", since, len(all), want)
		}
		for _, page := range []int{1, 7, 64, 1000} {
			var got []Event
			for skip := uint64(0); ; {
				evs, more, _, err := sn.EventsFrom(1, 2, 3, since, skip, page)
				if err != nil {
					t.Fatal(err)
				}
				if len(evs) > page {
					t.Fatalf("a page of %d holds %d", page, len(evs))
				}
				got = append(got, evs...)
				skip += uint64(len(evs))
				if more != (len(got) < len(all)) {
					t.Fatalf("since %d, pages of %d: more %v after %d of %d", since, page, more, len(got), len(all))
				}
				if !more {
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(all) {
				t.Fatalf("since %d, pages of %d: %d events differ from one read's %d", since, page, len(got), len(all))
			}
		}
	}
	if _, _, _, err := sn.EventsFrom(1, 2, 3, 0, 0, 0); err == nil {
		t.Error("a limit of 0 was taken")
	}
}
