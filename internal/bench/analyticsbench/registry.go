package analyticsbench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// RegistryFigures are the stream's batches as serve's analytics see them
// (--registry): the five analytics registered together in an
// analytics.Registry over a store of their own (dense ids), each on its
// own goroutine as serve runs them. Over the batches after the first (the
// warm-up).
type RegistryFigures struct {
	Batches int `json:"batches"`
	// IntervalSec, when above 0 (--registry-interval), is how often a
	// batch was applied, without waiting for the results: the analytics'
	// figures are then their freshness and updates, not batch_sec, and
	// AllSec is 0.
	IntervalSec float64 `json:"interval_sec,omitempty"`
	// LateSec: how far behind its time the paced stream's last batch was
	// applied (above 0: the store's Apply could not keep the pace).
	LateSec float64 `json:"late_sec,omitempty"`
	// Analytics, by name: from the store's Apply of a batch to the
	// analytic's result at that batch's seq (the registry's Updated hook,
	// its seq read through Freshness, as a metrics scrape reads it).
	Analytics map[string]*RegistryAnalytic `json:"analytics"`
	// AllSec: from the Apply to the last of the five results at that seq.
	AllSec    float64 `json:"all_sec"`
	AllP99Sec float64 `json:"all_p99_sec"`
}

// RegistryAnalytic is one analytic's figures under --registry.
type RegistryAnalytic struct {
	BatchSec    float64 `json:"batch_sec"`
	BatchP99Sec float64 `json:"batch_p99_sec"`
	// UpdateSec: its update alone (the registry's hook: after the pull),
	// mean; Recomputes: the updates that recomputed, the warm-up's
	// included.
	UpdateSec  float64 `json:"update_sec"`
	Recomputes int     `json:"recomputes"`
	// Under --registry-interval: per update after the warm-up batch, the
	// time from the Apply of the oldest operation it took to its result
	// (serve's graphtide_analytics_freshness_seconds), mean and p99; and
	// the updates, each taking every batch applied since the one before.
	FreshSec    float64 `json:"fresh_sec,omitempty"`
	FreshP99Sec float64 `json:"fresh_p99_sec,omitempty"`
	Updates     int     `json:"updates,omitempty"`
}

// registryRun is --registry's store, registry and what its hook saw.
type registryRun struct {
	store *engine.Store
	m     *views.Manager
	reg   *analytics.Registry

	mu     sync.Mutex
	events []regEvent // Protected by mu.
	// fresh is each analytic's updates as the Fresh hook saw them.
	// Protected by mu.
	fresh map[string][]freshUpdate
	wake  chan struct{}

	// Per batch: each analytic's time to its result, the updates' times.
	batch   map[string][]float64
	updates map[string][]float64
	re      map[string]int
	all     []float64
}

type regEvent struct {
	name      string
	at        time.Time
	d         time.Duration
	recompute bool
}

// openRegistry loads the graph into a store of its own and registers the
// streamed analytics in a registry over it, and waits for their first
// results.
func (r *run) openRegistry(specs map[string]analytics.Spec) error {
	rr := &registryRun{wake: make(chan struct{}, 1), batch: map[string][]float64{}, updates: map[string][]float64{}, re: map[string]int{}}
	var err error
	if rr.store, err = load(filepath.Join(r.cfg.Dir, "store-registry"), r.src.edges, sameID); err != nil {
		return err
	}
	r.closers = append(r.closers, func() { rr.store.Close() })
	if rr.m, err = views.NewManager(rr.store, views.Config{}); err != nil {
		return err
	}
	r.closers = append(r.closers, func() { rr.m.Close() })
	rr.fresh = map[string][]freshUpdate{}
	rr.reg = analytics.NewRegistry(rr.m, analytics.RegistryConfig{Hooks: analytics.Hooks{Updated: rr.updated, Fresh: rr.freshHook}})
	r.closers = append(r.closers, rr.reg.Close)
	t0 := time.Now()
	for _, name := range streamed {
		s := withRoot(specs[name], r.res.Root)
		s.Name = name
		if _, err := rr.reg.Register(s); err != nil {
			return fmt.Errorf("--registry: %w", err)
		}
	}
	for {
		ready := 0
		for name, f := range rr.reg.Freshness(0) {
			if f.Ready {
				ready++
			}
			if res, _ := rr.reg.Result(name); res.Error != "" {
				return fmt.Errorf("--registry: %s: %s", name, res.Error)
			}
		}
		if ready == len(streamed) {
			break
		}
		if err := r.ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	rr.take() // the first computes
	r.reg = rr
	r.logf("registry: store loaded and %d analytics registered and computed in %.1fs", len(streamed), time.Since(t0).Seconds())
	return nil
}

// updated is the registry's Updated hook: it notes the event and wakes
// the waiting batch. It must not block (the analytic's goroutine calls it).
func (rr *registryRun) updated(name string, recompute bool, d time.Duration) {
	at := time.Now()
	rr.mu.Lock()
	rr.events = append(rr.events, regEvent{name, at, d, recompute})
	rr.mu.Unlock()
	rr.wakeUp()
}

// freshUpdate is one update's freshness d, when the oldest operation it
// took was applied (the hook's time less d), and the seq its result is at.
type freshUpdate struct {
	applied time.Time
	d       time.Duration
	seq     uint64
}

// freshHook is the registry's Fresh hook: it notes an update's
// freshness. It must not block.
func (rr *registryRun) freshHook(name string, seq uint64, d time.Duration) {
	at := time.Now()
	rr.mu.Lock()
	rr.fresh[name] = append(rr.fresh[name], freshUpdate{applied: at.Add(-d), d: d, seq: seq})
	rr.mu.Unlock()
	rr.wakeUp()
}

// wakeUp wakes the wait for the analytics (applyRegistry, paceRegistry)
// without blocking: a wake already pending is enough.
func (rr *registryRun) wakeUp() {
	select {
	case rr.wake <- struct{}{}:
	default:
	}
}

// freshAt reports whether the Fresh hook has seen every streamed
// analytic's result at seq (the hook is called after the result is
// readable, and after the Updated hook).
func (rr *registryRun) freshAt(seq uint64) bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, name := range streamed {
		us := rr.fresh[name]
		if len(us) == 0 || us[len(us)-1].seq < seq {
			return false
		}
	}
	return true
}

