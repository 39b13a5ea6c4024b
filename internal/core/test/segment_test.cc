// segment_test.cc -- the on-disk CSR segment (segment.h): SegmentBuilder +
// Segment::Open round trips for dense and sparse vertex tables, 32- and
// 64-bit dst columns, with and without weight and version columns, with
// tombstones and multiple versions per dst; Find/NextVertex against a
// reference; CopyDsts/CopyWeights. Corruption: a flipped byte in the header,
// footer, chunk crc table or vertex table makes Open fail with
// Code::kCorruption naming the file; a flipped byte in a data column lets
// Open succeed, and EnsureVerified (for exactly the entry ranges that touch
// the corrupt chunk) and VerifyAll return kCorruption with an offset inside
// that chunk. Also short/extended files, a file renamed to another id, and a
// missing file (kIO). SegmentBuilder::Transpose against a map transposition.
#include "segment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using gt::Code;
using gt::Entry;
using gt::MakeVers;
using gt::Segment;
using gt::SegmentBuilder;
using gt::SegMeta;
using gt::Status;
using gt_test::TempDir;

using gt_test::kFooterSize;
using gt_test::kHeaderSize;

struct Vertex {
  uint64_t src;
  std::vector<Entry> ents;  // sorted by (dst asc, seq desc)
};

void SortEntries(std::vector<Entry> *v) {
  std::stable_sort(v->begin(), v->end(), [](const Entry &a, const Entry &b) {
    if (a.dst != b.dst) return a.dst < b.dst;
    return gt::VersSeq(a.vers) > gt::VersSeq(b.vers);
  });
}

Status Build(const std::string &dir, uint64_t id, const std::vector<Vertex> &verts, SegMeta *meta, uint32_t level = 2,
             uint32_t edge_dir = 1, uint64_t *estimated = nullptr) {
  SegmentBuilder b;
  for (const Vertex &v : verts) b.AddVertex(v.src, v.ents.data(), v.ents.size());
  if (estimated) *estimated = b.EstimatedBytes();
  return b.Finish(dir, id, level, edge_dir, meta);
}

std::string SegPath(const TempDir &d, uint64_t id) { return d.Sub(gt::SegmentFileName(id)); }

