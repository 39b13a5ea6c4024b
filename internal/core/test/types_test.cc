// types_test.cc -- edge types and event times through the whole core: an
// edge is (src, dst, type), and each version keeps its event time; random
// batches of typed, timed upserts, deletes and vertex deletes, with
// flushes, compactions, pinned snapshots and reopens, checked after each
// step against a std::map oracle of (src, dst, type) -> (weight, time), through
// every read of the C API (degree, neighbors, paged neighbors, scan,
// gather), in both directions, with several type filters. Also: a store of
// one type writes no type column, a segment of format version 1 (before
// types) reads as type 0, and ops with a bad type are refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common.h"
#include "store_test_util.h"

namespace {

using gt_store_test::Err;
using gt_store_test::Snap;
using gt_store_test::StoreHolder;
using gt_store_test::TempDir;

// (neighbor, type, weight), in the core's order: neighbor asc, type desc.
struct TEdge {
  uint64_t n;
  uint32_t t;
  double w;
  int64_t tm = 0;  // event time, 0: none
  bool operator==(const TEdge &o) const { return n == o.n && t == o.t && w == o.w && tm == o.tm; }
};
using TList = std::vector<TEdge>;
using TAdj = std::map<uint64_t, TList>;

std::string Str(const TList &l) {
  std::string s = "[";
  for (size_t i = 0; i < l.size() && i < 30; i++)
    s += (i ? " " : "") + std::to_string(l[i].n) + "/" + std::to_string(l[i].t) + ":" + std::to_string(l[i].w) + "@" +
         std::to_string(l[i].tm);
  return s + (l.size() > 30 ? " ...]" : "]");
}

gt_type_set Set(std::initializer_list<uint32_t> ts) {
  gt_type_set s;
  std::memset(&s, 0, sizeof s);
  for (uint32_t t : ts) s.bits[t / 64] |= uint64_t{1} << (t % 64);
  return s;
}
bool In(const gt_type_set *s, uint32_t t) { return s == nullptr || ((s->bits[t / 64] >> (t % 64)) & 1) != 0; }

class TypedOracle {
 public:
  void Apply(const std::vector<gt_op> &ops) {
    for (const gt_op &op : ops) {
      switch (op.kind) {
        case GT_OP_UPSERT:
          e_[{op.src, op.dst, op.type}] = {op.weight, op.time};
          break;
        case GT_OP_DELETE_EDGE:
          e_.erase({op.src, op.dst, op.type});
          break;
        case GT_OP_DELETE_VERTEX:
          for (auto it = e_.begin(); it != e_.end();)
            it = std::get<0>(it->first) == op.src || std::get<1>(it->first) == op.src ? e_.erase(it) : std::next(it);
          break;
      }
    }
  }
  TAdj Adjacency(uint32_t dir, const gt_type_set *ts) const {
    TAdj a;
    for (const auto &kv : e_) {
      const auto &[s, d, t] = kv.first;
      if (!In(ts, t)) continue;
      if (dir == GT_OUT)
        a[s].push_back({d, t, kv.second.first, kv.second.second});
      else
        a[d].push_back({s, t, kv.second.first, kv.second.second});
    }
    for (auto &kv : a)
      std::sort(kv.second.begin(), kv.second.end(),
                [](const TEdge &x, const TEdge &y) { return x.n != y.n ? x.n < y.n : x.t > y.t; });
    return a;
  }

