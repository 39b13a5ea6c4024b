// memgraph_test.cc -- MemGraph::VerticesFrom against a brute-force sorted
// set, active (presence bitmaps per id band, probing past them) and frozen
// (sorted index), for ids in both bands, near and far from each band's base.
// MemGraph::Collect, AddRuns and ForEachSorted against an oracle (a std::map of every
// version in run order) with small hub thresholds, so that reads publish,
// merge and replace hub caches many times, both alone and with readers
// racing the writer. Apply's shards and helper thread against the same
// oracle: batches with bursts of ops of one vertex, repeated edges and
// vertex deletes (with the skip vector the store computes), applied in
// parallel (every batch split) and on the caller alone.
#include "memgraph.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace {

gt_op Up(uint64_t s, uint64_t d) {
  gt_op op;
  std::memset(&op, 0, sizeof op);
  op.src = s;
  op.dst = d;
  op.weight = 1;
  op.kind = GT_OP_UPSERT;
  return op;
}

// Lists the vertices of [lo, hi) through VerticesFrom, following resume.
std::vector<uint64_t> List(const gt::MemGraph &m, int dir, uint64_t lo, uint64_t hi, size_t max) {
  std::vector<uint64_t> out;
  for (uint64_t pos = lo; pos < hi;) {
    std::vector<uint64_t> page;
    uint64_t resume = 0;
    m.VerticesFrom(dir, pos, hi, UINT64_MAX, max, &page, &resume);
    EXPECT_GT(resume, pos) << "no progress at " << pos;
    if (resume <= pos) break;
    for (uint64_t v : page) {
      EXPECT_GE(v, pos);
      EXPECT_LT(v, resume);
    }
    out.insert(out.end(), page.begin(), page.end());
    pos = resume;
  }
  return out;
}

TEST(MemGraphTest, VerticesFromMatchesBruteForce) {
  std::mt19937_64 rng(3);
  const uint64_t kHigh = GT_HIGH_ID_BASE;
  auto id = [&]() -> uint64_t {
    switch (rng() % 11) {
      case 0:
        return rng() % 5000;  // low band, bitmap
      case 1:
        return (uint64_t(1) << 27) + rng() % 50;  // low band, past the bitmap
      case 6:
        return (uint64_t(1) << 26) - 1 - rng() % 3;  // the bitmap's last word: it grows to its cap
      case 7:
        return (uint64_t(1) << 26) + rng() % 3;  // just past the cap
      case 2:
        return kHigh - 1 - rng() % 3;  // the top of the low band
      case 3:
        return kHigh + rng() % 3000;  // high band, bitmap
      case 4:
        return GT_MAX_VERTEX - rng() % 40;  // high band, far
      case 5:
        return (rng() % 2 ? 38400000 : 40000000) + rng() % 3;  // growth here would double past 2^26
      case 8:
        return (rng() % 2 ? 20000000 : 25000000) + rng() % 3;  // ... and past the cap of a 64 MiB MemGraph (2^25)
      case 9:
        return (uint64_t(1) << 25) - 1 + rng() % 3;  // either side of that cap
      case 10:
        return 500000 + rng() % 40000;  // either side of a 1 MiB MemGraph's cap (2^19)
      default:
        return rng() % 64;
    }
  };
  for (uint64_t limit : {uint64_t(64) << 20, uint64_t(1) << 20}) {
    SCOPED_TRACE("MemGraph of " + std::to_string(limit) + " bytes");
    gt::MemGraph m(true, limit);
    std::set<uint64_t> srcs, dsts;
    std::vector<gt_op> ops;
    for (int i = 0; i < 4000; i++) {
      gt_op op = Up(id(), id());
      srcs.insert(op.src);
      dsts.insert(op.dst);
      ops.push_back(op);
    }
    m.Apply(ops.data(), ops.size(), 1, {}, nullptr, 0);
    EXPECT_LT(m.bytes(), limit) << "bits may take only part of the MemGraph";
    for (bool frozen : {false, true}) {
      SCOPED_TRACE(frozen ? "frozen" : "active");
      if (frozen) m.Freeze(1);
      for (int q = 0; q < 300; q++) {
        uint64_t a = id(), b = id();
        if (q % 10 == 0) a = 0, b = UINT64_MAX;
        if (a > b) std::swap(a, b);
        const size_t max = 1 + rng() % 700;
        for (int dir = 0; dir < 2; dir++) {
          const std::set<uint64_t> &all = dir == 0 ? srcs : dsts;
          std::vector<uint64_t> want(all.lower_bound(a), all.lower_bound(b));
          ASSERT_EQ(List(m, dir, a, b, max), want) << "[" << a << ", " << b << ") max " << max << " dir " << dir;
        }
      }
    }
  }
}

// The smallest MemGraph (64 KiB, both directions) holds more than a few
// edges before it is full: its fixed costs (first slot chunk, first hash
// table, bitmap words) take a small part of it.
TEST(MemGraphTest, SmallMemGraphIsNotFilledByItsOverhead) {
  gt::MemGraph m(true, 64 << 10);
  EXPECT_LT(m.bytes(), uint64_t(16) << 10);
  std::vector<gt_op> ops;
  for (uint64_t i = 0; i < 60; i++) ops.push_back(Up(i, i + 1));
  m.Apply(ops.data(), ops.size(), 1, {}, nullptr, 0);
  EXPECT_FALSE(m.full()) << m.bytes() << " bytes after 60 edges";
}

