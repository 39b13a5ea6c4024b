// cells_test.cc -- vertex records' cells (GT_OP_PUT_CELL, GT_VERTEX): a
// randomized model test against a std::map oracle kept per sequence
// number, through flushes, compactions, reopens, vertex deletes and reads
// as of past seqs; cells never show among the edges; bad cell ops are
// refused.
#include "store_test_util.h"

namespace gt_store_test {
namespace {

using Cell = std::pair<double, int64_t>;                     // (weight, time)
using Cells = std::map<uint64_t, std::map<uint32_t, Cell>>;  // vertex -> index -> cell; no empty rows

gt_op PutCell(uint64_t v, uint32_t idx, double w, int64_t t) {
  gt_op op = Op(GT_OP_PUT_CELL, v, GT_CELL_BASE + idx, w);
  op.time = t;
  return op;
}
gt_op DelCell(uint64_t v, uint32_t idx) { return Op(GT_OP_DELETE_CELL, v, GT_CELL_BASE + idx, 0); }

// Applies ops to the oracles in order, as the store does.
void ApplyToOracle(const std::vector<gt_op> &ops, Oracle *edges, Cells *cells) {
  std::vector<gt_op> eops;
  for (const gt_op &op : ops) {
    switch (op.kind) {
      case GT_OP_PUT_CELL:
        (*cells)[op.src][static_cast<uint32_t>(op.dst - GT_CELL_BASE)] = {op.weight, op.time};
        break;
      case GT_OP_DELETE_CELL:
        if (auto it = cells->find(op.src); it != cells->end()) {
          it->second.erase(static_cast<uint32_t>(op.dst - GT_CELL_BASE));
          if (it->second.empty()) cells->erase(it);
        }
        break;
      case GT_OP_DELETE_VERTEX:
        cells->erase(op.src);
        eops.push_back(op);
        break;
      default:
        eops.push_back(op);
    }
    // Edge ops one by one: a vertex delete must see the edges before it.
    if (!eops.empty()) {
      edges->Apply(eops);
      eops.clear();
    }
  }
}

// v's cells in snap, read with gt_snapshot_neighbors in direction GT_VERTEX.
std::map<uint32_t, Cell> ReadCells(gt_snapshot *snap, uint64_t v) {
  std::vector<uint64_t> dsts(GT_MAX_CELLS);
  std::vector<double> ws(GT_MAX_CELLS);
  std::vector<int64_t> ts(GT_MAX_CELLS);
  std::vector<uint16_t> types(GT_MAX_CELLS);
  size_t n = 0;
  Err err;
  int rc = gt_snapshot_neighbors(snap, v, GT_VERTEX, nullptr, dsts.data(), ws.data(), types.data(), ts.data(),
                                 dsts.size(), &n, err.get());
  EXPECT_EQ(rc, GT_OK) << err.msg();
  std::map<uint32_t, Cell> got;
  for (size_t i = 0; i < n; i++) {
    EXPECT_GE(dsts[i], GT_CELL_BASE);
    EXPECT_EQ(types[i], 0);
    if (i > 0) {
      EXPECT_LT(dsts[i - 1], dsts[i]) << "cells in index order";
    }
    got[static_cast<uint32_t>(dsts[i] - GT_CELL_BASE)] = {ws[i], ts[i]};
  }
  uint64_t deg = 0;
  rc = gt_snapshot_degree(snap, v, GT_VERTEX, nullptr, &deg, err.get());
  EXPECT_EQ(rc, GT_OK) << err.msg();
  EXPECT_EQ(deg, n);
  return got;
}

// Every row of want, by point reads and by a scan of every vertex in
// small pages; and the edges of the snapshot against the edge oracle (no
// cell among them).
void CheckCells(gt_snapshot *snap, const Cells &want, const Oracle &edges, std::mt19937_64 &rng,
                const std::string &what) {
  SCOPED_TRACE(what);
  for (const auto &[v, row] : want) EXPECT_EQ(ReadCells(snap, v), row) << "vertex " << v;
  for (uint64_t v : {uint64_t{7777}, GT_HIGH_ID_BASE + 9999, GT_MAX_VERTEX})
    if (want.count(v) == 0) {
      EXPECT_TRUE(ReadCells(snap, v).empty()) << "vertex " << v;
    }
  Adj got;
  ASSERT_NO_FATAL_FAILURE(ScanAll(snap, GT_VERTEX, 0, GT_MAX_VERTEX + 1, 1 + rng() % 5, 1 + rng() % 40, &got));
  Adj rows;
  for (const auto &[v, row] : want)
    for (const auto &[i, c] : row) rows[v].emplace_back(GT_CELL_BASE + i, c.first);
  ExpectSameAdj(got, rows, "scan of the vertex cells");
  ASSERT_NO_FATAL_FAILURE(CheckSnapshot(snap, edges, rng, true, 4));
}

TEST(CellsTest, RandomizedAgainstOracleWithHistory) {
  TempDir dir;
  gt_options o = SmallOptions();
  o.keep_history = 1;
  o.history_seqs = 1u << 20;  // every seq stays readable
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  std::mt19937_64 rng(Seed());
  Oracle edges;
  Cells cells;
  std::map<uint64_t, std::pair<Cells, Oracle>> past;  // seq -> state, some seqs
  auto vertex = [&] {
    const uint64_t v = rng() % 40;
    return rng() % 4 == 0 ? GT_HIGH_ID_BASE + v : v;
  };
  for (int step = 0; step < 400; step++) {
    std::vector<gt_op> ops;
    const int n = 1 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; i++) {
      const uint64_t v = vertex();
      switch (rng() % 16) {
        case 0:
          ops.push_back(DelV(v));
          break;
        case 1:
        case 2:
        case 3:
          ops.push_back(DelCell(v, static_cast<uint32_t>(rng() % 12)));
          break;
        case 4:
        case 5:
          ops.push_back(Up(v, vertex(), static_cast<double>(rng() % 5)));
          break;
        case 6:
          ops.push_back(Del(v, vertex()));
          break;
        default: {
          // A high index now and then; weights of every kind the payload
          // may hold (integers up to 2^48, fractions, negatives).
          const uint32_t idx = rng() % 20 == 0 ? GT_MAX_CELLS - 1 : static_cast<uint32_t>(rng() % 12);
          const double w = rng() % 3 == 0 ? static_cast<double>(rng() % (uint64_t{1} << 48))
                                          : static_cast<double>(static_cast<int64_t>(rng() % 200) - 100) / 8;
          ops.push_back(PutCell(v, idx, w, static_cast<int64_t>(rng() >> 1)));
        }
      }
    }
    uint64_t seq = 0;
    ASSERT_NO_FATAL_FAILURE(Apply(h.s, ops, &seq));
    ApplyToOracle(ops, &edges, &cells);
    if (rng() % 10 == 0) past[seq] = {cells, edges};
    switch (rng() % 40) {
      case 0:
        ASSERT_NO_FATAL_FAILURE(Flush(h.s));
        break;
      case 1:
        ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
        break;
      case 2:
        ASSERT_NO_FATAL_FAILURE(Flush(h.s));
        ASSERT_NO_FATAL_FAILURE(Close(&h.s));
        ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
        break;
    }
    if (step % 25 == 24) {
      Snap now(h.s);
      ASSERT_NO_FATAL_FAILURE(CheckCells(now.s, cells, edges, rng, "newest at step " + std::to_string(step)));
    }
  }
  ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
  for (const auto &[seq, st] : past) {
    gt_snapshot *s = nullptr;
    Err err;
    ASSERT_EQ(gt_snapshot_new_at(h.s, seq, &s, err.get()), GT_OK) << err.msg();
    Snap at;
    at.s = s;
    ASSERT_NO_FATAL_FAILURE(CheckCells(at.s, st.first, st.second, rng, "as of seq " + std::to_string(seq)));
  }
  // Files of direction GT_VERTEX exist, and only they hold cells.
  std::vector<gt_file_info> files(256);
  size_t nf = 0;
  gt_list_files(h.s, files.data(), files.size(), &nf);
  ASSERT_LE(nf, files.size());
  bool any = false;
  for (size_t i = 0; i < nf; i++) {
    if (files[i].dir == GT_VERTEX) any = true;
    if (files[i].dir != GT_VERTEX) {
      EXPECT_LT(files[i].max_dst, GT_CELL_BASE) << "cells in an edge file";
    }
  }
  EXPECT_TRUE(any) << "no file of direction GT_VERTEX";
  // After a reopen without history, what survives is the newest state.
  ASSERT_NO_FATAL_FAILURE(Close(&h.s));
  o.keep_history = 0;
  o.history_seqs = 0;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), o, &h.s));
  ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
  Snap end(h.s);
  ASSERT_NO_FATAL_FAILURE(CheckCells(end.s, cells, edges, rng, "after a full compaction without history"));
}

