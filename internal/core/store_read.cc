// store_read.cc -- snapshot reads (SnapshotReader): a vertex's runs from
// the MemGraphs and every level of the current Version, merged and
// filtered at the snapshot's seq; and bulk copies of clean CSR ranges.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "store.h"
#include "store_internal.h"

namespace gt {

Status AddSegmentRun(const Segment *s, uint64_t v, std::vector<Run> *runs) {
  uint64_t b, e;
  if (!s->Find(v, &b, &e)) return Status::OK();
  return AddVerifiedRun(s, b, e, runs);
}

namespace {

// Segment of a level holding v (levels are disjoint and sorted), or null.
const Segment *FindSegment(const std::vector<std::shared_ptr<Segment>> &lv, uint64_t v) {
  auto it = std::upper_bound(lv.begin(), lv.end(), v,
                             [](uint64_t x, const std::shared_ptr<Segment> &s) { return x < s->meta().min_src; });
  if (it == lv.begin()) return nullptr;
  const Segment *s = (it - 1)->get();
  return v <= s->meta().max_src ? s : nullptr;
}

// The MemGraphs of a Version that can hold versions visible at tau (active
// first). They are read without locks (memgraph.h): the writer appends
// beside readers and never waits for them. A MemGraph whose first batch is
// newer than tau is skipped: a snapshot of durable data reads no MemGraph
// at all.
struct VisibleMems {
  const MemGraph *m[2] = {nullptr, nullptr};
  uint64_t tau;
  VisibleMems(const Version &v, uint64_t at) : tau(at) {
    const MemGraph *c[2] = {v.active.get(), v.imm.get()};
    for (int k = 0; k < 2; k++) {
      if (c[k] == nullptr) continue;
      const uint64_t first = c[k]->first_seq();
      if (first == 0 || first > at) continue;
      m[k] = c[k];
    }
  }
  // True when some visible MemGraph has versions in dir (maybe only newer
  // than tau).
  bool Any(int dir) const {
    for (const MemGraph *g : m)
      if (g != nullptr && g->vertices(dir) != 0) return true;
    return false;
  }
};

// Gathers v's runs in priority order. m[0..1] receive MemGraph versions (and
// hold a hub's runs: MemGraph::AddRuns) and must outlive the runs, as must
// ver. With only_dst (out-edges only), the runs hold only the versions of
// the edges to *only_dst: an edge lookup, a binary search in each run
// (MemGraph::AddEdgeRuns).
Status GatherRuns(const Version &ver, const VisibleMems &mems, int dir, uint64_t v, MemGraph::ReadBuf m[2],
                  std::vector<Run> *runs, const uint64_t *only_dst = nullptr) {
  runs->clear();
  for (int k = 0; k < 2; k++) {
    if (mems.m[k] == nullptr || mems.m[k]->vertices(dir) == 0) continue;
    if (only_dst != nullptr)
      mems.m[k]->AddEdgeRuns(v, *only_dst, &m[k], runs);
    else
      mems.m[k]->AddRuns(dir, v, mems.tau, &m[k], runs);
  }
  const size_t from = runs->size();
  const Tree &t = ver.trees[dir];
  // A lookup skips the files whose edge filter says they hold no version
  // of the edge (no vertex table read, no search).
  auto wanted = [&](const Segment *s) { return only_dst == nullptr || s->MayHold(v, *only_dst); };
  for (const auto &s : t.l0)
    if (wanted(s.get())) GT_RETURN_IF_ERROR(AddSegmentRun(s.get(), v, runs));
  for (size_t i = 1; i < t.levels.size(); i++) {
    const Segment *s = FindSegment(t.levels[i], v);
    if (s != nullptr && wanted(s)) GT_RETURN_IF_ERROR(AddSegmentRun(s, v, runs));
  }
  if (only_dst != nullptr) {
    // Each file's run narrowed to the versions to *only_dst; empty ones
    // dropped (GT_MAX_VERTEX is below UINT64_MAX, so *only_dst + 1 does
    // not wrap for any dst a file holds).
    size_t w = from;
    for (size_t i = from; i < runs->size(); i++) {
      Run r = (*runs)[i];
      r.b = SeekDst(r, *only_dst);
      r.e = *only_dst == UINT64_MAX ? r.e : SeekDst(r, *only_dst + 1);
      if (r.b < r.e) (*runs)[w++] = r;
    }
    runs->resize(w);
  }
  return Status::OK();
}

// True when no vertex delete a snapshot at tau applies can hide a version
// of s: every live delete up to tau is at or below s's floor.
bool VdelFree(const Segment &s, uint64_t tau, const VdelMap &vdel) { return !vdel.AnyIn(s.vdel_floor(), tau); }

// True when one file run can be copied out as is: every version in it is
// visible at tau, live, unique per edge and of a type ts holds, and no
// vertex delete applies.
bool FastRun(const std::vector<Run> &runs, uint64_t tau, const VdelMap &vdel, const TypeSet *ts) {
  if (runs.size() != 1 || runs[0].seg == nullptr) return false;
  const Segment &s = *runs[0].seg;
  return s.AllVisibleAt(tau) && s.AllTypesIn(ts) && VdelFree(s, tau, vdel);
}

// Writes edge k's weight wt, type ty and event time tm to the outputs that
// are there (w, t and tm may be null).
inline void PutColumns(const EdgeOut &o, size_t k, double wt, uint32_t ty, int64_t tm) {
  if (o.w) o.w[k] = wt;
  if (o.t) o.t[k] = static_cast<uint16_t>(ty);
  if (o.tm) o.tm[k] = tm;
}

// Writes edge k (dst d, and PutColumns) to the outputs.
inline void Put(const EdgeOut &o, size_t k, uint64_t d, double wt, uint32_t ty, int64_t tm) {
  o.dsts[k] = d;
  PutColumns(o, k, wt, ty, tm);
}

// Copies a segment's entries [b, e) to the outputs from position at.
inline void CopyOut(const Segment &s, uint64_t b, uint64_t e, const EdgeOut &o, size_t at) {
  s.CopyDsts(b, e, o.dsts + at);
  if (o.w) s.CopyWeights(b, e, o.w + at);
  if (o.t) s.CopyTypes(b, e, o.t + at);
  if (o.tm) s.CopyTimes(b, e, o.tm + at);
}

// An edge decided by the runs above a clean bottom run (CleanBottom): the
// first version at or below tau of its (dst, type), and whether it is
// visible (then with its weight and time).
struct Decided {
  uint64_t dst;
  uint32_t type;
  bool visible;
  double weight;
  int64_t time;
};

// (dst asc, type desc): the order of a vertex's edges.
inline bool EdgeBefore(uint64_t d1, uint32_t t1, uint64_t d2, uint32_t t2) { return d1 < d2 || (d1 == d2 && t1 > t2); }

// The first position in [from, r.e) of the clean segment run r whose edge
// is not before (d, t): an exponential search from from, then a binary
// search (the decided edges come in order, so each search starts where the
// last ended and costs the log of the gap).
uint64_t GallopTo(const Run &r, uint64_t from, uint64_t d, uint32_t t) {
  const Segment &s = *r.seg;
  auto before = [&](uint64_t i) { return EdgeBefore(s.dst(i), s.type(i), d, t); };
  uint64_t lo = from, step = 1;
  while (lo < r.e && before(lo)) {
    const uint64_t next = std::min(r.e, lo + step);
    if (next == r.e || !before(next)) {
      uint64_t a = lo + 1, b = next;  // the answer is in (lo, next]
      while (a < b) {
        const uint64_t mid = a + (b - a) / 2;
        if (before(mid))
          a = mid + 1;
        else
          b = mid;
      }
      return a;
    }
    lo = next;
    step *= 2;
  }
  return lo;
}

// The smallest clean bottom run worth the path below, and how much larger
// than the runs above it it must be.
constexpr uint64_t kCleanBottomMin = 64;
constexpr uint64_t kCleanBottomRatio = 1;
// CleanPair merges two clean runs when the newer holds at least
// 1/kPairMinShare of the older's versions (else CleanBottom copies the
// older in stretches).
constexpr uint64_t kPairMinShare = 8;

// The edges runs[0, n) decide at tau, in order (dst asc, type desc): each
// pair's newest version at or before tau, visible unless a tombstone, of a
// type ts does not hold, or hidden by a vertex delete (VisibleNewest's
// rules). above is how many versions they hold (the vector's room).
// Allocated per read (not kept per thread: a huge hub's would stay).
std::vector<Decided> DecideAbove(const std::vector<Run> &runs, size_t n, uint64_t v, uint64_t tau, const VdelMap &vdel,
                                 const TypeSet *ts, uint64_t above) {
  std::vector<Decided> dec;
  if (n == 0) return dec;
  dec.reserve(above);
  const std::vector<Run> top(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(n));
  const uint64_t dsrc = vdel.empty() ? 0 : vdel.Latest(v, tau);
  const uint64_t newest = vdel.max_seq();
  uint64_t cur = UINT64_MAX;
  uint32_t curt = 0;
  MergeRuns(top, [&](uint64_t dst, uint64_t vers, double w, int64_t tm) {
    const uint32_t t = VersType(vers);
    if (dst == cur && t == curt) return;
    const uint64_t seq = VersSeq(vers);
    if (seq > tau) return;
    cur = dst;
    curt = t;
    const bool visible =
        !VersTomb(vers) && seq >= dsrc && Wanted(ts, t) && !(seq < newest && seq < vdel.Latest(dst, tau));
    dec.push_back(Decided{dst, t, visible, w, tm});
  });
  return dec;
}

// AppendVisible for runs whose last (oldest) run is a clean segment run
// (every version visible at tau, live, alone for its edge, of a type ts
// holds, hidden by no vertex delete) much larger than the runs above it,
// none of which may hold an event operand: the edges the runs above decide
// (a version at or below tau of an edge: it wins over the bottom run's,
// older, whether it is visible or not) are merged by VisibleNewest's rules,
// and the bottom run is copied out in bulk between them, found by
// galloping. So a hub read as ingest leaves it (its file run and the few
// versions written since) costs a copy of its list plus the recent
// versions' merge, not a merge step per edge. Returns false when the runs
// are not of that shape (nothing written), else true with *end as
// AppendVisible's result.
bool CleanBottom(const std::vector<Run> &runs, uint64_t v, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
                 const EdgeOut &o, size_t at, size_t cap, size_t *end) {
  if (runs.size() < 2) return false;
  const Run &c = runs.back();
  if (c.seg == nullptr || c.e - c.b < kCleanBottomMin) return false;
  uint64_t above = 0;
  for (size_t i = 0; i + 1 < runs.size(); i++) {
    if (runs[i].MayHoldOperands()) return false;
    above += runs[i].e - runs[i].b;
  }
  if ((c.e - c.b) < kCleanBottomRatio * above) return false;
  const Segment &s = *c.seg;
  if (s.has_ext() || !s.AllVisibleAt(tau) || !s.AllTypesIn(ts) || !VdelFree(s, tau, vdel)) return false;
  const std::vector<Decided> dec = DecideAbove(runs, runs.size() - 1, v, tau, vdel, ts, above);
  // Where each decided edge falls in the bottom run, and the count.
  std::vector<uint64_t> at_pos(dec.size());
  uint64_t pos = c.b;
  size_t n = at + (c.e - c.b);
  for (size_t j = 0; j < dec.size(); j++) {
    pos = GallopTo(c, pos, dec[j].dst, dec[j].type);
    at_pos[j] = pos;
    if (pos < c.e && s.dst(pos) == dec[j].dst && s.type(pos) == dec[j].type) {
      n--;  // the bottom run's version of it is older
      pos++;
    }
    if (dec[j].visible) n++;
  }
  *end = n;
  if (n > cap) return true;
  size_t k = at;
  pos = c.b;
  for (size_t j = 0; j < dec.size(); j++) {
    const uint64_t q = at_pos[j];
    if (q > pos) {
      CopyOut(s, pos, q, o, k);
      k += q - pos;
      pos = q;
    }
    if (pos < c.e && s.dst(pos) == dec[j].dst && s.type(pos) == dec[j].type) pos++;
    if (dec[j].visible) Put(o, k++, dec[j].dst, dec[j].weight, dec[j].type, dec[j].time);
  }
  CopyOut(s, pos, c.e, o, k);
  return true;
}

// True when r is a run of a clean segment (every version visible at tau,
// live, alone for its edge, of a type ts holds, hidden by no vertex
// delete, no event column) of one type: CleanPair's input.
bool CleanOneType(const Run &r, uint64_t tau, const VdelMap &vdel, const TypeSet *ts) {
  if (r.seg == nullptr) return false;
  const Segment &s = *r.seg;
  return s.min_type() == s.max_type() && !s.has_ext() && s.AllVisibleAt(tau) && s.AllTypesIn(ts) &&
         VdelFree(s, tau, vdel);
}

// AppendVisible for runs whose two last (oldest) runs are clean segment
// runs of one type (CleanOneType: as a vertex's runs are with an L0 file
// above its level's) holding at least as many versions as the runs above
// them, none of which may hold an event operand: the two are merged in
// one pass comparing destinations only (on a tie the newer wins), and the
// edges the runs above decide are merged into that by VisibleNewest's
// rules. Returns false when the runs are not of that shape (nothing
// written), else true with *end as AppendVisible's result.
bool CleanPair(const std::vector<Run> &runs, uint64_t v, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
               const EdgeOut &o, size_t at, size_t cap, size_t *end) {
  if (runs.size() < 2) return false;
  const Run &a = runs[runs.size() - 2], &b = runs.back();
  uint64_t above = 0;
  for (size_t i = 0; i + 2 < runs.size(); i++) {
    if (runs[i].seg != nullptr || runs[i].MayHoldOperands()) return false;
    above += runs[i].e - runs[i].b;
  }
  if ((a.e - a.b) + (b.e - b.b) < kCleanBottomMin || (a.e - a.b) + (b.e - b.b) < kCleanBottomRatio * above)
    return false;
  // A newer run much smaller than the older: CleanBottom's bulk copies.
  if ((a.e - a.b) * kPairMinShare < (b.e - b.b)) return false;
  if (!CleanOneType(a, tau, vdel, ts) || !CleanOneType(b, tau, vdel, ts)) return false;
  const Segment &sa = *a.seg, &sb = *b.seg;
  if (sa.min_type() != sb.min_type()) return false;
  const uint32_t t = sa.min_type();
  const std::vector<Decided> dec = DecideAbove(runs, runs.size() - 2, v, tau, vdel, ts, above);
  size_t k = at, j = 0;
  uint64_t ia = a.b, ib = b.b;
  auto put = [&](const Segment &s, uint64_t i, uint64_t d) {
    if (k < cap) Put(o, k, d, o.w ? s.weight(i) : 0, t, o.tm ? s.time(i) : 0);
    k++;
  };
  while (ia < a.e || ib < b.e) {
    const uint64_t da = ia < a.e ? sa.dst(ia) : UINT64_MAX;
    const uint64_t db = ib < b.e ? sb.dst(ib) : UINT64_MAX;
    const uint64_t d = std::min(da, db);
    // The decided edges before (d, t), then (d, t) itself when decided.
    for (; j < dec.size() && EdgeBefore(dec[j].dst, dec[j].type, d, t); j++)
      if (dec[j].visible) {
        if (k < cap) Put(o, k, dec[j].dst, dec[j].weight, dec[j].type, dec[j].time);
        k++;
      }
    const bool decided = j < dec.size() && dec[j].dst == d && dec[j].type == t;
    if (decided) {
      if (dec[j].visible) {
        if (k < cap) Put(o, k, d, dec[j].weight, t, dec[j].time);
        k++;
      }
      j++;
    } else if (da <= db) {
      put(sa, ia, d);  // on a tie the newer run's version
    } else {
      put(sb, ib, d);
    }
    if (da == d) ia++;
    if (db == d) ib++;
  }
  for (; j < dec.size(); j++)
    if (dec[j].visible) {
      if (k < cap) Put(o, k, dec[j].dst, dec[j].weight, dec[j].type, dec[j].time);
      k++;
    }
  *end = k;
  return true;
}

// Writes v's visible edges of the types ts holds (from its runs) to
// o[at..cap) and returns the end position at + count. A result above cap
// means they did not fit: nothing past cap was written and the caller must
// not use them.
size_t AppendVisible(const std::vector<Run> &runs, uint64_t v, uint64_t tau, const VdelMap &vdel, const TypeSet *ts,
                     const EdgeOut &o, size_t at, size_t cap) {
  if (size_t end; CleanPair(runs, v, tau, vdel, ts, o, at, cap, &end)) return end;
  if (size_t end; CleanBottom(runs, v, tau, vdel, ts, o, at, cap, &end)) return end;
  if (FastRun(runs, tau, vdel, ts)) {
    const Run &r = runs[0];
    const size_t end = at + (r.e - r.b);
    if (end <= cap) CopyOut(*r.seg, r.b, r.e, o, at);
    return end;
  }
  size_t k = at;
  VisibleVersions(runs, v, tau, vdel, ts, [&](uint64_t d, uint32_t ty, double wt, int64_t tm) {
    if (k < cap) Put(o, k, d, wt, ty, tm);
    k++;
  });
  return k;
}

// The level holding every file edge of [lo, hi) when that is a single
// clean run: no L0 data, one level overlapping the range, and no segment
// there with versions newer than tau, tombstones or several versions of an
// edge (vertex deletes are BulkCopy's concern, per segment). MemGraphs are
// not looked at: without MemGraph data a scan is a bulk copy of the CSR,
// and with it, a bulk copy between the vertices the MemGraphs hold.
const std::vector<std::shared_ptr<Segment>> *CleanLevel(const Version &ver, int dir, uint64_t lo, uint64_t hi,
                                                        uint64_t tau) {
  const Tree &t = ver.trees[dir];
  if (!t.l0.empty()) return nullptr;
  const std::vector<std::shared_ptr<Segment>> *found = nullptr;
  for (size_t i = 1; i < t.levels.size(); i++) {
    for (const auto &s : t.levels[i]) {
      const SegMeta &m = s->meta();
      if (m.max_src < lo || m.min_src >= hi) continue;
      if (found != nullptr && found != &t.levels[i]) return nullptr;
      if (!s->AllVisibleAt(tau)) return nullptr;
      found = &t.levels[i];
    }
  }
  return found;
}

// The vertex deletes a snapshot at tau applies, flattened for a filtered
// copy that checks every edge: per vertex the newest delete seq <= tau, in
// a sorted table behind a bloom filter (most dsts are not deleted).
class VdelFilter {
 public:
  VdelFilter(const VdelMap &m, uint64_t tau) {
    m.Records(tau, &latest_);  // sorted by (vertex, seq)
    // Keep the newest record of each vertex (the last of its run).
    size_t k = 0;
    for (size_t i = 0; i < latest_.size(); i++) {
      if (k > 0 && latest_[k - 1].first == latest_[i].first)
        latest_[k - 1] = latest_[i];
      else
        latest_[k++] = latest_[i];
    }
    latest_.resize(k);
    size_t words = 1;
    while (words * 64 < k * 16) words *= 2;
    bloom_.assign(words, 0);
    for (const auto &r : latest_) {
      const uint64_t h = Hash(r.first);
      bloom_[(h >> 6) & (words - 1)] |= uint64_t{1} << (h & 63);
    }
  }
  // The newest delete seq <= tau of v, or 0.
  uint64_t Latest(uint64_t v) const {
    const uint64_t h = Hash(v);
    if (((bloom_[(h >> 6) & (bloom_.size() - 1)] >> (h & 63)) & 1) == 0) return 0;
    auto it = std::lower_bound(latest_.begin(), latest_.end(), VdelMap::Record{v, 0});
    return it != latest_.end() && it->first == v ? it->second : 0;
  }