// A Kronecker-like (R-MAT) stream in a default-sized MemGraph (64 MiB)
// costs at most 32 bytes per buffered version, all overheads included
// (entries are 24): block slack, block headers, slots, hash tables,
// bitmaps; unweighted, whose versions narrow blocks keep in 16 bytes, at
// most 28. With in-edges one version per edge op serves both directions
// (it took two, up to 64 bytes, while the MemGraph kept the in-direction)
// and the touched lists add 4 bytes per slot and batch: 4 more.
TEST(MemGraphTest, RmatStreamCostsAtMost32BytesPerVersion) {
  for (bool weighted : {false, true}) {
    for (bool in_edges : {false, true}) {
      SCOPED_TRACE(std::string(weighted ? "weighted" : "unweighted") + (in_edges ? ", in-edges" : ", out-only"));
      std::mt19937_64 rng(2);
      const int kScale = 16;
      gt::MemGraph m(in_edges, uint64_t(64) << 20);
      std::vector<gt_op> ops;
      uint64_t seq = 0;
      while (!m.full() && m.entries() < (uint64_t(12) << kScale)) {
        ops.clear();
        for (int k = 0; k < 4096; k++) {
          uint64_t s = 0, d = 0;
          for (int b = 0; b < kScale; b++) {
            const uint64_t r = rng() % 100;  // quadrant probabilities .57 .19 .19 .05
            const uint64_t q = r < 57 ? 0 : r < 76 ? 1 : r < 95 ? 2 : 3;
            s = s << 1 | q >> 1;
            d = d << 1 | (q & 1);
          }
          ops.push_back(Up(s, d));
          if (weighted) ops.back().weight = 2.0 + static_cast<double>(k % 7);
        }
        m.Apply(ops.data(), ops.size(), ++seq, {}, nullptr, 0);
      }
      EXPECT_FALSE(m.full());
      const double bound = (weighted ? 32.0 : 28.0) + (in_edges ? 4.0 : 0.0);
      EXPECT_LE(static_cast<double>(m.bytes()) / static_cast<double>(m.entries()), bound)
          << m.bytes() << " bytes for " << m.entries() << " versions";
    }
  }
}

// ---------------------------------------------------------------------------
// Collect against an oracle

// Every version of every (dir, vertex), keyed in run order: dst ascending,
// then seq descending, then the later op of a batch first.
struct VersionOracle {
  using Key = std::tuple<uint64_t, uint64_t, uint64_t>;  // dst, ~seq, ~op
  std::map<std::pair<int, uint64_t>, std::map<Key, gt::Entry>> m;
  uint64_t ops = 0;

  void Apply(const std::vector<gt_op> &batch, uint64_t seq, bool in_edges) {
    for (const gt_op &op : batch) {
      const bool tomb = op.kind == GT_OP_DELETE_EDGE;
      const uint64_t vers = gt::MakeVers(seq, tomb);
      const double w = tomb ? 0.0 : op.weight;
      const uint64_t k = ~ops++;
      m[{0, op.src}][Key{op.dst, ~seq, k}] = gt::Entry{op.dst, vers, w};
      if (in_edges) m[{1, op.dst}][Key{op.src, ~seq, k}] = gt::Entry{op.src, vers, w};
    }
  }
  // v's versions with seq <= tau, in run order.
  std::vector<gt::Entry> Want(int dir, uint64_t v, uint64_t tau) const {
    std::vector<gt::Entry> out;
    auto it = m.find({dir, v});
    if (it == m.end()) return out;
    for (const auto &kv : it->second)
      if (gt::VersSeq(kv.second.vers) <= tau) out.push_back(kv.second);
    return out;
  }
};

// es[from, from + 12), and its size.
std::string Show(const std::vector<gt::Entry> &es, size_t from = 0) {
  std::string s = from > 0 ? "[" + std::to_string(from) + "...] " : "";
  for (size_t i = from; i < es.size() && i < from + 12; i++)
    s += "(" + std::to_string(es[i].dst) + " s" + std::to_string(gt::VersSeq(es[i].vers)) +
         (gt::VersTomb(es[i].vers) ? " del" : "") + " w" + std::to_string(es[i].weight) + ") ";
  return s + (es.size() > from + 12 ? "..." : "") + " [" + std::to_string(es.size()) + "]";
}

// got and want from a little before their first difference.
std::string ShowDiff(const std::vector<gt::Entry> &got, const std::vector<gt::Entry> &want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i].dst == want[i].dst && got[i].vers == want[i].vers &&
         got[i].weight == want[i].weight)
    i++;
  const size_t from = i > 2 ? i - 2 : 0;
  return "\n got  " + Show(got, from) + "\n want " + Show(want, from);
}

bool Same(const std::vector<gt::Entry> &a, const std::vector<gt::Entry> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (a[i].dst != b[i].dst || a[i].vers != b[i].vers || a[i].weight != b[i].weight) return false;
  return true;
}

// What a reader racing the writer checks: the versions in got with seq <=
// tau (the rest are newer batches') are exactly the oracle's for (dir, v)
// at tau. "" when they are, else the difference.
std::string VisibleMismatch(const VersionOracle &oracle, int dir, uint64_t v, uint64_t tau,
                            const std::vector<gt::Entry> &got) {
  std::vector<gt::Entry> vis;
  for (const gt::Entry &e : got)
    if (gt::VersSeq(e.vers) <= tau) vis.push_back(e);
  const auto want = oracle.Want(dir, v, tau);
  if (Same(vis, want)) return "";
  return "dir " + std::to_string(dir) + " v " + std::to_string(v) + " tau " + std::to_string(tau) + ShowDiff(vis, want);
}

// Batches over a few hubs (one of them both a source and a destination
// hub) and many small vertices; edges repeat within and across batches, as
// do deletes of them.
std::vector<std::vector<gt_op>> HubBatches(std::mt19937_64 &rng, int nbatches, int max_ops) {
  std::vector<std::vector<gt_op>> out(nbatches);
  for (auto &b : out) {
    const int n = 1 + static_cast<int>(rng() % static_cast<uint64_t>(max_ops));
    for (int i = 0; i < n; i++) {
      const uint64_t r = rng() % 10;
      uint64_t src = r < 4 ? rng() % 3 : 10 + rng() % 200;  // 0..2 are hubs
      uint64_t dst = rng() % 4 == 0 ? rng() % 16 : 100 + rng() % 5000;
      if (rng() % 8 == 0) std::swap(src, dst);  // vertex 0 is an in-hub too
      gt_op op = Up(src, dst);
      // Weight 1 half the time: narrow and wide blocks mix in a slot.
      op.weight = rng() % 2 == 0 ? 1.0 : static_cast<double>(rng() % 1000);
      if (rng() % 5 == 0) op.kind = GT_OP_DELETE_EDGE;
      b.push_back(op);
    }
  }
  return out;
}

// v's versions through AddRuns and MergeRuns (as a store read at tau gets
// them); the runs are left in last_runs.
thread_local std::vector<gt::Run> last_runs;
size_t ViaRuns(const gt::MemGraph &m, int dir, uint64_t v, uint64_t tau, gt::MemGraph::ReadBuf *scratch,
               std::vector<gt::Entry> *got) {
  last_runs.clear();
  const size_t n = m.AddRuns(dir, v, tau, scratch, &last_runs);
  got->clear();
  gt::MergeRuns(last_runs, [&](uint64_t d, uint64_t vers, double w, int64_t tm) {
    got->push_back(gt::Entry{d, vers, w, tm});
  });
  if (last_runs.size() > gt::MemGraph::kMaxRuns + 1) ADD_FAILURE() << last_runs.size() << " runs";
  return n;
}

