// compaction_plan_test.cc -- table tests of the pure compaction-picking
// functions of compaction_plan.h: gt::LevelCapacity, gt::PickCompaction and
// gt::PickFullCompactionStep (and gt::DescribePlan, used as the expected
// value). Checks: L0 below/at/above its trigger; L0 files plus exactly the L1
// segments overlapping their union range; round-robin pointer picks the
// segment after the pointer and wraps; the level with the highest
// bytes/capacity wins; the last level is never a source; bottommost is
// true/false depending on deeper segments overlapping the output range; a
// full compaction proceeds level by level until all data is in one level.
#include "compaction_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

using gt::CompactionPlan;
using gt::LevelState;
using gt::PlanConfig;
using gt::PlanFile;

PlanFile F(uint64_t id, uint64_t min_src, uint64_t max_src, uint64_t bytes = 10) {
  PlanFile f;
  f.id = id;
  f.min_src = min_src;
  f.max_src = max_src;
  f.bytes = bytes;
  return f;
}

// A LevelState with levels[0..nlevels) (levels[0] unused).
struct StateBuilder {
  LevelState s;
  explicit StateBuilder(uint32_t nlevels) { s.levels.resize(nlevels); }
  StateBuilder &L0(std::initializer_list<PlanFile> fs) {
    s.l0.insert(s.l0.end(), fs);
    return *this;
  }
  StateBuilder &L(uint32_t level, std::initializer_list<PlanFile> fs) {
    s.levels.at(level).insert(s.levels.at(level).end(), fs);
    return *this;
  }
  operator LevelState() const { return s; }
};

PlanConfig Cfg(uint32_t l0_trigger = 2, uint32_t size_ratio = 10, uint32_t max_levels = 4, uint64_t l1_bytes = 100) {
  PlanConfig c;
  c.l0_trigger = l0_trigger;
  c.size_ratio = size_ratio;
  c.max_levels = max_levels;
  c.l1_bytes = l1_bytes;
  return c;
}

std::string Pick(const LevelState &s, const PlanConfig &c, const std::vector<uint64_t> &ptrs, CompactionPlan *p) {
  return gt::PickCompaction(s, c, ptrs, p) ? gt::DescribePlan(*p) : "none";
}

// ---------------------------------------------------------------------------
// LevelCapacity

struct CapacityCase {
  const char *name;
  PlanConfig cfg;
  std::vector<uint64_t> want;  // want[i] = capacity of level i+1
};

TEST(LevelCapacityTest, Table) {
  const uint64_t kMax = UINT64_MAX;
  const std::vector<CapacityCase> cases = {
      {"ratio10_4levels", Cfg(2, 10, 4, 100), {100, 1000, kMax}},
      {"ratio3_7levels", Cfg(2, 3, 7, 100), {100, 300, 900, 2700, 8100, kMax}},
      {"two_levels_l1_is_last", Cfg(2, 10, 2, 100), {kMax}},
      {"saturates_instead_of_overflowing", Cfg(2, 10, 7, 1ull << 62), {1ull << 62, kMax, kMax, kMax, kMax, kMax}},
      {"ratio1000_near_overflow",
       Cfg(4, 1000, 8, 1ull << 30),
       {1ull << 30, (1ull << 30) * 1000, (1ull << 30) * 1000000, (1ull << 30) * 1000000000ull, kMax, kMax, kMax}},
  };
  for (const CapacityCase &c : cases) {
    SCOPED_TRACE(c.name);
    for (size_t i = 0; i < c.want.size(); i++)
      EXPECT_EQ(gt::LevelCapacity(c.cfg, static_cast<uint32_t>(i + 1)), c.want[i]) << "level " << i + 1;
  }
}

// ---------------------------------------------------------------------------
// PickCompaction

struct PickCase {
  const char *name;
  LevelState state;
  PlanConfig cfg;
  std::vector<uint64_t> pointers;  // per level; empty = all zero
  std::string want;                // DescribePlan, or "none"
  int64_t want_pointer;            // expected plan.pointer, -1 = not checked
};

// L1: three segments of 50 bytes (score 1.5 with l1_bytes 100);
// L2: three segments of 100 bytes (score 0.3).
StateBuilder RoundRobinState() {
  StateBuilder b(4);
  b.L(1, {F(10, 1, 9, 50), F(11, 10, 19, 50), F(12, 20, 29, 50)});
  b.L(2, {F(20, 5, 12, 100), F(21, 13, 25, 100), F(22, 26, 40, 100)});
  return b;
}

