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

	"github.com/graphtide/graphtide/internal/memdir"
)

// dictFile is a dictionary file made by the test's own encoder, with its
// oracle: entries[i] is the key of id KeyBase+i, or "" for a retired id.
type dictFile struct {
	bytes   []byte
	entries []string
	offs    []int // offs[i] is the byte offset of record i; offs[len(entries)] is the file size
}

func buildFile(entries []string) dictFile {
	f := dictFile{bytes: fileHdr(), entries: entries}
	for _, k := range entries {
		f.offs = append(f.offs, len(f.bytes))
		if k == "" {
			f.bytes = append(f.bytes, retiredRecord()...)
		} else {
			f.bytes = append(f.bytes, record(k)...)
		}
	}
	f.offs = append(f.offs, len(f.bytes))
	return f
}

// recordAt returns the index of the record holding byte i (i >= 16).
func (f dictFile) recordAt(i int) int {
	for j := len(f.entries) - 1; j >= 0; j-- {
		if f.offs[j] <= i {
			return j
		}
	}
	panic("byte in the file header")
}

// variedEntries are keys of many lengths and scripts, with a retired id.
func variedEntries() []string {
	e := []string{"a", "é", "日本", "🙂", "Zürich-Ω", strings.Repeat("long-", 60), "b", strings.Repeat("ж", 65), "c"}
	e = append(e, "") // a retired id, as a repair writes it
	for i := range 28 {
		e = append(e, fmt.Sprintf("acct-%d-%s", i, strings.Repeat("x", i%7)))
	}
	return e
}

// expect fails unless d holds exactly entries (see dictFile).
func expect(t *testing.T, what string, d *Dict, entries []string) {
	t.Helper()
	if d.Len() != len(entries) {
		t.Fatalf("%s: Len = %d, want %d", what, d.Len(), len(entries))
	}
	retired := 0
	for i, k := range entries {
		id := KeyBase + uint64(i)
		got, ok := d.Key(id)
		if k == "" {
			retired++
			if ok {
				t.Fatalf("%s: retired id KeyBase+%d has key %q", what, i, got)
			}
			continue
		}
		if !ok || got != k {
			t.Fatalf("%s: Key(KeyBase+%d) = %q,%v, want %q", what, i, got, ok, k)
		}
		if back, ok := d.Lookup(k); !ok || back != id {
			t.Fatalf("%s: Lookup(%q) = %d,%v, want KeyBase+%d", what, k, back, ok, i)
		}
	}
	if d.Retired() != retired {
		t.Fatalf("%s: Retired = %d, want %d", what, d.Retired(), retired)
	}
	if k, ok := d.Key(KeyBase + uint64(len(entries))); ok {
		t.Fatalf("%s: Key of the first free id = %q", what, k)
	}
	if id, ok := d.Lookup("never-inserted"); ok {
		t.Fatalf("%s: Lookup of a key never inserted = %d", what, id)
	}
}

// crcLE is the CRC-32C of b, little-endian.
func crcLE(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(nil, crc32.Checksum(b, testCRC))
}

// setKey overwrites the key of the record at off with key, of the same
// length, and gives it valid checksums.
func setKey(b []byte, off int, key string) {
	copy(b[off+12:], key)
	copy(b[off+4:], crcLE([]byte(key)))
	withHeaderCRC(b, off)
}

// corruptAt fails unless err is a *CorruptError about path at offset.
func corruptAt(t *testing.T, what string, err error, path string, offset int64) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: error %v, want a *CorruptError", what, err)
	}
	if ce.Path != path || ce.Offset != offset {
		t.Fatalf("%s: %v: want path %s, offset %d", what, err, path, offset)
	}
}