 private:
  std::map<std::tuple<uint64_t, uint64_t, uint32_t>, std::pair<double, int64_t>> e_;
};

// Every read of snap, through ts, in direction dir, against want.
void CheckReads(gt_snapshot *snap, uint32_t dir, const gt_type_set *ts, const TAdj &want, uint64_t maxv,
                const std::string &what) {
  // Scan in small pages.
  TAdj got;
  std::vector<uint64_t> vids(3), offs(4), dsts(7);
  std::vector<double> w(7);
  std::vector<uint16_t> t(7);
  std::vector<int64_t> tms(7);
  for (uint64_t pos = 0; pos <= maxv;) {
    size_t nv = 0, ne = 0;
    uint64_t next = 0;
    Err err;  // one per call: a failed call fills it
    int rc = gt_snapshot_scan(snap, pos, maxv + 1, dir, ts, vids.data(), offs.data(), vids.size(), dsts.data(),
                              w.data(), t.data(), tms.data(), dsts.size(), &nv, &ne, &next, err.get());
    if (rc == GT_ERR_BUFFER) {  // one vertex bigger than the page: grow it
      dsts.resize(ne);
      w.resize(ne);
      t.resize(ne);
      tms.resize(ne);
      continue;
    }
    ASSERT_EQ(rc, GT_OK) << err.msg();
    for (size_t i = 0; i < nv; i++)
      for (uint64_t k = offs[i]; k < offs[i + 1]; k++) got[vids[i]].push_back({dsts[k], t[k], w[k], tms[k]});
    ASSERT_GT(next, pos);
    pos = next;
  }
  for (const auto &kv : want) EXPECT_EQ(Str(got[kv.first]), Str(kv.second)) << what << " scan of vertex " << kv.first;
  for (const auto &kv : got)
    if (!kv.second.empty()) {
      EXPECT_TRUE(want.count(kv.first)) << what << " scan: extra vertex " << kv.first;
    }

  Err err;
  std::vector<uint64_t> all;
  for (uint64_t v = 0; v <= maxv; v++) {
    all.push_back(v);
    auto it = want.find(v);
    const TList empty;
    const TList &wl = it == want.end() ? empty : it->second;
    uint64_t deg = 0;
    ASSERT_EQ(gt_snapshot_degree(snap, v, dir, ts, &deg, err.get()), GT_OK) << err.msg();
    EXPECT_EQ(deg, wl.size()) << what << " degree of " << v;
    std::vector<uint64_t> d(wl.size() + 1);
    std::vector<double> ww(wl.size() + 1);
    std::vector<uint16_t> tt(wl.size() + 1);
    std::vector<int64_t> tmv(wl.size() + 1);
    size_t n = 0;
    ASSERT_EQ(
        gt_snapshot_neighbors(snap, v, dir, ts, d.data(), ww.data(), tt.data(), tmv.data(), d.size(), &n, err.get()),
        GT_OK)
        << err.msg();
    TList nl;
    for (size_t i = 0; i < n; i++) nl.push_back({d[i], tt[i], ww[i], tmv[i]});
    EXPECT_EQ(Str(nl), Str(wl)) << what << " neighbors of " << v;
    // Pages of 2 through the (dst, type) cursor.
    TList paged;
    uint64_t after = 0;
    uint32_t after_t = 0, has_after = 0, more = 1;
    for (int pages = 0; more; pages++) {
      ASSERT_LT(pages, 10000);
      uint64_t pd[2];
      double pw[2];
      uint16_t pt[2];
      int64_t ptm[2];
      size_t pn = 0;
      ASSERT_EQ(gt_snapshot_neighbors_after(snap, v, dir, ts, after, after_t, has_after, pd, pw, pt, ptm, 2, &pn, &more,
                                            err.get()),
                GT_OK)
          << err.msg();
      for (size_t i = 0; i < pn; i++) paged.push_back({pd[i], pt[i], pw[i], ptm[i]});
      if (pn > 0) {
        after = pd[pn - 1];
        after_t = pt[pn - 1];
        has_after = 1;
      }
    }
    EXPECT_EQ(Str(paged), Str(wl)) << what << " paged neighbors of " << v;
    if (dir != GT_OUT) continue;
    // Edge lookups: every dst, present or not (maxv + 1 never is).
    for (uint64_t d = 0; d <= maxv + 1; d++) {
      TList el;
      for (const TEdge &x : wl)
        if (x.n == d) el.push_back(x);
      double lw[GT_MAX_EDGE_TYPES];
      uint16_t lt[GT_MAX_EDGE_TYPES];
      int64_t ltm[GT_MAX_EDGE_TYPES];
      size_t ln = 0;
      ASSERT_EQ(gt_snapshot_edge(snap, v, d, ts, lw, lt, ltm, GT_MAX_EDGE_TYPES, &ln, err.get()), GT_OK) << err.msg();
      TList got_el;
      for (size_t i = 0; i < ln; i++) got_el.push_back({d, lt[i], lw[i], ltm[i]});
      EXPECT_EQ(Str(got_el), Str(el)) << what << " edge lookup " << v << " -> " << d;
      if (el.size() > 1) {  // too small a buffer says so
        ASSERT_EQ(gt_snapshot_edge(snap, v, d, ts, lw, lt, ltm, 1, &ln, err.get()), GT_ERR_BUFFER);
        EXPECT_EQ(ln, el.size());
        err.Reset();  // frees the message of the refusal
      }
    }
  }
  // Gather of every vertex in one call.
  size_t total = 0;
  for (const auto &kv : want) total += kv.second.size();
  std::vector<uint64_t> goffs(all.size() + 1), gd(total + 1);
  std::vector<double> gw(total + 1);
  std::vector<uint16_t> gtys(total + 1);
  std::vector<int64_t> gtm(total + 1);
  size_t done = 0, ne = 0;
  ASSERT_EQ(gt_snapshot_gather(snap, all.data(), all.size(), dir, ts, goffs.data(), gd.data(), gw.data(), gtys.data(),
                               gtm.data(), gd.size(), &done, &ne, err.get()),
            GT_OK)
      << err.msg();
  ASSERT_EQ(done, all.size());
  EXPECT_EQ(ne, total) << what;
  for (size_t i = 0; i < all.size(); i++) {
    TList gl;
    for (uint64_t k = goffs[i]; k < goffs[i + 1]; k++) gl.push_back({gd[k], gtys[k], gw[k], gtm[k]});
    auto it = want.find(all[i]);
    EXPECT_EQ(Str(gl), Str(it == want.end() ? TList{} : it->second)) << what << " gather of " << all[i];
  }
}

const uint32_t kTypes[] = {0, 1, 2, 7, 1023};

void CheckAll(gt_snapshot *snap, const TypedOracle &o, uint64_t maxv, const std::string &what) {
  const gt_type_set only0 = Set({0}), some = Set({1, 7}), rare = Set({2, 1023}), none = Set({});
  const gt_type_set *filters[] = {nullptr, &only0, &some, &rare, &none};
  const char *names[] = {"all", "{0}", "{1,7}", "{2,1023}", "{}"};
  for (uint32_t dir : {GT_OUT, GT_IN})
    for (int f = 0; f < 5; f++)
      CheckReads(snap, dir, filters[f], o.Adjacency(dir, filters[f]), maxv,
                 what + " dir " + std::to_string(dir) + " types " + names[f]);
}

gt_op TOp(uint32_t kind, uint64_t s, uint64_t d, uint32_t t, double w, int64_t tm = 0) {
  gt_op op = gt_store_test::Op(kind, s, d, w);
  op.type = t;
  op.time = tm;
  return op;
}

// A batch of 1 to most operations over vertices [0, maxv]: 70% upserts
// (weights 1 and 2.5), 27% edge deletes, 3% vertex deletes, of the types
// kTypes; half the edge operations have an event time, so that narrow,
// wide and timed versions mix in the MemGraph and in the files.
std::vector<gt_op> RandomTypedOps(std::mt19937_64 &rng, int most, uint64_t maxv) {
  std::vector<gt_op> ops;
  const int n = 1 + static_cast<int>(rng() % static_cast<uint64_t>(most));
  for (int i = 0; i < n; i++) {
    const uint64_t s = rng() % (maxv + 1), d = rng() % (maxv + 1);
    const uint32_t t = kTypes[rng() % 5];
    const uint64_t r = rng() % 100;
    const int64_t tm = rng() % 2 ? 1700000000000000 + static_cast<int64_t>(rng() % 1000000) : 0;
    if (r < 70)
      ops.push_back(TOp(GT_OP_UPSERT, s, d, t, rng() % 3 ? 1.0 : 2.5, tm));
    else if (r < 97)
      ops.push_back(TOp(GT_OP_DELETE_EDGE, s, d, t, 0, tm));
    else
      ops.push_back(TOp(GT_OP_DELETE_VERTEX, s, 0, 0, 0));
  }
  return ops;
}

TEST(TypesTest, RandomTypedBatchesMatchTheOracle) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  std::mt19937_64 rng(gt_store_test::Seed());
  TypedOracle oracle;
  const uint64_t maxv = 40;
  // A pinned snapshot and the oracle as it was then, checked at the end:
  // compaction must keep the versions it reads.
  std::unique_ptr<Snap> pinned;
  TypedOracle at_pin;
  for (int round = 0; round < 60; round++) {
    const std::vector<gt_op> ops = RandomTypedOps(rng, 60, maxv);
    gt_store_test::Apply(h.s, ops);
    oracle.Apply(ops);
    switch (rng() % 8) {
      case 0:
        gt_store_test::Flush(h.s);
        break;
      case 1:
        gt_store_test::CompactAll(h.s);
        break;
      case 2:
        if (!pinned) {
          pinned = std::make_unique<Snap>(h.s);
          at_pin = oracle;
        }
        break;
      case 3: {
        pinned.reset();
        gt_store_test::Flush(h.s);
        gt_store_test::Close(&h.s);
        gt_store_test::Open(dir.path(), o, &h.s);
        break;
      }
      default:
        break;
    }
    if (round % 6 == 5) {
      Snap snap(h.s);
      CheckAll(snap.s, oracle, maxv, "round " + std::to_string(round));
      if (::testing::Test::HasFailure()) return;
    }
  }
  if (pinned) CheckAll(pinned->s, at_pin, maxv, "pinned snapshot");
  pinned.reset();
  gt_store_test::CompactAll(h.s);
  Snap snap(h.s);
  CheckAll(snap.s, oracle, maxv, "after the last compaction");
}