 private:
  static uint64_t Hash(uint64_t v) { return (v * 0x9E3779B97F4A7C15ull) >> 24; }
  std::vector<VdelMap::Record> latest_;
  std::vector<uint64_t> bloom_;
};

// What a clean run's version needs besides being there to be read: a type
// ts holds (null: any), and, with a vertex-delete filter, no delete of src
// (its newest is dsrc) or of its dst newer than it.
inline bool Keep(const Segment &s, uint64_t i, const TypeSet *ts, const VdelFilter *filt, uint64_t dsrc, uint64_t d) {
  if (!Wanted(ts, s.type(i))) return false;
  if (filt == nullptr) return true;
  const uint64_t seq = VersSeq(s.vers(i));
  return seq >= dsrc && seq >= filt->Latest(d);
}

// Writes the versions of a clean run (every version visible at tau, live,
// unique per edge) that Keep leaves to o[at..cap), as AppendVisible does.
size_t AppendFiltered(const Run &r, uint64_t v, const TypeSet *ts, const VdelFilter *filt, const EdgeOut &o, size_t at,
                      size_t cap) {
  const uint64_t dsrc = filt != nullptr ? filt->Latest(v) : 0;
  size_t k = at;
  for (uint64_t i = r.b; i < r.e; i++) {
    const uint64_t d = r.seg->dst(i);
    if (!Keep(*r.seg, i, ts, filt, dsrc, d)) continue;
    if (k < cap) Put(o, k, d, r.seg->weight(i), r.seg->type(i), r.seg->time(i));
    k++;
  }
  return k;
}

// Segment::AppendRange (the same contract) for a segment of a clean level
// that a live vertex delete or a type filter may touch: each vertex's
// versions the deletes leave visible at tau and ts holds, a vertex left
// with none skipped. With a filter (worth building when the range holds
// many more edges than there are deletes; or with none when no delete
// applies: vdel_free) every edge is checked against it, else merged per
// vertex.
Status AppendRangeVisible(const Segment &s, uint64_t lo, uint64_t hi, uint64_t tau, const VdelMap &vdel,
                          const TypeSet *ts, bool vdel_free, const VdelFilter *filt, uint64_t *vids, uint64_t *offs,
                          size_t vcap, const EdgeOut &o, size_t ecap, size_t *nv, size_t *ne, uint64_t *next,
                          uint64_t *need) {
  *next = hi;
  *need = 0;
  const uint64_t end = std::min(hi, s.meta().max_src + 1);
  std::vector<Run> runs;
  uint64_t v = std::max(lo, s.meta().min_src), x;
  for (; v < end && s.NextVertex(v, &x) && x < end; v = x + 1) {
    if (*nv == vcap) {
      *next = x;
      return Status::OK();
    }
    runs.clear();
    GT_RETURN_IF_ERROR(AddSegmentRun(&s, x, &runs));
    const size_t k = filt != nullptr || vdel_free ? AppendFiltered(runs[0], x, ts, filt, o, *ne, ecap)
                                                  : AppendVisible(runs, x, tau, vdel, ts, o, *ne, ecap);
    if (k > ecap) {
      if (*nv == 0) *need = k - *ne;
      *next = x;
      return Status::OK();
    }
    if (k == *ne) continue;  // no visible edges
    vids[*nv] = x;
    *ne = k;
    offs[++*nv] = k;
  }
  return Status::OK();
}

// Segment::AppendRange (the same contract) through a filter (a type set
// and/or a vertex-delete filter; filt null: no delete applies here): bulk
// copies, each followed by dropping in place what Keep drops (a vertex
// left with no edges too), until the range or the buffers end. A first
// vertex too large before filtering is left to AppendRangeVisible, whose
// count is exact.
Status AppendRangeFiltered(const Segment &s, uint64_t lo, uint64_t hi, uint64_t tau, const VdelMap &vdel,
                           const TypeSet *ts, const VdelFilter *filt, uint64_t *vids, uint64_t *offs, size_t vcap,
                           const EdgeOut &o, size_t ecap, size_t *nv, size_t *ne, uint64_t *next, uint64_t *need) {
  for (uint64_t pos = lo;;) {
    const size_t nv0 = *nv, ne0 = *ne;
    GT_RETURN_IF_ERROR(s.AppendRange(pos, hi, vids, offs, vcap, o.dsts, o.w, o.t, o.tm, ecap, nv, ne, next, need));
    if (*need > 0)
      return AppendRangeVisible(s, pos, hi, tau, vdel, ts, filt == nullptr, filt, vids, offs, vcap, o, ecap, nv, ne,
                                next, need);
    if (*nv == nv0) return Status::OK();  // the range or the buffers ended
    uint64_t base, unused;
    s.Find(vids[nv0], &base, &unused);  // the entry copied to dsts[ne0]
    size_t outv = nv0, oute = ne0, from = ne0;
    for (size_t j = nv0; j < *nv; j++) {
      const uint64_t v = vids[j], dsrc = filt != nullptr ? filt->Latest(v) : 0;
      const size_t to = offs[j + 1], start = oute;
      for (size_t k = from; k < to; k++) {
        if (!Keep(s, base + (k - ne0), ts, filt, dsrc, o.dsts[k])) continue;
        o.dsts[oute] = o.dsts[k];
        if (o.w) o.w[oute] = o.w[k];
        if (o.t) o.t[oute] = o.t[k];
        if (o.tm) o.tm[oute] = o.tm[k];
        oute++;
      }
      from = to;
      if (oute == start) continue;  // no visible edges
      vids[outv] = v;
      offs[++outv] = oute;
    }
    *nv = outv;
    *ne = oute;
    if (*next >= hi) return Status::OK();
    pos = *next;  // filtering made room: go on
  }
}

// Appends the vertices of [lo, hi) held by the clean level lv to a scan's
// output: a bulk copy of each segment no live vertex delete up to tau
// touches and whose types ts all holds (see Segment::AppendRange), a
// filtered copy of any other (*filt, built here once the scan needs it, is
// kept for its later calls); a segment with no type ts holds is skipped.
// *done is false when the buffers filled first: *next is then the first
// vertex not copied. A first vertex that alone exceeds ecap is
// GT_ERR_BUFFER with its count in *ne.
Status BulkCopy(const std::vector<std::shared_ptr<Segment>> &lv, uint64_t lo, uint64_t hi, uint64_t tau,
                const VdelMap &vdel, const TypeSet *ts, std::unique_ptr<VdelFilter> *filt, uint64_t *vids,
                uint64_t *offs, size_t vcap, const EdgeOut &o, size_t ecap, size_t *nv, size_t *ne, uint64_t *next,
                bool *done) {
  *done = false;
  for (const auto &s : lv) {
    const SegMeta &m = s->meta();
    if (m.max_src < lo || m.min_src >= hi) continue;
    if (ts != nullptr && !ts->HasAny(s->min_type(), s->max_type())) continue;
    uint64_t need;
    if (VdelFree(*s, tau, vdel)) {
      if (s->AllTypesIn(ts))
        GT_RETURN_IF_ERROR(s->AppendRange(lo, hi, vids, offs, vcap, o.dsts, o.w, o.t, o.tm, ecap, nv, ne, next, &need));
      else
        GT_RETURN_IF_ERROR(
            AppendRangeFiltered(*s, lo, hi, tau, vdel, ts, nullptr, vids, offs, vcap, o, ecap, nv, ne, next, &need));
    } else {
      // The edges of [lo, hi) here, estimated by the share of the range.
      const uint64_t a = std::max(lo, m.min_src), b = std::min(hi - 1, m.max_src);
      const double share = static_cast<double>(b - a + 1) / static_cast<double>(m.max_src - m.min_src + 1);
      if (*filt == nullptr && static_cast<double>(m.nentries) * share >= 4.0 * static_cast<double>(vdel.size()))
        *filt = std::make_unique<VdelFilter>(vdel, tau);
      if (*filt != nullptr)
        GT_RETURN_IF_ERROR(AppendRangeFiltered(*s, lo, hi, tau, vdel, ts, filt->get(), vids, offs, vcap, o, ecap, nv,
                                               ne, next, &need));
      else
        GT_RETURN_IF_ERROR(AppendRangeVisible(*s, lo, hi, tau, vdel, ts, false, nullptr, vids, offs, vcap, o, ecap, nv,
                                              ne, next, &need));
    }
    if (need > 0) {
      *ne = need;
      return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(*next), "", 0};
    }
    if (*next != hi) return Status::OK();
  }
  *next = hi;
  *done = true;
  return Status::OK();
}

}  // namespace

