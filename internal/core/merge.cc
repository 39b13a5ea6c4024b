#include "merge.h"

#include "dcheck.h"

namespace gt {

// One immutable batch of vertex-delete records.
struct VdelMap::Chunk {
  std::vector<Record> recs;     // sorted by (vertex, seq)
  std::vector<uint64_t> seqs;   // the same records' seqs, ascending
  std::vector<uint64_t> bloom;  // one bit per vertex hash; size a power of 2
  uint64_t min_seq = 0, max_seq = 0;

  explicit Chunk(std::vector<Record> r) : recs(std::move(r)) {
    std::sort(recs.begin(), recs.end());
    seqs.reserve(recs.size());
    for (const Record &x : recs) seqs.push_back(x.second);
    std::sort(seqs.begin(), seqs.end());
    min_seq = seqs.front();
    max_seq = seqs.back();
    size_t words = 1;
    while (words * 64 < recs.size() * 8) words *= 2;
    bloom.assign(words, 0);
    for (const Record &x : recs) {
      const uint64_t h = Hash(x.first);
      bloom[(h >> 6) & (words - 1)] |= uint64_t{1} << (h & 63);
    }
  }
  static uint64_t Hash(uint64_t v) { return (v * 0x9E3779B97F4A7C15ull) >> 20; }
  bool MayHold(uint64_t v) const {
    const uint64_t h = Hash(v);
    return (bloom[(h >> 6) & (bloom.size() - 1)] >> (h & 63)) & 1;
  }
  // Records with seq > p.
  size_t LiveAbove(uint64_t p) const {
    return static_cast<size_t>(seqs.end() - std::upper_bound(seqs.begin(), seqs.end(), p));
  }
};

void VdelMap::Push(std::vector<Record> recs) {
  if (recs.empty()) return;
  for (const Record &x : recs) {
    // INVARIANT: a purge covers only deletes older than every later one: a
    // new delete's seq is above the purge point (purges stop at the durable
    // seq, and a new batch is newer than every durable one).
    GT_DCHECK_MSG(x.second > purged_, "vertex delete at seq " + std::to_string(x.second) +
                                          " at or below the purge point " + std::to_string(purged_));
    max_seq_ = std::max(max_seq_, x.second);
  }
  n_ += recs.size();
  // Merge with the newest chunks while they are not 4x larger, dropping
  // the purged records they still hold.
  while (!chunks_.empty() && chunks_.back()->recs.size() <= 4 * recs.size()) {
    for (const Record &x : chunks_.back()->recs)
      if (x.second > purged_) recs.push_back(x);
    chunks_.pop_back();
  }
  chunks_.push_back(std::make_shared<const Chunk>(std::move(recs)));
}

std::shared_ptr<const VdelMap> VdelMap::With(std::vector<Record> recs) const {
  auto m = std::make_shared<VdelMap>(*this);  // copies chunk pointers only
  m->Push(std::move(recs));
  return m;
}

void VdelMap::Purge(uint64_t p) {
  if (p <= purged_) return;
  purged_ = p;
  chunks_.erase(std::remove_if(chunks_.begin(), chunks_.end(),
                               [&](const std::shared_ptr<const Chunk> &c) { return c->max_seq <= p; }),
                chunks_.end());
  n_ = 0;
  for (const auto &c : chunks_) n_ += c->LiveAbove(p);
}

std::shared_ptr<const VdelMap> VdelMap::Purged(uint64_t p) const {
  auto m = std::make_shared<VdelMap>(*this);
  m->Purge(p);
  return m;
}

uint64_t VdelMap::Latest(uint64_t v, uint64_t tau) const {
  uint64_t best = 0;
  for (const auto &c : chunks_) {
    if (c->min_seq > tau || c->max_seq <= best || !c->MayHold(v)) continue;
    // The last record of v with seq <= tau.
    auto it = std::upper_bound(c->recs.begin(), c->recs.end(), Record{v, tau});
    if (it == c->recs.begin()) continue;
    --it;
    if (it->first == v && it->second > purged_) best = std::max(best, it->second);
  }
  return best;
}

bool VdelMap::AnyIn(uint64_t lo, uint64_t hi) const {
  lo = std::max(lo, purged_);
  if (n_ == 0 || lo >= hi || max_seq_ <= lo) return false;
  for (const auto &c : chunks_) {
    if (c->max_seq <= lo || c->min_seq > hi) continue;
    auto it = std::upper_bound(c->seqs.begin(), c->seqs.end(), lo);
    if (it != c->seqs.end() && *it <= hi) return true;
  }
  return false;
}

void VdelMap::Records(uint64_t upto, std::vector<Record> *out) const {
  out->clear();
  for (const auto &c : chunks_)
    for (const Record &x : c->recs)
      if (x.second > purged_ && x.second <= upto) out->push_back(x);
  std::sort(out->begin(), out->end());
}

namespace {

// An operand whose seq no event listing reports: one retention folded
// (several events), or one older than retain (cut: its type's cutoff).
// Every other operand keeps its seq at the bottommost level, as
// gt_snapshot_edge_events lists it.
bool ZeroableOperand(const Entry &e, int64_t cut) { return e.ext->count > 1 || e.time < cut; }

// Where the kept versions' extras are made: p's arena, or this thread's
// own, cleared first.
ExtArena *ArenaOf(const RetainParams &p) {
  thread_local ExtArena own;
  if (p.arena != nullptr) return p.arena;
  own.Clear();
  return &own;
}

// What retaining one src's versions shares: the parameters, the output,
// the arena and the operand older ones fold into.
class Retainer {
 public:
  Retainer(const RetainParams &p, std::vector<Entry> *out) : p(p), out(out), arena_(ArenaOf(p)) {}
  // The event time below which an operand of type t folds (INT64_MIN: none).
  int64_t Cutoff(uint32_t t) const {
    if (p.watermark <= 0) return INT64_MIN;
    return p.watermark - (p.retain_us != nullptr ? p.retain_us[t] : 0);
  }
  // Appends the version (r, i) with vers.
  void Keep(const Run &r, uint64_t i, uint64_t vers) {
    AppendEntry(out, r.dst(i), vers, r.weight(i), r.time(i), r.ext(i, arena_));
  }
  // Folds the older operand (r, i) into the kept operand (*out)[at] (newer,
  // of the same stripe): its seq, payload and source position stay, the
  // rest adds up. The first fold into an operand makes it a record of its
  // own (its record may be a MemGraph's, shared), pointing to the payload
  // (whatever holds it outlives the arena's records: a MemGraph or file
  // being read, or the arena); the next ones change that record (owned_:
  // made by this retention, seen by no one else yet).
  void FoldInto(size_t at, const Run &r, uint64_t i) {
    Entry &e = (*out)[at];
    const ExtRec *x = e.ext;  // an operand's: not null
    e.weight += r.weight(i);
    e.time = std::max(e.time, r.time(i));
    if (x == owned_) {
      ExtRec *own = const_cast<ExtRec *>(x);  // made by arena_->Ref below: not const
      own->count += r.count(i);
      own->first = MinTime(own->first, r.first(i));
      return;
    }
    e.ext = owned_ = arena_->Ref(x->count + r.count(i), MinTime(x->first, r.first(i)), x->bytes(), x->len, x->pos());
  }

