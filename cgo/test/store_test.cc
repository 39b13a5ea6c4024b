// store_test.cc -- the storage core through its C API (graphtide.h) only:
// gt_open, gt_apply, gt_flush, gt_compact_all, gt_snapshot_*, gt_verify_all,
// gt_close. A randomized test applies a few hundred batches of upserts, edge
// deletes and vertex deletes (a vertex delete removes every edge with src==v
// or dst==v that exists before it; ops of a batch apply in order) to a store
// with tiny options (64 KiB MemGraphs, 16 KiB segments, L0 trigger 2, size
// ratio 3, 4 levels, in-edges) and to a std::map oracle, and checks
// gt_snapshot_scan over the whole range (paged, both directions),
// gt_snapshot_neighbors and gt_snapshot_degree, pinned snapshots against the
// oracle state of their time, and everything again after flush + close +
// reopen. Also: option validation, invalid ops, buffer-too-small results,
// in-edge misuse, a second open of a locked directory, corrupted segment
// files reported with path and offset, source positions, an empty batch
// followed by gt_flush, batch atomicity under concurrent readers, and every
// snapshot of readers racing a writer against an oracle.
// gt_snapshot_gather is checked against the oracle wherever scans are;
// durable snapshots (gt_snapshot_new_durable) against the oracle state of
// the newest flush; per-band vertex bounds after reopening, also from a
// manifest written without them; gt_list_files against metrics and disk. Every
// gt_error is released with gt_error_free so the ASan leak check is
// meaningful.
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