func (rr *registryRun) take() []regEvent {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	ev := rr.events
	rr.events = nil
	return ev
}

// applyRegistry applies one batch to the registry's store and waits until
// every analytic's result is at its seq, noting when each got there.
func (r *run) applyRegistry(ctx context.Context, batch []engine.Op) error {
	rr := r.reg
	b := batchOf(batch, sameID)
	runtime.GC() // as the layouts' batches (applyBatch)
	t0 := time.Now()
	seq, err := rr.store.Apply(b)
	if err != nil {
		return err
	}
	at := map[string]float64{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.Now().Add(10 * time.Minute)
	for len(at) < len(streamed) {
		select {
		case <-rr.wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			// A failed update calls no hook: look for errors now and then.
			for _, res := range rr.reg.Results() {
				if res.Error != "" {
					return fmt.Errorf("--registry: %s: %s", res.Spec.Name, res.Error)
				}
			}
			if time.Now().After(deadline) {
				return errors.New("--registry: the analytics did not reach the batch in 10 minutes")
			}
		}
		// Each analytic's newest update since the last look, and whether
		// its result is at the batch's seq now.
		newest := map[string]time.Time{}
		for _, e := range rr.take() {
			rr.updates[e.name] = append(rr.updates[e.name], e.d.Seconds())
			if e.recompute {
				rr.re[e.name]++
			}
			newest[e.name] = e.at
		}
		fresh := rr.reg.Freshness(seq)
		for name, t := range newest {
			if _, done := at[name]; !done && fresh[name].Ready && fresh[name].Behind == 0 {
				at[name] = t.Sub(t0).Seconds()
			}
		}
	}
	last := 0.0
	for name, sec := range at {
		rr.batch[name] = append(rr.batch[name], sec)
		last = max(last, sec)
	}
	rr.all = append(rr.all, last)
	return nil
}

// registryFigures sums up --registry's batches, the first (the warm-up)
// left out.
func (r *run) registryFigures() {
	rr := r.reg
	steady := func(xs []float64) []float64 {
		if len(xs) > 1 {
			return xs[1:]
		}
		return xs
	}
	f := &RegistryFigures{Batches: len(steady(rr.all)), Analytics: map[string]*RegistryAnalytic{}}
	f.AllSec, f.AllP99Sec = meanP99Of(steady(rr.all))
	for _, name := range streamed {
		a := &RegistryAnalytic{UpdateSec: bench.Mean(steady(rr.updates[name])), Recomputes: rr.re[name]}
		a.BatchSec, a.BatchP99Sec = meanP99Of(steady(rr.batch[name]))
		f.Analytics[name] = a
		r.logf("registry: %s's result %.5fs after the Apply (p99 %.5fs); its update %.5fs; %d recomputes", name, a.BatchSec, a.BatchP99Sec, a.UpdateSec, a.Recomputes)
	}
	r.logf("registry: all five results %.5fs after the Apply (p99 %.5fs)", f.AllSec, f.AllP99Sec)
	r.res.Registry = f
}

// sameAsRegistry checks that the registry's bfs, wcc and sssp, after the
// stream, equal the dense layout's at every vertex id (the same graph:
// levels, distances, and components named by their smallest id).
func (r *run) sameAsRegistry(dense []*running) error {
	for _, rn := range dense {
		if rn.name != "bfs" && rn.name != "wcc" && rn.name != "sssp" {
			continue
		}
		for v := range r.src.nv {
			a, _ := rn.a.Vertex(v)
			b, _, err := r.reg.reg.Vertex(rn.name, v)
			if err != nil {
				return err
			}
			if a != b {
				return fmt.Errorf("--registry: %s after the stream: vertex %d: %+v in the registry, %+v driven here", rn.name, v, b, a)
			}
		}
	}
	return nil
}

// paceRegistry applies the stream to the registry's store at its own pace
// (--registry-interval: batch k at k intervals after the first, not
// waiting for any result), the first batch as the warm-up (waited for, as
// applyRegistry does), then waits until every analytic's result is at the
// last batch, and sums up their freshness and updates.
func (r *run) paceRegistry(ctx context.Context, batches [][]engine.Op) error {
	if len(batches) < 2 {
		// Nothing would be paced, and no result would move past the
		// warm-up's seq to end the wait.
		return fmt.Errorf("--registry-interval paces the batches after the first, and the stream has %d: give a smaller --batch-size or a larger --stream-fraction", len(batches))
	}
	if err := r.applyRegistry(ctx, batches[0]); err != nil {
		return err
	}
	r.reg.take()
	t0 := time.Now()
	seq, late, err := r.pace(ctx, t0, batches[1:])
	if err != nil {
		return err
	}
	if err := r.reg.awaitFresh(ctx, seq); err != nil {
		return err
	}
	r.pacedFigures(t0, late, len(batches)-1)
	return nil
}

// pace applies batches to the registry's store, batch k at k intervals
// after t0, not waiting for any result; it returns the last batch's seq
// and how late (seconds) its Apply began.
func (r *run) pace(ctx context.Context, t0 time.Time, batches [][]engine.Op) (seq uint64, late float64, err error) {
	every := r.cfg.RegistryInterval
	for k, batch := range batches {
		if wait := time.Until(t0.Add(time.Duration(k) * every)); wait > 0 {
			select {
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			case <-time.After(wait):
			}
		}
		late = max(0, time.Since(t0.Add(time.Duration(k)*every)).Seconds())
		if seq, err = r.reg.store.Apply(batchOf(batch, sameID)); err != nil {
			return 0, 0, err
		}
	}
	return seq, late, nil
}

// awaitFresh waits until the Fresh hook has seen every result at seq
// (the results are readable there before the hooks are called, and the
// paced figures are the hooks'), or an analytic fails, or 10 minutes
// pass.
func (rr *registryRun) awaitFresh(ctx context.Context, seq uint64) error {
	deadline := time.Now().Add(10 * time.Minute)
	for !rr.freshAt(seq) {
		for _, res := range rr.reg.Results() {
			if res.Error != "" {
				return fmt.Errorf("--registry: %s: %s", res.Spec.Name, res.Error)
			}
		}
		if time.Now().After(deadline) {
			return errors.New("--registry: the analytics did not reach the last batch in 10 minutes")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-rr.wake:
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// pacedFigures sums up the paced run of batches after the warm-up, begun
// at t0: each analytic's freshness, updates and recomputes.
func (r *run) pacedFigures(t0 time.Time, late float64, batches int) {
	rr, every := r.reg, r.cfg.RegistryInterval
	// The paced batches' updates: those whose oldest operation was applied
	// once the first began (the warm-up's Fresh hook may come after its
	// Updated one, which ended the wait for it).
	fresh := map[string][]float64{}
	rr.mu.Lock()
	for name, us := range rr.fresh {
		for _, u := range us {
			if !u.applied.Before(t0) {
				fresh[name] = append(fresh[name], u.d.Seconds())
			}
		}
	}
	rr.mu.Unlock()
	f := &RegistryFigures{Batches: batches, IntervalSec: every.Seconds(), LateSec: late, Analytics: map[string]*RegistryAnalytic{}}
	ups := map[string][]float64{}
	re := map[string]int{}
	for _, e := range rr.take() {
		ups[e.name] = append(ups[e.name], e.d.Seconds())
		if e.recompute {
			re[e.name]++
		}
	}
	for _, name := range streamed {
		a := &RegistryAnalytic{UpdateSec: bench.Mean(ups[name]), Recomputes: re[name], Updates: len(fresh[name])}
		a.FreshSec, a.FreshP99Sec = meanP99Of(fresh[name])
		f.Analytics[name] = a
		r.logf("registry, a batch every %v: %s took the %d batches in %d updates, each %.5fs after its oldest operation's Apply (p99 %.5fs); its update %.5fs; %d recomputes",
			every, name, f.Batches, a.Updates, a.FreshSec, a.FreshP99Sec, a.UpdateSec, a.Recomputes)
	}
	if late > 0 {
		r.logf("registry: the last batch was applied %.3fs behind its time", late)
	}
	r.res.Registry = f
}

// sameID is the registry store's ids: the dense layout's, as they are.
func sameID(v uint64) uint64 { return v }