// The flags of every live file.
std::vector<uint32_t> FileFlags(gt_store *s) {
  size_t n = 0;
  gt_list_files(s, nullptr, 0, &n);
  std::vector<gt_file_info> fs(n);
  gt_list_files(s, fs.data(), fs.size(), &n);
  std::vector<uint32_t> out;
  for (const auto &f : fs) out.push_back(f.flags);
  return out;
}

TEST(TypesTest, OnlyAStoreWithTypesPaysForThem) {
  TempDir dir;
  StoreHolder h;
  gt_store_test::Open(dir.path(), gt_store_test::SmallOptions(), &h.s);
  gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 1, 2, 0, 1.0), TOp(GT_OP_UPSERT, 2, 3, 0, 1.0)});
  gt_store_test::CompactAll(h.s);
  for (uint32_t f : FileFlags(h.s)) {
    EXPECT_EQ(f & GT_FILE_TYPES, 0u) << "a one-type store wrote a type column";
    EXPECT_EQ(f & GT_FILE_TIMES, 0u) << "a store without event times wrote a time column";
  }
  gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 1, 2, 3, 1.0)});
  gt_store_test::CompactAll(h.s);
  bool any = false;
  for (uint32_t f : FileFlags(h.s)) any = any || (f & GT_FILE_TYPES) != 0;
  EXPECT_TRUE(any) << "a second type must be stored";
  // Both edges between 1 and 2 are there, by type.
  Snap snap(h.s);
  Err err;
  uint64_t d[4];
  uint16_t t[4];
  size_t n = 0;
  ASSERT_EQ(gt_snapshot_neighbors(snap.s, 1, GT_OUT, nullptr, d, nullptr, t, nullptr, 4, &n, err.get()), GT_OK);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(d[0], 2u);
  EXPECT_EQ(t[0], 3u);
  EXPECT_EQ(d[1], 2u);
  EXPECT_EQ(t[1], 0u);
}

