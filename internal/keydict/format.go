package keydict

// This file holds the on-disk format (see the package documentation) and the
// one scanner that Open, OpenReadOnly, Check and PlanRepair all read it with,
// so that they cannot disagree about what is a key, a torn tail or damage.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unicode/utf8"
)

const (
	// fileMagic opens every dictionary file of format 2.
	fileMagic = "GTKEYS02"
	// formatVersion is the only format this package reads and writes.
	formatVersion = 2
	// fileHeaderSize is magic (8) + version (4) + header checksum (4).
	fileHeaderSize = 16
	// recordHeaderSize is key length (4) + key checksum (4) + record header
	// checksum (4).
	recordHeaderSize = 12
	// maxIDs is the number of ids in [KeyBase, MaxVertex].
	maxIDs = MaxVertex - KeyBase + 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// fileHeader returns the 16 bytes every dictionary file starts with.
func fileHeader() []byte {
	h := make([]byte, 0, fileHeaderSize)
	h = append(h, fileMagic...)
	h = binary.LittleEndian.AppendUint32(h, formatVersion)
	return binary.LittleEndian.AppendUint32(h, crc(h))
}

// appendRecord appends the record of key to b. An empty key makes a
// retired-id marker.
func appendRecord(b []byte, key string) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	b = append(b, key...)
	if len(key) > 0 {
		binary.LittleEndian.PutUint32(b[start+4:], crc(b[start+recordHeaderSize:]))
	}
	binary.LittleEndian.PutUint32(b[start+8:], crc(b[start:start+8]))
	return b
}

// Tail describes a torn tail: bytes after the last complete record that a
// crash may have left and that no Sync ever returned for. A read-write Open
// drops them; OpenReadOnly and Check leave them in place and ignore them.
type Tail struct {
	Offset int64  // where the tail starts: the end of the last complete record
	Length int64  // bytes from Offset to the end of the file
	Kind   string // what the tail looks like, for messages
}

// findingKind says what a problem found by the scanner is and, so, what a
// repair does about it.
type findingKind uint8

const (
	// findHeaderFatal: the file header is missing, unrecognisable or of
	// another format. Nothing after it was scanned; repair refuses.
	findHeaderFatal findingKind = iota
	// findHeaderBad: the file header is damaged in one field only; the
	// records were scanned anyway. Repair rewrites the header.
	findHeaderBad
	// findRetire: a record whose framing is intact (its header checksum
	// holds) but which is not a valid, new key or a well-formed retired-id
	// marker. Repair turns it into a retired-id marker.
	findRetire
	// findFramingLost: a record header that cannot be trusted, so where the
	// next record starts is unknown. The scan stops; repair cuts the file at
	// the finding's offset.
	findFramingLost
)

// finding is one problem in a dictionary file.
type finding struct {
	kind   findingKind
	off    int64  // byte offset of the record, or 0 for the file header
	reason string // what was expected and what was found
	// unsupported marks a file of another format version rather than a
	// damaged one (findHeaderFatal only).
	unsupported bool
	index       uint64 // findRetire: the record's index (its id is KeyBase+index)
	span        int64  // findRetire: the record's bytes; findFramingLost: bytes to the end of the file
	dupOf       uint64 // findRetire of a duplicate key: the id the key keeps; else 0
}

// contents is what a scan learned from a dictionary file.
type contents struct {
	size int64 // bytes in the file

	// ids maps every valid key to its id; keys[i] is the key of id
	// KeyBase+i, or "" if that id is retired or its record damaged.
	// INVARIANT: ids[keys[i]] == KeyBase+i for every i with keys[i] != "",
	// and ids has no other entries.
	ids     map[string]uint64
	keys    []string
	retired int // well-formed retired-id markers
	numbers int // mapped numbers among keys (see NumID)

	// end is the byte offset just past the last record whose framing is
	// intact: the start of the torn tail, of the untrusted region after a
	// framing loss, or the end of the file.
	end  int64
	torn *Tail

	findings []finding
}

// scan reads a dictionary file of size bytes from r. With stopAtFirst it
// stops at the first problem (Open and OpenReadOnly refuse the file then);
// otherwise it goes on while the framing of records can be trusted. The
// error is only for a failed read.
func scan(r io.ReaderAt, size int64, stopAtFirst bool) (*contents, error) {
	c := &contents{size: size, ids: make(map[string]uint64)}
	bufSize := int64(1 << 20)
	if size < bufSize {
		bufSize = max(size, 16)
	}
	s := &scanner{c: c, ra: r, r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), int(bufSize))}
	if err := s.fileHeader(); err != nil || s.done {
		return c, err
	}
	if stopAtFirst && len(c.findings) > 0 {
		return c, nil
	}
	return c, s.records(stopAtFirst)
}

