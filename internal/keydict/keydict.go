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
//   - Nothing synced is ever dropped or changed silently. Open drops only a
//     torn tail as defined below, which no Sync ever returned for; Open and
//     OpenReadOnly refuse any other damage with a *CorruptError naming the
//     file and the byte offset, and Check lists every such problem.
//   - An id once taken is never given to another key, even when repair had
//     to give up its key (a retired id, below).
//   - Large numbers are mapped like keys when the dictionary's owner turns
//     it on (SetMapNumbers; internal/datadir decides): NumID gives each
//     number in [MapFrom, KeyBase) the next id of the key range at its first
//     sight, so that the graph's ids stay dense whatever ids the sources
//     use, and Number and SourceID give the number back. Such a number is
//     kept as a key of its own form, a NUL byte and its decimal digits,
//     which no key may take (CheckKey refuses keys that start with NUL);
//     its id is synced, recovered and checked exactly as a key's.
//   - All methods are safe for concurrent use. Sync does not block ID, Lookup
//     or Key while it writes and fsyncs.
//
// # On-disk format (version 2)
//
// All integers are little-endian; every checksum is CRC-32C (Castagnoli).
// The file starts with a 16-byte header:
//
//	bytes 0..7    magic "GTKEYS02"
//	bytes 8..11   format version, uint32: 2
//	bytes 12..15  checksum of bytes 0..11, uint32
//
// Records follow, back to back from byte 16, each
//
//	bytes 0..3    length n of the key, uint32, 0 <= n <= MaxKeyLen
//	bytes 4..7    checksum of the key bytes, uint32 (0 when n == 0)
//	bytes 8..11   checksum of bytes 0..7 of this record, uint32
//	bytes 12..    the n key bytes: valid UTF-8, distinct from every other key
//
// The i-th record (from 0) is id KeyBase+i. A record with n == 0 and key
// checksum 0 is a retired id: the id is taken but its key is unknown. Only a
// repair writes retired ids (see PlanRepair); Key reports them as unknown,
// Len counts them, and no new key ever gets one.
//
// A new file is written whole (its header) under the name keys.dict.tmp,
// fsynced, renamed to its name and the directory fsynced, so no crash leaves
// a keys.dict that is empty or lacks its header: such a file is corruption.
// (A file that starts with a format 1 record, which older graphtides wrote,
// is refused with an error wrapping ErrUnsupportedFormat.) Sync appends all
// pending records with one write and an fsync; a crash may tear that write
// anywhere.
//
// # Torn tails
//
// Because each record header carries its own checksum, a damaged length is
// seen as damage, never mistaken for a record cut short. A torn tail is,
// exactly, what follows the last complete record when it is one of:
//
//   - fewer than 12 bytes (a partial record header);
//   - a record whose header checksum holds but whose key runs past the end
//     of the file (a record cut short);
//   - nothing but zero bytes (a crash can leave a zero-filled extension).
//
// Open (read-write) truncates a torn tail and fsyncs the truncation before
// returning: it held no synced ids, so dropping it loses nothing. Everything
// else is corruption: a record header checksum that does not hold (unless
// that header and everything after it are zero bytes), a key checksum that
// does not hold, a key that is not valid UTF-8, a duplicate key, a length
// above MaxKeyLen, a retired-id marker with a non-zero key checksum, or a
// missing or damaged file header. So is, by this rule, a crash that leaves
// a record partly written with zeros after it, rather than cut short: the
// dictionary does not open until a repair retires that record's id (no Sync
// returned for it, so nothing is lost).
//
// # Read-only opening, checking, repair
//
// OpenReadOnly opens a dictionary without writing to it (a torn tail is
// ignored and reported by TornTail); Check reports every problem of a file
// with its offset and changes nothing; PlanRepair and RepairPlan.Apply
// rewrite a damaged file, after a backup, into one that keeps every intact
// key at its id. Locks: Open and repair take an exclusive flock,
// OpenReadOnly and Check a shared one, never waiting: whichever comes second
// fails with an error wrapping ErrInUse.
//
// Memory: one map entry and one slice element per key; both share the key's
// bytes. Check and PlanRepair hold the same while they scan.
package keydict

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// MapFrom is the first numeric id a dictionary maps (see NumID):
	// numeric ids in [MapFrom, KeyBase) take a dense id of the key range,
	// so that the graph's ids stay dense whatever the sources' ids are.
	MapFrom uint64 = 1 << 32

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
	// ErrReadOnly is wrapped by the error of ID and IDBytes when a Dict
	// opened with OpenReadOnly would have to assign an id.
	ErrReadOnly = errors.New("keydict: dictionary is open read-only")
	// ErrInUse is wrapped by the error of Open, OpenReadOnly, Check and
	// PlanRepair when another open holds a conflicting lock on the file.
	ErrInUse = errors.New("keydict: dictionary file is in use")
	// ErrUnsupportedFormat is wrapped by the error of Open and OpenReadOnly
	// for a file of another format version (such as format 1, written by
	// older graphtides).
	ErrUnsupportedFormat = errors.New("keydict: unsupported dictionary format")
)

