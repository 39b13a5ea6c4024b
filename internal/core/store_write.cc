// store_write.cc -- the write path: Apply into the active MemGraph,
// freezing it, flush requests, and the flush thread that writes a frozen
// MemGraph to an L0 file and installs it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <unordered_map>

#include "store.h"
#include "store_internal.h"

namespace gt {
namespace {

// Raises *a to at least v.
void RaiseTo(std::atomic<uint64_t> *a, uint64_t v) {
  uint64_t cur = a->load();
  while (v > cur && !a->compare_exchange_weak(cur, v)) {
  }
}

// Why op i of a batch is not one the store takes, or OK: its kind, ids,
// weight, type, time, flags and payload (within the batch's payload_len
// bytes), and the event source it names (one of the store's sources).
Status CheckOp(const gt_op &op, size_t i, const uint8_t *payload, size_t payload_len,
               const std::atomic<uint32_t> &sources) {
  auto bad = [i](const std::string &why) { return Status::Invalid("op " + std::to_string(i) + ": " + why); };
  if (op.kind > GT_OP_DELETE_CELL) return bad("unknown kind " + std::to_string(op.kind));
  const bool cell = op.kind == GT_OP_PUT_CELL || op.kind == GT_OP_DELETE_CELL;
  if (op.src > GT_MAX_VERTEX || (op.kind != GT_OP_DELETE_VERTEX && !cell && op.dst > GT_MAX_VERTEX))
    return bad("vertex id out of range (max " + std::to_string(GT_MAX_VERTEX) + ")");
  if (cell && (op.dst < GT_CELL_BASE || op.dst - GT_CELL_BASE >= GT_MAX_CELLS))
    return bad("a cell's dst must be GT_CELL_BASE plus an index below " + std::to_string(GT_MAX_CELLS));
  if (cell && op.type != 0) return bad("a cell takes no type");
  if ((op.kind == GT_OP_UPSERT || op.kind == GT_OP_PUT_CELL) && !std::isfinite(op.weight))
    return bad("weight must be finite");
  if (op.type >= kMaxEdgeTypes)
    return bad("edge type " + std::to_string(op.type) + " out of range (max " + std::to_string(kMaxEdgeTypes - 1) +
               ")");
  if (op.time < 0) return bad("event time " + std::to_string(op.time) + " is negative (Unix microseconds; 0 for none)");
  if (op.kind == GT_OP_DELETE_VERTEX && op.type != 0)
    return bad("a vertex delete removes edges of every type; its type must be 0");
  if ((op.flags & ~uint32_t{GT_OP_ACCUMULATE | GT_OP_SOURCE}) != 0)
    return bad("unknown flags " + std::to_string(op.flags));
  if ((op.flags != 0 || op.payload_len != 0) && op.kind != GT_OP_UPSERT)
    return bad("only an upsert accumulates or carries a payload");
  if (op.payload_len > GT_MAX_PAYLOAD)
    return bad("payload of " + std::to_string(op.payload_len) + " bytes is longer than " +
               std::to_string(GT_MAX_PAYLOAD));
  if (op.payload_len != 0 && (op.payload_off > payload_len || payload_len - op.payload_off < op.payload_len))
    return bad("payload [" + std::to_string(op.payload_off) + ", +" + std::to_string(op.payload_len) +
               ") is not within the batch's " + std::to_string(payload_len) + " payload bytes");
  if ((op.flags & GT_OP_SOURCE) == 0) return Status::OK();
  if (op.payload_len < GT_SOURCE_POS_BYTES)
    return bad("a source position takes " + std::to_string(GT_SOURCE_POS_BYTES) + " payload bytes, the op has " +
               std::to_string(op.payload_len));
  uint32_t src;
  std::memcpy(&src, payload + op.payload_off, sizeof src);
  const uint32_t known = sources.load(std::memory_order_acquire);
  if (src == 0 || src > known)
    return bad("event source " + std::to_string(src) + " is not one the store numbered (it has " +
               std::to_string(known) + ")");
  return Status::OK();
}

bool IsCell(const gt_op &op) { return op.kind == GT_OP_PUT_CELL || op.kind == GT_OP_DELETE_CELL; }

// What a batch holds that its apply needs besides its ops.
struct BatchSummary {
  bool has_vdel = false;
  size_t ncells = 0;
  int64_t newest_time = 0;
  uint64_t max_low = 0, max_high = 0;  // one past, per band

