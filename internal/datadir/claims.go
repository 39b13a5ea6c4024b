package datadir

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// Claims is what the data directory records, with every flush of its
// store, of the files beside the store: for each file that existed when
// the flush's last batch applied, by name, a number saying how much of
// it the store's durable state depends on (its entry in Entries says
// what the number counts). It is the store's annex (engine.Store.SetAnnex):
// it lives in the MANIFEST, in the record of the flush, so it is as
// durable, as checksummed and as checked as the store itself, and it
// describes each file as it was when the data that depends on it was
// applied. A claim is the proof that a file existed: a file missing
// while claimed, or holding less than its claim, is refused.
//
// Why the MANIFEST: it is the root of trust, whose loss the store itself
// refuses (segment files without a MANIFEST); a file of its own beside
// the others would need another proof of its own existence. Why at
// apply: a file's state then is what that batch depends on (a writes
// outcome is logged and synced before its batch applies; a type name
// before the record naming it decodes). Old stores adopt it without
// being refused: one that recorded no claims (written before them) opens
// as before, with nothing proven, and its first batch after that records
// them, durable with the next flush.
//
// Encoding (canonical: decodeClaims takes exactly what encode writes):
// a version byte (1), then one entry per file in increasing byte order of
// the names, names distinct: u8 length of the name (1 to 255), the name,
// u64 claim (little-endian). A claim of a file this graphtide does not
// know (written by a newer one) is kept, carried into every later record,
// and its file must exist.
type Claims map[string]uint64

const claimsVersion = 1

func (c Claims) encode() []byte {
	b := []byte{claimsVersion}
	for _, name := range slices.Sorted(maps.Keys(c)) {
		b = append(b, byte(len(name)))
		b = append(b, name...)
		b = binary.LittleEndian.AppendUint64(b, c[name])
	}
	return b
}

// decodeClaims reads what encode wrote; nil (no annex recorded) is no
// claims: nil.
func decodeClaims(b []byte) (Claims, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) == 0 || b[0] != claimsVersion {
		v := -1
		if len(b) > 0 {
			v = int(b[0])
		}
		return nil, fmt.Errorf("the data directory's record of its files has version %d; this graphtide reads version %d (written by a newer graphtide?)", v, claimsVersion)
	}
	c := Claims{}
	prev := ""
	for off := 1; off < len(b); {
		n := int(b[off])
		if n == 0 || off+1+n+8 > len(b) {
			return nil, fmt.Errorf("the data directory's record of its files is damaged at byte %d", off)
		}
		name := string(b[off+1 : off+1+n])
		if len(c) > 0 && name <= prev {
			return nil, fmt.Errorf("the data directory's record of its files is damaged at byte %d (names out of order)", off)
		}
		c[name] = binary.LittleEndian.Uint64(b[off+1+n:])
		prev = name
		off += 1 + n + 8
	}
	return c, nil
}

// get is the claim of name: the number and whether there is one.
func (c Claims) get(name string) (uint64, bool) {
	v, ok := c[name]
	return v, ok
}

// ptr is the claim of name, nil when there is none.
func (c Claims) ptr(name string) *uint64 {
	if v, ok := c[name]; ok {
		return &v
	}
	return nil
}