// Checks every accessor of seg against the vertices it was built from.
void CheckContents(const Segment &seg, const std::vector<Vertex> &verts) {
  std::map<uint64_t, const Vertex *> by_src;
  uint64_t ne = 0, max_dst = 0, min_seq = UINT64_MAX, max_seq = 0;
  for (const Vertex &v : verts) {
    if (v.ents.empty()) continue;
    by_src[v.src] = &v;
    ne += v.ents.size();
    for (const Entry &e : v.ents) {
      max_dst = std::max(max_dst, e.dst);
      min_seq = std::min(min_seq, gt::VersSeq(e.vers));
      max_seq = std::max(max_seq, gt::VersSeq(e.vers));
    }
  }
  ASSERT_FALSE(by_src.empty());
  const SegMeta &m = seg.meta();
  EXPECT_EQ(m.nverts, by_src.size());
  EXPECT_EQ(m.nentries, ne);
  EXPECT_EQ(m.min_src, by_src.begin()->first);
  EXPECT_EQ(m.max_src, by_src.rbegin()->first);
  EXPECT_EQ(m.max_dst, max_dst);
  EXPECT_EQ(m.min_seq, min_seq);
  EXPECT_EQ(m.max_seq, max_seq);

  for (const auto &kv : by_src) {
    SCOPED_TRACE("src " + std::to_string(kv.first));
    const std::vector<Entry> &ents = kv.second->ents;
    uint64_t b = 0, e = 0;
    ASSERT_TRUE(seg.Find(kv.first, &b, &e));
    ASSERT_EQ(e - b, ents.size());
    ASSERT_LE(e, m.nentries);
    EXPECT_TRUE(seg.EnsureVerified(b, e).ok());
    std::vector<uint64_t> dsts(ents.size() + 1, 0xdeadbeef);
    std::vector<double> ws(ents.size() + 1, -7.0);
    seg.CopyDsts(b, e, dsts.data());
    seg.CopyWeights(b, e, ws.data());
    EXPECT_EQ(dsts.back(), 0xdeadbeefu) << "CopyDsts wrote past e";
    EXPECT_EQ(ws.back(), -7.0) << "CopyWeights wrote past e";
    for (size_t i = 0; i < ents.size(); i++) {
      EXPECT_EQ(seg.dst(b + i), ents[i].dst) << i;
      EXPECT_EQ(seg.vers(b + i), ents[i].vers) << i;
      EXPECT_EQ(seg.weight(b + i), ents[i].weight) << i;
      EXPECT_EQ(dsts[i], ents[i].dst) << i;
      EXPECT_EQ(ws[i], ents[i].weight) << i;
    }
  }
  // Absent vertices: just outside the range, and in every gap (bounded).
  uint64_t b, e;
  if (m.min_src > 0) {
    EXPECT_FALSE(seg.Find(m.min_src - 1, &b, &e));
  }
  if (m.max_src < UINT64_MAX) {
    EXPECT_FALSE(seg.Find(m.max_src + 1, &b, &e));
  }
  EXPECT_FALSE(seg.Find(UINT64_MAX, &b, &e));
  std::vector<uint64_t> probes = {0, 1, m.min_src, m.max_src, UINT64_MAX};
  if (m.max_src < UINT64_MAX) probes.push_back(m.max_src + 1);
  for (const auto &kv : by_src) {
    for (uint64_t d = 0; d < 3; d++) {
      if (kv.first >= d) probes.push_back(kv.first - d);
      if (kv.first <= UINT64_MAX - d) probes.push_back(kv.first + d);
    }
  }
  for (uint64_t p : probes) {
    SCOPED_TRACE("probe " + std::to_string(p));
    auto it = by_src.lower_bound(p);
    uint64_t got = 0;
    bool ok = seg.NextVertex(p, &got);
    if (it == by_src.end()) {
      EXPECT_FALSE(ok);
    } else {
      EXPECT_TRUE(ok);
      EXPECT_EQ(got, it->first);
    }
    if (by_src.count(p) == 0) {
      EXPECT_FALSE(seg.Find(p, &b, &e));
    }
  }
  EXPECT_TRUE(seg.VerifyAll().ok());
}

struct RoundTripCase {
  const char *name;
  std::vector<Vertex> verts;
  uint32_t want_flags_set;    // flags that must be set
  uint32_t want_flags_clear;  // flags that must be clear
};

Entry E(uint64_t dst, uint64_t seq = 0, bool tomb = false, double w = 1.0) {
  return Entry{dst, MakeVers(seq, tomb), w};
}