  void Add(const gt_op &op) {
    const bool cell = IsCell(op);
    if (cell) ncells++;
    if (op.kind == GT_OP_UPSERT || op.kind == GT_OP_DELETE_EDGE) newest_time = std::max(newest_time, op.time);
    if (op.kind == GT_OP_DELETE_VERTEX) has_vdel = true;
    for (uint64_t v : {op.src, op.kind == GT_OP_DELETE_VERTEX || cell ? op.src : op.dst}) {
      if (v < GT_HIGH_ID_BASE)
        max_low = std::max(max_low, v + 1);
      else
        max_high = std::max(max_high, v + 1);
    }
  }
};

// An edge (or cell) op followed, in the same batch, by a delete of one of
// its vertices is dead on arrival; it must not survive with the delete's
// seq. (A cell's dst is above every vertex id: only its src matters.)
// skip[i] is 1 for each such op.
std::vector<uint8_t> DeadOnArrival(const gt_op *ops, size_t n) {
  std::vector<uint8_t> skip(n, 0);
  std::unordered_map<uint64_t, size_t> last_del;
  for (size_t i = 0; i < n; i++)
    if (ops[i].kind == GT_OP_DELETE_VERTEX) last_del[ops[i].src] = i;
  for (size_t i = 0; i < n; i++) {
    if (ops[i].kind == GT_OP_DELETE_VERTEX) continue;
    auto a = last_del.find(ops[i].src), b = last_del.find(ops[i].dst);
    if ((a != last_del.end() && a->second > i) || (b != last_del.end() && b->second > i)) skip[i] = 1;
  }
  return skip;
}

// A batch with cells, the edge ops and the cell ops apart, each with its
// skips (none when skip is empty): the cell ops go to the cells MemGraph
// as edge ops.
struct CellSplit {
  std::vector<gt_op> eops, cops;
  std::vector<uint8_t> eskip, cskip;

  void Split(const gt_op *ops, size_t n, const std::vector<uint8_t> &skip, size_t ncells) {
    eops.reserve(n - ncells);
    cops.reserve(ncells);
    for (size_t i = 0; i < n; i++) {
      const bool cell = IsCell(ops[i]);
      std::vector<gt_op> &to = cell ? cops : eops;
      to.push_back(ops[i]);
      if (cell) to.back().kind = ops[i].kind == GT_OP_PUT_CELL ? GT_OP_UPSERT : GT_OP_DELETE_EDGE;
      if (!skip.empty()) (cell ? cskip : eskip).push_back(skip[i]);
    }
  }
};

}  // namespace

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
  e.new_active = NewMemGraph();
  current_->active->Freeze(last_seq_.load());
  InstallLocked(e);
  l.unlock();
  cv_.notify_all();
  return Status::OK();
}

