// Package analyticsbench is `graphtide bench analytics`: it loads a graph
// (an RMAT graph, or --input) into fresh stores, compacts them, and
// measures in the same run (figures are ratios against baselines taken in
// that run):
//
//  1. Static kernels: bfs, wcc, pagerank (to its default tolerance, at
//     most 20 iterations, their count reported) and sssp on the
//     topology of a compacted view (views.Topology, what serve's analytics
//     read) and on the topology of a plain in-memory CSR built from the
//     same edges: the same kernels, so the ratio measures the store and
//     its topology, not the algorithm. The results must agree
//     (docs/benchmarks.md has the results).
//  2. The stream: a further share of operations in batches, each with
//     --delete-fraction deletes of existing edges and
//     --vertex-delete-fraction vertex deletes; every analytic follows it
//     through the shared topology). Per analytic: the mean time of its update
//     per batch after the first (a warm-up, reported apart), of a
//     recompute on the same topology (every third batch, whose result
//     must equal the update's), and its fallbacks (updates that
//     recomputed).
//  3. Then the kernels again on the topology the stream advanced (the
//     streamed share of edges in its rewritten lists, as fresh data is in
//     the store's MemGraphs), against the compacted one.
//
// All of it under each id layout of --ids, each in a store of its own:
// dense (the ids as generated or given), sparse (every id v mapped to
// (v*K+C) mod 2^62 and, as serve and load store them, through the key
// dictionary to a dense id in order of first appearance, the mapping timed
// with the load), unmapped (the same sparse ids stored as they are: the
// analytics index them through a hash table) and keys (ids of the
// string-key band in order of first appearance). Every result must agree
// vertex for vertex with the dense one.
package analyticsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/keydict"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
)

// Config of one run.
type Config struct {
	Scale, EdgeFactor int
	Seed              uint64
	// Input, when set, is the graph (an edge file, el or bin) instead of
	// an RMAT graph: its last StreamFraction of edges are streamed.
	Input string
	// Root of bfs and sssp (-1: the vertex with the most out-edges).
	Root           int64
	Dir            string // scratch directory for the stores
	BatchSize      int    // streamed operations per batch (default 10000)
	StreamFraction float64
	// DeleteFraction of each batch deletes existing edges, and
	// VertexDeleteFraction deletes vertices with edges.
	DeleteFraction, VertexDeleteFraction float64
	Repeats                              int // best of this many timed runs of each kernel (default 3)
	// PageRankTolerance is the streamed pagerank's tolerance (its spec's
	// default, 1e-6, unless set): its updates push residuals only for
	// changes within twice its target, so it decides which way they go.
	PageRankTolerance float64
	// IDs are the id layouts measured, dense first (default: all of
	// Layouts; only dense with Input).
	IDs []string
	// KernelsOnly: only the static kernels, bare (analytics.RunKernel), on
	// the plain CSR's topology of the whole graph, each --repeats times:
	// no store and no stream, so that the process holds little besides
	// the graph (a by-hand comparison with GAPBS's kernels).
	KernelsOnly bool
	CPUProfile  string // if set, a Go CPU profile of the whole run goes here
	Log         io.Writer
}

// DefaultConfig is the command's defaults, without Dir.
func DefaultConfig() Config {
	return Config{Scale: 20, EdgeFactor: 16, Seed: 1, Root: -1, BatchSize: 10000, StreamFraction: 0.01,
		DeleteFraction: 0.05, VertexDeleteFraction: 0.0001, Repeats: 3, IDs: Layouts, PageRankTolerance: 1e-6}
}

// Bounds of Config.Scale and Config.EdgeFactor.
const (
	MaxScale      = 26
	MaxEdgeFactor = 64
)

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	bench.GraphFlags(fs, &c.Scale, &c.EdgeFactor, &c.Seed, "log2 of the vertex count of the RMAT graph", "random seed")
	fs.StringVar(&c.Input, "input", c.Input, "run on this edge file (el: \"src dst [weight]\" lines, or bin) instead of an RMAT graph")
	fs.Int64Var(&c.Root, "root", c.Root, "root vertex of bfs and sssp (default: the vertex with the most out-edges)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "streamed operations per batch")
	fs.Float64Var(&c.StreamFraction, "stream-fraction", c.StreamFraction, "share of the graph's edge count streamed after the load")
	fs.Float64Var(&c.DeleteFraction, "delete-fraction", c.DeleteFraction, "share of each batch that deletes existing edges")
	fs.Float64Var(&c.VertexDeleteFraction, "vertex-delete-fraction", c.VertexDeleteFraction, "share of each batch that deletes vertices")
	fs.IntVar(&c.Repeats, "repeats", c.Repeats, "timed runs of each static kernel (the best counts)")
	fs.Float64Var(&c.PageRankTolerance, "pagerank-tolerance", c.PageRankTolerance, "tolerance of the streamed pagerank (its updates push residuals only for changes within twice its target)")
	fs.StringVar(&c.Dir, "dir", c.Dir, "scratch directory for the stores (default: a temporary one)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a Go CPU profile of the whole run to this file")
	_ = fs.MarkHidden("cpuprofile")
	fs.StringSliceVar(&c.IDs, "ids", c.IDs, "id layouts to measure, dense first: dense, sparse, unmapped, keys (with --input: dense only)")
	fs.BoolVar(&c.KernelsOnly, "kernels-only", c.KernelsOnly, "time only the bare static kernels on the whole graph's plain CSR topology, --repeats times each (min and median; for a by-hand comparison with GAPBS)")
}

