package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/jsontext"
)

// Edge payloads: what an edge operation carries besides its ids, weight,
// type and time. An upsert may carry an event reference (the event's id as
// its source named it, else where it came from: "topic/partition/offset")
// and a property document (a JSON object: the currency, the channel, ...).
// Both are bounded like a vertex record's label and document, and follow
// the same JSON rules (CheckEdgePayload).

// The limits of an edge payload.
const (
	MaxEventRef  = 255     // bytes of UTF-8
	MaxEdgeProps = 4 << 10 // bytes of the property document's JSON
)

// opPayload is the payload of the batch's operation at: a reference as
// text (ref), or as a source position (source, position: SetSourcePayload;
// sourceID its number in the store applying the batch, resolveSources),
// and props.
type opPayload struct {
	at       int
	ref      string
	props    string
	source   string
	position int64
	sourceID uint32
}

// CheckEdgePayload is the error SetPayload would record for this event
// reference and property document, or nil.
func CheckEdgePayload(ref string, props []byte) error {
	switch {
	case len(ref) > MaxEventRef:
		return fmt.Errorf("%w: an event reference has at most %d bytes, got %d", ErrInvalid, MaxEventRef, len(ref))
	case !utf8.ValidString(ref):
		return fmt.Errorf("%w: an event reference must be UTF-8", ErrInvalid)
	case len(props) > MaxEdgeProps:
		return fmt.Errorf("%w: an edge's property document has at most %d bytes, got %d", ErrInvalid, MaxEdgeProps, len(props))
	case len(props) > 0 && (!json.Valid(props) || bytes.TrimSpace(props)[0] != '{'):
		return fmt.Errorf("%w: an edge's property document must be a JSON object", ErrInvalid)
	}
	if off, why := jsontext.Check(props); why != "" {
		return fmt.Errorf("%w: an edge's property document: %s at byte %d", ErrInvalid, why, off)
	}
	return nil
}

// SetPayload gives the last operation added, an upsert, the event
// reference ref (at most MaxEventRef bytes of UTF-8; "" for none) and the
// property document props (a JSON object of at most MaxEdgeProps bytes;
// empty for none). The apply observer sees them (Op.EventRef, Op.Props).
// The batch keeps its own copy of props.
func (b *Batch) SetPayload(ref string, props []byte) {
	if len(b.ops) == 0 || (ref == "" && len(props) == 0) {
		return
	}
	at := len(b.ops) - 1
	if b.err == nil {
		if b.ops[at].Kind != uint32(OpUpsert) {
			b.err = fmt.Errorf("%w: op %d is not an upsert: only an upsert carries an event reference or properties", ErrInvalid, at)
		} else if err := CheckEdgePayload(ref, props); err != nil {
			b.err = fmt.Errorf("op %d: %w", at, err)
		}
	}
	// A string: a copy of its own, which observers keep past the batch's
	// Reset (that reuses the batch's memory).
	doc := string(bytes.TrimSpace(props))
	if k := len(b.pays); k > 0 && b.pays[k-1].at == at {
		b.pays[k-1] = opPayload{at: at, ref: ref, props: doc}
		return
	}
	b.pays = append(b.pays, opPayload{at: at, ref: ref, props: doc})
}

// payload returns the payload of operation i (zero when it has none).
// INVARIANT: b.pays is ascending by at (SetPayload appends for the last
// operation only).
func (b *Batch) payload(i int) (ref, props string) {
	if len(b.pays) == 0 {
		return "", ""
	}
	k := sort.Search(len(b.pays), func(k int) bool { return b.pays[k].at >= i })
	if k < len(b.pays) && b.pays[k].at == i {
		p := &b.pays[k]
		if p.source != "" {
			return sourceRef(p.source, p.position), p.props
		}
		return p.ref, p.props
	}
	return "", ""
}
