// store.cc -- the Store's lifecycle (threads, shutdown), what every part
// shares (file numbers, pins, background errors, manifest appends and
// InstallLocked, the one place a new Version becomes current), and its
// inspection (metrics, files, verification). Opening and recovery are in
// store_open.cc, writes and flushes in store_write.cc, compaction in
// store_compact.cc, snapshot reads in store_read.cc.
#include "store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "dcheck.h"
#include "recovery.h"

namespace gt {

Store::Store(std::string dir, const Options &opt)
    : dir_(std::move(dir)), opt_(opt), pool_(std::make_shared<MappingPool>(opt.memgraph_bytes)) {
  for (auto &p : pointers_) p.assign(opt_.max_levels, 0);
}

void Store::StartThreads() {
  flush_thread_ = std::thread([this] { FlushLoop(); });
  compact_thread_ = std::thread([this] { CompactLoop(); });
}

void Store::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    shutting_down_ = true;
  }
  cv_.notify_all();
  if (flush_thread_.joinable()) flush_thread_.join();
  if (compact_thread_.joinable()) compact_thread_.join();
}

Store::~Store() {
  Shutdown();
  std::atomic_store(&current_, std::shared_ptr<const Version>());
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::shared_ptr<const Version> Store::Current() const { return std::atomic_load(&current_); }

uint64_t Store::NewFileId() {
  std::lock_guard<std::mutex> l(mu_);
  pending_files_.insert(next_file_id_);
  return next_file_id_++;
}

Status Store::TestPause(uint32_t point) {
  if (opt_.test_pause_at == 0 || opt_.test_pause_at != point) return Status::OK();
  const std::string mark = JoinPath(dir_, "PAUSED-" + std::to_string(point));
  const int fd = ::open(mark.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return shutting_down_; });
  return Status::Closed("store is closing (paused at test point " + std::to_string(point) + ")");
}

void Store::SetBackgroundError(const Status &s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (bg_error_.ok()) bg_error_ = s;
  }
  bg_errors_.fetch_add(1);
  cv_.notify_all();
}

uint64_t Store::PinSnapshot(bool durable) {
  // The durable seq is read under snap_mu_ (from its atomic copy, so that
  // pins never wait for mu_), so that a compaction either sees this pin or
  // took its pins, after reading its own durable seq and choosing its
  // inputs, before this seq was read (see RunCompaction).
  std::lock_guard<std::mutex> l(snap_mu_);
  const uint64_t tau =
      durable ? durable_pub_.load(std::memory_order_acquire) : last_seq_.load(std::memory_order_acquire);
  snaps_.insert(tau);
  return tau;
}

uint64_t Store::OldestReadableLocked() {
  const uint64_t last = last_seq_.load(std::memory_order_acquire);
  if (!opt_.keep_history) return last;
  if (opt_.history_seqs != 0 && last > opt_.history_seqs)
    history_floor_ = std::max(history_floor_, last - opt_.history_seqs);
  return history_floor_;
}

uint64_t Store::OldestReadable() {
  std::lock_guard<std::mutex> l(snap_mu_);
  return OldestReadableLocked();
}

Status Store::PinSnapshotAt(uint64_t tau) {
  std::lock_guard<std::mutex> l(snap_mu_);
  const uint64_t last = last_seq_.load(std::memory_order_acquire), oldest = OldestReadableLocked();
  if (tau > last)
    return Status::Invalid("seq " + std::to_string(tau) + " is not applied yet: the newest is " + std::to_string(last));
  if (tau < oldest) {
    if (!opt_.keep_history)
      return Status::Invalid("seq " + std::to_string(tau) +
                             " is in the past, and this store keeps no history (keep_history): only the newest, " +
                             std::to_string(last) + ", is readable");
    return Status::Invalid("seq " + std::to_string(tau) + " is older than the oldest readable one, " +
                           std::to_string(oldest) + " (history retention)");
  }
  snaps_.insert(tau);
  return Status::OK();
}

Status Store::SetHistoryFloor(uint64_t seq) {
  if (!opt_.keep_history) return Status::Invalid("this store keeps no history (keep_history)");
  std::lock_guard<std::mutex> l(snap_mu_);
  history_floor_ = std::max(history_floor_, std::min(seq, last_seq_.load(std::memory_order_acquire)));
  return Status::OK();
}