// Validate checks the settings; its messages name the command's flags.
func (c Config) Validate() error {
	if c.Input == "" {
		if err := bench.ValidateGraph(c.Scale, c.EdgeFactor, MaxScale, MaxEdgeFactor); err != nil {
			return err
		}
	}
	if c.BatchSize < 1 || c.BatchSize > 10000000 {
		return fmt.Errorf("--batch-size must be between 1 and 10000000, got %d", c.BatchSize)
	}
	if c.StreamFraction <= 0 || c.StreamFraction > 1 {
		return fmt.Errorf("--stream-fraction must be in (0, 1], got %v", c.StreamFraction)
	}
	if c.DeleteFraction < 0 || c.VertexDeleteFraction < 0 || c.DeleteFraction+c.VertexDeleteFraction > 1 {
		return fmt.Errorf("--delete-fraction and --vertex-delete-fraction must be at least 0 and add up to at most 1, got %v and %v",
			c.DeleteFraction, c.VertexDeleteFraction)
	}
	if !(c.PageRankTolerance >= analytics.MinTolerance && c.PageRankTolerance <= analytics.MaxTolerance) {
		return fmt.Errorf("--pagerank-tolerance must be between %v and %v, got %v", analytics.MinTolerance, analytics.MaxTolerance, c.PageRankTolerance)
	}
	if c.Repeats < 1 || c.Repeats > 100 {
		return fmt.Errorf("--repeats must be between 1 and 100, got %d", c.Repeats)
	}
	if c.Root < -1 || c.Root >= int64(engine.HighIDBase) {
		return fmt.Errorf("--root must be a vertex id below 2^62 (or -1: the vertex with the most out-edges), got %d", c.Root)
	}
	if len(c.IDs) == 0 || c.IDs[0] != "dense" {
		return fmt.Errorf("--ids must start with dense (the baseline), got %q", strings.Join(c.IDs, ","))
	}
	for i, n := range c.IDs {
		if !slices.Contains(Layouts, n) || slices.Index(c.IDs, n) != i {
			return fmt.Errorf("--ids: %q is not one of %s, or is repeated", n, strings.Join(Layouts, ", "))
		}
	}
	return nil
}

// Layouts are the id layouts the benchmark knows.
var Layouts = []string{"dense", "sparse", "unmapped", "keys"}

// Kernel is one analytic's static figures (dense ids).
type Kernel struct {
	// ViewSec: best of the repeats on the topology of the compacted view;
	// CSRSec: on the topology of the plain CSR; FreshSec: on the topology
	// after the stream (its rewritten lists hold the streamed edges).
	ViewSec       float64 `json:"view_sec"`
	CSRSec        float64 `json:"csr_sec"`
	FreshSec      float64 `json:"fresh_sec"`
	ViewOverCSR   float64 `json:"view_over_csr"`
	FreshOverView float64 `json:"fresh_over_view"`
	// Iterations and FreshIterations: pagerank's, on the compacted view and
	// after the stream (its FreshOverView compares one iteration's time).
	Iterations      int `json:"iterations,omitempty"`
	FreshIterations int `json:"fresh_iterations,omitempty"`
}

// BareKernel is one kernel's figures under --kernels-only.
type BareKernel struct {
	MinSec    float64 `json:"min_sec"`
	MedianSec float64 `json:"median_sec"`
	// pagerank: the iterations to the default tolerance, and the least
	// time of one iteration past the first (min_sec less the least time of
	// a run of one iteration, over the iterations after the first).
	Iterations      int     `json:"iterations,omitempty"`
	PerIterationSec float64 `json:"per_iteration_sec,omitempty"`
}

// Incremental is one analytic's stream figures (dense ids).
type Incremental struct {
	UpdateSec    float64 `json:"update_sec"`     // mean per batch, the first (the warm-up) left out
	MaxUpdateSec float64 `json:"max_update_sec"` // the slowest of those
	// WarmupUpdateSec is the first batch's update: it allocates the
	// analytic's per-vertex scratch, and wcc builds its support forest
	// there (once in an analytic's life, and again only after a
	// fallback). With one batch only, UpdateSec is that batch too.
	WarmupUpdateSec float64 `json:"warmup_update_sec"`
	RecomputeSec    float64 `json:"recompute_sec"` // mean of the recomputes on the same topology
	Speedup         float64 `json:"speedup"`       // recompute over update
	Fallbacks       int     `json:"fallbacks"`     // updates that recomputed, the warm-up's included
	Batches         int     `json:"batches"`       // the warm-up included
}

// TopologyFigures describe the dense layout's topology.
type TopologyFigures struct {
	BuildSec        float64 `json:"build_sec"`     // from the compacted view
	CSRBuildSec     float64 `json:"csr_build_sec"` // from the plain CSR
	Bytes           int64   `json:"bytes"`
	BytesPerEdge    float64 `json:"bytes_per_edge"`
	AdvanceSec      float64 `json:"advance_sec_per_batch"` // applying one batch from the edge log
	Edges           int64   `json:"edges"`
	Vertices        int     `json:"vertices"`
	EdgesAfterBatch int64   `json:"edges_after_stream"`
}

