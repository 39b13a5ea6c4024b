// type_aggregates_test.cc -- edge types' aggregates and retention's
// watermark are the store's (issue 42): recorded in its MANIFEST, replayed
// at open, carried across MANIFEST rewrites, refused when damaged or
// contradictory, and never turned from accumulate back into replace.
//
// recovery_test.cc's built store records aggregates too, so its flipped-byte
// and cut-at-every-offset tests cover the new records' corruption.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "graphtide.h"
#include "manifest.h"
#include "manifest_test_util.h"
#include "store_test_util.h"
#include "test_util.h"

namespace {

using gt_test::Edit;
using gt_test::Replay;

namespace fs = std::filesystem;
using gt_test::Err;
using gt_test::TempDir;

std::map<uint32_t, int64_t> Aggregates(gt_store *s) {
  uint32_t types[16];
  int64_t retain[16];
  size_t n = 0;
  Err err;
  EXPECT_EQ(gt_type_aggregates(s, types, retain, 16, &n, err.get()), GT_OK) << err.msg();
  std::map<uint32_t, int64_t> m;
  for (size_t i = 0; i < n && i < 16; i++) m[types[i]] = retain[i];
  return m;
}

int SetAggregate(gt_store *s, uint32_t t, bool accumulate, int64_t retain, std::string *msg = nullptr) {
  Err err;
  const int rc = gt_set_type_aggregate(s, t, accumulate ? GT_TYPE_ACCUMULATE : 0, retain, err.get());
  if (msg) *msg = err.msg();
  return rc;
}

// The type edit and the newest event time round-trip through their
// encoding, replay keeps each type's latest retain and the largest newest
// time, and a snapshot record of that state (a MANIFEST rewrite) carries
// both.
TEST(TypeAggregatesTest, EditsRoundTripAndReplay) {
  gt::ManifestEdit types = Edit(gt::EditKind::kTypes);
  types.accumulate = {{3, 86400000000}, {0, 0}};
  gt::ManifestEdit flush = Edit(gt::EditKind::kFlush);
  flush.has_durable_seq = true;
  flush.durable_seq = 9;
  flush.newest_time = 1765000000000000;
  gt::ManifestEdit compact = Edit(gt::EditKind::kCompact);
  compact.newest_time = 1765000000000500;
  for (const gt::ManifestEdit &e : {types, flush, compact}) {
    const std::string enc = gt::EncodeEdit(e);
    gt::ManifestEdit d;
    std::string why;
    ASSERT_TRUE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why)) << why;
    EXPECT_EQ(gt::EncodeEdit(d), enc);
    EXPECT_EQ(d.accumulate, e.accumulate);
    EXPECT_EQ(d.newest_time, e.newest_time);
    // Every proper prefix is malformed.
    for (size_t n = 0; n < enc.size(); n++) EXPECT_FALSE(gt::DecodeEdit(enc.data(), n, &d, &why)) << n;
  }
  {
    // Records without the new tags are the bytes older builds wrote.
    gt::ManifestEdit old = flush;
    old.newest_time = 0;
    EXPECT_EQ(gt::EncodeEdit(old).size() + 9, gt::EncodeEdit(flush).size());
    // The newest time given twice is malformed.
    std::string enc = gt::EncodeEdit(flush), why;
    const std::string tag = enc.substr(enc.size() - 18, 9);  // newest time, then next_file
    enc.insert(enc.size() - 9, tag);
    gt::ManifestEdit d;
    EXPECT_FALSE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why));
    EXPECT_NE(why.find("twice"), std::string::npos) << why;
  }
  gt::ManifestEdit later = Edit(gt::EditKind::kTypes);
  later.accumulate = {{3, 60000000}};  // a retain changed
  gt::ManifestEdit older = flush;      // a later flush with an older newest time
  older.durable_seq = 12;
  older.newest_time = 5;
  gt::ManifestState st;
  ASSERT_EQ(Replay({Edit(gt::EditKind::kCreate), types, flush, compact, later, older}, &st), "");
  EXPECT_EQ(st.accumulate, (std::map<uint32_t, int64_t>{{0, 0}, {3, 60000000}}));
  EXPECT_EQ(st.newest_time, 1765000000000500);
  const gt::ManifestEdit snap = gt::SnapshotEdit(st, {}, {});
  gt::ManifestState st2;
  ASSERT_EQ(Replay({snap}, &st2), "");
  EXPECT_EQ(st2.accumulate, st.accumulate);
  EXPECT_EQ(st2.newest_time, st.newest_time);
  // AdvanceState (the store's running state) agrees with replay.
  gt::ManifestState run;
  for (const auto &e : {Edit(gt::EditKind::kCreate), types, flush, compact, later, older}) gt::AdvanceState(&run, e);
  EXPECT_EQ(run.accumulate, st.accumulate);
  EXPECT_EQ(run.newest_time, st.newest_time);
}