func TestFileFormatBytes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.dict")
	d := openT(t, path)
	if b := readFile(t, path); !bytes.Equal(b, fileHdr()) {
		t.Fatalf("new file = %x, want the header %x", b, fileHdr())
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	keys := []string{"x", "ÿ", strings.Repeat("k", MaxKeyLen)}
	for _, k := range keys {
		mustID(t, d, k)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	want := buildFile(keys).bytes
	if b := readFile(t, path); !bytes.Equal(b, want) {
		t.Fatalf("file = %x\nwant %x", b, want)
	}
}

func TestCreateOverStaleTemporaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	// A crash during creation left a partial temporary file.
	writeFile(t, path+".tmp", []byte("GTKEY"))
	d := openT(t, path)
	mustID(t, d, "a")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if b := readFile(t, path); !bytes.Equal(b, buildFile([]string{"a"}).bytes) {
		t.Fatalf("file = %x", b)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

func TestRetiredIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	entries := []string{"a", "", "b", "", ""}
	writeFile(t, path, buildFile(entries).bytes)
	d := openT(t, path)
	expect(t, "open", d, entries)
	if got := mustID(t, d, "c"); got != KeyBase+5 {
		t.Fatalf("new key after retired ids got KeyBase+%d, want KeyBase+5", got-KeyBase)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, path)
	defer d.Close()
	expect(t, "reopen", d, append(entries, "c"))
}

func TestOldFormatRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	old := append(recordV1("alice"), recordV1("bob")...)
	writeFile(t, path, old)
	for name, open := range map[string]func(string) (*Dict, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		d, err := open(path)
		if err == nil {
			d.Close()
			t.Fatalf("%s opened a format 1 file", name)
		}
		if !errors.Is(err, ErrUnsupportedFormat) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v, want ErrUnsupportedFormat and not ErrCorrupt", name, err)
		}
		for _, want := range []string{path, "older graphtide", "format 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: message %q lacks %q", name, err, want)
			}
		}
	}
	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || r.Problems[0].Offset != 0 || !strings.Contains(r.Problems[0].Reason, "format 1") {
		t.Fatalf("Check problems %+v", r.Problems)
	}
	if _, err := PlanRepair(path, 0); !errors.Is(err, ErrUnsupportedFormat) {
		t.Fatalf("PlanRepair of a format 1 file: %v, want ErrUnsupportedFormat", err)
	}
	if b := readFile(t, path); !bytes.Equal(b, old) {
		t.Fatal("the format 1 file was changed")
	}
}

func TestNewerVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	h := fileHdr()
	h[8] = 3
	copy(h[12:], crcLE(h[:12])) // a valid header of version 3
	writeFile(t, path, append(h, record("a")...))
	_, err := Open(path)
	if !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "format version: stored 3, expected 2") {
		t.Fatalf("Open of a version 3 file: %v", err)
	}
}

func TestEmptyFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	writeFile(t, path, nil)
	_, err := Open(path)
	corruptAt(t, "Open", err, path, 0)
	if !strings.Contains(err.Error(), "empty file") {
		t.Fatalf("message %q does not say the file is empty", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("Open wrote to the empty file: %v, %v", fi, err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	f := buildFile(variedEntries())
	torn := append(append([]byte(nil), f.bytes...), record("torn")[:7]...)
	writeFile(t, path, torn)

	d, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "read-only", d, f.entries)
	if off, n, ok := d.TornTail(); !ok || off != int64(len(f.bytes)) || n != 7 {
		t.Fatalf("TornTail = %d,%d,%v, want %d,7,true", off, n, ok, len(f.bytes))
	}
	if id, err := d.ID("a"); err != nil || id != KeyBase {
		t.Fatalf("ID of a known key on a read-only Dict: %d, %v", id, err)
	}
	if _, err := d.ID("new"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("ID of a new key on a read-only Dict: %v, want ErrReadOnly", err)
	}
	if _, err := d.IDBytes([]byte("new")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("IDBytes of a new key on a read-only Dict: %v, want ErrReadOnly", err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("Sync on a read-only Dict: %v", err)
	}
	// A shared lock: readers coexist, a writer is refused at once.
	d2, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("second OpenReadOnly: %v", err)
	}
	if r, err := Check(path); err != nil || !r.OK() {
		t.Fatalf("Check beside readers: %+v, %v", r, err)
	}
	if w, err := Open(path); !errors.Is(err, ErrInUse) {
		if err == nil {
			w.Close()
		}
		t.Fatalf("Open while read-only opens hold the file: %v, want ErrInUse", err)
	}
	if p, err := PlanRepair(path, 0); !errors.Is(err, ErrInUse) {
		if err == nil {
			p.Close()
		}
		t.Fatalf("PlanRepair while read-only opens hold the file: %v, want ErrInUse", err)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v, want ErrClosed", err)
	}
	if _, ok := d.Lookup("a"); ok {
		t.Fatal("Lookup after Close reported true")
	}
	if b := readFile(t, path); !bytes.Equal(b, torn) {
		t.Fatal("a read-only Dict changed the file")
	}

	// A writer holds the file: readers are refused at once.
	w := openT(t, path)
	if b := readFile(t, path); !bytes.Equal(b, f.bytes) {
		t.Fatal("read-write Open did not cut the torn tail")
	}
	if r, err := OpenReadOnly(path); !errors.Is(err, ErrInUse) {
		if err == nil {
			r.Close()
		}
		t.Fatalf("OpenReadOnly while Open holds the file: %v, want ErrInUse", err)
	}
	if _, err := Check(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("Check while Open holds the file: %v, want ErrInUse", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	missing := filepath.Join(t.TempDir(), "keys.dict")
	if _, err := OpenReadOnly(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly of a missing file: %v, want ErrNotExist", err)
	}
	if _, err := Check(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Check of a missing file: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("OpenReadOnly or Check created a file")
	}
}

// TestBitFlipEverywhere flips one bit in every byte of a dictionary file.
// Every byte is covered by a checksum, so every flip must be refused, at the
// damaged record, by Open and OpenReadOnly, and found by Check; none of them
// may change the file; and a repair keeps every other key at its id.
func TestBitFlipEverywhere(t *testing.T) {
	t.Parallel()
	dir := memdir.TempDir(t) // a file written and repaired per byte: on tmpfs, not the disk
	path := filepath.Join(dir, "keys.dict")
	f := buildFile(variedEntries())
	writeFile(t, path, f.bytes)
	d, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "intact file", d, f.entries)
	d.Close()

	loaded := 0
	for i := range f.bytes {
		bit := uint(i*5) % 8
		bad := append([]byte(nil), f.bytes...)
		bad[i] ^= 1 << bit
		what := fmt.Sprintf("bit %d of byte %d", bit, i)
		wantOff, want := int64(0), f.entries // what a repair keeps
		if i >= fileHeaderSize {
			j := f.recordAt(i)
			wantOff = int64(f.offs[j])
			if i-f.offs[j] < 12 { // record header: framing lost, cut there
				want = f.entries[:j]
			} else { // key: the id is retired
				want = append([]string(nil), f.entries...)
				want[j] = ""
			}
		}
		writeFile(t, path, bad)

		var openErr [2]error
		for n, open := range []func(string) (*Dict, error){OpenReadOnly, Open} {
			d, err := open(path)
			openErr[n] = err
			if err == nil {
				// Allowed only if nothing changed; not expected here.
				loaded++
				expect(t, what, d, f.entries)
				d.Close()
				continue
			}
			corruptAt(t, what, err, path, wantOff)
			if b := readFile(t, path); !bytes.Equal(b, bad) {
				t.Fatalf("%s: refusing the file changed it", what)
			}
		}
		r, err := Check(path)
		if err != nil {
			t.Fatalf("%s: Check: %v", what, err)
		}
		if r.OK() != (openErr[0] == nil) || r.OK() != (openErr[1] == nil) {
			t.Fatalf("%s: Check found %d problems, but Open: %v, OpenReadOnly: %v", what, len(r.Problems), openErr[1], openErr[0])
		}
		if len(r.Problems) != 1 || r.Problems[0].Offset != wantOff {
			t.Fatalf("%s: Check problems %+v, want one at offset %d", what, r.Problems, wantOff)
		}
		if b := readFile(t, path); !bytes.Equal(b, bad) {
			t.Fatalf("%s: Check or OpenReadOnly changed the file", what)
		}

		// Repair a sample, for speed (each repair fsyncs five times): every
		// byte of the file header, and the first byte of every record, of
		// its key checksum and of its key, and its last byte.
		if i >= fileHeaderSize {
			j := f.recordAt(i)
			if i != f.offs[j] && i != f.offs[j]+4 && i != f.offs[j]+12 && i != f.offs[j+1]-1 {
				continue
			}
		}
		p, err := PlanRepair(path, 0)
		if err != nil {
			t.Fatalf("%s: PlanRepair: %v", what, err)
		}
		backupDir := filepath.Join(dir, fmt.Sprintf("backup-%d", i))
		if err := p.Apply(backupDir); err != nil {
			t.Fatalf("%s: Apply: %v", what, err)
		}
		if b := readFile(t, filepath.Join(backupDir, "keys.dict")); !bytes.Equal(b, bad) {
			t.Fatalf("%s: the backup differs from the damaged file", what)
		}
		d, err = OpenReadOnly(path)
		if err != nil {
			t.Fatalf("%s: open after repair: %v\n%s", what, err, p)
		}
		expect(t, what+", repaired", d, want)
		d.Close()
	}
	if loaded != 0 {
		t.Fatalf("%d of %d bit flips were accepted: every byte should be under a checksum", loaded, 2*len(f.bytes))
	}
}

// TestTruncateEverywhere cuts a dictionary file at every byte offset, as a
// crash can. A cut in the file header is refused (no crash leaves one);
// every other cut opens to exactly the records before it.
func TestTruncateEverywhere(t *testing.T) {
	t.Parallel()
	path := filepath.Join(memdir.TempDir(t), "keys.dict") // a cut and an open per byte: on tmpfs, not the disk
	f := buildFile(variedEntries()[:20])
	for cut := 0; cut <= len(f.bytes); cut++ {
		what := fmt.Sprintf("cut at %d", cut)
		short := f.bytes[:cut]
		writeFile(t, path, short)
		if cut < fileHeaderSize {
			for name, open := range map[string]func(string) (*Dict, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
				if d, err := open(path); err == nil {
					d.Close()
					t.Fatalf("%s: %s opened a file without its header", what, name)
				} else {
					corruptAt(t, what+", "+name, err, path, 0)
				}
			}
			if r, err := Check(path); err != nil || r.OK() {
				t.Fatalf("%s: Check: %+v, %v; want a problem", what, r, err)
			}
			if b := readFile(t, path); !bytes.Equal(b, short) {
				t.Fatalf("%s: the file was changed", what)
			}
			continue
		}
		k := 0
		for k < len(f.entries) && f.offs[k+1] <= cut {
			k++
		}
		boundary := f.offs[k]
		checkTorn := func(who string, off, n int64, ok bool) {
			t.Helper()
			if ok != (cut != boundary) || ok && (off != int64(boundary) || n != int64(cut-boundary)) {
				t.Fatalf("%s: %s: torn tail %d,%d,%v; want one from %d to %d", what, who, off, n, ok, boundary, cut)
			}
		}

		d, err := OpenReadOnly(path)
		if err != nil {
			t.Fatalf("%s: OpenReadOnly: %v", what, err)
		}
		expect(t, what+", read-only", d, f.entries[:k])
		off, n, ok := d.TornTail()
		checkTorn("OpenReadOnly", off, n, ok)
		d.Close()
		r, err := Check(path)
		if err != nil || !r.OK() || r.IDs != k || r.Size != int64(cut) {
			t.Fatalf("%s: Check: %+v, %v", what, r, err)
		}
		if r.Torn != nil {
			checkTorn("Check", r.Torn.Offset, r.Torn.Length, true)
		} else {
			checkTorn("Check", 0, 0, false)
		}
		if b := readFile(t, path); !bytes.Equal(b, short) {
			t.Fatalf("%s: OpenReadOnly or Check changed the file", what)
		}

		d = openT(t, path)
		expect(t, what+", read-write", d, f.entries[:k])
		off, n, ok = d.TornTail()
		checkTorn("Open", off, n, ok)
		if b := readFile(t, path); !bytes.Equal(b, f.bytes[:boundary]) {
			t.Fatalf("%s: after Open the file is %d bytes, want the %d of %d records", what, len(b), boundary, k)
		}
		if cut%4 != 0 && cut != boundary {
			// For speed (Close fsyncs), a sample goes on to add a key.
			d.Close()
			continue
		}
		if id := mustID(t, d, "fresh"); id != KeyBase+uint64(k) {
			t.Fatalf("%s: a new key got KeyBase+%d, want KeyBase+%d", what, id-KeyBase, k)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if b := readFile(t, path); !bytes.Equal(b, append(append([]byte(nil), f.bytes[:boundary]...), record("fresh")...)) {
			t.Fatalf("%s: the new key's record was not appended after the kept records", what)
		}
	}
}

func TestZeroTailsAreTorn(t *testing.T) {
	for _, base := range [][]string{nil, {"a", "", "ünï"}} {
		f := buildFile(base)
		for _, n := range []int{1, 11, 12, 13, 100, 4096, 8192 + 5} {
			t.Run(fmt.Sprintf("%d keys, %d zeros", len(base), n), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "keys.dict")
				file := append(append([]byte(nil), f.bytes...), make([]byte, n)...)
				writeFile(t, path, file)
				d, err := OpenReadOnly(path)
				if err != nil {
					t.Fatal(err)
				}
				expect(t, "read-only", d, base)
				if off, l, ok := d.TornTail(); !ok || off != int64(len(f.bytes)) || l != int64(n) {
					t.Fatalf("TornTail = %d,%d,%v", off, l, ok)
				}
				d.Close()
				r, err := Check(path)
				if err != nil || !r.OK() || r.Torn == nil || r.Torn.Length != int64(n) {
					t.Fatalf("Check: %+v, %v", r, err)
				}
				if n >= 12 && r.Torn.Kind != "zero bytes" {
					t.Fatalf("torn tail kind %q", r.Torn.Kind)
				}
				if b := readFile(t, path); !bytes.Equal(b, file) {
					t.Fatal("OpenReadOnly or Check changed the file")
				}
				d = openT(t, path)
				defer d.Close()
				expect(t, "read-write", d, base)
				if b := readFile(t, path); !bytes.Equal(b, f.bytes) {
					t.Fatalf("Open left %d bytes, want %d", len(b), len(f.bytes))
				}
			})
		}
	}
}

// TestCheckReportsEveryProblem damages several records: Check reports each
// one while the framing holds, and stops where it does not.
func TestCheckReportsEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	entries := []string{"k0", "k1", "k2", "", "k4", "k5", "k6", "k7", "k8", "k9"}
	f := buildFile(entries)
	b := append([]byte(nil), f.bytes...)
	b[3] ^= 4                        // the file header's magic
	b[f.offs[1]+12] ^= 1             // a bit of key k1
	setKey(b, f.offs[4], "k6")       // record 4 holds k6, so record 6 is a duplicate
	setKey(b, f.offs[5], "\xff\xfe") // record 5: invalid utf-8, checksums valid
	b[f.offs[8]+2] ^= 0x80           // the length of k8: framing lost
	writeFile(t, path, b)

	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		off    int
		reason string
	}{
		{0, "file header: magic"},
		{f.offs[1], "key checksum"},
		{f.offs[5], "not valid utf-8"},
		{f.offs[6], "duplicate key: the same key as id"},
		{f.offs[8], "record header checksum"},
	}
	if len(r.Problems) != len(want) {
		t.Fatalf("Check found %d problems, want %d: %+v", len(r.Problems), len(want), r.Problems)
	}
	for i, w := range want {
		if p := r.Problems[i]; p.Offset != int64(w.off) || !strings.Contains(p.Reason, w.reason) {
			t.Fatalf("problem %d = %+v, want offset %d about %q", i, p, w.off, w.reason)
		}
	}
	if r.Unchecked != int64(len(b)-f.offs[8]) || !strings.Contains(r.Problems[4].Reason, fmt.Sprintf("the %d bytes", len(b)-f.offs[8])) {
		t.Fatalf("Unchecked = %d, want %d; reason %q", r.Unchecked, len(b)-f.offs[8], r.Problems[4].Reason)
	}
	// k0, k2, the duplicated k6 (first seen as record 4), k7; record 3 is retired.
	if r.IDs != 8 || r.Keys != 4 || r.Retired != 1 || r.Torn != nil || r.Size != int64(len(b)) {
		t.Fatalf("report %+v", r)
	}
	if got := readFile(t, path); !bytes.Equal(got, b) {
		t.Fatal("Check changed the file")
	}
}

