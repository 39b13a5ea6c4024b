// Package dgsbench is `graphtide bench dgs`: the operations and protocols
// of the dynamic-graph-storage study (docs/architecture.md cites it; its
// section 5, "micro OP stream") run against the store, beside a static CSR
// of the same graph in the same process.
//
// Protocol, in order, on one RMAT stream (shuffled, so the study's "first
// 80% then the rest" is a random split):
//
//  1. load: the first --load share of the stream in batches of 10,000,
//     then a flush (load_edges_per_sec);
//  2. INSEDGE: the next edges of the stream as single updates (one
//     operation per Apply, as the study's write queries; --write-batch
//     groups them), each timed;
//  3. the static CSR of every edge applied so far, built in memory: the
//     baseline of the reads and the oracle they are checked against; and
//     a plain C++ CSR of the same edges (ccsr.h: the study's own, 8-byte
//     offsets and neighbors, std::lower_bound), driven over a whole
//     stream per call as the study's harness drives it;
//     INSVTX: vertex records (a label and a property document of about
//     60 bytes) for vertices of the graph and, one in eight, new isolated
//     ones past its range, as single updates, each timed; GETVTX: reads
//     of random vertices' records (each checked against a Go map of
//     them, the baseline), on the store and on the map;
//  4. SEARCHEDGE: lookups of random edges of the graph (each must be
//     found), on the store in batches (Snapshot.EdgeCounts: a snapshot's
//     100 lookups in one call) and one at a time with every column
//     (Snapshot.Edge), on the CSR (binary search) and on the C++ CSR;
//  5. SCANNBR: full neighbor lists of vertices drawn in proportion to
//     their degree (each list's length must be the CSR's), on the store
//     (Snapshot.Neighbors), the CSR and the C++ CSR;
//  6. DELEDGE: single deletes of random edges, each timed; a sample of
//     them is then looked up (none may be found); then the same edges
//     inserted again only while absent (engine.Store.ApplyIf, a
//     read-write transaction each: all applied), and once more (all
//     refused), each timed;
//  7. mixed read/write streams at 50/50 and 80/20 (reads: SEARCHEDGE;
//     writes: INSEDGE of the stream's next edges), each operation timed;
//  8. --readers goroutines doing SEARCHEDGE beside a writer streaming
//     INSEDGE for --duration: both rates and the writer's latency.
//
// Reads take a fresh snapshot every 100 operations (a reader of fresh
// data, as the study records latency per hundred operations); the store
// is as ingest leaves it (L0 files, levels, background compaction), not
// compacted. The rate of SEARCHEDGE and SCANNBR is measured over a pass in
// chunks of 100 timed as a whole, and their latency over a second pass of
// every eighth operation, each timed, so that no clock read per operation
// counts in the rate (on the store and on the CSR alike). The store's reads
// are reported against the faster of the two CSRs. Memory: the store's
// bytes on disk per edge and its MemGraph bytes, against the CSR's bytes
// per edge (8-byte offsets, 4-byte neighbors), and the process's peak
// resident set (which includes the generated stream and the CSRs).
package dgsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
)

// Config of one run (DefaultConfig has the defaults).
type Config struct {
	Scale, EdgeFactor int           // (20, 16)
	Seed              uint64        // (1)
	Dir               string        // scratch directory; must not exist or be empty
	Load              float64       // share of the stream loaded before the operations (0.8)
	Ops               int           // operations of each micro stream (200,000)
	WriteBatch        int           // operations per Apply in the write streams (1)
	Readers           int           // reader goroutines of the concurrent phase (2)
	Duration          time.Duration // how long the concurrent phase runs (10s)
	Log               io.Writer     // progress; nil = discard
}

// DefaultConfig is the command's defaults, without Dir.
func DefaultConfig() Config {
	return Config{Scale: 20, EdgeFactor: 16, Seed: 1, Load: 0.8, Ops: 200_000, WriteBatch: 1, Readers: 2,
		Duration: 10 * time.Second}
}

// MaxScale bounds Config.Scale (the stream and the CSR are in memory).
const MaxScale = 26

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	bench.GraphFlags(fs, &c.Scale, &c.EdgeFactor, &c.Seed, "log2 of the vertex count of the RMAT stream", "random seed of the stream and of the operations")
	fs.Float64Var(&c.Load, "load", c.Load, "share of the stream loaded before the operations, in (0, 1)")
	fs.IntVar(&c.Ops, "ops", c.Ops, "operations of each micro stream (INSEDGE, INSVTX, GETVTX, SEARCHEDGE, SCANNBR, DELEDGE, each mixed stream)")
	fs.IntVar(&c.WriteBatch, "write-batch", c.WriteBatch, "operations per Apply in the write streams (1: single updates, as the study)")
	fs.IntVar(&c.Readers, "readers", c.Readers, "reader goroutines beside the writer in the concurrent phase")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long the concurrent phase runs")
	fs.StringVar(&c.Dir, "dir", c.Dir, "directory for the store; must not exist or be empty (default: a temporary directory, removed afterwards)")
}