// Result is the JSON line the command prints last.
type Result struct {
	Input          string  `json:"input,omitempty"`
	Edges          int     `json:"edges"`    // loaded (before dedupe)
	Vertices       uint64  `json:"vertices"` // vertex ids (RMAT: 2^scale)
	Root           uint64  `json:"root"`
	Weighted       bool    `json:"weighted"`
	StreamedOps    int     `json:"streamed_ops"`
	Batches        int     `json:"batches"`
	DeleteFraction float64 `json:"delete_fraction"`
	VertexDeletes  int     `json:"vertex_deletes"`

	Topology TopologyFigures    `json:"topology"`
	Kernels  map[string]*Kernel `json:"kernels"`
	// KernelsOnly holds the figures of --kernels-only (nothing else is
	// measured then).
	KernelsOnly map[string]*BareKernel  `json:"kernels_only,omitempty"`
	Incremental map[string]*Incremental `json:"incremental"`

	// IDs has the figures of each id layout measured, dense included.
	IDs map[string]*IDFigures `json:"ids"`
	// <layout>OverDense are, per analytic, the time under those ids over
	// the time under dense ids: "<analytic>_recompute" (the kernel on the
	// compacted view's topology) and "<analytic>_update" (mean per batch).
	SparseOverDense    map[string]float64 `json:"sparse_over_dense,omitempty"`
	UnmappedOverDense  map[string]float64 `json:"unmapped_over_dense,omitempty"`
	KeysOverDense      map[string]float64 `json:"keys_over_dense,omitempty"`
	MaxSparseOverDense float64            `json:"max_sparse_over_dense,omitempty"`
	PeakRSSBytes       int64              `json:"peak_rss_bytes"`
}

// IDFigures are the figures of one id layout.
type IDFigures struct {
	LoadSec float64 `json:"load_sec"` // applying the edges and compacting (sparse: and mapping the ids)
	// IndexSec is the first IDs of a view: the scan that builds the
	// manager's vertex index (later views read the edge log).
	IndexSec      float64 `json:"index_build_sec"`
	IndexVertices int     `json:"index_vertices"` // indexes, identity regions counted whole
	IndexHashed   int     `json:"index_hashed"`   // vertices indexed through the hash table
	IndexBytes    int64   `json:"index_bytes"`
	TopologySec   float64 `json:"topology_build_sec"`
	// RecomputeSec: per analytic, the kernel on the compacted view's
	// topology (best of the repeats).
	RecomputeSec map[string]float64 `json:"recompute_sec"`
	// UpdateSec: per analytic, mean seconds of an update per batch;
	// StreamRecomputeSec: mean of the recomputes during the stream.
	UpdateSec          map[string]float64 `json:"update_sec"`
	StreamRecomputeSec map[string]float64 `json:"stream_recompute_sec"`
	Fallbacks          map[string]int     `json:"fallbacks"`
}

// Multiplier and offset of the sparse layout's bijection of [0, 2^62).
const (
	sparseMul = 0x2545F4914F6CDD1D // odd: invertible mod 2^62
	sparseAdd = 0x5DEECE66D
)

// SparseID is the sparse layout's id of the generated vertex v.
func SparseID(v uint64) uint64 { return (v*sparseMul + sparseAdd) & (engine.HighIDBase - 1) }

// layout is one id layout: its mapping of the generated ids, its store
// and view manager, and what was measured on it.
type layout struct {
	name  string
	id    func(uint64) uint64
	fig   *IDFigures
	store *engine.Store
	m     *views.Manager
	root  uint64
	// mapSec is the time the ids took to map (sparse), counted in the load.
	mapSec float64
}

// wedge is an edge with its weight.
type wedge struct {
	src, dst uint64
	w        float64
}

// newAnalytic builds the analytic of spec s (validated) at root.
func newAnalytic(s analytics.Spec, root uint64) (analytics.Analytic, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return analytics.New(s, root, nil)
}

// timed runs f once after a collection and returns its time.
func timed(f func() error) (float64, error) {
	runtime.GC()
	t0 := time.Now()
	err := f()
	return time.Since(t0).Seconds(), err
}

// inFirstAppearance calls f once for each vertex of [0, nv), in the order
// in which the edge lists name them first (as ingestion sees them), then
// for the vertices they never name, in order. It stops at f's first error.
func inFirstAppearance(nv uint64, lists [][]wedge, f func(v uint64) error) error {
	seen := make([]bool, nv)
	visit := func(v uint64) error {
		if seen[v] {
			return nil
		}
		seen[v] = true
		return f(v)
	}
	for _, es := range lists {
		for _, e := range es {
			if err := visit(e.src); err != nil {
				return err
			}
			if err := visit(e.dst); err != nil {
				return err
			}
		}
	}
	for v := range nv {
		if err := visit(v); err != nil {
			return err
		}
	}
	return nil
}

