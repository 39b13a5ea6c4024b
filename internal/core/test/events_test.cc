// events_test.cc -- edge events (issue 42) through the segment format and
// the C API.
//
// Segment format 5: the count, first and payload columns round-trip
// (SegmentBuilder, Transpose, Segment), are kept only when some version
// needs them, and are refused with file and offset when damaged (a flipped
// byte by the chunk checksums; payload offsets that are not monotone or
// run past the column, in a file whose checksums were made to match, by
// Open and gt_check); a format-3 builder refuses operands and an older
// header claiming the new columns is refused. The narrow columns (vers,
// count, first as a delta from the time, payload offsets) take the width
// their values need, each width 1..8 round-trips (forced where no value
// of a test can need it), the first column is left out when every
// operand's first time is its time, headers whose widths disagree with
// their columns are refused, and format-4 files (8-byte columns, first
// absolute) read unchanged.
//
// The store: a randomized model of accumulate and replace upserts with
// payloads, deletes and vertex deletes of two types, with in-edges, pinned
// snapshots and history, retention windows, flushes, compactions and a
// reopen, against an oracle log of every op: every edge read (_ext lookup,
// pages in both directions, plain neighbors) returns the oracle's fold, at
// the newest seq and at every pinned one, and gt_snapshot_edge_events
// lists every event within retain.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "graphtide.h"
#include "segment.h"
#include "store_test_util.h"
#include "test_util.h"

namespace {

using gt::Code;
using gt::Entry;
using gt::ExtArena;
using gt::MakeVers;
using gt::Segment;
using gt::SegmentBuilder;
using gt::SegMeta;
using gt::Status;
using gt_test::Err;
using gt_test::TempDir;

std::string Pay(const Entry &e) {
  if (e.ext == nullptr) return "";
  return std::string(reinterpret_cast<const char *>(e.ext->bytes()), e.ext->len);
}

// Versions of vertices 1..n with every kind of extras.
std::vector<std::vector<Entry>> EventVertices(ExtArena *a, uint64_t n) {
  std::vector<std::vector<Entry>> vs(n);
  for (uint64_t s = 1; s <= n; s++) {
    for (uint64_t d = 0; d < 40; d++) {
      Entry e{d * 3 + s % 3, MakeVers(100 + d, false, d % 2), 1.5 * double(d), int64_t(1000 + d)};
      const std::string pay = d % 4 == 0 ? "" : "payload of " + std::to_string(s) + "->" + std::to_string(d);
      if (d % 5 != 0)
        e.ext = a->Make(d % 3, d % 3 ? int64_t(900 + d) : 0, reinterpret_cast<const uint8_t *>(pay.data()),
                        static_cast<uint32_t>(pay.size()));
      vs[s - 1].push_back(e);
    }
  }
  return vs;
}

void ExpectSame(const Segment &seg, uint64_t src, const std::vector<Entry> &want) {
  uint64_t b, e;
  ASSERT_TRUE(seg.Find(src, &b, &e));
  ASSERT_EQ(e - b, want.size());
  ASSERT_TRUE(seg.EnsureVerified(b, e).ok());
  for (size_t i = 0; i < want.size(); i++) {
    const uint64_t k = b + i;
    EXPECT_EQ(seg.dst(k), want[i].dst);
    EXPECT_EQ(seg.vers(k), want[i].vers);
    EXPECT_EQ(seg.weight(k), want[i].weight);
    EXPECT_EQ(seg.time(k), want[i].time);
    EXPECT_EQ(seg.count(k), gt::EntryCount(want[i]));
    EXPECT_EQ(seg.first(k), want[i].ext != nullptr && want[i].ext->count != 0 ? want[i].ext->first : 0);
    const uint8_t *p;
    const uint32_t n = seg.payload(k, &p);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(p), n), Pay(want[i])) << src << " " << i;
  }
}

TEST(EventsSegmentTest, ColumnsRoundTripAndTranspose) {
  TempDir dir;
  ExtArena a;
  const auto vs = EventVertices(&a, 6);
  SegmentBuilder b;
  for (uint64_t s = 1; s <= vs.size(); s++) b.AddVertex(s, vs[s - 1].data(), vs[s - 1].size());
  SegMeta m;
  ASSERT_TRUE(b.Finish(dir.path(), 1, 0, gt::kOut, &m).ok());
  std::shared_ptr<Segment> seg;
  Status st = Segment::Open(dir.path(), 1, &seg);
  ASSERT_TRUE(st.ok()) << st.msg;
  EXPECT_TRUE(seg->flags() & gt::kFlagCounts);
  EXPECT_TRUE(seg->flags() & gt::kFlagPayload);
  EXPECT_EQ(gt_test::GetLE<uint32_t>(gt_test::ReadFile(dir.Sub(gt::SegmentFileName(1))), 8), 5u);
  for (uint64_t s = 1; s <= vs.size(); s++) ExpectSame(*seg, s, vs[s - 1]);
  EXPECT_TRUE(seg->VerifyAll().ok());
  // Transposed: each version at its dst, with its extras.
  SegmentBuilder in;
  b.Transpose(&in);
  ASSERT_TRUE(in.Finish(dir.path(), 2, 0, gt::kIn, &m).ok());
  std::shared_ptr<Segment> tseg;
  st = Segment::Open(dir.path(), 2, &tseg);
  ASSERT_TRUE(st.ok()) << st.msg;
  std::map<uint64_t, std::vector<Entry>> want;  // in-vertex -> versions, src ascending (stable)
  for (uint64_t s = 1; s <= vs.size(); s++)
    for (const Entry &e : vs[s - 1]) {
      Entry t = e;
      t.dst = s;
      want[e.dst].push_back(t);
    }
  for (const auto &kv : want) ExpectSame(*tseg, kv.first, kv.second);
}

