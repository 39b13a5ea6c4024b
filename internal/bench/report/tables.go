package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// decode reads a benchmark's result into v. A field the page does not show
// is not an error (benchmarks add figures); a missing one reads as zero,
// which need catches for the figures a table cannot do without (and which
// an audited page records: MissingFields).
func (p *page) decode(result []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(result))
	if err := d.Decode(v); err != nil {
		return err
	}
	if p.audit {
		var raw any
		if err := json.Unmarshal(result, &raw); err != nil {
			return err
		}
		absent(reflect.TypeOf(v), raw, "", &p.missing)
	}
	return nil
}

// need fails when a figure the page shows is missing (zero) from a result.
func need(figures map[string]float64) error {
	var missing []string
	for k, v := range figures {
		if v == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("the result lacks %s", strings.Join(missing, ", "))
	}
	return nil
}

func renderIngest(p *page, result []byte) error {
	var r struct {
		Edges            int        `json:"edges"`
		Distinct         uint64     `json:"distinct_edges"`
		Vertices         uint64     `json:"vertices"`
		BatchSize        int        `json:"batch_size"`
		MemGraphBytes    int64      `json:"memgraph_bytes"`
		Store            float64    `json:"store_edges_per_sec"`
		Pebble           float64    `json:"pebble_edges_per_sec"`
		StoreVsPebble    float64    `json:"store_vs_pebble"`
		StoreScan        float64    `json:"store_scan_sec"`
		CSRScan          float64    `json:"csr_scan_sec"`
		ScanRatio        float64    `json:"scan_store_over_csr"`
		StoreBytes       float64    `json:"store_bytes_per_edge"`
		PebbleBytes      float64    `json:"pebble_bytes_per_edge"`
		WriteAmp         float64    `json:"write_amplification"`
		Flushes          int64      `json:"flushes"`
		Compactions      int64      `json:"compactions"`
		WriteStalls      int64      `json:"write_stalls"`
		StoreExtra       int64      `json:"store_peak_rss_over_baseline_bytes"`
		StoreAnon        int64      `json:"store_peak_anon_rss_over_baseline_bytes"`
		StoreFile        int64      `json:"store_peak_file_rss_bytes"`
		InEdges          float64    `json:"store_in_edges_edges_per_sec"`
		InOverOut        float64    `json:"in_edges_over_out_only"`
		IngestCPUNs      float64    `json:"ingest_cpu_ns_per_edge"`
		IngestCPUInNs    float64    `json:"ingest_cpu_ns_per_edge_in_edges"`
		InBytes          float64    `json:"store_in_edges_bytes_per_edge"`
		ApplyNs          float64    `json:"apply_cpu_ns_per_edge_direction"`
		ApplyProcessNs   float64    `json:"apply_process_cpu_ns_per_edge_direction"`
		ApplyFirstNs     float64    `json:"apply_cpu_ns_per_edge_direction_first_memgraph"`
		ApplyInNs        float64    `json:"apply_cpu_ns_per_edge_direction_in_edges"`
		BytesPerVersion  float64    `json:"memgraph_bytes_per_version"`
		HubDegreeMs      float64    `json:"hub_degree_ms"`
		HubPageMs        float64    `json:"hub_page_ms"`
		HubFirstMs       float64    `json:"hub_first_degree_ms"`
		HubBurstMs       float64    `json:"hub_first_degree_after_burst_ms"`
		HubBurstPageMs   float64    `json:"hub_first_page_after_burst_ms"`
		ScanAfterDeletes float64    `json:"scan_after_vertex_deletes_over_clean"`
		Events           edgeEvents `json:"edge_events"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	if err := need(map[string]float64{"store_edges_per_sec": r.Store, "pebble_edges_per_sec": r.Pebble, "store_scan_sec": r.StoreScan,
		"csr_scan_sec": r.CSRScan, "store_bytes_per_edge": r.StoreBytes, "pebble_bytes_per_edge": r.PebbleBytes,
		"store_in_edges_edges_per_sec": r.InEdges, "apply_cpu_ns_per_edge_direction": r.ApplyNs}); err != nil {
		return err
	}
	p.line("%s edges (%s distinct) over %s vertex ids, MemGraphs of %s.",
		count(int64(r.Edges)), count(int64(r.Distinct)), count(int64(r.Vertices)), mib(r.MemGraphBytes))
	p.line("")
	rows := [][]string{
		{"ingest, batches of " + count(int64(r.BatchSize)) + ", final flush included", rate(r.Store) + " edges/s", "Pebble: " + rate(r.Pebble) + " edges/s", ratio(r.StoreVsPebble)},
		{"full out-neighbor scan of the compacted store", duration(r.StoreScan), "static CSR: " + duration(r.CSRScan), ratio(r.ScanRatio)},
		{"on disk after `CompactAll`, per distinct edge", sig(r.StoreBytes) + " bytes", "Pebble: " + sig(r.PebbleBytes) + " bytes", ratio(r.StoreBytes / r.PebbleBytes)},
		{"ingest into a store that keeps in-edges", rate(r.InEdges) + " edges/s", "out-edges only: " + rate(r.Store) + " edges/s", ratio(r.InOverOut)},
	}
	// The in-edges' CPU and disk cost (results of runs before they were
	// measured have no such fields).
	if r.IngestCPUNs > 0 && r.IngestCPUInNs > 0 {
		rows = append(rows, []string{"the process's CPU time per edge of that ingest", sig(r.IngestCPUInNs) + " ns", "out-edges only: " + sig(r.IngestCPUNs) + " ns", ratio(r.IngestCPUInNs / r.IngestCPUNs)})
	}
	if r.InBytes > 0 {
		rows = append(rows, []string{"its bytes on disk after `CompactAll`, per distinct edge", sig(r.InBytes) + " bytes", "out-edges only: " + sig(r.StoreBytes) + " bytes", ratio(r.InBytes / r.StoreBytes)})
	}
	p.table([]string{"figure", "graphtide", "baseline", "graphtide / baseline"}, append(rows, [][]string{
		{"`Apply`'s CPU time per edge and direction (its two threads)", sig(r.ApplyNs) + " ns", "", ""},
		{"the same, keeping in-edges", sig(r.ApplyInNs) + " ns", "out-edges only: " + sig(r.ApplyNs) + " ns", ratio(r.ApplyInNs / r.ApplyNs)},
		{"the whole process's CPU time over the same passes", sig(r.ApplyProcessNs) + " ns", "`Apply`'s threads: " + sig(r.ApplyNs) + " ns", ratio(r.ApplyProcessNs / r.ApplyNs)},
		{"`Apply` into a process's first MemGraph (fresh pages)", sig(r.ApplyFirstNs) + " ns", "recycled memory: " + sig(r.ApplyNs) + " ns", ratio(r.ApplyFirstNs / r.ApplyNs)},
		{"MemGraph bytes per buffered version", sig(r.BytesPerVersion), "", ""},
		{"degree of a hub with 2M versions in the MemGraph: its first read", duration(r.HubFirstMs / 1e3), "later reads: " + duration(r.HubDegreeMs/1e3), ""},
		{"the same hub's first degree read after a burst of more versions", duration(r.HubBurstMs / 1e3), "", ""},
		{"a one-edge page of that hub's neighbors: after a burst, later", duration(r.HubBurstPageMs/1e3) + ", " + duration(r.HubPageMs/1e3), "", ""},
		{"full scan after 1% of the vertices were deleted and compacted away", "", "the store that had no deletes", ratio(r.ScanAfterDeletes)},
		{"the store's peak resident memory above the benchmark's own data", mib(r.StoreExtra) + " (" + mib(r.StoreAnon) + " anonymous, " + mib(r.StoreFile) + " mapped files)", "", ""},
		{"write amplification; flushes, compactions, write stalls", fmt.Sprintf("%s; %d, %d, %d", sig(r.WriteAmp), r.Flushes, r.Compactions, r.WriteStalls), "", ""},
	}...))
	// Edge events (results of runs before they were measured have none).
	if r.Events.Events > 0 {
		return renderEdgeEvents(p, r.Events, r.BatchSize)
	}
	p.line("This result has no figures of edge events (its run predates them):")
	p.line("`scripts/bench-report.sh --only ingest` measures them.")
	p.line("")
	return nil
}

// edgeEvents is bench ingest's comparison of edge aggregates (its
// edge_events object).
type edgeEvents struct {
	Events        int               `json:"events"`
	Accounts      int               `json:"accounts"`
	DistinctPairs int               `json:"distinct_pairs"`
	EventsPerPair float64           `json:"events_per_pair"`
	RepeatShare   float64           `json:"repeat_share"`
	PropsBytes    float64           `json:"props_bytes_per_event"`
	Rounds        int               `json:"rounds"`
	Replace       edgeEventsVariant `json:"replace"`
	Accumulate    edgeEventsVariant `json:"accumulate"`
	Props         edgeEventsVariant `json:"accumulate_props"`
	Retain        edgeEventsVariant `json:"accumulate_props_retain"`
}

type edgeEventsVariant struct {
	ApplyNs     float64 `json:"apply_cpu_ns_per_event"`
	IngestNs    float64 `json:"ingest_cpu_ns_per_event"`
	Rate        float64 `json:"events_per_sec"`
	Bytes       float64 `json:"bytes_per_edge"`
	ApplyRatio  float64 `json:"apply_cpu_over_replace"`
	IngestRatio float64 `json:"ingest_cpu_over_replace"`
	BytesRatio  float64 `json:"bytes_over_replace"`
}

func renderEdgeEvents(p *page, e edgeEvents, batch int) error {
	figures := map[string]float64{}
	for name, v := range map[string]edgeEventsVariant{"replace": e.Replace, "accumulate": e.Accumulate,
		"accumulate_props": e.Props, "accumulate_props_retain": e.Retain} {
		for k, x := range map[string]float64{"apply_cpu_ns_per_event": v.ApplyNs, "ingest_cpu_ns_per_event": v.IngestNs,
			"events_per_sec": v.Rate, "bytes_per_edge": v.Bytes} {
			figures["edge_events."+name+"."+k] = x
		}
	}
	figures["edge_events.distinct_pairs"] = float64(e.DistinctPairs)
	if err := need(figures); err != nil {
		return err
	}
	p.line("Edge events: %s payments among %s accounts over 30 days of event time, %s",
		count(int64(e.Events)), count(int64(e.Accounts)), count(int64(e.DistinctPairs)))
	p.line("distinct pairs (%s payments per pair; %.0f%% of the payments repeat a pair), in",
		sig(e.EventsPerPair), 100*e.RepeatShare)
	p.line("batches of %s into a store per variant, the variants taking turns %d times", count(int64(batch)), e.Rounds)
	p.line("(medians). Properties: an event reference and a property document per payment,")
	p.line("%s bytes. Disk: bytes per distinct pair after `CompactAll`.", sig(e.PropsBytes))
	p.line("")
	row := func(name string, v edgeEventsVariant) []string {
		return []string{name, sig(v.ApplyNs) + " ns", ratio(v.ApplyRatio), sig(v.IngestNs) + " ns", ratio(v.IngestRatio),
			rate(v.Rate) + "/s", sig(v.Bytes) + " bytes", ratio(v.BytesRatio)}
	}
	p.table([]string{"edge type", "`Apply` CPU per payment", "/ replace", "ingest CPU per payment", "/ replace", "rate", "on disk per pair", "/ replace"},
		[][]string{
			row("replace", e.Replace),
			row("accumulate", e.Accumulate),
			row("accumulate, with properties", e.Props),
			row("accumulate, with properties, retain 24h", e.Retain),
		})
	return nil
}

func renderAnalytics(p *page, result []byte) error {
	type kernel struct {
		View            float64 `json:"view_sec"`
		CSR             float64 `json:"csr_sec"`
		Fresh           float64 `json:"fresh_sec"`
		ViewOverCSR     float64 `json:"view_over_csr"`
		FreshOverView   float64 `json:"fresh_over_view"`
		Iterations      int     `json:"iterations"`
		FreshIterations int     `json:"fresh_iterations"`
	}
	type incremental struct {
		Batch     float64 `json:"batch_sec"`
		BatchP99  float64 `json:"batch_p99_sec"`
		Update    float64 `json:"update_sec"`
		Max       float64 `json:"max_update_sec"`
		Warmup    float64 `json:"warmup_update_sec"`
		Recompute float64 `json:"recompute_sec"`
		Speedup   float64 `json:"speedup"`
		Fallbacks int     `json:"fallbacks"`
		Batches   int     `json:"batches"`
	}
	var r struct {
		Graph            string  `json:"graph"`
		StreamSource     string  `json:"stream_source"`
		HubVertexDeletes int     `json:"hub_vertex_deletes"`
		Edges            int     `json:"edges"`
		Vertices         uint64  `json:"vertices"`
		Root             uint64  `json:"root"`
		Weighted         bool    `json:"weighted"`
		StreamedOps      int     `json:"streamed_ops"`
		Batches          int     `json:"batches"`
		DeleteFraction   float64 `json:"delete_fraction"`
		VertexDeletes    int     `json:"vertex_deletes"`
		Topology         struct {
			Build        float64            `json:"build_sec"`
			CSRBuild     float64            `json:"csr_build_sec"`
			Bytes        int64              `json:"bytes"`
			BytesPerEdge float64            `json:"bytes_per_edge"`
			Advance      float64            `json:"advance_sec_per_batch"`
			Edges        int64              `json:"edges"`
			Vertices     int                `json:"vertices"`
			BytesAfter   float64            `json:"bytes_per_edge_after_stream"`
			Counters     map[string]float64 `json:"advance_counters"`
		} `json:"topology"`
		Batch *struct {
			Batches    int     `json:"batches"`
			Ops        float64 `json:"ops"`
			Apply      float64 `json:"apply_sec"`
			ApplyP99   float64 `json:"apply_p99_sec"`
			Advance    float64 `json:"advance_sec"`
			AdvanceP99 float64 `json:"advance_p99_sec"`
			AdvanceOp  float64 `json:"advance_us_per_op"`
			Changes    float64 `json:"edge_changes"`
			AdvanceCh  float64 `json:"advance_us_per_change"`
			All        float64 `json:"all_sec"`
			AllP99     float64 `json:"all_p99_sec"`
			AdvAlloc   float64 `json:"advance_alloc_bytes_per_op"`
			UpdAlloc   float64 `json:"update_alloc_bytes_per_op"`
		} `json:"batch"`
		Checked  []string `json:"checked_against_reference"`
		Registry *struct {
			Batches   int     `json:"batches"`
			Interval  float64 `json:"interval_sec"`
			Late      float64 `json:"late_sec"`
			AllSec    float64 `json:"all_sec"`
			AllP99Sec float64 `json:"all_p99_sec"`
			Analytics map[string]*struct {
				Batch      float64 `json:"batch_sec"`
				BatchP99   float64 `json:"batch_p99_sec"`
				Update     float64 `json:"update_sec"`
				Recomputes int     `json:"recomputes"`
				Fresh      float64 `json:"fresh_sec"`
				FreshP99   float64 `json:"fresh_p99_sec"`
				Updates    int     `json:"updates"`
			} `json:"analytics"`
		} `json:"registry"`
		DD *struct {
			Version   string `json:"differential_dataflow"`
			Timely    string `json:"timely"`
			Workers   int    `json:"workers"`
			Analytics map[string]*struct {
				Round    float64 `json:"round_sec"`
				RoundP99 float64 `json:"round_p99_sec"`
				Rounds   int     `json:"rounds"`
				Load     float64 `json:"load_sec"`
				PeakRSS  int64   `json:"peak_rss_bytes"`
				Batch    float64 `json:"graphtide_batch_sec"`
				BatchP99 float64 `json:"graphtide_batch_p99_sec"`
				Ratio    float64 `json:"graphtide_over_dd"`
				Reg      float64 `json:"registry_batch_sec"`
				RegP99   float64 `json:"registry_batch_p99_sec"`
				RegRatio float64 `json:"registry_over_dd"`
				Checked  string  `json:"checked"`
			} `json:"analytics"`
		} `json:"differential_dataflow"`
		Kernels     map[string]*kernel      `json:"kernels"`
		Incremental map[string]*incremental `json:"incremental"`
		Sparse      map[string]float64      `json:"sparse_over_dense"`
		Unmapped    map[string]float64      `json:"unmapped_over_dense"`
		Keys        map[string]float64      `json:"keys_over_dense"`
		PeakRSS     int64                   `json:"peak_rss_bytes"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	kernels := []string{"bfs", "wcc", "pagerank", "sssp"}
	for _, k := range kernels {
		if r.Kernels[k] == nil {
			return fmt.Errorf("the result has no kernel %s", k)
		}
	}
	weights := "unweighted (sssp's lengths are all 1)"
	if r.Weighted {
		weights = "weighted"
	}
	family := map[string]string{"rmat": "An R-MAT graph: ", "kron": "A Kronecker graph (R-MAT draws made simple): ", "input": "The input file: "}[r.Graph]
	from := map[string]string{"generator": ", drawn on by the graph's own generator (its permutation, so its hubs)",
		"beside": ", drawn from the graph's own endpoints", "file": " from a stream file"}[r.StreamSource]
	hubs := ""
	if r.HubVertexDeletes > 0 {
		hubs = fmt.Sprintf(" (%d of them of the largest hubs)", r.HubVertexDeletes)
	}
	p.line("%s%s edges loaded (%s distinct) over %s vertex ids, %s; bfs and sssp from vertex %d; then %s operations streamed%s in %d batches, %.0f%% of them edge deletes, %d vertex deletes%s.",
		family, count(int64(r.Edges)), count(r.Topology.Edges), count(int64(r.Vertices)), weights, r.Root, count(int64(r.StreamedOps)), from, r.Batches, r.DeleteFraction*100, r.VertexDeletes, hubs)
	p.line("")
	if len(r.Checked) > 0 {
		p.line("On the compacted view, %s equal reference kernels run on the loaded edges at every vertex.", strings.Join(r.Checked, ", "))
		p.line("")
	}
	names := make([]string, 0, len(r.Incremental))
	for k := range r.Incremental {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return order(a) - order(b) })
	var rows [][]string
	if g := r.Registry; g != nil && g.Interval > 0 {
		// A stream that does not wait: its freshness alone (the rest is
		// the other runs').
		late := ""
		if g.Late > 0 {
			late = fmt.Sprintf("; the store's Apply fell behind the pace, the last batch by %s", duration(g.Late))
		}
		p.line("Registered together in an analytics registry, as serve runs them (each on its own goroutine, over a store of their own), with a batch applied every %s whatever the analytics do, as a stream that does not wait (%d batches after the warm-up%s). Each update takes every batch applied since the one before; its freshness is the time from the Apply of the oldest operation it took to its result, what serve exports as `graphtide_analytics_freshness_seconds`:", duration(g.Interval), g.Batches, late)
		p.line("")
		for _, k := range names {
			if a := g.Analytics[k]; a != nil {
				rows = append(rows, []string{k, duration(a.Fresh), duration(a.FreshP99), fmt.Sprintf("%d for %d batches", a.Updates, g.Batches), duration(a.Update), fmt.Sprintf("%d", a.Recomputes)})
			}
		}
		p.table([]string{"analytic", "freshness (mean)", "p99", "updates", "update alone (mean)", "updates that recomputed"}, rows)
		p.line("Peak resident memory of the process (its stores, their topologies and the CSR baseline): %s.", gib(r.PeakRSS))
		p.line("")
		return nil
	}
	for _, k := range kernels {
		kr := r.Kernels[k]
		name := k
		if kr.Iterations > 0 {
			name = fmt.Sprintf("%s (%d iterations; %d after the stream)", k, kr.Iterations, kr.FreshIterations)
		}
		rows = append(rows, []string{name, duration(kr.View), duration(kr.CSR), ratio(kr.ViewOverCSR), duration(kr.Fresh) + " (" + ratio(kr.FreshOverView) + ")"})
	}
	p.table([]string{"kernel", "topology of the compacted view", "of a plain CSR", "view / CSR", "after the stream (over before)"}, rows)
	rows = nil
	if g := r.Registry; g != nil && g.Interval == 0 {
		p.line("Registered together in an analytics registry, as serve runs them (each on its own goroutine, over a store of their own), from the store's Apply of a batch to the analytic's result at that batch (%d batches, the warm-up left out):", g.Batches)
		p.line("")
		for _, k := range names {
			a := g.Analytics[k]
			if a == nil {
				continue
			}
			rows = append(rows, []string{k, duration(a.Batch), duration(a.BatchP99), duration(a.Update), fmt.Sprintf("%d of %d", a.Recomputes, r.Batches)})
		}
		rows = append(rows, []string{"all five", duration(g.AllSec), duration(g.AllP99Sec), "", ""})
		p.table([]string{"analytic", "Apply to result (mean)", "p99", "update alone (mean)", "updates that recomputed"}, rows)
		rows = nil
	}
	if d := r.DD; d != nil {
		p.line("Against Differential Dataflow %s (timely %s, %d workers), run after graphtide's stream on the same graph and the same batches, each analytic alone: its round (the arrangements and the computation), the first left out as graphtide's warm-up. graphtide's batch is from the Apply to the analytic's result, the topology's advance included, the analytic driven alone as the baseline runs it, and registered with the four others as serve runs them (sharing the advance and the cores):", d.Version, d.Timely, d.Workers)
		p.line("")
		for _, k := range []string{"bfs", "wcc"} {
			if a := d.Analytics[k]; a != nil {
				reg, regRatio := "", ""
				if a.Reg > 0 {
					reg, regRatio = duration(a.Reg)+" ("+duration(a.RegP99)+")", ratio(a.RegRatio)
				}
				rows = append(rows, []string{k, duration(a.Batch) + " (" + duration(a.BatchP99) + ")", reg, duration(a.Round) + " (" + duration(a.RoundP99) + ")", ratio(a.Ratio), regRatio, duration(a.Load), mib(a.PeakRSS), a.Checked})
			}
		}
		p.table([]string{"analytic", "graphtide alone: mean (p99)", "registered with the others", "Differential Dataflow: round, mean (p99)", "alone / DD", "registered / DD", "DD's load of the graph", "DD's peak memory", "results after the stream"}, rows)
		rows = nil
	}
	if b := r.Batch; b != nil {
		p.line("Each analytic driven alone after the batch, from the store's Apply to its result at that batch (the topology's advance and the analytic's pull included; %d batches of %s operations, the warm-up left out), against its update alone:", b.Batches, sig(b.Ops))
		p.line("")
		for _, k := range names {
			in := r.Incremental[k]
			rows = append(rows, []string{k, duration(in.Batch), duration(in.BatchP99), duration(in.Update), ratio(in.Batch / in.Update)})
		}
		rows = append(rows, []string{"all five, one after the other", duration(b.All), duration(b.AllP99), "", ""})
		p.table([]string{"analytic", "batch, Apply to result (mean)", "p99", "update alone (mean)", "batch / update"}, rows)
		p.table([]string{"per batch", "edge changes", "Apply", "topology's advance (p99)", "advance per operation", "per edge change", "bytes allocated per operation: advance, updates"}, [][]string{
			{sig(b.Ops) + " operations", sig(b.Changes), duration(b.Apply), duration(b.Advance) + " (" + duration(b.AdvanceP99) + ")", sig(b.AdvanceOp) + " µs", sig(b.AdvanceCh) + " µs", sig(b.AdvAlloc) + ", " + sig(b.UpdAlloc)},
		})
		rows = nil
	}
	for _, k := range names {
		in := r.Incremental[k]
		rows = append(rows, []string{k, duration(in.Update), duration(in.Max), duration(in.Warmup), duration(in.Recompute), ratio(in.Speedup), fmt.Sprintf("%d of %d", in.Fallbacks, in.Batches)})
	}
	p.line("The analytics' updates alone:")
	p.line("")
	p.table([]string{"analytic", "update per batch (mean)", "slowest", "warm-up batch", "recompute", "recompute / update", "updates that recomputed"}, rows)
	after := ""
	if r.Topology.BytesAfter > 0 {
		after = sig(r.Topology.BytesAfter)
	}
	p.table([]string{"topology", "built from the compacted view", "from the loaded edge list (its sort included)", "bytes per edge (both directions)", "after the stream", "one batch applied to it"}, [][]string{
		{fmt.Sprintf("%s vertex slots, %s", count(int64(r.Topology.Vertices)), mib(r.Topology.Bytes)), duration(r.Topology.Build), duration(r.Topology.CSRBuild), sig(r.Topology.BytesPerEdge), after, duration(r.Topology.Advance)},
	})
	if c := r.Topology.Counters; c["ops"] > 0 {
		p.line("The advance's work over the stream, per operation: %s compactions of the topology's blocks, %s list heads copied by them, %s heads written by the batches' rewrites (shifted within a list, moved with it to a larger room, or added).",
			sig(c["compactions"]/c["ops"]), sig(c["elements_compacted"]/c["ops"]), sig(c["elements_moved"]/c["ops"]))
		p.line("")
	}
	if len(r.Sparse)+len(r.Unmapped)+len(r.Keys) > 0 {
		rows = nil
		for _, k := range names {
			for _, mode := range []string{"recompute", "update"} {
				key := k + "_" + mode
				if _, ok := r.Sparse[key]; !ok {
					continue
				}
				rows = append(rows, []string{k + ", " + mode, ratio(r.Sparse[key]), ratio(r.Keys[key]), ratio(r.Unmapped[key])})
			}
		}
		p.line("The same under other vertex ids, each over dense ids:")
		p.line("")
		p.table([]string{"analytic", "sparse ids, mapped", "string keys", "sparse ids, unmapped"}, rows)
	}
	p.line("Peak resident memory of the process (its stores, their topologies and the CSR baseline): %s.", gib(r.PeakRSS))
	p.line("")
	return nil
}

