package ingestbench

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/graphtide/graphtide/internal/bench"
	"github.com/graphtide/graphtide/internal/engine"
	"github.com/graphtide/graphtide/internal/gen"
	"github.com/graphtide/graphtide/internal/staticcsr"
)

// The write path's figures (issue 12), each beside its baseline from the
// same run:
//   - in-edges: the same ingest (Apply and the final flush) into a store
//     that keeps in-edges, against the out-only store: its rate, the
//     process's CPU time per edge, and the bytes on disk per distinct edge
//     after CompactAll;
//   - Apply's CPU time per edge and direction, and the MemGraph's bytes
//     per buffered version, with the stream held in one MemGraph (nothing
//     flushes or compacts meanwhile, so the process's CPU time is
//     Apply's);
//   - the degree of a hub whose versions (2M by default) are still in the
//     MemGraph: its first read, its later ones, and the first reads after
//     bursts of more versions;
//   - a full scan after 1% of the vertices were deleted and CompactAll,
//     against the scan of the store that never had deletes.

// applyCPUEdges bounds the edges applied for the Apply CPU figure.
const applyCPUEdges = 4_000_000

// ingestInto applies edges in batches and flushes: the store's ingest.
func ingestInto(s *engine.Store, edges []gen.Edge, batch int) (time.Duration, error) {
	t0 := time.Now()
	var b engine.Batch
	for i := 0; i < len(edges); i += batch {
		b.Reset()
		for _, e := range edges[i:min(i+batch, len(edges))] {
			b.Insert(e.Src, e.Dst)
		}
		if _, err := s.Apply(&b); err != nil {
			return 0, err
		}
	}
	if err := s.Flush(); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// runInEdges ingests the edges into an out-only store again and then into
// a store with in-edges, as runStore does, timing the process's CPU of
// each ingest, and compacts the second.
func runInEdges(cfg Config, edges []gen.Edge, res *Result, logf func(string, ...any)) error {
	ingestCPU := func(s *engine.Store) (time.Duration, float64, error) {
		cpu0 := bench.ProcessCPU()
		took, err := ingestInto(s, edges, cfg.BatchSize)
		return took, float64((bench.ProcessCPU() - cpu0).Nanoseconds()) / float64(len(edges)), err
	}
	out, err := engine.Open(filepath.Join(cfg.Dir, "store-out"), &engine.Options{MemGraphBytes: res.MemGraphBytes})
	if err != nil {
		return err
	}
	_, res.IngestCPUNsPerEdge, err = ingestCPU(out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s, err := engine.Open(filepath.Join(cfg.Dir, "store-in"), &engine.Options{MemGraphBytes: res.MemGraphBytes, InEdges: true})
	if err != nil {
		return err
	}
	defer s.Close()
	took, cpu, err := ingestCPU(s)
	if err != nil {
		return err
	}
	res.IngestCPUNsPerEdgeIn = cpu
	res.InEdgesCPUOverOutOnly = res.IngestCPUNsPerEdgeIn / res.IngestCPUNsPerEdge
	res.StoreInEdgesPerSec = float64(len(edges)) / took.Seconds()
	res.InEdgesOverOutOnly = res.StoreInEdgesPerSec / res.StoreEdgesPerSec
	if err := s.CompactAll(); err != nil {
		return err
	}
	m, err := s.Metrics()
	if err != nil {
		return err
	}
	res.StoreInEdgesBytesPerEdge = float64(m.DiskBytes()) / float64(res.DistinctEdges)
	res.InEdgesBytesOverOutOnly = res.StoreInEdgesBytesPerEdge / res.StoreBytesPerEdge
	logf("store with in-edges: ingest+flush %.0f edges/s (%.2fx out-only), %.1f ns CPU per edge (%.2fx out-only), %.2f bytes/edge after compact-all (%.2fx out-only)",
		res.StoreInEdgesPerSec, res.InEdgesOverOutOnly, res.IngestCPUNsPerEdgeIn, res.InEdgesCPUOverOutOnly,
		res.StoreInEdgesBytesPerEdge, res.InEdgesBytesOverOutOnly)
	return nil
}

// applySteadyPasses is how many times runApplyCPU applies the stream into
// a MemGraph made of recycled memory; the median counts (the machine's
// noise is ±15% from one run to the next).
const applySteadyPasses = 3

// runApplyCPU applies up to applyCPUEdges edges into one MemGraph large
// enough to hold them, out-only and with in-edges: first into the store's
// first MemGraph (fresh memory: every page faulted in and zeroed by the
// kernel), then, after a flush each, applySteadyPasses times into the next
// ones, which write into the memory the one before gave back (what every
// MemGraph but a process's first does). The figure is the median of those,
// of the CPU time in Apply as the store counts it (Metrics.ApplyCPU: the
// calling thread's and the helper thread's); the whole process's CPU time
// over the same loop (the Go runtime's background work included) and the
// first MemGraph's are reported beside it.
func runApplyCPU(cfg Config, edges []gen.Edge, res *Result, logf func(string, ...any)) error {
	edges = edges[:min(len(edges), applyCPUEdges)]
	// The batches are built first: the figure is Apply's alone.
	batches := make([]engine.Batch, 0, len(edges)/cfg.BatchSize+1)
	for i := 0; i < len(edges); i += cfg.BatchSize {
		var b engine.Batch
		for _, e := range edges[i:min(i+cfg.BatchSize, len(edges))] {
			b.Insert(e.Src, e.Dst)
		}
		batches = append(batches, b)
	}
	for _, in := range []bool{false, true} {
		dirs := 1
		if in {
			dirs = 2
		}
		s, err := engine.Open(filepath.Join(cfg.Dir, fmt.Sprintf("store-apply-%d", dirs)), &engine.Options{
			MemGraphBytes: int64(len(edges)) * 256, InEdges: in, DisableAutoCompaction: true})
		if err != nil {
			return err
		}
		perEdge := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(len(edges)*dirs) }
		var first, firstProc float64
		var apply, proc, cores []float64
		var m engine.Metrics
		for pass := range 1 + applySteadyPasses {
			if pass > 0 {
				if err = s.Flush(); err != nil {
					break
				}
			}
			runtime.GC() // no collection of the batch building's garbage runs while Apply is timed
			if m, err = s.Metrics(); err != nil {
				break
			}
			apply0 := m.ApplyCPU
			cpu0, t0 := bench.ProcessCPU(), time.Now()
			for i := range batches {
				if _, err = s.Apply(&batches[i]); err != nil {
					break
				}
			}
			cpu, wall := bench.ProcessCPU()-cpu0, time.Since(t0)
			if err != nil {
				break
			}
			if m, err = s.Metrics(); err != nil {
				break
			}
			if m.Flushes != int64(pass) {
				err = fmt.Errorf("the Apply CPU figure needs each pass in one MemGraph, but %d flushes ran in %d passes", m.Flushes, pass+1)
				break
			}
			if pass == 0 {
				first, firstProc = perEdge(m.ApplyCPU-apply0), perEdge(cpu)
				continue
			}
			apply = append(apply, perEdge(m.ApplyCPU-apply0))
			proc = append(proc, perEdge(cpu))
			cores = append(cores, cpu.Seconds()/wall.Seconds())
		}
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		ns, nsProc := median(apply), median(proc)
		if in {
			res.ApplyCPUNsPerEdgeDirIn = ns
		} else {
			res.ApplyCPUNsPerEdgeDir = ns
			res.ApplyProcessCPUNsPerEdgeDir = nsProc
			res.ApplyCPUNsPerEdgeDirFirst = first
			res.MemGraphBytesPerVersion = float64(m.MemGraphBytes) / float64(m.MemGraphEntries)
		}
		logf("apply (%d direction(s), %d edges in one MemGraph): %.1f ns CPU in Apply per edge and direction (median of %.1f; the whole process: %.1f, median of %.1f; in the store's first MemGraph: %.1f and %.1f), %.2f cores busy, %.1f MemGraph bytes per version",
			dirs, len(edges), ns, apply, nsProc, proc, first, firstProc, median(cores), float64(m.MemGraphBytes)/float64(m.MemGraphEntries))
	}
	return nil
}

// median of xs (not empty); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// runHub applies cfg.HubVersions edges out of one vertex, in random order,
// and times reads of it while they are in the MemGraph: the first Degree
// (nothing read it before: it pays for whatever sorting the reads need),
// then the best of later ones and of a one-edge page; then, after a burst
// of a tenth as many versions more, the first Degree, and after another
// such burst the first one-edge page (issue 43: a hub's first read after
// any burst, not only its later ones).
func runHub(cfg Config, res *Result, logf func(string, ...any)) error {
	hubVersions := cfg.HubVersions
	burst := max(hubVersions/10, 1)
	s, err := engine.Open(filepath.Join(cfg.Dir, "store-hub"), &engine.Options{
		MemGraphBytes: max(int64(hubVersions+2*burst)*256, 64<<10), DisableAutoCompaction: true})
	if err != nil {
		return err
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(cfg.Seed, 12))
	var b engine.Batch
	apply := func(dsts []int) error {
		for i := 0; i < len(dsts); i += cfg.BatchSize {
			b.Reset()
			for _, d := range dsts[i:min(i+cfg.BatchSize, len(dsts))] {
				b.Insert(7, uint64(d)+1)
			}
			if _, err := s.Apply(&b); err != nil {
				return err
			}
		}
		return nil
	}
	// Dsts 1..hubVersions in random order, then each burst's new ones.
	written := 0
	more := func(n int) error {
		perm := rng.Perm(n)
		for i := range perm {
			perm[i] += written
		}
		written += n
		return apply(perm)
	}
	if err := more(hubVersions); err != nil {
		return err
	}
	m, err := s.Metrics()
	if err != nil {
		return err
	}
	if m.MemGraphEntries < int64(hubVersions) {
		return fmt.Errorf("the hub figure needs the hub in the MemGraph, but it holds %d of %d versions", m.MemGraphEntries, hubVersions)
	}
	// A read of a snapshot taken now; deg and page checked against what
	// was written.
	var deg uint64
	var page engine.Page
	degree := func() error {
		sn, err := s.Snapshot()
		if err != nil {
			return err
		}
		defer sn.Release()
		if deg, err = sn.Degree(7, engine.Out); err == nil && deg != uint64(written) {
			err = fmt.Errorf("hub degree %d, want %d", deg, written)
		}
		return err
	}
	onePage := func(sn *engine.Snapshot) error {
		after := engine.EdgeCursor{Dst: uint64(written / 2)}
		page, err = sn.NeighborsPage(7, engine.Out, &after, 1, false)
		if err == nil && (len(page.Dsts) != 1 || page.Dsts[0] != after.Dst+1) {
			err = fmt.Errorf("hub page after %d: %v, want [%d]", after.Dst, page.Dsts, after.Dst+1)
		}
		return err
	}
	timed := func(f func() error) (float64, error) {
		t0 := time.Now()
		err := f()
		return 1000 * time.Since(t0).Seconds(), err
	}
	if res.HubFirstDegreeMs, err = timed(degree); err != nil {
		return err
	}
	sn, err := s.Snapshot()
	if err != nil {
		return err
	}
	defer sn.Release()
	res.HubDegreeMs = 1000 * bestOf(func() {
		if err == nil {
			deg, err = sn.Degree(7, engine.Out)
		}
	})
	if err == nil && deg != uint64(hubVersions) {
		err = fmt.Errorf("hub degree %d, want %d", deg, hubVersions)
	}
	if err != nil {
		return err
	}
	res.HubPageMs = 1000 * bestOf(func() {
		if err == nil {
			err = onePage(sn)
		}
	})
	if err != nil {
		return err
	}
	if err := more(burst); err != nil {
		return err
	}
	if res.HubFirstDegreeAfterBurstMs, err = timed(degree); err != nil {
		return err
	}
	if err := more(burst); err != nil {
		return err
	}
	if res.HubFirstPageAfterBurstMs, err = timed(func() error {
		sn, err := s.Snapshot()
		if err != nil {
			return err
		}
		defer sn.Release()
		return onePage(sn)
	}); err != nil {
		return err
	}
	logf("hub with %d versions in the MemGraph: first degree %.3f ms, later degree %.3f ms, one-edge page %.3f ms; after %d versions more: first degree %.3f ms; after %d more: first one-edge page %.3f ms",
		hubVersions, res.HubFirstDegreeMs, res.HubDegreeMs, res.HubPageMs, burst, res.HubFirstDegreeAfterBurstMs, burst, res.HubFirstPageAfterBurstMs)
	return nil
}

// runVertexDeletes loads the edges into a store, deletes 1% of the
// vertices, compacts it fully and times a full scan, against the scan of
// the store that never had deletes (res.StoreScanSec).
func runVertexDeletes(cfg Config, edges []gen.Edge, csr *staticcsr.CSR, res *Result, logf func(string, ...any)) error {
	s, err := engine.Open(filepath.Join(cfg.Dir, "store-vdel"), &engine.Options{MemGraphBytes: res.MemGraphBytes})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := ingestInto(s, edges, cfg.BatchSize); err != nil {
		return err
	}
	nv := csr.NumVertices()
	rng := rand.New(rand.NewPCG(cfg.Seed, 13))
	deleted := make([]bool, nv)
	var b engine.Batch
	for range nv / 100 {
		v := rng.Uint64N(nv)
		deleted[v] = true
		b.DeleteVertex(v)
	}
	if _, err := s.Apply(&b); err != nil {
		return err
	}
	if err := s.Flush(); err != nil {
		return err
	}
	if err := s.CompactAll(); err != nil {
		return err
	}
	// The oracle: the CSR's edges between vertices that remain.
	var wantN, wantSum uint64
	for v := range nv {
		if deleted[v] {
			continue
		}
		for _, d := range csr.Neighbors(v) {
			if !deleted[d] {
				wantN++
				wantSum += d
			}
		}
	}
	sn, err := s.Snapshot()
	if err != nil {
		return err
	}
	defer sn.Release()
	scan := storeScan(sn)
	if _, _, err := scan(); err != nil { // warm
		return err
	}
	var n, sum uint64
	sec := bestOf(func() {
		if err == nil {
			n, sum, err = scan()
		}
	})
	if err != nil {
		return err
	}
	if n != wantN || sum != wantSum {
		return fmt.Errorf("scan after vertex deletes: %d edges (checksum %d), want %d (checksum %d)", n, sum, wantN, wantSum)
	}
	res.ScanAfterVertexDeletesOverClean = sec / res.StoreScanSec
	logf("store: scan after deleting 1%% of the vertices and compact-all %.3fs (%.2fx the store without deletes)", sec, res.ScanAfterVertexDeletesOverClean)
	return nil
}

// storeScan returns a full out-edge scan of sn: the edges and a checksum
// of their dsts.
func storeScan(sn *engine.Snapshot) func() (uint64, uint64, error) {
	buf := engine.NewScanBuffer(1<<14, 1<<18, false)
	return func() (uint64, uint64, error) {
		var n, sum uint64
		bound := sn.VertexBound()
		for lo := uint64(0); lo < bound; {
			next, err := sn.Scan(lo, bound, engine.Out, buf)
			if err != nil {
				return 0, 0, err
			}
			for _, d := range buf.Dsts {
				sum += d
			}
			n += uint64(len(buf.Dsts))
			lo = next
		}
		return n, sum, nil
	}
}