TEST(TypesTest, BadTypesAreRefused) {
  TempDir dir;
  StoreHolder h;
  gt_store_test::Open(dir.path(), gt_store_test::SmallOptions(), &h.s);
  Err e1, e2;
  uint64_t seq;
  gt_op big = TOp(GT_OP_UPSERT, 1, 2, GT_MAX_EDGE_TYPES, 1.0);
  EXPECT_EQ(gt_apply(h.s, &big, 1, nullptr, 0, &seq, e1.get()), GT_ERR_INVALID);
  EXPECT_NE(e1.msg().find("edge type 1024 out of range"), std::string::npos) << e1.msg();
  gt_op vdel = TOp(GT_OP_DELETE_VERTEX, 1, 0, 4, 0);
  EXPECT_EQ(gt_apply(h.s, &vdel, 1, nullptr, 0, &seq, e2.get()), GT_ERR_INVALID);
  EXPECT_NE(e2.msg().find("every type"), std::string::npos) << e2.msg();
  Err e3;
  gt_op past = TOp(GT_OP_UPSERT, 1, 2, 0, 1.0, -5);
  EXPECT_EQ(gt_apply(h.s, &past, 1, nullptr, 0, &seq, e3.get()), GT_ERR_INVALID);
  EXPECT_NE(e3.msg().find("negative"), std::string::npos) << e3.msg();
}

