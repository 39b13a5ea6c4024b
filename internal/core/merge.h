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

// The extras of every MemGraph operand of one event without a payload
// (count 1, first time its own time): shared, so that such an operand
// needs no record of its own (it costs the MemGraph what a replace version
// does, and a flush reads no record per event). Its first is 0 here:
// Run::first gives the version's time instead.
// INVARIANT: only MemGraph entries (and copies of them: hub caches, the
// in-index, read scratch) point to it; Run::ext gives everything else
// (RetainVersions' output, and so the files' builder) a record of its own.
inline constexpr ExtRec kOneEvent{1, 0, 0, 0, 0, 0};

// A sorted run of one vertex's versions: either MemGraph entries (already
// sorted by the caller), or a hub's cached versions without extras
// (plain), or a slice [b,e) of a segment.
struct Run {
  const Entry *ents = nullptr;
  const Segment *seg = nullptr;
  uint64_t b = 0, e = 0;
  const PlainEntry *plain = nullptr;  // when set, ents and seg are null
  // Set by a MemGraph that never took an operand: none of ents is one.
  bool no_operands = false;
  // Some version may be an operand (a plain read must fold).
  bool MayHoldOperands() const {
    if (seg) return seg->has_ext();
    return plain == nullptr && !no_operands;
  }
  uint64_t dst(uint64_t i) const { return seg ? seg->dst(i) : plain ? plain[i].dst : ents[i].dst; }
  uint64_t vers(uint64_t i) const { return seg ? seg->vers(i) : plain ? plain[i].vers : ents[i].vers; }
  double weight(uint64_t i) const { return seg ? seg->weight(i) : plain ? plain[i].weight : ents[i].weight; }
  int64_t time(uint64_t i) const { return seg ? seg->time(i) : plain ? plain[i].time : ents[i].time; }
  // An event operand's count (0: a replace version or a tombstone).
  uint64_t count(uint64_t i) const { return seg ? seg->count(i) : plain ? 0 : EntryCount(ents[i]); }
  int64_t first(uint64_t i) const {
    if (seg) return seg->first(i);
    if (plain) return 0;
    const ExtRec *x = ents[i].ext;
    if (x == &kOneEvent) return ents[i].time;
    return x != nullptr ? x->first : 0;
  }
  uint32_t payload(uint64_t i, const uint8_t **p) const {
    if (seg) return seg->payload(i, p);
    const ExtRec *x = plain ? nullptr : ents[i].ext;
    *p = x != nullptr ? x->bytes() : nullptr;
    return x != nullptr ? x->len : 0;
  }
  // Version i's source position (source 0: none), which goes with its
  // payload.
  EventPos pos(uint64_t i) const {
    if (seg) return seg->pos(i);
    const ExtRec *x = plain ? nullptr : ents[i].ext;
    return x != nullptr ? x->pos() : EventPos{};
  }
  // Version i's extras as an Entry's (null: none): a MemGraph entry's own,
  // a segment version's made in *arena.
  const ExtRec *ext(uint64_t i, ExtArena *arena) const {
    if (plain) return nullptr;
    if (!seg) {
      const ExtRec *x = ents[i].ext;
      return x != &kOneEvent ? x : arena->Make(1, ents[i].time, nullptr, 0);
    }
    if (!seg->has_ext()) return nullptr;
    const uint8_t *p;
    const uint32_t len = seg->payload(i, &p);
    const uint64_t c = seg->count(i);
    const EventPos pos = seg->pos(i);
    if (c == 0 && len == 0 && pos.source == 0) return nullptr;
    return arena->Ref(c, seg->first(i), p, len, pos);  // the file outlives the flush or compaction reading it
  }
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

// MergeRunsAt: the same, calling f(run, index) for every version (so that
// f reads what it needs of it: the folds read a version's extras).
template <typename F>
void MergeRunsAt(const std::vector<Run> &runs, F &&f) {
  auto go = [&](const Run &r, uint64_t i) __attribute__((always_inline)) { return Visit(f, r, i); };
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

template <typename F>
void MergeRuns(const std::vector<Run> &runs, F &&f) {
  MergeRunsAt(
      runs, [&](const Run &r, uint64_t i)
                __attribute__((always_inline)) { return Visit(f, r.dst(i), r.vers(i), r.weight(i), r.time(i)); });
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

// A visible edge as reads return it: its newest visible version, or, when
// that is an event operand, the fold of it and the older visible operands
// below it (count > 0).
struct Folded {
  uint64_t dst = 0;
  uint32_t type = 0;
  double weight = 0;                 // an operand's: the sum of its events' weights
  int64_t time = 0;                  // an operand's: the greatest event time
  uint64_t count = 0;                // events folded in; 0: a replace edge
  int64_t first = 0;                 // the least nonzero event time of the events
  uint64_t seq = 0;                  // the newest version's
  const uint8_t *payload = nullptr;  // the newest version's (valid while the read's runs are)
  uint32_t payload_len = 0;
  EventPos pos;         // the newest version's source position
  bool folded = false;  // some operand folded in holds several events (retention folded them)
};

// Emits emit(const Folded &) (kExt; else emit(dst, type, weight, time)) for the edges of one vertex visible at tau
// whose type ts holds (null: every type), in (dst asc, type desc) order;
// until emit returns false, when it returns bool.
//
// The fold (issue 42): for each (dst, type) the first version with seq <=
// tau decides, as before; when it is an operand, the older versions of the
// edge are folded into it, newest first, while each is an operand that no
// vertex delete visible at tau hides (a tombstone, a replace version or a
// hidden version ends the fold, and is not part of it). With kExt false
// only weight and time are gathered (the plain reads).
// INVARIANT: every read path that can meet an operand folds through here,
// or copies a run whole only where it is the edge's one source (FastRun,
// BulkCopy: a single clean run, in which an operand is alone for its edge
// and its own fold).
template <bool kExt, typename F>
void VisibleEdges(const std::vector<Run> &runs, uint64_t src, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
                  F &&emit) {
  const uint64_t dsrc = vdel.empty() ? 0 : vdel.Latest(src, tau);
  const uint64_t newest = vdel.max_seq();  // no delete hides a version this new
  uint64_t cur = UINT64_MAX;               // no dst is (GT_MAX_VERTEX is below)
  uint32_t curt = 0;
  bool pending = false;  // acc holds an edge not yet emitted (an operand's fold)
  bool open = false;     // and older operands still fold into it
  Folded acc;
  auto out = [&]() __attribute__((always_inline)) {
    if constexpr (kExt) {
      return Visit(emit, static_cast<const Folded &>(acc));
    } else {
      return Visit(emit, acc.dst, acc.type, acc.weight, acc.time);
    }
  };
  MergeRunsAt(runs, [&](const Run &r, uint64_t i) -> bool {
    const uint64_t dst = r.dst(i);
    const uint64_t vers = r.vers(i);
    const uint32_t t = VersType(vers);
    if (dst == cur && t == curt) {  // an older version of a decided edge
      if (!open) return true;
      const uint64_t seq = VersSeq(vers);
      const uint64_t c = r.count(i);
      // Older than a visible version: seq <= tau.
      if (c == 0 || VersTomb(vers) || seq < dsrc || (seq < newest && seq < vdel.Latest(dst, tau))) {
        open = false;
        return true;
      }
      acc.weight += r.weight(i);
      acc.time = std::max(acc.time, r.time(i));
      if constexpr (kExt) {
        acc.count += c;
        acc.first = MinTime(acc.first, r.first(i));
        acc.folded = acc.folded || c > 1;
      }
      return true;
    }
    if (pending) {
      pending = open = false;
      if (!out()) return false;
    }
    const uint64_t seq = VersSeq(vers);
    if (seq > tau) return true;  // not yet visible; an older version may be
    cur = dst;
    curt = t;
    if (VersTomb(vers) || seq < dsrc || !Wanted(ts, t)) return true;
    if (seq < newest && seq < vdel.Latest(dst, tau)) return true;
    const uint64_t c = r.count(i);
    if constexpr (!kExt) {
      // A replace version: emitted as it is (the plain reads' hot path,
      // kept as short as before operands).
      if (c == 0) return Visit(emit, dst, t, r.weight(i), r.time(i));
    }
    acc.dst = dst;
    acc.type = t;
    acc.weight = r.weight(i);
    acc.time = r.time(i);
    if constexpr (kExt) {
      acc.count = c;
      acc.first = c != 0 ? r.first(i) : 0;
      acc.seq = seq;
      acc.payload_len = r.payload(i, &acc.payload);
      acc.pos = r.pos(i);
      acc.folded = c > 1;
    }
    if (c != 0) {
      pending = open = true;
      return true;
    }
    return out();
  });
  if (pending) out();
}

// The newest visible version of each edge of one vertex at tau whose type
// ts holds, without folding: emit(dst, type, weight, time) once per edge,
// until emit returns false when it returns bool. The walk of
// VisibleEdgeIds and of VisibleVersions over runs that hold no operand.
template <typename F>
void VisibleNewest(const std::vector<Run> &runs, uint64_t src, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
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

// The edges of one vertex visible at tau whose type ts holds, as
// VisibleEdges gives them but without folding: emit(dst, type) once per
// edge (a degree: an operand's fold is one edge, whatever it folds).
template <typename F>
void VisibleEdgeIds(const std::vector<Run> &runs, uint64_t src, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
                    F &&emit) {
  VisibleNewest(
      runs, src, tau, vdel,
      ts, [&](uint64_t dst, uint32_t t, double, int64_t) __attribute__((always_inline))->decltype(emit(dst, t)) {
        return emit(dst, t);
      });
}

// VisibleEdges of the plain reads: emit(dst, type, weight, time), an
// operand's fold's sum and greatest time. Runs that cannot hold an
// operand (a replace-only store's) are read by the walk that folds
// nothing, as before operands (VisibleEdges' bookkeeping was a fifth of a
// hub's neighbors read).
template <typename F>
void VisibleVersions(const std::vector<Run> &runs, uint64_t src, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
                     F &&emit) {
  bool operands = false;
  for (const Run &r : runs) operands = operands || r.MayHoldOperands();
  if (operands) {
    VisibleEdges<false>(runs, src, tau, vdel, ts, emit);
    return;
  }
  VisibleNewest(runs, src, tau, vdel, ts, emit);
}

// The events of the edge (src, dst, type) visible at tau, newest first:
// emit(run, index) for each operand of its fold (as VisibleEdges folds
// it), until emit returns false. Returns whether the edge's newest visible
// version is an operand (false: no such edge, or a replace edge).
template <typename F>
bool EdgeOperands(const std::vector<Run> &runs, uint64_t src, uint64_t dst, uint32_t type, uint64_t tau,
                  const VdelMap &vdel, F &&emit) {
  const uint64_t dsrc = vdel.empty() ? 0 : vdel.Latest(src, tau);
  const uint64_t ddst = vdel.empty() ? 0 : vdel.Latest(dst, tau);
  bool started = false, done = false, operand = false;
  MergeRunsAt(runs, [&](const Run &r, uint64_t i) -> bool {
    if (r.dst(i) != dst) return true;
    const uint64_t vers = r.vers(i);
    if (VersType(vers) != type) return true;
    const uint64_t seq = VersSeq(vers);
    if (seq > tau) return true;
    const bool hidden = VersTomb(vers) || seq < dsrc || seq < ddst;
    if (hidden || r.count(i) == 0) {
      done = true;
      return false;
    }
    if (!started) operand = true;
    started = true;
    if (!Visit(emit, r, i)) {
      done = true;
      return false;
    }
    return true;
  });
  (void)done;
  return operand;
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
  // Event retention (issue 42): operands of type t whose event time is
  // below watermark - retain_us[t] fold together (RetainVersions); 0 (the
  // store's newest event time unknown): nothing folds by time. retain_us
  // null: 0 for every type.
  int64_t watermark = 0;
  const int64_t *retain_us = nullptr;
  // Where RetainVersions makes the extras of what it outputs (a segment
  // version's, a fold's); they live until the caller clears it. Null: a
  // thread's own, cleared by the next call that has none.
  ExtArena *arena = nullptr;
};

// The seq below which RetainVersions drops what vertex deletes hide: its
// output holds no version that a delete with seq <= this hides.
inline uint64_t VdelCleanSeq(const RetainParams &p) {
  return std::min(p.durable_seq, p.snaps->empty() ? UINT64_MAX : p.snaps->front());
}

// Appends to out the versions of src that some reader can still need.
//
// Operands (issue 42): a reader at a pinned seq folds an operand with the
// older operands below it, so within a snapshot stripe an operand does not
// supersede what is older: each is kept, down to the first version that is
// not one (kept as the fold's end, then the rest of the stripe is
// superseded). Consecutive operands of one stripe whose event times are all
// older than watermark - retain fold into one operand carrying the newest
// seq of them (their count, sum, least first, greatest time and the
// newest's payload); operands within retain are kept one by one; no fold
// crosses a stripe, the history above its floor, or a vertex delete of the
// edge's ends that not every reader sees yet.
// INVARIANT: a read at any seq a reader may pin (a pinned snapshot, one at
// or above the newest seq, one at or above the history floor) returns the
// same fold before and after a flush or compaction (only the number of
// versions that make it changes).
void RetainVersions(const std::vector<Run> &runs, uint64_t src, const RetainParams &p, std::vector<Entry> *out);

}  // namespace gt
