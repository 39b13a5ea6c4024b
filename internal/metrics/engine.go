// Package metrics exports graphtide's internal state to Prometheus. The
// engine knows nothing of Prometheus: it returns a plain Metrics struct, and
// the collector here reads it on every scrape.
package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/graphtide/graphtide/internal/engine"
)

// StoreCollector exports engine.Metrics of one store.
type StoreCollector struct {
	store *engine.Store
	descs map[string]*prometheus.Desc
}

// NewStoreCollector returns a collector over s; register it with a registry.
func NewStoreCollector(s *engine.Store) *StoreCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("graphtide_store_"+name, help, labels, nil)
	}
	return &StoreCollector{store: s, descs: map[string]*prometheus.Desc{
		"last_seq":          d("last_sequence", "Newest committed batch sequence number."),
		"durable_seq":       d("durable_sequence", "Newest sequence number covered by a completed flush."),
		"oldest_readable":   d("oldest_readable_sequence", "Oldest sequence number a read as of the past can read (the history floor; the newest when no history is kept)."),
		"memgraph_bytes":    d("memgraph_bytes", "Memory held by both MemGraphs."),
		"memgraph_entries":  d("memgraph_edge_versions", "Edge versions held by both MemGraphs."),
		"memgraph_pool":     d("memgraph_pool_bytes", "Memory of flushed MemGraphs kept for the next ones to write into (at most one MemGraph's size)."),
		"apply_cpu":         d("apply_cpu_seconds_total", "CPU time spent applying write batches (both of Apply's threads)."),
		"flushes":           d("flushes_total", "Completed flushes."),
		"flush_seconds":     d("flush_seconds_total", "Time spent flushing."),
		"flush_bytes":       d("flush_written_bytes_total", "Bytes written by flushes."),
		"compactions":       d("compactions_total", "Completed compactions."),
		"compaction_secs":   d("compaction_seconds_total", "Time spent compacting."),
		"compaction_read":   d("compaction_read_bytes_total", "Bytes read by compactions."),
		"compaction_write":  d("compaction_written_bytes_total", "Bytes written by compactions."),
		"stalls":            d("write_stalls_total", "Write batches that waited for a flush."),
		"stall_seconds":     d("write_stall_seconds_total", "Time write batches waited for a flush."),
		"snapshots":         d("snapshots_open", "Snapshots currently pinned."),
		"vertex_deletes":    d("vertex_delete_records", "Vertex-delete records held."),
		"bg_errors":         d("background_errors_total", "Failed background flushes or compactions."),
		"deferred_flushes":  d("deferred_flushes_total", "Flush requests made while a flush ran, served when it ended (writers did not wait)."),
		"manifest_bytes":    d("manifest_bytes", "Size of the MANIFEST; past a bound it is rewritten as a snapshot of the current state."),
		"manifest_rewrites": d("manifest_rewrites_total", "MANIFEST rewrites as a snapshot since the store opened."),
		"write_amp":         d("write_amplification_ratio", "Bytes written by flushes and compactions over bytes written by flushes."),
		"read_amp":          d("read_amplification_runs", "Sorted runs one neighbor read may merge, per direction: MemGraphs holding data, L0 files and non-empty deeper levels."),
		"disk_bytes":        d("disk_bytes", "Bytes of all live files."),
		"files":             d("files", "Live files."),
		"level_files":       d("level_files", "Files per level.", "level"),
		"level_bytes":       d("level_bytes", "Bytes on disk per level.", "level"),
		"level_entries":     d("level_edge_versions", "Stored edge versions per level.", "level"),
		"vtx_files":         d("vertex_record_files", "Live files of vertex records (not among the levels' files)."),
		"vtx_bytes":         d("vertex_record_bytes", "Bytes on disk of vertex records' files."),
		"vtx_cells":         d("vertex_record_cells", "Stored vertex record cells (13 bytes of a record each, versions included)."),
	}}
}

// Describe implements prometheus.Collector.
func (c *StoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *StoreCollector) Collect(ch chan<- prometheus.Metric) {
	m, err := c.store.Metrics()
	if err != nil {
		return // closed store: nothing to report
	}
	g := func(k string, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.GaugeValue, v, l...)
	}
	cnt := func(k string, v float64) {
		ch <- prometheus.MustNewConstMetric(c.descs[k], prometheus.CounterValue, v)
	}
	g("last_seq", float64(m.LastSeq))
	g("durable_seq", float64(m.DurableSeq))
	g("oldest_readable", float64(m.OldestReadableSeq))
	g("memgraph_bytes", float64(m.MemGraphBytes))
	g("memgraph_entries", float64(m.MemGraphEntries))
	g("memgraph_pool", float64(m.MemGraphPoolBytes))
	cnt("apply_cpu", m.ApplyCPU.Seconds())
	cnt("flushes", float64(m.Flushes))
	cnt("flush_seconds", m.FlushDuration.Seconds())
	cnt("flush_bytes", float64(m.FlushBytes))
	cnt("compactions", float64(m.Compactions))
	cnt("compaction_secs", m.CompactionDuration.Seconds())
	cnt("compaction_read", float64(m.CompactionBytesRead))
	cnt("compaction_write", float64(m.CompactionBytesWritten))
	cnt("stalls", float64(m.WriteStalls))
	cnt("stall_seconds", m.WriteStallDuration.Seconds())
	g("snapshots", float64(m.SnapshotsOpen))
	g("vertex_deletes", float64(m.VertexDeletes))
	cnt("bg_errors", float64(m.BackgroundErrors))
	cnt("deferred_flushes", float64(m.DeferredFlushes))
	g("manifest_bytes", float64(m.ManifestBytes))
	cnt("manifest_rewrites", float64(m.ManifestRewrites))
	g("write_amp", m.WriteAmplification())
	g("read_amp", m.ReadAmplification(c.store.InEdges()))
	g("disk_bytes", float64(m.DiskBytes()))
	g("files", float64(m.Files()))
	for i, l := range m.Levels {
		lv := strconv.Itoa(i)
		g("level_files", float64(l.Files), lv)
		g("level_bytes", float64(l.Bytes), lv)
		g("level_entries", float64(l.Entries), lv)
	}
	g("vtx_files", float64(m.VertexRecords.Files))
	g("vtx_bytes", float64(m.VertexRecords.Bytes))
	g("vtx_cells", float64(m.VertexRecords.Entries))
}