  const RetainParams &p;
  std::vector<Entry> *const out;

 private:
  ExtArena *const arena_;
  const ExtRec *owned_ = nullptr;
};

// The common case, and RetainVersions' rules specialised: with no
// snapshot and no vertex delete there is one stripe, so only the newest
// version of a dst is kept (with the operands below it, when it is one);
// at the bottommost level it is dropped if a tombstone, else made seq 0
// (not an operand: it keeps its seq, and an operand chain's end is
// dropped: nothing older is left).
class NewestRetention {
 public:
  explicit NewestRetention(Retainer *ret) : ret_(*ret) {}
  // Takes the next version in merge order.
  void Take(const Run &r, uint64_t i) {
    if (have_ && r.dst(i) == cur_ && VersType(r.vers(i)) == curt_) {
      if (open_) TakeOlder(r, i);
      return;
    }
    CloseChain();
    StartEdge(r, i);
  }
  // At the bottommost level an operand chain's oldest kept version is
  // made seq 0 when no event listing can name it (folded, or older than
  // retain), so that a folded store needs no version column.
  void CloseChain() {
    std::vector<Entry> &out = *ret_.out;
    if (chain_ && ret_.p.bottommost && out.size() > group_ && ZeroableOperand(out.back(), cut_))
      out.back().vers = VersTypeOnly(out.back().vers);
    chain_ = false;
  }