namespace {

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
uint64_t EdgeHash(uint64_t s, uint64_t d, double w) {
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

std::string Str(const EdgeList &l) {
  std::string s = "[";
  for (size_t i = 0; i < l.size() && i < 40; i++)
    s += (i ? " " : "") + std::to_string(l[i].first) + ":" + std::to_string(l[i].second);
  if (l.size() > 40) s += " ...(" + std::to_string(l.size()) + ")";
  return s + "]";
}

// Reports the first differences between two adjacencies.
void ExpectSameAdj(const Adj &got, const Adj &want, const std::string &what) {
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

gt_options SmallOptions() {
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

gt_op Op(uint32_t kind, uint64_t src, uint64_t dst = 0, double w = 1.0) {
  gt_op op;
  std::memset(&op, 0, sizeof op);
  op.kind = kind;
  op.src = src;
  op.dst = dst;
  op.weight = w;
  return op;
}
gt_op Up(uint64_t s, uint64_t d, double w = 1.0) { return Op(GT_OP_UPSERT, s, d, w); }
gt_op Del(uint64_t s, uint64_t d) { return Op(GT_OP_DELETE_EDGE, s, d, 0); }
gt_op DelV(uint64_t v) { return Op(GT_OP_DELETE_VERTEX, v, 0, 0); }

void Open(const std::string &dir, const gt_options &o, gt_store **s) {
  Err err;
  *s = nullptr;
  int rc = gt_open(dir.c_str(), &o, s, err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg() << " " << err.file();
  ASSERT_NE(*s, nullptr);
}

void Close(gt_store **s) {
  Err err;
  int rc = gt_close(*s, err.get());
  *s = nullptr;
  EXPECT_EQ(rc, GT_OK) << err.msg();
}

void Apply(gt_store *s, const std::vector<gt_op> &ops, uint64_t *seq = nullptr, const std::string &srcpos = "") {
  Err err;
  uint64_t q = 0;
  int rc = gt_apply(s, ops.data(), ops.size(), reinterpret_cast<const uint8_t *>(srcpos.data()), srcpos.size(), &q,
                    err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg();
  if (seq) *seq = q;
}

void Flush(gt_store *s) {
  Err err;
  int rc = gt_flush(s, err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg();
}

void CompactAll(gt_store *s) {
  Err err;
  int rc = gt_compact_all(s, err.get());
  ASSERT_EQ(rc, GT_OK) << err.msg();
}

// Scans [lo, hi) in pages of at most vcap vertices / ecap edges, checking the
// paging contract, and returns the adjacency seen.
void ScanAll(gt_snapshot *snap, uint32_t dir, uint64_t lo, uint64_t hi, size_t vcap, size_t ecap, Adj *out) {
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
    int rc = gt_snapshot_scan(snap, pos, hi, dir, vids.data(), offs.data(), vcap, dsts.data(), ws.data(), ecap, &nv,
                              &ne, &next, err.get());
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

void CheckNeighbors(gt_snapshot *snap, uint32_t dir, uint64_t v, const EdgeList &want) {
  SCOPED_TRACE("vertex " + std::to_string(v) + " dir " + std::to_string(dir));
  Err err;
  uint64_t deg = 12345;
  ASSERT_EQ(gt_snapshot_degree(snap, v, dir, &deg, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(deg, want.size());
  std::vector<uint64_t> d(want.size() + 2, 0);
  std::vector<double> w(want.size() + 2, 0);
  size_t n = 0;
  ASSERT_EQ(gt_snapshot_neighbors(snap, v, dir, d.data(), w.data(), d.size(), &n, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(n, want.size());
  EdgeList got;
  for (size_t i = 0; i < n; i++) got.emplace_back(d[i], w[i]);
  EXPECT_EQ(got, want) << Str(got) << " vs " << Str(want);
  // Without weights.
  ASSERT_EQ(gt_snapshot_neighbors(snap, v, dir, d.data(), nullptr, d.size(), &n, err.get()), GT_OK) << err.msg();
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
      ASSERT_EQ(gt_snapshot_neighbors_after(snap, v, dir, after, has_after, pd, pw, 2, &pn, &more, err.get()), GT_OK)
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
    int rc = gt_snapshot_neighbors(snap, v, dir, d.data(), w.data(), want.size() - 1, &n, err.get());
    EXPECT_EQ(rc, GT_ERR_BUFFER);
    EXPECT_EQ(n, want.size());
    EXPECT_NE(err.e.message, nullptr);
    err.Reset();
  }
}

// Gathers the neighbors of vs in calls of at most ecap edges, checking the
// paging contract, and compares each vertex's list with the oracle's.
void CheckGather(gt_snapshot *snap, uint32_t dir, const std::vector<uint64_t> &vs, size_t ecap, const Adj &want) {
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
    int rc = gt_snapshot_gather(snap, vs.data() + at, n, dir, offs.data(), dsts.data(), ws.data(), ecap, &done, &ne,
                                err.get());
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
void CheckSnapshot(gt_snapshot *snap, const Oracle &o, std::mt19937_64 &rng, bool in_edges, int spot = 12) {
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

uint64_t Seed() {
  const char *s = std::getenv("GT_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 4242;
}

std::string SourcePosition(gt_store *s) {
  size_t len = 0;
  gt_source_position(s, nullptr, 0, &len);
  std::string p(len, '\0');
  size_t len2 = 0;
  gt_source_position(s, reinterpret_cast<uint8_t *>(&p[0]), p.size(), &len2);
  EXPECT_EQ(len, len2);
  return p;
}

std::vector<std::string> SegmentFiles(const std::string &dir) {
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
// The randomized model test

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

  // Vertex deletes are never garbage collected, and any vertex delete turns
  // the read fast paths off for good; so the model runs without them first.
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

TEST(StoreModelTest, RandomizedAgainstOracle) {
  const uint64_t seed = Seed();
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  TempDir dir;
  const gt_options opts = SmallOptions();
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), opts, &s));
  RandomOps gen(seed);
  auto &rng = gen.rng();
  Oracle oracle;
  std::vector<HeldSnapshot> held;
  // Oracle state after each recent batch, for durable snapshots (whose seq
  // is the newest flushed one, often a background flush's).
  std::map<uint64_t, Oracle> recent{{0, Oracle{}}};
  int durable_checked = 0;
  uint64_t last_seq = 0;
  std::string last_srcpos;
  uint32_t deepest_seen = 0;
  const int kBatches = 420;

  auto check_held = [&](const char *when) {
    for (size_t i = 0; i < held.size(); i++) {
      SCOPED_TRACE(std::string(when) + ": pinned snapshot seq " + std::to_string(held[i].seq));
      EXPECT_EQ(gt_snapshot_seq(held[i].snap.s), held[i].seq);
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(held[i].snap.s, held[i].state, rng, true, 4));
    }
  };
  auto note_levels = [&]() {
    gt_metrics m;
    gt_get_metrics(s, &m);
    EXPECT_EQ(m.num_levels, opts.max_levels);
    EXPECT_EQ(m.background_errors, 0u);
    for (uint32_t i = 0; i < m.num_levels && i < GT_MAX_LEVELS; i++)
      if (m.levels[i].files > 0) deepest_seen = std::max(deepest_seen, i);
  };
  auto reopen = [&](int step) {
    SCOPED_TRACE("reopen at batch " + std::to_string(step));
    check_held("before reopen");
    held.clear();  // live snapshots must be released before gt_close
    ASSERT_NO_FATAL_FAILURE(Flush(s));
    ASSERT_NO_FATAL_FAILURE(Close(&s));
    ASSERT_NO_FATAL_FAILURE(Open(dir.path(), opts, &s));
    EXPECT_EQ(SourcePosition(s), last_srcpos);
    gt_metrics m;
    gt_get_metrics(s, &m);
    EXPECT_EQ(m.last_seq, last_seq);
    EXPECT_EQ(m.durable_seq, last_seq);
    Snap snap(s);
    EXPECT_EQ(gt_snapshot_seq(snap.s), last_seq);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
  };

  for (int step = 1; step <= kBatches; step++) {
    SCOPED_TRACE("batch " + std::to_string(step));
    gen.set_vertex_deletes(step > kBatches / 2);
    const std::vector<gt_op> ops = gen.Batch(oracle);
    const std::string srcpos = "pos-" + std::to_string(step);
    uint64_t seq = 0;
    ASSERT_NO_FATAL_FAILURE(Apply(s, ops, &seq, srcpos));
    ASSERT_EQ(seq, last_seq + 1) << "one new sequence number per batch";
    last_seq = seq;
    last_srcpos = srcpos;
    oracle.Apply(ops);
    recent[seq] = oracle;
    while (recent.size() > 64) recent.erase(recent.begin());

    {
      // Spot checks of the vertices this batch touched, at the newest state.
      Snap snap(s);
      ASSERT_EQ(gt_snapshot_seq(snap.s), seq);
      std::set<uint64_t> touched;
      for (size_t i = 0; i < ops.size() && touched.size() < 6; i++) {
        touched.insert(ops[i].src);
        if (ops[i].kind != GT_OP_DELETE_VERTEX) touched.insert(ops[i].dst);
      }
      touched.insert(gen.Vertex());
      for (uint64_t v : touched) {
        ASSERT_NO_FATAL_FAILURE(CheckNeighbors(snap.s, GT_OUT, v, oracle.Neighbors(v, GT_OUT)));
        ASSERT_NO_FATAL_FAILURE(CheckNeighbors(snap.s, GT_IN, v, oracle.Neighbors(v, GT_IN)));
      }
    }

    const uint64_t r = rng() % 1000;
    if (r < 40) {
      ASSERT_NO_FATAL_FAILURE(Flush(s));
    } else if (r < 55) {
      ASSERT_NO_FATAL_FAILURE(CompactAll(s));
      // Right after a full compaction reads may take the single-level paths.
      Snap snap(s);
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true, 4));
    } else if (r < 95 && held.size() < 3) {
      HeldSnapshot h{Snap(s), oracle, last_seq};
      held.push_back(std::move(h));
    } else if (r < 135 && !held.empty()) {
      const size_t k = rng() % held.size();
      SCOPED_TRACE("releasing snapshot seq " + std::to_string(held[k].seq));
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(held[k].snap.s, held[k].state, rng, true, 4));
      held.erase(held.begin() + static_cast<long>(k));
    } else if (r < 175) {
      // A durable snapshot sees exactly the state as of the newest flush.
      gt_metrics before, after;
      gt_get_metrics(s, &before);
      Snap snap(s, true);
      gt_get_metrics(s, &after);
      const uint64_t d = gt_snapshot_seq(snap.s);
      ASSERT_GE(d, before.durable_seq);
      ASSERT_LE(d, after.durable_seq);
      ASSERT_LE(d, last_seq);
      auto it = recent.find(d);
      if (it != recent.end()) {
        SCOPED_TRACE("durable snapshot seq " + std::to_string(d) + " at seq " + std::to_string(last_seq));
        ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, it->second, rng, true, 4));
        durable_checked++;
        if (held.size() < 3) held.push_back(HeldSnapshot{std::move(snap), it->second, d});
      }
    }

    if (step % 35 == 0) {
      note_levels();
      Snap snap(s);
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
      check_held("periodic");
    }
    if (step == kBatches / 3 || step == 2 * kBatches / 3) {
      ASSERT_NO_FATAL_FAILURE(reopen(step));
    }
  }

  check_held("end");
  held.clear();
  ASSERT_NO_FATAL_FAILURE(CompactAll(s));
  {
    gt_metrics m;
    gt_get_metrics(s, &m);
    note_levels();
    std::printf("[ model    ] seq %llu, flushes %llu, compactions %llu, stalls %llu, deepest level seen L%u\n",
                static_cast<unsigned long long>(m.last_seq), static_cast<unsigned long long>(m.flushes),
                static_cast<unsigned long long>(m.compactions), static_cast<unsigned long long>(m.stalls),
                deepest_seen);
    EXPECT_GT(m.flushes, 0u);
    EXPECT_GT(m.compactions, 0u);
    EXPECT_EQ(m.levels[0].files, 0u) << "gt_compact_all must empty L0";
    EXPECT_EQ(m.snapshots_open, 0u);
    Err err;
    EXPECT_EQ(gt_verify_all(s, err.get()), GT_OK) << err.msg();
    Snap snap(s);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
  }
  EXPECT_GE(deepest_seen, 2u) << "the workload should reach L2 at least";
  EXPECT_GE(durable_checked, 5) << "durable snapshots should be checked against their state";
  ASSERT_NO_FATAL_FAILURE(reopen(kBatches + 1));
  ASSERT_NO_FATAL_FAILURE(Close(&s));
}

// ---------------------------------------------------------------------------
// Deterministic API tests

TEST(StoreApiTest, OptionValidation) {
  TempDir dir;
  struct Case {
    const char *name;
    void (*set)(gt_options *);
    const char *want;  // must appear in the message: the field and what is allowed (graphtide.h's limits)
  };
  const Case cases[] = {
      {"size_ratio_1", [](gt_options *o) { o->size_ratio = 1; }, "size_ratio must be between 2 and 1000, got 1"},
      {"size_ratio_huge", [](gt_options *o) { o->size_ratio = 100000; },
       "size_ratio must be between 2 and 1000, got 100000"},
      {"memgraph_too_small", [](gt_options *o) { o->memgraph_bytes = 1000; },
       "memgraph_bytes must be between 64 KiB and 64 GiB, got 1000"},
      {"memgraph_too_large", [](gt_options *o) { o->memgraph_bytes = GT_MAX_MEMGRAPH_BYTES + 1; },
       "memgraph_bytes must be between 64 KiB and 64 GiB"},
      {"segment_too_small", [](gt_options *o) { o->target_segment_bytes = 100; },
       "target_segment_bytes must be between 16 KiB and 16 GiB, got 100"},
      {"segment_too_large", [](gt_options *o) { o->target_segment_bytes = GT_MAX_TARGET_SEGMENT_BYTES + 1; },
       "target_segment_bytes must be between 16 KiB and 16 GiB"},
      {"max_levels_1", [](gt_options *o) { o->max_levels = 1; }, "max_levels must be between 2 and 16, got 1"},
      {"max_levels_17", [](gt_options *o) { o->max_levels = GT_MAX_LEVELS + 1; },
       "max_levels must be between 2 and 16, got 17"},
      {"l0_trigger_huge", [](gt_options *o) { o->l0_compaction_trigger = 1000; },
       "l0_compaction_trigger must be between 1 and 64, got 1000"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    gt_options o = SmallOptions();
    c.set(&o);
    gt_store *s = nullptr;
    Err err;
    int rc = gt_open(dir.Sub(c.name).c_str(), &o, &s, err.get());
    EXPECT_EQ(rc, GT_ERR_INVALID);
    EXPECT_EQ(err.e.code, GT_ERR_INVALID);
    EXPECT_EQ(s, nullptr);
    ASSERT_NE(err.e.message, nullptr);
    EXPECT_NE(err.msg().find(c.want), std::string::npos) << err.msg();
    EXPECT_EQ(err.e.file, nullptr);
    gt_error_free(err.get());
    EXPECT_EQ(err.e.message, nullptr);
    EXPECT_EQ(err.e.file, nullptr);
    if (s) gt_close(s, nullptr);
  }
  {
    SCOPED_TRACE("null dir");
    gt_store *s = nullptr;
    Err err;
    gt_options o = SmallOptions();
    EXPECT_EQ(gt_open(nullptr, &o, &s, err.get()), GT_ERR_INVALID);
    EXPECT_FALSE(err.msg().empty());
  }
  {
    SCOPED_TRACE("null options mean defaults");
    gt_store *s = nullptr;
    Err err;
    ASSERT_EQ(gt_open(dir.Sub("defaults").c_str(), nullptr, &s, err.get()), GT_OK) << err.msg();
    gt_metrics m;
    gt_get_metrics(s, &m);
    EXPECT_EQ(m.num_levels, 7u);
    Close(&s);
  }
  gt_error_free(nullptr);  // NULL-safe
}

TEST(StoreApiTest, OpenErrors) {
  TempDir dir;
  const gt_options o = SmallOptions();
  {
    SCOPED_TRACE("directory under a regular file");
    gt_test::WriteFile(dir.Sub("file"), "x");
    gt_store *s = nullptr;
    Err err;
    EXPECT_EQ(gt_open(dir.Sub("file/store").c_str(), &o, &s, err.get()), GT_ERR_IO);
    EXPECT_FALSE(err.msg().empty());
    EXPECT_NE(err.file().find("file/store"), std::string::npos) << err.file();
  }
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.Sub("db"), o, &s));
  {
    SCOPED_TRACE("second open of a store in use");
    gt_store *s2 = nullptr;
    Err err;
    EXPECT_EQ(gt_open(dir.Sub("db").c_str(), &o, &s2, err.get()), GT_ERR_LOCKED);
    EXPECT_EQ(s2, nullptr);
    EXPECT_NE(err.file().find("LOCK"), std::string::npos) << err.file();
    if (s2) gt_close(s2, nullptr);
  }
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, 2)}));
  ASSERT_NO_FATAL_FAILURE(Flush(s));
  ASSERT_NO_FATAL_FAILURE(Close(&s));
  {
    SCOPED_TRACE("reopen with different in_edges");
    gt_options o2 = o;
    o2.in_edges = 0;
    gt_store *s2 = nullptr;
    Err err;
    EXPECT_EQ(gt_open(dir.Sub("db").c_str(), &o2, &s2, err.get()), GT_ERR_INVALID);
    EXPECT_NE(err.msg().find("in_edges"), std::string::npos) << err.msg();
    if (s2) gt_close(s2, nullptr);
  }
  {
    SCOPED_TRACE("reopen as stored: keeps in_edges");
    gt_options o2 = o;
    o2.in_edges = 0;
    o2.in_edges_as_stored = 1;
    gt_store *s2 = nullptr;
    Err err;
    ASSERT_EQ(gt_open(dir.Sub("db").c_str(), &o2, &s2, err.get()), GT_OK) << err.msg();
    EXPECT_EQ(gt_in_edges(s2), o.in_edges ? 1 : 0);
    gt_close(s2, nullptr);
  }
  // The failed opens did not damage the store.
  ASSERT_NO_FATAL_FAILURE(Open(dir.Sub("db"), o, &s));
  Snap snap(s);
  std::mt19937_64 rng(1);
  Oracle want;
  want.Apply({Up(1, 2)});
  ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, want, rng, true));
  snap = Snap();
  Close(&s);
}

