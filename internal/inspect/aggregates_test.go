package inspect

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
)

// TestInspectShowsAndVerifiesTheRecordedAggregates: inspect names the
// types the store records as accumulate and its newest event time, and
// inspect --verify refuses a damaged type record with the MANIFEST and
// the record's offset.
func TestInspectShowsAndVerifiesTheRecordedAggregates(t *testing.T) {
	dir := t.TempDir()
	d, err := datadir.Open(dir, datadir.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	typ, err := d.Types.ID("payment")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Store.SetAggregate(typ, engine.Aggregate{Accumulate: true, Retain: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	newest := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	var b engine.Batch
	b.InsertWeighted(1, 2, 12.5)
	b.SetType(typ)
	b.SetEventTime(newest.UnixMicro())
	// An event from Kafka without a reference of its own: the store
	// numbers its source.
	b.InsertWeighted(1, 3, 50)
	b.SetType(typ)
	b.SetEventTime(newest.UnixMicro())
	b.SetSourcePayload("payments/2", 41, nil)
	if _, err := d.Store.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := d.Store.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(dir, true, false, &out); err != nil {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	for _, want := range []string{"edge types: payment (type 1) accumulate, retain 24h0m0s; every other type replace",
		"newest event time: 2026-12-06T05:00:00Z", "event sources: 1 numbered (payments/2)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect does not say %q:\n%s", want, out.String())
		}
	}
	rep, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.TypeAggregates) != 1 || rep.TypeAggregates[0] != (TypeAggregate{Type: typ, Name: "payment", RetainUs: (24 * time.Hour).Microseconds(), Retain: "24h0m0s"}) ||
		rep.NewestEventTime != newest.UnixMicro() || !slices.Equal(rep.EventSources, []string{"payments/2"}) {
		t.Fatalf("report: %+v, newest %d, sources %q", rep.TypeAggregates, rep.NewestEventTime, rep.EventSources)
	}

	// A flipped byte of the type record's retain: its payload checksum no
	// longer holds. The record: kind tag 1, kind 5 (a type edit), tag 15.
	path := filepath.Join(datadir.StorePath(dir), "MANIFEST")
	m, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(m, []byte{1, 5, 15})
	if at < 0 || bytes.Contains(m[at+1:], []byte{1, 5, 15}) {
		t.Fatalf("want one type record in the MANIFEST, found at %d", at)
	}
	m[at+3+4] ^= 0x10 // the retain's first byte, after the u32 type
	if err := os.WriteFile(path, m, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = Run(dir, true, false, &out)
	rec := at - 12 // the record header before its payload
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "at byte offset "+strconv.Itoa(rec)) ||
		!strings.Contains(err.Error(), "checksum") {
		t.Fatalf("verify of a damaged type record: %v\n%s", err, out.String())
	}
}