// Two L0 files with union range [10,50] and L1 segments around it.
StateBuilder L0OverlapState() {
  StateBuilder b(4);
  b.L0({F(2, 40, 50), F(1, 10, 20)});
  b.L(1, {F(3, 0, 5), F(4, 8, 12), F(5, 21, 39), F(6, 45, 60), F(7, 61, 70)});
  return b;
}

std::vector<PickCase> PickCases() {
  const std::vector<uint64_t> z;  // all pointers zero
  return {
      {"empty", StateBuilder(4), Cfg(), z, "none", -1},
      {"l0_below_trigger", StateBuilder(4).L0({F(1, 0, 10)}), Cfg(2), z, "none", -1},
      {"l0_below_trigger_4", StateBuilder(4).L0({F(1, 0, 10), F(2, 0, 10), F(3, 5, 7)}), Cfg(4), z, "none", -1},
      {"l0_at_trigger_sorted_by_id", StateBuilder(4).L0({F(2, 15, 30), F(1, 10, 20)}), Cfg(2), z,
       "L0->L1 from=[1 2] to=[] bottommost", 0},
      {"l0_above_trigger_takes_all", StateBuilder(4).L0({F(3, 0, 1), F(1, 2, 3), F(2, 4, 5)}), Cfg(2), z,
       "L0->L1 from=[1 2 3] to=[] bottommost", 0},
      {"l0_trigger_one", StateBuilder(4).L0({F(7, 3, 3)}), Cfg(1), z, "L0->L1 from=[7] to=[] bottommost", 0},
      // Segment 5 [21,39] overlaps neither file but lies inside their union
      // range; 3 [0,5] and 7 [61,70] are outside it.
      {"l0_plus_l1_overlapping_union_range", L0OverlapState(), Cfg(2), z, "L0->L1 from=[1 2] to=[4 5 6] bottommost", 0},
      {"l0_l1_inclusive_boundaries",
       StateBuilder(4).L0({F(1, 10, 20), F(2, 12, 18)}).L(1, {F(3, 0, 9), F(4, 20, 25), F(5, 21, 30)}), Cfg(2), z,
       "L0->L1 from=[1 2] to=[4] bottommost", 0},
      {"l0_l1_single_point_segments",
       StateBuilder(4).L0({F(1, 10, 10), F(2, 30, 30)}).L(1, {F(3, 9, 9), F(4, 10, 10), F(5, 30, 30), F(6, 31, 31)}),
       Cfg(2), z, "L0->L1 from=[1 2] to=[4 5] bottommost", 0},
      // The output range is [8,60] (L0 union [10,50] widened by L1 segments
      // 4 [8,12] and 6 [45,60]); L2 [55,58] overlaps only the widened range.
      {"l0_not_bottommost_l2_overlaps_output_range", L0OverlapState().L(2, {F(8, 55, 58)}), Cfg(2), z,
       "L0->L1 from=[1 2] to=[4 5 6]", 0},
      {"l0_bottommost_l2_disjoint", L0OverlapState().L(2, {F(8, 65, 70)}), Cfg(2), z,
       "L0->L1 from=[1 2] to=[4 5 6] bottommost", 0},
      {"l0_not_bottommost_l3_overlaps", L0OverlapState().L(3, {F(9, 0, 1000)}), Cfg(2), z,
       "L0->L1 from=[1 2] to=[4 5 6]", 0},
      {"l0_trigger_beats_level_score", StateBuilder(4).L0({F(1, 0, 5), F(2, 3, 9)}).L(1, {F(3, 0, 9, 500)}), Cfg(2), z,
       "L0->L1 from=[1 2] to=[3] bottommost", 0},
      {"level_score_below_one", StateBuilder(4).L(1, {F(3, 1, 9, 99)}).L(2, {F(4, 0, 9, 999)}), Cfg(), z, "none", -1},
      {"level_score_exactly_one", StateBuilder(4).L(1, {F(3, 1, 9, 60), F(4, 10, 19, 40)}), Cfg(), z,
       "L1->L2 from=[3] to=[] bottommost", 9},
      // Round robin: the first segment whose min_src > pointer, wrapping.
      {"round_robin_pointer_0", RoundRobinState(), Cfg(), {0, 0, 0, 0}, "L1->L2 from=[10] to=[20] bottommost", 9},
      {"round_robin_after_first", RoundRobinState(), Cfg(), {0, 9, 0, 0}, "L1->L2 from=[11] to=[20 21] bottommost", 19},
      {"round_robin_after_second",
       RoundRobinState(),
       Cfg(),
       {0, 19, 0, 0},
       "L1->L2 from=[12] to=[21 22] bottommost",
       29},
      {"round_robin_wraps_after_last",
       RoundRobinState(),
       Cfg(),
       {0, 29, 0, 0},
       "L1->L2 from=[10] to=[20] bottommost",
       9},
      {"round_robin_pointer_inside_segment",
       RoundRobinState(),
       Cfg(),
       {0, 15, 0, 0},
       "L1->L2 from=[12] to=[21 22] bottommost",
       29},
      {"round_robin_pointer_past_everything",
       RoundRobinState(),
       Cfg(),
       {0, 1000, 0, 0},
       "L1->L2 from=[10] to=[20] bottommost",
       9},
      {"round_robin_pointer_of_other_level_ignored",
       RoundRobinState(),
       Cfg(),
       {0, 0, 19, 19},
       "L1->L2 from=[10] to=[20] bottommost",
       9},
      // Pointer 0 and a segment starting at vertex 0: "min_src > pointer"
      // skips it on the first pass (it is reached after wrapping).
      {"round_robin_segment_at_vertex_0", StateBuilder(4).L(1, {F(1, 0, 9, 60), F(2, 10, 19, 60)}), Cfg(), z,
       "L1->L2 from=[2] to=[] bottommost", 19},
      {"round_robin_single_segment_wraps",
       StateBuilder(4).L(1, {F(1, 0, 9, 200)}),
       Cfg(),
       {0, 9, 0, 0},
       "L1->L2 from=[1] to=[] bottommost",
       9},
      // Highest score wins (max_levels 5: L1 100, L2 1000, L3 10000, L4 last).
      {"highest_score_deeper_level",
       StateBuilder(5).L(1, {F(1, 1, 9, 120)}).L(2, {F(2, 1, 9, 1500)}).L(3, {F(3, 0, 50, 5000)}), Cfg(2, 10, 5), z,
       "L2->L3 from=[2] to=[3] bottommost", 9},
      {"highest_score_shallower_level",
       StateBuilder(5).L(1, {F(1, 1, 9, 300)}).L(2, {F(2, 1, 9, 1500)}).L(3, {F(3, 0, 50, 5000)}), Cfg(2, 10, 5), z,
       "L1->L2 from=[1] to=[2]", 9},
      {"highest_score_middle_level",
       StateBuilder(5).L(1, {F(1, 1, 9, 110)}).L(2, {F(2, 1, 9, 1200)}).L(3, {F(3, 1, 50, 30000)}), Cfg(2, 10, 5), z,
       "L3->L4 from=[3] to=[] bottommost", 50},
      {"highest_score_ignores_under_capacity_levels",
       StateBuilder(5).L(1, {F(1, 1, 9, 90)}).L(2, {F(2, 1, 9, 1100)}).L(3, {F(3, 1, 50, 9000)}), Cfg(2, 10, 5), z,
       "L2->L3 from=[2] to=[3] bottommost", 9},
      // The last level is unbounded and never a source.
      {"last_level_never_source_3_levels", StateBuilder(3).L(2, {F(1, 0, 9, 1ull << 60)}), Cfg(2, 10, 3), z, "none",
       -1},
      {"last_level_never_source_4_levels", StateBuilder(4).L(1, {F(1, 0, 9, 10)}).L(3, {F(2, 0, 9, UINT64_MAX / 2)}),
       Cfg(2, 10, 4), z, "none", -1},
      {"two_levels_l1_is_last", StateBuilder(2).L(1, {F(1, 0, 9, 1ull << 40)}), Cfg(2, 10, 2), z, "none", -1},
      {"two_levels_l0_still_compacts", StateBuilder(2).L0({F(2, 0, 5), F(3, 4, 9)}).L(1, {F(1, 0, 9, 1ull << 40)}),
       Cfg(2, 10, 2), z, "L0->L1 from=[2 3] to=[1] bottommost", 0},
      // bottommost for level compactions.
      {"level_not_bottommost_deeper_overlaps",
       StateBuilder(4).L(1, {F(1, 10, 19, 150)}).L(2, {F(2, 0, 15)}).L(3, {F(3, 16, 18)}), Cfg(), z,
       "L1->L2 from=[1] to=[2]", 19},
      {"level_bottommost_deeper_disjoint",
       StateBuilder(4).L(1, {F(1, 10, 19, 150)}).L(2, {F(2, 0, 15)}).L(3, {F(3, 20, 30)}), Cfg(), z,
       "L1->L2 from=[1] to=[2] bottommost", 19},
      // L3 [6,7] misses the picked segment [10,19] but lies in the output
      // range [5,19] widened by L2 segment [5,12].
      {"level_bottommost_uses_output_range",
       StateBuilder(4).L(1, {F(1, 10, 19, 150)}).L(2, {F(2, 5, 12)}).L(3, {F(3, 6, 7)}), Cfg(), z,
       "L1->L2 from=[1] to=[2]", 19},
      {"level_l2_to_l3_is_bottommost_at_last_level",
       StateBuilder(4).L(2, {F(1, 0, 9, 2000)}).L(3, {F(2, 0, 4), F(3, 5, 9), F(4, 10, 20)}), Cfg(), z,
       "L2->L3 from=[1] to=[2 3] bottommost", 9},
  };
}

