package ingest

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Position is the next offset to consume per topic and partition: every
// record below it has been applied to the store. It is what ingest stores,
// opaquely, with each flush of the store.
type Position map[string]map[int32]int64

// Set records that every record of (topic, partition) below next is applied.
func (p Position) Set(topic string, partition int32, next int64) {
	m := p[topic]
	if m == nil {
		m = map[int32]int64{}
		p[topic] = m
	}
	m[partition] = next
}

// Get returns the next offset of (topic, partition), if known.
func (p Position) Get(topic string, partition int32) (int64, bool) {
	o, ok := p[topic][partition]
	return o, ok
}

// positionVersion is the first byte of an encoded Position.
const positionVersion = 1

// Encode lays the position out as: u8 version (1), u32 number of entries,
// then per entry sorted by (topic, partition): u16 topic length, topic
// bytes, i32 partition, i64 next offset; all little-endian.
func (p Position) Encode() []byte {
	type ent struct {
		t string
		p int32
		o int64
	}
	var ents []ent
	for t, m := range p {
		for part, o := range m {
			ents = append(ents, ent{t, part, o})
		}
	}
	sort.Slice(ents, func(i, j int) bool {
		if ents[i].t != ents[j].t {
			return ents[i].t < ents[j].t
		}
		return ents[i].p < ents[j].p
	})
	b := []byte{positionVersion}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ents)))
	for _, e := range ents {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.t)))
		b = append(b, e.t...)
		b = binary.LittleEndian.AppendUint32(b, uint32(e.p))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.o))
	}
	return b
}

// DecodePosition parses Encode's layout. An empty input is an empty
// position (a store that never recorded one).
func DecodePosition(b []byte) (Position, error) {
	p := Position{}
	if len(b) == 0 {
		return p, nil
	}
	if b[0] != positionVersion {
		return nil, fmt.Errorf("source position: unknown version %d", b[0])
	}
	if len(b) < 5 {
		return nil, fmt.Errorf("source position: truncated header")
	}
	n := binary.LittleEndian.Uint32(b[1:])
	off := 5
	for i := uint32(0); i < n; i++ {
		if len(b)-off < 2 {
			return nil, fmt.Errorf("source position: truncated at byte %d", off)
		}
		tl := int(binary.LittleEndian.Uint16(b[off:]))
		off += 2
		if len(b)-off < tl+12 {
			return nil, fmt.Errorf("source position: truncated at byte %d", off)
		}
		t := string(b[off : off+tl])
		off += tl
		part := int32(binary.LittleEndian.Uint32(b[off:]))
		o := int64(binary.LittleEndian.Uint64(b[off+4:]))
		off += 12
		p.Set(t, part, o)
	}
	if off != len(b) {
		return nil, fmt.Errorf("source position: %d trailing bytes", len(b)-off)
	}
	return p, nil
}

// Clone returns a deep copy.
func (p Position) Clone() Position {
	c := Position{}
	for t, m := range p {
		for part, o := range m {
			c.Set(t, part, o)
		}
	}
	return c
}
