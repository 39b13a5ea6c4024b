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
// in a crash only makes the index coarser; a sample the store's durable
// state depends on is never lost silently (below).
//
// The file (history.idx in the data directory), format 2: a 20-byte
// header, the magic "GTTIME02", u64 sealed, u32 crc32c (Castagnoli) of
// those 16 bytes; then 24-byte samples: u64 unix nanoseconds, u64 seq
// (both little-endian), u32 crc32c of those 16 bytes, u32 zero. The file
// is written whole (atomically, package durable) when it is created, by a
// clean Close, and by Trim and Open when they drop samples; sealed is how
// many samples it held then, every one of them complete. Samples recorded
// since are appended, each with one write and synced before the next, so
// a crash can tear only the last one. Format 1 (the magic "GTTIME01", no
// header beyond it, nothing sealed) still opens, and a read-write open
// rewrites it in format 2.
//
// What a torn tail is: only a partial last record, or a last record
// whose checksum fails (a write cut at a sector boundary leaves some of
// its bytes and zeros), and only past what is proven whole: past the
// sealed samples, and past the sample the store's durable state claims
// (the data directory records, with every flush of the store, the seq of
// the index's newest sample when the flush's last batch applied: a
// Claim, internal/datadir; it was synced before that batch). Open cuts
// such a tail. Everything else is refused with a *durable.CorruptError
// naming the file and byte offset, and nothing is changed: a damaged
// header, any damaged sample before the last one, a damaged or missing
// sealed or claimed sample (a file cut at a record boundary included), a
// missing file the claim proves existed. Without a claim (a store that
// recorded none: written before claims) a damaged last record past the
// sealed ones is taken for a torn one, as it always was.
package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
)

// FileName is the index's file in the data directory.
const FileName = "history.idx"

const (
	magic      = "GTTIME02"
	magicV1    = "GTTIME01"
	headerSize = len(magic) + 8 + 4
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
	// newest is the newest sample's seq (0: none), for Claim without the
	// lock (Record holds it while it syncs).
	newest atomic.Uint64
	// sealed is the number of samples the file's header seals (see the
	// file's layout). Protected by mu.
	sealed int
}

// Claim is what the store's durable state recorded of the index (the data
// directory keeps it with every flush, see the package doc): that the
// file existed, and the seq of its newest sample then (0: none yet).
type Claim struct {
	Newest uint64
}

// Claim is the index's claim now: the seq of its newest sample, which is
// synced.
func (x *Index) Claim() Claim { return Claim{Newest: x.newest.Load()} }

// Open reads the index at path for a store whose newest seq is last,
// without a claim (OpenClaimed).
func Open(path string, last uint64, readOnly bool) (*Index, error) {
	return OpenClaimed(path, last, readOnly, nil)
}

