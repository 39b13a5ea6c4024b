package keydict

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openT(t *testing.T, path string) *Dict {
	t.Helper()
	d, err := Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return d
}

func mustID(t *testing.T, d *Dict, key string) uint64 {
	t.Helper()
	id, err := d.ID(key)
	if err != nil {
		t.Fatalf("ID(%q): %v", key, err)
	}
	return id
}

// The encoders below are the test's own reading of the format in the
// package documentation, independent of the package's encoder.

var testCRC = crc32.MakeTable(crc32.Castagnoli)

// fileHdr is the 16-byte file header.
func fileHdr() []byte {
	b := append([]byte(nil), "GTKEYS02"...)
	b = binary.LittleEndian.AppendUint32(b, 2)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, testCRC))
}

// record encodes one record as Dict writes it.
func record(key string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(key)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum([]byte(key), testCRC))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, testCRC))
	return append(b, key...)
}

// retiredRecord encodes a retired-id marker.
func retiredRecord() []byte {
	b := make([]byte, 8)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, testCRC))
}

// recordV1 encodes a record of format 1, written by older graphtides.
func recordV1(key string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(key)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum([]byte(key), testCRC))
	return append(b, key...)
}

func TestDenseStableAndRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	d := openT(t, path)
	keys := []string{"alice", "bob", "carol", "ünïcødé", strings.Repeat("x", MaxKeyLen)}
	for i, k := range keys {
		if got := mustID(t, d, k); got != KeyBase+uint64(i) {
			t.Fatalf("ID(%q) = %d, want %d", k, got, KeyBase+uint64(i))
		}
	}
	// Asking again returns the same ids and assigns nothing.
	for i, k := range keys {
		if got := mustID(t, d, k); got != KeyBase+uint64(i) {
			t.Fatalf("second ID(%q) = %d, want %d", k, got, KeyBase+uint64(i))
		}
	}
	if d.Len() != len(keys) {
		t.Fatalf("Len = %d, want %d", d.Len(), len(keys))
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	// Unsynced ids are written by Close.
	if got := mustID(t, d, "dave"); got != KeyBase+uint64(len(keys)) {
		t.Fatalf("ID(dave) = %d", got)
	}
	keys = append(keys, "dave")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	wantSize := len(fileHdr())
	for _, k := range keys {
		wantSize += len(record(k))
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != int64(wantSize) {
		t.Fatalf("file size = %v (err %v), want %d", fi.Size(), err, wantSize)
	}

	d = openT(t, path)
	defer d.Close()
	if d.Len() != len(keys) {
		t.Fatalf("Len after reopen = %d, want %d", d.Len(), len(keys))
	}
	for i, k := range keys {
		id, ok := d.Lookup(k)
		if !ok || id != KeyBase+uint64(i) {
			t.Fatalf("Lookup(%q) = %d,%v after reopen, want %d", k, id, ok, KeyBase+uint64(i))
		}
		back, ok := d.Key(id)
		if !ok || back != k {
			t.Fatalf("Key(%d) = %q,%v, want %q", id, back, ok, k)
		}
	}
	if got := mustID(t, d, "erin"); got != KeyBase+uint64(len(keys)) {
		t.Fatalf("ID(erin) after reopen = %d, want %d", got, KeyBase+uint64(len(keys)))
	}
}

func TestLookupAndKeyMisses(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "keys.log"))
	defer d.Close()
	mustID(t, d, "a")
	if _, ok := d.Lookup("b"); ok {
		t.Fatal("Lookup of unknown key reported true")
	}
	if d.Len() != 1 {
		t.Fatal("Lookup assigned an id")
	}
	for _, id := range []uint64{0, 5, KeyBase - 1, KeyBase + 1, MaxVertex, MaxVertex + 1, 1<<64 - 1} {
		if k, ok := d.Key(id); ok {
			t.Fatalf("Key(%d) = %q, want miss", id, k)
		}
	}
	if k, ok := d.Key(KeyBase); !ok || k != "a" {
		t.Fatalf("Key(KeyBase) = %q,%v", k, ok)
	}
	if !IsKeyID(KeyBase) || !IsKeyID(MaxVertex) || IsKeyID(KeyBase-1) || IsKeyID(MaxVertex+1) {
		t.Fatal("IsKeyID bounds wrong")
	}
}

