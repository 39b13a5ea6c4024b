#include "store.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "dcheck.h"
#include "recovery.h"

namespace gt {
namespace {

// Raises *a to at least v.
void RaiseTo(std::atomic<uint64_t> *a, uint64_t v) {
  uint64_t cur = a->load();
  while (v > cur && !a->compare_exchange_weak(cur, v)) {
  }
}

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

uint64_t NowNanos() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Segment of a level holding v (levels are disjoint and sorted), or null.
const Segment *FindSegment(const std::vector<std::shared_ptr<Segment>> &lv, uint64_t v) {
  auto it = std::upper_bound(lv.begin(), lv.end(), v,
                             [](uint64_t x, const std::shared_ptr<Segment> &s) { return x < s->meta().min_src; });
  if (it == lv.begin()) return nullptr;
  const Segment *s = (it - 1)->get();
  return v <= s->meta().max_src ? s : nullptr;
}

Status AddSegmentRun(const Segment *s, uint64_t v, std::vector<Run> *runs) {
  uint64_t b, e;
  if (!s->Find(v, &b, &e)) return Status::OK();
  GT_RETURN_IF_ERROR(s->EnsureVerified(b, e));
  runs->push_back(Run{nullptr, s, b, e});
  return Status::OK();
}

// The MemGraphs of a Version that can hold versions visible at tau (active
// first). They are read without locks (memgraph.h): the writer appends
// beside readers and never waits for them. A MemGraph whose first batch is
// newer than tau is skipped: a snapshot of durable data reads no MemGraph
// at all.
struct VisibleMems {
  const MemGraph *m[2] = {nullptr, nullptr};
  VisibleMems(const Version &v, uint64_t tau) {
    const MemGraph *c[2] = {v.active.get(), v.imm.get()};
    for (int k = 0; k < 2; k++) {
      if (c[k] == nullptr) continue;
      const uint64_t first = c[k]->first_seq();
      if (first == 0 || first > tau) continue;
      m[k] = c[k];
    }
  }
  // True when some visible MemGraph has versions in dir (maybe only newer
  // than tau).
  bool Any(int dir) const {
    for (const MemGraph *g : m)
      if (g != nullptr && g->vertices(dir) != 0) return true;
    return false;
  }
};

// Gathers v's runs in priority order. m[0..1] receive MemGraph versions and
// must outlive the runs.
Status GatherRuns(const Version &ver, const VisibleMems &mems, int dir, uint64_t v, std::vector<Entry> m[2],
                  std::vector<Run> *runs) {
  runs->clear();
  for (int k = 0; k < 2; k++) {
    if (mems.m[k] == nullptr || mems.m[k]->vertices(dir) == 0) continue;
    m[k].clear();
    mems.m[k]->Collect(dir, v, &m[k]);
    if (m[k].empty()) continue;
    runs->push_back(Run{m[k].data(), nullptr, 0, m[k].size()});
  }
  const Tree &t = ver.trees[dir];
  for (const auto &s : t.l0) GT_RETURN_IF_ERROR(AddSegmentRun(s.get(), v, runs));
  for (size_t i = 1; i < t.levels.size(); i++) {
    const Segment *s = FindSegment(t.levels[i], v);
    if (s != nullptr) GT_RETURN_IF_ERROR(AddSegmentRun(s, v, runs));
  }
  return Status::OK();
}

// True when one file run can be copied out as is: every version in it is
// visible at tau, live, and unique per dst, and no vertex delete applies.
bool FastRun(const std::vector<Run> &runs, uint64_t tau, const VdelMap &vdel) {
  if (runs.size() != 1 || runs[0].seg == nullptr || !vdel.empty()) return false;
  return runs[0].seg->AllVisibleAt(tau);
}

// Writes v's visible neighbors (from its runs) to dsts/w[at..cap) and
// returns the end position at + count. A result above cap means they did
// not fit: nothing past cap was written and the caller must not use them.
size_t AppendVisible(const std::vector<Run> &runs, uint64_t v, uint64_t tau, const VdelMap &vdel, uint64_t *dsts,
                     double *w, size_t at, size_t cap) {
  if (FastRun(runs, tau, vdel)) {
    const Run &r = runs[0];
    const size_t end = at + (r.e - r.b);
    if (end <= cap) {
      r.seg->CopyDsts(r.b, r.e, dsts + at);
      if (w) r.seg->CopyWeights(r.b, r.e, w + at);
    }
    return end;
  }
  size_t k = at;
  VisibleVersions(runs, v, tau, vdel, [&](uint64_t d, double wt) {
    if (k < cap) {
      dsts[k] = d;
      if (w) w[k] = wt;
    }
    k++;
  });
  return k;
}

// Next vertex >= a position, over one source. Used by scans and compaction.
class VertexCursor {
 public:
  static VertexCursor ForSegment(const Segment *s, uint64_t lo, uint64_t hi) {
    VertexCursor c;
    c.segs_.push_back(s);
    c.pos_ = lo;
    c.hi_ = hi;
    return c;
  }
  static VertexCursor ForLevel(const std::vector<std::shared_ptr<Segment>> &lv, uint64_t lo, uint64_t hi) {
    VertexCursor c;
    for (const auto &s : lv)
      if (s->meta().max_src >= lo && s->meta().min_src < hi) c.segs_.push_back(s.get());
    c.pos_ = lo;
    c.hi_ = hi;
    return c;
  }
  static VertexCursor ForMem(const MemGraph *m, int dir, uint64_t lo, uint64_t hi) {
    VertexCursor c;
    c.mem_ = m;
    c.dir_ = dir;
    c.pos_ = lo;
    c.hi_ = hi;
    return c;
  }
  // Smallest vertex >= the cursor position, or false when exhausted.
  bool Head(uint64_t *v) {
    if (have_) {
      *v = head_;
      return true;
    }
    if (mem_ != nullptr) {
      while (mpos_ >= mbuf_.size()) {
        if (pos_ >= hi_) return false;
        mbuf_.clear();
        mpos_ = 0;
        uint64_t resume;
        mem_->VerticesFrom(dir_, pos_, hi_, 4096, &mbuf_, &resume);
        pos_ = resume;
      }
      head_ = mbuf_[mpos_];
      have_ = true;
      *v = head_;
      return true;
    }
    while (si_ < segs_.size()) {
      uint64_t x;
      if (pos_ < hi_ && segs_[si_]->NextVertex(pos_, &x) && x < hi_) {
        head_ = x;
        have_ = true;
        *v = x;
        return true;
      }
      si_++;
    }
    return false;
  }
  // Moves past the current head.
  void Advance() {
    if (!have_) return;
    have_ = false;
    if (mem_ != nullptr)
      mpos_++;
    else
      pos_ = head_ + 1;
  }

