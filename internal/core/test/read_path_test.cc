// read_path_test.cc -- the reads of hubs as ingest leaves them: a long
// list in a compacted file (a clean bottom run) with recent versions above
// it (MemGraph versions, L0 files), which SnapshotReader copies out in
// bulk between the edges the recent versions decide (store_read.cc,
// CleanBottom), and the batched edge lookups (gt_snapshot_edge_counts).
// Both are checked against the std::map oracle of store_test_util.h, at
// the newest state and at pinned older snapshots.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "graphtide.h"
#include "store_test_util.h"
#include "test_util.h"

namespace gt_store_test {
namespace {

// The hubs: out-hubs have long out-lists, in-hubs long in-lists.
constexpr uint64_t kOutHubs[] = {7, 501};
constexpr uint64_t kInHubs[] = {900, 42};
constexpr uint64_t kUniverse = 4000;

// A neighbor list, read with a buffer one too small: GT_ERR_BUFFER, and
// the count it needs.
void CheckTooSmall(gt_snapshot *snap, uint32_t dir, uint64_t v, size_t want) {
  if (want == 0) return;
  std::vector<uint64_t> d(want - 1);
  size_t n = 0;
  Err err;
  ASSERT_EQ(gt_snapshot_neighbors(snap, v, dir, nullptr, d.data(), nullptr, nullptr, nullptr, d.size(), &n, err.get()),
            GT_ERR_BUFFER);
  EXPECT_EQ(n, want);
}

// Every hub's list, and lookups of its edges and of as many absent ones
// in one batch, against the oracle o.
void CheckHubs(gt_snapshot *snap, const Oracle &o, std::mt19937_64 &rng) {
  for (uint64_t h : kOutHubs) {
    const EdgeList want = o.Neighbors(h, GT_OUT);
    ASSERT_NO_FATAL_FAILURE(CheckNeighbors(snap, GT_OUT, h, want));
    ASSERT_NO_FATAL_FAILURE(CheckTooSmall(snap, GT_OUT, h, want.size()));
    std::vector<uint64_t> srcs, dsts;
    std::vector<uint32_t> wantc;
    std::set<uint64_t> have;
    for (const auto &e : want) {
      have.insert(e.first);
      srcs.push_back(h);
      dsts.push_back(e.first);
      wantc.push_back(1);
    }
    for (size_t i = 0; i < want.size() + 8; i++) {
      const uint64_t d = rng() % kUniverse;
      srcs.push_back(h);
      dsts.push_back(d);
      wantc.push_back(have.count(d) ? 1 : 0);
    }
    std::vector<uint32_t> got(srcs.size(), 99);
    Err err;
    ASSERT_EQ(gt_snapshot_edge_counts(snap, srcs.data(), dsts.data(), srcs.size(), nullptr, got.data(), err.get()),
              GT_OK)
        << err.msg();
    EXPECT_EQ(got, wantc) << "edge counts of hub " << h;
  }
  for (uint64_t h : kInHubs) {
    const EdgeList want = o.Neighbors(h, GT_IN);
    ASSERT_NO_FATAL_FAILURE(CheckNeighbors(snap, GT_IN, h, want));
    ASSERT_NO_FATAL_FAILURE(CheckTooSmall(snap, GT_IN, h, want.size()));
  }
}

// Random ops on the hubs: new edges, new weights of existing ones,
// deletes of existing and of absent edges, and now and then a vertex
// delete of one of a hub's neighbors (so that a file run is no longer
// clean for it, and the reads take the general merge).
// With fresh (*next: the next unused id), only upserts: new edges to new
// vertices, and new weights of edges the hub has: a file flushed after
// such batches holds one live version an edge (a clean run above the
// level's, which reads merge in one pass: CleanPair).
std::vector<gt_op> HubBatch(const Oracle &o, std::mt19937_64 &rng, bool vdel, bool fresh, uint64_t *next) {
  std::vector<gt_op> ops;
  const size_t n = fresh ? 40 + rng() % 40 : 1 + rng() % 40;
  for (size_t i = 0; i < n; i++) {
    const bool out = rng() % 2 == 0;
    const uint64_t h = out ? kOutHubs[rng() % 2] : kInHubs[rng() % 2];
    const uint64_t x = rng() % kUniverse;
    const double w = static_cast<double>(rng() % 9) * 0.5;
    if (fresh) {
      // A new edge to a new vertex, or a new weight of an edge the level
      // holds (a tie between the two runs: the newer's weight wins).
      const EdgeList cur = o.Neighbors(h, out ? GT_OUT : GT_IN);
      const uint64_t y = rng() % 4 == 0 && !cur.empty() ? cur[rng() % cur.size()].first : (*next)++;
      ops.push_back(out ? Up(h, y, w + 0.25) : Up(y, h, w + 0.25));
      continue;
    }
    const uint64_t r = rng() % 100;
    const EdgeList cur = o.Neighbors(h, out ? GT_OUT : GT_IN);
    if (r < 45 || cur.empty()) {
      ops.push_back(out ? Up(h, x, w) : Up(x, h, w));
    } else if (r < 65) {
      const uint64_t y = cur[rng() % cur.size()].first;  // a new weight
      ops.push_back(out ? Up(h, y, w) : Up(y, h, w));
    } else if (r < 90) {
      const uint64_t y = cur[rng() % cur.size()].first;
      ops.push_back(out ? Del(h, y) : Del(y, h));
    } else if (r < 97 || !vdel) {
      ops.push_back(out ? Del(h, x) : Del(x, h));  // usually of nothing
    } else {
      ops.push_back(DelV(cur[rng() % cur.size()].first));
    }
  }
  return ops;
}

void RunHubModel(bool vdel) {
  const uint64_t seed = Seed();
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  TempDir dir;
  StoreHolder holder;
  gt_store *&s = holder.s;
  gt_options opts = SmallOptions();
  opts.memgraph_bytes = 256 << 10;  // room for a few batches between flushes
  opts.l0_compaction_trigger = 8;   // the files stay where the test puts them
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), opts, &s));
  Oracle oracle;
  // The load: long lists, compacted (a clean run each).
  std::vector<gt_op> load;
  for (uint64_t h : kOutHubs)
    for (int i = 0; i < 700; i++) load.push_back(Up(h, rng() % kUniverse, 1.0));
  for (uint64_t h : kInHubs)
    for (int i = 0; i < 700; i++) load.push_back(Up(rng() % kUniverse, h, 1.0));
  ASSERT_NO_FATAL_FAILURE(Apply(s, load));
  oracle.Apply(load);
  ASSERT_NO_FATAL_FAILURE(Flush(s));
  ASSERT_NO_FATAL_FAILURE(CompactAll(s));
  struct Held {
    std::unique_ptr<Snap> snap;
    Oracle state;
  };
  std::vector<Held> held;
  const int held_every = gt_test::Volume(1, 4);
  uint64_t next = kUniverse;
  for (int step = 1; step <= 160; step++) {
    SCOPED_TRACE("batch " + std::to_string(step));
    // Batches 75-111 add new edges only, flushed at 111 (CleanPair).
    const std::vector<gt_op> ops = HubBatch(oracle, rng, vdel, step > 74 && step <= 111, &next);
    ASSERT_NO_FATAL_FAILURE(Apply(s, ops));
    oracle.Apply(ops);
    // Whether this batch changed the files under the pinned snapshots.
    bool files_changed = false;
    if (step % 37 == 0) {
      ASSERT_NO_FATAL_FAILURE(Flush(s));  // an L0 file above the bottom
      files_changed = true;
    }
    // From 74 to 141 no snapshot is pinned: the compaction at 74 keeps
    // one version an edge, and the file flushed at 111 sits above it
    // clean (CleanPair).
    if (step == 74) held.clear();
    if (step % 71 == 0 || step == 74) {
      ASSERT_NO_FATAL_FAILURE(CompactAll(s));  // all clean again
      files_changed = true;
    }
    {
      Snap snap(s);
      ASSERT_NO_FATAL_FAILURE(CheckHubs(snap.s, oracle, rng));
    }
    if (step % 10 == 0 && (step < 74 || step > 141)) {
      held.push_back(Held{std::make_unique<Snap>(s), oracle});
      if (held.size() > 4) held.erase(held.begin());
    }
    // The pinned snapshots: after every batch in the whole run; under
    // the sanitizer, where they are about a third of the test's time,
    // after every held_every-th and after each flush or compaction (the
    // batches between differ only in the MemGraph versions they add above
    // them).
    if (step % held_every == 0 || files_changed) {
      for (const Held &h : held) ASSERT_NO_FATAL_FAILURE(CheckHubs(h.snap->s, h.state, rng));
    }
  }
}

TEST(ReadPathVolumeTest, HubsAsIngestLeavesThemAgainstOracle) { RunHubModel(false); }
TEST(ReadPathVolumeTest, HubsWithVertexDeletesAgainstOracle) { RunHubModel(true); }

}  // namespace
}  // namespace gt_store_test