TEST(CellsTest, DeleteVertexHidesCellsAndCellsBeforeItInTheBatchDie) {
  TempDir dir;
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), SmallOptions(), &h.s));
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {PutCell(5, 0, 1.5, 10), PutCell(5, 3, -2, 0), Up(5, 6)}));
  // In one batch: a cell before the delete dies, one after it lives.
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {PutCell(5, 1, 9, 0), DelV(5), PutCell(5, 2, 4, 44)}));
  Snap s(h.s);
  EXPECT_EQ(ReadCells(s.s, 5), (std::map<uint32_t, Cell>{{2, {4.0, 44}}}));
  // A cell of vertex 6 survives a delete of a vertex whose id equals the
  // cell's index: only the src of a cell counts.
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {PutCell(6, 0, 1, 0), PutCell(6, 1, 2, 0)}));
  ASSERT_NO_FATAL_FAILURE(Apply(h.s, {DelV(0), DelV(1)}));
  ASSERT_NO_FATAL_FAILURE(CompactAll(h.s));
  Snap t(h.s);
  EXPECT_EQ(ReadCells(t.s, 6), (std::map<uint32_t, Cell>{{0, {1.0, 0}}, {1, {2.0, 0}}}));
  EXPECT_EQ(ReadCells(t.s, 5), (std::map<uint32_t, Cell>{{2, {4.0, 44}}}));
}

