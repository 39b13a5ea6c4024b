// compaction_plan_test.cc -- tests of the pure compaction-picking functions
// of compaction_plan.h: gt::LevelCapacity, gt::PickCompaction and
// gt::PickFullCompactionStep (gt::DescribePlan prints their plans).
//
// The cases are datadriven scripts, internal/core/testdata/compaction_plan/* (see
// datadriven.h; GT_REWRITE=1 rewrites their expected outputs): a level
// layout, then what the planner picks from it. They check L0 below/at/above
// its trigger; L0 files plus exactly the L1 segments overlapping their union
// range; the round-robin pointer picks the segment after it and wraps; the
// level with the highest bytes/capacity wins; the last level is never a
// source; bottommost depends on deeper segments overlapping the output
// range; a full compaction goes level by level until all data is in one
// level. What is not a script stays here: a short pointers vector, a
// randomized simulation, and DescribePlan's format.
//
// Commands:
//   define [l0-trigger=N] [size-ratio=N] [max-levels=N] [l1-bytes=N]
//          [pointers=(p0,p1,...)] [next-id=N]
//     then one line per non-empty level, "L0: id:lo-hi[:bytes] ..." (bytes
//     default 10); prints the layout (each level's bytes of its capacity).
//   capacity            every level's capacity
//   plan [advance]      PickCompaction's plan (level compactions with the
//                       new pointer); advance keeps the pointer
//   full-step           PickFullCompactionStep's plan
//   compact             plan, then apply it (inputs become one file with
//                       id next-id spanning their range) and print the layout
//   full-compact        full steps until none is left, each applied; prints
//                       the steps and the layout
#include "compaction_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "datadriven.h"

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

// A pointers vector shorter than max_levels is treated as zeros.
TEST(PickCompactionTest, ShortPointerVector) {
  StateBuilder b(4);
  b.L(1, {F(10, 1, 9, 50), F(11, 10, 19, 50), F(12, 20, 29, 50)});
  b.L(2, {F(20, 5, 12, 100), F(21, 13, 25, 100), F(22, 26, 40, 100)});
  CompactionPlan p;
  ASSERT_TRUE(gt::PickCompaction(b, Cfg(), {}, &p));
  EXPECT_EQ(gt::DescribePlan(p), "L1->L2 from=[10] to=[20] bottommost");
}

// ---------------------------------------------------------------------------
// The datadriven scripts.

struct PlanScript {
  LevelState s;
  PlanConfig c;
  std::vector<uint64_t> pointers;
  uint64_t next_id = 100;

  static std::string File(const PlanFile &f) {
    return std::to_string(f.id) + ":" + std::to_string(f.min_src) + "-" + std::to_string(f.max_src) + ":" +
           std::to_string(f.bytes);
  }

  std::string Layout() const {
    std::string out;
    if (!s.l0.empty()) {
      out += "L0:";
      for (const PlanFile &f : s.l0) out += " " + File(f);
      out += " (" + std::to_string(s.l0.size()) + " of trigger " + std::to_string(c.l0_trigger) + " files)\n";
    }
    for (uint32_t i = 1; i < s.levels.size(); i++) {
      if (s.levels[i].empty()) continue;
      uint64_t bytes = 0;
      out += "L" + std::to_string(i) + ":";
      for (const PlanFile &f : s.levels[i]) {
        out += " " + File(f);
        bytes += f.bytes;
      }
      const uint64_t cap = gt::LevelCapacity(c, i);
      out += cap == UINT64_MAX ? " (" + std::to_string(bytes) + " bytes, unbounded)\n"
                               : " (" + std::to_string(bytes) + " of " + std::to_string(cap) + " bytes)\n";
    }
    return out.empty() ? "empty\n" : out;
  }

  // Parses "id:lo-hi[:bytes]".
  static bool ParseFile(const std::string &w, PlanFile *f, std::string *err) {
    std::vector<std::string> parts = gt_test::SplitWords(w, ':');
    std::vector<std::string> range = parts.size() >= 2 ? gt_test::SplitWords(parts[1], '-') : parts;
    if (parts.size() < 2 || parts.size() > 3 || range.size() != 2) {
      *err = "error: bad file \"" + w + "\" (want id:lo-hi[:bytes])";
      return false;
    }
    *f = F(std::stoull(parts[0]), std::stoull(range[0]), std::stoull(range[1]),
           parts.size() == 3 ? std::stoull(parts[2]) : 10);
    return true;
  }