Status Store::Apply(const gt_op *ops, size_t n, const uint8_t *srcpos, size_t srcpos_len, uint64_t *seq_out,
                    const uint8_t *payload, size_t payload_len) {
  // The CPU time of this call, the MemGraph's helper thread's share
  // included (gt_metrics.apply_cpu_nanos), whatever way it returns.
  struct CpuAccount {
    std::atomic<uint64_t> *total;
    uint64_t t0 = ThreadCpuNanos();
    uint64_t helper = 0;
    CpuAccount(const CpuAccount &) = delete;
    CpuAccount &operator=(const CpuAccount &) = delete;
    ~CpuAccount() { total->fetch_add(ThreadCpuNanos() - t0 + helper, std::memory_order_relaxed); }
  } cpu{&apply_cpu_nanos_};
  if (opt_.read_only) return Status::Invalid("store is open read-only");
  if (n > 0 && ops == nullptr) return Status::Invalid("ops is null");
  if (payload_len > 0 && payload == nullptr) return Status::Invalid("payload is null");
  BatchSummary sum;
  for (size_t i = 0; i < n; i++) {
    GT_RETURN_IF_ERROR(CheckOp(ops[i], i, payload, payload_len, event_sources_));
    sum.Add(ops[i]);
  }
  std::vector<uint8_t> skip;
  if (sum.has_vdel) skip = DeadOnArrival(ops, n);
  CellSplit split;
  if (sum.ncells > 0) split.Split(ops, n, skip, sum.ncells);

  std::unique_lock<std::mutex> wl(write_mu_);
  std::shared_ptr<const Version> ver;
  GT_RETURN_IF_ERROR(ActiveForWrite(&wl, &ver));
  const uint64_t seq = last_seq_.load() + 1;
  if (seq > kMaxSeq) return Status::Invalid("sequence numbers exhausted (max " + std::to_string(kMaxSeq) + ")");
  if (sum.ncells > 0) {
    // Cells first: the edge MemGraph's Apply counts the batch (empty(),
    // first_seq) and records its source position, so it goes last.
    ver->active->cells()->Apply(split.cops.data(), split.cops.size(), seq, split.cskip, nullptr, 0);
    cpu.helper = ver->active->Apply(split.eops.data(), split.eops.size(), seq, split.eskip, srcpos, srcpos_len, payload,
                                    payload_len);
  } else {
    cpu.helper = ver->active->Apply(ops, n, seq, skip, srcpos, srcpos_len, payload, payload_len);
  }
  // Retention's watermark: only ever raised, and only by what is applied.
  int64_t wm = newest_time_.load(std::memory_order_relaxed);
  while (sum.newest_time > wm && !newest_time_.compare_exchange_weak(wm, sum.newest_time, std::memory_order_relaxed)) {
  }
  ver->active->RaiseBounds(sum.max_low, sum.max_high);
  if (sum.has_vdel) {
    // O(new records) amortized: the map shares its chunks (merge.h).
    std::vector<VdelMap::Record> recs;
    for (size_t i = 0; i < n; i++)
      if (ops[i].kind == GT_OP_DELETE_VERTEX) recs.emplace_back(ops[i].src, seq);
    VersionEdit e;
    e.vdel = ver->vdel->With(std::move(recs));
    std::lock_guard<std::mutex> l(mu_);
    InstallLocked(e);
  }
  RaiseTo(&low_bound_, sum.max_low);
  RaiseTo(&high_bound_, sum.max_high);
  // Publish: snapshots taken from here on see this batch.
  last_seq_.store(seq, std::memory_order_release);
  if (seq_out) *seq_out = seq;
  return Status::OK();
}

