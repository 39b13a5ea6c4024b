#include "memgraph.h"

#include <algorithm>
#include <new>
#include <sys/mman.h>

namespace gt {
namespace {
inline uint64_t HashVertex(uint64_t v) { return v * 0x9E3779B97F4A7C15ull; }
}  // namespace

MemGraph::MemGraph(bool in_edges, uint64_t limit_bytes) : in_edges_(in_edges), limit_(limit_bytes) {
  for (Dir &d : dirs_) {
    d.keys.assign(1024, kEmpty);
    d.slot_of.assign(1024, kNil);
    d.mask = 1023;
    d.arena.SetBlockBytes(std::min<uint64_t>(1 << 20, std::max<uint64_t>(4096, limit_bytes / 16)));
  }
  bytes_.store(2 * 1024 * 12);
}


MemGraph::Arena::~Arena() {
  for (auto &b : blocks_) ::munmap(b.first, b.second);
}

Entry *MemGraph::Arena::Alloc(size_t n) {
  if (n > cap_ - used_) {
    size_t sz = std::max(n, block_entries_);
    size_t bytes = sz * sizeof(Entry);
    void *m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    blocks_.emplace_back(m, bytes);
    cur_ = static_cast<Entry *>(m);
    used_ = 0;
    cap_ = sz;
    bytes_ += bytes;
  }
  Entry *p = cur_ + used_;
  used_ += n;
  return p;
}

uint32_t MemGraph::Lookup(const Dir &d, uint64_t v) const {
  uint64_t i = (HashVertex(v) >> 20) & d.mask;
  for (;;) {
    uint64_t k = d.keys[i];
    if (k == v) return d.slot_of[i];
    if (k == kEmpty) return kNil;
    i = (i + 1) & d.mask;
  }
}

void MemGraph::Grow(Dir &d) {
  std::vector<uint64_t> keys(d.keys.size() * 2, kEmpty);
  std::vector<uint32_t> slot_of(d.keys.size() * 2, kNil);
  uint64_t mask = keys.size() - 1;
  for (size_t j = 0; j < d.keys.size(); j++) {
    if (d.keys[j] == kEmpty) continue;
    uint64_t i = (HashVertex(d.keys[j]) >> 20) & mask;
    while (keys[i] != kEmpty) i = (i + 1) & mask;
    keys[i] = d.keys[j];
    slot_of[i] = d.slot_of[j];
  }
  d.keys.swap(keys);
  d.slot_of.swap(slot_of);
  d.mask = mask;
}

void MemGraph::Mark(Dir &d, uint64_t v) const {
  const int b = v >= GT_HIGH_ID_BASE ? 1 : 0;
  const uint64_t off = v - (b ? GT_HIGH_ID_BASE : 0);
  // A bitmap may take at most 1/16 of the MemGraph's budget (and covers at
  // most kBitmapIds ids), so that sparse ids cannot fill a MemGraph with
  // bits: vertices past it are found by probing.
  const uint64_t cap_words = std::min<uint64_t>(kBitmapIds / 64, std::max<uint64_t>(limit_ / 16 / 8, 64));
  if (off / 64 >= cap_words) {
    d.far[b] = true;
    return;
  }
  std::vector<uint64_t> &bits = d.bits[b];
  // INVARIANT: bits never covers offsets at or past cap_words*64, so every
  // vertex with far set lies past what VerticesFrom walks in the bitmap.
  if (off / 64 >= bits.size())
    bits.resize(std::min<size_t>(std::max<size_t>(off / 64 + 1, bits.size() * 2), cap_words), 0);
  bits[off / 64] |= uint64_t(1) << (off % 64);
}

void MemGraph::Add(Dir &d, uint64_t v, uint64_t dst, uint64_t vers, double w) {
  if ((d.slots.size() + 1) * 2 > d.keys.size()) Grow(d);
  uint64_t i = (HashVertex(v) >> 20) & d.mask;
  while (d.keys[i] != v && d.keys[i] != kEmpty) i = (i + 1) & d.mask;
  if (d.keys[i] == kEmpty) {
    d.keys[i] = v;
    d.slot_of[i] = static_cast<uint32_t>(d.slots.size());
    d.slots.emplace_back();
    Mark(d, v);
  }
  Slot &s = d.slots[d.slot_of[i]];
  if (s.n == s.cap) {
    // Move to (or double) an arena array. The old array stays in the arena
    // until the MemGraph dies; readers hold mu_ shared, so none sees it move.
    uint32_t cap = s.cap * 2;
    Entry *p = d.arena.Alloc(cap);
    std::copy(s.data(), s.data() + s.n, p);
    s.heap = p;
    s.cap = cap;
  }
  Entry *dstp = s.heap ? s.heap : s.inl;
  dstp[s.n++] = Entry{dst, vers, w};
}

void MemGraph::Apply(const gt_op *ops, size_t n, uint64_t seq, const std::vector<uint8_t> &skip,
                     const uint8_t *srcpos, size_t srcpos_len) {
  std::unique_lock<std::shared_mutex> lock(mu_);
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
  // Everything the MemGraph holds, capacities included, so that it freezes
  // at its configured size of real memory.
  uint64_t b = vdels_.capacity() * sizeof(vdels_[0]) + srcpos_.capacity();
  for (const Dir &d : dirs_)
    b += d.keys.capacity() * sizeof(uint64_t) + d.slot_of.capacity() * sizeof(uint32_t) +
         d.slots.capacity() * sizeof(Slot) + d.arena.bytes() +
         (d.bits[0].capacity() + d.bits[1].capacity()) * sizeof(uint64_t);
  bytes_.store(b, std::memory_order_relaxed);
}

void MemGraph::Freeze(uint64_t freeze_seq) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  freeze_seq_ = freeze_seq;
  frozen_.store(true);
}