Retention Store::RetentionNow() {
  std::lock_guard<std::mutex> l(snap_mu_);
  Retention r;
  r.snaps.assign(snaps_.begin(), snaps_.end());
  if (opt_.keep_history) {
    r.history = true;
    r.floor = OldestReadableLocked();
    r.snaps.push_back(r.floor);
    std::sort(r.snaps.begin(), r.snaps.end());
  }
  r.snaps.erase(std::unique(r.snaps.begin(), r.snaps.end()), r.snaps.end());
  r.watermark = newest_time_.load(std::memory_order_relaxed);
  r.retain_us.resize(kMaxEdgeTypes);
  for (uint32_t t = 0; t < kMaxEdgeTypes; t++) r.retain_us[t] = retain_us_[t].load(std::memory_order_relaxed);
  return r;
}

Status Store::SetTypeAggregate(uint32_t type, bool accumulate, int64_t retain_us) {
  const std::string name = "edge type " + std::to_string(type);
  if (type >= kMaxEdgeTypes)
    return Status::Invalid(name + " out of range (max " + std::to_string(kMaxEdgeTypes - 1) + ")");
  if (retain_us < 0) return Status::Invalid(name + ": retain must be at least 0, got " + std::to_string(retain_us));
  if (!accumulate && retain_us != 0) return Status::Invalid(name + ": retain applies to an accumulate type only");
  std::lock_guard<std::mutex> ml(manifest_mu_);
  auto it = logged_.accumulate.find(type);
  if (it == logged_.accumulate.end() && !accumulate) return Status::OK();  // replace, as never recorded
  if (it != logged_.accumulate.end()) {
    // INVARIANT: a type recorded as accumulate stays so: its next upsert
    // as a replace type would replace the events its edges hold.
    if (!accumulate)
      return Status::Invalid(name +
                             " accumulates in this store (recorded in its MANIFEST) and cannot become replace: the "
                             "next upsert of each of its edges would replace the events the edge holds; keep it "
                             "accumulate, or give replace edges another type");
    if (it->second == retain_us) return Status::OK();
  }
  if (opt_.read_only)
    return Status::Invalid("store is open read-only: " + name + "'s aggregate (accumulate, retain " +
                           std::to_string(retain_us) + " µs) differs from the one recorded and cannot be recorded");
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!bg_error_.ok()) return bg_error_;
    if (shutting_down_) return Status::Closed("store is closing");
  }
  ManifestEdit e;
  e.kind = EditKind::kTypes;
  e.accumulate = {{type, retain_us}};
  Status st = AppendEditLocked(&e);
  if (!st.ok()) {
    SetBackgroundError(st);  // as a flush's failed append: no more appends
    return st;
  }
  // Used from here on, once durable: a flush or compaction that starts
  // now folds by the new retain.
  retain_us_[type].store(retain_us, std::memory_order_relaxed);
  return Status::OK();
}

std::vector<std::pair<uint32_t, int64_t>> Store::TypeAggregates() {
  std::lock_guard<std::mutex> ml(manifest_mu_);
  return {logged_.accumulate.begin(), logged_.accumulate.end()};
}

static_assert(GT_MAX_EVENT_SOURCES < (uint64_t{1} << 31), "ExtRec::source (31 bits) holds every source number");

Status Store::AddEventSource(const std::string &name, uint32_t *source) {
  if (name.empty() || name.size() > GT_MAX_EVENT_SOURCE_NAME)
    return Status::Invalid("an event source name has 1 to " + std::to_string(GT_MAX_EVENT_SOURCE_NAME) +
                           " bytes, got " + std::to_string(name.size()));
  std::lock_guard<std::mutex> ml(manifest_mu_);
  const auto &names = logged_.sources;
  if (auto it = logged_.source_ids.find(name); it != logged_.source_ids.end()) {
    *source = it->second;
    return Status::OK();
  }
  if (names.size() >= GT_MAX_EVENT_SOURCES)
    return Status::Invalid("the store numbers at most " + std::to_string(GT_MAX_EVENT_SOURCES) + " event sources");
  if (opt_.read_only) return Status::Invalid("store is open read-only: event source \"" + name + "\" is not recorded");
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!bg_error_.ok()) return bg_error_;
    if (shutting_down_) return Status::Closed("store is closing");
  }
  ManifestEdit e;
  e.kind = EditKind::kSources;
  e.sources = {{static_cast<uint32_t>(names.size() + 1), name}};
  Status st = AppendEditLocked(&e);
  if (!st.ok()) {
    SetBackgroundError(st);  // as a flush's failed append: no more appends
    return st;
  }
  // Usable from here on, once durable (Apply checks ops against it).
  *source = static_cast<uint32_t>(logged_.sources.size());
  event_sources_.store(*source, std::memory_order_release);
  return Status::OK();
}

std::vector<std::string> Store::EventSources() {
  std::lock_guard<std::mutex> ml(manifest_mu_);
  return logged_.sources;
}