 private:
  // The newest version of an edge (dst, type).
  void StartEdge(const Run &r, uint64_t i) {
    uint64_t vers = r.vers(i);
    const uint32_t t = VersType(vers);
    have_ = true;
    cur_ = r.dst(i);
    curt_ = t;
    group_ = ret_.out->size();
    open_ = chain_ = r.count(i) != 0 && !VersTomb(vers);
    if (open_) {
      cut_ = ret_.Cutoff(t);
      fold_at_ = r.time(i) < cut_ ? ret_.out->size() : SIZE_MAX;
      ret_.Keep(r, i, vers);
      return;
    }
    if (ret_.p.bottommost) {
      if (VersTomb(vers)) return;
      vers = VersTypeOnly(vers);
    }
    ret_.Keep(r, i, vers);
  }
  // An older version of the edge, below an operand.
  void TakeOlder(const Run &r, uint64_t i) {
    const uint64_t vers = r.vers(i);
    if (r.count(i) == 0 || VersTomb(vers)) {
      // The fold's end: kept for what older levels hold, unless none does.
      if (!ret_.p.bottommost) ret_.Keep(r, i, vers);
      open_ = false;
      return;
    }
    if (fold_at_ != SIZE_MAX && r.time(i) < cut_) {
      ret_.FoldInto(fold_at_, r, i);
      return;
    }
    fold_at_ = r.time(i) < cut_ ? ret_.out->size() : SIZE_MAX;
    ret_.Keep(r, i, vers);
  }

  Retainer &ret_;
  bool have_ = false, open_ = false, chain_ = false;
  uint64_t cur_ = 0;
  uint32_t curt_ = 0;
  size_t fold_at_ = SIZE_MAX, group_ = 0;
  int64_t cut_ = INT64_MIN;
};

// RetainVersions with snapshot stripes, history and vertex deletes.
class StripedRetention {
 public:
  StripedRetention(Retainer *ret, uint64_t src)
      : ret_(*ret),
        p_(ret->p),
        oldest_(p_.snaps->empty() ? UINT64_MAX : p_.snaps->front()),
        clean_(VdelCleanSeq(p_)),
        dsrc_(VdelLatest(src)),
        src_last_vdel_(p_.vdel != nullptr ? p_.vdel->Latest(src, UINT64_MAX) : 0),
        group_start_(ret->out->size()) {}

  // Takes the next version in merge order.
  void Take(const Run &r, uint64_t i) {
    const uint64_t dst = r.dst(i);
    const uint64_t vers = r.vers(i);
    const uint32_t t = VersType(vers);
    if (!have_ || dst != cur_ || t != curt_) StartGroup(dst, t);
    const uint64_t seq = VersSeq(vers);
    // A version above the history floor is a stripe of its own (a snapshot
    // at its seq reads it); one at or below it is in its snapshot stripe.
    const bool own = p_.history && seq > p_.history_floor;
    const std::vector<uint64_t> &snaps = *p_.snaps;
    size_t stripe =
        own ? SIZE_MAX - 1 : static_cast<size_t>(std::lower_bound(snaps.begin(), snaps.end(), seq) - snaps.begin());
    const bool operand = r.count(i) != 0 && !VersTomb(vers);
    if (stripe != last_stripe_ || own) {
      last_stripe_ = stripe;
      open_ = true;
      fold_at_ = SIZE_MAX;
    } else if (!open_) {
      return;  // superseded within its stripe
    }
    // Killed by a durable vertex delete that every snapshot already sees
    // (d <= clean <= oldest): invisible to all readers, and every older
    // version is killed too.
    if (seq < std::max(dsrc_, ddst_)) return;
    if (!operand) {
      open_ = false;  // the newest of its stripe, or the end of its stripe's fold
      fold_at_ = SIZE_MAX;
      ret_.Keep(r, i, vers);
      return;
    }
    const bool old = !own && r.time(i) < cut_ && seq >= no_fold_below_;
    if (old && fold_at_ != SIZE_MAX) {
      ret_.FoldInto(fold_at_, r, i);
      return;
    }
    fold_at_ = old ? ret_.out->size() : SIZE_MAX;
    ret_.Keep(r, i, vers);
  }