// The versions of the edges from v to dst through AddEdgeRuns, merged
// (runs of a cache hold a slice of it: b may be above 0).
size_t ViaEdgeRuns(const gt::MemGraph &m, uint64_t v, uint64_t dst, gt::MemGraph::ReadBuf *scratch,
                   std::vector<gt::Entry> *got) {
  std::vector<gt::Run> runs;
  const size_t n = m.AddEdgeRuns(v, dst, scratch, &runs);
  got->clear();
  gt::MergeRuns(runs, [&](uint64_t d, uint64_t vers, double w, int64_t tm) {
    got->push_back(gt::Entry{d, vers, w, tm});
  });
  if (runs.size() > gt::MemGraph::kMaxRuns + 1) ADD_FAILURE() << runs.size() << " runs";
  return n;
}

TEST(MemGraphTest, CollectMatchesOracleWithHubCaches) {
  const uint64_t seed = gt_test::SeedOr(5);
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (uint32_t hub_min : {1u, 2u, 5u, 40u}) {
    for (uint64_t limit : {uint64_t(1) << 20, uint64_t(64) << 20}) {
      const uint32_t parallel_min = hub_min % 2 == 0 ? 1 : 0;  // every batch split, or the default
      SCOPED_TRACE("hub_min " + std::to_string(hub_min) + " limit " + std::to_string(limit));
      gt::MemGraph m(true, limit, hub_min, parallel_min);
      VersionOracle oracle;
      std::vector<std::pair<const gt::Entry *, std::vector<gt::Entry>>> kept;  // AddRuns runs in hub views
      // The same of plain runs (32-byte versions: no version here has extras).
      std::vector<std::pair<const gt::PlainEntry *, std::vector<gt::PlainEntry>>> kept_plain;
      std::vector<std::shared_ptr<const void>> holds;  // what the ReadBufs held
      const auto batches = HubBatches(rng, 300, 60);
      uint64_t seq = 0;
      std::vector<gt::Entry> got;
      // Reads a few vertices (hubs most often), each read maybe publishing
      // a cache, so that the next writes leave a tail behind it.
      // Between the two parts of a batch (mid_batch), out-edges only: the
      // in-index covers whole batches (MemGraph::Apply: seqs increase).
      auto read_some = [&](bool mid_batch) {
        for (int q = 0; q < 4; q++) {
          const int dir = mid_batch ? 0 : static_cast<int>(rng() % 2);
          const uint64_t v = rng() % 3 == 0 ? 10 + rng() % 200 : rng() % 3;
          if (rng() % 2 == 0) {
            got.assign(1, gt::Entry{7, 7, 7});  // Collect appends
            m.Collect(dir, v, &got);
            ASSERT_EQ(got.size(), oracle.Want(dir, v, seq).size() + 1);
            ASSERT_EQ(got[0].dst, 7u);
            got.erase(got.begin());
          } else {
            gt::MemGraph::ReadBuf scratch;
            scratch.ents.assign(1, gt::Entry{7, 7, 7});
            const size_t n = ViaRuns(m, dir, v, seq, &scratch, &got);
            ASSERT_EQ(n, got.size());
            // A run of a hub's view stays valid and unchanged while a
            // ReadBuf holds it, whatever the writer does meanwhile: checked
            // again at the end.
            for (const gt::Run &r : last_runs) {
              if (r.plain != nullptr)
                kept_plain.push_back({r.plain, std::vector<gt::PlainEntry>(r.plain, r.plain + r.e)});
              else if (r.ents != scratch.ents.data())
                kept.push_back({r.ents, std::vector<gt::Entry>(r.ents, r.ents + r.e)});
            }
            if (scratch.hold != nullptr) holds.push_back(scratch.hold);
          }
          const auto want = oracle.Want(dir, v, seq);
          ASSERT_TRUE(Same(got, want)) << "dir " << dir << " v " << v << " seq " << seq << "\n got  " << Show(got)
                                       << "\n want " << Show(want);
          if (dir != 0) continue;
          // Edge lookups of v: a dst it has versions to (the first, the
          // last, one at random) and one it has none to (-1 is no dst).
          std::vector<uint64_t> dsts{~uint64_t{0} >> 2, rng() % 256};
          if (!want.empty()) {
            dsts.push_back(want.front().dst);
            dsts.push_back(want.back().dst);
            dsts.push_back(want[rng() % want.size()].dst);
          }
          for (uint64_t d : dsts) {
            std::vector<gt::Entry> wd;
            gt::MemGraph::ReadBuf scratch;
            scratch.ents.assign(1, gt::Entry{7, 7, 7});
            for (const gt::Entry &x : want)
              if (x.dst == d) wd.push_back(x);
            const size_t n = ViaEdgeRuns(m, v, d, &scratch, &got);
            ASSERT_EQ(n, got.size());
            ASSERT_TRUE(Same(got, wd)) << "edge " << v << " -> " << d << " seq " << seq << "\n got  " << Show(got)
                                       << "\n want " << Show(wd);
          }
        }
      };
      for (const auto &b : batches) {
        seq++;
        // Sometimes in two parts of one seq with reads between, as a reader
        // racing Apply sees part of a batch: a cache then ends inside the
        // batch, and the merge must still put its later ops first.
        const size_t cut = rng() % 3 == 0 ? rng() % (b.size() + 1) : b.size();
        const std::vector<gt_op> first(b.begin(), b.begin() + static_cast<long>(cut));
        const std::vector<gt_op> rest(b.begin() + static_cast<long>(cut), b.end());
        m.Apply(first.data(), first.size(), seq, {}, nullptr, 0);
        oracle.Apply(first, seq, true);
        if (!rest.empty()) {
          ASSERT_NO_FATAL_FAILURE(read_some(true));
          m.Apply(rest.data(), rest.size(), seq, {}, nullptr, 0);
          oracle.Apply(rest, seq, true);
        }
        ASSERT_NO_FATAL_FAILURE(read_some(false));
      }
      EXPECT_GT(m.cache_bytes(), 0u) << "hub reads made no view";
      EXPECT_FALSE(kept.empty() && kept_plain.empty()) << "no read was served from a view";
      EXPECT_TRUE(kept.empty()) << "a run of versions without extras holds Entries, not PlainEntries";
      for (const auto &pk : kept)
        ASSERT_TRUE(Same(std::vector<gt::Entry>(pk.first, pk.first + pk.second.size()), pk.second));
      for (const auto &pk : kept_plain)
        ASSERT_EQ(0, std::memcmp(pk.first, pk.second.data(), pk.second.size() * sizeof(gt::PlainEntry)));
      // Released, the replaced views are freed: what lives is at most
      // about one copy of each hub's versions (a run's header and a box
      // each are the 64 bytes; one reader: no races).
      const uint64_t held = m.cache_bytes();
      holds.clear();
      kept.clear();
      kept_plain.clear();
      EXPECT_LE(m.cache_bytes(), held);
      EXPECT_LE(m.cache_bytes(), (sizeof(gt::Entry) + 64) * m.entries());
      // Every vertex, then the flush's walk of a frozen MemGraph.
      for (const auto &kv : oracle.m) {
        got.clear();
        m.Collect(kv.first.first, kv.first.second, &got);
        ASSERT_TRUE(Same(got, oracle.Want(kv.first.first, kv.first.second, seq))) << "vertex " << kv.first.second;
      }
      m.Freeze(seq);
      {
        std::vector<gt::Entry> scratch;
        size_t seen = 0;
        m.ForEachSorted(&scratch, [&](uint64_t v, const std::vector<gt::Entry> &vs) {
          seen++;
          ASSERT_TRUE(Same(vs, oracle.Want(0, v, seq))) << "flush of vertex " << v;
        });
        size_t want = 0;
        for (const auto &kv : oracle.m) want += kv.first.first == 0 ? 1 : 0;
        EXPECT_EQ(seen, want);
      }
    }
  }
}

