// Package metrics exports graphtide's internal state to Prometheus. The
// engine knows nothing of Prometheus: it returns a plain Metrics struct, and
// the collector here reads it on every scrape.
package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/graphtide/graphtide/internal/engine"
)

// storeMetric is one unlabelled metric of a store: its name (after
// graphtide_store_), help, type, and how it reads from the store's
// engine.Metrics.
type storeMetric struct {
	name, help string
	kind       prometheus.ValueType
	value      func(r storeReading) float64
}

// storeReading is what a scrape reads of the store.
type storeReading struct {
	*engine.Metrics
	inEdges bool
}

// storeMetrics are the store's unlabelled metrics.
var storeMetrics = []storeMetric{
	{"last_sequence", "Newest committed batch sequence number.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.LastSeq) }},
	{"durable_sequence", "Newest sequence number covered by a completed flush.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.DurableSeq) }},
	{"oldest_readable_sequence", "Oldest sequence number a read as of the past can read (the history floor; the newest when no history is kept).", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.OldestReadableSeq) }},
	{"memgraph_bytes", "Memory held by both MemGraphs.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.MemGraphBytes) }},
	{"memgraph_edge_versions", "Edge versions held by both MemGraphs.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.MemGraphEntries) }},
	{"memgraph_pool_bytes", "Memory of flushed MemGraphs kept for the next ones to write into (at most one MemGraph's size).", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.MemGraphPoolBytes) }},
	{"apply_cpu_seconds_total", "CPU time spent applying write batches (both of Apply's threads).", prometheus.CounterValue, func(r storeReading) float64 { return r.ApplyCPU.Seconds() }},
	{"flushes_total", "Completed flushes.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.Flushes) }},
	{"flush_seconds_total", "Time spent flushing.", prometheus.CounterValue, func(r storeReading) float64 { return r.FlushDuration.Seconds() }},
	{"flush_written_bytes_total", "Bytes written by flushes.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.FlushBytes) }},
	{"compactions_total", "Completed compactions.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.Compactions) }},
	{"compaction_seconds_total", "Time spent compacting.", prometheus.CounterValue, func(r storeReading) float64 { return r.CompactionDuration.Seconds() }},
	{"compaction_read_bytes_total", "Bytes read by compactions.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.CompactionBytesRead) }},
	{"compaction_written_bytes_total", "Bytes written by compactions.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.CompactionBytesWritten) }},
	{"write_stalls_total", "Write batches that waited for a flush.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.WriteStalls) }},
	{"write_stall_seconds_total", "Time write batches waited for a flush.", prometheus.CounterValue, func(r storeReading) float64 { return r.WriteStallDuration.Seconds() }},
	{"snapshots_open", "Snapshots currently pinned.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.SnapshotsOpen) }},
	{"vertex_delete_records", "Vertex-delete records held.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.VertexDeletes) }},
	{"background_errors_total", "Failed background flushes or compactions.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.BackgroundErrors) }},
	{"deferred_flushes_total", "Flush requests made while a flush ran, served when it ended (writers did not wait).", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.DeferredFlushes) }},
	{"manifest_bytes", "Size of the MANIFEST; past a bound it is rewritten as a snapshot of the current state.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.ManifestBytes) }},
	{"manifest_rewrites_total", "MANIFEST rewrites as a snapshot since the store opened.", prometheus.CounterValue, func(r storeReading) float64 { return float64(r.ManifestRewrites) }},
	{"write_amplification_ratio", "Bytes written by flushes and compactions over bytes written by flushes.", prometheus.GaugeValue, func(r storeReading) float64 { return r.WriteAmplification() }},
	{"read_amplification_runs", "Sorted runs one neighbor read may merge, per direction: MemGraphs holding data, L0 files and non-empty deeper levels.", prometheus.GaugeValue, func(r storeReading) float64 { return r.ReadAmplification(r.inEdges) }},
	{"disk_bytes", "Bytes of all live files.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.DiskBytes()) }},
	{"files", "Live files.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.Files()) }},
	{"vertex_record_files", "Live files of vertex records (not among the levels' files).", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.VertexRecords.Files) }},
	{"vertex_record_bytes", "Bytes on disk of vertex records' files.", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.VertexRecords.Bytes) }},
	{"vertex_record_cells", "Stored vertex record cells (13 bytes of a record each, versions included).", prometheus.GaugeValue, func(r storeReading) float64 { return float64(r.VertexRecords.Entries) }},
}

// StoreCollector exports engine.Metrics of one store.
type StoreCollector struct {
	store *engine.Store
	descs []*prometheus.Desc // storeMetrics' descriptors, in their order
	// Per level (label "level"): files, bytes and edge versions.
	levelFiles, levelBytes, levelEntries *prometheus.Desc
}

func storeDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("graphtide_store_"+name, help, labels, nil)
}

// NewStoreCollector returns a collector over s; register it with a registry.
func NewStoreCollector(s *engine.Store) *StoreCollector {
	c := &StoreCollector{store: s,
		levelFiles:   storeDesc("level_files", "Files per level.", "level"),
		levelBytes:   storeDesc("level_bytes", "Bytes on disk per level.", "level"),
		levelEntries: storeDesc("level_edge_versions", "Stored edge versions per level.", "level"),
	}
	for _, sm := range storeMetrics {
		c.descs = append(c.descs, storeDesc(sm.name, sm.help))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *StoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.levelFiles
	ch <- c.levelBytes
	ch <- c.levelEntries
}

// Collect implements prometheus.Collector.
func (c *StoreCollector) Collect(ch chan<- prometheus.Metric) {
	m, err := c.store.Metrics()
	if err != nil {
		return // closed store: nothing to report
	}
	for i, sm := range storeMetrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], sm.kind, sm.value(storeReading{&m, c.store.InEdges()}))
	}
	for i, l := range m.Levels {
		lv := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(c.levelFiles, prometheus.GaugeValue, float64(l.Files), lv)
		ch <- prometheus.MustNewConstMetric(c.levelBytes, prometheus.GaugeValue, float64(l.Bytes), lv)
		ch <- prometheus.MustNewConstMetric(c.levelEntries, prometheus.GaugeValue, float64(l.Entries), lv)
	}
}