// OpenClaimed reads the index at path for a store whose newest seq is
// last and whose durable state recorded c of it (nil: nothing recorded).
// A read-write open creates a missing file (unless c proves one existed),
// cuts a torn tail and drops the samples of seqs above last (rewriting the
// file atomically); a read-only one changes nothing and leaves those
// samples out. What it refuses is in the package doc.
func OpenClaimed(path string, last uint64, readOnly bool, c *Claim) (*Index, error) {
	x := &Index{path: path}
	corrupt := func(off int64, what string) error {
		return &durable.CorruptError{Kind: "history", File: path, Offset: off, What: what}
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && c != nil:
		return nil, corrupt(0, fmt.Sprintf("missing: the store's durable state records the time index with a sample of seq %d (reads as of a time would answer older seqs, or nothing); restore the file from a backup, or run 'graphtide repair' to start a new index", c.Newest))
	case errors.Is(err, os.ErrNotExist):
		if readOnly {
			return x, nil
		}
		data = x.encode()
		if err := durable.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	v1 := len(data) >= len(magicV1) && string(data[:len(magicV1)]) == magicV1
	start, sealed := len(magicV1), uint64(0)
	switch {
	case v1:
	case len(data) < headerSize || string(data[:len(magic)]) != magic:
		return nil, corrupt(0, "not a time index (bad magic, or the header cut short)")
	case binary.LittleEndian.Uint32(data[16:]) != crc32.Checksum(data[:16], castagnoli):
		return nil, corrupt(0, "header checksum mismatch")
	default:
		start, sealed = headerSize, binary.LittleEndian.Uint64(data[8:])
	}
	// reached: the intact samples reach the sealed and the claimed ones.
	reached := func() bool {
		n := len(x.samples)
		return uint64(n) >= sealed && (c == nil || c.Newest == 0 || n > 0 && x.samples[n-1].Seq >= c.Newest)
	}
	body := data[start:]
	end := len(body) / recordSize * recordSize
	torn := end != len(body) // a partial last record: an append cut short
	tornAt := int64(start + end)
	for off := 0; off < end; off += recordSize {
		r := body[off : off+recordSize]
		at := int64(start + off)
		if binary.LittleEndian.Uint32(r[16:]) != crc32.Checksum(r[:16], castagnoli) || binary.LittleEndian.Uint32(r[20:]) != 0 {
			if off+recordSize == end && !torn {
				torn, tornAt = true, at // the last append, cut short by a crash
				break
			}
			return nil, corrupt(at, "record checksum mismatch")
		}
		s := Sample{Time: time.Unix(0, int64(binary.LittleEndian.Uint64(r))), Seq: binary.LittleEndian.Uint64(r[8:])}
		if n := len(x.samples); n > 0 && (s.Seq < x.samples[n-1].Seq || s.Time.Before(x.samples[n-1].Time)) {
			return nil, corrupt(at, fmt.Sprintf("sample (%v, seq %d) is older than the one before it", s.Time.UTC(), s.Seq))
		}
		x.samples = append(x.samples, s)
	}
	if !reached() {
		have := "no sample"
		if n := len(x.samples); n > 0 {
			have = fmt.Sprintf("%d samples, up to seq %d", n, x.samples[n-1].Seq)
		}
		need := fmt.Sprintf("its header seals %d samples", sealed)
		if c != nil && c.Newest > 0 {
			need += fmt.Sprintf(", and the store's durable state records a sample of seq %d", c.Newest)
		}
		if torn {
			return nil, corrupt(tornAt, fmt.Sprintf("damaged record (checksum mismatch or cut short) that is proven whole: the records before it hold %s, but %s (a torn tail is only what lies past those)", have, need))
		}
		return nil, corrupt(int64(len(data)), fmt.Sprintf("the file ends at %s, but %s: samples were lost (the file was cut or replaced)", have, need))
	}
	keep := sort.Search(len(x.samples), func(i int) bool { return x.samples[i].Seq > last })
	stale := keep < len(x.samples)
	x.samples = x.samples[:keep]
	x.setNewest()
	if readOnly {
		return x, nil
	}
	x.sealed = int(sealed)
	if stale || torn || v1 {
		if err := x.rewrite(); err != nil {
			return nil, err
		}
	}
	if x.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, err
	}
	return x, nil
}

// WriteNew writes a new index at path holding samples (ascending in time
// and seq), every one sealed, atomically: what a repair puts in place of
// a lost or damaged index.
func WriteNew(path string, samples []Sample) error {
	x := &Index{path: path, samples: samples}
	for i := 1; i < len(samples); i++ {
		if samples[i].Seq < samples[i-1].Seq || samples[i].Time.Before(samples[i-1].Time) {
			return fmt.Errorf("history: sample %d is older than the one before it", i)
		}
	}
	return x.rewrite()
}

// rewrite writes the file whole, sealing every sample. Requires mu held
// (or no sharing yet).
func (x *Index) rewrite() error {
	if err := durable.WriteFile(x.path, x.encode(), 0o644); err != nil {
		return err
	}
	x.sealed = len(x.samples)
	return nil
}

// setNewest keeps newest. Requires mu held (or no sharing yet).
func (x *Index) setNewest() {
	var n uint64
	if len(x.samples) > 0 {
		n = x.samples[len(x.samples)-1].Seq
	}
	x.newest.Store(n)
}

func record(s Sample) []byte {
	r := make([]byte, recordSize)
	binary.LittleEndian.PutUint64(r, uint64(s.Time.UnixNano()))
	binary.LittleEndian.PutUint64(r[8:], s.Seq)
	binary.LittleEndian.PutUint32(r[16:], crc32.Checksum(r[:16], castagnoli))
	return r
}

// encode is the whole file of the samples, every one sealed. Requires mu
// held (or no sharing yet).
func (x *Index) encode() []byte {
	b := []byte(magic)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(x.samples)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
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
	x.setNewest()
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

// Samples are the samples, oldest first.
func (x *Index) Samples() []Sample {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Sample(nil), x.samples...)
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
	if err := x.rewrite(); err != nil {
		x.samples = old
		return err
	}
	x.setNewest() // the same: the newest sample is kept
	x.f.Close()   // the old file, replaced
	f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		x.f = nil // Record fails from now on, saying so, rather than write to the replaced file
		return fmt.Errorf("history: %s: %w", x.path, err)
	}
	x.f = f
	return nil
}

// Close seals the file (writes it whole, every sample sealed: see the
// package doc), unless it is sealed already, and closes it.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	var err error
	if x.sealed != len(x.samples) {
		err = x.rewrite()
	}
	err = errors.Join(err, x.f.Close()) // the old file, when replaced
	x.f = nil
	if err != nil {
		return fmt.Errorf("history: %s: sealing: %w", x.path, err)
	}
	return nil
}
