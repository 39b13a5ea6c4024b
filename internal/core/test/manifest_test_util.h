// manifest_test_util.h -- what the MANIFEST record tests share
// (type_aggregates_test.cc, event_sources_test.cc): an edit of a kind with
// the fields every record carries, and a replay of edits as if read from a
// MANIFEST at offsets 16, 116, ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "manifest.h"

namespace gt_test {

// An edit of kind k with the fields every record carries (a create or
// snapshot record also says whether the store keeps in-edges).
inline gt::ManifestEdit Edit(gt::EditKind k) {
  gt::ManifestEdit e;
  e.kind = k;
  e.next_file = 1;
  if (k == gt::EditKind::kCreate || k == gt::EditKind::kSnapshot) e.has_in_edges = true;
  return e;
}

// Replays edits (offsets 16, 116, ...) into *st and returns the first
// problem, "" if none; *off (if given) is its offset.
inline std::string Replay(const std::vector<gt::ManifestEdit> &edits, gt::ManifestState *st, uint64_t *off = nullptr) {
  gt::ManifestContents c;
  c.path = "MANIFEST";
  c.format = edits[0].kind == gt::EditKind::kSnapshot ? 3 : 2;
  c.edits = edits;
  for (size_t i = 0; i < edits.size(); i++) c.offsets.push_back(16 + 100 * i);
  std::vector<gt::Problem> problems;
  gt::ReplayManifest(c, st, &problems);
  if (problems.empty()) return "";
  if (off) *off = problems[0].offset;
  return problems[0].what;
}

}  // namespace gt_test
