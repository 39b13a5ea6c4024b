// store_open.cc -- opening a store: options, the directory and its lock,
// creating a new store's manifest, and recovery (Store::Recover): the
// manifest replayed as VersionEdits, and the files it proves garbage
// deleted.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "recovery.h"
#include "store.h"

namespace gt {
namespace {

// "64 KiB", "16 GiB": n in the largest binary unit that divides it.
std::string SizeString(uint64_t n) {
  static const char *const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  while (u + 1 < sizeof kUnits / sizeof kUnits[0] && n != 0 && n % 1024 == 0) {
    n /= 1024;
    u++;
  }
  return std::to_string(n) + " " + kUnits[u];
}

}  // namespace

Status ValidateOptions(const gt_options *c, Options *o) {
  *o = Options();
  if (c == nullptr) return Status::OK();
  // Every limit is graphtide.h's (GT_MIN_* / GT_MAX_*); a field of 0 keeps
  // the default.
  Status s;
  auto in = [&s](const char *name, uint64_t v, uint64_t lo, uint64_t hi, bool bytes) {
    if (v == 0 || (v >= lo && v <= hi)) return true;
    s = Status::Invalid(std::string(name) + " must be between " + (bytes ? SizeString(lo) : std::to_string(lo)) +
                        " and " + (bytes ? SizeString(hi) : std::to_string(hi)) + ", got " + std::to_string(v));
    return false;
  };
  if (!in("memgraph_bytes", c->memgraph_bytes, GT_MIN_MEMGRAPH_BYTES, GT_MAX_MEMGRAPH_BYTES, true) ||
      !in("target_segment_bytes", c->target_segment_bytes, GT_MIN_TARGET_SEGMENT_BYTES, GT_MAX_TARGET_SEGMENT_BYTES,
          true) ||
      !in("size_ratio", c->size_ratio, GT_MIN_SIZE_RATIO, GT_MAX_SIZE_RATIO, false) ||
      !in("l0_compaction_trigger", c->l0_compaction_trigger, GT_MIN_L0_COMPACTION_TRIGGER, GT_MAX_L0_COMPACTION_TRIGGER,
          false) ||
      !in("max_levels", c->max_levels, GT_MIN_LEVELS, GT_MAX_LEVELS, false))
    return s;
  if (c->memgraph_bytes != 0) o->memgraph_bytes = c->memgraph_bytes;
  if (c->target_segment_bytes != 0) o->target_segment_bytes = c->target_segment_bytes;
  if (c->size_ratio != 0) o->size_ratio = c->size_ratio;
  if (c->l0_compaction_trigger != 0) o->l0_trigger = c->l0_compaction_trigger;
  if (c->max_levels != 0) o->max_levels = c->max_levels;
  o->in_edges = c->in_edges != 0;
  o->disable_auto_compaction = c->disable_auto_compaction != 0;
  o->in_edges_as_stored = c->in_edges_as_stored != 0;
  o->read_only = c->read_only != 0;
  if (c->test_pause_at > GT_TEST_MANIFEST_AFTER_SWITCH)
    return Status::Invalid("test_pause_at must be between 0 and " + std::to_string(GT_TEST_MANIFEST_AFTER_SWITCH) +
                           ", got " + std::to_string(c->test_pause_at));
  o->test_pause_at = c->test_pause_at;
  if (c->test_manifest_rewrite_bytes != 0) o->manifest_rewrite_bytes = c->test_manifest_rewrite_bytes;
  if (c->test_segment_format != 0 && (c->test_segment_format < 2 || c->test_segment_format > 5))
    return Status::Invalid("test_segment_format must be 0 (the current format), 2, 3, 4 or 5, got " +
                           std::to_string(c->test_segment_format));
  o->segment_format = c->test_segment_format;
  o->keep_history = c->keep_history != 0;
  if (c->history_seqs != 0 && c->keep_history == 0) return Status::Invalid("history_seqs needs keep_history");
  o->history_seqs = c->history_seqs;
  return Status::OK();
}

Status Store::Open(const std::string &dir, const Options &opt, std::unique_ptr<Store> *out) {
  if (dir.empty()) return Status::Invalid("store directory must not be empty");
  if (opt.read_only) {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::Invalid("no store in " + dir + " (not a directory)");
  } else if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IO("mkdir: " + ErrnoString(errno), dir);
  }
  std::unique_ptr<Store> s(new Store(dir, opt));
  // A writer holds LOCK exclusively, readers (read-only opens, checks)
  // share it: a read-only open never runs beside a writer's recovery.
  GT_RETURN_IF_ERROR(LockStoreDir(dir, !opt.read_only, &s->lock_fd_));
  if (!opt.read_only) GT_RETURN_IF_ERROR(s->CreateIfMissing());
  GT_RETURN_IF_ERROR(s->Recover());
  if (!opt.read_only) s->StartThreads();
  *out = std::move(s);
  return Status::OK();
}

