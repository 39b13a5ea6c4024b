// fold_test.cc -- event operands (issue 42): the fold of reads
// (gt::VisibleEdges, gt::EdgeOperands) and the retention of flush and
// compaction (gt::RetainVersions) checked against a brute-force reference
// written from merge.h's and graphtide.h's contract only.
//
// Random versions of one vertex (replace upserts, operands, tombstones,
// several ops of one batch, two types, two dsts) are spread over 1-3 runs
// by seq range (newer runs hold newer seqs, as in the LSM), with random
// pinned snapshots, history floors, vertex deletes, watermarks and per-type
// retains. For every seq a reader may pin (each snapshot, each seq above
// the history floor, the newest), the fold (count, sum, first, last,
// payload) of every edge must be the reference's on the input, and the
// same on RetainVersions' output (the INVARIANT of merge.h); the events
// within retain must still be listed one by one, and those outside may be
// folded only into operands of several events.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "merge.h"
#include "test_util.h"

namespace {

using gt::Entry;
using gt::ExtArena;
using gt::MakeVers;
using gt::RetainParams;
using gt::Run;
using gt::VdelMap;
using gt::VersSeq;
using gt::VersTomb;
using gt::VersType;

constexpr uint64_t kInf = UINT64_MAX;
constexpr uint64_t kSrc = 7;

// One version as the reference sees it.
struct Ver {
  uint64_t dst = 0;
  uint32_t type = 0;
  uint64_t seq = 0;
  bool tomb = false;
  uint64_t count = 0;  // 0: replace
  double weight = 0;
  int64_t time = 0;
  int64_t first = 0;
  std::string payload;
};

Ver FromEntry(const Entry &e) {
  Ver v;
  v.dst = e.dst;
  v.type = VersType(e.vers);
  v.seq = VersSeq(e.vers);
  v.tomb = VersTomb(e.vers);
  v.weight = e.weight;
  v.time = e.time;
  if (e.ext != nullptr) {
    v.count = e.ext->count;
    v.first = e.ext->first;
    v.payload.assign(reinterpret_cast<const char *>(e.ext->bytes()), e.ext->len);
  }
  return v;
}

using VdelRef = std::map<uint64_t, std::vector<uint64_t>>;

uint64_t RefLatest(const VdelRef &vdel, uint64_t v, uint64_t tau) {
  auto it = vdel.find(v);
  if (it == vdel.end()) return 0;
  uint64_t best = 0;
  for (uint64_t s : it->second)
    if (s <= tau) best = std::max(best, s);
  return best;
}

// An edge as a read returns it.
struct Edge {
  uint64_t count = 0;
  double weight = 0;
  int64_t time = 0, first = 0;
  std::string payload;
  bool operator==(const Edge &o) const {
    return std::tie(count, weight, time, first, payload) == std::tie(o.count, o.weight, o.time, o.first, o.payload);
  }
};
using Key = std::pair<uint64_t, uint32_t>;  // (dst, type)
using Edges = std::map<Key, Edge>;

std::string Str(const Edges &es) {
  std::ostringstream o;
  for (const auto &kv : es)
    o << "(" << kv.first.first << "," << kv.first.second << ")=c" << kv.second.count << " w" << kv.second.weight << " t"
      << kv.second.time << " f" << kv.second.first << " p'" << kv.second.payload << "' ";
  return o.str();
}

// The groups of vs (every version of an edge, newest first, as given).
std::map<Key, std::vector<Ver>> Groups(const std::vector<Ver> &vs) {
  std::map<Key, std::vector<Ver>> g;
  for (const Ver &v : vs) g[{v.dst, v.type}].push_back(v);
  return g;
}

// The contract: the first version with seq <= tau decides; hidden when a
// tombstone or older than a vertex delete of src or dst visible at tau;
// an operand folds the older visible operands while there are some.
Edges RefFold(const std::vector<Ver> &newest_first, uint64_t tau, const VdelRef &vdel) {
  Edges out;
  for (const auto &kv : Groups(newest_first)) {
    const std::vector<Ver> &g = kv.second;
    auto hidden = [&](const Ver &v) {
      return v.tomb || v.seq < RefLatest(vdel, kSrc, tau) || v.seq < RefLatest(vdel, v.dst, tau);
    };
    size_t i = 0;
    while (i < g.size() && g[i].seq > tau) i++;
    if (i == g.size() || hidden(g[i])) continue;
    Edge e;
    e.count = g[i].count;
    e.weight = g[i].weight;
    e.time = g[i].time;
    e.first = g[i].first;
    e.payload = g[i].payload;
    if (g[i].count != 0) {
      for (size_t j = i + 1; j < g.size() && g[j].count != 0 && !hidden(g[j]); j++) {
        e.count += g[j].count;
        e.weight += g[j].weight;
        e.time = std::max(e.time, g[j].time);
        e.first = gt::MinTime(e.first, g[j].first);
      }
    }
    out[kv.first] = e;
  }
  return out;
}

// The events (operands of one event) of every edge's fold at tau with time
// >= since: (key, seq, time, weight, payload), newest first.
using Ev = std::tuple<uint64_t, uint32_t, uint64_t, int64_t, double, std::string>;
std::vector<Ev> RefEvents(const std::vector<Ver> &newest_first, uint64_t tau, const VdelRef &vdel,
                          const std::vector<int64_t> &since) {
  std::vector<Ev> out;
  for (const auto &kv : Groups(newest_first)) {
    const std::vector<Ver> &g = kv.second;
    auto hidden = [&](const Ver &v) {
      return v.tomb || v.seq < RefLatest(vdel, kSrc, tau) || v.seq < RefLatest(vdel, v.dst, tau);
    };
    size_t i = 0;
    while (i < g.size() && g[i].seq > tau) i++;
    for (; i < g.size() && g[i].count != 0 && !hidden(g[i]); i++)
      if (g[i].count == 1 && g[i].time >= since[g[i].type])
        out.emplace_back(g[i].dst, g[i].type, g[i].seq, g[i].time, g[i].weight, g[i].payload);
  }
  return out;
}

Edges CoreFold(const std::vector<Run> &runs, uint64_t tau, const VdelMap &vdel) {
  Edges out;
  gt::VisibleEdges<true>(runs, kSrc, tau, vdel, nullptr, [&](const gt::Folded &f) {
    Edge e;
    e.count = f.count;
    e.weight = f.weight;
    e.time = f.time;
    e.first = f.first;
    e.payload.assign(reinterpret_cast<const char *>(f.payload), f.payload_len);
    EXPECT_TRUE(out.emplace(Key{f.dst, f.type}, e).second) << "edge emitted twice";
  });
  // The plain reads: the same weight and time.
  Edges plain;
  gt::VisibleVersions(runs, kSrc, tau, vdel, nullptr, [&](uint64_t d, uint32_t t, double w, int64_t tm) {
    Edge e;
    e.weight = w;
    e.time = tm;
    plain[{d, t}] = e;
  });
  EXPECT_EQ(plain.size(), out.size());
  for (const auto &kv : out) {
    EXPECT_EQ(plain[kv.first].weight, kv.second.weight);
    EXPECT_EQ(plain[kv.first].time, kv.second.time);
  }
  return out;
}

std::vector<Ev> CoreEvents(const std::vector<Run> &runs, uint64_t tau, const VdelMap &vdel,
                           const std::vector<int64_t> &since, const Edges &keys) {
  std::vector<Ev> out;
  for (const auto &kv : keys) {
    gt::EdgeOperands(runs, kSrc, kv.first.first, kv.first.second, tau, vdel, [&](const Run &r, uint64_t i) {
      if (r.count(i) != 1 || r.time(i) < since[kv.first.second]) return true;
      const uint8_t *p;
      const uint32_t n = r.payload(i, &p);
      out.emplace_back(kv.first.first, kv.first.second, VersSeq(r.vers(i)), r.time(i), r.weight(i),
                       std::string(reinterpret_cast<const char *>(p), n));
      return true;
    });
  }
  return out;
}

struct Trial {
  std::vector<Ver> ops;                  // in batch order (seq ascending)
  std::vector<std::vector<Entry>> runs;  // newest seqs first
  ExtArena arena;                        // the input's extras
  std::vector<uint64_t> snaps;
  VdelRef vdel;
  bool history = false;
  uint64_t floor = 0;
  int64_t watermark = 0;
  std::vector<int64_t> retain{0, 0};
  uint64_t max_seq = 0;
};

// The input newest first (per edge: seq desc, the later op of a batch first).
std::vector<Ver> NewestFirst(const std::vector<Ver> &ops) {
  std::vector<Ver> v(ops.rbegin(), ops.rend());
  std::stable_sort(v.begin(), v.end(), [](const Ver &a, const Ver &b) { return a.seq > b.seq; });
  return v;
}

void Build(Trial *t, std::mt19937_64 &rng) {
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  const int batches = 1 + static_cast<int>(pick(14));
  uint64_t seq = 1 + pick(3);
  for (int b = 0; b < batches; b++, seq += 1 + pick(2)) {
    const int n = 1 + static_cast<int>(pick(3));
    for (int k = 0; k < n; k++) {
      Ver v;
      v.dst = 100 + pick(2);
      v.type = static_cast<uint32_t>(pick(2));
      v.seq = seq;
      const uint64_t kind = pick(10);
      v.tomb = kind == 0;
      v.count = kind >= 3 ? 1 : 0;  // mostly operands
      v.weight = v.tomb ? 0 : static_cast<double>(1 + pick(9));
      v.time = v.tomb ? 0 : (pick(6) == 0 ? 0 : static_cast<int64_t>(1000 + pick(50)));
      v.first = v.count != 0 ? v.time : 0;
      if (!v.tomb && pick(2) == 0) v.payload = "p" + std::to_string(seq) + "." + std::to_string(k);
      t->ops.push_back(v);
    }
    t->max_seq = seq;
  }
  // Runs by seq range: run 0 the newest.
  const int nruns = 1 + static_cast<int>(pick(3));
  std::vector<uint64_t> cuts;  // run r holds seqs in (cuts[r+1], cuts[r]]
  cuts.push_back(kInf);
  for (int r = 1; r < nruns; r++) cuts.push_back(1 + pick(t->max_seq));
  std::sort(cuts.begin() + 1, cuts.end(), std::greater<uint64_t>());
  cuts.push_back(0);
  t->runs.assign(nruns, {});
  for (const Ver &v : NewestFirst(t->ops)) {
    int r = 0;
    while (!(v.seq <= cuts[r] && v.seq > cuts[r + 1])) r++;
    Entry e{v.dst, MakeVers(v.seq, v.tomb, v.type), v.weight, v.time};
    if (v.count != 0 || !v.payload.empty())
      e.ext = t->arena.Make(v.count, v.first, reinterpret_cast<const uint8_t *>(v.payload.data()),
                            static_cast<uint32_t>(v.payload.size()));
    t->runs[r].push_back(e);
  }
  for (auto &r : t->runs)
    std::stable_sort(r.begin(), r.end(), [](const Entry &a, const Entry &b) {
      if (a.dst != b.dst) return a.dst < b.dst;
      return gt::VersOrder(a.vers) > gt::VersOrder(b.vers);
    });
  for (uint64_t s = 1; s <= t->max_seq; s++)
    if (pick(4) == 0) t->snaps.push_back(s);
  if (pick(3) == 0) {
    t->history = true;
    t->floor = pick(t->max_seq + 1);
    t->snaps.push_back(t->floor);
    std::sort(t->snaps.begin(), t->snaps.end());
    t->snaps.erase(std::unique(t->snaps.begin(), t->snaps.end()), t->snaps.end());
  }
  if (pick(3) == 0) t->vdel[pick(2) == 0 ? kSrc : 100 + pick(2)].push_back(1 + pick(t->max_seq));
  t->watermark = pick(4) == 0 ? 0 : static_cast<int64_t>(1000 + pick(60));
  t->retain = {static_cast<int64_t>(pick(30)), static_cast<int64_t>(pick(3) == 0 ? 0 : pick(60))};
}

std::vector<Run> Runs(const std::vector<std::vector<Entry>> &rs) {
  std::vector<Run> out;
  for (const auto &r : rs)
    if (!r.empty()) out.push_back(Run{r.data(), nullptr, 0, r.size()});
  return out;
}

TEST(FoldVolumeTest, ReadsAndRetentionAgreeWithTheReference) {
  std::mt19937_64 rng(20261206);
  const int trials = gt_test::Volume(4000, 1000);
  for (int trial = 0; trial < trials; trial++) {
    Trial t;
    Build(&t, rng);
    VdelMap vdel;
    for (const auto &kv : t.vdel)
      for (uint64_t s : kv.second) vdel.Add(kv.first, s);
    const std::vector<Ver> input = NewestFirst(t.ops);
    std::vector<uint64_t> taus = t.snaps;
    taus.push_back(kInf);
    if (t.history)
      for (uint64_t s = t.floor + 1; s <= t.max_seq; s++) taus.push_back(s);
    std::vector<int64_t> since(2, INT64_MIN);
    if (t.watermark > 0)
      for (int ty = 0; ty < 2; ty++) since[ty] = t.watermark - t.retain[ty];
    const std::vector<gt::Run> in = Runs(t.runs);
    for (int bottom = 0; bottom < 2; bottom++) {
      ExtArena arena;
      // The durable seq: below the vertex deletes half the time (a delete
      // not yet clean keeps what it hides).
      const uint64_t durable = rng() % 2 ? t.max_seq : rng() % (t.max_seq + 1);
      RetainParams p{&t.snaps, &vdel, durable, bottom == 1, t.history, t.floor};
      p.watermark = t.watermark;
      p.retain_us = t.retain.data();
      p.arena = &arena;
      std::vector<Entry> out;
      gt::RetainVersions(in, kSrc, p, &out);
      std::vector<Ver> kept;
      for (const Entry &e : out) kept.push_back(FromEntry(e));
      const std::vector<std::vector<Entry>> outruns{out};
      const std::vector<gt::Run> after = Runs(outruns);
      for (uint64_t tau : taus) {
        // A reader at tau saw the vertex deletes up to tau; a delete the
        // retention applied (<= its clean seq) is one every such reader sees.
        const Edges want = RefFold(input, tau, t.vdel);
        const std::string ctx = "trial " + std::to_string(trial) + " bottommost " + std::to_string(bottom) + " tau " +
                                std::to_string(tau) + " wm " + std::to_string(t.watermark);
        ASSERT_EQ(Str(CoreFold(in, tau, vdel)), Str(want)) << ctx << " (read of the input)";
        ASSERT_EQ(Str(RefFold(kept, tau, t.vdel)), Str(want)) << ctx << " (reference read of the output)";
        ASSERT_EQ(Str(CoreFold(after, tau, vdel)), Str(want)) << ctx << " (read of the output)";
        // Events within retain stay listed one by one.
        const std::vector<Ev> evs = RefEvents(input, tau, t.vdel, since);
        ASSERT_EQ(CoreEvents(in, tau, vdel, since, want), evs) << ctx << " (events of the input)";
        // (Bottommost compaction keeps an event's seq.)
        ASSERT_EQ(CoreEvents(after, tau, vdel, since, want), evs) << ctx << " (events of the output)";
      }
    }
  }
}

// Hand-made cases of the contract, named.
TEST(FoldTest, FoldStopsAtReplaceTombstoneAndVertexDelete) {
  ExtArena a;
  auto op = [&](uint64_t seq, double w, int64_t tm, const char *pay = "") {
    return Entry{100, MakeVers(seq, false), w, tm,
                 a.Make(1, tm, reinterpret_cast<const uint8_t *>(pay), static_cast<uint32_t>(strlen(pay)))};
  };
  const Entry rep{100, MakeVers(3, false), 50, 700};
  const Entry tomb{100, MakeVers(2, true), 0, 0};
  // Operands 6 and 5 over a replace version at 3 and a tombstone at 2.
  const std::vector<Entry> run{op(6, 2, 900, "e6"), op(5, 3, 800, "e5"), rep, tomb, op(1, 7, 100)};
  const std::vector<gt::Run> runs{gt::Run{run.data(), nullptr, 0, run.size()}};
  VdelMap none;
  Edges e = CoreFold(runs, kInf, none);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e.begin()->second.count, 2u);      // the replace version ends the fold
  EXPECT_EQ(e.begin()->second.weight, 5.0);    // 2 + 3
  EXPECT_EQ(e.begin()->second.time, 900);      // the greatest
  EXPECT_EQ(e.begin()->second.first, 800);     // the least
  EXPECT_EQ(e.begin()->second.payload, "e6");  // the newest's
  // At seq 5 only the operand of 5, at 3 the replace version (count 0), at
  // 2 nothing, at 1 the lone operand.
  EXPECT_EQ(CoreFold(runs, 5, none).begin()->second.count, 1u);
  EXPECT_EQ(CoreFold(runs, 3, none).begin()->second.weight, 50.0);
  EXPECT_EQ(CoreFold(runs, 3, none).begin()->second.count, 0u);
  EXPECT_TRUE(CoreFold(runs, 2, none).empty());
  EXPECT_EQ(CoreFold(runs, 1, none).begin()->second.weight, 7.0);
  // A vertex delete of the src at 6 hides 5 and older: the fold is 6 alone.
  VdelMap vd;
  vd.Add(kSrc, 6);
  e = CoreFold(runs, kInf, vd);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e.begin()->second.count, 1u);
  EXPECT_EQ(e.begin()->second.weight, 2.0);
}

