// Package repair holds the incremental repairs of the analytics: state
// kept over a topology's id space and brought to the next topology after
// a batch, with work that follows what the batch changed rather than the
// graph. Dists repairs single-source distances (bfs levels, sssp
// lengths: Ramalingam and Reps), Components the weakly connected
// components (merges on inserts, a support forest that splits them on
// deletes), Ranks PageRank (residual pushes on an unnormalized form);
// Resize and Marks are the per-vertex slices and marks they share with
// the analytics around them.
//
// What it promises: a repair either leaves its state what a recompute on
// the new topology gives (exactly; Ranks within its tolerance: the
// analytics' tests check both against package testref's reference
// algorithms after every batch), or reports that the change was too
// large (Dists and Components: over an eighth of the graph; Ranks: more
// edge reads than half the graph's, or a residual far above its target)
// and leaves the caller to recompute with the static kernels (package
// kernels, which it builds on). It holds no lock: the caller serializes
// updates and reads. It knows nothing of analytic specs, of the registry
// or of checkpoints (it imports no package above kernels under
// internal/views/analytics: internal/archtest enforces that).
package repair