Status Store::CreateIfMissing() {
  const std::string path = JoinPath(dir_, "MANIFEST");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return Status::OK();
  if (errno != ENOENT) return Status::IO("stat: " + ErrnoString(errno), path);
  GT_RETURN_IF_ERROR(CheckNoManifest(dir_));
  ManifestEdit c;
  c.kind = EditKind::kCreate;
  c.has_in_edges = true;
  c.in_edges = opt_.in_edges ? 1 : 0;
  c.next_file = 1;
  return CreateManifest(dir_, c);
}

namespace {

// Refuses a directory whose files the manifest does not explain: a live
// file missing, or one neither live nor provably garbage.
Status CheckScan(const std::string &dir, const ManifestState &ms, const DirScan &scan) {
  if (!scan.missing.empty()) {
    const uint64_t id = scan.missing[0];
    return Status::Corruption(std::to_string(scan.missing.size()) + " live segment file(s) missing (" +
                                  FileList(scan.missing) + "); " + SegmentFileName(id) +
                                  " was added by the manifest record at offset " + std::to_string(ms.added_at.at(id)),
                              JoinPath(dir, SegmentFileName(id)), 0);
  }
  if (!scan.unexplained.empty()) {
    return Status::Corruption(
        std::to_string(scan.unexplained.size()) + " segment file(s) (" + FileList(scan.unexplained) +
            ") are neither live nor provably garbage: numbered below the manifest's next file number " +
            std::to_string(ms.next_file) +
            " and removed by no edit, they may be data the manifest lost; 'graphtide repair' moves them aside",
        JoinPath(dir, SegmentFileName(scan.unexplained[0])), 0);
  }
  return Status::OK();
}

}  // namespace

Status Store::Recover() {
  const std::string path = JoinPath(dir_, "MANIFEST");
  ManifestContents mc;
  ManifestState ms;
  GT_RETURN_IF_ERROR(ReplayManifestAt(path, &mc, &ms));
  std::vector<uint64_t> on_disk;
  GT_RETURN_IF_ERROR(ListSegments(dir_, &on_disk));
  DirScan scan;
  ScanDir(ms, on_disk, &scan);
  GT_RETURN_IF_ERROR(CheckScan(dir_, ms, scan));
  std::map<uint64_t, std::shared_ptr<Segment>> live;
  GT_RETURN_IF_ERROR(OpenLive(path, ms, &live));
  AdoptRecorded(ms);
  // INVARIANT: nothing is cut or deleted before the whole manifest has
  // replayed and every live file has opened cleanly; then only a torn
  // tail and files the manifest proves garbage go.
  if (!opt_.read_only) GT_RETURN_IF_ERROR(TakeOverManifest(path, mc, scan));

  next_file_id_ = std::max(ms.next_file, ms.max_file + 1);
  if (!on_disk.empty()) next_file_id_ = std::max(next_file_id_, on_disk.back() + 1);
  // The MemGraph is gone with the crash, so the newest applied seq is the
  // newest durable one.
  last_seq_.store(ms.durable_seq);
  ReplayVersions(mc, live);
  RecoverHistoryFloor(ms);
  durable_low_ = ms.low_bound;
  durable_high_ = ms.high_bound;
  low_bound_.store(ms.low_bound);
  high_bound_.store(ms.high_bound);
  compaction_wanted_ = true;
  return Status::OK();
}

Status Store::ReplayManifestAt(const std::string &path, ManifestContents *mc, ManifestState *ms) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::IO("stat: " + ErrnoString(errno), path);
    GT_RETURN_IF_ERROR(CheckNoManifest(dir_));
    return Status::Invalid("no store in " + dir_ + " (no MANIFEST)");  // read-only: a writer creates it
  }
  std::vector<Problem> problems;
  GT_RETURN_IF_ERROR(ReadManifest(path, mc, &problems));
  if (problems.empty()) ReplayManifest(*mc, ms, &problems);
  if (!problems.empty()) return problems[0].AsStatus();
  if (opt_.in_edges_as_stored) {
    opt_.in_edges = ms->in_edges;
  } else if (ms->in_edges != opt_.in_edges) {
    return Status::Invalid(std::string("store was created with in_edges=") + (ms->in_edges ? "true" : "false") +
                           " and cannot be opened with in_edges=" + (opt_.in_edges ? "true" : "false"));
  }
  return Status::OK();
}

Status Store::OpenLive(const std::string &path, const ManifestState &ms,
                       std::map<uint64_t, std::shared_ptr<Segment>> *live) const {
  for (const auto &kv : ms.live) {
    const SegMeta &m = kv.second;
    std::shared_ptr<Segment> seg;
    GT_RETURN_IF_ERROR(Segment::Open(dir_, m.id, &seg));
    GT_RETURN_IF_ERROR(MatchesManifest(*seg, m, path, ms.added_at.at(m.id)));
    // The vdel_clean its adding edit recorded (a snapshot's per-file value
    // after a rewrite): set before any Version holds it.
    auto clean = ms.vdel_clean.find(m.id);
    if (clean != ms.vdel_clean.end()) seg->set_vdel_clean(clean->second);
    if (m.level >= opt_.max_levels)
      return Status::Invalid("segment " + seg->path() + " is at level " + std::to_string(m.level) +
                             " but max_levels is " + std::to_string(opt_.max_levels));
    // Every source a file names is one the MANIFEST numbered (its edit
    // was durable before any version named it).
    GT_RETURN_IF_ERROR(NamesKnownSources(*seg, ms.sources.size()));
    live->emplace(m.id, std::move(seg));
  }
  return Status::OK();
}