// Readers racing the one writer: each reader reads the published seq
// (release by the writer after Apply, as Store::last_seq_), collects a
// vertex, and checks that the versions with seq <= it are exactly the
// oracle's and that everything it got is sorted in run order (the rest are
// versions of newer batches). Hubs are read all the time, so caches are
// published, raced for and replaced while the writer appends to the same
// slots.
TEST(MemGraphTest, ReadersRaceWriterWithHubCaches) {
  const uint64_t seed = gt_test::SeedOr(9);
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (uint32_t hub_min : {2u, 16u}) {
    SCOPED_TRACE("hub_min " + std::to_string(hub_min));
    const uint64_t limit = uint64_t(1) << 20;
    gt::MemGraph m(true, limit, hub_min, hub_min == 2 ? 1 : 0);
    const auto batches = HubBatches(rng, 300, 400);
    VersionOracle oracle;
    for (size_t i = 0; i < batches.size(); i++) oracle.Apply(batches[i], i + 1, true);
    std::atomic<uint64_t> published{0};
    std::atomic<bool> failed{false};
    std::atomic<uint64_t> reads{0};
    auto reader = [&](uint64_t rseed) {
      std::mt19937_64 r(rseed);
      std::vector<gt::Entry> got;
      for (;;) {
        const uint64_t tau = published.load(std::memory_order_acquire);
        const int dir = static_cast<int>(r() % 2);
        const uint64_t v = r() % 4 == 0 ? 10 + r() % 200 : r() % 3;
        got.clear();
        if (r() % 2 == 0) {
          m.Collect(dir, v, &got);
        } else {
          gt::MemGraph::ReadBuf scratch;
          ViaRuns(m, dir, v, tau, &scratch, &got);
        }
        for (size_t i = 1; i < got.size(); i++) {
          const gt::Entry &a = got[i - 1], &b = got[i];
          if (a.dst > b.dst || (a.dst == b.dst && gt::VersSeq(a.vers) < gt::VersSeq(b.vers))) {
            ADD_FAILURE() << "not in run order at " << i << ": " << Show(got);
            failed = true;
            return;
          }
        }
        const std::string bad = VisibleMismatch(oracle, dir, v, tau, got);
        if (!bad.empty()) {
          ADD_FAILURE() << bad;
          failed = true;
          return;
        }
        reads.fetch_add(1, std::memory_order_relaxed);
        if (tau == batches.size()) return;
      }
    };
    std::vector<std::thread> readers;
    for (int i = 0; i < 3; i++) readers.emplace_back(reader, seed * 31 + static_cast<uint64_t>(i));
    for (size_t i = 0; i < batches.size() && !failed; i++) {
      m.Apply(batches[i].data(), batches[i].size(), i + 1, {}, nullptr, 0);
      published.store(i + 1, std::memory_order_release);
      if (i % 16 == 0) std::this_thread::yield();
    }
    published.store(batches.size(), std::memory_order_release);
    for (auto &t : readers) t.join();
    EXPECT_FALSE(failed);
    EXPECT_GT(reads.load(), 0u);
    EXPECT_GT(m.cache_bytes(), 0u);
  }
}

// ---------------------------------------------------------------------------
// Apply's shards, grouping and helper thread against an oracle

// Batches of ops over few vertices, so that a batch holds many ops of one
// vertex (bursts of one source, and of one destination), the same edge
// several times, edge deletes, and vertex deletes; ids in both bands.
std::vector<std::vector<gt_op>> BurstBatches(std::mt19937_64 &rng, int nbatches, int max_ops) {
  auto id = [&]() -> uint64_t {
    const uint64_t r = rng() % 16;
    if (r == 0) return GT_HIGH_ID_BASE + rng() % 8;
    if (r < 4) return rng() % 4;  // hubs
    return rng() % 300;
  };
  std::vector<std::vector<gt_op>> out(nbatches);
  for (auto &b : out) {
    const int n = static_cast<int>(rng() % static_cast<uint64_t>(max_ops + 1));  // empty batches too
    while (static_cast<int>(b.size()) < n) {
      const uint64_t kind = rng() % 20;
      if (kind == 0) {
        gt_op op = Up(id(), 0);
        op.kind = GT_OP_DELETE_VERTEX;
        b.push_back(op);
        continue;
      }
      // A burst: several ops of one source (or one destination).
      const uint64_t v = id();
      const bool by_dst = rng() % 3 == 0;
      const int burst = 1 + static_cast<int>(rng() % (rng() % 4 == 0 ? 40 : 3));
      for (int i = 0; i < burst; i++) {
        const uint64_t u = rng() % 2 == 0 ? id() : rng() % 6;  // repeats of one edge
        gt_op op = by_dst ? Up(u, v) : Up(v, u);
        op.weight = rng() % 2 == 0 ? 1.0 : static_cast<double>(rng() % 1000);
        if (rng() % 5 == 0) op.kind = GT_OP_DELETE_EDGE;
        b.push_back(op);
      }
    }
  }
  return out;
}

