package writes

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/durable"
)

// openClaimed opens path read-only and read-write with claim c and
// returns the errors; a refused open must change no byte.
func openClaimed(t *testing.T, path string, c *Claim) (ro, rw error) {
	t.Helper()
	before, _ := os.ReadFile(path)
	var errs [2]error
	for i, readOnly := range []bool{true, false} {
		l, err := OpenLogClaimed(path, readOnly, c)
		if err == nil {
			l.Close()
			if readOnly {
				if after, _ := os.ReadFile(path); string(after) != string(before) {
					t.Fatal("a read-only open changed the file")
				}
			}
			continue
		}
		errs[i] = err
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Fatal("a refused open changed the file")
		}
	}
	return errs[0], errs[1]
}

// refusedAt checks that err is a *durable.CorruptError naming path at off.
func refusedAt(t *testing.T, what string, err error, path string, off int64) {
	t.Helper()
	var ce *durable.CorruptError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != off {
		t.Fatalf("%s: got %v, want a refusal naming %s at byte offset %d", what, err, path, off)
	}
}

// TestLogClaimCoversTheTail: a record the store's durable state depends
// on (the claim counts it) is never taken for a torn tail: a flipped bit
// anywhere in the last record, a cut anywhere in it or at its start, a
// zeroed tail and a missing file are each refused with the file and the
// record's offset; the same damage past the claim is cut as a torn tail
// (but for a damaged record header, which no crash makes).
func TestLogClaimCoversTheTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LogFileName)
	want := entries(4)
	appendAll(t, path, want)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Claim(); got.Records != 4 {
		t.Fatalf("claim %+v after 4 appends", got)
	}
	last := int64(len(full) - len(record(&want[3])))
	covered, past := &Claim{Records: 4}, &Claim{Records: 3}
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := last; i < int64(len(full)); i++ {
		b := append([]byte(nil), full...)
		b[i] ^= 1 << (i % 8)
		write(b)
		ro, rw := openClaimed(t, path, covered)
		refusedAt(t, "a flipped bit (read-only)", ro, path, last)
		refusedAt(t, "a flipped bit (read-write)", rw, path, last)
		// Past the claim: a torn append, unless its authenticated length
		// is damaged (no crash does that).
		ro, _ = openClaimed(t, path, past)
		if length := i < last+8; length != (ro != nil) {
			t.Fatalf("byte %d flipped past the claim: %v", i, ro)
		}
	}
	for cut := last; cut < int64(len(full)); cut++ {
		write(full[:cut])
		ro, rw := openClaimed(t, path, covered)
		if cut == last { // a cut at the record's start: the file ends early
			refusedAt(t, "a cut at a record boundary", ro, path, cut)
		} else {
			refusedAt(t, "a cut (read-only)", ro, path, last)
		}
		if rw == nil {
			t.Fatalf("a cut at %d: the read-write open took it", cut)
		}
		// Past the claim: a torn tail, cut.
		if got := readClaimed(t, path, past); !reflect.DeepEqual(got, want[:3]) {
			t.Fatalf("cut at %d past the claim: %d entries", cut, len(got))
		}
		l, err := OpenLogClaimed(path, false, past)
		if err != nil {
			t.Fatalf("cut at %d past the claim: %v", cut, err)
		}
		l.Close()
		if after, _ := os.ReadFile(path); string(after) != string(full[:last]) {
			t.Fatalf("cut at %d past the claim: the torn record was not cut", cut)
		}
	}
	// A zeroed tail, as a crash may leave: refused when claimed.
	b := append(append([]byte(nil), full[:last]...), make([]byte, len(full)-int(last))...)
	write(b)
	ro, _ := openClaimed(t, path, covered)
	refusedAt(t, "a zeroed last record", ro, path, last)
	// Missing: refused when claimed, created when not.
	os.Remove(path)
	ro, rw := openClaimed(t, path, covered)
	refusedAt(t, "a missing file (read-only)", ro, path, 0)
	refusedAt(t, "a missing file (read-write)", rw, path, 0)
	if !strings.Contains(ro.Error(), "missing") {
		t.Fatalf("the refusal of a missing file does not say so: %v", ro)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused open created the file")
	}
	l, err = OpenLogClaimed(path, false, nil)
	if err != nil || !l.Created() || l.Claim().Records != 0 {
		t.Fatalf("a missing log without a claim: %v", err)
	}
	l.Close()
	// The header is checksummed: every flipped bit of it is refused.
	write(full)
	for i := 0; i < logHeader; i++ {
		b := append([]byte(nil), full...)
		b[i] ^= 1 << (i % 8)
		write(b)
		ro, rw := openClaimed(t, path, nil)
		refusedAt(t, "a flipped header bit (read-only)", ro, path, 0)
		refusedAt(t, "a flipped header bit (read-write)", rw, path, 0)
	}
}

func readClaimed(t *testing.T, path string, c *Claim) []Entry {
	t.Helper()
	l, err := OpenLogClaimed(path, true, c)
	if err != nil {
		t.Fatal(err)
	}
	var out []Entry
	for _, e := range l.entries {
		out = append(out, *e)
	}
	return out
}

// TestLogClaimAcrossPrune: pruning drops the oldest records but not the
// count of those appended, so the claim made before a prune still holds
// after it, and the file's header keeps how many were dropped.
func TestLogClaimAcrossPrune(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	es := entries(3000)
	appendAll(t, path, es)
	l, err := OpenLogClaimed(path, false, &Claim{Records: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.Prune(func(_ int, e *Entry) bool { return e.Offset < 2000 }); err != nil || n != 2000 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if c := l.Claim(); c.Records != 3000 {
		t.Fatalf("claim after a prune: %+v", c)
	}
	if err := l.Append(es[0]); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, c := range []*Claim{{Records: 3000}, {Records: 3001}} {
		l, err := OpenLogClaimed(path, true, c)
		if err != nil {
			t.Fatalf("claim %d after a prune: %v", c.Records, err)
		}
		if l.Len() != 1001 || l.Claim().Records != 3001 {
			t.Fatalf("after a prune: %d entries, claim %+v", l.Len(), l.Claim())
		}
	}
	ro, _ := openClaimed(t, path, &Claim{Records: 3002})
	if ro == nil {
		t.Fatal("a claim past the records appended was taken")
	}
}

// TestLogFormat1: a log written in format 1 (no header of its own) reads
// as records counted from 0, and a read-write open rewrites it in format
// 2 with the same entries.
func TestLogFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	want := entries(20)
	b := []byte(logMagicV1)
	for i := range want {
		b = append(b, record(&want[i])...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readClaimed(t, path, &Claim{Records: 20}); !reflect.DeepEqual(got, want) {
		t.Fatalf("format 1: read %d entries", len(got))
	}
	l, err := OpenLogClaimed(path, false, &Claim{Records: 20})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	after, _ := os.ReadFile(path)
	if string(after[:len(logMagic)]) != logMagic || binary.LittleEndian.Uint64(after[8:]) != 0 ||
		binary.LittleEndian.Uint32(after[16:]) != crc32.Checksum(after[:16], castagnoli) || string(after[logHeader:]) != string(b[len(logMagicV1):]) {
		t.Fatal("a read-write open did not rewrite format 1 as format 2 with the same records")
	}
	if got := readClaimed(t, path, &Claim{Records: 20}); !reflect.DeepEqual(got, want) {
		t.Fatalf("rewritten: read %d entries", len(got))
	}
}