// Edits that contradict what a type edit or the newest time may say are
// refused at replay, naming the record's offset.
TEST(TypeAggregatesTest, ContradictoryEditsAreRefusedWithTheirOffset) {
  const gt::ManifestEdit create = Edit(gt::EditKind::kCreate);
  auto types = [](uint32_t t, int64_t retain) {
    gt::ManifestEdit e = Edit(gt::EditKind::kTypes);
    e.accumulate = {{t, retain}};
    return e;
  };
  struct Case {
    std::string name;
    gt::ManifestEdit edit;
    std::string want;
  };
  std::vector<Case> cases;
  cases.push_back({"empty type edit", Edit(gt::EditKind::kTypes), "names no type"});
  cases.push_back({"type out of range", types(GT_MAX_EDGE_TYPES, 0), "out of range"});
  cases.push_back({"negative retain", types(2, -1), "negative retain"});
  {
    gt::ManifestEdit e = types(2, 0);
    e.accumulate.push_back({2, 5});
    cases.push_back({"a type twice", e, "twice"});
  }
  {
    gt::ManifestEdit e = types(2, 0);
    e.has_durable_seq = true;
    e.durable_seq = 3;
    cases.push_back({"a type edit with a durable seq", e, "flush's or compaction's fields"});
  }
  {
    gt::ManifestEdit e = types(2, 0);
    gt::SegMeta m;
    m.id = 4;
    e.added = {m};
    cases.push_back({"a type edit adding a file", e, "flush's or compaction's fields"});
  }
  {
    gt::ManifestEdit e = types(2, 0);
    e.newest_time = 10;
    cases.push_back({"a type edit with a newest time", e, "flush's or compaction's fields"});
  }
  {
    gt::ManifestEdit e = Edit(gt::EditKind::kFlush);
    e.accumulate = {{2, 0}};
    cases.push_back({"a flush naming a type", e, "only a type or snapshot record"});
  }
  {
    gt::ManifestEdit e = Edit(gt::EditKind::kFlush);
    e.newest_time = -4;
    cases.push_back({"a negative newest time", e, "negative newest event time"});
  }
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    gt::ManifestState st;
    uint64_t off = 0;
    const std::string why = Replay({create, types(1, 7), c.edit}, &st, &off);
    EXPECT_NE(why.find(c.want), std::string::npos) << why;
    EXPECT_EQ(off, 216u) << "the third record's offset";
  }
  {
    gt::ManifestEdit c = create;
    c.newest_time = 8;
    gt::ManifestState st;
    EXPECT_NE(Replay({c}, &st).find("carries the newest event time"), std::string::npos);
  }
}