// The newest seq of s and the oldest one a snapshot can pin.
std::pair<uint64_t, uint64_t> Seqs(gt_store *s) {
  gt_metrics m;
  gt_get_metrics(s, &m);
  return {m.last_seq, m.oldest_readable_seq};
}

// History: random typed batches (deletes and vertex deletes among them)
// with flushes, compactions and reopens; snapshots at past seqs within the
// retention read exactly what the oracle held at that seq, with every
// read, and seqs outside it are refused, naming the oldest readable one.
TEST(HistoryVolumeTest, ReadsAsOfEveryRetainedSeqMatchTheOracle) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  o.keep_history = 1;
  o.history_seqs = 25;
  StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  std::mt19937_64 rng(gt_store_test::Seed());
  const uint64_t maxv = 30;
  TypedOracle oracle;
  std::map<uint64_t, TypedOracle> at;  // the oracle as of each seq
  at[0] = oracle;
  int checked = 0;
  // Past the retention of 25 seqs many times over, either way.
  const int rounds = gt_test::Volume(90, 40);
  for (int round = 0; round < rounds; round++) {
    const std::vector<gt_op> ops = RandomTypedOps(rng, 30, maxv);
    gt_store_test::Apply(h.s, ops);
    oracle.Apply(ops);
    at[Seqs(h.s).first] = oracle;
    switch (rng() % 6) {
      case 0:
        gt_store_test::Flush(h.s);
        break;
      case 1:
        gt_store_test::CompactAll(h.s);
        break;
      case 2:
        if (round % 4 == 0) {  // a reopen: everything flushed keeps its seqs
          gt_store_test::Flush(h.s);
          gt_store_test::Close(&h.s);
          gt_store_test::Open(dir.path(), o, &h.s);
        }
        break;
      default:
        break;
    }
    const auto [last, oldest] = Seqs(h.s);
    EXPECT_EQ(oldest, last > o.history_seqs ? last - o.history_seqs : 0) << "round " << round;
    for (int k = 0; k < 3; k++) {
      const uint64_t seq = oldest + rng() % (last - oldest + 1);
      gt_snapshot *sn = nullptr;
      Err err;
      ASSERT_EQ(gt_snapshot_new_at(h.s, seq, &sn, err.get()), GT_OK) << err.msg();
      // The oracle of the newest batch at or below seq (a reopen's seqs
      // continue from the durable one).
      auto it = at.upper_bound(seq);
      --it;
      CheckAll(sn, it->second, maxv, "round " + std::to_string(round) + " as of seq " + std::to_string(seq));
      gt_snapshot_release(sn);
      checked++;
      if (::testing::Test::HasFailure()) return;
    }
    Err err;
    gt_snapshot *sn = nullptr;
    if (oldest > 0) {
      EXPECT_EQ(gt_snapshot_new_at(h.s, oldest - 1, &sn, err.get()), GT_ERR_INVALID);
      EXPECT_NE(err.msg().find("older than the oldest readable one, " + std::to_string(oldest)), std::string::npos)
          << err.msg();
      err.Reset();
    }
    EXPECT_EQ(gt_snapshot_new_at(h.s, last + 1, &sn, err.get()), GT_ERR_INVALID);
    EXPECT_NE(err.msg().find("the newest is " + std::to_string(last)), std::string::npos) << err.msg();
  }
  EXPECT_EQ(checked, 3 * rounds);
  // Reopened with a longer retention, the history floor is the one the
  // files were written with: what they dropped below it stays unreadable.
  gt_store_test::Flush(h.s);
  gt_store_test::CompactAll(h.s);
  const uint64_t was_oldest = Seqs(h.s).second;
  gt_store_test::Close(&h.s);
  o.history_seqs = 1000;
  gt_store_test::Open(dir.path(), o, &h.s);
  const auto [last, oldest] = Seqs(h.s);
  EXPECT_EQ(oldest, was_oldest) << "last " << last;
  gt_snapshot *sn = nullptr;
  Err err;
  ASSERT_EQ(gt_snapshot_new_at(h.s, oldest, &sn, err.get()), GT_OK) << err.msg();
  auto it = at.upper_bound(oldest);
  --it;
  CheckAll(sn, it->second, maxv, "reopened, as of the oldest readable seq");
  gt_snapshot_release(sn);
  EXPECT_EQ(gt_snapshot_new_at(h.s, oldest - 1, &sn, err.get()), GT_ERR_INVALID);
}