TEST(EventsSegmentTest, ColumnsOnlyWhenNeeded) {
  TempDir dir;
  ExtArena a;
  const std::string pay = "ref";
  // Payloads without operands: a payload column, no count column.
  std::vector<Entry> v{{1, MakeVers(5, false), 2.0, 0,
                        a.Make(0, 0, reinterpret_cast<const uint8_t *>(pay.data()), uint32_t(pay.size()))},
                       {2, MakeVers(5, false), 2.0, 0}};
  SegmentBuilder b;
  b.AddVertex(1, v.data(), v.size());
  SegMeta m;
  ASSERT_TRUE(b.Finish(dir.path(), 1, 0, gt::kOut, &m).ok());
  std::shared_ptr<Segment> seg;
  ASSERT_TRUE(Segment::Open(dir.path(), 1, &seg).ok());
  EXPECT_FALSE(seg->flags() & gt::kFlagCounts);
  EXPECT_TRUE(seg->flags() & gt::kFlagPayload);
  ExpectSame(*seg, 1, v);
  // Neither: a replace-only file has neither column.
  SegmentBuilder r;
  v[0].ext = nullptr;
  r.AddVertex(1, v.data(), v.size());
  ASSERT_TRUE(r.Finish(dir.path(), 2, 0, gt::kOut, &m).ok());
  ASSERT_TRUE(Segment::Open(dir.path(), 2, &seg).ok());
  EXPECT_FALSE(seg->flags() & (gt::kFlagCounts | gt::kFlagPayload));
  EXPECT_FALSE(seg->has_ext());
  // ... and is written as format 3, which a build before events reads.
  EXPECT_EQ(gt_test::GetLE<uint32_t>(gt_test::ReadFile(dir.Sub(gt::SegmentFileName(2))), 8), 3u);
}

TEST(EventsSegmentTest, OlderFormatsCannotHoldEvents) {
  TempDir dir;
  ExtArena a;
  const auto vs = EventVertices(&a, 1);
  SegmentBuilder b;
  b.set_format(3);
  b.AddVertex(1, vs[0].data(), vs[0].size());
  SegMeta m;
  Status st = b.Finish(dir.path(), 1, 0, gt::kOut, &m);
  EXPECT_EQ(st.code, Code::kInternal) << st.msg;
  // A header of version 3 that claims the new columns is damage.
  SegmentBuilder c;
  c.AddVertex(1, vs[0].data(), vs[0].size());
  ASSERT_TRUE(c.Finish(dir.path(), 2, 0, gt::kOut, &m).ok());
  const std::string path = dir.Sub(gt::SegmentFileName(2));
  std::string d = gt_test::ReadFile(path);
  const uint32_t v3 = 3;
  std::memcpy(&d[8], &v3, 4);
  const uint32_t crc = gt::Crc32c(d.data(), 124);
  std::memcpy(&d[124], &crc, 4);
  gt_test::WriteFile(path, d);
  std::shared_ptr<Segment> seg;
  st = Segment::Open(dir.path(), 2, &seg);
  EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
  EXPECT_EQ(st.file, path);
  EXPECT_EQ(st.offset, 12u);
}

// The least value that needs w bytes (1 for w = 1).
uint64_t NeedsBytes(uint32_t w) { return w == 1 ? 1 : uint64_t{1} << (8 * (w - 1)); }

// Writes the vertices vs (1..n) to file id (format: set_format's, 0 the
// current one; min_width: set_min_width's), opens it, and checks every
// version and the transposed file's against vs.
void RoundTrip(const TempDir &dir, uint64_t id, const std::vector<std::vector<Entry>> &vs, uint32_t format,
               uint32_t min_width, std::shared_ptr<Segment> *seg) {
  SegmentBuilder bb;
  SegmentBuilder *b = &bb;
  b->set_format(format);
  b->set_min_width(min_width);
  for (uint64_t s = 1; s <= vs.size(); s++) b->AddVertex(s, vs[s - 1].data(), vs[s - 1].size());
  SegMeta m;
  ASSERT_TRUE(b->Finish(dir.path(), id, 0, gt::kOut, &m).ok());
  ASSERT_EQ(m.bytes, gt_test::ReadFile(dir.Sub(gt::SegmentFileName(id))).size());
  Status st = Segment::Open(dir.path(), id, seg);
  ASSERT_TRUE(st.ok()) << st.msg;
  ASSERT_TRUE((*seg)->VerifyAll().ok());
  for (uint64_t s = 1; s <= vs.size(); s++) ExpectSame(**seg, s, vs[s - 1]);
  SegmentBuilder in;
  in.set_format(format);
  in.set_min_width(min_width);
  b->Transpose(&in);
  ASSERT_TRUE(in.Finish(dir.path(), id + 1000, 0, gt::kIn, &m).ok());
  std::shared_ptr<Segment> tseg;
  st = Segment::Open(dir.path(), id + 1000, &tseg);
  ASSERT_TRUE(st.ok()) << st.msg;
  EXPECT_EQ(tseg->vers_width(), (*seg)->vers_width());
  EXPECT_EQ(tseg->count_width(), (*seg)->count_width());
  EXPECT_EQ(tseg->first_width(), (*seg)->first_width());
  EXPECT_EQ(tseg->payload_offset_width(), (*seg)->payload_offset_width());
  std::map<uint64_t, std::vector<Entry>> want;  // in-vertex -> versions, src ascending
  for (uint64_t s = 1; s <= vs.size(); s++)
    for (const Entry &e : vs[s - 1]) {
      Entry t = e;
      t.dst = s;
      want[e.dst].push_back(t);
    }
  for (const auto &kv : want) ExpectSame(*tseg, kv.first, kv.second);
}

