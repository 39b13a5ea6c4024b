// Package kernels holds the static analytics kernels: the algorithms of
// the GAP benchmark suite's reference (sbeamer/gapbs) run on one
// views.Topo, on every core, from nothing: direction-optimizing BFS
// (BFS, and ComponentLevels within labels), Afforest (Afforest),
// delta-stepping SSSP (SSSP) and pull PageRank (PageRank, on a PRGraph
// copied out of the topology), with the parallel loops they share
// (ParallelFor, GoFor, Filled).
//
// What it promises: each kernel reads its topology only (never writes
// it, nor keeps it past its return), indexes its results by the
// topology's indexes, checks its context between steps and returns the
// context's error when it ends, and computes the same result on any
// number of workers (PageRank to its tolerance). It knows nothing of
// analytics' incremental state, of the registry or of checkpoints: it
// imports no other package under internal/views/analytics (internal/archtest
// enforces that); they build on it.
package kernels
