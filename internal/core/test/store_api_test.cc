// store_api_test.cc -- deterministic tests of the storage core through its
// C API (graphtide.h): option validation, open errors, invalid ops, buffer
// contracts of scans and gathers, in-edge misuse, a second open of a locked
// directory, corrupted segment files reported with path and offset, source
// positions, an empty batch followed by gt_flush, per-band vertex bounds
// after reopening (also from a manifest written without them), durable
// snapshots, and gt_list_files against metrics and disk. The randomized and
// concurrent tests are in store_test.cc. Every gt_error is released with
// gt_error_free so the ASan leak check is meaningful.
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
#include "store_test_util.h"
#include "test_util.h"

namespace {

using namespace gt_store_test;  // NOLINT(google-build-using-namespace)

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
  for (uint32_t dir_arg : {1u, 3u}) {  // no in-edges; no such direction
    SCOPED_TRACE("dir " + std::to_string(dir_arg));
    Err e1, e2, e3;
    EXPECT_EQ(gt_snapshot_degree(snap.s, 2, dir_arg, nullptr, &deg, e1.get()), GT_ERR_INVALID);
    EXPECT_EQ(gt_snapshot_neighbors(snap.s, 2, dir_arg, nullptr, dsts, nullptr, nullptr, nullptr, 4, &n, e2.get()),
              GT_ERR_INVALID);
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 10, dir_arg, nullptr, vids, offs, 4, dsts, nullptr, nullptr, nullptr, 4, &nv,
                               &ne, &next, e3.get()),
              GT_ERR_INVALID);
    EXPECT_FALSE(e1.msg().empty());
  }
  Err err;
  ASSERT_EQ(gt_snapshot_degree(snap.s, 1, GT_OUT, nullptr, &deg, err.get()), GT_OK);
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
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, nullptr, vids, offs, 0, dsts, w, nullptr, nullptr, 16, &nv, &ne,
                               &next, err.get()),
              GT_ERR_BUFFER);
    err.Reset();
    // First vertex (5, 10 edges) does not fit in 4 edges.
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, nullptr, vids, offs, 4, dsts, w, nullptr, nullptr, 4, &nv, &ne,
                               &next, err.get()),
              GT_ERR_BUFFER);
    EXPECT_EQ(ne, 10u);
    EXPECT_EQ(next, 5u);
    err.Reset();
    // 10 edges fit, then vertex 6 does not: stop before it.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, nullptr, vids, offs, 4, dsts, w, nullptr, nullptr, 10, &nv, &ne,
                               &next, err.get()),
              GT_OK)
        << err.msg();
    EXPECT_EQ(nv, 1u);
    EXPECT_EQ(ne, 10u);
    EXPECT_EQ(vids[0], 5u);
    EXPECT_EQ(next, 6u);
    EXPECT_EQ(w[3], 3.0);
    // vcap 1 from 6: vertex 6 then next = 8.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 6, 100, GT_OUT, nullptr, vids, offs, 1, dsts, w, nullptr, nullptr, 16, &nv, &ne,
                               &next, err.get()),
              GT_OK);
    EXPECT_EQ(nv, 1u);
    EXPECT_EQ(vids[0], 6u);
    EXPECT_EQ(next, 8u);
    // Empty and inverted ranges.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 9, 100, GT_OUT, nullptr, vids, offs, 4, dsts, w, nullptr, nullptr, 16, &nv, &ne,
                               &next, err.get()),
              GT_OK);
    EXPECT_EQ(nv, 0u);
    EXPECT_EQ(next, 100u);
    ASSERT_EQ(gt_snapshot_scan(snap.s, 50, 10, GT_OUT, nullptr, vids, offs, 4, dsts, w, nullptr, nullptr, 16, &nv, &ne,
                               &next, err.get()),
              GT_OK);
    EXPECT_EQ(nv, 0u);
    // In-edges of 1: from 6 and 8.
    ASSERT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_IN, nullptr, vids, offs, 4, dsts, w, nullptr, nullptr, 16, &nv, &ne,
                               &next, err.get()),
              GT_OK);
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
  ASSERT_EQ(gt_snapshot_degree(snap.s, 1, GT_OUT, nullptr, &deg, err.get()), GT_OK) << err.msg();
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
    ASSERT_EQ(gt_snapshot_degree(snap.s, 1, GT_OUT, nullptr, &deg, err.get()), GT_OK);
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
  ASSERT_EQ(gt_snapshot_gather(snap.s, vs.data(), vs.size(), GT_OUT, nullptr, offs.data(), dsts.data(), nullptr,
                               nullptr, nullptr, dsts.size(), &done, &ne, err.get()),
            GT_OK)
      << err.msg();
  EXPECT_EQ(done, 4u);
  EXPECT_EQ(ne, 5u);
  EXPECT_EQ(offs, (std::vector<uint64_t>{0, 1, 4, 4, 5}));
  EXPECT_EQ(std::vector<uint64_t>(dsts.begin(), dsts.begin() + 5), (std::vector<uint64_t>{6, 2, 3, 4, 6}));
  // Room for vertex 5 and not for vertex 1 after it: stops after one.
  ASSERT_EQ(gt_snapshot_gather(snap.s, vs.data(), vs.size(), GT_OUT, nullptr, offs.data(), dsts.data(), nullptr,
                               nullptr, nullptr, 2, &done, &ne, err.get()),
            GT_OK);
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(ne, 1u);
  // The first vertex alone does not fit: GT_ERR_BUFFER with its count.
  ASSERT_EQ(gt_snapshot_gather(snap.s, vs.data() + 1, 1, GT_OUT, nullptr, offs.data(), dsts.data(), nullptr, nullptr,
                               nullptr, 2, &done, &ne, err.get()),
            GT_ERR_BUFFER);
  EXPECT_EQ(done, 0u);
  EXPECT_EQ(ne, 3u);
  EXPECT_NE(err.e.message, nullptr);
  err.Reset();
  // No vertices: nothing to do.
  ASSERT_EQ(gt_snapshot_gather(snap.s, nullptr, 0, GT_OUT, nullptr, offs.data(), dsts.data(), nullptr, nullptr, nullptr,
                               0, &done, &ne, err.get()),
            GT_OK);
  EXPECT_EQ(done, 0u);
  // In-edges are not kept; a bad direction is rejected.
  EXPECT_EQ(gt_snapshot_gather(snap.s, vs.data(), 1, GT_IN, nullptr, offs.data(), dsts.data(), nullptr, nullptr,
                               nullptr, 8, &done, &ne, err.get()),
            GT_ERR_INVALID);
  err.Reset();
  EXPECT_EQ(gt_snapshot_gather(snap.s, vs.data(), 1, 7, nullptr, offs.data(), dsts.data(), nullptr, nullptr, nullptr, 8,
                               &done, &ne, err.get()),
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
    EXPECT_EQ(gt_snapshot_degree(snap.s, 2, GT_OUT, nullptr, &deg, err.get()), GT_OK) << err.msg();
    std::vector<uint64_t> d(20000);
    std::vector<double> w(20000);
    size_t n = 0;
    EXPECT_EQ(gt_snapshot_neighbors(snap.s, 1, GT_OUT, nullptr, d.data(), w.data(), nullptr, nullptr, d.size(), &n,
                                    err.get()),
              GT_ERR_CORRUPTION);
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
    EXPECT_EQ(gt_snapshot_scan(snap.s, 0, 100, GT_OUT, nullptr, vids.data(), offs.data(), 64, d.data(), w.data(),
                               nullptr, nullptr, d.size(), &nv, &ne, &next, err.get()),
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

}  // namespace
