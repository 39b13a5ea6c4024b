package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/history"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/writes"
)

// applyFlush applies one edge and flushes: the store's durable state then
// records the claims of the files as they are.
func applyFlush(t *testing.T, d *Dir, typ uint16) {
	t.Helper()
	var b engine.Batch
	b.SetType(typ)
	b.Insert(1, 2)
	if _, err := d.Store.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := d.Store.Flush(); err != nil {
		t.Fatal(err)
	}
}

// refusedNaming checks that the read-write open with o, the read-only
// open (with ro: one that reads file) and Check refuse the data directory
// dir naming file (at byte offset off), and that none of them changed a
// byte of it.
func refusedNaming(t *testing.T, dir, file string, off int64, o Options, ro bool) {
	t.Helper()
	before := snapshotFiles(t, dir)
	d, err := OpenReadOnly(dir)
	if err == nil {
		d.Close()
	}
	if ro && (err == nil || !strings.Contains(err.Error(), file)) {
		t.Fatalf("read-only open: %v, want a refusal naming %s", err, file)
	}
	if d, err := Open(dir, o); err == nil || !strings.Contains(err.Error(), file) {
		if err == nil {
			d.Close()
		}
		t.Fatalf("read-write open: %v, want a refusal naming %s", err, file)
	}
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range r.Problems {
		found = found || p.File == file && (off < 0 || p.Offset == off)
	}
	if !found {
		t.Fatalf("check: problems %+v, want one naming %s at byte offset %d", r.Problems, file, off)
	}
	if after := snapshotFiles(t, dir); !equalFiles(before, after) {
		t.Fatal("a refused open or the check changed the data directory")
	}
}

