// merge.h -- merging the versions of one vertex from several sources.
//
// Readers, flush and compaction all see a vertex as a list of sorted runs in
// priority order (newest source first: active MemGraph, frozen MemGraph, L0
// files newest first, then L1, L2, ...). MergeRuns visits every version in
// (dst asc, type desc, seq desc, run index asc) order (VersOrder, common.h);
// ties on (type, seq) are won by the higher-priority run, which is what
// makes seq-0 (compacted) versions and versions of one batch resolve
// correctly.
//
// An edge is (src, dst, type). Visibility at snapshot tau: for each (dst,
// type) the first version with seq <= tau decides; it is absent if it is a
// tombstone or if a vertex delete of src or dst with seq d (d <= tau) has
// seq(version) < d.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
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
  int64_t time(uint64_t i) const { return seg ? seg->time(i) : ents[i].time; }
};

// Calls f(dst, vers, weight, time) for every version in merge order, until f
// returns false (f returns bool), or for every one (f returns nothing). A
// run whose head is first goes on without looking at the others until it
// passes the second-best head, so merging a long run with short ones (a
// hub's cached versions and the few written since) costs about what one
// run does.
// Calls f(a...) and returns its answer, or true when f returns nothing (the
// compiler then drops the checks). Always inlined: it sits in the loops
// that visit every version (a call per version was most of a hub's degree).
template <typename F, typename... A>
[[gnu::always_inline]] inline bool Visit(F &f, A... a) {
  if constexpr (std::is_same_v<decltype(f(a...)), bool>) {
    return f(a...);
  } else {
    f(a...);
    return true;
  }
}

template <typename F>
void MergeRuns(const std::vector<Run> &runs, F &&f) {
  auto go = [&](const Run &r, uint64_t i) __attribute__((always_inline)) {
    return Visit(f, r.dst(i), r.vers(i), r.weight(i), r.time(i));
  };
  if (runs.size() == 1) {
    const Run &r = runs[0];
    for (uint64_t i = r.b; i < r.e; i++)
      if (!go(r, i)) return;
    return;
  }
  std::vector<uint64_t> pos(runs.size());
  for (size_t k = 0; k < runs.size(); k++) pos[k] = runs[k].b;
  for (;;) {
    // The first and second heads in merge order; on equal (dst, VersOrder)
    // the lower run index is first.
    int best = -1, second = -1;
    uint64_t bd = 0, bs = 0, sd = 0, ss = 0;
    for (size_t k = 0; k < runs.size(); k++) {
      if (pos[k] >= runs[k].e) continue;
      const uint64_t d = runs[k].dst(pos[k]);
      const uint64_t s = VersOrder(runs[k].vers(pos[k]));
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
      for (; i < r.e; i++)
        if (!go(r, i)) return;
      return;
    }
    // best's versions while they come before second's head (best < second
    // wins a tie only when it has the lower index).
    if (!go(r, i)) return;
    for (i++; i < r.e; i++) {
      const uint64_t d = r.dst(i);
      if (d > sd) break;
      if (d == sd) {
        const uint64_t s = VersOrder(r.vers(i));
        if (s < ss || (s == ss && best > second)) break;
      }
      if (!go(r, i)) return;
    }
  }
}