Status SnapshotReader::Degree(uint64_t v, int dir, const TypeSet *ts, uint64_t *out) {
  auto ver = store_->Current();
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
  }
  uint64_t n = 0;
  if (FastRun(runs, tau_, *ver->vdel, ts)) {
    n = runs[0].e - runs[0].b;
  } else {
    VisibleEdgeIds(runs, v, tau_, *ver->vdel, ts, [&](uint64_t, uint32_t) { n++; });
  }
  *out = n;
  return Status::OK();
}

Status SnapshotReader::Neighbors(uint64_t v, int dir, const TypeSet *ts, const EdgeOut &o, size_t cap, size_t *n) {
  auto ver = store_->Current();
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
  }
  const size_t k = AppendVisible(runs, v, tau_, *ver->vdel, ts, o, 0, cap);
  *n = k;
  if (k > cap) return Status{Code::kBuffer, "neighbor buffer too small", "", 0};
  return Status::OK();
}

Status SnapshotReader::Edge(uint64_t v, uint64_t dst, const TypeSet *ts, const EdgeOut &o, size_t cap, size_t *n) {
  *n = 0;
  auto ver = store_->Current();
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, kOut, v, m, &runs, &dst));
  }
  // Every edge found goes to dst: only its weight, type and time are
  // written (o.dsts is not used).
  size_t k = 0;
  VisibleVersions(runs, v, tau_, *ver->vdel, ts, [&](uint64_t, uint32_t t, double wt, int64_t tm) {
    if (k < cap) PutColumns(o, k, wt, t, tm);
    k++;
  });
  *n = k;
  if (k > cap) return Status{Code::kBuffer, "edge buffer too small", "", 0};
  return Status::OK();
}

