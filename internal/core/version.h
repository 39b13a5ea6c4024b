// version.h -- Version, the immutable set of everything readable, and
// VersionEdit, the one kind of change that makes the next Version (pebble's
// Version, VersionEdit and BulkVersionEdit.Apply).
//
// Every new Version is ApplyEdit(current, edit): nothing else builds one.
// Five places make edits, each under Store::mu_ through Store::InstallLocked:
//
//   Apply (vertex delete)  vdel           the vertex-delete map gains records
//   freeze                 freeze,        the active MemGraph becomes imm and
//                          new_active     a fresh one takes writes
//   flush                  drop_imm,      imm is replaced by the L0 files
//                          added, durable written from it
//   compaction             removed,       inputs are replaced by outputs one
//                          added, pointer level down; vertex deletes that no
//                          vdel_purge     file needs any more are purged
//   recovery               added, vdel,   each manifest record, replayed in
//                          durable        order from an empty Version
//
// Contract:
//  - ApplyEdit is pure: no locks, no I/O, O(files) plus what it copies by
//    pointer. Callers build anything costlier (a new vertex-delete map, a
//    MemGraph) before they take Store::mu_.
//  - Segments are shared between Versions: a segment a compaction replaced
//    is unlinked when the last Version holding it is released
//    (Segment::MarkObsolete), so an old Version a reader still holds keeps
//    its files readable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memgraph.h"
#include "merge.h"
#include "segment.h"

namespace gt {

// One tree's files: out-edges, in-edges or vertex cells (kTrees).
// INVARIANT: l0 is newest first (file numbers descending; a flush adds in
// front). levels[i], i >= 1, is sorted by min_src and its segments' vertex
// ranges are disjoint; every segment in levels[i] says level i. levels[0]
// is unused.
struct Tree {
  std::vector<std::shared_ptr<Segment>> l0;
  std::vector<std::vector<std::shared_ptr<Segment>>> levels;
};

struct Version {
  // Installed Versions are numbered in order: a Version made from v is
  // numbered v.number + 1.
  uint64_t number = 0;
  std::shared_ptr<MemGraph> active, imm;
  Tree trees[kTrees];  // indexed by direction: kOut, kIn, kVtx
  std::shared_ptr<const VdelMap> vdel;
};

// A change to a Version. Empty fields change nothing.
struct VersionEdit {
  // MemGraphs. freeze: the active MemGraph (the caller has Frozen it)
  // becomes imm; requires no imm. drop_imm: imm is gone (flushed). A
  // non-null new_active then takes writes.
  bool freeze = false;
  bool drop_imm = false;
  std::shared_ptr<MemGraph> new_active;
  // Files. removed: file numbers, from whichever tree and level holds them.
  // added: placed by their meta's direction and level (in front of L0, or
  // in min_src order in L1+).
  std::vector<uint64_t> removed;
  std::vector<std::shared_ptr<Segment>> added;
  // Non-null: the vertex-delete map after this edit (a map the caller
  // read plus new records, VdelMap::With, built outside Store::mu_). If the
  // base was purged since, the purge carries over (O(chunks)).
  std::shared_ptr<const VdelMap> vdel;
  // Non-zero: the vertex deletes of seq <= vdel_purge are purged: no file
  // of the next Version holds a version they hide (store_compact.cc).
  uint64_t vdel_purge = 0;

  // Store state beside the Version, applied by Store::InstallLocked.
  // has_durable_seq: everything up to durable_seq is in files now.
  bool has_durable_seq = false;
  uint64_t durable_seq = 0;
  bool has_srcpos = false;
  std::string srcpos;  // the source position durable_seq covers
  // pointer_level > 0: the round-robin compaction pointer of that level of
  // tree pointer_dir becomes pointer (compaction_plan.h).
  uint32_t pointer_dir = 0, pointer_level = 0;
  uint64_t pointer = 0;
};

// The Version e makes of base, unchecked (ApplyEdit checks it).
std::shared_ptr<Version> NextVersion(const Version &base, const VersionEdit &e);

// What in v breaks the invariants of Tree and of the MemGraphs' order (see
// version.cc), as text, or "" when none does. O(files).
std::string VersionProblem(const Version &v);

// What makes e inapplicable to base (a second freeze, a flush without a
// frozen MemGraph, removing a file base does not hold, a shrinking
// vertex-delete map, a file outside the trees), as text, or "".
std::string EditProblem(const Version &base, const VersionEdit &e);

// NextVersion, and with GT_DCHECK enabled (dcheck.h) the checks that base
// and e allow it (EditProblem) and that the result keeps every invariant
// (VersionProblem).
std::shared_ptr<const Version> ApplyEdit(const Version &base, const VersionEdit &e);

}  // namespace gt