// The store records a type's aggregate durably when it changes, keeps it
// across reopens without being told, refuses accumulate -> replace (also
// after a reopen), takes a retain change and replace -> accumulate, and a
// read-only open reports the recorded aggregates but records nothing.
TEST(TypeAggregatesTest, StoreRecordsAndRefuses) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  gt_options o = gt_store_test::SmallOptions();
  gt_store_test::StoreHolder h;
  gt_store_test::Open(path, o, &h.s);
  auto size = [&] { return fs::file_size(path + "/MANIFEST"); };
  const auto created = size();
  EXPECT_EQ(SetAggregate(h.s, 4, false, 0), GT_OK);
  EXPECT_EQ(size(), created) << "replace on a type never recorded writes nothing";
  EXPECT_EQ(SetAggregate(h.s, 4, false, 9), GT_ERR_INVALID) << "a retain on a replace type";
  EXPECT_EQ(SetAggregate(h.s, 4, true, -1), GT_ERR_INVALID);
  {
    Err err;
    EXPECT_EQ(gt_set_type_aggregate(h.s, 4, 0x2, 0, err.get()), GT_ERR_INVALID) << "unknown flags";
  }
  EXPECT_TRUE(Aggregates(h.s).empty());
  ASSERT_EQ(SetAggregate(h.s, 4, true, 3600000000), GT_OK);
  const auto recorded = size();
  EXPECT_GT(recorded, created);
  ASSERT_EQ(SetAggregate(h.s, 4, true, 3600000000), GT_OK);
  EXPECT_EQ(size(), recorded) << "the same aggregate again writes nothing";
  std::string msg;
  EXPECT_EQ(SetAggregate(h.s, 4, false, 0, &msg), GT_ERR_INVALID);
  EXPECT_NE(msg.find("edge type 4 accumulates"), std::string::npos) << msg;
  EXPECT_NE(msg.find("another type"), std::string::npos) << msg;
  EXPECT_EQ(size(), recorded);
  {
    uint32_t t[1];
    int64_t r[1];
    size_t n = 0;
    Err err;
    ASSERT_EQ(SetAggregate(h.s, 9, true, 0), GT_OK);
    EXPECT_EQ(gt_type_aggregates(h.s, t, r, 1, &n, err.get()), GT_ERR_BUFFER);
    EXPECT_EQ(n, 2u);
  }
  gt_store_test::Close(&h.s);

  // Reopened without a word about the types: as recorded.
  gt_store_test::Open(path, o, &h.s);
  EXPECT_EQ(Aggregates(h.s), (std::map<uint32_t, int64_t>{{4, 3600000000}, {9, 0}}));
  EXPECT_EQ(SetAggregate(h.s, 4, false, 0, &msg), GT_ERR_INVALID) << "refused after a reopen too";
  ASSERT_EQ(SetAggregate(h.s, 4, true, 60000000), GT_OK) << "a retain change";
  gt_store_test::Close(&h.s);

  gt_options ro = o;
  ro.read_only = 1;
  gt_store_test::Open(path, ro, &h.s);
  EXPECT_EQ(Aggregates(h.s), (std::map<uint32_t, int64_t>{{4, 60000000}, {9, 0}}));
  EXPECT_EQ(SetAggregate(h.s, 4, true, 60000000), GT_OK) << "nothing to record";
  EXPECT_EQ(SetAggregate(h.s, 5, false, 0), GT_OK) << "nothing to record";
  EXPECT_EQ(SetAggregate(h.s, 4, true, 1, &msg), GT_ERR_INVALID);
  EXPECT_NE(msg.find("read-only"), std::string::npos) << msg;
  EXPECT_EQ(SetAggregate(h.s, 5, true, 0), GT_ERR_INVALID);
  gt_store_test::Close(&h.s);
}