Status SnapshotReader::EdgeCounts(const uint64_t *srcs, const uint64_t *dsts, size_t n, const TypeSet *ts,
                                  uint32_t *counts) {
  if (n == 0) return Status::OK();
  auto ver = store_->Current();
  const VisibleMems mems(*ver, tau_);
  const VdelMap &vdel = *ver->vdel;
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  // The files' first reads of lookup i+kAhead are fetched while lookup i
  // runs: independent lookups overlap their cache misses (a filter block
  // per file and a vertex table entry each, as a CSR's offset).
  constexpr size_t kAhead = 8;
  const Tree &t = ver->trees[kOut];
  auto prefetch = [&](size_t j) {
    for (const auto &s : t.l0) s->PrefetchLookup(srcs[j], dsts[j]);
    for (size_t l = 1; l < t.levels.size(); l++)
      if (const Segment *s = FindSegment(t.levels[l], srcs[j])) s->PrefetchLookup(srcs[j], dsts[j]);
  };
  for (size_t j = 0; j < std::min(n, kAhead); j++) prefetch(j);
  for (size_t i = 0; i < n; i++) {
    if (i + kAhead < n) prefetch(i + kAhead);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, kOut, srcs[i], m, &runs, &dsts[i]));
    uint32_t k = 0;
    if (!runs.empty()) VisibleEdgeIds(runs, srcs[i], tau_, vdel, ts, [&k](uint64_t, uint32_t) { k++; });
    counts[i] = k;
  }
  return Status::OK();
}