// What Store::Apply passes: an edge op followed, in its batch, by a delete
// of one of its vertices is skipped (empty when the batch deletes none).
std::vector<uint8_t> SkipOf(const std::vector<gt_op> &b) {
  std::map<uint64_t, size_t> last_del;
  for (size_t i = 0; i < b.size(); i++)
    if (b[i].kind == GT_OP_DELETE_VERTEX) last_del[b[i].src] = i;
  if (last_del.empty()) return {};
  std::vector<uint8_t> skip(b.size(), 0);
  for (size_t i = 0; i < b.size(); i++) {
    if (b[i].kind == GT_OP_DELETE_VERTEX) continue;
    for (uint64_t v : {b[i].src, b[i].dst}) {
      auto it = last_del.find(v);
      if (it != last_del.end() && it->second > i) skip[i] = 1;
    }
  }
  return skip;
}

// A hub whose cached sorted copy is large enough to be a mapping of its
// own (Cache::map): reads through it, and through it and the versions
// written since, match the oracle.
TEST(MemGraphTest, LargeHubCacheMatchesOracle) {
  std::mt19937_64 rng(gt_test::SeedOr(23));
  gt::MemGraph m(false, uint64_t(1) << 30, 8, 1);
  VersionOracle oracle;
  const uint64_t hub = 7;
  uint64_t seq = 0;
  auto apply = [&](int ops) {
    std::vector<gt_op> b;
    for (int i = 0; i < ops; i++) {
      gt_op op = Up(hub, rng() % 150000);
      if (rng() % 10 == 0) op.kind = GT_OP_DELETE_EDGE;
      if (rng() % 3 == 0) op.weight = static_cast<double>(rng() % 100);
      b.push_back(op);
    }
    m.Apply(b.data(), b.size(), ++seq, {}, nullptr, 0);
    oracle.Apply(b, seq, false);
  };
  for (int i = 0; i < 12; i++) apply(10000);  // 120,000 versions: 2.9 MB sorted
  std::vector<gt::Entry> got;
  for (int round = 0; round < 3; round++) {
    // The first read publishes the cache; the next ones read it, and after
    // a write, it and the sorted tail.
    for (int read = 0; read < 2; read++) {
      got.clear();
      m.Collect(gt::kOut, hub, &got);
      ASSERT_TRUE(Same(got, oracle.Want(0, hub, seq))) << "round " << round << ShowDiff(got, oracle.Want(0, hub, seq));
    }
    // A cache of every version (none has extras: 32 bytes each).
    EXPECT_GE(m.cache_bytes(), uint64_t(120000) * sizeof(gt::PlainEntry));
    apply(500);
  }
}

// A hub of a replace-only stream is cached in 32-byte versions, not in
// Entries (40 bytes: the extras' pointer, null in every one): its reads
// scan a fifth less. One version with extras (an operand) makes the next
// cache one of Entries, and reads of it fold.
TEST(MemGraphTest, HubCacheOfVersionsWithoutExtrasTakes32BytesAVersion) {
  gt::MemGraph m(false, uint64_t(1) << 30, 8, 1);
  const uint64_t hub = 7, k = 120000;
  std::vector<gt_op> b;
  for (uint64_t i = 0; i < k; i++) b.push_back(Up(hub, i + 1));
  m.Apply(b.data(), b.size(), 1, {}, nullptr, 0);
  std::vector<gt::Entry> got;
  m.Collect(gt::kOut, hub, &got);
  ASSERT_EQ(got.size(), k);
  // The copy, in whole 2 MiB pages (it is mapped: MemGraph::Publish).
  const uint64_t plain = (k * sizeof(gt::PlainEntry) + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  EXPECT_GE(m.cache_bytes(), k * sizeof(gt::PlainEntry));
  EXPECT_LE(m.cache_bytes(), plain + 4096) << "a cache of Entries: " << k * sizeof(gt::Entry) << " bytes and more";
  gt::MemGraph::ReadBuf scratch;
  std::vector<gt::Run> runs;
  m.AddRuns(gt::kOut, hub, 1, &scratch, &runs);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].plain, nullptr);
  EXPECT_FALSE(runs[0].MayHoldOperands());

  // Operands to every dst (weights 2 and 3, after the replace version of
  // weight 1), enough to make the next read cache again: the fold is 5.
  b.clear();
  for (uint64_t i = 0; i < 2 * k; i++) {
    gt_op op = Up(hub, i % k + 1);
    op.weight = i < k ? 2 : 3;
    op.time = int64_t(1000 + i);
    op.flags = GT_OP_ACCUMULATE;
    b.push_back(op);
  }
  m.Apply(b.data(), b.size(), 2, {}, nullptr, 0);
  for (int read = 0; read < 2; read++) {  // the first merges the plain cache and publishes; the second reads that
    runs.clear();
    m.AddRuns(gt::kOut, hub, 2, &scratch, &runs);
    ASSERT_FALSE(runs.empty());
    uint64_t n = 0;
    gt::VdelMap vd;
    gt::VisibleEdges<true>(runs, hub, 2, vd, nullptr, [&](const gt::Folded &f) {
      n++;
      ASSERT_EQ(f.count, 2u) << "dst " << f.dst;
      ASSERT_EQ(f.weight, 5.0) << "dst " << f.dst;
      ASSERT_EQ(f.first, int64_t(1000 + f.dst - 1)) << "dst " << f.dst;
      ASSERT_EQ(f.time, int64_t(1000 + k + f.dst - 1)) << "dst " << f.dst;
    });
    EXPECT_EQ(n, k);
    n = 0;
    gt::VisibleVersions(runs, hub, 2, vd, nullptr, [&](uint64_t, uint32_t, double w, int64_t) {
      n++;
      ASSERT_EQ(w, 5.0);
    });
    EXPECT_EQ(n, k);
    // At seq 1 (before the operands): the replace versions.
    n = 0;
    gt::VisibleVersions(runs, hub, 1, vd, nullptr, [&](uint64_t, uint32_t, double w, int64_t) {
      n++;
      ASSERT_EQ(w, 1.0);
    });
    EXPECT_EQ(n, k);
  }
  // The view's runs now hold Entries (the plain run was merged into one
  // of them and freed).
  EXPECT_GE(m.cache_bytes(), 3 * k * sizeof(gt::Entry)) << "the second view holds Entries";
  for (const gt::Run &r : runs) EXPECT_EQ(r.plain, nullptr);
}

