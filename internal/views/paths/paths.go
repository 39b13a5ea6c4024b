// Package paths finds shortest paths in a view: by hops (BFS, and
// bidirectional when the view has in-edges) or by weight (Dijkstra, and
// Bellman-Ford rounds when the hops are bounded).
//
// What it promises: every search reads one view (one snapshot), reads at
// most its budget of edges before it gives up with a *BudgetError, stops
// when its context ends, and returns a shortest path when it finds one.
package paths

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
)

// DefaultBudget is how many edges one path search may read when
// Options.Budget is 0.
const DefaultBudget = 1_000_000

// Options choose and bound a shortest-path search.
type Options struct {
	// Weighted: the shortest path by total weight (Dijkstra; weights must
	// not be negative) instead of by hops (BFS).
	Weighted bool
	// MaxDepth: the path may have at most this many hops (0: no bound).
	MaxDepth int
	// Budget: the most edges the search may read before it gives up with
	// a *BudgetError (0: DefaultBudget).
	Budget int64
}

// Result is the answer of a path search.
type Result struct {
	Found     bool
	Length    float64  // hops, or the total weight when weighted
	Path      []uint64 // from, ..., to; nil when not found
	EdgesRead int64    // edges the search read
}

// BudgetError is returned by Find when the search read more edges than
// its budget without settling the answer.
type BudgetError struct {
	Budget, EdgesRead int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("path search read %d edges, over its budget of %d, without settling the answer: bound it with max_depth, or raise the budget (serve --http-path-budget)",
		e.EdgesRead, e.Budget)
}

// NegativeWeightError is returned by a weighted search that meets an edge
// of negative weight: shortest paths by weight need non-negative weights.
type NegativeWeightError struct {
	Src, Dst uint64
	Weight   float64
}

func (e *NegativeWeightError) Error() string {
	return fmt.Sprintf("weighted paths need non-negative weights, but edge %d->%d has weight %v", e.Src, e.Dst, e.Weight)
}

// gatherChunk is how many vertices one gather call reads; the deadline is
// checked between chunks.
const gatherChunk = 1024

// errFound ends a gather early: the search has its answer.
var errFound = errors.New("found")

