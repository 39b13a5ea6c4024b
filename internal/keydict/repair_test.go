package keydict

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepair(t *testing.T) {
	base := buildFile([]string{"k0", "k1", "", "k3-ü", "k4", "k5", "k6", "k7"})
	size := len(base.bytes)
	clone := func() []byte { return append([]byte(nil), base.bytes...) }
	// with returns base.entries with the given ids retired and cut to n ids
	// (n < 0: all), then padded with retired ids to pad ids.
	with := func(retire []int, n, pad int) []string {
		e := append([]string(nil), base.entries...)
		for _, i := range retire {
			e[i] = ""
		}
		if n >= 0 {
			e = e[:n]
		}
		for len(e) < pad {
			e = append(e, "")
		}
		return e
	}
	cases := []struct {
		name    string
		file    []byte
		minIDs  uint64
		want    []string   // the repaired dictionary, "" for a retired id
		changes [][]string // per planned change, in order, substrings it must hold
	}{
		{
			name: "damaged key",
			file: func() []byte { b := clone(); b[base.offs[4]+13] ^= 0x20; return b }(),
			want: with([]int{4}, -1, 0),
			changes: [][]string{{fmt.Sprintf("byte offset %d, id %d (KeyBase+4): key checksum: stored", base.offs[4], KeyBase+4),
				"make it a retired id (the id stays taken; its key is lost)"}},
		},
		{
			name: "damaged record header",
			file: func() []byte { b := clone(); b[base.offs[5]] ^= 0x08; return b }(),
			want: with(nil, 5, 0),
			changes: [][]string{{fmt.Sprintf("byte offset %d: record header checksum: stored", base.offs[5]),
				fmt.Sprintf("cut the file at byte offset %d, dropping the %d bytes from there to the end of the file", base.offs[5], size-base.offs[5])}},
		},
		{
			name: "duplicate key",
			file: append(clone(), record("k3-ü")...),
			want: append(with(nil, -1, 0), ""),
			changes: [][]string{{fmt.Sprintf("byte offset %d, id %d (KeyBase+8): duplicate key", size, KeyBase+8),
				fmt.Sprintf("make it a retired id (the id stays taken; the key keeps id %d (KeyBase+3))", KeyBase+3)}},
		},
		{
			name:    "torn tail",
			file:    append(clone(), record("torn")[:13]...),
			want:    with(nil, -1, 0),
			changes: [][]string{{fmt.Sprintf("byte offset %d: torn tail (record whose key runs past the end of the file), 13 bytes: cut", size)}},
		},
		{
			name:    "short of the store's ids",
			file:    clone(),
			minIDs:  12,
			want:    with(nil, -1, 12),
			changes: [][]string{{fmt.Sprintf("append 4 retired ids, %d (KeyBase+8) to %d (KeyBase+11): the store uses 12 key ids, the dictionary holds 8", KeyBase+8, KeyBase+11)}},
		},
		{
			name:    "damaged file header",
			file:    func() []byte { b := clone(); b[9] ^= 0x01; return b }(),
			want:    with(nil, -1, 0),
			changes: [][]string{{"byte offset 0: file header checksum: stored", "rewrite the file header"}},
		},
		{
			name: "everything at once",
			file: func() []byte {
				b := clone()
				b[0] ^= 0x01                  // magic
				b[base.offs[1]+12] ^= 0x01    // key k1
				setKey(b, base.offs[4], "k0") // a duplicate of k0
				b[base.offs[6]+9] ^= 0x40     // header of k6: framing lost
				return b
			}(),
			minIDs: 9,
			want:   with([]int{1, 4}, 6, 9),
			changes: [][]string{
				{"byte offset 0: file header: magic", "rewrite the file header"},
				{fmt.Sprintf("byte offset %d, id %d (KeyBase+1): key checksum", base.offs[1], KeyBase+1), "its key is lost"},
				{fmt.Sprintf("byte offset %d, id %d (KeyBase+4): duplicate key", base.offs[4], KeyBase+4), "the key keeps id " + fmt.Sprint(KeyBase)},
				{fmt.Sprintf("byte offset %d: record header checksum", base.offs[6]), fmt.Sprintf("dropping the %d bytes", size-base.offs[6])},
				{fmt.Sprintf("append 3 retired ids, %d (KeyBase+6) to %d (KeyBase+8)", KeyBase+6, KeyBase+8)},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "keys.dict")
			writeFile(t, path, c.file)
			p, err := PlanRepair(path, c.minIDs)
			if err != nil {
				t.Fatal(err)
			}
			text := p.String()
			t.Logf("plan:\n%s", text)
			if len(p.Changes) != len(c.changes) {
				t.Fatalf("plan has %d changes, want %d:\n%s", len(p.Changes), len(c.changes), text)
			}
			for i, want := range c.changes {
				for _, w := range want {
					if !strings.Contains(p.Changes[i], w) {
						t.Fatalf("change %d %q lacks %q", i, p.Changes[i], w)
					}
				}
			}
			retired := 0
			keys := 0
			for _, k := range c.want {
				if k == "" {
					retired++
				} else {
					keys++
				}
			}
			if p.IDs != len(c.want) || p.Keys != keys || p.Retired != retired {
				t.Fatalf("plan says %d ids, %d keys, %d retired; want %d, %d, %d", p.IDs, p.Keys, p.Retired, len(c.want), keys, retired)
			}
			if !strings.Contains(text, fmt.Sprintf("after the repair: %d ids: %d keys, %d retired", len(c.want), keys, retired)) {
				t.Fatalf("plan text lacks the result:\n%s", text)
			}
			// The plan holds the file: nothing else may open it meanwhile.
			if d, err := Open(path); !errors.Is(err, ErrInUse) {
				if err == nil {
					d.Close()
				}
				t.Fatalf("Open during a repair plan: %v, want ErrInUse", err)
			}
			if b := readFile(t, path); !bytes.Equal(b, c.file) {
				t.Fatal("planning changed the file")
			}

			backupDir := filepath.Join(dir, "backup")
			if err := p.Apply(backupDir); err != nil {
				t.Fatal(err)
			}
			if b := readFile(t, filepath.Join(backupDir, "keys.dict")); !bytes.Equal(b, c.file) {
				t.Fatal("the backup differs from the original")
			}
			if err := p.Apply(backupDir); err == nil {
				t.Fatal("a plan was applied twice")
			}
			if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("temporary file left behind: %v", err)
			}
			r, err := Check(path)
			if err != nil || !r.OK() || r.Torn != nil || r.IDs != len(c.want) || r.Keys != keys || r.Retired != retired {
				t.Fatalf("Check after repair: %+v, %v", r, err)
			}
			d := openT(t, path)
			expect(t, "repaired", d, c.want)
			// Retired ids are never reassigned: a new key gets the id after them.
			if id := mustID(t, d, "new-key"); id != KeyBase+uint64(len(c.want)) {
				t.Fatalf("new key got KeyBase+%d, want KeyBase+%d", id-KeyBase, len(c.want))
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = openT(t, path)
			defer d.Close()
			expect(t, "reopened", d, append(c.want, "new-key"))
		})
	}
}