// A hub's reads after bursts (issue 43): bursts of thousands of versions
// of one vertex, read between them (degree-like AddRuns reads, edge
// lookups, Collect, and reads as of an older snapshot), with deletes and
// re-inserts of the same neighbours, weights other than 1 (wide blocks)
// and operands (runs of Entries) among them: every read matches the
// oracle, a hub's view never has more than kMaxRuns runs, and, the cost
// check, the first read after any burst sorts or copies at most
// sort_min() versions (the remainder the writer has not sorted yet), not
// the burst nor the hub's whole buffer. The writer's work stays within a
// few copies per version (the LSM of runs: O(log8 n)).
TEST(MemGraphTest, HubFirstReadAfterBurstSortsOnlyItsRemainder) {
  const uint64_t seed = gt_test::SeedOr(43);
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const uint32_t parallel_min : {1u, 1u << 30}) {  // every batch split, or none
    SCOPED_TRACE("parallel_min " + std::to_string(parallel_min));
    gt::MemGraph m(false, uint64_t(1) << 30, 4, parallel_min);  // sort_min 256
    const uint32_t sort_min = m.sort_min();
    ASSERT_EQ(sort_min, 256u);
    VersionOracle oracle;
    const uint64_t hub = 5;
    uint64_t seq = 0, inserted = 0;
    std::vector<gt::Entry> got;
    auto burst = [&](uint64_t n, int batch) {
      for (uint64_t i = 0; i < n;) {
        std::vector<gt_op> b;
        for (int k = 0; k < batch && i < n; k++, i++) {
          // New neighbours, deletes and re-inserts of earlier ones, and a
          // few ops of other vertices.
          const uint64_t r = rng() % 20;
          gt_op op = Up(hub, inserted < 10 || r < 12 ? ++inserted : 1 + rng() % inserted);
          if (r >= 12 && r < 16) op.kind = GT_OP_DELETE_EDGE;
          if (r == 16) op.weight = static_cast<double>(rng() % 100);
          if (r == 17) op.src = 100 + rng() % 50;
          if (r == 18 && rng() % 8 == 0) op.flags = GT_OP_ACCUMULATE;
          b.push_back(op);
        }
        m.Apply(b.data(), b.size(), ++seq, {}, nullptr, 0);
        oracle.Apply(b, seq, false);
      }
    };
    auto check = [&](uint64_t tau, const char *what) {
      gt::MemGraph::ReadBuf scratch;
      const uint64_t w0 = m.read_work();
      const size_t n = ViaRuns(m, gt::kOut, hub, tau, &scratch, &got);
      const uint64_t work = m.read_work() - w0;
      EXPECT_EQ(n, got.size()) << what;
      EXPECT_EQ("", VisibleMismatch(oracle, gt::kOut, hub, tau, got)) << what;
      EXPECT_LE(last_runs.size(), gt::MemGraph::kMaxRuns + 1) << what;
      return work;
    };
    // Bursts of several sizes, the first ones before any read; each
    // followed by reads: the first at the newest seq, then as of an older
    // one, then lookups and a Collect.
    const std::vector<std::pair<uint64_t, int>> bursts{{12000, 1000}, {20000, 5000}, {100, 100}, {8000, 8000},
                                                       {3000, 300},   {25000, 2500}, {255, 255}, {4000, 2000}};
    uint64_t total = 0;
    for (const auto &[n, batch] : bursts) {
      SCOPED_TRACE("burst of " + std::to_string(n) + " after " + std::to_string(total));
      const uint64_t before = seq;
      burst(n, batch);
      total += n;
      const uint64_t first = check(seq, "first read");
      EXPECT_LT(first, sort_min) << "the first read after a burst of " << n << " sorted or copied " << first
                                 << " versions";
      EXPECT_LT(check(before, "as of before the burst"), sort_min);
      EXPECT_LT(check(before / 2 + 1, "as of half the bursts"), sort_min);
      for (int q = 0; q < 6; q++) {
        const uint64_t d = q == 0 ? inserted + 1 : 1 + rng() % inserted;
        std::vector<gt::Entry> wd;
        for (const gt::Entry &x : oracle.Want(gt::kOut, hub, seq))
          if (x.dst == d) wd.push_back(x);
        gt::MemGraph::ReadBuf scratch;
        const uint64_t w0 = m.read_work();
        ViaEdgeRuns(m, hub, d, &scratch, &got);
        ASSERT_TRUE(Same(got, wd)) << "edge to " << d << ShowDiff(got, wd);
        EXPECT_LT(m.read_work() - w0, sort_min);
      }
      got.clear();
      m.Collect(gt::kOut, hub, &got);
      ASSERT_TRUE(Same(got, oracle.Want(gt::kOut, hub, seq))) << ShowDiff(got, oracle.Want(gt::kOut, hub, seq));
    }
    // The writer sorted every version once and copied it about 4 times
    // per level of runs (log8(n/sort_min) levels: 3 here): at most 16
    // copies per version (an LSM that merged every new run into all the
    // hub's versions would copy each a hundred times here).
    EXPECT_LE(m.writer_work(), 16 * total) << m.writer_work() << " for " << total << " versions";
    // One copy of the hub's versions (32 or 40 bytes each), a large run in
    // whole 2 MiB pages.
    EXPECT_LE(m.cache_bytes(), sizeof(gt::Entry) * total + (gt::MemGraph::kMaxRuns + 1) * (uint64_t(2) << 20));
    m.Freeze(seq);
    std::vector<gt::Entry> scratch;
    m.ForEachSorted(&scratch, [&](uint64_t v, const std::vector<gt::Entry> &vs) {
      ASSERT_TRUE(Same(vs, oracle.Want(gt::kOut, v, seq))) << "flush of vertex " << v;
    });
  }
}