 private:
  std::vector<const Segment *> segs_;
  size_t si_ = 0;
  const MemGraph *mem_ = nullptr;
  int dir_ = 0;
  std::vector<uint64_t> mbuf_;
  size_t mpos_ = 0;
  uint64_t pos_ = 0, hi_ = 0;
  uint64_t head_ = 0;
  bool have_ = false;
};

uint64_t MinHead(std::vector<VertexCursor> &cs, bool *any) {
  uint64_t best = UINT64_MAX;
  *any = false;
  for (auto &c : cs) {
    uint64_t v;
    if (c.Head(&v) && (!*any || v < best)) {
      best = v;
      *any = true;
    }
  }
  return best;
}

void AdvancePast(std::vector<VertexCursor> &cs, uint64_t v) {
  for (auto &c : cs) {
    uint64_t h;
    if (c.Head(&h) && h == v) c.Advance();
  }
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
  if (c->test_pause_at > GT_TEST_COMPACT_AFTER_EDIT)
    return Status::Invalid("test_pause_at must be between 0 and " + std::to_string(GT_TEST_COMPACT_AFTER_EDIT) +
                           ", got " + std::to_string(c->test_pause_at));
  o->test_pause_at = c->test_pause_at;
  return Status::OK();
}

Store::Store(std::string dir, const Options &opt) : dir_(std::move(dir)), opt_(opt) {
  for (auto &p : pointers_) p.assign(opt_.max_levels, 0);
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
  current_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::shared_ptr<const Version> Store::Current() {
  std::lock_guard<std::mutex> l(mu_);
  return current_;
}

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

std::vector<uint64_t> Store::PinnedSnapshots() {
  std::lock_guard<std::mutex> l(snap_mu_);
  std::vector<uint64_t> v(snaps_.begin(), snaps_.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
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

void Store::UnpinSnapshot(uint64_t tau) {
  std::lock_guard<std::mutex> l(snap_mu_);
  auto it = snaps_.find(tau);
  if (it != snaps_.end()) snaps_.erase(it);
}

Status Store::FreezeActiveLocked(std::unique_lock<std::mutex> * /*write_lock*/) {
  std::unique_lock<std::mutex> l(mu_);
  if (!current_->imm) {
    // fall through to freeze
  } else {
    stalls_.fetch_add(1);
    uint64_t t0 = NowNanos();
    cv_.wait(l, [&] { return !current_->imm || !bg_error_.ok() || shutting_down_; });
    stall_nanos_.fetch_add(NowNanos() - t0);
  }
  if (!bg_error_.ok()) return bg_error_;
  if (shutting_down_) return Status::Closed("store is closing");
  VersionEdit e;
  e.freeze = true;
  e.new_active = std::make_shared<MemGraph>(opt_.in_edges, opt_.memgraph_bytes);
  current_->active->Freeze(last_seq_.load());
  InstallLocked(e);
  l.unlock();
  cv_.notify_all();
  return Status::OK();
}

Status Store::Apply(const gt_op *ops, size_t n, const uint8_t *srcpos, size_t srcpos_len, uint64_t *seq_out) {
  if (opt_.read_only) return Status::Invalid("store is open read-only");
  if (n > 0 && ops == nullptr) return Status::Invalid("ops is null");
  bool has_vdel = false;
  uint64_t max_low = 0, max_high = 0;  // one past, per band
  for (size_t i = 0; i < n; i++) {
    const gt_op &op = ops[i];
    if (op.kind > GT_OP_DELETE_VERTEX)
      return Status::Invalid("op " + std::to_string(i) + ": unknown kind " + std::to_string(op.kind));
    if (op.src > GT_MAX_VERTEX || (op.kind != GT_OP_DELETE_VERTEX && op.dst > GT_MAX_VERTEX))
      return Status::Invalid("op " + std::to_string(i) + ": vertex id out of range (max " +
                             std::to_string(GT_MAX_VERTEX) + ")");
    if (op.kind == GT_OP_UPSERT && !std::isfinite(op.weight))
      return Status::Invalid("op " + std::to_string(i) + ": weight must be finite");
    if (op.kind == GT_OP_DELETE_VERTEX) has_vdel = true;
    for (uint64_t v : {op.src, op.kind == GT_OP_DELETE_VERTEX ? op.src : op.dst}) {
      if (v < GT_HIGH_ID_BASE)
        max_low = std::max(max_low, v + 1);
      else
        max_high = std::max(max_high, v + 1);
    }
  }
  // An edge op followed, in the same batch, by a delete of one of its
  // vertices is dead on arrival; it must not survive with the delete's seq.
  std::vector<uint8_t> skip;
  if (has_vdel) {
    skip.assign(n, 0);
    std::unordered_map<uint64_t, size_t> last_del;
    for (size_t i = 0; i < n; i++)
      if (ops[i].kind == GT_OP_DELETE_VERTEX) last_del[ops[i].src] = i;
    for (size_t i = 0; i < n; i++) {
      if (ops[i].kind == GT_OP_DELETE_VERTEX) continue;
      auto a = last_del.find(ops[i].src), b = last_del.find(ops[i].dst);
      if ((a != last_del.end() && a->second > i) || (b != last_del.end() && b->second > i)) skip[i] = 1;
    }
  }

  std::unique_lock<std::mutex> wl(write_mu_);
  std::shared_ptr<const Version> ver;
  bool requested;  // a deferred flush request this writer can serve at once
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!bg_error_.ok()) return bg_error_;
    if (shutting_down_) return Status::Closed("store is closing");
    ver = current_;
    requested = flush_requested_ > durable_seq_ && !ver->imm && !ver->active->empty();
  }
  // A writer serves a deferred flush request itself when it finds no flush
  // running: the flush thread's try_lock may lose to a steady stream of
  // writers, and the request must not wait for the MemGraph to fill.
  if (ver->active->full() || requested) {
    GT_RETURN_IF_ERROR(FreezeActiveLocked(&wl));
    ver = Current();
  }
  const uint64_t seq = last_seq_.load() + 1;
  ver->active->Apply(ops, n, seq, skip, srcpos, srcpos_len);
  ver->active->RaiseBounds(max_low, max_high);
  if (has_vdel) {
    auto nm = std::make_shared<VdelMap>(*ver->vdel);
    for (size_t i = 0; i < n; i++)
      if (ops[i].kind == GT_OP_DELETE_VERTEX) nm->Add(ops[i].src, seq);
    VersionEdit e;
    e.vdel = std::move(nm);
    std::lock_guard<std::mutex> l(mu_);
    InstallLocked(e);
  }
  RaiseTo(&low_bound_, max_low);
  RaiseTo(&high_bound_, max_high);
  // Publish: snapshots taken from here on see this batch.
  last_seq_.store(seq, std::memory_order_release);
  if (seq_out) *seq_out = seq;
  return Status::OK();
}

Status Store::RequestFlush(uint64_t *target) {
  if (opt_.read_only) return Status::Invalid("store is open read-only");
  std::unique_lock<std::mutex> wl(write_mu_);
  *target = last_seq_.load();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (current_->active->empty()) return Status::OK();
    if (current_->imm) {
      // A flush is running: freezing now would wait for it with write_mu_
      // held and stall writers. The flush thread freezes the active
      // MemGraph when it is done instead (MaybeFreezeRequested). imm cannot
      // appear meanwhile: only a freeze sets it, and freezes hold write_mu_.
      flush_requested_ = std::max(flush_requested_, *target);
      deferred_flushes_.fetch_add(1);
      return Status::OK();
    }
  }
  return FreezeActiveLocked(&wl);  // no flush running: no wait
}

void Store::MaybeFreezeRequested() {
  // True while there is a request this thread should serve now. With a
  // frozen MemGraph pending (a writer froze a full one meanwhile) it is not
  // the time: the flush loop flushes that one first and comes back here.
  auto wanted = [&] {
    std::lock_guard<std::mutex> l(mu_);
    return !shutting_down_ && bg_error_.ok() && !current_->imm && flush_requested_ > durable_seq_ &&
           !current_->active->empty();
  };
  while (wanted()) {
    // Never block on write_mu_ here: a writer may hold it while it waits
    // for this thread to flush a full MemGraph. try_lock, and retry while a
    // writer applies one batch.
    std::unique_lock<std::mutex> wl(write_mu_, std::try_to_lock);
    if (!wl.owns_lock()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (!wanted()) return;               // a writer froze it meanwhile
    Status s = FreezeActiveLocked(&wl);  // no frozen MemGraph: no wait
    if (!s.ok()) SetBackgroundError(s);
    return;
  }
}

Status Store::Flush() {
  uint64_t target;
  GT_RETURN_IF_ERROR(RequestFlush(&target));
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return durable_seq_ >= target || !bg_error_.ok() || shutting_down_; });
  if (!bg_error_.ok()) return bg_error_;
  if (durable_seq_ < target) return Status::Closed("store is closing");
  return Status::OK();
}

void Store::FlushLoop() {
  for (;;) {
    std::shared_ptr<MemGraph> mem;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return shutting_down_ || (current_->imm && bg_error_.ok()); });
      if (shutting_down_) return;
      mem = current_->imm;
    }
    Status s = FlushMemGraph(mem);
    if (!s.ok()) SetBackgroundError(s);
    mem.reset();
    MaybeFreezeRequested();