std::vector<RoundTripCase> RoundTripCases() {
  using namespace gt;
  std::vector<RoundTripCase> cs;
  {
    // Contiguous sources with two gaps, small dsts, no seqs, unit weights.
    RoundTripCase c{"dense_dst32_plain",
                    {},
                    kFlagDense | kFlagDst32,
                    kFlagVers | kFlagWeights | kFlagMultiVersion | kFlagTombstones};
    for (uint64_t s = 10; s < 20; s++) {
      if (s == 13 || s == 17) continue;
      Vertex v{s, {}};
      for (uint64_t d = 0; d < s % 4 + 1; d++) v.ents.push_back(E(d * 7 + s));
      c.verts.push_back(v);
    }
    cs.push_back(c);
  }
  {
    // Far-apart sources force the sparse table; weights, no seqs.
    RoundTripCase c{"sparse_dst32_weights",
                    {},
                    kFlagDst32 | kFlagWeights,
                    kFlagDense | kFlagVers | kFlagMultiVersion | kFlagTombstones};
    const uint64_t srcs[] = {5, 1000, 100000, 1ull << 40, GT_MAX_VERTEX};
    for (uint64_t s : srcs) {
      Vertex v{s, {}};
      for (uint64_t d = 1; d <= 3; d++) v.ents.push_back(E(d * 1000 + (s & 0xff), 0, false, 0.25 * d));
      c.verts.push_back(v);
    }
    cs.push_back(c);
  }
  {
    // 64-bit dsts and a version column (seqs, no tombstones).
    RoundTripCase c{"dense_dst64_vers",
                    {},
                    kFlagDense | kFlagVers,
                    kFlagDst32 | kFlagWeights | kFlagMultiVersion | kFlagTombstones};
    for (uint64_t s = 0; s < 6; s++) {
      Vertex v{s, {E(1ull << 33, s + 1), E((1ull << 33) + s + 1, 100 + s), E(GT_MAX_VERTEX, 7)}};
      c.verts.push_back(v);
    }
    cs.push_back(c);
  }
  {
    // Everything: sparse, 64-bit dsts, seqs, tombstones, multi-version, weights.
    RoundTripCase c{"sparse_dst64_all_columns",
                    {},
                    kFlagVers | kFlagWeights | kFlagMultiVersion | kFlagTombstones,
                    kFlagDense | kFlagDst32};
    Vertex a{3, {E(1, 9), E(1, 4, true), E(1, 2, false, 2.5), E(1ull << 35, 3, true)}};
    Vertex b{1ull << 20, {E(0, 0), E(5, 11, false, -1.0), E(5, 10, true)}};
    Vertex d{1ull << 41, {E(7, 1, true)}};
    c.verts = {a, b, d};
    cs.push_back(c);
  }
  {
    // Tombstone with seq 0 still needs the version column.
    RoundTripCase c{"tombstone_seq0",
                    {{42, {E(1, 0, true, 0.0), E(2)}}},
                    kFlagVers | kFlagTombstones | kFlagDense,
                    kFlagMultiVersion};
    cs.push_back(c);
  }
  {
    // One vertex, one edge; odd dst32 count exercises column padding.
    RoundTripCase c{"single_edge", {{7, {E(8)}}}, kFlagDense | kFlagDst32, kFlagVers | kFlagWeights};
    cs.push_back(c);
  }
  {
    RoundTripCase c{"odd_dst32_count_with_weights",
                    {{1, {E(1, 0, false, 3.0), E(2), E(3)}}, {2, {E(4, 5)}}},
                    kFlagDst32 | kFlagWeights | kFlagVers,
                    kFlagMultiVersion};
    cs.push_back(c);
  }
  {
    // A vertex added with zero entries is not in the file.
    RoundTripCase c{"empty_vertex_skipped", {{1, {E(2)}}, {2, {}}, {3, {E(4)}}}, kFlagDst32, 0};
    cs.push_back(c);
  }
  {
    // Random: many vertices and versions, chosen to span several chunks.
    RoundTripCase c{"random_multi_chunk", {}, kFlagVers | kFlagWeights, 0};
    std::mt19937_64 rng(7);
    uint64_t src = 0;
    for (int i = 0; i < 3000; i++) {
      src += 1 + rng() % 3;
      Vertex v{src, {}};
      int n = 1 + static_cast<int>(rng() % 12);
      for (int k = 0; k < n; k++)
        v.ents.push_back(E(rng() % 5000, rng() % 1000, rng() % 5 == 0, static_cast<double>(rng() % 100) / 4));
      SortEntries(&v.ents);
      c.verts.push_back(v);
    }
    cs.push_back(c);
  }
  return cs;
}

