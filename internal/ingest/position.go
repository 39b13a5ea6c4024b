package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/graphtide/graphtide/internal/graphid"
)

// Position is the next offset to consume per topic and partition: every
// record below it has been applied to the store. With the Kafka source it
// belongs to (see Recorded) it is what ingest stores, opaquely, with each
// flush of the store.
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

// Behind reports whether some partition of q is further than p has it
// (one p does not hold counts as behind), and names the first it finds.
func (p Position) Behind(q Position) (string, int32, bool) {
	for t, m := range q {
		for part, o := range m {
			if x, ok := p.Get(t, part); !ok || x < o {
				return t, part, true
			}
		}
	}
	return "", 0, false
}

// Encode records p with an unknown source (an empty cluster ID and zero
// topic IDs): Recorded{Position: p}.Encode(). An ingester refuses to resume
// from such a position on a cluster that reports an ID.
func (p Position) Encode() []byte { return Recorded{Position: p}.Encode() }

// DecodePosition decodes a recorded source position (DecodeRecorded) and
// returns only its offsets.
func DecodePosition(b []byte) (Position, error) {
	r, err := DecodeRecorded(b)
	if err != nil {
		return nil, err
	}
	return r.Position, nil
}

// TopicID is a Kafka topic ID: 16 bytes the cluster gives a topic when it
// is created. A topic deleted and re-created under the same name gets a
// new one. All zero means unknown (a broker that predates topic IDs).
type TopicID [16]byte

// String formats id as Kafka does (kafka-topics.sh --describe "TopicId"):
// base64url without padding, 22 characters.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Recorded is what ingest records with each flush of the store: the Kafka
// cluster and the topics the offsets belong to, and the offsets.
//
// INVARIANT (kept by the ingester): every topic of Position has its ID in
// TopicIDs, and ClusterID and TopicIDs are what the brokers reported when
// those offsets were consumed.
type Recorded struct {
	// Graph is the graph the store belongs to (package graphid): recorded
	// by serve, so that a store keeps its graph, and the Kafka names
	// derived from it, whatever its flags say later. "" for a store whose
	// position was recorded before graphs had names (it keeps the names
	// every store shared then: graphid.Defaults("")).
	Graph string
	// ClusterID is the brokers' cluster ID ("": unknown or never recorded).
	ClusterID string
	// TopicIDs holds the ID of each topic of Position. Encode writes the
	// topics of Position only: an ID of a topic without offsets there is
	// not recorded, and a topic of Position missing here is recorded with
	// the zero ID.
	TopicIDs map[string]TopicID
	// Position is the next offset of every partition the store has history
	// for.
	Position Position
}

// recordedVersion is the first byte of an encoded Recorded without a
// graph, recordedGraphVersion of one with a graph. Version 1 (a bare
// Position, before the source was recorded) is refused.
const (
	recordedVersion      = 2
	recordedGraphVersion = 3
)

