package analytics

import (
	"fmt"
	"math"
	"slices"

	"github.com/graphtide/graphtide/internal/checkpoint"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics/repair"
)

// stateSaver is a graph analytic whose state a checkpoint keeps: its
// per-vertex values over the topology's canonical space (views.CanonicalIDs),
// so that a restart lays them out again whatever its index.
type stateSaver interface {
	// saveState writes the state over c, the canonical space of the
	// topology at the state's seq, and returns that seq (the caller checks
	// that it is the topology's).
	saveState(e *checkpoint.Encoder, c views.IDSpace) (uint64, error)
	// loadState reads what saveState wrote into a new analytic's state,
	// over c, at seq; a value out of its range is reported through d.
	loadState(d *checkpoint.Decoder, c views.IDSpace, seq uint64) error
}

// onCanonical returns vals (over from) as values over c: a vertex of c
// not in from gets fill, a vertex of from not in c (one without edges) is
// dropped. c is a generation of its own, so resize moves every value by
// its id.
func onCanonical[T any](vals []T, from, c views.IDSpace, fill T) []T {
	return repair.Resize(vals, from, c, fill)[:c.Len()]
}

// loadRooted reads the root and the values of a single-source analytic,
// checking that the root is the analytic's and that ok holds for every
// value.
func loadRooted[T any](d *checkpoint.Decoder, c views.IDSpace, root uint64, read func() []T, ok func(T) bool) []T {
	if r := d.U64(); d.Err() == nil && r != root {
		d.Fail("saved for root %d, the analytic's root is %d", r, root)
		return nil
	}
	vals := read()
	if d.Err() != nil {
		return nil
	}
	if len(vals) != c.Len() {
		d.Fail("%d values for %d vertices", len(vals), c.Len())
		return nil
	}
	if i := slices.IndexFunc(vals, func(v T) bool { return !ok(v) }); i >= 0 {
		d.Fail("the value of vertex %d is out of range: %v", c.ID(i), vals[i])
		return nil
	}
	return vals
}

func (a *bfs) saveState(e *checkpoint.Encoder, c views.IDSpace) (uint64, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	e.U64(a.root)
	e.Int32s(onCanonical(a.st.level, a.st.ids, c, -1))
	return a.st.seq, e.Err()
}

func (a *bfs) loadState(d *checkpoint.Decoder, c views.IDSpace, seq uint64) error {
	level := loadRooted(d, c, a.root, d.Int32s, func(l int32) bool { return l >= -1 && int(l) < c.Len() })
	if d.Err() != nil {
		return d.Err()
	}
	a.swap(&bfsState{ids: c, level: level, seq: seq})
	return nil
}

func (a *sssp) saveState(e *checkpoint.Encoder, c views.IDSpace) (uint64, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	e.U64(a.root)
	e.Float64s(onCanonical(a.st.dist, a.st.ids, c, math.Inf(1)))
	e.Bytes([]byte(a.st.err))
	return a.st.seq, e.Err()
}

func (a *sssp) loadState(d *checkpoint.Decoder, c views.IDSpace, seq uint64) error {
	dist := loadRooted(d, c, a.root, d.Float64s, func(x float64) bool { return !math.IsNaN(x) })
	msg := d.Bytes()
	if d.Err() != nil {
		return d.Err()
	}
	a.swap(&ssspState{ids: c, dist: dist, seq: seq, err: string(msg)})
	return nil
}

func (a *pagerank) saveState(e *checkpoint.Encoder, c views.IDSpace) (uint64, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	st := a.st
	e.Float64s(onCanonical(st.Ranks(), st.IDs(), c, 0))
	e.U64(uint64(st.Present()))
	e.U64(uint64(st.Iterations))
	e.F64(st.Delta)
	return st.Seq, e.Err()
}

