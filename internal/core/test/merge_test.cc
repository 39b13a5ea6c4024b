// merge_test.cc -- merging and retention of one vertex's versions (merge.h):
// gt::MergeRuns order, gt::VisibleVersions and gt::RetainVersions checked
// against a tiny brute-force reference. Random versions of one vertex are
// spread over 1-4 runs (random seqs, tombstones, seq-0 compacted versions),
// with random pinned snapshot lists, random vertex-delete maps and durable
// seqs. For every pinned snapshot tau and for tau = infinity, the visible set
// computed from RetainVersions' output must equal the visible set of the full
// input, for bottommost false and true. Also: the output is a valid run (dst
// asc, seq desc), a subsequence of the input (bottommost may only zero the seq
// of a live version every snapshot sees), and with bottommost=true no
// tombstone is the oldest kept version of a dst.
#include "merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

using gt::Entry;
using gt::MakeVers;
using gt::RetainParams;
using gt::Run;
using gt::VdelMap;
using gt::VersSeq;
using gt::VersTomb;

constexpr uint64_t kInf = UINT64_MAX;

using Visible = std::vector<std::pair<uint64_t, double>>;   // (dst, weight), dst ascending
using VdelRef = std::map<uint64_t, std::vector<uint64_t>>;  // vertex -> ascending delete seqs

Entry E(uint64_t dst, uint64_t seq, bool tomb = false, double w = 1.0) {
  return Entry{dst, MakeVers(seq, tomb), tomb ? 0.0 : w};
}

void SortRun(std::vector<Entry> *v) {
  std::stable_sort(v->begin(), v->end(), [](const Entry &a, const Entry &b) {
    if (a.dst != b.dst) return a.dst < b.dst;
    return VersSeq(a.vers) > VersSeq(b.vers);
  });
}

std::vector<Run> Runs(const std::vector<std::vector<Entry>> &rs) {
  std::vector<Run> out;
  for (const auto &r : rs) out.push_back(Run{r.data(), nullptr, 0, r.size()});
  return out;
}

VdelMap MakeVdel(const VdelRef &ref) {
  VdelMap m;
  for (const auto &kv : ref)
    for (uint64_t s : kv.second) m.Add(kv.first, s);
  return m;
}

// ---- brute-force reference, written from merge.h's contract only ----

uint64_t RefLatest(const VdelRef &vdel, uint64_t v, uint64_t tau) {
  auto it = vdel.find(v);
  if (it == vdel.end()) return 0;
  uint64_t best = 0;
  for (uint64_t s : it->second)
    if (s <= tau) best = std::max(best, s);
  return best;
}

// For each dst, the deciding version at tau is the one with the largest
// seq <= tau; ties go to the lower run index, then the earlier position.
Visible RefVisible(const std::vector<std::vector<Entry>> &runs, uint64_t src, uint64_t tau, const VdelRef &vdel) {
  struct Cand {
    Entry e;
    size_t run, pos;
  };
  std::map<uint64_t, Cand> best;
  for (size_t r = 0; r < runs.size(); r++) {
    for (size_t i = 0; i < runs[r].size(); i++) {
      const Entry &e = runs[r][i];
      const uint64_t s = VersSeq(e.vers);
      if (s > tau) continue;
      auto it = best.find(e.dst);
      if (it == best.end()) {
        best.emplace(e.dst, Cand{e, r, i});
        continue;
      }
      const Cand &c = it->second;
      const uint64_t cs = VersSeq(c.e.vers);
      if (s > cs || (s == cs && (r < c.run || (r == c.run && i < c.pos)))) it->second = Cand{e, r, i};
    }
  }
  Visible out;
  for (const auto &kv : best) {
    const Entry &e = kv.second.e;
    const uint64_t s = VersSeq(e.vers);
    if (VersTomb(e.vers)) continue;
    if (s < RefLatest(vdel, src, tau) || s < RefLatest(vdel, e.dst, tau)) continue;
    out.emplace_back(e.dst, e.weight);
  }
  return out;
}