TEST(SegmentTest, RoundTrip) {
  uint64_t id = 1;
  for (const RoundTripCase &c : RoundTripCases()) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    SegMeta meta;
    uint64_t est = 0;
    Status st = Build(dir.path(), id, c.verts, &meta, 3, 1, &est);
    ASSERT_TRUE(st.ok()) << st.msg;
    const std::string path = SegPath(dir, id);
    const uint64_t size = gt_test::ReadFile(path).size();
    EXPECT_EQ(meta.id, id);
    EXPECT_EQ(meta.level, 3u);
    EXPECT_EQ(meta.dir, 1u);
    EXPECT_EQ(meta.bytes, size);
    EXPECT_GE(est * 2, size) << "EstimatedBytes far below the file size";
    EXPECT_LE(est, size * 2) << "EstimatedBytes far above the file size";

    std::shared_ptr<Segment> seg;
    st = Segment::Open(dir.path(), id, &seg);
    ASSERT_TRUE(st.ok()) << st.msg << " " << st.file;
    EXPECT_EQ(seg->path(), path);
    EXPECT_EQ(seg->flags() & c.want_flags_set, c.want_flags_set) << std::hex << seg->flags();
    EXPECT_EQ(seg->flags() & c.want_flags_clear, 0u) << std::hex << seg->flags();
    EXPECT_EQ(seg->has_weights(), (seg->flags() & gt::kFlagWeights) != 0);
    // Copyable as is at a snapshot iff nothing is newer, deleted or doubled.
    const bool dead_or_doubled = (seg->flags() & (gt::kFlagTombstones | gt::kFlagMultiVersion)) != 0;
    EXPECT_EQ(seg->AllVisibleAt(seg->meta().max_seq), !dead_or_doubled);
    if (seg->meta().max_seq > 0) {
      EXPECT_FALSE(seg->AllVisibleAt(seg->meta().max_seq - 1));
    }
    const SegMeta &m = seg->meta();
    EXPECT_EQ(m.id, meta.id);
    EXPECT_EQ(m.level, meta.level);
    EXPECT_EQ(m.dir, meta.dir);
    EXPECT_EQ(m.min_src, meta.min_src);
    EXPECT_EQ(m.max_src, meta.max_src);
    EXPECT_EQ(m.max_dst, meta.max_dst);
    EXPECT_EQ(m.nverts, meta.nverts);
    EXPECT_EQ(m.nentries, meta.nentries);
    EXPECT_EQ(m.bytes, meta.bytes);
    EXPECT_EQ(m.min_seq, meta.min_seq);
    EXPECT_EQ(m.max_seq, meta.max_seq);
    CheckContents(*seg, c.verts);
    id++;
  }
}

// The transposition of what vs holds: for each (s, d, vers, w), (d, s,
// vers, w), each in-vertex's versions in (s asc, then vs's order) order.
std::vector<Vertex> Transposed(const std::vector<Vertex> &vs) {
  std::map<uint64_t, std::vector<Entry>> in;
  for (const Vertex &v : vs)
    for (const Entry &e : v.ents) in[e.dst].push_back(Entry{v.src, e.vers, e.weight});
  std::vector<Vertex> out;
  for (auto &kv : in) out.push_back(Vertex{kv.first, std::move(kv.second)});
  return out;
}

