// Package analytics runs registered analytics beside ingestion and
// compaction (GraphOne's stream analytics, section 6.2), on the views of
// package views.
//
// Every built-in has a full recompute and an incremental path, and the
// incremental path is tested against a single-threaded reference run on a
// static copy of the same snapshot:
//
//   - bfs: BFS levels from a root; incremental on inserts, repairs deletes
//     it can prove harmless (with in-edges) and recomputes otherwise;
//   - wcc: weakly connected components; union-find on inserts, recompute
//     when a delete may split a component;
//   - pagerank: warm-started power iteration to a tolerance;
//   - sssp: shortest paths on weights (non-negative) from a root;
//     relaxation on inserts and decreases, recompute when a tight edge is
//     deleted or made heavier;
//   - degree: vertices whose degree exceeds a threshold (alerts on
//     crossing);
//   - fanin, fanout: operations into / out of a vertex within a sliding
//     window above a threshold (alerts on crossing);
//   - fraud: every new directed cycle of length at most k closed by a newly
//     ingested edge, and fan-in bursts within a window.
//
// The graph analytics (bfs, wcc, pagerank, sssp) keep per-vertex state in
// slices over their view's IDSpace: any id works, numbers over the whole
// 62-bit range and string keys mixed, and their memory follows the
// vertices present (4 to 12 bytes per vertex index each, beside the
// manager's shared index), never the largest id.
//
// The Registry runs each analytic on its own goroutine, pulling its stream
// view on its own cadence; ingestion, flush and compaction never wait for
// it. Results are readable at any time, each with the sequence number of
// the snapshot it corresponds to; monitors publish alerts to the registry's
// ring and to any AlertSink (serve writes them to Kafka).
package analytics