TEST(StoreApiTest, InvalidOpsRejectAtomically) {
  TempDir dir;
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), SmallOptions(), &s));
  const std::vector<std::pair<const char *, gt_op>> bad = {
      {"nan weight", Up(1, 2, std::nan(""))},
      {"infinite weight", Up(1, 2, INFINITY)},
      {"unknown kind", Op(7, 1, 2)},
      {"src out of range", Up(GT_MAX_VERTEX + 1, 2)},
      {"dst out of range", Up(1, UINT64_MAX)},
      {"delete-edge dst out of range", Del(1, GT_MAX_VERTEX + 1)},
      {"vertex delete out of range", DelV(GT_MAX_VERTEX + 1)},
  };
  for (const auto &b : bad) {
    SCOPED_TRACE(b.first);
    std::vector<gt_op> ops = {Up(10, 11, 2.0), b.second, Up(12, 13)};
    Err err;
    uint64_t seq = 777;
    EXPECT_EQ(gt_apply(s, ops.data(), ops.size(), nullptr, 0, &seq, err.get()), GT_ERR_INVALID);
    EXPECT_NE(err.msg().find("op 1"), std::string::npos) << err.msg();
  }
  {
    Err err;
    EXPECT_EQ(gt_apply(s, nullptr, 3, nullptr, 0, nullptr, err.get()), GT_ERR_INVALID);
  }
  // Nothing of the rejected batches is visible; the store still works.
  Snap snap(s);
  EXPECT_EQ(gt_snapshot_seq(snap.s), 0u);
  std::mt19937_64 rng(1);
  ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, Oracle(), rng, true));
  uint64_t seq = 0;
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(10, 11, 2.0)}, &seq));
  EXPECT_EQ(seq, 1u);
  snap = Snap();
  Close(&s);
}