Visible CoreVisible(const std::vector<std::vector<Entry>> &runs, uint64_t src, uint64_t tau, const VdelMap &vdel) {
  Visible out;
  gt::VisibleVersions(Runs(runs), src, tau, vdel, nullptr,
                      [&](uint64_t d, uint32_t, double w, int64_t) { out.emplace_back(d, w); });
  return out;
}

std::string Str(const Visible &v) {
  std::ostringstream o;
  o << "{";
  for (size_t i = 0; i < v.size(); i++) o << (i ? " " : "") << v[i].first << ":" << v[i].second;
  return o.str() + "}";
}

std::string Str(const std::vector<Entry> &run) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < run.size(); i++)
    o << (i ? " " : "") << run[i].dst << "@" << VersSeq(run[i].vers) << (VersTomb(run[i].vers) ? "T" : "") << "w"
      << run[i].weight;
  return o.str() + "]";
}

// ---- random trials ----

struct Trial {
  uint64_t src = 3;
  std::vector<std::vector<Entry>> runs;
  std::vector<uint64_t> snaps;  // ascending, unique
  VdelRef vdel;
  uint64_t durable = 0;
  bool null_vdel = false;

  std::string Describe() const {
    std::ostringstream o;
    o << "src=" << src << " durable=" << durable << (null_vdel ? " vdel=null" : "") << "\n";
    for (size_t r = 0; r < runs.size(); r++) o << "  run" << r << " " << Str(runs[r]) << "\n";
    o << "  snaps=[";
    for (size_t i = 0; i < snaps.size(); i++) o << (i ? " " : "") << snaps[i];
    o << "]\n  vdel={";
    for (const auto &kv : vdel) {
      o << " " << kv.first << ":";
      for (uint64_t s : kv.second) o << s << ",";
    }
    return o.str() + " }";
  }
};

Trial RandomTrial(std::mt19937_64 &rng) {
  auto U = [&](uint64_t n) { return rng() % n; };
  Trial t;
  t.src = 3;
  const uint64_t ndst = 2 + U(5);  // dsts 0..ndst-1; 3 (= src) is among them when ndst > 3
  const uint64_t maxseq = 4 + U(28);
  const size_t nruns = 1 + U(4);
  t.runs.resize(nruns);
  for (size_t r = 0; r < nruns; r++) {
    const size_t n = U(9);
    for (size_t i = 0; i < n; i++) {
      uint64_t seq = 1 + U(maxseq);
      // The deepest run may hold compacted (seq 0) versions.
      if (r + 1 == nruns && nruns > 1 && U(4) == 0) seq = 0;
      const bool tomb = U(4) == 0;
      t.runs[r].push_back(E(U(ndst), seq, tomb, 0.5 * static_cast<double>(1 + U(8))));
    }
    SortRun(&t.runs[r]);
  }
  const size_t nsnaps = U(4);
  for (size_t i = 0; i < nsnaps; i++) t.snaps.push_back(1 + U(maxseq + 3));
  std::sort(t.snaps.begin(), t.snaps.end());
  t.snaps.erase(std::unique(t.snaps.begin(), t.snaps.end()), t.snaps.end());
  if (U(5) == 0) {
    t.null_vdel = true;
  } else {
    const size_t ndel = U(3) == 0 ? 0 : U(4);
    for (size_t i = 0; i < ndel; i++) {
      uint64_t v = U(3) == 0 ? t.src : U(ndst);
      t.vdel[v].push_back(1 + U(maxseq + 3));
    }
    for (auto &kv : t.vdel) {
      std::sort(kv.second.begin(), kv.second.end());
      kv.second.erase(std::unique(kv.second.begin(), kv.second.end()), kv.second.end());
    }
  }
  t.durable = U(maxseq + 5);
  return t;
}

// The merge order of the input (what RetainVersions walks), via the reference
// rule: dst asc, seq desc, run asc, position asc.
std::vector<Entry> RefMergeOrder(const std::vector<std::vector<Entry>> &runs) {
  struct K {
    Entry e;
    size_t run, pos;
  };
  std::vector<K> all;
  for (size_t r = 0; r < runs.size(); r++)
    for (size_t i = 0; i < runs[r].size(); i++) all.push_back(K{runs[r][i], r, i});
  std::sort(all.begin(), all.end(), [](const K &a, const K &b) {
    if (a.e.dst != b.e.dst) return a.e.dst < b.e.dst;
    if (VersSeq(a.e.vers) != VersSeq(b.e.vers)) return VersSeq(a.e.vers) > VersSeq(b.e.vers);
    if (a.run != b.run) return a.run < b.run;
    return a.pos < b.pos;
  });
  std::vector<Entry> out;
  for (const K &k : all) out.push_back(k.e);
  return out;
}

