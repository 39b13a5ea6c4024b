package writes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/graphtide/graphtide/internal/durable"
)

// LogFileName is the outcome log's file in the data directory.
const LogFileName = "writes.log"

// The file (format 2): the 8-byte magic "GTWRIT02", u64 first: how many
// records were appended before the file's first one (Prune drops the
// oldest), u32 crc32c (Castagnoli) of those 16 bytes; then records: u32
// payload length, u32 crc32c of those 4 bytes, u32 crc32c of the payload
// (all little-endian), the payload (encodeEntry). Record i of the file is
// the log's record first+i, counting from 0 since the log was created.
// Format 1 (the magic "GTWRIT01", records from byte 8) reads as first 0;
// a read-write open rewrites it in format 2.
//
// Each record is appended with one write and synced before the write it
// describes can become durable, so a crash can tear only the last one. A
// length whose checksum holds but that runs past the end is a torn
// append; one whose checksum fails is damage, unless what follows is one
// append that a crash left zeros in from a sector boundary on
// (durable.ScanRecords); a last record whose payload checksum fails is a torn
// append too. But a torn tail is only what lies past the store's durable
// state: the data directory records, with every flush of the store, how
// many records the log held when the flush's last batch applied (a
// Claim; internal/datadir), and every one of those was synced before
// that batch, so no crash can tear it. OpenLog cuts a torn tail only past
// the claimed records; everything else is refused, naming the file and
// byte offset, and nothing is changed: any damaged record the claim
// covers, a file that ends (cut at a record boundary, or pruned by hand)
// before the claimed records, a missing file the claim proves existed.
const (
	logMagic     = "GTWRIT02"
	logMagicV1   = "GTWRIT01"
	logHeader    = len(logMagic) + 8 + 4
	maxPayload   = 1 << 16
	recordHeader = durable.RecordHeader
	flagApplied  = 1
	flagRetry    = 2
	flagMismatch = 4
	entryHead    = 1 + 16 + 4 + 8 + 8 + 16 + 8 + 4 + 4 + 8 // before the four strings
	payloadFixed = entryHead + 4*2
	// maxField bounds each string of an entry, so that an entry fits
	// maxPayload.
	maxField = (maxPayload - payloadFixed) / 4
)

var castagnoli = durable.Castagnoli

// Outcome is what became of a write.
type Outcome struct {
	Applied bool
	// Seq: applied, the seq the batch got when first applied (a crash's
	// replay may give it another, see docs/guarantees.md); refused, the seq its
	// conditions were evaluated against.
	Seq uint64
	// Refused: which condition failed (its index in the request), as
	// text, and what the graph held instead.
	Index     int
	Condition string
	Actual    string
}

// Entry is the outcome of one write record.
type Entry struct {
	Topic string
	// TopicID is the Kafka ID of the topic the record was read from: a
	// topic deleted and re-created under the same name has another, and
	// its records are not this entry's.
	TopicID   [16]byte
	Partition int32
	Offset    int64
	Key       string   // "" for a conditional write without a key
	Print     [16]byte // Fingerprint of the record's value
	At        time.Time
	// Retry: the record repeated a key seen before (at FirstPartition,
	// FirstOffset) and applied nothing; Outcome is the first record's.
	// Mismatch: with another batch than the first.
	Retry, Mismatch bool
	FirstPartition  int32
	FirstOffset     int64
	Outcome
}

type pos struct {
	topic     string
	partition int32
	offset    int64
}

// Log is the outcome log. Safe for concurrent use.
type Log struct {
	path string
	// created: OpenLog found no file and made an empty one. (The file
	// marks that the store's consumption of the writes topic goes with
	// this log: a store with a position in the topic and no file is
	// refused, see ingest.New, which removes the empty file it refuses.)
	created bool
	mu      sync.Mutex
	// f is the file, appended to (nil when read-only). Protected by mu.
	f *os.File
	// The entries, in append order, and indexed by position and by key
	// (the key's first entry: a retry's own entry does not replace it).
	// Protected by mu.
	entries []*Entry
	byPos   map[pos]*Entry
	byKey   map[string]*Entry
	bytes   int64 // entryBytes of the entries
	// first is how many records were appended before entries[0] (pruned).
	// Protected by mu.
	first uint64
	// records is first+len(entries): every record ever appended, each
	// synced (for Claim without the lock: Append holds it while it syncs).
	records atomic.Uint64
}

// Claim is what the store's durable state recorded of the log (the data
// directory keeps it with every flush, see the file's layout above): that
// the file existed, and how many records had been appended to it then.
type Claim struct {
	Records uint64
}

// Claim is the log's claim now: every record appended so far, each
// synced.
func (l *Log) Claim() Claim { return Claim{Records: l.records.Load()} }

// OpenLog reads the log at path, without a claim (OpenLogClaimed).
func OpenLog(path string, readOnly bool) (*Log, error) {
	return OpenLogClaimed(path, readOnly, nil)
}