// CorruptError reports damage in a dictionary file.
type CorruptError struct {
	Path   string // the dictionary file
	Offset int64  // byte offset of the damaged record, or 0 for the file header
	Reason string // what was expected and what was found
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("keydict: corruption in %s at byte offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// findingError is the error with which Open and OpenReadOnly refuse a file
// that has the problem f.
func findingError(path string, f finding) error {
	if f.unsupported {
		return fmt.Errorf("%w: %s: %s", ErrUnsupportedFormat, path, f.reason)
	}
	return &CorruptError{Path: path, Offset: f.off, Reason: f.reason}
}

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
	case key[0] == numMark:
		return fmt.Errorf("%w: starts with a NUL byte, which marks the dictionary's mapped numbers", ErrInvalidKey)
	}
	return nil
}

// Mappable reports whether the number n is one a dictionary maps when it
// maps numbers: n in [MapFrom, KeyBase).
func Mappable(n uint64) bool { return n >= MapFrom && n < KeyBase }

// numMark starts the dictionary key of a mapped number (NumID): NUL, then
// the number's decimal digits. CheckKey refuses keys that start with it.
const numMark = 0

// maxNumKey is the longest key of a mapped number: NUL and 19 digits.
const maxNumKey = 20

// appendNumKey appends the dictionary key of the mapped number n.
func appendNumKey(b []byte, n uint64) []byte {
	return strconv.AppendUint(append(b, numMark), n, 10)
}

