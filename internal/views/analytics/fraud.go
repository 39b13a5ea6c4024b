package analytics

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
//
// One pull is bounded in time (PullTimeout) and memory (PullMemoryMiB, the
// searches' paths, cached neighbor lists, distances and cycles found): a
// pull over either stops searching, reports the cycles found so far (each
// a real new cycle: a cut pull may miss cycles, never invents one), counts
// itself in cutShort and returns, releasing its views; the next pull goes
// on from the next operations.
type fraud struct {
	spec   Spec
	alerts func([]Alert)
	now    func() time.Time // the clock of the pull deadline (tests replace it)
	// maxPullBytes is PullMemoryMiB in bytes (tests lower it).
	maxPullBytes int64

	mu        sync.RWMutex
	fanin     *windowCounter // Protected by mu.
	seq       uint64         // Protected by mu.
	cycles    uint64         // reported so far; Protected by mu.
	truncated uint64         // searches cut short; Protected by mu.
	cutShort  uint64         // pulls cut short; Protected by mu.

	pullBytes atomic.Int64 // memory the pull in progress holds (0 between pulls)
}

func newFraud(s Spec, alerts func([]Alert)) *fraud {
	return &fraud{spec: s, alerts: alerts, now: time.Now, maxPullBytes: int64(s.PullMemoryMiB) << 20,
		fanin: newWindowCounter(true, s.Threshold)}
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
	lim := pullLimits{deadline: a.now().Add(a.spec.PullTimeout), now: a.now, maxBytes: a.maxPullBytes, live: &a.pullBytes}
	cyc, truncated, cut, err := newCycles(ctx, u, a.spec.MaxCycle, a.spec.SearchBudget, lim)
	a.pullBytes.Store(0)
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
	if cut {
		a.cutShort++
	}
	a.mu.Unlock()
	if len(al) > 0 && a.alerts != nil {
		a.alerts(al)
	}
	return false, nil
}

// pullLimits bound one pull's searches.
type pullLimits struct {
	deadline time.Time
	now      func() time.Time
	maxBytes int64
	live     *atomic.Int64 // where the searches' memory is published (for metrics)
}

// Memory the searches account for, per item (Go's slice headers, map
// entries and their overhead, rounded up).
const (
	cachedListBytes = 64 // a cached neighbor list, besides 8 bytes per neighbor
	distEntryBytes  = 40 // one entry of a distance map
	pathBytes       = 24 // one path, besides 8 bytes per vertex
	cycleBytes      = 96 // one cycle found and its key, besides 16 bytes per vertex
	clockEvery      = 256
)

// newCycles returns the cycles of u.View of length <= k that hold an edge
// absent from u.Old, each once, as vertex lists starting at the source of
// the latest new edge on it, in the order those edges arrived. cut reports
// that the pull's limits stopped it: the cycles returned are real new
// cycles, but the new edges not yet searched were skipped.
func newCycles(ctx context.Context, u *views.Update, k, budget int, lim pullLimits) (found [][]uint64, truncated int, cut bool, err error) {
	n := net(u.Edges)
	if len(n.Upserts) == 0 {
		return nil, 0, false, nil
	}
	pairs := make([][2]uint64, len(n.Upserts))
	for i, op := range n.Upserts {
		pairs[i] = [2]uint64{op.Src, op.Dst}
	}
	existed, err := edgeWeights(u.Old, pairs)
	if err != nil {
		return nil, 0, false, err
	}
	var fresh [][2]uint64
	for _, p := range pairs {
		if _, ok := existed[p]; !ok {
			fresh = append(fresh, p)
		}
	}
	s := &cycleSearch{g: u.View, k: k, budget: budget, lim: lim, out: map[uint64][]uint64{}, dists: map[uint64]map[uint64]int{}}
	seen := map[string]bool{}
	// Latest new edge first, so that a cycle is credited to the edge that
	// closed it last.
	for i := len(fresh) - 1; i >= 0 && !s.cut; i-- {
		if err := ctx.Err(); err != nil {
			return nil, 0, false, err
		}
		if lim.now != nil && lim.now().After(lim.deadline) {
			s.cut = true
			break
		}
		cs, short, err := s.through(fresh[i][0], fresh[i][1])
		if err != nil {
			return nil, 0, false, err
		}
		if short && !s.cut {
			truncated++
		}
		for _, c := range cs {
			key := canonicalKey(c)
			if !seen[key] {
				seen[key] = true
				found = append(found, c)
				s.charge(int64(cycleBytes + 16*len(c)))
			}
		}
	}
	slices.Reverse(found)
	return found, truncated, s.cut, nil
}