#if defined(__GLIBC__)
    // The MemGraph's mappings were unmapped (unless a reader still holds
    // its Version) and its sorted index freed; hand the heap's free pages
    // back to the OS so the resident set tracks the MemGraph budget.
    malloc_trim(0);
#endif
  }
}

Status Store::FlushMemGraph(const std::shared_ptr<MemGraph> &mem) {
  const uint64_t t0 = NowNanos();
  std::shared_ptr<const VdelMap> vdel;
  uint64_t durable;
  {
    std::lock_guard<std::mutex> l(mu_);
    vdel = current_->vdel;
    durable = durable_seq_;
  }
  const std::vector<uint64_t> snaps = PinnedSnapshots();  // after durable: see RunCompaction
  RetainParams rp{&snaps, vdel.get(), durable, false};
  std::vector<SegMeta> metas;
  std::vector<Entry> ents, kept;
  SegmentBuilder b;
  for (int dir = 0; dir < (opt_.in_edges ? 2 : 1); dir++) {
    b.Reset();
    std::vector<Run> runs(1);
    // A frozen MemGraph has no writer: this thread took it from the
    // Version published, under mu_, after Freeze and so after every write.
    b.Reserve(mem->vertices(dir), mem->entries() / (opt_.in_edges ? 2 : 1));
    mem->ForEachSorted(dir, &ents, [&](uint64_t v, const std::vector<Entry> &vs) {
      runs[0] = Run{vs.data(), nullptr, 0, vs.size()};
      kept.clear();
      RetainVersions(runs, v, rp, &kept);
      b.AddVertex(v, kept.data(), kept.size());
    });
    if (b.empty()) continue;
    SegMeta m;
    GT_RETURN_IF_ERROR(b.Finish(dir_, NewFileId(), 0, static_cast<uint32_t>(dir), &m));
    metas.push_back(m);
  }
  std::vector<std::shared_ptr<Segment>> segs;
  GT_RETURN_IF_ERROR(OpenWritten(metas, &segs));
  GT_RETURN_IF_ERROR(TestPause(GT_TEST_FLUSH_BEFORE_EDIT));
  ManifestEdit r;
  r.kind = EditKind::kFlush;
  r.has_durable_seq = true;
  r.durable_seq = mem->freeze_seq();
  r.added = metas;
  r.vdels = mem->vdels();
  r.has_srcpos = mem->has_srcpos();
  r.srcpos = mem->srcpos();
  // The bounds of what is durable once this edit is: they never count an
  // id that only batches after the freeze used (keydict's contract: a key's
  // id is synced before data using it is made durable, not before Apply).
  r.has_bounds = true;
  r.low_bound = durable_low_ = std::max(durable_low_, mem->low_bound());
  r.high_bound = durable_high_ = std::max(durable_high_, mem->high_bound());
  GT_RETURN_IF_ERROR(AppendEdit(&r));
  GT_RETURN_IF_ERROR(TestPause(GT_TEST_FLUSH_AFTER_EDIT));
  uint64_t bytes = 0;
  for (const SegMeta &m : metas) bytes += m.bytes;
  VersionEdit e;
  e.drop_imm = true;
  e.added = std::move(segs);
  e.has_durable_seq = true;
  e.durable_seq = r.durable_seq;
  e.has_srcpos = r.has_srcpos;
  e.srcpos = std::move(r.srcpos);
  {
    std::lock_guard<std::mutex> l(mu_);
    InstallLocked(e);
    compaction_wanted_ = true;
  }
  flushes_.fetch_add(1);
  flush_bytes_.fetch_add(bytes);
  flush_nanos_.fetch_add(NowNanos() - t0);
  cv_.notify_all();
  return Status::OK();
}