// v's out-neighbors in sn, as "d,d,...".
std::string OutOf(gt_snapshot *sn, uint64_t v) {
  uint64_t d[64];
  double w[64];
  size_t n = 0;
  Err err;
  EXPECT_EQ(gt_snapshot_neighbors(sn, v, GT_OUT, nullptr, d, w, nullptr, nullptr, 64, &n, err.get()), GT_OK)
      << err.msg();
  std::string s;
  for (size_t i = 0; i < n; i++) s += (i ? "," : "") + std::to_string(d[i]);
  return s;
}

// A store written without history, reopened with it: its files may have
// dropped any version below the durable seq (a bottommost compaction
// zeroes seqs and drops tombstones), so that is the floor; nothing older
// is readable. (A review found the floor restored as the files' max_seq,
// 0 here, and seq 1 read as {3}.)
TEST(HistoryTest, ReopenWithHistoryOverFilesWrittenWithoutIt) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 1, 2, 0, 1.0)});     // seq 1
  gt_store_test::Apply(h.s, {TOp(GT_OP_DELETE_EDGE, 1, 2, 0, 0)});  // seq 2
  gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 1, 3, 0, 1.0)});     // seq 3
  gt_store_test::CompactAll(h.s);
  gt_store_test::Close(&h.s);
  o.keep_history = 1;
  gt_store_test::Open(dir.path(), o, &h.s);
  const auto [last, oldest] = Seqs(h.s);
  EXPECT_EQ(last, 3u);
  EXPECT_EQ(oldest, 3u);
  gt_snapshot *sn = nullptr;
  Err err;
  EXPECT_EQ(gt_snapshot_new_at(h.s, 1, &sn, err.get()), GT_ERR_INVALID);
  err.Reset();
  ASSERT_EQ(gt_snapshot_new_at(h.s, 3, &sn, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(OutOf(sn, 1), "3");
  gt_snapshot_release(sn);
}

void FloorKeptWithManifestRewrites(uint64_t rewrite);

// The floor a compaction used is kept by the manifest even when the
// compaction wrote no file to record it in (everything at or below the
// floor was a tombstone). (A review found it lost by a reopen.)
TEST(HistoryTest, FloorKeptWhenACompactionWritesNoFile) {
  for (uint64_t rewrite : {uint64_t{0}, uint64_t{1}}) {  // 1: the MANIFEST is rewritten after every edit
    SCOPED_TRACE("manifest rewrite bound " + std::to_string(rewrite));
    FloorKeptWithManifestRewrites(rewrite);
  }
}

void FloorKeptWithManifestRewrites(uint64_t rewrite) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  o.keep_history = 1;
  o.test_manifest_rewrite_bytes = rewrite;
  StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 1, 2, 0, 1.0)});     // seq 1
  gt_store_test::Apply(h.s, {TOp(GT_OP_DELETE_EDGE, 1, 2, 0, 0)});  // seq 2
  gt_store_test::Flush(h.s);
  Err err;
  ASSERT_EQ(gt_set_history_floor(h.s, 2, err.get()), GT_OK);
  gt_store_test::CompactAll(h.s);
  EXPECT_EQ(Seqs(h.s).second, 2u);
  for (uint64_t i = 0; i < 20; i++) {  // later edits, and with rewrites a snapshot record over the compaction's
    gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 5 + i, 6, 0, 1.0)});
    gt_store_test::Flush(h.s);
  }
  if (rewrite != 0) {
    gt_metrics m;
    gt_get_metrics(h.s, &m);
    EXPECT_GT(m.manifest_rewrites, 0u);
  }
  gt_store_test::Close(&h.s);
  gt_store_test::Open(dir.path(), o, &h.s);
  EXPECT_EQ(Seqs(h.s).second, 2u) << "the floor went back after a reopen";
  gt_snapshot *sn = nullptr;
  EXPECT_EQ(gt_snapshot_new_at(h.s, 1, &sn, err.get()), GT_ERR_INVALID);
}

