// Package mixedbench is `graphtide bench mixed`: does reading stall
// ingestion? It preloads part of an RMAT stream into a fresh store, then
// runs one phase per reader count (0, 2 and 4 by default). In each phase a
// writer applies small batches (100 ops: the stream's next edges, some
// deletes of edges applied before and a few vertex deletes, hubs included
// since they are drawn in proportion to their degree) and times every
// Apply, while that many goroutines continuously take fresh static views
// (views.Manager), scan each one whole and gather the neighborhoods of the
// stream's hubs. It reports, per phase, the apply latency's p50, p99 and
// maximum, and the readers' rate, so that the phases compare within one
// run: apply_p99_ms_readers4 against apply_p99_ms_readers0.
//
// The writer is paced (Config.Rate batches per second, as a stream from
// Kafka arrives) or, with Rate 0, applies as fast as it can. A paced
// writer measures what readers make ingestion wait; an unpaced one on a
// 2-core machine also measures how the OS shares the cores between the
// writer's thread and the readers'.
package mixedbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/views"
)

// Config of one run (DefaultConfig has the defaults shown).
type Config struct {
	Scale, EdgeFactor int           // (20, 16)
	Seed              uint64        // (1)
	Dir               string        // scratch directory; must not exist or be empty
	BatchSize         int           // ops per Apply (100)
	MemGraphMiB       int           // store option, in MiB (64)
	Preload           float64       // share of the stream loaded before the phases, in batches of 10,000 (0.5)
	Readers           []int         // reader goroutines of each phase, in order (0, 2, 4)
	Phase             time.Duration // how long the writer applies in each phase (20s)
	Rate              int           // batches per second the writer is paced at; 0: unpaced (1000)
	EdgeDeletes       float64       // share of ops that delete an edge applied before (0.05)
	VertexDeletes     float64       // share of ops that delete a vertex (0.0001)
	Hubs              int           // hub neighborhoods each reader gathers per view (8)
	Log               io.Writer     // progress; nil = discard
}

// Phase is what one phase measured.
type Phase struct {
	Readers int `json:"readers"`
	// Apply calls timed, and their rate (the pacing's, unless Apply
	// could not keep up).
	Batches       int     `json:"batches"`
	BatchesPerSec float64 `json:"batches_per_sec"`
	ApplyP50Ms    float64 `json:"apply_p50_ms"`
	ApplyP99Ms    float64 `json:"apply_p99_ms"`
	ApplyP999Ms   float64 `json:"apply_p999_ms"`
	ApplyMaxMs    float64 `json:"apply_max_ms"`
	// Whole-view scans the readers finished (each followed by a gather of
	// the hubs' neighborhoods), and the edges they read per second.
	Scans              int     `json:"scans"`
	ScansPerSec        float64 `json:"scans_per_sec"`
	ScannedEdgesPerSec float64 `json:"scanned_edges_per_sec"`
	// What the store did meanwhile: write stalls (Apply waiting for a
	// flush, nothing to do with readers), flushes and compactions.
	WriteStalls int64 `json:"write_stalls"`
	Flushes     int64 `json:"flushes"`
	Compactions int64 `json:"compactions"`
	// The machine's 1-minute load average at the phase's end (-1 if
	// unknown): well above readers+1, other work shared the cores.
	LoadAvg1m float64 `json:"load_avg_1m"`
}

// Result is the JSON line the command prints last: the run's settings, the
// phases, and flat per-phase keys (apply_p99_ms_readers4, ...) with
// apply_p99_readers4_over_readers0 when both phases ran.
type Result struct {
	Edges         int      `json:"edges"`
	Preloaded     int      `json:"preloaded_edges"`
	BatchSize     int      `json:"batch_size"`
	Rate          int      `json:"rate_batches_per_sec"`
	PhaseSec      float64  `json:"phase_sec"`
	MemGraphBytes int64    `json:"memgraph_bytes"`
	Hubs          []uint64 `json:"hubs"`
	Phases        []Phase  `json:"phases"`
}

