package alertlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
	"github.com/graphtide/graphtide/internal/memdir"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

func alert(i int) analytics.Alert {
	return analytics.Alert{Time: time.Unix(int64(i), 0).UTC(), Analytic: []string{"rings", "hubs"}[i%2], Kind: "fan_in",
		Vertex: uint64(i), Value: float64(i), ID: fmt.Sprintf("id-%d", i), VertexID: fmt.Sprint(i), VertexKey: fmt.Sprintf("acct-%d", i),
		Source: &analytics.AlertSource{Topic: "payments", Partition: 1, Offset: int64(i)}}
}

func open(t *testing.T, path string, keep int, c *Claim) *Log {
	t.Helper()
	l, err := Open(path, keep, false, c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The log against a model: the newest keep alerts, in order, and every
// count, across appends, rewrites and reopens.
func TestLogKeepsTheNewestAndEveryCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	const keep = 7
	var all []analytics.Alert
	l := open(t, path, keep, nil)
	for round := 0; round < 6; round++ {
		var batch []analytics.Alert
		for range 1 + round*2 {
			batch = append(batch, alert(len(all)+len(batch)))
		}
		if err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
		if round%2 == 1 { // reopen: what a restart reads
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = open(t, path, keep, &Claim{Records: uint64(len(all))})
		}
		got, total, by, err := l.Alerts()
		if err != nil {
			t.Fatal(err)
		}
		want := all[max(0, len(all)-keep):]
		if !reflect.DeepEqual(got, want) || total != uint64(len(all)) {
			t.Fatalf("round %d: %d alerts (total %d), want %d (total %d)", round, len(got), total, len(want), len(all))
		}
		wantBy := map[string]uint64{}
		for _, a := range all {
			wantBy[a.Analytic]++
		}
		if !reflect.DeepEqual(by, wantBy) {
			t.Fatalf("round %d: by analytic %v, want %v", round, by, wantBy)
		}
		if info, _ := os.Stat(path); len(all) > 2*keep && info.Size() > 2*int64(keep+1)*300 {
			t.Fatalf("round %d: the file is %d bytes for %d alerts kept", round, info.Size(), keep)
		}
	}
	l.Close()
}

// Damage: a flipped bit in a record the claim covers, or in the header,
// is refused naming the file and the record's offset; a torn last record
// past the claim is cut; a cut before the claim, or a missing file the
// claim proves existed, is refused. A read-only open changes nothing.
func TestLogDamage(t *testing.T) {
	dir := memdir.TempDir(t) // a log written and repaired per damage: on tmpfs, not the disk
	path := filepath.Join(dir, FileName)
	l := open(t, path, 100, nil)
	for i := range 5 {
		if err := l.Append([]analytics.Alert{alert(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if c := l.Claim(); c.Records != 5 {
		t.Fatalf("claim %d after 5 synced", c.Records)
	}
	// A sixth alert, appended and not synced: what a crash leaves.
	if err := l.Append([]analytics.Alert{alert(5)}); err != nil {
		t.Fatal(err)
	}
	if c := l.Claim(); c.Records != 5 {
		t.Fatalf("claim %d with the sixth alert not synced", c.Records)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Offsets of the records (the header's length, then each record).
	var offs []int
	hdr, _ := (&Log{path: path, base: map[string]uint64{}}).readHeader(good)
	durable.ScanRecords(good, hdr, minPayload, maxPayload, func(at int, _ []byte) bool { offs = append(offs, at); return true })
	if len(offs) != 6 {
		t.Fatalf("%d records", len(offs))
	}
	l.Close()
	try := func(name string, data []byte, c *Claim) (*Log, error) {
		t.Helper()
		p := filepath.Join(dir, name)
		if data != nil {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if ro, err := Open(p, 100, true, c); err == nil {
			if data != nil {
				if now, _ := os.ReadFile(p); string(now) != string(data) {
					t.Fatalf("%s: a read-only open changed the file", name)
				}
			}
			_ = ro
		}
		return Open(p, 100, false, c)
	}
	refused := func(name string, err error, off int) {
		t.Helper()
		var ce *durable.CorruptError
		if !errors.As(err, &ce) || ce.Offset != int64(off) || !strings.HasSuffix(ce.File, name) {
			t.Fatalf("%s: %v, want a corruption at byte %d of the file", name, err, off)
		}
	}
	all := &Claim{Records: 6}
	// Every bit of every byte: refused at the record (or header) holding it.
	for at := range good {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[at] ^= 1 << bit
			_, err := try("flip", b, all)
			if err == nil {
				t.Fatalf("a flipped bit %d of byte %d was accepted", bit, at)
			}
			var ce *durable.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("byte %d: %v is not a corruption", at, err)
			}
		}
	}
	// A bit of the last record, which neither the seal (5) nor the claim
	// covers: a torn tail, cut (and the file sealed without it).
	b := append([]byte(nil), good...)
	b[len(b)-3] ^= 1
	l2, err := try("tail", b, &Claim{Records: 5})
	if err != nil {
		t.Fatalf("a torn last record past the seal and the claim: %v", err)
	}
	if got, total, _, err := l2.Alerts(); err != nil || len(got) != 5 || total != 5 {
		t.Fatalf("after cutting the torn tail: %d alerts, total %d", len(got), total)
	}
	l2.Close()
	// The same under a claim covering it: refused at the record.
	b = append([]byte(nil), good...)
	b[len(b)-3] ^= 1
	_, err = try("tail-claimed", b, all)
	refused("tail-claimed", err, offs[5])
	// Cut by one byte: under the claim refused; past seal and claim, cut.
	_, err = try("cut", good[:len(good)-1], all)
	refused("cut", err, offs[5])
	if l3, err := try("cut-unclaimed", good[:len(good)-1], nil); err != nil {
		t.Fatalf("the unsealed last alert cut short: %v", err)
	} else {
		l3.Close()
	}
	// In the sealed records, whatever the claim: refused.
	b = append([]byte(nil), good...)
	b[offs[4]+durable.RecordHeader+1] ^= 1
	_, err = try("sealed", b, nil)
	refused("sealed", err, offs[4])
	// Cut at a record boundary before the seal: refused at the end.
	_, err = try("short", good[:offs[3]], nil)
	refused("short", err, offs[3])
	// Deleted, the claim proving it existed.
	_, err = try("missing", nil, all)
	refused("missing", err, 0)
	// Not an alert log.
	_, err = try("magic", append([]byte("GTWRIT02"), good[8:]...), nil)
	refused("magic", err, 0)
}

// WriteEmpty meets a claim: repair's empty history in place of a lost one.
func TestWriteEmptyMeetsTheClaim(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteEmpty(path, 42); err != nil {
		t.Fatal(err)
	}
	l := open(t, path, 10, &Claim{Records: 42})
	if got, total, _, err := l.Alerts(); err != nil || len(got) != 0 || total != 42 {
		t.Fatalf("%d alerts, total %d", len(got), total)
	}
	l.Close()
}