func TestRepairNothingToDo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.dict")
	f := buildFile([]string{"a", "", "b"})
	writeFile(t, path, f.bytes)
	for _, minIDs := range []uint64{0, 2, 3} {
		p, err := PlanRepair(path, minIDs)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) != 0 || !strings.Contains(p.String(), "nothing to repair (3 ids: 2 keys, 1 retired)") {
			t.Fatalf("minIDs %d: plan %q, want nothing to do", minIDs, p)
		}
		backupDir := filepath.Join(dir, "backup")
		if err := p.Apply(backupDir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(backupDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("an empty plan made a backup: %v", err)
		}
		if b := readFile(t, path); !bytes.Equal(b, f.bytes) {
			t.Fatal("an empty plan changed the file")
		}
	}
	d := openT(t, path) // the plans released the lock
	d.Close()
}

func TestRepairRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.dict")
	f := buildFile([]string{"a", "b"})
	bad := append([]byte(nil), f.bytes...)
	bad[f.offs[1]+12] ^= 1
	writeFile(t, path, bad)

	// An earlier backup is never written over, and then nothing changes.
	backupDir := filepath.Join(dir, "backup")
	if err := os.Mkdir(backupDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(backupDir, "keys.dict"), []byte("earlier"))
	p, err := PlanRepair(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(backupDir); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("Apply over an earlier backup: %v", err)
	}
	if b := readFile(t, path); !bytes.Equal(b, bad) {
		t.Fatal("a failed Apply changed the file")
	}
	if b := readFile(t, filepath.Join(backupDir, "keys.dict")); string(b) != "earlier" {
		t.Fatal("the earlier backup was written over")
	}

	// A plan that is closed releases the file and cannot be applied.
	p, err = PlanRepair(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(filepath.Join(dir, "other")); err == nil {
		t.Fatal("a closed plan was applied")
	}

	// Not while the file is open.
	writeFile(t, path, f.bytes)
	d := openT(t, path)
	if p, err := PlanRepair(path, 0); !errors.Is(err, ErrInUse) {
		if err == nil {
			p.Close()
		}
		t.Fatalf("PlanRepair of an open file: %v, want ErrInUse", err)
	}
	d.Close()

	if _, err := PlanRepair(path, MaxVertex); err == nil {
		t.Fatal("PlanRepair accepted more ids than exist")
	}
	if _, err := PlanRepair(filepath.Join(dir, "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("PlanRepair of a missing file: %v", err)
	}
	writeFile(t, path, []byte("not a key dictionary, not even close"))
	if _, err := PlanRepair(path, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not recognisable") {
		t.Fatalf("PlanRepair of a foreign file: %v", err)
	}
}

// TestRepairVerifiesBeforeReplacing breaks a plan on purpose: Apply must
// find that the file it wrote does not read back as planned and leave the
// original in place.
func TestRepairVerifiesBeforeReplacing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.dict")
	f := buildFile([]string{"a", "b", "c"})
	bad := append([]byte(nil), f.bytes...)
	bad[f.offs[1]+12] ^= 1
	writeFile(t, path, bad)
	p, err := PlanRepair(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.retire = nil // the damaged record would be copied as it is
	if err := p.Apply(filepath.Join(dir, "backup")); err == nil || !strings.Contains(err.Error(), "does not read back as planned") {
		t.Fatalf("Apply of a broken plan: %v", err)
	}
	if b := readFile(t, path); !bytes.Equal(b, bad) {
		t.Fatal("a failed repair replaced the file")
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}
