package analyticsbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// run is one benchmark run's state, through its phases (Run).
type run struct {
	ctx  context.Context
	cfg  Config
	res  *Result
	logf func(string, ...any)
	src  *source
	ls   []*layout
	// topoOf holds each layout's topology (a stream the phases pull to
	// advance it).
	topoOf map[*layout]*views.TopoStream
	// csr is the plain CSR of the loaded edges and csrTopo its topology
	// (the baseline of the compacted kernels; dropped after them).
	csr     *edgeGraph
	csrTopo *views.Topo
	reg     *registryRun // --registry
	// finals are the dense layout's streamed analytics after the stream,
	// by name.
	finals  map[string]analytics.Analytic
	closers []func()
}

// Run performs the benchmark, in phases: the graph and its stream
// (sourceGraph), the layouts' stores (loadLayouts), the static kernels on
// the compacted view checked against the reference (kernels, reference),
// the stream (stream), the kernels again on the advanced topology, and the
// layouts' ratios.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	r := &run{ctx: ctx, cfg: cfg, res: &res, logf: func(f string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, f+"\n", a...)
		}
	}}
	defer r.close()
	if err := r.start(); err != nil {
		return res, err
	}
	if err := r.source(); err != nil {
		return res, err
	}
	if r.cfg.KernelsOnly {
		return kernelsOnly(ctx, r.cfg, res, r.src.edges, r.src.nv, r.logf)
	}
	for _, phase := range []func() error{r.save, r.makeLayouts, r.loadLayouts, r.compacted, r.stream, r.fresh} {
		if err := phase(); err != nil {
			return res, err
		}
	}
	if r.cfg.DD != "" {
		if err := r.differentialDataflow(r.finals); err != nil {
			return res, err
		}
	}
	r.ratios()
	if m, err := bench.ReadMemory(); err == nil {
		res.PeakRSSBytes = m.PeakRSS
	}
	return res, nil
}

