// event_sources_test.cc -- events' source positions (issue 42): an event
// from a numbered source (a Kafka topic's partition) without a reference
// of its own keeps (source, position) as two numbers, not text.
//
// The MANIFEST: source edits round-trip, replay numbers sources 1, 2, ...
// and carries them through a snapshot record (a rewrite); contradictory
// edits are refused with the record's offset. recovery_test.cc's built
// store numbers sources too, so its flipped-byte and cut-at-every-offset
// tests cover the new records' corruption.
//
// Segment format 6: the source position columns round-trip (SegmentBuilder,
// Transpose, Segment) in the few bytes their values need (one column when
// source and position combine, two when the product does not fit 64 bits;
// none for a file of one position), the time column is narrow, files
// without positions keep formats 5 and 3, and a damaged section (a flipped
// byte; a header whose checksums were made to match) is refused with file
// and offset.
//
// The store: gt_add_event_source numbers names durably, GT_OP_SOURCE ops
// carry positions through flush, compaction, in-edges and reopen to every
// _ext read and event listing, Apply refuses a source the store did not
// number, and a store whose file names a source its MANIFEST does not
// number is refused at open with the file and offset.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graphtide.h"
#include "manifest.h"
#include "manifest_test_util.h"
#include "segment.h"
#include "store_test_util.h"
#include "test_util.h"

namespace {

using gt_test::Edit;
using gt_test::Replay;

using gt::Code;
using gt::Entry;
using gt::EventPos;
using gt::ExtArena;
using gt::MakeVers;
using gt::Segment;
using gt::SegmentBuilder;
using gt::SegMeta;
using gt::Status;
using gt_test::Err;
using gt_test::TempDir;

gt::ManifestEdit Sources(std::vector<std::pair<uint32_t, std::string>> s) {
  gt::ManifestEdit e = Edit(gt::EditKind::kSources);
  e.sources = std::move(s);
  return e;
}

TEST(EventSourcesTest, EditsRoundTripAndReplay) {
  const gt::ManifestEdit a = Sources({{1, "payments/0"}, {2, "payments/1"}});
  const gt::ManifestEdit b = Sources({{3, std::string(GT_MAX_EVENT_SOURCE_NAME, 'x')}});
  for (const gt::ManifestEdit &e : {a, b}) {
    const std::string enc = gt::EncodeEdit(e);
    gt::ManifestEdit d;
    std::string why;
    ASSERT_TRUE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why)) << why;
    EXPECT_EQ(d.sources, e.sources);
    EXPECT_EQ(gt::EncodeEdit(d), enc);
    for (size_t n = 0; n < enc.size(); n++) EXPECT_FALSE(gt::DecodeEdit(enc.data(), n, &d, &why)) << n;
  }
  gt::ManifestState st;
  ASSERT_EQ(Replay({Edit(gt::EditKind::kCreate), a, b}, &st), "");
  ASSERT_EQ(st.sources.size(), 3u);
  EXPECT_EQ(st.sources[1], "payments/1");
  EXPECT_EQ(st.source_ids.at("payments/0"), 1u);
  // A snapshot record of that state (a rewrite) carries them, numbered.
  const gt::ManifestEdit snap = gt::SnapshotEdit(st, {}, {});
  gt::ManifestState st2;
  ASSERT_EQ(Replay({snap, Sources({{4, "refunds/0"}})}, &st2), "");
  EXPECT_EQ(st2.sources, (std::vector<std::string>{"payments/0", "payments/1", st.sources[2], "refunds/0"}));
  gt::ManifestState run;  // the store's running state agrees
  for (const auto &e : {Edit(gt::EditKind::kCreate), a, b}) gt::AdvanceState(&run, e);
  EXPECT_EQ(run.sources, st.sources);
}