Status SnapshotReader::Scan(uint64_t lo, uint64_t hi, int dir, const TypeSet *ts, uint64_t *vids, uint64_t *offs,
                            size_t vcap, const EdgeOut &o, size_t ecap, size_t *nv, size_t *ne, uint64_t *next) {
  *nv = 0;
  *ne = 0;
  *next = hi;
  if (hi <= lo) return Status::OK();
  if (vcap == 0) return Status{Code::kBuffer, "vertex buffer has no room", "", 0};
  auto ver = store_->Current();
  VisibleMems mems(*ver, tau_);
  offs[0] = 0;
  if (const auto *lv = CleanLevel(*ver, dir, lo, hi, tau_)) {
    bool done;
    std::unique_ptr<VdelFilter> filt;  // built by the first BulkCopy that needs it
    if (!mems.Any(dir))
      return BulkCopy(*lv, lo, hi, tau_, *ver->vdel, ts, &filt, vids, offs, vcap, o, ecap, nv, ne, next, &done);
    // Bulk copies between the vertices the MemGraphs hold; those merge
    // their MemGraph versions with the level's run one by one.
    std::vector<VertexCursor> mc;
    for (const MemGraph *g : mems.m)
      if (g != nullptr) mc.push_back(VertexCursor::ForMem(g, dir, lo, hi, tau_));
    MemGraph::ReadBuf m[2];
    std::vector<Run> runs;
    for (uint64_t pos = lo;;) {
      bool any;
      uint64_t d = MinHead(mc, &any);
      if (!any) d = hi;
      if (pos < d) {
        GT_RETURN_IF_ERROR(
            BulkCopy(*lv, pos, d, tau_, *ver->vdel, ts, &filt, vids, offs, vcap, o, ecap, nv, ne, next, &done));
        if (!done) return Status::OK();
      }
      if (d >= hi) break;
      if (*nv == vcap) {
        *next = d;
        return Status::OK();
      }
      GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, d, m, &runs));
      const size_t k = AppendVisible(runs, d, tau_, *ver->vdel, ts, o, *ne, ecap);
      if (k > ecap) {
        *next = d;
        if (*nv == 0) {
          *ne = k;
          return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(d), "", 0};
        }
        return Status::OK();
      }
      if (k > *ne) {
        vids[*nv] = d;
        *ne = k;
        offs[++*nv] = k;
      }
      AdvancePast(mc, d);
      pos = d + 1;
    }
    *next = hi;
    return Status::OK();
  }
  std::vector<VertexCursor> cursors;
  for (const MemGraph *g : mems.m)
    if (g != nullptr) cursors.push_back(VertexCursor::ForMem(g, dir, lo, hi, tau_));
  const Tree &t = ver->trees[dir];
  for (const auto &s : t.l0) cursors.push_back(VertexCursor::ForSegment(s.get(), lo, hi));
  for (size_t i = 1; i < t.levels.size(); i++)
    if (!t.levels[i].empty()) cursors.push_back(VertexCursor::ForLevel(t.levels[i], lo, hi));
  const VdelMap &vdel = *ver->vdel;
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  size_t outv = 0, oute = 0;
  for (;;) {
    bool any;
    uint64_t v = MinHead(cursors, &any);
    if (!any) break;
    if (outv == vcap) {
      *next = v;
      break;
    }
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
    const size_t k = AppendVisible(runs, v, tau_, vdel, ts, o, oute, ecap);
    if (k > ecap) {
      if (outv == 0) {
        *ne = k;
        *next = v;
        return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(v), "", 0};
      }
      *next = v;
      break;
    }
    AdvancePast(cursors, v);
    if (k == oute) continue;  // no visible edges
    vids[outv] = v;
    oute = k;
    offs[++outv] = oute;
  }
  *nv = outv;
  *ne = oute;
  return Status::OK();
}

