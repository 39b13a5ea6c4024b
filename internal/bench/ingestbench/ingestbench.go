// Package ingestbench is `graphtide bench ingest`: it ingests one RMAT edge
// stream into a fresh graphtide store, into Pebble, and into a static
// in-memory CSR, in the same process and run, and scans all out-neighbors
// of every vertex on the store and on the CSR. Every figure is reported next
// to its baseline from the same run, because absolute numbers on a shared
// 2-core machine mean little.
//
// The scan results of the store and the CSR are compared (edge count and a
// checksum of all dsts); a mismatch is an error, not a figure.
package ingestbench

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/bench/pebblebase"
	"github.com/graphtide/graphtide/internal/edgefile"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/staticcsr"
)

// Config of one run (DefaultConfig has the command's defaults).
type Config struct {
	Scale, EdgeFactor int
	Seed              uint64
	Input             string // edge file to read instead of generating
	Dir               string // must not exist or be empty
	BatchSize         int    // edges per Apply and per Pebble batch
	MemGraphMiB       int    // store option, in MiB; 0 = default
	SkipPebble        bool
	HubVersions       int // versions of the MemGraph-held hub (2,000,000)
	// Events and Accounts are the payments stream of the edge-events
	// comparison (events.go); Events 0 skips it.
	Events, Accounts int
	Log              io.Writer // progress lines; nil = discard
}

// DefaultConfig is the command's defaults, without Dir.
func DefaultConfig() Config {
	return Config{Scale: 20, EdgeFactor: 16, Seed: 1, BatchSize: 10000, MemGraphMiB: 64, HubVersions: 2_000_000, Events: 1_000_000, Accounts: 20_000}
}

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	bench.GraphFlags(fs, &c.Scale, &c.EdgeFactor, &c.Seed,
		fmt.Sprintf("log2 of the vertex count of the RMAT graph, %d..%d", gen.MinScale, gen.MaxScale), "random seed of the RMAT graph")
	fs.StringVar(&c.Input, "input", c.Input, "read edges from this edge file (el or bin, see gen) instead of generating them")
	fs.StringVar(&c.Dir, "dir", c.Dir, "directory for the store and the Pebble baseline; must not exist or be empty (default: a temporary directory, removed afterwards)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "edges per write batch, for both the store and Pebble")
	fs.IntVar(&c.MemGraphMiB, "memgraph-mib", c.MemGraphMiB, "size of one MemGraph in MiB (the store keeps two)")
	fs.BoolVar(&c.SkipPebble, "skip-pebble", c.SkipPebble, "do not run the Pebble baseline")
	fs.IntVar(&c.HubVersions, "hub-versions", c.HubVersions, "versions of the hub whose degree is timed while they are in the MemGraph")
	fs.IntVar(&c.Events, "events", c.Events, "payments of the stream that compares replace, accumulate and accumulate with properties (0: skip it)")
	fs.IntVar(&c.Accounts, "accounts", c.Accounts, "accounts of that payments stream")
}

// Validate checks the settings; its messages name the command's flags.
func (c Config) Validate() error {
	if c.Input == "" {
		if err := bench.ValidateGraph(c.Scale, c.EdgeFactor, gen.MaxScale, 0); err != nil {
			return err
		}
	}
	if c.BatchSize < 1 || c.BatchSize > 10_000_000 {
		return fmt.Errorf("--batch-size must be between 1 and 10000000, got %d", c.BatchSize)
	}
	if c.MemGraphMiB < 1 || c.MemGraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536, got %d", c.MemGraphMiB)
	}
	if c.HubVersions < 2 || c.HubVersions > 20_000_000 {
		return fmt.Errorf("--hub-versions must be between 2 and 20000000, got %d", c.HubVersions)
	}
	if c.Events < 0 || c.Events > 100_000_000 {
		return fmt.Errorf("--events must be between 0 and 100000000, got %d", c.Events)
	}
	if c.Accounts < 2 || c.Accounts > 100_000_000 {
		return fmt.Errorf("--accounts must be between 2 and 100000000, got %d", c.Accounts)
	}
	return nil
}