TEST(PickCompactionTest, Table) {
  for (const PickCase &c : PickCases()) {
    SCOPED_TRACE(c.name);
    std::vector<uint64_t> ptrs = c.pointers;
    if (ptrs.empty()) ptrs.assign(c.cfg.max_levels, 0);
    CompactionPlan p;
    EXPECT_EQ(Pick(c.state, c.cfg, ptrs, &p), c.want);
    if (c.want != "none") {
      if (c.want_pointer >= 0) {
        EXPECT_EQ(p.pointer, static_cast<uint64_t>(c.want_pointer));
      }
      EXPECT_EQ(p.to_level, p.from_level + 1);
    }
  }
}

// Feeding plan.pointer back visits every segment of the level in turn.
TEST(PickCompactionTest, RoundRobinCyclesThroughLevel) {
  const LevelState s = RoundRobinState();
  const PlanConfig c = Cfg();
  std::vector<uint64_t> ptrs(c.max_levels, 0);
  std::vector<uint64_t> picked;
  for (int i = 0; i < 7; i++) {
    CompactionPlan p;
    ASSERT_TRUE(gt::PickCompaction(s, c, ptrs, &p));
    ASSERT_EQ(p.from_level, 1u);
    ASSERT_EQ(p.from_ids.size(), 1u);
    picked.push_back(p.from_ids[0]);
    ptrs[1] = p.pointer;
  }
  EXPECT_EQ(picked, (std::vector<uint64_t>{10, 11, 12, 10, 11, 12, 10}));
}

