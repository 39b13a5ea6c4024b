// memgraph_test.cc -- MemGraph::VerticesFrom against a brute-force sorted
// set, active (presence bitmaps per id band, probing past them) and frozen
// (sorted index), for ids in both bands, near and far from each band's base.
#include "memgraph.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <vector>

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
    m.VerticesFrom(dir, pos, hi, max, &page, &resume);
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

}  // namespace