func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == "LOCK" {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func equalFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestDeletedTypesIsRefused: once the store's durable state holds typed
// edges named in types.json, a deleted types.json (the next new name
// would take over the old edges) or an older copy with fewer names is
// refused by every open and by Check.
func TestDeletedTypesIsRefused(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	login, err := d.Types.ID("login")
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(TypesPath(dir))
	if _, err := d.Types.ID("refund"); err != nil {
		t.Fatal(err)
	}
	applyFlush(t, d, login)
	d.Close()
	if r, err := Check(dir); err != nil || !r.OK() {
		t.Fatalf("sound: %v %+v", err, r)
	}
	saved, _ := os.ReadFile(TypesPath(dir))

	os.Remove(TypesPath(dir))
	refusedNaming(t, dir, TypesPath(dir), 0, Options{}, true)
	if _, err := os.Stat(TypesPath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused open wrote types.json")
	}
	if err := os.WriteFile(TypesPath(dir), old, 0o644); err != nil {
		t.Fatal(err)
	}
	refusedNaming(t, dir, TypesPath(dir), int64(len(old)), Options{}, true)

	if err := os.WriteFile(TypesPath(dir), saved, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Types.Names(); len(got) != 3 || got[1] != "login" {
		t.Fatalf("restored: names %v", got)
	}
	d.Close()
}

// TestOldStoreAdoptsClaims: a store written before claims (none in its
// MANIFEST) opens as it is, with nothing proven; its first flush through
// a data directory records them, and from then on a deleted file is
// refused.
func TestOldStoreAdoptsClaims(t *testing.T) {
	dir := t.TempDir()
	s, err := engine.Open(StorePath(dir), &engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	td, err := typedict.Open(TypesPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	pay, _ := td.ID("pay")
	var b engine.Batch
	b.SetType(pay)
	b.Insert(1, 2)
	b.SetSourcePosition([]byte("\x02old"))
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()

	d, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("a store without claims: %v", err)
	}
	d.Close()
	// Deleted before any flush recorded claims: nothing proves it existed.
	saved, _ := os.ReadFile(TypesPath(dir))
	os.Remove(TypesPath(dir))
	if d, err = OpenReadOnly(dir); err != nil {
		t.Fatalf("without claims, a missing types.json is not refused: %v", err)
	}
	d.Close()
	os.WriteFile(TypesPath(dir), saved, 0o644)

	d, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	applyFlush(t, d, 0)
	if pos, _ := d.Store.SourcePosition(); string(pos) != "\x02old" {
		t.Fatalf("the source position became %q", pos)
	}
	d.Close()
	os.Remove(TypesPath(dir))
	refusedNaming(t, dir, TypesPath(dir), 0, Options{}, true)
}

// TestWritesLogTailTheStoreDependsOn: a flipped bit in the last record of
// writes.log, or a cut of 1 byte, when the store's durable state covers
// that record, is refused with the file and the record's offset (by
// Check too); the same damage to a record appended after the last flush
// is a torn tail, cut.
func TestWritesLogTailTheStoreDependsOn(t *testing.T) {
	dir := t.TempDir()
	o := Options{Create: true, Writes: true}
	d, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(off int64) writes.Entry {
		return writes.Entry{Topic: "w", Offset: off, Key: "k" + string(rune('a'+off)), At: time.Unix(1, 0), Outcome: writes.Outcome{Applied: true, Seq: uint64(off + 1)}}
	}
	for off := range int64(3) {
		if err := d.Writes.Append(entry(off)); err != nil {
			t.Fatal(err)
		}
	}
	applyFlush(t, d, 0) // the batch of the third write: durable, and its outcome claimed
	d.Close()
	wl := WritesLogPath(dir)
	good, err := os.ReadFile(wl)
	if err != nil {
		t.Fatal(err)
	}
	// The last record's offset: the size of a log of the first two.
	two := filepath.Join(t.TempDir(), "two.log")
	l, err := writes.OpenLog(two, false)
	if err != nil {
		t.Fatal(err)
	}
	for off := range int64(2) {
		if err := l.Append(entry(off)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	info, err := os.Stat(two)
	if err != nil {
		t.Fatal(err)
	}
	last := info.Size()
	for _, c := range []struct {
		name string
		bad  []byte
	}{
		{"a flipped bit in the last record", func() []byte { b := append([]byte(nil), good...); b[len(b)-3] ^= 4; return b }()},
		{"a cut of 1 byte", append([]byte(nil), good[:len(good)-1]...)},
	} {
		if err := os.WriteFile(wl, c.bad, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) { refusedNaming(t, dir, wl, last, Options{Writes: true}, false) })
	}

	// A write appended after the last flush: damage to it is a torn tail.
	if err := os.WriteFile(wl, good, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, Options{Writes: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Writes.Append(writes.Entry{Topic: "w", Offset: 3, Key: "kd", At: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	b, _ := os.ReadFile(wl)
	if err := os.WriteFile(wl, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := Check(dir); err != nil || !r.OK() {
		t.Fatalf("a torn tail past the claim: %v %+v", err, r.Problems)
	}
	d, err = Open(dir, Options{Writes: true})
	if err != nil {
		t.Fatalf("a torn tail past the claim: %v", err)
	}
	if d.Writes.Len() != 3 {
		t.Fatalf("%d entries after the torn one was cut", d.Writes.Len())
	}
	if _, ok := d.Writes.ByKey("kc"); !ok {
		t.Fatal("the claimed write's outcome is gone")
	}
	d.Close()
	// Deleted: refused.
	os.Remove(wl)
	refusedNaming(t, dir, wl, 0, Options{Writes: true}, true)
}

// TestHistoryTailTheStoreDependsOn: a flipped bit in the last sample of
// history.idx, or a cut of 1 byte, is refused (by Check too) instead of
// dropping the sample (a read as of its time would answer an older seq):
// the store's durable state claims it, and the index's clean close sealed
// it; a deleted index is refused.
func TestHistoryTailTheStoreDependsOn(t *testing.T) {
	dir := t.TempDir()
	o := Options{Create: true, Times: true, Store: engine.Options{KeepHistory: true}}
	d, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 3 {
		applyFlush(t, d, 0)
		m, _ := d.Store.Metrics()
		if err := d.Times.Record(t0.Add(time.Duration(i)*time.Second), m.LastSeq); err != nil {
			t.Fatal(err)
		}
	}
	applyFlush(t, d, 0) // records the claim of the third sample
	d.Close()
	path := filepath.Join(dir, history.FileName)
	good, _ := os.ReadFile(path)
	last := int64(len(good) - 24)
	for _, c := range []struct {
		name string
		bad  []byte
	}{
		{"a flipped bit in the last sample", func() []byte { b := append([]byte(nil), good...); b[len(b)-10] ^= 1; return b }()},
		{"a cut of 1 byte", append([]byte(nil), good[:len(good)-1]...)},
	} {
		if err := os.WriteFile(path, c.bad, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) { refusedNaming(t, dir, path, last, Options{Times: true}, true) })
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, Options{Times: true, Store: engine.Options{KeepHistory: true}})
	if err != nil {
		t.Fatal(err)
	}
	if seq, ok := d.Times.SeqAt(t0.Add(2 * time.Second)); !ok || seq != 3 {
		t.Fatalf("as of the third sample's time: seq %d %v, want 3", seq, ok)
	}
	d.Close()
	os.Remove(path)
	refusedNaming(t, dir, path, 0, Options{Times: true}, true)
}

// TestRepairReplacesLostFiles: repair puts a new sealed time index (one
// sample: now and the durable seq) in place of a lost one, and an empty
// list at the claimed generation in place of a damaged
// registered-analytics.json, keeping the damaged file in its backup; the
// directory is sound after. A lost types.json or writes.log it cannot
// repair: it says so and changes nothing.
func TestRepairReplacesLostFiles(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{Create: true, Times: true, Writes: true, Registered: true, Store: engine.Options{KeepHistory: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Types.ID("pay"); err != nil {
		t.Fatal(err)
	}
	if err := d.Registered.Save(testSpecs); err != nil {
		t.Fatal(err)
	}
	if err := d.Writes.Append(writes.Entry{Topic: "w", Key: "k", At: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	applyFlush(t, d, 0)
	m, _ := d.Store.Metrics()
	if err := d.Times.Record(time.Unix(1000, 0), m.LastSeq); err != nil {
		t.Fatal(err)
	}
	applyFlush(t, d, 0)
	m, _ = d.Store.Metrics()
	d.Close()

	os.Remove(filepath.Join(dir, HistoryName))
	reg := RegisteredAnalyticsPath(dir)
	damagedReg, _ := os.ReadFile(reg)
	damagedReg[len(damagedReg)-5] ^= 1
	os.WriteFile(reg, damagedReg, 0o644)
	var out strings.Builder
	if err := Repair(dir, false, &out); err != nil {
		t.Fatalf("plan: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "put a new time index") || !strings.Contains(out.String(), "put an empty list") {
		t.Fatalf("the plan does not say what it would do:\n%s", out.String())
	}
	out.Reset()
	if err := Repair(dir, true, &out); err != nil {
		t.Fatalf("repair: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "check after the repair: ok") {
		t.Fatalf("repair:\n%s", out.String())
	}
	backups, _ := filepath.Glob(filepath.Join(dir, "repair-*", RegisteredName))
	if len(backups) != 1 {
		t.Fatalf("backups of the damaged file: %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != string(damagedReg) {
		t.Fatal("the backup is not the damaged file")
	}
	d, err = Open(dir, Options{Times: true, Writes: true, Registered: true, Store: engine.Options{KeepHistory: true}})
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Times.Samples(); len(s) != 1 || s[0].Seq != m.DurableSeq {
		t.Fatalf("the new index: %+v, want one sample of seq %d", s, m.DurableSeq)
	}
	if len(d.Registered.Specs()) != 0 {
		t.Fatal("the new list of registered analytics is not empty")
	}
	d.Close()

	// Lost types.json: cannot be repaired; nothing changes.
	os.Remove(TypesPath(dir))
	before := snapshotFiles(t, dir)
	out.Reset()
	if err := Repair(dir, true, &out); err == nil || !strings.Contains(out.String(), "CANNOT REPAIR: "+TypesPath(dir)) {
		t.Fatalf("repair of a lost types.json: %v\n%s", err, out.String())
	}
	if !equalFiles(before, snapshotFiles(t, dir)) {
		t.Fatal("a refused repair changed the data directory")
	}
}

// TestAlertHistoryClaimedAndRepaired: the store records the alerts
// alerts.log holds sealed; a deleted alerts.log is refused (by both opens
// and the check, naming it), and so is a flipped bit in a sealed alert;
// repair puts an empty history at the claimed count in its place, keeping
// the damaged file in its backup, and the directory is sound after.
func TestAlertHistoryClaimedAndRepaired(t *testing.T) {
	dir := t.TempDir()
	o := Options{Create: true, Alerts: true, AlertsKeep: 100}
	d, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	al := []analytics.Alert{{Analytic: "hubs", Kind: "fan_in", ID: "a1"}, {Analytic: "hubs", Kind: "fan_in", ID: "a2"}}
	if err := d.Alerts.Append(al); err != nil {
		t.Fatal(err)
	}
	if err := d.Alerts.Sync(); err != nil {
		t.Fatal(err)
	}
	applyFlush(t, d, 0)
	d.Close()
	path := AlertsPath(dir)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := ro.Claims().get(AlertsName); !ok || n != 2 {
		t.Fatalf("the store claims %d alerts (%v), want 2", n, ok)
	}
	ro.Close()

	os.Remove(path)
	refusedNaming(t, dir, path, 0, o, false)
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-4] ^= 1
	os.WriteFile(path, flipped, 0o644)
	refusedNaming(t, dir, path, -1, o, false)

	var out strings.Builder
	if err := Repair(dir, true, &out); err != nil || !strings.Contains(out.String(), "put an empty alert history") || !strings.Contains(out.String(), "check after the repair: ok") {
		t.Fatalf("repair: %v\n%s", err, out.String())
	}
	backups, _ := filepath.Glob(filepath.Join(dir, "repair-*", AlertsName))
	if len(backups) != 1 {
		t.Fatalf("backups of the damaged file: %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != string(flipped) {
		t.Fatal("the backup is not the damaged file")
	}
	d, err = Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, total, _, err := d.Alerts.Alerts(); err != nil || len(got) != 0 || total != 2 {
		t.Fatalf("the repaired history: %d alerts, total %d; want none, total 2", len(got), total)
	}
}