// Each narrow column takes the least width its largest value needs: for
// w = 1..8 a count, a first-time delta and (w <= 6: a version word is
// below 2^48) a seq that need w bytes, and payload offsets that need 1, 2
// or 3 (a test cannot hold 4 GiB of payload).
TEST(EventsSegmentTest, NarrowColumnsTakeTheWidthTheirValuesNeed) {
  TempDir dir;
  for (uint32_t w = 1; w <= 8; w++) {
    SCOPED_TRACE("width " + std::to_string(w));
    ExtArena a;
    const uint64_t big = NeedsBytes(w);
    const uint32_t wv = std::min<uint32_t>(w, 6);
    // seq << 1 | 1 needs wv bytes (the writer sizes the column by the
    // largest seq, tombstone bit set).
    const uint64_t max_seq = wv == 1 ? 3 : NeedsBytes(wv) >> 1;
    const uint32_t wp = w <= 3 ? w : 0;  // payload bytes in all: need wp bytes
    const uint64_t pay_total = wp == 0 ? 0 : wp == 1 ? 200 : wp == 2 ? 3000 : 70000;
    std::vector<std::vector<Entry>> vs(3);
    uint64_t pay_used = 0;
    for (uint64_t s = 1; s <= 3; s++) {
      for (uint64_t d = 0; d < 10; d++) {
        const uint64_t k = (s - 1) * 10 + d;
        const uint64_t seq = k == 7 ? max_seq : 1 + k % 3;
        const int64_t time = (int64_t{1} << 40) + int64_t(k * 1000);
        Entry e{d, MakeVers(seq, k % 10 == 0, k % 2), double(k) + 0.25, time};
        // Counts: the largest needs w bytes; a few versions are no
        // operand (count 0), some of them with a payload.
        const uint64_t count = k == 11 ? big : k % 5 == 0 ? 0 : 1 + k % 4;
        // First times: time - first needs w bytes at its largest (w = 8:
        // a first time after the time, whose difference wraps).
        const uint64_t delta = k == 23 ? (w == 8 ? uint64_t(-5) : big) : k % 3 == 0 ? 0 : 1 + k % 7;
        std::string pay;
        if (pay_total != 0 && k % 4 != 1) {
          // The last payload (k = 28) takes what is left.
          const uint64_t len = k == 28 ? pay_total - pay_used : std::min<uint64_t>(pay_total - pay_used, 1 + k);
          for (uint64_t i = 0; i < len; i++) pay.push_back(static_cast<char>('a' + (k + i) % 26));
          pay_used += len;
        }
        if (count != 0 || !pay.empty())
          e.ext = a.Make(count, count != 0 ? static_cast<int64_t>(static_cast<uint64_t>(time) - delta) : 0,
                         reinterpret_cast<const uint8_t *>(pay.data()), static_cast<uint32_t>(pay.size()));
        vs[s - 1].push_back(e);
      }
    }
    ASSERT_EQ(pay_used, pay_total);
    std::shared_ptr<Segment> seg;
    RoundTrip(dir, w, vs, 0, 0, &seg);
    if (HasFatalFailure()) return;
    EXPECT_EQ(gt_test::GetLE<uint32_t>(gt_test::ReadFile(seg->path()), 8), 5u);
    EXPECT_EQ(seg->vers_width(), wv);
    EXPECT_EQ(seg->count_width(), w);
    EXPECT_EQ(seg->first_width(), w);
    EXPECT_EQ(seg->payload_offset_width(), wp);
    // The file is as large as its widths say (gt_test::Layout checks the
    // sections against the footer).
    const gt_test::Layout L(gt_test::ReadFile(seg->path()));
    EXPECT_EQ(L.count_width, w);
  }
}

// Every width 1..8 of every narrow column, forced (set_min_width) on
// small values: the masks and strides read each back.
TEST(EventsSegmentTest, EveryForcedWidthRoundTrips) {
  TempDir dir;
  for (uint32_t w = 1; w <= 8; w++) {
    SCOPED_TRACE("width " + std::to_string(w));
    ExtArena a;
    const auto vs = EventVertices(&a, 5);
    std::shared_ptr<Segment> seg;
    RoundTrip(dir, w, vs, 0, w, &seg);
    if (HasFatalFailure()) return;
    EXPECT_EQ(seg->vers_width(), std::max<uint32_t>(w, 2));  // seqs up to 139
    EXPECT_EQ(seg->count_width(), w);
    EXPECT_EQ(seg->first_width(), w);
    EXPECT_EQ(seg->payload_offset_width(), std::max<uint32_t>(w, 2));  // about 3,000 bytes of payload
  }
}

// A file whose every operand's first time is its time (one event each,
// as a flush of single payments writes) has no first column: first reads
// as the time, and as 0 for a version that is no operand.
TEST(EventsSegmentTest, FirstColumnLeftOutWhenEveryFirstIsTheTime) {
  TempDir dir;
  ExtArena a;
  std::vector<std::vector<Entry>> vs(2);
  for (uint64_t s = 1; s <= 2; s++)
    for (uint64_t d = 0; d < 20; d++) {
      const int64_t time = d == 3 ? 0 : 1'700'000'000'000'000 + int64_t(d * s);
      Entry e{d, MakeVers(10 + d, false), 2.5, time};
      if (d % 4 != 0) e.ext = a.Make(d % 4 == 1 ? 1 : 3, time, nullptr, 0);
      vs[s - 1].push_back(e);
    }
  std::shared_ptr<Segment> seg;
  RoundTrip(dir, 1, vs, 0, 0, &seg);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(seg->flags() & gt::kFlagCounts);
  EXPECT_EQ(seg->count_width(), 1u);
  EXPECT_EQ(seg->first_width(), 0u);
  const gt_test::Layout L(gt_test::ReadFile(seg->path()));
  EXPECT_EQ(L.firsts_off, L.counts_off + 40);  // 40 one-byte counts, then no first column
  uint64_t b0, e0;
  ASSERT_TRUE(seg->Find(1, &b0, &e0));
  EXPECT_EQ(seg->first(b0 + 1), vs[0][1].time);
  EXPECT_EQ(seg->first(b0), 0);  // no operand
}

