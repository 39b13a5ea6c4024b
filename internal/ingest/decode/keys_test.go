package decode

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/graphtide/graphtide/internal/keydict"
)

// keyValues holds, per format, a value with string keys and the same value
// with a bad record after the keys.
var keyValues = map[Format]struct{ good, bad string }{
	FormatJSON: {
		good: `[{"src":"alice","dst":"bob","weight":2},{"op":"delete","src":"bob","dst":7},{"op":"delete_vertex","src":"carol"}]`,
		bad:  `[{"src":"alice","dst":"bob","weight":2},{"op":"delete","src":"bob","dst":7},{"op":"delete_vertex","src":"carol","dst":1}]`,
	},
	FormatText: {
		good: "alice bob 2\nd bob 7\ndv carol\n",
		bad:  "alice bob 2\nd bob 7\ndv carol x\n",
	},
}

var keyValuesWant = []Edge{
	{Src: kb, Dst: kb + 1, Weight: 2, HasWeight: true},
	{Op: OpDeleteEdge, Src: kb + 1, Dst: 7},
	{Op: OpDeleteVertex, Src: kb + 2},
}

func TestKeysThroughFakeResolver(t *testing.T) {
	for f, vals := range keyValues {
		t.Run(f.String(), func(t *testing.T) {
			keys := newFakeKeys()
			d := New(f, keys)

			// A bad value is rejected before any key is resolved.
			got, err := decodeAll(d, []byte(vals.bad))
			var de *Error
			if !errors.As(err, &de) || len(got) != 0 {
				t.Fatalf("bad value: %d edges, %v", len(got), err)
			}
			if keys.calls != 0 {
				t.Fatalf("bad value resolved %d keys", keys.calls)
			}

			got, err = decodeAll(d, []byte(vals.good))
			if err != nil {
				t.Fatal(err)
			}
			checkEdges(t, got, keyValuesWant)
			for i, want := range []string{"alice", "bob", "carol"} {
				if k, _ := keys.key(kb + uint64(i)); k != want {
					t.Fatalf("id %d has key %q, want %q", kb+uint64(i), k, want)
				}
			}

			// A resolver failure is not the record's fault: not an *Error.
			boom := errors.New("disk on fire")
			keys.fail = boom
			got, err = decodeAll(d, []byte(vals.good))
			if err == nil || !errors.Is(err, boom) || errors.As(err, &de) || len(got) != 0 {
				t.Fatalf("failing resolver: %d edges, error %v", len(got), err)
			}
		})
	}
}

// badKeys gives every key an id above MaxVertex.
type badKeys struct{}

func (badKeys) ID(string) (uint64, error) { return MaxVertex + 1, nil }

func TestResolverOutOfRangeIDRejected(t *testing.T) {
	for f, vals := range keyValues {
		got, err := decodeAll(New(f, badKeys{}), []byte(vals.good))
		var de *Error
		if err == nil || errors.As(err, &de) || len(got) != 0 {
			t.Fatalf("%v: resolver giving out-of-range ids: %d edges, error %v", f, len(got), err)
		}
	}
}

func TestKeysThroughKeydict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	dict, err := keydict.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{FormatJSON, FormatText} {
		got, err := decodeAll(New(f, dict), []byte(keyValues[f].good))
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		checkEdges(t, got, keyValuesWant) // the same keys get the same ids in both formats
	}
	// Binary values carry no keys, but still must stay below KeyBase.
	if _, err := decodeAll(New(FormatBinary, dict), AppendBinary(nil, Edge{Src: kb, Dst: 1})); err == nil {
		t.Fatal("binary id in the key range accepted with a dictionary")
	}
	if err := dict.Close(); err != nil {
		t.Fatal(err)
	}

	// After reopening, the ids are the same and new keys continue densely.
	dict, err = keydict.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	got, err := decodeAll(New(FormatText, dict), []byte("carol dave\n"))
	if err != nil {
		t.Fatal(err)
	}
	checkEdges(t, got, []Edge{{Src: kb + 2, Dst: kb + 3}})
	if k, ok := dict.Key(kb + 1); !ok || k != "bob" {
		t.Fatalf("Key(kb+1) = %q, %v", k, ok)
	}
}