bool SameEntry(const Entry &a, const Entry &b) { return a.dst == b.dst && a.vers == b.vers && a.weight == b.weight; }

uint64_t Seed() { return gt_test::SeedOr(20240601); }

int Trials() {
  const char *s = std::getenv("GT_MERGE_TRIALS");
  return s ? std::atoi(s) : 30000;
}

// ---------------------------------------------------------------------------

TEST(MergeRunsTest, OrderAndTies) {
  // run0 has priority; equal (dst, seq) across runs: run0's first.
  std::vector<std::vector<Entry>> rs = {
      {E(1, 5, false, 10), E(2, 3, false, 11)},
      {E(1, 7, false, 20), E(1, 5, false, 21), E(3, 1, false, 22)},
      {E(0, 0, false, 30), E(2, 3, true), E(2, 0, false, 31)},
  };
  std::vector<Entry> got;
  gt::MergeRuns(Runs(rs), [&](uint64_t d, uint64_t v, double w, int64_t tm) { got.push_back(Entry{d, v, w, tm}); });
  std::vector<Entry> want = RefMergeOrder(rs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_TRUE(SameEntry(got[i], want[i])) << i << " " << Str(got);
  EXPECT_EQ(Str(got), "[0@0w30 1@7w20 1@5w10 1@5w21 2@3w11 2@3Tw0 2@0w31 3@1w22]");
}

// One long run beside short ones (a hub's cache and the versions written
// since), and runs of equal length, with many equal (dst, seq) across runs:
// MergeRuns, which runs on in one run until it passes the second head,
// against the reference order.
TEST(MergeRunsTest, LongAndShortRunsRandomized) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 3000; trial++) {
    const size_t nruns = 2 + rng() % 4;
    std::vector<std::vector<Entry>> rs(nruns);
    for (size_t k = 0; k < nruns; k++) {
      const size_t len = k == 0 && trial % 2 == 0 ? rng() % 400 : rng() % 12;
      const uint64_t dsts = 1 + rng() % 60;
      for (size_t i = 0; i < len; i++)
        rs[k].push_back(E(rng() % dsts, rng() % 6, rng() % 4 == 0, static_cast<double>(k * 1000 + i)));
      SortRun(&rs[k]);
    }
    std::vector<Entry> got;
    gt::MergeRuns(Runs(rs), [&](uint64_t d, uint64_t v, double w, int64_t tm) { got.push_back(Entry{d, v, w, tm}); });
    const std::vector<Entry> want = RefMergeOrder(rs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) ASSERT_TRUE(SameEntry(got[i], want[i])) << "trial " << trial << " at " << i;
  }
}

TEST(VisibleVersionsTest, Examples) {
  VdelRef ref = {{7, {10}}};
  VdelMap vdel = MakeVdel(ref);
  std::vector<std::vector<Entry>> rs = {
      {E(1, 12, true), E(2, 11, false, 2.0), E(7, 12, false, 3.0)},
      {E(1, 5, false, 1.5), E(2, 4), E(7, 8, false, 4.0)},
  };
  // tau 4: dst1 none, dst2 seq4, dst7 none.
  EXPECT_EQ(Str(CoreVisible(rs, 3, 4, vdel)), "{2:1}");
  // tau 9: dst1 seq5, dst2 seq4, dst7 seq8 (vertex 7 deleted only at 10).
  EXPECT_EQ(Str(CoreVisible(rs, 3, 9, vdel)), "{1:1.5 2:1 7:4}");
  // tau 10: the delete of 7 kills seq 8.
  EXPECT_EQ(Str(CoreVisible(rs, 3, 10, vdel)), "{1:1.5 2:1}");
  // tau inf: dst1 tombstoned at 12, dst2 seq 11, dst7 re-added at 12.
  EXPECT_EQ(Str(CoreVisible(rs, 3, kInf, vdel)), "{2:2 7:3}");
  // A delete of the source kills everything older than it.
  VdelMap src_del = MakeVdel({{3, {11}}});
  EXPECT_EQ(Str(CoreVisible(rs, 3, kInf, src_del)), "{2:2 7:3}");
  EXPECT_EQ(Str(CoreVisible(rs, 3, 11, src_del)), "{2:2}");
  EXPECT_EQ(Str(CoreVisible(rs, 3, 10, src_del)), "{1:1.5 2:1 7:4}");
}