func TestInvalidKeys(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "keys.log"))
	defer d.Close()
	bad := map[string]string{
		"empty":               "",
		"too long":            strings.Repeat("k", MaxKeyLen+1),
		"invalid utf8":        "ab\xffcd",
		"lone surrogate half": "\xed\xa0\x80",
	}
	for name, k := range bad {
		if _, err := d.ID(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: ID error = %v, want ErrInvalidKey", name, err)
		}
		if _, err := d.IDBytes([]byte(k)); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: IDBytes error = %v, want ErrInvalidKey", name, err)
		}
	}
	if d.Len() != 0 {
		t.Fatalf("invalid keys were assigned ids: Len = %d", d.Len())
	}
}

func TestIDBytesMatchesID(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "keys.log"))
	defer d.Close()
	buf := []byte("shared-buffer")
	a, err := d.IDBytes(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXXXXXXX") // the dictionary must not retain buf
	if k, _ := d.Key(a); k != "shared-buffer" {
		t.Fatalf("key changed with caller's buffer: %q", k)
	}
	if b := mustID(t, d, "shared-buffer"); b != a {
		t.Fatalf("ID = %d, IDBytes = %d", b, a)
	}
	known := []byte("shared-buffer")
	if n := testing.AllocsPerRun(100, func() { _, _ = d.IDBytes(known) }); n != 0 {
		t.Fatalf("IDBytes of a known key allocates %v times", n)
	}
}

func TestTornTailTruncated(t *testing.T) {
	cases := map[string]func(good []byte) []byte{
		"partial header":      func(b []byte) []byte { return append(b, 5, 0, 0) },
		"partial payload":     func(b []byte) []byte { return append(b, record("zeta")[:14]...) },
		"header only":         func(b []byte) []byte { return append(b, record("zeta")[:12]...) },
		"11 bytes of header":  func(b []byte) []byte { return append(b, record("zeta")[:11]...) },
		"zero tail":           func(b []byte) []byte { return append(b, make([]byte, 300)...) },
		"zero partial header": func(b []byte) []byte { return append(b, 0, 0) },
	}
	for name, tear := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.log")
			d := openT(t, path)
			for _, k := range []string{"a", "bb", "ccc"} {
				mustID(t, d, k)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tear(append([]byte(nil), good...)), 0o644); err != nil {
				t.Fatal(err)
			}

			d = openT(t, path)
			if d.Len() != 3 {
				t.Fatalf("Len = %d after torn tail, want 3", d.Len())
			}
			if fi, _ := os.Stat(path); fi.Size() != int64(len(good)) {
				t.Fatalf("file not truncated: size %d, want %d", fi.Size(), len(good))
			}
			if got := mustID(t, d, "zeta"); got != KeyBase+3 {
				t.Fatalf("next id after torn tail = %d, want %d", got, KeyBase+3)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = openT(t, path)
			defer d.Close()
			if id, ok := d.Lookup("zeta"); !ok || id != KeyBase+3 {
				t.Fatalf("Lookup(zeta) after second reopen = %d,%v", id, ok)
			}
			if id, ok := d.Lookup("ccc"); !ok || id != KeyBase+2 {
				t.Fatalf("Lookup(ccc) after second reopen = %d,%v", id, ok)
			}
		})
	}
}

// withHeaderCRC recomputes the record header checksum of the record at off,
// so that a deliberately wrong field passes it.
func withHeaderCRC(b []byte, off int) []byte {
	binary.LittleEndian.PutUint32(b[off+8:], crc32.Checksum(b[off:off+8], testCRC))
	return b
}

