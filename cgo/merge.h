// merge.h -- merging the versions of one vertex from several sources.
//
// Readers, flush and compaction all see a vertex as a list of sorted runs in
// priority order (newest source first: active MemGraph, frozen MemGraph, L0
// files newest first, then L1, L2, ...). MergeRuns visits every version in
// (dst asc, seq desc, run index asc) order; ties on seq are won by the
// higher-priority run, which is what makes seq-0 (compacted) versions and
// versions of one batch resolve correctly.
//
// Visibility at snapshot tau: for each dst the first version with seq <= tau
// decides; it is absent if it is a tombstone or if a vertex delete of src or
// dst with seq d (d <= tau) has seq(version) < d.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common.h"
#include "segment.h"

namespace gt {

// A sorted run of one vertex's versions: either MemGraph entries (already
// sorted by the caller) or a slice [b,e) of a segment.
struct Run {
  const Entry *ents = nullptr;
  const Segment *seg = nullptr;
  uint64_t b = 0, e = 0;
  uint64_t dst(uint64_t i) const { return seg ? seg->dst(i) : ents[i].dst; }
  uint64_t vers(uint64_t i) const { return seg ? seg->vers(i) : ents[i].vers; }
  double weight(uint64_t i) const { return seg ? seg->weight(i) : ents[i].weight; }
};

// Calls f(dst, vers, weight) for every version in merge order. A run whose
// head is first goes on without looking at the others until it passes the
// second-best head, so merging a long run with short ones (a hub's cached
// versions and the few written since) costs about what one run does.
template <typename F>
void MergeRuns(const std::vector<Run> &runs, F &&f) {
  if (runs.size() == 1) {
    const Run &r = runs[0];
    for (uint64_t i = r.b; i < r.e; i++) f(r.dst(i), r.vers(i), r.weight(i));
    return;
  }
  std::vector<uint64_t> pos(runs.size());
  for (size_t k = 0; k < runs.size(); k++) pos[k] = runs[k].b;
  for (;;) {
    // The first and second heads in merge order; on equal (dst, seq) the
    // lower run index is first.
    int best = -1, second = -1;
    uint64_t bd = 0, bs = 0, sd = 0, ss = 0;
    for (size_t k = 0; k < runs.size(); k++) {
      if (pos[k] >= runs[k].e) continue;
      const uint64_t d = runs[k].dst(pos[k]);
      const uint64_t s = VersSeq(runs[k].vers(pos[k]));
      if (best < 0 || d < bd || (d == bd && s > bs)) {
        second = best;
        sd = bd;
        ss = bs;
        best = static_cast<int>(k);
        bd = d;
        bs = s;
      } else if (second < 0 || d < sd || (d == sd && s > ss)) {
        second = static_cast<int>(k);
        sd = d;
        ss = s;
      }
    }
    if (best < 0) return;
    const Run &r = runs[best];
    uint64_t &i = pos[best];
    if (second < 0) {
      for (; i < r.e; i++) f(r.dst(i), r.vers(i), r.weight(i));
      return;
    }
    // best's versions while they come before second's head (best < second
    // wins a tie only when it has the lower index).
    f(r.dst(i), r.vers(i), r.weight(i));
    for (i++; i < r.e; i++) {
      const uint64_t d = r.dst(i);
      if (d > sd) break;
      if (d == sd) {
        const uint64_t s = VersSeq(r.vers(i));
        if (s < ss || (s == ss && best > second)) break;
      }
      f(d, r.vers(i), r.weight(i));
    }
  }
}

// Vertex deletes: vertex -> ascending delete seqs. Immutable once shared;
// writers copy it (vertex deletes are rare).
class VdelMap {
 public:
  bool empty() const { return m_.empty(); }
  size_t size() const { return n_; }
  void Add(uint64_t v, uint64_t seq) {
    m_[v].push_back(seq);
    n_++;
  }
  // Largest delete seq of v that is <= tau, or 0.
  uint64_t Latest(uint64_t v, uint64_t tau) const {
    auto it = m_.find(v);
    if (it == m_.end()) return 0;
    const auto &s = it->second;
    auto p = std::upper_bound(s.begin(), s.end(), tau);
    return p == s.begin() ? 0 : *(p - 1);
  }
  bool Has(uint64_t v) const { return m_.count(v) != 0; }
  // The records with seq <= max_seq as (vertex, seq), sorted: what a
  // manifest snapshot records (Store::RewriteManifestLocked). The one place
  // that turns this map into manifest records.
  void Records(uint64_t max_seq, std::vector<std::pair<uint64_t, uint64_t>> *out) const {
    out->clear();
    for (const auto &kv : m_)
      for (uint64_t seq : kv.second)
        if (seq <= max_seq) out->emplace_back(kv.first, seq);
    std::sort(out->begin(), out->end());
  }

 private:
  std::unordered_map<uint64_t, std::vector<uint64_t>> m_;
  size_t n_ = 0;
};

// Emits the versions of one vertex visible at tau, in dst order.
template <typename F>
void VisibleVersions(const std::vector<Run> &runs, uint64_t src, uint64_t tau, const VdelMap &vdel, F &&emit) {
  const uint64_t dsrc = vdel.empty() ? 0 : vdel.Latest(src, tau);
  bool have = false;
  uint64_t cur = 0;
  MergeRuns(runs, [&](uint64_t dst, uint64_t vers, double w) {
    if (have && dst == cur) return;  // an older version of a decided dst
    const uint64_t seq = VersSeq(vers);
    if (seq > tau) return;  // not yet visible; an older version may be
    have = true;
    cur = dst;
    if (VersTomb(vers) || seq < dsrc) return;
    if (!vdel.empty() && seq < vdel.Latest(dst, tau)) return;
    emit(dst, w);
  });
}

// Compaction/flush retention of one vertex's merged versions.
struct RetainParams {
  const std::vector<uint64_t> *snaps;  // pinned snapshot seqs, ascending
  const VdelMap *vdel;                 // may be null
  uint64_t durable_seq;                // only vertex deletes <= this are applied
  bool bottommost;                     // nothing older exists below the output
};

// Appends to out the versions of src that some reader can still need.
void RetainVersions(const std::vector<Run> &runs, uint64_t src, const RetainParams &p, std::vector<Entry> *out);

}  // namespace gt
