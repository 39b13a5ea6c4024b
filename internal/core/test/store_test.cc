// store_test.cc -- the storage core through its C API (graphtide.h) only,
// against an oracle: a randomized test applies a few hundred batches of
// upserts, edge deletes and vertex deletes (a vertex delete removes every
// edge with src==v or dst==v that exists before it; ops of a batch apply in
// order) to a store with tiny options (64 KiB MemGraphs, 16 KiB segments, L0
// trigger 2, size ratio 3, 4 levels, in-edges) and to a std::map oracle, and
// checks gt_snapshot_scan over the whole range (paged, both directions),
// gt_snapshot_neighbors, gt_snapshot_degree and gt_snapshot_gather, pinned
// snapshots against the oracle state of their time, durable snapshots
// (gt_snapshot_new_durable) against the oracle state of the newest flush,
// and everything again after flush + close + reopen. Also: batch atomicity
// under concurrent readers, and every snapshot of readers racing a writer
// against an oracle. The deterministic API tests are in store_api_test.cc.
// Every gt_error is released with gt_error_free so the ASan leak check is
// meaningful.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "store_test_util.h"

namespace {

using namespace gt_store_test;  // NOLINT(google-build-using-namespace)

// ---------------------------------------------------------------------------
// The randomized model test

// The randomized model test's run with opts: the store, the oracle and
// what the run has seen. With manifest_rewrites, opts make the MANIFEST be
// rewritten as a snapshot over and over, and the run checks it was.
class ModelRun {
 public:
  ModelRun(const gt_options &opts, uint64_t seed) : opts_(opts), gen_(seed), rng_(gen_.rng()) {}

