package typedict

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/memdir"
)

func TestNamesKeepTheirNumbersAcrossReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "types.json")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("an empty dictionary wrote a file: %v", err)
	}
	// Concurrent first sightings of a few names: each gets one number.
	names := []string{"payment", "login", "shares-device", "refund"}
	var wg sync.WaitGroup
	got := make([][]uint16, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range names {
				id, err := d.ID(n)
				if err != nil {
					t.Error(err)
				}
				got[g] = append(got[g], id)
			}
		}()
	}
	wg.Wait()
	seen := map[uint16]bool{}
	for i, n := range names {
		id := got[0][i]
		for g := range got {
			if got[g][i] != id {
				t.Fatalf("%s got %d and %d", n, id, got[g][i])
			}
		}
		if id == 0 || seen[id] {
			t.Fatalf("%s got %d", n, id)
		}
		seen[id] = true
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		if id, err := r.Lookup(n); err != nil || id != got[0][i] || r.Name(id) != n {
			t.Errorf("after reopening, %s is %d (%v), want %d", n, id, err, got[0][i])
		}
	}
	if _, err := r.ID("new"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only add: %v", err)
	}
	if r.Name(0) != Default || r.Name(900) != "900" {
		t.Errorf("names of 0 and 900: %q %q", r.Name(0), r.Name(900))
	}
	ts, err := r.Set("payment, default,7")
	if err != nil || !ts.Has(got[0][0]) || !ts.Has(0) || !ts.Has(7) || ts.Has(got[0][1]) {
		t.Errorf("set: %v", err)
	}
	if _, err := r.Set("payment,wire"); err == nil || !strings.Contains(err.Error(), `unknown edge type "wire"`) || !strings.Contains(err.Error(), "payment") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := r.Set(" , "); err == nil {
		t.Error("an empty list was accepted")
	}
}

func TestBadNamesAndFullDictionary(t *testing.T) {
	// A write and two fsyncs per type: on tmpfs (memdir), not the disk.
	d, err := Open(filepath.Join(memdir.TempDir(t), "types.json"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := d.ID(Default); err != nil || id != 0 {
		t.Errorf("%s: %d, %v", Default, id, err)
	}
	for _, n := range []string{"", "12", "a,b", "tab\there", strings.Repeat("x", MaxNameLen+1), "\xff"} {
		if _, err := d.ID(n); err == nil {
			t.Errorf("%q was accepted", n)
		}
	}
	for i := 1; i < engine.MaxEdgeTypes; i++ {
		if id, err := d.ID(fmt.Sprintf("t%d", i)); err != nil || int(id) != i {
			t.Fatalf("type %d: %d, %v", i, id, err)
		}
	}
	if _, err := d.ID("one-too-many"); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Errorf("a full dictionary: %v", err)
	}
}

func TestDamagedFilesAreRefused(t *testing.T) {
	for _, c := range []struct{ body, why string }{
		{`{"format":1,"types":["default","a","a"]}`, `the name "a" is taken`},
		{`{"format":2,"types":["default"]}`, "format 2"},
		{`{"format":1,"types":["x"]}`, `type 0 must be "default"`},
		{`{"format":1,"types":["default","7"]}`, "is a number"},
		{`{"format":1,"types":["default"],"extra":1}`, "unknown field"},
		{`{"format":1,"ty`, "not a type dictionary"},
	} {
		path := filepath.Join(t.TempDir(), "types.json")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path)
		if err == nil || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file and saying %q", c.body, err, c.why)
		}
	}
}

// Every byte of a file this package wrote is covered: a flip anywhere is
// refused with a *CorruptError naming the file.
func TestEveryFlippedByteIsRefused(t *testing.T) {
	good := encode([]string{Default, "payment", "login"})
	dir := memdir.TempDir(t) // a file written per byte: on tmpfs, not the disk
	path := filepath.Join(dir, "types.json")
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := OpenReadOnly(path); err != nil || d.Name(2) != "login" {
		t.Fatalf("the good file: %v", err)
	}
	for off := range good {
		for bit := range 8 {
			b := slices.Clone(good)
			b[off] ^= 1 << bit
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := OpenReadOnly(path)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != path {
				t.Fatalf("byte %d bit %d (%q): %v, want a *CorruptError naming the file", off, bit, b, err)
			}
		}
	}
	if err := os.WriteFile(path, append(slices.Clone(good), ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(path); err == nil || !strings.Contains(err.Error(), "not in the form") {
		t.Errorf("a byte after the object: %v", err)
	}
}
