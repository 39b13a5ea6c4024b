package alertlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// evidenceAlert is an alert as the registry raises it with evidence: named,
// bounded.
func evidenceAlert() analytics.Alert {
	at := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	return analytics.Alert{Time: at, Analytic: "mules", Kind: "fan_in", Seq: 12, Vertex: 1 << 62, VertexID: "4611686018427387904", VertexKey: "acct-9",
		Value: 3, Threshold: 2, ID: "ab", Source: &analytics.AlertSource{Topic: "payments", Partition: 1, Offset: 40},
		Evidence: []analytics.Evidence{
			{Seq: 10, SrcID: "4611686018427387905", SrcKey: "acct-1", DstID: "4611686018427387904", DstKey: "acct-9", TypeName: "payment",
				Amount: 12.5, EventTime: at.Add(-time.Minute), EventRef: "e-91", Props: `{"currency":"EUR","channel":{"kind":"app"}}`,
				Source: &analytics.AlertSource{Topic: "payments", Partition: 1, Offset: 38}},
			{Seq: 12, SrcID: "77", DstID: "4611686018427387904", DstKey: "acct-9", TypeName: "default", Amount: 50, EventRef: "payments/1/40",
				Source: &analytics.AlertSource{Topic: "payments", Partition: 1, Offset: 40}},
		},
		EvidenceDropped: 1,
		Totals:          &analytics.AlertTotals{Events: 3, Amount: 63.5, Counterparties: 2, First: at.Add(-time.Hour), Last: at.Add(-time.Minute)}}
}

