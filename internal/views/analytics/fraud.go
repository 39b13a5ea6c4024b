package analytics

import (
	"context"
	"slices"
	"sync"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// fraud reports every new directed cycle of length at most MaxCycle closed
// by a newly ingested edge, and every vertex whose fan-in (upserts into
// it) within the window comes to exceed the threshold.
//
// A cycle is new when it exists in the graph after a pull and not before:
// it then holds at least one edge that did not exist before (a new edge).
// For each new edge (a, b) the search enumerates simple paths b -> ... -> a
// of at most MaxCycle-1 edges in the new graph, level by level, reading
// the out-neighbors of a whole level in one Gather; with in-edges it first
// finds each vertex's distance to a (backwards, up to MaxCycle-2) and
// extends a path only towards vertices that can still close it in time.
// A cycle holding several new edges is reported once. A search that would
// exceed SearchBudget path extensions stops and is counted as truncated.
type fraud struct {
	spec   Spec
	alerts func([]Alert)

	mu        sync.RWMutex
	fanin     *windowCounter // Protected by mu.
	seq       uint64         // Protected by mu.
	cycles    uint64         // reported so far; Protected by mu.
	truncated uint64         // searches cut short; Protected by mu.
}

func newFraud(s Spec, alerts func([]Alert)) *fraud {
	return &fraud{spec: s, alerts: alerts, fanin: newWindowCounter(true, s.Threshold)}
}

func (a *fraud) Spec() Spec { return a.spec }

func (a *fraud) Seq() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seq
}

// Recompute starts over: cycles already in g are not new, and the window
// restarts empty.
func (a *fraud) Recompute(ctx context.Context, g views.Graph) error {
	a.mu.Lock()
	a.fanin.reset()
	a.seq = g.Seq()
	a.mu.Unlock()
	return ctx.Err()
}

func (a *fraud) Update(ctx context.Context, u *views.Update) (bool, error) {
	if u.Lost {
		return true, a.Recompute(ctx, u.View)
	}
	seq := u.View.Seq()
	a.mu.Lock()
	crossed := a.fanin.apply(u.Edges, u.Expired)
	a.mu.Unlock()
	var al []Alert
	for _, x := range crossed {
		al = append(al, Alert{Analytic: a.spec.Name, Kind: "fan_in", Seq: seq, Vertex: x.Vertex, Value: x.Value, Threshold: a.spec.Threshold})
	}
	cyc, truncated, err := newCycles(ctx, u, a.spec.MaxCycle, a.spec.SearchBudget)
	if err != nil {
		return false, err
	}
	for _, c := range cyc {
		al = append(al, Alert{Analytic: a.spec.Name, Kind: "cycle", Seq: seq, Vertex: c[0], Cycle: c, Value: float64(len(c))})
	}
	a.mu.Lock()
	a.seq = seq
	a.cycles += uint64(len(cyc))
	a.truncated += uint64(truncated)
	a.mu.Unlock()
	if len(al) > 0 && a.alerts != nil {
		a.alerts(al)
	}
	return false, nil
}

// newCycles returns the cycles of u.View of length <= k that hold an edge
// absent from u.Old, each once, as vertex lists starting at the source of
// the latest new edge on it, in the order those edges arrived.
func newCycles(ctx context.Context, u *views.Update, k, budget int) ([][]uint64, int, error) {
	n := net(u.Edges)
	if len(n.Upserts) == 0 {
		return nil, 0, nil
	}
	pairs := make([][2]uint64, len(n.Upserts))
	for i, op := range n.Upserts {
		pairs[i] = [2]uint64{op.Src, op.Dst}
	}
	existed, err := edgeWeights(u.Old, pairs)
	if err != nil {
		return nil, 0, err
	}
	var fresh [][2]uint64
	for _, p := range pairs {
		if _, ok := existed[p]; !ok {
			fresh = append(fresh, p)
		}
	}
	s := &cycleSearch{g: u.View, k: k, budget: budget, out: map[uint64][]uint64{}, dists: map[uint64]map[uint64]int{}}
	seen := map[string]bool{}
	var found [][]uint64
	truncated := 0
	// Latest new edge first, so that a cycle is credited to the edge that
	// closed it last.
	for i := len(fresh) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		cs, cut, err := s.through(fresh[i][0], fresh[i][1])
		if err != nil {
			return nil, 0, err
		}
		if cut {
			truncated++
		}
		for _, c := range cs {
			key := canonicalKey(c)
			if !seen[key] {
				seen[key] = true
				found = append(found, c)
			}
		}
	}
	slices.Reverse(found)
	return found, truncated, nil
}

// cycleSearch enumerates cycles through one edge at a time in a graph,
// caching out-neighbor lists across edges.
type cycleSearch struct {
	g      views.Graph
	k      int
	budget int
	out    map[uint64][]uint64       // out-neighbors read so far
	cached int                       // entries held in out
	dists  map[uint64]map[uint64]int // distTo per closing vertex; nil entry: its search was cut
}