// A pointers vector shorter than max_levels is treated as zeros.
TEST(PickCompactionTest, ShortPointerVector) {
  CompactionPlan p;
  EXPECT_EQ(Pick(RoundRobinState(), Cfg(), {}, &p), "L1->L2 from=[10] to=[20] bottommost");
}

// ---------------------------------------------------------------------------
// Simulation helpers: apply a plan to a LevelState as the store would (inputs
// replaced by one output file spanning their range at to_level).

void ApplyPlan(LevelState *s, const CompactionPlan &p, uint64_t new_id) {
  uint64_t lo = UINT64_MAX, hi = 0, bytes = 0;
  bool any = false;
  auto take = [&](std::vector<PlanFile> *files, const std::vector<uint64_t> &ids) {
    for (auto it = files->begin(); it != files->end();) {
      if (std::find(ids.begin(), ids.end(), it->id) != ids.end()) {
        lo = std::min(lo, it->min_src);
        hi = std::max(hi, it->max_src);
        bytes += it->bytes;
        any = true;
        it = files->erase(it);
      } else {
        ++it;
      }
    }
  };
  take(p.from_level == 0 ? &s->l0 : &s->levels[p.from_level], p.from_ids);
  take(&s->levels[p.to_level], p.to_ids);
  ASSERT_TRUE(any);
  auto &to = s->levels[p.to_level];
  to.push_back(F(new_id, lo, hi, bytes));
  std::sort(to.begin(), to.end(), [](const PlanFile &a, const PlanFile &b) { return a.min_src < b.min_src; });
}

