#include "memgraph.h"

#include <sys/mman.h>

#include <algorithm>
#include <iterator>
#include <new>
#include <system_error>

namespace gt {
namespace {
inline uint64_t HashVertex(uint64_t v) { return v * kVertexHashMul; }

// Cells and bitmap words live in mappings (zero pages until touched), not
// in C++ objects: they are read and written with the atomic builtins.
inline uint32_t LoadCell(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void StoreCell(uint32_t *p, uint32_t x) { __atomic_store_n(p, x, __ATOMIC_RELEASE); }
inline uint64_t LoadWord(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
}  // namespace

Mapping::Mapping(size_t bytes) : bytes_(bytes) {
  void *m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  p_ = m;
}

Mapping::~Mapping() {
  if (p_ != nullptr) ::munmap(p_, bytes_);
}

Mapping &Mapping::operator=(Mapping &&o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) ::munmap(p_, bytes_);
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

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

MemGraph::MemGraph(bool in_edges, uint64_t limit_bytes, uint32_t hub_min, uint32_t parallel_min)
    : in_edges_(in_edges),
      limit_(limit_bytes),
      hub_min_(hub_min != 0 ? hub_min
                            : static_cast<uint32_t>(std::min<uint64_t>(256, std::max<uint64_t>(8, limit_bytes >> 13)))),
      parallel_min_(parallel_min != 0
                        ? parallel_min
                        : static_cast<uint32_t>(std::min<uint64_t>(1024, std::max<uint64_t>(1, limit_bytes >> 16)))) {
  // A bitmap may take at most 1/16 of the MemGraph's budget (and covers at
  // most kBitmapIds ids), so that sparse ids cannot fill a MemGraph with
  // bits: vertices past it are found by probing.
  const uint64_t cap_words = std::min<uint64_t>(kBitmapIds / 64, std::max<uint64_t>(limit_bytes / 16 / 8, 64));
  for (int k = 0; k < (in_edges ? 2 : 1); k++) {
    Dir &d = dirs_[k];
    for (Shard &sh : d.shards) {
      NewTable(sh, 1024 / kShards);
      sh.arena.SetBlockBytes(std::min<uint64_t>(1 << 20, std::max<uint64_t>(4096, limit_bytes / 16 / kShards)));
    }
    for (Band &b : d.bands) {
      b.words = Mapping(cap_words * sizeof(uint64_t));
      b.cap_words = cap_words;
    }
  }
  bytes_.store(ComputeBytes());
}

MemGraph::~MemGraph() {
  // No reader is left: readers reach a MemGraph through a Version they hold.
  for (Cache *c = caches_.load(std::memory_order_acquire); c != nullptr;) {
    std::unique_ptr<Cache> own(c);
    c = c->next;
  }
}

void *MemGraph::Arena::Alloc(size_t n) {
  if (n > block_bytes_ / 4) {
    blocks_.emplace_back(n);
    bytes_ += n;
    return blocks_.back().get();
  }
  if (n > cap_ - used_) {
    const size_t sz = std::max(n, block_bytes_);
    blocks_.emplace_back(sz);
    bytes_ += Touched(used_);  // the previous shared mapping is done
    cur_ = static_cast<char *>(blocks_.back().get());
    used_ = 0;
    cap_ = sz;
  }
  void *p = cur_ + used_;
  used_ += n;
  return p;
}

MemGraph::Slot *MemGraph::SlotChunks::Make(uint32_t i, uint64_t v) {
  int c;
  size_t off;
  Locate(i, &c, &off);
  Slot *chunk = chunks_[c].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    const size_t n = size_t(1) << (kFirstChunkBits + c);
    maps_[c] = Mapping(n * sizeof(Slot));
    chunk = static_cast<Slot *>(maps_[c].get());
    // Published before any slot of it (the slot's index is released later).
    chunks_[c].store(chunk, std::memory_order_release);
  }
  // Every chunk before c whole, and c's pages up to slot off's end.
  constexpr uint64_t kPage = 4096;
  const uint64_t before = ((uint64_t(1) << (kFirstChunkBits + c)) - (uint64_t(1) << kFirstChunkBits)) * sizeof(Slot);
  const uint64_t chunk_bytes = (uint64_t(1) << (kFirstChunkBits + c)) * sizeof(Slot);
  bytes_ = before + std::min(chunk_bytes, ((off + 1) * sizeof(Slot) + kPage - 1) / kPage * kPage);
  return new (&chunk[off]) Slot(v);
}

void MemGraph::NewTable(Shard &d, uint64_t cells) {
  auto t = std::make_unique<Table>();
  t->cells = Mapping(cells * sizeof(uint32_t));
  t->mask = cells - 1;
  d.table_bytes += cells * sizeof(uint32_t);
  d.table.store(t.get(), std::memory_order_release);
  d.tables.push_back(std::move(t));
}

void MemGraph::Grow(Shard &d) {
  Migrate(d, UINT64_MAX);  // never needed: Add migrates faster than tables fill
  d.old.store(d.tables.back().get(), std::memory_order_release);
  d.migrated = 0;
  NewTable(d, (d.tables.back()->mask + 1) * 2);
}

void MemGraph::Migrate(Shard &d, uint64_t k) {
  const Table *o = d.old.load(std::memory_order_relaxed);
  if (o == nullptr) return;
  Table &t = *d.tables.back();
  const uint32_t *oc = o->cell();
  uint32_t *c = t.cell();
  const uint64_t end = std::min(o->mask + 1, d.migrated + std::min(k, o->mask + 1));
  for (; d.migrated < end; d.migrated++) {
    const uint32_t x = oc[d.migrated];
    if (x == 0) continue;
    uint64_t i = (HashVertex(d.slots.at(x - 1).v) >> 20) & t.mask;
    while (c[i] != 0) i = (i + 1) & t.mask;
    StoreCell(&c[i], x);
  }
  // Every cell moved: readers may stop looking in the old table.
  if (d.migrated == o->mask + 1) d.old.store(nullptr, std::memory_order_release);
}

uint32_t MemGraph::Find(const Shard &d, const Table &t, uint64_t v, uint64_t *cell) const {
  const uint32_t *c = t.cell();
  uint64_t i = (HashVertex(v) >> 20) & t.mask;
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
  // A few cells per vertex written: Grow starts moving the C cells of a
  // half-full table into one of 2C, and the next Grow comes C/2 new
  // vertices later: by then 4 cells per vertex have moved all C.
  Migrate(d, 4);
  if (si != kNil) return si;
  si = d.nslots.load(std::memory_order_relaxed);
  if ((uint64_t(si) + 1) * 2 > d.tables.back()->mask + 1) Grow(d);
  // The probe again: the table changed (Grow, Migrate) since.
  Find(d, *d.tables.back(), v, &cell);
  d.slots.Make(si, v);
  // Slot built first, then findable, then counted.
  StoreCell(&d.tables.back()->cell()[cell], si + 1);
  d.nslots.store(si + 1, std::memory_order_release);
  Mark(dir, v);
  return si;
}

void MemGraph::AppendGroup(const Batch &b, int dir, Shard &d, uint32_t si, const Group &g) {
  // Readers may be copying this slot's versions: change it in publication
  // order (see Slot), and publish the group's versions with one store of n.
  Slot &s = d.slots.mut(si);
  uint32_t n = s.n.load(std::memory_order_relaxed);
  Block *h = const_cast<Block *>(s.head.load(std::memory_order_relaxed));
  const uint32_t *ops = d.scratch.order.data() + g.start;
  for (uint32_t i = 0; i < g.count; i++) {
    const gt_op &op = b.ops[ops[i]];
    const bool tomb = op.kind == GT_OP_DELETE_EDGE;
    const Entry e{dir == kOut ? op.dst : op.src, MakeVers(b.seq, tomb), tomb ? 0.0 : op.weight};
    if (n < kInline) {
      s.inl[n++] = e;
      continue;
    }
    if (n == s.cap) {
      // A new block (nothing is copied), large enough for the rest of the
      // group: a slot gets at most one block per batch.
      const uint32_t cap = std::min(std::max(NextBlock(s.cap), g.count - i), kMaxBlock);
      h = new (d.arena.Alloc(sizeof(Block) + size_t(cap) * sizeof(Entry))) Block{h, n, cap};
      s.head.store(h, std::memory_order_release);
      s.cap += cap;
    }
    h->data()[n++ - h->base] = e;
  }
  s.n.store(n, std::memory_order_release);
}

void MemGraph::GatherGroups(const Batch &b, int dir, int shard, Shard &sh) const {
  Scratch &x = sh.scratch;
  x.ops.clear();
  for (size_t k = 0; k < b.n; k++) {
    const gt_op &op = b.ops[k];
    if (op.kind != GT_OP_UPSERT && op.kind != GT_OP_DELETE_EDGE) continue;
    if (!b.skip->empty() && (*b.skip)[k]) continue;
    if (ShardOf(dir == kOut ? op.src : op.dst) == shard) x.ops.push_back(static_cast<uint32_t>(k));
  }
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
    const uint64_t v = dir == kOut ? op.src : op.dst;
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
  for (int dir = 0; dir < (in_edges_ ? 2 : 1); dir++) {
    Dir &d = dirs_[dir];
    Shard &sh = d.shards[shard];
    GatherGroups(b, dir, shard, sh);
    const std::vector<Group> &gs = sh.scratch.groups;
    // One probe and one append per vertex, the next vertices' table cells
    // and slots fetched ahead (they are spread over the whole table).
    // Four stages ahead of the append: the vertex's cell, its slot (when
    // its cell is the first probed), its newest block's header, and where
    // its next version goes.
    constexpr size_t kCellsAhead = 16, kSlotsAhead = 10, kHeadAhead = 5, kDataAhead = 2;
    const size_t ng = gs.size();
    // The slot of gs[j], if its first probed cell holds it (a hint: null
    // otherwise).
    auto peek = [&](const Table &t, size_t j) -> const Slot * {
      const uint32_t x = LoadCell(&t.cell()[(HashVertex(gs[j].v) >> 20) & t.mask]);
      if (x == 0) return nullptr;
      const Slot *s = &sh.slots.at(x - 1);
      return s->v == gs[j].v ? s : nullptr;
    };
    for (size_t i = 0; i < ng; i++) {
      const Table &t = *sh.tables.back();
      if (i + kCellsAhead < ng) __builtin_prefetch(&t.cell()[(HashVertex(gs[i + kCellsAhead].v) >> 20) & t.mask]);
      if (i + kSlotsAhead < ng) {
        const uint32_t x = LoadCell(&t.cell()[(HashVertex(gs[i + kSlotsAhead].v) >> 20) & t.mask]);
        if (x != 0) __builtin_prefetch(&sh.slots.at(x - 1));
      }
      if (i + kHeadAhead < ng) {
        const Slot *s = peek(t, i + kHeadAhead);
        if (s != nullptr) __builtin_prefetch(s->head.load(std::memory_order_relaxed));
      }
      if (i + kDataAhead < ng) {
        const Slot *s = peek(t, i + kDataAhead);
        const Block *h = s != nullptr ? s->head.load(std::memory_order_relaxed) : nullptr;
        const uint32_t n = h != nullptr ? s->n.load(std::memory_order_relaxed) : 0;
        if (h != nullptr && n < s->cap) __builtin_prefetch(&h->data()[n - h->base], 1);
      }
      AppendGroup(b, dir, sh, SlotOf(d, sh, gs[i].v), gs[i]);
    }
  }
}

void MemGraph::Apply(const gt_op *ops, size_t n, uint64_t seq, const std::vector<uint8_t> &skip, const uint8_t *srcpos,
                     size_t srcpos_len) {
  const Batch b{ops, n, seq, &skip};
  // INVARIANT: shard 1 of every direction is written only by the helper
  // thread's task, shard 0 only here, and the task is done (Wait) before
  // Apply returns or throws: nothing of the batch is written after.
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
  for (const Dir &d : dirs_)
    for (const Shard &sh : d.shards) added += sh.scratch.ops.size();
  if (srcpos != nullptr && srcpos_len > 0) {
    srcpos_.assign(reinterpret_cast<const char *>(srcpos), srcpos_len);
    has_srcpos_ = true;
  }
  entries_.fetch_add(added, std::memory_order_relaxed);
  if (batches_.fetch_add(1, std::memory_order_relaxed) == 0) first_seq_.store(seq, std::memory_order_relaxed);
  bytes_.store(ComputeBytes(), std::memory_order_relaxed);
}

// Everything the MemGraph holds, capacities and outgrown tables included,
// so that it freezes at its configured size of real memory. Writer only.
uint64_t MemGraph::ComputeBytes() const {
  uint64_t b = vdels_.capacity() * sizeof(vdels_[0]) + srcpos_.capacity();
  for (const Dir &d : dirs_) {
    for (const Shard &sh : d.shards) b += sh.table_bytes + sh.slots.bytes() + sh.arena.bytes();
    for (const Band &band : d.bands) b += band.used.load(std::memory_order_relaxed) * sizeof(uint64_t);
  }
  return b;
}

void MemGraph::Freeze(uint64_t freeze_seq) {
  freeze_seq_ = freeze_seq;
  helper_.Stop();
  frozen_.store(true, std::memory_order_release);
}

void MemGraph::Collect(int dir, uint64_t v, std::vector<Entry> *out) const {
  const Slot *s = Lookup(dirs_[dir], v);
  if (s != nullptr) CollectSlot(*s, out, true);
}

namespace {
// Run order: (dst asc, seq desc). Sorting is stable and starts from arrival
// order reversed, so among versions of one batch (equal seq) the later op
// comes first and wins.
inline bool RunLess(const Entry &a, const Entry &b) {
  if (a.dst != b.dst) return a.dst < b.dst;
  return VersSeq(a.vers) > VersSeq(b.vers);
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
    std::stable_sort(b, e, RunLess);
  }
}
}  // namespace

size_t MemGraph::AddRuns(int dir, uint64_t v, std::vector<Entry> *scratch, std::vector<Run> *runs) const {
  scratch->clear();
  const Slot *sp = Lookup(dirs_[dir], v);  // null also for a direction not kept
  if (sp == nullptr) return 0;
  const Slot &s = *sp;
  // n before head (see Slot), then the cache: every version published
  // before this call began is below n, so a cache covering n holds them all.
  const uint32_t n = s.n.load(std::memory_order_acquire);
  const Block *blk = s.head.load(std::memory_order_acquire);
  const Cache *c = s.cache.load(std::memory_order_acquire);
  if (c != nullptr && n - std::min(n, c->k) <= c->k / 8) {
    if (n > c->k) {
      SortedTail(s, blk, c->k, n, scratch);
      runs->push_back(Run{scratch->data(), nullptr, 0, scratch->size()});  // newer: first
    }
    runs->push_back(Run{c->ents.get(), nullptr, 0, c->k});
    return scratch->size() + c->k;
  }
  CollectSlot(s, scratch, true);
  if (!scratch->empty()) runs->push_back(Run{scratch->data(), nullptr, 0, scratch->size()});
  return scratch->size();
}

void MemGraph::SortedTail(const Slot &s, const Block *blk, uint32_t k, uint32_t n, std::vector<Entry> *t) {
  if (n <= k) return;
  const size_t tb = t->size();
  // Newest first, then a stable sort into run order.
  t->resize(tb + (n - k));
  Entry *o = t->data() + tb;
  for (; blk != nullptr && blk->base + blk->cap > k; blk = blk->prev) {
    if (blk->base >= n) continue;  // linked after n was read
    const uint32_t lo = std::max(k, blk->base), hi = std::min(n, blk->base + blk->cap);
    o = std::reverse_copy(blk->data() + (lo - blk->base), blk->data() + (hi - blk->base), o);
  }
  if (k < kInline) std::reverse_copy(s.inl + k, s.inl + std::min(n, kInline), o);
  StableSortRun(t->data() + tb, t->data() + t->size());
}

void MemGraph::CollectSlot(const Slot &s, std::vector<Entry> *out, bool publish) const {
  const size_t start = out->size();
  // n before head: see Slot. The cache may have been published after n was
  // loaded and cover more than n versions: all of them published ones.
  const uint32_t n = s.n.load(std::memory_order_acquire);
  const Block *blk = s.head.load(std::memory_order_acquire);
  const Cache *c = s.cache.load(std::memory_order_acquire);
  const uint32_t k = c != nullptr ? c->k : 0;
  // The tail [k, n), sorted.
  std::vector<Entry> tail;
  SortedTail(s, blk, k, n, c != nullptr ? &tail : out);
  if (c != nullptr) {
    // The tail is newer than every cached version: on a tie it goes first.
    out->reserve(start + k + tail.size());
    if (tail.empty())
      out->insert(out->end(), c->ents.get(), c->ents.get() + k);
    else
      std::merge(tail.begin(), tail.end(), c->ents.get(), c->ents.get() + k, std::back_inserter(*out), RunLess);
  }
  if (publish && n >= hub_min_ && n > k) Publish(s, c, out->data() + start, n);
}

void MemGraph::Publish(const Slot &s, const Cache *old, const Entry *ents, uint32_t k) const {
  const uint64_t b = sizeof(Cache) + uint64_t(k) * sizeof(Entry);
  const bool doubles = old == nullptr || k >= 2 * uint64_t(old->k);
  // Racing readers may each pass this check: the budget is exceeded by at
  // most one cache per concurrent reader.
  if (!doubles && cache_bytes_.load(std::memory_order_relaxed) + b > limit_ / 16) return;
  // Allocation failure only costs the next reads their speed.
  std::unique_ptr<Cache> nc(new (std::nothrow) Cache);
  if (nc == nullptr) return;
  nc->ents.reset(new (std::nothrow) Entry[k]);
  if (nc->ents == nullptr) return;
  nc->k = k;
  std::copy(ents, ents + k, nc->ents.get());
  const Cache *expect = old;
  // Built before published (release); a reader that lost the race drops
  // its copy, which no one else ever saw.
  if (!s.cache.compare_exchange_strong(expect, nc.get(), std::memory_order_release, std::memory_order_relaxed)) return;
  Cache *own = nc.release();
  own->next = caches_.load(std::memory_order_relaxed);
  while (!caches_.compare_exchange_weak(own->next, own, std::memory_order_release, std::memory_order_relaxed)) {
  }
  cache_bytes_.fetch_add(b, std::memory_order_relaxed);
}

const MemGraph::Dir &MemGraph::SortedDir(int dir) const {
  Dir &d = dirs_[dir];
  std::call_once(sorted_once_[dir], [&] { BuildSorted(d); });
  return d;
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

void MemGraph::VerticesFrom(int dir, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                            uint64_t *resume) const {
  const Dir &d = dirs_[dir];
  *resume = hi;
  if (hi <= lo || vertices(dir) == 0 || max == 0) return;
  if (frozen_.load(std::memory_order_acquire)) {
    SortedDir(dir);
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

}  // namespace gt
