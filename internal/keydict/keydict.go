// Package keydict is graphtide's persistent dictionary from string vertex keys
// (account numbers, user names) to uint64 vertex ids.
//
// What it promises:
//
//   - Ids for keys come from [KeyBase, MaxVertex] and are assigned densely in
//     order of first sight: the first key ever seen gets KeyBase, the next
//     KeyBase+1, and so on. They never collide with numeric vertex ids as long
//     as numeric ids stay below KeyBase, which every writer must enforce when
//     keys are in use.
//   - Once Sync has returned nil, every id handed out by ID before Sync was
//     called survives a crash and maps to the same key after Open.
//   - Ids handed out but not yet synced are lost on a crash and may be given
//     to different keys after reopening. The caller MUST call Sync, and see it
//     succeed, BEFORE making durable any data that uses an id returned by ID
//     (for example before flushing a store batch that references it).
//   - Corruption of a complete record is never silently accepted: Open
//     returns a *CorruptError naming the file and byte offset (see below for
//     what counts as a torn tail instead).
//   - All methods are safe for concurrent use. Sync does not block ID, Lookup
//     or Key while it writes and fsyncs.
//
// On-disk format: one append-only file of records laid back to back, each
//
//	bytes 0..3   length n of the key, uint32 little-endian, 1 <= n <= MaxKeyLen
//	bytes 4..7   CRC-32C (Castagnoli) of the key bytes, uint32 little-endian
//	bytes 8..    the n key bytes (valid UTF-8)
//
// The i-th record (from 0) holds the key of id KeyBase+i; a key appears at
// most once. Open treats a record that runs past the end of the file (a write
// torn by a crash), or a tail of zero bytes, as never written: it truncates
// the file there. A complete record with a bad length, a bad checksum, an
// invalid key or a duplicate key is corruption. (A length field damaged so
// that its record runs past the end of the file cannot be told from a torn
// write: the records from there on, at most MaxKeyLen+8 bytes, are dropped.)
//
// Memory: one map entry and one slice element per key; both share the key's
// bytes.
package keydict

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"
)

const (
	// KeyBase is the id given to the first key. Numeric vertex ids must be
	// below KeyBase when keys are in use.
	KeyBase uint64 = 1 << 62
	// MaxVertex is the largest vertex id graphtide accepts, numeric or key.
	MaxVertex uint64 = 1<<63 - 1
	// MaxKeyLen is the longest key, in bytes.
	MaxKeyLen = 4096

	headerSize = 8
	// maxRetainedBuf bounds the capacity of the spare write buffer kept
	// between Syncs, so one burst of new keys does not pin memory for ever.
	maxRetainedBuf = 1 << 20
)

