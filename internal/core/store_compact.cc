// store_compact.cc -- compaction: the plan's inputs (compaction_plan.h)
// from the current Version, the background loop and CompactAll, and
// RunCompaction, which merges the inputs into new segments one level down
// and installs them in place of the inputs.
#include <algorithm>

#include "dcheck.h"
#include "store.h"
#include "store_internal.h"

namespace gt {
namespace {

// The seq through which the compaction that replaces inputs by outputs in
// ver purges vertex deletes, or 0 for none. A delete (v, d) can go once d is
// at most every file's vdel_floor: then no file holds a version it hides,
// of v as src or as dst, in either tree, and the MemGraphs and files
// flushed later hold only seqs above durable. A snapshot with tau >= d has
// nothing left for it to hide; one with tau < d ignores it anyway (and
// while such a snapshot is pinned the versions it needs stay, so the
// floors stay below d). Capped at durable, so recovery never replays a
// purged record from a later flush.
uint64_t VdelPurgePoint(const Version &ver, const std::vector<std::shared_ptr<Segment>> &inputs,
                        const std::vector<std::shared_ptr<Segment>> &outputs, uint64_t durable) {
  if (ver.vdel == nullptr || ver.vdel->empty()) return 0;
  uint64_t p = durable;
  auto consider = [&](const std::shared_ptr<Segment> &s) {
    if (std::find(inputs.begin(), inputs.end(), s) == inputs.end()) p = std::min(p, s->vdel_floor());
  };
  for (const Tree &t : ver.trees) {
    for (const auto &s : t.l0) consider(s);
    for (const auto &lv : t.levels)
      for (const auto &s : lv) consider(s);
  }
  for (const auto &s : outputs) p = std::min(p, s->vdel_floor());
  return ver.vdel->AnyIn(0, p) ? p : 0;
}

}  // namespace

PlanConfig Store::PlanCfg() const {
  PlanConfig c;
  c.l0_trigger = opt_.l0_trigger;
  c.size_ratio = opt_.size_ratio;
  c.max_levels = opt_.max_levels;
  c.l1_bytes = opt_.memgraph_bytes * opt_.l0_trigger;
  return c;
}

LevelState Store::PlanState(const Version &v, int dir) const {
  LevelState s;
  auto pf = [](const std::shared_ptr<Segment> &seg) {
    const SegMeta &m = seg->meta();
    return PlanFile{m.id, m.min_src, m.max_src, m.bytes};
  };
  const Tree &t = v.trees[dir];
  for (const auto &seg : t.l0) s.l0.push_back(pf(seg));
  s.levels.resize(t.levels.size());
  for (size_t i = 1; i < t.levels.size(); i++)
    for (const auto &seg : t.levels[i]) s.levels[i].push_back(pf(seg));
  return s;
}

void Store::CompactLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return shutting_down_ || (compaction_wanted_ && bg_error_.ok()); });
      if (shutting_down_) return;
      compaction_wanted_ = false;
    }
    if (opt_.disable_auto_compaction) continue;
    for (;;) {
      std::lock_guard<std::mutex> cl(compaction_mu_);
      bool did = false;
      for (int dir : Trees()) {
        auto ver = Current();
        CompactionPlan plan;
        std::vector<uint64_t> ptrs;
        {
          std::lock_guard<std::mutex> l(mu_);
          if (shutting_down_ || !bg_error_.ok()) return;
          ptrs = pointers_[dir];
        }
        if (!PickCompaction(PlanState(*ver, dir), PlanCfg(), ptrs, &plan)) continue;
        Status s = RunCompaction(dir, plan);
        if (!s.ok()) {
          SetBackgroundError(s);
          return;
        }
        did = true;
      }
      if (!did) break;
    }
  }
}

