package main

import (
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/keydict"
)

// readDir reads all of the data directory at dir (read-only).
func readDir(t *testing.T, dir string) contents {
	t.Helper()
	d, err := datadir.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := readContents(d)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lastRecord returns the byte offset of the MANIFEST's last record
// (manifest.h: a 16-byte file header, then records of a 12-byte header
// whose first field is the payload length, and the payload).
func lastRecord(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off, last := int64(16), int64(-1)
	for off < int64(len(b)) {
		last = off
		off += 12 + int64(binary.LittleEndian.Uint32(b[off:]))
	}
	if last < 0 || off != int64(len(b)) {
		t.Fatalf("cannot walk the records of %s", path)
	}
	return last
}

func TestRepairNothingToDo(t *testing.T) {
	dir, _ := buildIntegrityDir(t)
	before := hashDir(t, dir)
	out, _, err := execute(t, "repair", "--dir", dir)
	if err != nil || out != "nothing to repair: "+dir+" is sound\n" {
		t.Fatalf("repair of a sound directory: %q, %v", out, err)
	}
	if !maps.Equal(before, hashDir(t, dir)) {
		t.Fatal("repair changed a sound directory")
	}
}

// TestRepairCutsADamagedManifest damages the MANIFEST record of the last
// flush: the store is refused; repair without --yes only says it would cut
// the MANIFEST there and move that flush's files aside; with --yes it keeps
// the original MANIFEST and those files in the backup, and the store opens
// to exactly the contents it had before that flush.
func TestRepairCutsADamagedManifest(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	a, b := filepath.Join(tmp, "a.el"), filepath.Join(tmp, "b.json")
	writeText(t, a, randomOps(31, 500, 80, false))
	writeJSON(t, b, randomOps(32, 300, 50, true))
	if _, _, err := execute(t, "load", "--dir", dir, "--in-edges", a); err != nil {
		t.Fatal(err)
	}
	want := readDir(t, dir)
	segsBefore, _ := filepath.Glob(filepath.Join(datadir.StorePath(dir), "*.seg"))
	if _, _, err := execute(t, "load", "--dir", dir, b); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(datadir.StorePath(dir), "MANIFEST")
	last := lastRecord(t, manifest)
	if err := flipAt(manifest, last+12+3); err != nil {
		t.Fatal(err)
	}
	if _, err := datadir.OpenReadOnly(dir); !namesFile(err, manifest) {
		t.Fatalf("the damaged store opened, or with another error: %v", err)
	}
	original, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	segsAll, _ := filepath.Glob(filepath.Join(datadir.StorePath(dir), "*.seg"))
	var added []string
	for _, s := range segsAll {
		if !strings.Contains(strings.Join(segsBefore, " "), s) {
			added = append(added, filepath.Base(s))
		}
	}
	if len(added) == 0 {
		t.Fatal("the second load added no segment file")
	}

	before := hashDir(t, dir)
	out, _, err := execute(t, "repair", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(before, hashDir(t, dir)) {
		t.Fatal("repair without --yes changed the data directory")
	}
	for _, w := range append([]string{"found: " + manifest, "would", "cut " + manifest, "nothing was changed: run again with --yes"}, added...) {
		if !strings.Contains(out, w) {
			t.Errorf("repair's plan lacks %q:\n%s", w, out)
		}
	}

	out, _, err = execute(t, "repair", "--dir", dir, "--yes")
	if err != nil {
		t.Fatalf("repair --yes: %v\n%s", err, out)
	}
	if !strings.Contains(out, "check after the repair: ok") {
		t.Errorf("repair --yes printed:\n%s", out)
	}
	backups, _ := filepath.Glob(filepath.Join(dir, "repair-*"))
	if len(backups) != 1 {
		t.Fatalf("want one backup directory, have %v", backups)
	}
	if got, err := os.ReadFile(filepath.Join(backups[0], "MANIFEST")); err != nil || string(got) != string(original) {
		t.Fatalf("the backup does not hold the original MANIFEST (%v)", err)
	}
	for _, f := range added {
		if _, err := os.Stat(filepath.Join(backups[0], f)); err != nil {
			t.Errorf("%s was not moved into the backup: %v", f, err)
		}
		if _, err := os.Stat(filepath.Join(datadir.StorePath(dir), f)); err == nil {
			t.Errorf("%s is still in the store", f)
		}
	}
	got := readDir(t, dir)
	if !maps.Equal(got.out, want.out) || !maps.Equal(got.in, want.in) || got.pos != want.pos {
		t.Fatalf("after the repair the store holds %d edges, want the %d it had before the damaged flush", len(got.out), len(want.out))
	}
	if _, _, err := execute(t, "inspect", "--dir", dir, "--verify"); err != nil {
		t.Fatalf("verify after the repair: %v", err)
	}
	out, _, err = execute(t, "repair", "--dir", dir)
	if err != nil || !strings.Contains(out, "nothing to repair") {
		t.Fatalf("a second repair: %q, %v", out, err)
	}
}

// TestRepairRetiresADamagedKey damages one key of keys.dict: repair retires
// its id (its vertex keeps its edges, without a key), every other key keeps
// its id, and a new key never takes the retired one.
func TestRepairRetiresADamagedKey(t *testing.T) {
	dir, want := buildIntegrityDir(t)
	kp := datadir.KeysPath(dir)
	// The first record holds the key of id KeyBase: damage its key bytes.
	if err := flipAt(kp, 16+12); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execute(t, "inspect", "--dir", dir, "--verify"); err == nil || !strings.Contains(err.Error(), kp) {
		t.Fatalf("verify of a damaged keys.dict: %v", err)
	}
	out, _, err := execute(t, "repair", "--dir", dir, "--yes")
	if err != nil {
		t.Fatalf("repair --yes: %v\n%s", err, out)
	}
	got := readDir(t, dir)
	if !maps.Equal(got.out, want.out) || !maps.Equal(got.in, want.in) {
		t.Fatal("repairing keys.dict changed the edges")
	}
	lost := want.keys[keydict.KeyBase]
	delete(want.keys, keydict.KeyBase)
	if !maps.Equal(got.keys, want.keys) {
		t.Fatalf("after the repair: %d keys, want every key but %q at its id (%d)", len(got.keys), lost, len(want.keys))
	}
	d, err := datadir.Open(dir, datadir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	id, err := d.Keys.ID("a key never seen")
	if err != nil {
		t.Fatal(err)
	}
	if id <= keydict.KeyBase || id < keydict.KeyBase+uint64(len(want.keys)) {
		t.Fatalf("a new key got id %d, which a vertex of the store may use", id)
	}
}

// TestRepairRetiresLostKeys removes keys.dict while the store uses key
// ids: the store is refused (new keys would take used ids); repair creates
// keys.dict with those ids retired.
func TestRepairRetiresLostKeys(t *testing.T) {
	dir, want := buildIntegrityDir(t)
	if err := os.Remove(datadir.KeysPath(dir)); err != nil {
		t.Fatal(err)
	}
	_, err := datadir.Open(dir, datadir.Options{})
	if err == nil || !namesFile(err, datadir.KeysPath(dir)) {
		t.Fatalf("open without keys.dict: %v, want a *KeyBoundError", err)
	}
	if _, err := os.Stat(datadir.KeysPath(dir)); err == nil {
		t.Fatal("the refused open created keys.dict")
	}
	out, _, err := execute(t, "repair", "--dir", dir, "--yes")
	if err != nil {
		t.Fatalf("repair --yes: %v\n%s", err, out)
	}
	got := readDir(t, dir)
	if !maps.Equal(got.out, want.out) || len(got.keys) != 0 {
		t.Fatalf("after the repair: %d edges (want %d), %d keys (want none)", len(got.out), len(want.out), len(got.keys))
	}
	out, _, err = execute(t, "inspect", "--dir", dir)
	if err != nil || !strings.Contains(out, "retired ids whose keys were lost") {
		t.Fatalf("inspect after the repair: %v\n%s", err, out)
	}
}

// TestRepairLeavesWhatItCannotRepair damages data in a live segment file:
// repair lists it as beyond repair, exits 1 and changes nothing.
func TestRepairLeavesWhatItCannotRepair(t *testing.T) {
	dir, _ := buildIntegrityDir(t)
	segs, _ := filepath.Glob(filepath.Join(datadir.StorePath(dir), "*.seg"))
	info, err := os.Stat(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := flipAt(segs[0], info.Size()/2); err != nil {
		t.Fatal(err)
	}
	before := hashDir(t, dir)
	for _, args := range [][]string{{"repair", "--dir", dir}, {"repair", "--dir", dir, "--yes"}} {
		out, _, err := execute(t, args...)
		if err == nil || !strings.Contains(out, "CANNOT REPAIR: "+segs[0]) {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	if !maps.Equal(before, hashDir(t, dir)) {
		t.Fatal("repair changed a directory it cannot repair")
	}
}