// Result is the JSON line the command prints last.
type Result struct {
	Edges               int     `json:"edges"`
	DistinctEdges       uint64  `json:"distinct_edges"`
	Vertices            uint64  `json:"vertices"`
	BatchSize           int     `json:"batch_size"`
	MemGraphBytes       int64   `json:"memgraph_bytes"`
	StoreEdgesPerSec    float64 `json:"store_edges_per_sec"`
	PebbleEdgesPerSec   float64 `json:"pebble_edges_per_sec"`
	CSRBuildEdgesPerSec float64 `json:"csr_build_edges_per_sec"`
	StoreVsPebble       float64 `json:"store_vs_pebble"`
	StoreCompactSec     float64 `json:"store_compact_sec"`
	StoreScanSec        float64 `json:"store_scan_sec"`
	CSRScanSec          float64 `json:"csr_scan_sec"`
	ScanRatio           float64 `json:"scan_store_over_csr"`
	StoreBytesPerEdge   float64 `json:"store_bytes_per_edge"`
	PebbleBytesPerEdge  float64 `json:"pebble_bytes_per_edge"`
	WriteAmplification  float64 `json:"write_amplification"`
	Flushes             int64   `json:"flushes"`
	Compactions         int64   `json:"compactions"`
	WriteStalls         int64   `json:"write_stalls"`
	PeakRSSBytes        int64   `json:"peak_rss_bytes"`
	StorePeakExtraBytes int64   `json:"store_peak_rss_over_baseline_bytes"`
	StorePeakAnonBytes  int64   `json:"store_peak_anon_rss_over_baseline_bytes"`
	StorePeakFileBytes  int64   `json:"store_peak_file_rss_bytes"`

	// The write path (writepath.go).
	StoreInEdgesPerSec float64 `json:"store_in_edges_edges_per_sec"`
	InEdgesOverOutOnly float64 `json:"in_edges_over_out_only"`
	// The cost of keeping in-edges (the default of a new store): the
	// process's CPU time per edge of the same ingest (Apply, flushes and
	// the compactions that ran meanwhile) into an out-only store and then
	// one with in-edges, back to back (neither the process's first: that
	// one faults in fresh pages), and the bytes on disk per distinct edge
	// after CompactAll against the out-only store's.
	IngestCPUNsPerEdge              float64 `json:"ingest_cpu_ns_per_edge"`
	IngestCPUNsPerEdgeIn            float64 `json:"ingest_cpu_ns_per_edge_in_edges"`
	InEdgesCPUOverOutOnly           float64 `json:"in_edges_cpu_over_out_only"`
	StoreInEdgesBytesPerEdge        float64 `json:"store_in_edges_bytes_per_edge"`
	InEdgesBytesOverOutOnly         float64 `json:"in_edges_bytes_over_out_only"`
	ApplyCPUNsPerEdgeDir            float64 `json:"apply_cpu_ns_per_edge_direction"`
	ApplyProcessCPUNsPerEdgeDir     float64 `json:"apply_process_cpu_ns_per_edge_direction"`
	ApplyCPUNsPerEdgeDirFirst       float64 `json:"apply_cpu_ns_per_edge_direction_first_memgraph"`
	ApplyCPUNsPerEdgeDirIn          float64 `json:"apply_cpu_ns_per_edge_direction_in_edges"`
	MemGraphBytesPerVersion         float64 `json:"memgraph_bytes_per_version"`
	HubDegreeMs                     float64 `json:"hub_degree_ms"`
	HubPageMs                       float64 `json:"hub_page_ms"`
	HubFirstDegreeMs                float64 `json:"hub_first_degree_ms"`
	HubFirstDegreeAfterBurstMs      float64 `json:"hub_first_degree_after_burst_ms"`
	HubFirstPageAfterBurstMs        float64 `json:"hub_first_page_after_burst_ms"`
	ScanAfterVertexDeletesOverClean float64 `json:"scan_after_vertex_deletes_over_clean"`

	// What an accumulate edge type and edge payloads cost against replace
	// (events.go); absent with --events 0.
	EdgeEvents EventsResult `json:"edge_events,omitzero"`
}

