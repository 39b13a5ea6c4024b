// Package analyticsbench is `graphtide bench analytics`: it loads an RMAT
// graph into a fresh store, compacts it, and measures in the same run
// (figures are ratios against baselines taken in that run):
//
//  1. BFS, WCC and PageRank (20 iterations) on a fresh static view and on a
//     static in-memory CSR built from the same edges, with the same
//     algorithm code reading either; the two results must agree or the
//     benchmark fails;
//  2. then it streams a further 1% of edges in batches of 10,000 and, for
//     each incremental analytic (bfs, wcc, pagerank, sssp, degree), reports
//     the mean time of its incremental update per batch against a full
//     recompute on the same view.
package analyticsbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"time"

	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/staticcsr"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Config of one run.
type Config struct {
	Scale, EdgeFactor int
	Seed              uint64
	Dir               string // scratch directory for the store
	BatchSize         int    // streamed edges per batch (default 10000)
	StreamFraction    float64
	Repeats           int // best of this many timed runs on view and CSR (default 3)
	Log               io.Writer
}

// Result is the JSON line the command prints last.
type Result struct {
	Edges         int     `json:"edges"`
	Vertices      uint64  `json:"vertices"`
	Root          uint64  `json:"root"`
	BFSViewSec    float64 `json:"bfs_view_sec"`
	BFSCSRSec     float64 `json:"bfs_csr_sec"`
	WCCViewSec    float64 `json:"wcc_view_sec"`
	WCCCSRSec     float64 `json:"wcc_csr_sec"`
	PRViewSec     float64 `json:"pr_view_sec"`
	PRCSRSec      float64 `json:"pr_csr_sec"`
	StreamedEdges int     `json:"streamed_edges"`
	Batches       int     `json:"batches"`
	// Per analytic: mean seconds per batch of the incremental update and of
	// a full recompute on the same view, and their ratio.
	BFSIncrementalSec      float64            `json:"bfs_incremental_sec"`
	BFSRecomputeSec        float64            `json:"bfs_recompute_sec"`
	WCCIncrementalSec      float64            `json:"wcc_incremental_sec"`
	WCCRecomputeSec        float64            `json:"wcc_recompute_sec"`
	PageRankIncrementalSec float64            `json:"pagerank_incremental_sec"`
	PageRankRecomputeSec   float64            `json:"pagerank_recompute_sec"`
	SSSPIncrementalSec     float64            `json:"sssp_incremental_sec"`
	SSSPRecomputeSec       float64            `json:"sssp_recompute_sec"`
	DegreeIncrementalSec   float64            `json:"degree_incremental_sec"`
	DegreeRecomputeSec     float64            `json:"degree_recompute_sec"`
	Speedups               map[string]float64 `json:"incremental_speedup"`
}

func graphAnalytic(s analytics.Spec, root uint64) (analytics.GraphAnalytic, analytics.Analytic, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	a, err := analytics.New(s, root, nil)
	if err != nil {
		return nil, nil, err
	}
	return a.(analytics.GraphAnalytic), a, nil
}

// bestOf runs f n times and returns the shortest time.
func bestOf(n int, f func() error) (float64, error) {
	best := math.Inf(1)
	for i := 0; i < n; i++ {
		runtime.GC()
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		best = math.Min(best, time.Since(t0).Seconds())
	}
	return best, nil
}