func TestCorruptionDetected(t *testing.T) {
	keys := []string{"first", "second", "third", "fourth"}
	file := fileHdr()
	var offs []int
	for _, k := range keys {
		offs = append(offs, len(file))
		file = append(file, record(k)...)
	}
	last := offs[len(offs)-1]
	type tc struct {
		name   string
		mutate func(b []byte) []byte
		offset int64
		reason string
	}
	cases := []tc{
		{"flipped key byte", func(b []byte) []byte { b[offs[1]+12+2] ^= 0x40; return b }, int64(offs[1]), "key checksum: stored"},
		{"flipped key checksum", func(b []byte) []byte { b[offs[2]+5] ^= 1; return b }, int64(offs[2]), "record header checksum: stored"},
		{"flipped record header checksum", func(b []byte) []byte { b[offs[0]+10] ^= 0x80; return b }, int64(offs[0]), "record header checksum: stored"},
		{"length over max", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[offs[1]:], MaxKeyLen+1)
			return b
		}, int64(offs[1]), "record header checksum"},
		{"length over max with a valid header checksum", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[offs[1]:], MaxKeyLen+1)
			return withHeaderCRC(b, offs[1])
		}, int64(offs[1]), "key length: stored 4097, expected at most 4096"},
		{"zero length mid-file", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[offs[2]:], 0)
			return b
		}, int64(offs[2]), "record header checksum"},
		// The bug this format exists for: a damaged length that makes the
		// last record run past the end of the file is not a torn tail.
		{"last length runs past the end", func(b []byte) []byte { b[last+1] ^= 0x01; return b }, int64(last), "record header checksum"},
		{"last header damaged, zeros after it", func(b []byte) []byte {
			b[last] ^= 0x02
			return append(b, make([]byte, 64)...)
		}, int64(last), "record header checksum"},
		{"retired marker with a key checksum", func(b []byte) []byte {
			m := retiredRecord()
			binary.LittleEndian.PutUint32(m[4:], 7)
			return append(b, withHeaderCRC(m, 0)...)
		}, int64(len(file)), "retired-id marker: key checksum: stored 0x00000007, expected 0"},
		{"duplicate key", func(b []byte) []byte { return append(b, record("second")...) }, int64(len(file)),
			fmt.Sprintf("duplicate key: the same key as id %d (KeyBase+1)", KeyBase+1)},
		{"invalid utf8 with good checksum", func(b []byte) []byte { return append(b, record("bad\xff")...) }, int64(len(file)), "utf-8"},
		{"bad magic", func(b []byte) []byte { b[3] ^= 0x10; return b }, 0, `file header: magic: stored "GTKU`},
		{"bad version", func(b []byte) []byte { b[8] ^= 0x01; return b }, 0, "file header checksum: stored"},
		{"bad header checksum", func(b []byte) []byte { b[15] ^= 0x01; return b }, 0, "file header checksum: stored"},
		{"empty file", func(b []byte) []byte { return b[:0] }, 0, "empty file"},
		{"partial file header", func(b []byte) []byte { return b[:9] }, 0, "a partial file header"},
		{"not a dictionary", func(b []byte) []byte { return []byte("hello, this is not a dictionary at all") }, 0, "not recognisable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.dict")
			bad := c.mutate(append([]byte(nil), file...))
			writeFile(t, path, bad)
			for _, open := range []struct {
				name string
				fn   func(string) (*Dict, error)
			}{{"Open", Open}, {"OpenReadOnly", OpenReadOnly}} {
				d, err := open.fn(path)
				if err == nil {
					d.Close()
					t.Fatalf("%s: corrupt file opened without error", open.name)
				}
				var ce *CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: error %v is not a *CorruptError matching ErrCorrupt", open.name, err)
				}
				if ce.Offset != c.offset || ce.Path != path || !strings.Contains(ce.Reason, c.reason) {
					t.Fatalf("%s: got %+v, want offset %d, path %s, reason containing %q", open.name, ce, c.offset, path, c.reason)
				}
				msg := err.Error()
				if !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("offset %d", c.offset)) {
					t.Fatalf("%s: message %q does not name file and offset", open.name, msg)
				}
				// The corrupt file is left untouched for inspection.
				if b := readFile(t, path); !bytes.Equal(b, bad) {
					t.Fatalf("%s changed the corrupt file: %d bytes, were %d", open.name, len(b), len(bad))
				}
			}
			r, err := Check(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() || r.Problems[0].Offset != c.offset || !strings.Contains(r.Problems[0].Reason, c.reason) {
				t.Fatalf("Check problems %+v, want the first at offset %d about %q", r.Problems, c.offset, c.reason)
			}
			if b := readFile(t, path); !bytes.Equal(b, bad) {
				t.Fatal("Check changed the file")
			}
		})
	}
}