// Run performs the benchmark.
func Run(cfg Config) (Result, error) {
	var res Result
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	if cfg.BatchSize <= 0 {
		return res, fmt.Errorf("batch size must be positive, got %d", cfg.BatchSize)
	}
	if err := bench.PrepareDir(cfg.Dir); err != nil {
		return res, err
	}

	edges, nv, err := loadEdges(cfg, logf)
	if err != nil {
		return res, err
	}
	res.Edges = len(edges)
	res.Vertices = nv
	res.BatchSize = cfg.BatchSize
	res.MemGraphBytes = int64(cfg.MemGraphMiB) << 20

	// The static CSR first: it is also the oracle for the store's scan.
	t0 := time.Now()
	csr := staticcsr.Build(nv, edges)
	res.CSRBuildEdgesPerSec = float64(len(edges)) / time.Since(t0).Seconds()
	res.DistinctEdges = csr.NumEdges()
	csrScan := func() (uint64, uint64) {
		var n, sum uint64
		for v := uint64(0); v < csr.NumVertices(); v++ {
			for _, d := range csr.Neighbors(v) {
				n++
				sum += d
			}
		}
		return n, sum
	}
	csrScan() // warm
	var csrN, csrSum uint64
	res.CSRScanSec = bestOf(func() { csrN, csrSum = csrScan() })
	logf("csr: build %.0f edges/s, scan %.3fs, %d distinct edges", res.CSRBuildEdgesPerSec, res.CSRScanSec, csrN)

	if err := runStore(cfg, edges, csrN, csrSum, &res, logf); err != nil {
		return res, err
	}
	for _, f := range []func() error{
		func() error { return runInEdges(cfg, edges, &res, logf) },
		func() error { return runApplyCPU(cfg, edges, &res, logf) },
		func() error { return runHub(cfg, &res, logf) },
		func() error { return runVertexDeletes(cfg, edges, csr, &res, logf) },
		func() error { return runEvents(cfg, &res, logf) },
	} {
		if err := f(); err != nil {
			return res, err
		}
	}
	if !cfg.SkipPebble {
		pdir := filepath.Join(cfg.Dir, "pebble")
		db, err := pebblebase.Open(pdir, pebblebase.Options{BatchSize: cfg.BatchSize})
		if err != nil {
			return res, err
		}
		pr, err := db.Ingest(edges)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return res, err
		}
		res.PebbleEdgesPerSec = pr.EdgesPerSecond()
		res.PebbleBytesPerEdge = float64(pr.DiskBytes) / float64(res.DistinctEdges)
		res.StoreVsPebble = res.StoreEdgesPerSec / res.PebbleEdgesPerSec
		logf("pebble: %.0f edges/s (%.1fs), %.1f bytes/edge", res.PebbleEdgesPerSec, pr.Elapsed.Seconds(), res.PebbleBytesPerEdge)
	}
	return res, nil
}