  // Ends the edge's group: at the bottommost level nothing older exists
  // below, so a tombstone that is the oldest kept version hides nothing,
  // and neither does one left oldest after that; the oldest left is made
  // seq 0 when every snapshot sees it and no event listing can name it.
  void CloseGroup() {
    std::vector<Entry> &out = *ret_.out;
    if (!have_ || out.size() == group_start_ || !p_.bottommost) return;
    while (out.size() > group_start_ && VersTomb(out.back().vers)) out.pop_back();
    if (out.size() == group_start_) return;
    Entry &last = out.back();
    if (VersSeq(last.vers) <= oldest_ && src_last_vdel_ == 0 && dst_last_vdel_ == 0 &&
        (EntryCount(last) == 0 || ZeroableOperand(last, cut_)))
      last.vers = VersTypeOnly(last.vers);
  }

 private:
  // The newest vertex delete of v every reader sees (0: none).
  uint64_t VdelLatest(uint64_t v) const {
    if (p_.vdel == nullptr || p_.vdel->empty()) return 0;
    return p_.vdel->Latest(v, clean_);
  }
  // The first version of the edge (dst, t).
  void StartGroup(uint64_t dst, uint32_t t) {
    CloseGroup();
    const bool same_dst = have_ && dst == cur_;
    have_ = true;
    cur_ = dst;
    curt_ = t;
    group_start_ = ret_.out->size();
    last_stripe_ = SIZE_MAX;
    if (!same_dst) {
      ddst_ = VdelLatest(dst);
      dst_last_vdel_ = p_.vdel != nullptr ? p_.vdel->Latest(dst, UINT64_MAX) : 0;
    }
    cut_ = ret_.Cutoff(t);
    no_fold_below_ = std::max(src_last_vdel_, dst_last_vdel_);
    if (no_fold_below_ <= clean_) no_fold_below_ = 0;
  }

  Retainer &ret_;
  const RetainParams &p_;
  const uint64_t oldest_, clean_;
  const uint64_t dsrc_;           // the newest delete of src every reader sees
  const uint64_t src_last_vdel_;  // the newest live delete of src (any seq; 0: none)
  size_t group_start_;
  bool have_ = false;
  uint64_t cur_ = 0;
  uint32_t curt_ = 0;
  size_t last_stripe_ = SIZE_MAX;
  uint64_t ddst_ = 0;           // as dsrc_, of dst
  uint64_t dst_last_vdel_ = 0;  // as src_last_vdel_, of dst
  // Operands below this seq do not fold: the newest delete of src or dst
  // that some reader does not see yet (above clean), which a fold must not
  // straddle (readers on either side of it fold differently). A delete at
  // or below clean is seen by every reader, and what it hides is dropped
  // here: nothing is left below it to straddle.
  uint64_t no_fold_below_ = 0;
  bool open_ = false;          // every version kept so far in this stripe is an operand
  size_t fold_at_ = SIZE_MAX;  // the kept operand of this stripe older ones fold into
  int64_t cut_ = INT64_MIN;
};

}  // namespace

// For each edge (dst, type), versions arrive newest first. A version is kept
// iff it is the newest in its snapshot stripe (stripe = index of the first
// pinned snapshot >= seq; the newest stripe has no snapshot above it), or
// every version above it in its stripe is an operand (a reader folds
// through them to it; merge.h). At the bottommost level the oldest kept
// version of an edge is dropped if it is a tombstone, and otherwise (unless
// an operand whose seq an event listing reports: ZeroableOperand) has its
// seq set to 0 (its type kept) when every snapshot can see it, so that a
// fully compacted and folded file needs no version column.

void RetainVersions(const std::vector<Run> &runs, uint64_t src, const RetainParams &p, std::vector<Entry> *out) {
  Retainer ret(p, out);
  if (p.snaps->empty() && (p.vdel == nullptr || p.vdel->empty())) {
    NewestRetention newest(&ret);
    MergeRunsAt(runs, [&](const Run &r, uint64_t i) { newest.Take(r, i); });
    newest.CloseChain();
    return;
  }
  StripedRetention striped(&ret, src);
  MergeRunsAt(runs, [&](const Run &r, uint64_t i) { striped.Take(r, i); });
  striped.CloseGroup();
}

}  // namespace gt