// load applies edges (under ids) to a new store in dir and compacts it.
func load(dir string, edges []wedge, id func(uint64) uint64) (*engine.Store, error) {
	s, err := engine.Open(dir, &engine.Options{InEdges: true})
	if err != nil {
		return nil, err
	}
	var b engine.Batch
	for i := 0; i < len(edges); i += 10000 {
		b.Reset()
		for _, e := range edges[i:min(i+10000, len(edges))] {
			b.InsertWeighted(id(e.src), id(e.dst), e.w)
		}
		if _, err := s.Apply(&b); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.CompactAll(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// readInput reads an edge file (weights from a third column, else 1).
func readInput(path string) ([]wedge, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r := edgefile.NewReader(f)
	var es []wedge
	nv := uint64(0)
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		if e.Src >= engine.HighIDBase || e.Dst >= engine.HighIDBase {
			return nil, 0, fmt.Errorf("%s: edge %d -> %d: --input takes numeric ids below 2^62", path, e.Src, e.Dst)
		}
		w, ok := r.Weight()
		if !ok {
			w = 1
		}
		es = append(es, wedge{e.Src, e.Dst, w})
		nv = max(nv, e.Src+1, e.Dst+1)
	}
	if len(es) == 0 {
		return nil, 0, fmt.Errorf("%s holds no edges", path)
	}
	return es, nv, nil
}

// The static kernels measured, with their specs (pagerank: exactly 20
// iterations).
var kernelSpecs = []struct {
	name string
	spec analytics.Spec
}{
	{"bfs", analytics.Spec{Type: "bfs"}},
	{"wcc", analytics.Spec{Type: "wcc"}},
	// To the default tolerance (at most 20 iterations): its iterations are
	// reported, to compare per iteration with kernels that run a set count.
	{"pagerank", analytics.Spec{Type: "pagerank", MaxIterations: 20}},
	{"sssp", analytics.Spec{Type: "sssp"}},
}

// withRoot sets the spec's root when its type needs one.
func withRoot(s analytics.Spec, root uint64) analytics.Spec {
	if analytics.NeedsRoot(s.Type) {
		s.Root = fmt.Sprint(root)
	}
	return s
}

// Run performs the benchmark.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	logf := func(f string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, f+"\n", a...)
		}
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.Input != "" && len(cfg.IDs) == len(Layouts) {
		cfg.IDs = []string{"dense"}
	}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	if cfg.Input != "" && len(cfg.IDs) > 1 {
		return res, fmt.Errorf("--ids: with --input only dense (the file's ids as they are) is measured, got %q", strings.Join(cfg.IDs, ","))
	}

	// The graph: loaded edges and the streamed share.
	var edges, extra []wedge
	var nv uint64
	if cfg.Input != "" {
		all, n, err := readInput(cfg.Input)
		if err != nil {
			return res, err
		}
		k := int(float64(len(all)) * cfg.StreamFraction)
		if cfg.KernelsOnly {
			k = 0 // the whole graph
		}
		edges, extra, nv = all[:len(all)-k], all[len(all)-k:], n
		res.Input = cfg.Input
	} else {
		r := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}
		if err := r.Validate(); err != nil {
			return res, err
		}
		conv := func(es []gen.Edge) []wedge {
			out := make([]wedge, len(es))
			for i, e := range es {
				out[i] = wedge{e.Src, e.Dst, 1}
			}
			return out
		}
		edges = conv(r.Generate())
		more := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed + 1}.Generate()
		extra = conv(more[:int(float64(len(edges))*cfg.StreamFraction)])
		nv = uint64(1) << cfg.Scale
	}
	if len(extra) == 0 && !cfg.KernelsOnly {
		return res, fmt.Errorf("--stream-fraction %v of %d edges streams none: raise it", cfg.StreamFraction, len(edges))
	}
	res.Edges, res.Vertices = len(edges), nv
	for _, e := range edges {
		res.Weighted = res.Weighted || e.w != 1
	}
	if cfg.Root >= 0 {
		res.Root = uint64(cfg.Root)
	} else {
		// The vertex with the most out-edges (reaches the bulk of the graph).
		deg := map[uint64]int{}
		best := 0
		for _, e := range edges {
			deg[e.src]++
			if d := deg[e.src]; d > best || d == best && e.src < res.Root {
				res.Root, best = e.src, d
			}
		}
	}
	if cfg.KernelsOnly {
		return kernelsOnly(ctx, cfg, res, edges, nv, logf)
	}
	ops := streamOps(edges, extra, cfg)
	res.StreamedOps, res.DeleteFraction = 0, cfg.DeleteFraction
	for _, b := range ops {
		res.StreamedOps += len(b)
		for _, o := range b {
			if o.Kind == engine.OpDeleteVertex {
				res.VertexDeletes++
			}
		}
	}
	res.Batches = len(ops)

	// The layouts' ids. Keys are numbered in order of first appearance;
	// vertices without edges come last.
	var ls []*layout
	for _, name := range cfg.IDs {
		l := &layout{name: name, fig: &IDFigures{RecomputeSec: map[string]float64{}, UpdateSec: map[string]float64{},
			StreamRecomputeSec: map[string]float64{}, Fallbacks: map[string]int{}}}
		switch name {
		case "dense":
			l.id = func(v uint64) uint64 { return v }
		case "sparse":
			dict, err := keydict.Open(filepath.Join(cfg.Dir, "keys-sparse.dict"))
			if err != nil {
				return res, err
			}
			defer dict.Close()
			dict.SetMapNumbers(true)
			t0 := time.Now()
			ids := make([]uint64, nv)
			err = inFirstAppearance(nv, [][]wedge{edges, extra}, func(v uint64) (err error) {
				ids[v], err = dict.NumID(SparseID(v))
				return err
			})
			if err != nil {
				return res, err
			}
			l.mapSec = time.Since(t0).Seconds()
			l.id = func(v uint64) uint64 { return ids[v] }
		case "unmapped":
			l.id = SparseID
		case "keys":
			key := make([]uint64, nv)
			next := engine.HighIDBase
			_ = inFirstAppearance(nv, [][]wedge{edges, extra}, func(v uint64) error {
				key[v] = next
				next++
				return nil
			})
			l.id = func(v uint64) uint64 { return key[v] }
		}
		l.root = l.id(res.Root)
		ls = append(ls, l)
	}
	res.IDs = map[string]*IDFigures{}
	for _, l := range ls {
		res.IDs[l.name] = l.fig
	}
	dense := ls[0]

	// The plain CSR's topology: the baseline.
	t0 := time.Now()
	csrTopo, err := views.BuildTopo(ctx, newEdgeGraph(nv, edges))
	if err != nil {
		return res, err
	}
	res.Topology.CSRBuildSec = time.Since(t0).Seconds()
	logf("csr: topology built in %.2fs, %d distinct edges", res.Topology.CSRBuildSec, csrTopo.Out.Edges())

	// Each layout's store, vertex index and topology (through a stream
	// that the analytics of part 2 share: it holds the topology).
	topoOf := map[*layout]*views.TopoStream{}
	for _, l := range ls {
		t0 := time.Now()
		if l.store, err = load(filepath.Join(cfg.Dir, "store-"+l.name), edges, l.id); err != nil {
			return res, err
		}
		defer l.store.Close()
		l.fig.LoadSec = time.Since(t0).Seconds() + l.mapSec
		if l.m, err = views.NewManager(l.store, views.Config{}); err != nil {
			return res, err
		}
		defer l.m.Close()
		v, err := l.m.Static(views.StaticOptions{Kind: views.Fresh})
		if err != nil {
			return res, err
		}
		l.fig.IndexSec, err = timed(func() error { _, err := v.IDs(); return err })
		v.Release()
		if err != nil {
			return res, err
		}
		ist := l.m.IndexStats()
		l.fig.IndexVertices, l.fig.IndexHashed, l.fig.IndexBytes = ist.Vertices, ist.Hashed, ist.Bytes
		ts, err := l.m.Topology().Stream(views.StreamOptions{})
		if err != nil {
			return res, err
		}
		defer ts.Close()
		topoOf[l] = ts
		u, err := ts.Pull(ctx) // builds the topology
		if err != nil {
			return res, err
		}
		u.Done()
		tst := l.m.Topology().Stats()
		l.fig.TopologySec = tst.Build.Seconds()
		logf("%s ids: store loaded and compacted in %.1fs; vertex index built in %.3fs (%d indexes, %d hashed); topology built in %.3fs (%d edges, %.1f bytes per edge)",
			l.name, l.fig.LoadSec, l.fig.IndexSec, ist.Vertices, ist.Hashed, l.fig.TopologySec, tst.Edges, float64(tst.Bytes)/float64(max(1, tst.Edges)))
		if l == dense {
			res.Topology.BuildSec, res.Topology.Bytes, res.Topology.Edges, res.Topology.Vertices = l.fig.TopologySec, tst.Bytes, tst.Edges, tst.Vertices
			res.Topology.BytesPerEdge = float64(tst.Bytes) / float64(max(1, tst.Edges))
		}
	}

	// 1. Static kernels: each layout's topology and the CSR's, taking turns.
	res.Kernels = map[string]*Kernel{}
	kernelRuns := func(phase string) error {
		out := map[*layout]map[string]analytics.Analytic{}
		topo := map[*layout]*views.Topo{}
		for _, l := range ls {
			out[l] = map[string]analytics.Analytic{}
			u, err := topoOf[l].PullNow(ctx) // brings the topology to the newest operation
			if err != nil {
				return err
			}
			defer u.Done()
			topo[l] = u.G
		}
		for _, k := range kernelSpecs {
			best := map[*layout]float64{}
			csrBest := math.Inf(1)
			var onCSR analytics.Analytic
			for rep := 0; rep < cfg.Repeats; rep++ {
				for _, l := range ls {
					a, err := newAnalytic(withRoot(k.spec, l.root), l.root)
					if err != nil {
						return err
					}
					sec, err := timed(func() error { return a.(analytics.TopoAnalytic).Recompute(ctx, topo[l]) })
					if err != nil {
						return fmt.Errorf("%s under %s ids: %w", k.name, l.name, err)
					}
					if b, ok := best[l]; !ok || sec < b {
						best[l] = sec
					}
					out[l][k.name] = a
				}
				if phase == "compacted" {
					a, err := newAnalytic(withRoot(k.spec, res.Root), res.Root)
					if err != nil {
						return err
					}
					sec, err := timed(func() error { return a.(analytics.TopoAnalytic).Recompute(ctx, csrTopo) })
					if err != nil {
						return err
					}
					csrBest = math.Min(csrBest, sec)
					onCSR = a
				}
			}
			kf := res.Kernels[k.name]
			if kf == nil {
				kf = &Kernel{}
				res.Kernels[k.name] = kf
			}
			if phase == "compacted" {
				kf.ViewSec, kf.CSRSec = best[dense], csrBest
				kf.ViewOverCSR = kf.ViewSec / kf.CSRSec
				if sum, ok := out[dense][k.name].Summary().(analytics.PageRankSummary); ok {
					kf.Iterations = sum.Iterations
					logf("%s: %d iterations, %.4fs each on the view", k.name, sum.Iterations, kf.ViewSec/float64(sum.Iterations))
				}
				for _, l := range ls {
					l.fig.RecomputeSec[k.name] = best[l]
				}
				if err := agreeUnder(k.name, onCSR, out[dense][k.name], func(v uint64) uint64 { return v }, nv, cfg.Seed); err != nil {
					return fmt.Errorf("the view's topology and the csr's: %w", err)
				}
				logf("%s: view %.4fs, csr %.4fs (%.2fx)", k.name, kf.ViewSec, kf.CSRSec, kf.ViewOverCSR)
			} else {
				kf.FreshSec = best[dense]
				kf.FreshOverView = kf.FreshSec / kf.ViewSec
				if sum, ok := out[dense][k.name].Summary().(analytics.PageRankSummary); ok {
					// Per iteration: the stream's graph may take another count.
					kf.FreshIterations = sum.Iterations
					kf.FreshOverView = (kf.FreshSec / float64(sum.Iterations)) / (kf.ViewSec / float64(kf.Iterations))
					logf("%s after the stream: %d iterations", k.name, sum.Iterations)
				}
				logf("%s after the stream: %.4fs, compacted %.4fs (%.2fx)", k.name, kf.FreshSec, kf.ViewSec, kf.FreshOverView)
			}
			for _, l := range ls[1:] {
				if err := agreeUnder(k.name, out[dense][k.name], out[l][k.name], l.id, nv, cfg.Seed); err != nil {
					return fmt.Errorf("%s, under %s ids: %w", phase, l.name, err)
				}
				if phase == "compacted" {
					logf("%s: %s ids %.4fs, dense %.4fs (%.2fx)", k.name, l.name, best[l], best[dense], best[l]/best[dense])
				}
			}
		}
		return nil
	}
	if err := kernelRuns("compacted"); err != nil {
		return res, err
	}
	csrTopo = nil
	runtime.GC()

	// 2. The stream, batch by batch, the layouts taking turns.
	names := []string{"bfs", "wcc", "pagerank", "sssp", "degree"}
	specs := map[string]analytics.Spec{"degree": {Type: "degree", Threshold: 1000}, "pagerank": {Type: "pagerank", Tolerance: cfg.PageRankTolerance}}
	for _, k := range kernelSpecs {
		if k.name != "pagerank" {
			specs[k.name] = k.spec
		}
	}
	runs := map[*layout][]*running{}
	for _, l := range ls {
		for _, name := range names {
			rn := &running{name: name}
			spec := withRoot(specs[name], l.root)
			if rn.a, err = newAnalytic(spec, l.root); err != nil {
				return res, err
			}
			if rn.ref, err = newAnalytic(spec, l.root); err != nil {
				return res, err
			}
			if rn.ts, err = l.m.Topology().Stream(views.StreamOptions{Presence: analytics.NeedsPresence(rn.a.Spec())}); err != nil {
				return res, err
			}
			defer rn.ts.Close()
			sec, err := timed(func() error {
				u, err := rn.ts.Pull(ctx)
				if err != nil {
					return err
				}
				defer u.Done()
				return rn.a.(analytics.TopoAnalytic).Recompute(ctx, u.G)
			})
			if err != nil {
				return res, err
			}
			logf("%s under %s ids: first compute %.3fs", name, l.name, sec)
			runs[l] = append(runs[l], rn)
		}
	}
	for bi, batch := range ops {
		for _, l := range ls {
			var b engine.Batch
			for _, o := range batch {
				switch o.Kind {
				case engine.OpUpsert:
					b.InsertWeighted(l.id(o.Src), l.id(o.Dst), o.Weight)
				case engine.OpDeleteEdge:
					b.DeleteEdge(l.id(o.Src), l.id(o.Dst))
				case engine.OpDeleteVertex:
					b.DeleteVertex(l.id(o.Src))
				}
			}
			if _, err := l.store.Apply(&b); err != nil {
				return res, err
			}
		}
		// Recompute on every third batch (they are slow) and the first.
		recompute := bi%3 == 0
		for k := range names {
			for _, l := range ls {
				rn := runs[l][k]
				if err := rn.step(ctx, recompute); err != nil {
					return res, fmt.Errorf("%s under %s ids, batch %d: %w", rn.name, l.name, bi, err)
				}
			}
		}
	}
	res.Incremental = map[string]*Incremental{}
	for k, name := range names {
		for _, l := range ls {
			rn := runs[l][k]
			l.fig.UpdateSec[name], l.fig.StreamRecomputeSec[name], l.fig.Fallbacks[name] = mean(rn.steady()), mean(rn.reT), rn.fallbacks
		}
		rn := runs[dense][k]
		inc := &Incremental{UpdateSec: dense.fig.UpdateSec[name], MaxUpdateSec: slices.Max(append([]float64{0}, rn.steady()...)),
			WarmupUpdateSec: rn.incT[0], RecomputeSec: dense.fig.StreamRecomputeSec[name],
			Fallbacks: dense.fig.Fallbacks[name], Batches: len(ops)}
		inc.Speedup = inc.RecomputeSec / inc.UpdateSec
		res.Incremental[name] = inc
		logf("%s: update %.5fs per batch (slowest %.5fs; the warm-up batch %.5fs), recompute %.4fs (%.1fx), %d fallbacks in %d batches",
			name, inc.UpdateSec, inc.MaxUpdateSec, inc.WarmupUpdateSec, inc.RecomputeSec, inc.Speedup, inc.Fallbacks, inc.Batches)
		for _, l := range ls[1:] {
			if name != "pagerank" && name != "degree" {
				if err := agreeUnder(name, runs[dense][k].a, runs[l][k].a, l.id, nv, cfg.Seed+1); err != nil {
					return res, fmt.Errorf("after the stream, under %s ids: %w", l.name, err)
				}
			}
			logf("%s: update under %s ids %.5fs, dense %.5fs (%.2fx)", name, l.name, l.fig.UpdateSec[name],
				dense.fig.UpdateSec[name], l.fig.UpdateSec[name]/dense.fig.UpdateSec[name])
		}
	}
	if tst := dense.m.Topology().Stats(); tst.Advances > 0 {
		res.Topology.AdvanceSec = tst.Advance.Seconds() / float64(tst.Advances)
		res.Topology.EdgesAfterBatch = tst.Edges
	}

	// 3. The kernels on the advanced topology.
	if err := kernelRuns("fresh"); err != nil {
		return res, err
	}
	for _, l := range ls[1:] {
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
	if m, err := bench.ReadMemory(); err == nil {
		res.PeakRSSBytes = m.PeakRSS
	}
	return res, nil
}

