package kernels

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/views"
)

// settleAlone: settle runs on one worker for a graph of fewer edges.
const settleAlone = 1 << 16

// pushFunc puts vertex v, at bin b, among worker w's vertices.
type pushFunc func(w int, v int32, b int64)

// settle runs delta-stepping's rounds from the seeds on nw workers,
// GAPBS's way: the workers take the current bin's frontier in chunks,
// then each settles its own small current bin alone (bucket fusion),
// then worker 0 picks the next bin between two barriers. binOf(u) is the
// bin of u's current distance; relax(w, us, bin, push) relaxes the
// out-edges of each vertex of us still in bin (one whose bin is below
// was settled already and is skipped), pushing each head it lowers: one
// call a chunk, not a vertex, so that the check is the kernel's own code.
// The workers live for the whole run (a goroutine per bin cost a tenth of
// the kernel on GAPBS's graph).
func settle(ctx context.Context, g *views.Topo, nw int, seeds []int32, binOf func(u int32) int64, relax func(w int, us []int32, bin int64, push pushFunc)) error {
	if g.Out.Edges() < settleAlone {
		nw = 1 // a small graph: the workers would cost more than they do
	}
	s := &stepping{ctx: ctx, g: g, nw: nw, binOf: binOf, relax: relax, bar: newBarrier(nw),
		near: make([][][]int32, nw), far: make([][]int32, nw), spare: make([][]int32, nw), base: math.MaxInt64}
	for w := range s.near {
		s.near[w] = make([][]int32, binWindow)
	}
	for _, v := range seeds {
		s.base = min(s.base, binOf(v))
	}
	for _, v := range seeds {
		s.push(0, v, binOf(v))
	}
	s.control()
	if s.done {
		return s.err
	}
	var wg sync.WaitGroup
	for w := 1; w < nw; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(w)
		}()
	}
	s.work(0)
	wg.Wait()
	return s.err
}

// stepping is one run of settle.
//
// Worker w pushes into near[w][b-base] for a bin b in [base,
// base+binWindow), or into far[w] past the window. INVARIANT: only worker
// w touches near[w], far[w] and spare[w] while the workers relax; base,
// cur, bin, done, err and the frontier change only in control, which
// worker 0 runs between two barriers. (relax is called once a chunk: a
// first version that called it once a vertex, its state in a struct,
// ran 10-20% slower on GAPBS's graph.)
type stepping struct {
	ctx   context.Context
	g     *views.Topo
	nw    int
	binOf func(u int32) int64
	relax func(w int, us []int32, bin int64, push pushFunc)
	bar   *barrier

	near       [][][]int32
	far, spare [][]int32
	frontier   []int32
	base       int64
	cur, bin   int64
	done       bool
	err        error
	chunk      atomic.Int64
}

// push puts v, at bin b, among worker w's vertices (a pushFunc).
func (s *stepping) push(w int, v int32, b int64) {
	if k := b - s.base; k < binWindow {
		s.near[w][k] = append(s.near[w][k], v)
	} else {
		s.far[w] = append(s.far[w], v)
	}
}

// control picks the next bin (the smallest non-empty one of any worker;
// when the window is used up, a new window from the pile) and makes it
// the frontier, or sets done.
func (s *stepping) control() {
	for {
		next := int64(-1)
		for k := s.cur; k < binWindow && next < 0; k++ {
			for w := range s.nw {
				if len(s.near[w][k]) > 0 {
					next = k
					break
				}
			}
		}
		if next < 0 {
			if !s.rebase() {
				s.done = true
				return
			}
			continue
		}
		s.cur = next
		if s.err = s.ctx.Err(); s.err != nil {
			s.done = true
			return
		}
		s.bin = s.base + s.cur
		s.frontier = s.frontier[:0]
		for w := range s.nw {
			s.frontier = append(s.frontier, s.near[w][s.cur]...)
			s.near[w][s.cur] = s.near[w][s.cur][:0]
		}
		s.chunk.Store(0)
		return
	}
}

// rebase starts a new window at the lowest bin of the pile (the far
// lists), binning its vertices; it returns false when the pile is empty.
func (s *stepping) rebase() bool {
	lo := int64(math.MaxInt64)
	var pile []int32
	for w := range s.far {
		for _, v := range s.far[w] {
			if x := s.binOf(v); x >= s.base+binWindow {
				lo = min(lo, x)
				pile = append(pile, v)
			}
		}
		s.far[w] = s.far[w][:0]
	}
	if len(pile) == 0 {
		return false
	}
	s.base, s.cur = lo, 0
	for _, v := range pile {
		s.push(0, v, s.binOf(v))
	}
	return true
}

// small reports whether a worker settles bin l alone, without a barrier
// (bucket fusion): fewer than binThreshold vertices with fewer than
// fuseEdges out-edges together.
func (s *stepping) small(l []int32) bool {
	if len(l) >= binThreshold {
		return false
	}
	e := 0
	for _, u := range l {
		e += int(s.g.Out.Deg(u))
	}
	return e < fuseEdges
}

// work is worker w's loop: chunks of the frontier, then its own small
// current bin, then the barriers around control, until done.
func (s *stepping) work(w int) {
	const grain = 64
	var sense int32
	push := s.push // (one method value for the run, not one a chunk)
	for {
		for {
			lo := int(s.chunk.Add(grain)) - grain
			if lo >= len(s.frontier) {
				break
			}
			s.relax(w, s.frontier[lo:min(lo+grain, len(s.frontier))], s.bin, push)
		}
		for l := s.near[w][s.cur]; len(l) > 0 && s.small(l); l = s.near[w][s.cur] {
			s.near[w][s.cur] = s.spare[w][:0]
			s.relax(w, l, s.bin, push)
			s.spare[w] = l
		}
		s.bar.wait(&sense)
		if w == 0 {
			s.control()
		}
		s.bar.wait(&sense)
		if s.done {
			return
		}
	}
}

// barrier is a sense-reversing barrier for n goroutines. A waiter spins
// first (yielding its P after a few rounds: a round of delta-stepping can
// take microseconds, shorter than parking a goroutine), then parks on the
// round's channel, so that a worker waiting on a long round (or on one
// the OS descheduled, beside ingestion or other processes) leaves the
// core to them, as OpenMP's spin-then-sleep does.
//
// INVARIANT: ch is the current round's channel, replaced (under mu) by
// the round's last arriver before it flips sense and closes the old one;
// a goroutine reads ch before it counts itself in, so it holds its own
// round's channel.
type barrier struct {
	n     int32
	count atomic.Int32
	sense atomic.Int32
	mu    sync.Mutex
	ch    chan struct{} // Protected by mu.
}

func newBarrier(n int) *barrier { return &barrier{n: int32(n), ch: make(chan struct{})} }

// barrierSpins is how many rounds a waiter spins before it parks.
const barrierSpins = 1 << 10

// wait returns when all n goroutines called it; each passes its own
// sense, which starts at 0.
func (b *barrier) wait(local *int32) {
	*local ^= 1
	if b.n == 1 {
		return
	}
	b.mu.Lock()
	ch := b.ch
	b.mu.Unlock()
	if b.count.Add(1) == b.n {
		b.count.Store(0)
		b.mu.Lock()
		b.ch = make(chan struct{})
		b.mu.Unlock()
		b.sense.Store(*local)
		close(ch)
		return
	}
	for i := 0; b.sense.Load() != *local; i++ {
		if i >= barrierSpins {
			<-ch
			return
		}
		if i >= 64 {
			runtime.Gosched()
		}
	}
}
