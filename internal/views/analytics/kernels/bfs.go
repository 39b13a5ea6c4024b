package kernels

import (
	"context"
	"math/bits"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/views"
)

// BFS: direction-optimizing (Beamer, Asanović, Patterson, SC'12).

// Switching heuristics of GAPBS's bfs.cc: go bottom-up when the frontier's
// out-edges are more than the unexplored edges / bfsAlpha, back top-down
// when the frontier holds fewer than n / bfsBeta vertices and shrinks.
const (
	bfsAlpha = 15
	bfsBeta  = 18
)

// BFS returns the level of every index from root (-1: unreached)
// and a parent of every index reached but the root: an in-neighbor one
// level nearer (-1 for the root and the others; GAPBS's bfs returns
// such parents, with the root its own).
func BFS(ctx context.Context, g *views.Topo, root int32) (level, parent []int32, err error) {
	var sources []int32
	if root >= 0 && int(root) < g.Len() {
		sources = []int32{root}
	}
	b, err := levelsFrom(ctx, g, sources, nil, true)
	if err != nil {
		return nil, nil, err
	}
	return b.level, b.parent, nil
}

// ComponentLevels returns every index's level from the sources (0; -1:
// unreached), searching edges of both directions between indexes of one
// label only: wcc's support forest, whose labels are its components.
func ComponentLevels(ctx context.Context, g *views.Topo, sources, label []int32) ([]int32, error) {
	b, err := levelsFrom(ctx, g, sources, label, false)
	if err != nil {
		return nil, err
	}
	return b.level, nil
}

// Index is v's index in g, -1 when g does not index it.
func Index(g *views.Topo, v uint64) int32 {
	if i, ok := g.IDs.Index(v); ok {
		return int32(i)
	}
	return -1
}

// levels is one breadth-first search: along out-edges (label nil; a
// bottom-up step searches the in-lists), or along edges of both
// directions between vertices of one label (wcc's support forest).
type levels struct {
	g     *views.Topo
	label []int32
	level []int32
	// parent (when asked for): the vertex each reached one was found
	// from, -1 for the sources and the unreached. Written once per
	// vertex, by the worker whose CAS set its level (top-down) or that
	// owns it (bottom-up).
	parent []int32
	// The search's buffers: each worker's finds (local, one per worker,
	// so their count is the workers the search runs on), and the
	// bottom-up steps' frontier and next level, as bitmaps.
	local       [][]int32
	front, next []uint64
}

func (b *levels) deg(u int32) int64 {
	d := int64(b.g.Out.Deg(u))
	if b.label != nil {
		d += int64(b.g.In.Deg(u))
	}
	return d
}

// levelsFrom finds every index's level from the sources (level 0; -1:
// unreached), direction-optimizing, on every core, and with parents set
// each one's parent.
func levelsFrom(ctx context.Context, g *views.Topo, sources []int32, label []int32, parents bool) (*levels, error) {
	n := g.Len()
	b := &levels{g: g, label: label, level: Filled(Workers(), n, int32(-1))}
	if parents {
		b.parent = Filled(Workers(), n, int32(-1))
	}
	queue := append([]int32(nil), sources...)
	edgesToCheck := g.Out.Edges()
	if label != nil {
		edgesToCheck *= 2
	}
	scout := int64(0)
	for _, s := range sources {
		b.level[s] = 0
		scout += b.deg(s)
	}
	b.local = make([][]int32, Workers())
	b.front = make([]uint64, (n+63)/64)
	b.next = make([]uint64, (n+63)/64)
	for depth := int32(0); len(queue) > 0; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if scout > edgesToCheck/bfsAlpha {
			var err error
			if queue, depth, err = b.bottomUpSteps(ctx, queue, depth); err != nil {
				return nil, err
			}
			scout = 1
			continue
		}
		edgesToCheck -= scout
		queue, scout = b.topDown(queue, depth)
		depth++
	}
	return b, nil
}