// A file of format 4 (as the build before narrow columns wrote it: 8-byte
// vers, count, first and payload offset columns, first an absolute time)
// reads unchanged, and so does its transposed file.
TEST(EventsSegmentTest, Format4FilesReadUnchanged) {
  TempDir dir;
  ExtArena a;
  auto vs = EventVertices(&a, 6);
  // A first time that is no delta of a small width.
  vs[2][7].ext = a.Make(4, -5, nullptr, 0);
  std::shared_ptr<Segment> seg;
  RoundTrip(dir, 1, vs, 4, 0, &seg);
  if (HasFatalFailure()) return;
  const std::string d = gt_test::ReadFile(seg->path());
  EXPECT_EQ(gt_test::GetLE<uint32_t>(d, 8), 4u);
  EXPECT_EQ(gt_test::GetLE<uint32_t>(d, 12) & gt::kFlagWidthBits, 0u);
  EXPECT_EQ(seg->vers_width(), 8u);
  EXPECT_EQ(seg->count_width(), 8u);
  EXPECT_EQ(seg->first_width(), 8u);
  EXPECT_EQ(seg->payload_offset_width(), 8u);
  // The columns are where format 4 put them: u64 counts, then the i64
  // first times as they are.
  const gt_test::Layout L(d);
  uint64_t b0, e0;
  ASSERT_TRUE(seg->Find(3, &b0, &e0));
  EXPECT_EQ(gt_test::GetLE<uint64_t>(d, L.counts_off + (b0 + 7) * 8), 4u);
  EXPECT_EQ(static_cast<int64_t>(gt_test::GetLE<uint64_t>(d, L.firsts_off + (b0 + 7) * 8)), -5);
  // The same versions written now take fewer bytes.
  std::shared_ptr<Segment> seg5;
  RoundTrip(dir, 2, vs, 0, 0, &seg5);
  if (HasFatalFailure()) return;
  EXPECT_LT(seg5->meta().bytes, seg->meta().bytes);
}

// A header whose widths disagree with its columns is damage, refused at
// open with the flags' offset: width bits in a format-4 file, a width for
// a column the file lacks, a first width over 8, unknown bits.
TEST(EventsSegmentTest, BadWidthsAreRefusedAtOpen) {
  TempDir dir;
  ExtArena a;
  std::vector<Entry> v{{1, MakeVers(5, false), 2.0, 100, a.Make(2, 50, nullptr, 0)}, {2, MakeVers(6, false), 1.0, 0}};
  SegmentBuilder b;
  b.AddVertex(1, v.data(), v.size());
  SegMeta m;
  ASSERT_TRUE(b.Finish(dir.path(), 1, 0, gt::kOut, &m).ok());
  const std::string path = dir.Sub(gt::SegmentFileName(1));
  const std::string original = gt_test::ReadFile(path);
  const uint32_t flags = gt_test::GetLE<uint32_t>(original, 12);
  ASSERT_EQ(flags & gt::kFlagPayload, 0u);
  struct Case {
    const char *what;
    uint32_t version, flags;
  };
  for (const Case c :
       {Case{"widths in format 4", 4, flags},
        Case{"a payload offset width without payloads", 5, flags | 3u << gt::kPayWidthShift},
        Case{"a first width of 9", 5, (flags & ~(15u << gt::kFirstWidthShift)) | 9u << gt::kFirstWidthShift},
        Case{"an unknown bit", 5, flags | 1u << 27},
        Case{"a count width without counts", 5, (flags & ~gt::kFlagCounts)}}) {
    SCOPED_TRACE(c.what);
    std::string d = original;
    std::memcpy(&d[8], &c.version, 4);
    std::memcpy(&d[12], &c.flags, 4);
    const uint32_t crc = gt::Crc32c(d.data(), 124);
    std::memcpy(&d[124], &crc, 4);
    gt_test::WriteFile(path, d);
    std::shared_ptr<Segment> seg;
    const Status st = Segment::Open(dir.path(), 1, &seg);
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path);
    EXPECT_EQ(st.offset, 12u) << st.msg;
  }
  gt_test::WriteFile(path, original);
  std::shared_ptr<Segment> seg;
  EXPECT_TRUE(Segment::Open(dir.path(), 1, &seg).ok());
}

class EventsCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vs_ = EventVertices(&a_, 30);
    SegmentBuilder b;
    for (uint64_t s = 1; s <= vs_.size(); s++) b.AddVertex(s, vs_[s - 1].data(), vs_[s - 1].size());
    SegMeta m;
    ASSERT_TRUE(b.Finish(dir_.path(), 1, 0, gt::kOut, &m).ok());
    path_ = dir_.Sub(gt::SegmentFileName(1));
    original_ = gt_test::ReadFile(path_);
  }
  Status OpenNow() {
    std::shared_ptr<Segment> seg;
    return Segment::Open(dir_.path(), 1, &seg);
  }
  // gt_check of a store directory holding the damaged file (made by a store
  // of its own, then the file replaced by the damaged copy).
  TempDir dir_;
  ExtArena a_;
  std::vector<std::vector<Entry>> vs_;
  std::string path_, original_;
};

TEST_F(EventsCorruptionTest, FlippedByteOfANewColumnIsRefusedWithFileAndOffset) {
  const gt_test::Layout L(original_);
  ASSERT_GT(L.counts_off, 0u);
  ASSERT_GT(L.pay_offs_off, 0u);
  ASSERT_GT(L.pay_len, 0u);
  ASSERT_GT(L.vers_off, 0u);
  ASSERT_GT(L.firsts_off, L.counts_off);  // a first column (of 1-byte deltas)
  for (uint64_t off : {L.vers_off + 3, L.counts_off + 8, L.firsts_off + 16, L.pay_offs_off + 24, L.pay_data_off + 5,
                       L.pay_data_off + L.pay_len - 9}) {
    SCOPED_TRACE("byte " + std::to_string(off));
    gt_test::WriteFile(path_, original_);
    gt_test::FlipByte(path_, off);
    std::shared_ptr<Segment> seg;
    Status st = Segment::Open(dir_.path(), 1, &seg);
    if (st.ok()) {
      // A data chunk: found when read (every column of the chunk's entries).
      st = seg->VerifyAll();
    }
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path_);
    EXPECT_EQ(L.Chunk(st.offset), L.Chunk(off)) << st.msg;
  }
}