TEST(EventSourcesTest, ContradictoryEditsAreRefusedWithTheirOffset) {
  struct Case {
    std::string name;
    gt::ManifestEdit edit;
    std::string want;
  };
  std::vector<Case> cases;
  cases.push_back({"no source", Sources({}), "names no source"});
  cases.push_back({"a number skipped", Sources({{3, "t/0"}}), "not the next number 2"});
  cases.push_back({"a number reused", Sources({{1, "t/9"}}), "not the next number 2"});
  cases.push_back({"a name twice", Sources({{2, "t/0"}}), "twice"});
  cases.push_back({"a name twice in one edit", Sources({{2, "t/1"}, {3, "t/1"}}), "twice"});
  cases.push_back({"an empty name", Sources({{2, ""}}), "with 0 bytes"});
  cases.push_back({"a name too long", Sources({{2, std::string(GT_MAX_EVENT_SOURCE_NAME + 1, 'y')}}), "bytes (1 to"});
  {
    gt::ManifestEdit e = Sources({{2, "t/1"}});
    e.newest_time = 5;
    cases.push_back({"a source edit with a flush's field", e, "carries other fields"});
  }
  {
    gt::ManifestEdit e = Edit(gt::EditKind::kFlush);
    e.sources = {{2, "t/1"}};
    cases.push_back({"a flush numbering a source", e, "only a source or snapshot record"});
  }
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    gt::ManifestState st;
    uint64_t off = 0;
    const std::string why = Replay({Edit(gt::EditKind::kCreate), Sources({{1, "t/0"}}), c.edit}, &st, &off);
    EXPECT_NE(why.find(c.want), std::string::npos) << why;
    EXPECT_EQ(off, 216u);
  }
}

// Versions of one vertex, version i with a source position from pos(i)
// (source 0: none) and a payload on some.
std::vector<Entry> PositionVersions(ExtArena *a, size_t n, EventPos (*pos)(size_t)) {
  std::vector<Entry> v;
  for (size_t i = 0; i < n; i++) {
    const std::string pay = i % 5 == 0 ? "{\"n\":" + std::to_string(i) + "}" : "";
    const EventPos p = pos(i);
    Entry e{i * 2 + 1, MakeVers(10 + i, false), 1.0 + double(i), int64_t(1765000000000000 + 1000 * i)};
    if (p.source != 0 || !pay.empty())
      e.ext = a->Make(1, e.time, reinterpret_cast<const uint8_t *>(pay.data()), static_cast<uint32_t>(pay.size()), p);
    v.push_back(e);
  }
  return v;
}

// Writes v as vertex 7 of file id (and its transposed file id + 1), opens
// both and checks every version's position, time and payload.
void RoundTrip(const TempDir &dir, uint64_t id, const std::vector<Entry> &v, std::shared_ptr<Segment> *out,
               uint32_t min_width = 0) {
  SegmentBuilder b;
  b.set_min_width(min_width);
  b.AddVertex(7, v.data(), v.size());
  SegMeta m;
  ASSERT_TRUE(b.Finish(dir.path(), id, 0, gt::kOut, &m).ok());
  SegmentBuilder in;
  b.Transpose(&in);
  in.set_min_width(min_width);
  ASSERT_TRUE(in.Finish(dir.path(), id + 1, 0, gt::kIn, &m).ok());
  for (uint64_t f : {id, id + 1}) {
    std::shared_ptr<Segment> seg;
    const Status st = Segment::Open(dir.path(), f, &seg);
    ASSERT_TRUE(st.ok()) << st.msg;
    ASSERT_TRUE(seg->VerifyAll().ok());
    for (size_t i = 0; i < v.size(); i++) {
      uint64_t b0, e0;
      const uint64_t vx = f == id ? 7 : v[i].dst;
      ASSERT_TRUE(seg->Find(vx, &b0, &e0));
      const uint64_t k = f == id ? b0 + i : b0;
      const EventPos want = v[i].ext != nullptr ? v[i].ext->pos() : EventPos{};
      const EventPos got = seg->pos(k);
      EXPECT_EQ(got.source, want.source) << "file " << f << " version " << i;
      EXPECT_EQ(got.position, want.source != 0 ? want.position : 0) << "file " << f << " version " << i;
      EXPECT_EQ(seg->time(k), v[i].time);
      const uint8_t *p;
      const uint32_t len = seg->payload(k, &p);
      const std::string pay =
          v[i].ext != nullptr ? std::string(reinterpret_cast<const char *>(v[i].ext->bytes()), v[i].ext->len) : "";
      EXPECT_EQ(std::string(reinterpret_cast<const char *>(p), len), pay);
    }
    if (f == id) *out = seg;
  }
}

