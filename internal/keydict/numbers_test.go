package keydict

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestMappedNumbers: numbers from MapFrom up take dense ids of the key
// range, in order of first sight and shared with keys; they map back,
// survive a reopen, are counted, and never collide with keys.
func TestMappedNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	d := openT(t, path)
	// Off: every number is itself.
	for _, n := range []uint64{0, MapFrom - 1, MapFrom, KeyBase - 1} {
		if id, err := d.NumID(n); err != nil || id != n {
			t.Fatalf("mapping off: NumID(%d) = %d, %v; want itself", n, id, err)
		}
	}
	d.SetMapNumbers(true)
	r := rand.New(rand.NewPCG(3, 4))
	want := map[uint64]uint64{} // oracle: number or key index -> id
	keyOf := map[uint64]string{}
	var nums []uint64
	next := KeyBase
	for i := 0; i < 2000; i++ {
		if r.IntN(4) == 0 {
			k := "acct-" + strings.Repeat("x", r.IntN(3)) + string(rune('a'+r.IntN(26)))
			id := mustID(t, d, k)
			if id == next {
				keyOf[id] = k
				next++
			} else if keyOf[id] != k {
				t.Fatalf("key %q got id %d, which is %q's", k, id, keyOf[id])
			}
			continue
		}
		var n uint64
		switch r.IntN(3) {
		case 0:
			n = MapFrom + r.Uint64N(100) // small, repeated
		case 1:
			n = KeyBase - 1 - r.Uint64N(100)
		default:
			n = MapFrom + r.Uint64N(KeyBase-MapFrom)
		}
		id, err := d.NumID(n)
		if err != nil {
			t.Fatal(err)
		}
		if old, ok := want[n]; ok {
			if id != old {
				t.Fatalf("NumID(%d) = %d, then %d", n, old, id)
			}
			continue
		}
		if id != next {
			t.Fatalf("new number %d got id %d, want the next id %d", n, id, next)
		}
		next++
		want[n] = id
		nums = append(nums, n)
	}
	// Below MapFrom: itself, nothing taken.
	if id, err := d.NumID(MapFrom - 1); err != nil || id != MapFrom-1 {
		t.Fatalf("NumID(MapFrom-1) = %d, %v", id, err)
	}
	if _, ok := d.LookupNum(MapFrom + 1e12); ok && want[MapFrom+1e12] == 0 {
		t.Fatal("LookupNum found a number never mapped")
	}
	check := func(d *Dict) {
		t.Helper()
		if d.Numbers() != len(want) || d.Len() != int(next-KeyBase) {
			t.Fatalf("Numbers() = %d, Len() = %d; want %d and %d", d.Numbers(), d.Len(), len(want), next-KeyBase)
		}
		for _, n := range nums {
			id, ok := d.LookupNum(n)
			if !ok || id != want[n] {
				t.Fatalf("LookupNum(%d) = %d, %v; want %d", n, id, ok, want[n])
			}
			if got, ok := d.Number(id); !ok || got != n {
				t.Fatalf("Number(%d) = %d, %v; want %d", id, got, ok, n)
			}
			if d.SourceID(id) != n {
				t.Fatalf("SourceID(%d) = %d, want %d", id, d.SourceID(id), n)
			}
			if k, ok := d.Key(id); ok {
				t.Fatalf("Key(%d) of a mapped number = %q", id, k)
			}
		}
		for id, k := range keyOf {
			if got, ok := d.Key(id); !ok || got != k {
				t.Fatalf("Key(%d) = %q, %v; want %q", id, got, ok, k)
			}
			if _, ok := d.Number(id); ok || d.SourceID(id) != id {
				t.Fatalf("key id %d reads as a mapped number", id)
			}
		}
	}
	check(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openT(t, path)
	defer d.Close()
	// Mapping is the opener's decision, not the file's.
	if d.MapsNumbers() {
		t.Fatal("a reopened dictionary maps numbers before its owner says so")
	}
	d.SetMapNumbers(true)
	check(d)
	if id, _ := d.NumID(nums[0]); id != want[nums[0]] {
		t.Fatalf("after reopening NumID(%d) = %d, want %d", nums[0], id, want[nums[0]])
	}
}

// TestNumberKeysReserved: no key may look like a mapped number, and a file
// holding a NUL-led key that is not a canonical mapped number is refused
// with the record's offset.
func TestNumberKeysReserved(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "keys.dict"))
	defer d.Close()
	for _, k := range []string{"\x004294967296", "\x00", "\x00abc"} {
		if _, err := d.ID(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ID(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, err := d.IDBytes([]byte(k)); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("IDBytes(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	for _, k := range []string{"\x00042949672960", "\x001", "\x004611686018427387904", "\x00x"} {
		path := filepath.Join(t.TempDir(), "keys.dict")
		file := append(fileHdr(), record("a")...)
		off := len(file)
		file = append(file, record(k)...)
		writeFile(t, path, file)
		_, err := Open(path)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != int64(off) || !strings.Contains(ce.Reason, "not a mapped number") {
			t.Errorf("key %q: Open = %v, want a CorruptError at offset %d", k, err, off)
		}
	}
	// A canonical one reads back as the number.
	path := filepath.Join(t.TempDir(), "keys.dict")
	writeFile(t, path, append(append(fileHdr(), record("a")...), record("\x004294967296")...))
	d2 := openT(t, path)
	defer d2.Close()
	if n, ok := d2.Number(KeyBase + 1); !ok || n != MapFrom || d2.Numbers() != 1 {
		t.Fatalf("Number(KeyBase+1) = %d, %v, Numbers() = %d; want %d", n, ok, d2.Numbers(), MapFrom)
	}
}

// TestMemoryBytes: the estimate follows the keys held, and survives a
// reopen.
func TestMemoryBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.dict")
	d := openT(t, path)
	if d.MemoryBytes() != 0 {
		t.Fatalf("empty: %d bytes", d.MemoryBytes())
	}
	d.SetMapNumbers(true)
	mustID(t, d, "abc")
	if _, err := d.NumID(MapFrom); err != nil {
		t.Fatal(err)
	}
	want := int64(2*entryBytes + 3 + 11) // "abc", NUL and the 10 digits of 2^32
	if got := d.MemoryBytes(); got != want {
		t.Fatalf("MemoryBytes() = %d, want %d", got, want)
	}
	d.Close()
	d = openT(t, path)
	defer d.Close()
	if got := d.MemoryBytes(); got != want {
		t.Fatalf("reopened: MemoryBytes() = %d, want %d", got, want)
	}
}