// The main property: retention never changes what a pinned snapshot (or a
// future reader) sees, and VisibleVersions agrees with the reference.
TEST(RetainVersionsTest, PreservesVisibilityRandomized) {
  std::mt19937_64 rng(Seed());
  const int trials = Trials();
  int failures = 0;
  uint64_t kept_total = 0, in_total = 0, zeroed = 0;
  for (int n = 0; n < trials && failures < 5; n++) {
    const Trial t = RandomTrial(rng);
    const VdelMap vdel = MakeVdel(t.vdel);
    const std::vector<gt::Run> runs = Runs(t.runs);
    std::vector<uint64_t> taus = t.snaps;
    taus.push_back(kInf);
    const std::vector<Entry> merged = RefMergeOrder(t.runs);
    for (bool bottommost : {false, true}) {
      RetainParams p{&t.snaps, t.null_vdel ? nullptr : &vdel, t.durable, bottommost};
      std::vector<Entry> out = {E(99, 99)};  // RetainVersions appends
      gt::RetainVersions(runs, t.src, p, &out);
      out.erase(out.begin());
      in_total += merged.size();
      kept_total += out.size();
      std::ostringstream why;
      // A valid run, and a subsequence of the merge order (zeroing allowed
      // only at bottommost, only for live versions every snapshot sees).
      size_t j = 0;
      for (size_t i = 0; i < out.size(); i++) {
        if (i > 0 && (out[i - 1].dst > out[i].dst ||
                      (out[i - 1].dst == out[i].dst && VersSeq(out[i - 1].vers) < VersSeq(out[i].vers))))
          why << "output not sorted at " << i << "\n";
        while (j < merged.size() && !SameEntry(merged[j], out[i]) &&
               !(bottommost && out[i].vers == 0 && merged[j].dst == out[i].dst && merged[j].weight == out[i].weight &&
                 !VersTomb(merged[j].vers) && (t.snaps.empty() || VersSeq(merged[j].vers) <= t.snaps.front())))
          j++;
        if (j == merged.size()) {
          why << "output entry " << i << " is not from the input in order\n";
          break;
        }
        if (out[i].vers == 0 && merged[j].vers != 0) zeroed++;
        j++;
      }
      const VdelMap empty;
      const VdelMap &vis_vdel = t.null_vdel ? empty : vdel;
      const VdelRef empty_ref;
      const VdelRef &vis_ref = t.null_vdel ? empty_ref : t.vdel;
      for (uint64_t tau : taus) {
        const Visible want = RefVisible(t.runs, t.src, tau, vis_ref);
        const Visible core_full = CoreVisible(t.runs, t.src, tau, vis_vdel);
        const Visible core_kept = CoreVisible({out}, t.src, tau, vis_vdel);
        const Visible ref_kept = RefVisible({out}, t.src, tau, vis_ref);
        if (core_full != want)
          why << "VisibleVersions(input) at tau " << tau << " = " << Str(core_full) << ", reference " << Str(want)
              << "\n";
        if (core_kept != want || ref_kept != want)
          why << "tau " << tau << ": visible from retained " << Str(core_kept) << " (reference " << Str(ref_kept)
              << "), from input " << Str(want) << "\n";
      }
      if (!why.str().empty()) {
        failures++;
        ADD_FAILURE() << "trial " << n << " bottommost=" << bottommost << "\n"
                      << t.Describe() << "\n  retained " << Str(out) << "\n"
                      << why.str();
      }
    }
  }
  // The test must actually exercise retention.
  EXPECT_LT(kept_total, in_total);
  EXPECT_GT(zeroed, 0u);
}

