// compaction_plan.h -- which files a compaction takes. Pure functions over
// file metadata: no disk, no locks, tested by table tests.
//
// Levels: L0 holds whole flushed files whose vertex ranges overlap; L1..Ln
// each hold one CSR split into segments with disjoint vertex ranges, sorted
// by min_src. Capacity(L1) = l1_bytes, Capacity(Li) = l1_bytes *
// size_ratio^(i-1); the last level is unbounded.
//
// Picking (PickCompaction):
//  1. L0 has >= l0_trigger files: all L0 files (they overlap, so compacting
//     them one at a time would rewrite the same L1 segments repeatedly) plus
//     every L1 segment overlapping their union range, into L1.
//  2. else the level i in 1..n-1 with the highest bytes/capacity >= 1: its
//     segment after the level's round-robin pointer (the first segment whose
//     min_src > pointer, wrapping) plus every overlapping segment of L(i+1).
// bottommost is set when no level below the output overlaps the inputs'
// range, which allows dropping tombstones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gt {

struct PlanFile {
  uint64_t id = 0, min_src = 0, max_src = 0, bytes = 0;
};

struct LevelState {
  std::vector<PlanFile> l0;                   // any order
  std::vector<std::vector<PlanFile>> levels;  // levels[i], i >= 1, sorted by min_src; levels[0] unused
};

struct PlanConfig {
  uint32_t l0_trigger = 4;
  uint32_t size_ratio = 10;
  uint32_t max_levels = 7;  // including L0
  uint64_t l1_bytes = 256ull << 20;
};

struct CompactionPlan {
  uint32_t from_level = 0, to_level = 0;
  std::vector<uint64_t> from_ids, to_ids;
  bool bottommost = false;
  uint64_t pointer = 0;  // new round-robin pointer of from_level (max_src of the picked segment)
};

uint64_t LevelCapacity(const PlanConfig &c, uint32_t level);

// pointers[i] is the round-robin pointer of level i (size max_levels).
bool PickCompaction(const LevelState &s, const PlanConfig &c, const std::vector<uint64_t> &pointers,
                    CompactionPlan *out);

// The next step of a full compaction: moves everything from the shallowest
// non-empty level into the next, until all data is in one level >= 1.
bool PickFullCompactionStep(const LevelState &s, const PlanConfig &c, CompactionPlan *out);

std::string DescribePlan(const CompactionPlan &p);

}  // namespace gt
