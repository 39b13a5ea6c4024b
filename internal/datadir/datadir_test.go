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
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/writes"
)

func apply(t *testing.T, s *engine.Store, src, dst uint64) {
	t.Helper()
	var b engine.Batch
	b.Insert(src, dst)
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestNumberMapping: a data directory maps numbers from keydict.MapFrom up
// unless its store already holds such numbers as they are, keeps the same
// decision at every open, and refuses a store and a dictionary that
// disagree.
func TestNumberMapping(t *testing.T) {
	const big = keydict.MapFrom + 12345
	t.Run("new directory maps", func(t *testing.T) {
		dir := t.TempDir()
		d, err := Open(dir, Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if !d.MapsNumbers() {
			t.Fatal("a new data directory does not map numbers")
		}
		id, err := d.Keys.NumID(big)
		if err != nil || !keydict.IsKeyID(id) {
			t.Fatalf("NumID(%d) = %d, %v", big, id, err)
		}
		if err := d.Keys.Sync(); err != nil {
			t.Fatal(err)
		}
		apply(t, d.Store, 1, id)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func() (*Dir, error){
			func() (*Dir, error) { return Open(dir, Options{}) },
			func() (*Dir, error) { return OpenReadOnly(dir) },
		} {
			d, err := open()
			if err != nil {
				t.Fatal(err)
			}
			if !d.MapsNumbers() {
				t.Error("reopened: does not map numbers")
			}
			if got, ok := d.Keys.LookupNum(big); !ok || got != id {
				t.Errorf("reopened: LookupNum(%d) = %d, %v; want %d", big, got, ok, id)
			}
			d.Close()
		}
	})
	t.Run("store with large numbers as they are", func(t *testing.T) {
		dir := t.TempDir()
		s, err := engine.Open(StorePath(dir), &engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		apply(t, s, 1, big)
		s.Close()
		d, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.MapsNumbers() {
			t.Fatal("maps numbers over a store that holds them as they are")
		}
		if id, err := d.Keys.NumID(big); err != nil || id != big {
			t.Fatalf("NumID(%d) = %d, %v; want it as it is", big, id, err)
		}
		d.Close()
		// A dictionary that maps numbers beside that store: refused.
		k, err := keydict.Open(KeysPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		k.SetMapNumbers(true)
		if _, err := k.NumID(big + 1); err != nil {
			t.Fatal(err)
		}
		k.Close()
		for name, open := range map[string]func() (*Dir, error){
			"Open":         func() (*Dir, error) { return Open(dir, Options{}) },
			"OpenReadOnly": func() (*Dir, error) { return OpenReadOnly(dir) },
		} {
			var me *MixedIDsError
			if d, err := open(); !errors.As(err, &me) || me.Numbers != 1 || me.Low != big+1 {
				if d != nil {
					d.Close()
				}
				t.Errorf("%s: %v, want a MixedIDsError", name, err)
			}
		}
	})
}

// TestCheckReportsMixedIDs: Check finds what Open refuses, and writes
// nothing.
func TestCheckReportsMixedIDs(t *testing.T) {
	const big = keydict.MapFrom + 5
	dir := t.TempDir()
	s, err := engine.Open(StorePath(dir), &engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, big, 2)
	s.Close()
	k, err := keydict.Open(KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	k.SetMapNumbers(true)
	if _, err := k.NumID(big); err != nil {
		t.Fatal(err)
	}
	k.Close()
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range r.Problems {
		if p.File == KeysPath(dir) && strings.Contains(p.What, "a number may be two vertices") {
			found = true
		}
	}
	if !found {
		t.Fatalf("Check problems %v: the mixed ids are not among them", r.Problems)
	}
}

// Check reports a damaged analytics checkpoint as a note (it holds no
// data: serve computes without it), with its file and offset, and writes
// nothing; DropCheckpoint removes it, and a missing one is no error.
func TestCheckNotesADamagedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, d.Store, 1, 2)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ck := CheckpointPath(dir)
	if err := os.WriteFile(ck, []byte("GTCKPT\x00\x01 and then garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(r.Notes) != 1 || r.Notes[0].File != ck || r.Notes[0].Offset != 8 {
		t.Fatalf("problems %v, notes %v", r.Problems, r.Notes)
	}
	if b, err := os.ReadFile(ck); err != nil || string(b) != "GTCKPT\x00\x01 and then garbage" {
		t.Fatalf("check changed the checkpoint: %q %v", b, err)
	}
	if err := DropCheckpoint(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ck); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the checkpoint is still there: %v", err)
	}
	if err := DropCheckpoint(dir); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDropsTimeSamplesTheStoreLost: a time index sample of a seq above
// the store's newest (written before a crash lost that seq) is dropped by
// the next read-write open, whoever opens the store, before anything new
// is applied under that seq.
func TestOpenDropsTimeSamplesTheStoreLost(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var b engine.Batch
		b.Insert(uint64(i), uint64(i+1))
		if _, err := d.Store.Apply(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Store.Flush(); err != nil { // seq 3 is durable
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, history.FileName)
	x, err := history.Open(path, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for i, seq := range []uint64{2, 5} { // 5: applied, sampled, then lost
		if err := x.Record(t0.Add(time.Duration(i)*time.Second), seq); err != nil {
			t.Fatal(err)
		}
	}
	x.Close()
	if d, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	y, err := history.Open(path, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	if seq, ok := y.SeqAt(t0.Add(time.Hour)); y.Len() != 1 || !ok || seq != 2 {
		t.Fatalf("after the open: %d samples, the newest seq %d; want only the sample of seq 2", y.Len(), seq)
	}
}

// TestCheckReportsADamagedWritesLog: a damaged writes.log is a problem
// of the data directory, with its byte offset, which Check reports
// without writing and a read-write Open with writes refuses.
func TestCheckReportsADamagedWritesLog(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{Create: true, Writes: true})
	if err != nil {
		t.Fatal(err)
	}
	for off := range int64(2) {
		if err := d.Writes.Append(writes.Entry{Topic: "w", Offset: off, Key: "k", At: time.Unix(1, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := Check(dir); err != nil || !r.OK() {
		t.Fatalf("a sound writes.log: %v, %+v", err, r)
	}
	wl := WritesLogPath(dir)
	b, err := os.ReadFile(wl)
	if err != nil {
		t.Fatal(err)
	}
	b[40] ^= 1 // in the first record's payload (the record starts after the file's 20-byte header)
	if err := os.WriteFile(wl, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || len(r.Problems) != 1 || r.Problems[0].File != wl || r.Problems[0].Offset != 20 {
		t.Fatalf("problems %+v", r.Problems)
	}
	if after, err := os.ReadFile(wl); err != nil || string(after) != string(b) {
		t.Fatal("check changed writes.log")
	}
	if _, err := Open(dir, Options{Writes: true}); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("opening with a damaged writes.log: %v", err)
	}
}

// TestInEdgesMismatchSaysBothWaysOut: --in-edges against a store created
// with the other setting is refused with an error that names the data
// directory and both ways out, and both work: leaving the flag out opens
// the store as it is, another --dir gets a new store with the setting.
func TestInEdgesMismatchSaysBothWaysOut(t *testing.T) {
	for _, created := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "graphtide-data")
		d, err := Open(dir, Options{Create: true, InEdges: &created})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		given := !created
		_, err = Open(dir, Options{Create: true, InEdges: &given})
		var me *InEdgesMismatchError
		if !errors.As(err, &me) || me.Dir != dir || me.Given != given {
			t.Fatalf("created with in-edges %v, opened with %v: %v, want an *InEdgesMismatchError for %s", created, given, err, dir)
		}
		for _, w := range []string{dir, "leave out --in-edges", "another --dir"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error lacks %q: %v", w, err)
			}
		}
		// Way out 1: without the flag, the store as it is.
		d, err = Open(dir, Options{Create: true})
		if err != nil {
			t.Fatalf("leaving out --in-edges: %v", err)
		}
		if d.Store.InEdges() != created {
			t.Errorf("the store opened without --in-edges has in-edges %v, want %v", d.Store.InEdges(), created)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		// Way out 2: another --dir, a new store with the setting asked for.
		other := filepath.Join(t.TempDir(), "graphtide-other")
		d, err = Open(other, Options{Create: true, InEdges: &given})
		if err != nil {
			t.Fatalf("another --dir: %v", err)
		}
		if d.Store.InEdges() != given {
			t.Errorf("the new store has in-edges %v, want %v", d.Store.InEdges(), given)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