// MarshalJSON adds the flat keys to the struct's fields.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	b, err := json.Marshal(plain(r))
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	by := map[int]Phase{}
	for _, p := range r.Phases {
		k := fmt.Sprintf("readers%d", p.Readers)
		m["apply_p50_ms_"+k] = p.ApplyP50Ms
		m["apply_p99_ms_"+k] = p.ApplyP99Ms
		m["apply_max_ms_"+k] = p.ApplyMaxMs
		m["scans_per_sec_"+k] = p.ScansPerSec
		m["scanned_edges_per_sec_"+k] = p.ScannedEdgesPerSec
		by[p.Readers] = p
	}
	for _, n := range []int{2, 4} {
		p0, ok0 := by[0]
		pn, okn := by[n]
		if ok0 && okn && p0.ApplyP99Ms > 0 {
			m[fmt.Sprintf("apply_p99_readers%d_over_readers0", n)] = pn.ApplyP99Ms / p0.ApplyP99Ms
		}
	}
	return json.Marshal(m)
}

// DefaultConfig is the command's defaults, without Dir.
func DefaultConfig() Config {
	return Config{Scale: 20, EdgeFactor: 16, Seed: 1, BatchSize: 100, MemGraphMiB: 64, Preload: 0.5,
		Readers: []int{0, 2, 4}, Phase: 20 * time.Second, Rate: 1000, EdgeDeletes: 0.05, VertexDeletes: 0.0001, Hubs: 8}
}

// MaxScale bounds Config.Scale.
const MaxScale = 26

// AddFlags binds the command's flags to c, whose values are the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	bench.GraphFlags(fs, &c.Scale, &c.EdgeFactor, &c.Seed, "log2 of the vertex count of the RMAT stream", "random seed of the stream and of the deletes")
	fs.Float64Var(&c.Preload, "preload", c.Preload, "share of the stream loaded before the timed phases, in [0, 1)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "ops per timed Apply")
	fs.IntVar(&c.Rate, "rate", c.Rate, "batches per second the writer is paced at, as a stream arrives (0: as fast as it can)")
	fs.IntSliceVar(&c.Readers, "readers", c.Readers, "reader goroutines of each phase, in order")
	fs.DurationVar(&c.Phase, "duration", c.Phase, "how long the writer applies in each phase")
	fs.Float64Var(&c.EdgeDeletes, "edge-deletes", c.EdgeDeletes, "share of ops that delete an edge applied before")
	fs.Float64Var(&c.VertexDeletes, "vertex-deletes", c.VertexDeletes, "share of ops that delete a vertex (drawn by degree, so hubs too)")
	fs.IntVar(&c.Hubs, "hubs", c.Hubs, "hubs whose neighborhoods each reader gathers after each scan")
	fs.IntVar(&c.MemGraphMiB, "memgraph-mib", c.MemGraphMiB, "size of one MemGraph in MiB (the store keeps two)")
	fs.StringVar(&c.Dir, "dir", c.Dir, "directory for the store; must not exist or be empty (default: a temporary directory, removed afterwards)")
}