// Run performs the benchmark.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	logf := func(f string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, f+"\n", a...)
		}
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 10000
	}
	if cfg.StreamFraction == 0 {
		cfg.StreamFraction = 0.01
	}
	if cfg.Repeats == 0 {
		cfg.Repeats = 3
	}
	r := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}
	if err := r.Validate(); err != nil {
		return res, err
	}
	edges := r.Generate()
	nv := uint64(1) << cfg.Scale
	res.Edges, res.Vertices = len(edges), nv
	extra := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed + 1}.Generate()
	extra = extra[:int(float64(len(edges))*cfg.StreamFraction)]
	res.StreamedEdges = len(extra)

	// Root: the vertex with the most out-edges (reaches the bulk of the graph).
	deg := make([]uint32, nv)
	for _, e := range edges {
		deg[e.Src]++
	}
	for v := range deg {
		if deg[v] > deg[res.Root] {
			res.Root = uint64(v)
		}
	}
	deg = nil

	t0 := time.Now()
	csr := staticcsr.Build(nv, edges)
	logf("csr: built in %.2fs, %d distinct edges", time.Since(t0).Seconds(), csr.NumEdges())

	s, err := engine.Open(filepath.Join(cfg.Dir, "store"), &engine.Options{InEdges: true})
	if err != nil {
		return res, err
	}
	defer s.Close()
	t0 = time.Now()
	var b engine.Batch
	for i := 0; i < len(edges); i += 10000 {
		b.Reset()
		for _, e := range edges[i:min(i+10000, len(edges))] {
			b.Insert(e.Src, e.Dst)
		}
		if _, err := s.Apply(&b); err != nil {
			return res, err
		}
	}
	if err := s.CompactAll(); err != nil {
		return res, err
	}
	logf("store: loaded and compacted in %.1fs", time.Since(t0).Seconds())
	m, err := views.NewManager(s, views.Config{})
	if err != nil {
		return res, err
	}
	defer m.Close()
	root := fmt.Sprint(res.Root)

	// 1. Static: view vs CSR, same algorithm code.
	view, err := m.Static(views.StaticOptions{Kind: views.Fresh})
	if err != nil {
		return res, err
	}
	cg := views.CSRGraph{C: csr, Sq: view.Seq()}
	type pair struct {
		name        string
		spec        analytics.Spec
		viewS, csrS *float64
	}
	for _, p := range []pair{
		{"bfs", analytics.Spec{Type: "bfs", Root: root}, &res.BFSViewSec, &res.BFSCSRSec},
		{"wcc", analytics.Spec{Type: "wcc"}, &res.WCCViewSec, &res.WCCCSRSec},
		{"pagerank", analytics.Spec{Type: "pagerank", MaxIterations: 20, Tolerance: 1e-300}, &res.PRViewSec, &res.PRCSRSec},
	} {
		ga, av, err := graphAnalytic(p.spec, res.Root)
		if err != nil {
			return res, err
		}
		gc, ac, _ := graphAnalytic(p.spec, res.Root)
		if *p.viewS, err = bestOf(cfg.Repeats, func() error { return ga.Recompute(ctx, view) }); err != nil {
			return res, err
		}
		if *p.csrS, err = bestOf(cfg.Repeats, func() error { return gc.Recompute(ctx, cg) }); err != nil {
			return res, err
		}
		if err := agree(p.name, av, ac); err != nil {
			return res, err
		}
		logf("%s: view %.3fs, csr %.3fs (%.2fx)", p.name, *p.viewS, *p.csrS, *p.viewS / *p.csrS)
	}
	view.Release()
	csr, cg = nil, views.CSRGraph{}
	runtime.GC()

	// 2. Incremental vs recompute, batch by batch.
	type inc struct {
		name       string
		spec       analytics.Spec
		incS, recS *float64
		ga         analytics.GraphAnalytic
		st         *views.Stateful
		incT, recT []float64
	}
	incs := []*inc{
		{name: "bfs", spec: analytics.Spec{Type: "bfs", Root: root}, incS: &res.BFSIncrementalSec, recS: &res.BFSRecomputeSec},
		{name: "wcc", spec: analytics.Spec{Type: "wcc"}, incS: &res.WCCIncrementalSec, recS: &res.WCCRecomputeSec},
		{name: "pagerank", spec: analytics.Spec{Type: "pagerank"}, incS: &res.PageRankIncrementalSec, recS: &res.PageRankRecomputeSec},
		{name: "sssp", spec: analytics.Spec{Type: "sssp", Root: root}, incS: &res.SSSPIncrementalSec, recS: &res.SSSPRecomputeSec},
		{name: "degree", spec: analytics.Spec{Type: "degree", Threshold: 1000}, incS: &res.DegreeIncrementalSec, recS: &res.DegreeRecomputeSec},
	}
	for _, x := range incs {
		if x.ga, _, err = graphAnalytic(x.spec, res.Root); err != nil {
			return res, err
		}
		if x.st, err = m.Stateful(views.StatefulOptions{}); err != nil {
			return res, err
		}
		defer x.st.Close()
		t0 := time.Now()
		if err := x.ga.Recompute(ctx, x.st.View()); err != nil {
			return res, err
		}
		logf("%s: first compute %.3fs", x.name, time.Since(t0).Seconds())
	}
	for i := 0; i < len(extra); i += cfg.BatchSize {
		b.Reset()
		for _, e := range extra[i:min(i+cfg.BatchSize, len(extra))] {
			b.Insert(e.Src, e.Dst)
		}
		if _, err := s.Apply(&b); err != nil {
			return res, err
		}
		res.Batches++
		// Recompute on every third batch (they are slow) and the first.
		recompute := res.Batches%3 == 1
		for _, x := range incs {
			u, err := x.st.Pull(ctx)
			if err != nil {
				return res, err
			}
			runtime.GC()
			t0 := time.Now()
			re, err := x.ga.Update(ctx, u)
			if err != nil {
				return res, err
			}
			if re {
				return res, fmt.Errorf("%s recomputed on an insert-only batch", x.name)
			}
			x.incT = append(x.incT, time.Since(t0).Seconds())
			if recompute {
				runtime.GC()
				t0 = time.Now()
				if err := x.ga.Recompute(ctx, u.View); err != nil {
					return res, err
				}
				x.recT = append(x.recT, time.Since(t0).Seconds())
			}
		}
	}
	res.Speedups = map[string]float64{}
	for _, x := range incs {
		*x.incS, *x.recS = mean(x.incT), mean(x.recT)
		res.Speedups[x.name] = *x.recS / *x.incS
		logf("%s: incremental %.5fs per batch, recompute %.3fs (%.0fx)", x.name, *x.incS, *x.recS, res.Speedups[x.name])
	}
	return res, nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

