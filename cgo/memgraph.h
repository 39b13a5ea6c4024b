// memgraph.h -- the in-memory write buffer (LSMGraph's MemGraph).
//
// Each direction keeps an append-only node log and a per-vertex chain: a new
// version of an edge of v is appended to the log and linked to v's previous
// node, so a write is one hash probe and one append (no per-edge sorting on
// the write path; sorting happens once per vertex at flush or read). Nodes
// live in fixed blocks that never move, and vertices of any degree share the
// log, which gives low-degree vertices (the vast majority, paper Table 2) no
// per-vertex allocation at all.
//
// Concurrency: Apply takes mu_ exclusively for a whole batch; readers take it
// shared (ReadLock) for as long as they look. Versions newer than a reader's
// snapshot are filtered by seq, so readers never need the writer to stop for
// longer than one batch.
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

  bool full() const { return bytes_.load(std::memory_order_relaxed) >= limit_; }
  bool empty() const { return entries_.load(std::memory_order_relaxed) == 0 && vdels_.empty(); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  bool has_in_edges() const { return in_edges_; }

  // Valid after Freeze.
  uint64_t freeze_seq() const { return freeze_seq_; }
  const std::vector<std::pair<uint64_t, uint64_t>> &vdels() const { return vdels_; }
  bool has_srcpos() const { return has_srcpos_; }
  const std::string &srcpos() const { return srcpos_; }

  std::shared_lock<std::shared_mutex> ReadLock() const { return std::shared_lock<std::shared_mutex>(mu_); }
  // Requires ReadLock held. Appends v's versions newest first.
  void Collect(int dir, uint64_t v, std::vector<Entry> *out) const;
  // Requires ReadLock held. Up to max sorted vertices of dir in [lo, hi);
  // *resume is where the next call should start (hi when exhausted).
  void VerticesFrom(int dir, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                    uint64_t *resume) const;
  bool Has(int dir, uint64_t v) const;

 private:
  struct Node {
    uint64_t dst;
    uint64_t vers;
    double weight;
    uint32_t prev;  // index of the previous node of the same vertex, or kNil
    uint32_t pad;
  };
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr uint64_t kEmpty = UINT64_MAX;  // never a valid vertex id
  static constexpr unsigned kBlockBits = 12;

  // Open-addressing map vertex -> last node index. Protected by mu_.
  struct Dir {
    std::vector<uint64_t> keys;
    std::vector<uint32_t> heads;
    uint64_t mask = 0;
    uint64_t size = 0;
    std::vector<std::unique_ptr<Node[]>> blocks;
    uint32_t n = 0;
    // Sorted keys, built once after Freeze (frozen_once_).
    std::vector<uint64_t> sorted;
  };

  void Add(Dir &d, uint64_t v, uint64_t dst, uint64_t vers, double w);
  void Grow(Dir &d);
  uint32_t Lookup(const Dir &d, uint64_t v) const;
  const Node &node(const Dir &d, uint32_t i) const { return d.blocks[i >> kBlockBits][i & ((1u << kBlockBits) - 1)]; }
  void BuildSorted(Dir &d) const;

  const bool in_edges_;
  const uint64_t limit_;
  mutable std::shared_mutex mu_;
  mutable Dir dirs_[2];
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> entries_{0};
  std::vector<std::pair<uint64_t, uint64_t>> vdels_;  // (vertex, seq); Protected by mu_.
  std::string srcpos_;
  bool has_srcpos_ = false;
  uint64_t freeze_seq_ = 0;
  std::atomic<bool> frozen_{false};
  mutable std::once_flag sorted_once_[2];
};

}  // namespace gt