// SegmentBuilder::Transpose (a flush's in-edge file) against Transposed:
// the round-trip cases, then random ones with dense ids (the counting
// sort), ids in both bands, and sparse 64-bit ids (the sort).
TEST(SegmentTest, TransposeMatchesOracle) {
  std::vector<std::pair<std::string, std::vector<Vertex>>> cases;
  for (const RoundTripCase &c : RoundTripCases()) cases.emplace_back(c.name, c.verts);
  std::mt19937_64 rng(23);
  for (int kind = 0; kind < 3; kind++) {
    for (int rep = 0; rep < 4; rep++) {
      auto id = [&]() -> uint64_t {
        if (kind == 0) return rng() % 500;
        if (kind == 1) return rng() % 2 == 0 ? rng() % 300 : GT_HIGH_ID_BASE + rng() % 300;
        return rng() % 4 == 0 ? rng() % 50 : rng();  // sparse: most ids far apart
      };
      std::map<uint64_t, std::vector<Entry>> out;
      const int n = 1 + static_cast<int>(rng() % 3000);
      for (int k = 0; k < n; k++) {
        const bool tomb = rng() % 8 == 0;
        // Hubs: a few sources and destinations take many edges.
        const uint64_t src = rng() % 5 == 0 ? rng() % 3 : id();
        const uint64_t dst = rng() % 5 == 0 ? 7 : id();
        out[src].push_back(
            Entry{dst, MakeVers(1 + rng() % 40, tomb), tomb ? 0.0 : 1.0 + static_cast<double>(rng() % 3)});
      }
      std::vector<Vertex> verts;
      for (auto &kv : out) {
        SortEntries(&kv.second);
        verts.push_back(Vertex{kv.first, kv.second});
      }
      cases.emplace_back("random kind " + std::to_string(kind) + " rep " + std::to_string(rep), verts);
    }
  }
  uint64_t id = 1;
  for (const auto &c : cases) {
    SCOPED_TRACE(c.first);
    SegmentBuilder b, in;
    for (const Vertex &v : c.second) b.AddVertex(v.src, v.ents.data(), v.ents.size());
    in.AddVertex(5, c.second[0].ents.data(), 1);  // Transpose starts over
    b.Transpose(&in);
    const std::vector<Vertex> want = Transposed(c.second);
    EXPECT_EQ(in.entries(), b.entries());
    EXPECT_EQ(in.vertices(), want.size());
    TempDir dir, ref_dir;
    SegMeta meta, ref_meta;
    Status st = in.Finish(dir.path(), id, 0, gt::kIn, &meta);
    ASSERT_TRUE(st.ok()) << st.msg;
    std::shared_ptr<Segment> seg;
    st = Segment::Open(dir.path(), id, &seg);
    ASSERT_TRUE(st.ok()) << st.msg << " " << st.file;
    CheckContents(*seg, want);
    // The same file, byte for byte, as one built vertex by vertex from the
    // map's transposition (every flag and bound the header records too).
    SegmentBuilder ref;
    for (const Vertex &v : want) ref.AddVertex(v.src, v.ents.data(), v.ents.size());
    st = ref.Finish(ref_dir.path(), id, 0, gt::kIn, &ref_meta);
    ASSERT_TRUE(st.ok()) << st.msg;
    EXPECT_TRUE(gt_test::ReadFile(SegPath(dir, id)) == gt_test::ReadFile(SegPath(ref_dir, id)));
    id++;
  }
}

TEST(SegmentTest, FinishWithoutVerticesFails) {
  TempDir dir;
  SegmentBuilder b;
  Entry none{};
  b.AddVertex(5, &none, 0);  // zero entries: not a vertex
  EXPECT_TRUE(b.empty());
  SegMeta m;
  Status st = b.Finish(dir.path(), 1, 0, 0, &m);
  EXPECT_EQ(st.code, Code::kInternal) << st.msg;
}

TEST(SegmentTest, BuilderResetStartsOver) {
  TempDir dir;
  SegmentBuilder b;
  std::vector<Entry> big = {E(1ull << 40, 5, true, 2.0), E(1ull << 40, 4)};
  b.AddVertex(100, big.data(), big.size());
  b.Reset();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.entries(), 0u);
  std::vector<Entry> small = {E(1), E(2)};
  b.AddVertex(1, small.data(), small.size());
  SegMeta m;
  ASSERT_TRUE(b.Finish(dir.path(), 9, 0, 0, &m).ok());
  std::shared_ptr<Segment> seg;
  ASSERT_TRUE(Segment::Open(dir.path(), 9, &seg).ok());
  // Nothing of the first vertex may leak into the flags or metadata.
  EXPECT_EQ(seg->flags(), gt::kFlagDense | gt::kFlagDst32 | gt::kFlagBloom);
  EXPECT_EQ(m.max_dst, 2u);
  EXPECT_EQ(m.max_seq, 0u);
  CheckContents(*seg, {{1, small}});
}