// Makes newly written files' directory entries durable and opens them.
// INVARIANT (write ordering): a segment file's data (SegmentBuilder::Finish
// fsyncs it) and its directory entry (here) are durable before the
// manifest edit that references it is appended: a durable edit never names
// a file a crash can take back.
Status Store::OpenWritten(const std::vector<SegMeta> &metas, std::vector<std::shared_ptr<Segment>> *segs) {
  if (!metas.empty()) GT_RETURN_IF_ERROR(SyncDir(dir_));
  for (const SegMeta &m : metas) {
    std::shared_ptr<Segment> s;
    GT_RETURN_IF_ERROR(Segment::Open(dir_, m.id, &s));
    segs->push_back(std::move(s));
  }
  return Status::OK();
}

Status Store::AppendEdit(ManifestEdit *e) {
  std::lock_guard<std::mutex> ml(manifest_mu_);
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
  std::lock_guard<std::mutex> l(mu_);
  for (const SegMeta &m : e->added) pending_files_.erase(m.id);
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
  current_ = std::move(next);
}

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
      for (int dir = 0; dir < (opt_.in_edges ? 2 : 1); dir++) {
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
  for (int dir = 0; dir < (opt_.in_edges ? 2 : 1); dir++) {
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
  }
  return Status::OK();
}