TEST_F(EventsCorruptionTest, BadPayloadOffsetsAreRefusedAtOpen) {
  const gt_test::Layout L(original_);
  const uint64_t ne = L.nentries;
  struct Case {
    const char *what;
    uint64_t index;  // which offset to change
    int64_t delta;
  };
  const uint64_t pw = L.pay_width;  // format 5: narrow offsets
  ASSERT_LT(pw, 8u);
  for (const Case c : {Case{"not monotone", 10, 10000}, Case{"past the column", ne, 64}, Case{"first not 0", 0, 8},
                       Case{"short of the column", ne, -16}}) {
    SCOPED_TRACE(c.what);
    std::string d = original_;
    const uint64_t at = L.pay_offs_off + c.index * pw;
    uint64_t v = 0;
    std::memcpy(&v, &d[at], pw);
    v = static_cast<uint64_t>(static_cast<int64_t>(v) + c.delta);
    ASSERT_LT(v, uint64_t{1} << (8 * pw)) << "the changed offset fits the column's width";
    std::memcpy(&d[at], &v, pw);
    gt_test::WriteFile(path_, d);
    gt_test::Reseal(path_, L);
    const Status st = OpenNow();
    EXPECT_EQ(st.code, Code::kCorruption) << st.msg;
    EXPECT_EQ(st.file, path_);
    EXPECT_GE(st.offset, L.pay_offs_off) << st.msg;
    EXPECT_LE(st.offset, L.pay_offs_off + ne * pw) << st.msg;
  }
  gt_test::WriteFile(path_, original_);
  EXPECT_TRUE(OpenNow().ok());
}

// ---------------------------------------------------------------------------
// The store: a model of events against an oracle log.

constexpr uint32_t kTypes = 2;
// Edges read whose fold holds events retention folded (the model test
// checks that retention did fold some).
int g_folded_reads = 0;

struct LogOp {
  uint64_t seq;
  gt_op op;
  std::string payload;
};

struct Model {
  std::vector<LogOp> log;  // every op applied, in order
  // The reference fold of (src, dst, type) at tau: (count, sum, first,
  // last, payload, present) from the log alone (graphtide.h's contract).
  struct Edge {
    uint64_t count = 0;
    double weight = 0;
    int64_t time = 0, first = 0;
    std::string payload;
    bool operator==(const Edge &o) const {
      return std::tie(count, weight, time, first, payload) == std::tie(o.count, o.weight, o.time, o.first, o.payload);
    }
  };
  // Vertex delete seqs of v that a reader at tau sees (the last one).
  uint64_t Deleted(uint64_t v, uint64_t tau) const {
    uint64_t d = 0;
    for (const LogOp &l : log)
      if (l.seq <= tau && l.op.kind == GT_OP_DELETE_VERTEX && l.op.src == v) d = std::max(d, l.seq);
    return d;
  }
  // Versions of the edge newest first (later op of a batch first).
  std::vector<const LogOp *> Versions(uint64_t s, uint64_t d, uint32_t t, uint64_t tau) const {
    std::vector<const LogOp *> vs;
    for (auto it = log.rbegin(); it != log.rend(); ++it)
      if (it->seq <= tau && (it->op.kind == GT_OP_UPSERT || it->op.kind == GT_OP_DELETE_EDGE) && it->op.src == s &&
          it->op.dst == d && it->op.type == t)
        vs.push_back(&*it);
    return vs;
  }
  bool Fold(uint64_t s, uint64_t d, uint32_t t, uint64_t tau, Edge *out,
            std::vector<const LogOp *> *events = nullptr) const {
    const uint64_t dv = std::max(Deleted(s, tau), Deleted(d, tau));
    const std::vector<const LogOp *> vs = Versions(s, d, t, tau);
    // An op of a batch that deletes one of its vertices later is dead on arrival.
    auto hidden = [&](const LogOp *l) {
      if (l->op.kind == GT_OP_DELETE_EDGE || l->seq < dv) return true;
      for (const LogOp &x : log)
        if (x.seq == l->seq && x.op.kind == GT_OP_DELETE_VERTEX && (x.op.src == s || x.op.src == d) && &x > l)
          return true;
      return false;
    };
    if (vs.empty() || hidden(vs[0])) return false;
    const bool acc = vs[0]->op.flags & GT_OP_ACCUMULATE;
    *out = Edge{};
    out->weight = vs[0]->op.weight;
    out->time = vs[0]->op.time;
    out->payload = vs[0]->payload;
    if (!acc) return true;
    for (const LogOp *l : vs) {
      if (hidden(l) || !(l->op.flags & GT_OP_ACCUMULATE)) break;
      if (l != vs[0]) {
        out->weight += l->op.weight;
        out->time = std::max(out->time, l->op.time);
      }
      out->count++;
      out->first = gt::MinTime(out->first, l->op.time);
      if (events != nullptr) events->push_back(l);
    }
    return true;
  }
};

std::string Str(const Model::Edge &e) {
  return "c" + std::to_string(e.count) + " w" + std::to_string(e.weight) + " t" + std::to_string(e.time) + " f" +
         std::to_string(e.first) + " p'" + e.payload + "'";
}

struct Snap {
  gt_snapshot *s = nullptr;
  explicit Snap(gt_snapshot *x) : s(x) {}
  ~Snap() { gt_snapshot_release(s); }
  Snap(const Snap &) = delete;
  Snap &operator=(const Snap &) = delete;
};