Status Store::CompactAll() {
  if (opt_.read_only) return Status::Invalid("store is open read-only");
  GT_RETURN_IF_ERROR(Flush());
  std::lock_guard<std::mutex> cl(compaction_mu_);
  for (int dir : Trees()) {
    for (;;) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (!bg_error_.ok()) return bg_error_;
        if (shutting_down_) return Status::Closed("store is closing");
      }
      CompactionPlan plan;
      if (!PickFullCompactionStep(PlanState(*Current(), dir), PlanCfg(), &plan)) break;
      GT_RETURN_IF_ERROR(RunCompaction(dir, plan));
    }
    // A file can still hold versions that a vertex delete every snapshot
    // now sees hides: kept while an older snapshot was pinned, or written
    // before the delete when no merge step had anything to move. Rewrite
    // each such file in place (so its range stays disjoint from its
    // level's other files), once, so that the purge can drop the delete.
    std::shared_ptr<const Version> ver;
    uint64_t durable;
    std::vector<uint64_t> ptrs;
    {
      std::lock_guard<std::mutex> l(mu_);
      ver = current_;
      durable = durable_seq_;
      ptrs = pointers_[dir];
    }
    if (ver->vdel->empty()) continue;
    const std::vector<uint64_t> snaps = RetentionNow().snaps;  // the history floor among them
    const uint64_t clean = std::min(durable, snaps.empty() ? UINT64_MAX : snaps.front());
    const auto &levels = ver->trees[dir].levels;
    for (size_t i = 1; i < levels.size(); i++) {
      bool deeper = false;
      for (size_t j = i + 1; j < levels.size(); j++) deeper = deeper || !levels[j].empty();
      for (const auto &f : levels[i]) {
        if (!ver->vdel->AnyIn(f->vdel_floor(), clean)) continue;
        CompactionPlan plan;
        plan.from_level = plan.to_level = static_cast<uint32_t>(i);
        plan.from_ids = {f->meta().id};
        plan.bottommost = !deeper;
        plan.pointer = i < ptrs.size() ? ptrs[i] : 0;  // unchanged
        GT_RETURN_IF_ERROR(RunCompaction(dir, plan));
      }
    }
  }
  return PurgeVertexDeletes();
}

Status Store::PurgeVertexDeletes() {
  // Also when no compaction ran: a store whose files never held what its
  // deletes hide.
  std::shared_ptr<const Version> ver;
  uint64_t durable;
  {
    std::lock_guard<std::mutex> l(mu_);
    ver = current_;
    durable = durable_seq_;
  }
  ManifestEdit r;
  r.kind = EditKind::kCompact;
  r.vdel_purge = VdelPurgePoint(*ver, {}, {}, durable);
  if (r.vdel_purge == 0) return Status::OK();
  GT_RETURN_IF_ERROR(AppendEdit(&r));
  VersionEdit e;
  e.vdel_purge = r.vdel_purge;
  std::lock_guard<std::mutex> l(mu_);
  InstallLocked(e);
  return Status::OK();
}

namespace {

// One compaction input's vertices in id order, read front to back through
// its vertex table (no search per vertex: a binary search of every input
// for every vertex was a tenth of compaction's time).
class InputScan {
 public:
  explicit InputScan(const Segment *s) : s_(s), n_(s->positions()) { Next(); }
  // The current vertex (false once every vertex was read), as
  // VertexCursor::Head.
  bool Head(uint64_t *v) const {
    *v = v_;
    return live_;
  }
  // The current vertex's run, verified first.
  Status AddRun(std::vector<Run> *runs) const { return AddVerifiedRun(s_, b_, e_, runs); }
  // Moves to the next vertex with edges here.
  void Next() {
    live_ = false;
    while (i_ < n_) {
      s_->AtPosition(i_++, &v_, &b_, &e_);
      if (e_ > b_) {
        live_ = true;
        return;
      }
    }
  }