TEST(StoreApiTest, InEdgesDisabledAndBadDirection) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.in_edges = 0;
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, 2), Up(3, 2)}));
  Snap snap(s);
  uint64_t deg = 0, vids[4], offs[5], dsts[4], next = 0;
  size_t n = 0, nv = 0, ne = 0;
  for (uint32_t dir_arg : {1u, 2u}) {
    SCOPED_TRACE("dir " + std::to_string(dir_arg));
    Err e1, e2, e3;
    EXPECT_EQ(gt_snapshot_degree(snap.s, 2, dir_arg, &deg, e1.get()), GT_ERR_INVALID);
    EXPECT_EQ(gt_snapshot_neighbors(snap.s, 2, dir_arg, dsts, nullptr, 4, &n, e2.get()), GT_ERR_INVALID);
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 10, dir_arg, vids, offs, 4, dsts, nullptr, 4, &nv, &ne, &next, e3.get()),
              GT_ERR_INVALID);
    EXPECT_FALSE(e1.msg().empty());
  }
  Err err;
  ASSERT_EQ(gt_snapshot_degree(snap.s, 1, GT_OUT, &deg, err.get()), GT_OK);
  EXPECT_EQ(deg, 1u);
  snap = Snap();
  Close(&s);
}

TEST(StoreApiTest, ScanBufferContract) {
  TempDir dir;
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), SmallOptions(), &s));
  std::vector<gt_op> ops;
  for (uint64_t d = 0; d < 10; d++) ops.push_back(Up(5, 100 + d, static_cast<double>(d)));
  ops.push_back(Up(6, 1));
  ops.push_back(Up(8, 1));
  ASSERT_NO_FATAL_FAILURE(Apply(s, ops));
  for (int round = 0; round < 2; round++) {
    SCOPED_TRACE(round == 0 ? "MemGraph" : "compacted");
    Snap snap(s);
    uint64_t vids[4], offs[5], dsts[16], next = 0;
    double w[16];
    size_t nv = 0, ne = 0;
    Err err;
    // vcap 0: nothing fits.
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, vids, offs, 0, dsts, w, 16, &nv, &ne, &next, err.get()),
              GT_ERR_BUFFER);
    err.Reset();
    // First vertex (5, 10 edges) does not fit in 4 edges.
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, vids, offs, 4, dsts, w, 4, &nv, &ne, &next, err.get()),
              GT_ERR_BUFFER);
    EXPECT_EQ(ne, 10u);
    EXPECT_EQ(next, 5u);
    err.Reset();
    // 10 edges fit, then vertex 6 does not: stop before it.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, vids, offs, 4, dsts, w, 10, &nv, &ne, &next, err.get()), GT_OK)
        << err.msg();
    EXPECT_EQ(nv, 1u);
    EXPECT_EQ(ne, 10u);
    EXPECT_EQ(vids[0], 5u);
    EXPECT_EQ(next, 6u);
    EXPECT_EQ(w[3], 3.0);
    // vcap 1 from 6: vertex 6 then next = 8.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 6, 100, GT_OUT, vids, offs, 1, dsts, w, 16, &nv, &ne, &next, err.get()), GT_OK);
    EXPECT_EQ(nv, 1u);
    EXPECT_EQ(vids[0], 6u);
    EXPECT_EQ(next, 8u);
    // Empty and inverted ranges.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 9, 100, GT_OUT, vids, offs, 4, dsts, w, 16, &nv, &ne, &next, err.get()), GT_OK);
    EXPECT_EQ(nv, 0u);
    EXPECT_EQ(next, 100u);
    ASSERT_EQ(gt_snapshot_scan(snap.s, 50, 10, GT_OUT, vids, offs, 4, dsts, w, 16, &nv, &ne, &next, err.get()), GT_OK);
    EXPECT_EQ(nv, 0u);
    // In-edges of 1: from 6 and 8.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_IN, vids, offs, 4, dsts, w, 16, &nv, &ne, &next, err.get()), GT_OK);
    ASSERT_GE(nv, 1u);
    EXPECT_EQ(vids[0], 1u);
    EXPECT_EQ(offs[1], 2u);
    EXPECT_EQ(dsts[0], 6u);
    EXPECT_EQ(dsts[1], 8u);
    snap = Snap();
    ASSERT_NO_FATAL_FAILURE(CompactAll(s));
  }
  Close(&s);
}

TEST(StoreApiTest, VertexDeleteWithinBatchAndAcrossLevels) {
  TempDir dir;
  const gt_options o = SmallOptions();
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  Oracle oracle;
  std::mt19937_64 rng(3);
  auto apply = [&](const std::vector<gt_op> &ops) {
    Apply(s, ops);
    oracle.Apply(ops);
  };
  // Old edges of 1 in a compacted level, newer ones in L0, newest in memory.
  apply({Up(1, 2, 1.0), Up(3, 1, 2.0), Up(1, 9, 3.0), Up(4, 5, 4.0)});
  ASSERT_NO_FATAL_FAILURE(CompactAll(s));
  apply({Up(1, 6, 5.0), Up(7, 1, 6.0)});
  ASSERT_NO_FATAL_FAILURE(Flush(s));
  Snap before(s);
  Oracle before_state = oracle;
  // Ops before the delete die with it; ops after it survive.
  apply({Up(1, 10, 7.0), Up(11, 1, 8.0), DelV(1), Up(1, 12, 9.0), Up(13, 1, 10.0), Del(4, 5)});
  {
    Snap snap(s);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
  }
  ASSERT_NO_FATAL_FAILURE(CheckSnapshot(before.s, before_state, rng, true));
  ASSERT_NO_FATAL_FAILURE(CompactAll(s));
  {
    Snap snap(s);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
  }
  ASSERT_NO_FATAL_FAILURE(CheckSnapshot(before.s, before_state, rng, true));
  before = Snap();
  // Deleting again, then re-adding.
  apply({DelV(1), Up(1, 2, 11.0), DelV(13)});
  ASSERT_NO_FATAL_FAILURE(CompactAll(s));
  ASSERT_NO_FATAL_FAILURE(Flush(s));
  ASSERT_NO_FATAL_FAILURE(Close(&s));
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  {
    Snap snap(s);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
  }
  Close(&s);
}