TEST(CellsTest, BadCellOpsAreRefused) {
  TempDir dir;
  StoreHolder h;
  ASSERT_NO_FATAL_FAILURE(Open(dir.path(), SmallOptions(), &h.s));
  gt_op bad_type = PutCell(1, 0, 1, 0);
  bad_type.type = 3;
  gt_op nan = PutCell(1, 0, std::nan(""), 0);
  gt_op neg_time = PutCell(1, 0, 1, -5);
  for (const gt_op &op :
       {Op(GT_OP_PUT_CELL, 1, 5, 1), Op(GT_OP_PUT_CELL, 1, GT_CELL_BASE + GT_MAX_CELLS, 1),
        Op(GT_OP_DELETE_CELL, 1, GT_CELL_BASE - 1, 0), Op(GT_OP_PUT_CELL, GT_MAX_VERTEX + 1, GT_CELL_BASE, 1),
        Op(GT_OP_DELETE_CELL + 1, 1, 2, 1), Op(GT_OP_UPSERT, 1, GT_CELL_BASE, 1), bad_type, nan, neg_time}) {
    Err err;
    uint64_t seq = 0;
    EXPECT_EQ(gt_apply(h.s, &op, 1, nullptr, 0, &seq, err.get()), GT_ERR_INVALID)
        << "kind " << op.kind << " dst " << op.dst;
  }
  Snap s(h.s);
  EXPECT_EQ(gt_snapshot_seq(s.s), 0u) << "a refused batch took a seq";
  uint64_t deg = 1;
  Err err;
  EXPECT_EQ(gt_snapshot_degree(s.s, 1, 3, nullptr, &deg, err.get()), GT_ERR_INVALID);
}

}  // namespace
}  // namespace gt_store_test
