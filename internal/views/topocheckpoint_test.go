package views

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/testref"
)

// saveTopology writes m's topology, brought to the newest seq, to a file
// of its own and returns its path.
func saveTopology(t *testing.T, m *Manager) string {
	t.Helper()
	st, err := m.Topology().Stream(StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.Pull(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Done()
	path := filepath.Join(t.TempDir(), "ck")
	saveTopoFile(t, path, u.G)
	return path
}

// saveTopoFile writes g to a checkpoint file at path.
func saveTopoFile(t *testing.T, path string, g *Topo) {
	t.Helper()
	c, ids, err := CanonicalIDs(g)
	if err != nil {
		t.Fatal(err)
	}
	w, err := checkpoint.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := w.Section("topology", func(e *checkpoint.Encoder) { serr = SaveTopo(e, g, c, ids) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func loadTopoFile(t *testing.T, path string) *Topo {
	t.Helper()
	r, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var g *Topo
	if err := r.Section("topology", func(d *checkpoint.Decoder) (err error) { g, err = LoadTopo(d); return err }); err != nil {
		t.Fatal(err)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return g
}

// A topology saved at a checkpoint and restored over the same store, which
// went on past it (a crash after the checkpoint), follows the replay of
// the operations after the checkpoint (applied to the store a second
// time) and whatever comes next: it equals the oracle at the end, and its
// stream hands out every operation since the checkpoint, vertex deletes
// expanded against the checkpoint's graph. Weighted and unweighted, ids
// of every band, vertex deletes.
func TestTopologyRestoreFollowsTheReplay(t *testing.T) {
	// Weights: all 1 (none kept), whole 1-9 (packed), and whole plus a
	// quarter (float64).
	for _, kind := range []string{"unit", "whole", "fractional"} {
		weighted := kind != "unit"
		s := smallStore(t, false)
		r := rand.New(rand.NewPCG(7, 9))
		gen := func(n int) [][]engine.Op {
			var bs [][]engine.Op
			for range n {
				ops := randomOps(r, 200, 1+r.IntN(40), true)
				for i := range ops {
					if ops[i].Kind != engine.OpUpsert {
						continue
					}
					switch kind {
					case "unit":
						ops[i].Weight = 1
					case "fractional":
						ops[i].Weight += 0.25
					}
				}
				bs = append(bs, ops)
			}
			return bs
		}
		// Every op is tagged with its number since the restart began
		// (refs), which the restored stream must hand out with it.
		var refs []uint64
		apply := func(o oracle, bs [][]engine.Op) {
			for _, ops := range bs {
				var b engine.Batch
				for _, op := range ops {
					refs = append(refs, uint64(len(refs)+1))
					b.Tag(refs[len(refs)-1])
					testref.AddOp(&b, op)
				}
				if _, err := s.Apply(&b); err != nil {
					t.Fatal(err)
				}
				for _, op := range ops {
					o.Apply(op)
				}
			}
		}
		m1, err := NewManager(s, Config{LogCapacity: 1 << 14})
		if err != nil {
			t.Fatal(err)
		}
		atX := oracle{}
		apply(atX, gen(30))
		path := saveTopology(t, m1)
		// Past the checkpoint, then the crash.
		after := gen(20)
		atD := atX.Clone()
		apply(atD, after)
		m1.Close()

		m2, err := NewManager(s, Config{LogCapacity: 1 << 14})
		if err != nil {
			t.Fatal(err)
		}
		g := loadTopoFile(t, path)
		if got, want := topoAdj(t, g, engine.Out), adjOf(atX, engine.Out); !sameAdj(got, want) {
			t.Fatalf("loaded topology differs from the checkpoint's graph: %s", adjDiff(got, want))
		}
		if g.Out.Weighted() != weighted || g.Out.Whole() != (kind == "whole") {
			t.Fatalf("%s weights: loaded with Weighted %v, Whole %v", kind, g.Out.Weighted(), g.Out.Whole())
		}
		from, err := m2.Topology().Restore(g)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := m2.Topology().RestoredStream(StreamOptions{}, from)
		if err != nil {
			t.Fatal(err)
		}
		final := atD.Clone()
		refs = nil
		apply(final, after) // the replay
		apply(final, gen(15))
		// Replaying a suffix changes nothing it already made.
		replayed := atX.Clone()
		for _, bs := range [][][]engine.Op{after} {
			for _, ops := range bs {
				for _, op := range ops {
					replayed.Apply(op)
				}
			}
		}
		if !sameAdj(adjOf(replayed, engine.Out), adjOf(atD, engine.Out)) {
			t.Fatal("test oracle: the checkpoint's graph plus the operations after it is not the graph at the crash")
		}
		u, err := rs.Pull(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if u.Lost {
			t.Fatal("the first pull of a restored stream is Lost")
		}
		if got, want := topoAdj(t, u.G, engine.Out), adjOf(final, engine.Out); !sameAdj(got, want) {
			t.Fatalf("weighted %v: restored topology after the replay differs from the oracle: %s", weighted, adjDiff(got, want))
		}
		if got, want := topoAdj(t, u.G, engine.In), adjOf(final, engine.In); !sameAdj(got, want) {
			t.Fatalf("weighted %v: in-lists differ from the oracle", weighted)
		}
		if err := checkExpanded(atX, u.Edges); err != nil {
			t.Fatal(err)
		}
		var gotRefs []uint64
		for k, e := range u.Edges {
			if k == 0 || e.Ref != u.Edges[k-1].Ref { // an expansion carries its vertex delete's
				gotRefs = append(gotRefs, e.Ref)
			}
		}
		if !slices.Equal(gotRefs, refs) {
			t.Fatalf("the stream's refs %v, the ops' %v", gotRefs, refs)
		}
		check := atX.Clone()
		for _, e := range u.Edges {
			check.Apply(e.Op)
		}
		if !sameAdj(adjOf(check, engine.Out), adjOf(final, engine.Out)) {
			t.Fatal("the checkpoint's graph plus the stream's operations is not the final graph")
		}
		u.Done()
		rs.Close()
		m2.Close()
	}
}

// A restored stream with Presence is Lost, rather than handed wrong
// priors, when another stream advanced the topology past its start while
// no stream with Presence was open (nothing recorded what was there before
// those operations); opened before that advance, it gets every operation
// with the right priors.
func TestRestoredPresenceStreamNeedsItsPriors(t *testing.T) {
	for _, opened := range []bool{true, false} {
		s := smallStore(t, false)
		m1, err := NewManager(s, Config{LogCapacity: 1 << 14})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(3, 5))
		cur := oracle{}
		apply := func(n int) {
			ops := randomOps(r, 100, n, true)
			if _, err := s.Apply(batchOf(ops)); err != nil {
				t.Fatal(err)
			}
			for _, op := range ops {
				cur.Apply(op)
			}
		}
		apply(200)
		path := saveTopology(t, m1)
		m1.Close()
		atX := cur.Clone()

		m2, err := NewManager(s, Config{LogCapacity: 1 << 14})
		if err != nil {
			t.Fatal(err)
		}
		from, err := m2.Topology().Restore(loadTopoFile(t, path))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := m2.Topology().RestoredStream(StreamOptions{}, from)
		if err != nil {
			t.Fatal(err)
		}
		var fraud *TopoStream
		open := func() {
			if fraud, err = m2.Topology().RestoredStream(StreamOptions{Presence: true}, from); err != nil {
				t.Fatal(err)
			}
		}
		if opened {
			open()
		}
		apply(50)
		u, err := plain.Pull(context.Background()) // advances the topology
		if err != nil || u.Lost {
			t.Fatalf("plain: %v %v", u, err)
		}
		u.Done()
		if !opened {
			open()
		}
		u, err = fraud.PullNow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		lost, perr := u.Lost, checkPriors(atX, u.Edges, u.Prior)
		u.Done()
		fraud.Close()
		plain.Close()
		m2.Close()
		if lost != !opened {
			t.Fatalf("opened before the advance %v: lost %v", opened, lost)
		}
		if opened && perr != nil {
			t.Fatal(perr)
		}
	}
}