void Store::UnpinSnapshot(uint64_t tau) {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snaps_.find(tau);
  if (it != snaps_.end()) snaps_.erase(it);
}

Status Store::AppendEdit(ManifestEdit *e) {
  std::lock_guard<std::mutex> ml(manifest_mu_);
  return AppendEditLocked(e);
}

Status Store::AppendEditLocked(ManifestEdit *e) {
  // Retention's watermark as of now (it only grows): at least the one the
  // flush or compaction appending e folded by, so that a reopened store
  // starts from a watermark no older than any fold its files hold. Only
  // stores with an accumulate type record it (manifest.h).
  if ((e->kind == EditKind::kFlush || e->kind == EditKind::kCompact) && !logged_.accumulate.empty())
    e->newest_time = newest_time_.load(std::memory_order_relaxed);
  auto adds = [&](uint64_t id) {
    return std::any_of(e->added.begin(), e->added.end(), [&](const SegMeta &m) { return m.id == id; });
  };
  {
    // Appends are serialized by manifest_mu_ and a number stops being
    // pending only after its edit is durable, so next_file never goes back.
    std::lock_guard<std::mutex> l(mu_);
    e->next_file = next_file_id_;
    for (uint64_t id : pending_files_) {
      if (!adds(id)) {
        e->next_file = id;  // the smallest: pending_files_ is ordered
        break;
      }
    }
  }
  GT_RETURN_IF_ERROR(manifest_.Append(*e));
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const SegMeta &m : e->added) pending_files_.erase(m.id);
  }
  AdvanceState(&logged_, *e);
  manifest_bytes_.store(manifest_.size());
  if (manifest_.size() < std::max(opt_.manifest_rewrite_bytes, kManifestGrowth * manifest_base_bytes_))
    return Status::OK();
  return RewriteManifestLocked();
}

Status Store::RewriteManifestLocked() {
  // Files the edits so far removed that may still be on disk (an old
  // Version a reader holds keeps them, or their unlink has not run yet):
  // the segment files below next_file that are not live. A file being
  // written by an unrecorded flush or compaction is numbered at or above
  // next_file (manifest.h, "File numbers") and stays out: its edit adds it
  // later.
  std::vector<uint64_t> on_disk, obsolete;
  Status s = ListSegments(dir_, &on_disk);
  for (uint64_t id : on_disk)
    if (id < logged_.next_file && logged_.live.count(id) == 0) obsolete.push_back(id);
  // The vertex deletes as the current Version holds them, up to the
  // durable seq: exactly those the manifest's flushes recorded (a flush
  // records every delete applied to its MemGraph, and the Version gains a
  // delete before its batch is published, so before any freeze covers it),
  // less those a logged purge took (a compaction installs its purge after
  // appending it, so the Version may still hold them: SnapshotEdit drops
  // them, and records the purge point and each live file's vdel_clean
  // from logged_).
  std::vector<std::pair<uint64_t, uint64_t>> vdels;
  Current()->vdel->Records(logged_.durable_seq, &vdels);
  RewriteHooks hooks;
  hooks.partial = [this] { return TestPause(GT_TEST_MANIFEST_PARTIAL); };
  hooks.before_switch = [this] { return TestPause(GT_TEST_MANIFEST_BEFORE_SWITCH); };
  hooks.after_switch = [this] { return TestPause(GT_TEST_MANIFEST_AFTER_SWITCH); };
  uint64_t bytes = 0;
  if (s.ok()) s = RewriteManifest(dir_, SnapshotEdit(logged_, std::move(vdels), std::move(obsolete)), hooks, &bytes);
  if (s.ok()) s = manifest_.Open(JoinPath(dir_, "MANIFEST"), bytes);
  if (!s.ok()) {
    // Past the rename the writer's file is no longer the MANIFEST, and
    // before it a retry would only fail again: no more appends. The caller
    // makes this a background error; the next open recovers from whichever
    // MANIFEST the rename left, and deletes MANIFEST.tmp.
    manifest_.Close();
    return s;
  }
  manifest_base_bytes_ = bytes;
  manifest_bytes_.store(bytes);
  manifest_rewrites_.fetch_add(1);
  return Status::OK();
}