// Find finds a shortest directed path from one vertex to another in g
// (a static view: every read sees the same snapshot).
//
//   - Unweighted: BFS over out-edges level by level, many vertices per
//     read; when g has in-edges, bidirectional (the smaller frontier is
//     expanded, forward over out-edges or backward over in-edges), which
//     reads far fewer edges on large graphs.
//   - Weighted: Dijkstra from the source, stopping when the target is
//     settled; with MaxDepth, rounds of Bellman-Ford relaxation instead
//     (round k settles the lightest paths of at most k hops), because
//     Dijkstra cannot bound hops.
//
// It returns a *BudgetError once it has read more than the budget's edges
// without an answer, ctx's error once ctx ends, and (weighted) a
// *NegativeWeightError for a negative weight on its way.
func Find(ctx context.Context, g views.Graph, from, to uint64, o Options) (Result, error) {
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.MaxDepth < 0 {
		return Result{}, fmt.Errorf("max depth must not be negative, got %d", o.MaxDepth)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if from == to {
		return Result{Found: true, Path: []uint64{from}}, nil
	}
	s := &search{ctx: ctx, g: g, budget: o.Budget}
	var res Result
	var err error
	switch {
	case o.Weighted && o.MaxDepth > 0:
		res, err = s.hopBounded(from, to, o.MaxDepth)
	case o.Weighted:
		res, err = s.dijkstra(from, to)
	case g.HasIn():
		res, err = s.bidirectional(from, to, o.MaxDepth)
	default:
		res, err = s.bfs(from, to, o.MaxDepth)
	}
	res.EdgesRead = s.read
	return res, err
}

type search struct {
	ctx    context.Context
	g      views.Graph
	budget int64
	read   int64 // edges read so far
}

// gather calls f with the dir-neighbors of each of vids, in order, reading
// gatherChunk vertices per call into the view, checking the deadline
// before each chunk. It never reads an edge past the budget: a *BudgetError
// ends it before the vertex that would cross it. f's error ends the gather
// and is returned.
func (s *search) gather(vids []uint64, dir engine.Direction, weights bool, f func(i int, nbrs []uint64, ws []float64) error) error {
	for at := 0; at < len(vids); at += gatherChunk {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		var ferr error
		chunk := vids[at:min(at+gatherChunk, len(vids))]
		visit := func(i int, nbrs []uint64, ws []float64) {
			if ferr == nil {
				s.read += int64(len(nbrs))
				ferr = f(at+i, nbrs, ws)
			}
		}
		// Read no edge past the budget: stop before the vertex that would
		// cross it.
		done, _, err := s.g.GatherEachLimit(chunk, dir, weights, int(min(s.budget-s.read, 1<<40)), visit)
		if err != nil {
			return err
		}
		if ferr != nil {
			return ferr
		}
		if done < len(chunk) {
			return &BudgetError{Budget: s.budget, EdgesRead: s.read}
		}
	}
	return nil
}

// walk follows links from v until it reaches end, appending each vertex.
func walk(path []uint64, v, end uint64, link func(uint64) uint64) []uint64 {
	for v != end {
		v = link(v)
		path = append(path, v)
	}
	return path
}

// bfs searches forward over out-edges, one level per round; the first
// time it sees the target it has a shortest path.
func (s *search) bfs(from, to uint64, maxDepth int) (Result, error) {
	parent := map[uint64]uint64{from: from}
	frontier := []uint64{from}
	for depth := 0; len(frontier) > 0 && (maxDepth == 0 || depth < maxDepth); depth++ {
		var next []uint64
		err := s.gather(frontier, engine.Out, false, func(i int, nbrs []uint64, _ []float64) error {
			for _, w := range nbrs {
				if _, seen := parent[w]; seen {
					continue
				}
				parent[w] = frontier[i]
				if w == to {
					return errFound
				}
				next = append(next, w)
			}
			return nil
		})
		if errors.Is(err, errFound) {
			path := walk([]uint64{to}, to, from, func(v uint64) uint64 { return parent[v] })
			slices.Reverse(path)
			return Result{Found: true, Length: float64(depth + 1), Path: path}, nil
		}
		if err != nil {
			return Result{}, err
		}
		frontier = next
	}
	return Result{}, nil
}

// mark is what a bidirectional search knows of a vertex it has seen: the
// neighbor it was reached through (towards its side's root) and its depth.
type mark struct {
	link  uint64
	depth int
}

// bidirectional searches forward from the source over out-edges and
// backward from the target over in-edges, a whole level of the smaller
// frontier per round.
//
// INVARIANT (between rounds): fwd holds exactly the vertices within df
// hops of the source, bwd exactly those within db hops of the target, and
// they are disjoint; so every path is longer than df+db. A vertex seen by
// both sides while a level is expanded (say forward, to df+1) therefore
// closes a path of df+1+db(x) <= df+1+db hops, which is no more than any
// path: the first meeting gives a shortest path.
func (s *search) bidirectional(from, to uint64, maxDepth int) (Result, error) {
	fwd := map[uint64]mark{from: {from, 0}}
	bwd := map[uint64]mark{to: {to, 0}}
	ff, bf := []uint64{from}, []uint64{to}
	df, db := 0, 0
	for len(ff) > 0 && len(bf) > 0 && (maxDepth == 0 || df+db < maxDepth) {
		forward := len(ff) <= len(bf)
		frontier, dir, mine, other, depth := ff, engine.Out, fwd, bwd, df
		if !forward {
			frontier, dir, mine, other, depth = bf, engine.In, bwd, fwd, db
		}
		var next []uint64
		var meet uint64
		err := s.gather(frontier, dir, false, func(i int, nbrs []uint64, _ []float64) error {
			for _, w := range nbrs {
				if _, seen := mine[w]; seen {
					continue
				}
				mine[w] = mark{frontier[i], depth + 1}
				if _, ok := other[w]; ok {
					meet = w
					return errFound
				}
				next = append(next, w)
			}
			return nil
		})
		if errors.Is(err, errFound) {
			path := walk([]uint64{meet}, meet, from, func(v uint64) uint64 { return fwd[v].link })
			slices.Reverse(path)
			path = walk(path, meet, to, func(v uint64) uint64 { return bwd[v].link })
			return Result{Found: true, Length: float64(fwd[meet].depth + bwd[meet].depth), Path: path}, nil
		}
		if err != nil {
			return Result{}, err
		}
		if forward {
			ff, df = next, df+1
		} else {
			bf, db = next, db+1
		}
	}
	return Result{}, nil
}

func weightAt(ws []float64, j int) float64 {
	if ws == nil {
		return 1
	}
	return ws[j]
}

type distItem struct {
	v uint64
	d float64
}

type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].d < h[j].d }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// dijkstra settles vertices in order of distance from the source until it
// settles the target.
func (s *search) dijkstra(from, to uint64) (Result, error) {
	dist := map[uint64]float64{from: 0}
	parent := map[uint64]uint64{from: from}
	settled := map[uint64]bool{}
	h := &distHeap{{from, 0}}
	one := make([]uint64, 1)
	for h.Len() > 0 {
		it := heap.Pop(h).(distItem)
		if settled[it.v] || it.d > dist[it.v] {
			continue
		}
		settled[it.v] = true
		if it.v == to {
			path := walk([]uint64{to}, to, from, func(v uint64) uint64 { return parent[v] })
			slices.Reverse(path)
			return Result{Found: true, Length: it.d, Path: path}, nil
		}
		one[0] = it.v
		err := s.gather(one, engine.Out, true, func(_ int, nbrs []uint64, ws []float64) error {
			for j, w := range nbrs {
				wt := weightAt(ws, j)
				if wt < 0 {
					return &NegativeWeightError{Src: it.v, Dst: w, Weight: wt}
				}
				if d, ok := dist[w]; !ok || it.d+wt < d {
					dist[w], parent[w] = it.d+wt, it.v
					heap.Push(h, distItem{w, it.d + wt})
				}
			}
			return nil
		})
		if err != nil {
			return Result{}, err
		}
	}
	return Result{}, nil
}