// agree checks that an analytic computed on the view and on the CSR gave
// the same answer.
func agree(name string, v, c analytics.Analytic) error {
	switch sv := v.Summary().(type) {
	case analytics.BFSSummary:
		sc := c.Summary().(analytics.BFSSummary)
		if fmt.Sprint(sv.Levels) != fmt.Sprint(sc.Levels) {
			return fmt.Errorf("bfs on the view and on the csr disagree: levels %v vs %v", sv.Levels, sc.Levels)
		}
	case analytics.WCCSummary:
		sc := c.Summary().(analytics.WCCSummary)
		if sv.Components != sc.Components || sv.Largest != sc.Largest {
			return fmt.Errorf("wcc on the view and on the csr disagree: %+v vs %+v", sv, sc)
		}
	case analytics.PageRankSummary:
		sc := c.Summary().(analytics.PageRankSummary)
		if len(sv.Top) != len(sc.Top) {
			return fmt.Errorf("pagerank on the view and on the csr disagree: %+v vs %+v", sv.Top, sc.Top)
		}
		for i := range sv.Top {
			// The view's id space ends at the largest id with an edge, the
			// CSR's at 2^scale: the iterations start from 1/n of different
			// n, so 20 of them agree to a few parts in 10^8.
			if sv.Top[i].Vertex != sc.Top[i].Vertex || math.Abs(sv.Top[i].Rank-sc.Top[i].Rank) > 1e-6*sc.Top[i].Rank {
				return fmt.Errorf("pagerank on the view and on the csr disagree: %+v vs %+v", sv.Top, sc.Top)
			}
		}
	default:
		return fmt.Errorf("%s: no comparison", name)
	}
	return nil
}