// gt_apply with no ops (e.g. only a source position) must not make a later
// gt_flush wait forever: the flush has to cover that batch's sequence number.
TEST(StoreApiTest, FlushAfterEmptyBatchCompletes) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.in_edges = 0;
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, 2)}, nullptr, "A"));
  ASSERT_NO_FATAL_FAILURE(Flush(s));
  uint64_t seq = 0;
  ASSERT_NO_FATAL_FAILURE(Apply(s, {}, &seq, "B"));
  EXPECT_EQ(seq, 2u);

  std::atomic<bool> done{false};
  int rc = -1;
  std::string msg;
  std::thread t([&] {
    Err err;
    rc = gt_flush(s, err.get());
    msg = err.msg();
    done.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool hung = !done.load();
  EXPECT_FALSE(hung) << "gt_flush after an empty batch did not return within 5 s (waits for a flush of seq " << seq
                     << " that never happens)";
  if (hung) {
    // Unblock it: a non-empty batch and a flush make durable_seq pass seq.
    ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(3, 4)}, nullptr, "C"));
    ASSERT_NO_FATAL_FAILURE(Flush(s));
  }
  t.join();
  EXPECT_EQ(rc, GT_OK) << msg;
  if (!hung) {
    EXPECT_EQ(SourcePosition(s), "B") << "the empty batch's source position must be durable after gt_flush";
    gt_metrics m;
    gt_get_metrics(s, &m);
    EXPECT_EQ(m.durable_seq, seq);
  }
  Close(&s);
}

// A MemGraph of memgraph_bytes holds about that much data before it is
// frozen and flushed: a few KiB of edges in a 256 KiB MemGraph must not cause
// a flush (and a write stall) every other batch.
TEST(StoreApiTest, SmallMemGraphHoldsManyBatches) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.in_edges = 0;
  o.memgraph_bytes = 256 << 10;
  o.disable_auto_compaction = 1;
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  // 100 batches, one edge each, all of vertex 1: about 2.4 KB of versions.
  for (uint64_t k = 0; k < 100; k++) ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, k, 2.0)}));
  gt_metrics m;
  gt_get_metrics(s, &m);
  EXPECT_LE(m.flushes, 1u) << "a 256 KiB MemGraph was flushed " << m.flushes << " times for ~2.4 KB of edges ("
                           << m.stalls << " write stalls); it reports " << m.memgraph_bytes << " bytes";
  EXPECT_EQ(m.stalls, 0u);
  Snap snap(s);
  uint64_t deg = 0;
  Err err;
  ASSERT_EQ(gt_snapshot_degree(snap.s, 1, GT_OUT, &deg, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(deg, 100u);
  snap = Snap();
  Close(&s);
}

TEST(StoreApiTest, SourcePositionFollowsFlushes) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.in_edges = 0;
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  EXPECT_EQ(SourcePosition(s), "");
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, 2)}, nullptr, "first"));
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, 3)}, nullptr, ""));  // no position: keeps "first"
  EXPECT_EQ(SourcePosition(s), "") << "not durable yet";
  ASSERT_NO_FATAL_FAILURE(Flush(s));
  EXPECT_EQ(SourcePosition(s), "first");
  {
    uint8_t small[2];
    size_t len = 0;
    gt_source_position(s, small, sizeof small, &len);
    EXPECT_EQ(len, 5u);
  }
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, 4)}, nullptr, std::string("se\0cond", 7)));
  ASSERT_NO_FATAL_FAILURE(Close(&s));  // unflushed: discarded
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  EXPECT_EQ(SourcePosition(s), "first");
  {
    Snap snap(s);
    Err err;
    uint64_t deg = 0;
    ASSERT_EQ(gt_snapshot_degree(snap.s, 1, GT_OUT, &deg, err.get()), GT_OK);
    EXPECT_EQ(deg, 2u) << "the unflushed batch must be gone after close";
  }
  ASSERT_NO_FATAL_FAILURE(Apply(s, {Up(1, 4)}, nullptr, std::string("se\0cond", 7)));
  ASSERT_NO_FATAL_FAILURE(Flush(s));
  ASSERT_NO_FATAL_FAILURE(Close(&s));
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  EXPECT_EQ(SourcePosition(s), std::string("se\0cond", 7));
  Close(&s);
}

// Corrupted segment files are reported through the C API with the file's
// path: a header byte at open, a data-column byte on read and by
// gt_verify_all (with an offset inside the file).
TEST(StoreApiTest, VertexBoundsPerBand) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.in_edges = 0;  // dst-only ids must count too
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  const uint64_t hi = GT_HIGH_ID_BASE;
  auto expect = [&](uint64_t low, uint64_t high, const char *when) {
    SCOPED_TRACE(when);
    Snap snap(h.s);
    uint64_t l = 0, g = 0;
    gt_snapshot_vertex_bounds(snap.s, &l, &g);
    EXPECT_EQ(l, low);
    EXPECT_EQ(g, high);
    EXPECT_EQ(gt_snapshot_vertex_bound(snap.s), std::max(low, high));
  };
  expect(0, 0, "empty store");
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {Up(5, 9)}));
  expect(10, 0, "low ids only");
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {Up(hi + 3, 1000), Up(7, hi + 100), Del(hi + 2, 3)}));
  expect(1001, hi + 101, "both bands; a delete of a missing edge still counts");
  ASSERT_NO_FATAL_FAILURE(Flush(h.s));
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {Up(hi, 1)}));
  ASSERT_NO_FATAL_FAILURE(Flush(h.s));
  ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
  expect(1001, hi + 101, "after flush and compaction");
  ASSERT_NO_FATAL_FAILURE(Close(&h.s));
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  expect(1001, hi + 101, "reopened: from the manifest");
  ASSERT_NO_FATAL_FAILURE(Close(&h.s));
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {Up(2000, hi + 500)}));
  expect(2001, hi + 501, "grows after reopen");
  ASSERT_NO_FATAL_FAILURE(Flush(h.s));
  ASSERT_NO_FATAL_FAILURE(Close(&h.s));
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  expect(2001, hi + 501, "old records before new ones: from the newest record");
}

TEST(StoreApiTest, DurableSnapshotSkipsUnflushedData) {
  TempDir dir;
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), SmallOptions(), &h.s));
  {
    Snap empty(h.s, true);
    EXPECT_EQ(gt_snapshot_seq(empty.s), 0u);
  }
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {Up(1, 2, 3.0), Up(1, 3)}));
  ASSERT_NO_FATAL_FAILURE(Flush(h.s));
  uint64_t seq = 0;
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {Up(1, 4), Del(1, 2), DelV(3)}, &seq));
  Snap durable(h.s, true), fresh(h.s);
  EXPECT_EQ(gt_snapshot_seq(durable.s), seq - 1);
  EXPECT_EQ(gt_snapshot_seq(fresh.s), seq);
  ASSERT_NO_FATAL_FAILURE(CheckNeighbors(durable.s, GT_OUT, 1, {{2, 3.0}, {3, 1.0}}));
  ASSERT_NO_FATAL_FAILURE(CheckNeighbors(fresh.s, GT_OUT, 1, {{4, 1.0}}));
  // It keeps its state while the newer data is flushed and compacted.
  ASSERT_NO_FATAL_FAILURE(Flush(h.s));
  ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
  ASSERT_NO_FATAL_FAILURE(CheckNeighbors(durable.s, GT_OUT, 1, {{2, 3.0}, {3, 1.0}}));
  ASSERT_NO_FATAL_FAILURE(CheckNeighbors(durable.s, GT_IN, 3, {{1, 1.0}}));
  Snap later(h.s, true);
  EXPECT_EQ(gt_snapshot_seq(later.s), seq);
  ASSERT_NO_FATAL_FAILURE(CheckNeighbors(later.s, GT_OUT, 1, {{4, 1.0}}));
}

