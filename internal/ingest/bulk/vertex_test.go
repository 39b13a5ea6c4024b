package bulk

import (
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
	// Every record a decoder accepts, the engine accepts.
	for _, v := range []string{
		`{"op":"add_vertex","src":1,"label":"` + string(make([]byte, 0)) + `","props":{"a":"\u00e9\ud83d\ude00"}}`,
		`{"op":"add_vertex","src":1,"label":"x","props":{ }}`,
	} {
		err := decode.New(decode.FormatJSON, nil).Decode([]byte(v), func(e decode.Edge) {
			var b engine.Batch
			Add(&b, e)
			if b.Err() != nil {
				t.Errorf("%s: decoded, and the engine refuses it: %v", v, b.Err())
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
}
