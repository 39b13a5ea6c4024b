package inspect

import (
	"slices"
	"testing"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
)

// TestFileFlagsNameTheEventColumns: a file holding events of an
// accumulate type says so (counts), one with event references or
// properties too (payloads); a file of replace edges has neither.
func TestFileFlagsNameTheEventColumns(t *testing.T) {
	for _, c := range []struct {
		name                string
		accumulate, payload bool
		want, not           []string
	}{
		{"replace", false, false, nil, []string{"counts", "payloads"}},
		{"accumulate", true, false, []string{"counts"}, []string{"payloads"}},
		{"accumulate with payloads", true, true, []string{"counts", "payloads"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o := engine.Options{Aggregates: map[uint16]engine.Aggregate{}}
			if c.accumulate {
				o.Aggregates[0] = engine.Aggregate{Accumulate: true}
			}
			d, err := datadir.Open(dir, datadir.Options{Store: o, Create: true})
			if err != nil {
				t.Fatal(err)
			}
			var b engine.Batch
			for i := 0; i < 3; i++ {
				b.InsertWeighted(1, 2, 12.5)
				b.SetEventTime(int64(1_000_000 + i))
				if c.payload {
					b.SetPayload("e-91", []byte(`{"currency":"EUR"}`))
				}
			}
			if _, err := d.Store.Apply(&b); err != nil {
				t.Fatal(err)
			}
			if err := d.Store.Flush(); err != nil {
				t.Fatal(err)
			}
			rep, err := Collect(d)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			var out []File
			for _, f := range rep.Files {
				if f.Direction == "out" {
					out = append(out, f)
				}
			}
			if len(out) != 1 {
				t.Fatalf("out-edge files %+v", rep.Files)
			}
			for _, w := range c.want {
				if !slices.Contains(out[0].Flags, w) {
					t.Errorf("flags %v lack %s", out[0].Flags, w)
				}
			}
			for _, n := range c.not {
				if slices.Contains(out[0].Flags, n) {
					t.Errorf("flags %v hold %s", out[0].Flags, n)
				}
			}
		})
	}
}