// An out-edge file's edge filter holds every (src, dst) pair of the file,
// tombstones' included, and passes few others; an in-edge file has none;
// a flipped byte of the filter fails the open (it is verified there).
TEST(SegmentTest, EdgeFilterHoldsEveryPairAndFewOthers) {
  TempDir dir;
  std::mt19937_64 rng(7);
  std::vector<Vertex> verts;
  std::set<std::pair<uint64_t, uint64_t>> pairs;
  for (uint64_t s = 0; s < 2000; s += 1 + rng() % 3) {
    Vertex v{s, {}};
    std::set<uint64_t> ds;
    const uint64_t deg = s % 100 == 0 ? 3000 : 1 + rng() % 20;  // a few hubs
    while (ds.size() < deg) ds.insert(rng() % (uint64_t{1} << 36));
    for (uint64_t d : ds) {
      v.ents.push_back(E(d, 10 + rng() % 5, rng() % 10 == 0));
      if (rng() % 4 == 0) v.ents.push_back(E(d, 5));  // an older version of the same pair
      pairs.insert({s, d});
    }
    verts.push_back(v);
  }
  SegMeta meta;
  ASSERT_TRUE(Build(dir.path(), 1, verts, &meta, 0, 0).ok());
  ASSERT_TRUE(Build(dir.path(), 2, verts, &meta, 0, 1).ok());
  std::shared_ptr<Segment> out, in;
  ASSERT_TRUE(Segment::Open(dir.path(), 1, &out).ok());
  ASSERT_TRUE(Segment::Open(dir.path(), 2, &in).ok());
  EXPECT_TRUE(out->flags() & gt::kFlagBloom);
  EXPECT_FALSE(in->flags() & gt::kFlagBloom);
  for (const auto &p : pairs) ASSERT_TRUE(out->MayHold(p.first, p.second)) << p.first << " -> " << p.second;
  uint64_t passed = 0, tried = 0;
  for (; tried < 200000; tried++) {
    const uint64_t s = rng() % 2000, d = rng() % (uint64_t{1} << 36);
    if (pairs.count({s, d})) continue;
    passed += out->MayHold(s, d);
    EXPECT_TRUE(in->MayHold(s, d));  // no filter: every pair may be there
  }
  EXPECT_LT(double(passed) / double(tried), 0.03) << passed << " of " << tried << " absent pairs passed";
  out.reset();
  const std::string path = SegPath(dir, 1), original = gt_test::ReadFile(path);
  const gt_test::Layout L(original);
  ASSERT_GT(L.bloom_bytes, 0u);
  for (uint64_t off = L.bloom_off; off < L.bloom_off + L.bloom_bytes; off += L.bloom_bytes / 7 + 1) {
    gt_test::WriteFile(path, original);
    gt_test::FlipByte(path, off);
    std::shared_ptr<Segment> seg;
    const Status st = Segment::Open(dir.path(), 1, &seg);
    EXPECT_EQ(st.code, Code::kCorruption) << "filter byte " << off << ": " << st.msg;
    EXPECT_EQ(st.file, path);
  }
}

TEST(SegmentTest, MissingFileIsIOError) {
  TempDir dir;
  std::shared_ptr<Segment> seg;
  Status st = Segment::Open(dir.path(), 77, &seg);
  EXPECT_EQ(st.code, Code::kIO);
  EXPECT_EQ(st.file, SegPath(dir, 77));
}

// ---------------------------------------------------------------------------
// Corruption

using gt_test::Layout;

class SegmentCorruptionTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kId = 5;

  void SetUp() override {
    // 12 contiguous sources with 3000 versioned, weighted 64-bit-dst entries
    // each: about 864 KiB of columns, i.e. many 64 KiB chunks.
    for (uint64_t s = 1; s <= 12; s++) {
      Vertex v{s, {}};
      for (uint64_t k = 0; k < 3000; k++) v.ents.push_back(E((1ull << 34) + k * 3 + s, 1000 + k, k % 97 == 0, 0.5 * k));
      verts_.push_back(v);
    }
    SegMeta meta;
    Status st = Build(dir_.path(), kId, verts_, &meta);
    ASSERT_TRUE(st.ok()) << st.msg;
    path_ = SegPath(dir_, kId);
    original_ = gt_test::ReadFile(path_);
    layout_.reset(new Layout(original_));
    ASSERT_GT(layout_->nchunks, 8u);
    ASSERT_TRUE(layout_->flags & gt::kFlagDense);
  }

  void Restore() { gt_test::WriteFile(path_, original_); }

  // Flips one byte, opens, restores. Returns Open's status.
  Status OpenWithFlip(uint64_t off, std::shared_ptr<Segment> *seg) {
    Restore();
    gt_test::FlipByte(path_, off);
    Status st = Segment::Open(dir_.path(), kId, seg);
    return st;
  }

  void ExpectOpenCorruption(const char *what, uint64_t off) {
    SCOPED_TRACE(std::string(what) + " byte " + std::to_string(off));
    std::shared_ptr<Segment> seg;
    Status st = OpenWithFlip(off, &seg);
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path_) << st.msg;
    EXPECT_FALSE(st.msg.empty());
    EXPECT_EQ(seg, nullptr);
    Restore();
  }

  TempDir dir_;
  std::vector<Vertex> verts_;
  std::string path_, original_;
  std::unique_ptr<Layout> layout_;
};