// Bottommost: nothing older exists below the output, so a tombstone that is
// the oldest kept version of its dst hides nothing and must have been dropped.
TEST(RetainVersionsTest, BottommostLeavesNoTombstoneAsOldestVersionRandomized) {
  std::mt19937_64 rng(Seed() + 1);
  const int trials = Trials();
  int failures = 0;
  for (int n = 0; n < trials && failures < 3; n++) {
    const Trial t = RandomTrial(rng);
    const VdelMap vdel = MakeVdel(t.vdel);
    RetainParams p{&t.snaps, t.null_vdel ? nullptr : &vdel, t.durable, true};
    std::vector<Entry> out;
    gt::RetainVersions(Runs(t.runs), t.src, p, &out);
    for (size_t i = 0; i < out.size(); i++) {
      const bool oldest_of_dst = i + 1 == out.size() || out[i + 1].dst != out[i].dst;
      if (oldest_of_dst && VersTomb(out[i].vers)) {
        failures++;
        ADD_FAILURE() << "trial " << n << ": tombstone " << out[i].dst << "@" << VersSeq(out[i].vers)
                      << " is the oldest kept version at bottommost\n"
                      << t.Describe() << "\n  retained " << Str(out);
        break;
      }
    }
  }
}

// Minimal deterministic case of the property above: two tombstones of one
// dst in different snapshot stripes. Both are invisible to every reader
// (snapshot 20 sees T@15, later readers see T@30), yet only the older one is
// dropped and T@30 stays as the oldest version in the bottommost level.
TEST(RetainVersionsTest, BottommostDropsConsecutiveDeadTombstones) {
  std::vector<std::vector<Entry>> rs = {{E(1, 30, true), E(1, 15, true), E(2, 12, false, 2.0)}};
  std::vector<uint64_t> snaps = {20};
  RetainParams p{&snaps, nullptr, 0, true};
  std::vector<Entry> out;
  gt::RetainVersions(Runs(rs), 3, p, &out);
  EXPECT_EQ(Str(out), "[2@0w2]");
  for (uint64_t tau : {uint64_t(20), kInf}) EXPECT_EQ(Str(CoreVisible({out}, 3, tau, VdelMap())), "{2:2}");
}

// Deterministic retention examples (documented behavior of merge.cc).
TEST(RetainVersionsTest, Examples) {
  struct Case {
    const char *name;
    std::vector<std::vector<Entry>> runs;
    std::vector<uint64_t> snaps;
    VdelRef vdel;
    uint64_t durable;
    bool bottommost;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"newest_only_without_snapshots", {{E(1, 9, false, 2), E(1, 5)}, {E(1, 3)}}, {}, {}, 0, false, "[1@9w2]"},
      {"one_per_snapshot_stripe",
       {{E(1, 9, false, 2), E(1, 5), E(1, 4, false, 3), E(1, 1)}},
       {4, 7},
       {},
       0,
       false,
       "[1@9w2 1@5w1 1@4w3]"},
      {"tombstone_kept_when_not_bottommost", {{E(1, 9, true)}, {E(1, 2)}}, {}, {}, 0, false, "[1@9Tw0]"},
      {"tombstone_dropped_at_bottommost", {{E(1, 9, true)}, {E(1, 2)}, {E(2, 4)}}, {}, {}, 0, true, "[2@0w1]"},
      {"seq_zeroed_when_every_snapshot_sees_it", {{E(1, 9, false, 2), E(1, 3)}}, {5}, {}, 0, true, "[1@9w2 1@0w1]"},
      {"seq_kept_when_a_snapshot_predates_it", {{E(1, 9, false, 2)}}, {5}, {}, 0, true, "[1@9w2]"},
      {"seq_kept_when_vertex_has_a_delete", {{E(1, 9)}}, {}, {{3, {4}}}, 10, true, "[1@9w1]"},
      {"killed_by_durable_src_delete", {{E(1, 3), E(2, 6)}}, {}, {{3, {5}}}, 5, false, "[2@6w1]"},
      {"not_killed_by_undurable_delete", {{E(1, 3), E(2, 6)}}, {}, {{3, {5}}}, 4, false, "[1@3w1 2@6w1]"},
      {"not_killed_while_older_snapshot_pinned", {{E(1, 3)}}, {4}, {{1, {5}}}, 9, false, "[1@3w1]"},
      {"killed_by_durable_dst_delete", {{E(1, 3), E(2, 6)}}, {7}, {{1, {5}}}, 9, false, "[2@6w1]"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    VdelMap vdel = MakeVdel(c.vdel);
    RetainParams p{&c.snaps, &vdel, c.durable, c.bottommost};
    std::vector<Entry> out;
    gt::RetainVersions(Runs(c.runs), 3, p, &out);
    EXPECT_EQ(Str(out), c.want);
  }
}

}  // namespace