// Vertex deletes: records (vertex, seq). A record (v, d) hides, from every
// snapshot tau >= d, each version with seq < d of an edge of v (as src or
// dst).
//
// Persistent: a map shared by pointer is never changed. With() makes the
// map plus new records and Purged() the map without its records up to a
// seq; both share the unchanged parts (the "chunks") by pointer, so an edit
// costs O(new records) amortized, never a copy of the whole map.
//
// Layout: immutable chunks, each sorted by (vertex, seq) with a small bloom
// filter in front. A new batch of records is one chunk, merged with the
// newest chunks while they are not 4x larger than it, so there are
// O(log4 n) chunks and a record is copied O(log4 n) times in all.
//
// Purging: every record with seq <= purged_through() is gone (a chunk that
// straddles that seq keeps its bytes until its next merge, but Latest, Has,
// AnyIn and size ignore them).
class VdelMap {
 public:
  using Record = std::pair<uint64_t, uint64_t>;  // (vertex, seq)

  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }  // live records
  // Largest live delete seq, or 0.
  uint64_t max_seq() const { return n_ == 0 ? 0 : max_seq_; }
  uint64_t purged_through() const { return purged_; }

  // Adds one record to a map not yet shared (tests, recovery).
  void Add(uint64_t v, uint64_t seq) { Push({Record{v, seq}}); }
  // The map plus recs. INVARIANT: every new seq is above purged_through().
  std::shared_ptr<const VdelMap> With(std::vector<Record> recs) const;
  // The map without its records of seq <= p. O(chunks).
  std::shared_ptr<const VdelMap> Purged(uint64_t p) const;
  void Purge(uint64_t p);  // the same, in place, for a map not yet shared

  // Largest live delete seq of v that is <= tau, or 0.
  uint64_t Latest(uint64_t v, uint64_t tau) const;
  // v has a live record.
  bool Has(uint64_t v) const { return Latest(v, UINT64_MAX) != 0; }
  // Some live record has lo < seq <= hi.
  bool AnyIn(uint64_t lo, uint64_t hi) const;
  // The live records with seq <= upto as (vertex, seq), sorted, in *out
  // (replaced): what a manifest snapshot records
  // (Store::RewriteManifestLocked) and what a filtered scan flattens
  // (VdelFilter). The one place that turns this map into records.
  // O(n log n).
  void Records(uint64_t upto, std::vector<Record> *out) const;
  size_t chunks() const { return chunks_.size(); }

 private:
  struct Chunk;
  void Push(std::vector<Record> recs);

  std::vector<std::shared_ptr<const Chunk>> chunks_;  // oldest first
  size_t n_ = 0;
  uint64_t max_seq_ = 0;
  uint64_t purged_ = 0;
};

// The first position of r at or after r.b whose dst is at least d (runs
// are sorted by dst): a read that starts at d skips what lies before.
inline uint64_t SeekDst(const Run &r, uint64_t d) {
  uint64_t lo = r.b, hi = r.e;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (r.dst(mid) < d)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Emits emit(dst, type, weight, time) for the edges of one vertex visible at tau
// whose type ts holds (null: every type), in (dst asc, type desc) order;
// until emit returns false, when it returns bool.
template <typename F>
void VisibleVersions(const std::vector<Run> &runs, uint64_t src, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
                     F &&emit) {
  const uint64_t dsrc = vdel.empty() ? 0 : vdel.Latest(src, tau);
  const uint64_t newest = vdel.max_seq();  // no delete hides a version this new
  uint64_t cur = UINT64_MAX;               // no dst is (GT_MAX_VERTEX is below)
  uint32_t curt = 0;
  MergeRuns(runs, [&](uint64_t dst, uint64_t vers, double w, int64_t tm) -> bool {
    const uint32_t t = VersType(vers);
    if (dst == cur && t == curt) return true;  // an older version of a decided edge
    const uint64_t seq = VersSeq(vers);
    if (seq > tau) return true;  // not yet visible; an older version may be
    cur = dst;
    curt = t;
    if (VersTomb(vers) || seq < dsrc || !Wanted(ts, t)) return true;
    if (seq < newest && seq < vdel.Latest(dst, tau)) return true;
    return Visit(emit, dst, t, w, tm);
  });
}

// Compaction/flush retention of one vertex's merged versions.
struct RetainParams {
  const std::vector<uint64_t> *snaps;  // pinned snapshot seqs, ascending
  const VdelMap *vdel;                 // may be null
  // Only vertex deletes <= min(durable_seq, oldest snapshot, history
  // floor) are applied: VdelCleanSeq.
  uint64_t durable_seq;
  bool bottommost;  // nothing older exists below the output
  // History retention (issue 15's reads as of the past): every version
  // with seq above history_floor is kept, and below it what a snapshot
  // pinned at history_floor needs, so that a snapshot at any seq from
  // history_floor on reads what it read when that seq was the newest.
  // INVARIANT: with history, snaps holds history_floor (Store::Retention):
  // it is the oldest stripe boundary, and VdelCleanSeq is at most it.
  bool history = false;
  uint64_t history_floor = 0;
};

// The seq below which RetainVersions drops what vertex deletes hide: its
// output holds no version that a delete with seq <= this hides.
inline uint64_t VdelCleanSeq(const RetainParams &p) {
  return std::min(p.durable_seq, p.snaps->empty() ? UINT64_MAX : p.snaps->front());
}

// Appends to out the versions of src that some reader can still need.
void RetainVersions(const std::vector<Run> &runs, uint64_t src, const RetainParams &p, std::vector<Entry> *out);

}  // namespace gt
