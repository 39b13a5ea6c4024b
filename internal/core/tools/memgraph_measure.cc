// memgraph_measure.cc -- a test-free measuring tool (no assertions, no
// timing in any test): how long reads of a hub whose versions are all in
// the MemGraph take, and how many bytes the MemGraph spends per buffered
// version on a Kronecker-like (R-MAT) stream.
//
//   cmake --build internal/core/build --target memgraph_measure
//   internal/core/build/memgraph_measure [hub_versions=2000000] [rmat_scale=20] [edge_factor=16]
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "graphtide.h"
#include "memgraph.h"

namespace {

double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

gt_op Up(uint64_t s, uint64_t d) {
  gt_op op;
  std::memset(&op, 0, sizeof op);
  op.src = s;
  op.dst = d;
  op.weight = 1;
  op.kind = GT_OP_UPSERT;
  return op;
}

int Hub(uint64_t versions) {
  char tmpl[] = "/tmp/gt-hub-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  gt_options o;
  std::memset(&o, 0, sizeof o);
  o.memgraph_bytes = uint64_t(4) << 30;
  o.disable_auto_compaction = 1;
  gt_store *s = nullptr;
  gt_error err{};
  if (gt_open(tmpl, &o, &s, &err) != 0) return 1;
  std::mt19937_64 rng(1);
  std::vector<gt_op> ops;
  uint64_t seq = 0;
  for (uint64_t i = 0; i < versions;) {
    ops.clear();
    for (int k = 0; k < 10000 && i < versions; k++, i++) ops.push_back(Up(7, rng() % (uint64_t(1) << 40)));
    if (gt_apply(s, ops.data(), ops.size(), nullptr, 0, &seq, &err) != 0) return 1;
  }
  gt_snapshot *snap = nullptr;
  if (gt_snapshot_new(s, &snap, &err) != 0) return 1;
  for (int rep = 0; rep < 5; rep++) {
    uint64_t deg = 0;
    auto t0 = std::chrono::steady_clock::now();
    gt_snapshot_degree(snap, 7, 0, nullptr, &deg, &err);
    auto t1 = std::chrono::steady_clock::now();
    uint64_t dst = 0;
    size_t n = 0;
    uint32_t more = 0;
    gt_snapshot_neighbors_after(snap, 7, 0, nullptr, 0, 0, 0, &dst, nullptr, nullptr, nullptr, 1, &n, &more, &err);
    auto t2 = std::chrono::steady_clock::now();
    std::printf("hub of %llu versions in the MemGraph: degree %llu in %.3f ms, one-edge page in %.3f ms\n",
                static_cast<unsigned long long>(versions), static_cast<unsigned long long>(deg), Ms(t1 - t0),
                Ms(t2 - t1));
  }
  gt_snapshot_release(snap);
  // Writes to the hub after it was read: reads merge its sorted runs (the
  // writer keeps them) with the few versions it has not sorted yet.
  for (uint64_t extra : {uint64_t(1000), uint64_t(100000)}) {
    ops.clear();
    for (uint64_t k = 0; k < extra; k++) ops.push_back(Up(7, rng() % (uint64_t(1) << 40)));
    if (gt_apply(s, ops.data(), ops.size(), nullptr, 0, &seq, &err) != 0) return 1;
    if (gt_snapshot_new(s, &snap, &err) != 0) return 1;
    for (int rep = 0; rep < 3; rep++) {
      uint64_t deg = 0;
      auto t0 = std::chrono::steady_clock::now();
      gt_snapshot_degree(snap, 7, 0, nullptr, &deg, &err);
      auto t1 = std::chrono::steady_clock::now();
      std::printf("after %llu more versions: degree %llu in %.3f ms\n", static_cast<unsigned long long>(extra),
                  static_cast<unsigned long long>(deg), Ms(t1 - t0));
    }
    gt_snapshot_release(snap);
  }
  gt_close(s, &err);
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return ec ? 1 : 0;
}

// The MemGraph alone: Collect of a hub (a merge of the sorted runs the
// writer keeps, into a copy).
void HubCollect(uint64_t versions) {
  gt::MemGraph m(false, uint64_t(4) << 30);
  std::mt19937_64 rng(1);
  std::vector<gt_op> ops;
  uint64_t seq = 1;
  for (uint64_t i = 0; i < versions;) {
    ops.clear();
    for (int k = 0; k < 10000 && i < versions; k++, i++) ops.push_back(Up(7, rng() % (uint64_t(1) << 40)));
    m.Apply(ops.data(), ops.size(), seq++, {}, nullptr, 0);
  }
  for (int rep = 0; rep < 5; rep++) {
    std::vector<gt::Entry> out;
    auto t0 = std::chrono::steady_clock::now();
    m.Collect(0, 7, &out);
    auto t1 = std::chrono::steady_clock::now();
    std::printf("MemGraph::Collect of a hub of %llu versions: %.3f ms (runs %llu bytes)\n",
                static_cast<unsigned long long>(out.size()), Ms(t1 - t0),
                static_cast<unsigned long long>(m.cache_bytes()));
  }
}

void Rmat(int scale, int ef) {
  gt::MemGraph m(true, uint64_t(64) << 30);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0, 1);
  const uint64_t edges = uint64_t(ef) << scale;
  std::vector<gt_op> ops;
  uint64_t seq = 1;
  for (uint64_t i = 0; i < edges;) {
    ops.clear();
    for (int k = 0; k < 10000 && i < edges; k++, i++) {
      uint64_t s = 0, d = 0;
      for (int b = 0; b < scale; b++) {
        const double r = u(rng);
        const int q = r < 0.57 ? 0 : r < 0.76 ? 1 : r < 0.95 ? 2 : 3;
        s = s << 1 | uint64_t(q >> 1);
        d = d << 1 | uint64_t(q & 1);
      }
      ops.push_back(Up(s, d));
    }
    m.Apply(ops.data(), ops.size(), seq++, {}, nullptr, 0);
  }
  std::printf("R-MAT scale %d edge factor %d (in-edges kept): %llu versions, %llu bytes, %.1f bytes/version\n", scale,
              ef, static_cast<unsigned long long>(m.entries()), static_cast<unsigned long long>(m.bytes()),
              double(m.bytes()) / double(m.entries()));
}

}  // namespace

int main(int argc, char **argv) {
  const uint64_t hub = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
  const int scale = argc > 2 ? std::atoi(argv[2]) : 20;
  const int ef = argc > 3 ? std::atoi(argv[3]) : 16;
  if (hub > 0) HubCollect(hub);
  if (hub > 0 && Hub(hub) != 0) return 1;
  if (scale > 0) Rmat(scale, ef);
  return 0;
}