// OpenLogClaimed reads the log at path, of which the store's durable
// state recorded c (nil: nothing recorded). A read-write open creates a
// missing file (unless c proves one existed), cuts a torn tail (only past
// what c covers) and rewrites a format 1 file in format 2; a read-only one
// changes nothing.
func OpenLogClaimed(path string, readOnly bool, c *Claim) (*Log, error) {
	l := &Log{path: path, byPos: map[pos]*Entry{}, byKey: map[string]*Entry{}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && c != nil:
		return nil, l.corrupt(0, fmt.Sprintf("missing: the store's durable state records this log with %d records (keyed and conditional writes the store applied would lose their outcomes); restore the file from a backup, or start with the store and the log of one backup", c.Records))
	case errors.Is(err, os.ErrNotExist):
		if readOnly {
			return l, nil
		}
		data, l.created = l.encode(), true
		if err := durable.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	off, rewrite := 0, false
	switch {
	case len(data) >= len(logMagicV1) && string(data[:len(logMagicV1)]) == logMagicV1:
		off, rewrite = len(logMagicV1), true
	case len(data) < logHeader || string(data[:len(logMagic)]) != logMagic:
		return nil, l.corrupt(0, "not a writes outcome log (bad magic)")
	case binary.LittleEndian.Uint32(data[16:]) != crc32.Checksum(data[:16], castagnoli):
		return nil, l.corrupt(0, "header checksum mismatch")
	default:
		l.first, off = binary.LittleEndian.Uint64(data[8:]), logHeader
	}
	var derr error
	scan := durable.ScanRecords(data, off, payloadFixed, maxPayload, func(at int, payload []byte) bool {
		e, err := decodeEntry(payload)
		if err != nil {
			derr = l.corrupt(at, err.Error())
			return false
		}
		l.add(e)
		return true
	})
	switch {
	case derr != nil:
		return nil, derr
	case scan.Damage != "":
		return nil, l.corrupt(scan.DamagedAt, scan.Damage)
	}
	torn, tornAt := scan.Torn, scan.TornAt
	have := l.first + uint64(len(l.entries))
	if c != nil && have < c.Records {
		if torn {
			return nil, l.corrupt(tornAt, fmt.Sprintf("damaged record %d (checksum mismatch, cut short or zeroed) that the store's durable state depends on: the store recorded %d records, so this one was synced before a flush covered its write (a torn tail is only what lies past that); restore the file from a backup", have, c.Records))
		}
		return nil, l.corrupt(len(data), fmt.Sprintf("the file ends after record %d, but the store's durable state records %d: records were lost (the file was cut or replaced); restore the file from a backup", have, c.Records))
	}
	l.records.Store(have)
	if readOnly {
		return l, nil
	}
	if torn || rewrite {
		if err := durable.WriteFile(path, l.encode(), 0o644); err != nil {
			return nil, err
		}
	}
	if l.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) corrupt(off int, what string) error {
	return &durable.CorruptError{Kind: "writes", File: l.path, Offset: int64(off), What: what}
}

// entryOverhead is an entry's memory beside its strings: the struct, its
// pointer in entries and its places in the two maps (estimated).
const entryOverhead = int64(unsafe.Sizeof(Entry{})) + 8 + 2*64

// entryBytes estimates the memory e holds.
func entryBytes(e *Entry) int64 {
	return entryOverhead + int64(len(e.Topic)+len(e.Key)+len(e.Condition)+len(e.Actual))
}

// MemoryBytes estimates the memory the entries hold.
func (l *Log) MemoryBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// add indexes e. Requires mu held (or no sharing yet).
func (l *Log) add(e *Entry) {
	l.bytes += entryBytes(e)
	l.entries = append(l.entries, e)
	l.byPos[pos{e.Topic, e.Partition, e.Offset}] = e
	if e.Key != "" {
		if _, ok := l.byKey[e.Key]; !ok {
			l.byKey[e.Key] = e
		}
	}
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func encodeEntry(e *Entry) []byte {
	var flags byte
	if e.Applied {
		flags |= flagApplied
	}
	if e.Retry {
		flags |= flagRetry
	}
	if e.Mismatch {
		flags |= flagMismatch
	}
	b := []byte{flags}
	b = append(b, e.TopicID[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Partition))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Offset))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.At.UnixNano()))
	b = append(b, e.Print[:]...)
	b = binary.LittleEndian.AppendUint64(b, e.Seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Index))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.FirstPartition))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.FirstOffset))
	for _, s := range []string{e.Topic, e.Key, e.Condition, e.Actual} {
		b = appendStr(b, s)
	}
	return b
}

