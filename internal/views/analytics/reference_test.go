package analytics

// The oracle every analytic is checked against lives in internal/testref:
// a plain map of edges and single-threaded reference algorithms over it,
// sharing no code with the analytics.

import "github.com/graphtide/graphtide/internal/testref"

type ekey = [2]uint64

type edges = testref.Edges

var (
	refBFS      = testref.BFS
	refPageRank = testref.PageRank
	refPRSteps  = testref.PageRankSteps
	refSSSP     = testref.Dijkstra
	refDegrees  = testref.Degrees
	refCycles   = testref.Cycles
	refKey      = testref.CycleKey
)

// refWCC names every vertex with an edge by its component's smallest id.
func refWCC(g edges) map[uint64]uint64 {
	comp, _ := testref.Components(g)
	return comp
}