func (r *run) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// start starts the profile and checks the configuration.
func (r *run) start() error {
	cfg := &r.cfg
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		r.closers = append(r.closers, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if cfg.Input != "" && len(cfg.IDs) == len(Layouts) {
		cfg.IDs = []string{"dense"}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Input != "" && len(cfg.IDs) > 1 {
		return fmt.Errorf("--ids: with --input only dense (the file's ids as they are) is measured, got %q", strings.Join(cfg.IDs, ","))
	}
	return nil
}

// source makes the graph and the stream, and the figures that describe
// them.
func (r *run) source() error {
	src, err := sourceGraph(r.cfg)
	if err != nil {
		return err
	}
	r.src = src
	res := r.res
	res.Graph, res.Input, res.Stream = r.cfg.Graph, r.cfg.Input, r.cfg.Stream
	if r.cfg.Input != "" {
		res.Graph = "input"
	}
	res.Edges, res.Vertices = len(src.edges), src.nv
	for _, e := range src.edges {
		res.Weighted = res.Weighted || e.w != 1
	}
	if r.cfg.Root >= 0 {
		res.Root = uint64(r.cfg.Root)
	} else {
		// The vertex with the most out-edges (reaches the bulk of the graph).
		deg := map[uint64]int{}
		best := 0
		for _, e := range src.edges {
			deg[e.src]++
			if d := deg[e.src]; d > best || d == best && e.src < res.Root {
				res.Root, best = e.src, d
			}
		}
	}
	if r.cfg.KernelsOnly {
		return nil
	}
	res.StreamSource, res.HubVertexDeletes, res.DeleteFraction = src.origin, src.hubs, r.cfg.DeleteFraction
	if src.origin == "file" {
		res.DeleteFraction = 0
	}
	for _, b := range src.ops {
		res.StreamedOps += len(b)
		for _, o := range b {
			switch o.Kind {
			case engine.OpDeleteVertex:
				res.VertexDeletes++
			case engine.OpDeleteEdge:
				if src.origin == "file" {
					res.DeleteFraction++
				}
			}
		}
	}
	if src.origin == "file" {
		res.DeleteFraction /= float64(res.StreamedOps)
	}
	res.Batches = len(src.ops)
	r.logf("%s graph: %d edges over %d vertex ids; stream (%s): %d operations in %d batches, %d vertex deletes (%d of hubs)",
		res.Graph, res.Edges, res.Vertices, res.StreamSource, res.StreamedOps, res.Batches, res.VertexDeletes, res.HubVertexDeletes)
	return nil
}

// save writes the graph and the stream where --save-graph and
// --save-stream ask.
func (r *run) save() error {
	if p := r.cfg.SaveGraph; p != "" {
		if err := writeGraph(p, r.src.edges); err != nil {
			return fmt.Errorf("--save-graph: %w", err)
		}
	}
	if p := r.cfg.SaveStream; p != "" {
		if err := writeOps(p, r.src.ops, r.cfg.BatchSize); err != nil {
			return fmt.Errorf("--save-stream: %w", err)
		}
	}
	return nil
}

// makeLayouts makes the layouts' ids. Keys are numbered in order of first
// appearance (the graph's edges, then the stream's upserts); vertices
// without edges come last.
func (r *run) makeLayouts() error {
	nv, edges := r.src.nv, r.src.edges
	var streamed []wedge
	for _, b := range r.src.ops {
		for _, o := range b {
			if o.Kind == engine.OpUpsert {
				streamed = append(streamed, wedge{o.Src, o.Dst, o.Weight})
			}
		}
	}
	for _, name := range r.cfg.IDs {
		l := &layout{name: name, fig: &IDFigures{RecomputeSec: map[string]float64{}, UpdateSec: map[string]float64{},
			StreamRecomputeSec: map[string]float64{}, Fallbacks: map[string]int{}}}
		switch name {
		case "dense":
			l.id = func(v uint64) uint64 { return v }
		case "sparse":
			dict, err := keydict.Open(filepath.Join(r.cfg.Dir, "keys-sparse.dict"))
			if err != nil {
				return err
			}
			r.closers = append(r.closers, func() { dict.Close() })
			dict.SetMapNumbers(true)
			t0 := time.Now()
			ids := make([]uint64, nv)
			err = inFirstAppearance(nv, [][]wedge{edges, streamed}, func(v uint64) (err error) {
				ids[v], err = dict.NumID(SparseID(v))
				return err
			})
			if err != nil {
				return err
			}
			l.mapSec = time.Since(t0).Seconds()
			l.id = func(v uint64) uint64 { return ids[v] }
		case "unmapped":
			l.id = SparseID
		case "keys":
			key := make([]uint64, nv)
			next := engine.HighIDBase
			_ = inFirstAppearance(nv, [][]wedge{edges, streamed}, func(v uint64) error {
				key[v] = next
				next++
				return nil
			})
			l.id = func(v uint64) uint64 { return key[v] }
		}
		l.root = l.id(r.res.Root)
		r.ls = append(r.ls, l)
	}
	r.res.IDs = map[string]*IDFigures{}
	for _, l := range r.ls {
		r.res.IDs[l.name] = l.fig
	}
	return nil
}

// loadLayouts builds the plain CSR's topology (the baseline), then loads
// each layout's store and builds its vertex index and topology (through a
// stream that the analytics of the stream share: it holds the topology).
func (r *run) loadLayouts() error {
	ctx, res := r.ctx, r.res
	t0 := time.Now()
	r.csr = newEdgeGraph(r.src.nv, r.src.edges)
	var err error
	if r.csrTopo, err = views.BuildTopo(ctx, r.csr); err != nil {
		return err
	}
	res.Topology.CSRBuildSec = time.Since(t0).Seconds()
	r.logf("csr: topology built in %.2fs, %d distinct edges", res.Topology.CSRBuildSec, r.csrTopo.Out.Edges())
	r.topoOf = map[*layout]*views.TopoStream{}
	for _, l := range r.ls {
		t0 := time.Now()
		if l.store, err = load(filepath.Join(r.cfg.Dir, "store-"+l.name), r.src.edges, l.id); err != nil {
			return err
		}
		r.closers = append(r.closers, func() { l.store.Close() })
		l.fig.LoadSec = time.Since(t0).Seconds() + l.mapSec
		if l.m, err = views.NewManager(l.store, views.Config{}); err != nil {
			return err
		}
		r.closers = append(r.closers, func() { l.m.Close() })
		v, err := l.m.Static(views.StaticOptions{Kind: views.Fresh})
		if err != nil {
			return err
		}
		l.fig.IndexSec, err = timed(func() error { _, err := v.IDs(); return err })
		v.Release()
		if err != nil {
			return err
		}
		ist := l.m.IndexStats()
		l.fig.IndexVertices, l.fig.IndexHashed, l.fig.IndexBytes = ist.Vertices, ist.Hashed, ist.Bytes
		ts, err := l.m.Topology().Stream(views.StreamOptions{})
		if err != nil {
			return err
		}
		r.closers = append(r.closers, ts.Close)
		r.topoOf[l] = ts
		u, err := ts.Pull(ctx) // builds the topology
		if err != nil {
			return err
		}
		u.Done()
		tst := l.m.Topology().Stats()
		l.fig.TopologySec = tst.Build.Seconds()
		r.logf("%s ids: store loaded and compacted in %.1fs; vertex index built in %.3fs (%d indexes, %d hashed); topology built in %.3fs (%d edges, %.1f bytes per edge)",
			l.name, l.fig.LoadSec, l.fig.IndexSec, ist.Vertices, ist.Hashed, l.fig.TopologySec, tst.Edges, float64(tst.Bytes)/float64(max(1, tst.Edges)))
		if l == r.ls[0] {
			res.Topology.BuildSec, res.Topology.Bytes, res.Topology.Edges, res.Topology.Vertices = l.fig.TopologySec, tst.Bytes, tst.Edges, tst.Vertices
			res.Topology.BytesPerEdge = float64(tst.Bytes) / float64(max(1, tst.Edges))
		}
	}
	return nil
}

// compacted runs the static kernels on the compacted views and the CSR,
// and checks bfs, wcc and sssp against the reference kernels on the
// loaded edges.
func (r *run) compacted() error {
	res := r.res
	res.Kernels = map[string]*Kernel{}
	got, err := r.kernels("compacted")
	if err != nil {
		return err
	}
	t0 := time.Now()
	if res.Checked, err = checkReference(newRefGraph(r.csr), res.Root, got); err != nil {
		return fmt.Errorf("the compacted view against the reference kernels on the loaded edges: %w", err)
	}
	r.logf("%s on the compacted view equal the reference kernels' on the loaded edges at every vertex (checked in %.2fs)",
		strings.Join(res.Checked, ", "), time.Since(t0).Seconds())
	r.csr, r.csrTopo = nil, nil
	runtime.GC()
	return nil
}

// fresh runs the kernels on the topology the stream advanced.
func (r *run) fresh() error {
	_, err := r.kernels("fresh")
	return err
}

// kernels runs each static kernel on each layout's topology ("compacted":
// and on the CSR's), taking turns, best of the repeats, and checks that
// they agree. It returns the dense layout's analytics by name.
func (r *run) kernels(phase string) (map[string]analytics.Analytic, error) {
	topo := map[*layout]*views.Topo{}
	for _, l := range r.ls {
		u, err := r.topoOf[l].PullNow(r.ctx) // brings the topology to the newest operation
		if err != nil {
			return nil, err
		}
		defer u.Done()
		topo[l] = u.G
	}
	out := map[string]analytics.Analytic{}
	for _, k := range kernelSpecs {
		t, err := r.timeKernel(phase, k, topo)
		if err != nil {
			return nil, err
		}
		if err := r.kernelFigures(phase, k, t); err != nil {
			return nil, err
		}
		out[k.name] = t.out[r.ls[0]]
	}
	return out, nil
}

// kernelTimes are one kernel's runs in a phase of kernels: the best time
// under each layout and its result, and on the compacted phase the plain
// CSR's.
type kernelTimes struct {
	best    map[*layout]float64
	out     map[*layout]analytics.Analytic
	csrBest float64
	onCSR   analytics.Analytic
}

// timeKernel runs k on every layout's topology (and on the compacted
// phase the CSR's), --repeats times taking turns, keeping the best.
func (r *run) timeKernel(phase string, k kernelSpec, topo map[*layout]*views.Topo) (kernelTimes, error) {
	ctx, res := r.ctx, r.res
	t := kernelTimes{best: map[*layout]float64{}, out: map[*layout]analytics.Analytic{}, csrBest: math.Inf(1)}
	for rep := 0; rep < r.cfg.Repeats; rep++ {
		for _, l := range r.ls {
			a, err := newAnalytic(withRoot(k.spec, l.root), l.root)
			if err != nil {
				return t, err
			}
			sec, err := timed(func() error { return a.(analytics.TopoAnalytic).Recompute(ctx, topo[l]) })
			if err != nil {
				return t, fmt.Errorf("%s under %s ids: %w", k.name, l.name, err)
			}
			if b, ok := t.best[l]; !ok || sec < b {
				t.best[l] = sec
			}
			t.out[l] = a
		}
		if phase == "compacted" {
			a, err := newAnalytic(withRoot(k.spec, res.Root), res.Root)
			if err != nil {
				return t, err
			}
			sec, err := timed(func() error { return a.(analytics.TopoAnalytic).Recompute(ctx, r.csrTopo) })
			if err != nil {
				return t, err
			}
			t.csrBest = math.Min(t.csrBest, sec)
			t.onCSR = a
		}
	}
	return t, nil
}

// kernelFigures sets k's figures of the phase from its times, and checks
// the layouts' results against dense's (and on the compacted phase the
// CSR's against the view's).
func (r *run) kernelFigures(phase string, k kernelSpec, t kernelTimes) error {
	res, ls, dense := r.res, r.ls, r.ls[0]
	kf := res.Kernels[k.name]
	if kf == nil {
		kf = &Kernel{}
		res.Kernels[k.name] = kf
	}
	if phase == "compacted" {
		if err := r.compactedFigures(k, kf, t); err != nil {
			return err
		}
	} else {
		r.freshFigures(k, kf, t)
	}
	for _, l := range ls[1:] {
		if err := agreeUnder(k.name, t.out[dense], t.out[l], l.id, r.src.nv, r.cfg.Seed); err != nil {
			return fmt.Errorf("%s, under %s ids: %w", phase, l.name, err)
		}
		if phase == "compacted" {
			r.logf("%s: %s ids %.4fs, dense %.4fs (%.2fx)", k.name, l.name, t.best[l], t.best[dense], t.best[l]/t.best[dense])
		}
	}
	return nil
}

// compactedFigures are k's on the compacted view, against the plain CSR,
// whose result must agree with the view's.
func (r *run) compactedFigures(k kernelSpec, kf *Kernel, t kernelTimes) error {
	dense := r.ls[0]
	kf.ViewSec, kf.CSRSec = t.best[dense], t.csrBest
	kf.ViewOverCSR = kf.ViewSec / kf.CSRSec
	if sum, ok := t.out[dense].Summary().(analytics.PageRankSummary); ok {
		kf.Iterations = sum.Iterations
		r.logf("%s: %d iterations, %.4fs each on the view", k.name, sum.Iterations, kf.ViewSec/float64(sum.Iterations))
	}
	for _, l := range r.ls {
		l.fig.RecomputeSec[k.name] = t.best[l]
	}
	if err := agreeUnder(k.name, t.onCSR, t.out[dense], func(v uint64) uint64 { return v }, r.src.nv, r.cfg.Seed); err != nil {
		return fmt.Errorf("the view's topology and the csr's: %w", err)
	}
	r.logf("%s: view %.4fs, csr %.4fs (%.2fx)", k.name, kf.ViewSec, kf.CSRSec, kf.ViewOverCSR)
	return nil
}

// freshFigures are k's on the topology the stream advanced, against the
// compacted view's (per iteration for pagerank: the stream's graph may
// take another count).
func (r *run) freshFigures(k kernelSpec, kf *Kernel, t kernelTimes) {
	kf.FreshSec = t.best[r.ls[0]]
	kf.FreshOverView = kf.FreshSec / kf.ViewSec
	if sum, ok := t.out[r.ls[0]].Summary().(analytics.PageRankSummary); ok {
		kf.FreshIterations = sum.Iterations
		kf.FreshOverView = (kf.FreshSec / float64(sum.Iterations)) / (kf.ViewSec / float64(kf.Iterations))
		r.logf("%s after the stream: %d iterations", k.name, sum.Iterations)
	}
	r.logf("%s after the stream: %.4fs, compacted %.4fs (%.2fx)", k.name, kf.FreshSec, kf.ViewSec, kf.FreshOverView)
}

// streamed are the analytics that follow the stream, in the order they
// update after each batch.
var streamed = []string{"bfs", "wcc", "pagerank", "sssp", "degree"}

// batchClock is what one batch cost under the dense layout.
type batchClock struct {
	ops                   int
	changes               uint64  // the edge changes the advance applied (views.TopologyStats)
	apply, advanceWall    float64 // the Apply; the advance and its stream's pull
	advance               float64 // the advance alone (views.TopologyStats)
	own                   []float64
	advAlloc, updateAlloc uint64
}

// stream applies the stream batch by batch, each layout in turn: the
// Apply, the topology's advance, then every analytic's pull and update,
// timed as a user waits for them (no collection forced between them),
// then, every third batch and the first, a recompute into a second
// instance whose result must equal the update's. Its phases: the
// analytics' first computes (follow), the batches (streamBatches), the
// registry's run (registryPhase), the figures (incrementalFigures,
// batchFigures, topologyFigures).
func (r *run) stream() error {
	specs := streamSpecs(r.cfg)
	runs := map[*layout][]*running{}
	for _, l := range r.ls {
		rns, err := r.follow(l, specs)
		if err != nil {
			return err
		}
		runs[l] = rns
	}
	if r.cfg.Registry {
		if err := r.openRegistry(specs); err != nil {
			return err
		}
	}
	dense := r.ls[0]
	before := dense.m.Topology().Stats()
	clocks, err := r.streamBatches(runs)
	if err != nil {
		return err
	}
	if err := r.registryPhase(runs[dense]); err != nil {
		return err
	}
	after := dense.m.Topology().Stats()
	steady := clocks
	if len(steady) > 1 {
		steady = steady[1:] // the warm-up
	}
	if err := r.incrementalFigures(runs, steady); err != nil {
		return err
	}
	r.batchFigures(steady)
	r.finals = map[string]analytics.Analytic{}
	for k, name := range streamed {
		r.finals[name] = runs[dense][k].a
	}
	r.topologyFigures(before, after)
	return nil
}

// streamSpecs are the streamed analytics' specs by name: the kernels',
// pagerank to cfg's tolerance, and degree.
func streamSpecs(cfg Config) map[string]analytics.Spec {
	specs := map[string]analytics.Spec{"degree": {Type: "degree", Threshold: 1000}, "pagerank": {Type: "pagerank", Tolerance: cfg.PageRankTolerance}}
	for _, k := range kernelSpecs {
		if k.name != "pagerank" {
			specs[k.name] = k.spec
		}
	}
	return specs
}

// follow starts the streamed analytics under l, in streamed's order: each
// with a recompute instance beside it and a topology stream of its own,
// computed once (timed, logged) before the first batch.
func (r *run) follow(l *layout, specs map[string]analytics.Spec) ([]*running, error) {
	var rns []*running
	for _, name := range streamed {
		rn := &running{name: name}
		spec := withRoot(specs[name], l.root)
		var err error
		if rn.a, err = newAnalytic(spec, l.root); err != nil {
			return nil, err
		}
		if rn.ref, err = newAnalytic(spec, l.root); err != nil {
			return nil, err
		}
		if rn.ts, err = l.m.Topology().Stream(views.StreamOptions{Presence: analytics.NeedsPresence(rn.a.Spec())}); err != nil {
			return nil, err
		}
		r.closers = append(r.closers, rn.ts.Close)
		sec, err := timed(func() error {
			u, err := rn.ts.PullNow(r.ctx)
			if err != nil {
				return err
			}
			defer u.Done()
			return rn.a.(analytics.TopoAnalytic).Recompute(r.ctx, u.G)
		})
		if err != nil {
			return nil, err
		}
		r.logf("%s under %s ids: first compute %.3fs", name, l.name, sec)
		rns = append(rns, rn)
	}
	return rns, nil
}

// streamBatches applies each batch under every layout in turn (and to
// the registry's store batch by batch, when it is not paced), and returns
// the dense layout's batch clocks.
func (r *run) streamBatches(runs map[*layout][]*running) ([]batchClock, error) {
	var clocks []batchClock
	for bi, batch := range r.src.ops {
		for _, l := range r.ls {
			c, err := r.applyBatch(l, runs[l], batch, bi%3 == 0)
			if err != nil {
				return nil, fmt.Errorf("under %s ids, batch %d: %w", l.name, bi, err)
			}
			if l == r.ls[0] {
				clocks = append(clocks, c)
			}
		}
		if r.reg != nil && r.cfg.RegistryInterval == 0 {
			if err := r.applyRegistry(r.ctx, batch); err != nil {
				return nil, fmt.Errorf("batch %d: %w", bi, err)
			}
		}
	}
	return clocks, nil
}

// registryPhase completes the registry's run, if any: paced, it streams
// the batches now, alone; then its results must equal dense's streamed
// analytics'.
func (r *run) registryPhase(dense []*running) error {
	if r.reg == nil {
		return nil
	}
	if r.cfg.RegistryInterval > 0 {
		// A stream that does not wait, alone on the machine: after the
		// layouts' batches.
		if err := r.paceRegistry(r.ctx, r.src.ops); err != nil {
			return err
		}
	} else {
		r.registryFigures()
	}
	return r.sameAsRegistry(dense)
}

// incrementalFigures sets each streamed analytic's figures under every
// layout from its runs and the dense layout's steady batches, and checks
// the layouts' results against dense's after the stream.
func (r *run) incrementalFigures(runs map[*layout][]*running, steady []batchClock) error {
	res, ls, dense := r.res, r.ls, r.ls[0]
	res.Incremental = map[string]*Incremental{}
	for k, name := range streamed {
		for _, l := range ls {
			rn := runs[l][k]
			l.fig.UpdateSec[name], l.fig.StreamRecomputeSec[name], l.fig.Fallbacks[name] = bench.Mean(rn.steady()), bench.Mean(rn.reT), rn.fallbacks
		}
		rn := runs[dense][k]
		inc := &Incremental{UpdateSec: dense.fig.UpdateSec[name], MaxUpdateSec: slices.Max(append([]float64{0}, rn.steady()...)),
			WarmupUpdateSec: rn.incT[0], RecomputeSec: dense.fig.StreamRecomputeSec[name],
			Fallbacks: dense.fig.Fallbacks[name], Batches: len(r.src.ops)}
		inc.Speedup = inc.RecomputeSec / inc.UpdateSec
		inc.BatchSec, inc.BatchP99Sec = meanP99(steady, func(c batchClock) float64 { return c.apply + c.advanceWall + c.own[k] })
		res.Incremental[name] = inc
		r.logf("%s: batch %.5fs (p99 %.5fs) from the Apply to its result; update %.5fs per batch (slowest %.5fs; the warm-up batch %.5fs), recompute %.4fs (%.1fx), %d fallbacks in %d batches",
			name, inc.BatchSec, inc.BatchP99Sec, inc.UpdateSec, inc.MaxUpdateSec, inc.WarmupUpdateSec, inc.RecomputeSec, inc.Speedup, inc.Fallbacks, inc.Batches)
		for _, l := range ls[1:] {
			if name != "pagerank" && name != "degree" {
				if err := agreeUnder(name, runs[dense][k].a, runs[l][k].a, l.id, r.src.nv, r.cfg.Seed+1); err != nil {
					return fmt.Errorf("after the stream, under %s ids: %w", l.name, err)
				}
			}
			r.logf("%s: update under %s ids %.5fs, dense %.5fs (%.2fx)", name, l.name, l.fig.UpdateSec[name],
				dense.fig.UpdateSec[name], l.fig.UpdateSec[name]/dense.fig.UpdateSec[name])
		}
	}
	return nil
}

// topologyFigures sets the dense topology's figures after the stream,
// and its counters over it (after less before).
func (r *run) topologyFigures(before, after views.TopologyStats) {
	res := r.res
	if after.Advances > 0 {
		res.Topology.AdvanceSec = after.Advance.Seconds() / float64(after.Advances)
	}
	res.Topology.EdgesAfterBatch, res.Topology.BytesAfter = after.Edges, after.Bytes
	res.Topology.BytesPerEdgeAfter = float64(after.Bytes) / float64(max(1, after.Edges))
	res.Topology.AdvanceCounters = advanceCounters(before, after)
	r.logf("topology after the stream: %d edges, %.1f bytes per edge (%.1f before)", after.Edges, res.Topology.BytesPerEdgeAfter, res.Topology.BytesPerEdge)
}

// batchOf is the store batch of ops, their ids through id.
func batchOf(ops []engine.Op, id func(uint64) uint64) *engine.Batch {
	var b engine.Batch
	for _, o := range ops {
		switch o.Kind {
		case engine.OpUpsert:
			b.InsertWeighted(id(o.Src), id(o.Dst), o.Weight)
		case engine.OpDeleteEdge:
			b.DeleteEdge(id(o.Src), id(o.Dst))
		case engine.OpDeleteVertex:
			b.DeleteVertex(id(o.Src))
		}
	}
	return &b
}

// applyBatch applies one batch to l's store and brings l's analytics to
// it, timing each part (see stream).
func (r *run) applyBatch(l *layout, rns []*running, batch []engine.Op, recompute bool) (batchClock, error) {
	ctx := r.ctx
	c := batchClock{ops: len(batch), own: make([]float64, len(rns))}
	b := batchOf(batch, l.id)
	runtime.GC() // the previous batch's garbage is not this one's
	st0 := l.m.Topology().Stats()
	t0 := time.Now()
	if _, err := l.store.Apply(b); err != nil {
		return c, err
	}
	c.apply = time.Since(t0).Seconds()
	a0 := allocBytes()
	t1 := time.Now()
	u, err := r.topoOf[l].PullNow(ctx) // the advance
	if err != nil {
		return c, err
	}
	u.Done()
	c.advanceWall = time.Since(t1).Seconds()
	a1 := allocBytes()
	c.advAlloc = a1 - a0
	st1 := l.m.Topology().Stats()
	c.advance = (st1.Advance - st0.Advance).Seconds()
	c.changes = st1.Changes - st0.Changes
	r.logf("%s ids, a batch of %d operations: advance %.2f ms, %d compactions of the topology's blocks (%d heads copied)",
		l.name, len(batch), c.advanceWall*1e3, st1.Compactions-st0.Compactions, st1.ElementsCompacted-st0.ElementsCompacted)
	// Every analytic's pull and update; the pulls are held (the topology
	// cannot advance: nothing is applied meanwhile) for the recomputes.
	pulls := make([]*views.TopoUpdate, len(rns))
	defer func() {
		for _, u := range pulls {
			if u != nil {
				u.Done()
			}
		}
	}()
	for k, rn := range rns {
		t0 := time.Now()
		u, sec, err := rn.update(ctx)
		if err != nil {
			return c, fmt.Errorf("%s: %w", rn.name, err)
		}
		c.own[k] = time.Since(t0).Seconds()
		pulls[k] = u
		rn.incT = append(rn.incT, sec)
	}
	c.updateAlloc = allocBytes() - a1
	if recompute {
		for k, rn := range rns {
			if err := rn.recompute(ctx, pulls[k]); err != nil {
				return c, fmt.Errorf("%s: %w", rn.name, err)
			}
		}
	}
	return c, nil
}

// batchFigures sums up the dense layout's batches.
func (r *run) batchFigures(steady []batchClock) {
	if len(steady) == 0 {
		return
	}
	bf := &BatchFigures{Batches: len(steady)}
	ops, changes, advAlloc, updAlloc, adv := 0, uint64(0), uint64(0), uint64(0), 0.0
	for _, c := range steady {
		ops += c.ops
		changes += c.changes
		advAlloc += c.advAlloc
		updAlloc += c.updateAlloc
		adv += c.advance
	}
	bf.Ops = float64(ops) / float64(len(steady))
	bf.ApplySec, bf.ApplyP99Sec = meanP99(steady, func(c batchClock) float64 { return c.apply })
	bf.AdvanceSec, bf.AdvanceP99Sec = meanP99(steady, func(c batchClock) float64 { return c.advance })
	bf.AdvanceUSPerOp = adv / float64(max(1, ops)) * 1e6
	bf.Changes = float64(changes) / float64(len(steady))
	bf.AdvanceUSPerChange = adv / float64(max(1, changes)) * 1e6
	bf.AllSec, bf.AllP99Sec = meanP99(steady, func(c batchClock) float64 {
		s := c.apply + c.advanceWall
		for _, x := range c.own {
			s += x
		}
		return s
	})
	bf.AdvanceAllocsOp = float64(advAlloc) / float64(max(1, ops))
	bf.UpdateAllocsOp = float64(updAlloc) / float64(max(1, ops))
	r.res.Batch = bf
	r.logf("batches of %.0f operations (%.0f edge changes): apply %.5fs, advance %.5fs (p99 %.5fs; %.2f µs per operation, %.2f per edge change, %.0f bytes allocated per operation), all five analytics' results %.5fs after the Apply (p99 %.5fs; their updates allocated %.0f bytes per operation)",
		bf.Ops, bf.Changes, bf.ApplySec, bf.AdvanceSec, bf.AdvanceP99Sec, bf.AdvanceUSPerOp, bf.AdvanceUSPerChange, bf.AdvanceAllocsOp, bf.AllSec, bf.AllP99Sec, bf.UpdateAllocsOp)
}

// advanceCounters are the topology's counters over the stream (after less
// before).
func advanceCounters(before, after views.TopologyStats) map[string]uint64 {
	return map[string]uint64{
		"advances": after.Advances - before.Advances,
		"ops":      after.Ops - before.Ops,
		"changes":  after.Changes - before.Changes,
		"builds":   after.Builds - before.Builds,
		// The advance's work: compactions of the topology's blocks, the
		// heads they copied, and the heads the batches' rewrites wrote.
		"compactions":        after.Compactions - before.Compactions,
		"elements_compacted": after.ElementsCompacted - before.ElementsCompacted,
		"elements_moved":     after.ElementsMoved - before.ElementsMoved,
	}
}

// ratios sets each layout's figures over dense ids'.
func (r *run) ratios() {
	res, dense := r.res, r.ls[0]
	for _, l := range r.ls[1:] {
		ratios := map[string]float64{}
		for a, sec := range l.fig.RecomputeSec {
			ratios[a+"_recompute"] = sec / dense.fig.RecomputeSec[a]
		}
		for a, sec := range l.fig.UpdateSec {
			ratios[a+"_update"] = sec / dense.fig.UpdateSec[a]
		}
		switch l.name {
		case "sparse":
			res.SparseOverDense = ratios
			for _, x := range ratios {
				res.MaxSparseOverDense = math.Max(res.MaxSparseOverDense, x)
			}
		case "unmapped":
			res.UnmappedOverDense = ratios
		case "keys":
			res.KeysOverDense = ratios
		}
	}
}

// running is one analytic following the stream under one layout.
type running struct {
	name      string
	a, ref    analytics.Analytic
	ts        *views.TopoStream
	incT, reT []float64
	fallbacks int
}

// steady is the update times after the first batch's (the warm-up), or
// the first's when it was the only one.
func (rn *running) steady() []float64 {
	if len(rn.incT) <= 1 {
		return rn.incT
	}
	return rn.incT[1:]
}

// update pulls one batch into the analytic and updates it; it returns
// the pull (for recompute; the caller calls Done) and the update's time.
func (rn *running) update(ctx context.Context) (*views.TopoUpdate, float64, error) {
	// The batch is applied: take what there is (a batch that logged
	// nothing, only deletes of missing edges, must not wait for more).
	u, err := rn.ts.PullNow(ctx)
	if err != nil {
		return nil, 0, err
	}
	if u.Lost {
		u.Done()
		return nil, 0, errors.New("the topology stream lost operations")
	}
	t0 := time.Now()
	re, err := analytics.UpdateTopo(ctx, rn.a.(analytics.TopoAnalytic), u)
	sec := time.Since(t0).Seconds()
	if err != nil {
		u.Done()
		return nil, 0, err
	}
	if re {
		rn.fallbacks++
	}
	return u, sec, nil
}

// recompute times a recompute on u's graph into a second instance, whose
// result must equal the update's.
func (rn *running) recompute(ctx context.Context, u *views.TopoUpdate) error {
	sec, err := timed(func() error { return rn.ref.(analytics.TopoAnalytic).Recompute(ctx, u.G) })
	if err != nil {
		return err
	}
	rn.reT = append(rn.reT, sec)
	if err := sameResult(rn.name, rn.a, rn.ref, u.G); err != nil {
		return fmt.Errorf("the update and a recompute disagree: %w", err)
	}
	return nil
}

// meanP99 is the mean and the 99th percentile (nearest rank) of f over
// cs.
func meanP99(cs []batchClock, f func(batchClock) float64) (float64, float64) {
	xs := make([]float64, len(cs))
	for i, c := range cs {
		xs[i] = f(c)
	}
	return meanP99Of(xs)
}

// meanP99Of is the mean and the 99th percentile of xs.
func meanP99Of(xs []float64) (float64, float64) {
	return bench.Mean(xs), bench.Quantile(xs, 0.99)
}

// allocBytes is the heap bytes the process has allocated so far.
func allocBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