uint32_t Version(const TempDir &dir, uint64_t id) {
  return gt_test::GetLE<uint32_t>(gt_test::ReadFile(dir.Sub(gt::SegmentFileName(id))), 8);
}

TEST(EventSourcesTest, PositionsTakeTheBytesTheirValuesNeed) {
  TempDir dir;
  ExtArena a;
  std::shared_ptr<Segment> seg;
  // One source, 200 nearby offsets: one byte a version (source 0 bytes).
  RoundTrip(dir, 1, PositionVersions(&a, 200, [](size_t i) { return EventPos{3, 70000 + i}; }), &seg);
  EXPECT_EQ(Version(dir, 1), 6u);
  EXPECT_EQ(seg->source_width(), 0u);
  EXPECT_EQ(seg->position_width(), 1u);
  EXPECT_EQ(seg->max_source(), 3u);
  // Four sources (bench serve's partitions), offsets up to 75,000 each:
  // combined, 3 bytes (two columns would take 4).
  RoundTrip(dir, 3, PositionVersions(&a, 400, [](size_t i) { return EventPos{uint32_t(1 + i % 4), i * 187}; }), &seg);
  EXPECT_EQ(seg->source_width(), 0u);
  EXPECT_EQ(seg->position_width(), 3u);
  // Some versions without a position (source 0 then, min_source 0).
  RoundTrip(dir, 5,
            PositionVersions(&a, 100,
                             [](size_t i) {
                               return i % 3 == 0 ? EventPos{} : EventPos{2, 5 + i};
                             }),
            &seg);
  EXPECT_EQ(seg->position_width(), 2u);  // sources 0..2 times a radix of 95
  // One position in the whole file: no column at all.
  RoundTrip(dir, 7, PositionVersions(&a, 1, [](size_t) { return EventPos{9, 123456789}; }), &seg);
  EXPECT_EQ(seg->source_width(), 0u);
  EXPECT_EQ(seg->position_width(), 0u);
  // Positions whose product with the sources does not fit 64 bits: two
  // columns.
  RoundTrip(dir, 9,
            PositionVersions(&a, 50,
                             [](size_t i) {
                               return EventPos{uint32_t(1 + i % 2), i % 7 == 0 ? UINT64_MAX - i : i};
                             }),
            &seg);
  EXPECT_EQ(seg->source_width(), 1u);
  EXPECT_EQ(seg->position_width(), 8u);
  // Every width, forced.
  for (uint32_t w = 1; w <= 8; w++) {
    SCOPED_TRACE(w);
    RoundTrip(dir, 20 + 2 * w, PositionVersions(&a, 30, [](size_t i) { return EventPos{1, 100 + i}; }), &seg, w);
    EXPECT_EQ(seg->position_width(), w);
  }
}

// A format-6 file's time column takes the bytes time - min_time + 1 needs;
// a file without positions stays format 5 (events) or 3 (none).
TEST(EventSourcesTest, FilesWithoutPositionsKeepTheirFormats) {
  TempDir dir;
  ExtArena a;
  std::shared_ptr<Segment> seg;
  RoundTrip(dir, 1, PositionVersions(&a, 100, [](size_t i) { return EventPos{1, i}; }), &seg);
  EXPECT_EQ(gt_test::Layout(gt_test::ReadFile(dir.Sub(gt::SegmentFileName(1)))).time_width, 3u);  // 99,001 µs
  RoundTrip(dir, 3, PositionVersions(&a, 100, [](size_t) { return EventPos{}; }), &seg);
  EXPECT_EQ(Version(dir, 3), 5u);  // payloads, no positions
  std::vector<Entry> plain{{1, MakeVers(1, false), 2.0, 100}, {2, MakeVers(2, false), 1.0, 0}};
  RoundTrip(dir, 5, plain, &seg);
  EXPECT_EQ(Version(dir, 5), 3u);
  // A format-5 builder refuses positions.
  SegmentBuilder b;
  b.set_format(5);
  const auto v = PositionVersions(&a, 3, [](size_t) { return EventPos{1, 1}; });
  b.AddVertex(1, v.data(), v.size());
  SegMeta m;
  EXPECT_EQ(b.Finish(dir.path(), 9, 0, gt::kOut, &m).code, Code::kInternal);
}

class PositionsCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 20,000 versions over several 64 KiB chunks: a time, a source and a
    // position column (not combinable: positions far apart).
    v_ = PositionVersions(&a_, 20000, [](size_t i) {
      return EventPos{uint32_t(1 + i % 3), i % 11 == 0 ? (uint64_t{1} << 63) + i : i};
    });
    SegmentBuilder b;
    b.AddVertex(1, v_.data(), v_.size());
    SegMeta m;
    ASSERT_TRUE(b.Finish(dir_.path(), 1, 0, gt::kOut, &m).ok());
    path_ = dir_.Sub(gt::SegmentFileName(1));
    original_ = gt_test::ReadFile(path_);
  }
  TempDir dir_;
  ExtArena a_;
  std::vector<Entry> v_;
  std::string path_, original_;
};

TEST_F(PositionsCorruptionTest, FlippedByteIsRefusedWithFileAndOffset) {
  const gt_test::Layout L(original_);
  ASSERT_EQ(L.version, 6u);
  ASSERT_EQ(L.src_width, 1u);
  ASSERT_EQ(L.pos_width, 8u);
  ASSERT_GT(L.times_off, 0u);
  for (uint64_t off : {L.times_off + 5, L.pos_hdr_off + 2, L.pos_hdr_off + 33, L.src_off + 7000, L.pos_off + 90001,
                       L.pos_off + 20000 * 8 - 3}) {
    SCOPED_TRACE("byte " + std::to_string(off));
    gt_test::WriteFile(path_, original_);
    gt_test::FlipByte(path_, off);
    std::shared_ptr<Segment> seg;
    Status st = Segment::Open(dir_.path(), 1, &seg);
    if (st.ok()) st = seg->VerifyAll();  // a data chunk: found when read
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path_);
    EXPECT_EQ(L.Chunk(st.offset), L.Chunk(off)) << st.msg;
    if (seg != nullptr) {  // reads that meet the damage refuse it
      EXPECT_EQ(seg->EnsureVerified(0, 20000).code, Code::kCorruption);
    }
  }
}

TEST_F(PositionsCorruptionTest, BadHeadersAreRefusedAtOpen) {
  const gt_test::Layout L(original_);
  struct Case {
    const char *what;
    uint64_t at;      // byte to set
    uint64_t value;   // to this
    size_t bytes;     // of this many bytes
    uint64_t offset;  // the refusal's offset
  };
  const uint64_t h = L.pos_hdr_off;
  for (const Case c :
       {Case{"a source width of 5", h + 32, 5, 1, h + 32}, Case{"a position width of 9", h + 33, 9, 1, h + 32},
        Case{"padding not zero", h + 37, 1, 1, h + 37}, Case{"no source", h + 4, 0, 4, h},
        Case{"least source above the largest", h, 7, 4, h}, Case{"a radix with a source column", h + 16, 10, 8, h + 32},
        Case{"no least time", h + 24, 0, 8, h + 24}, Case{"an unknown flag", 12, L.flags | 1u << 29, 4, 12},
        Case{"a time width without times", 12, L.flags & ~uint64_t{gt::kFlagTimes}, 4, 12}}) {
    SCOPED_TRACE(c.what);
    std::string d = original_;
    std::memcpy(&d[c.at], &c.value, c.bytes);
    gt_test::WriteFile(path_, d);
    gt_test::Reseal(path_, L);
    std::shared_ptr<Segment> seg;
    const Status st = Segment::Open(dir_.path(), 1, &seg);
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path_);
    EXPECT_EQ(st.offset, c.offset) << st.msg;
  }
  gt_test::WriteFile(path_, original_);
  std::shared_ptr<Segment> seg;
  EXPECT_TRUE(Segment::Open(dir_.path(), 1, &seg).ok());
}