// An accumulate type's operand without a payload costs the MemGraph what a
// replace version does (its extras, count 1 and first its time, are
// shared, not a record of its own), and reads back as an operand of one
// event: count 1, first its time.
TEST(MemGraphTest, OperandsWithoutPayloadCostWhatReplaceVersionsDo) {
  std::mt19937_64 rng(gt_test::SeedOr(31));
  gt::MemGraph rep(false, uint64_t(64) << 20), acc(false, uint64_t(64) << 20);
  std::vector<gt_op> b;
  for (uint64_t seq = 1; seq <= 20; seq++) {
    b.clear();
    for (int i = 0; i < 10000; i++) {
      gt_op op = Up(rng() % 20000, rng() % 20000);
      op.weight = double(1 + rng() % 100000) / 100;
      op.time = int64_t(1700000000000000 + seq * 10000 + i);
      b.push_back(op);
    }
    rep.Apply(b.data(), b.size(), seq, {}, nullptr, 0);
    for (gt_op &op : b) op.flags = GT_OP_ACCUMULATE;
    acc.Apply(b.data(), b.size(), seq, {}, nullptr, 0);
  }
  EXPECT_EQ(acc.bytes(), rep.bytes()) << "bytes per version: " << double(acc.bytes()) / double(acc.entries())
                                      << " against " << double(rep.bytes()) / double(rep.entries());
  for (uint64_t v : {0, 1, 777, 19999}) {
    std::vector<gt::Entry> r, a;
    rep.Collect(gt::kOut, v, &r);
    acc.Collect(gt::kOut, v, &a);
    ASSERT_EQ(r.size(), a.size());
    std::vector<gt::Run> runs{gt::Run{a.data(), nullptr, 0, a.size()}};
    for (size_t i = 0; i < a.size(); i++) {
      ASSERT_EQ(a[i].dst, r[i].dst);
      ASSERT_EQ(a[i].vers, r[i].vers);
      ASSERT_EQ(a[i].weight, r[i].weight);
      ASSERT_EQ(a[i].time, r[i].time);
      EXPECT_EQ(gt::EntryCount(r[i]), 0u);
      EXPECT_EQ(gt::EntryCount(a[i]), 1u);
      EXPECT_EQ(runs[0].first(i), a[i].time);
      const uint8_t *p = nullptr;
      EXPECT_EQ(runs[0].payload(i, &p), 0u);
      // What a flush writes: a record of its own, count 1, first its time.
      gt::ExtArena arena;
      const gt::ExtRec *x = runs[0].ext(i, &arena);
      ASSERT_NE(x, nullptr);
      EXPECT_NE(x, &gt::kOneEvent);
      EXPECT_EQ(x->count, 1u);
      EXPECT_EQ(x->first, a[i].time);
    }
  }
}

TEST(MappingPoolTest, KeepsUpToItsCapAndGivesExactSizes) {
  gt::MappingPool pool(3 << 12);
  gt::Mapping a(1 << 12), b(2 << 12), c(2 << 12);
  static_cast<char *>(a.get())[5] = 'a';
  void *const pa = a.get();
  pool.Give(std::move(a), 100);
  pool.Give(std::move(b), 1 << 13);
  EXPECT_EQ(pool.bytes(), uint64_t(3) << 12);
  pool.Give(std::move(c), 0);  // past the cap: unmapped, not kept
  EXPECT_EQ(pool.bytes(), uint64_t(3) << 12);
  size_t resident = 7;
  EXPECT_EQ(pool.Take(3 << 12, &resident).get(), nullptr);  // no mapping of that size
  EXPECT_EQ(resident, 0u);
  gt::Mapping got = pool.Take(1 << 12, &resident);
  ASSERT_EQ(got.get(), pa);  // the same memory, as its last owner left it
  EXPECT_EQ(static_cast<char *>(got.get())[5], 'a');
  EXPECT_EQ(resident, 100u);
  EXPECT_EQ(pool.bytes(), uint64_t(2) << 12);
  gt::Mapping got2 = pool.Take(2 << 12, &resident);
  EXPECT_NE(got2.get(), nullptr);
  EXPECT_EQ(resident, size_t(1) << 13);
  EXPECT_EQ(pool.bytes(), 0u);
  // Trim gives up at least what it is asked to, whole mappings.
  pool.Give(std::move(got), 0);
  pool.Give(std::move(got2), 0);
  pool.Trim(1);
  EXPECT_LE(pool.bytes(), uint64_t(2) << 12);
  EXPECT_GT(pool.bytes(), 0u);
  pool.Trim(1);
  EXPECT_EQ(pool.bytes(), 0u);
}