// A log written before alerts carried evidence (testdata: written by that
// version's Append) opens, reads back each alert in today's shape (the
// vertex by the id its source gave: the third alert's store id 7 stood
// for the source's 123456789012), takes alerts with evidence after them,
// and reads them all back, the evidence's properties as their object,
// after a reopen too; a read-only open (inspect --verify) reads it.
func TestLogWrittenBeforeEvidenceReads(t *testing.T) {
	old, err := os.ReadFile("testdata/alerts-before-evidence.log")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	l := open(t, path, 0, &Claim{Records: 3})
	got, total, by, err := l.Alerts()
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(got) != 3 || by["rings"] != 2 || by["hubs"] != 1 {
		t.Fatalf("%d alerts (total %d, %v), want the 3 the file holds", len(got), total, by)
	}
	want := []string{
		`{"id":"cc6e884748b21820335eb34b2bf96633","time":"2026-12-06T10:29:42.41193875Z","analytic":"rings","kind":"cycle","seq":3,"vertex":4611686018427387906,"vertex_id":"4611686018427387906","vertex_key":"acct-9","cycle":[4611686018427387906,4611686018427387904,4611686018427387905],"cycle_ids":["4611686018427387906","4611686018427387904","4611686018427387905"],"cycle_keys":["acct-9","acct-17","acct-4"],"value":3,"source":{"topic":"transfers","partition":0,"offset":2}}`,
		`{"id":"03cf474c223a195f5253858900b86c4b","time":"2026-12-06T10:29:43.41193875Z","analytic":"rings","kind":"fan_in","seq":6,"vertex":4611686018427387906,"vertex_id":"4611686018427387906","vertex_key":"acct-9","value":4,"threshold":3,"source":{"topic":"transfers","partition":0,"offset":5},"event_time":"2026-12-06T05:00:00Z"}`,
		`{"id":"9f0c1e2d3b4a59687766554433221100","time":"2026-12-06T10:29:44.41193875Z","analytic":"hubs","kind":"degree","seq":9,"vertex":123456789012,"vertex_id":"123456789012","value":11,"threshold":10}`,
	}
	for i, a := range got {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want[i] {
			t.Fatalf("alert %d of the old file reads as\n%s\nwant\n%s", i, b, want[i])
		}
	}
	ev := evidenceAlert()
	if err := l.Append([]analytics.Alert{ev}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{false, true} {
		l, err := Open(path, 0, readOnly, &Claim{Records: 4})
		if err != nil {
			t.Fatal(err)
		}
		got, total, _, err := l.Alerts()
		if err != nil {
			t.Fatal(err)
		}
		if total != 4 || len(got) != 4 {
			t.Fatalf("read-only %v: %d alerts (total %d), want 4", readOnly, len(got), total)
		}
		// What goes in comes back, but for the store's numbers, which the
		// JSON does not carry (the names do).
		want := ev
		want.Evidence = append([]analytics.Evidence(nil), ev.Evidence...)
		want.Evidence[0].Src, want.Evidence[0].Dst = 4611686018427387905, 4611686018427387904
		want.Evidence[1].Src, want.Evidence[1].Dst = 77, 4611686018427387904
		if !reflect.DeepEqual(got[3], want) {
			t.Fatalf("read-only %v: the alert with evidence reads back as\n%+v\nwant\n%+v", readOnly, got[3], want)
		}
		b, _ := json.Marshal(got[3])
		if !strings.Contains(string(b), `"props":{"currency":"EUR","channel":{"kind":"app"}}`) {
			t.Fatalf("the evidence's properties are not their object: %s", b)
		}
		if !readOnly {
			l.Close()
		}
	}
}

// A record whose checksum holds but which does not read back as an alert
// (here: an id that is not a number) is refused at open, read-only too
// (inspect --verify), naming the file and the record's offset.
func TestLogRefusesARecordThatIsNoAlert(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l := open(t, path, 0, nil)
	if err := l.Append([]analytics.Alert{alert(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := len(data)
	data = durable.AppendRecord(data, []byte(`{"analytic":"rings","kind":"fan_in","vertex":"acct-9"}`))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{true, false} {
		_, err := Open(path, 0, readOnly, &Claim{Records: 2})
		var ce *durable.CorruptError
		if !errors.As(err, &ce) || ce.File != path || ce.Offset != int64(at) || !strings.Contains(err.Error(), "does not read back") {
			t.Fatalf("read-only %v: %v, want the record at offset %d refused", readOnly, err, at)
		}
	}
}

// AlertsWithin reads the newest alerts whose records hold at most the
// bytes it is given (the newest one whatever its size), the counts of all.
func TestLogReadsTheNewestWithinBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l := open(t, path, 10, nil)
	var all []analytics.Alert
	for i := range 14 {
		a := alert(i)
		if i%3 == 0 {
			a.Evidence = []analytics.Evidence{{Src: 1, Dst: 2, SrcID: "1", DstID: "2", TypeName: "default", Props: `{"pad":"` + strings.Repeat("x", 300*i) + `"}`}}
		}
		all = append(all, a)
	}
	if err := l.Append(all); err != nil {
		t.Fatal(err)
	}
	size := func(a analytics.Alert) int64 { // its record: the framing and the JSON
		b, _ := json.Marshal(a)
		return int64(len(durable.AppendRecord(nil, b)))
	}
	for _, bound := range []int64{0, 1000, 3000, 6000, 1 << 20} {
		want := []analytics.Alert{all[13]}
		sum := size(all[13])
		for i := 12; i >= 4 && sum+size(all[i]) <= bound; i-- { // keep is 10: the newest 10 at most
			sum += size(all[i])
			want = append([]analytics.Alert{all[i]}, want...)
		}
		got, total, by, err := l.AlertsWithin(bound)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || total != 14 || by["rings"]+by["hubs"] != 14 {
			t.Fatalf("bound %d: %d alerts (total %d, %v), want %d", bound, len(got), total, by, len(want))
		}
	}
	l.Close()
}

// A restart decodes each alert of the log once: Open, given the bound of
// the read to come (Options.Reading), keeps the alerts it decoded to check
// the file that AlertsWithin of that bound (or less) reads, and hands them
// over; a later read, or one after an Append, reads the file. The alerts
// handed over are those a read of the file gives (a log opened without
// Reading, the oracle), for bounds in bytes and in count, after a clean
// close and after a torn tail.
func TestRestartDecodesEachAlertOnce(t *testing.T) {
	var all []analytics.Alert
	for i := range 40 {
		a := alert(i)
		if i%4 == 1 {
			a.Evidence = []analytics.Evidence{{Src: 1, Dst: 2, SrcID: "1", DstID: "2", TypeName: "default", Props: `{"pad":"` + strings.Repeat("x", 200*(i%7)) + `"}`}}
		}
		all = append(all, a)
	}
	for _, c := range []struct {
		keep    int
		reading int64
		bounds  []int64
		torn    bool
	}{
		{keep: 100, reading: 1 << 20, bounds: []int64{1 << 20, 5000, 0}},
		{keep: 100, reading: 6000, bounds: []int64{6000, 2500}},
		{keep: 9, reading: 1 << 20, bounds: []int64{1 << 20, 3000}},
		{keep: 100, reading: 4000, bounds: []int64{4000}, torn: true},
	} {
		for _, bound := range c.bounds {
			name := fmt.Sprintf("keep %d reading %d bound %d torn %v", c.keep, c.reading, bound, c.torn)
			path := filepath.Join(t.TempDir(), FileName)
			l := open(t, path, c.keep, nil)
			if err := l.Append(all); err != nil {
				t.Fatal(err)
			}
			n := len(l.recs) // the records in the file (keep: a rewrite drops older ones)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if c.torn { // a record appended after the seal, cut short
				l := open(t, path, c.keep, nil)
				if err := l.Append([]analytics.Alert{alert(99)}); err != nil {
					t.Fatal(err)
				}
				l.f.Close()
				info, _ := os.Stat(path)
				if err := os.Truncate(path, info.Size()-5); err != nil {
					t.Fatal(err)
				}
			}
			claim := &Claim{Records: uint64(len(all))}
			rl, err := OpenWith(path, Options{Keep: c.keep, Claim: claim, Reading: c.reading})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if rl.decoded != n {
				t.Fatalf("%s: Open decoded %d alerts, want %d", name, rl.decoded, n)
			}
			got, total, by, err := rl.AlertsWithin(bound)
			if err != nil {
				t.Fatal(err)
			}
			// The oracle: the file as that open left it (a torn tail cut),
			// read by a log that keeps nothing.
			ro, err := OpenWith(path, Options{Keep: c.keep, ReadOnly: true, Claim: claim})
			if err != nil {
				t.Fatal(err)
			}
			want, wantTotal, wantBy, err := ro.AlertsWithin(bound)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 || (bound > 0 && bound < c.reading && len(want) == n) {
				t.Fatalf("%s: the case reads %d of %d alerts: it tests nothing", name, len(want), n)
			}
			if !reflect.DeepEqual(got, want) || total != wantTotal || !reflect.DeepEqual(by, wantBy) {
				t.Fatalf("%s: %d alerts handed over (total %d, %v), the file holds %d (total %d, %v)", name, len(got), total, by, len(want), wantTotal, wantBy)
			}
			if rl.decoded != n {
				t.Fatalf("%s: %d alerts decoded after the read of the newest, want %d (each once)", name, rl.decoded, n)
			}
			// Handed over once: the next read reads the file.
			if again, _, _, err := rl.AlertsWithin(bound); err != nil || !reflect.DeepEqual(again, want) {
				t.Fatalf("%s: the second read: %d alerts, %v", name, len(again), err)
			}
			if rl.decoded != n+len(want) {
				t.Fatalf("%s: the second read decoded %d, want %d", name, rl.decoded-n, len(want))
			}
			rl.Close()
		}
	}
	// After an Append the alerts Open read are not the newest: the read
	// takes the file.
	path := filepath.Join(t.TempDir(), FileName)
	l := open(t, path, 100, nil)
	if err := l.Append(all[:30]); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err := OpenWith(path, Options{Keep: 100, Claim: &Claim{Records: 30}, Reading: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(all[30:]); err != nil {
		t.Fatal(err)
	}
	if got, total, _, err := l.AlertsWithin(1 << 20); err != nil || !reflect.DeepEqual(got, all) || total != uint64(len(all)) {
		t.Fatalf("after an Append: %d alerts (total %d), %v; want %d", len(got), total, err, len(all))
	}
}

// BenchmarkRestartRead: what a restart reads of a log of 5,000 alerts with
// 8 events of evidence each: Open's check and the registry's read of the
// newest (64 MiB, all of them here), decoded twice (twice: Open without
// Options.Reading) or once (once).
func BenchmarkRestartRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	l, err := Open(path, 10000, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var al []analytics.Alert
	for i := range 5000 {
		a := alert(i)
		for j := range 8 {
			a.Evidence = append(a.Evidence, analytics.Evidence{Seq: uint64(j), Src: 1, Dst: 2, SrcID: fmt.Sprint(j), DstID: "2", SrcKey: fmt.Sprintf("acct-%d", j),
				TypeName: "payment", Amount: 12.5, EventTime: time.Unix(int64(i), 0).UTC(), EventRef: fmt.Sprintf("e-%d-%d", i, j), Props: `{"currency":"EUR"}`,
				Source: &analytics.AlertSource{Topic: "payments", Offset: int64(i)}})
		}
		al = append(al, a)
	}
	if err := l.Append(al); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	const ring = 64 << 20 // analytics.DefaultAlertRingBytes
	for _, once := range []bool{false, true} {
		b.Run(map[bool]string{false: "twice", true: "once"}[once], func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				o := Options{Keep: 10000, Claim: &Claim{Records: 5000}}
				if once {
					o = Options{Keep: 10000, Claim: &Claim{Records: 5000}, Reading: ring}
				}
				l, err := OpenWith(path, o)
				if err != nil {
					b.Fatal(err)
				}
				got, _, _, err := l.AlertsWithin(ring)
				if err != nil || len(got) != 5000 {
					b.Fatalf("%d alerts, %v", len(got), err)
				}
				l.Close()
			}
		})
	}
}
