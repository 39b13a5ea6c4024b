#include "compaction_plan.h"

#include <algorithm>

namespace gt {
namespace {

uint64_t LevelBytes(const std::vector<PlanFile> &files) {
  uint64_t b = 0;
  for (const PlanFile &f : files) b += f.bytes;
  return b;
}

bool Overlaps(const PlanFile &f, uint64_t lo, uint64_t hi) { return f.max_src >= lo && f.min_src <= hi; }

const std::vector<PlanFile> &Level(const LevelState &s, uint32_t i) {
  static const std::vector<PlanFile> kNone;
  return i < s.levels.size() ? s.levels[i] : kNone;
}

void AddOverlapping(const LevelState &s, uint32_t level, uint64_t lo, uint64_t hi, CompactionPlan *p) {
  for (const PlanFile &f : Level(s, level))
    if (Overlaps(f, lo, hi)) p->to_ids.push_back(f.id);
}

bool Bottommost(const LevelState &s, const PlanConfig &c, uint32_t to_level, uint64_t lo, uint64_t hi) {
  for (uint32_t i = to_level + 1; i < c.max_levels; i++)
    for (const PlanFile &f : Level(s, i))
      if (Overlaps(f, lo, hi)) return false;
  return true;
}

// Range of the output: inputs of both levels.
void InputRange(const LevelState &s, const CompactionPlan &p, uint64_t *lo, uint64_t *hi) {
  *lo = UINT64_MAX;
  *hi = 0;
  auto scan = [&](const std::vector<PlanFile> &files, const std::vector<uint64_t> &ids) {
    for (const PlanFile &f : files)
      if (std::find(ids.begin(), ids.end(), f.id) != ids.end()) {
        *lo = std::min(*lo, f.min_src);
        *hi = std::max(*hi, f.max_src);
      }
  };
  scan(p.from_level == 0 ? s.l0 : Level(s, p.from_level), p.from_ids);
  scan(Level(s, p.to_level), p.to_ids);
}

}  // namespace

uint64_t LevelCapacity(const PlanConfig &c, uint32_t level) {
  if (level + 1 >= c.max_levels) return UINT64_MAX;
  uint64_t cap = c.l1_bytes;
  for (uint32_t i = 1; i < level; i++) {
    if (cap > UINT64_MAX / c.size_ratio) return UINT64_MAX;
    cap *= c.size_ratio;
  }
  return cap;
}

bool PickCompaction(const LevelState &s, const PlanConfig &c, const std::vector<uint64_t> &pointers,
                    CompactionPlan *out) {
  *out = CompactionPlan();
  if (!s.l0.empty() && s.l0.size() >= c.l0_trigger) {
    out->from_level = 0;
    out->to_level = 1;
    uint64_t lo = UINT64_MAX, hi = 0;
    std::vector<PlanFile> l0 = s.l0;
    std::sort(l0.begin(), l0.end(), [](const PlanFile &a, const PlanFile &b) { return a.id < b.id; });
    for (const PlanFile &f : l0) {
      out->from_ids.push_back(f.id);
      lo = std::min(lo, f.min_src);
      hi = std::max(hi, f.max_src);
    }
    AddOverlapping(s, 1, lo, hi, out);
    InputRange(s, *out, &lo, &hi);
    out->bottommost = Bottommost(s, c, 1, lo, hi);
    return true;
  }
  double best_score = 1.0;
  int best = -1;
  for (uint32_t i = 1; i + 1 < c.max_levels; i++) {
    const std::vector<PlanFile> &lv = Level(s, i);
    if (lv.empty()) continue;
    double score = static_cast<double>(LevelBytes(lv)) / static_cast<double>(LevelCapacity(c, i));
    if (score >= best_score) {
      best_score = score;
      best = static_cast<int>(i);
    }
  }
  if (best < 0) return false;
  const uint32_t i = static_cast<uint32_t>(best);
  const std::vector<PlanFile> &lv = Level(s, i);
  const uint64_t ptr = i < pointers.size() ? pointers[i] : 0;
  const PlanFile *pick = &lv.front();
  for (const PlanFile &f : lv)
    if (f.min_src > ptr) {
      pick = &f;
      break;
    }
  out->from_level = i;
  out->to_level = i + 1;
  out->from_ids.push_back(pick->id);
  out->pointer = pick->max_src;
  AddOverlapping(s, i + 1, pick->min_src, pick->max_src, out);
  uint64_t lo, hi;
  InputRange(s, *out, &lo, &hi);
  out->bottommost = Bottommost(s, c, i + 1, lo, hi);
  return true;
}

bool PickFullCompactionStep(const LevelState &s, const PlanConfig &c, CompactionPlan *out) {
  *out = CompactionPlan();
  int deepest = 0;
  for (uint32_t i = 1; i < c.max_levels; i++)
    if (!Level(s, i).empty()) deepest = static_cast<int>(i);
  int shallowest = -1;
  if (!s.l0.empty()) {
    shallowest = 0;
  } else {
    for (int i = 1; i < deepest; i++)
      if (!Level(s, static_cast<uint32_t>(i)).empty()) {
        shallowest = i;
        break;
      }
  }
  if (shallowest < 0) return false;  // empty, or everything already in one level
  const uint32_t from = static_cast<uint32_t>(shallowest);
  out->from_level = from;
  out->to_level = from + 1;
  if (from == 0) {
    std::vector<PlanFile> l0 = s.l0;
    std::sort(l0.begin(), l0.end(), [](const PlanFile &a, const PlanFile &b) { return a.id < b.id; });
    for (const PlanFile &f : l0) out->from_ids.push_back(f.id);
  } else {
    for (const PlanFile &f : Level(s, from)) out->from_ids.push_back(f.id);
  }
  for (const PlanFile &f : Level(s, from + 1)) out->to_ids.push_back(f.id);
  out->bottommost = static_cast<int>(from + 1) >= deepest;
  return true;
}

std::string DescribePlan(const CompactionPlan &p) {
  std::string s = "L" + std::to_string(p.from_level) + "->L" + std::to_string(p.to_level) + " from=[";
  for (size_t i = 0; i < p.from_ids.size(); i++) s += (i ? " " : "") + std::to_string(p.from_ids[i]);
  s += "] to=[";
  for (size_t i = 0; i < p.to_ids.size(); i++) s += (i ? " " : "") + std::to_string(p.to_ids[i]);
  s += p.bottommost ? "] bottommost" : "]";
  return s;
}

}  // namespace gt