func decodeEntry(p []byte) (*Entry, error) {
	if p[0]&^(flagApplied|flagRetry|flagMismatch) != 0 {
		return nil, fmt.Errorf("unknown flags %#x", p[0])
	}
	e := &Entry{}
	e.Applied, e.Retry, e.Mismatch = p[0]&flagApplied != 0, p[0]&flagRetry != 0, p[0]&flagMismatch != 0
	copy(e.TopicID[:], p[1:17])
	q := p[17:]
	e.Partition = int32(binary.LittleEndian.Uint32(q))
	e.Offset = int64(binary.LittleEndian.Uint64(q[4:]))
	e.At = time.Unix(0, int64(binary.LittleEndian.Uint64(q[12:])))
	copy(e.Print[:], q[20:36])
	e.Seq = binary.LittleEndian.Uint64(q[36:])
	e.Index = int(binary.LittleEndian.Uint32(q[44:]))
	e.FirstPartition = int32(binary.LittleEndian.Uint32(q[48:]))
	e.FirstOffset = int64(binary.LittleEndian.Uint64(q[52:]))
	rest := p[entryHead:]
	var strs [4]string
	for i := range strs {
		if len(rest) < 2 {
			return nil, errors.New("entry cut short")
		}
		n := int(binary.LittleEndian.Uint16(rest))
		if len(rest) < 2+n {
			return nil, errors.New("entry cut short")
		}
		strs[i], rest = string(rest[2:2+n]), rest[2+n:]
	}
	if len(rest) != 0 {
		return nil, errors.New("bytes after the entry")
	}
	e.Topic, e.Key, e.Condition, e.Actual = strs[0], strs[1], strs[2], strs[3]
	return e, nil
}

func record(e *Entry) []byte { return durable.AppendRecord(nil, encodeEntry(e)) }

// encode is the whole file. Requires mu held (or no sharing yet).
func (l *Log) encode() []byte {
	b := []byte(logMagic)
	b = binary.LittleEndian.AppendUint64(b, l.first)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	for _, e := range l.entries {
		b = append(b, record(e)...)
	}
	return b
}

// Created reports whether OpenLog made the file (there was none).
func (l *Log) Created() bool { return l.created }

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// At is the entry of the record at (topic, partition, offset).
func (l *Log) At(topic string, partition int32, offset int64) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.byPos[pos{topic, partition, offset}]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// ByKey is the first entry with key.
func (l *Log) ByKey(key string) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.byKey[key]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Entries are the entries, in log order.
func (l *Log) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Entry, len(l.entries))
	for i, e := range l.entries {
		out[i] = *e
	}
	return out
}

// Len is the number of entries.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Append adds e and syncs it to disk. A string longer than maxField
// bytes is cut there (a topic name is at most 249 bytes and a key
// MaxKeyLen; the texts are made here), on a UTF-8 boundary.
func (l *Log) Append(e Entry) error {
	for _, s := range []*string{&e.Topic, &e.Key, &e.Condition, &e.Actual} {
		if len(*s) > maxField {
			n := maxField
			for n > 0 && !utf8.RuneStart((*s)[n]) {
				n--
			}
			*s = (*s)[:n]
		}
	}
	e.At = e.At.Round(0)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("writes: the outcome log is not open for writing")
	}
	if _, err := l.f.Write(record(&e)); err != nil {
		return fmt.Errorf("writes: %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("writes: %s: %w", l.path, err)
	}
	l.add(&e)
	l.records.Add(1)
	return nil
}

// Prune drops the oldest entries while drop(i, e) says so (entries are
// in log order, so what no replay or retry needs any more is a prefix;
// i is e's index, so len-i entries would be left from it on). It
// rewrites the file atomically, and only when that drops at least half of
// the entries (and 1,024 at least), so that its cost is amortized; it
// reports how many it dropped. If the rewrite fails after it replaced the
// file, the file is written again whole; if that fails too, Append fails
// from then on (the log no longer says what it holds).
func (l *Log) Prune(drop func(i int, e *Entry) bool) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, nil
	}
	n := 0
	for n < len(l.entries) && drop(n, l.entries[n]) {
		n++
	}
	if n < 1024 || 2*n < len(l.entries) {
		return 0, nil
	}
	old := l.entries
	l.index(old[n:])
	l.first += uint64(n)
	if err := l.replace(); err != nil {
		l.index(old)
		l.first -= uint64(n)
		if rerr := l.replace(); rerr != nil {
			l.f.Close()
			l.f = nil
			return 0, fmt.Errorf("writes: %s: pruning failed (%w) and so did writing it again whole: the log stops taking entries", l.path, errors.Join(err, rerr))
		}
		return 0, err
	}
	return n, nil
}

// index makes es the entries. Requires mu held.
func (l *Log) index(es []*Entry) {
	l.entries, l.byPos, l.byKey, l.bytes = nil, map[pos]*Entry{}, map[string]*Entry{}, 0
	for _, e := range es {
		l.add(e)
	}
}

// replace writes the file whole from the entries, atomically, and
// reopens it for appends. Requires mu held, with l.f open.
func (l *Log) replace() error {
	if err := durable.WriteFile(l.path, l.encode(), 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("writes: %s: %w", l.path, err)
	}
	l.f.Close() // the old file, replaced
	l.f = f
	return nil
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
