package durable

import (
	"encoding/binary"
	"hash/crc32"
)

// The framed records of the logs beside the store (writes.log,
// alerts.log): each record is appended with one write, as
//
//	u32 payload length | u32 CRC-32C of those 4 bytes | u32 CRC-32C of the payload | payload
//
// (little-endian), so that a length is authenticated before it is used,
// and a crash can tear only the last record. What a torn record is
// (ScanRecords): a length whose checksum holds but that runs past the
// end; a last record whose payload checksum fails; or, where a length's
// checksum fails, zeros from a sector boundary to the end with no more
// than one record's bytes from it (a crash that left zeros). Anything
// else that does not read back is damage. Whether a torn tail may be cut
// is the caller's to decide: only past what the store's durable state
// depends on.

// RecordHeader is the bytes before a record's payload.
const RecordHeader = 12

// Castagnoli is the CRC-32C table of every checksum graphtide writes.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendRecord appends payload to b, framed.
func AppendRecord(b, payload []byte) []byte {
	at := len(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[at:], Castagnoli))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, Castagnoli))
	return append(b, payload...)
}

// ScanResult is where ScanRecords stopped.
type ScanResult struct {
	// Torn: the bytes from TornAt to the end are a torn last record.
	Torn   bool
	TornAt int
	// DamagedAt and Damage, when Damage is not "": a record at that offset
	// is damaged (not torn), and scanning stopped there.
	DamagedAt int
	Damage    string
}

// ScanRecords reads the framed records of data from off on, calling each
// with every whole record's offset and payload (a payload of minPayload
// to maxPayload bytes) until each returns false, or the data ends, is
// torn, or is damaged (see the rules above).
func ScanRecords(data []byte, off, minPayload, maxPayload int, each func(off int, payload []byte) bool) ScanResult {
	for off < len(data) {
		rest := data[off:]
		if len(rest) < RecordHeader {
			return ScanResult{Torn: true, TornAt: off}
		}
		n := int(binary.LittleEndian.Uint32(rest))
		if binary.LittleEndian.Uint32(rest[4:]) != crc32.Checksum(rest[:4], Castagnoli) || n > maxPayload || n < minPayload {
			if tornByZeros(data, off, maxPayload) {
				return ScanResult{Torn: true, TornAt: off}
			}
			return ScanResult{DamagedAt: off, Damage: "record header damaged"}
		}
		if len(rest) < RecordHeader+n {
			return ScanResult{Torn: true, TornAt: off} // the last append, cut short (its length is intact)
		}
		payload := rest[RecordHeader : RecordHeader+n]
		if binary.LittleEndian.Uint32(rest[8:]) != crc32.Checksum(payload, Castagnoli) {
			if off+RecordHeader+n == len(data) {
				return ScanResult{Torn: true, TornAt: off} // the last append, cut short by a crash
			}
			return ScanResult{DamagedAt: off, Damage: "record checksum mismatch"}
		}
		if !each(off, payload) {
			return ScanResult{}
		}
		off += RecordHeader + n
	}
	return ScanResult{}
}

// tornByZeros reports whether the bytes from off on can be one append
// torn by a crash that left its later sectors zeros: at most one record
// long, and zeros from a sector boundary (512 bytes) to the end.
func tornByZeros(data []byte, off, maxPayload int) bool {
	if len(data)-off > RecordHeader+maxPayload {
		return false
	}
	z := len(data)
	for z > off && data[z-1] == 0 {
		z--
	}
	// The zeros start at a sector boundary at or after z (the bytes just
	// before it may be zeros of the record itself).
	return z == off || (z+511)/512*512 < len(data)
}