// The only non-empty level (0 = L0), or -1 if none or several are non-empty.
int OnlyLevel(const LevelState &s) {
  std::vector<int> nonempty;
  if (!s.l0.empty()) nonempty.push_back(0);
  for (size_t i = 1; i < s.levels.size(); i++)
    if (!s.levels[i].empty()) nonempty.push_back(static_cast<int>(i));
  return nonempty.size() == 1 ? nonempty[0] : -1;
}

// ---------------------------------------------------------------------------
// PickFullCompactionStep

struct FullCase {
  const char *name;
  LevelState state;
  PlanConfig cfg;
  std::string want;
};

TEST(PickFullCompactionStepTest, Table) {
  const std::vector<FullCase> cases = {
      {"empty", StateBuilder(4), Cfg(), "none"},
      {"only_l1", StateBuilder(4).L(1, {F(1, 0, 9), F(2, 10, 19)}), Cfg(), "none"},
      {"only_l2", StateBuilder(4).L(2, {F(1, 0, 9)}), Cfg(), "none"},
      {"only_last_level", StateBuilder(4).L(3, {F(1, 0, 9), F(2, 20, 29)}), Cfg(), "none"},
      {"only_l0_below_trigger", StateBuilder(4).L0({F(2, 0, 9)}), Cfg(4), "L0->L1 from=[2] to=[] bottommost"},
      {"only_l0_sorted_by_id", StateBuilder(4).L0({F(5, 0, 9), F(3, 5, 19)}), Cfg(),
       "L0->L1 from=[3 5] to=[] bottommost"},
      {"l0_and_l1", StateBuilder(4).L0({F(5, 0, 9)}).L(1, {F(1, 0, 3), F(2, 100, 200)}), Cfg(),
       "L0->L1 from=[5] to=[1 2] bottommost"},
      {"l0_l1_and_l3", StateBuilder(4).L0({F(5, 0, 9)}).L(1, {F(1, 0, 3)}).L(3, {F(9, 500, 600)}), Cfg(),
       "L0->L1 from=[5] to=[1]"},
      {"l1_and_l2_takes_whole_levels", StateBuilder(4).L(1, {F(1, 0, 3), F(2, 5, 9)}).L(2, {F(3, 0, 1), F(4, 50, 60)}),
       Cfg(), "L1->L2 from=[1 2] to=[3 4] bottommost"},
      {"l1_and_l3_gap", StateBuilder(4).L(1, {F(1, 0, 3)}).L(3, {F(3, 0, 1)}), Cfg(), "L1->L2 from=[1] to=[]"},
      {"l2_and_l3", StateBuilder(4).L(2, {F(1, 0, 3)}).L(3, {F(3, 100, 101)}), Cfg(),
       "L2->L3 from=[1] to=[3] bottommost"},
      {"two_levels_config", StateBuilder(2).L0({F(4, 0, 3)}).L(1, {F(3, 0, 1)}), Cfg(2, 10, 2),
       "L0->L1 from=[4] to=[3] bottommost"},
  };
  for (const FullCase &c : cases) {
    SCOPED_TRACE(c.name);
    CompactionPlan p;
    EXPECT_EQ(gt::PickFullCompactionStep(c.state, c.cfg, &p) ? gt::DescribePlan(p) : "none", c.want);
  }
}

struct FullSequenceCase {
  const char *name;
  LevelState state;
  PlanConfig cfg;
  std::vector<std::string> want_steps;  // in order; then "none"
  int want_final_level;
};