// Validate checks the settings; its messages name the command's flags.
func (c Config) Validate() error {
	if err := bench.ValidateGraph(c.Scale, c.EdgeFactor, MaxScale, 0); err != nil {
		return err
	}
	if err := (gen.RMAT{Scale: c.Scale, EdgeFactor: c.EdgeFactor, Seed: c.Seed}).Validate(); err != nil {
		return err
	}
	switch {
	case !(c.Load > 0 && c.Load < 1):
		return fmt.Errorf("--load must be in (0, 1), got %v", c.Load)
	case c.Ops < 100 || c.Ops > 100_000_000:
		return fmt.Errorf("--ops must be between 100 and 100000000, got %d", c.Ops)
	case c.WriteBatch < 1 || c.WriteBatch > 100_000:
		return fmt.Errorf("--write-batch must be between 1 and 100000, got %d", c.WriteBatch)
	case c.Readers < 0 || c.Readers > 64:
		return fmt.Errorf("--readers must be between 0 and 64, got %d", c.Readers)
	case c.Duration < 10*time.Millisecond || c.Duration > time.Hour:
		return fmt.Errorf("--duration must be between 10ms and 1h, got %v", c.Duration)
	}
	return nil
}

// Op is what one stream of one operation measured: operations per second
// and the latency of one (for writes, of one Apply of WriteBatch ops).
type Op struct {
	Ops       int     `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Us     float64 `json:"p50_us"`
	P99Us     float64 `json:"p99_us"`
}

// Result is the JSON line the command prints last.
type Result struct {
	Edges         int `json:"edges"`          // of the stream
	LoadedEdges   int `json:"loaded_edges"`   // before the operations
	GraphEdges    int `json:"graph_edges"`    // distinct, after INSEDGE (the CSR's)
	GraphVertices int `json:"graph_vertices"` // the CSR's vertex range
	WriteBatch    int `json:"write_batch"`

	LoadEdgesPerSec float64 `json:"load_edges_per_sec"`
	InsEdge         Op      `json:"insedge"`
	// Vertex records: single puts, and reads on the store and on a Go map
	// of the same records.
	InsVtx    Op `json:"insvtx"`
	GetVtx    Op `json:"getvtx"`
	MapGetVtx Op `json:"map_getvtx"`
	// SEARCHEDGE: lookups in batches of a snapshot's reads
	// (Snapshot.EdgeCounts, one call each), and one at a time with every
	// column (Snapshot.Edge); on the CSR in Go, and a plain C++ CSR's rate.
	SearchEdge                Op      `json:"searchedge"`
	SearchEdgeSingle          Op      `json:"searchedge_single"`
	CSRSearchEdge             Op      `json:"csr_searchedge"`
	CppCSRSearchEdgeOpsPerSec float64 `json:"cpp_csr_searchedge_ops_per_sec"`
	ScanNbr                   Op      `json:"scannbr"`
	CSRScanNbr                Op      `json:"csr_scannbr"`
	DelEdge                   Op      `json:"deledge"`
	// Conditional inserts (ApplyIf, edge absent): applied, then refused.
	CondInsEdge        Op `json:"cond_insedge"`
	CondInsEdgeRefused Op `json:"cond_insedge_refused"`
	// Neighbors read per second by SCANNBR, on the store and the CSR.
	ScanNbrEdgesPerSec       float64 `json:"scannbr_edges_per_sec"`
	CSRScanNbrEdgesPerSec    float64 `json:"csr_scannbr_edges_per_sec"`
	CppCSRScanNbrEdgesPerSec float64 `json:"cpp_csr_scannbr_edges_per_sec"`
	// Mixed streams: all operations per second, and each kind's latency.
	Mixed50Reads, Mixed50Writes Op      `json:"-"`
	Mixed80Reads, Mixed80Writes Op      `json:"-"`
	Mixed5050OpsPerSec          float64 `json:"mixed_50_50_ops_per_sec"`
	Mixed8020OpsPerSec          float64 `json:"mixed_80_20_ops_per_sec"`
	// Concurrent phase: the writer's single updates and the readers'
	// lookups per second, and the writer's latency.
	ConcurrentReaders       int     `json:"concurrent_readers"`
	ConcurrentWriter        Op      `json:"concurrent_writer"`
	ConcurrentReadOpsPerSec float64 `json:"concurrent_read_ops_per_sec"`

	// Ratios in this run: the store's reads against the faster CSR (in
	// Go or in C++), and the CSR in Go against the C++ one.
	SearchEdgeOverCSR       float64 `json:"searchedge_store_over_csr"`
	SearchEdgeSingleOverCSR float64 `json:"searchedge_single_store_over_csr"`
	ScanNbrOverCSR          float64 `json:"scannbr_store_over_csr"`
	GoCSROverCppSearchEdge  float64 `json:"csr_go_over_cpp_searchedge"`
	GoCSROverCppScanNbr     float64 `json:"csr_go_over_cpp_scannbr"`
	GetVtxOverMap           float64 `json:"getvtx_store_over_map"`
	// Flat keys of the headline figures.
	SearchEdgeOpsPerSec float64 `json:"searchedge_ops_per_sec"`
	InsEdgeOpsPerSec    float64 `json:"insedge_ops_per_sec"`
	DelEdgeOpsPerSec    float64 `json:"deledge_ops_per_sec"`
	ScanNbrOpsPerSec    float64 `json:"scannbr_ops_per_sec"`
	InsVtxOpsPerSec     float64 `json:"insvtx_ops_per_sec"`
	GetVtxOpsPerSec     float64 `json:"getvtx_ops_per_sec"`

	// Memory and disk, per distinct edge of the graph after INSEDGE.
	DiskBytesPerEdge float64 `json:"disk_bytes_per_edge"`
	CSRBytesPerEdge  float64 `json:"csr_bytes_per_edge"`
	MemGraphBytes    int64   `json:"memgraph_bytes"`
	PeakRSSBytes     int64   `json:"peak_rss_bytes"`
}

// readEvery: a reader takes a fresh snapshot every this many operations.
const readEvery = 100

// Run performs the benchmark.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	logf := func(f string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, f+"\n", a...)
		}
	}
	stream := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}.Generate()
	res.Edges, res.WriteBatch = len(stream), cfg.WriteBatch
	load := int(float64(len(stream)) * cfg.Load)
	res.LoadedEdges = load
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x646773))

	s, err := engine.Open(filepath.Join(cfg.Dir, "store"), nil)
	if err != nil {
		return res, err
	}
	defer s.Close()

	// 1. Load.
	t0 := time.Now()
	var b engine.Batch
	for i := 0; i < load; i += 10000 {
		b.Reset()
		for _, e := range stream[i:min(i+10000, load)] {
			b.Insert(e.Src, e.Dst)
		}
		if _, err := s.Apply(&b); err != nil {
			return res, err
		}
	}
	if err := s.Flush(); err != nil {
		return res, err
	}
	res.LoadEdgesPerSec = float64(load) / time.Since(t0).Seconds()
	logf("dgs: loaded %d of %d edges: %.0f edges/s", load, len(stream), res.LoadEdgesPerSec)

	// 2. INSEDGE: the stream's next edges, single updates.
	w := &writer{s: s, stream: stream, pos: load, batch: cfg.WriteBatch}
	lat := make([]time.Duration, 0, cfg.Ops/cfg.WriteBatch+1)
	t0 = time.Now()
	for done := 0; done < cfg.Ops && w.pos < len(stream); done += cfg.WriteBatch {
		d, err := w.insert()
		if err != nil {
			return res, err
		}
		lat = append(lat, d)
	}
	res.InsEdge = op(w.pos-load, time.Since(t0), lat)
	logf("dgs: INSEDGE %s", res.InsEdge)

	// 3. The CSR of every edge applied so far: the baseline and the oracle.
	g := newCSR(stream[:min(w.pos, len(stream))])
	res.GraphEdges, res.GraphVertices = len(g.nbrs), len(g.off)-1
	res.CSRBytesPerEdge = float64(g.bytes()) / float64(len(g.nbrs))
	if m, err := s.Metrics(); err == nil {
		res.DiskBytesPerEdge = float64(m.DiskBytes()) / float64(len(g.nbrs))
		res.MemGraphBytes = int64(m.MemGraphBytes)
	}

	// 3b. INSVTX and GETVTX.
	if err := vertexRecords(s, g, rng, cfg.Ops, &res); err != nil {
		return res, err
	}
	logf("dgs: INSVTX %s; GETVTX %s; on a Go map %s", res.InsVtx, res.GetVtx, res.MapGetVtx)

	// 4. SEARCHEDGE: random edges of the graph, each must be found.
	cc, err := newCppCSR(g)
	if err != nil {
		return res, err
	}
	defer cc.free()
	srcs, dsts := make([]uint64, cfg.Ops), make([]uint64, cfg.Ops)
	for i := range srcs {
		e := g.edge(rng)
		srcs[i], dsts[i] = e[0], e[1]
	}
	if err := searchEdges(s, g, cc, srcs, dsts, &res); err != nil {
		return res, err
	}
	logf("dgs: SEARCHEDGE %s; one at a time (Snapshot.Edge) %s; on the CSR in Go %s; in C++ %.0f/s", res.SearchEdge,
		res.SearchEdgeSingle, res.CSRSearchEdge, res.CppCSRSearchEdgeOpsPerSec)

	// 5. SCANNBR: vertices drawn by degree, each list checked against the CSR.
	scans := make([]uint64, max(cfg.Ops/10, 100))
	for i := range scans {
		scans[i] = g.edge(rng)[0]
	}
	if err := scanNeighbors(s, g, cc, scans, &res); err != nil {
		return res, err
	}
	logf("dgs: SCANNBR %s (%.0f edges/s); on the CSR in Go %s (%.0f edges/s); in C++ %.0f edges/s", res.ScanNbr,
		res.ScanNbrEdgesPerSec, res.CSRScanNbr, res.CSRScanNbrEdgesPerSec, res.CppCSRScanNbrEdgesPerSec)

	// 6. DELEDGE: distinct random edges, single deletes; then none is found.
	gone := map[[2]uint64]bool{}
	var dels [][2]uint64
	for len(dels) < min(cfg.Ops, len(g.nbrs)/2) {
		if e := g.edge(rng); !gone[e] {
			gone[e] = true
			dels = append(dels, e)
		}
	}
	lat = lat[:0]
	t0 = time.Now()
	for i := 0; i < len(dels); i += cfg.WriteBatch {
		b.Reset()
		for _, e := range dels[i:min(i+cfg.WriteBatch, len(dels))] {
			b.DeleteEdge(e[0], e[1])
		}
		t := time.Now()
		if _, err := s.Apply(&b); err != nil {
			return res, err
		}
		lat = append(lat, time.Since(t))
	}
	res.DelEdge = op(len(dels), time.Since(t0), lat)
	if _, err := timeReads(s, min(len(dels), 1000), func(sn *engine.Snapshot, i int) (int, error) {
		if c, err := sn.Edge(dels[i][0], dels[i][1]); err != nil || len(c.Types) != 0 {
			return 0, fmt.Errorf("deleted edge %d -> %d is still found (%w)", dels[i][0], dels[i][1], err)
		}
		return 1, nil
	}); err != nil {
		return res, err
	}
	logf("dgs: DELEDGE %s", res.DelEdge)

	// 6b. Conditional inserts (ApplyIf, a read-write transaction each): the
	// deleted edges again, each only while absent (all are applied), then
	// again (all are refused: they exist).
	for pass, want := range []bool{true, false} {
		lat = lat[:0]
		t0 = time.Now()
		refused := 0
		for _, e := range dels {
			b.Reset()
			b.Insert(e[0], e[1])
			t := time.Now()
			_, err := s.ApplyIf(&b, []engine.Condition{{Kind: engine.CondEdgeAbsent, Src: e[0], Dst: e[1]}})
			lat = append(lat, time.Since(t))
			var pe *engine.PreconditionError
			switch {
			case errors.As(err, &pe):
				refused++
			case err != nil:
				return res, err
			}
		}
		if applied := len(dels) - refused; want && refused != 0 || !want && applied != 0 {
			return res, fmt.Errorf("conditional inserts, pass %d: %d applied and %d refused of %d", pass+1, applied, refused, len(dels))
		}
		o := op(len(dels), time.Since(t0), lat)
		if want {
			res.CondInsEdge = o
		} else {
			res.CondInsEdgeRefused = o
		}
	}
	logf("dgs: conditional INSEDGE (applied while absent) %s; refused (present) %s", res.CondInsEdge, res.CondInsEdgeRefused)

	// 7. Mixed streams: SEARCHEDGE reads, INSEDGE writes.
	for _, m := range []struct {
		reads        float64
		rOut, wOut   *Op
		opsPerSecOut *float64
	}{{0.5, &res.Mixed50Reads, &res.Mixed50Writes, &res.Mixed5050OpsPerSec},
		{0.8, &res.Mixed80Reads, &res.Mixed80Writes, &res.Mixed8020OpsPerSec}} {
		if err := mixed(s, w, g, rng, cfg.Ops, m.reads, m.rOut, m.wOut, m.opsPerSecOut); err != nil {
			return res, err
		}
		logf("dgs: mixed %.0f/%.0f: %.0f ops/s; reads %s; writes %s", 100*m.reads, 100*(1-m.reads), *m.opsPerSecOut, *m.rOut, *m.wOut)
	}

	// 8. Readers beside the writer.
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.ConcurrentReaders = cfg.Readers
	if err := concurrent(ctx, s, w, g, cfg, &res); err != nil {
		return res, err
	}
	logf("dgs: %d readers beside the writer: writer %s; readers %.0f lookups/s", cfg.Readers, res.ConcurrentWriter,
		res.ConcurrentReadOpsPerSec)

	csrSearch := max(res.CSRSearchEdge.OpsPerSec, res.CppCSRSearchEdgeOpsPerSec)
	res.SearchEdgeOverCSR = res.SearchEdge.OpsPerSec / csrSearch
	res.SearchEdgeSingleOverCSR = res.SearchEdgeSingle.OpsPerSec / csrSearch
	res.ScanNbrOverCSR = res.ScanNbrEdgesPerSec / max(res.CSRScanNbrEdgesPerSec, res.CppCSRScanNbrEdgesPerSec)
	res.GoCSROverCppSearchEdge = res.CSRSearchEdge.OpsPerSec / res.CppCSRSearchEdgeOpsPerSec
	res.GoCSROverCppScanNbr = res.CSRScanNbrEdgesPerSec / res.CppCSRScanNbrEdgesPerSec
	res.SearchEdgeOpsPerSec, res.InsEdgeOpsPerSec = res.SearchEdge.OpsPerSec, res.InsEdge.OpsPerSec
	res.DelEdgeOpsPerSec, res.ScanNbrOpsPerSec = res.DelEdge.OpsPerSec, res.ScanNbr.OpsPerSec
	res.InsVtxOpsPerSec, res.GetVtxOpsPerSec = res.InsVtx.OpsPerSec, res.GetVtx.OpsPerSec
	res.GetVtxOverMap = res.GetVtx.OpsPerSec / res.MapGetVtx.OpsPerSec
	if m, err := bench.ReadMemory(); err == nil {
		res.PeakRSSBytes = m.PeakRSS
	}
	logf("dgs: store/CSR: SEARCHEDGE %.2fx, SCANNBR %.2fx; disk %.2f bytes per edge, CSR %.2f; MemGraph %d bytes; peak RSS %d bytes",
		res.SearchEdgeOverCSR, res.ScanNbrOverCSR, res.DiskBytesPerEdge, res.CSRBytesPerEdge, res.MemGraphBytes, res.PeakRSSBytes)
	return res, nil
}

// vertexRecords runs INSVTX (n single puts: vertices of g, and one in
// eight a new isolated vertex past its range; a vertex may be put again,
// replacing its record) and GETVTX (n reads of random vertices with a
// record, each checked against a Go map of the records, whose own reads
// are the baseline).
func vertexRecords(s *engine.Store, g *csr, rng *rand.Rand, n int, res *Result) error {
	labels := []string{"account", "merchant", "device", "person"}
	recs := make(map[uint64]engine.Vertex, n)
	var ids []uint64
	var b engine.Batch
	lat := make([]time.Duration, 0, n)
	nv := uint64(len(g.off) - 1)
	t0 := time.Now()
	for i := range n {
		v := uint64(rng.IntN(int(nv)))
		if i%8 == 7 {
			v = nv + uint64(i)
		}
		rec := engine.Vertex{Label: labels[rng.IntN(len(labels))],
			Props: fmt.Appendf(nil, `{"since":%d,"score":%.3f,"region":"r%d"}`, 1_700_000_000+i, rng.Float64(), rng.IntN(64))}
		b.Reset()
		b.PutVertex(v, rec.Label, rec.Props)
		t := time.Now()
		if _, err := s.Apply(&b); err != nil {
			return err
		}
		lat = append(lat, time.Since(t))
		if _, ok := recs[v]; !ok {
			ids = append(ids, v)
		}
		recs[v] = rec
	}
	res.InsVtx = op(n, time.Since(t0), lat)
	gets := make([]uint64, n)
	for i := range gets {
		gets[i] = ids[rng.IntN(len(ids))]
	}
	var err error
	res.GetVtx, err = timeReads(s, n, func(sn *engine.Snapshot, i int) (int, error) {
		rec, ok, err := sn.Vertex(gets[i])
		if err == nil && (!ok || rec.Label != recs[gets[i]].Label || len(rec.Props) != len(recs[gets[i]].Props)) {
			err = fmt.Errorf("GETVTX %d: %+v (found %v), want %+v", gets[i], rec, ok, recs[gets[i]])
		}
		return 1, err
	})
	if err != nil {
		return err
	}
	var sum int
	res.MapGetVtx, _ = timeReads(nil, n, func(_ *engine.Snapshot, i int) (int, error) {
		rec := recs[gets[i]]
		sum += len(rec.Label) + len(rec.Props) // read it, as the store's read copies it
		return 1, nil
	})
	if sum == 0 {
		return errors.New("GETVTX on the map read nothing")
	}
	return nil
}

func (o Op) String() string {
	return fmt.Sprintf("%d ops, %.0f/s, p50 %.2f µs, p99 %.2f µs", o.Ops, o.OpsPerSec, o.P50Us, o.P99Us)
}

// op is the figures of n operations that took total, with the latencies
// lat (sorted here).
func op(n int, total time.Duration, lat []time.Duration) Op {
	o := Op{Ops: n, OpsPerSec: float64(n) / total.Seconds()}
	if len(lat) > 0 {
		slices.Sort(lat)
		o.P50Us = float64(lat[len(lat)*50/100]) / 1e3
		o.P99Us = float64(lat[len(lat)*99/100]) / 1e3
	}
	return o
}

// timeReads runs read(sn, i) for i in [0, n), each timed, on a fresh
// snapshot of s every readEvery operations (sn is nil when s is: a read of
// the CSR). read returns how many operations it did.
func timeReads(s *engine.Store, n int, read func(sn *engine.Snapshot, i int) (int, error)) (Op, error) {
	lat := make([]time.Duration, 0, n)
	fr := &freshReader{s: s}
	defer fr.close()
	done := 0
	t0 := time.Now()
	for i := 0; i < n; i++ {
		t := time.Now()
		var sn *engine.Snapshot
		if s != nil {
			var err error
			if sn, err = fr.next(); err != nil {
				return Op{}, err
			}
		}
		k, err := read(sn, i)
		if err != nil {
			return Op{}, err
		}
		done += k
		lat = append(lat, time.Since(t))
	}
	return op(done, time.Since(t0), lat), nil
}

// freshReader hands out a snapshot of s for each read, a fresh one every
// readEvery reads (as a reader of fresh data takes them).
type freshReader struct {
	s  *engine.Store
	sn *engine.Snapshot
	n  int // reads so far
}

func (r *freshReader) next() (*engine.Snapshot, error) {
	if r.n%readEvery == 0 {
		r.close()
		var err error
		if r.sn, err = r.s.Snapshot(); err != nil {
			return nil, err
		}
	}
	r.n++
	return r.sn, nil
}

func (r *freshReader) close() {
	if r.sn != nil {
		r.sn.Release()
		r.sn = nil
	}
}

// writer applies the stream's next edges as INSEDGE. Used by one
// goroutine at a time.
type writer struct {
	s      *engine.Store
	stream []gen.Edge
	pos    int // edges applied (the stream wraps around: later inserts upsert)
	batch  int
	b      engine.Batch
}

// insert applies the next batch of edges and returns how long Apply took.
func (w *writer) insert() (time.Duration, error) {
	w.b.Reset()
	for range w.batch {
		e := w.stream[w.pos%len(w.stream)]
		w.b.Insert(e.Src, e.Dst)
		w.pos++
	}
	t := time.Now()
	_, err := w.s.Apply(&w.b)
	return time.Since(t), err
}

// mixed runs n operations, a share reads of them SEARCHEDGE (of edges of
// g, some of them deleted since: found or not, a lookup is a read) and the
// rest INSEDGE, each timed.
func mixed(s *engine.Store, w *writer, g *csr, rng *rand.Rand, n int, reads float64, rOut, wOut *Op, opsPerSec *float64) error {
	var rl, wl []time.Duration
	fr := &freshReader{s: s}
	defer fr.close()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if rng.Float64() >= reads {
			d, err := w.insert()
			if err != nil {
				return err
			}
			wl = append(wl, d)
			continue
		}
		t := time.Now()
		sn, err := fr.next()
		if err != nil {
			return err
		}
		e := g.edge(rng)
		if _, err := sn.Edge(e[0], e[1]); err != nil {
			return err
		}
		rl = append(rl, time.Since(t))
	}
	total := time.Since(t0)
	*opsPerSec = float64(n) / total.Seconds()
	*rOut, *wOut = op(len(rl), total, rl), op(len(wl)*w.batch, total, wl)
	return nil
}

// concurrent runs cfg.Readers goroutines of SEARCHEDGE beside the writer's
// INSEDGE for cfg.Duration.
func concurrent(ctx context.Context, s *engine.Store, w *writer, g *csr, cfg Config, res *Result) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Readers)
	for r := range cfg.Readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(r)+1))
			fr := &freshReader{s: s}
			defer fr.close()
			n := int64(0) // added once: the readers do not share a counter per read
			defer func() { reads.Add(n) }()
			for ctx.Err() == nil {
				sn, err := fr.next()
				if err == nil {
					e := g.edge(rng)
					_, err = sn.Edge(e[0], e[1])
				}
				if err != nil {
					errs <- err
					return
				}
				n++
			}
		}()
	}
	var lat []time.Duration
	t0 := time.Now()
	for ctx.Err() == nil {
		d, err := w.insert()
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		lat = append(lat, d)
	}
	total := time.Since(t0)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	res.ConcurrentWriter = op(len(lat)*w.batch, total, lat)
	res.ConcurrentReadOpsPerSec = float64(reads.Load()) / total.Seconds()
	return nil
}

// csr is a static CSR of a set of edges: offsets and sorted, distinct
// neighbors, over vertices [0, len(off)-1).
type csr struct {
	off  []int64
	nbrs []uint32
	srcs []uint32 // the source of each edge, for drawing edges uniformly
}

func newCSR(edges []gen.Edge) *csr {
	n := uint64(0)
	for _, e := range edges {
		n = max(n, e.Src+1, e.Dst+1)
	}
	g := &csr{off: make([]int64, n+1)}
	for _, e := range edges {
		g.off[e.Src+1]++
	}
	for i := range n {
		g.off[i+1] += g.off[i]
	}
	at := slices.Clone(g.off[:n])
	g.nbrs = make([]uint32, len(edges))
	for _, e := range edges {
		g.nbrs[at[e.Src]] = uint32(e.Dst)
		at[e.Src]++
	}
	// Sort each list and drop repeated edges (the stream repeats some).
	w := int64(0)
	beg := int64(0)
	for v := range n {
		l := g.nbrs[beg:g.off[v+1]]
		slices.Sort(l)
		l = slices.Compact(l)
		beg = g.off[v+1]
		g.off[v] = w
		w += int64(copy(g.nbrs[w:], l))
	}
	g.off[n] = w
	g.nbrs = g.nbrs[:w:w]
	g.srcs = make([]uint32, w)
	for v := range n {
		for k := g.off[v]; k < g.off[v+1]; k++ {
			g.srcs[k] = uint32(v)
		}
	}
	return g
}

func (g *csr) nbrsOf(v uint64) []uint32 {
	if v+1 >= uint64(len(g.off)) {
		return nil
	}
	return g.nbrs[g.off[v]:g.off[v+1]]
}

func (g *csr) degree(v uint64) int { return len(g.nbrsOf(v)) }

// has is a binary search of a's neighbors for b (a lower bound whose
// steps compile without a branch on the comparison).
func (g *csr) has(a, b uint64) bool {
	if a+1 >= uint64(len(g.off)) || b > math.MaxUint32 {
		return false
	}
	l := g.nbrs[g.off[a]:g.off[a+1]]
	x := uint32(b)
	i, n := 0, len(l)
	for n > 1 {
		half := n / 2
		if l[i+half-1] < x {
			i += half
		}
		n -= half
	}
	return n == 1 && l[i] == x
}

// edge draws an edge uniformly (so its source in proportion to degree).
func (g *csr) edge(rng *rand.Rand) [2]uint64 {
	k := rng.IntN(len(g.nbrs))
	return [2]uint64{uint64(g.srcs[k]), uint64(g.nbrs[k])}
}

// bytes is the CSR's memory as a static store keeps it: 8-byte offsets and
// 4-byte neighbors (not the sources kept here for drawing edges).
func (g *csr) bytes() int64 { return int64(len(g.off))*8 + int64(len(g.nbrs))*4 }

// latEvery: a read stream's latencies are taken on every latEvery-th of
// its reads, in a pass of their own after the pass that measures its rate
// (whose chunks are timed as a whole, so that no clock read per operation
// is counted in the rate).
const latEvery = 8

// readStream measures reads [0, n): the rate over a pass in chunks of
// readEvery, each on a fresh snapshot of s (s nil: a CSR, no snapshot),
// through run(sn, lo, hi), which does reads [lo, hi) and returns the items
// they read (neighbors, or one per lookup); then the latency of every
// latEvery-th read, run alone and timed (a fresh snapshot every readEvery
// of them). It returns the figures and the items read per second.
func readStream(s *engine.Store, n int, run func(sn *engine.Snapshot, lo, hi int) (int, error)) (Op, float64, error) {
	fr := &freshReader{s: s}
	defer fr.close()
	items := 0
	t0 := time.Now()
	for lo := 0; lo < n; lo += readEvery {
		var sn *engine.Snapshot
		if s != nil {
			fr.close()
			var err error
			if sn, err = s.Snapshot(); err != nil {
				return Op{}, 0, err
			}
			fr.sn = sn
		}
		k, err := run(sn, lo, min(lo+readEvery, n))
		if err != nil {
			return Op{}, 0, err
		}
		items += k
	}
	total := time.Since(t0)
	fr.close()
	lat := make([]time.Duration, 0, n/latEvery+1)
	for i := 0; i < n; i += latEvery {
		t := time.Now()
		var sn *engine.Snapshot
		if s != nil {
			var err error
			if sn, err = fr.next(); err != nil {
				return Op{}, 0, err
			}
		}
		if _, err := run(sn, i, i+1); err != nil {
			return Op{}, 0, err
		}
		lat = append(lat, time.Since(t))
	}
	o := op(n, total, lat)
	return o, float64(items) / total.Seconds(), nil
}

// searchEdges runs SEARCHEDGE: the lookups of srcs[i] -> dsts[i] (edges of
// g, each must be found once) on the store in batches (Snapshot.EdgeCounts,
// a chunk a call) and one at a time (Snapshot.Edge, every column), on g
// and on the C++ CSR.
func searchEdges(s *engine.Store, g *csr, cc *cppCSR, srcs, dsts []uint64, res *Result) error {
	counts := make([]uint32, readEvery)
	var err error
	res.SearchEdge, _, err = readStream(s, len(srcs), func(sn *engine.Snapshot, lo, hi int) (int, error) {
		c := counts[:hi-lo]
		if err := sn.EdgeCounts(srcs[lo:hi], dsts[lo:hi], c); err != nil {
			return 0, err
		}
		for i, k := range c {
			if k != 1 {
				return 0, fmt.Errorf("SEARCHEDGE %d -> %d found %d edges, the graph has 1", srcs[lo+i], dsts[lo+i], k)
			}
		}
		return hi - lo, nil
	})
	if err != nil {
		return err
	}
	res.SearchEdgeSingle, _, err = readStream(s, len(srcs), func(sn *engine.Snapshot, lo, hi int) (int, error) {
		for i := lo; i < hi; i++ {
			c, err := sn.Edge(srcs[i], dsts[i])
			if err == nil && len(c.Types) != 1 {
				err = fmt.Errorf("SEARCHEDGE %d -> %d found %d edges, the graph has 1", srcs[i], dsts[i], len(c.Types))
			}
			if err != nil {
				return 0, err
			}
		}
		return hi - lo, nil
	})
	if err != nil {
		return err
	}
	res.CSRSearchEdge, _, err = readStream(nil, len(srcs), func(_ *engine.Snapshot, lo, hi int) (int, error) {
		for i := lo; i < hi; i++ {
			if !g.has(srcs[i], dsts[i]) {
				return 0, fmt.Errorf("the CSR lacks %d -> %d", srcs[i], dsts[i])
			}
		}
		return hi - lo, nil
	})
	if err != nil {
		return err
	}
	t0 := time.Now()
	found := cc.search(srcs, dsts)
	res.CppCSRSearchEdgeOpsPerSec = float64(len(srcs)) / time.Since(t0).Seconds()
	if found != len(srcs) {
		return fmt.Errorf("the C++ CSR found %d of %d edges", found, len(srcs))
	}
	return nil
}

// scanNeighbors runs SCANNBR: the out-neighbor lists of vids on the store
// (Snapshot.Neighbors, each list's length checked against g's), on g and
// on the C++ CSR; all three must read the same neighbors (their sums).
func scanNeighbors(s *engine.Store, g *csr, cc *cppCSR, vids []uint64, res *Result) error {
	// The sums of the neighbors each side read in its rate pass: equal
	// when both read the same lists (and they keep the reads from being
	// optimized away).
	var storeSum, csrSum uint64
	var buf []uint64 // the lists read, reused (as a reader's buffer is)
	var err error
	res.ScanNbr, res.ScanNbrEdgesPerSec, err = readStream(s, len(vids), func(sn *engine.Snapshot, lo, hi int) (int, error) {
		n := 0
		for _, v := range vids[lo:hi] {
			var err error
			if buf, _, err = sn.Neighbors(v, engine.Out, buf, nil); err != nil {
				return 0, err
			}
			if len(buf) != g.degree(v) {
				return 0, fmt.Errorf("SCANNBR of %d read %d neighbors, the graph has %d", v, len(buf), g.degree(v))
			}
			for _, x := range buf {
				storeSum += x
			}
			n += len(buf)
		}
		return n, nil
	})
	if err != nil {
		return err
	}
	res.CSRScanNbr, res.CSRScanNbrEdgesPerSec, _ = readStream(nil, len(vids), func(_ *engine.Snapshot, lo, hi int) (int, error) {
		n := 0
		for _, v := range vids[lo:hi] {
			l := g.nbrsOf(v)
			for _, x := range l {
				csrSum += uint64(x) // read every neighbor, as the store's scan copies each
			}
			n += len(l)
		}
		return n, nil
	})
	t0 := time.Now()
	n, cppSum := cc.scan(vids)
	res.CppCSRScanNbrEdgesPerSec = float64(n) / time.Since(t0).Seconds()
	// The store's and g's sums cover their rate pass and their latency
	// pass (every latEvery-th list again); the C++ CSR's one pass.
	var want, again uint64
	for i, v := range vids {
		for _, x := range g.nbrsOf(v) {
			want += uint64(x)
			if i%latEvery == 0 {
				again += uint64(x)
			}
		}
	}
	if storeSum != want+again || csrSum != want+again || cppSum != want {
		return fmt.Errorf("SCANNBR read other neighbors on the store, the CSR and the C++ CSR (sums %d, %d and %d, want %d, %d and %d)",
			storeSum, csrSum, cppSum, want+again, want+again, want)
	}
	return nil
}