type scanner struct {
	c    *contents
	ra   io.ReaderAt
	r    *bufio.Reader // reads ra from its start
	off  int64         // bytes consumed from r
	done bool          // the file header is unusable: no records were scanned
	key  [MaxKeyLen]byte
}

func (s *scanner) read(b []byte) error {
	n, err := io.ReadFull(s.r, b)
	s.off += int64(n)
	if err != nil {
		// The size was taken under the lock, so a short read is an I/O
		// failure (or the file shrank under us), not a format matter.
		return fmt.Errorf("read at byte offset %d: %w", s.off, err)
	}
	return nil
}

func (s *scanner) add(f finding) { s.c.findings = append(s.c.findings, f) }

// fileHeader checks the 16-byte file header.
func (s *scanner) fileHeader() error {
	c := s.c
	fatal := func(unsupported bool, format string, args ...any) {
		s.add(finding{kind: findHeaderFatal, reason: fmt.Sprintf(format, args...), unsupported: unsupported})
		s.done = true
	}
	if c.size == 0 {
		fatal(false, "empty file: a key dictionary starts with a %d-byte header, written before the file gets its name, "+
			"so a crash cannot leave it empty (an empty keys.dict can also be a format 1 dictionary of an older graphtide with no keys)", fileHeaderSize)
		return nil
	}
	h := make([]byte, min(c.size, fileHeaderSize))
	if err := s.read(h); err != nil {
		return err
	}
	if !bytes.HasPrefix(h, []byte(fileMagic)[:min(len(h), len(fileMagic))]) {
		v1, err := looksLikeFormat1(s.ra, h, c.size)
		if err != nil {
			return err
		}
		if v1 {
			fatal(true, "written by an older graphtide (key dictionary format 1), which this version does not read: "+
				"it starts with a format 1 record instead of the magic %q", fileMagic)
			return nil
		}
	}
	if len(h) < fileHeaderSize {
		what := "a partial file header"
		if !bytes.HasPrefix([]byte(fileMagic), h[:min(len(h), len(fileMagic))]) {
			what = fmt.Sprintf("no magic %q", fileMagic)
		}
		fatal(false, "file header: the file is %d bytes, expected at least %d, and holds %s "+
			"(a crash cannot leave a partial header: it is written before the file gets its name)", len(h), fileHeaderSize, what)
		return nil
	}
	want := fileHeader()
	magicOK := string(h[:8]) == fileMagic
	version := binary.LittleEndian.Uint32(h[8:12])
	stored, computed := binary.LittleEndian.Uint32(h[12:16]), crc(h[:12])
	var reason string
	switch {
	case magicOK && stored == computed && version == formatVersion:
		return nil
	case magicOK && stored == computed:
		fatal(true, "file header: format version: stored %d, expected %d (written by another graphtide version)", version, formatVersion)
		return nil
	case !magicOK:
		reason = fmt.Sprintf("file header: magic: stored %q, expected %q", h[:8], fileMagic)
	default:
		reason = fmt.Sprintf("file header checksum: stored %#08x, computed %#08x", stored, computed)
	}
	// One damaged field leaves the other two equal to the only valid
	// header; then the records are scanned and a repair rewrites the header.
	intact := 0
	for _, r := range [][2]int{{0, 8}, {8, 12}, {12, 16}} {
		if bytes.Equal(h[r[0]:r[1]], want[r[0]:r[1]]) {
			intact++
		}
	}
	if intact < 2 {
		fatal(false, "%s; the header is not recognisable (is this a graphtide key dictionary?)", reason)
		return nil
	}
	s.add(finding{kind: findHeaderBad, reason: reason})
	return nil
}

// looksLikeFormat1 reports whether a file that does not start with the magic
// starts with a complete, intact record of format 1: [u32 len][u32
// crc32c(key)][key]. head holds the first bytes of the file.
func looksLikeFormat1(r io.ReaderAt, head []byte, size int64) (bool, error) {
	if len(head) < 8 {
		return false, nil
	}
	n := binary.LittleEndian.Uint32(head[0:4])
	if n == 0 || n > MaxKeyLen || 8+int64(n) > size {
		return false, nil
	}
	key := make([]byte, n)
	if _, err := r.ReadAt(key, 8); err != nil {
		return false, fmt.Errorf("read the first record at byte offset 0: %w", err)
	}
	return crc(key) == binary.LittleEndian.Uint32(head[4:8]), nil
}

