#include "memgraph.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <new>
#include <string>
#include <system_error>

#include "dcheck.h"

namespace gt {
namespace {
inline uint64_t HashVertex(uint64_t v) { return v * kVertexHashMul; }

// Cells and bitmap words live in mappings (zero pages until touched), not
// in C++ objects: they are read and written with the atomic builtins.
inline uint32_t LoadCell(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void StoreCell(uint32_t *p, uint32_t x) { __atomic_store_n(p, x, __ATOMIC_RELEASE); }
inline uint64_t LoadWord(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
}  // namespace

bool HelperThread::Post(Task *t) {
  {
    std::lock_guard<std::mutex> l(mu_);
    task_ = t;
    error_ = nullptr;
  }
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { Loop(); });
    } catch (const std::system_error &) {
      std::lock_guard<std::mutex> l(mu_);
      task_ = nullptr;
      return false;
    }
  }
  cv_.notify_all();
  return true;
}

void HelperThread::Wait() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return task_ == nullptr; });
  if (error_ != nullptr) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    l.unlock();
    std::rethrow_exception(e);
  }
}

void HelperThread::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  stop_ = false;
}

void HelperThread::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return task_ != nullptr || stop_; });
    if (task_ == nullptr) return;  // stopped
    Task *t = task_;
    l.unlock();
    std::exception_ptr err;
    try {
      t->Run();
    } catch (...) {
      err = std::current_exception();
    }
    l.lock();
    error_ = err;
    task_ = nullptr;
    cv_.notify_all();
  }
}

MemGraph::MemGraph(bool in_edges, uint64_t limit_bytes, uint32_t hub_min, uint32_t parallel_min,
                   std::shared_ptr<MappingPool> pool, bool cells)
    : in_edges_(in_edges),
      limit_(limit_bytes),
      pool_(std::move(pool)),
      hub_min_(hub_min != 0 ? hub_min
                            : static_cast<uint32_t>(std::min<uint64_t>(256, std::max<uint64_t>(8, limit_bytes >> 13)))),
      sort_min_(static_cast<uint32_t>(std::min<uint64_t>(uint64_t(hub_min_) * 64, UINT32_MAX / 4))),
      parallel_min_(parallel_min != 0
                        ? parallel_min
                        : static_cast<uint32_t>(std::min<uint64_t>(1024, std::max<uint64_t>(1, limit_bytes >> 16)))) {
  // A bitmap may take at most 1/16 of the MemGraph's budget (and covers at
  // most kBitmapIds ids), so that sparse ids cannot fill a MemGraph with
  // bits: vertices past it are found by probing.
  const uint64_t cap_words = std::min<uint64_t>(kBitmapIds / 64, std::max<uint64_t>(limit_bytes / 16 / 8, 64));
  for (Shard &sh : out_.shards) {
    NewTable(sh, 1024 / kShards);
    sh.arena.SetBlockBytes(std::min<uint64_t>(1 << 20, std::max<uint64_t>(4096, limit_bytes / 16 / kShards)));
  }
  for (Band &b : out_.bands) {
    b.words = Mapping(cap_words * sizeof(uint64_t));
    b.cap_words = cap_words;
  }
  bytes_.store(ComputeBytes());
  // The cells MemGraph is sized as this one, for what its size sets: the
  // hub caches' budget and threshold, so that the cells of a vertex whose
  // record is put over and over are read as a hub's edges are (a cache and
  // a short tail), not sorted whole by every read. Its memory is taken as
  // it is used, and bytes() counts it against this one's limit.
  if (!cells) cells_ = std::make_unique<MemGraph>(false, limit_bytes, 0, UINT32_MAX, nullptr, true);
}

MemGraph::~MemGraph() {
  // No reader is left: readers reach a MemGraph through a Version they hold.
  helper_.Stop();  // nor a writer
  if (pool_ != nullptr) {
    for (Shard &sh : out_.shards) {
      for (std::unique_ptr<Table> &t : sh.tables) {
        const size_t n = t->cells.bytes();  // populated whole
        pool_->Give(std::move(t->cells), n);
      }
      sh.slots.GiveBack(pool_.get());
      sh.touched.GiveBack(pool_.get());
      sh.arena.GiveBack(pool_.get());
    }
  }
  for (HubBox *b = boxes_.load(std::memory_order_acquire); b != nullptr;) {
    std::unique_ptr<HubBox> own(b);
    b = b->next;
  }
}

void *MemGraph::Arena::Alloc(size_t n, MappingPool *pool) {
  if (n > block_bytes_ / 4) {
    if (pool != nullptr) pool->Trim(n);
    blocks_.push_back(Kept{Mapping(n), n});
    bytes_ += n;
    return blocks_.back().m.get();
  }
  if (n > cap_ - used_) {
    // The previous shared mapping is done.
    if (cur_ != nullptr) blocks_[cur_block_].resident = populated_;
    bytes_ += populated_;
    // A pooled block's pages are resident as far as its last owner
    // touched them.
    Mapping m = pool != nullptr ? pool->Take(block_bytes_, &populated_) : Mapping();
    if (m.get() == nullptr) {
      if (pool != nullptr) pool->Trim(block_bytes_);
      m = Mapping(block_bytes_);
      populated_ = 0;
    }
    cur_ = static_cast<char *>(m.get());
    cur_block_ = blocks_.size();
    blocks_.push_back(Kept{std::move(m), 0});
    used_ = 0;
    cap_ = block_bytes_;
  }
  void *p = cur_ + used_;
  used_ += n;
  if (used_ > populated_) {
    // The next pages at once (one call, not a fault per page); where the
    // kernel has no MADV_POPULATE_WRITE they fault as they are touched.
    const size_t to = std::min(cap_, (used_ + kPopulate - 1) / kPopulate * kPopulate);
    ::madvise(cur_ + populated_, to - populated_, MADV_POPULATE_WRITE);
    populated_ = to;
  }
  return p;
}

void MemGraph::Arena::GiveBack(MappingPool *pool) {
  if (cur_ != nullptr) blocks_[cur_block_].resident = populated_;
  for (Kept &b : blocks_) pool->Give(std::move(b.m), b.resident);
}

void MemGraph::NewTable(Shard &d, uint64_t cells) {
  auto t = std::make_unique<Table>();
  size_t resident = 0;
  if (pool_ != nullptr) t->cells = pool_->Take(cells * sizeof(uint32_t), &resident);
  if (t->cells.get() != nullptr) {
    std::memset(t->cells.get(), 0, cells * sizeof(uint32_t));  // empty cells are 0
  } else {
    if (pool_ != nullptr) pool_->Trim(cells * sizeof(uint32_t));
    t->cells = Mapping(cells * sizeof(uint32_t), true);  // hashed into: every page is touched
  }
  t->mask = cells - 1;
  d.table_bytes += cells * sizeof(uint32_t);
  d.table.store(t.get(), std::memory_order_release);
  d.tables.push_back(std::move(t));
}

