package engine

import (
	"bytes"
	"encoding/binary"
)

// The annex: a record of the store's owner beside the source position.
//
// The core records one opaque byte string with every flush: the source
// position of the newest batch that set one. An owner may need state of
// its own recorded with the same durability, and at the same point, as
// the data (the data directory records what its files held when each
// batch was applied: internal/datadir), without the source position's
// owner (ingest) knowing of it. SetAnnex makes every batch carry, in the
// core's one slot, an envelope of both:
//
//	offset  size  field
//	0       8     magic "GTANNEX1"
//	8       4     A: length of the annex (little-endian)
//	12      A     the annex
//	12+A    rest  the source position (empty: none)
//
// SourcePosition and Annex take the envelope apart again. A recorded
// value that does not start with the magic (a store written before
// annexes, or one whose owner never set an annex) is a source position
// alone, with no annex; so a source position must not itself start with
// the magic (ingest's start with their version byte). The MANIFEST record
// that holds the value is checksummed by the core, so the envelope needs no
// checksum of its own.
const annexMagic = "GTANNEX1"

const annexHeader = len(annexMagic) + 4

// envelope is what the core records for annex and source position pos.
func envelope(annex, pos []byte) []byte {
	b := make([]byte, 0, annexHeader+len(annex)+len(pos))
	b = append(b, annexMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(annex)))
	b = append(b, annex...)
	return append(b, pos...)
}

// splitAnnex takes a recorded value apart: its annex (nil: none) and its
// source position.
func splitAnnex(raw []byte) (annex, pos []byte) {
	if len(raw) < annexHeader || !bytes.HasPrefix(raw, []byte(annexMagic)) {
		return nil, raw
	}
	n := binary.LittleEndian.Uint32(raw[len(annexMagic):])
	if uint64(n) > uint64(len(raw)-annexHeader) {
		return nil, raw
	}
	end := annexHeader + int(n)
	return raw[annexHeader:end:end], raw[end:]
}

// SetAnnex makes every batch applied from now on record annex() (called
// under the store's writer lock, once per batch, so it sees every change
// the owner made before Apply was called) beside its source position: the
// flush that makes the batch durable records both. A batch without a
// source position carries the newest one applied before it. nil removes
// the function; the store then records, with each batch that sets a
// source position, the newest annex recorded before, so that no batch
// drops what an owner recorded.
//
// The annex must be small (it is copied with every batch), must not call
// Apply, and must return a slice it does not change afterwards.
func (s *Store) SetAnnex(annex func() []byte) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.annex = annex
}

// Annex returns the annex recorded by the newest durable flush (nil if
// none was ever recorded).
func (s *Store) Annex() ([]byte, error) {
	raw, err := s.rawSourcePosition()
	if err != nil {
		return nil, err
	}
	a, _ := splitAnnex(raw)
	return a, nil
}

// recordFor is what the core records for batch b: its source position
// alone when no annex was ever set or recorded, else the envelope of the
// annex and the source position (b's, or the newest before it); nil when
// the core's newest record stands (no annex function and b has no source
// position). commit, called once the core applied b, makes them the
// newest. Requires applyMu.
func (s *Store) recordFor(b *Batch) (rec []byte, commit func()) {
	if s.annex == nil && (s.lastAnnex == nil || len(b.srcpos) == 0) {
		return b.srcpos, func() {}
	}
	pos := s.lastPos
	if len(b.srcpos) > 0 {
		pos = append([]byte(nil), b.srcpos...) // b may be reused
	}
	annex := s.lastAnnex
	if s.annex != nil {
		annex = s.annex()
	}
	return envelope(annex, pos), func() { s.lastAnnex, s.lastPos = annex, pos }
}