// The store, through the C API.
struct Store {
  gt_store *s = nullptr;
  void Open(const std::string &dir) {
    gt_options o{};
    o.in_edges = 1;
    o.disable_auto_compaction = 1;
    Err err;
    ASSERT_EQ(gt_open(dir.c_str(), &o, &s, err.get()), GT_OK) << err.msg();
  }
  void Close() {
    if (s != nullptr) gt_close(s, nullptr);
    s = nullptr;
  }
  ~Store() { Close(); }
  uint32_t Source(const std::string &name) {
    uint32_t id = 0;
    Err err;
    EXPECT_EQ(gt_add_event_source(s, reinterpret_cast<const uint8_t *>(name.data()), name.size(), &id, err.get()),
              GT_OK)
        << err.msg();
    return id;
  }
  std::vector<std::string> Sources() {
    uint8_t names[4096];
    uint64_t ends[64];
    size_t nl = 0, n = 0;
    Err err;
    EXPECT_EQ(gt_event_sources(s, names, sizeof names, &nl, ends, 64, &n, err.get()), GT_OK) << err.msg();
    std::vector<std::string> out;
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
      out.emplace_back(reinterpret_cast<const char *>(names) + at, ends[i] - at);
      at = ends[i];
    }
    return out;
  }
  // An accumulate upsert src -> dst with source position (src_id, pos).
  int Upsert(uint64_t src, uint64_t dst, uint32_t src_id, uint64_t pos, int64_t time, std::string *msg = nullptr) {
    uint8_t pay[GT_SOURCE_POS_BYTES];
    std::memcpy(pay, &src_id, 4);
    std::memcpy(pay + 4, &pos, 8);
    gt_op op{};
    op.src = src;
    op.dst = dst;
    op.weight = 2;
    op.kind = GT_OP_UPSERT;
    op.time = time;
    op.flags = GT_OP_ACCUMULATE | GT_OP_SOURCE;
    op.payload_len = GT_SOURCE_POS_BYTES;
    uint64_t seq;
    Err err;
    const int rc = gt_apply_ex(s, &op, 1, pay, sizeof pay, nullptr, 0, &seq, err.get());
    if (msg) *msg = err.msg();
    return rc;
  }
  // The edge's (count, source, position) and its events' positions.
  std::string Read(uint64_t src, uint64_t dst, uint32_t dir = GT_OUT) {
    gt_snapshot *sn = nullptr;
    Err err;
    EXPECT_EQ(gt_snapshot_new(s, &sn, err.get()), GT_OK) << err.msg();
    std::string out;
    uint64_t dsts[8];
    double w[8];
    uint16_t t[8];
    int64_t tm[8];
    gt_edge_ext x[8];
    uint8_t pay[256];
    size_t pl = 0, n = 0;
    uint32_t more = 0;
    const uint64_t v = dir == GT_OUT ? src : dst, want = dir == GT_OUT ? dst : src;
    EXPECT_EQ(gt_snapshot_neighbors_after_ext(sn, v, dir, nullptr, 0, 0, 0, dsts, w, t, tm, x, 8, pay, sizeof pay, &pl,
                                              &n, &more, err.get()),
              GT_OK)
        << err.msg();
    for (size_t i = 0; i < n; i++)
      if (dsts[i] == want)
        out += std::to_string(x[i].count) + "@" + std::to_string(x[i].source) + "/" + std::to_string(x[i].position);
    if (dir == GT_OUT) {
      uint64_t seqs[8];
      uint32_t folded = 0;
      EXPECT_EQ(gt_snapshot_edge_events(sn, src, dst, 0, 0, 0, seqs, w, tm, x, 8, pay, sizeof pay, &pl, &n, &more,
                                        &folded, err.get()),
                GT_OK)
          << err.msg();
      for (size_t i = 0; i < n; i++) out += " " + std::to_string(x[i].source) + "/" + std::to_string(x[i].position);
    }
    gt_snapshot_release(sn);
    return out;
  }
};