TEST(StoreApiTest, GatherContract) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.in_edges = 0;
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {Up(1, 2), Up(1, 3), Up(1, 4), Up(5, 6)}));
  Snap snap(h.s);
  std::vector<uint64_t> vs = {5, 1, 99, 5};
  std::vector<uint64_t> offs(5, 0), dsts(8, 0);
  size_t done = 0, ne = 0;
  Err err;
  ASSERT_EQ(gt_snapshot_gather(snap.s, vs.data(), vs.size(), GT_OUT, offs.data(), dsts.data(), nullptr, dsts.size(),
                               &done, &ne, err.get()),
            GT_OK)
      << err.msg();
  EXPECT_EQ(done, 4u);
  EXPECT_EQ(ne, 5u);
  EXPECT_EQ(offs, (std::vector<uint64_t>{0, 1, 4, 4, 5}));
  EXPECT_EQ(std::vector<uint64_t>(dsts.begin(), dsts.begin() + 5), (std::vector<uint64_t>{6, 2, 3, 4, 6}));
  // Room for vertex 5 and not for vertex 1 after it: stops after one.
  ASSERT_EQ(gt_snapshot_gather(snap.s, vs.data(), vs.size(), GT_OUT, offs.data(), dsts.data(), nullptr, 2, &done, &ne,
                               err.get()),
            GT_OK);
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(ne, 1u);
  // The first vertex alone does not fit: GT_ERR_BUFFER with its count.
  ASSERT_EQ(
      gt_snapshot_gather(snap.s, vs.data() + 1, 1, GT_OUT, offs.data(), dsts.data(), nullptr, 2, &done, &ne, err.get()),
      GT_ERR_BUFFER);
  EXPECT_EQ(done, 0u);
  EXPECT_EQ(ne, 3u);
  EXPECT_NE(err.e.message, nullptr);
  err.Reset();
  // No vertices: nothing to do.
  ASSERT_EQ(gt_snapshot_gather(snap.s, nullptr, 0, GT_OUT, offs.data(), dsts.data(), nullptr, 0, &done, &ne, err.get()),
            GT_OK);
  EXPECT_EQ(done, 0u);
  // In-edges are not kept; a bad direction is rejected.
  EXPECT_EQ(
      gt_snapshot_gather(snap.s, vs.data(), 1, GT_IN, offs.data(), dsts.data(), nullptr, 8, &done, &ne, err.get()),
      GT_ERR_INVALID);
  err.Reset();
  EXPECT_EQ(gt_snapshot_gather(snap.s, vs.data(), 1, 7, offs.data(), dsts.data(), nullptr, 8, &done, &ne, err.get()),
            GT_ERR_INVALID);
  err.Reset();
}

TEST(StoreApiTest, ListFilesMatchesMetricsAndDisk) {
  TempDir dir;
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), SmallOptions(), &h.s));
  size_t n = 99;
  gt_list_files(h.s, nullptr, 0, &n);
  EXPECT_EQ(n, 0u);
  std::mt19937_64 rng(7);
  for (int b = 0; b < 40; b++) {
    std::vector<gt_op> ops;
    for (int i = 0; i < 200; i++) ops.push_back(Up(rng() % 3000, rng() % 3000));
    ASSERT_NO_FATAL_FAILURE(Apply(h.s, ops));
  }
  // Compare once the file set is stable: compact everything first (a
  // background compaction could change it between two calls otherwise).
  ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
  gt_metrics m;
  gt_get_metrics(h.s, &m);
  gt_list_files(h.s, nullptr, 0, &n);
  ASSERT_GT(n, 0u);
  std::vector<gt_file_info> fs(n);
  size_t n2 = 0;
  gt_list_files(h.s, fs.data(), fs.size(), &n2);
  ASSERT_EQ(n2, n);
  uint64_t files[GT_MAX_LEVELS] = {}, bytes[GT_MAX_LEVELS] = {}, entries[GT_MAX_LEVELS] = {};
  std::set<std::string> names;
  for (const gt_file_info &f : fs) {
    ASSERT_LT(f.level, GT_MAX_LEVELS);
    ASSERT_LE(f.dir, 1u);
    EXPECT_LE(f.min_src, f.max_src);
    EXPECT_GT(f.entries, 0u);
    EXPECT_LE(f.min_seq, f.max_seq);
    files[f.level]++;
    bytes[f.level] += f.bytes;
    entries[f.level] += f.entries;
    char name[32];
    std::snprintf(name, sizeof name, "%08llu.seg", static_cast<unsigned long long>(f.id));
    names.insert(dir.path() + "/" + name);
  }
  for (uint32_t i = 0; i < m.num_levels; i++) {
    EXPECT_EQ(files[i], m.levels[i].files) << "level " << i;
    EXPECT_EQ(bytes[i], m.levels[i].bytes) << "level " << i;
    EXPECT_EQ(entries[i], m.levels[i].entries) << "level " << i;
  }
  const auto on_disk = SegmentFiles(dir.path());
  EXPECT_EQ(std::set<std::string>(on_disk.begin(), on_disk.end()), names);
  // A short buffer gets the total count and only what fits.
  gt_file_info one[1];
  gt_list_files(h.s, one, 1, &n2);
  EXPECT_EQ(n2, n);
  EXPECT_EQ(one[0].id, fs[0].id);
}

// A compacted store (one clean level) plus MemGraph data: scans copy the
// level in bulk between the vertices the MemGraph holds and merge those.
TEST(StoreApiTest, ScanMergesMemGraphIntoCleanLevel) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.memgraph_bytes = 8 << 20;  // no flush during the MemGraph phase
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  std::mt19937_64 rng(11);
  Oracle want;
  for (int b = 0; b < 30; b++) {
    std::vector<gt_op> ops;
    for (int i = 0; i < 100; i++) ops.push_back(Up(rng() % 500, rng() % 500, static_cast<double>(rng() % 7)));
    ASSERT_NO_FATAL_FAILURE(Apply(h.s, ops));
    want.Apply(ops);
  }
  ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
  // MemGraph data: updates, deletes of level edges, new vertices inside and
  // past the level's range, and vertices whose every edge goes.
  for (int b = 0; b < 20; b++) {
    std::vector<gt_op> ops;
    for (int i = 0; i < 15; i++) {
      std::pair<uint64_t, uint64_t> e;
      const uint64_t r = rng() % 4;
      if (r == 0 && want.EdgeFrom(rng() % 500, &e))
        ops.push_back(Del(e.first, e.second));
      else if (r == 1 && want.EdgeFrom(rng() % 500, &e))
        ops.push_back(Up(e.first, e.second, 9.5));
      else
        ops.push_back(Up(rng() % 700, rng() % 700, 2.0));
    }
    ASSERT_NO_FATAL_FAILURE(Apply(h.s, ops));
    want.Apply(ops);
    Snap snap(h.s);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, want, rng, true, 4));
  }
  gt_metrics m;
  gt_get_metrics(h.s, &m);
  EXPECT_EQ(m.levels[0].files, 0u) << "the MemGraph phase must not flush";
  EXPECT_GT(m.memgraph_entries, 0u);
}

