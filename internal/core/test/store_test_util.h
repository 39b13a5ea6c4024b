// store_test_util.h -- what the store's C API tests share (store_test.cc,
// store_api_test.cc): a std::map oracle of the graph, wrappers of the C API
// that fail the test on an error, scans, neighbor and gather checks of a
// snapshot against the oracle, and the randomized batches of the model test.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graphtide.h"
#include "test_util.h"

namespace gt_store_test {

using gt_test::Err;
using gt_test::TempDir;

// ---------------------------------------------------------------------------
// Oracle

using EdgeList = std::vector<std::pair<uint64_t, double>>;  // (neighbor, weight), neighbor ascending
using Adj = std::map<uint64_t, EdgeList>;                   // only vertices with >= 1 edge

// Edge-set digests (Oracle::digest): the wrapping sum of a
// hash of every edge (src, dst, weight), so that one upsert or delete
// changes it in O(1) and an out-edge scan and an in-edge scan of the same
// state give the same digest.
inline uint64_t EdgeHash(uint64_t s, uint64_t d, double w) {
  uint64_t bits;
  std::memcpy(&bits, &w, sizeof bits);
  uint64_t x = s * 0x9E3779B97F4A7C15ull ^ (d + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full ^ bits;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

struct Digest {
  uint64_t sum = 0, edges = 0;
  bool operator==(const Digest &o) const { return sum == o.sum && edges == o.edges; }
};

class Oracle {
 public:
  void Apply(const std::vector<gt_op> &ops) {
    for (const gt_op &op : ops) {
      switch (op.kind) {
        case GT_OP_UPSERT:
          Erase(op.src, op.dst);
          out_[op.src][op.dst] = op.weight;
          in_[op.dst][op.src] = op.weight;
          d_.sum += EdgeHash(op.src, op.dst, op.weight);
          d_.edges++;
          break;
        case GT_OP_DELETE_EDGE:
          Erase(op.src, op.dst);
          break;
        case GT_OP_DELETE_VERTEX: {
          std::vector<std::pair<uint64_t, uint64_t>> doomed;
          if (auto it = out_.find(op.src); it != out_.end())
            for (const auto &kv : it->second) doomed.emplace_back(op.src, kv.first);
          if (auto it = in_.find(op.src); it != in_.end())
            for (const auto &kv : it->second) doomed.emplace_back(kv.first, op.src);
          for (const auto &e : doomed) Erase(e.first, e.second);
          break;
        }
      }
    }
  }
  EdgeList Neighbors(uint64_t v, uint32_t dir) const {
    const auto &m = dir == GT_OUT ? out_ : in_;
    EdgeList l;
    if (auto it = m.find(v); it != m.end()) l.assign(it->second.begin(), it->second.end());
    return l;
  }
  Adj Adjacency(uint32_t dir) const {
    Adj a;
    for (const auto &kv : dir == GT_OUT ? out_ : in_) a[kv.first].assign(kv.second.begin(), kv.second.end());
    return a;
  }
  uint64_t MaxVertex() const {
    uint64_t m = 0;
    if (!out_.empty()) m = std::max(m, out_.rbegin()->first);
    if (!in_.empty()) m = std::max(m, in_.rbegin()->first);
    return m;
  }
  // One past the largest vertex below GT_HIGH_ID_BASE (0 if none).
  uint64_t LowBound() const {
    uint64_t b = 0;
    for (const auto *m : {&out_, &in_}) {
      auto it = m->lower_bound(GT_HIGH_ID_BASE);
      if (it != m->begin()) b = std::max(b, std::prev(it)->first + 1);
    }
    return b;
  }
  bool empty() const { return out_.empty(); }
  // The digest of the edge set (EdgeHash summed over every edge).
  const Digest &digest() const { return d_; }
  // Some existing edge with src >= from (wrapping), or false.
  bool EdgeFrom(uint64_t from, std::pair<uint64_t, uint64_t> *e) const {
    auto it = out_.lower_bound(from);
    if (it == out_.end()) it = out_.begin();
    if (it == out_.end()) return false;
    *e = {it->first, it->second.begin()->first};
    return true;
  }

 private:
  void Erase(uint64_t s, uint64_t d) {
    auto it = out_.find(s);
    if (it == out_.end()) return;
    auto e = it->second.find(d);
    if (e == it->second.end()) return;
    d_.sum -= EdgeHash(s, d, e->second);
    d_.edges--;
    it->second.erase(e);
    if (it->second.empty()) out_.erase(it);
    auto jt = in_.find(d);
    jt->second.erase(s);
    if (jt->second.empty()) in_.erase(jt);
  }
  std::map<uint64_t, std::map<uint64_t, double>> out_, in_;  // no empty inner maps
  Digest d_;                                                 // of out_
};

inline std::string Str(const EdgeList &l) {
  std::string s = "[";
  for (size_t i = 0; i < l.size() && i < 40; i++)
    s += (i ? " " : "") + std::to_string(l[i].first) + ":" + std::to_string(l[i].second);
  if (l.size() > 40) s += " ...(" + std::to_string(l.size()) + ")";
  return s + "]";
}

// Reports the first differences between two adjacencies.
inline void ExpectSameAdj(const Adj &got, const Adj &want, const std::string &what) {
  int diffs = 0;
  auto g = got.begin();
  auto w = want.begin();
  while ((g != got.end() || w != want.end()) && diffs < 5) {
    if (w == want.end() || (g != got.end() && g->first < w->first)) {
      ADD_FAILURE() << what << ": unexpected vertex " << g->first << " " << Str(g->second);
      diffs++;
      ++g;
    } else if (g == got.end() || w->first < g->first) {
      ADD_FAILURE() << what << ": missing vertex " << w->first << " " << Str(w->second);
      diffs++;
      ++w;
    } else {
      if (g->second != w->second) {
        ADD_FAILURE() << what << ": vertex " << g->first << " got " << Str(g->second) << " want " << Str(w->second);
        diffs++;
      }
      ++g;
      ++w;
    }
  }
}

// ---------------------------------------------------------------------------
// C API helpers

struct Snap {
  gt_snapshot *s = nullptr;
  Snap() = default;
  // A snapshot of the newest seq, or with durable of the newest durable one.
  explicit Snap(gt_store *st, bool durable = false) {
    Err err;
    int rc = durable ? gt_snapshot_new_durable(st, &s, err.get()) : gt_snapshot_new(st, &s, err.get());
    EXPECT_EQ(rc, GT_OK) << err.msg();
  }
  ~Snap() {
    if (s) gt_snapshot_release(s);
  }
  Snap(Snap &&o) noexcept : s(o.s) { o.s = nullptr; }
  Snap &operator=(Snap &&o) noexcept {
    std::swap(s, o.s);
    return *this;
  }
  Snap(const Snap &) = delete;
  Snap &operator=(const Snap &) = delete;
};

// Owns a store handle: closes it if a test returns early (a failed ASSERT),
// so that background threads stop before the TempDir is removed.
struct StoreHolder {
  gt_store *s = nullptr;
  StoreHolder() = default;
  StoreHolder(const StoreHolder &) = delete;
  StoreHolder &operator=(const StoreHolder &) = delete;
  ~StoreHolder() {
    if (s) gt_close(s, nullptr);
  }
};

inline gt_options SmallOptions() {
  gt_options o;
  std::memset(&o, 0, sizeof o);
  o.memgraph_bytes = 64 << 10;
  o.target_segment_bytes = 16 << 10;
  o.l0_compaction_trigger = 2;
  o.size_ratio = 3;
  o.max_levels = 4;
  o.in_edges = 1;
  return o;
}

inline gt_op Op(uint32_t kind, uint64_t src, uint64_t dst = 0, double w = 1.0) {
  gt_op op;
  std::memset(&op, 0, sizeof op);
  op.kind = kind;
  op.src = src;
  op.dst = dst;
  op.weight = w;
  return op;
}
inline gt_op Up(uint64_t s, uint64_t d, double w = 1.0) { return Op(GT_OP_UPSERT, s, d, w); }
inline gt_op Del(uint64_t s, uint64_t d) { return Op(GT_OP_DELETE_EDGE, s, d, 0); }
inline gt_op DelV(uint64_t v) { return Op(GT_OP_DELETE_VERTEX, v, 0, 0); }

inline void Open(const std::string &dir, const gt_options &o, gt_store **s) {
  Err err;
  *s = nullptr;
  int rc = gt_open(dir.c_str(), &o, s, err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg() << " " << err.file();
  ASSERT_NE(*s, nullptr);
}

inline void Close(gt_store **s) {
  Err err;
  int rc = gt_close(*s, err.get());
  *s = nullptr;
  EXPECT_EQ(rc, GT_OK) << err.msg();
}

inline void Apply(gt_store *s, const std::vector<gt_op> &ops, uint64_t *seq = nullptr, const std::string &srcpos = "") {
  Err err;
  uint64_t q = 0;
  int rc = gt_apply(s, ops.data(), ops.size(), reinterpret_cast<const uint8_t *>(srcpos.data()), srcpos.size(), &q,
                    err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg();
  if (seq) *seq = q;
}

inline void Flush(gt_store *s) {
  Err err;
  int rc = gt_flush(s, err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg();
}

inline void CompactAll(gt_store *s) {
  Err err;
  int rc = gt_compact_all(s, err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg();
}

// Scans [lo, hi) in pages of at most vcap vertices / ecap edges, checking the
// paging contract, and returns the adjacency seen.
inline void ScanAll(gt_snapshot *snap, uint32_t dir, uint64_t lo, uint64_t hi, size_t vcap, size_t ecap, Adj *out) {
  out->clear();
  std::vector<uint64_t> vids, offs, dsts;
  std::vector<double> ws;
  uint64_t pos = lo;
  int pages = 0;
  while (pos < hi) {
    vids.assign(vcap, 0);
    offs.assign(vcap + 1, 0);
    dsts.assign(ecap, 0);
    ws.assign(ecap, 0);
    size_t nv = 99999, ne = 99999;
    uint64_t next = 0;
    Err err;
    int rc = gt_snapshot_scan(snap, pos, hi, dir, nullptr, vids.data(), offs.data(), vcap, dsts.data(), ws.data(),
                              nullptr, nullptr, ecap, &nv, &ne, &next, err.get());
    ASSERT_LT(++pages, 1000000) << "scan does not progress";
    if (rc == GT_ERR_BUFFER) {
      // The first vertex alone needs more than ecap edges: *ne says how many.
      ASSERT_GT(ne, ecap) << err.msg();
      ASSERT_NE(err.e.message, nullptr);
      ecap = ne;
      continue;
    }
    ASSERT_EQ(rc, GT_OK) << err.msg();
    ASSERT_LE(nv, vcap);
    ASSERT_LE(ne, ecap);
    ASSERT_EQ(offs[0], 0u);
    ASSERT_EQ(offs[nv], ne);
    ASSERT_GT(next, pos) << "next must advance";
    ASSERT_LE(next, hi);
    if (nv == 0) {
      ASSERT_EQ(next, hi) << "an empty page must end the scan";
    }
    for (size_t i = 0; i < nv; i++) {
      ASSERT_GE(vids[i], pos);
      ASSERT_LT(vids[i], next);
      if (i > 0) {
        ASSERT_LT(vids[i - 1], vids[i]);
      }
      ASSERT_LT(offs[i], offs[i + 1]) << "vertex " << vids[i] << " reported without edges";
      EdgeList &l = (*out)[vids[i]];
      ASSERT_TRUE(l.empty()) << "vertex " << vids[i] << " reported twice";
      for (uint64_t k = offs[i]; k < offs[i + 1]; k++) {
        if (k > offs[i]) {
          ASSERT_LT(dsts[k - 1], dsts[k]) << "neighbors of " << vids[i] << " not sorted/unique";
        }
        l.emplace_back(dsts[k], ws[k]);
      }
    }
    pos = next;
  }
}

inline void CheckNeighbors(gt_snapshot *snap, uint32_t dir, uint64_t v, const EdgeList &want) {
  SCOPED_TRACE("vertex " + std::to_string(v) + " dir " + std::to_string(dir));
  Err err;
  uint64_t deg = 12345;
  ASSERT_EQ(gt_snapshot_degree(snap, v, dir, nullptr, &deg, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(deg, want.size());
  std::vector<uint64_t> d(want.size() + 2, 0);
  std::vector<double> w(want.size() + 2, 0);
  size_t n = 0;
  ASSERT_EQ(gt_snapshot_neighbors(snap, v, dir, nullptr, d.data(), w.data(), nullptr, nullptr, d.size(), &n, err.get()),
            GT_OK)
      << err.msg();
  ASSERT_EQ(n, want.size());
  EdgeList got;
  for (size_t i = 0; i < n; i++) got.emplace_back(d[i], w[i]);
  EXPECT_EQ(got, want) << Str(got) << " vs " << Str(want);
  // Without weights.
  ASSERT_EQ(gt_snapshot_neighbors(snap, v, dir, nullptr, d.data(), nullptr, nullptr, nullptr, d.size(), &n, err.get()),
            GT_OK)
      << err.msg();
  ASSERT_EQ(n, want.size());
  for (size_t i = 0; i < n; i++) EXPECT_EQ(d[i], want[i].first);
  {
    // Pages of at most 2 through gt_snapshot_neighbors_after.
    EdgeList paged;
    uint64_t after = 0;
    uint32_t has_after = 0, more = 1;
    for (int pages = 0; more; pages++) {
      ASSERT_LT(pages, 100000);
      uint64_t pd[2];
      double pw[2];
      size_t pn = 99;
      ASSERT_EQ(gt_snapshot_neighbors_after(snap, v, dir, nullptr, after, 0, has_after, pd, pw, nullptr, nullptr, 2,
                                            &pn, &more, err.get()),
                GT_OK)
          << err.msg();
      ASSERT_LE(pn, 2u);
      for (size_t i = 0; i < pn; i++) paged.emplace_back(pd[i], pw[i]);
      if (more) {
        ASSERT_EQ(pn, 2u) << "a page short of cap must be the last";
      }
      if (pn > 0) after = pd[pn - 1], has_after = 1;
    }
    EXPECT_EQ(paged, want) << Str(paged) << " vs " << Str(want);
  }
  if (!want.empty()) {
    // One slot short: GT_ERR_BUFFER with the required count.
    n = 0;
    int rc = gt_snapshot_neighbors(snap, v, dir, nullptr, d.data(), w.data(), nullptr, nullptr, want.size() - 1, &n,
                                   err.get());
    EXPECT_EQ(rc, GT_ERR_BUFFER);
    EXPECT_EQ(n, want.size());
    EXPECT_NE(err.e.message, nullptr);
    err.Reset();
  }
}

// Gathers the neighbors of vs in calls of at most ecap edges, checking the
// paging contract, and compares each vertex's list with the oracle's.
inline void CheckGather(gt_snapshot *snap, uint32_t dir, const std::vector<uint64_t> &vs, size_t ecap,
                        const Adj &want) {
  SCOPED_TRACE("gather of " + std::to_string(vs.size()) + " vertices, ecap " + std::to_string(ecap));
  size_t at = 0;
  int calls = 0;
  while (at < vs.size()) {
    ASSERT_LT(++calls, 100000) << "gather does not progress";
    const size_t n = vs.size() - at;
    std::vector<uint64_t> offs(n + 1, 777), dsts(ecap, 0);
    std::vector<double> ws(ecap, 0);
    size_t done = 99999, ne = 99999;
    Err err;
    int rc = gt_snapshot_gather(snap, vs.data() + at, n, dir, nullptr, offs.data(), dsts.data(), ws.data(), nullptr,
                                nullptr, ecap, &done, &ne, err.get());
    if (rc == GT_ERR_BUFFER) {
      ASSERT_EQ(done, 0u);
      ASSERT_GT(ne, ecap) << err.msg();
      ecap = ne;  // the first vertex alone needs ne
      continue;
    }
    ASSERT_EQ(rc, GT_OK) << err.msg();
    ASSERT_GT(done, 0u) << "a vertex that fits must be filled";
    ASSERT_LE(done, n);
    ASSERT_EQ(offs[0], 0u);
    ASSERT_EQ(offs[done], ne);
    ASSERT_LE(ne, ecap);
    for (size_t i = 0; i < done; i++) {
      const uint64_t v = vs[at + i];
      ASSERT_LE(offs[i], offs[i + 1]);
      EdgeList got;
      for (uint64_t k = offs[i]; k < offs[i + 1]; k++) got.emplace_back(dsts[k], ws[k]);
      auto it = want.find(v);
      const EdgeList exp = it == want.end() ? EdgeList{} : it->second;
      ASSERT_EQ(got, exp) << "vertex " << v << ": " << Str(got) << " vs " << Str(exp);
    }
    if (done < n) {
      // The next vertex did not fit in what was left.
      auto it = want.find(vs[at + done]);
      const size_t next = it == want.end() ? 0 : it->second.size();
      ASSERT_GT(ne + next, ecap) << "gather stopped before a vertex that fits";
    }
    at += done;
  }
}

// Full check of a snapshot against an oracle state: scans of both directions
// with a few buffer shapes, plus neighbors/degree of some vertices, gathers
// of vertex lists and the per-band vertex bounds.
inline void CheckSnapshot(gt_snapshot *snap, const Oracle &o, std::mt19937_64 &rng, bool in_edges, int spot = 12) {
  const uint64_t bound = gt_snapshot_vertex_bound(snap);
  if (!o.empty()) {
    ASSERT_GT(bound, o.MaxVertex()) << "vertex bound smaller than the largest vertex id";
  }
  uint64_t low = 0, high = 0;
  gt_snapshot_vertex_bounds(snap, &low, &high);
  EXPECT_GE(low, o.LowBound()) << "low band bound below the largest low id";
  EXPECT_LE(low, GT_HIGH_ID_BASE);
  if (o.MaxVertex() >= GT_HIGH_ID_BASE) {
    EXPECT_GT(high, o.MaxVertex()) << "high band bound below the largest id";
  }
  EXPECT_EQ(std::max(low, high), bound) << "the overall bound is the larger band bound";
  for (uint32_t dir : {uint32_t(GT_OUT), uint32_t(GT_IN)}) {
    if (dir == GT_IN && !in_edges) continue;
    SCOPED_TRACE(dir == GT_OUT ? "out-edges" : "in-edges");
    const Adj want = o.Adjacency(dir);
    struct Shape {
      uint64_t hi;
      size_t vcap, ecap;
    };
    const Shape shapes[] = {
        {GT_MAX_VERTEX + 1, 1 << 16, 1 << 18},     // one page
        {bound, 1 + rng() % 64, 1 + rng() % 200},  // many small pages
        {bound, 1, 1},                             // one vertex per page, growing ecap
    };
    for (const Shape &sh : shapes) {
      Adj got;
      ASSERT_NO_FATAL_FAILURE(ScanAll(snap, dir, 0, sh.hi, sh.vcap, sh.ecap, &got));
      ExpectSameAdj(got, want, "scan vcap=" + std::to_string(sh.vcap) + " ecap=" + std::to_string(sh.ecap));
    }
    // A sub-range scan.
    if (!want.empty()) {
      auto it = want.begin();
      std::advance(it, static_cast<long>(rng() % want.size()));
      const uint64_t lo = it->first;
      const uint64_t hi = lo + 1 + rng() % 100;
      Adj got, sub;
      ASSERT_NO_FATAL_FAILURE(ScanAll(snap, dir, lo, hi, 7, 50, &got));
      for (auto w = want.lower_bound(lo); w != want.end() && w->first < hi; ++w) sub.insert(*w);
      ExpectSameAdj(got, sub, "sub-range scan");
    }
    // Spot checks: present vertices and absent ones.
    std::vector<uint64_t> vs;
    for (int i = 0; i < spot && !want.empty(); i++) {
      auto it = want.begin();
      std::advance(it, static_cast<long>(rng() % want.size()));
      vs.push_back(it->first);
    }
    vs.push_back(rng() % 600);
    vs.push_back(GT_MAX_VERTEX);
    for (uint64_t v : vs) {
      auto it = want.find(v);
      ASSERT_NO_FATAL_FAILURE(CheckNeighbors(snap, dir, v, it == want.end() ? EdgeList{} : it->second));
    }
    // Gathers: the spot vertices in random order with a repeat, then every
    // vertex of the oracle, with a tight and a roomy edge buffer.
    std::shuffle(vs.begin(), vs.end(), rng);
    if (!vs.empty()) vs.push_back(vs.front());
    ASSERT_NO_FATAL_FAILURE(CheckGather(snap, dir, vs, 1 + rng() % 8, want));
    std::vector<uint64_t> all;
    for (const auto &kv : want) all.push_back(kv.first);
    ASSERT_NO_FATAL_FAILURE(CheckGather(snap, dir, all, 1 + rng() % 300, want));
    ASSERT_NO_FATAL_FAILURE(CheckGather(snap, dir, all, 1 << 18, want));
  }
}

inline uint64_t Seed() { return gt_test::SeedOr(4242); }

inline std::string SourcePosition(gt_store *s) {
  size_t len = 0;
  gt_source_position(s, nullptr, 0, &len);
  std::string p(len, '\0');
  size_t len2 = 0;
  gt_source_position(s, reinterpret_cast<uint8_t *>(&p[0]), p.size(), &len2);
  EXPECT_EQ(len, len2);
  return p;
}

inline std::vector<std::string> SegmentFiles(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (struct dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".seg") == 0) out.push_back(dir + "/" + n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------------------
// The randomized model test's batches

class RandomOps {
 public:
  static constexpr uint64_t kUniverse = 1000;
  explicit RandomOps(uint64_t seed) : rng_(seed) {}
  std::mt19937_64 &rng() { return rng_; }

  uint64_t Vertex() {
    const uint64_t r = rng_() % 100;
    if (r < 96) return rng_() % kUniverse;
    if (r < 98) return (1ull << 33) + rng_() % 4;  // 64-bit dsts, sparse tables
    return GT_MAX_VERTEX - rng_() % 3;
  }
  double Weight() { return static_cast<double>(static_cast<int64_t>(rng_() % 81) - 16) * 0.25; }

  // The model runs without vertex deletes first, so that a store that never
  // had one is checked too (VertexDeletePurge checks them throughout).
  void set_vertex_deletes(bool on) { vdel_ = on; }

  std::vector<gt_op> Batch(const Oracle &o) {
    std::vector<gt_op> ops;
    if (vdel_ && rng_() % 20 == 0) {
      // Ops on one vertex around its delete in the same batch.
      const uint64_t v = rng_() % kUniverse;
      ops.push_back(Up(v, Vertex(), Weight()));
      ops.push_back(Up(Vertex(), v, Weight()));
      ops.push_back(DelV(v));
      ops.push_back(Up(v, Vertex(), Weight()));
      ops.push_back(Up(Vertex(), v, Weight()));
      if (rng_() % 2) ops.push_back(DelV(v));
      ops.push_back(Up(v, v, Weight()));
      return ops;
    }
    // Mostly small batches, sometimes a bulk load.
    const size_t n = rng_() % 16 == 0 ? 150 + rng_() % 150 : 1 + rng_() % 48;
    for (size_t i = 0; i < n; i++) {
      const uint64_t r = rng_() % 100;
      if (r < 66) {
        ops.push_back(Up(Vertex(), Vertex(), Weight()));
      } else if (r < 88) {
        std::pair<uint64_t, uint64_t> e;
        if (rng_() % 4 != 0 && o.EdgeFrom(Vertex(), &e))
          ops.push_back(Del(e.first, e.second));
        else
          ops.push_back(Del(Vertex(), Vertex()));  // usually a tombstone for nothing
      } else if (r < 91 && vdel_) {
        gt_op d = DelV(Vertex());
        if (rng_() % 2) d.dst = UINT64_MAX;  // ignored for vertex deletes
        ops.push_back(d);
      } else {
        // Re-upsert an existing edge with a new weight.
        std::pair<uint64_t, uint64_t> e;
        if (o.EdgeFrom(Vertex(), &e)) ops.push_back(Up(e.first, e.second, Weight()));
      }
    }
    return ops;
  }

 private:
  std::mt19937_64 rng_;
  bool vdel_ = false;
};

struct HeldSnapshot {
  Snap snap;
  Oracle state;
  uint64_t seq;
};

}  // namespace gt_store_test
