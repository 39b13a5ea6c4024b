// version.cc -- ApplyEdit, the one way a new Version is made, and the
// invariants every installed Version keeps (see version.h).
#include "version.h"

#include <algorithm>

#include "dcheck.h"

namespace gt {
namespace {

std::string FileName(const Segment &s) { return SegmentFileName(s.meta().id); }

std::string Range(const SegMeta &m) { return "[" + std::to_string(m.min_src) + ", " + std::to_string(m.max_src) + "]"; }

// How many files of v the edit's removed list names.
size_t CountRemoved(const Version &v, const std::vector<uint64_t> &removed) {
  size_t n = 0;
  auto named = [&](const std::shared_ptr<Segment> &s) {
    return std::find(removed.begin(), removed.end(), s->meta().id) != removed.end();
  };
  for (const Tree &t : v.trees) {
    n += static_cast<size_t>(std::count_if(t.l0.begin(), t.l0.end(), named));
    for (const auto &lv : t.levels) n += static_cast<size_t>(std::count_if(lv.begin(), lv.end(), named));
  }
  return n;
}

}  // namespace

std::shared_ptr<Version> NextVersion(const Version &base, const VersionEdit &e) {
  auto v = std::make_shared<Version>(base);
  v->number = base.number + 1;
  if (e.freeze) v->imm = v->active;
  if (e.drop_imm) v->imm.reset();
  if (e.new_active) v->active = e.new_active;
  if (e.vdel) {
    v->vdel = e.vdel;
    // A purge installed after the caller read the map it extended.
    if (base.vdel != nullptr && base.vdel->purged_through() > e.vdel->purged_through())
      v->vdel = e.vdel->Purged(base.vdel->purged_through());
  }
  if (e.vdel_purge != 0 && v->vdel != nullptr && e.vdel_purge > v->vdel->purged_through())
    v->vdel = v->vdel->Purged(e.vdel_purge);
  if (!e.removed.empty()) {
    auto gone = [&](const std::shared_ptr<Segment> &s) {
      return std::find(e.removed.begin(), e.removed.end(), s->meta().id) != e.removed.end();
    };
    for (Tree &t : v->trees) {
      t.l0.erase(std::remove_if(t.l0.begin(), t.l0.end(), gone), t.l0.end());
      for (auto &lv : t.levels) lv.erase(std::remove_if(lv.begin(), lv.end(), gone), lv.end());
    }
  }
  for (const auto &s : e.added) {
    const SegMeta &m = s->meta();
    GT_DCHECK_MSG(m.dir < kTrees && m.level < v->trees[m.dir].levels.size(),
                  FileName(*s) + " is at level " + std::to_string(m.level) + " of direction " + std::to_string(m.dir) +
                      ", outside the Version's trees");
    Tree &t = v->trees[m.dir];
    if (m.level == 0) {
      t.l0.insert(t.l0.begin(), s);  // newest first
      continue;
    }
    auto &lv = t.levels[m.level];
    auto at = std::upper_bound(lv.begin(), lv.end(), m.min_src,
                               [](uint64_t x, const std::shared_ptr<Segment> &o) { return x < o->meta().min_src; });
    lv.insert(at, s);
  }
  return v;
}

std::string VersionProblem(const Version &v) {
  for (int d = 0; d < kTrees; d++) {
    const Tree &t = v.trees[d];
    const std::string tree = d == kOut ? "out-edges" : d == kIn ? "in-edges" : "vertex cells";
    for (size_t k = 0; k < t.l0.size(); k++) {
      const SegMeta &m = t.l0[k]->meta();
      if (m.level != 0 || m.dir != static_cast<uint32_t>(d))
        return tree + " L0 holds " + FileName(*t.l0[k]) + " of level " + std::to_string(m.level) + ", direction " +
               std::to_string(m.dir);
      if (k == 0) continue;
      // INVARIANT (version order): L0 is newest first. Each L0 file is a
      // flushed MemGraph, and a MemGraph holds only batches after the one
      // before it froze: a newer file has a larger number and its versions
      // are all newer than every version of an older file.
      const SegMeta &newer = t.l0[k - 1]->meta();
      if (newer.id <= m.id || newer.min_seq <= m.max_seq)
        return tree + " L0 is not newest first: " + FileName(*t.l0[k - 1]) + " (seqs " + std::to_string(newer.min_seq) +
               ".." + std::to_string(newer.max_seq) + ") before " + FileName(*t.l0[k]) + " (seqs " +
               std::to_string(m.min_seq) + ".." + std::to_string(m.max_seq) + ")";
    }
    for (size_t i = 1; i < t.levels.size(); i++) {
      const auto &lv = t.levels[i];
      for (size_t k = 0; k < lv.size(); k++) {
        const SegMeta &m = lv[k]->meta();
        if (m.level != i || m.dir != static_cast<uint32_t>(d))
          return tree + " L" + std::to_string(i) + " holds " + FileName(*lv[k]) + " of level " +
                 std::to_string(m.level) + ", direction " + std::to_string(m.dir);
        if (m.min_src > m.max_src) return FileName(*lv[k]) + " has the empty vertex range " + Range(m);
        // INVARIANT (level order): the segments of L1+ are sorted by
        // min_src and disjoint, so FindSegment's binary search finds the
        // one segment that can hold a vertex.
        if (k > 0 && lv[k - 1]->meta().max_src >= m.min_src)
          return tree + " L" + std::to_string(i) + " segments overlap or are out of order: " + FileName(*lv[k - 1]) +
                 " " + Range(lv[k - 1]->meta()) + " before " + FileName(*lv[k]) + " " + Range(m);
      }
    }
  }
  // INVARIANT (vertex-delete purge): a purged vertex delete hid nothing
  // left: every file's vdel floor is at least the purge point (the purge
  // point was the smallest floor, capped at the durable seq; flushes after
  // it write only newer seqs, and a compaction's outputs keep their
  // inputs' smallest floor or more).
  if (v.vdel != nullptr && v.vdel->purged_through() != 0) {
    for (const Tree &t : v.trees) {
      std::vector<const Segment *> files;
      for (const auto &s : t.l0) files.push_back(s.get());
      for (const auto &lv : t.levels)
        for (const auto &s : lv) files.push_back(s.get());
      for (const Segment *s : files)
        if (s->vdel_floor() < v.vdel->purged_through())
          return FileName(*s) + " has vertex-delete floor " + std::to_string(s->vdel_floor()) +
                 ", below the purge point " + std::to_string(v.vdel->purged_through());
    }
  }
  // INVARIANT (version order): the MemGraphs are newer than every file:
  // the active MemGraph's first batch came after imm froze, and the oldest
  // MemGraph holding data after the newest L0 file's last version.
  if (v.imm != nullptr && v.active != nullptr && v.active->first_seq() != 0 &&
      v.active->first_seq() <= v.imm->freeze_seq())
    return "the active MemGraph's first seq " + std::to_string(v.active->first_seq()) +
           " is not after imm's freeze seq " + std::to_string(v.imm->freeze_seq());
  const MemGraph *oldest = v.imm != nullptr ? v.imm.get() : v.active.get();
  if (oldest != nullptr && oldest->first_seq() != 0) {
    for (int d = 0; d < kTrees; d++) {
      const auto &l0 = v.trees[d].l0;
      if (!l0.empty() && l0.front()->meta().max_seq >= oldest->first_seq())
        return "the oldest MemGraph's first seq " + std::to_string(oldest->first_seq()) + " is not after " +
               FileName(*l0.front()) + "'s last seq " + std::to_string(l0.front()->meta().max_seq);
    }
  }
  return "";
}

std::string EditProblem(const Version &base, const VersionEdit &e) {
  // INVARIANT: at most one frozen MemGraph. A freeze waits until the last
  // one is flushed, and a flush drops the imm it wrote.
  if (e.freeze && (base.imm != nullptr || e.new_active == nullptr))
    return base.imm != nullptr ? "freeze while a frozen MemGraph waits for its flush"
                               : "freeze without a new active MemGraph";
  if (e.drop_imm && base.imm == nullptr) return "flush of a frozen MemGraph the Version does not hold";
  // INVARIANT: an edit removes only files of its base (a compaction's
  // inputs are in the Version it replaces: one compaction at a time, and a
  // flush only adds).
  if (!e.removed.empty()) {
    const size_t held = CountRemoved(base, e.removed);
    if (held != e.removed.size())
      return "the edit removes " + std::to_string(e.removed.size()) + " file(s), of which the Version holds " +
             std::to_string(held);
  }
  // INVARIANT: vertex deletes leave the map only by a purge (vdel_purge):
  // a new map extends the base's, so it keeps the base's newest record.
  if (e.vdel != nullptr && base.vdel != nullptr && e.vdel->max_seq() < base.vdel->max_seq())
    return "the vertex-delete map loses its newest record (seq " + std::to_string(base.vdel->max_seq()) + ", now " +
           std::to_string(e.vdel->max_seq()) + ")";
  if (e.vdel_purge != 0 && base.vdel == nullptr && e.vdel == nullptr)
    return "a purge of a Version without a vertex-delete map";
  for (const auto &s : e.added) {
    const SegMeta &m = s->meta();
    if (m.dir >= kTrees || m.level >= base.trees[m.dir >= kTrees ? 0 : m.dir].levels.size())
      return FileName(*s) + " is at level " + std::to_string(m.level) + " of direction " + std::to_string(m.dir) +
             ", outside the Version's trees";
  }
  return "";
}

std::shared_ptr<const Version> ApplyEdit(const Version &base, const VersionEdit &e) {
#if GT_DCHECK_ENABLED
  const std::string bad_edit = EditProblem(base, e);
  GT_DCHECK_MSG(bad_edit.empty(), bad_edit);
#endif
  std::shared_ptr<const Version> v = NextVersion(base, e);
  // INVARIANT (version order): installed Versions only move forward.
  GT_DCHECK(v->number > base.number);
#if GT_DCHECK_ENABLED
  // INVARIANT (level order, version order): see VersionProblem.
  const std::string why = VersionProblem(*v);
  GT_DCHECK_MSG(why.empty(), why);
#endif
  return v;
}

}  // namespace gt
