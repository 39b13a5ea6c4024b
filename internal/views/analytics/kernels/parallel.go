package kernels

import (
	"runtime"
	"sync/atomic"
)

// The static kernels: the algorithms of the GAP benchmark suite's reference
// (sbeamer/gapbs) on a views.Topo, on every core. Each takes the context
// and checks it between steps.

// Workers is how many goroutines a kernel runs on.
func Workers() int { return runtime.GOMAXPROCS(0) }

// ParallelFor calls f(w, lo, hi) over [0, n) in chunks of grain, handed
// out to nw workers (w is the worker's number, below nw: a caller sizes
// its per-worker slices with the nw it passes, read once from Workers(),
// which can change between calls) by an atomic counter, and returns when
// every chunk is done.
//
// The caller is worker 0 and takes chunks too; it waits only for chunks
// another worker has begun, never for a worker to start. A helper on an
// idle core can take a few hundred microseconds to be scheduled (its
// vCPU halted, on this machine), longer than a repair's whole filter: a
// late helper finds no chunk left and returns.
func ParallelFor(nw, n, grain int, f func(w, lo, hi int)) {
	if n <= grain || nw <= 1 {
		if n > 0 {
			f(0, 0, n)
		}
		return
	}
	GoFor(nw, n, grain, f)()
}

// GoFor is ParallelFor begun in the background: its helpers (workers 1
// to nw-1, at least one: w is below max(nw, 2)) start on it at once, and
// the caller calls wait, once or more, before it reads what f wrote. wait
// makes the caller worker 0, as in ParallelFor: it takes the chunks left,
// then waits for those begun.
func GoFor(nw, n, grain int, f func(w, lo, hi int)) (wait func()) {
	chunks := int64((n + grain - 1) / grain)
	var next, done atomic.Int64
	fin := make(chan struct{})
	work := func(w int) {
		for {
			c := next.Add(1) - 1
			if c >= chunks {
				return
			}
			lo := int(c) * grain
			f(w, lo, min(lo+grain, n))
			if done.Add(1) == chunks {
				close(fin)
			}
		}
	}
	if chunks == 0 {
		return func() {}
	}
	for w := 1; w < max(2, nw) && int64(w) <= chunks; w++ {
		go work(w)
	}
	return func() {
		work(0)
		<-fin
	}
}

// Filled returns n copies of x, written on nw workers.
func Filled[T any](nw, n int, x T) []T {
	a := make([]T, n)
	ParallelFor(nw, n, 1<<16, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i] = x
		}
	})
	return a
}