Status Store::RunCompaction(int dir, const CompactionPlan &plan) {
  const uint64_t t0 = NowNanos();
  auto ver = Current();
  const Tree &t = ver->trees[dir];
  std::vector<std::shared_ptr<Segment>> inputs;
  auto take = [&](const std::vector<std::shared_ptr<Segment>> &files, const std::vector<uint64_t> &ids) -> Status {
    for (uint64_t id : ids) {
      auto it = std::find_if(files.begin(), files.end(), [&](const auto &s) { return s->meta().id == id; });
      if (it == files.end()) return Status::Internal("compaction input " + std::to_string(id) + " not in version");
      inputs.push_back(*it);
    }
    return Status::OK();
  };
  if (plan.from_level == 0) {
    GT_RETURN_IF_ERROR(take(t.l0, plan.from_ids));
    // Priority order: newest L0 file first.
    std::sort(inputs.begin(), inputs.end(), [](const auto &a, const auto &b) { return a->meta().id > b->meta().id; });
  } else {
    GT_RETURN_IF_ERROR(take(t.levels[plan.from_level], plan.from_ids));
  }
  GT_RETURN_IF_ERROR(take(t.levels[plan.to_level], plan.to_ids));

  // The durable seq first, then the pins: a durable snapshot pinned after
  // the pins were taken has a tau at least this durable seq, and every
  // version or vertex delete this compaction drops on account of it is
  // invisible at such a tau. (Read the other way round, a flush in between
  // could let the compaction apply a vertex delete newer than the tau of a
  // durable snapshot it did not see pinned.)
  uint64_t durable;
  {
    std::lock_guard<std::mutex> l(mu_);
    durable = durable_seq_;
  }
  const std::vector<uint64_t> snaps = PinnedSnapshots();
  RetainParams rp{&snaps, ver->vdel.get(), durable, plan.bottommost};

  std::vector<VertexCursor> cursors;
  cursors.reserve(inputs.size());
  for (const auto &s : inputs) cursors.push_back(VertexCursor::ForSegment(s.get(), 0, GT_MAX_VERTEX + 1));
  std::vector<SegMeta> outs;
  SegmentBuilder b;
  // Output segments are cut at the target size; size the columns for one
  // (4-byte dsts, the common case) so that they do not double past it.
  const uint64_t seg_entries = opt_.target_segment_bytes / 4;
  b.Reserve(seg_entries / 8, seg_entries);
  std::vector<Run> runs;
  std::vector<Entry> kept;
  uint64_t read_bytes = 0, visited = 0;
  std::vector<uint64_t> consumed(inputs.size(), 0);
  for (const auto &s : inputs) read_bytes += s->meta().bytes;
  for (;;) {
    bool any;
    uint64_t v = MinHead(cursors, &any);
    if (!any) break;
    runs.clear();
    for (size_t k = 0; k < inputs.size(); k++) {
      const size_t before = runs.size();
      GT_RETURN_IF_ERROR(AddSegmentRun(inputs[k].get(), v, &runs));
      if (runs.size() > before) consumed[k] = runs.back().e;
    }
    kept.clear();
    RetainVersions(runs, v, rp, &kept);
    b.AddVertex(v, kept.data(), kept.size());
    AdvancePast(cursors, v);
    if (b.EstimatedBytes() >= opt_.target_segment_bytes) {
      SegMeta m;
      GT_RETURN_IF_ERROR(b.Finish(dir_, NewFileId(), plan.to_level, static_cast<uint32_t>(dir), &m));
      outs.push_back(m);
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
  if (!b.empty()) {
    SegMeta m;
    GT_RETURN_IF_ERROR(b.Finish(dir_, NewFileId(), plan.to_level, static_cast<uint32_t>(dir), &m));
    outs.push_back(m);
  }
  std::vector<std::shared_ptr<Segment>> segs;
  GT_RETURN_IF_ERROR(OpenWritten(outs, &segs));
  GT_RETURN_IF_ERROR(TestPause(GT_TEST_COMPACT_BEFORE_EDIT));
  ManifestEdit r;
  r.kind = EditKind::kCompact;
  for (const auto &s : inputs) r.removed.push_back(s->meta().id);
  r.added = outs;
  GT_RETURN_IF_ERROR(AppendEdit(&r));
  GT_RETURN_IF_ERROR(TestPause(GT_TEST_COMPACT_AFTER_EDIT));
  uint64_t written = 0;
  for (const SegMeta &m : outs) written += m.bytes;
  VersionEdit e;
  e.removed = std::move(r.removed);
  e.added = std::move(segs);
  if (plan.from_level > 0) {
    e.pointer_dir = static_cast<uint32_t>(dir);
    e.pointer_level = plan.from_level;
    e.pointer = plan.pointer;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    InstallLocked(e);
    compaction_wanted_ = true;
  }
  // Unlinked when the last Version holding them is released.
  for (const auto &s : inputs) s->MarkObsolete();
#if defined(__GLIBC__)
  b = SegmentBuilder();
  malloc_trim(0);  // return the builder's columns to the OS
#endif
  compactions_.fetch_add(1);
  compaction_read_.fetch_add(read_bytes);
  compaction_written_.fetch_add(written);
  compaction_nanos_.fetch_add(NowNanos() - t0);
  cv_.notify_all();
  return Status::OK();
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
  {
    std::lock_guard<std::mutex> l(mu_);
    m->durable_seq = durable_seq_;
  }
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
  {
    std::lock_guard<std::mutex> l(snap_mu_);
    m->snapshots_open = snaps_.size();
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

// ---- reads ----

Status SnapshotReader::Degree(uint64_t v, int dir, uint64_t *out) {
  auto ver = store_->Current();
  std::vector<Entry> m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
  }
  uint64_t n = 0;
  if (FastRun(runs, tau_, *ver->vdel)) {
    n = runs[0].e - runs[0].b;
  } else {
    VisibleVersions(runs, v, tau_, *ver->vdel, [&](uint64_t, double) { n++; });
  }
  *out = n;
  return Status::OK();
}

Status SnapshotReader::Neighbors(uint64_t v, int dir, uint64_t *dsts, double *w, size_t cap, size_t *n) {
  auto ver = store_->Current();
  std::vector<Entry> m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
  }
  const size_t k = AppendVisible(runs, v, tau_, *ver->vdel, dsts, w, 0, cap);
  *n = k;
  if (k > cap) return Status{Code::kBuffer, "neighbor buffer too small", "", 0};
  return Status::OK();
}

// The level holding every file edge of [lo, hi) when that is a single
// clean run: no L0 data, no vertex deletes, one level overlapping the range,
// and no segment there with versions newer than tau, tombstones or several
// versions of an edge. MemGraphs are not looked at: without MemGraph data a
// scan is a bulk copy of the CSR, and with it, a bulk copy between the
// vertices the MemGraphs hold.
static const std::vector<std::shared_ptr<Segment>> *CleanLevel(const Version &ver, int dir, uint64_t lo, uint64_t hi,
                                                               uint64_t tau) {
  const Tree &t = ver.trees[dir];
  if (!t.l0.empty() || !ver.vdel->empty()) return nullptr;
  const std::vector<std::shared_ptr<Segment>> *found = nullptr;
  for (size_t i = 1; i < t.levels.size(); i++) {
    for (const auto &s : t.levels[i]) {
      const SegMeta &m = s->meta();
      if (m.max_src < lo || m.min_src >= hi) continue;
      if (found != nullptr && found != &t.levels[i]) return nullptr;
      if (!s->AllVisibleAt(tau)) return nullptr;
      found = &t.levels[i];
    }
  }
  return found;
}

// Appends the vertices of [lo, hi) held by the clean level lv to a scan's
// output (see Segment::AppendRange). *done is false when the buffers
// filled first: *next is then the first vertex not copied. A first vertex
// that alone exceeds ecap is GT_ERR_BUFFER with its count in *ne.
static Status BulkCopy(const std::vector<std::shared_ptr<Segment>> &lv, uint64_t lo, uint64_t hi, uint64_t *vids,
                       uint64_t *offs, size_t vcap, uint64_t *dsts, double *w, size_t ecap, size_t *nv, size_t *ne,
                       uint64_t *next, bool *done) {
  *done = false;
  for (const auto &s : lv) {
    if (s->meta().max_src < lo || s->meta().min_src >= hi) continue;
    uint64_t need;
    GT_RETURN_IF_ERROR(s->AppendRange(lo, hi, vids, offs, vcap, dsts, w, ecap, nv, ne, next, &need));
    if (need > 0) {
      *ne = need;
      return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(*next), "", 0};
    }
    if (*next != hi) return Status::OK();
  }
  *next = hi;
  *done = true;
  return Status::OK();
}

Status SnapshotReader::Scan(uint64_t lo, uint64_t hi, int dir, uint64_t *vids, uint64_t *offs, size_t vcap,
                            uint64_t *dsts, double *w, size_t ecap, size_t *nv, size_t *ne, uint64_t *next) {
  *nv = 0;
  *ne = 0;
  *next = hi;
  if (hi <= lo) return Status::OK();
  if (vcap == 0) return Status{Code::kBuffer, "vertex buffer has no room", "", 0};
  auto ver = store_->Current();
  VisibleMems mems(*ver, tau_);
  offs[0] = 0;
  if (const auto *lv = CleanLevel(*ver, dir, lo, hi, tau_)) {
    bool done;
    if (!mems.Any(dir)) return BulkCopy(*lv, lo, hi, vids, offs, vcap, dsts, w, ecap, nv, ne, next, &done);
    // Bulk copies between the vertices the MemGraphs hold; those merge
    // their MemGraph versions with the level's run one by one.
    std::vector<VertexCursor> mc;
    for (const MemGraph *g : mems.m)
      if (g != nullptr) mc.push_back(VertexCursor::ForMem(g, dir, lo, hi));
    std::vector<Entry> m[2];
    std::vector<Run> runs;
    for (uint64_t pos = lo;;) {
      bool any;
      uint64_t d = MinHead(mc, &any);
      if (!any) d = hi;
      if (pos < d) {
        GT_RETURN_IF_ERROR(BulkCopy(*lv, pos, d, vids, offs, vcap, dsts, w, ecap, nv, ne, next, &done));
        if (!done) return Status::OK();
      }
      if (d >= hi) break;
      if (*nv == vcap) {
        *next = d;
        return Status::OK();
      }
      GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, d, m, &runs));
      const size_t k = AppendVisible(runs, d, tau_, *ver->vdel, dsts, w, *ne, ecap);
      if (k > ecap) {
        *next = d;
        if (*nv == 0) {
          *ne = k;
          return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(d), "", 0};
        }
        return Status::OK();
      }
      if (k > *ne) {
        vids[*nv] = d;
        *ne = k;
        offs[++*nv] = k;
      }
      AdvancePast(mc, d);
      pos = d + 1;
    }
    *next = hi;
    return Status::OK();
  }
  std::vector<VertexCursor> cursors;
  for (const MemGraph *g : mems.m)
    if (g != nullptr) cursors.push_back(VertexCursor::ForMem(g, dir, lo, hi));
  const Tree &t = ver->trees[dir];
  for (const auto &s : t.l0) cursors.push_back(VertexCursor::ForSegment(s.get(), lo, hi));
  for (size_t i = 1; i < t.levels.size(); i++)
    if (!t.levels[i].empty()) cursors.push_back(VertexCursor::ForLevel(t.levels[i], lo, hi));
  const VdelMap &vdel = *ver->vdel;
  std::vector<Entry> m[2];
  std::vector<Run> runs;
  size_t outv = 0, oute = 0;
  for (;;) {
    bool any;
    uint64_t v = MinHead(cursors, &any);
    if (!any) break;
    if (outv == vcap) {
      *next = v;
      break;
    }
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
    const size_t k = AppendVisible(runs, v, tau_, vdel, dsts, w, oute, ecap);
    if (k > ecap) {
      if (outv == 0) {
        *ne = k;
        *next = v;
        return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(v), "", 0};
      }
      *next = v;
      break;
    }
    AdvancePast(cursors, v);
    if (k == oute) continue;  // no visible edges
    vids[outv] = v;
    oute = k;
    offs[++outv] = oute;
  }
  *nv = outv;
  *ne = oute;
  return Status::OK();
}

