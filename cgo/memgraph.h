// memgraph.h -- the in-memory write buffer (LSMGraph's MemGraph).
//
// Per direction, a hash map gives each vertex a slot; a slot keeps the
// vertex's versions contiguous, in arrival order. Low-degree vertices (the
// vast majority, LSMGraph Table 2) keep up to kInline versions inside the
// slot itself, which lives in one shared slot array, so they cost no
// allocation at all; a vertex that outgrows that moves to its own array,
// carved from an arena and doubled as it grows. A write is one hash probe
// and one append; versions are sorted once per vertex when they are flushed
// or read. Contiguous runs make a flush read memory almost sequentially.
//
// Concurrency: Apply takes mu_ exclusively for a whole batch; readers take it
// shared (ReadLock) for as long as they look. Versions newer than a reader's
// snapshot are filtered by seq, so readers never wait longer than one batch.
//
// Lifecycle:  active --(full)--> frozen (imm) --(flushed to L0)--> released
// INVARIANT: a frozen MemGraph is never written again.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "graphtide.h"

namespace gt {

class MemGraph {
 public:
  MemGraph(bool in_edges, uint64_t limit_bytes);
  MemGraph(const MemGraph &) = delete;
  MemGraph &operator=(const MemGraph &) = delete;

  // Appends the batch with sequence number seq. skip (may be empty) marks ops
  // superseded by a later vertex delete of the same batch.
  // Caller serializes writers (Store::write_mu_).
  void Apply(const gt_op *ops, size_t n, uint64_t seq, const std::vector<uint8_t> &skip,
             const uint8_t *srcpos, size_t srcpos_len);
  void Freeze(uint64_t freeze_seq);
  // Raises the per-band vertex bounds of what this MemGraph holds (one past
  // the largest id below GT_HIGH_ID_BASE, and at or above it). Writers only.
  void RaiseBounds(uint64_t low, uint64_t high) {
    if (low > low_bound_.load(std::memory_order_relaxed)) low_bound_.store(low, std::memory_order_relaxed);
    if (high > high_bound_.load(std::memory_order_relaxed)) high_bound_.store(high, std::memory_order_relaxed);
  }
  uint64_t low_bound() const { return low_bound_.load(std::memory_order_relaxed); }
  uint64_t high_bound() const { return high_bound_.load(std::memory_order_relaxed); }