TEST(FoldTest, RetentionFoldsOldEventsAndKeepsNewOnes) {
  ExtArena a;
  auto op = [&](uint64_t seq, double w, int64_t tm) {
    const std::string pay = "e" + std::to_string(seq);
    return Entry{100, MakeVers(seq, false), w, tm,
                 a.Make(1, tm, reinterpret_cast<const uint8_t *>(pay.data()), static_cast<uint32_t>(pay.size()))};
  };
  // Events at times 10..60 (seq 1..6), newest first; watermark 60, retain
  // 25: times below 35 (10, 20, 30) fold into one operand with seq 3.
  std::vector<Entry> run;
  for (uint64_t s = 6; s >= 1; s--) run.push_back(op(s, static_cast<double>(s), static_cast<int64_t>(s) * 10));
  const std::vector<gt::Run> runs{gt::Run{run.data(), nullptr, 0, run.size()}};
  const std::vector<uint64_t> snaps;
  const int64_t retain[2] = {25, 0};
  ExtArena arena;
  RetainParams p{&snaps, nullptr, 6, false, false, 0};
  p.watermark = 60;
  p.retain_us = retain;
  p.arena = &arena;
  std::vector<Entry> out;
  gt::RetainVersions(runs, kSrc, p, &out);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(VersSeq(out[3].vers), 3u);
  EXPECT_EQ(out[3].ext->count, 3u);
  EXPECT_EQ(out[3].weight, 6.0);  // 3 + 2 + 1
  EXPECT_EQ(out[3].time, 30);
  EXPECT_EQ(out[3].ext->first, 10);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(out[3].ext->bytes()), out[3].ext->len), "e3");
  for (int i = 0; i < 3; i++) EXPECT_EQ(out[i].ext->count, 1u) << i;
  // A snapshot pinned at 2 splits the stripes: 1 and 2 fold apart from 3.
  const std::vector<uint64_t> pinned{2};
  RetainParams q = p;
  q.snaps = &pinned;
  out.clear();
  gt::RetainVersions(runs, kSrc, q, &out);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[3].ext->count, 1u);  // seq 3 alone in its stripe
  EXPECT_EQ(out[4].ext->count, 2u);  // 2 and 1
  EXPECT_EQ(VersSeq(out[4].vers), 2u);
}

}  // namespace