// A crash right after a type's aggregate was recorded, before any upsert
// used it: the copy of the directory as the crash left it (the store never
// closed) opens with the type recorded. And with the MANIFEST rewritten
// whenever it doubles, the aggregates and the newest event time survive as
// the snapshot record carries them. Without background compaction, so that
// the appends, and which of them rewrite, are the test's: a compaction
// that ran between the flushes changed them (the test expected more than
// three rewrites, and under load saw three).
TEST(TypeAggregatesTest, SurvivesACrashAfterRecordingAndManifestRewrites) {
  TempDir dir;
  const std::string path = dir.Sub("store"), crashed = dir.Sub("crashed");
  gt_options o = gt_store_test::SmallOptions();
  o.test_manifest_rewrite_bytes = 1;
  o.disable_auto_compaction = 1;
  gt_store_test::StoreHolder h;
  gt_store_test::Open(path, o, &h.s);
  ASSERT_EQ(SetAggregate(h.s, 1, true, 250), GT_OK);
  fs::create_directory(crashed);
  for (const auto &e : fs::directory_iterator(path)) {
    if (e.path().filename() != "LOCK") fs::copy_file(e.path(), crashed + "/" + e.path().filename().string());
  }
  {
    gt_store_test::StoreHolder c;
    gt_store_test::Open(crashed, gt_store_test::SmallOptions(), &c.s);
    EXPECT_EQ(Aggregates(c.s), (std::map<uint32_t, int64_t>{{1, 250}}));
    EXPECT_EQ(SetAggregate(c.s, 1, false, 0), GT_ERR_INVALID);
  }
  // Flushes and compactions record the newest event time (rewriting the
  // MANIFEST each time).
  int64_t newest = 0;
  for (int i = 0; i < 5; i++) {
    gt_op op = gt_store_test::Up(1, 2 + i, 1.5);
    op.type = 1;
    op.flags = GT_OP_ACCUMULATE;
    op.time = 1000 + 100 * i;
    newest = op.time;
    uint64_t seq = 0;
    Err err;
    ASSERT_EQ(gt_apply(h.s, &op, 1, nullptr, 0, &seq, err.get()), GT_OK) << err.msg();
    gt_store_test::Flush(h.s);
    if (i == 2) {
      ASSERT_EQ(SetAggregate(h.s, 7, true, 0), GT_OK);
    }
  }
  gt_store_test::CompactAll(h.s);
  gt_metrics m;
  gt_get_metrics(h.s, &m);
  EXPECT_GE(m.manifest_rewrites, 3u) << "the MANIFEST doubles three times over these appends";
  gt_store_test::Close(&h.s);
  gt::ManifestContents mc;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(path + "/MANIFEST", &mc, &problems).ok());
  ASSERT_TRUE(problems.empty());
  EXPECT_EQ(mc.format, 3u) << "rewritten";
  // The last rewrite came after both types and the last flush: its
  // snapshot record carries them.
  ASSERT_FALSE(mc.edits.empty());
  EXPECT_EQ(mc.edits[0].kind, gt::EditKind::kSnapshot);
  EXPECT_EQ(mc.edits[0].accumulate, (std::vector<std::pair<uint32_t, int64_t>>{{1, 250}, {7, 0}}));
  EXPECT_EQ(mc.edits[0].newest_time, newest);
  gt_store_test::Open(path, gt_store_test::SmallOptions(), &h.s);
  EXPECT_EQ(Aggregates(h.s), (std::map<uint32_t, int64_t>{{1, 250}, {7, 0}}));
  EXPECT_EQ(gt_newest_event_time(h.s), newest);
  gt_store_test::Close(&h.s);
}

// A store that never records an accumulate type writes no new tag: its
// MANIFEST holds no type edit and no newest time, whatever event times its
// batches carry (so builds before the tags still open it).
TEST(TypeAggregatesTest, ReplaceOnlyStoresWriteNoNewTag) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  gt_store_test::StoreHolder h;
  gt_store_test::Open(path, gt_store_test::SmallOptions(), &h.s);
  gt_op op = gt_store_test::Up(1, 2, 1.0);
  op.time = 123456;
  uint64_t seq = 0;
  Err err;
  ASSERT_EQ(gt_apply(h.s, &op, 1, nullptr, 0, &seq, err.get()), GT_OK) << err.msg();
  gt_store_test::Flush(h.s);
  gt_store_test::CompactAll(h.s);
  gt_store_test::Close(&h.s);
  gt::ManifestContents mc;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(path + "/MANIFEST", &mc, &problems).ok());
  ASSERT_GE(mc.edits.size(), 3u);
  for (const gt::ManifestEdit &e : mc.edits) {
    EXPECT_NE(e.kind, gt::EditKind::kTypes);
    EXPECT_EQ(e.newest_time, 0);
    EXPECT_TRUE(e.accumulate.empty());
  }
  gt_store_test::Open(path, gt_store_test::SmallOptions(), &h.s);
  EXPECT_EQ(gt_newest_event_time(h.s), 0) << "not recorded: nothing folds by it";
  gt_store_test::Close(&h.s);
}