func (a *pagerank) loadState(d *checkpoint.Decoder, c views.IDSpace, seq uint64) error {
	rank := d.Float64s()
	present, iters, delta := d.U64(), d.U64(), d.F64()
	if d.Err() != nil {
		return d.Err()
	}
	switch {
	case len(rank) != c.Len():
		d.Fail("%d ranks for %d vertices", len(rank), c.Len())
	case slices.ContainsFunc(rank, func(x float64) bool { return !(x >= 0 && x <= 1+1e-9) }):
		d.Fail("a rank outside [0, 1]")
	case present > uint64(c.Len()) || iters > MaxMaxIterations || !(delta >= 0):
		d.Fail("run figures out of range: %d present, %d iterations, delta %v", present, iters, delta)
	}
	if d.Err() != nil {
		return d.Err()
	}
	// The first update builds the state on its graph (repair.Ranks.Restored);
	// the last recompute's residual was at most d times its last change.
	a.swap(repair.LoadRanks(c, rank, seq, int(present), int(iters), delta, a.spec.Damping*delta))
	return nil
}

// saveState writes each vertex's label, and at a label the component's
// size and smallest member, over c. Every vertex of a component of two or
// more has an edge, so it is in c; a vertex not in c is a component of its
// own, which is what c's new entries are. The support forest is not kept
// (an update after a delete builds it again).
func (a *wcc) saveState(e *checkpoint.Encoder, c views.IDSpace) (uint64, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	ids, sc, ss, sm := a.st.Labels()
	n := c.Len()
	comp, size, mn := make([]int32, n), make([]int32, n), make([]int32, n)
	for j := range comp {
		comp[j], size[j], mn[j] = int32(j), 1, int32(j)
	}
	at := func(i int32) (int32, error) {
		j, ok := c.Index(ids.ID(int(i)))
		if !ok {
			return 0, fmt.Errorf("analytics: wcc: vertex %d of a component of %d has no edge", ids.ID(int(i)), ss[sc[i]])
		}
		return int32(j), nil
	}
	for i, r := range sc {
		if ss[r] < 2 {
			continue // on its own: c's default
		}
		j, err := at(int32(i))
		if err != nil {
			return 0, err
		}
		rj, err := at(r)
		if err != nil {
			return 0, err
		}
		comp[j] = rj
		if int32(i) == r {
			mj, err := at(sm[r])
			if err != nil {
				return 0, err
			}
			size[rj], mn[rj] = ss[r], mj
		}
	}
	e.Int32s(comp)
	e.Int32s(size)
	e.Int32s(mn)
	return a.st.Sequence(), e.Err()
}

// loadState checks what it reads: every label is a vertex labelled by
// itself, a label's size counts its members, and its smallest member is
// one of them.
func (a *wcc) loadState(d *checkpoint.Decoder, c views.IDSpace, seq uint64) error {
	comp, size, mn := d.Int32s(), d.Int32s(), d.Int32s()
	if d.Err() != nil {
		return d.Err()
	}
	n := c.Len()
	if len(comp) != n || len(size) != n || len(mn) != n {
		d.Fail("%d, %d and %d values for %d vertices", len(comp), len(size), len(mn), n)
		return d.Err()
	}
	count := make([]int32, n)
	for j, r := range comp {
		if r < 0 || int(r) >= n || comp[r] != r {
			d.Fail("vertex %d is labelled %d, which is not a label", c.ID(j), r)
			return d.Err()
		}
		count[r]++
	}
	for j, r := range comp {
		if int32(j) != r {
			continue
		}
		m := mn[j]
		if size[j] != count[j] || m < 0 || int(m) >= n || comp[m] != r {
			d.Fail("the component labelled %d: size %d for %d members, smallest member %d", c.ID(j), size[j], count[j], m)
			return d.Err()
		}
	}
	a.swap(repair.LoadComponents(c, comp, size, mn, seq))
	return nil
}

