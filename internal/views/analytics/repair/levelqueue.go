package repair

import "slices"

// levelQueue hands out (level, vertex) pairs in nondecreasing order of
// level at O(1) a pair, for the searches whose every length is 1 (bfs's
// and unweighted sssp's repairs, wcc's support forest), where a binary
// heap costs O(log n) a pair.
//
// Use: push seeds at any levels, then pop; once popping has begun a push
// is at the level being popped or the next one (a unit length). Any other
// push is still served in order, through a heap kept for that case (no
// unit search makes one). Once pop reports empty, pushes are seeds again.
//
// INVARIANT: while popping, cur[ci:] are pairs at level, next those at
// level+1 (both empty when later holds a pair below level), seeds[si:]
// (sorted, each at level or more) and later the rest.
type levelQueue struct {
	seeds   []uint64 // level<<32 | vertex, sorted when popping starts
	si      int
	popping bool
	level   int32
	cur     []int32
	ci      int
	next    []int32
	later   distHeap[int32]
	count   []int32 // the counting sort's histogram, reused
}

// reset empties q, keeping its buffers.
func (q *levelQueue) reset() {
	q.seeds, q.si, q.popping = q.seeds[:0], 0, false
	q.cur, q.ci, q.next = q.cur[:0], 0, q.next[:0]
	q.later.d, q.later.v = q.later.d[:0], q.later.v[:0]
}

// push queues v at level l (l >= 0).
func (q *levelQueue) push(l, v int32) {
	switch {
	case !q.popping:
		q.seeds = append(q.seeds, uint64(l)<<32|uint64(uint32(v)))
	case l < q.level || q.later.Len() > 0 && q.later.d[0] < q.level:
		// Below the level popped (no unit search does this), or since
		// one was: what is queued waits in the heap, which serves it in
		// order.
		for _, x := range q.cur[q.ci:] {
			q.later.push(q.level, x)
		}
		for _, x := range q.next {
			q.later.push(q.level+1, x)
		}
		q.cur, q.ci, q.next = q.cur[:0], 0, q.next[:0]
		q.later.push(l, v)
	case l == q.level:
		q.cur = append(q.cur, v)
	case l == q.level+1:
		q.next = append(q.next, v)
	default:
		q.later.push(l, v)
	}
}

// pop returns the next pair, lowest level first; ok is false when q is
// empty.
func (q *levelQueue) pop() (l, v int32, ok bool) {
	for {
		if q.ci < len(q.cur) {
			v = q.cur[q.ci]
			q.ci++
			return q.level, v, true
		}
		if !q.popping {
			q.sortSeeds()
			q.popping = true
		}
		// The next level: level+1 when next holds some, else the
		// lowest seed or later pair.
		nl, have := q.level+1, len(q.next) > 0
		if q.si < len(q.seeds) {
			if sl := int32(q.seeds[q.si] >> 32); !have || sl < nl {
				nl, have = sl, true
			}
		}
		if q.later.Len() > 0 && (!have || q.later.d[0] < nl) {
			nl, have = q.later.d[0], true
		}
		if !have {
			q.reset() // empty: the next pushes are seeds
			return 0, 0, false
		}
		if nl == q.level+1 {
			q.cur, q.next = q.next, q.cur[:0]
		} else {
			q.cur = q.cur[:0] // next is empty: nl < level+1 only then
		}
		q.ci, q.level = 0, nl
		for q.si < len(q.seeds) && int32(q.seeds[q.si]>>32) == nl {
			q.cur = append(q.cur, int32(uint32(q.seeds[q.si])))
			q.si++
		}
		for q.later.Len() > 0 && q.later.d[0] == nl {
			_, x := q.later.pop()
			q.cur = append(q.cur, x)
		}
	}
}

// popLevel returns every pair queued at the lowest level (a push at that
// level after this call is returned by the next); ok is false when q is
// empty. The slice is valid until the next push or pop.
func (q *levelQueue) popLevel() (l int32, vs []int32, ok bool) {
	if l, _, ok = q.pop(); !ok {
		return 0, nil, false
	}
	vs = q.cur[q.ci-1 : len(q.cur) : len(q.cur)]
	q.ci = len(q.cur)
	return l, vs, true
}

// sortSeeds sorts the seeds by level: by counting when their levels span
// no more than a few times their number (the usual case: a graph's
// levels are few), else by comparison.
func (q *levelQueue) sortSeeds() {
	if len(q.seeds) < 2 {
		return
	}
	lo, hi := q.seeds[0]>>32, q.seeds[0]>>32
	for _, s := range q.seeds {
		lo, hi = min(lo, s>>32), max(hi, s>>32)
	}
	span := int(hi - lo + 1)
	if span > 4*len(q.seeds)+1024 {
		slices.Sort(q.seeds)
		return
	}
	if cap(q.count) < span+1 {
		q.count = make([]int32, span+1)
	}
	count := q.count[:span+1]
	clear(count)
	for _, s := range q.seeds {
		count[s>>32-lo+1]++
	}
	for i := 1; i <= span; i++ {
		count[i] += count[i-1]
	}
	// count[k]: where level lo+k starts. The sorted seeds go to the
	// front of the buffer's second half (grown as needed), then back.
	n := len(q.seeds)
	q.seeds = slices.Grow(q.seeds, n)[:2*n]
	out := q.seeds[n:]
	for _, s := range q.seeds[:n] {
		k := s>>32 - lo
		out[count[k]] = s
		count[k]++
	}
	copy(q.seeds[:n], out)
	q.seeds = q.seeds[:n]
}

func (q *levelQueue) bytes() int64 {
	return SliceBytes(q.seeds) + SliceBytes(q.cur) + SliceBytes(q.next) + SliceBytes(q.later.d) +
		SliceBytes(q.later.v) + SliceBytes(q.count)
}