void MemGraph::Grow(Shard &d) {
  Migrate(d, UINT64_MAX);  // never needed: SlotOf migrates faster than tables fill
  d.old.store(d.tables.back().get(), std::memory_order_release);
  d.migrated = 0;
  d.migrate_end = d.nslots.load(std::memory_order_relaxed);
  NewTable(d, (d.tables.back()->mask + 1) * 2);
}

void MemGraph::Migrate(Shard &d, uint64_t k) {
  if (d.old.load(std::memory_order_relaxed) == nullptr) return;
  Table &t = *d.tables.back();
  uint32_t *c = t.cell();
  auto home = [&](uint64_t si) { return t.Home(d.slots.at(si).v); };
  const uint64_t end = d.migrated + std::min(k, d.migrate_end - d.migrated);
  for (; d.migrated < end; d.migrated++) {
    // The cells of the next calls' slots, fetched ahead.
    constexpr uint64_t kAhead = 8;
    if (d.migrated + kAhead < d.migrate_end) __builtin_prefetch(&c[home(d.migrated + kAhead)], 1);
    uint64_t i = home(d.migrated);
    while (c[i] != 0) i = (i + 1) & t.mask;
    StoreCell(&c[i], static_cast<uint32_t>(d.migrated) + 1);
  }
  // Every slot added: readers may stop looking in the old table.
  if (d.migrated == d.migrate_end) d.old.store(nullptr, std::memory_order_release);
}

uint32_t MemGraph::Find(const Shard &d, const Table &t, uint64_t v, uint64_t *cell) const {
  const uint32_t *c = t.cell();
  uint64_t i = t.Home(v);
  for (;;) {
    const uint32_t x = LoadCell(&c[i]);
    if (x == 0) break;
    if (d.slots.at(x - 1).v == v) {
      *cell = i;
      return x - 1;
    }
    i = (i + 1) & t.mask;
  }
  *cell = i;
  return kNil;
}

const MemGraph::Slot *MemGraph::Lookup(const Dir &dir, uint64_t v) const {
  const Shard &d = dir.shards[ShardOf(v)];
  // table before old: see Shard.
  const Table *t = d.table.load(std::memory_order_acquire);
  if (t == nullptr) return nullptr;  // a direction not kept
  const Table *o = d.old.load(std::memory_order_acquire);
  uint64_t cell;
  uint32_t si = Find(d, *t, v, &cell);
  if (si == kNil && o != nullptr) si = Find(d, *o, v, &cell);
  return si != kNil ? &d.slots.at(si) : nullptr;
}

