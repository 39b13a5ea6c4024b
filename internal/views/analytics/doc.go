// Package analytics runs registered analytics beside ingestion and
// compaction (GraphOne's stream analytics, section 6.2), on the views of
// package views.
//
// Every built-in has a full recompute and an incremental path, and the
// incremental path is tested against a single-threaded reference run on a
// static copy of the same graph (package testref):
//
//   - bfs: BFS levels from a root; a direction-optimizing kernel, and a
//     repair (Ramalingam-Reps style, repair.Dists) of only the levels a
//     batch changes, recomputing only when that region is over an eighth
//     of the graph; it keeps a parent per vertex so that a repair decides
//     only the vertices that lost theirs;
//   - wcc: weakly connected components; Afforest, then merges on inserts
//     and a support forest that splits components on deletes
//     (repair.Components);
//   - pagerank: pull power iterations to a tolerance; updates push
//     residuals of an unnormalized form without global terms
//     (repair.Ranks) when the change is within twice the target, else
//     iterate warm-started;
//   - sssp: shortest paths on weights (non-negative) from a root;
//     delta-stepping, and bfs's repair with lengths;
//   - degree: vertices whose degree exceeds a threshold (an alert by the
//     operation that takes one above, decided operation by operation);
//   - fanin, fanout: upserts into / out of a vertex within a sliding
//     window above a threshold (an alert by the upsert that takes one
//     above, the window taken operation by operation);
//   - fraud: every new directed cycle of length at most k closed by a newly
//     ingested edge, and fan-in bursts within a window.
//
// The full recomputes are the static kernels of package kernels
// (GAPBS's algorithms, on every core; RunKernel runs one alone), the
// distance, component and PageRank repairs package repair's. This package
// holds what the rest of the module imports: the specs and alerts, the
// analytics built on those packages, the monitors (degree, fanin and
// fanout, fraud) whole, since their windows decide and build the alerts
// and save their own layout in checkpoints, the registry that runs them
// all, and their checkpoints.
//
// bfs, wcc, pagerank, sssp, degree and fraud read the Manager's shared topology
// (views.Topology, dense int32 lists in both directions) and keep
// per-vertex state in slices over its IDSpace: any id works, numbers over
// the whole 62-bit range and string keys mixed, and their memory follows
// the vertices present, never the largest id. fanin and fanout read a
// plain stream view of the edge log and hold their own windows.
//
// The Registry runs each analytic on its own goroutine, pulling its stream
// on its own cadence; ingestion, flush and compaction never wait for it
// (but for a checkpoint). Results are readable at any time, each with the
// sequence number it corresponds to; monitors publish alerts, each with a
// deterministic ID and the Kafka record that raised it, to the registry's
// ring and to any AlertSink (serve writes them to Kafka).
//
// Checkpoint and Restore (checkpoint.go; each analytic's state in
// state.go) save every built-in analytic (and the topology, when one
// reads it) at one durable sequence number and bring them back after a
// restart, whose replay of the source from the checkpoint's position
// takes them on exactly where they were; with a sink that can
// (checkpointSink), alerts are then produced once per trigger across
// crashes.
package analytics