func runStore(cfg Config, edges []gen.Edge, csrN, csrSum uint64, res *Result, logf func(string, ...any)) error {
	// Return the earlier phases' garbage first, so that the baseline is the
	// live data (the edge list and the CSR) and not the Go heap's slack.
	debug.FreeOSMemory()
	before, err := bench.ReadMemory()
	if err != nil {
		return err
	}
	if err := bench.ResetPeakRSS(); err != nil {
		logf("warning: cannot reset peak RSS (%v); peak includes earlier phases", err)
	}
	sampler := bench.StartPeakSampler(20 * time.Millisecond)
	s, err := engine.Open(filepath.Join(cfg.Dir, "store"), &engine.Options{MemGraphBytes: res.MemGraphBytes})
	if err != nil {
		return err
	}
	defer s.Close()
	ingest, err := ingestInto(s, edges, cfg.BatchSize)
	if err != nil {
		return err
	}
	res.StoreEdgesPerSec = float64(len(edges)) / ingest.Seconds()
	if m, err := s.Metrics(); err == nil {
		logf("store: ingest+flush %.0f edges/s (%.1fs; flushing %.1fs, compacting %.1fs, stalled %.1fs)", res.StoreEdgesPerSec, ingest.Seconds(),
			m.FlushDuration.Seconds(), m.CompactionDuration.Seconds(), m.WriteStallDuration.Seconds())
	}

	t0 := time.Now()
	if err := s.CompactAll(); err != nil {
		return err
	}
	res.StoreCompactSec = time.Since(t0).Seconds()
	m, err := s.Metrics()
	if err != nil {
		return err
	}
	res.StoreBytesPerEdge = float64(m.DiskBytes()) / float64(res.DistinctEdges)
	res.WriteAmplification = m.WriteAmplification()
	res.Flushes, res.Compactions, res.WriteStalls = m.Flushes, m.Compactions, m.WriteStalls
	logf("store: compact-all %.1fs, %d files, %.2f bytes/edge, write amplification %.2f, %d flushes, %d compactions, %d stalls",
		res.StoreCompactSec, m.Files(), res.StoreBytesPerEdge, res.WriteAmplification, m.Flushes, m.Compactions, m.WriteStalls)

	sn, err := s.Snapshot()
	if err != nil {
		return err
	}
	defer sn.Release()
	scan := storeScan(sn)
	if _, _, err := scan(); err != nil { // warm: maps pages, verifies checksums
		return err
	}
	var n, sum uint64
	res.StoreScanSec = bestOf(func() {
		if err == nil {
			n, sum, err = scan()
		}
	})
	if err != nil {
		return err
	}
	if n != csrN || sum != csrSum {
		return fmt.Errorf("store scan disagrees with the static CSR: %d edges (checksum %d), want %d (checksum %d)", n, sum, csrN, csrSum)
	}
	res.ScanRatio = res.StoreScanSec / res.CSRScanSec
	logf("store: scan %.3fs (%.2fx csr), contents match the static CSR", res.StoreScanSec, res.ScanRatio)

	peak := sampler.Stop()
	res.PeakRSSBytes = peak.PeakRSS
	res.StorePeakExtraBytes = peak.PeakRSS - before.RSS
	res.StorePeakAnonBytes = peak.Anon - before.Anon
	res.StorePeakFileBytes = peak.File - before.File
	logf("store: peak RSS %d MiB, %d MiB over the %d MiB before opening the store (sampled peaks: %d MiB anonymous, %d MiB mapped store files)",
		peak.PeakRSS>>20, res.StorePeakExtraBytes>>20, before.RSS>>20, res.StorePeakAnonBytes>>20, res.StorePeakFileBytes>>20)
	return nil
}

// scanRepeats is how often each scan is timed; the best time is reported,
// which filters out the other tenants of a shared machine.
const scanRepeats = 3

// bestOf times f scanRepeats times and returns the best time in seconds.
func bestOf(f func()) float64 {
	best := 0.0
	for i := 0; i < scanRepeats; i++ {
		t0 := time.Now()
		f()
		if d := time.Since(t0).Seconds(); i == 0 || d < best {
			best = d
		}
	}
	return best
}

func loadEdges(cfg Config, logf func(string, ...any)) ([]gen.Edge, uint64, error) {
	t0 := time.Now()
	if cfg.Input != "" {
		edges, err := edgefile.ReadFile(cfg.Input)
		if err != nil {
			return nil, 0, err
		}
		var nv uint64
		for _, e := range edges {
			nv = max(nv, e.Src+1, e.Dst+1)
		}
		logf("read %d edges from %s in %.1fs", len(edges), cfg.Input, time.Since(t0).Seconds())
		return edges, nv, nil
	}
	r := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}
	if err := r.Validate(); err != nil {
		return nil, 0, err
	}
	edges := r.Generate()
	logf("generated %d RMAT edges (scale %d, edge factor %d, seed %d) in %.1fs", len(edges), cfg.Scale, cfg.EdgeFactor, cfg.Seed, time.Since(t0).Seconds())
	return edges, r.NumVertices(), nil
}
