package api

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/typedict"
	"github.com/graphtide/graphtide/internal/views"
)

// Pages that every replica continues alike.
//
// Replicas of one graph (serve instances with a data directory and a
// consumer group each) hold the same edges, but each numbers string keys
// (and the numbers it maps) in the order it met them, so one key has
// different ids on two replicas, and each numbers edge type names in the
// order it met them too. A page of a vertex's neighbors is therefore
// listed in an order every replica shares, the order of Positions:
// neighbors named by numbers first, by value (ids as the sources gave
// them, mapped numbers included), then those named by string keys, by
// their bytes; a neighbor's edges of several types by type name, the
// default type first. A page ends with its last edge's Position in an
// opaque cursor (next_cursor) that any replica continues from, whether or
// not it has seen that neighbor.
//
// Sequence numbers are each replica's own (it applies records of several
// partitions in its own interleaving), so a cursor pins the next pages to
// the first page's view only on the server that made it (Reader.Origin,
// random per server): another replica, or the same one after a restart,
// reads its newest view instead. A listing of changes is between two seqs
// and lists store ids, so its cursor is honoured by the server that made
// it only and refused (409) by any other.

// Position names an edge of a vertex's list alike on every replica: its
// neighbor as the sources named it, and its type's name.
type Position struct {
	Key  bool   // the neighbor is the string key Name; else the number Num
	Num  uint64 // a number: an id as given, or a mapped number's value
	Name string
	Type string // the edge type's name; "" for the default type
}

// comparePositions orders positions: numbers (by value) before keys (by
// bytes), then by type name.
func comparePositions(a, b Position) int {
	switch {
	case a.Key != b.Key:
		if a.Key {
			return 1
		}
		return -1
	case a.Key:
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
	default:
		if c := cmp.Compare(a.Num, b.Num); c != 0 {
			return c
		}
	}
	return strings.Compare(a.Type, b.Type)
}

// vertexPos is the position's vertex part of store id id.
func (q Reader) vertexPos(id uint64) Position {
	if q.Dict == nil || !keydict.IsKeyID(id) {
		return Position{Num: id}
	}
	if k, ok := q.Dict.Key(id); ok {
		return Position{Key: true, Name: k}
	}
	if n, ok := q.Dict.Number(id); ok {
		return Position{Num: n}
	}
	return Position{Num: id} // a retired id: no key known
}

// PositionOf reads the legacy page start (after, afterType) of a request
// as a Position: after is a number, a key (prefix "key:" for one that
// looks like a number) or the id of a key this store knows; afterType a
// type name or number ("": the default type). A key or a number need not
// be known here (another replica's page may end at one this one has not
// seen yet); a key's id must be, since ids are each replica's own.
func (q Reader) PositionOf(after, afterType string) (Position, error) {
	var p Position
	if k, ok := strings.CutPrefix(after, "key:"); ok {
		p = Position{Key: true, Name: k}
	} else if n, err := strconv.ParseUint(after, 10, 64); err == nil {
		switch {
		case n > engine.MaxVertex:
			return p, errorf(http.StatusBadRequest, "after: vertex id %d is above the largest allowed, %d", n, uint64(engine.MaxVertex))
		case keydict.IsKeyID(n) && q.Dict != nil:
			if _, ok := q.Dict.Key(n); !ok {
				if _, ok := q.Dict.Number(n); !ok {
					return p, errorf(http.StatusNotFound, "after: id %d names no key here: the ids of keys are each replica's own (pass next_cursor, or the key)", n)
				}
			}
			p = q.vertexPos(n)
		default:
			p = Position{Num: n}
		}
	} else {
		p = Position{Key: true, Name: after}
	}
	if p.Key {
		if err := keydict.CheckKey(p.Name); err != nil {
			return p, errorf(http.StatusBadRequest, "after: %v", err)
		}
	}
	switch t, err := strconv.ParseUint(afterType, 10, 16); {
	case afterType == "" || afterType == typedict.Default:
	case err == nil:
		if t >= uint64(engine.MaxEdgeTypes) {
			return p, errorf(http.StatusBadRequest, "after_type: type %d is not below %d", t, engine.MaxEdgeTypes)
		}
		p.Type = q.typeName(uint16(t))
	default:
		if why := typedict.NameReason(afterType); why != "" {
			return p, errorf(http.StatusBadRequest, "after_type: %s", why)
		}
		p.Type = afterType
	}
	return p, nil
}

// The cursor token: base64url (no padding) of
//
//	byte 0        version, 1
//	byte 1        kind: 'n' a page of neighbors, 'c' a page of changes
//	...           the kind's fields, below
//	last 4 bytes  CRC-32C of everything before
//
// neighbors: a flags byte (1: the neighbor is a key; 2: pinned), the
// neighbor (a key: uvarint length and bytes; a number: uvarint), the type
// name (uvarint length and bytes), and when pinned the origin (8 bytes)
// and the seq (uvarint). changes: the origin, then uvarints from, to,
// src, dst and type.
const (
	cursorVersion  = 1
	cursorNeighbor = 'n'
	cursorChange   = 'c'
	flagKey        = 1
	flagPinned     = 2
)

// MaxCursorBytes bounds a cursor token (one naming a key of
// keydict.MaxKeyLen bytes takes about 5.6 KB).
const MaxCursorBytes = 8192

// Origin names one server (or Local): it tells a cursor's pin, and a
// change listing's seqs and ids, from another's.
type Origin [8]byte

