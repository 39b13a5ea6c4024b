package views

import (
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
)

// Graph is what the analytics read: a static view, or for comparison a
// plain in-memory CSR. Neighbor slices passed to callbacks are valid only
// during the call; ws is nil when weights were not asked for or the graph
// has none (every weight is then 1).
type Graph interface {
	// IDs is the id space per-vertex state is indexed by: it holds every
	// vertex with an edge.
	IDs() (IDSpace, error)
	Seq() uint64
	HasIn() bool
	// Each calls f for every vertex with at least one dir-edge, in id order.
	Each(dir engine.Direction, weights bool, f func(v uint64, nbrs []uint64, ws []float64)) error
	// GatherEach calls f(i, ...) with the dir-neighbors of vids[i], for
	// every i in order (vertices without edges get an empty list).
	GatherEach(vids []uint64, dir engine.Direction, weights bool, f func(i int, nbrs []uint64, ws []float64)) error
	// GatherEachLimit is GatherEach reading at most maxEdges edges: it stops
	// before the vertex whose edges would pass the limit and returns how
	// many vertices it did and the edges it read.
	GatherEachLimit(vids []uint64, dir engine.Direction, weights bool, maxEdges int,
		f func(i int, nbrs []uint64, ws []float64)) (done, read int, err error)
}

// newScanBuffer is the buffer of a whole-graph scan: up to 8,192 vertices
// and 256K edges (2 MiB, 4 with weights) per call into the store.
func newScanBuffer(weights bool) *engine.ScanBuffer {
	return engine.NewScanBuffer(8192, 1<<18, weights)
}

var (
	scanBufs   = [2]sync.Pool{{New: func() any { return newScanBuffer(false) }}, {New: func() any { return newScanBuffer(true) }}}
	gatherBufs = [2]sync.Pool{{New: func() any { return engine.NewGatherBuffer(1<<16, false) }}, {New: func() any { return engine.NewGatherBuffer(1<<16, true) }}}
)

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Each implements Graph: a whole-space scan, many vertices per call into
// the store.
func (v *StaticView) Each(dir engine.Direction, weights bool, f func(u uint64, nbrs []uint64, ws []float64)) error {
	buf := scanBufs[b2i(weights)].Get().(*engine.ScanBuffer)
	defer scanBufs[b2i(weights)].Put(buf)
	return v.Ranges(func(lo, hi uint64) error {
		for lo < hi {
			next, err := v.Scan(lo, hi, dir, buf)
			if err != nil {
				return err
			}
			for i, u := range buf.Vertices {
				b, e := buf.Offsets[i], buf.Offsets[i+1]
				var ws []float64
				if weights {
					ws = buf.Weights[b:e]
				}
				f(u, buf.Dsts[b:e], ws)
			}
			lo = next
		}
		return nil
	})
}

// GatherEach implements Graph: many vertices per call into the store.
func (v *StaticView) GatherEach(vids []uint64, dir engine.Direction, weights bool, f func(i int, nbrs []uint64, ws []float64)) error {
	buf := gatherBufs[b2i(weights)].Get().(*engine.GatherBuffer)
	defer gatherBufs[b2i(weights)].Put(buf)
	for at := 0; at < len(vids); {
		done, err := v.Gather(vids[at:], dir, buf)
		if err != nil {
			return err
		}
		for i := 0; i < done; i++ {
			b, e := buf.Offsets[i], buf.Offsets[i+1]
			var ws []float64
			if weights {
				ws = buf.Weights[b:e]
			}
			f(at+i, buf.Dsts[b:e], ws)
		}
		at += done
	}
	return nil
}