// Every edge read of snap against the model at tau.
void CheckReads(gt_snapshot *snap, const Model &m, uint64_t tau, uint64_t nv, bool in_edges,
                const std::vector<int64_t> &since, const std::string &ctx) {
  for (uint64_t s = 0; s < nv; s++) {
    for (uint64_t d = 0; d < nv; d++) {
      // The lookup: every type at once.
      double w[kTypes];
      uint16_t ty[kTypes];
      int64_t tm[kTypes];
      gt_edge_ext x[kTypes];
      uint8_t pay[1024];
      size_t n = 0, pl = 0;
      Err err;
      ASSERT_EQ(gt_snapshot_edge_ext(snap, s, d, nullptr, w, ty, tm, x, kTypes, pay, sizeof pay, &pl, &n, err.get()),
                GT_OK)
          << err.msg();
      std::map<uint32_t, Model::Edge> got;
      for (size_t i = 0; i < n; i++) {
        Model::Edge e;
        e.count = x[i].count;
        e.weight = w[i];
        e.time = tm[i];
        e.first = x[i].first_time;
        e.payload.assign(reinterpret_cast<const char *>(pay + x[i].payload_off), x[i].payload_len);
        got[ty[i]] = e;
      }
      for (uint32_t t = 0; t < kTypes; t++) {
        Model::Edge want;
        std::vector<const LogOp *> evs;
        const bool has = m.Fold(s, d, t, tau, &want, &evs);
        const std::string where = ctx + " edge " + std::to_string(s) + "->" + std::to_string(d) + " type " +
                                  std::to_string(t) + " at " + std::to_string(tau);
        ASSERT_EQ(got.count(t) != 0, has) << where;
        if (!has) continue;
        ASSERT_EQ(Str(got[t]), Str(want)) << where;
        // Events within retain: listed one by one, newest first.
        uint64_t seqs[64];
        double ew[64];
        int64_t et[64];
        gt_edge_ext ex[64];
        uint8_t epay[4096];
        size_t en = 0, epl = 0;
        uint32_t more = 0, folded = 0;
        ASSERT_EQ(gt_snapshot_edge_events(snap, s, d, t, since[t], 0, seqs, ew, et, ex, 64, epay, sizeof epay, &epl,
                                          &en, &more, &folded, err.get()),
                  GT_OK)
            << err.msg();
        std::vector<std::tuple<uint64_t, double, int64_t, std::string>> gotev, wantev;
        for (size_t i = 0; i < en; i++)
          gotev.emplace_back(seqs[i], ew[i], et[i],
                             std::string(reinterpret_cast<const char *>(epay + ex[i].payload_off), ex[i].payload_len));
        for (const LogOp *l : evs)
          if (l->op.time >= since[t]) wantev.emplace_back(l->seq, l->op.weight, l->op.time, l->payload);
        // Listed: every event within retain; older ones may be listed too
        // (not folded yet), and only those.
        std::vector<std::tuple<uint64_t, double, int64_t, std::string>> within;
        for (const auto &e : gotev)
          if (std::get<2>(e) >= since[t]) within.push_back(e);
        ASSERT_EQ(within, wantev) << where << " (events)";
        g_folded_reads += folded != 0;
        ASSERT_EQ(more, 0u);
      }
    }
    // A page of out-edges (and in-edges) with their extras equals the lookups.
    for (uint32_t dir = 0; dir < (in_edges ? 2u : 1u); dir++) {
      uint64_t dsts[64];
      double w[64];
      uint16_t ty[64];
      int64_t tm[64];
      gt_edge_ext x[64];
      uint8_t pay[4096];
      size_t n = 0, pl = 0;
      uint32_t more = 0;
      Err err;
      ASSERT_EQ(gt_snapshot_neighbors_after_ext(snap, s, dir, nullptr, 0, 0, 0, dsts, w, ty, tm, x, 64, pay, sizeof pay,
                                                &pl, &n, &more, err.get()),
                GT_OK)
          << err.msg();
      ASSERT_EQ(more, 0u);
      size_t want_n = 0;
      for (uint64_t o = 0; o < nv; o++)
        for (uint32_t t = kTypes; t-- > 0;) {
          Model::Edge want;
          if (!(dir == 0 ? m.Fold(s, o, t, tau, &want) : m.Fold(o, s, t, tau, &want))) continue;
          const std::string where =
              ctx + " page dir " + std::to_string(dir) + " of " + std::to_string(s) + " at " + std::to_string(want_n);
          ASSERT_LT(want_n, n) << where;
          EXPECT_EQ(dsts[want_n], o) << where;
          EXPECT_EQ(ty[want_n], t) << where;
          Model::Edge e;
          e.count = x[want_n].count;
          e.weight = w[want_n];
          e.time = tm[want_n];
          e.first = x[want_n].first_time;
          e.payload.assign(reinterpret_cast<const char *>(pay + x[want_n].payload_off), x[want_n].payload_len);
          EXPECT_EQ(Str(e), Str(want)) << where;
          want_n++;
        }
      ASSERT_EQ(n, want_n) << ctx << " page dir " << dir << " of " << s;
      // The plain read: the same sums and times.
      size_t pn = 0;
      ASSERT_EQ(gt_snapshot_neighbors(snap, s, dir, nullptr, dsts, w, ty, tm, 64, &pn, err.get()), GT_OK);
      ASSERT_EQ(pn, n);
    }
  }
}