// newOrigin is a random origin.
func newOrigin() Origin {
	var o Origin
	_, _ = rand.Read(o[:]) // never fails (crypto/rand)
	return o
}

// cursor is a decoded cursor token.
type cursor struct {
	kind   byte
	origin Origin
	// neighbors
	pos    Position
	pinned bool
	seq    uint64
	// changes
	from, to uint64
	change   ChangeCursor
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode is the token of c.
func (c cursor) encode() string {
	b := []byte{cursorVersion, c.kind}
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	switch c.kind {
	case cursorNeighbor:
		var flags byte
		if c.pos.Key {
			flags |= flagKey
		}
		if c.pinned {
			flags |= flagPinned
		}
		b = append(b, flags)
		if c.pos.Key {
			str(c.pos.Name)
		} else {
			b = binary.AppendUvarint(b, c.pos.Num)
		}
		str(c.pos.Type)
		if c.pinned {
			b = append(b, c.origin[:]...)
			b = binary.AppendUvarint(b, c.seq)
		}
	case cursorChange:
		b = append(b, c.origin[:]...)
		for _, v := range []uint64{c.from, c.to, c.change.Src, c.change.Dst, uint64(c.change.Type)} {
			b = binary.AppendUvarint(b, v)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return base64.RawURLEncoding.EncodeToString(b)
}

// errCursor is every refusal of a token that is not one this API made.
var errCursor = errors.New("cursor: not a cursor this API gave (pass next_cursor of the previous page as it came)")

// decodeCursor reads a token of the kind want.
func decodeCursor(s string, want byte) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 6 {
		return c, errCursor
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) || body[0] != cursorVersion {
		return c, errCursor
	}
	c.kind = body[1]
	if c.kind != want {
		names := map[byte]string{cursorNeighbor: "a page of neighbors", cursorChange: "a page of changes"}
		if names[c.kind] == "" {
			return c, errCursor
		}
		return c, fmt.Errorf("cursor: it continues %s, not %s", names[c.kind], names[want])
	}
	r := bytes.NewReader(body[2:])
	num := func() uint64 {
		v, e := binary.ReadUvarint(r)
		if e != nil {
			err = errCursor
		}
		return v
	}
	str := func(most int) string {
		n := num()
		if err != nil || n > uint64(most) || n > uint64(r.Len()) {
			err = errCursor
			return ""
		}
		out := make([]byte, n)
		_, _ = r.Read(out) // n <= r.Len()
		return string(out)
	}
	origin := func() {
		if _, e := io.ReadFull(r, c.origin[:]); e != nil {
			err = errCursor
		}
	}
	switch c.kind {
	case cursorNeighbor:
		flags, e := r.ReadByte()
		if e != nil || flags&^(flagKey|flagPinned) != 0 {
			return c, errCursor
		}
		c.pos.Key, c.pinned = flags&flagKey != 0, flags&flagPinned != 0
		if c.pos.Key {
			c.pos.Name = str(keydict.MaxKeyLen)
		} else {
			c.pos.Num = num()
		}
		c.pos.Type = str(typedict.MaxNameLen)
		if c.pinned {
			origin()
			c.seq = num()
		}
	case cursorChange:
		origin()
		c.from, c.to, c.change.Src, c.change.Dst = num(), num(), num(), num()
		t := num()
		if t >= uint64(engine.MaxEdgeTypes) {
			err = errCursor
		}
		c.change.Type = uint16(t)
	}
	if err != nil || r.Len() != 0 {
		return c, errCursor
	}
	return c, nil
}

// PageOptions say where a page starts and how long it is (Client, Local,
// Querier): past the last edge of a previous page, given by its cursor
// (next_cursor: any replica continues it) or by the legacy After (and
// AfterType; AfterDst for changes) ("": from the first); at most Limit
// entries (0: the default).
type PageOptions struct {
	Cursor                     string
	After, AfterType, AfterDst string
	Limit                      int
}

// neighborsStart reads where a page of neighbors starts and what it
// reads: the view (view, asOf) and the position past which it lists,
// from a cursor or from the legacy after and after_type. A cursor's pin
// holds on the server that made it, and no view may be asked beside it
// there; elsewhere the view asked is read (by default the newest).
func (q Reader) neighborsStart(view string, asOf AsOf, pg PageOptions) (Point, *Position, error) {
	at, err := ParsePoint(view, asOf)
	if err != nil {
		return at, nil, err
	}
	switch {
	case pg.Cursor != "" && (pg.After != "" || pg.AfterType != ""):
		return at, nil, errorf(http.StatusBadRequest, "give cursor (the previous page's next_cursor), or after and after_type, not both")
	case pg.Cursor != "":
		c, err := decodeCursor(pg.Cursor, cursorNeighbor)
		if err != nil {
			return at, nil, errorf(http.StatusBadRequest, "%v", err)
		}
		if c.pinned && c.origin == q.Origin && q.Origin != (Origin{}) {
			if asOf != (AsOf{}) || at.Kind != views.Fresh {
				return at, nil, errorf(http.StatusBadRequest, "this cursor reads the view of its first page (seq %d): leave out view, as_of_seq and as_of_time", c.seq)
			}
			at.AsOf = &c.seq
		}
		return at, &c.pos, nil
	case pg.After != "":
		p, err := q.PositionOf(pg.After, pg.AfterType)
		return at, &p, err
	case pg.AfterType != "":
		return at, nil, errorf(http.StatusBadRequest, "after_type needs after")
	}
	return at, nil, nil
}