Status Store::ActiveForWrite(std::unique_lock<std::mutex> *write_lock, std::shared_ptr<const Version> *ver) {
  bool requested;  // a deferred flush request this writer can serve at once
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!bg_error_.ok()) return bg_error_;
    if (shutting_down_) return Status::Closed("store is closing");
    *ver = current_;
    requested = flush_requested_ > durable_seq_ && !(*ver)->imm && !(*ver)->active->empty();
  }
  // A writer serves a deferred flush request itself when it finds no flush
  // running: the flush thread's try_lock may lose to a steady stream of
  // writers, and the request must not wait for the MemGraph to fill.
  if ((*ver)->active->full() || requested) {
    GT_RETURN_IF_ERROR(FreezeActiveLocked(write_lock));
    *ver = Current();
  }
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
    // The MemGraph's mappings were unmapped (unless a reader still holds
    // its Version) and its sorted index freed: the resident set tracks the
    // MemGraph budget.
    ReturnFreePages();
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
  const Retention ret = RetentionNow();  // after durable: see RunCompaction
  ExtArena arena;
  RetainParams rp{&ret.snaps, vdel.get(), durable, false, ret.history, ret.floor};
  rp.watermark = ret.watermark;
  rp.retain_us = ret.retain_us.data();
  rp.arena = &arena;
  const uint64_t vdel_clean = VdelCleanSeq(rp);
  std::vector<SegMeta> metas;
  std::vector<Entry> ents, kept;
  SegmentBuilder b;
  b.set_format(opt_.segment_format);
  b.set_history(ret.history, ret.floor);
  std::vector<Run> runs(1);
  // A frozen MemGraph has no writer: this thread took it from the
  // Version published, under mu_, after Freeze and so after every write.
  // The versions of g that the retention keeps, into b.
  auto retained = [&](const MemGraph &g) {
    g.ForEachSorted(&ents, [&](uint64_t v, const std::vector<Entry> &vs) {
      runs[0] = Run{vs.data(), nullptr, 0, vs.size()};
      kept.clear();
      RetainVersions(runs, v, rp, &kept);
      b.AddVertex(v, kept.data(), kept.size());
      arena.Clear();
    });
  };
  b.Reserve(mem->vertices(kOut), mem->entries());
  retained(*mem);
  if (!b.empty()) {
    SegMeta m;
    GT_RETURN_IF_ERROR(b.Finish(dir_, NewFileId(), 0, kOut, &m));
    metas.push_back(m);
    if (opt_.in_edges) {
      // The in-edge file is the out-edge one transposed: RetainVersions
      // treats an edge's two ends alike, so it keeps the same versions of
      // each edge in either direction.
      SegmentBuilder in;
      in.set_format(opt_.segment_format);
      in.set_edge_filter(false);  // in-edge files have none
      in.set_history(ret.history, ret.floor);
      b.Transpose(&in);
      GT_RETURN_IF_ERROR(in.Finish(dir_, NewFileId(), 0, kIn, &m));
      metas.push_back(m);
    }
  }
  if (const MemGraph *cells = mem->cells(); cells != nullptr && !cells->empty()) {
    // The vertex cells' file, retained by the same rules (a vertex delete
    // hides a cell as it hides an edge of its src).
    b.Reset();
    b.set_edge_filter(false);
    retained(*cells);
    if (!b.empty()) {
      SegMeta m;
      GT_RETURN_IF_ERROR(b.Finish(dir_, NewFileId(), 0, kVtx, &m));
      metas.push_back(m);
    }
  }
  std::vector<std::shared_ptr<Segment>> segs;
  GT_RETURN_IF_ERROR(OpenWritten(metas, vdel_clean, &segs));
  GT_RETURN_IF_ERROR(TestPause(GT_TEST_FLUSH_BEFORE_EDIT));
  ManifestEdit r;
  r.kind = EditKind::kFlush;
  r.has_durable_seq = true;
  r.durable_seq = mem->freeze_seq();
  r.added = metas;
  r.vdels = mem->vdels();
  r.vdel_clean = vdel_clean;
  if (ret.history) r.history_floor = ret.floor;
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

// Makes newly written files' directory entries durable and opens them,
// each with the vertex-delete clean seq its writer applied (set before the
// segment is shared).
// INVARIANT (write ordering): a segment file's data (SegmentBuilder::Finish
// fsyncs it) and its directory entry (here) are durable before the
// manifest edit that references it is appended: a durable edit never names
// a file a crash can take back.
Status Store::OpenWritten(const std::vector<SegMeta> &metas, uint64_t vdel_clean,
                          std::vector<std::shared_ptr<Segment>> *segs) {
  if (!metas.empty()) GT_RETURN_IF_ERROR(SyncDir(dir_));
  for (const SegMeta &m : metas) {
    std::shared_ptr<Segment> s;
    GT_RETURN_IF_ERROR(Segment::Open(dir_, m.id, &s));
    s->set_vdel_clean(vdel_clean);
    segs->push_back(std::move(s));
  }
  return Status::OK();
}

}  // namespace gt