 private:
  const Segment *s_;
  uint64_t i_ = 0, n_;
  uint64_t v_ = 0, b_ = 0, e_ = 0;
  bool live_ = false;
};

// The files of plan's inputs in t, in priority order (the newest L0 file
// first; a level's in key order).
Status CompactionInputs(const Tree &t, const CompactionPlan &plan, std::vector<std::shared_ptr<Segment>> *inputs) {
  auto take = [&](const std::vector<std::shared_ptr<Segment>> &files, const std::vector<uint64_t> &ids) -> Status {
    for (uint64_t id : ids) {
      auto it = std::find_if(files.begin(), files.end(), [&](const auto &s) { return s->meta().id == id; });
      if (it == files.end()) return Status::Internal("compaction input " + std::to_string(id) + " not in version");
      inputs->push_back(*it);
    }
    return Status::OK();
  };
  if (plan.from_level == 0) {
    GT_RETURN_IF_ERROR(take(t.l0, plan.from_ids));
    std::sort(inputs->begin(), inputs->end(), [](const auto &a, const auto &b) { return a->meta().id > b->meta().id; });
  } else {
    GT_RETURN_IF_ERROR(take(t.levels[plan.from_level], plan.from_ids));
  }
  return take(t.levels[plan.to_level], plan.to_ids);
}

}  // namespace

Status Store::RunCompaction(int dir, const CompactionPlan &plan) {
  const uint64_t t0 = NowNanos();
  // The Version and the durable seq together: every file holding a
  // version at or below durable is in ver (a flush installs its file and
  // its durable seq in one step), which the purge below relies on.
  std::shared_ptr<const Version> ver;
  uint64_t durable;
  {
    std::lock_guard<std::mutex> l(mu_);
    ver = current_;
    durable = durable_seq_;
  }
  std::vector<std::shared_ptr<Segment>> inputs;
  GT_RETURN_IF_ERROR(CompactionInputs(ver->trees[dir], plan, &inputs));

  // The durable seq first, then the pins: a durable snapshot pinned after
  // the pins were taken has a tau at least this durable seq, and every
  // version or vertex delete this compaction drops on account of it is
  // invisible at such a tau. (Read the other way round, a flush in between
  // could let the compaction apply a vertex delete newer than the tau of a
  // durable snapshot it did not see pinned.)
  const Retention ret = RetentionNow();
  RetainParams rp{&ret.snaps, ver->vdel.get(), durable, plan.bottommost, ret.history, ret.floor};
  rp.watermark = ret.watermark;
  rp.retain_us = ret.retain_us.data();
  // The outputs hold no version a delete up to VdelCleanSeq hides (those
  // were dropped), nor one a delete up to every input's floor hides.
  uint64_t in_floor = UINT64_MAX;
  for (const auto &s : inputs) in_floor = std::min(in_floor, s->vdel_floor());
  const uint64_t out_clean = std::max(VdelCleanSeq(rp), in_floor);

  std::vector<SegMeta> outs;
  GT_RETURN_IF_ERROR(MergeInputs(dir, plan, inputs, ret, rp, &outs));
  std::vector<std::shared_ptr<Segment>> segs;
  GT_RETURN_IF_ERROR(OpenWritten(outs, out_clean, &segs));
  GT_RETURN_IF_ERROR(TestPause(GT_TEST_COMPACT_BEFORE_EDIT));
  ManifestEdit r;
  r.kind = EditKind::kCompact;
  for (const auto &s : inputs) r.removed.push_back(s->meta().id);
  r.added = outs;
  r.vdel_clean = out_clean;
  if (ret.history) r.history_floor = ret.floor;
  r.vdel_purge = VdelPurgePoint(*ver, inputs, segs, durable);
  // INVARIANT: a purge never passes the durable seq (recovery refuses a
  // record that does: a later flush could replay a purged delete).
  GT_DCHECK(r.vdel_purge <= durable);
  GT_RETURN_IF_ERROR(AppendEdit(&r));
  GT_RETURN_IF_ERROR(TestPause(GT_TEST_COMPACT_AFTER_EDIT));
  InstallCompaction(dir, plan, &r, std::move(segs));
  // Unlinked when the last Version holding them is released.
  for (const auto &s : inputs) s->MarkObsolete();
  ReturnFreePages();  // the builder's columns
  uint64_t read_bytes = 0, written = 0;
  for (const auto &s : inputs) read_bytes += s->meta().bytes;
  for (const SegMeta &m : outs) written += m.bytes;
  compactions_.fetch_add(1);
  compaction_read_.fetch_add(read_bytes);
  compaction_written_.fetch_add(written);
  compaction_nanos_.fetch_add(NowNanos() - t0);
  cv_.notify_all();
  return Status::OK();
}