// bottomUpSteps runs bottom-up steps from the frontier queue at depth
// until the frontier is empty, or small and shrinking (GAPBS's switch
// back), and returns the last level found as a queue, and its depth.
func (b *levels) bottomUpSteps(ctx context.Context, queue []int32, depth int32) ([]int32, int32, error) {
	front, next := b.front, b.next
	clear(front)
	for _, v := range queue {
		front[v/64] |= 1 << (v % 64)
	}
	awake := int64(len(queue))
	for {
		old := awake
		awake = b.bottomUp(front, next, depth)
		depth++
		front, next = next, front
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		if awake == 0 || (awake < old && awake <= int64(b.g.Bound())/bfsBeta) {
			break
		}
	}
	b.front, b.next = front, next
	// Back to a queue of the last level found.
	local := b.local
	for k := range local {
		local[k] = local[k][:0]
	}
	ParallelFor(len(local), len(front), 1<<10, func(w, lo, hi int) {
		for x := lo; x < hi; x++ {
			for bt := front[x]; bt != 0; bt &= bt - 1 {
				local[w] = append(local[w], int32(x*64+bits.TrailingZeros64(bt)))
			}
		}
	})
	queue = queue[:0]
	for _, l := range local {
		queue = append(queue, l...)
	}
	return queue, depth, nil
}

// topDown runs one top-down step from the frontier queue at depth: every
// unreached out-neighbor (with a label, every neighbor of the same label)
// of a vertex of queue joins the next level. It returns the next level
// (in queue's array) and the edges out of it (scout).
func (b *levels) topDown(queue []int32, depth int32) ([]int32, int64) {
	g, label, level, parent, local := b.g, b.label, b.level, b.parent, b.local
	var sc atomic.Int64
	for k := range local {
		local[k] = local[k][:0]
	}
	d := depth + 1
	ParallelFor(len(local), len(queue), 256, func(w, lo, hi int) {
		buf := local[w]
		s := int64(0)
		for _, u := range queue[lo:hi] {
			nb := g.Out.Nbrs(u)
			for pass := 0; ; pass++ {
				for _, v := range nb {
					p := &level[v]
					if atomic.LoadInt32(p) < 0 && (label == nil || label[v] == label[u]) && atomic.CompareAndSwapInt32(p, -1, d) {
						if parent != nil {
							parent[v] = u
						}
						buf = append(buf, v)
						s += b.deg(v)
					}
				}
				if label == nil || pass == 1 {
					break
				}
				nb = g.In.Nbrs(u)
			}
		}
		local[w] = buf
		sc.Add(s)
	})
	queue = queue[:0]
	for _, l := range local {
		queue = append(queue, l...)
	}
	return queue, sc.Load()
}

// bottomUp runs one bottom-up step: every unreached vertex with a parent
// in front joins next at depth+1. It returns how many did. Each worker
// owns whole words of next (chunks are multiples of 64), so the bitmap
// needs no atomics; level[i] is written only by i's owner.
func (b *levels) bottomUp(front, next []uint64, depth int32) int64 {
	clear(next)
	var awake atomic.Int64
	level, label, parent := b.level, b.label, b.parent
	// (No index from g.Bound() up has an in- or out-neighbor.)
	ParallelFor(Workers(), b.g.Bound(), 1<<12, func(_, lo, hi int) {
		c := int64(0)
		in, out := b.g.In.Cursor(), b.g.Out.Cursor()
		for u := lo; u < hi; u++ {
			if level[u] >= 0 {
				continue
			}
			nb := in.Nbrs(int32(u))
		search:
			for pass := 0; ; pass++ {
				for _, v := range nb {
					if front[v/64]&(1<<(v%64)) != 0 && (label == nil || label[v] == label[u]) {
						level[u] = depth + 1
						if parent != nil {
							parent[u] = v
						}
						next[u/64] |= 1 << (u % 64)
						c++
						break search
					}
				}
				if label == nil || pass == 1 {
					break
				}
				nb = out.Nbrs(int32(u))
			}
		}
		awake.Add(c)
	})
	return awake.Load()
}