// Offline compaction after a reopen folds by the recorded watermark and
// retain what a live one would: the events older than the retain are
// folded (listed no more one by one, the edge's sum unchanged), the newer
// ones stay listed.
TEST(TypeAggregatesTest, CompactionAfterReopenFoldsByTheRecordedWatermark) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  gt_options o = gt_store_test::SmallOptions();
  o.disable_auto_compaction = 1;
  gt_store_test::StoreHolder h;
  gt_store_test::Open(path, o, &h.s);
  ASSERT_EQ(SetAggregate(h.s, 0, true, 100), GT_OK);
  double sum = 0;
  for (int i = 0; i < 10; i++) {  // event times 1000, 1050, ..., 1450
    gt_op op = gt_store_test::Up(1, 2, 1.0 + i);
    op.flags = GT_OP_ACCUMULATE;
    op.time = 1000 + 50 * i;
    sum += op.weight;
    uint64_t seq = 0;
    Err err;
    ASSERT_EQ(gt_apply(h.s, &op, 1, nullptr, 0, &seq, err.get()), GT_OK) << err.msg();
    gt_store_test::Flush(h.s);  // each event in its own L0 file: nothing folded yet
  }
  gt_store_test::Close(&h.s);
  gt_store_test::Open(path, o, &h.s);
  EXPECT_EQ(gt_newest_event_time(h.s), 1450);
  auto events = [&](uint32_t *folded) {
    gt_snapshot *sn = nullptr;
    Err err;
    EXPECT_EQ(gt_snapshot_new(h.s, &sn, err.get()), GT_OK);
    uint64_t seqs[32];
    double w[32];
    int64_t tm[32];
    gt_edge_ext x[32];
    uint8_t pay[64];
    size_t pl = 0, n = 0;
    uint32_t more = 0;
    EXPECT_EQ(gt_snapshot_edge_events(sn, 1, 2, 0, 0, 0, seqs, w, tm, x, 32, pay, sizeof pay, &pl, &n, &more, folded,
                                      err.get()),
              GT_OK)
        << err.msg();
    double ew[1];
    uint16_t et[1];
    int64_t etm[1];
    gt_edge_ext ex[1];
    size_t en = 0, epl = 0;
    EXPECT_EQ(gt_snapshot_edge_ext(sn, 1, 2, nullptr, ew, et, etm, ex, 1, pay, sizeof pay, &epl, &en, err.get()),
              GT_OK);
    EXPECT_EQ(en, 1u);
    EXPECT_EQ(ew[0], sum);
    EXPECT_EQ(ex[0].count, 10u);
    EXPECT_EQ(ex[0].first_time, 1000);
    gt_snapshot_release(sn);
    std::vector<int64_t> times(tm, tm + n);
    return times;
  };
  uint32_t folded = 0;
  EXPECT_EQ(events(&folded).size(), 10u);
  EXPECT_EQ(folded, 0u);
  gt_store_test::CompactAll(h.s);
  // Within retain of 1450: 1350, 1400, 1450; the seven older fold into one.
  EXPECT_EQ(events(&folded), (std::vector<int64_t>{1450, 1400, 1350}));
  EXPECT_EQ(folded, 1u);
  gt_store_test::Close(&h.s);
}

}  // namespace