Status Store::MergeInputs(int dir, const CompactionPlan &plan, const std::vector<std::shared_ptr<Segment>> &inputs,
                          const Retention &ret, const RetainParams &rp, std::vector<SegMeta> *outs) {
  ExtArena arena;
  RetainParams p = rp;
  p.arena = &arena;
  std::vector<InputScan> scans;
  scans.reserve(inputs.size());
  for (const auto &s : inputs) scans.emplace_back(s.get());
  SegmentBuilder b;
  b.set_format(opt_.segment_format);
  b.set_edge_filter(!plan.bottommost && dir == kOut);  // out-edge files only
  b.set_history(ret.history, ret.floor);
  // Output segments are cut at the target size; size the columns for one
  // (4-byte dsts, the common case) so that they do not double past it.
  const uint64_t seg_entries = opt_.target_segment_bytes / 4;
  b.Reserve(seg_entries / 8, seg_entries);
  auto finish = [&]() -> Status {
    SegMeta m;
    GT_RETURN_IF_ERROR(b.Finish(dir_, NewFileId(), plan.to_level, static_cast<uint32_t>(dir), &m));
    outs->push_back(m);
    return Status::OK();
  };
  std::vector<Run> runs;
  std::vector<Entry> kept;
  uint64_t visited = 0;
  std::vector<uint64_t> consumed(inputs.size(), 0);
  for (;;) {
    bool any;
    const uint64_t v = MinHead(scans, &any);
    if (!any) break;
    // v's runs in the inputs' (priority) order.
    runs.clear();
    for (size_t k = 0; k < scans.size(); k++) {
      uint64_t head;
      if (!scans[k].Head(&head) || head != v) continue;
      GT_RETURN_IF_ERROR(scans[k].AddRun(&runs));
      consumed[k] = runs.back().e;
      scans[k].Next();
    }
    kept.clear();
    RetainVersions(runs, v, p, &kept);
    b.AddVertex(v, kept.data(), kept.size());
    arena.Clear();
    if (b.EstimatedBytes() >= opt_.target_segment_bytes) {
      GT_RETURN_IF_ERROR(finish());
      b.Reset();  // keeps the reserved capacity for the next segment
    }
    if ((++visited & 0xffff) == 0) {
      // Inputs are read once, in order: keep the resident set bounded by
      // dropping the pages already merged.
      for (size_t k = 0; k < inputs.size(); k++) inputs[k]->ReleasePages(consumed[k]);
      std::lock_guard<std::mutex> l(mu_);
      if (shutting_down_) return Status::Closed("store is closing");
    }
  }
  if (!b.empty()) GT_RETURN_IF_ERROR(finish());
  return Status::OK();
}

void Store::InstallCompaction(int dir, const CompactionPlan &plan, ManifestEdit *r,
                              std::vector<std::shared_ptr<Segment>> segs) {
  VersionEdit e;
  e.vdel_purge = r->vdel_purge;
  e.removed = std::move(r->removed);
  e.added = std::move(segs);
  if (plan.from_level > 0) {
    e.pointer_dir = static_cast<uint32_t>(dir);
    e.pointer_level = plan.from_level;
    e.pointer = plan.pointer;
  }
  std::lock_guard<std::mutex> l(mu_);
  InstallLocked(e);
  compaction_wanted_ = true;
}

}  // namespace gt
