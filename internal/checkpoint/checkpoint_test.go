package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/graphtide/graphtide/internal/memdir"
)

type sample struct {
	a  uint64
	f  float64
	b  []byte
	is []int32
	us []uint64
	fs []float64
}

func writeSample(t *testing.T, path string, s sample) {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Section("head", func(e *Encoder) { e.U64(s.a); e.F64(s.f); e.Bytes(s.b) }); err != nil {
		t.Fatal(err)
	}
	if err := w.Section("lists", func(e *Encoder) { e.Int32s(s.is); e.Uint64s(s.us); e.Float64s(s.fs); e.U8(7) }); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func readSample(path string) (sample, error) {
	if _, err := Verify(path); err != nil {
		return sample{}, err
	}
	return readSampleOnly(path)
}

func readSampleOnly(path string) (sample, error) {
	var s sample
	r, err := Open(path)
	if err != nil {
		return s, err
	}
	defer r.Close()
	err = r.Section("head", func(d *Decoder) error { s.a, s.f, s.b = d.U64(), d.F64(), d.Bytes(); return nil })
	if err == nil {
		err = r.Section("lists", func(d *Decoder) error {
			s.is, s.us, s.fs = d.Int32s(), d.Uint64s(), d.Float64s()
			if d.U8() != 7 {
				d.Fail("bad trailer")
			}
			return nil
		})
	}
	if err == nil {
		err = r.End()
	}
	if err == nil {
		err = r.Close()
	}
	return s, err
}

func same(a, b sample) bool {
	return a.a == b.a && a.f == b.f && slices.Equal(a.b, b.b) && slices.Equal(a.is, b.is) && slices.Equal(a.us, b.us) && slices.Equal(a.fs, b.fs)
}

func TestRoundTripAndEveryDamageIsReported(t *testing.T) {
	dir := memdir.TempDir(t) // a file rewritten per bit: on tmpfs, not the disk
	path := filepath.Join(dir, "ck")
	want := sample{a: 42, f: 2.5, b: []byte("position"), is: []int32{1, -2, 3}, us: []uint64{1 << 62, 5}, fs: []float64{0.25, 9}}
	writeSample(t, path, want)
	got, err := readSample(path)
	if err != nil || !same(got, want) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if names, err := Verify(path); err != nil || len(names) != 2 || names[0] != "head" || names[1] != "lists" {
		t.Fatalf("verify: %v %v", names, err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary file stayed: %v", err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	// Every flipped bit and every truncation is reported as corruption,
	// never read as other data.
	for i := range orig {
		for bit := range 8 {
			b := slices.Clone(orig)
			b[i] ^= 1 << bit
			if err := os.WriteFile(bad, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := readSampleOnly(bad); err == nil {
				t.Fatalf("bit %d of byte %d flipped: read without error", bit, i)
			}
			if _, err := Verify(bad); err == nil {
				t.Fatalf("bit %d of byte %d flipped: verified without error", bit, i)
			} else if ce := (*CorruptError)(nil); !errors.As(err, &ce) || ce.File != bad {
				t.Fatalf("bit %d of byte %d flipped: %v is not a CorruptError naming the file", bit, i, err)
			}
		}
	}
	for n := range len(orig) {
		if err := os.WriteFile(bad, orig[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readSample(bad); err == nil {
			t.Fatalf("truncated to %d bytes: read without error", n)
		}
	}
	if err := os.WriteFile(bad, append(slices.Clone(orig), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSample(bad); err == nil {
		t.Fatal("a byte after the end section was not reported")
	}
	if _, err := Open(filepath.Join(dir, "none")); !errors.Is(err, ErrNotExist) {
		t.Fatalf("a missing checkpoint: %v", err)
	}
}

func TestAbortLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ck")
	want := sample{a: 1, b: []byte{}, is: []int32{}, us: []uint64{}, fs: []float64{}}
	writeSample(t, path, want)
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Section("head", func(e *Encoder) { e.U64(9) }); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if got, err := readSample(path); err != nil || got.a != 1 {
		t.Fatalf("after an aborted write: %+v, %v", got, err)
	}
}