func TestConcurrentIDsBijection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	d := openT(t, path)
	const (
		workers = 8
		perKey  = 2000
	)
	// Every worker asks for the same key space in a different order, with
	// Syncs interleaved, so that assignment races on every key.
	results := make([]map[string]uint64, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			m := make(map[string]uint64, perKey)
			for i := 0; i < perKey; i++ {
				j := (i*(2*w+1) + w*97) % perKey
				k := fmt.Sprintf("key-%d", j)
				id, err := d.ID(k)
				if err != nil {
					errs <- err
					return
				}
				m[k] = id
				if i%500 == w {
					if err := d.Sync(); err != nil {
						errs <- err
						return
					}
				}
				if back, ok := d.Key(id); !ok || back != k {
					errs <- fmt.Errorf("Key(%d) = %q,%v right after ID(%q)", id, back, ok, k)
					return
				}
			}
			results[w] = m
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if d.Len() != perKey {
		t.Fatalf("Len = %d, want %d", d.Len(), perKey)
	}
	seen := make(map[uint64]string, perKey)
	for k, id := range results[0] {
		if id < KeyBase || id >= KeyBase+perKey {
			t.Fatalf("id %d of %q outside the dense range", id, k)
		}
		if other, dup := seen[id]; dup {
			t.Fatalf("id %d given to %q and %q", id, other, k)
		}
		seen[id] = k
	}
	for w := 1; w < workers; w++ {
		for k, id := range results[w] {
			if results[0][k] != id {
				t.Fatalf("worker %d saw %q -> %d, worker 0 saw %d", w, k, id, results[0][k])
			}
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, path)
	defer d.Close()
	for k, id := range results[0] {
		if got, ok := d.Lookup(k); !ok || got != id {
			t.Fatalf("after reopen Lookup(%q) = %d,%v, want %d", k, got, ok, id)
		}
	}
}

func TestSyncMakesDurableWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	d := openT(t, path)
	mustID(t, d, "a")
	mustID(t, d, "b")
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	mustID(t, d, "unsynced")
	// Simulate a crash: read the file as it is now, without Close.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(fileHdr(), record("a")...), record("b")...)
	if string(b) != string(want) {
		t.Fatalf("file after Sync = %q, want %q", b, want)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSecondOpenRefusedAndClosedDict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	d := openT(t, path)
	mustID(t, d, "a")
	if d2, err := Open(path); err == nil {
		d2.Close()
		t.Fatal("second Open of a locked dictionary succeeded")
	} else if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open: %v, want ErrInUse naming the file", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ID("b"); !errors.Is(err, ErrClosed) {
		t.Fatalf("ID after Close: %v, want ErrClosed", err)
	}
	if _, err := d.ID("a"); !errors.Is(err, ErrClosed) {
		t.Fatalf("ID of known key after Close: %v, want ErrClosed", err)
	}
	if err := d.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v, want ErrClosed", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	if _, ok := d.Lookup("a"); ok {
		t.Fatal("Lookup after Close reported true")
	}
	d = openT(t, path) // the lock was released
	defer d.Close()
	if d.Len() != 1 {
		t.Fatalf("Len after reopen = %d", d.Len())
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
	if _, err := Open(filepath.Join(dir, "missing", "keys.log")); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}

func BenchmarkIDKnown(b *testing.B) {
	d, err := Open(filepath.Join(b.TempDir(), "keys.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("account-%08d", i))
		if _, err := d.IDBytes(keys[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.IDBytes(keys[i&(len(keys)-1)]); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFailedSyncIsSticky(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	d := openT(t, path)
	a := mustID(t, d, "a")
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	mustID(t, d, "b")
	// Break the file underneath the dictionary so the next write fails.
	d.file.Close()
	if err := d.Sync(); err == nil {
		t.Fatal("Sync on a broken file succeeded")
	}
	if err := d.Sync(); err == nil {
		t.Fatal("second Sync after a failure succeeded: the error must be sticky")
	}
	if _, err := d.ID("c"); err == nil {
		t.Fatal("ID assigned a new id after a failed Sync")
	}
	if id, err := d.ID("a"); err != nil || id != a {
		t.Fatalf("known key after failed Sync: %d, %v", id, err)
	}
	d.Close() // reports the failure; it must not hang or panic
	d = openT(t, path)
	defer d.Close()
	if d.Len() != 1 {
		t.Fatalf("Len after reopen = %d, want 1 (only the synced key)", d.Len())
	}
}
