package engine

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// buildStore writes a few thousand edges, flushes, compacts and closes, and
// returns the directory and the segment files.
func buildStore(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, &Options{DisableAutoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	for i := uint64(0); i < 20000; i++ {
		b.InsertWeighted(i%500, (i*7919)%100000, float64(i%3))
	}
	if _, err := s.Apply(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	sort.Strings(segs)
	if len(segs) == 0 {
		t.Fatal("no segment written")
	}
	return dir, segs
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(data))
	}
	data[off] ^= 0x5a
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantCorruption(t *testing.T, err error, file string) *CorruptionError {
	t.Helper()
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CorruptionError", err)
	}
	if ce.File != file {
		t.Fatalf("corruption reported in %q, want %q", ce.File, file)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("error %q does not name the file", err)
	}
	return ce
}

func TestCorruptSegmentHeaderFailsOpen(t *testing.T) {
	dir, segs := buildStore(t)
	flipByte(t, segs[0], 40) // nentries
	_, err := Open(dir, nil)
	wantCorruption(t, err, segs[0])
}

func TestCorruptSegmentFooterFailsOpen(t *testing.T) {
	dir, segs := buildStore(t)
	flipByte(t, segs[0], -12)
	_, err := Open(dir, nil)
	wantCorruption(t, err, segs[0])
}

// A flipped byte in the edge data is found when it is first read (and by
// VerifyAll), never returned as an edge.
func TestCorruptSegmentDataDetectedOnRead(t *testing.T) {
	dir, segs := buildStore(t)
	info, _ := os.Stat(segs[0])
	off := info.Size() / 2
	flipByte(t, segs[0], off)
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("open should verify only headers and indexes, got %v", err)
	}
	defer s.Close()
	ce := wantCorruption(t, s.VerifyAll(), segs[0])
	if ce.Offset > uint64(off) || uint64(off)-ce.Offset >= 64<<10 {
		t.Fatalf("reported offset %d is not the chunk holding byte %d", ce.Offset, off)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	var scanErr error
	buf := NewScanBuffer(1024, 1<<16, true)
	for lo := uint64(0); lo < sn.VertexBound() && scanErr == nil; {
		lo, scanErr = sn.Scan(lo, sn.VertexBound(), Out, buf)
	}
	wantCorruption(t, scanErr, segs[0])
}

func TestCorruptManifestFailsOpen(t *testing.T) {
	dir, _ := buildStore(t)
	man := filepath.Join(dir, "MANIFEST")
	info, _ := os.Stat(man)
	flipByte(t, man, info.Size()-20) // inside the last (flush) record
	_, err := Open(dir, nil)
	ce := wantCorruption(t, err, man)
	if ce.Offset == 0 || ce.Offset >= uint64(info.Size()) {
		t.Fatalf("manifest corruption offset %d out of range", ce.Offset)
	}
}

// A record cut short (a crash in the middle of appending it) was never
// acknowledged: Open drops it and the store is as before that flush.
func TestTornManifestTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Insert(1, 2)
	b.SetSourcePosition([]byte("first"))
	s.Apply(&b)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "MANIFEST")
	info, _ := os.Stat(man)
	b.Reset()
	b.Insert(3, 4)
	b.SetSourcePosition([]byte("second"))
	s.Apply(&b)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	full, _ := os.Stat(man)
	if err := os.Truncate(man, info.Size()+(full.Size()-info.Size())/2); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p, _ := s.SourcePosition(); string(p) != "first" {
		t.Fatalf("source position after torn tail = %q, want %q", p, "first")
	}
	sn, _ := s.Snapshot()
	defer sn.Release()
	checkSnapshot(t, sn, oracle{{1, 2}: 1}, false, []uint64{1, 3})
}