// Validate checks the settings; its messages name the command's flags.
func (c Config) Validate() error {
	if c.MemGraphMiB < 1 || c.MemGraphMiB > 65536 {
		return fmt.Errorf("--memgraph-mib must be between 1 and 65536, got %d", c.MemGraphMiB)
	}
	// The whole stream is generated in memory: 16 bytes per edge.
	if c.Scale < gen.MinScale || c.Scale > MaxScale {
		return fmt.Errorf("--scale must be between %d and %d, got %d", gen.MinScale, MaxScale, c.Scale)
	}
	r := gen.RMAT{Scale: c.Scale, EdgeFactor: c.EdgeFactor, Seed: c.Seed}
	if err := r.Validate(); err != nil {
		return err
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > 1_000_000:
		return fmt.Errorf("--batch-size must be between 1 and 1000000, got %d", c.BatchSize)
	case c.Preload < 0 || c.Preload >= 1:
		return fmt.Errorf("--preload must be in [0, 1), got %v", c.Preload)
	case c.Phase < time.Millisecond || c.Phase > time.Hour:
		return fmt.Errorf("--duration must be between 1ms and 1h, got %v", c.Phase)
	case c.Rate < 0 || c.Rate > 1_000_000:
		return fmt.Errorf("--rate must be between 0 (unpaced) and 1000000 batches/s, got %d", c.Rate)
	case c.EdgeDeletes < 0 || c.VertexDeletes < 0 || c.EdgeDeletes+c.VertexDeletes > 0.5:
		return fmt.Errorf("--edge-deletes and --vertex-deletes must be non-negative and at most 0.5 together, got %v and %v",
			c.EdgeDeletes, c.VertexDeletes)
	case c.Hubs < 0 || c.Hubs > 10000:
		return fmt.Errorf("--hubs must be between 0 and 10000, got %d", c.Hubs)
	case len(c.Readers) == 0:
		return fmt.Errorf("--readers needs at least one reader count")
	}
	for _, n := range c.Readers {
		if n < 0 || n > 64 {
			return fmt.Errorf("--readers counts must be between 0 and 64, got %d", n)
		}
	}
	return nil
}

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
	edges := gen.RMAT{Scale: cfg.Scale, EdgeFactor: cfg.EdgeFactor, Seed: cfg.Seed}.Generate()
	res.Edges, res.BatchSize, res.Rate, res.PhaseSec = len(edges), cfg.BatchSize, cfg.Rate, cfg.Phase.Seconds()
	res.MemGraphBytes = int64(cfg.MemGraphMiB) << 20
	pre := int(float64(len(edges)) * cfg.Preload)
	res.Preloaded = pre
	res.Hubs = hubs(edges[:max(pre, min(len(edges), 1<<16))], cfg.Hubs)

	s, err := engine.Open(filepath.Join(cfg.Dir, "store"), &engine.Options{MemGraphBytes: res.MemGraphBytes})
	if err != nil {
		return res, err
	}
	defer s.Close()
	m, err := views.NewManager(s, views.Config{})
	if err != nil {
		return res, err
	}
	defer m.Close()

	t0 := time.Now()
	var b engine.Batch
	for i := 0; i < pre; i += 10000 {
		b.Reset()
		for _, e := range edges[i:min(i+10000, pre)] {
			b.Insert(e.Src, e.Dst)
		}
		if _, err := s.Apply(&b); err != nil {
			return res, err
		}
	}
	logf("mixed: preloaded %d of %d edges in %.1fs; hubs %v", pre, len(edges), time.Since(t0).Seconds(), res.Hubs)

	w := &writer{s: s, edges: edges, pos: pre, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6d69786564)), cfg: cfg}
	if w.pos == 0 {
		w.pos = 1 // deletes pick among applied edges
		w.b.Insert(edges[0].Src, edges[0].Dst)
		if _, err := s.Apply(&w.b); err != nil {
			return res, err
		}
	}
	for _, n := range cfg.Readers {
		p, err := runPhase(ctx, cfg, s, m, w, n, res.Hubs)
		if err != nil {
			return res, err
		}
		logf("mixed: %d readers: %d batches (%.0f/s), apply p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms; "+
			"%d scans (%.2f/s, %.0f edges/s); %d write stalls, %d flushes, %d compactions; load average %.2f",
			n, p.Batches, p.BatchesPerSec, p.ApplyP50Ms, p.ApplyP99Ms, p.ApplyP999Ms, p.ApplyMaxMs,
			p.Scans, p.ScansPerSec, p.ScannedEdgesPerSec, p.WriteStalls, p.Flushes, p.Compactions, p.LoadAvg1m)
		res.Phases = append(res.Phases, p)
	}
	return res, nil
}

// hubs returns the n vertices with the most out-edges, most first.
func hubs(edges []gen.Edge, n int) []uint64 {
	deg := map[uint64]int{}
	for _, e := range edges {
		deg[e.Src]++
	}
	vs := make([]uint64, 0, len(deg))
	for v := range deg {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool {
		if deg[vs[i]] != deg[vs[j]] {
			return deg[vs[i]] > deg[vs[j]]
		}
		return vs[i] < vs[j]
	})
	return vs[:min(n, len(vs))]
}

// writer makes and applies the mixed batches. Used by one goroutine.
type writer struct {
	s     *engine.Store
	edges []gen.Edge
	pos   int // stream edges applied so far (the stream wraps around)
	rng   *rand.Rand
	cfg   Config
	b     engine.Batch
}

