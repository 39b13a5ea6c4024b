package analyticsbench

import (
	"cmp"
	"errors"
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

var _ views.Graph = (*edgeGraph)(nil)

// edgeGraph is a plain in-memory CSR of an edge list (sorted by source,
// then head; a repeated edge kept once, with its last weight), read as a
// views.Graph: what views.BuildTopo makes the baseline topology of.
type edgeGraph struct {
	n    uint64
	off  []int64
	dst  []uint64
	w    []float64 // nil: every weight is 1
	vids []uint64  // sources with edges, in order
}

func newEdgeGraph(n uint64, edges []wedge) *edgeGraph {
	es := slices.Clone(edges)
	bySrcDst := func(a, b wedge) int { return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.dst, b.dst)) }
	if slices.ContainsFunc(es, func(e wedge) bool { return e.w != 1 }) {
		slices.SortStableFunc(es, bySrcDst) // the repeats in order: the last one's weight wins
	} else {
		slices.SortFunc(es, bySrcDst) // the repeats are alike: no order to keep (a stable sort of 16M edges took 10 s)
	}
	g := &edgeGraph{n: n}
	weighted := false
	for k, e := range es {
		if k+1 < len(es) && es[k+1].src == e.src && es[k+1].dst == e.dst {
			continue // the last of the repeats wins
		}
		if len(g.vids) == 0 || g.vids[len(g.vids)-1] != e.src {
			g.vids = append(g.vids, e.src)
			g.off = append(g.off, int64(len(g.dst)))
		}
		g.dst = append(g.dst, e.dst)
		g.w = append(g.w, e.w)
		weighted = weighted || e.w != 1
	}
	g.off = append(g.off, int64(len(g.dst)))
	if !weighted {
		g.w = nil
	}
	return g
}

func (g *edgeGraph) IDs() (views.IDSpace, error) { return views.DenseIDs(g.n), nil }
func (g *edgeGraph) Seq() uint64                 { return 0 }
func (g *edgeGraph) HasIn() bool                 { return false }

func (g *edgeGraph) Each(dir engine.Direction, weights bool, f func(v uint64, nbrs []uint64, ws []float64)) error {
	if dir != engine.Out {
		return errCSRNoIn
	}
	for k, v := range g.vids {
		var ws []float64
		if weights && g.w != nil {
			ws = g.w[g.off[k]:g.off[k+1]]
		}
		f(v, g.dst[g.off[k]:g.off[k+1]], ws)
	}
	return nil
}

func (g *edgeGraph) GatherEach([]uint64, engine.Direction, bool, func(int, []uint64, []float64)) error {
	return errCSRNoGather
}

func (g *edgeGraph) GatherEachLimit([]uint64, engine.Direction, bool, int, func(int, []uint64, []float64)) (int, int, error) {
	return 0, 0, errCSRNoGather
}

var (
	errCSRNoIn     = errors.New("analyticsbench: the plain CSR holds out-edges only")
	errCSRNoGather = errors.New("analyticsbench: the plain CSR is read whole (views.BuildTopo), not gathered")
)