  void Run(bool manifest_rewrites) {
    ASSERT_NO_FATAL_FAILURE(Open(dir_.path(), opts_, &holder_.s));
    for (int step = 1; step <= kBatches; step++) {
      SCOPED_TRACE("batch " + std::to_string(step));
      ASSERT_NO_FATAL_FAILURE(ApplyBatch(step));
      ASSERT_NO_FATAL_FAILURE(RandomAction());
      if (step % 35 == 0) {
        NoteLevels();
        Snap snap(holder_.s);
        ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle_, rng_, true));
        ASSERT_NO_FATAL_FAILURE(CheckHeld("periodic"));
      }
      if (step == kBatches / 3 || step == 2 * kBatches / 3) {
        ASSERT_NO_FATAL_FAILURE(Reopen(step));
      }
    }
    ASSERT_NO_FATAL_FAILURE(CheckHeld("end"));
    held_.clear();
    ASSERT_NO_FATAL_FAILURE(CompactAll(holder_.s));
    ASSERT_NO_FATAL_FAILURE(CheckCompacted(manifest_rewrites));
    EXPECT_GE(deepest_seen_, 2u) << "the workload should reach L2 at least";
    EXPECT_GE(durable_checked_, 5) << "durable snapshots should be checked against their state";
    ASSERT_NO_FATAL_FAILURE(Reopen(kBatches + 1));
    ASSERT_NO_FATAL_FAILURE(Close(&holder_.s));
  }

 private:
  static constexpr int kBatches = 420;

  // Applies the step's batch to the store and the oracle, then checks the
  // vertices it touched at the newest state.
  void ApplyBatch(int step) {
    gen_.set_vertex_deletes(step > kBatches / 2);
    const std::vector<gt_op> ops = gen_.Batch(oracle_);
    const std::string srcpos = "pos-" + std::to_string(step);
    uint64_t seq = 0;
    ASSERT_NO_FATAL_FAILURE(Apply(holder_.s, ops, &seq, srcpos));
    ASSERT_EQ(seq, last_seq_ + 1) << "one new sequence number per batch";
    last_seq_ = seq;
    last_srcpos_ = srcpos;
    oracle_.Apply(ops);
    recent_[seq] = oracle_;
    while (recent_.size() > 64) recent_.erase(recent_.begin());

    Snap snap(holder_.s);
    ASSERT_EQ(gt_snapshot_seq(snap.s), seq);
    std::set<uint64_t> touched;
    for (size_t i = 0; i < ops.size() && touched.size() < 6; i++) {
      touched.insert(ops[i].src);
      if (ops[i].kind != GT_OP_DELETE_VERTEX) touched.insert(ops[i].dst);
    }
    touched.insert(gen_.Vertex());
    for (uint64_t v : touched) {
      ASSERT_NO_FATAL_FAILURE(CheckNeighbors(snap.s, GT_OUT, v, oracle_.Neighbors(v, GT_OUT)));
      ASSERT_NO_FATAL_FAILURE(CheckNeighbors(snap.s, GT_IN, v, oracle_.Neighbors(v, GT_IN)));
    }
  }

  // One of: a flush, a full compaction, pinning a snapshot, releasing
  // one, a durable snapshot; or nothing.
  void RandomAction() {
    gt_store *s = holder_.s;
    const uint64_t r = rng_() % 1000;
    if (r < 40) {
      ASSERT_NO_FATAL_FAILURE(Flush(s));
    } else if (r < 55) {
      ASSERT_NO_FATAL_FAILURE(CompactAll(s));
      // Right after a full compaction reads may take the single-level paths.
      Snap snap(s);
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle_, rng_, true, 4));
    } else if (r < 95 && held_.size() < 3) {
      HeldSnapshot h{Snap(s), oracle_, last_seq_};
      held_.push_back(std::move(h));
    } else if (r < 135 && !held_.empty()) {
      const size_t k = rng_() % held_.size();
      SCOPED_TRACE("releasing snapshot seq " + std::to_string(held_[k].seq));
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(held_[k].snap.s, held_[k].state, rng_, true, 4));
      held_.erase(held_.begin() + static_cast<long>(k));
    } else if (r < 175) {
      ASSERT_NO_FATAL_FAILURE(CheckDurable());
    }
  }

  // A durable snapshot sees exactly the state as of the newest flush.
  void CheckDurable() {
    gt_metrics before, after;
    gt_get_metrics(holder_.s, &before);
    Snap snap(holder_.s, true);
    gt_get_metrics(holder_.s, &after);
    const uint64_t d = gt_snapshot_seq(snap.s);
    ASSERT_GE(d, before.durable_seq);
    ASSERT_LE(d, after.durable_seq);
    ASSERT_LE(d, last_seq_);
    auto it = recent_.find(d);
    if (it == recent_.end()) return;
    SCOPED_TRACE("durable snapshot seq " + std::to_string(d) + " at seq " + std::to_string(last_seq_));
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, it->second, rng_, true, 4));
    durable_checked_++;
    if (held_.size() < 3) held_.push_back(HeldSnapshot{std::move(snap), it->second, d});
  }

  void CheckHeld(const char *when) {
    for (size_t i = 0; i < held_.size(); i++) {
      SCOPED_TRACE(std::string(when) + ": pinned snapshot seq " + std::to_string(held_[i].seq));
      EXPECT_EQ(gt_snapshot_seq(held_[i].snap.s), held_[i].seq);
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(held_[i].snap.s, held_[i].state, rng_, true, 4));
    }
  }

  void NoteLevels() {
    gt_metrics m;
    gt_get_metrics(holder_.s, &m);
    EXPECT_EQ(m.num_levels, opts_.max_levels);
    EXPECT_EQ(m.background_errors, 0u);
    for (uint32_t i = 0; i < m.num_levels && i < GT_MAX_LEVELS; i++)
      if (m.levels[i].files > 0) deepest_seen_ = std::max(deepest_seen_, i);
  }

  void Reopen(int step) {
    SCOPED_TRACE("reopen at batch " + std::to_string(step));
    ASSERT_NO_FATAL_FAILURE(CheckHeld("before reopen"));
    held_.clear();  // live snapshots must be released before gt_close
    ASSERT_NO_FATAL_FAILURE(Flush(holder_.s));
    gt_metrics before;
    gt_get_metrics(holder_.s, &before);
    rewrites_ += before.manifest_rewrites;
    ASSERT_NO_FATAL_FAILURE(Close(&holder_.s));
    ASSERT_NO_FATAL_FAILURE(Open(dir_.path(), opts_, &holder_.s));
    EXPECT_EQ(SourcePosition(holder_.s), last_srcpos_);
    gt_metrics m;
    gt_get_metrics(holder_.s, &m);
    EXPECT_EQ(m.last_seq, last_seq_);
    EXPECT_EQ(m.durable_seq, last_seq_);
    Snap snap(holder_.s);
    EXPECT_EQ(gt_snapshot_seq(snap.s), last_seq_);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle_, rng_, true));
  }

  // After the last full compaction: the counts of what ran, an empty L0,
  // every checksum, and the whole graph.
  void CheckCompacted(bool manifest_rewrites) {
    gt_metrics m;
    gt_get_metrics(holder_.s, &m);
    NoteLevels();
    std::printf(
        "[ model    ] seq %llu, flushes %llu, compactions %llu, stalls %llu, deepest level seen L%u, manifest "
        "rewrites %llu (%llu bytes)\n",
        static_cast<unsigned long long>(m.last_seq), static_cast<unsigned long long>(m.flushes),
        static_cast<unsigned long long>(m.compactions), static_cast<unsigned long long>(m.stalls), deepest_seen_,
        static_cast<unsigned long long>(m.manifest_rewrites), static_cast<unsigned long long>(m.manifest_bytes));
    rewrites_ += m.manifest_rewrites;
    if (manifest_rewrites)
      EXPECT_GE(rewrites_, 8u) << "a tiny rewrite bound rewrites the MANIFEST every few edits";
    else
      EXPECT_EQ(rewrites_, 0u) << "a small store's MANIFEST stays below the default bound";
    EXPECT_GT(m.flushes, 0u);
    EXPECT_GT(m.compactions, 0u);
    EXPECT_EQ(m.levels[0].files, 0u) << "gt_compact_all must empty L0";
    EXPECT_EQ(m.snapshots_open, 0u);
    Err err;
    EXPECT_EQ(gt_verify_all(holder_.s, err.get()), GT_OK) << err.msg();
    Snap snap(holder_.s);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle_, rng_, true));
  }

  const gt_options opts_;
  TempDir dir_;
  StoreHolder holder_;  // closes the store on early return, before dir_ is removed
  RandomOps gen_;
  std::mt19937_64 &rng_;
  Oracle oracle_;
  std::vector<HeldSnapshot> held_;  // released before holder_ closes the store
  // Oracle state after each recent batch, for durable snapshots (whose seq
  // is the newest flushed one, often a background flush's).
  std::map<uint64_t, Oracle> recent_{{0, Oracle{}}};
  int durable_checked_ = 0;
  uint64_t last_seq_ = 0;
  std::string last_srcpos_;
  uint32_t deepest_seen_ = 0;
  uint64_t rewrites_ = 0;  // MANIFEST rewrites, summed over the opens
};

