// Package analyticsbench is `graphtide bench analytics`: it loads a graph
// (generated, R-MAT or Kronecker, or the whole of an --input file) into
// fresh stores, compacts them, and measures in the same run (figures are
// ratios against baselines taken in that run):
//
//  1. Static kernels: bfs, wcc, pagerank (to its default tolerance, at
//     most 20 iterations, their count reported) and sssp on the
//     topology of a compacted view (views.Topology, what serve's analytics
//     read) and on the topology of a plain in-memory CSR built from the
//     same edges: the same kernels, so the ratio measures the store and
//     its topology, not the algorithm. The results must agree, and bfs,
//     wcc and sssp must equal, vertex for vertex, reference kernels run
//     here on the loaded edges (reference.go; docs/benchmarks.md has the
//     results).
//  2. The stream, separate from the graph (stream.go): an op-stream file
//     (--stream; opstream.go has the format), or generated beside the
//     graph: new edges (a generated graph's: the same sampler's next
//     draws, the same permutation, so the graph's hubs; an input's: drawn
//     degree-proportionally from its own endpoints), --delete-fraction
//     deletes of existing edges, --vertex-delete-fraction vertex deletes
//     and --hub-vertex-deletes of the largest hubs. It is applied in
//     batches; every analytic follows it through the shared topology.
//     Per batch: what a user waits for, batch_sec, from the store's Apply
//     to the analytic's result at the batch's seq (the topology's advance
//     and the analytic's pull included), per analytic and for all five
//     one after the other; the advance alone; the bytes allocated per
//     operation. Per analytic, as a detail: its update alone, a recompute
//     on the same topology (every third batch, whose result must equal
//     the update's), and its fallbacks (updates that recomputed).
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
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/views"
	"github.com/graphtide/graphtide/internal/views/analytics"
	"github.com/graphtide/graphtide/internal/views/analytics/kernels"
)

// Config of one run.
type Config struct {
	Scale, EdgeFactor int
	Seed              uint64
	// Graph is the generated family without Input: "rmat" (gen.RMAT, with
	// its self-loops and repeats) or "kron" (gen.Kronecker: the same draws
	// made simple).
	Graph string
	// Input, when set, is the graph (an edge file, el or bin), loaded
	// whole, instead of a generated one.
	Input string
	// Stream, when set, is an op-stream file: the stream (cut into batches
	// of BatchSize) instead of a generated one. SaveStream and SaveGraph,
	// when set, are where the stream the run used and the graph it loaded
	// (el) are written, for another tool to replay.
	Stream, SaveStream, SaveGraph string
	// HubVertexDeletes: the generated stream also deletes this many of the
	// graph's vertices with the most edges (out and in), spread evenly
	// over it.
	HubVertexDeletes int
	// Registry: also apply the stream to a store of its own (dense ids)
	// whose analytics run in an analytics.Registry, as serve runs them
	// (Result.Registry).
	Registry bool
	// RegistryInterval, when above 0, feeds --registry's store a batch
	// every interval instead of after the last result of the one before:
	// a stream that does not wait, as serve's does; the figures are then
	// each analytic's freshness (RegistryAnalytic.FreshSec).
	RegistryInterval time.Duration
	// DD, when set, is the Differential Dataflow baseline's binary (or
	// DDAuto: scripts/dd.sh path), run on the same graph and batches after
	// the stream (Result.DD).
	DD string
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
	// default, analytics.DefaultTolerance, unless set): its updates push
	// residuals only for changes within twice its target, so it decides
	// which way they go.
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
	return Config{Scale: 20, EdgeFactor: 16, Seed: 1, Graph: "rmat", Root: -1, BatchSize: 10000, StreamFraction: 0.01,
		DeleteFraction: 0.05, VertexDeleteFraction: 0.0001, Repeats: 3, IDs: Layouts, PageRankTolerance: analytics.DefaultTolerance}
}