void Store::AdoptRecorded(const ManifestState &ms) {
  {
    std::lock_guard<std::mutex> ml(manifest_mu_);
    logged_ = ms;  // AdvanceState's fields; the history stays behind
    logged_.added_at.clear();
    logged_.removed_at.clear();
    logged_.vdels.clear();
  }
  // The edge types' aggregates and the watermark as recorded (manifest.h):
  // a flush or compaction from here on, this opener's configuration or not,
  // folds by them.
  for (const auto &a : ms.accumulate) retain_us_[a.first].store(a.second, std::memory_order_relaxed);
  newest_time_.store(ms.newest_time, std::memory_order_relaxed);
  event_sources_.store(static_cast<uint32_t>(ms.sources.size()), std::memory_order_release);
}

Status Store::TakeOverManifest(const std::string &path, const ManifestContents &mc, const DirScan &scan) {
  const uint64_t end = mc.torn() ? mc.torn_offset : mc.size;
  GT_RETURN_IF_ERROR(manifest_.Open(path, end));
  manifest_bytes_.store(end);
  manifest_base_bytes_ = mc.offsets.size() > 1 ? mc.offsets[1] : end;
  // A MANIFEST.tmp beside the MANIFEST that just replayed is what an
  // interrupted rewrite (or create) left: the MANIFEST is the store's.
  const std::string tmp = JoinPath(dir_, kManifestTmp);
  bool deleted = ::unlink(tmp.c_str()) == 0;
  if (!deleted && errno != ENOENT) return Status::IO("unlink: " + ErrnoString(errno), tmp);
  for (const auto *ids : {&scan.removed, &scan.unfinished}) {
    for (uint64_t id : *ids) {
      const std::string f = JoinPath(dir_, SegmentFileName(id));
      if (::unlink(f.c_str()) != 0 && errno != ENOENT) return Status::IO("unlink: " + ErrnoString(errno), f);
      deleted = true;
    }
  }
  if (deleted) GT_RETURN_IF_ERROR(SyncDir(dir_));
  return Status::OK();
}

void Store::ReplayVersions(const ManifestContents &mc, const std::map<uint64_t, std::shared_ptr<Segment>> &live) {
  // Each record becomes a VersionEdit installed the way the flush or
  // compaction that wrote it installed it, from an empty Version. Replay
  // has no readers: the intermediate Versions share one map as it grows
  // instead of copying it per record.
  auto vdel = std::make_shared<VdelMap>();
  auto empty = std::make_shared<Version>();
  for (auto &t : empty->trees) t.levels.resize(opt_.max_levels);
  empty->vdel = vdel;
  std::lock_guard<std::mutex> l(mu_);
  std::atomic_store(&current_, std::shared_ptr<const Version>(std::move(empty)));
  for (const ManifestEdit &r : mc.edits) {
    VersionEdit e;
    if (r.kind == EditKind::kCreate || r.kind == EditKind::kSnapshot) {
      e.new_active = NewMemGraph();
    }
    for (const SegMeta &m : r.added) {
      auto it = live.find(m.id);
      if (it == live.end()) continue;
      e.added.push_back(it->second);
    }
    if (!r.vdels.empty() || r.vdel_purge != 0) {
      for (const auto &v : r.vdels) vdel->Add(v.first, v.second);
      vdel->Purge(r.vdel_purge);
      e.vdel = vdel;
    }
    e.has_durable_seq = r.has_durable_seq;
    e.durable_seq = r.durable_seq;
    e.has_srcpos = r.has_srcpos;
    e.srcpos = r.srcpos;
    InstallLocked(e);
  }
}

void Store::RecoverHistoryFloor(const ManifestState &ms) {
  // The history the store kept: a snapshot at a seq below the largest
  // floor a flush or compaction recorded may miss versions it dropped
  // (with or without a file to show for it); a file written keeping no
  // history may miss any version below the durable seq (a compaction that
  // kept none zeroes seqs and drops tombstones). The MemGraph is gone, so
  // the durable seq is the newest: no floor above it.
  std::lock_guard<std::mutex> l(snap_mu_);
  history_floor_ = ms.history_floor;
  for (const Tree &t : current_->trees) {
    auto note = [&](const std::shared_ptr<Segment> &s) {
      history_floor_ = std::max(history_floor_, s->keeps_history() ? s->history_floor() : ms.durable_seq);
    };
    for (const auto &s : t.l0) note(s);
    for (const auto &lv : t.levels)
      for (const auto &s : lv) note(s);
  }
  history_floor_ = std::min(history_floor_, ms.durable_seq);
}

}  // namespace gt