Status SnapshotReader::Gather(const uint64_t *vids, size_t n, int dir, const TypeSet *ts, uint64_t *offs,
                              const EdgeOut &o, size_t ecap, size_t *done, size_t *ne) {
  *done = 0;
  *ne = 0;
  offs[0] = 0;
  if (n == 0) return Status::OK();
  auto ver = store_->Current();
  VisibleMems mems(*ver, tau_);
  const VdelMap &vdel = *ver->vdel;
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  size_t oute = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t v = vids[i];
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
    const size_t k = AppendVisible(runs, v, tau_, vdel, ts, o, oute, ecap);
    if (k > ecap) {
      if (i == 0) {
        *ne = k;
        return Status{Code::kBuffer, "edge buffer too small for vertex " + std::to_string(v), "", 0};
      }
      break;
    }
    oute = k;
    offs[i + 1] = oute;
    *done = i + 1;
  }
  *ne = oute;
  return Status::OK();
}

Status SnapshotReader::NeighborsAfter(uint64_t v, int dir, const TypeSet *ts, bool has_after, uint64_t after,
                                      uint32_t after_type, const EdgeOut &o, size_t cap, size_t *n, bool *more) {
  *n = 0;
  *more = false;
  auto ver = store_->Current();
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
  }
  // Edges come in (dst asc, type desc) order; the page starts past the
  // edge (after, after_type).
  auto past = [&](uint64_t d, uint32_t t) { return d > after || (d == after && t < after_type); };
  if (FastRun(runs, tau_, *ver->vdel, ts)) {
    // One clean run, sorted and unique by edge: seek, then copy a page.
    const Run &r = runs[0];
    uint64_t lo = r.b, hi = r.e;
    while (has_after && lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (!past(r.seg->dst(mid), r.seg->type(mid)))
        lo = mid + 1;
      else
        hi = mid;
    }
    const uint64_t end = std::min<uint64_t>(r.e, lo + cap);
    CopyOut(*r.seg, lo, end, o, 0);
    *n = end - lo;
    *more = end < r.e;
    return Status::OK();
  }
  // Versions of a dst below after decide nothing past the cursor: each
  // run starts at after's versions, found by binary search (each of a
  // hub's MemGraph runs and its remainder is sorted).
  if (has_after) {
    for (Run &r : runs) r.b = SeekDst(r, after);
  }
  size_t k = 0;
  VisibleVersions(runs, v, tau_, *ver->vdel, ts, [&](uint64_t d, uint32_t t, double wt, int64_t tm) -> bool {
    if (has_after && !past(d, t)) return true;
    if (k == cap) {
      *more = true;  // one past the page is all it needs to know
      return false;
    }
    Put(o, k, d, wt, t, tm);
    k++;
    return true;
  });
  *n = k;
  return Status::OK();
}

}  // namespace gt