// Bounds of Config.Scale and Config.EdgeFactor.
const (
	MaxScale      = 26
	MaxEdgeFactor = 64
)

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	bench.GraphFlags(fs, &c.Scale, &c.EdgeFactor, &c.Seed, "log2 of the vertex count of the RMAT graph", "random seed")
	fs.StringVar(&c.Graph, "graph", c.Graph, "generated graph family: rmat (R-MAT draws, self-loops and repeats kept) or kron (the same draws as a simple graph)")
	fs.StringVar(&c.Input, "input", c.Input, "run on the whole of this edge file (el: \"src dst [weight]\" lines, or bin) instead of a generated graph")
	fs.StringVar(&c.Stream, "stream", c.Stream, "stream this op-stream file (\"+ SRC DST [WEIGHT]\", \"- SRC DST\", \"x V\" lines) instead of a generated stream")
	fs.StringVar(&c.SaveStream, "save-stream", c.SaveStream, "write the stream the run used to this op-stream file")
	fs.StringVar(&c.SaveGraph, "save-graph", c.SaveGraph, "write the graph the run loaded to this el file")
	fs.StringVar(&c.DD, "dd", c.DD, "also run the Differential Dataflow baseline's bfs and wcc (this binary, or auto: scripts/dd.sh path; built by make dd) on the same graph and batches, after the stream, and compare")
	fs.BoolVar(&c.Registry, "registry", c.Registry, "also stream into a store of its own whose analytics run registered together, as serve runs them: each result's time after the Apply")
	fs.DurationVar(&c.RegistryInterval, "registry-interval", c.RegistryInterval, "with --registry: apply a batch to the registry's store every this long, not waiting for the analytics' results (a stream that does not wait, as serve's); each analytic's freshness is then reported")
	fs.IntVar(&c.HubVertexDeletes, "hub-vertex-deletes", c.HubVertexDeletes, "the generated stream also deletes this many of the vertices with the most edges, spread over it")
	fs.Int64Var(&c.Root, "root", c.Root, "root vertex of bfs and sssp (default: the vertex with the most out-edges)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "streamed operations per batch")
	fs.Float64Var(&c.StreamFraction, "stream-fraction", c.StreamFraction, "new edges the generated stream inserts, as a share of the graph's edge count (kron: of its draws)")
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
	if c.Input == "" && c.Graph != "rmat" && c.Graph != "kron" {
		return fmt.Errorf("--graph must be rmat or kron, got %q", c.Graph)
	}
	if c.HubVertexDeletes < 0 || c.HubVertexDeletes > 1000000 {
		return fmt.Errorf("--hub-vertex-deletes must be between 0 and 1000000, got %d", c.HubVertexDeletes)
	}
	if c.Stream != "" && c.HubVertexDeletes > 0 {
		return fmt.Errorf("--hub-vertex-deletes shapes a generated stream: --stream %s is streamed as it is", c.Stream)
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
	if c.RegistryInterval < 0 || c.RegistryInterval > time.Minute || c.RegistryInterval > 0 && !c.Registry {
		return fmt.Errorf("--registry-interval must be between 0 and 1m, and goes with --registry, got %v", c.RegistryInterval)
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
	// BatchSec is what a user waits for: from the store's Apply of a batch
	// to this analytic's result at the batch's seq (the Apply, the
	// topology's advance, the analytic's pull and its update), mean and
	// 99th percentile over the batches after the first (the warm-up).
	BatchSec    float64 `json:"batch_sec"`
	BatchP99Sec float64 `json:"batch_p99_sec"`
	// UpdateSec and the rest are details: the analytic's own update alone.
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
	// BytesAfter and BytesPerEdgeAfter: the topology once the stream is
	// applied (its lists rewritten as it advanced).
	BytesAfter        int64   `json:"bytes_after_stream"`
	BytesPerEdgeAfter float64 `json:"bytes_per_edge_after_stream"`
	// AdvanceCounters are the topology's counters of its advances over the
	// stream (views.TopologyStats: advances, operations, full builds).
	AdvanceCounters map[string]uint64 `json:"advance_counters,omitempty"`
}

// BatchFigures are the stream's per-batch figures (dense ids), over the
// batches after the first (the warm-up; all of them when there is one).
type BatchFigures struct {
	Batches int     `json:"batches"` // batches these figures are over
	Ops     float64 `json:"ops"`     // operations per batch, mean
	// Changes: the edge changes per batch, mean: each operation's net
	// change to its pair, and each edge a vertex delete removed (a hub's
	// delete is its edges).
	Changes float64 `json:"edge_changes"`
	// ApplySec: the store's Apply (mean, p99).
	ApplySec    float64 `json:"apply_sec"`
	ApplyP99Sec float64 `json:"apply_p99_sec"`
	// AdvanceSec: the topology's advance alone (its own clock,
	// views.TopologyStats), mean and p99, per operation and per edge
	// change.
	AdvanceSec         float64 `json:"advance_sec"`
	AdvanceP99Sec      float64 `json:"advance_p99_sec"`
	AdvanceUSPerOp     float64 `json:"advance_us_per_op"`
	AdvanceUSPerChange float64 `json:"advance_us_per_change"`
	AllSec             float64 `json:"all_sec"` // the Apply, the advance and every analytic's pull and update, one after the other
	AllP99Sec          float64 `json:"all_p99_sec"`
	AdvanceAllocsOp    float64 `json:"advance_alloc_bytes_per_op"` // heap bytes allocated during the advance, per operation
	UpdateAllocsOp     float64 `json:"update_alloc_bytes_per_op"`  // during every analytic's pull and update, per operation
}

// Result is the JSON line the command prints last.
type Result struct {
	// Graph is the family ("rmat", "kron", or "input" for --input).
	Graph string `json:"graph"`
	Input string `json:"input,omitempty"`
	// Stream is --stream's file; StreamSource says where the stream came
	// from: "file", "generator" (the generated graph's sampler, drawing
	// on), or "beside" (drawn from --input's own endpoints).
	Stream           string  `json:"stream,omitempty"`
	StreamSource     string  `json:"stream_source,omitempty"`
	HubVertexDeletes int     `json:"hub_vertex_deletes"`
	Edges            int     `json:"edges"`    // loaded (before dedupe)
	Vertices         uint64  `json:"vertices"` // vertex ids (RMAT: 2^scale)
	Root             uint64  `json:"root"`
	Weighted         bool    `json:"weighted"`
	StreamedOps      int     `json:"streamed_ops"`
	Batches          int     `json:"batches"`
	DeleteFraction   float64 `json:"delete_fraction"`
	VertexDeletes    int     `json:"vertex_deletes"`

	Topology TopologyFigures `json:"topology"`
	Batch    *BatchFigures   `json:"batch,omitempty"`
	// Registry holds --registry's figures.
	Registry *RegistryFigures `json:"registry,omitempty"`
	// DD holds --dd's figures.
	DD *DDFigures `json:"differential_dataflow,omitempty"`
	// Checked names the kernels whose results on the compacted view equal
	// the reference kernels' on the loaded edges at every vertex.
	Checked []string           `json:"checked_against_reference,omitempty"`
	Kernels map[string]*Kernel `json:"kernels"`
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
var kernelSpecs = []kernelSpec{
	{"bfs", analytics.Spec{Type: "bfs"}},
	{"wcc", analytics.Spec{Type: "wcc"}},
	// To the default tolerance (at most 20 iterations): its iterations are
	// reported, to compare per iteration with kernels that run a set count.
	{"pagerank", analytics.Spec{Type: "pagerank", MaxIterations: 20}},
	{"sssp", analytics.Spec{Type: "sssp"}},
}

// kernelSpec is a kernel's name and its analytic.
type kernelSpec struct {
	name string
	spec analytics.Spec
}

// withRoot sets the spec's root when its type needs one.
func withRoot(s analytics.Spec, root uint64) analytics.Spec {
	if analytics.NeedsRoot(s.Type) {
		s.Root = fmt.Sprint(root)
	}
	return s
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
		// rounding's share (kernels.RoundingL1).
		if lim := 2 * (s.Tolerance*s.Damping/(1-s.Damping) + kernels.RoundingL1(s.Damping, s.Tolerance)) * 1.01; l1 > lim {
			return fmt.Errorf("pagerank: the ranks differ by %g in L1, more than its tolerance allows (%g)", l1, lim)
		}
	}
	return nil
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
