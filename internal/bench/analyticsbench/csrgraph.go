package analyticsbench

import (
	"errors"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/staticcsr"
	"github.com/graphtide/graphtide/internal/views"
)

// errCSRNoIn: the static CSR holds out-edges only.
var errCSRNoIn = errors.New("analyticsbench: the static CSR has no in-edges")

var _ views.Graph = csrGraph{}

// csrGraph adapts a static in-memory CSR (out-edges, no weights) to
// views.Graph:
// the baseline that analytics on views are measured against.
type csrGraph struct {
	C  *staticcsr.CSR
	Sq uint64 // reported by Seq
}

func (g csrGraph) IDs() (views.IDSpace, error) { return views.DenseIDs(g.C.NumVertices()), nil }
func (g csrGraph) Seq() uint64                 { return g.Sq }
func (g csrGraph) HasIn() bool                 { return false }

func (g csrGraph) Each(dir engine.Direction, _ bool, f func(v uint64, nbrs []uint64, ws []float64)) error {
	if dir != engine.Out {
		return errCSRNoIn
	}
	n := g.C.NumVertices()
	for v := uint64(0); v < n; v++ {
		if nb := g.C.Neighbors(v); len(nb) > 0 {
			f(v, nb, nil)
		}
	}
	return nil
}

func (g csrGraph) GatherEach(vids []uint64, dir engine.Direction, _ bool, f func(i int, nbrs []uint64, ws []float64)) error {
	if dir != engine.Out {
		return errCSRNoIn
	}
	n := g.C.NumVertices()
	for i, v := range vids {
		if v < n {
			f(i, g.C.Neighbors(v), nil)
		} else {
			f(i, nil, nil)
		}
	}
	return nil
}

func (g csrGraph) GatherEachLimit(vids []uint64, dir engine.Direction, _ bool, maxEdges int,
	f func(i int, nbrs []uint64, ws []float64)) (done, read int, err error) {
	if dir != engine.Out {
		return 0, 0, errCSRNoIn
	}
	n := g.C.NumVertices()
	for i, v := range vids {
		var nb []uint64
		if v < n {
			nb = g.C.Neighbors(v)
		}
		if read+len(nb) > maxEdges {
			break
		}
		f(i, nb, nil)
		done, read = i+1, read+len(nb)
	}
	return done, read, nil
}