void MemGraph::Collect(int dir, uint64_t v, std::vector<Entry> *out) const {
  const Dir &d = dirs_[dir];
  uint32_t si = Lookup(d, v);
  if (si != kNil) CollectSlot(d.slots[si], out);
}

void MemGraph::CollectSlot(const Slot &s, std::vector<Entry> *out) const {
  const size_t start = out->size();
  const Entry *p = s.data();
  // Newest first, then a stable sort by (dst asc, seq desc): among versions
  // of one batch (equal seq) the later op stays first and wins.
  for (uint32_t i = s.n; i > 0; i--) out->push_back(p[i - 1]);
  auto less = [](const Entry &a, const Entry &b) {
    if (a.dst != b.dst) return a.dst < b.dst;
    return VersSeq(a.vers) > VersSeq(b.vers);
  };
  Entry *b = out->data() + start, *e = out->data() + out->size();
  if (e - b <= 32) {
    for (Entry *x = b + 1; x < e; x++) {  // insertion sort: stable, no allocation
      Entry t = *x;
      Entry *y = x;
      while (y > b && less(t, *(y - 1))) {
        *y = *(y - 1);
        y--;
      }
      *y = t;
    }
  } else {
    std::stable_sort(b, e, less);
  }
}

const MemGraph::Dir &MemGraph::SortedDir(int dir) const {
  Dir &d = dirs_[dir];
  std::call_once(sorted_once_[dir], [&] { BuildSorted(d); });
  return d;
}

void MemGraph::BuildSorted(Dir &d) const {
  d.sorted.reserve(d.slots.size());
  for (size_t i = 0; i < d.keys.size(); i++)
    if (d.keys[i] != kEmpty) d.sorted.emplace_back(d.keys[i], d.slot_of[i]);
  std::sort(d.sorted.begin(), d.sorted.end());
}

void MemGraph::VerticesFrom(int dir, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                            uint64_t *resume) const {
  Dir &d = dirs_[dir];
  *resume = hi;
  if (hi <= lo || d.slots.empty() || max == 0) return;
  if (frozen_.load()) {
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
    const std::vector<uint64_t> &bits = d.bits[band];
    const uint64_t covered = base + 64 * bits.size();
    if (pos < covered && pos < end) {
      const uint64_t stop = std::min(end, covered);
      for (uint64_t w = (pos - base) / 64; w <= (stop - 1 - base) / 64; w++) {
        uint64_t word = bits[w];
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
    if (pos < end && d.far[band]) {
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
  constexpr uint64_t kWindow = 1 << 16;
  if (hi - lo <= 4 * d.slots.size() + kWindow) {
    uint64_t end = hi - lo > kWindow ? lo + kWindow : hi;
    for (uint64_t v = lo; v < end; v++)
      if (Lookup(d, v) != kNil) out->push_back(v);
    *resume = end;
    return;
  }
  std::vector<uint64_t> all;
  for (uint64_t k : d.keys)
    if (k != kEmpty && k >= lo && k < hi) all.push_back(k);
  std::sort(all.begin(), all.end());
  if (all.size() > max) {
    all.resize(max);
    *resume = all.back() + 1;
  }
  out->insert(out->end(), all.begin(), all.end());
}

}  // namespace gt