// saveState writes the fraud monitor's fan-in window (fanWindow.save),
// its counters and its ring window (ringWindow.save). It has no
// per-vertex state over c.
func (a *fraud) saveState(e *checkpoint.Encoder, _ views.IDSpace) (uint64, error) {
	a.rmu.Lock()
	defer a.rmu.Unlock()
	a.mu.RLock()
	defer a.mu.RUnlock()
	a.win.save(e)
	e.U64(a.cycles)
	e.U64(a.truncated)
	e.U64(a.cutShort)
	a.rw.save(e)
	return a.seq, e.Err()
}

func (a *fraud) loadState(d *checkpoint.Decoder, _ views.IDSpace, seq uint64) error {
	w := loadFanWindow(d, a.win)
	cycles, truncated, cutShort := d.U64(), d.U64(), d.U64()
	if d.Err() != nil {
		return d.Err()
	}
	rw := loadRingWindow(d, a.rw)
	if d.Err() != nil {
		return d.Err()
	}
	a.rmu.Lock()
	a.rw = rw
	a.ringBytes.Store(rw.memory())
	a.rmu.Unlock()
	a.mu.Lock()
	a.win, a.seq, a.cycles, a.truncated, a.cutShort = w, seq, cycles, truncated, cutShort
	a.ringSum = RingSummary{Events: len(rw.held), Late: rw.late, Dropped: rw.dropped}
	a.mu.Unlock()
	return nil
}

// saveState writes the fan monitor's window (fanWindow.save). It has no
// per-vertex state over c: it needs no topology.
func (a *fan) saveState(e *checkpoint.Encoder, _ views.IDSpace) (uint64, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	a.win.save(e)
	return a.seq, e.Err()
}

func (a *fan) loadState(d *checkpoint.Decoder, _ views.IDSpace, seq uint64) error {
	w := loadFanWindow(d, a.win)
	if d.Err() != nil {
		return d.Err()
	}
	a.mu.Lock()
	a.win, a.seq = w, seq
	a.mu.Unlock()
	return nil
}

// saveState writes the degree monitor's degrees over c, then the vertices
// above its threshold with their degrees, by id.
func (a *degree) saveState(e *checkpoint.Encoder, c views.IDSpace) (uint64, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	e.Int32s(onCanonical(a.deg, a.ids, c, 0))
	vs := make([]uint64, 0, len(a.above))
	for v := range a.above {
		vs = append(vs, v)
	}
	slices.Sort(vs) // the same state writes the same bytes
	ds := make([]uint64, len(vs))
	for i, v := range vs {
		ds[i] = a.above[v]
	}
	e.Uint64s(vs)
	e.Uint64s(ds)
	return a.seq, e.Err()
}

// loadState checks what it reads: no degree is negative, and the vertices
// above are exactly those whose degree exceeds the threshold, each with
// that degree.
func (a *degree) loadState(d *checkpoint.Decoder, c views.IDSpace, seq uint64) error {
	deg, vs, ds := d.Int32s(), d.Uint64s(), d.Uint64s()
	if d.Err() != nil {
		return d.Err()
	}
	if len(deg) != c.Len() || len(vs) != len(ds) {
		d.Fail("%d degrees for %d vertices, %d vertices above and %d degrees", len(deg), c.Len(), len(vs), len(ds))
		return d.Err()
	}
	above := make(map[uint64]uint64, len(vs))
	for i, v := range vs {
		j, ok := c.Index(v)
		if _, dup := above[v]; dup || !ok || uint64(deg[j]) != ds[i] || !(float64(ds[i]) > a.spec.Threshold) {
			d.Fail("vertex %d: above with degree %d, twice, unknown, or not its degree or not above the threshold %v", v, ds[i], a.spec.Threshold)
			return d.Err()
		}
		above[v] = ds[i]
	}
	for j, n := range deg {
		if n < 0 || float64(n) > a.spec.Threshold && above[c.ID(j)] == 0 {
			d.Fail("vertex %d: degree %d, negative or above the threshold but not listed", c.ID(j), n)
			return d.Err()
		}
	}
	a.mu.Lock()
	a.ids, a.deg, a.above, a.seq, a.computed = c, deg, above, seq, true
	a.mu.Unlock()
	return nil
}