// kernelsOnly times the bare kernels (analytics.RunKernel) on the plain
// CSR's topology of edges, cfg.Repeats times each, the kernels taking
// turns; pagerank also runs one iteration as often, to tell its
// iterations from its setup.
func kernelsOnly(ctx context.Context, cfg Config, res Result, edges []wedge, nv uint64, logf func(string, ...any)) (Result, error) {
	t0 := time.Now()
	g, err := views.BuildTopo(ctx, newEdgeGraph(nv, edges))
	if err != nil {
		return res, err
	}
	res.Topology.CSRBuildSec = time.Since(t0).Seconds()
	res.Topology.Edges, res.Topology.Bytes = g.Out.Edges(), g.Bytes()
	logf("csr: topology built in %.2fs, %d distinct edges; root %d", res.Topology.CSRBuildSec, g.Out.Edges(), res.Root)
	runtime.GC()
	names := []string{"bfs", "wcc", "pagerank", "pagerank-1", "sssp"}
	times := map[string][]float64{}
	iters := 0
	for range cfg.Repeats {
		for _, name := range names {
			typ, most := name, 20
			if name == "pagerank-1" {
				typ, most = "pagerank", 1
			}
			var it int
			sec, err := timed(func() (err error) { it, err = analytics.RunKernel(ctx, typ, g, res.Root, most); return err })
			if err != nil {
				return res, fmt.Errorf("%s: %w", name, err)
			}
			times[name] = append(times[name], sec)
			if name == "pagerank" {
				iters = it
			}
		}
	}
	res.KernelsOnly = map[string]*BareKernel{}
	for _, name := range names {
		ts := slices.Sorted(slices.Values(times[name]))
		k := &BareKernel{MinSec: ts[0], MedianSec: ts[len(ts)/2]}
		if name == "pagerank-1" {
			continue
		}
		if name == "pagerank" {
			k.Iterations = iters
			if iters > 1 {
				k.PerIterationSec = (k.MinSec - slices.Min(times["pagerank-1"])) / float64(iters-1)
			}
			logf("pagerank: %d iterations, %.4fs each past the first", iters, k.PerIterationSec)
		}
		res.KernelsOnly[name] = k
		logf("%s: min %.4fs, median %.4fs of %d runs", name, k.MinSec, k.MedianSec, len(ts))
	}
	if m, err := bench.ReadMemory(); err == nil {
		res.PeakRSSBytes = m.PeakRSS
	}
	return res, nil
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

// step pulls one batch into the analytic and times its update; when
// recompute is set it also times a recompute on the same graph, into a
// second instance whose result must equal the update's.
func (rn *running) step(ctx context.Context, recompute bool) error {
	var re bool
	u, err := rn.ts.Pull(ctx)
	if err != nil {
		return err
	}
	defer u.Done()
	if u.Lost {
		return errors.New("the topology stream lost operations")
	}
	update := func() (err error) { re, err = analytics.UpdateTopo(ctx, rn.a.(analytics.TopoAnalytic), u); return err }
	redo := func() error { return rn.ref.(analytics.TopoAnalytic).Recompute(ctx, u.G) }
	sec, err := timed(update)
	if err != nil {
		return err
	}
	rn.incT = append(rn.incT, sec)
	if recompute {
		sec, err := timed(redo)
		if err != nil {
			return err
		}
		rn.reT = append(rn.reT, sec)
		if err := sameResult(rn.name, rn.a, rn.ref, u.G); err != nil {
			return fmt.Errorf("the update and a recompute disagree: %w", err)
		}
	}
	if re {
		rn.fallbacks++
	}
	return nil
}

// sameResult checks an updated analytic against a recompute on g, at
// every vertex index: equal levels, distances and partitions; PageRank
// within what its tolerance allows (each is within tol*d/(1-d) of the
// fixpoint in L1).
func sameResult(name string, up, re analytics.Analytic, g *views.Topo) error {
	l1 := 0.0
	var firstU, firstR = map[uint64]uint64{}, map[uint64]uint64{}
	for i := 0; i < g.Len(); i++ {
		v := g.IDs.ID(i)
		a, _ := up.Vertex(v)
		b, _ := re.Vertex(v)
		switch x := a.(type) {
		case analytics.VertexRank:
			l1 += math.Abs(x.Rank - b.(analytics.VertexRank).Rank)
			continue
		case analytics.VertexComponent:
			// The same partition: map each side's names onto the other's.
			y := b.(analytics.VertexComponent)
			if w, ok := firstU[x.Component]; ok && w != y.Component || x.Size != y.Size {
				return fmt.Errorf("%s: vertex %d: %+v after the update, %+v recomputed", name, v, x, y)
			}
			if w, ok := firstR[y.Component]; ok && w != x.Component {
				return fmt.Errorf("%s: vertex %d: %+v after the update, %+v recomputed", name, v, x, y)
			}
			firstU[x.Component], firstR[y.Component] = y.Component, x.Component
			continue
		}
		if a != b {
			return fmt.Errorf("%s: vertex %d: %+v after the update, %+v recomputed", name, v, a, b)
		}
	}
	if s := up.Spec(); s.Type == "pagerank" {
		// Each within d*tol/(1-d) of the fixpoint, and its float32
		// rounding's share (analytics.RoundingL1).
		if lim := 2 * (s.Tolerance*s.Damping/(1-s.Damping) + analytics.RoundingL1(s.Damping, s.Tolerance)) * 1.01; l1 > lim {
			return fmt.Errorf("pagerank: the ranks differ by %g in L1, more than its tolerance allows (%g)", l1, lim)
		}
	}
	return nil
}

// streamOps cuts the streamed share into batches of cfg.BatchSize
// operations: upserts of the extra edges, deletes of existing edges drawn
// at random (loaded or streamed before), and vertex deletes of vertices
// with edges.
func streamOps(edges, extra []wedge, cfg Config) [][]engine.Op {
	r := rand.New(rand.NewPCG(cfg.Seed, 99))
	live := make([][2]uint64, 0, len(edges)+len(extra))
	for _, e := range edges {
		live = append(live, [2]uint64{e.src, e.dst})
	}
	var out [][]engine.Op
	next := 0
	for next < len(extra) {
		batch := make([]engine.Op, 0, cfg.BatchSize)
		for len(batch) < cfg.BatchSize && next < len(extra) {
			x := r.Float64()
			switch {
			case x < cfg.DeleteFraction && len(live) > 0:
				k := r.IntN(len(live))
				e := live[k]
				live[k] = live[len(live)-1]
				live = live[:len(live)-1]
				batch = append(batch, engine.Op{Src: e[0], Dst: e[1], Kind: engine.OpDeleteEdge})
			case x < cfg.DeleteFraction+cfg.VertexDeleteFraction && len(live) > 0:
				// A vertex with edges (its edges stay in live: deleting one
				// of them again is a delete of a missing edge, as happens).
				batch = append(batch, engine.Op{Src: live[r.IntN(len(live))][0], Kind: engine.OpDeleteVertex})
			default:
				e := extra[next]
				next++
				batch = append(batch, engine.Op{Src: e.src, Dst: e.dst, Weight: e.w, Kind: engine.OpUpsert})
				live = append(live, [2]uint64{e.src, e.dst})
			}
		}
		out = append(out, batch)
	}
	return out
}

// agreeUnder checks that an analytic computed under other ids (d, whose
// vertex v is id(v)) gives, for a sample of vertices, the result it gives
// under the generated ids (a): BFS levels and SSSP distances equal, the same
// component sizes and the same partition into components, PageRank ranks
// equal but for rounding (the sums run in other orders).
func agreeUnder(name string, a, d analytics.Analytic, id func(uint64) uint64, nv, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 17))
	var prevA, prevD uint64
	for i := 0; i < 2000; i++ {
		v := r.Uint64N(nv)
		ra, oka := a.Vertex(v)
		rd, okd := d.Vertex(id(v))
		if oka != okd {
			return fmt.Errorf("%s: vertex %d has a result under one layout only", name, v)
		}
		bad := false
		switch x := ra.(type) {
		case analytics.VertexLevel, analytics.VertexDistance:
			bad = ra != rd
		case analytics.VertexComponent:
			y := rd.(analytics.VertexComponent)
			bad = x.Size != y.Size
			// Two vertices share a component under one layout iff they do
			// under the other.
			if i > 0 {
				bad = bad || (x.Component == prevA) != (y.Component == prevD)
			}
			prevA, prevD = x.Component, y.Component
		case analytics.VertexRank:
			y := rd.(analytics.VertexRank)
			bad = math.Abs(x.Rank-y.Rank) > 1e-6*math.Max(x.Rank, 1e-12)
		default:
			return fmt.Errorf("%s: no comparison for %T", name, ra)
		}
		if bad {
			return fmt.Errorf("%s disagrees on vertex %d (id %d): %+v vs %+v", name, v, id(v), ra, rd)
		}
	}
	return nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}