// parseNumKey returns the number whose key is k, if k is the key of a
// number the dictionary maps (canonical digits, in [MapFrom, KeyBase)).
func parseNumKey[T ~string | ~[]byte](k T) (uint64, bool) {
	if len(k) < 2 || len(k) > maxNumKey || k[0] != numMark || k[1] == '0' {
		return 0, false
	}
	var n uint64
	for i := 1; i < len(k); i++ {
		c := k[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits cannot overflow
	}
	return n, Mappable(n)
}

// Dict is an open key dictionary. See the package documentation.
type Dict struct {
	path     string
	readOnly bool // opened by OpenReadOnly: never writes
	retired  int  // retired ids found by Open; fixed

	mapNumbers atomic.Bool  // see SetMapNumbers
	numbers    atomic.Int64 // mapped numbers among keys (see NumID)
	keyBytes   atomic.Int64 // the bytes of every key held
	torn       *Tail        // torn tail found by Open, or nil; fixed

	// syncMu serializes Sync and Close. Held while writing and fsyncing,
	// without mu, so ID keeps assigning ids meanwhile.
	syncMu sync.Mutex
	// Protected by syncMu.
	file  *os.File
	size  int64  // bytes of the file header and complete records in the file
	spare []byte // empty buffer swapped in for pending at the next Sync

	mu sync.RWMutex
	// Protected by mu.
	ids     map[string]uint64
	keys    []string // keys[i] has id KeyBase+i; "" for a retired id
	pending []byte   // encoded records of keys not yet handed to the file
	err     error    // sticky: a failed write or fsync; no more ids are assigned
	closed  bool
	// INVARIANT: the records in the file, then those in the buffer of an
	// in-flight Sync, then those in pending are the records of keys, in id
	// order, unless err is set. pending stays empty if readOnly.
}

// Open opens the dictionary file at path read-write, creating it if absent,
// and loads it. A torn tail is truncated and the truncation fsynced; any
// other damage is refused with a *CorruptError (see the package
// documentation). The file is exclusively locked, against a second Open and
// against OpenReadOnly, Check and repair, in this process or another, until
// Close.
func Open(path string) (*Dict, error) {
	f, err := openOrCreate(path)
	if err != nil {
		return nil, err
	}
	d, err := load(f, path, false)
	if err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

// openOrCreate opens the file at path read-write and locked, creating it
// with just its header, atomically, if it does not exist.
func openOrCreate(path string) (*os.File, error) {
	for range 3 {
		f, err := openLocked(path, true)
		if !errors.Is(err, os.ErrNotExist) {
			return f, err
		}
		f, err = writeNew(path, func(f *os.File) error {
			if _, err := f.Write(fileHeader()); err != nil {
				return fmt.Errorf("keydict: write the header of %s: %w", path, err)
			}
			return nil
		}, false)
		if !errors.Is(err, errRaced) {
			return f, err
		}
		// Another process created path meanwhile: open that one.
	}
	return nil, fmt.Errorf("keydict: open %s: it keeps appearing and vanishing (a dangling symbolic link?)", path)
}

// OpenReadOnly opens the dictionary file at path without writing to it, ever:
// it does not create the file, and it ignores a torn tail (see TornTail)
// instead of truncating it. Damage is refused as by Open. The file is locked
// shared, so OpenReadOnly fails with an error wrapping ErrInUse while a
// read-write Open holds it, and Open fails while a read-only Dict holds it;
// it never waits. ID and IDBytes return the ids of known keys and an error
// wrapping ErrReadOnly for a new one; Sync does nothing.
func OpenReadOnly(path string) (*Dict, error) {
	f, err := openLocked(path, false)
	if err != nil {
		return nil, err
	}
	d, err := load(f, path, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

// load scans f, which is open and locked, into a new Dict. Unless readOnly,
// it truncates a torn tail.
func load(f *os.File, path string, readOnly bool) (*Dict, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keydict: open: %w", err)
	}
	c, err := scan(f, fi.Size(), true)
	if err != nil {
		return nil, fmt.Errorf("keydict: %s: %w", path, err)
	}
	if len(c.findings) > 0 {
		return nil, findingError(path, c.findings[0])
	}
	if c.torn != nil && !readOnly {
		// INVARIANT: a torn tail holds no record whose Sync returned, so
		// dropping it loses nothing (see the package documentation).
		if err := f.Truncate(c.torn.Offset); err != nil {
			return nil, fmt.Errorf("keydict: truncate the torn tail of %s at byte offset %d: %w", path, c.torn.Offset, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("keydict: fsync %s: %w", path, err)
		}
	}
	d := &Dict{path: path, readOnly: readOnly, retired: c.retired, torn: c.torn,
		file: f, size: c.end, ids: c.ids, keys: c.keys}
	d.numbers.Store(int64(c.numbers))
	for _, k := range c.keys {
		d.keyBytes.Add(int64(len(k)))
	}
	return d, nil
}

// ID returns the id of key, assigning the next free id if key is new. A new
// id is only buffered in memory: see Sync. The key must be 1 to MaxKeyLen
// bytes of valid UTF-8 (the error wraps ErrInvalidKey). ID does not retain
// key's memory. On a read-only Dict a new key is an error wrapping
// ErrReadOnly.
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
	if len(key) == 0 || len(key) > MaxKeyLen || !utf8.Valid(key) || key[0] == numMark {
		return 0, CheckKey(string(key))
	}
	return d.assign("", key)
}

// SetMapNumbers turns the mapping of numbers (NumID) on or off. The owner
// of the data directory decides it when it opens the dictionary with its
// store (internal/datadir): on when the store holds no numeric id from
// MapFrom up as it is, since one number must not be a vertex under two
// ids. Once on it stays on for the life of the data directory: no id from
// MapFrom up enters the store unmapped.
func (d *Dict) SetMapNumbers(on bool) { d.mapNumbers.Store(on) }

// MapsNumbers reports whether NumID maps numbers.
func (d *Dict) MapsNumbers() bool { return d.mapNumbers.Load() }

// NumID returns the vertex id of the number n: n itself below MapFrom;
// from MapFrom to KeyBase-1, when the dictionary maps numbers, the id of
// the key range that n takes at its first sight (an id is a key's, and is
// synced and recovered as keys are: see Sync), else n itself. It does not
// allocate for a number already known.
func (d *Dict) NumID(n uint64) (uint64, error) {
	if !Mappable(n) || !d.mapNumbers.Load() {
		return n, nil
	}
	var buf [maxNumKey]byte
	k := appendNumKey(buf[:0], n)
	d.mu.RLock()
	id, ok := d.ids[string(k)]
	d.mu.RUnlock()
	if ok {
		return id, nil
	}
	return d.assign("", k)
}

// LookupNum is NumID without assigning: false for a number from MapFrom up
// that the dictionary has not mapped (a vertex never seen).
func (d *Dict) LookupNum(n uint64) (uint64, bool) {
	if !Mappable(n) || !d.mapNumbers.Load() {
		return n, true
	}
	var buf [maxNumKey]byte
	d.mu.RLock()
	defer d.mu.RUnlock()
	id, ok := d.ids[string(appendNumKey(buf[:0], n))]
	return id, ok
}

// Number returns the number that the key-range id id stands for, when it
// is a mapped number's (see NumID).
func (d *Dict) Number(id uint64) (uint64, bool) {
	if id < KeyBase || id > MaxVertex {
		return 0, false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	i := id - KeyBase
	if i >= uint64(len(d.keys)) {
		return 0, false
	}
	return parseNumKey(d.keys[i])
}

// Name names id as the sources did: its SourceID, and its string key (""
// when it has none). The analytics' alerts name their vertices with it.
func (d *Dict) Name(id uint64) (uint64, string) {
	key, _ := d.Key(id)
	return d.SourceID(id), key
}

// SourceID is the vertex id as the sources gave it: the number that id
// stands for when it is a mapped number's, else id itself.
func (d *Dict) SourceID(id uint64) uint64 {
	if n, ok := d.Number(id); ok {
		return n
	}
	return id
}

// entryBytes is the memory one id takes besides its key's bytes: its
// element of keys, its map entry and the map's slack (measured: 94 bytes
// per mapped number of 20 bytes, on Go 1.26, amd64).
const entryBytes = 70

// MemoryBytes estimates the memory the dictionary holds: its keys and
// their index, not the pending records of the next Sync.
func (d *Dict) MemoryBytes() int64 {
	d.mu.RLock()
	n := len(d.keys)
	d.mu.RUnlock()
	return int64(n)*entryBytes + d.keyBytes.Load()
}

// Numbers is how many numbers the dictionary maps (ids taken by NumID).
func (d *Dict) Numbers() int { return int(d.numbers.Load()) }

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
	if d.readOnly {
		return 0, fmt.Errorf("keydict: %s: cannot assign an id to a new key: %w", d.path, ErrReadOnly)
	}
	if d.err != nil {
		return 0, fmt.Errorf("keydict: dictionary failed earlier, reopen it: %w", d.err)
	}
	if uint64(len(d.keys)) >= maxIDs {
		return 0, ErrFull
	}
	var k string
	if b != nil {
		k = string(b)
	} else {
		k = strings.Clone(s) // the caller's string may alias a larger buffer
	}
	// INVARIANT: ids are dense: a new key gets the id after every id taken,
	// retired ones included, so a retired id is never reassigned.
	id = KeyBase + uint64(len(d.keys))
	d.ids[k] = id
	d.keys = append(d.keys, k)
	d.pending = appendRecord(d.pending, k)
	if k[0] == numMark {
		d.numbers.Add(1)
	}
	d.keyBytes.Add(int64(len(k)))
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

// Key returns the key whose id is id. It reports false for an id not taken,
// for a retired id, for a mapped number's id (see Number), and after Close.
func (d *Dict) Key(id uint64) (string, bool) {
	if id < KeyBase || id > MaxVertex {
		return "", false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	i := id - KeyBase
	if i >= uint64(len(d.keys)) || d.keys[i] == "" || d.keys[i][0] == numMark {
		return "", false
	}
	return d.keys[i], true
}

// Len returns the number of ids taken, synced or not: the keys plus the
// retired ids. They are [KeyBase, KeyBase+Len()), and the next new key gets
// KeyBase+Len(). After Close it returns 0.
func (d *Dict) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.keys)
}

// Retired returns the number of retired ids (ids without a key, written by a
// repair) that Open found.
func (d *Dict) Retired() int { return d.retired }

// TornTail reports the torn tail Open found: for a read-write Dict the tail
// it truncated, for a read-only one the tail it ignored, which is still in
// the file.
func (d *Dict) TornTail() (offset, length int64, ok bool) {
	if d.torn == nil {
		return 0, 0, false
	}
	return d.torn.Offset, d.torn.Length, true
}

// Sync writes the records of every id assigned before the call and fsyncs
// the file. It must return nil BEFORE any data that uses those ids is made
// durable elsewhere; otherwise a crash can leave that data pointing at ids
// that the reopened dictionary gives to other keys.
//
// A failed write or fsync is sticky: every later Sync fails and ID refuses
// to assign new ids (known keys still resolve). Reopen the dictionary to
// recover; Open discards any torn record.
//
// On a read-only Dict there is never anything to write: Sync returns nil
// (ErrClosed after Close).
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