TEST(PickFullCompactionStepTest, SequenceUntilOneLevel) {
  const std::vector<FullSequenceCase> cases = {
      {"l0_l1_l3",
       StateBuilder(4).L0({F(2, 0, 9), F(1, 5, 20)}).L(1, {F(3, 0, 4), F(4, 30, 40)}).L(3, {F(5, 100, 200)}),
       Cfg(),
       {"L0->L1 from=[1 2] to=[3 4]", "L1->L2 from=[100] to=[]", "L2->L3 from=[101] to=[5] bottommost"},
       3},
      {"only_l0",
       StateBuilder(4).L0({F(1, 0, 9), F(2, 0, 9), F(3, 0, 9)}),
       Cfg(),
       {"L0->L1 from=[1 2 3] to=[] bottommost"},
       1},
      {"every_level",
       StateBuilder(5).L0({F(1, 0, 1)}).L(1, {F(2, 0, 1)}).L(2, {F(3, 0, 1)}).L(3, {F(4, 0, 1)}),
       Cfg(2, 10, 5),
       {"L0->L1 from=[1] to=[2]", "L1->L2 from=[100] to=[3]", "L2->L3 from=[101] to=[4] bottommost"},
       3},
      {"l1_to_l4",
       StateBuilder(5).L(1, {F(1, 0, 1), F(2, 3, 4)}).L(4, {F(3, 0, 9)}),
       Cfg(2, 10, 5),
       {"L1->L2 from=[1 2] to=[]", "L2->L3 from=[100] to=[]", "L3->L4 from=[101] to=[3] bottommost"},
       4},
      {"already_one_level", StateBuilder(4).L(2, {F(1, 0, 1)}), Cfg(), {}, 2},
  };
  for (const FullSequenceCase &c : cases) {
    SCOPED_TRACE(c.name);
    LevelState s = c.state;
    std::vector<std::string> got;
    uint64_t next_id = 100;
    CompactionPlan p;
    while (gt::PickFullCompactionStep(s, c.cfg, &p)) {
      got.push_back(gt::DescribePlan(p));
      ASSERT_LT(got.size(), 20u) << "full compaction does not terminate";
      ApplyPlan(&s, p, next_id++);
    }
    EXPECT_EQ(got, c.want_steps);
    EXPECT_EQ(OnlyLevel(s), c.want_final_level) << "data must end in exactly one level";
  }
}

// Repeated PickCompaction on a simulated store reaches a state where L0 is
// below its trigger and every non-last level is within capacity, and every
// plan moves data exactly one level down.
TEST(PickCompactionTest, SimulationConverges) {
  const PlanConfig c = Cfg(2, 3, 4, 100);
  LevelState s;
  s.levels.resize(c.max_levels);
  std::vector<uint64_t> ptrs(c.max_levels, 0);
  uint64_t next_id = 1;
  uint32_t seed = 12345;
  auto rnd = [&](uint32_t n) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % n;
  };
  for (int flush = 0; flush < 200; flush++) {
    uint64_t lo = rnd(1000);
    s.l0.push_back(F(next_id++, lo, lo + rnd(200), 10 + rnd(40)));
    for (int steps = 0;; steps++) {
      ASSERT_LT(steps, 1000) << "compaction does not converge";
      CompactionPlan p;
      if (!gt::PickCompaction(s, c, ptrs, &p)) break;
      ASSERT_EQ(p.to_level, p.from_level + 1) << gt::DescribePlan(p);
      ASSERT_LT(p.from_level + 1, c.max_levels) << gt::DescribePlan(p);
      ApplyPlan(&s, p, next_id++);
      if (p.from_level > 0) ptrs[p.from_level] = p.pointer;
    }
    ASSERT_LT(s.l0.size(), c.l0_trigger);
    for (uint32_t i = 1; i + 1 < c.max_levels; i++) {
      uint64_t bytes = 0;
      for (const PlanFile &f : s.levels[i]) bytes += f.bytes;
      ASSERT_LT(bytes, gt::LevelCapacity(c, i)) << "level " << i;
    }
    // Levels >= 1 stay disjoint and sorted.
    for (uint32_t i = 1; i < c.max_levels; i++)
      for (size_t k = 1; k < s.levels[i].size(); k++)
        ASSERT_LT(s.levels[i][k - 1].max_src, s.levels[i][k].min_src) << "level " << i;
  }
}

TEST(DescribePlanTest, Format) {
  CompactionPlan p;
  p.from_level = 2;
  p.to_level = 3;
  p.from_ids = {7};
  p.to_ids = {8, 9};
  EXPECT_EQ(gt::DescribePlan(p), "L2->L3 from=[7] to=[8 9]");
  p.bottommost = true;
  p.to_ids.clear();
  EXPECT_EQ(gt::DescribePlan(p), "L2->L3 from=[7] to=[] bottommost");
}

}  // namespace
