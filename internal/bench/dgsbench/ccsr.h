// ccsr.h -- a plain C++ CSR for bench dgs's baseline: the one the
// dynamic-graph-storage study's harness reads (std::vector<uint64_t> row
// offsets and neighbors, std::lower_bound for an edge, a loop over a
// vertex's neighbors for a scan), built from the benchmark's own edges and
// driven over a whole stream of reads per call, as the harness drives it,
// so that no call across the cgo boundary is counted per operation.
#ifndef GRAPHTIDE_DGSBENCH_CCSR_H_
#define GRAPHTIDE_DGSBENCH_CCSR_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gtb_csr gtb_csr;

// A CSR of nv vertices: vertex v's neighbors are nbrs[off[v], off[v+1])
// (off has nv+1 entries, nbrs off[nv]), copied. Null when memory ran out.
gtb_csr *gtb_csr_new(const int64_t *off, size_t nv, const uint32_t *nbrs);
void gtb_csr_free(gtb_csr *g);

// How many of the n edges srcs[i] -> dsts[i] the CSR holds.
uint64_t gtb_csr_search(const gtb_csr *g, const uint64_t *srcs, const uint64_t *dsts, size_t n);

// Reads every neighbor of vids[0..n): returns how many, and their sum in
// *sum.
uint64_t gtb_csr_scan(const gtb_csr *g, const uint64_t *vids, size_t n, uint64_t *sum);

#ifdef __cplusplus
}
#endif

#endif  // GRAPHTIDE_DGSBENCH_CCSR_H_
