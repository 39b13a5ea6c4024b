// ccsr.cc -- see ccsr.h.
#include "ccsr.h"

#include <algorithm>
#include <new>
#include <vector>

struct gtb_csr {
  std::vector<uint64_t> row;  // nv+1 offsets
  std::vector<uint64_t> col;  // neighbors, sorted per vertex
};

gtb_csr *gtb_csr_new(const int64_t *off, size_t nv, const uint32_t *nbrs) {
  try {
    auto *g = new gtb_csr;
    g->row.assign(off, off + nv + 1);
    g->col.assign(nbrs, nbrs + off[nv]);
    return g;
  } catch (const std::bad_alloc &) {
    return nullptr;  // no exception crosses the boundary
  }
}

void gtb_csr_free(gtb_csr *g) { delete g; }

uint64_t gtb_csr_search(const gtb_csr *g, const uint64_t *srcs, const uint64_t *dsts, size_t n) {
  const uint64_t nv = g->row.size() - 1;
  uint64_t found = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t s = srcs[i], d = dsts[i];
    if (s >= nv) continue;
    const auto b = g->col.begin() + static_cast<ptrdiff_t>(g->row[s]);
    const auto e = g->col.begin() + static_cast<ptrdiff_t>(g->row[s + 1]);
    const auto it = std::lower_bound(b, e, d);
    found += it != e && *it == d;
  }
  return found;
}

uint64_t gtb_csr_scan(const gtb_csr *g, const uint64_t *vids, size_t n, uint64_t *sum) {
  const uint64_t nv = g->row.size() - 1;
  uint64_t count = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t v = vids[i];
    if (v >= nv) continue;
    for (uint64_t k = g->row[v]; k < g->row[v + 1]; k++) {
      s += g->col[k];
      count++;
    }
  }
  *sum = s;
  return count;
}