namespace gt {
namespace {

// Writes edge k's extras to x and its payload after the *used bytes of
// x.buf; false, writing nothing, when the payload does not fit.
inline bool PutExt(const ExtOut &x, size_t k, uint64_t count, int64_t first, const uint8_t *p, uint32_t len,
                   EventPos pos, size_t *used) {
  if (len > x.cap - *used) return false;
  if (x.ext != nullptr) x.ext[k] = gt_edge_ext{count, first, *used, len, pos.source, pos.position};
  if (len != 0) std::memcpy(x.buf + *used, p, len);
  *used += len;
  return true;
}

}  // namespace

Status SnapshotReader::EdgeExt(uint64_t v, uint64_t dst, const TypeSet *ts, const EdgeOut &o, const ExtOut &x,
                               size_t cap, size_t *n) {
  *n = 0;
  *x.len = 0;
  auto ver = store_->Current();
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, kOut, v, m, &runs, &dst));
  }
  size_t k = 0, used = 0, need = 0;
  bool fits = true;
  VisibleEdges<true>(runs, v, tau_, *ver->vdel, ts, [&](const Folded &f) {
    need += f.payload_len;
    if (k < cap && fits) {
      PutColumns(o, k, f.weight, f.type, f.time);
      fits = PutExt(x, k, f.count, f.first, f.payload, f.payload_len, f.pos, &used);
    }
    k++;
  });
  *n = k;
  *x.len = need;
  if (k > cap || !fits) return Status{Code::kBuffer, "edge buffer too small", "", 0};
  return Status::OK();
}