// records scans the records after the file header.
func (s *scanner) records(stopAtFirst bool) error {
	c := s.c
	var h [recordHeaderSize]byte
	for {
		// INVARIANT: s.off is the start of a record: every byte before it
		// belongs to the file header or to a record whose header checksum
		// holds and whose length is at most MaxKeyLen.
		off := s.off
		c.end = off
		rest := c.size - off
		if rest == 0 {
			return nil
		}
		if rest < recordHeaderSize {
			c.torn = &Tail{Offset: off, Length: rest, Kind: "partial record header"}
			return nil
		}
		if err := s.read(h[:]); err != nil {
			return err
		}
		klen := binary.LittleEndian.Uint32(h[0:4])
		kcrc := binary.LittleEndian.Uint32(h[4:8])
		stored, computed := binary.LittleEndian.Uint32(h[8:12]), crc(h[0:8])
		if stored != computed {
			zero, err := s.restIsZero(h[:])
			if err != nil {
				return err
			}
			if zero {
				c.torn = &Tail{Offset: off, Length: rest, Kind: "zero bytes"}
				return nil
			}
			s.add(finding{kind: findFramingLost, off: off, span: rest,
				reason: fmt.Sprintf("record header checksum: stored %#08x, computed %#08x", stored, computed)})
			return nil
		}
		// The header checksum holds: the length is what a writer wrote.
		if klen > MaxKeyLen {
			s.add(finding{kind: findFramingLost, off: off, span: rest,
				reason: fmt.Sprintf("key length: stored %d, expected at most %d (the record header checksum holds)", klen, MaxKeyLen)})
			return nil
		}
		if int64(klen) > rest-recordHeaderSize {
			c.torn = &Tail{Offset: off, Length: rest, Kind: "record whose key runs past the end of the file"}
			return nil
		}
		index := uint64(len(c.keys))
		if index >= maxIDs {
			s.add(finding{kind: findFramingLost, off: off, span: rest,
				reason: fmt.Sprintf("more records than the %d ids in [KeyBase, MaxVertex]", maxIDs)})
			return nil
		}
		key := s.key[:klen]
		if err := s.read(key); err != nil {
			return err
		}
		retire := func(dupOf uint64, format string, args ...any) {
			s.add(finding{kind: findRetire, off: off, index: index, span: recordHeaderSize + int64(klen), dupOf: dupOf,
				reason: fmt.Sprintf(format, args...)})
			c.keys = append(c.keys, "")
		}
		if klen == 0 {
			if kcrc != 0 {
				retire(0, "retired-id marker: key checksum: stored %#08x, expected 0", kcrc)
			} else {
				c.keys = append(c.keys, "")
				c.retired++
			}
		} else if got := crc(key); got != kcrc {
			retire(0, "key checksum: stored %#08x, computed %#08x", kcrc, got)
		} else if !utf8.Valid(key) {
			retire(0, "key is not valid utf-8 (its checksum holds)")
		} else if _, ok := parseNumKey(key); key[0] == numMark && !ok {
			retire(0, "key starts with a NUL byte but is not a mapped number (NUL, then the decimal digits of a number in [%d, %d))", MapFrom, KeyBase)
		} else if first, dup := c.ids[string(key)]; dup {
			retire(first, "duplicate key: the same key as id %d (KeyBase+%d)", first, first-KeyBase)
		} else {
			k := string(key)
			c.ids[k] = KeyBase + index
			c.keys = append(c.keys, k)
			if k[0] == numMark {
				c.numbers++
			}
		}
		c.end = s.off
		if stopAtFirst && len(c.findings) > 0 {
			return nil
		}
	}
}

// restIsZero reports whether head and everything left to read are zero
// bytes.
func (s *scanner) restIsZero(head []byte) (bool, error) {
	for _, b := range head {
		if b != 0 {
			return false, nil
		}
	}
	var chunk [4096]byte
	for {
		n, err := s.r.Read(chunk[:])
		s.off += int64(n)
		for _, b := range chunk[:n] {
			if b != 0 {
				return false, nil
			}
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read at byte offset %d: %w", s.off, err)
		}
	}
}