// step records that a hop-bounded search lowered a vertex's distance to
// dist in round, through parent.
type step struct {
	round  int
	parent uint64
	dist   float64
}

// hopBounded finds the lightest path of at most maxDepth hops by rounds of
// Bellman-Ford relaxation from the vertices lowered in the previous round.
//
// INVARIANT: after round k, best[v] is the weight of the lightest path of
// at most k hops to v, and hist[v] lists, in round order, the rounds that
// lowered it (the last entry of a round is its value at the round's end).
// A path is read back from the target by taking, at each vertex, the entry
// of the latest round not after the one its successor was lowered in,
// minus one: exactly the value that successor's relaxation used.
func (s *search) hopBounded(from, to uint64, maxDepth int) (Result, error) {
	best := map[uint64]float64{from: 0}
	hist := map[uint64][]step{from: {{0, from, 0}}}
	frontier, fdist := []uint64{from}, []float64{0}
	rounds := 0
	for k := 1; k <= maxDepth && len(frontier) > 0; k++ {
		rounds = k
		var next []uint64
		err := s.gather(frontier, engine.Out, true, func(i int, nbrs []uint64, ws []float64) error {
			u, du := frontier[i], fdist[i]
			for j, w := range nbrs {
				wt := weightAt(ws, j)
				if wt < 0 {
					return &NegativeWeightError{Src: u, Dst: w, Weight: wt}
				}
				nd := du + wt
				if d, ok := best[w]; ok && nd >= d {
					continue
				}
				if d, ok := best[to]; ok && nd >= d {
					continue // weights are non-negative: no path on through w beats it
				}
				best[w] = nd
				hs := hist[w]
				if n := len(hs); n > 0 && hs[n-1].round == k {
					hs[n-1] = step{k, u, nd}
				} else {
					hist[w] = append(hs, step{k, u, nd})
					next = append(next, w)
				}
			}
			return nil
		})
		if err != nil {
			return Result{}, err
		}
		frontier, fdist = next, fdist[:0]
		for _, v := range next {
			fdist = append(fdist, best[v])
		}
	}
	d, ok := best[to]
	if !ok {
		return Result{}, nil
	}
	path := []uint64{to}
	for v, r := to, rounds; ; {
		hs := hist[v]
		i := len(hs) - 1
		for hs[i].round > r {
			i--
		}
		if hs[i].round == 0 {
			break
		}
		v, r = hs[i].parent, hs[i].round-1
		path = append(path, v)
	}
	slices.Reverse(path)
	return Result{Found: true, Length: d, Path: path}, nil
}