// Encode lays r out as follows; every integer is little-endian:
//
//	offset  size  field
//	0       1     version: 2 without a graph, 3 with one
//	then, in version 3 only:
//	        2     G: length of the graph name, at least 1
//	        G     graph name bytes (a graphid.Validate name)
//	then:
//	        2     C: length of the cluster ID
//	        C     cluster ID bytes (empty: unknown)
//	        4     T: number of topics
//	then T topics, in increasing byte order of their names, names distinct:
//	        2     N: length of the topic name, at least 1
//	        N     topic name bytes
//	        16    topic ID (all zero: unknown)
//	        4     P: number of partitions, at least 1
//	        then P partitions, in increasing order, distinct:
//	        4     partition (signed, >= 0)
//	        8     next offset (signed, >= 0)
//
// The layout is canonical: DecodeRecorded accepts exactly the bytes Encode
// can produce, so Encode(DecodeRecorded(b)) == b for every b it accepts
// (a version 3 with an empty graph is refused: Encode writes version 2).
// Version 2 stays what a store without a graph records, so that a
// graphtide that knows only version 2 still reads it. Cluster IDs and topic names longer than 65535 bytes, partitions or
// offsets below zero cannot be recorded (Kafka allows none of them); Encode
// panics on them rather than write what DecodeRecorded would refuse.
func (r Recorded) Encode() []byte {
	if len(r.ClusterID) > 0xffff {
		panic(fmt.Sprintf("ingest: cluster ID of %d bytes cannot be recorded", len(r.ClusterID)))
	}
	topics := make([]string, 0, len(r.Position))
	for t, m := range r.Position {
		if len(m) > 0 {
			if t == "" || len(t) > 0xffff {
				panic(fmt.Sprintf("ingest: topic name of %d bytes cannot be recorded", len(t)))
			}
			topics = append(topics, t)
		}
	}
	sort.Strings(topics)
	b := []byte{recordedVersion}
	if r.Graph != "" {
		if err := graphid.Validate(r.Graph); err != nil {
			panic(fmt.Sprintf("ingest: %v", err))
		}
		b = []byte{recordedGraphVersion}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(r.Graph)))
		b = append(b, r.Graph...)
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.ClusterID)))
	b = append(b, r.ClusterID...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
		id := r.TopicIDs[t]
		b = append(b, id[:]...)
		m := r.Position[t]
		parts := make([]int32, 0, len(m))
		for p := range m {
			parts = append(parts, p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		b = binary.LittleEndian.AppendUint32(b, uint32(len(parts)))
		for _, p := range parts {
			if p < 0 || m[p] < 0 {
				panic(fmt.Sprintf("ingest: %s/%d at offset %d cannot be recorded", t, p, m[p]))
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(p))
			b = binary.LittleEndian.AppendUint64(b, uint64(m[p]))
		}
	}
	return b
}

// DecodeRecorded parses Encode's layout, for ingest and for tools that show
// what a store recorded (graphtide inspect). An empty input is an empty
// Recorded (a store that never recorded a position): no cluster ID, and
// non-nil, empty TopicIDs and Position. Any other input that Encode could
// not have produced is refused with an error that says what is wrong and
// at which byte: another version (version 1, written before the source was
// recorded, is named as such), a truncated or overlong field, a topic or
// partition out of order or repeated, a negative partition or offset.
// DecodeRecorded never panics, whatever its input.
func DecodeRecorded(b []byte) (Recorded, error) {
	r := Recorded{TopicIDs: map[string]TopicID{}, Position: Position{}}
	if len(b) == 0 {
		return r, nil
	}
	d := decoder{b: b, off: 1}
	switch b[0] {
	case recordedVersion:
	case recordedGraphVersion:
		at := d.off
		g, err := d.bytes(int(d.u16("graph name length")), "graph name")
		if err != nil {
			return Recorded{}, err
		}
		if err := graphid.Validate(string(g)); err != nil {
			return Recorded{}, fmt.Errorf("source position: byte %d: %w", at, err)
		}
		r.Graph = string(g)
	case 1:
		return Recorded{}, fmt.Errorf("source position: version 1 is not readable: it was written by an older graphtide that did not record which Kafka cluster and topics its offsets belong to (this version reads versions %d and %d)", recordedVersion, recordedGraphVersion)
	default:
		return Recorded{}, fmt.Errorf("source position: unknown version %d (this version reads versions %d and %d)", b[0], recordedVersion, recordedGraphVersion)
	}
	cl, err := d.bytes(int(d.u16("cluster ID length")), "cluster ID")
	if err != nil {
		return Recorded{}, err
	}
	r.ClusterID = string(cl)
	n := d.u32("number of topics")
	var prev []byte
	for i := uint32(0); i < n && d.err == nil; i++ {
		at := d.off
		name, err := d.bytes(int(d.u16("topic name length")), "topic name")
		if err != nil {
			return Recorded{}, err
		}
		switch {
		case len(name) == 0:
			return Recorded{}, fmt.Errorf("source position: empty topic name at byte %d", at)
		case i > 0 && bytes.Compare(prev, name) >= 0:
			return Recorded{}, fmt.Errorf("source position: topic %q at byte %d is not after %q (topics must be sorted and distinct)", name, at, prev)
		}
		prev = name
		t := string(name)
		idb, err := d.bytes(16, "topic ID")
		if err != nil {
			return Recorded{}, err
		}
		r.TopicIDs[t] = TopicID(idb)
		at = d.off
		np := d.u32("number of partitions")
		if d.err == nil && np == 0 {
			return Recorded{}, fmt.Errorf("source position: topic %q has no partitions (byte %d)", t, at)
		}
		last := int32(-1)
		for j := uint32(0); j < np && d.err == nil; j++ {
			at = d.off
			p := int32(d.u32("partition"))
			o := int64(d.u64("next offset"))
			if d.err != nil {
				break
			}
			switch {
			case p < 0:
				return Recorded{}, fmt.Errorf("source position: topic %q: negative partition %d at byte %d", t, p, at)
			case p <= last:
				return Recorded{}, fmt.Errorf("source position: topic %q: partition %d at byte %d is not after %d (partitions must be sorted and distinct)", t, p, at, last)
			case o < 0:
				return Recorded{}, fmt.Errorf("source position: %s/%d: negative offset %d at byte %d", t, p, o, at+4)
			}
			last = p
			r.Position.Set(t, p, o)
		}
	}
	if d.err != nil {
		return Recorded{}, d.err
	}
	if d.off != len(b) {
		return Recorded{}, fmt.Errorf("source position: %d trailing bytes after byte %d", len(b)-d.off, d.off)
	}
	return r, nil
}

// decoder reads little-endian fields; the first failure sticks in err and
// every later read returns zero.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) need(n int, what string) bool {
	if d.err != nil {
		return false
	}
	if len(d.b)-d.off < n {
		d.err = fmt.Errorf("source position: truncated at byte %d: %s needs %d bytes, %d left", d.off, what, n, len(d.b)-d.off)
		return false
	}
	return true
}

func (d *decoder) u16(what string) uint16 {
	if !d.need(2, what) {
		return 0
	}
	v := binary.LittleEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *decoder) u32(what string) uint32 {
	if !d.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64(what string) uint64 {
	if !d.need(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

func (d *decoder) bytes(n int, what string) ([]byte, error) {
	if !d.need(n, what) {
		return nil, d.err
	}
	v := d.b[d.off : d.off+n]
	d.off += n
	return v, nil
}