// gt_flush_async while another flush runs does not wait for it; the flush
// thread serves the request when that flush ends, with no other call.
TEST(StoreApiTest, FlushAsyncRequestsAreServedByThemselves) {
  TempDir dir;
  gt_options o = SmallOptions();
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  std::mt19937_64 rng(5);
  Oracle want;
  uint64_t target = 0;
  for (int round = 0; round < 200; round++) {
    std::vector<gt_op> ops;
    for (int i = 0; i < 50; i++) ops.push_back(Up(rng() % 2000, rng() % 2000, 1.0));
    ASSERT_NO_FATAL_FAILURE(Apply(h.s, ops));
    want.Apply(ops);
    Err err;
    uint64_t t = 0;
    ASSERT_EQ(gt_flush_async(h.s, &t, err.get()), GT_OK) << err.msg();
    EXPECT_GE(t, target);
    target = t;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (gt_durable_seq(h.s) < target && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(gt_durable_seq(h.s), target) << "the last requested flush never happened";
  gt_metrics m;
  gt_get_metrics(h.s, &m);
  EXPECT_EQ(m.durable_seq, gt_durable_seq(h.s));
  EXPECT_EQ(m.background_errors, 0u);
  EXPECT_GT(m.deferred_flushes, 0u) << "no request was made while a flush ran: the test did not test deferral";
  // Everything requested is durable: a reopen without gt_flush keeps it.
  ASSERT_NO_FATAL_FAILURE(Close(&h.s));
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  Snap snap(h.s);
  ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, want, rng, true, 4));
}

TEST(StoreApiTest, CorruptSegmentReported) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.in_edges = 0;
  o.memgraph_bytes = 8 << 20;
  o.target_segment_bytes = 64 << 20;
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  std::vector<gt_op> ops;
  for (uint64_t d = 0; d < 20000; d++) ops.push_back(Up(1, d * 3, 0.5 * static_cast<double>(d)));
  for (uint64_t v = 2; v < 50; v++) ops.push_back(Up(v, v + 1, 2.0));
  ASSERT_NO_FATAL_FAILURE(Apply(s, ops));
  ASSERT_NO_FATAL_FAILURE(CompactAll(s));
  ASSERT_NO_FATAL_FAILURE(Close(&s));
  const std::vector<std::string> files = SegmentFiles(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const std::string seg = files[0];
  const std::string original = gt_test::ReadFile(seg);
  const gt_test::Layout L(original);
  ASSERT_TRUE(L.flags & gt::kFlagWeights);
  ASSERT_GT(L.nchunks, 3u);

  {
    SCOPED_TRACE("header byte");
    gt_test::FlipByte(seg, 40);
    gt_store *s2 = nullptr;
    Err err;
    EXPECT_EQ(gt_open(dir.path().c_str(), &o, &s2, err.get()), GT_ERR_CORRUPTION);
    EXPECT_EQ(err.e.code, GT_ERR_CORRUPTION);
    EXPECT_EQ(err.file(), seg);
    EXPECT_FALSE(err.msg().empty());
    if (s2) gt_close(s2, nullptr);
    gt_test::WriteFile(seg, original);
  }
  {
    SCOPED_TRACE("a data byte (vertex 1's 10000th weight)");
    const uint64_t off = L.w_off + 10000 * 8 + 3;
    const uint64_t chunk = L.Chunk(off);
    ASSERT_GT(chunk, L.Chunk(L.dst_off + 20000 * L.dst_width)) << "vertex 2's dsts must be in another chunk";
    ASSERT_LT(chunk, L.Chunk(L.w_off + 20000 * 8)) << "vertex 2's weights must be in another chunk";
    gt_test::FlipByte(seg, off);
    ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
    Snap snap(s);
    Err err;
    // Vertex 2's edges live in the first chunk: readable.
    uint64_t deg = 0;
    EXPECT_EQ(gt_snapshot_degree(snap.s, 2, GT_OUT, &deg, err.get()), GT_OK) << err.msg();
    std::vector<uint64_t> d(20000);
    std::vector<double> w(20000);
    size_t n = 0;
    EXPECT_EQ(gt_snapshot_neighbors(snap.s, 1, GT_OUT, d.data(), w.data(), d.size(), &n, err.get()), GT_ERR_CORRUPTION);
    EXPECT_EQ(err.file(), seg);
    EXPECT_EQ(L.Chunk(err.e.offset), chunk) << err.e.offset;
    err.Reset();
    EXPECT_EQ(gt_verify_all(s, err.get()), GT_ERR_CORRUPTION);
    EXPECT_EQ(err.file(), seg);
    EXPECT_EQ(L.Chunk(err.e.offset), chunk) << err.e.offset;
    err.Reset();
    std::vector<uint64_t> vids(64), offs(65);
    size_t nv = 0, ne = 0;
    uint64_t next = 0;
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, vids.data(), offs.data(), 64, d.data(), w.data(), d.size(), &nv,
                               &ne, &next, err.get()),
              GT_ERR_CORRUPTION);
    EXPECT_EQ(err.file(), seg);
    snap = Snap();
    Close(&s);
    gt_test::WriteFile(seg, original);
  }
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  Err err;
  EXPECT_EQ(gt_verify_all(s, err.get()), GT_OK) << err.msg();
  Close(&s);
}

