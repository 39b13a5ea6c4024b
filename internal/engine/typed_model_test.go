package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/graphtide/graphtide/internal/testref/volume"
)

// typedEdge is one edge as a read returns it.
type typedEdge struct {
	dst  uint64
	typ  uint16
	w    float64
	time int64
}

// The model-based store test with edge types and event times: random
// batches of typed, half of them timed, upserts, deletes and vertex
// deletes, with flushes and compactions by size, against a map oracle of
// (src, dst, type) -> (weight, time); after each batch every read of the
// Go API (pages with the (dst, type) cursor, typed scans and gathers,
// degrees of type views) in both directions, with and without a filter.
func TestTypedTimedStoreFollowsTheOracle(t *testing.T) {
	volume.Mark(t)
	s, err := Open(t.TempDir(), smallOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(21, 22))
	type key struct {
		src, dst uint64
		typ      uint16
	}
	type val struct {
		w    float64
		time int64
	}
	o := map[key]val{}
	const nv = 24
	types := []uint16{0, 1, 2, 900}
	filters := []*TypeSet{nil, ptrTo(TypesOf(0)), ptrTo(TypesOf(1, 900)), ptrTo(TypesOf(2))}
	want := func(v uint64, dir Direction, ts *TypeSet) []typedEdge {
		var l []typedEdge
		for k, x := range o {
			if ts != nil && !ts.Has(k.typ) {
				continue
			}
			switch {
			case dir == Out && k.src == v:
				l = append(l, typedEdge{k.dst, k.typ, x.w, x.time})
			case dir == In && k.dst == v:
				l = append(l, typedEdge{k.src, k.typ, x.w, x.time})
			}
		}
		slices.SortFunc(l, func(a, b typedEdge) int {
			if a.dst != b.dst {
				return int(a.dst) - int(b.dst)
			}
			return int(b.typ) - int(a.typ)
		})
		return l
	}
	for round := range 80 {
		var b Batch
		for range 1 + r.IntN(40) {
			src, dst, ty := r.Uint64N(nv), r.Uint64N(nv), types[r.IntN(len(types))]
			var tm int64
			if r.IntN(2) == 0 {
				tm = 1_700_000_000_000_000 + r.Int64N(1_000_000)
			}
			switch x := r.IntN(100); {
			case x < 65:
				w := []float64{1, 2.5}[r.IntN(2)]
				b.InsertWeighted(src, dst, w)
				b.SetType(ty)
				b.SetEventTime(tm)
				o[key{src, dst, ty}] = val{w, tm}
			case x < 96:
				b.DeleteEdge(src, dst)
				b.SetType(ty)
				b.SetEventTime(tm)
				delete(o, key{src, dst, ty})
			default:
				b.DeleteVertex(src)
				for k := range o {
					if k.src == src || k.dst == src {
						delete(o, k)
					}
				}
			}
		}
		if _, err := s.Apply(&b); err != nil {
			t.Fatal(err)
		}
		if round%10 == 9 {
			if err := s.CompactAll(); err != nil {
				t.Fatal(err)
			}
		}
		sn, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range filters {
			view := sn
			if ts != nil {
				view = sn.OfTypes(*ts)
			}
			for _, dir := range []Direction{Out, In} {
				// A scan of every vertex, with types and times.
				scan := map[uint64][]typedEdge{}
				buf := NewScanBuffer(5, 7, true)
				buf.Types, buf.Times = []uint16{}, []int64{}
				for lo := uint64(0); lo < nv; {
					next, err := view.Scan(lo, nv, dir, buf)
					if err != nil {
						t.Fatal(err)
					}
					for i, v := range buf.Vertices {
						for k := buf.Offsets[i]; k < buf.Offsets[i+1]; k++ {
							scan[v] = append(scan[v], typedEdge{buf.Dsts[k], buf.Types[k], buf.Weights[k], buf.Times[k]})
						}
					}
					lo = next
				}
				vids := make([]uint64, nv)
				for v := range vids {
					vids[v] = uint64(v)
				}
				gb := NewGatherBuffer(1024, true)
				gb.Types, gb.Times = []uint16{}, []int64{}
				if done, err := view.Gather(vids, dir, gb); err != nil || done != nv {
					t.Fatalf("gather: %d, %v", done, err)
				}
				for v := uint64(0); v < nv; v++ {
					w := want(v, dir, ts)
					what := fmt.Sprintf("round %d, types %v, dir %d, vertex %d", round, ts, dir, v)
					if got := scan[v]; fmt.Sprint(got) != fmt.Sprint(w) && len(got)+len(w) > 0 {
						t.Fatalf("%s: scan %v, want %v", what, got, w)
					}
					var g []typedEdge
					for k := gb.Offsets[v]; k < gb.Offsets[v+1]; k++ {
						g = append(g, typedEdge{gb.Dsts[k], gb.Types[k], gb.Weights[k], gb.Times[k]})
					}
					if fmt.Sprint(g) != fmt.Sprint(w) && len(g)+len(w) > 0 {
						t.Fatalf("%s: gather %v, want %v", what, g, w)
					}
					if d, err := view.Degree(v, dir); err != nil || d != uint64(len(w)) {
						t.Fatalf("%s: degree %d (%v), want %d", what, d, err, len(w))
					}
					var paged []typedEdge
					var after *EdgeCursor
					for pages := 0; ; pages++ {
						p, err := view.NeighborsPage(v, dir, after, 1+r.IntN(3), true)
						if err != nil || pages > 100 {
							t.Fatalf("%s: page %d: %v", what, pages, err)
						}
						for i := range p.Dsts {
							paged = append(paged, typedEdge{p.Dsts[i], p.Types[i], p.Weights[i], p.Times[i]})
						}
						last, ok := p.Last()
						if !p.More || !ok {
							break
						}
						after = &last
					}
					if fmt.Sprint(paged) != fmt.Sprint(w) && len(paged)+len(w) > 0 {
						t.Fatalf("%s: pages %v, want %v", what, paged, w)
					}
					if dir != Out {
						continue
					}
					// Edge lookups of every dst, present or not (nv never is),
					// as one batch (EdgeCounts), then one by one.
					srcs, dsts, counts := make([]uint64, nv+1), make([]uint64, nv+1), make([]uint32, nv+1)
					for d := range dsts {
						srcs[d], dsts[d] = v, uint64(d)
					}
					if err := view.EdgeCounts(srcs, dsts, counts); err != nil {
						t.Fatalf("%s: edge counts: %v", what, err)
					}
					for _, e := range w {
						counts[e.dst]--
					}
					for d, c := range counts {
						if c != 0 {
							t.Fatalf("%s: edge counts to %d: %d more than the edges", what, d, int32(c))
						}
					}
					for d := uint64(0); d <= nv; d++ {
						var we, ge []typedEdge
						for _, e := range w {
							if e.dst == d {
								we = append(we, e)
							}
						}
						c, err := view.Edge(v, d)
						if err != nil {
							t.Fatalf("%s: edge to %d: %v", what, d, err)
						}
						for i := range c.Types {
							ge = append(ge, typedEdge{d, c.Types[i], c.Weights[i], c.Times[i]})
						}
						if fmt.Sprint(ge) != fmt.Sprint(we) {
							t.Fatalf("%s: edge to %d: %v, want %v", what, d, ge, we)
						}
					}
				}
			}
		}
		sn.Release()
	}
	files, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	var typed, timed bool
	for _, f := range files {
		typed, timed = typed || f.Types, timed || f.Times
	}
	if !typed || !timed {
		t.Errorf("no file with a type (%v) or time (%v) column after compactions", typed, timed)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestTypeSetLen: Len counts the types added, once each, across the set's
// words, and ignores types past MaxEdgeTypes.
func TestTypeSetLen(t *testing.T) {
	for _, c := range []struct {
		ts   []uint16
		want int
	}{{nil, 0}, {[]uint16{0}, 1}, {[]uint16{1, 900, 900}, 2}, {[]uint16{63, 64, 1023, uint16(MaxEdgeTypes)}, 3}} {
		s := TypesOf(c.ts...)
		if got := s.Len(); got != c.want {
			t.Errorf("TypesOf(%v).Len() = %d, want %d", c.ts, got, c.want)
		}
	}
}
