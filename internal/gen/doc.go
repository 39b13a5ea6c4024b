// Package gen generates and stores the synthetic edge streams that
// graphtide's benchmarks ingest.
//
// # Generator
//
// [RMAT] is the Graph500 Kronecker (R-MAT) generator: it draws
// EdgeFactor·2^Scale directed edges over the vertex ids 0 .. 2^Scale-1. Each
// edge picks, once per bit of the vertex id, one quadrant of the adjacency
// matrix with probabilities A (src bit 0, dst bit 0), B (src 0, dst 1),
// C (src 1, dst 0) and D = 1-A-B-C (src 1, dst 1). As in the Graph500
// reference code the vertex ids are then relabelled by a seeded random
// permutation (so high-degree vertices are not clustered near id 0) and, in
// [RMAT.Generate], the edge list is shuffled with a seeded Fisher–Yates
// shuffle. The result is a heavily skewed, power-law-like degree
// distribution with self-loops and duplicate edges, exactly like Graph500;
// consumers that need a simple graph must deduplicate, or use [Kronecker],
// the same draws made simple (self-loops and repeats dropped).
//
// GenerateWithTail, of either, also returns the edges the same sampler
// draws next: further edges of the same graph (the same permutation, so
// the same hubs), for a benchmark to stream into it.
//
// Promises:
//
//   - Determinism: the output depends only on the RMAT fields (Scale,
//     EdgeFactor, Seed, A, B, C). All randomness comes from math/rand/v2's
//     PCG source, whose algorithm is specified, and the bounded-integer and
//     probability mapping are implemented in this package, so the same
//     parameters give the same edges on every platform and Go release. A
//     golden test pins the sequence; changing it is a breaking change for
//     every published data set.
//   - [RMAT.All] yields the same multiset of edges as [RMAT.Generate], in
//     generation order instead of shuffled order, without holding the edge
//     list in memory. Because every edge is drawn independently the
//     unshuffled stream is already statistically exchangeable; the shuffle
//     only matters for bit-for-bit Graph500 reproduction.
//   - Memory: Generate allocates 16 bytes per edge plus 8 bytes per vertex
//     for the permutation (scale 20, edge factor 16: about 277 MB); All needs
//     only the 8 bytes per vertex.
//
// The files it writes are in the formats of package edgefile.
package gen
