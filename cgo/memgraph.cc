#include "memgraph.h"

#include <sys/mman.h>

#include <algorithm>
#include <iterator>
#include <new>

namespace gt {
namespace {
inline uint64_t HashVertex(uint64_t v) { return v * 0x9E3779B97F4A7C15ull; }

// Cells and bitmap words live in mappings (zero pages until touched), not
// in C++ objects: they are read and written with the atomic builtins.
inline uint32_t LoadCell(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void StoreCell(uint32_t *p, uint32_t x) { __atomic_store_n(p, x, __ATOMIC_RELEASE); }
inline uint64_t LoadWord(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
inline void StoreWord(uint64_t *p, uint64_t x) { __atomic_store_n(p, x, __ATOMIC_RELAXED); }
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

MemGraph::MemGraph(bool in_edges, uint64_t limit_bytes, uint32_t hub_min)
    : in_edges_(in_edges),
      limit_(limit_bytes),
      hub_min_(hub_min != 0
                   ? hub_min
                   : static_cast<uint32_t>(std::min<uint64_t>(256, std::max<uint64_t>(8, limit_bytes >> 13)))) {
  // A bitmap may take at most 1/16 of the MemGraph's budget (and covers at
  // most kBitmapIds ids), so that sparse ids cannot fill a MemGraph with
  // bits: vertices past it are found by probing.
  const uint64_t cap_words = std::min<uint64_t>(kBitmapIds / 64, std::max<uint64_t>(limit_bytes / 16 / 8, 64));
  for (int k = 0; k < (in_edges ? 2 : 1); k++) {
    Dir &d = dirs_[k];
    NewTable(d, 1024);
    d.arena.SetBlockBytes(std::min<uint64_t>(1 << 20, std::max<uint64_t>(4096, limit_bytes / 16)));
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
    cur_ = static_cast<char *>(blocks_.back().get());
    used_ = 0;
    cap_ = sz;
    bytes_ += sz;
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

void MemGraph::NewTable(Dir &d, uint64_t cells) {
  auto t = std::make_unique<Table>();
  t->cells = Mapping(cells * sizeof(uint32_t));
  t->mask = cells - 1;
  d.table_bytes += cells * sizeof(uint32_t);
  d.table.store(t.get(), std::memory_order_release);
  d.tables.push_back(std::move(t));
}

void MemGraph::Grow(Dir &d) {
  Migrate(d, UINT64_MAX);  // never needed: Add migrates faster than tables fill
  d.old.store(d.tables.back().get(), std::memory_order_release);
  d.migrated = 0;
  NewTable(d, (d.tables.back()->mask + 1) * 2);
}

void MemGraph::Migrate(Dir &d, uint64_t k) {
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

uint32_t MemGraph::Find(const Dir &d, const Table &t, uint64_t v, uint64_t *cell) const {
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

uint32_t MemGraph::Lookup(const Dir &d, uint64_t v) const {
  // table before old: see Dir.
  const Table *t = d.table.load(std::memory_order_acquire);
  const Table *o = d.old.load(std::memory_order_acquire);
  uint64_t cell;
  const uint32_t si = Find(d, *t, v, &cell);
  return si != kNil || o == nullptr ? si : Find(d, *o, v, &cell);
}

void MemGraph::Mark(Dir &d, uint64_t v) const {
  const int b = v >= GT_HIGH_ID_BASE ? 1 : 0;
  const uint64_t off = v - (b ? GT_HIGH_ID_BASE : 0);
  Band &band = d.bands[b];
  if (off / 64 >= band.cap_words) {
    band.far.store(true, std::memory_order_release);
    return;
  }
  uint64_t *w = &band.word()[off / 64];
  StoreWord(w, LoadWord(w) | uint64_t(1) << (off % 64));
  // INVARIANT: every set bit lies below 64*used, and used never passes
  // cap_words, so every vertex past the bits has far set.
  if (off / 64 + 1 > band.used.load(std::memory_order_relaxed))
    band.used.store(off / 64 + 1, std::memory_order_release);
}

void MemGraph::Add(Dir &d, uint64_t v, uint64_t dst, uint64_t vers, double w) {
  uint64_t cell, old_cell;
  uint32_t si = Find(d, *d.tables.back(), v, &cell);
  if (si == kNil && d.old.load(std::memory_order_relaxed) != nullptr)
    si = Find(d, *d.old.load(std::memory_order_relaxed), v, &old_cell);
  // A few cells per write: Grow starts moving the C cells of a half-full
  // table into one of 2C, and the next Grow comes C/2 new vertices, so at
  // least C/2 writes, later: by then 4 cells per write have moved all C.
  Migrate(d, 4);
  if (si == kNil) {
    si = d.nslots.load(std::memory_order_relaxed);
    if ((uint64_t(si) + 1) * 2 > d.tables.back()->mask + 1) Grow(d);
    // The probe again: the table changed (Grow, Migrate) since.
    Find(d, *d.tables.back(), v, &cell);
    d.slots.Make(si, v);
    // Slot built first, then findable, then counted.
    StoreCell(&d.tables.back()->cell()[cell], si + 1);
    d.nslots.store(si + 1, std::memory_order_release);
    Mark(d, v);
  }
  // Readers may be copying this slot's versions: change it in publication
  // order (see Slot).
  Slot &s = d.slots.mut(si);
  const uint32_t n = s.n.load(std::memory_order_relaxed);
  Entry *at;
  if (n < kInline) {
    at = &s.inl[n];
  } else {
    Block *h = const_cast<Block *>(s.head.load(std::memory_order_relaxed));
    if (n == s.cap) {
      // A new block (nothing is copied).
      const uint32_t cap = NextBlock(s.cap);
      h = new (d.arena.Alloc(sizeof(Block) + size_t(cap) * sizeof(Entry))) Block{h, n, cap};
      s.head.store(h, std::memory_order_release);
      s.cap += cap;
    }
    at = &h->data()[n - h->base];
  }
  *at = Entry{dst, vers, w};
  s.n.store(n + 1, std::memory_order_release);
}

void MemGraph::Apply(const gt_op *ops, size_t n, uint64_t seq, const std::vector<uint8_t> &skip, const uint8_t *srcpos,
                     size_t srcpos_len) {
  uint64_t added = 0;
  for (size_t k = 0; k < n; k++) {
    if (!skip.empty() && skip[k]) continue;
    const gt_op &op = ops[k];
    switch (op.kind) {
      case GT_OP_UPSERT:
      case GT_OP_DELETE_EDGE: {
        const bool tomb = op.kind == GT_OP_DELETE_EDGE;
        const uint64_t vers = MakeVers(seq, tomb);
        const double w = tomb ? 0.0 : op.weight;
        Add(dirs_[kOut], op.src, op.dst, vers, w);
        added++;
        if (in_edges_) {
          Add(dirs_[kIn], op.dst, op.src, vers, w);
          added++;
        }
        break;
      }
      case GT_OP_DELETE_VERTEX:
        vdels_.emplace_back(op.src, seq);
        break;
      default:
        break;  // validated by the store before reaching here
    }
  }
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
    b += d.table_bytes + d.slots.bytes() + d.arena.bytes();
    for (const Band &band : d.bands) b += band.used.load(std::memory_order_relaxed) * sizeof(uint64_t);
  }
  return b;
}

void MemGraph::Freeze(uint64_t freeze_seq) {
  freeze_seq_ = freeze_seq;
  frozen_.store(true, std::memory_order_release);
}

void MemGraph::Collect(int dir, uint64_t v, std::vector<Entry> *out) const {
  const Dir &d = dirs_[dir];
  if (d.table.load(std::memory_order_acquire) == nullptr) return;  // a direction not kept
  uint32_t si = Lookup(d, v);
  if (si != kNil) CollectSlot(d.slots.at(si), out, true);
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

void MemGraph::CollectSlot(const Slot &s, std::vector<Entry> *out, bool publish) const {
  const size_t start = out->size();
  // n before head: see Slot. The cache may have been published after n was
  // loaded and cover more than n versions: all of them published ones.
  const uint32_t n = s.n.load(std::memory_order_acquire);
  const Block *blk = s.head.load(std::memory_order_acquire);
  const Cache *c = s.cache.load(std::memory_order_acquire);
  const uint32_t k = c != nullptr ? c->k : 0;
  // The tail [k, n), newest first, then a stable sort into run order.
  std::vector<Entry> tail;
  std::vector<Entry> *t = c != nullptr ? &tail : out;
  const size_t tb = t->size();
  if (n > k) {
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
  const uint32_t n = d.nslots.load(std::memory_order_acquire);
  d.sorted.reserve(n);
  for (uint32_t si = 0; si < n; si++) d.sorted.emplace_back(d.slots.at(si).v, si);
  std::sort(d.sorted.begin(), d.sorted.end());
}

void MemGraph::VerticesFrom(int dir, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                            uint64_t *resume) const {
  const Dir &d = dirs_[dir];
  *resume = hi;
  if (hi <= lo || d.nslots.load(std::memory_order_acquire) == 0 || max == 0) return;
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
  const uint32_t n = d.nslots.load(std::memory_order_acquire);
  constexpr uint64_t kWindow = 1 << 16;
  if (hi - lo <= 4 * uint64_t(n) + kWindow) {
    uint64_t end = hi - lo > kWindow ? lo + kWindow : hi;
    for (uint64_t v = lo; v < end; v++)
      if (Lookup(d, v) != kNil) out->push_back(v);
    *resume = end;
    return;
  }
  std::vector<uint64_t> all;
  for (uint32_t si = 0; si < n; si++) {
    const uint64_t v = d.slots.at(si).v;
    if (v >= lo && v < hi) all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  if (all.size() > max) {
    all.resize(max);
    *resume = all.back() + 1;
  }
  out->insert(out->end(), all.begin(), all.end());
}

}  // namespace gt