TEST_F(SegmentCorruptionTest, IntactFileOpens) {
  std::shared_ptr<Segment> seg;
  Status st = Segment::Open(dir_.path(), kId, &seg);
  ASSERT_TRUE(st.ok()) << st.msg;
  CheckContents(*seg, verts_);
}

TEST_F(SegmentCorruptionTest, HeaderByteFailsOpen) {
  // magic, format version, flags, id, level, nverts, nentries, min/max src,
  // table_len, chunk_size, reserved bytes, and the header crc itself.
  for (uint64_t off :
       {0u, 7u, 8u, 12u, 16u, 24u, 32u, 40u, 48u, 56u, 64u, 72u, 80u, 88u, 96u, 104u, 119u, 120u, 124u, 127u})
    ExpectOpenCorruption("header", off);
}

TEST_F(SegmentCorruptionTest, FooterByteFailsOpen) {
  const uint64_t f = layout_->foot_off;
  for (uint64_t k : {0u, 3u, 8u, 15u, 16u, 19u, 20u, 23u, 24u, 31u}) ExpectOpenCorruption("footer", f + k);
}

TEST_F(SegmentCorruptionTest, CrcTableByteFailsOpen) {
  const uint64_t c = layout_->crc_off, n = layout_->nchunks;
  for (uint64_t k : {uint64_t(0), uint64_t(1), 4 * (n / 2) + 2, 4 * n - 1}) ExpectOpenCorruption("crc table", c + k);
}

TEST_F(SegmentCorruptionTest, VertexTableByteFailsOpen) {
  const uint64_t t = layout_->table_off;
  for (uint64_t k = 0; k < layout_->table_bytes; k += 7) ExpectOpenCorruption("vertex table", t + k);
  ExpectOpenCorruption("vertex table", t + layout_->table_bytes - 1);
}

TEST_F(SegmentCorruptionTest, ShortOrExtendedFileFailsOpen) {
  for (size_t cut : {size_t(1), size_t(4), size_t(kFooterSize), original_.size() - 100}) {
    SCOPED_TRACE("truncated by " + std::to_string(cut));
    gt_test::WriteFile(path_, original_.substr(0, original_.size() - cut));
    std::shared_ptr<Segment> seg;
    Status st = Segment::Open(dir_.path(), kId, &seg);
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path_);
  }
  {
    SCOPED_TRACE("extended by 8 zero bytes");
    gt_test::WriteFile(path_, original_ + std::string(8, '\0'));
    std::shared_ptr<Segment> seg;
    Status st = Segment::Open(dir_.path(), kId, &seg);
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path_);
  }
  {
    SCOPED_TRACE("empty file");
    gt_test::WriteFile(path_, "");
    std::shared_ptr<Segment> seg;
    Status st = Segment::Open(dir_.path(), kId, &seg);
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
  }
  Restore();
}

TEST_F(SegmentCorruptionTest, FileOfAnotherIdFailsOpen) {
  gt_test::WriteFile(SegPath(dir_, kId + 1), original_);
  std::shared_ptr<Segment> seg;
  Status st = Segment::Open(dir_.path(), kId + 1, &seg);
  EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
  EXPECT_EQ(st.file, SegPath(dir_, kId + 1));
}