// maxCachedNeighbors bounds the out-neighbor entries one pull's searches
// keep (about 32 MiB); past it the cache starts over.
const maxCachedNeighbors = 1 << 22

// fetch loads the out-neighbors of every vertex of vs not yet cached.
func (s *cycleSearch) fetch(vs []uint64) error {
	var miss []uint64
	for _, v := range vs {
		if _, ok := s.out[v]; !ok {
			miss = append(miss, v)
		}
	}
	slices.Sort(miss)
	miss = slices.Compact(miss)
	if s.cached > maxCachedNeighbors {
		clear(s.out)
		s.cached = 0
	}
	return s.g.GatherEach(miss, engine.Out, false, func(i int, nb []uint64, _ []float64) {
		s.out[miss[i]] = slices.Clone(nb)
		s.cached += len(nb) + 1
	})
}

// distTo returns the distance to a (in edges, up to limit) of every vertex
// that reaches a within limit, reading in-edges, remembered per a for the
// pull. It returns nil without in-edges, or when the backward search would
// read more than the budget's worth of edges (the forward search then runs
// unpruned, within its own budget).
func (s *cycleSearch) distTo(a uint64, limit int) (map[uint64]int, error) {
	if !s.g.HasIn() {
		return nil, nil
	}
	if d, ok := s.dists[a]; ok {
		return d, nil
	}
	dist := map[uint64]int{a: 0}
	frontier := []uint64{a}
	read := 0
	for d := 1; d <= limit && len(frontier) > 0 && dist != nil; d++ {
		slices.Sort(frontier)
		var next []uint64
		err := s.g.GatherEach(frontier, engine.In, false, func(_ int, nb []uint64, _ []float64) {
			if read += len(nb); read > s.budget {
				dist = nil // cut: too costly to prune with
			}
			for _, w := range nb {
				if _, ok := dist[w]; !ok && dist != nil {
					dist[w] = d
					next = append(next, w)
				}
			}
		})
		if err != nil {
			return nil, err
		}
		frontier = next
	}
	s.dists[a] = dist
	return dist, nil
}

// through returns the simple cycles of length <= k that use edge (a, b),
// as [a, b, ...], and whether the budget cut the search short.
func (s *cycleSearch) through(a, b uint64) ([][]uint64, bool, error) {
	if a == b {
		return [][]uint64{{a}}, false, nil
	}
	if s.k < 2 {
		return nil, false, nil
	}
	dist, err := s.distTo(a, s.k-1)
	if err != nil {
		return nil, false, err
	}
	if dist != nil {
		if d, ok := dist[b]; !ok || 1+d > s.k {
			return nil, false, nil // b cannot reach a in time
		}
	}
	var found [][]uint64
	paths := [][]uint64{{b}} // simple paths from b, a not on them
	spent := 0
	for len(paths) > 0 {
		ends := make([]uint64, len(paths))
		for i, p := range paths {
			ends[i] = p[len(p)-1]
		}
		if err := s.fetch(ends); err != nil {
			return nil, false, err
		}
		var next [][]uint64
		for _, p := range paths {
			L := len(p) // the cycle a, p..., a has L+1 edges
			for _, w := range s.out[p[len(p)-1]] {
				if w == a {
					if L+1 <= s.k {
						found = append(found, append([]uint64{a}, p...))
					}
					continue
				}
				// Extending to w makes a path of L+1 vertices; closing
				// it takes at least dist[w] more edges.
				need := 1
				if dist != nil {
					d, ok := dist[w]
					if !ok {
						continue
					}
					need = d
				}
				if L+1+need > s.k || slices.Contains(p, w) {
					continue
				}
				if spent++; spent > s.budget {
					return found, true, nil
				}
				next = append(next, append(slices.Clip(p), w))
			}
		}
		paths = next
	}
	return found, false, nil
}

// canonicalKey names a cycle independently of where its list starts.
func canonicalKey(c []uint64) string {
	m := 0
	for i, v := range c {
		if v < c[m] {
			m = i
		}
	}
	b := make([]byte, 0, 8*len(c))
	for i := range c {
		v := c[(m+i)%len(c)]
		for s := 0; s < 64; s += 8 {
			b = append(b, byte(v>>s))
		}
	}
	return string(b)
}

// FraudSummary is the result of a fraud analytic.
type FraudSummary struct {
	Seq       uint64         `json:"seq"`
	MaxCycle  int            `json:"max_cycle"`
	Cycles    uint64         `json:"cycles"`    // new cycles reported so far
	Truncated uint64         `json:"truncated"` // searches cut short by the budget
	FanIn     MonitorSummary `json:"fan_in"`
}

func (a *fraud) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return FraudSummary{Seq: a.seq, MaxCycle: a.spec.MaxCycle, Cycles: a.cycles, Truncated: a.truncated,
		FanIn: summarize(a.seq, a.spec.Threshold, a.fanin.aboveCounts())}
}

func (a *fraud) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	n, ok := a.fanin.count[v]
	return VertexValue{v, float64(n)}, ok
}