// Every batch rewrites all ten edges of one vertex with one weight. Readers
// running during writes, flushes and compactions must always see, per
// vertex, all ten edges with equal weights (batches are atomic and snapshots
// are stable), and a snapshot must read the same twice.
TEST(StoreConcurrencyTest, SnapshotsSeeWholeBatches) {
  TempDir dir;
  gt_options o = SmallOptions();
  StoreHolder holder;  // closes the store on early return, before dir is removed
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  constexpr uint64_t kVerts = 40, kFan = 10;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> reads{0};
  auto reader = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> d(kFan * 4);
    std::vector<double> w(kFan * 4);
    while (!stop.load()) {
      gt_snapshot *snap = nullptr;
      Err err;
      if (gt_snapshot_new(s, &snap, err.get()) != GT_OK) {
        bad++;
        return;
      }
      for (int k = 0; k < 8; k++) {
        const uint64_t v = rng() % kVerts;
        std::vector<std::pair<uint64_t, double>> first;
        for (int pass = 0; pass < 2; pass++) {
          size_t n = 0;
          Err e;
          if (gt_snapshot_neighbors(snap, v, GT_OUT, d.data(), w.data(), d.size(), &n, e.get()) != GT_OK) {
            bad++;
            continue;
          }
          std::vector<std::pair<uint64_t, double>> got;
          for (size_t i = 0; i < n; i++) got.emplace_back(d[i], w[i]);
          if (n != 0 && n != kFan) bad++;
          for (size_t i = 1; i < n; i++)
            if (w[i] != w[0]) bad++;
          if (pass == 0)
            first = got;
          else if (got != first)
            bad++;
        }
      }
      gt_snapshot_release(snap);
      reads++;
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  std::mt19937_64 rng(9);
  for (int b = 0; b < 400; b++) {
    const uint64_t v = rng() % kVerts;
    std::vector<gt_op> ops;
    if (rng() % 10 == 0) {
      ops.push_back(DelV(v));
    } else {
      for (uint64_t k = 0; k < kFan; k++) ops.push_back(Up(v, 1000 + k, static_cast<double>(b)));
    }
    Apply(s, ops);
    if (b % 20 == 19) Flush(s);
    if (b % 100 == 99) CompactAll(s);
  }
  // Let the readers overlap with at least some background work.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (reads.load() < 50 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop.store(true);
  r1.join();
  r2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0u);
  Close(&s);
}

// One writer applies batches of upserts (a quarter of them to two hubs,
// whose version arrays keep growing), edge deletes and vertex deletes, with
// ids dense from 0, far past a MemGraph's presence bitmap, in the high band
// and near GT_MAX_VERTEX, to a store whose MemGraphs hold thousands of
// vertices (so their hash tables, slot chunks and version arrays grow while
// readers read them) and fill, flush and compact as it goes. Readers
// meanwhile take snapshots and read each one whole, in small pages, out and
// in, twice, plus the hubs' neighbors by gather and by neighbors. Afterwards
// every snapshot's edge set must equal the oracle's after the batch of the
// snapshot's seq (its digest, out and in), both passes must agree, and
// each page must list each vertex once, sorted (ScanAll).
TEST(StoreConcurrencyTest, ReadersMatchOracleWhileWriting) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.memgraph_bytes = 1 << 20;  // bitmap cap: 2^19 ids per band
  o.target_segment_bytes = 64 << 10;
  StoreHolder holder;
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &s));
  const uint64_t kHubs[2] = {7, GT_HIGH_ID_BASE + 3};
  const uint64_t seed = std::getenv("GT_TEST_SEED") ? std::strtoull(std::getenv("GT_TEST_SEED"), nullptr, 10) : 11;
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));

  struct Seen {
    uint64_t seq;
    Digest out, in;
  };
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::vector<std::vector<Seen>> seen(2);
  auto reader = [&](int id) {
    std::mt19937_64 rng(seed * 31 + id);
    while (!stop.load()) {
      Snap snap(s);
      if (snap.s == nullptr) return;
      const uint64_t seq = gt_snapshot_seq(snap.s);
      Adj first[2];
      for (int pass = 0; pass < 2; pass++) {
        Digest d[2];
        for (uint32_t dir : {GT_OUT, GT_IN}) {
          Adj a;
          ScanAll(snap.s, dir, 0, GT_MAX_VERTEX + 1, 1 + rng() % 256, 1 + rng() % 1024, &a);
          for (const auto &kv : a)
            for (const auto &e : kv.second) {
              d[dir].sum +=
                  dir == GT_OUT ? EdgeHash(kv.first, e.first, e.second) : EdgeHash(e.first, kv.first, e.second);
              d[dir].edges++;
            }
          if (pass == 0) {
            first[dir] = std::move(a);
          } else if (a != first[dir]) {
            ADD_FAILURE() << "snapshot " << seq << " dir " << dir << " read differently twice";
          }
        }
        if (pass == 0) seen[id].push_back(Seen{seq, d[GT_OUT], d[GT_IN]});
        // The hubs, gathered and one by one, as the scan saw them.
        ASSERT_NO_FATAL_FAILURE(CheckGather(snap.s, GT_OUT, {kHubs[0], kHubs[1], 1}, 1 + rng() % 64, first[GT_OUT]));
        for (uint64_t h : kHubs) {
          auto it = first[GT_OUT].find(h);
          ASSERT_NO_FATAL_FAILURE(
              CheckNeighbors(snap.s, GT_OUT, h, it == first[GT_OUT].end() ? EdgeList{} : it->second));
        }
      }
      reads++;
    }
  };
  std::thread r0(reader, 0), r1(reader, 1);

  std::mt19937_64 rng(seed);
  auto id = [&]() -> uint64_t {
    switch (rng() % 8) {
      case 0:
        return 1000000000 + rng() % 200;  // low band, past the bitmap
      case 1:
        return GT_HIGH_ID_BASE + rng() % 500;  // high band
      case 2:
        return GT_MAX_VERTEX - rng() % 50;  // high band, far
      default:
        return rng() % 3000;  // low band, dense
    }
  };
  Oracle oracle;
  std::vector<Digest> want(1);  // want[seq]: the digest after batch seq
  const int kBatches = 3000;
  for (int b = 1; b <= kBatches; b++) {
    std::vector<gt_op> ops;
    for (int k = 0; k < 40; k++) {
      const uint64_t r = rng() % 100;
      std::pair<uint64_t, uint64_t> e;
      if (r < 25) {
        ops.push_back(Up(kHubs[rng() % 2], id(), static_cast<double>(b)));
      } else if (r < 40 && oracle.EdgeFrom(id(), &e)) {
        ops.push_back(Del(e.first, e.second));
      } else if (r == 40) {
        ops.push_back(DelV(rng() % 50 == 0 ? kHubs[rng() % 2] : id()));
      } else {
        ops.push_back(Up(id(), id(), static_cast<double>(b)));
      }
    }
    uint64_t seq = 0;
    ASSERT_NO_FATAL_FAILURE(Apply(s, ops, &seq));
    ASSERT_EQ(seq, static_cast<uint64_t>(b));
    oracle.Apply(ops);
    want.push_back(oracle.digest());
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (reads.load() < 4 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop.store(true);
  r0.join();
  r1.join();

  size_t checked = 0, mid = 0;
  for (const auto &v : seen)
    for (const Seen &x : v) {
      ASSERT_LT(x.seq, want.size());
      EXPECT_TRUE(x.out == want[x.seq]) << "out-edges of snapshot " << x.seq << ": " << x.out.edges << " edges, want "
                                        << want[x.seq].edges;
      EXPECT_TRUE(x.in == want[x.seq]) << "in-edges of snapshot " << x.seq << ": " << x.in.edges << " edges, want "
                                       << want[x.seq].edges;
      checked++;
      if (x.seq > 0 && x.seq < static_cast<uint64_t>(kBatches)) mid++;
    }
  EXPECT_GT(mid, 0u) << "no snapshot was read while the writer ran";
  gt_metrics m;
  gt_get_metrics(s, &m);
  EXPECT_GT(m.flushes, 0u) << "the MemGraphs never filled: the test read no flush";
  RecordProperty("snapshots_checked", static_cast<int>(checked));
  Close(&s);
}

}  // namespace
