package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/jsontext"
	"github.com/graphtide/graphtide/internal/keydict"
)

// fakeKeys is a KeyResolver that assigns KeyBase, KeyBase+1, ... in order of
// first sight, like keydict, and can be told to fail.
type fakeKeys struct {
	ids   map[string]uint64
	keys  []string
	fail  error
	calls int
}

func newFakeKeys() *fakeKeys { return &fakeKeys{ids: map[string]uint64{}} }

func (f *fakeKeys) ID(key string) (uint64, error) {
	f.calls++
	if f.fail != nil {
		return 0, f.fail
	}
	if id, ok := f.ids[key]; ok {
		return id, nil
	}
	id := keydict.KeyBase + uint64(len(f.keys))
	f.ids[key] = id
	f.keys = append(f.keys, key)
	return id, nil
}

// key returns the key of id, if the resolver gave it out.
func (f *fakeKeys) key(id uint64) (string, bool) {
	if id < keydict.KeyBase || id-keydict.KeyBase >= uint64(len(f.keys)) {
		return "", false
	}
	return f.keys[id-keydict.KeyBase], true
}

// decodeAll decodes v and returns the emitted edges, each with its own
// copy of its label and props (which are valid only during emit).
func decodeAll(d Decoder, v []byte) ([]Edge, error) {
	var out []Edge
	err := d.Decode(v, func(e Edge) { out = append(out, keep(e)) })
	return out, err
}

// keep is e with its own copy of its label and props.
func keep(e Edge) Edge {
	if e.Label != nil {
		e.Label = bytes.Clone(e.Label)
	}
	if e.Props != nil {
		e.Props = bytes.Clone(e.Props)
	}
	if e.EventRef != nil {
		e.EventRef = bytes.Clone(e.EventRef)
	}
	return e
}

// us returns the event time for Unix microseconds, as decoders produce it.
func us(x int64) time.Time { return time.UnixMicro(x).UTC() }

// checkDecodeError asserts that err is an *Error of format f at offset off
// whose reason contains reason, and that nothing was emitted.
func checkDecodeError(t *testing.T, f Format, got []Edge, err error, off int, reason string) {
	t.Helper()
	if len(got) != 0 {
		t.Errorf("invalid value emitted %d edges: %+v", len(got), got)
	}
	var de *Error
	if !errors.As(err, &de) {
		t.Fatalf("error = %v (%T), want *Error", err, err)
	}
	if de.Format != f || de.Offset != off || !strings.Contains(de.Reason, reason) {
		t.Fatalf("error = {%v %d %q}, want {%v %d containing %q}", de.Format, de.Offset, de.Reason, f, off, reason)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("byte offset %d", off)) {
		t.Fatalf("message %q lacks the offset", err.Error())
	}
}

// checkEdges asserts that got equals want.
func checkEdges(t *testing.T, got, want []Edge) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d edges %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		if !sameEdge(got[i], want[i]) {
			t.Fatalf("edge %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// sameEdge compares edges, weights bit for bit (so -0 differs from 0).
func sameEdge(a, b Edge) bool {
	return a.Op == b.Op && a.Src == b.Src && a.Dst == b.Dst && a.HasWeight == b.HasWeight &&
		math.Float64bits(a.Weight) == math.Float64bits(b.Weight) &&
		a.EventTime.Equal(b.EventTime) && a.EventTime.IsZero() == b.EventTime.IsZero() &&
		bytes.Equal(a.Label, b.Label) && bytes.Equal(a.Props, b.Props) && bytes.Equal(a.EventRef, b.EventRef)
}

// ruleViolation returns why an emitted edge breaks the package rules, or "".
// keys is the resolver in use (nil if none); ids at or above KeyBase must be
// ones it gave out.
func ruleViolation(e Edge, keys *fakeKeys) string {
	maxNumeric := MaxVertex
	if keys != nil {
		maxNumeric = keydict.KeyBase - 1
	}
	checkID := func(id uint64) string {
		if id <= maxNumeric {
			return ""
		}
		if keys != nil {
			if _, ok := keys.key(id); ok {
				return ""
			}
		}
		return fmt.Sprintf("vertex id %d out of range", id)
	}
	if e.Op > OpPutVertex {
		return "bad op"
	}
	if r := checkID(e.Src); r != "" {
		return "src " + r
	}
	if e.Op == OpPutVertex {
		switch {
		case e.Dst != 0 || e.HasWeight || e.Weight != 0 || e.Type != 0 || !e.EventTime.IsZero():
			return "a vertex record with a dst, weight, type or event time"
		case len(e.Label) > MaxVertexLabel || !utf8.Valid(e.Label):
			return "a vertex label too long or not UTF-8"
		case len(e.Props) > MaxVertexProps || len(e.Props) > 0 && (e.Props[0] != '{' || !json.Valid(e.Props)):
			return "vertex props that are not a JSON object of at most MaxVertexProps bytes"
		}
		if _, why := jsontext.Check(e.Props); why != "" {
			return "vertex props the engine refuses: " + why
		}
		return ""
	}
	if e.Op == OpUpsert && (len(e.Props) > 0 || len(e.EventRef) > 0) {
		// An upsert's payload: what the store accepts (its own check is
		// the oracle), the props a JSON object.
		if err := engine.CheckEdgePayload(string(e.EventRef), e.Props); err != nil {
			return "an upsert payload the store refuses: " + err.Error()
		}
		if len(e.Props) > 0 && !json.Valid(e.Props) {
			return "edge props that are not JSON"
		}
	} else if len(e.Props) > 0 || len(e.EventRef) > 0 {
		return "props or an event reference on a delete"
	}
	if len(e.Label) > 0 {
		return "a label on an edge operation"
	}
	if e.Op == OpDeleteVertex {
		if e.Dst != 0 {
			return "vertex delete with dst"
		}
	} else if r := checkID(e.Dst); r != "" {
		return "dst " + r
	}
	if e.HasWeight {
		if e.Op != OpUpsert {
			return "weight on a delete"
		}
		if math.IsNaN(e.Weight) || math.IsInf(e.Weight, 0) {
			return "weight not finite"
		}
	} else if math.Float64bits(e.Weight) != 0 {
		return "weight set without HasWeight"
	}
	if !e.EventTime.IsZero() {
		if e.EventTime.Location() != time.UTC {
			return "event time not UTC"
		}
		if e.EventTime.Nanosecond()%1000 != 0 {
			return "event time finer than a microsecond"
		}
		m := e.EventTime.UnixMicro()
		if m < 0 || m > maxEventMicros {
			return "event time out of range"
		}
	}
	return ""
}
