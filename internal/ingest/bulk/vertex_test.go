package bulk

import (
	"strings"
	"testing"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

// TestVertexLimitsAgree: the decoders refuse exactly what the engine
// would (a record they pass must never fail a whole batch in Apply).
func TestVertexLimitsAgree(t *testing.T) {
	if decode.MaxVertexLabel != engine.MaxVertexLabel || decode.MaxVertexProps != engine.MaxVertexProps {
		t.Fatalf("decode limits (%d, %d), engine limits (%d, %d)", decode.MaxVertexLabel, decode.MaxVertexProps, engine.MaxVertexLabel, engine.MaxVertexProps)
	}
	// Every record a decoder accepts, the engine accepts; and what the
	// engine refuses, every decoder refuses (a record it let through would
	// fail its whole ingest batch in Apply).
	deep := `{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`
	for _, c := range []struct {
		props string
		ok    bool
	}{
		{`{"a":"\u00e9\ud83d\ude00"}`, true},
		{`{ }`, true},
		{`{"a":"\ud800"}`, false},
		{`{"a":"` + "\xff" + `"}`, false},
		{deep, false},
	} {
		for _, f := range []decode.Format{decode.FormatJSON, decode.FormatBinary} {
			v := []byte(`{"op":"add_vertex","src":1,"label":"x","props":` + c.props + `}`)
			if f == decode.FormatBinary {
				v = decode.AppendBinary(nil, decode.Edge{Op: decode.OpPutVertex, Src: 1, Label: []byte("x"), Props: []byte(c.props)})
			}
			var refused error
			err := decode.New(f, nil).Decode(v, func(e decode.Edge) {
				var b engine.Batch
				Add(&b, e)
				refused = b.Err()
			})
			switch {
			case c.ok && (err != nil || refused != nil):
				t.Errorf("%v %s: decode %v, engine %v; want both to accept it", f, c.props, err, refused)
			case !c.ok && err == nil:
				t.Errorf("%v %.30s: decoded (the engine says %v); want the decoder to refuse it", f, c.props, refused)
			}
		}
	}
}