var (
	// ErrClosed is returned by calls on a closed Dict.
	ErrClosed = errors.New("keydict: dictionary is closed")
	// ErrInvalidKey wraps every rejected key.
	ErrInvalidKey = errors.New("keydict: invalid key")
	// ErrCorrupt is matched (with errors.Is) by every *CorruptError.
	ErrCorrupt = errors.New("keydict: corrupt dictionary file")
	// ErrFull is returned when every id in [KeyBase, MaxVertex] is in use.
	ErrFull = errors.New("keydict: no key ids left")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptError reports a damaged record in a dictionary file.
type CorruptError struct {
	Path   string // the dictionary file
	Offset int64  // byte offset of the damaged record
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("keydict: corruption in %s at byte offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// IsKeyID reports whether id lies in the key range [KeyBase, MaxVertex].
func IsKeyID(id uint64) bool { return id >= KeyBase && id <= MaxVertex }

// CheckKey returns nil if key is acceptable as a dictionary key: 1 to
// MaxKeyLen bytes of valid UTF-8. Otherwise the error wraps ErrInvalidKey.
func CheckKey(key string) error {
	switch {
	case len(key) == 0:
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidKey, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: not valid utf-8", ErrInvalidKey)
	}
	return nil
}

// Dict is an open key dictionary. See the package documentation.
type Dict struct {
	path string

	// syncMu serializes Sync and Close. Held while writing and fsyncing,
	// without mu, so ID keeps assigning ids meanwhile.
	syncMu sync.Mutex
	// Protected by syncMu.
	file  *os.File
	size  int64  // bytes of complete records in the file
	spare []byte // empty buffer swapped in for pending at the next Sync

	mu sync.RWMutex
	// Protected by mu.
	ids     map[string]uint64
	keys    []string // keys[i] has id KeyBase+i
	pending []byte   // encoded records of keys not yet handed to the file
	err     error    // sticky: a failed write or fsync; no more ids are assigned
	closed  bool
	// INVARIANT: the records in the file, then those in the buffer of an
	// in-flight Sync, then those in pending are the records of keys, in id
	// order, unless err is set.
}

// Open opens the dictionary file at path, creating it if absent, and replays
// it. A torn tail is truncated (and the truncation fsynced). The file is
// locked against a second Open, in this process or another, until Close.
func Open(path string) (*Dict, error) {
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("keydict: open: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("keydict: lock %s (is it open elsewhere?): %w", path, err)
	}
	d := &Dict{path: path, file: f, ids: make(map[string]uint64)}
	if err := d.replay(); err != nil {
		f.Close()
		return nil, err
	}
	if created {
		// Make the new file's directory entry durable, so a synced record
		// cannot vanish with its file.
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("keydict: open %s: %w", path, err)
		}
	}
	return d, nil
}

// replay reads every record of d.file into d.ids and d.keys and truncates a
// torn tail.
func (d *Dict) replay() error {
	r := bufio.NewReaderSize(d.file, 1<<20)
	var (
		off int64
		hdr [headerSize]byte
		buf = make([]byte, MaxKeyLen)
	)
	corrupt := func(reason string, args ...any) error {
		return &CorruptError{Path: d.path, Offset: off, Reason: fmt.Sprintf(reason, args...)}
	}
	torn := false
	for {
		_, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			break
		}
		if err == io.ErrUnexpectedEOF {
			torn = true
			break
		}
		if err != nil {
			return fmt.Errorf("keydict: read %s at byte offset %d: %w", d.path, off, err)
		}
		klen := binary.LittleEndian.Uint32(hdr[0:4])
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		if klen == 0 || klen > MaxKeyLen {
			zero, err := restIsZero(hdr[:], r)
			if err != nil {
				return fmt.Errorf("keydict: read %s at byte offset %d: %w", d.path, off, err)
			}
			if zero {
				torn = true
				break
			}
			return corrupt("invalid key length %d", klen)
		}
		key := buf[:klen]
		if _, err := io.ReadFull(r, key); err != nil {
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				torn = true
				break
			}
			return fmt.Errorf("keydict: read %s at byte offset %d: %w", d.path, off, err)
		}
		if got := crc32.Checksum(key, castagnoli); got != sum {
			return corrupt("checksum mismatch: stored %#08x, computed %#08x", sum, got)
		}
		if !utf8.Valid(key) {
			return corrupt("key is not valid utf-8")
		}
		if id, dup := d.ids[string(key)]; dup {
			return corrupt("duplicate key (first stored as id %d)", id)
		}
		if uint64(len(d.keys)) > MaxVertex-KeyBase {
			return corrupt("more keys than ids in [KeyBase, MaxVertex]")
		}
		k := string(key)
		d.ids[k] = KeyBase + uint64(len(d.keys))
		d.keys = append(d.keys, k)
		off += headerSize + int64(klen)
	}
	d.size = off
	if torn {
		if err := d.file.Truncate(off); err != nil {
			return fmt.Errorf("keydict: truncate torn tail of %s at byte offset %d: %w", d.path, off, err)
		}
		if err := d.file.Sync(); err != nil {
			return fmt.Errorf("keydict: fsync %s: %w", d.path, err)
		}
	}
	return nil
}