  std::string Define(const gt_test::TestData &d) {
    c = Cfg(static_cast<uint32_t>(d.GetU64("l0-trigger", 2)), static_cast<uint32_t>(d.GetU64("size-ratio", 10)),
            static_cast<uint32_t>(d.GetU64("max-levels", 4)), d.GetU64("l1-bytes", 100));
    s = LevelState();
    s.levels.resize(c.max_levels);
    pointers.assign(c.max_levels, 0);
    const std::vector<std::string> ps = d.GetList("pointers");
    for (size_t i = 0; i < ps.size() && i < pointers.size(); i++) pointers[i] = std::stoull(ps[i]);
    next_id = d.GetU64("next-id", 100);
    for (const std::string &line : gt_test::SplitLines(d.input)) {
      std::vector<std::string> w = gt_test::SplitWords(line);
      if (w.empty() || w[0].size() < 3 || w[0][0] != 'L' || w[0].back() != ':') return "error: bad level line: " + line;
      const uint32_t level = static_cast<uint32_t>(std::stoul(w[0].substr(1, w[0].size() - 2)));
      if (level >= c.max_levels) return "error: level " + std::to_string(level) + " >= max-levels";
      std::vector<PlanFile> &files = level == 0 ? s.l0 : s.levels[level];
      for (size_t k = 1; k < w.size(); k++) {
        PlanFile f;
        std::string err;
        if (!ParseFile(w[k], &f, &err)) return err;
        files.push_back(f);
      }
    }
    return Layout();
  }

  static std::string Describe(const CompactionPlan &p) {
    std::string out = gt::DescribePlan(p);
    if (p.from_level > 0) out += " pointer=" + std::to_string(p.pointer);
    return out;
  }

  std::string Run(const gt_test::TestData &d) {
    if (d.cmd == "define") return Define(d);
    if (d.cmd == "capacity") {
      std::string out;
      for (uint32_t i = 1; i < c.max_levels; i++) {
        const uint64_t cap = gt::LevelCapacity(c, i);
        out += "L" + std::to_string(i) + ": " + (cap == UINT64_MAX ? "unbounded" : std::to_string(cap)) + "\n";
      }
      return out;
    }
    CompactionPlan p;
    if (d.cmd == "plan" || d.cmd == "compact") {
      if (!gt::PickCompaction(s, c, pointers, &p)) return "none";
      EXPECT_EQ(p.to_level, p.from_level + 1) << d.pos;
      if ((d.Has("advance") || d.cmd == "compact") && p.from_level > 0) pointers[p.from_level] = p.pointer;
      if (d.cmd == "plan") return Describe(p);
      ApplyPlan(&s, p, next_id++);
      return Describe(p) + "\n" + Layout();
    }
    if (d.cmd == "full-step") return gt::PickFullCompactionStep(s, c, &p) ? gt::DescribePlan(p) : "none";
    if (d.cmd == "full-compact") {
      std::string out;
      for (int steps = 0; gt::PickFullCompactionStep(s, c, &p); steps++) {
        if (steps == 20) return out + "error: full compaction does not terminate";
        out += gt::DescribePlan(p) + "\n";
        ApplyPlan(&s, p, next_id++);
      }
      const int only = OnlyLevel(s);
      return out + Layout() + (only < 0 ? "not in one level" : "all in L" + std::to_string(only));
    }
    return "error: unknown command " + d.cmd;
  }
};

TEST(CompactionPlanDataDriven, Scripts) {
  for (const char *name : {"capacity", "pick", "round_robin", "full_compaction"}) {
    SCOPED_TRACE(name);
    PlanScript script;
    gt_test::RunFile(gt_test::TestdataPath(std::string("compaction_plan/") + name),
                     [&](const gt_test::TestData &d) { return script.Run(d); });
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