// TestConcurrentCreate opens one new path from two goroutines at once:
// exactly one gets it, the other is told it is in use, and the file the
// winner writes is the one that stays.
func TestConcurrentCreate(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		path := filepath.Join(dir, fmt.Sprintf("keys-%d.dict", i))
		var (
			dicts [2]*Dict
			errs  [2]error
			wg    sync.WaitGroup
		)
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dicts[g], errs[g] = Open(path)
			}()
		}
		wg.Wait()
		var won *Dict
		for g := range 2 {
			switch {
			case errs[g] == nil && won == nil:
				won = dicts[g]
			case errs[g] == nil:
				t.Fatalf("round %d: both Opens of a new file succeeded", i)
			case !errors.Is(errs[g], ErrInUse):
				t.Fatalf("round %d: %v, want ErrInUse", i, errs[g])
			}
		}
		if won == nil {
			t.Fatalf("round %d: neither Open succeeded: %v; %v", i, errs[0], errs[1])
		}
		mustID(t, won, "winner")
		if err := won.Close(); err != nil {
			t.Fatal(err)
		}
		if b := readFile(t, path); !bytes.Equal(b, buildFile([]string{"winner"}).bytes) {
			t.Fatalf("round %d: file = %x", i, b)
		}
		if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: temporary file left behind: %v", i, err)
		}
	}
}
