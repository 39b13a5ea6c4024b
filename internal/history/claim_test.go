package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
)

// TestClaimCoversTheTail: with the store's claim of its newest sample,
// every flipped bit of the last record, every cut of it (at its start
// too), a zeroed last record and a missing file are refused with the file
// and the record's offset, and nothing is changed; past the claim the
// same damage is a torn tail, cut, as before.
func TestClaimCoversTheTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	good := writeSamples(t, path, 5) // seqs 10..50
	x, err := Open(path, 1000, true)
	if err != nil {
		t.Fatal(err)
	}
	if c := x.Claim(); c.Newest != 50 {
		t.Fatalf("claim %+v, want the newest sample's seq 50", c)
	}
	last := int64(len(good) - recordSize)
	covered, past := &Claim{Newest: 50}, &Claim{Newest: 40}
	check := func(what string, data []byte, refusedAt int64) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, ro := range []bool{true, false} {
			x, err := OpenClaimed(path, 1000, ro, covered)
			var ce *durable.CorruptError
			if !errors.As(err, &ce) || ce.File != path || ce.Offset != refusedAt {
				t.Fatalf("%s (read-only %v): %v, want a refusal at byte offset %d", what, ro, err, refusedAt)
			}
			if x != nil {
				x.Close()
			}
			if after, _ := os.ReadFile(path); string(after) != string(data) {
				t.Fatalf("%s: a refused open changed the file", what)
			}
		}
		if len(data) == 0 {
			return
		}
		// Past the claim: a torn tail, the sample of seq 50 cut.
		x, err := OpenClaimed(path, 1000, false, past)
		if err != nil {
			t.Fatalf("%s past the claim: %v", what, err)
		}
		if x.Len() != 4 || x.Claim().Newest != 40 {
			t.Fatalf("%s past the claim: %d samples, newest %d", what, x.Len(), x.Claim().Newest)
		}
		x.Close()
	}
	for i := last; i < int64(len(good)); i++ {
		b := append([]byte(nil), good...)
		b[i] ^= 1 << (i % 8)
		check("a flipped bit", b, last)
	}
	for cut := last + 1; cut < int64(len(good)); cut++ {
		check("a cut", append([]byte(nil), good[:cut]...), last)
	}
	check("a cut at the record's start", append([]byte(nil), good[:last]...), last)
	check("a zeroed last record", append(append([]byte(nil), good[:last]...), make([]byte, recordSize)...), last)

	os.Remove(path)
	for _, ro := range []bool{true, false} {
		_, err := OpenClaimed(path, 1000, ro, covered)
		var ce *durable.CorruptError
		if !errors.As(err, &ce) || ce.File != path || !strings.Contains(ce.What, "missing") {
			t.Fatalf("a missing index (read-only %v): %v", ro, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a refused open created the file")
		}
	}
	// A claim of an index without samples: the file must exist, nothing
	// more.
	if _, err := OpenClaimed(path, 1000, true, &Claim{}); err == nil {
		t.Fatal("a missing index claimed without samples was taken")
	}
	x, err = OpenClaimed(path, 1000, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	if x, err = OpenClaimed(path, 1000, false, &Claim{}); err != nil {
		t.Fatal(err)
	}
	x.Close()
}

// TestClaimSurvivesTrimAndStaleDrop: a trim and the drop of samples above
// the store's newest seq keep the claimed sample, so its claim still holds.
func TestClaimSurvivesTrimAndStaleDrop(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	writeSamples(t, path, 10) // seqs 10..100
	x, err := OpenClaimed(path, 100, false, &Claim{Newest: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Trim(95); err != nil {
		t.Fatal(err)
	}
	if err := x.Record(time.Unix(3000, 0), 130); err != nil {
		t.Fatal(err)
	}
	if c := x.Claim(); c.Newest != 130 {
		t.Fatalf("claim %+v after a record of seq 130", c)
	}
	x.Close()
	// A crash lost seq 130 (the store's newest is 120): its sample goes,
	// and the claim of seq 100 (made when 100 was newest) holds.
	x, err = OpenClaimed(path, 120, false, &Claim{Newest: 100})
	if err != nil {
		t.Fatal(err)
	}
	if c := x.Claim(); c.Newest != 100 || x.Len() != 2 { // 90 (the trim kept it: it maps times up to 100) and 100
		t.Fatalf("after the drop: claim %+v, %d samples", c, x.Len())
	}
	x.Close()
}

// TestCloseSealsEverySample: a clean Close writes the file whole with
// every sample sealed, so that a flipped bit anywhere and a cut anywhere
// (a whole record included) is refused, without any claim; samples
// recorded after a reopen are past the seal (a crash may tear the last),
// until the next close; format 1 opens and is rewritten.
func TestCloseSealsEverySample(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	writeSamples(t, path, 3)
	x, err := Open(path, 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	sealed, _ := os.ReadFile(path)
	if len(sealed) != headerSize+3*recordSize {
		t.Fatalf("sealed: %d bytes", len(sealed))
	}
	refused := func(what string, b []byte) {
		t.Helper()
		os.WriteFile(path, b, 0o644)
		for _, ro := range []bool{true, false} {
			var ce *durable.CorruptError
			if _, err := Open(path, 1000, ro); !errors.As(err, &ce) || ce.File != path {
				t.Fatalf("%s (read-only %v): %v, want a refusal", what, ro, err)
			}
			if after, _ := os.ReadFile(path); string(after) != string(b) {
				t.Fatalf("%s: a refused open changed the file", what)
			}
		}
	}
	for i := range sealed {
		for bit := range 8 {
			b := append([]byte(nil), sealed...)
			b[i] ^= 1 << bit
			refused(fmt.Sprintf("bit %d of byte %d flipped", bit, i), b)
		}
	}
	for cut := range len(sealed) {
		refused(fmt.Sprintf("cut at %d", cut), sealed[:cut])
	}
	// Reopened: a new sample is past the seal; a crash may tear it.
	os.WriteFile(path, sealed, 0o644)
	x, err = Open(path, 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Record(time.Unix(2000, 0), 99); err != nil {
		t.Fatal(err)
	}
	appended, _ := os.ReadFile(path)
	x.Close()
	os.WriteFile(path, appended[:len(appended)-1], 0o644)
	if x, err = Open(path, 1000, true); err != nil || x.Len() != 3 {
		t.Fatalf("the unsealed sample torn: %v", err)
	}
	os.WriteFile(path, appended[:len(appended)-recordSize-1], 0o644)
	if _, err = Open(path, 1000, true); err == nil {
		t.Fatal("a cut into a sealed sample was taken")
	}
	// Format 1: read, and rewritten in format 2 by a read-write open.
	v1 := append([]byte(magicV1), sealed[headerSize:]...)
	os.WriteFile(path, v1, 0o644)
	if x, err = Open(path, 1000, true); err != nil || x.Len() != 3 {
		t.Fatalf("format 1: %v", err)
	}
	if x, err = Open(path, 1000, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(sealed) {
		t.Fatal("format 1 after a read-write open is not format 2 with every sample sealed")
	}
	x.Close()
}