  bool full() const { return bytes_.load(std::memory_order_relaxed) >= limit_; }
  // No batch applied yet (a batch with no ops still counts: it carries a
  // sequence number and maybe a source position that a flush must record).
  bool empty() const { return batches_.load(std::memory_order_relaxed) == 0; }
  // Sequence number of the first batch applied (0 while empty). A reader
  // whose snapshot tau is below it finds nothing here and may skip it:
  // every batch with seq <= tau was applied before tau was published.
  uint64_t first_seq() const { return first_seq_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  bool has_in_edges() const { return in_edges_; }
  // Requires ReadLock held. Vertices with versions in dir.
  size_t vertices(int dir) const { return dirs_[dir].slots.size(); }

  // Valid after Freeze.
  uint64_t freeze_seq() const { return freeze_seq_; }
  const std::vector<std::pair<uint64_t, uint64_t>> &vdels() const { return vdels_; }
  bool has_srcpos() const { return has_srcpos_; }
  const std::string &srcpos() const { return srcpos_; }

  std::shared_lock<std::shared_mutex> ReadLock() const { return std::shared_lock<std::shared_mutex>(mu_); }
  // Requires ReadLock held. Appends v's versions sorted into run order:
  // (dst asc, seq desc), and among equal seqs the later op first.
  void Collect(int dir, uint64_t v, std::vector<Entry> *out) const;
  // Requires ReadLock held. Up to max sorted vertices of dir in [lo, hi);
  // *resume is where the next call should start (hi when exhausted).
  void VerticesFrom(int dir, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                    uint64_t *resume) const;
  // Frozen only. Calls f(v, versions) for every vertex of dir in id order,
  // versions sorted as by Collect (scratch is reused between calls).
  template <typename F>
  void ForEachSorted(int dir, std::vector<Entry> *scratch, F &&f) const;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr uint64_t kEmpty = UINT64_MAX;  // never a valid vertex id
  static constexpr uint32_t kInline = 1;

  // One vertex's versions in arrival order: inline while n <= kInline, else
  // in heap[0..n) with room for cap.
  struct Slot {
    uint32_t n = 0;
    uint32_t cap = kInline;
    Entry *heap = nullptr;  // Owned by the arena.
    Entry inl[kInline];
    const Entry *data() const { return n <= kInline && heap == nullptr ? inl : heap; }
  };

  // Bump allocator for slot arrays. Blocks are mapped directly from the OS
  // and unmapped when the MemGraph dies, so a flushed MemGraph's memory
  // leaves the resident set at once instead of lingering in malloc's heap.
  class Arena {
   public:
    Arena() = default;
    ~Arena();
    // Blocks of about limit/16 bytes (4 KiB..1 MiB), so that a small
    // MemGraph is not filled by its first block.
    void SetBlockBytes(uint64_t b) { block_entries_ = b / sizeof(Entry); }
    Arena(const Arena &) = delete;
    Arena &operator=(const Arena &) = delete;
    Entry *Alloc(size_t n);  // throws std::bad_alloc if the OS refuses (GT_ERR_INTERNAL)
    uint64_t bytes() const { return bytes_; }

   private:
    std::vector<std::pair<void *, size_t>> blocks_;  // (mapping, bytes)
    size_t block_entries_ = (1 << 20) / sizeof(Entry);
    Entry *cur_ = nullptr;
    size_t used_ = 0, cap_ = 0;
    uint64_t bytes_ = 0;
  };

  // Open-addressing map vertex -> slot index. Protected by mu_.
  struct Dir {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> slot_of;
    uint64_t mask = 0;
    std::vector<Slot> slots;
    Arena arena;
    // (vertex, slot) sorted by vertex, built once after Freeze (sorted_once_).
    std::vector<std::pair<uint64_t, uint32_t>> sorted;
    // Presence bits of the vertices of each id band ([0] from 0, [1] from
    // GT_HIGH_ID_BASE): bit i of band b is set iff base(b)+i has a slot.
    // They cover offsets below 64*bits[b].size() (at most kBitmapIds);
    // far[b] is set once a vertex of band b lies beyond. VerticesFrom walks
    // them on an active MemGraph instead of probing every id of a range.
    std::vector<uint64_t> bits[2];
    bool far[2] = {false, false};
  };

  static constexpr uint64_t kBitmapIds = uint64_t(1) << 26;  // per band: at most 8 MiB of bits

  void Add(Dir &d, uint64_t v, uint64_t dst, uint64_t vers, double w);
  void Mark(Dir &d, uint64_t v) const;
  // VerticesFrom of an active MemGraph without the bitmaps' help.
  void ProbeVerticesFrom(const Dir &d, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                         uint64_t *resume) const;
  void CollectSlot(const Slot &s, std::vector<Entry> *out) const;
  const Dir &SortedDir(int dir) const;
  void Grow(Dir &d);
  uint32_t Lookup(const Dir &d, uint64_t v) const;
  void BuildSorted(Dir &d) const;

  const bool in_edges_;
  const uint64_t limit_;
  mutable std::shared_mutex mu_;
  mutable Dir dirs_[2];
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> first_seq_{0};
  // Written by the one writer (Store::write_mu_); read after Freeze.
  std::atomic<uint64_t> low_bound_{0}, high_bound_{0};
  std::vector<std::pair<uint64_t, uint64_t>> vdels_;  // (vertex, seq); Protected by mu_.
  std::string srcpos_;
  bool has_srcpos_ = false;
  uint64_t freeze_seq_ = 0;
  std::atomic<bool> frozen_{false};
  mutable std::once_flag sorted_once_[2];
};

template <typename F>
void MemGraph::ForEachSorted(int dir, std::vector<Entry> *scratch, F &&f) const {
  const Dir &d = SortedDir(dir);
  const size_t n = d.sorted.size();
  for (size_t i = 0; i < n; i++) {
    if (i + 8 < n) __builtin_prefetch(&d.slots[d.sorted[i + 8].second]);
    scratch->clear();
    CollectSlot(d.slots[d.sorted[i].second], scratch);
    f(d.sorted[i].first, *scratch);
  }
}

}  // namespace gt