// cycleSearch enumerates cycles through one edge at a time in a graph,
// caching out-neighbor lists across edges.
//
// INVARIANT: bytes is at least the memory held by out, dists, the paths
// being extended and the cycles found (by the constants above); once it
// passes lim.maxBytes, or the clock passes lim.deadline, cut is set and
// every search returns at once.
type cycleSearch struct {
	g      views.Graph
	k      int
	budget int
	lim    pullLimits
	out    map[uint64][]uint64       // out-neighbors read so far
	cached int                       // entries held in out
	dists  map[uint64]map[uint64]int // distTo per closing vertex; nil entry: its search was cut
	bytes  int64                     // accounted memory
	steps  int                       // work done, for reading the clock every clockEvery steps
	cut    bool
}

// charge accounts n bytes (negative: released) and reports whether the
// pull must stop.
func (s *cycleSearch) charge(n int64) bool {
	s.bytes += n
	if s.lim.live != nil {
		s.lim.live.Store(s.bytes)
	}
	if s.lim.maxBytes > 0 && s.bytes > s.lim.maxBytes {
		s.cut = true
	}
	return s.cut
}

// tick counts one step of work and reports whether the pull must stop.
func (s *cycleSearch) tick() bool {
	if s.steps++; s.steps%clockEvery == 0 && s.lim.now != nil && s.lim.now().After(s.lim.deadline) {
		s.cut = true
	}
	return s.cut
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
		s.charge(-int64(s.cached)*8 - int64(len(s.out))*cachedListBytes)
		clear(s.out)
		s.cached = 0
	}
	if len(miss) == 0 {
		return nil
	}
	// Read no more neighbors than the memory left allows.
	room := maxCachedNeighbors
	if s.lim.maxBytes > 0 {
		room = int(min(int64(room), max(0, (s.lim.maxBytes-s.bytes)/8)))
	}
	done, _, err := s.g.GatherEachLimit(miss, engine.Out, false, room, func(i int, nb []uint64, _ []float64) {
		s.out[miss[i]] = slices.Clone(nb)
		s.cached += len(nb) + 1
		s.charge(int64(8*len(nb) + cachedListBytes))
	})
	if err == nil && done < len(miss) {
		s.cut = true // a neighbor list would not fit
	}
	return err
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
	for d := 1; d <= limit && len(frontier) > 0 && dist != nil && !s.cut; d++ {
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
					s.charge(distEntryBytes)
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
	if err != nil || s.cut {
		return nil, false, err
	}
	if dist != nil {
		if d, ok := dist[b]; !ok || 1+d > s.k {
			return nil, false, nil // b cannot reach a in time
		}
	}
	var found [][]uint64
	paths := [][]uint64{{b}} // simple paths from b, a not on them
	var held int64           // bytes of paths, charged
	defer func() { s.charge(-held) }()
	spent := 0
	for len(paths) > 0 {
		ends := make([]uint64, len(paths))
		for i, p := range paths {
			ends[i] = p[len(p)-1]
		}
		if err := s.fetch(ends); err != nil || s.cut {
			return found, s.cut, err
		}
		var next [][]uint64
		var nextHeld int64
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
				nb := int64(pathBytes + 8*(L+1))
				nextHeld += nb
				if s.charge(nb) || s.tick() {
					s.charge(-nextHeld)
					return found, true, nil
				}
				next = append(next, append(slices.Clip(p), w))
			}
		}
		s.charge(-held)
		paths, held = next, nextHeld
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
	Cycles    uint64         `json:"cycles"`          // new cycles reported so far
	Truncated uint64         `json:"truncated"`       // searches cut short by search_budget
	CutShort  uint64         `json:"pulls_cut_short"` // pulls cut short by pull_timeout or pull_memory_mib
	FanIn     MonitorSummary `json:"fan_in"`
}

func (a *fraud) Summary() any {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return FraudSummary{Seq: a.seq, MaxCycle: a.spec.MaxCycle, Cycles: a.cycles, Truncated: a.truncated, CutShort: a.cutShort,
		FanIn: summarize(a.seq, a.spec.Threshold, a.fanin.aboveCounts())}
}

func (a *fraud) Vertex(v uint64) (any, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	n, ok := a.fanin.count[v]
	return VertexValue{v, float64(n)}, ok
}

// MemoryBytes is the size of the fan-in window and of the pull in
// progress.
func (a *fraud) MemoryBytes() int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.fanin.bytes() + a.pullBytes.Load()
}

// PullsCutShort counts the pulls cut short by the pull's limits.
func (a *fraud) PullsCutShort() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.cutShort
}