// restIsZero reports whether head and everything left in r are zero bytes.
func restIsZero(head []byte, r *bufio.Reader) (bool, error) {
	for _, b := range head {
		if b != 0 {
			return false, nil
		}
	}
	var chunk [4096]byte
	for {
		n, err := r.Read(chunk[:])
		for _, b := range chunk[:n] {
			if b != 0 {
				return false, nil
			}
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// ID returns the id of key, assigning the next free id if key is new. A new
// id is only buffered in memory: see Sync. The key must be 1 to MaxKeyLen
// bytes of valid UTF-8 (the error wraps ErrInvalidKey). ID does not retain
// key's memory.
func (d *Dict) ID(key string) (uint64, error) {
	d.mu.RLock()
	id, ok := d.ids[key] // ids is nil after Close
	d.mu.RUnlock()
	if ok {
		return id, nil
	}
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	return d.assign(key, nil)
}

// IDBytes is ID for a key held in a byte slice. It does not allocate when the
// key is already known, and it does not retain key.
func (d *Dict) IDBytes(key []byte) (uint64, error) {
	d.mu.RLock()
	id, ok := d.ids[string(key)] // no allocation: map index by converted bytes
	d.mu.RUnlock()
	if ok {
		return id, nil
	}
	if len(key) == 0 || len(key) > MaxKeyLen || !utf8.Valid(key) {
		return 0, CheckKey(string(key))
	}
	return d.assign("", key)
}

// assign returns the id of the key given as s or, if b is not nil, as b,
// adding it if new.
func (d *Dict) assign(s string, b []byte) (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, ErrClosed
	}
	var (
		id uint64
		ok bool
	)
	if b != nil {
		id, ok = d.ids[string(b)]
	} else {
		id, ok = d.ids[s]
	}
	if ok {
		return id, nil
	}
	if d.err != nil {
		return 0, fmt.Errorf("keydict: dictionary failed earlier, reopen it: %w", d.err)
	}
	if uint64(len(d.keys)) > MaxVertex-KeyBase {
		return 0, ErrFull
	}
	var k string
	if b != nil {
		k = string(b)
	} else {
		k = strings.Clone(s) // the caller's string may alias a larger buffer
	}
	id = KeyBase + uint64(len(d.keys))
	d.ids[k] = id
	d.keys = append(d.keys, k)

	start := len(d.pending)
	d.pending = binary.LittleEndian.AppendUint32(d.pending, uint32(len(k)))
	d.pending = append(d.pending, 0, 0, 0, 0)
	d.pending = append(d.pending, k...)
	binary.LittleEndian.PutUint32(d.pending[start+4:], crc32.Checksum(d.pending[start+headerSize:], castagnoli))
	return id, nil
}

// Lookup returns the id of key if it has one. It never assigns. After Close
// it reports false.
func (d *Dict) Lookup(key string) (uint64, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	id, ok := d.ids[key]
	return id, ok
}

// Key returns the key whose id is id. After Close it reports false.
func (d *Dict) Key(id uint64) (string, bool) {
	if id < KeyBase || id > MaxVertex {
		return "", false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	i := id - KeyBase
	if i >= uint64(len(d.keys)) {
		return "", false
	}
	return d.keys[i], true
}

// Len returns the number of keys, synced or not.
func (d *Dict) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.keys)
}

// Sync writes the records of every id assigned before the call and fsyncs
// the file. It must return nil BEFORE any data that uses those ids is made
// durable elsewhere; otherwise a crash can leave that data pointing at ids
// that the reopened dictionary gives to other keys.
//
// A failed write or fsync is sticky: every later Sync fails and ID refuses
// to assign new ids (known keys still resolve). Reopen the dictionary to
// recover; Open discards any torn record.
func (d *Dict) Sync() error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	return d.syncLocked()
}

// syncLocked is Sync with d.syncMu held.
func (d *Dict) syncLocked() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	if d.err != nil {
		err := d.err
		d.mu.Unlock()
		return fmt.Errorf("keydict: dictionary failed earlier, reopen it: %w", err)
	}
	buf := d.pending
	if len(buf) == 0 {
		d.mu.Unlock()
		return nil
	}
	d.pending = d.spare[:0]
	d.mu.Unlock()

	err := d.write(buf)

	d.mu.Lock()
	if err != nil {
		d.err = err
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if cap(buf) <= maxRetainedBuf {
		d.spare = buf[:0]
	} else {
		d.spare = nil
	}
	return nil
}

// write appends buf at the end of the complete records and fsyncs.
// Requires d.syncMu.
func (d *Dict) write(buf []byte) error {
	if _, err := d.file.WriteAt(buf, d.size); err != nil {
		return fmt.Errorf("keydict: write %s at byte offset %d: %w", d.path, d.size, err)
	}
	if err := d.file.Sync(); err != nil {
		return fmt.Errorf("keydict: fsync %s: %w", d.path, err)
	}
	d.size += int64(len(buf))
	return nil
}

// Close syncs buffered records (see Sync), closes the file and releases the
// lock and the memory. Calls after Close return ErrClosed; Lookup and Key
// report false.
func (d *Dict) Close() error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	d.mu.RLock()
	closed := d.closed
	d.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	syncErr := d.syncLocked()

	d.mu.Lock()
	d.closed = true
	d.ids = nil
	d.keys = nil
	d.pending = nil
	d.mu.Unlock()

	closeErr := d.file.Close()
	d.file = nil
	d.spare = nil
	if syncErr != nil {
		return fmt.Errorf("keydict: close %s: %w", d.path, syncErr)
	}
	if closeErr != nil {
		return fmt.Errorf("keydict: close %s: %w", d.path, closeErr)
	}
	return nil
}

// syncDir fsyncs a directory so that entries created in it are durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
