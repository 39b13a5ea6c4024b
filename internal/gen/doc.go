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
// consumers that need a simple graph must deduplicate.
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
// # Edge file formats
//
// Text (".el", [FormatText]): one edge per line, "src dst\n", ids as unsigned
// decimal integers, fields separated by spaces or tabs (SNAP style). When
// reading, blank lines and lines whose first non-blank character is '#' or
// '%' are skipped, a trailing '\r' is tolerated, and an optional third
// column holding a finite float64 weight is accepted (see [Reader.Weight]). Any
// other line is an error that names the input and the 1-based line number.
// [WriteText] writes exactly "src dst\n" per edge, with no header.
//
// Binary ([FormatBinary]): a fixed header followed by fixed-size records,
// all integers little-endian, no padding, no trailer, no checksum:
//
//	offset      size  field
//	0           8     magic, the ASCII bytes "GTEL0001"
//	                  (0x47 0x54 0x45 0x4C 0x30 0x30 0x30 0x31)
//	8           8     N, the number of edges, uint64 little-endian
//	16 + 16*i   8     src of edge i (0 <= i < N), uint64 little-endian
//	24 + 16*i   8     dst of edge i, uint64 little-endian
//
// A valid file is exactly 16 + 16*N bytes long. The last four magic bytes
// are the format version; a file that starts with "GTEL" but carries another
// version is rejected rather than parsed as text. Readers report a short
// header or record as truncation, and bytes after the N-th record as
// trailing data, naming the input and the byte offset.
//
// [ReadFile] and [NewReader] detect the format from the first 8 bytes: the
// binary magic selects the binary format, anything else is read as text.
// Errors in the input's content are returned as *[FormatError].
package gen