Status SnapshotReader::Gather(const uint64_t *vids, size_t n, int dir, uint64_t *offs, uint64_t *dsts, double *w,
                              size_t ecap, size_t *done, size_t *ne) {
  *done = 0;
  *ne = 0;
  offs[0] = 0;
  if (n == 0) return Status::OK();
  auto ver = store_->Current();
  VisibleMems mems(*ver, tau_);
  const VdelMap &vdel = *ver->vdel;
  std::vector<Entry> m[2];
  std::vector<Run> runs;
  size_t oute = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t v = vids[i];
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
    const size_t k = AppendVisible(runs, v, tau_, vdel, dsts, w, oute, ecap);
    if (k > ecap) {
      if (i == 0) {
        *ne = k;
        return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(v), "", 0};
      }
      break;
    }
    oute = k;
    offs[i + 1] = oute;
    *done = i + 1;
  }
  *ne = oute;
  return Status::OK();
}

Status SnapshotReader::NeighborsAfter(uint64_t v, int dir, bool has_after, uint64_t after, uint64_t *dsts, double *w,
                                      size_t cap, size_t *n, bool *more) {
  *n = 0;
  *more = false;
  auto ver = store_->Current();
  std::vector<Entry> m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
  }
  if (FastRun(runs, tau_, *ver->vdel)) {
    // One clean run, sorted and unique by dst: seek, then copy a page.
    const Run &r = runs[0];
    uint64_t lo = r.b, hi = r.e;
    while (has_after && lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (r.seg->dst(mid) <= after)
        lo = mid + 1;
      else
        hi = mid;
    }
    const uint64_t end = std::min<uint64_t>(r.e, lo + cap);
    r.seg->CopyDsts(lo, end, dsts);
    if (w) r.seg->CopyWeights(lo, end, w);
    *n = end - lo;
    *more = end < r.e;
    return Status::OK();
  }
  size_t k = 0;
  VisibleVersions(runs, v, tau_, *ver->vdel, [&](uint64_t d, double wt) {
    if (has_after && d <= after) return;
    if (k < cap) {
      dsts[k] = d;
      if (w) w[k] = wt;
      k++;
    } else {
      *more = true;
    }
  });
  *n = k;
  return Status::OK();
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