TEST(EventSourcesTest, PositionsThroughTheStore) {
  TempDir dir;
  Store st;
  st.Open(dir.path());
  Err err;
  ASSERT_EQ(gt_set_type_aggregate(st.s, 0, GT_TYPE_ACCUMULATE, 3600000000, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(st.Source("payments/0"), 1u);
  EXPECT_EQ(st.Source("payments/1"), 2u);
  EXPECT_EQ(st.Source("payments/0"), 1u);  // the same name, the same number
  std::string msg;
  EXPECT_EQ(st.Upsert(1, 2, 3, 10, 1000, &msg), GT_ERR_INVALID);  // not numbered
  EXPECT_NE(msg.find("event source 3"), std::string::npos) << msg;
  ASSERT_EQ(st.Upsert(1, 2, 1, 10, 1000), GT_OK);
  ASSERT_EQ(st.Upsert(1, 2, 2, 77, 2000), GT_OK);
  const std::string want = "2@2/77 2/77 1/10";
  EXPECT_EQ(st.Read(1, 2), want);  // the MemGraph
  EXPECT_EQ(st.Read(1, 2, GT_IN), "2@2/77");
  ASSERT_EQ(gt_flush(st.s, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(st.Read(1, 2), want);  // a format-6 L0 file
  EXPECT_EQ(st.Read(1, 2, GT_IN), "2@2/77");
  ASSERT_EQ(st.Upsert(1, 2, 1, 11, 3000), GT_OK);
  ASSERT_EQ(gt_flush(st.s, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(gt_compact_all(st.s, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(st.Read(1, 2), "3@1/11 1/11 2/77 1/10");  // compacted
  st.Close();
  st.Open(dir.path());
  EXPECT_EQ(st.Sources(), (std::vector<std::string>{"payments/0", "payments/1"}));
  EXPECT_EQ(st.Read(1, 2), "3@1/11 1/11 2/77 1/10");
  EXPECT_EQ(st.Read(1, 2, GT_IN), "3@1/11");
  EXPECT_EQ(st.Source("refunds/0"), 3u);  // numbering goes on
  st.Close();
  // A store opened read-only lists the sources and numbers no new one.
  {
    gt_options o{};
    o.read_only = 1;
    o.in_edges_as_stored = 1;
    gt_store *ro = nullptr;
    ASSERT_EQ(gt_open(dir.path().c_str(), &o, &ro, err.get()), GT_OK) << err.msg();
    uint32_t id = 0;
    EXPECT_EQ(gt_add_event_source(ro, reinterpret_cast<const uint8_t *>("payments/1"), 10, &id, err.get()), GT_OK);
    EXPECT_EQ(id, 2u);
    EXPECT_EQ(gt_add_event_source(ro, reinterpret_cast<const uint8_t *>("new/0"), 5, &id, err.get()), GT_ERR_INVALID);
    err.Reset();
    gt_close(ro, nullptr);
  }
  // A MANIFEST that lost its source records (every edit but them kept)
  // no longer numbers what the files name: refused at open, naming the
  // file and its source position section.
  gt::ManifestContents mc;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(dir.Sub("MANIFEST"), &mc, &problems).ok());
  ASSERT_TRUE(problems.empty());
  std::vector<gt::ManifestEdit> kept;
  for (gt::ManifestEdit e : mc.edits) {
    e.sources.clear();
    if (e.kind != gt::EditKind::kSources) kept.push_back(e);
  }
  gt_test::WriteFile(dir.Sub("MANIFEST"), gt::ManifestBytes(kept));
  gt_options o{};
  o.in_edges_as_stored = 1;
  gt_store *bad = nullptr;
  EXPECT_EQ(gt_open(dir.path().c_str(), &o, &bad, err.get()), GT_ERR_CORRUPTION);
  EXPECT_NE(err.msg().find("names event source"), std::string::npos) << err.msg();
  EXPECT_NE(err.file().find(".seg"), std::string::npos) << err.file();
  EXPECT_GT(err.get()->offset, 128u);
  if (bad != nullptr) gt_close(bad, nullptr);
  // inspect --verify's check finds the same.
  err.Reset();
  gt_check_report *r = nullptr;
  ASSERT_EQ(gt_check(dir.path().c_str(), UINT64_MAX, &r, err.get()), GT_OK) << err.msg();
  bool found = false;
  for (size_t i = 0; i < r->nproblems; i++)
    found = found || (std::string(r->problems[i].what).find("names event source") != std::string::npos &&
                      r->problems[i].offset > 128);
  EXPECT_TRUE(found);
  gt_check_report_free(r);
}

}  // namespace