// The floor follows the newest seq (history_seqs), which runs ahead of the
// durable one; a compaction records it, and a reopen (no flush at close)
// goes back to the durable seq: the floor is capped there, so the newest
// seq stays readable. (A review found the floor above it after a reopen.)
TEST(HistoryTest, FloorNotAboveTheNewestSeqAfterAReopen) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  o.keep_history = 1;
  o.history_seqs = 1;
  o.disable_auto_compaction = 1;
  o.memgraph_bytes = 8 << 20;  // no automatic flush during the compaction
  StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  std::mt19937_64 rng(7);
  auto batch = [&] {
    std::vector<gt_op> ops;
    for (int k = 0; k < 4; k++) ops.push_back(TOp(GT_OP_UPSERT, rng() % 5000, rng() % 5000, 0, 1.0));
    gt_store_test::Apply(h.s, ops);
  };
  for (int f = 0; f < 3; f++) {
    for (int i = 0; i < 3000; i++) batch();
    gt_store_test::Flush(h.s);
  }
  std::atomic<bool> done{false};
  std::thread t([&] {
    Err err;
    EXPECT_EQ(gt_compact_all(h.s, err.get()), GT_OK) << err.msg();
    done = true;
  });
  while (!done) batch();  // writes beside the compaction, never flushed
  t.join();
  gt_store_test::Close(&h.s);
  gt_store_test::Open(dir.path(), o, &h.s);
  const auto [last, oldest] = Seqs(h.s);
  EXPECT_LE(oldest, last);
  gt_snapshot *sn = nullptr;
  Err err;
  EXPECT_EQ(gt_snapshot_new_at(h.s, last, &sn, err.get()), GT_OK) << err.msg();
  if (sn) gt_snapshot_release(sn);
}

// Without history only the newest seq is readable, and a past one is
// refused saying why; the history floor cannot be set.
TEST(HistoryTest, WithoutHistoryOnlyTheNewestSeqIsReadable) {
  TempDir dir;
  StoreHolder h;
  gt_store_test::Open(dir.path(), gt_store_test::SmallOptions(), &h.s);
  gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 1, 2, 0, 1)});
  gt_store_test::Apply(h.s, {TOp(GT_OP_UPSERT, 1, 3, 0, 1)});
  const auto [last, oldest] = Seqs(h.s);
  EXPECT_EQ(oldest, last);
  gt_snapshot *sn = nullptr;
  Err err;
  ASSERT_EQ(gt_snapshot_new_at(h.s, last, &sn, err.get()), GT_OK) << err.msg();
  gt_snapshot_release(sn);
  EXPECT_EQ(gt_snapshot_new_at(h.s, last - 1, &sn, err.get()), GT_ERR_INVALID);
  EXPECT_NE(err.msg().find("keeps no history"), std::string::npos) << err.msg();
  err.Reset();
  EXPECT_EQ(gt_set_history_floor(h.s, 1, err.get()), GT_ERR_INVALID);
}

