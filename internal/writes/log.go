package writes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/durable"
)

// LogFileName is the outcome log's file in the data directory.
const LogFileName = "writes.log"

// The file: the 8-byte magic "GTWRIT01", then records: u32 payload
// length, u32 crc32c (Castagnoli) of those 4 bytes, u32 crc32c of the
// payload (all little-endian), the payload (encodeEntry). A length
// whose checksum holds but that runs past the end is a torn append; one
// whose checksum fails is damage, unless what follows is one append that
// a crash left zeros in from a sector boundary on (tornByZeros). Each record is appended with
// one write and synced before the write it describes can become durable,
// so a crash can tear only the last one: Open cuts a partial last record
// or a last record whose checksum fails; any other damage is refused,
// naming the file and byte offset, and nothing is changed.
const (
	logMagic      = "GTWRIT01"
	maxPayload    = 1 << 16
	recordHeader  = 12
	flagApplied   = 1
	entryHead     = 1 + 4 + 8 + 8 + 16 + 8 + 4 // before the four strings
	payloadFixed  = entryHead + 4*2
	maxEntryField = 1<<16 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Outcome is what became of a write.
type Outcome struct {
	Applied bool
	// Seq: applied, the seq the batch got when first applied (a crash's
	// replay may give it another, see the README); refused, the seq its
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
	Topic     string
	Partition int32
	Offset    int64
	Key       string   // "" for a conditional write without a key
	Print     [16]byte // Fingerprint of the record's value
	At        time.Time
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
	mu   sync.Mutex
	// f is the file, appended to (nil when read-only). Protected by mu.
	f *os.File
	// The entries, in append order, and indexed by position and by key
	// (the first entry of a key: later records with it are retries, which
	// get no entry). Protected by mu.
	entries []*Entry
	byPos   map[pos]*Entry
	byKey   map[string]*Entry
}

// OpenLog reads the log at path. A read-write open creates a missing
// file and cuts a torn tail; a read-only one changes nothing.
func OpenLog(path string, readOnly bool) (*Log, error) {
	l := &Log{path: path, byPos: map[pos]*Entry{}, byKey: map[string]*Entry{}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if readOnly {
			return l, nil
		}
		if err := durable.WriteFile(path, []byte(logMagic), 0o644); err != nil {
			return nil, err
		}
		data = []byte(logMagic)
	case err != nil:
		return nil, err
	}
	if len(data) < len(logMagic) || string(data[:len(logMagic)]) != logMagic {
		return nil, l.corrupt(0, "not a writes outcome log (bad magic)")
	}
	off, torn := len(logMagic), false
	for off < len(data) {
		rest := data[off:]
		if len(rest) < recordHeader {
			torn = true
			break
		}
		n := int(binary.LittleEndian.Uint32(rest))
		if binary.LittleEndian.Uint32(rest[4:]) != crc32.Checksum(rest[:4], castagnoli) || n > maxPayload || n < payloadFixed {
			if tornByZeros(data, off) {
				torn = true
				break
			}
			return nil, l.corrupt(off, fmt.Sprintf("record header damaged (length %d)", n))
		}
		if len(rest) < recordHeader+n {
			torn = true // the last append, cut short (its length is intact)
			break
		}
		payload := rest[recordHeader : recordHeader+n]
		if binary.LittleEndian.Uint32(rest[8:]) != crc32.Checksum(payload, castagnoli) {
			if off+recordHeader+n == len(data) {
				torn = true // the last append, cut short by a crash
				break
			}
			return nil, l.corrupt(off, "record checksum mismatch")
		}
		e, err := decodeEntry(payload)
		if err != nil {
			return nil, l.corrupt(off, err.Error())
		}
		l.add(e)
		off += recordHeader + n
	}
	if readOnly {
		return l, nil
	}
	if torn {
		if err := durable.WriteFile(path, l.encode(), 0o644); err != nil {
			return nil, err
		}
	}
	if l.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, err
	}
	return l, nil
}

// tornByZeros reports whether the bytes from off on can be one append
// torn by a crash that left its later sectors zeros: at most one record
// long, and zeros from a sector boundary (512 bytes) to the end.
func tornByZeros(data []byte, off int) bool {
	if len(data)-off > recordHeader+maxPayload {
		return false
	}
	z := len(data)
	for z > off && data[z-1] == 0 {
		z--
	}
	return z == off || z%512 == 0 && z < len(data)
}

func (l *Log) corrupt(off int, what string) error {
	return &durable.CorruptError{Kind: "writes", File: l.path, Offset: int64(off), What: what}
}

// add indexes e. Requires mu held (or no sharing yet).
func (l *Log) add(e *Entry) {
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
	b := []byte{flags}
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Partition))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Offset))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.At.UnixNano()))
	b = append(b, e.Print[:]...)
	b = binary.LittleEndian.AppendUint64(b, e.Seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(e.Index))
	for _, s := range []string{e.Topic, e.Key, e.Condition, e.Actual} {
		b = appendStr(b, s)
	}
	return b
}

func decodeEntry(p []byte) (*Entry, error) {
	if p[0]&^flagApplied != 0 {
		return nil, fmt.Errorf("unknown flags %#x", p[0])
	}
	e := &Entry{}
	e.Applied = p[0]&flagApplied != 0
	e.Partition = int32(binary.LittleEndian.Uint32(p[1:]))
	e.Offset = int64(binary.LittleEndian.Uint64(p[5:]))
	e.At = time.Unix(0, int64(binary.LittleEndian.Uint64(p[13:])))
	copy(e.Print[:], p[21:37])
	e.Seq = binary.LittleEndian.Uint64(p[37:])
	e.Index = int(binary.LittleEndian.Uint32(p[45:]))
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

func record(e *Entry) []byte {
	p := encodeEntry(e)
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(p)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(p, castagnoli))
	return append(b, p...)
}

// encode is the whole file. Requires mu held (or no sharing yet).
func (l *Log) encode() []byte {
	b := []byte(logMagic)
	for _, e := range l.entries {
		b = append(b, record(e)...)
	}
	return b
}

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

// Len is the number of entries.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Append adds e and syncs it to disk. Strings longer than 65535 bytes
// are cut (a key is at most MaxKeyLen; the texts are made here).
func (l *Log) Append(e Entry) error {
	for _, s := range []*string{&e.Topic, &e.Key, &e.Condition, &e.Actual} {
		if len(*s) > maxEntryField/4 {
			*s = (*s)[:maxEntryField/4]
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
	return nil
}

// Prune drops the entries drop says no replay or retry needs any more. It
// rewrites the file atomically, and only when that drops at least half of
// the entries (and 1,024 at least), so that its cost is amortized; it
// reports how many it dropped.
func (l *Log) Prune(drop func(*Entry) bool) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, nil
	}
	n := 0
	for _, e := range l.entries {
		if drop(e) {
			n++
		}
	}
	if n < 1024 || 2*n < len(l.entries) {
		return 0, nil
	}
	old := l.entries
	l.entries, l.byPos, l.byKey = nil, map[pos]*Entry{}, map[string]*Entry{}
	for _, e := range old {
		if !drop(e) {
			l.add(e)
		}
	}
	if err := durable.WriteFile(l.path, l.encode(), 0o644); err != nil {
		l.entries, l.byPos, l.byKey = nil, map[pos]*Entry{}, map[string]*Entry{}
		for _, e := range old {
			l.add(e)
		}
		return 0, err
	}
	l.f.Close() // the old file, replaced
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		l.f = nil // Append fails from now on, saying so
		return n, fmt.Errorf("writes: %s: %w", l.path, err)
	}
	l.f = f
	return n, nil
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