namespace {

// VdelMap, the persistent vertex-delete map, against a std::multimap
// reference: random batches of records (increasing seqs, as Apply makes
// them; repeated vertices), random purges, with every earlier map kept and
// checked again (an edit never changes a shared map).
TEST(VdelMapTest, PersistentAgainstReferenceRandomized) {
  std::mt19937_64 rng(gt_test::SeedOr(7));
  using Ref = std::vector<VdelMap::Record>;  // live records
  auto check = [&](const VdelMap &m, const Ref &ref, uint64_t top) {
    Ref sorted = ref;
    std::sort(sorted.begin(), sorted.end());
    Ref got{{1, 1}};  // Records replaces what *out held
    m.Records(UINT64_MAX, &got);
    ASSERT_EQ(got, sorted);
    const uint64_t upto = rng() % (top + 2);
    Ref cut;
    for (const auto &r : sorted)
      if (r.second <= upto) cut.push_back(r);
    m.Records(upto, &got);
    ASSERT_EQ(got, cut) << "Records up to seq " << upto;
    ASSERT_EQ(m.size(), ref.size());
    ASSERT_EQ(m.empty(), ref.empty());
    uint64_t mx = 0;
    for (const auto &r : ref) mx = std::max(mx, r.second);
    ASSERT_EQ(m.max_seq(), mx);
    for (int k = 0; k < 20; k++) {
      const uint64_t v = rng() % 40, tau = rng() % (top + 2);
      uint64_t want = 0;
      bool has = false;
      for (const auto &r : ref) {
        if (r.first != v) continue;
        has = true;
        if (r.second <= tau) want = std::max(want, r.second);
      }
      ASSERT_EQ(m.Latest(v, tau), want) << "v=" << v << " tau=" << tau;
      ASSERT_EQ(m.Has(v), has) << "v=" << v;
      const uint64_t lo = rng() % (top + 2), hi = rng() % (top + 2);
      bool any = false;
      for (const auto &r : ref) any = any || (r.second > lo && r.second <= hi);
      ASSERT_EQ(m.AnyIn(lo, hi), any) << "lo=" << lo << " hi=" << hi;
    }
  };
  for (int round = 0; round < 20; round++) {
    std::vector<std::pair<std::shared_ptr<const VdelMap>, Ref>> history;
    auto m = std::make_shared<const VdelMap>();
    Ref ref;
    uint64_t seq = 0, purged = 0;
    for (int step = 0; step < 300; step++) {
      if (rng() % 8 == 0 && seq > purged) {
        purged += 1 + rng() % (seq - purged);
        m = m->Purged(purged);
        ref.erase(std::remove_if(ref.begin(), ref.end(), [&](const VdelMap::Record &r) { return r.second <= purged; }),
                  ref.end());
      } else {
        seq += 1 + rng() % 3;
        std::vector<VdelMap::Record> recs;
        const size_t n = rng() % 4 == 0 ? 1 + rng() % 60 : 1 + rng() % 3;
        for (size_t i = 0; i < n; i++) recs.emplace_back(rng() % 40, seq);
        ref.insert(ref.end(), recs.begin(), recs.end());
        m = m->With(std::move(recs));
      }
      history.emplace_back(m, ref);
      ASSERT_NO_FATAL_FAILURE(check(*m, ref, seq));
    }
    // Chunks stay few: O(log n) of the records ever added.
    EXPECT_LE(m->chunks(), 12u);
    for (const auto &h : history) ASSERT_NO_FATAL_FAILURE(check(*h.first, h.second, seq));
  }
}

}  // namespace
