package decode

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/keydict"
)

// TestMappedNumbers: with a dictionary that maps numbers, every format
// turns numeric ids from keydict.MapFrom up into the dictionary's ids
// (in order of first sight, shared with keys), leaves smaller ones as they
// are, and a value that is not valid takes no id at all.
func TestMappedNumbers(t *testing.T) {
	const (
		big1 = keydict.MapFrom + 7
		big2 = keydict.KeyBase - 1
		big3 = uint64(1) << 40
	)
	bin := cat(entry(byte(OpUpsert), 0, 5, big1), entry(byte(OpUpsert), 0, big2, big1),
		entry(byte(OpDeleteVertex), 0, big3, 0), entry(byte(OpDeleteEdge), 0, 9, 10))
	text := fmt.Sprintf("5 %d\n%d %d\ndv %d\nd 9 10\n", uint64(big1), uint64(big2), uint64(big1), big3)
	jsonV := fmt.Sprintf(`[{"src":5,"dst":%d},{"src":%d,"dst":%d},{"op":"delete_vertex","src":%d},{"op":"delete","src":9,"dst":10}]`,
		uint64(big1), uint64(big2), uint64(big1), big3)
	bad := map[Format][]byte{
		FormatBinary: cat(entry(byte(OpUpsert), 0, big1, big2), []byte{9}),
		FormatText:   []byte(fmt.Sprintf("%d %d\nnot an edge line\n", big1, big3)),
		FormatJSON:   []byte(fmt.Sprintf(`[{"src":%d,"dst":%d},{"src":"x"`, big1, big3)),
	}
	for f, v := range map[Format][]byte{FormatBinary: bin, FormatText: []byte(text), FormatJSON: []byte(jsonV)} {
		t.Run(f.String(), func(t *testing.T) {
			d, err := keydict.Open(filepath.Join(t.TempDir(), "keys.dict"))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			d.SetMapNumbers(true)
			if _, err := d.ID("acct-1"); err != nil { // a key first: numbers follow it
				t.Fatal(err)
			}
			dec := New(f, d)
			if _, err := decodeAll(dec, bad[f]); err == nil {
				t.Fatal("the bad value decoded")
			}
			if d.Len() != 1 {
				t.Fatalf("a value that did not decode took %d ids", d.Len()-1)
			}
			got, err := decodeAll(dec, v)
			if err != nil {
				t.Fatal(err)
			}
			b := keydict.KeyBase
			want := []Edge{{Op: OpUpsert, Src: 5, Dst: b + 1}, {Op: OpUpsert, Src: b + 2, Dst: b + 1},
				{Op: OpDeleteVertex, Src: b + 3}, {Op: OpDeleteEdge, Src: 9, Dst: 10}}
			checkEdges(t, got, want)
			for n, id := range map[uint64]uint64{big1: b + 1, big2: b + 2, big3: b + 3} {
				if got, ok := d.Number(id); !ok || got != n {
					t.Errorf("Number(%d) = %d, %v; want %d", id, got, ok, n)
				}
			}
			// Decoding again maps to the same ids.
			again, err := decodeAll(dec, v)
			if err != nil {
				t.Fatal(err)
			}
			checkEdges(t, again, want)
			// Without mapping (a store that holds such ids as they are):
			// as given.
			d.SetMapNumbers(false)
			raw, err := decodeAll(New(f, d), v)
			if err != nil {
				t.Fatal(err)
			}
			checkEdges(t, raw, []Edge{{Op: OpUpsert, Src: 5, Dst: big1}, {Op: OpUpsert, Src: big2, Dst: big1},
				{Op: OpDeleteVertex, Src: big3}, {Op: OpDeleteEdge, Src: 9, Dst: 10}})
		})
	}
}

// TestNULKeysDeadLettered: a key that starts with NUL (the form the key
// dictionary keeps for mapped numbers) is the record's fault, an *Error
// that dead-letters it, never a dictionary failure that stops ingestion.
func TestNULKeysDeadLettered(t *testing.T) {
	d, err := keydict.Open(filepath.Join(t.TempDir(), "keys.dict"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetMapNumbers(true)
	for f, v := range map[Format]string{
		FormatJSON: `{"src":"\u00004294967296","dst":1}`,
		FormatText: "\x004294967296 1\n",
	} {
		got, err := decodeAll(New(f, d), []byte(v))
		var de *Error
		if !errors.As(err, &de) || !strings.Contains(de.Reason, "starts with a NUL byte") || len(got) != 0 {
			t.Errorf("%s: %v (emitted %v), want an *Error about the NUL byte", f, err, got)
		}
	}
	if d.Len() != 0 {
		t.Fatalf("the bad keys took %d ids", d.Len())
	}
}