// The model test with opts; with manifest_rewrites, opts make the MANIFEST
// be rewritten as a snapshot over and over, and the test checks it was.
void RandomizedModel(const gt_options &opts, bool manifest_rewrites) {
  const uint64_t seed = Seed();
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  ModelRun run(opts, seed);
  run.Run(manifest_rewrites);
}

// ---------------------------------------------------------------------------
// Vertex-delete purging

// Vertex deletes leave no scar: with no snapshot pinned, gt_compact_all
// leaves no vertex-delete record (every file was rewritten without what the
// deletes hide), and a reopen recovers the same graph and the same records
// (the manifest records each purge). A snapshot pinned before a delete keeps
// seeing the vertex's old edges across compactions until it is released,
// and the records it needs stay. Every other batch deletes a vertex, so
// full and partial purges and reopens after them run many times. Run with
// background compaction (which purges too, racing the test's reads of the
// record count) and without (where the count after a reopen is exact).
// The counts of full purges, pinned purges and reopens it asks for are
// per 300 batches.
void RunVertexDeletePurge(bool auto_compaction, int batches) {
  const uint64_t seed = Seed();
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(seed));
  TempDir dir;
  gt_options opts = SmallOptions();
  opts.disable_auto_compaction = auto_compaction ? 0 : 1;
  StoreHolder holder;
  gt_store *&s = holder.s;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), opts, &s));
  RandomOps gen(seed ^ 0x5eed);
  gen.set_vertex_deletes(true);
  auto &rng = gen.rng();
  Oracle oracle;
  std::vector<HeldSnapshot> held;
  uint64_t last_seq = 0;
  int purged_all = 0, kept_for_pin = 0, reopened = 0;
  auto vdels = [&]() {
    gt_metrics m;
    gt_get_metrics(s, &m);
    return m.vertex_deletes;
  };
  auto check_held = [&](const char *when) {
    for (const HeldSnapshot &h : held) {
      SCOPED_TRACE(std::string(when) + ": pinned snapshot seq " + std::to_string(h.seq));
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(h.snap.s, h.state, rng, true, 4));
    }
  };
  auto compact = [&]() {
    ASSERT_NO_FATAL_FAILURE(CompactAll(s));
    ASSERT_NO_FATAL_FAILURE(check_held("after compact all"));
    Snap snap(s);
    ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true, 4));
  };

  for (int step = 1; step <= batches; step++) {
    SCOPED_TRACE("batch " + std::to_string(step));
    std::vector<gt_op> ops = gen.Batch(oracle);
    if (rng() % 2 == 0) ops.push_back(DelV(gen.Vertex()));
    ASSERT_NO_FATAL_FAILURE(Apply(s, ops, &last_seq));
    oracle.Apply(ops);
    const uint64_t r = rng() % 100;
    if (r < 10) {
      ASSERT_NO_FATAL_FAILURE(Flush(s));
    } else if (r < 25 && held.size() < 3) {
      held.push_back(HeldSnapshot{Snap(s), oracle, last_seq});
    } else if (r < 40 && !held.empty()) {
      const size_t k = rng() % held.size();
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(held[k].snap.s, held[k].state, rng, true, 4));
      held.erase(held.begin() + static_cast<long>(k));
    } else if (r < 52) {
      ASSERT_NO_FATAL_FAILURE(compact());
      if (held.empty()) {
        EXPECT_EQ(vdels(), 0u) << "compact all with no snapshot pinned must purge every vertex delete";
        purged_all++;
      } else if (vdels() > 0) {
        kept_for_pin++;
      }
      // Deletes newer than a compacted level: scans copy the segments they
      // do not touch in bulk and filter the others.
      const std::vector<gt_op> dels{DelV(gen.Vertex()), DelV(gen.Vertex())};
      ASSERT_NO_FATAL_FAILURE(Apply(s, dels, &last_seq));
      oracle.Apply(dels);
      Snap snap(s);
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
    } else if (r < 57) {
      SCOPED_TRACE("reopen");
      ASSERT_NO_FATAL_FAILURE(check_held("before reopen"));
      held.clear();
      ASSERT_NO_FATAL_FAILURE(Flush(s));
      const uint64_t before = vdels();
      ASSERT_NO_FATAL_FAILURE(Close(&s));
      ASSERT_NO_FATAL_FAILURE(Open(dir.path(), opts, &s));
      // A background compaction may purge between the count and the close.
      if (auto_compaction)
        EXPECT_LE(vdels(), before) << "recovery must purge what the store had purged";
      else
        EXPECT_EQ(vdels(), before) << "recovery must purge what the store had purged, and no more";
      {
        Snap snap(s);
        ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
      }
      ASSERT_NO_FATAL_FAILURE(compact());
      EXPECT_EQ(vdels(), 0u) << "after a reopen, compact all must still purge every vertex delete";
      ASSERT_NO_FATAL_FAILURE(Close(&s));
      ASSERT_NO_FATAL_FAILURE(Open(dir.path(), opts, &s));
      EXPECT_EQ(vdels(), 0u) << "a purge must be recovered";
      Snap snap(s);
      ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap.s, oracle, rng, true));
      reopened++;
    }
  }
  ASSERT_NO_FATAL_FAILURE(check_held("end"));
  held.clear();
  ASSERT_NO_FATAL_FAILURE(compact());
  EXPECT_EQ(vdels(), 0u);
  Err err;
  EXPECT_EQ(gt_verify_all(s, err.get()), GT_OK) << err.msg();
  const auto per300 = [batches](int n) { return std::max(1, n * batches / 300); };
  EXPECT_GE(purged_all, per300(5)) << "full purges should run many times";
  EXPECT_GE(kept_for_pin, per300(3)) << "pinned snapshots should keep vertex deletes alive across compactions";
  EXPECT_GE(reopened, per300(3)) << "reopens after purges should run many times";
  std::printf("[ purges   ] %d batches: %d full purges, %d kept for a pin, %d reopens\n", batches, purged_all,
              kept_for_pin, reopened);
  ASSERT_NO_FATAL_FAILURE(Close(&s));
}