void Store::InstallLocked(const VersionEdit &e) {
  std::shared_ptr<const Version> next = ApplyEdit(*current_, e);
  if (e.has_durable_seq) {
    // INVARIANT (durable seq): durable_seq_ never goes back and never
    // passes last_seq_, the newest applied batch: an edit makes durable
    // the freeze seq of the MemGraph it flushed (recovery: of the newest
    // flush it replays, with last_seq_ set to it first), and a freeze seq
    // is last_seq_ at the freeze. Flushes are in freeze order, so a flush
    // never makes an older seq durable than the one before it.
    GT_DCHECK_MSG(e.durable_seq <= last_seq_.load(), "durable seq " + std::to_string(e.durable_seq) +
                                                         " is past the newest applied seq " +
                                                         std::to_string(last_seq_.load()));
    GT_DCHECK_MSG(!e.drop_imm || e.durable_seq >= durable_seq_, "a flush made seq " + std::to_string(e.durable_seq) +
                                                                    " durable after " + std::to_string(durable_seq_));
    durable_seq_ = std::max(durable_seq_, e.durable_seq);
    durable_pub_.store(durable_seq_, std::memory_order_release);
  }
  if (e.has_srcpos) durable_srcpos_ = e.srcpos;
  if (e.pointer_level > 0) pointers_[e.pointer_dir][e.pointer_level] = e.pointer;
  // Publication: readers load current_ without mu_ (Current()). Every
  // field of next is set before this store, which releases it to them.
  std::atomic_store(&current_, std::move(next));
}

Status Store::VerifyAll() {
  auto ver = Current();
  for (const Tree &t : ver->trees) {
    for (const auto &s : t.l0) GT_RETURN_IF_ERROR(s->VerifyAll());
    for (const auto &lv : t.levels)
      for (const auto &s : lv) GT_RETURN_IF_ERROR(s->VerifyAll());
  }
  return Status::OK();
}

uint64_t Store::DurableSeq() { return durable_pub_.load(std::memory_order_acquire); }

std::string Store::SourcePosition() {
  std::lock_guard<std::mutex> l(mu_);
  return durable_srcpos_;
}

void Store::GetMetrics(gt_metrics *m) {
  std::memset(m, 0, sizeof *m);
  auto ver = Current();
  m->last_seq = last_seq_.load();
  m->durable_seq = durable_pub_.load(std::memory_order_acquire);
  for (const MemGraph *g : {ver->active.get(), ver->imm.get()}) {
    if (g == nullptr) continue;
    m->memgraph_bytes += g->bytes();
    m->memgraph_entries += g->entries();
  }
  m->flushes = flushes_.load();
  m->flush_nanos = flush_nanos_.load();
  m->flush_bytes = flush_bytes_.load();
  m->compactions = compactions_.load();
  m->compaction_nanos = compaction_nanos_.load();
  m->compaction_bytes_read = compaction_read_.load();
  m->compaction_bytes_written = compaction_written_.load();
  m->stalls = stalls_.load();
  m->stall_nanos = stall_nanos_.load();
  m->background_errors = bg_errors_.load();
  m->deferred_flushes = deferred_flushes_.load();
  m->manifest_bytes = manifest_bytes_.load();
  m->memgraph_pool_bytes = pool_->bytes();
  m->apply_cpu_nanos = apply_cpu_nanos_.load();
  m->manifest_rewrites = manifest_rewrites_.load();
  {
    std::lock_guard<std::mutex> l(snap_mu_);
    m->snapshots_open = snaps_.size();
    m->oldest_readable_seq = OldestReadableLocked();
  }
  m->vertex_deletes = ver->vdel->size();
  m->num_levels = opt_.max_levels;
  for (const Tree &t : ver->trees) {
    for (const auto &s : t.l0) {
      m->levels[0].files++;
      m->levels[0].bytes += s->meta().bytes;
      m->levels[0].entries += s->meta().nentries;
    }
    for (size_t i = 1; i < t.levels.size(); i++)
      for (const auto &s : t.levels[i]) {
        m->levels[i].files++;
        m->levels[i].bytes += s->meta().bytes;
        m->levels[i].entries += s->meta().nentries;
      }
  }
}

std::vector<gt_file_info> Store::Files() {
  auto ver = Current();
  std::vector<gt_file_info> out;
  auto add = [&](const Segment &s) {
    const SegMeta &m = s.meta();
    gt_file_info f{};
    f.id = m.id;
    f.level = m.level;
    f.dir = m.dir;
    f.min_src = m.min_src;
    f.max_src = m.max_src;
    f.max_dst = m.max_dst;
    f.vertices = m.nverts;
    f.entries = m.nentries;
    f.bytes = m.bytes;
    f.min_seq = m.min_seq;
    f.max_seq = m.max_seq;
    f.flags = s.flags();
    out.push_back(f);
  };
  for (const Tree &t : ver->trees) {
    for (const auto &s : t.l0) add(*s);
    for (size_t i = 1; i < t.levels.size(); i++)
      for (const auto &s : t.levels[i]) add(*s);
  }
  return out;
}

}  // namespace gt
