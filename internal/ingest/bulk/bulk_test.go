package bulk

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphtide/graphtide/internal/datadir"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/ingest/decode"
)

func TestAdd(t *testing.T) {
	var b engine.Batch
	at := time.Date(2026, 11, 23, 10, 15, 0, 123456000, time.UTC)
	for _, e := range []decode.Edge{
		{Op: decode.OpUpsert, Src: 1, Dst: 2},
		{Op: decode.OpUpsert, Src: 3, Dst: 4, Weight: 2.5, HasWeight: true, EventTime: at},
		{Op: decode.OpDeleteEdge, Src: 5, Dst: 6, Weight: 9, HasWeight: true},
		{Op: decode.OpDeleteVertex, Src: 7, Dst: 8, EventTime: at.Add(time.Second)},
	} {
		Add(&b, e)
	}
	want := []engine.Op{
		{Src: 1, Dst: 2, Weight: 1, Kind: engine.OpUpsert},
		{Src: 3, Dst: 4, Weight: 2.5, Kind: engine.OpUpsert, EventTime: at.UnixMicro()},
		{Src: 5, Dst: 6, Kind: engine.OpDeleteEdge},
		{Src: 7, Kind: engine.OpDeleteVertex, EventTime: at.Add(time.Second).UnixMicro()},
	}
	if b.Len() != len(want) {
		t.Fatalf("batch holds %d ops, want %d", b.Len(), len(want))
	}
	for i, w := range want {
		if got := b.Op(i); got != w {
			t.Errorf("op %d = %+v, want %+v", i, got, w)
		}
	}
}

// oracle is the graph as a plain map of out-edges to weights.
type oracle map[[2]uint64]float64

func (o oracle) apply(kind string, src, dst uint64, w float64) {
	switch kind {
	case "add":
		o[[2]uint64{src, dst}] = w
	case "d":
		delete(o, [2]uint64{src, dst})
	case "dv":
		for e := range o {
			if e[0] == src || e[1] == src {
				delete(o, e)
			}
		}
	}
}

// TestLoadStopsAtBadLine loads a text file of inserts, edge deletes and
// vertex deletes with a malformed line in the middle and a second file
// after it: what comes before the line is in the store, durable, and
// nothing after it.
func TestLoadStopsAtBadLine(t *testing.T) {
	tmp := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	var lines []string
	want, all := oracle{}, oracle{}
	const ops, bad = 3000, 2100
	for i := range ops {
		src, dst, w := rng.Uint64N(200), rng.Uint64N(200), float64(rng.IntN(100))
		kind, line := "add", fmt.Sprintf("%d %d %v", src, dst, w)
		switch r := rng.IntN(20); {
		case r < 3:
			kind, line = "d", fmt.Sprintf("d %d %d", src, dst)
		case r == 3:
			kind, line = "dv", fmt.Sprintf("dv %d", src)
		}
		if i < bad {
			want.apply(kind, src, dst, w)
		}
		all.apply(kind, src, dst, w)
		lines = append(lines, line)
	}
	// Comments and blank lines are not operations.
	lines = append(lines[:10], append([]string{"# comment", ""}, lines[10:]...)...)
	lines[bad+2] = "7 x y z"
	first, second := filepath.Join(tmp, "a.el"), filepath.Join(tmp, "b.el")
	if err := os.WriteFile(first, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, []byte("1 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(tmp, "data")
	d, err := datadir.Open(dir, datadir.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	var progressCalls int
	n, err := Load(context.Background(), Config{Store: d.Store, Keys: d.Keys, Batch: 256,
		Progress: func(_, _ int64) { progressCalls++ }}, []string{first, second}, Auto)
	var ie *InputError
	if !errors.As(err, &ie) || ie.File != first || ie.Line != bad+3 {
		t.Fatalf("Load error = %v, want an InputError at %s:%d", err, first, bad+3)
	}
	if n.Total() != bad {
		t.Errorf("applied %d operations, want the %d before the bad line", n.Total(), bad)
	}
	if progressCalls < bad/256 {
		t.Errorf("progress called %d times for %d batches", progressCalls, bad/256)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened: what was loaded is durable.
	d, err = datadir.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := storeEdges(t, d.Store)
	if len(got) != len(want) {
		t.Errorf("store holds %d edges, oracle %d (the whole file: %d)", len(got), len(want), len(all))
	}
	for e, w := range want {
		if gw, ok := got[e]; !ok || gw != w {
			t.Errorf("edge %v: store %v (present %v), oracle %v", e, gw, ok, w)
		}
	}
}

func TestLoadInterrupted(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "g.json")
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, `{"op":"add","src":"k%d","dst":%d}`+"\n", i, i)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := datadir.Open(filepath.Join(tmp, "data"), datadir.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := Load(ctx, Config{Store: d.Store, Keys: d.Keys, Batch: 100, Progress: func(_, applied int64) {
		if applied == 300 {
			cancel()
		}
	}}, []string{file}, JSON)
	if !errors.Is(err, ErrInterrupted) || n.Total() != 300 {
		t.Fatalf("Load = %d ops, %v; want 300 and an interruption", n.Total(), err)
	}
	if got := len(storeEdges(t, d.Store)); got != 300 {
		t.Errorf("store holds %d edges after the interrupt, want 300", got)
	}
	if got := d.Keys.Len(); got < 300 {
		t.Errorf("key dictionary holds %d keys, want at least the 300 loaded", got)
	}
}

// storeEdges reads every out-edge of the numeric and key bands.
func storeEdges(t *testing.T, s *engine.Store) oracle {
	t.Helper()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Release()
	low, high := sn.VertexBounds()
	got := oracle{}
	buf := engine.NewScanBuffer(64, 256, true)
	for _, band := range [][2]uint64{{0, low}, {engine.HighIDBase, high}} {
		for lo := band[0]; lo < band[1]; {
			if lo, err = sn.Scan(lo, band[1], engine.Out, buf); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < buf.Len(); i++ {
				for j, dst := range buf.Neighbors(i) {
					got[[2]uint64{buf.Vertices[i], dst}] = buf.Weights[int(buf.Offsets[i])+j]
				}
			}
		}
	}
	return got
}