// 300 batches; 120 under the sanitizers (which made it the longest C++
// test of make test, 3-4 minutes).
TEST(StoreModelVolumeTest, VertexDeletePurge) { RunVertexDeletePurge(true, gt_test::Volume(300, 120)); }
// Without background compaction: the paths of the one above but the race,
// so the sanitizer build leaves it out.
TEST(StoreModelVolumeTest, VertexDeletePurgeExactRecovery) {
  GT_WHOLE_RUN_ONLY();
  RunVertexDeletePurge(false, 300);
}

// Without MANIFEST rewrites: the sanitizer build runs the one below, with
// them, which drives these paths and more.
TEST(StoreModelVolumeTest, RandomizedAgainstOracle) {
  GT_WHOLE_RUN_ONLY();
  RandomizedModel(SmallOptions(), false);
}

// The same with a 1-byte MANIFEST rewrite bound: the MANIFEST is rewritten
// whenever it reaches twice its snapshot's size, i.e. every few flushes and
// compactions, with snapshots pinned and obsolete files still on disk, and
// every reopen recovers from a rewritten MANIFEST.
TEST(StoreModelTest, RandomizedAgainstOracleWithManifestRewrites) {
  gt_options o = SmallOptions();
  o.test_manifest_rewrite_bytes = 1;
  RandomizedModel(o, true);
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
          if (gt_snapshot_neighbors(snap, v, GT_OUT, nullptr, d.data(), w.data(), nullptr, nullptr, d.size(), &n,
                                    e.get()) != GT_OK) {
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
  const uint64_t seed = gt_test::SeedOr(11);
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