TEST(EventsStoreTest, ModelOfEventsThroughFlushCompactionHistoryAndReopen) {
  const uint64_t seed = gt_store_test::Seed();
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  // Round 4 writes format-4 files (as the build before narrow columns
  // did) for its first half, then reopens with the current format: the
  // format-4 files read and merge with format-5 ones.
  for (int round = 0; round < 5; round++) {
    TempDir dir;
    gt_options o = gt_store_test::SmallOptions();
    o.in_edges = round % 2 == 0;
    o.keep_history = round >= 2;
    o.history_seqs = round == 3 ? 20 : 0;
    o.disable_auto_compaction = round == 1;
    o.test_segment_format = round == 4 ? 4 : 0;
    bool reopened = false;  // the store's newest event time restarted
    gt_store_test::StoreHolder h;
    gt_store_test::Open(dir.path(), o, &h.s);
    const std::vector<int64_t> retain{int64_t(pick(50)), int64_t(pick(400))};
    auto set_retain = [&]() {
      for (uint32_t t = 0; t < kTypes; t++) {
        Err err;
        ASSERT_EQ(gt_set_type_aggregate(h.s, t, GT_TYPE_ACCUMULATE, retain[t], err.get()), GT_OK) << err.msg();
      }
    };
    set_retain();
    Model m;
    const uint64_t nv = 7;
    int64_t clock = 1000;
    int64_t newest = 0;  // the store's watermark as the model knows it
    std::vector<std::pair<uint64_t, std::unique_ptr<Snap>>> pinned;
    for (int step = 0; step < 400; step++) {
      std::vector<gt_op> ops;
      std::string payload;
      std::vector<std::string> pays;
      const int n = 1 + static_cast<int>(pick(5));
      for (int k = 0; k < n; k++) {
        gt_op op = gt_store_test::Up(pick(nv), pick(nv), double(1 + pick(20)));
        op.type = static_cast<uint32_t>(pick(kTypes));
        op.time = pick(8) == 0 ? 0 : clock + int64_t(pick(30)) - 10;
        const uint64_t kind = pick(20);
        std::string pay;
        if (kind == 0) {
          op = gt_store_test::DelV(pick(nv));
        } else if (kind <= 2) {
          op.kind = GT_OP_DELETE_EDGE;
          op.weight = 0;
        } else {
          if (kind >= 6) op.flags = GT_OP_ACCUMULATE;
          if (pick(3) != 0) pay = "ev" + std::to_string(step) + "." + std::to_string(k);
        }
        if (op.kind == GT_OP_DELETE_VERTEX) op.time = 0;
        if (!pay.empty()) {
          op.payload_off = payload.size();
          op.payload_len = static_cast<uint32_t>(pay.size());
          payload += pay;
        }
        if (op.kind == GT_OP_UPSERT || op.kind == GT_OP_DELETE_EDGE) newest = std::max(newest, op.time);
        ops.push_back(op);
        pays.push_back(pay);
      }
      clock += int64_t(pick(12));
      Err err;
      uint64_t seq = 0;
      ASSERT_EQ(gt_apply_ex(h.s, ops.data(), ops.size(), reinterpret_cast<const uint8_t *>(payload.data()),
                            payload.size(), nullptr, 0, &seq, err.get()),
                GT_OK)
          << err.msg();
      for (size_t k = 0; k < ops.size(); k++) m.log.push_back(LogOp{seq, ops[k], pays[k]});
      if (reopened)
        ASSERT_LE(gt_newest_event_time(h.s), newest);
      else
        ASSERT_EQ(gt_newest_event_time(h.s), newest);
      if (o.test_segment_format == 4 && step == 200) {
        pinned.clear();
        gt_store_test::CompactAll(h.s);
        gt_store_test::Close(&h.s);
        int counts = 0;
        for (const std::string &p : gt_store_test::SegmentFiles(dir.path())) {
          const std::string d = gt_test::ReadFile(p);
          ASSERT_EQ(gt_test::GetLE<uint32_t>(d, 8), 4u) << p;
          counts += (gt_test::GetLE<uint32_t>(d, 12) & gt::kFlagCounts) != 0;
        }
        ASSERT_GT(counts, 0) << "no format-4 file of events to read";
        o.test_segment_format = 0;
        gt_store_test::Open(dir.path(), o, &h.s);
        set_retain();
        reopened = true;
      }
      const uint64_t what = pick(40);
      if (what == 0) {
        gt_store_test::Flush(h.s);
      } else if (what == 1) {
        gt_store_test::CompactAll(h.s);
      } else if (what == 2 && pinned.size() < 4) {
        gt_snapshot *sn = nullptr;
        ASSERT_EQ(gt_snapshot_new(h.s, &sn, err.get()), GT_OK);
        pinned.emplace_back(seq, std::make_unique<Snap>(sn));
      } else if (what == 3 && !pinned.empty()) {
        pinned.erase(pinned.begin());
      }
      if (step % 40 == 39) {
        // Events within retain of the newest time: never folded.
        std::vector<int64_t> since(kTypes);
        for (uint32_t t = 0; t < kTypes; t++) since[t] = newest - retain[t];
        const std::string ctx =
            "seed " + std::to_string(seed) + " round " + std::to_string(round) + " step " + std::to_string(step);
        Snap now([&] {
          gt_snapshot *sn = nullptr;
          gt_snapshot_new(h.s, &sn, nullptr);
          return sn;
        }());
        CheckReads(now.s, m, seq, nv, o.in_edges, since, ctx);
        for (const auto &p : pinned) CheckReads(p.second->s, m, p.first, nv, o.in_edges, since, ctx + " pinned");
        if (o.keep_history) {
          gt_metrics mt;
          gt_get_metrics(h.s, &mt);
          const uint64_t at = mt.oldest_readable_seq + pick(seq - mt.oldest_readable_seq + 1);
          gt_snapshot *sn = nullptr;
          ASSERT_EQ(gt_snapshot_new_at(h.s, at, &sn, err.get()), GT_OK) << err.msg();
          Snap past(sn);
          CheckReads(past.s, m, at, nv, o.in_edges, since, ctx + " as of " + std::to_string(at));
        }
      }
    }
    // Flushed, compacted, reopened: the same folds. The reopened store has
    // the types' retain and the watermark as recorded (no configuration
    // given), and a compaction then folds by them: the reads stay the same.
    pinned.clear();
    gt_store_test::CompactAll(h.s);
    gt_store_test::Close(&h.s);
    gt_store_test::Open(dir.path(), o, &h.s);
    EXPECT_EQ(gt_newest_event_time(h.s), newest);
    {
      uint32_t types[4];
      int64_t rets[4];
      size_t n = 0;
      Err err;
      ASSERT_EQ(gt_type_aggregates(h.s, types, rets, 4, &n, err.get()), GT_OK) << err.msg();
      ASSERT_EQ(n, size_t(kTypes));
      for (uint32_t t = 0; t < kTypes; t++) {
        EXPECT_EQ(types[t], t);
        EXPECT_EQ(rets[t], retain[t]);
      }
    }
    std::vector<int64_t> since(kTypes);
    for (uint32_t t = 0; t < kTypes; t++) since[t] = newest - retain[t];
    for (int pass = 0; pass < 2; pass++) {
      Snap now([&] {
        gt_snapshot *sn = nullptr;
        gt_snapshot_new(h.s, &sn, nullptr);
        return sn;
      }());
      CheckReads(now.s, m, UINT64_MAX, nv, o.in_edges, since,
                 "reopened round " + std::to_string(round) + " pass " + std::to_string(pass));
      gt_store_test::CompactAll(h.s);
    }
  }
  EXPECT_GT(g_folded_reads, 0) << "retention folded no events: the model did not test it";
}