// order is the page's order of analytics.
func order(name string) int {
	i := slices.Index([]string{"bfs", "wcc", "pagerank", "sssp", "degree"}, name)
	if i < 0 {
		return 100
	}
	return i
}

func renderKafka(p *page, result []byte) error {
	var r struct {
		Edges          int                `json:"edges"`
		Partitions     int                `json:"partitions"`
		Produce        float64            `json:"produce_edges_per_sec"`
		Raw            float64            `json:"raw_consume_edges_per_sec"`
		Ingest         float64            `json:"ingest_edges_per_sec"`
		IngestOverRaw  float64            `json:"ingest_over_raw"`
		Steady         int                `json:"steady_rate_edges_per_sec"`
		VisP50         float64            `json:"visibility_p50_ms"`
		VisP99         float64            `json:"visibility_p99_ms"`
		AckP50         float64            `json:"produce_ack_p50_ms"`
		AckP99         float64            `json:"produce_ack_p99_ms"`
		RawStartup     float64            `json:"raw_startup_ms"`
		IngestStartup  float64            `json:"ingest_startup_ms"`
		StoreApply     float64            `json:"store_apply_edges_per_sec"`
		OverStoreApply float64            `json:"ingest_over_store_apply"`
		RawCPU         float64            `json:"raw_consume_cpu_sec"`
		IngestCPU      float64            `json:"ingest_cpu_sec"`
		StoreApplyCPU  float64            `json:"store_apply_cpu_sec"`
		Stages         map[string]float64 `json:"ingest_stage_cpu_sec"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	if err := need(map[string]float64{"raw_consume_edges_per_sec": r.Raw, "ingest_edges_per_sec": r.Ingest,
		"store_apply_edges_per_sec": r.StoreApply, "visibility_p99_ms": r.VisP99}); err != nil {
		return err
	}
	p.line("%s records of one edge each, %d partitions, produced at %s records/s.", count(int64(r.Edges)), r.Partitions, rate(r.Produce))
	p.line("")
	p.table([]string{"figure", "graphtide", "baseline", "graphtide / baseline"}, [][]string{
		{"ingest from Kafka into a store, final flush included", rate(r.Ingest) + " edges/s", "plain consumer: " + rate(r.Raw) + " records/s", ratio(r.IngestOverRaw)},
		{"", "", "the same edges applied straight to a store: " + rate(r.StoreApply) + " edges/s", ratio(r.OverStoreApply)},
		{"CPU time", fmt.Sprintf("%.2f s", r.IngestCPU), fmt.Sprintf("plain consumer %.2f s + store alone %.2f s", r.RawCPU, r.StoreApplyCPU), ratio(r.IngestCPU / (r.RawCPU + r.StoreApplyCPU))},
		{"visibility at a steady " + rate(float64(r.Steady)) + " edges/s, p50 / p99", ms(r.VisP50) + " / " + ms(r.VisP99), "of which the broker's produce acknowledgement: " + ms(r.AckP50) + " / " + ms(r.AckP99), ""},
		{"from start to the first record batch", ms(r.IngestStartup), "plain consumer: " + ms(r.RawStartup), ""},
	})
	if len(r.Stages) > 0 {
		stages := make([]string, 0, len(r.Stages))
		total := 0.0
		for k, v := range r.Stages {
			stages = append(stages, k)
			total += v
		}
		slices.SortFunc(stages, func(a, b string) int {
			if r.Stages[a] != r.Stages[b] {
				if r.Stages[a] > r.Stages[b] {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		var rows [][]string
		for _, k := range stages {
			rows = append(rows, []string{"`" + k + "`", fmt.Sprintf("%.2f s", r.Stages[k]), fmt.Sprintf("%.0f%%", 100*r.Stages[k]/total)})
		}
		p.line("Where the ingest path's CPU time went (a CPU profile of the ingest phase):")
		p.line("")
		p.table([]string{"stage", "CPU time", "share"}, rows)
	}
	return nil
}

func renderServe(p *page, result []byte) (err error) {
	var r struct {
		Events            int              `json:"events"`
		Budget            int64            `json:"budget_bytes"`
		PeakRSS           int64            `json:"peak_rss_bytes"`
		PeakAnon          int64            `json:"peak_anon_bytes"`
		PeakFile          int64            `json:"peak_file_bytes"`
		AnonOverBudget    float64          `json:"peak_anon_over_budget"`
		RSSOverBudget     float64          `json:"peak_rss_over_budget"`
		WithinBudget      bool             `json:"within_budget"`
		CatchUp           float64          `json:"catch_up_seconds"`
		EventsPerSec      float64          `json:"events_per_sec"`
		Memory            map[string]int64 `json:"memory_bytes_by_component"`
		BudgetByComponent map[string]int64 `json:"budget_bytes_by_component"`
		Analytics         []string         `json:"analytics"`
		DeleteShare       float64          `json:"delete_share"`
		CutShort          float64          `json:"fraud_pulls_cut_short"`
		Events42          *serveEdgeEvents `json:"edge_events"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	if err := need(map[string]float64{"budget_bytes": float64(r.Budget), "peak_anon_bytes": float64(r.PeakAnon), "events_per_sec": r.EventsPerSec}); err != nil {
		return err
	}
	// Edge events, after the memory (results of runs before they were
	// measured, or with --edge-events 0, have none).
	defer func() {
		switch {
		case err != nil:
		case r.Events42 != nil:
			err = renderServeEdgeEvents(p, r.Events42)
		default:
			p.line("This result has no figures of edge events (its run predates them):")
			p.line("`scripts/bench-report.sh --only serve` measures them.")
			p.line("")
		}
	}()
	within := "yes"
	if !r.WithinBudget {
		within = "**no**"
	}
	p.line("%s events (%.0f%% deletes), analytics `%s`.", count(int64(r.Events)), r.DeleteShare*100, strings.Join(r.Analytics, "`, `"))
	p.line("")
	p.table([]string{"figure", "value", "of the budget (" + gib(r.Budget) + ")"}, [][]string{
		{"ingested and analysed, from the first record produced to every analytic caught up", fmt.Sprintf("%s events/s (%s)", rate(r.EventsPerSec), duration(r.CatchUp)), ""},
		{"peak anonymous memory (what the budget bounds)", mib(r.PeakAnon), ratio(r.AnonOverBudget)},
		{"within the budget", within, ""},
		{"peak resident set", mib(r.PeakRSS), ratio(r.RSSOverBudget)},
		{"of which file-backed (mapped store files: page cache)", mib(r.PeakFile), ""},
		{"fraud pulls cut short by `pull_timeout` or `pull_memory_mib`", fmt.Sprint(r.CutShort), ""},
	})
	names := map[string]bool{}
	for k := range r.Memory {
		names[k] = true
	}
	for k := range r.BudgetByComponent {
		if k != "total" {
			names[k] = true
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var rows [][]string
	for _, k := range keys {
		held, share := "", ""
		if v, ok := r.Memory[k]; ok {
			held = mib(v)
		}
		if v, ok := r.BudgetByComponent[k]; ok {
			share = mib(v)
		}
		rows = append(rows, []string{"`" + k + "`", held, share})
	}
	p.line("Memory by component (`graphtide_memory_bytes` at the end, and the budget's division; the store's share holds the MemGraphs, the Go runtime's the key dictionary and the writes log):")
	p.line("")
	p.table([]string{"component", "held at the end", "its share of the budget"}, rows)
	return nil
}

func renderMixed(p *page, result []byte) error {
	type phase struct {
		Readers            int     `json:"readers"`
		Batches            int     `json:"batches"`
		BatchesPerSec      float64 `json:"batches_per_sec"`
		P50                float64 `json:"apply_p50_ms"`
		P99                float64 `json:"apply_p99_ms"`
		P999               float64 `json:"apply_p999_ms"`
		Max                float64 `json:"apply_max_ms"`
		ScansPerSec        float64 `json:"scans_per_sec"`
		ScannedEdgesPerSec float64 `json:"scanned_edges_per_sec"`
		WriteStalls        int64   `json:"write_stalls"`
		Flushes            int64   `json:"flushes"`
		Compactions        int64   `json:"compactions"`
		LoadAvg            float64 `json:"load_avg_1m"`
	}
	var r struct {
		Edges     int     `json:"edges"`
		Preloaded int     `json:"preloaded_edges"`
		BatchSize int     `json:"batch_size"`
		Rate      int     `json:"rate_batches_per_sec"`
		PhaseSec  float64 `json:"phase_sec"`
		Phases    []phase `json:"phases"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	if len(r.Phases) == 0 {
		return fmt.Errorf("the result has no phases")
	}
	p.line("%s edges preloaded of %s; batches of %d operations at %s batches/s for %s a phase.",
		count(int64(r.Preloaded)), count(int64(r.Edges)), r.BatchSize, count(int64(r.Rate)), duration(r.PhaseSec))
	p.line("")
	base := r.Phases[0]
	var rows [][]string
	for _, ph := range r.Phases {
		scans := ""
		if ph.Readers > 0 {
			scans = fmt.Sprintf("%s (%s edges/s)", sig(ph.ScansPerSec), rate(ph.ScannedEdgesPerSec))
		}
		rows = append(rows, []string{fmt.Sprint(ph.Readers), ms(ph.P50), ms(ph.P99) + " (" + ratio(ph.P99/base.P99) + ")", ms(ph.P999), ms(ph.Max),
			fmt.Sprintf("%s (%s/s)", count(int64(ph.Batches)), sig(ph.BatchesPerSec)), scans,
			fmt.Sprintf("%d, %d, %d", ph.WriteStalls, ph.Flushes, ph.Compactions), fmt.Sprintf("%.2f", ph.LoadAvg)})
	}
	p.table([]string{"readers", "apply p50", fmt.Sprintf("p99 (over %d readers)", base.Readers), "p99.9", "max", "batches applied", "scans/s", "write stalls, flushes, compactions", "load average"}, rows)
	return nil
}

func renderDGS(p *page, result []byte) error {
	type op struct {
		Ops       int     `json:"ops"`
		OpsPerSec float64 `json:"ops_per_sec"`
		P50       float64 `json:"p50_us"`
		P99       float64 `json:"p99_us"`
	}
	var r struct {
		Edges            int     `json:"edges"`
		Loaded           int     `json:"loaded_edges"`
		GraphEdges       int     `json:"graph_edges"`
		GraphVertices    int     `json:"graph_vertices"`
		Load             float64 `json:"load_edges_per_sec"`
		InsEdge          op      `json:"insedge"`
		InsVtx           op      `json:"insvtx"`
		GetVtx           op      `json:"getvtx"`
		MapGetVtx        op      `json:"map_getvtx"`
		SearchEdge       op      `json:"searchedge"`
		SearchEdgeSingle op      `json:"searchedge_single"`
		CSRSearchEdge    op      `json:"csr_searchedge"`
		CppSearchEdge    float64 `json:"cpp_csr_searchedge_ops_per_sec"`
		CppScanNbrEdges  float64 `json:"cpp_csr_scannbr_edges_per_sec"`
		SingleOverCSR    float64 `json:"searchedge_single_store_over_csr"`
		ScanNbr          op      `json:"scannbr"`
		CSRScanNbr       op      `json:"csr_scannbr"`
		DelEdge          op      `json:"deledge"`
		CondIns          op      `json:"cond_insedge"`
		CondRefused      op      `json:"cond_insedge_refused"`
		ScanNbrEdges     float64 `json:"scannbr_edges_per_sec"`
		CSRScanNbrEdges  float64 `json:"csr_scannbr_edges_per_sec"`
		Mixed5050        float64 `json:"mixed_50_50_ops_per_sec"`
		Mixed8020        float64 `json:"mixed_80_20_ops_per_sec"`
		Readers          int     `json:"concurrent_readers"`
		Writer           op      `json:"concurrent_writer"`
		ReadOps          float64 `json:"concurrent_read_ops_per_sec"`
		SearchOverCSR    float64 `json:"searchedge_store_over_csr"`
		ScanOverCSR      float64 `json:"scannbr_store_over_csr"`
		GetVtxOverMap    float64 `json:"getvtx_store_over_map"`
		DiskBytesPerEdge float64 `json:"disk_bytes_per_edge"`
		CSRBytesPerEdge  float64 `json:"csr_bytes_per_edge"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	if err := need(map[string]float64{"insedge": r.InsEdge.OpsPerSec, "searchedge": r.SearchEdge.OpsPerSec, "csr_searchedge": r.CSRSearchEdge.OpsPerSec,
		"scannbr": r.ScanNbr.OpsPerSec, "deledge": r.DelEdge.OpsPerSec, "insvtx": r.InsVtx.OpsPerSec, "getvtx": r.GetVtx.OpsPerSec}); err != nil {
		return err
	}
	lat := func(o op) string { return sig(o.P50) + " / " + sig(o.P99) + " µs" }
	// The baselines of the reads: the CSR in Go, and the C++ one where the
	// result has it (the ratios are against the faster).
	searchBase := "static CSR: " + rate(r.CSRSearchEdge.OpsPerSec) + "/s, " + lat(r.CSRSearchEdge)
	scanBase := "static CSR: " + rate(r.CSRScanNbrEdges) + " neighbors/s"
	searchName := "SEARCHEDGE"
	var single [][]string
	if r.CppSearchEdge > 0 {
		searchBase = "static CSR in Go: " + rate(r.CSRSearchEdge.OpsPerSec) + "/s, " + lat(r.CSRSearchEdge) + "; in C++: " + rate(r.CppSearchEdge) + "/s"
		scanBase = "static CSR in Go: " + rate(r.CSRScanNbrEdges) + " neighbors/s; in C++: " + rate(r.CppScanNbrEdges)
		searchName = "SEARCHEDGE, a snapshot's 100 lookups a call (`EdgeCounts`)"
		single = [][]string{{"SEARCHEDGE one at a time, every column (`Edge`)", rate(r.SearchEdgeSingle.OpsPerSec) + "/s", lat(r.SearchEdgeSingle), "the same", ratio(r.SingleOverCSR)}}
	}
	p.line("%s edges of a stream of %s loaded; %s distinct edges over %s vertex ids after the inserts; %s operations a stream.",
		count(int64(r.Loaded)), count(int64(r.Edges)), count(int64(r.GraphEdges)), count(int64(r.GraphVertices)), count(int64(r.InsEdge.Ops)))
	p.line("")
	p.table([]string{"operation", "graphtide", "latency p50 / p99", "baseline", "graphtide / baseline"}, slices.Concat([][]string{
		{"load, batches of 10,000", rate(r.Load) + " edges/s", "", "", ""},
		{"INSEDGE, single updates", rate(r.InsEdge.OpsPerSec) + "/s", lat(r.InsEdge), "", ""},
		{"DELEDGE, single deletes", rate(r.DelEdge.OpsPerSec) + "/s", lat(r.DelEdge), "", ""},
		{"INSEDGE only while absent (`ApplyIf`), applied", rate(r.CondIns.OpsPerSec) + "/s", lat(r.CondIns), "", ""},
		{"the same, refused (present)", rate(r.CondRefused.OpsPerSec) + "/s", lat(r.CondRefused), "", ""},
		{searchName, rate(r.SearchEdge.OpsPerSec) + "/s", lat(r.SearchEdge), searchBase, ratio(r.SearchOverCSR)},
	}, single, [][]string{
		{"SCANNBR", rate(r.ScanNbr.OpsPerSec) + " lists/s, " + rate(r.ScanNbrEdges) + " neighbors/s", lat(r.ScanNbr), scanBase, ratio(r.ScanOverCSR)},
		{"mixed 50/50 (SEARCHEDGE, INSEDGE)", rate(r.Mixed5050) + " ops/s", "", "", ""},
		{"mixed 80/20", rate(r.Mixed8020) + " ops/s", "", "", ""},
		{fmt.Sprintf("%d readers (SEARCHEDGE) beside a writer (INSEDGE)", r.Readers), "writer " + rate(r.Writer.OpsPerSec) + "/s, readers " + rate(r.ReadOps) + "/s", "writer " + lat(r.Writer), "", ""},
		{"INSVTX, single puts of a vertex record", rate(r.InsVtx.OpsPerSec) + "/s", lat(r.InsVtx), "INSEDGE: " + rate(r.InsEdge.OpsPerSec) + "/s", ratio(r.InsVtx.OpsPerSec / r.InsEdge.OpsPerSec)},
		{"GETVTX", rate(r.GetVtx.OpsPerSec) + "/s", lat(r.GetVtx), "a Go map: " + rate(r.MapGetVtx.OpsPerSec) + "/s", ratio(r.GetVtxOverMap)},
		{"bytes per edge (the store on disk as ingest leaves it)", sig(r.DiskBytesPerEdge), "", "static CSR in memory: " + sig(r.CSRBytesPerEdge), ratio(r.DiskBytesPerEdge / r.CSRBytesPerEdge)},
	}))
	return nil
}

func renderDecode(p *page, result []byte) error {
	type figures struct {
		RecordsPerSec   float64 `json:"records_per_sec"`
		FirstPass       float64 `json:"first_pass_sec"`
		BytesPerRecord  float64 `json:"bytes_per_record"`
		AllocsPerRecord float64 `json:"allocs_per_record"`
	}
	var r struct {
		Records int     `json:"records"`
		Mapped  figures `json:"mapped"`
		Native  figures `json:"native"`
		Binary  figures `json:"binary"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	if err := need(map[string]float64{"mapped": r.Mapped.RecordsPerSec, "native": r.Native.RecordsPerSec, "binary": r.Binary.RecordsPerSec}); err != nil {
		return err
	}
	p.line("%s records a pass.", count(int64(r.Records)))
	p.line("")
	row := func(name string, f figures) []string {
		return []string{name, rate(f.RecordsPerSec), sig(f.BytesPerRecord), sig(f.AllocsPerRecord), duration(f.FirstPass), ratio(f.RecordsPerSec / r.Native.RecordsPerSec)}
	}
	p.table([]string{"decoder", "records/s", "bytes per record", "allocations per record", "first pass (new keys)", "over native JSON"}, [][]string{
		row("JSON through the field mapping", r.Mapped),
		row("native JSON", r.Native),
		row("binary, numeric ids", r.Binary),
	})
	return nil
}

// monitorRows are bench monitors' monitors in the page's order, with
// what each is.
var monitorRows = [][2]string{
	{"fanin_events", "fan-in by events (the count)"},
	{"fanin_senders", "fan-in by distinct senders"},
	{"fanin_amount", "fan-in by amount"},
	{"fanout_senders", "fan-out by distinct receivers"},
	{"fanout_amount", "fan-out by amount"},
	{"mule", "mule (3 senders in, 3 receivers out)"},
	{"rings_timed", "rings in time, `max_span=1h`"},
}

func renderMonitors(p *page, result []byte) error {
	type monitor struct {
		Update      float64 `json:"update_mean_us"`
		P99         float64 `json:"update_p99_us"`
		Recompute   float64 `json:"recompute_mean_us"`
		Window      float64 `json:"window_events"`
		Ratio       float64 `json:"recompute_over_update"`
		UpdateNs    float64 `json:"update_ns_per_event"`
		RecomputeNs float64 `json:"recompute_ns_per_event"`
		Alerts      int     `json:"alerts"`
	}
	var r struct {
		Payments  int                 `json:"payments"`
		Accounts  int                 `json:"accounts"`
		Days      int                 `json:"days"`
		BatchSize int                 `json:"batch_size"`
		Batches   int                 `json:"batches"`
		WindowSec float64             `json:"window_sec"`
		Monitors  map[string]*monitor `json:"monitors"`
	}
	if err := p.decode(result, &r); err != nil {
		return err
	}
	figures := map[string]float64{}
	for _, n := range monitorRows {
		m := r.Monitors[n[0]]
		if m == nil {
			m = &monitor{}
		}
		figures["monitors."+n[0]+".update_mean_us"] = m.Update
		figures["monitors."+n[0]+".recompute_mean_us"] = m.Recompute
		figures["monitors."+n[0]+".window_events"] = m.Window
	}
	if err := need(figures); err != nil {
		return err
	}
	window := duration(r.WindowSec)
	if r.WindowSec >= 3600 && math.Mod(r.WindowSec, 3600) == 0 {
		window = fmt.Sprintf("%.0fh", r.WindowSec/3600)
	}
	p.line("%s payments among %s accounts over %d days, %s batches of %s; fan and mule window %s.",
		count(int64(r.Payments)), count(int64(r.Accounts)), r.Days, count(int64(r.Batches)), count(int64(r.BatchSize)), window)
	p.line("")
	var rows [][]string
	for _, n := range monitorRows {
		m := r.Monitors[n[0]]
		rows = append(rows, []string{n[1], duration(m.Update / 1e6), duration(m.P99 / 1e6), sig(m.UpdateNs) + " ns",
			duration(m.Recompute/1e6) + " (" + count(int64(math.Round(m.Window))) + " operations)", sig(m.RecomputeNs) + " ns", ratio(m.Ratio), count(int64(m.Alerts))})
	}
	p.table([]string{"monitor", "update per batch", "p99", "per operation", "recompute from its window", "per operation", "recompute / update", "alerts"}, rows)
	return nil
}

// serveEdgeEvents is bench serve's edge_events.
type serveEdgeEvents struct {
	Payments      int                `json:"payments"`
	Accounts      int                `json:"accounts"`
	DistinctPairs int                `json:"distinct_pairs"`
	EventsPerPair float64            `json:"events_per_pair"`
	Replace       serveEdgeEventsRun `json:"replace"`
	Accumulate    serveEdgeEventsRun `json:"accumulate"`
	Props         serveEdgeEventsRun `json:"accumulate_props"`
}

type serveEdgeEventsRun struct {
	CPUNs      float64 `json:"cpu_ns_per_event"`
	Rate       float64 `json:"events_per_sec"`
	Bytes      float64 `json:"store_bytes_per_edge"`
	CPURatio   float64 `json:"cpu_over_replace"`
	BytesRatio float64 `json:"store_bytes_over_replace"`
	// After `graphtide compact` (0 in a report from a build before it).
	Compacted      float64 `json:"compacted_bytes_per_edge"`
	CompactedRatio float64 `json:"compacted_bytes_over_replace"`
}

func renderServeEdgeEvents(p *page, e *serveEdgeEvents) error {
	figures := map[string]float64{}
	for name, v := range map[string]serveEdgeEventsRun{"replace": e.Replace, "accumulate": e.Accumulate, "accumulate_props": e.Props} {
		figures["edge_events."+name+".cpu_ns_per_event"] = v.CPUNs
		figures["edge_events."+name+".store_bytes_per_edge"] = v.Bytes
	}
	if err := need(figures); err != nil {
		return err
	}
	p.line("Edge events end to end: %s JSON payments among %s accounts (%s distinct pairs,",
		count(int64(e.Payments)), count(int64(e.Accounts)), count(int64(e.DistinctPairs)))
	p.line("%s payments per pair) produced to a topic of their own for each of three serve", sig(e.EventsPerPair))
	p.line("processes reading it through a field mapping. CPU: serve's, from readiness to every")
	compacted := e.Replace.Compacted > 0
	if compacted {
		p.line("record ingested. Store bytes: as serve left them, and after `graphtide compact` on its")
		p.line("data directory (a full compaction, folding as serve would).")
	} else {
		p.line("record ingested. Store bytes: as serve left them, not fully compacted (see `bench")
		p.line("ingest` for the bytes after a full compaction).")
	}
	p.line("")
	row := func(name string, v serveEdgeEventsRun) []string {
		r := []string{name, sig(v.CPUNs) + " ns", ratio(v.CPURatio), rate(v.Rate) + "/s", sig(v.Bytes) + " bytes", ratio(v.BytesRatio)}
		if compacted {
			r = append(r, sig(v.Compacted)+" bytes", ratio(v.CompactedRatio))
		}
		return r
	}
	head := []string{"mapping", "serve's CPU per payment", "/ replace", "rate", "store per pair", "/ replace"}
	if compacted {
		head = append(head, "compacted, per pair", "/ replace")
	}
	p.table(head, [][]string{
		row("replace", e.Replace),
		row("`types: {payment: {aggregate: accumulate}}`", e.Accumulate),
		row("that, with `event_id` and `props`", e.Props),
	})
	return nil
}