Status SnapshotReader::NeighborsAfterExt(uint64_t v, int dir, const TypeSet *ts, bool has_after, uint64_t after,
                                         uint32_t after_type, const EdgeOut &o, const ExtOut &x, size_t cap, size_t *n,
                                         bool *more) {
  *n = 0;
  *more = false;
  *x.len = 0;
  auto ver = store_->Current();
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, dir, v, m, &runs));
  }
  auto past = [&](uint64_t d, uint32_t t) { return d > after || (d == after && t < after_type); };
  if (has_after) {
    for (Run &r : runs) r.b = SeekDst(r, after);
  }
  // No bulk copy here: each edge's extras and payload come from its fold.
  size_t k = 0, used = 0;
  Status st;
  VisibleEdges<true>(runs, v, tau_, *ver->vdel, ts, [&](const Folded &f) -> bool {
    if (has_after && !past(f.dst, f.type)) return true;
    if (k == cap) {
      *more = true;
      return false;
    }
    if (!PutExt(x, k, f.count, f.first, f.payload, f.payload_len, f.pos, &used)) {
      if (k == 0) {
        *x.len = f.payload_len;
        st = Status{Code::kBuffer, "payload buffer too small for one edge", "", 0};
      } else {
        *more = true;  // the next page starts at this edge
      }
      return false;
    }
    Put(o, k, f.dst, f.weight, f.type, f.time);
    k++;
    return true;
  });
  if (!st.ok()) return st;
  *n = k;
  *x.len = used;
  return Status::OK();
}

Status SnapshotReader::EdgeEvents(uint64_t v, uint64_t dst, uint32_t type, int64_t since, uint64_t skip, uint64_t *seqs,
                                  const EdgeOut &o, const ExtOut &x, size_t cap, size_t *n, bool *more, bool *folded) {
  *n = 0;
  *more = false;
  *folded = false;
  *x.len = 0;
  if (type >= kMaxEdgeTypes)
    return Status::Invalid("edge type " + std::to_string(type) + " out of range (max " +
                           std::to_string(kMaxEdgeTypes - 1) + ")");
  auto ver = store_->Current();
  MemGraph::ReadBuf m[2];
  std::vector<Run> runs;
  {
    VisibleMems mems(*ver, tau_);
    GT_RETURN_IF_ERROR(GatherRuns(*ver, mems, kOut, v, m, &runs, &dst));
  }
  size_t k = 0, used = 0;
  uint64_t skipped = 0;
  bool full = false;
  Status st;
  EdgeOperands(runs, v, dst, type, tau_, *ver->vdel, [&](const Run &r, uint64_t i) -> bool {
    const uint64_t c = r.count(i);
    if (c > 1) {
      *folded = true;  // retention folded these: not listed one by one
      return !full;
    }
    if (full) return true;
    const int64_t tm = r.time(i);
    if (tm < since) return true;
    if (skipped < skip) {
      skipped++;
      return true;
    }
    if (k == cap) {
      *more = true;
      full = true;
      return true;  // on, to learn whether older events were folded
    }
    const uint8_t *p;
    const uint32_t len = r.payload(i, &p);
    if (!PutExt(x, k, 1, r.first(i), p, len, r.pos(i), &used)) {
      if (k == 0) {
        *x.len = len;
        st = Status{Code::kBuffer, "payload buffer too small for one event", "", 0};
        return false;
      }
      *more = true;
      full = true;
      return true;
    }
    if (seqs != nullptr) seqs[k] = VersSeq(r.vers(i));
    PutColumns(o, k, r.weight(i), type, tm);
    k++;
    return true;
  });
  if (!st.ok()) return st;
  *n = k;
  *x.len = used;
  return Status::OK();
}

}  // namespace gt