// next fills w.b with the next batch.
func (w *writer) next() {
	w.b.Reset()
	for i := 0; i < w.cfg.BatchSize; i++ {
		r := w.rng.Float64()
		// Earlier edges are drawn uniformly, so vertices are drawn in
		// proportion to their degree: hubs are deleted too.
		old := w.edges[w.rng.IntN(min(w.pos, len(w.edges)))]
		switch {
		case r < w.cfg.VertexDeletes:
			w.b.DeleteVertex(old.Dst)
		case r < w.cfg.VertexDeletes+w.cfg.EdgeDeletes:
			w.b.DeleteEdge(old.Src, old.Dst)
		default:
			e := w.edges[w.pos%len(w.edges)]
			w.b.Insert(e.Src, e.Dst)
			w.pos++
		}
	}
}

func runPhase(ctx context.Context, cfg Config, s *engine.Store, m *views.Manager, w *writer, readers int,
	hubs []uint64) (Phase, error) {
	p := Phase{Readers: readers}
	before, err := s.Metrics()
	if err != nil {
		return p, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg           sync.WaitGroup
		scans, edges atomic.Int64
		errMu        sync.Mutex
		readErr      error
	)
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := read(rctx, m, hubs, &scans, &edges); err != nil && rctx.Err() == nil {
				errMu.Lock()
				readErr = err
				errMu.Unlock()
				stop()
			}
		}()
	}
	lat := make([]time.Duration, 0, 1<<16)
	start := time.Now()
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Second / time.Duration(cfg.Rate)
	}
	var werr error
	for k := 0; ; k++ {
		now := time.Now()
		if now.Sub(start) >= cfg.Phase || rctx.Err() != nil {
			break
		}
		if interval > 0 {
			if due := start.Add(time.Duration(k) * interval); now.Before(due) {
				time.Sleep(due.Sub(now))
			}
		}
		w.next()
		t := time.Now()
		if _, werr = s.Apply(&w.b); werr != nil {
			break
		}
		lat = append(lat, time.Since(t))
	}
	elapsed := time.Since(start)
	stop()
	wg.Wait()
	if werr != nil {
		return p, werr
	}
	if readErr != nil {
		return p, fmt.Errorf("reader: %w", readErr)
	}
	if err := ctx.Err(); err != nil {
		return p, err
	}
	after, err := s.Metrics()
	if err != nil {
		return p, err
	}
	slices.Sort(lat)
	q := func(f float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Nanoseconds()) / 1e6
	}
	p.Batches = len(lat)
	p.BatchesPerSec = float64(len(lat)) / elapsed.Seconds()
	p.ApplyP50Ms, p.ApplyP99Ms, p.ApplyP999Ms, p.ApplyMaxMs = q(0.5), q(0.99), q(0.999), q(1)
	p.Scans = int(scans.Load())
	p.ScansPerSec = float64(p.Scans) / elapsed.Seconds()
	p.ScannedEdgesPerSec = float64(edges.Load()) / elapsed.Seconds()
	p.WriteStalls = after.WriteStalls - before.WriteStalls
	p.Flushes = after.Flushes - before.Flushes
	p.Compactions = after.Compactions - before.Compactions
	p.LoadAvg1m = loadAvg()
	return p, nil
}

// loadAvg is the 1-minute load average from /proc/loadavg, or -1.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	x, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return x
}

// read takes fresh views until ctx ends, scanning each whole and gathering
// the hubs' neighborhoods, and counts finished scans and the edges read.
func read(ctx context.Context, m *views.Manager, hubs []uint64, scans, edges *atomic.Int64) error {
	buf := engine.NewScanBuffer(8192, 1<<18, false)
	for ctx.Err() == nil {
		v, err := m.Static(views.StaticOptions{Kind: views.Fresh})
		if err != nil {
			return err
		}
		var n int64
		err = v.Ranges(func(lo, hi uint64) error {
			for lo < hi {
				if err := ctx.Err(); err != nil {
					return err
				}
				next, err := v.Scan(lo, hi, engine.Out, buf)
				if err != nil {
					return err
				}
				n += int64(len(buf.Dsts))
				lo = next
			}
			return nil
		})
		if err == nil && len(hubs) > 0 {
			err = v.GatherEach(hubs, engine.Out, false, func(_ int, nbrs []uint64, _ []float64) { n += int64(len(nbrs)) })
		}
		v.Release()
		edges.Add(n)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		scans.Add(1)
	}
	return nil
}