TEST(EventsStoreTest, ApplyRefusesBadEvents) {
  TempDir dir;
  gt_store_test::StoreHolder h;
  gt_store_test::Open(dir.path(), gt_store_test::SmallOptions(), &h.s);
  const std::string payload = "abcdef";
  auto apply = [&](gt_op op) {
    Err err;
    uint64_t seq;
    const int rc = gt_apply_ex(h.s, &op, 1, reinterpret_cast<const uint8_t *>(payload.data()), payload.size(), nullptr,
                               0, &seq, err.get());
    return std::make_pair(rc, err.msg());
  };
  gt_op del = gt_store_test::Del(1, 2);
  del.flags = GT_OP_ACCUMULATE;
  EXPECT_EQ(apply(del).first, GT_ERR_INVALID) << apply(del).second;
  gt_op up = gt_store_test::Up(1, 2);
  up.payload_off = 4;
  up.payload_len = 3;  // runs past the buffer
  EXPECT_EQ(apply(up).first, GT_ERR_INVALID);
  up.payload_off = UINT64_MAX;
  up.payload_len = 2;  // overflow
  EXPECT_EQ(apply(up).first, GT_ERR_INVALID);
  up.payload_off = 0;
  up.payload_len = GT_MAX_PAYLOAD + 1;
  EXPECT_EQ(apply(up).first, GT_ERR_INVALID);
  up.payload_len = 6;
  up.flags = 0x8;  // unknown
  EXPECT_EQ(apply(up).first, GT_ERR_INVALID);
  up.flags = GT_OP_ACCUMULATE;
  EXPECT_EQ(apply(up).first, GT_OK) << apply(up).second;
  Err err;
  EXPECT_EQ(gt_set_type_aggregate(h.s, GT_MAX_EDGE_TYPES, GT_TYPE_ACCUMULATE, 1, err.get()), GT_ERR_INVALID);
  err.Reset();
  EXPECT_EQ(gt_set_type_aggregate(h.s, 1, GT_TYPE_ACCUMULATE, -1, err.get()), GT_ERR_INVALID);
}

// A format-3 store (as an older build wrote it) opens and reads unchanged
// by this build, and goes on with events once it writes format 4 files.
TEST(EventsStoreTest, Format3StoreReadsAndTakesEvents) {
  TempDir dir;
  gt_options o = gt_store_test::SmallOptions();
  o.test_segment_format = 3;
  gt_store_test::StoreHolder h;
  gt_store_test::Open(dir.path(), o, &h.s);
  std::vector<gt_op> ops;
  for (uint64_t s = 0; s < 30; s++)
    for (uint64_t d = 0; d < 30; d += 1 + s % 4) ops.push_back(gt_store_test::Up(s, d, 1.0 + double(s * d)));
  gt_store_test::Apply(h.s, ops);
  gt_store_test::CompactAll(h.s);
  gt_store_test::Close(&h.s);
  for (const std::string &p : gt_store_test::SegmentFiles(dir.path())) {
    const std::string d = gt_test::ReadFile(p);
    EXPECT_EQ(gt_test::GetLE<uint32_t>(d, 8), 3u) << p;
  }
  o.test_segment_format = 0;
  gt_store_test::Open(dir.path(), o, &h.s);
  // Events on top of the format-3 replace versions: each starts a new sum.
  gt_op e1 = gt_store_test::Up(1, 0, 5), e2 = gt_store_test::Up(1, 0, 7);
  e1.flags = e2.flags = GT_OP_ACCUMULATE;
  gt_store_test::Apply(h.s, {e1});
  gt_store_test::Apply(h.s, {e2});
  gt_store_test::CompactAll(h.s);
  Snap now([&] {
    gt_snapshot *sn = nullptr;
    gt_snapshot_new(h.s, &sn, nullptr);
    return sn;
  }());
  for (uint64_t s = 0; s < 30; s++)
    for (uint64_t d = 0; d < 30; d++) {
      double w = 0;
      gt_edge_ext x;
      uint8_t pay[8];
      size_t n = 0, pl = 0;
      Err err;
      ASSERT_EQ(
          gt_snapshot_edge_ext(now.s, s, d, nullptr, &w, nullptr, nullptr, &x, 1, pay, sizeof pay, &pl, &n, err.get()),
          GT_OK);
      const bool has = d % (1 + s % 4) == 0;
      ASSERT_EQ(n, has ? 1u : 0u) << s << "->" << d;
      if (!has) continue;
      if (s == 1 && d == 0) {
        EXPECT_EQ(x.count, 2u);
        EXPECT_EQ(w, 12.0);  // 5 + 7, not the replace version's 1
      } else {
        EXPECT_EQ(x.count, 0u);
        EXPECT_EQ(w, 1.0 + double(s * d));
      }
    }
}

}  // namespace
