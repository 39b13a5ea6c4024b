#include "merge.h"

namespace gt {

// For each dst, versions arrive newest first. A version is kept iff it is the
// newest in its snapshot stripe (stripe = index of the first pinned snapshot
// >= seq; the newest stripe has no snapshot above it). At the bottommost
// level the oldest kept version of a dst is dropped if it is a tombstone, and
// otherwise has its seq set to 0 when every snapshot can see it, so that a
// fully compacted file needs no version column.
void RetainVersions(const std::vector<Run> &runs, uint64_t src, const RetainParams &p, std::vector<Entry> *out) {
  const std::vector<uint64_t> &snaps = *p.snaps;
  if (snaps.empty() && (p.vdel == nullptr || p.vdel->empty())) {
    // The common case, and the same rules specialised: with no snapshot
    // there is one stripe, so only the newest version of a dst is kept; at
    // the bottommost level it is dropped if a tombstone, else made seq 0.
    bool have = false;
    uint64_t cur = 0;
    MergeRuns(runs, [&](uint64_t dst, uint64_t vers, double w) {
      if (have && dst == cur) return;
      have = true;
      cur = dst;
      if (p.bottommost) {
        if (VersTomb(vers)) return;
        vers = 0;
      }
      out->push_back(Entry{dst, vers, w});
    });
    return;
  }
  const uint64_t oldest = snaps.empty() ? UINT64_MAX : snaps.front();
  auto vdel_latest = [&](uint64_t v) -> uint64_t {
    if (p.vdel == nullptr || p.vdel->empty()) return 0;
    return p.vdel->Latest(v, p.durable_seq);
  };
  const uint64_t dsrc = vdel_latest(src);
  const bool src_has_vdel = p.vdel != nullptr && p.vdel->Has(src);

  size_t group_start = out->size();
  bool have = false;
  uint64_t cur = 0;
  size_t last_stripe = SIZE_MAX;
  uint64_t ddst = 0;
  bool dst_has_vdel = false;

  auto close_group = [&]() {
    if (!have || out->size() == group_start || !p.bottommost) return;
    // Nothing older exists below: a tombstone that is the oldest kept
    // version hides nothing, and neither does one left oldest after that.
    while (out->size() > group_start && VersTomb(out->back().vers)) out->pop_back();
    if (out->size() == group_start) return;
    Entry &last = out->back();
    if (VersSeq(last.vers) <= oldest && !src_has_vdel && !dst_has_vdel) last.vers = 0;
  };

  MergeRuns(runs, [&](uint64_t dst, uint64_t vers, double w) {
    if (!have || dst != cur) {
      close_group();
      have = true;
      cur = dst;
      group_start = out->size();
      last_stripe = SIZE_MAX;
      ddst = vdel_latest(dst);
      dst_has_vdel = p.vdel != nullptr && p.vdel->Has(dst);
    }
    const uint64_t seq = VersSeq(vers);
    size_t stripe = static_cast<size_t>(std::lower_bound(snaps.begin(), snaps.end(), seq) - snaps.begin());
    if (stripe == last_stripe) return;  // superseded within its stripe
    last_stripe = stripe;
    // Killed by a durable vertex delete that every snapshot already sees:
    // invisible to all readers, and every older version is killed too.
    const uint64_t d = std::max(dsrc, ddst);
    if (seq < d && oldest >= d) return;
    out->push_back(Entry{dst, vers, w});
  });
  close_group();
}

}  // namespace gt