// Files of format version 2 (before edge filters), as an older build wrote
// them: every read, lookups included, as from new files; compaction then
// writes files with filters that read the same.
TEST(TypesTest, FormatVersionTwoReadsWithoutEdgeFilters) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  o.test_segment_format = 2;
  StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  std::mt19937_64 rng(gt_store_test::Seed());
  TypedOracle oracle;
  std::vector<gt_op> ops;
  for (int i = 0; i < 400; i++)
    ops.push_back(TOp(GT_OP_UPSERT, rng() % 30, rng() % 30, kTypes[rng() % 5], 1.0 + double(rng() % 4)));
  gt_store_test::Apply(h.s, ops);
  oracle.Apply(ops);
  gt_store_test::CompactAll(h.s);
  for (uint32_t f : FileFlags(h.s)) EXPECT_EQ(f & GT_FILE_BLOOM, 0u) << "a version 2 file has a filter";
  gt_store_test::Close(&h.s);
  o.test_segment_format = 0;
  gt_store_test::Open(dir.path(), o, &h.s);
  {
    Snap snap(h.s);
    CheckAll(snap.s, oracle, 30, "version 2 files");
  }
  ops.clear();
  for (int i = 0; i < 100; i++) ops.push_back(TOp(GT_OP_DELETE_EDGE, rng() % 30, rng() % 30, kTypes[rng() % 5], 0));
  gt_store_test::Apply(h.s, ops);
  oracle.Apply(ops);
  gt_store_test::Flush(h.s);  // an L0 file with a filter over the version 2 ones
  bool filtered = false;
  for (uint32_t f : FileFlags(h.s)) filtered = filtered || (f & GT_FILE_BLOOM) != 0;
  EXPECT_TRUE(filtered) << "the flush wrote no file with an edge filter";
  {
    Snap snap(h.s);
    CheckAll(snap.s, oracle, 30, "a version 3 file over version 2 ones");
  }
  gt_store_test::CompactAll(h.s);
  // All of it in the bottommost level now, whose files have no filter.
  for (uint32_t f : FileFlags(h.s)) EXPECT_EQ(f & GT_FILE_BLOOM, 0u) << "a bottommost file has a filter";
  Snap snap(h.s);
  CheckAll(snap.s, oracle, 30, "compacted into version 3 files");
}

// A segment written before edge types (format version 1: no type column,
// 0 in the type range) reads as a file whose every edge has type 0.
TEST(TypesTest, FormatVersionOneReadsAsTypeZero) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  o.test_segment_format = 2;  // version 1 is version 2 without types
  StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  TypedOracle oracle;
  std::vector<gt_op> ops;
  for (uint64_t s = 0; s < 20; s++)
    for (uint64_t d = 0; d < 20; d += 1 + s % 3) ops.push_back(TOp(GT_OP_UPSERT, s, d, 0, 1.0 + double(s + d)));
  gt_store_test::Apply(h.s, ops);
  oracle.Apply(ops);
  gt_store_test::CompactAll(h.s);
  gt_store_test::Close(&h.s);
  const std::vector<std::string> segs = gt_store_test::SegmentFiles(dir.path());
  ASSERT_FALSE(segs.empty());
  for (const std::string &name : segs) {
    const std::string &path = name;  // SegmentFiles gives whole paths
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t hdr[128];
    ASSERT_EQ(::pread(fd, hdr, sizeof hdr, 0), 128);
    uint32_t version = 1;
    std::memcpy(hdr + 8, &version, 4);
    const uint32_t crc = gt::Crc32c(hdr, 124);
    std::memcpy(hdr + 124, &crc, 4);
    ASSERT_EQ(::pwrite(fd, hdr, sizeof hdr, 0), 128);
    ::close(fd);
  }
  o.test_segment_format = 0;
  gt_store_test::Open(dir.path(), o, &h.s);
  Snap snap(h.s);
  const gt_type_set only0 = Set({0}), other = Set({1});
  CheckReads(snap.s, GT_OUT, nullptr, oracle.Adjacency(GT_OUT, nullptr), 20, "version 1, all types");
  CheckReads(snap.s, GT_IN, &only0, oracle.Adjacency(GT_IN, &only0), 20, "version 1, type 0");
  CheckReads(snap.s, GT_OUT, &other, TAdj{}, 20, "version 1, type 1");
}

}  // namespace