TEST(MemGraphTest, ShardedApplyMatchesOracle) {
  const uint64_t seed = gt_test::SeedOr(13);
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // Each MemGraph after the first writes (partly) into memory the ones
  // before it wrote and gave back: tables, slots and blocks holding their
  // stale contents.
  const auto pool = std::make_shared<gt::MappingPool>(uint64_t(1) << 26);
  for (bool in_edges : {true, false}) {
    for (uint32_t parallel_min : {1u, 5u, UINT32_MAX}) {
      SCOPED_TRACE(std::string(in_edges ? "in-edges" : "out-only") + " parallel_min " + std::to_string(parallel_min));
      const uint64_t pooled = pool->bytes();
      gt::MemGraph m(in_edges, uint64_t(1) << 20, 3, parallel_min, pool);
      VersionOracle oracle;
      std::vector<std::pair<uint64_t, uint64_t>> vdels;
      std::set<uint64_t> present[2];
      const auto batches = BurstBatches(rng, 250, 120);
      uint64_t seq = 0;
      std::vector<gt::Entry> got;
      for (const auto &b : batches) {
        seq++;
        const std::vector<uint8_t> skip = SkipOf(b);
        m.Apply(b.data(), b.size(), seq, skip, nullptr, 0);
        std::vector<gt_op> kept;
        for (size_t i = 0; i < b.size(); i++) {
          if (!skip.empty() && skip[i]) continue;
          if (b[i].kind == GT_OP_DELETE_VERTEX) {
            vdels.emplace_back(b[i].src, seq);
            continue;
          }
          kept.push_back(b[i]);
          present[0].insert(b[i].src);
          if (in_edges) present[1].insert(b[i].dst);
        }
        oracle.Apply(kept, seq, in_edges);
        ASSERT_EQ(m.entries(), oracle.ops);  // one version per edge op
        // Some vertices each batch (hubs often), every one now and then.
        const bool all = seq % 50 == 0;
        for (int dir = 0; dir < (in_edges ? 2 : 1); dir++) {
          // In-edges: the out-direction's count (not 0 iff any version).
          ASSERT_EQ(m.vertices(dir), present[0].size());
          for (uint64_t v : present[dir]) {
            if (!all && v >= 4 && rng() % 8 != 0) continue;
            got.clear();
            m.Collect(dir, v, &got);
            const auto want = oracle.Want(dir, v, seq);
            ASSERT_TRUE(Same(got, want)) << "dir " << dir << " v " << v << " seq " << seq << "\n got  " << Show(got)
                                         << "\n want " << Show(want);
          }
          if (all) {
            const std::vector<uint64_t> want(present[dir].begin(), present[dir].end());
            ASSERT_EQ(List(m, dir, 0, UINT64_MAX, 1 + rng() % 100), want) << "dir " << dir;
          }
        }
      }
      // It took memory from the pool, once there was some.
      if (pooled > 0) {
        EXPECT_LT(pool->bytes(), pooled);
      }
      // The in-edge reads built an in-index, and it counts in bytes().
      if (in_edges) {
        EXPECT_GT(m.in_index_bytes(), 0u);
        EXPECT_GE(m.bytes(), m.in_index_bytes() + m.cache_bytes());
      } else {
        EXPECT_EQ(m.in_index_bytes(), 0u);
      }
      m.Freeze(seq);
      ASSERT_EQ(m.vdels(), vdels);
      std::vector<gt::Entry> scratch;
      std::vector<uint64_t> seen;
      m.ForEachSorted(&scratch, [&](uint64_t v, const std::vector<gt::Entry> &vs) {
        seen.push_back(v);
        ASSERT_TRUE(Same(vs, oracle.Want(0, v, seq))) << "flush of vertex " << v;
      });
      EXPECT_EQ(seen, std::vector<uint64_t>(present[0].begin(), present[0].end()));
      // The frozen MemGraph's in-edges, all of them (the index covers the
      // last batches now, whatever readers built before).
      if (in_edges) {
        for (uint64_t v : present[1]) {
          got.clear();
          m.Collect(gt::kIn, v, &got);
          ASSERT_TRUE(Same(got, oracle.Want(1, v, seq))) << "frozen, in-edges of " << v;
        }
        EXPECT_EQ(List(m, 1, 0, UINT64_MAX, 7), std::vector<uint64_t>(present[1].begin(), present[1].end()));
      }
    }
  }
}

// Readers racing Apply's two threads: Collect and VerticesFrom of every
// vertex against the oracle at the published seq, while bursts of one
// vertex are appended in groups (one publication of the count per batch).
TEST(MemGraphTest, ReadersRaceShardedApply) {
  const uint64_t seed = gt_test::SeedOr(17);
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // The raced MemGraph writes into memory that another one wrote and gave
  // back to the pool: readers must never see its stale contents.
  const auto pool = std::make_shared<gt::MappingPool>(uint64_t(1) << 26);
  {
    gt::MemGraph dirty(true, uint64_t(1) << 20, 4, 1, pool);
    std::mt19937_64 drng(seed + 1);
    uint64_t seq = 0;
    for (const auto &b : BurstBatches(drng, 300, 300)) dirty.Apply(b.data(), b.size(), ++seq, SkipOf(b), nullptr, 0);
  }
  ASSERT_GT(pool->bytes(), 0u);
  gt::MemGraph m(true, uint64_t(1) << 20, 4, 1, pool);
  const auto batches = BurstBatches(rng, 300, 300);
  VersionOracle oracle;
  // Present vertices per direction after each batch.
  std::vector<std::set<uint64_t>> present_out(batches.size() + 1), present_in(batches.size() + 1);
  std::vector<std::vector<uint8_t>> skips;
  for (size_t i = 0; i < batches.size(); i++) {
    skips.push_back(SkipOf(batches[i]));
    std::vector<gt_op> kept;
    present_out[i + 1] = present_out[i];
    present_in[i + 1] = present_in[i];
    for (size_t k = 0; k < batches[i].size(); k++) {
      const gt_op &op = batches[i][k];
      if ((!skips[i].empty() && skips[i][k]) || op.kind == GT_OP_DELETE_VERTEX) continue;
      kept.push_back(op);
      present_out[i + 1].insert(op.src);
      present_in[i + 1].insert(op.dst);
    }
    oracle.Apply(kept, i + 1, true);
  }
  std::atomic<uint64_t> published{0};
  std::atomic<bool> failed{false};
  auto reader = [&](uint64_t rseed) {
    std::mt19937_64 r(rseed);
    std::vector<gt::Entry> got;
    for (;;) {
      const uint64_t tau = published.load(std::memory_order_acquire);
      const int dir = static_cast<int>(r() % 2);
      const std::set<uint64_t> &want_vs = dir == 0 ? present_out[tau] : present_in[tau];
      if (r() % 16 == 0) {
        // Every vertex of the snapshot is listed (newer ones may be too).
        std::vector<uint64_t> page;
        uint64_t resume = 0;
        m.VerticesFrom(dir, 0, UINT64_MAX, tau, SIZE_MAX, &page, &resume);
        const std::set<uint64_t> listed(page.begin(), page.end());
        for (uint64_t v : want_vs) {
          if (listed.count(v) == 0) {
            ADD_FAILURE() << "dir " << dir << " tau " << tau << ": vertex " << v << " not listed";
            failed = true;
            return;
          }
        }
      }
      const uint64_t v = r() % 3 == 0 ? r() % 300 : r() % 4;
      got.clear();
      m.Collect(dir, v, &got);
      const std::string bad = VisibleMismatch(oracle, dir, v, tau, got);
      if (!bad.empty()) {
        ADD_FAILURE() << bad;
        failed = true;
        return;
      }
      if (tau == batches.size()) return;
    }
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; i++) readers.emplace_back(reader, seed * 7 + static_cast<uint64_t>(i));
  for (size_t i = 0; i < batches.size() && !failed; i++) {
    m.Apply(batches[i].data(), batches[i].size(), i + 1, skips[i], nullptr, 0);
    published.store(i + 1, std::memory_order_release);
  }
  published.store(batches.size(), std::memory_order_release);
  for (auto &t : readers) t.join();
  EXPECT_FALSE(failed);
}

}  // namespace