// A flipped byte in a data column: Open succeeds (columns are verified on
// first touch), every vertex whose entries touch the corrupt chunk reports
// kCorruption with the file and an offset inside that chunk, the others read
// fine, and VerifyAll finds it.
TEST_F(SegmentCorruptionTest, DataColumnByteFailsOnTouch) {
  const Layout &L = *layout_;
  struct Flip {
    const char *what;
    uint64_t off;
  };
  const uint64_t ne = L.nentries;
  const std::vector<Flip> flips = {
      {"dst column, first byte of chunk 1", L.ChunkBegin(1)},
      {"dst column, middle", L.dst_off + (ne / 2) * L.dst_width + 3},
      {"dst column, last byte", L.dst_off + ne * L.dst_width - 1},
      {"vers column, middle", L.vers_off + (ne / 3) * 8 + 1},
      {"weight column, middle", L.w_off + (2 * ne / 3) * 8 + 6},
      {"weight column, last byte", L.w_off + ne * 8 - 1},
  };
  for (const Flip &f : flips) {
    SCOPED_TRACE(std::string(f.what) + " byte " + std::to_string(f.off));
    std::shared_ptr<Segment> seg;
    Status st = OpenWithFlip(f.off, &seg);
    const uint64_t chunk = L.Chunk(f.off);
    ASSERT_NE(chunk, L.Chunk(L.table_off + L.table_bytes - 1)) << "test bug: flip shares the vertex table's chunk";
    ASSERT_TRUE(st.ok()) << "Open must not read data columns: " << st.msg;
    const uint64_t cb = L.ChunkBegin(chunk), ce = cb + L.chunk_size;
    int failed = 0;
    for (const Vertex &v : verts_) {
      uint64_t b, e;
      ASSERT_TRUE(seg->Find(v.src, &b, &e));
      const bool touches = L.RangeTouchesChunk(b, e, chunk);
      for (int attempt = 0; attempt < 2; attempt++) {  // a failure is not cached as success
        Status vs = seg->EnsureVerified(b, e);
        if (touches) {
          EXPECT_EQ(vs.code, Code::kCorruption) << "src " << v.src << " attempt " << attempt;
          EXPECT_EQ(vs.file, path_);
          EXPECT_GE(vs.offset, cb) << "src " << v.src;
          EXPECT_LT(vs.offset, ce) << "src " << v.src;
          EXPECT_LE(vs.offset, f.off);
        } else {
          EXPECT_TRUE(vs.ok()) << "src " << v.src << ": " << vs.msg;
        }
      }
      failed += touches;
    }
    EXPECT_GT(failed, 0);
    // A single-entry range containing the flipped byte's entry.
    uint64_t entry = UINT64_MAX;
    if (f.off >= L.dst_off && f.off < L.dst_off + ne * L.dst_width) entry = (f.off - L.dst_off) / L.dst_width;
    if (L.vers_off && f.off >= L.vers_off && f.off < L.vers_off + ne * 8) entry = (f.off - L.vers_off) / 8;
    if (L.w_off && f.off >= L.w_off && f.off < L.w_off + ne * 8) entry = (f.off - L.w_off) / 8;
    ASSERT_NE(entry, UINT64_MAX);
    Status es = seg->EnsureVerified(entry, entry + 1);
    EXPECT_EQ(es.code, Code::kCorruption);
    EXPECT_GE(es.offset, cb);
    EXPECT_LT(es.offset, ce);
    Status all = seg->VerifyAll();
    EXPECT_EQ(all.code, Code::kCorruption);
    EXPECT_EQ(all.file, path_);
    EXPECT_GE(all.offset, cb);
    EXPECT_LT(all.offset, ce);
    seg.reset();
  }
  Restore();
}

// A data byte in the chunk that also holds the vertex table is caught by
// Open, which verifies the table's chunks.
TEST_F(SegmentCorruptionTest, DataByteInVertexTableChunkFailsOpen) {
  ASSERT_EQ(layout_->Chunk(layout_->dst_off), 0u);
  ExpectOpenCorruption("first dst", layout_->dst_off);
}

}  // namespace
