package kernels

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/graphtide/graphtide/internal/views"
)

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
//
// Worker w pushes into near[w][b-base] for a bin b in [base,
// base+binWindow), or into far[w] past the window. INVARIANT: only worker
// w touches near[w], far[w] and spare[w] while the workers relax; base,
// cur, bin and the frontier change only in control, which worker 0 runs
// between two barriers. (A first version that kept this state in a
// struct and called relax once a vertex ran 10-20% slower on GAPBS's
// graph.)
func settle(ctx context.Context, g *views.Topo, nw int, seeds []int32, binOf func(u int32) int64, relax func(w int, us []int32, bin int64, push pushFunc)) error {
	if g.Out.Edges() < settleAlone {
		nw = 1 // a small graph: the workers would cost more than they do
	}
	near := make([][][]int32, nw)
	for w := range near {
		near[w] = make([][]int32, binWindow)
	}
	far, spare := make([][]int32, nw), make([][]int32, nw)
	base := int64(math.MaxInt64)
	for _, s := range seeds {
		base = min(base, binOf(s))
	}
	push := func(w int, v int32, b int64) {
		if k := b - base; k < binWindow {
			near[w][k] = append(near[w][k], v)
		} else {
			far[w] = append(far[w], v)
		}
	}
	for _, s := range seeds {
		push(0, s, binOf(s))
	}
	var (
		frontier []int32
		cur, bin int64
		done     bool
		err      error
		chunk    atomic.Int64
		bar      = newBarrier(nw)
	)
	// control picks the next bin (the smallest non-empty one of any
	// worker; when the window is used up, a new window from the pile) and
	// makes it the frontier, or sets done.
	control := func() {
		for {
			next := int64(-1)
			for k := cur; k < binWindow && next < 0; k++ {
				for w := range nw {
					if len(near[w][k]) > 0 {
						next = k
						break
					}
				}
			}
			if next < 0 {
				lo := int64(math.MaxInt64)
				var pile []int32
				for w := range far {
					for _, v := range far[w] {
						if x := binOf(v); x >= base+binWindow {
							lo = min(lo, x)
							pile = append(pile, v)
						}
					}
					far[w] = far[w][:0]
				}
				if len(pile) == 0 {
					done = true
					return
				}
				base, cur = lo, 0
				for _, v := range pile {
					push(0, v, binOf(v))
				}
				continue
			}
			cur = next
			if err = ctx.Err(); err != nil {
				done = true
				return
			}
			bin = base + cur
			frontier = frontier[:0]
			for w := range nw {
				frontier = append(frontier, near[w][cur]...)
				near[w][cur] = near[w][cur][:0]
			}
			chunk.Store(0)
			return
		}
	}
	small := func(l []int32) bool {
		if len(l) >= binThreshold {
			return false
		}
		e := 0
		for _, u := range l {
			e += int(g.Out.Deg(u))
		}
		return e < fuseEdges
	}
	const grain = 64
	work := func(w int) {
		var sense int32
		for {
			for {
				lo := int(chunk.Add(grain)) - grain
				if lo >= len(frontier) {
					break
				}
				relax(w, frontier[lo:min(lo+grain, len(frontier))], bin, push)
			}
			for l := near[w][cur]; len(l) > 0 && small(l); l = near[w][cur] {
				near[w][cur] = spare[w][:0]
				relax(w, l, bin, push)
				spare[w] = l
			}
			bar.wait(&sense)
			if w == 0 {
				control()
			}
			bar.wait(&sense)
			if done {
				return
			}
		}
	}
	control()
	if done {
		return err
	}
	var wg sync.WaitGroup
	for w := 1; w < nw; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(w)
		}()
	}
	work(0)
	wg.Wait()
	return err
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