void MemGraph::Mark(Dir &d, uint64_t v) const {
  const int b = v >= GT_HIGH_ID_BASE ? 1 : 0;
  const uint64_t off = v - (b ? GT_HIGH_ID_BASE : 0);
  Band &band = d.bands[b];
  if (off / 64 >= band.cap_words) {
    band.far.store(true, std::memory_order_release);
    return;
  }
  // Both shards' threads set bits: an atomic or, and used only raised.
  __atomic_fetch_or(&band.word()[off / 64], uint64_t(1) << (off % 64), __ATOMIC_RELAXED);
  // INVARIANT: every set bit lies below 64*used, and used never passes
  // cap_words, so every vertex past the bits has far set.
  uint64_t used = band.used.load(std::memory_order_relaxed);
  while (off / 64 + 1 > used &&
         !band.used.compare_exchange_weak(used, off / 64 + 1, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

uint32_t MemGraph::SlotOf(Dir &dir, Shard &d, uint64_t v) {
  uint64_t cell, old_cell;
  uint32_t si = Find(d, *d.tables.back(), v, &cell);
  if (si == kNil && d.old.load(std::memory_order_relaxed) != nullptr)
    si = Find(d, *d.old.load(std::memory_order_relaxed), v, &old_cell);
  // A few slots per vertex written: Grow starts adding the 5C/8 slots of a
  // full table of C cells to one of 2C, and the next Grow comes 5C/8 new
  // vertices later: by then 4 per vertex have added all of them.
  Migrate(d, 4);
  if (si != kNil) return si;
  si = d.nslots.load(std::memory_order_relaxed);
  if ((uint64_t(si) + 1) * 8 > (d.tables.back()->mask + 1) * 5) Grow(d);
  // The probe again: the table changed (Grow, Migrate) since.
  Find(d, *d.tables.back(), v, &cell);
  new (Place(&d.slots, si)) Slot(v);
  // Slot built first, then findable, then counted.
  StoreCell(&d.tables.back()->cell()[cell], si + 1);
  d.nslots.store(si + 1, std::memory_order_release);
  Mark(dir, v);
  return si;
}

void MemGraph::AppendGroup(const Batch &b, Shard &d, uint32_t si, const Group &g) {
  // Readers may be copying this slot's versions: change it in publication
  // order (see Slot), and publish the group's versions with one store of n.
  Slot &s = d.slots.mut(si);
  uint32_t n = s.n.load(std::memory_order_relaxed);
  Block *h = const_cast<Block *>(s.head.load(std::memory_order_relaxed));
  const uint32_t *ops = d.scratch.order.data() + g.start;
  for (uint32_t i = 0; i < g.count; i++) {
    const gt_op &op = b.ops[ops[i]];
    const bool tomb = op.kind == GT_OP_DELETE_EDGE;
    const Kind ek = KindOf(op);
    Entry e{op.dst, MakeVers(b.seq, tomb, op.type), tomb ? 0.0 : op.weight, op.time};
    const bool acc = (op.flags & GT_OP_ACCUMULATE) != 0;
    // Before the version is published (the store of n below, release).
    if (acc && !operands_.load(std::memory_order_relaxed)) operands_.store(true, std::memory_order_release);
    if (ek != kEvent) {
      // An operand without payload: the shared extras, no record.
      if (acc) e.ext = &kOneEvent;
    } else {
      // The extras, in the shard's arena: an operand of one event (count
      // 1, first its time) or not, and the op's payload (validated by
      // Store::Apply).
      // An op with a source position (GT_OP_SOURCE) has it in its payload's
      // first bytes (checked by Store::Apply): a number and an offset in
      // the record, the rest the payload.
      const uint8_t *pay = b.payload + op.payload_off;
      uint32_t len = op.payload_len;
      EventPos pos;
      if ((op.flags & GT_OP_SOURCE) != 0) {
        std::memcpy(&pos.source, pay, sizeof pos.source);
        std::memcpy(&pos.position, pay + sizeof pos.source, sizeof pos.position);
        pay += GT_SOURCE_POS_BYTES;
        len -= GT_SOURCE_POS_BYTES;
      }
      void *mem = d.arena.Alloc((sizeof(ExtRec) + len + 7) & ~size_t(7), pool_.get());
      // first: the op's time, also for a replace version (count 0, whose
      // first no reader reads), so that an inline version keeps its time
      // there (Slot::inl).
      ExtRec *x = new (mem) ExtRec{acc ? 1u : 0u, op.time, len, 0, pos.source, pos.position};
      if (len != 0) std::memcpy(x + 1, pay, len);
      e.ext = x;
    }
    if (n < kInline) {
      s.inl[n++] = ToInline(e);
      continue;
    }
    if (n == s.cap || ek > s.hkind) {
      // A new block (nothing is copied), large enough for the rest of the
      // group: a slot gets at most one block per batch, or a few when
      // versions of a larger kind leave a block. Of the largest kind the
      // rest of the group needs.
      Kind kind = kNarrow;
      for (uint32_t j = i; j < g.count && kind != kEvent; j++) kind = std::max(kind, KindOf(b.ops[ops[j]]));
      const uint32_t cap = std::min(std::max(NextBlock(s.cap), g.count - i), kMaxBlock);
      const size_t bytes = sizeof(Block) + size_t(cap) * KindBytes(kind);
      h = new (d.arena.Alloc(bytes, pool_.get())) Block{h, n, cap | (uint32_t(kind) << Block::kKindShift)};
      s.head.store(h, std::memory_order_release);
      s.cap = n + cap;
      s.hbase = n;
      s.hkind = kind;
    }
    switch (s.hkind) {
      case kNarrow:
        h->thin()[n++ - s.hbase] = NarrowEntry{e.dst, PackVers(e)};
        break;
      case kWide:
        h->wide()[n++ - s.hbase] = WideEntry{e.dst, PackVers(e), e.weight};
        break;
      case kTimed:
        h->timed()[n++ - s.hbase] = TimedEntry{e.dst, PackVers(e), e.weight, e.time};
        break;
      case kEvent:
        h->full()[n++ - s.hbase] = e;
        break;
    }
  }
  s.n.store(n, std::memory_order_release);
  if (n >= 2 * uint64_t(sort_min_)) KeepHubRuns(s, n);
}

void MemGraph::Partition(const Batch &b) {
  // One pass by the caller, over ops it has just validated (in its cache),
  // instead of one by each shard's thread (the helper's from memory: a
  // third of its grouping time).
  uint32_t *to[kShards];
  size_t len[kShards] = {};
  for (int i = 0; i < kShards; i++) {
    std::vector<uint32_t> &ops = out_.shards[i].scratch.ops;
    ops.resize(b.n);
    to[i] = ops.data();
  }
  const bool skip = !b.skip->empty();
  for (size_t k = 0; k < b.n; k++) {
    const gt_op &op = b.ops[k];
    if (op.kind != GT_OP_UPSERT && op.kind != GT_OP_DELETE_EDGE) continue;
    if (skip && (*b.skip)[k]) continue;
    const int s = ShardOf(op.src);
    to[s][len[s]++] = static_cast<uint32_t>(k);
  }
  for (int i = 0; i < kShards; i++) out_.shards[i].scratch.ops.resize(len[i]);
}

void MemGraph::GatherGroups(const Batch &b, Shard &sh) const {
  Scratch &x = sh.scratch;
  // Group by vertex: a small open-addressing map vertex -> group, then a
  // stable counting sort of the ops by group.
  const size_t m = x.ops.size();
  size_t cap = 16;
  while (cap < 2 * m) cap *= 2;
  x.cells.assign(cap, 0);
  x.gid.resize(m);
  x.groups.clear();
  for (size_t i = 0; i < m; i++) {
    const gt_op &op = b.ops[x.ops[i]];
    const uint64_t v = op.src;
    size_t c = (HashVertex(v) >> 24) & (cap - 1);
    for (;;) {
      const uint32_t g = x.cells[c];
      if (g == 0) {
        x.groups.push_back(Group{v, 0, 0});
        x.cells[c] = static_cast<uint32_t>(x.groups.size());
        break;
      }
      if (x.groups[g - 1].v == v) break;
      c = (c + 1) & (cap - 1);
    }
    const uint32_t g = x.cells[c] - 1;
    x.gid[i] = g;
    x.groups[g].count++;
  }
  uint32_t at = 0;
  for (Group &g : x.groups) {
    g.start = at;
    at += g.count;
    g.count = 0;  // counts again as the ops are placed
  }
  x.order.resize(m);
  for (size_t i = 0; i < m; i++) {
    Group &g = x.groups[x.gid[i]];
    x.order[g.start + g.count++] = x.ops[i];
  }
}

void MemGraph::ApplyShard(const Batch &b, int shard) {
  Dir &d = out_;
  Shard &sh = d.shards[shard];
  sh.scratch.touched.clear();
  try {
    GatherGroups(b, sh);
    const std::vector<Group> &gs = sh.scratch.groups;
    // One probe and one append per vertex, the next vertices' table cells
    // and slots fetched ahead (they are spread over the whole table).
    // Three stages ahead of the append: the vertex's cell, its slot (when
    // its cell is the first probed), and where its next version goes
    // (known from the slot: its head block's header is not read).
    constexpr size_t kCellsAhead = 16, kSlotsAhead = 10, kDataAhead = 4;
    const size_t ng = gs.size();
    // The slot of gs[j], if its first probed cell holds it (a hint: null
    // otherwise).
    auto peek = [&](const Table &t, size_t j) -> const Slot * {
      const uint32_t x = LoadCell(&t.cell()[t.Home(gs[j].v)]);
      if (x == 0) return nullptr;
      const Slot *s = &sh.slots.at(x - 1);
      return s->v == gs[j].v ? s : nullptr;
    };
    for (size_t i = 0; i < ng; i++) {
      const Table &t = *sh.tables.back();
      if (i + kCellsAhead < ng) __builtin_prefetch(&t.cell()[t.Home(gs[i + kCellsAhead].v)]);
      if (i + kSlotsAhead < ng) {
        const uint32_t x = LoadCell(&t.cell()[t.Home(gs[i + kSlotsAhead].v)]);
        if (x != 0) __builtin_prefetch(&sh.slots.at(x - 1));
      }
      if (i + kDataAhead < ng) {
        const Slot *s = peek(t, i + kDataAhead);
        const Block *h = s != nullptr ? s->head.load(std::memory_order_relaxed) : nullptr;
        const uint32_t n = h != nullptr ? s->n.load(std::memory_order_relaxed) : 0;
        if (h != nullptr && n < s->cap) {
          const size_t off = size_t(n - s->hbase) * KindBytes(s->hkind);
          __builtin_prefetch(reinterpret_cast<const char *>(h + 1) + off, 1);
        }
      }
      const uint32_t si = SlotOf(d, sh, gs[i].v);
      if (in_edges_) sh.scratch.touched.push_back(si);
      AppendGroup(b, sh, si, gs[i]);
    }
  } catch (...) {
    // What the batch wrote stays listed (its versions past n are not).
    if (in_edges_) ListTouched(sh);
    throw;
  }
  if (in_edges_) ListTouched(sh);
}

void MemGraph::ListTouched(Shard &sh) {
  // After the slots' versions: a reader that loads ntouched sees the
  // versions this batch wrote to every slot listed below it. One copy per
  // batch, not a placement per slot.
  const std::vector<uint32_t> &t = sh.scratch.touched;
  const uint64_t at = sh.ntouched.load(std::memory_order_relaxed);
  if (!t.empty()) sh.touched.Append(at, t.data(), t.size(), pool_.get());
  sh.ntouched.store(at + t.size(), std::memory_order_release);
}

uint64_t MemGraph::Apply(const gt_op *ops, size_t n, uint64_t seq, const std::vector<uint8_t> &skip,
                         const uint8_t *srcpos, size_t srcpos_len, const uint8_t *payload, size_t payload_len) {
  const Batch b{ops, n, seq, &skip, payload};
  if (payload_len != 0) payloads_ = true;

  // INVARIANT: shard 1 is written only by the helper
  // thread's task, shard 0 only here, and the task is done (Wait) before
  // Apply returns or throws: nothing of the batch is written after.
  Partition(b);
  bool posted = false;
  if (n >= parallel_min_) {
    task_.m = this;
    task_.b = b;
    task_.shard = 1;
    posted = helper_.Post(&task_);
  }
  std::exception_ptr err;
  try {
    ApplyShard(b, 0);
    if (!posted) ApplyShard(b, 1);
  } catch (...) {
    err = std::current_exception();
  }
  if (posted) helper_.Wait();  // rethrows the helper's exception
  if (err != nullptr) std::rethrow_exception(err);
  uint64_t added = 0;
  for (size_t k = 0; k < n; k++) {
    if (!skip.empty() && skip[k]) continue;
    if (ops[k].kind == GT_OP_DELETE_VERTEX) vdels_.emplace_back(ops[k].src, seq);
  }
  for (const Shard &sh : out_.shards) added += sh.scratch.ops.size();
  if (srcpos != nullptr && srcpos_len > 0) {
    srcpos_.assign(reinterpret_cast<const char *>(srcpos), srcpos_len);
    has_srcpos_ = true;
  }
  entries_.fetch_add(added, std::memory_order_relaxed);
  if (batches_.fetch_add(1, std::memory_order_relaxed) == 0) first_seq_.store(seq, std::memory_order_relaxed);
  bytes_.store(ComputeBytes(), std::memory_order_relaxed);
  // Every write of the batch (the helper's joined above) before this.
  applied_seq_.store(seq, std::memory_order_release);
  return posted ? task_.cpu_nanos : 0;
}

// Everything the MemGraph holds, capacities and outgrown tables included,
// so that it freezes at its configured size of real memory. Writer only.
uint64_t MemGraph::ComputeBytes() const {
  uint64_t b = vdels_.capacity() * sizeof(vdels_[0]) + srcpos_.capacity();
  for (const Shard &sh : out_.shards) b += sh.table_bytes + sh.slots.bytes() + sh.arena.bytes() + sh.touched.bytes();
  for (const Band &band : out_.bands) b += band.used.load(std::memory_order_relaxed) * sizeof(uint64_t);
  return b;
}

void MemGraph::Freeze(uint64_t freeze_seq) {
  if (cells_ != nullptr) cells_->Freeze(freeze_seq);
  freeze_seq_ = freeze_seq;
  helper_.Stop();
  frozen_.store(true, std::memory_order_release);
}

void MemGraph::Collect(int dir, uint64_t v, std::vector<Entry> *out) const {
  if (dir == kVtx) {
    if (cells_ != nullptr) cells_->Collect(kOut, v, out);
    return;
  }
  if (dir == kIn) {
    if (!in_edges_) return;
    const std::shared_ptr<const InIndex> x = InIndexAt(UINT64_MAX);
    if (x != nullptr) CollectIn(*x, v, out);
    return;
  }
  const Slot *s = Lookup(out_, v);
  if (s != nullptr) CollectSlot(*s, out, true);
}

namespace {
// Run order: (dst asc, type desc, seq desc) (VersOrder). Sorting is stable
// and starts from arrival order reversed, so among versions of one edge in
// one batch (equal type and seq) the later op comes first and wins.
inline bool RunLess(const Entry &a, const Entry &b) {
  if (a.dst != b.dst) return a.dst < b.dst;
  return VersOrder(a.vers) > VersOrder(b.vers);
}

void StableSortRun(Entry *b, Entry *e) {
  if (e - b <= 32) {
    for (Entry *x = b + 1; x < e; x++) {  // insertion sort: stable, no allocation
      Entry t = *x;
      Entry *y = x;
      while (y > b && RunLess(t, *(y - 1))) {
        *y = *(y - 1);
        y--;
      }
      *y = t;
    }
  } else {
    // A lambda, not the function: its calls are inlined (through a
    // function pointer the sort ran at half the speed).
    std::stable_sort(b, e, [](const Entry &x, const Entry &y) { return RunLess(x, y); });
  }
}
}  // namespace

size_t MemGraph::AddRuns(int dir, uint64_t v, uint64_t tau, ReadBuf *scratch, std::vector<Run> *runs) const {
  const size_t first = runs->size();
  const size_t n = AddRunsOf(dir, v, tau, scratch, runs);
  MarkNoOperands(runs, first);
  return n;
}

void MemGraph::MarkNoOperands(std::vector<Run> *runs, size_t first) const {
  // After the caller's snapshot: a batch it sees stored true before it.
  if (operands_.load(std::memory_order_acquire)) return;
  for (size_t i = first; i < runs->size(); i++)
    if ((*runs)[i].seg == nullptr) (*runs)[i].no_operands = true;
}

size_t MemGraph::AddRunsOf(int dir, uint64_t v, uint64_t tau, ReadBuf *scratch, std::vector<Run> *runs) const {
  if (dir == kVtx) {
    scratch->ents.clear();
    scratch->hold.reset();
    return cells_ != nullptr ? cells_->AddRuns(kOut, v, tau, scratch, runs) : 0;
  }
  std::vector<Entry> &ents = scratch->ents;
  ents.clear();
  scratch->hold.reset();
  if (dir == kIn) {
    if (!in_edges_) return 0;
    const std::shared_ptr<const InIndex> x = InIndexAt(tau);
    if (x == nullptr) return 0;
    // A copy: the index may be replaced (and freed) once this returns.
    CollectIn(*x, v, &ents);
    if (!ents.empty()) runs->push_back(Run{ents.data(), nullptr, 0, ents.size()});
    return ents.size();
  }
  const Slot *sp = Lookup(out_, v);
  if (sp == nullptr) return 0;
  const Slot &s = *sp;
  const SlotRead r = ReadSlot(s);
  if (r.view != nullptr) {
    const uint32_t covered = r.view->covered;
    const uint32_t rem = r.n > covered ? r.n - covered : 0;
    if (TakesView(r.n, covered)) {
      // The remainder sorted (newer: first), then the view's runs as they
      // are, held by scratch.
      SortedTail(s, r.blk, covered, r.n, &ents);
      read_work_.fetch_add(rem, std::memory_order_relaxed);
      size_t total = ents.size();
      if (!ents.empty()) runs->push_back(Run{ents.data(), nullptr, 0, ents.size()});
      for (const RunPtr &x : r.view->runs) {
        runs->push_back(x->Slice(0, x->k));
        total += x->k;
      }
      scratch->hold = r.view;
      return total;
    }
  }
  CollectSlot(s, &ents, true);
  if (!ents.empty()) runs->push_back(Run{ents.data(), nullptr, 0, ents.size()});
  return ents.size();
}

template <typename F>
void MemGraph::ForTailNewestFirst(const Slot &s, const Block *blk, uint32_t k, uint32_t n, F &&f) {
  // A block holds the versions from its base up to the next block's base
  // (or n).
  uint32_t upper = n;
  for (; blk != nullptr && upper > k; blk = blk->prev) {
    if (blk->base >= upper) continue;  // linked after n was read
    const uint32_t lo = std::max(k, blk->base), hi = std::min(upper, blk->base + blk->cap());
    switch (blk->kind()) {
      case kNarrow:
        for (uint32_t i = hi; i > lo; i--) f(Widen(blk->thin()[i - 1 - blk->base]));
        break;
      case kWide:
        for (uint32_t i = hi; i > lo; i--) f(Widen(blk->wide()[i - 1 - blk->base]));
        break;
      case kTimed:
        for (uint32_t i = hi; i > lo; i--) f(Widen(blk->timed()[i - 1 - blk->base]));
        break;
      case kEvent:
        for (uint32_t i = hi; i > lo; i--) f(blk->full()[i - 1 - blk->base]);
        break;
    }
    upper = blk->base;
  }
  for (uint32_t i = std::min(n, kInline); i > k; i--) f(FromInline(s.inl[i - 1]));
}

namespace {
// The index range [*b, *e) of the versions with dst d in ents[0, n),
// sorted in run order (Entry or PlainEntry).
template <typename E>
void DstRange(const E *ents, size_t n, uint64_t d, uint64_t *b, uint64_t *e) {
  const E *lo = std::lower_bound(ents, ents + n, d, [](const E &x, uint64_t y) { return x.dst < y; });
  const E *hi = std::upper_bound(lo, ents + n, d, [](uint64_t y, const E &x) { return y < x.dst; });
  *b = static_cast<uint64_t>(lo - ents);
  *e = static_cast<uint64_t>(hi - ents);
}

// Run order of (dst, vers) keys: RunLess's.
inline bool KeyLess(uint64_t ad, uint64_t av, uint64_t bd, uint64_t bv) {
  if (ad != bd) return ad < bd;
  return VersOrder(av) > VersOrder(bv);
}
}  // namespace

size_t MemGraph::AddEdgeRuns(uint64_t v, uint64_t dst, ReadBuf *scratch, std::vector<Run> *runs) const {
  const size_t first = runs->size();
  const size_t n = AddEdgeRunsOf(v, dst, scratch, runs);
  MarkNoOperands(runs, first);
  return n;
}

size_t MemGraph::AddEdgeRunsOf(uint64_t v, uint64_t dst, ReadBuf *scratch, std::vector<Run> *runs) const {
  std::vector<Entry> &ents = scratch->ents;
  ents.clear();
  scratch->hold.reset();
  const Slot *sp = Lookup(out_, v);
  if (sp == nullptr) return 0;
  const Slot &s = *sp;
  const SlotRead r = ReadSlot(s);
  const uint32_t covered = r.view != nullptr ? r.view->covered : 0;
  const uint32_t rem = r.n > covered ? r.n - covered : 0;
  if (r.view != nullptr ? TakesView(r.n, covered) : r.n < hub_min_) {
    // The versions past the view (all of them without one) to dst, then
    // each run's: the newer first.
    SortedTailTo(s, r.blk, covered, r.n, dst, &ents);
    read_work_.fetch_add(rem, std::memory_order_relaxed);  // scanned
    size_t total = ents.size();
    if (!ents.empty()) runs->push_back(Run{ents.data(), nullptr, 0, ents.size()});
    if (r.view != nullptr) {
      for (const RunPtr &x : r.view->runs) {
        uint64_t b = 0, e = 0;
        if (x->ents != nullptr)
          DstRange(x->ents, x->k, dst, &b, &e);
        else
          DstRange(x->plain, x->k, dst, &b, &e);
        if (b < e) runs->push_back(x->Slice(b, e));
        total += e - b;
      }
      scratch->hold = r.view;
    }
    return total;
  }
  CollectSlot(s, &ents, true);
  uint64_t b = 0, e = 0;
  DstRange(ents.data(), ents.size(), dst, &b, &e);
  if (b < e) runs->push_back(Run{ents.data(), nullptr, b, e});
  return e - b;
}

void MemGraph::SortedTail(const Slot &s, const Block *blk, uint32_t k, uint32_t n, std::vector<Entry> *t) {
  if (n <= k) return;
  const size_t tb = t->size();
  // Newest first, then a stable sort into run order.
  t->resize(tb + (n - k));
  Entry *o = t->data() + tb;
  ForTailNewestFirst(s, blk, k, n, [&o](const Entry &e) { *o++ = e; });
  // Exactly versions [k, n), each once (a block's unused end is not read).
  GT_DCHECK_MSG(o == t->data() + t->size(),
                "SortedTail wrote " + std::to_string(o - (t->data() + tb)) + " versions of " + std::to_string(n - k));
  StableSortRun(t->data() + tb, t->data() + t->size());
}

void MemGraph::SortedTailTo(const Slot &s, const Block *blk, uint32_t k, uint32_t n, uint64_t dst,
                            std::vector<Entry> *t) {
  if (n <= k) return;
  const size_t tb = t->size();
  ForTailNewestFirst(s, blk, k, n, [&](const Entry &e) {
    if (e.dst == dst) t->push_back(e);
  });
  StableSortRun(t->data() + tb, t->data() + t->size());
}

void MemGraph::CollectSlot(const Slot &s, std::vector<Entry> *out, bool publish) const {
  const size_t start = out->size();
  // The view may have been published after n was loaded and cover more
  // than n versions: all of them published ones.
  const SlotRead r = ReadSlot(s);
  const uint32_t covered = r.view != nullptr ? r.view->covered : 0;
  const uint32_t n = r.n;
  if (r.view == nullptr) {
    SortedTail(s, r.blk, 0, n, out);
  } else {
    // The remainder [covered, n) sorted, then merged with the view's runs:
    // the remainder first on a tie, then the runs newest first (MergeRunsAt
    // puts the lower index first).
    std::vector<Entry> tail;
    SortedTail(s, r.blk, covered, n, &tail);
    std::vector<Run> runs;
    if (!tail.empty()) runs.push_back(Run{tail.data(), nullptr, 0, tail.size()});
    for (const RunPtr &x : r.view->runs) runs.push_back(x->Slice(0, x->k));
    out->resize(start + tail.size() + covered);
    Entry *o = out->data() + start;
    MergeRunsAt(runs, [&o](const Run &x, uint64_t i) {
      if (x.plain != nullptr)
        *o++ = Entry{x.plain[i].dst, x.plain[i].vers, x.plain[i].weight, x.plain[i].time, nullptr};
      else
        *o++ = x.ents[i];
    });
    GT_DCHECK(o == out->data() + out->size());
  }
  read_work_.fetch_add(out->size() - start, std::memory_order_relaxed);
  // A new view when the remainder is more than an eighth of the old one's
  // (AddRuns then collects; below, it merges the remainder with the runs).
  if (publish && n >= hub_min_ && n > covered && (r.view == nullptr || !TakesView(n, covered)))
    Publish(s, r.view, out->data() + start, n);
}

MemGraph::HubBox *MemGraph::BoxOf(const Slot &s) const {
  HubBox *b = s.hub.load(std::memory_order_acquire);
  if (b != nullptr) return b;
  std::unique_ptr<HubBox> nb(new (std::nothrow) HubBox);
  if (nb == nullptr) return nullptr;
  HubBox *expect = nullptr;
  // Built before published (release); the loser of a race drops its box.
  if (!s.hub.compare_exchange_strong(expect, nb.get(), std::memory_order_acq_rel, std::memory_order_acquire))
    return expect;
  HubBox *own = nb.release();
  own->next = boxes_.load(std::memory_order_relaxed);
  while (!boxes_.compare_exchange_weak(own->next, own, std::memory_order_release, std::memory_order_relaxed)) {
  }
  cache_bytes_.fetch_add(sizeof(HubBox), std::memory_order_relaxed);
  return own;
}

std::unique_ptr<MemGraph::Cache> MemGraph::NewRun(uint32_t k, bool plain) {
  std::unique_ptr<Cache> c(new (std::nothrow) Cache);
  if (c == nullptr) return nullptr;
  // Counted as what it may take: a mapped copy in whole huge pages.
  const uint64_t copy = uint64_t(k) * (plain ? sizeof(PlainEntry) : sizeof(Entry));
  c->bytes =
      sizeof(Cache) + (copy >= kCacheMapBytes ? (copy + kCacheMapBytes - 1) / kCacheMapBytes * kCacheMapBytes : copy);
  void *mem = nullptr;
  if (copy >= kCacheMapBytes) {
    try {
      c->map = Mapping(copy);
    } catch (const std::bad_alloc &) {
      return nullptr;
    }
    ::madvise(c->map.get(), c->map.bytes(), MADV_HUGEPAGE);  // a hint: 4 KiB pages if refused
    mem = c->map.get();
  } else if (plain) {
    c->plain_heap.reset(new (std::nothrow) PlainEntry[k]);
    mem = c->plain_heap.get();
  } else {
    c->heap.reset(new (std::nothrow) Entry[k]);
    mem = c->heap.get();
  }
  if (mem == nullptr && k > 0) return nullptr;
  c->k = k;
  if (plain)
    c->plain = static_cast<const PlainEntry *>(mem);
  else
    c->ents = static_cast<const Entry *>(mem);
  return c;
}

MemGraph::RunPtr MemGraph::Own(std::unique_ptr<Cache> c) const {
  if (c == nullptr) return nullptr;
  std::shared_ptr<std::atomic<uint64_t>> counter = run_bytes_;
  counter->fetch_add(c->bytes, std::memory_order_relaxed);
  try {
    // Should the control block's allocation fail, the deleter runs.
    return RunPtr(c.release(), [counter](const Cache *x) {
      counter->fetch_sub(x->bytes, std::memory_order_relaxed);
      delete x;
    });
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}

MemGraph::RunPtr MemGraph::MakeRun(const Entry *ents, uint32_t k) const {
  // Plain (32-byte) copies when no version has extras.
  bool plain = true;
  for (uint32_t j = 0; j < k && plain; j++) plain = ents[j].ext == nullptr;
  std::unique_ptr<Cache> c = NewRun(k, plain);
  if (c == nullptr) return nullptr;
  if (plain) {
    PlainEntry *to = const_cast<PlainEntry *>(c->plain);
    for (uint32_t j = 0; j < k; j++) to[j] = PlainEntry{ents[j].dst, ents[j].vers, ents[j].weight, ents[j].time};
  } else {
    std::copy(ents, ents + k, const_cast<Entry *>(c->ents));
  }
  return Own(std::move(c));
}

namespace {
// Version j of a run's array as an element of another (the same type: a
// copy; PlainEntry from an Entry: never asked, a plain output has plain
// inputs).
inline void PutAs(Entry *to, const PlainEntry &x) { *to = Entry{x.dst, x.vers, x.weight, x.time, nullptr}; }
inline void PutAs(Entry *to, const Entry &x) { *to = x; }
inline void PutAs(PlainEntry *to, const PlainEntry &x) { *to = x; }
inline void PutAs(PlainEntry *to, const Entry &x) { *to = PlainEntry{x.dst, x.vers, x.weight, x.time}; }

// Merges newer a[0, na) and older b[0, nb) (both in run order) into out:
// as std::merge(a, b) (a's version first on a tie), but a stretch of b's
// versions that come before a's next one is found by a galloping search
// and copied whole, so that merging a short run into a long one costs
// about a copy of the long one.
template <typename O, typename A, typename B>
void GallopMerge(const A *a, uint64_t na, const B *b, uint64_t nb, O *out) {
  uint64_t j = 0;
  for (uint64_t i = 0; i < na; i++) {
    const A &x = a[i];
    auto before = [&](const B &y) { return KeyLess(y.dst, y.vers, x.dst, x.vers); };
    // The first p >= j with !before(b[p]): gallop, then binary search.
    uint64_t lo = j, hi = j, step = 1;
    while (hi < nb && before(b[hi])) {
      lo = hi + 1;
      hi = j + step;
      step *= 2;
    }
    hi = std::min(hi, nb);
    const B *p = std::partition_point(b + lo, b + hi, before);
    for (const B *y = b + j; y < p; y++) PutAs(out++, *y);
    j = static_cast<uint64_t>(p - b);
    PutAs(out++, x);
  }
  for (; j < nb; j++) PutAs(out++, b[j]);
}
}  // namespace

MemGraph::RunPtr MemGraph::MergeTwo(const Cache &newer, const Cache &older) const {
  const bool plain = newer.plain != nullptr && older.plain != nullptr;
  std::unique_ptr<Cache> c = NewRun(newer.k + older.k, plain);
  if (c == nullptr) return nullptr;
  auto into = [&](auto *out) {
    if (newer.plain != nullptr) {
      if (older.plain != nullptr)
        GallopMerge(newer.plain, newer.k, older.plain, older.k, out);
      else
        GallopMerge(newer.plain, newer.k, older.ents, older.k, out);
    } else {
      if (older.plain != nullptr)
        GallopMerge(newer.ents, newer.k, older.plain, older.k, out);
      else
        GallopMerge(newer.ents, newer.k, older.ents, older.k, out);
    }
  };
  if (plain)
    into(const_cast<PlainEntry *>(c->plain));
  else
    into(const_cast<Entry *>(c->ents));
  return Own(std::move(c));
}

void MemGraph::Publish(const Slot &s, const ViewPtr &old, const Entry *ents, uint32_t k) const {
  // Allocation failure only costs the next reads their speed.
  HubBox *box = BoxOf(s);
  if (box == nullptr) return;
  RunPtr r = MakeRun(ents, k);
  if (r == nullptr) return;
  try {
    auto nv = std::make_shared<HubView>();
    nv->runs.push_back(std::move(r));
    nv->covered = k;
    ViewPtr expect = old;
    // A reader (or the writer) that published meanwhile wins: this view is
    // dropped.
    std::atomic_compare_exchange_strong(&box->view, &expect, ViewPtr(std::move(nv)));
  } catch (const std::bad_alloc &) {
  }
}

void MemGraph::KeepHubRuns(const Slot &s, uint32_t n) {
  // Allocation failure only costs the next reads their speed: the versions
  // are published already.
  try {
    HubBox *box = BoxOf(s);
    if (box == nullptr) return;
    const ViewPtr old = std::atomic_load(&box->view);
    const uint32_t covered = old != nullptr ? old->covered : 0;
    if (covered >= n || n - covered < sort_min_) return;
    std::vector<Entry> tail;
    SortedTail(s, s.head.load(std::memory_order_relaxed), covered, n, &tail);
    writer_work_.fetch_add(tail.size(), std::memory_order_relaxed);
    RunPtr r = MakeRun(tail.data(), static_cast<uint32_t>(tail.size()));
    if (r == nullptr) return;
    auto nv = std::make_shared<HubView>();
    nv->runs.push_back(std::move(r));
    if (old != nullptr) nv->runs.insert(nv->runs.end(), old->runs.begin(), old->runs.end());
    // LSM: the newest run merged into the next while it is at least an
    // eighth of it (or while there are too many): few runs, the largest
    // holding most versions, for the readers' merge, which costs about a
    // head comparison per run and version where runs interleave. (Merging
    // while it is half, a binary counter, copied each version about 6
    // times instead of 10 at 2^20 versions, for about the same Apply CPU,
    // but its log2 runs made a degree of 2M random dsts 10-12 ms of CPU
    // instead of 6-9.)
    // INVARIANT: each run of a view is more than 8 times the one before it
    // (newer), but the newest, which may be any size; so a view of n
    // versions has at most log8(n/sort_min)+2 runs, and kMaxRuns.
    while (nv->runs.size() >= 2 && (uint64_t(nv->runs[0]->k) * 8 >= nv->runs[1]->k || nv->runs.size() > kMaxRuns)) {
      RunPtr m = MergeTwo(*nv->runs[0], *nv->runs[1]);
      if (m == nullptr) return;
      writer_work_.fetch_add(m->k, std::memory_order_relaxed);
      nv->runs.erase(nv->runs.begin());
      nv->runs[0] = std::move(m);
    }
    nv->covered = n;
    ViewPtr expect = old;
    // A reader that published a view meanwhile wins; the next batch's
    // versions bring this one's remainder again.
    std::atomic_compare_exchange_strong(&box->view, &expect, ViewPtr(std::move(nv)));
  } catch (const std::bad_alloc &) {
  }
}

const MemGraph::Dir &MemGraph::SortedOut() const {
  std::call_once(sorted_once_, [&] { BuildSorted(out_); });
  return out_;
}

void MemGraph::BuildSorted(Dir &d) const {
  size_t total = 0;
  for (const Shard &sh : d.shards) total += sh.nslots.load(std::memory_order_acquire);
  d.sorted.reserve(total);
  for (const Shard &sh : d.shards) {
    const uint32_t n = sh.nslots.load(std::memory_order_acquire);
    for (uint32_t si = 0; si < n; si++) d.sorted.emplace_back(sh.slots.at(si).v, si);
  }
  std::sort(d.sorted.begin(), d.sorted.end());
}

void MemGraph::VerticesFrom(int dir, uint64_t lo, uint64_t hi, uint64_t tau, size_t max, std::vector<uint64_t> *out,
                            uint64_t *resume) const {
  if (dir == kVtx) {
    *resume = hi;
    if (cells_ != nullptr) cells_->VerticesFrom(kOut, lo, hi, tau, max, out, resume);
    return;
  }
  const Dir &d = out_;
  *resume = hi;
  if (hi <= lo || vertices(dir) == 0 || max == 0) return;
  if (dir == kIn) {
    const std::shared_ptr<const InIndex> x = InIndexAt(tau);
    if (x != nullptr) InVerticesFrom(*x, lo, hi, max, out, resume);
    return;
  }
  if (frozen_.load(std::memory_order_acquire)) {
    SortedOut();
    auto key = [](const std::pair<uint64_t, uint32_t> &p, uint64_t x) { return p.first < x; };
    auto b = std::lower_bound(d.sorted.begin(), d.sorted.end(), lo, key);
    auto e = std::lower_bound(b, d.sorted.end(), hi, key);
    if (static_cast<size_t>(e - b) > max) {
      e = b + static_cast<long>(max);
      *resume = (e - 1)->first + 1;
    }
    for (auto it = b; it != e; ++it) out->push_back(it->first);
    return;
  }
  // Each band: walk its bitmap, then probe past it when vertices lie there.
  uint64_t pos = lo;
  for (int band = 0; band < 2 && pos < hi; band++) {
    const uint64_t base = band ? GT_HIGH_ID_BASE : 0;
    const uint64_t band_end = band ? UINT64_MAX : GT_HIGH_ID_BASE;
    if (pos >= band_end) continue;
    pos = std::max(pos, base);
    const uint64_t end = std::min(hi, band_end);
    const Band &bd = d.bands[band];
    // used before the words it covers (acquire: see Mark).
    const uint64_t covered = base + 64 * bd.used.load(std::memory_order_acquire);
    const uint64_t *bits = bd.word();
    if (pos < covered && pos < end) {
      const uint64_t stop = std::min(end, covered);
      for (uint64_t w = (pos - base) / 64; w <= (stop - 1 - base) / 64; w++) {
        uint64_t word = LoadWord(&bits[w]);
        const uint64_t first = base + w * 64;
        if (first < pos) word &= ~uint64_t(0) << (pos - first);
        if (stop - first < 64) word &= (uint64_t(1) << (stop - first)) - 1;
        while (word != 0) {
          const uint64_t v = first + static_cast<uint64_t>(__builtin_ctzll(word));
          word &= word - 1;
          out->push_back(v);
          if (out->size() == max) {
            *resume = v + 1;
            return;
          }
        }
      }
      pos = stop;
    }
    // No vertex lies between the used words and the bitmap's end.
    pos = std::max(pos, std::min(end, base + 64 * bd.cap_words));
    if (pos < end && bd.far.load(std::memory_order_acquire)) {
      const size_t before = out->size();
      ProbeVerticesFrom(d, pos, end, max - before, out, resume);
      if (*resume < end) return;
    }
    pos = end;
  }
  *resume = hi;
}

void MemGraph::ProbeVerticesFrom(const Dir &d, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                                 uint64_t *resume) const {
  *resume = hi;
  uint64_t n = 0;
  for (const Shard &sh : d.shards) n += sh.nslots.load(std::memory_order_acquire);
  constexpr uint64_t kWindow = 1 << 16;
  if (hi - lo <= 4 * n + kWindow) {
    uint64_t end = hi - lo > kWindow ? lo + kWindow : hi;
    for (uint64_t v = lo; v < end; v++)
      if (Lookup(d, v) != nullptr) out->push_back(v);
    *resume = end;
    return;
  }
  std::vector<uint64_t> all;
  for (const Shard &sh : d.shards) {
    const uint32_t ns = sh.nslots.load(std::memory_order_acquire);
    for (uint32_t si = 0; si < ns; si++) {
      const uint64_t v = sh.slots.at(si).v;
      if (v >= lo && v < hi) all.push_back(v);
    }
  }
  std::sort(all.begin(), all.end());
  if (all.size() > max) {
    all.resize(max);
    *resume = all.back() + 1;
  }
  out->insert(out->end(), all.begin(), all.end());
}

std::shared_ptr<const MemGraph::InIndex> MemGraph::InIndexAt(uint64_t tau) const {
  auto covers = [&](const std::shared_ptr<const InIndex> &x) {
    const uint64_t need = std::min(tau, applied_seq_.load(std::memory_order_acquire));
    return need == 0 || (x != nullptr && x->covered >= need);
  };
  std::shared_ptr<const InIndex> x = std::atomic_load(&in_index_);
  if (covers(x)) return x;
  std::lock_guard<std::mutex> l(in_mu_);
  x = std::atomic_load(&in_index_);
  if (covers(x)) return x;
  // Every batch up to applied is whole: its touched entries and versions
  // were published before applied_seq_ (release/acquire).
  const uint64_t applied = applied_seq_.load(std::memory_order_acquire);
  auto run = std::make_shared<InRun>();
  std::vector<Entry> tail;
  std::vector<uint32_t> slots;
  for (int k = 0; k < kShards; k++) {
    const Shard &sh = out_.shards[k];
    const uint64_t end = sh.ntouched.load(std::memory_order_acquire);
    std::vector<uint32_t> &cov = in_covered_[k];
    // Each slot read once: a second read could take versions newer than
    // the first one's after them, out of run order.
    slots.clear();
    for (uint64_t p = in_pos_[k]; p < end; p++) slots.push_back(sh.touched.at(p));
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (const uint32_t si : slots) {
      if (si >= cov.size()) cov.resize(std::max<size_t>(size_t(si) + 1, cov.size() * 2), 0);
      const Slot &s = sh.slots.at(si);
      // n before head: see Slot. Versions past this batch may come along;
      // cov records exactly which are in.
      const uint32_t n = s.n.load(std::memory_order_acquire);
      const Block *blk = s.head.load(std::memory_order_acquire);
      if (n <= cov[si]) continue;
      tail.clear();
      SortedTail(s, blk, cov[si], n, &tail);
      for (const Entry &e : tail) run->recs.push_back(InRec{e.dst, Entry{s.v, e.vers, e.weight, e.time, e.ext}});
      cov[si] = n;
    }
    in_pos_[k] = end;
  }
  // Each edge's versions are one slot's, already in run order: a stable
  // sort by (in-vertex, src, type desc) keeps them so.
  // In-index order: in-vertex, then the edge's src, then its type
  // descending; a stable sort or merge keeps what comes before among equal
  // keys (run order within an edge).
  auto in_less = [](const InRec &a, const InRec &b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.e.dst != b.e.dst) return a.e.dst < b.e.dst;
    return VersType(a.e.vers) > VersType(b.e.vers);
  };
  std::stable_sort(run->recs.begin(), run->recs.end(), in_less);
  auto next = std::make_shared<InIndex>();
  next->covered = applied;
  next->runs.push_back(std::move(run));
  if (x != nullptr) next->runs.insert(next->runs.end(), x->runs.begin(), x->runs.end());
  // LSM merging: while the newest run is at least half the next, merge
  // them (an edge's versions in the newer run are newer: it goes first).
  while (next->runs.size() >= 2 && next->runs[0]->recs.size() * 2 >= next->runs[1]->recs.size()) {
    const InRun &a = *next->runs[0], &b = *next->runs[1];
    auto m = std::make_shared<InRun>();
    m->recs.reserve(a.recs.size() + b.recs.size());
    std::merge(a.recs.begin(), a.recs.end(), b.recs.begin(), b.recs.end(), std::back_inserter(m->recs), in_less);
    next->runs.erase(next->runs.begin(), next->runs.begin() + 2);
    next->runs.insert(next->runs.begin(), std::move(m));
  }
  uint64_t bytes = 0;
  for (const auto &r : next->runs) bytes += r->recs.capacity() * sizeof(InRec);
  for (const auto &c : in_covered_) bytes += c.capacity() * sizeof(uint32_t);
  std::shared_ptr<const InIndex> published = std::move(next);
  std::atomic_store(&in_index_, published);
  in_bytes_.store(bytes, std::memory_order_relaxed);
  return published;
}

void MemGraph::CollectIn(const InIndex &x, uint64_t v, std::vector<Entry> *out) {
  auto lo = [](const InRec &r, uint64_t key) { return r.key < key; };
  auto hi = [](uint64_t key, const InRec &r) { return key < r.key; };
  const size_t start = out->size();
  std::vector<Run> runs;
  std::vector<size_t> bounds;
  for (const auto &r : x.runs) {
    auto b = std::lower_bound(r->recs.begin(), r->recs.end(), v, lo);
    auto e = std::upper_bound(b, r->recs.end(), v, hi);
    if (b == e) continue;
    bounds.push_back(out->size());
    for (auto it = b; it != e; ++it) out->push_back(it->e);
  }
  if (bounds.size() <= 1) return;  // one run: already in run order
  // Several runs (newest first): merge them. MergeRuns breaks ties on seq
  // by run index, newest first, as the in-index's merges do.
  const std::vector<Entry> parts(out->begin() + static_cast<long>(start), out->end());
  bounds.push_back(out->size());
  for (size_t i = 0; i + 1 < bounds.size(); i++)
    runs.push_back(Run{parts.data(), nullptr, bounds[i] - start, bounds[i + 1] - start});
  out->resize(start);
  MergeRunsAt(runs, [&](const Run &r, uint64_t i) { out->push_back(r.ents[i]); });
}

void MemGraph::InVerticesFrom(const InIndex &x, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                              uint64_t *resume) {
  *resume = hi;
  auto below = [](const InRec &r, uint64_t key) { return r.key < key; };
  std::vector<std::vector<InRec>::const_iterator> pos, end;
  for (const auto &r : x.runs) {
    pos.push_back(std::lower_bound(r->recs.begin(), r->recs.end(), lo, below));
    end.push_back(r->recs.end());
  }
  size_t got = 0;
  for (;;) {
    bool any = false;
    uint64_t v = 0;
    for (size_t k = 0; k < pos.size(); k++)
      if (pos[k] != end[k] && pos[k]->key < hi && (!any || pos[k]->key < v)) {
        v = pos[k]->key;
        any = true;
      }
    if (!any) return;
    out->push_back(v);
    if (++got == max) {
      *resume = v + 1;
      return;
    }
    // Past v in every run (a hub's records by binary search).
    for (size_t k = 0; k < pos.size(); k++)
      if (pos[k] != end[k] && pos[k]->key == v) pos[k] = std::lower_bound(pos[k], end[k], v + 1, below);
  }
}

}  // namespace gt
