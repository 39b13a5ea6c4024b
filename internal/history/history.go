// Package history keeps the time index of a store that keeps history
// (issue 15's reads as of the past): samples (wall time, seq), each saying
// that at that time seq was the newest sequence number applied. A read as
// of a time (as_of_time) reads as of the seq of the newest sample at or
// before it, and a retention by time keeps readable every seq from the
// one that was newest that long ago.
//
// What it promises: the samples it returns are ascending in time and in
// seq, and each was true when it was recorded, for the store it was
// opened with: samples of seqs above the store's newest at open (seqs a
// crash's replay gives to other batches) are dropped then. A sample lost
// in a crash only makes the index coarser.
//
// The file (history.idx in the data directory): the 8-byte magic
// "GTTIME01", then 24-byte records: u64 unix nanoseconds, u64 seq (both
// little-endian), u32 crc32c (Castagnoli) of those 16 bytes, u32 zero.
// Each record is appended with one write and synced before the next, so a
// crash can tear only the last one: Open cuts a partial last record, and
// a last record whose checksum fails (a write cut at a sector boundary
// leaves some of its bytes and zeros; at worst one sample is lost); any
// other damage is refused, naming the file and byte offset, and nothing
// is changed.
package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
)

// FileName is the index's file in the data directory.
const FileName = "history.idx"

const (
	magic      = "GTTIME01"
	recordSize = 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sample says that at Time, Seq was the newest sequence number applied.
type Sample struct {
	Time time.Time
	Seq  uint64
}

// Index is the time index of one store. Safe for concurrent use.
type Index struct {
	path string
	mu   sync.Mutex
	// f is the file, appended to (nil when read-only). Protected by mu.
	f *os.File
	// samples, ascending in Time and Seq. Protected by mu.
	samples []Sample
}

// Open reads the index at path for a store whose newest seq is last. A
// read-write open creates a missing file, cuts a torn tail and drops the
// samples of seqs above last (rewriting the file atomically); a read-only
// one changes nothing and leaves those samples out.
func Open(path string, last uint64, readOnly bool) (*Index, error) {
	x := &Index{path: path}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if readOnly {
			return x, nil
		}
		if err := durable.WriteFile(path, []byte(magic), 0o644); err != nil {
			return nil, err
		}
		data = []byte(magic)
	case err != nil:
		return nil, err
	}
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return nil, &durable.CorruptError{Kind: "history", File: path, Offset: 0, What: "not a time index (bad magic)"}
	}
	body := data[len(magic):]
	end := len(body) / recordSize * recordSize
	torn := end != len(body) // a partial last record: an append cut short
	for off := 0; off < end; off += recordSize {
		r := body[off : off+recordSize]
		at := int64(len(magic) + off)
		if binary.LittleEndian.Uint32(r[16:]) != crc32.Checksum(r[:16], castagnoli) || binary.LittleEndian.Uint32(r[20:]) != 0 {
			if off+recordSize == end {
				torn = true // the last append, cut short by a crash
				break
			}
			return nil, &durable.CorruptError{Kind: "history", File: path, Offset: at, What: "record checksum mismatch"}
		}
		s := Sample{Time: time.Unix(0, int64(binary.LittleEndian.Uint64(r))), Seq: binary.LittleEndian.Uint64(r[8:])}
		if n := len(x.samples); n > 0 && (s.Seq < x.samples[n-1].Seq || s.Time.Before(x.samples[n-1].Time)) {
			return nil, &durable.CorruptError{Kind: "history", File: path, Offset: at,
				What: fmt.Sprintf("sample (%v, seq %d) is older than the one before it", s.Time.UTC(), s.Seq)}
		}
		x.samples = append(x.samples, s)
	}
	keep := sort.Search(len(x.samples), func(i int) bool { return x.samples[i].Seq > last })
	stale := keep < len(x.samples)
	x.samples = x.samples[:keep]
	if readOnly {
		return x, nil
	}
	if stale || torn {
		if err := durable.WriteFile(path, x.encode(), 0o644); err != nil {
			return nil, err
		}
	}
	if x.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, err
	}
	return x, nil
}

func record(s Sample) []byte {
	r := make([]byte, recordSize)
	binary.LittleEndian.PutUint64(r, uint64(s.Time.UnixNano()))
	binary.LittleEndian.PutUint64(r[8:], s.Seq)
	binary.LittleEndian.PutUint32(r[16:], crc32.Checksum(r[:16], castagnoli))
	return r
}

// encode is the whole file of the samples. Requires mu held (or no
// sharing yet).
func (x *Index) encode() []byte {
	b := []byte(magic)
	for _, s := range x.samples {
		b = append(b, record(s)...)
	}
	return b
}

// Record notes that at t, seq is the newest sequence number applied (read
// the seq first, then the clock: a sample may say less than was newest,
// never more). It does nothing when seq is not above the last sample's
// (nothing new). Times are wall-clock times (t's monotonic reading is
// dropped, as the file keeps none); one before the last sample's (the
// clock stepped back) is taken as the last sample's, so samples stay in
// order. The record is synced to disk.
func (x *Index) Record(t time.Time, seq uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return errors.New("history: the time index is not open for writing")
	}
	t = t.Round(0)
	if n := len(x.samples); n > 0 {
		if seq <= x.samples[n-1].Seq {
			return nil
		}
		if t.Before(x.samples[n-1].Time) {
			t = x.samples[n-1].Time
		}
	}
	s := Sample{Time: t, Seq: seq}
	if _, err := x.f.Write(record(s)); err != nil {
		return fmt.Errorf("history: %s: %w", x.path, err)
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("history: %s: %w", x.path, err)
	}
	x.samples = append(x.samples, s)
	return nil
}

// SeqAt returns the seq that was newest at t: the newest sample's at or
// before t. False when every sample is after t (or there is none).
func (x *Index) SeqAt(t time.Time) (uint64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := sort.Search(len(x.samples), func(i int) bool { return x.samples[i].Time.After(t) })
	if i == 0 {
		return 0, false
	}
	return x.samples[i-1].Seq, true
}

// Oldest is the oldest sample; false when there is none.
func (x *Index) Oldest() (Sample, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.samples) == 0 {
		return Sample{}, false
	}
	return x.samples[0], true
}

// Len is the number of samples.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.samples)
}

// Trim drops the samples no read can use once seqs below floor are gone:
// all but the newest one at or below floor (which still maps the times up
// to the next sample). It rewrites the file atomically, and only when that
// drops at least half of the samples, so that its cost is amortized.
func (x *Index) Trim(floor uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	i := sort.Search(len(x.samples), func(i int) bool { return x.samples[i].Seq > floor })
	drop := i - 1
	if drop < 1 || 2*drop < len(x.samples) {
		return nil
	}
	kept := append([]Sample(nil), x.samples[drop:]...)
	old := x.samples
	x.samples = kept
	if err := durable.WriteFile(x.path, x.encode(), 0o644); err != nil {
		x.samples = old
		return err
	}
	x.f.Close() // the old file, replaced
	f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		x.f = nil // Record fails from now on, saying so, rather than write to the replaced file
		return fmt.Errorf("history: %s: %w", x.path, err)
	}
	x.f = f
	return nil
}

// Close closes the file.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}
