package engine

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"

	"github.com/graphtide/graphtide/internal/core"
)

// Event sources (issue 42). An event that has no reference of its own but
// came from a source, a Kafka topic's partition, is referred to by where
// it came from: "<source>/<position>", e.g. "payments/3/1207" for offset
// 1207 of partition 3 of topic payments (source "payments/3"). The store
// does not keep that text with every event: it numbers each source name
// once, in its MANIFEST (durably, before any event names it), and keeps an
// event's (source number, position) in a few bytes, narrow columns of its
// files (a file of one source and nearby offsets takes about 3 bytes an
// event, not the 60 of a long topic name). Every read renders the same
// text an event reference given as text would read as (Columns.Refs,
// Event.EventRef, Op.EventRef), so nothing a user sees tells the two
// apart. An event reference given as text (SetPayload, a mapped event_id)
// is kept as text, as before.

// eventSources are the store's numbered sources: names[i] is source i+1.
type eventSources struct {
	mu    sync.RWMutex
	names []string          // Protected by mu.
	ids   map[string]uint32 // Protected by mu.
}

// loadSources gives s the event sources c records (Open).
func (s *Store) loadSources(c *core.Store) *core.Error {
	names, e := c.EventSources()
	if e != nil {
		return e
	}
	s.srcs.mu.Lock()
	defer s.srcs.mu.Unlock()
	s.srcs.names = names
	s.srcs.ids = make(map[string]uint32, len(names))
	for i, n := range names {
		s.srcs.ids[n] = uint32(i + 1)
	}
	return nil
}

// sourceID is the store's number of the event source name, recorded in
// the store first when it is new.
func (s *Store) sourceID(name string) (uint32, error) {
	s.srcs.mu.RLock()
	id, ok := s.srcs.ids[name]
	s.srcs.mu.RUnlock()
	if ok {
		return id, nil
	}
	err := s.with("add event source", func(c *core.Store) (e *core.Error) {
		id, e = c.AddEventSource(name)
		return e
	})
	if err != nil {
		return 0, err
	}
	s.srcs.mu.Lock()
	defer s.srcs.mu.Unlock()
	if int(id) == len(s.srcs.names)+1 {
		s.srcs.names = append(s.srcs.names, name)
	}
	if s.srcs.ids == nil {
		s.srcs.ids = map[string]uint32{}
	}
	s.srcs.ids[name] = id
	return id, nil
}

// renderRef is the event reference of source position (src, pos): the
// text "<source name>/<position>".
func (s *Store) renderRef(src uint32, pos uint64) (string, error) {
	s.srcs.mu.RLock()
	var name string
	ok := src >= 1 && int(src) <= len(s.srcs.names)
	if ok {
		name = s.srcs.names[src-1]
	}
	s.srcs.mu.RUnlock()
	if !ok {
		return "", fmt.Errorf("engine: a version names event source %d, which the store does not number (damage past the files' checksums, or a bug)", src)
	}
	return sourceRef(name, int64(pos)), nil
}

// EventSources are the store's event sources' names, in the order it
// numbered them (the first is source 1).
func (s *Store) EventSources() []string {
	s.srcs.mu.RLock()
	defer s.srcs.mu.RUnlock()
	return append([]string(nil), s.srcs.names...)
}

// sourceRef renders a source position.
func sourceRef(source string, position int64) string {
	return source + "/" + strconv.FormatInt(position, 10)
}

// SetSourcePayload gives the last operation added, an upsert, the event
// reference "<source>/<position>" (what SetPayload(source+"/"+position,
// props) gives it, and what every read renders) kept as a source position:
// the store numbers source once (at Apply, durably) and keeps the
// position as a number, so the reference costs an event a few bytes, not
// its text. The rendered text is at most MaxEventRef bytes of UTF-8, as
// SetPayload's reference, position at least 0; props as SetPayload's. The
// apply observer sees the rendered text (Op.EventRef).
func (b *Batch) SetSourcePayload(source string, position int64, props []byte) {
	if len(b.ops) == 0 {
		return
	}
	at := len(b.ops) - 1
	if b.err == nil {
		switch {
		case source == "":
			b.err = fmt.Errorf("%w: op %d: an event source must not be empty", ErrInvalid, at)
		case len(source)+1+len(strconv.FormatInt(position, 10)) > MaxEventRef:
			b.err = fmt.Errorf("%w: op %d: an event reference has at most %d bytes, got %d (%q and position %d)", ErrInvalid, at, MaxEventRef,
				len(source)+1+len(strconv.FormatInt(position, 10)), source, position)
		case position < 0:
			b.err = fmt.Errorf("%w: op %d: an event's position in its source must be at least 0, got %d", ErrInvalid, at, position)
		}
	}
	b.SetPayload("", props)
	if b.err == nil {
		if b.ops[at].Kind != uint32(OpUpsert) {
			b.err = fmt.Errorf("%w: op %d is not an upsert: only an upsert carries an event reference or properties", ErrInvalid, at)
		} else if err := CheckEdgePayload(source, nil); err != nil {
			b.err = fmt.Errorf("op %d: event source: %w", at, err)
		}
	}
	b.sources = true
	p := opPayload{at: at, source: source, position: position}
	if k := len(b.pays); k > 0 && b.pays[k-1].at == at {
		p.props = b.pays[k-1].props
		b.pays[k-1] = p
		return
	}
	b.pays = append(b.pays, p)
}

// resolveSources gives each payload of b with a source its number in s
// (applyLocked, before coreOps).
func (s *Store) resolveSources(b *Batch) error {
	last, lastID := "", uint32(0)
	for k := range b.pays {
		p := &b.pays[k]
		if p.source == "" {
			continue
		}
		if p.source != last {
			id, err := s.sourceID(p.source)
			if err != nil {
				return fmt.Errorf("op %d: event source %q: %w", p.at, p.source, err)
			}
			last, lastID = p.source, id
		}
		p.sourceID = lastID
	}
	return nil
}

// appendSourcePos appends the core's source position bytes (OpSource).
func appendSourcePos(buf []byte, src uint32, pos int64) []byte {
	buf = binary.LittleEndian.AppendUint32(buf, src)
	return binary.LittleEndian.AppendUint64(buf, uint64(pos))
}
