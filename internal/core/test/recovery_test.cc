// recovery_test.cc -- recovery never destroys what might be data.
//
// A small store is built through the C API with several flushes, a vertex
// delete, a source position, ids in both bands and a full compaction, and
// its contents after every flush are kept in a std::map oracle. Then, on a
// fresh copy of the directory each time:
//  - one bit of every byte of MANIFEST is flipped: gt_open either refuses
//    with GT_ERR_CORRUPTION naming the MANIFEST, or opens to exactly the
//    original contents; gt_check reports a problem exactly when gt_open
//    refuses; gt_check and a read-only gt_open change no byte of any file;
//  - MANIFEST is cut at every byte offset: gt_open either refuses, or opens
//    to the contents of the newest flush whose edit is complete (a torn
//    tail is dropped, nothing else is), and then every file still there is
//    live or was proven garbage;
//  - a missing, empty or header-less MANIFEST beside segment files is
//    refused and every segment file is still there afterwards;
//  - a segment file that is neither live nor provably garbage is refused
//    (and reported by gt_check), one numbered at or above the manifest's
//    next file number is deleted by a read-write open only.
// Also: edits round-trip through their encoding, and decoding rejects
// every malformed payload.
#include "recovery.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graphtide.h"
#include "manifest.h"
#include "store.h"
#include "store_test_util.h"
#include "test_util.h"
#include "version.h"

namespace {

namespace fs = std::filesystem;
using gt_test::Err;
using gt_test::TempDir;

using Adj = std::map<uint64_t, std::map<uint64_t, double>>;  // src -> dst -> weight

using gt_store_test::Op;

// The model tests' small store, compacting only when told.
gt_options Opts(bool read_only = false) {
  gt_options o = gt_store_test::SmallOptions();
  o.disable_auto_compaction = 1;
  o.read_only = read_only ? 1 : 0;
  return o;
}

// Everything a store shows: both directions' adjacency, the durable seq and
// the source position.
struct Contents {
  Adj out, in;
  uint64_t seq = 0;
  std::string srcpos;
  std::map<uint32_t, int64_t> aggs;  // the types recorded as accumulate -> retain
  int64_t newest = 0;                // the newest event time
  std::vector<std::string> sources;  // the numbered event sources
  bool operator==(const Contents &o) const {
    return out == o.out && in == o.in && seq == o.seq && srcpos == o.srcpos && aggs == o.aggs && newest == o.newest &&
           sources == o.sources;
  }
};

Adj ScanDir(gt_snapshot *snap, uint32_t dir) {
  Adj a;
  const uint64_t hi = gt_snapshot_vertex_bound(snap);
  std::vector<uint64_t> vids(256), offs(257), dsts(1 << 14);
  std::vector<double> ws(1 << 14);
  for (uint64_t pos = 0; pos < hi;) {
    size_t nv = 0, ne = 0;
    uint64_t next = 0;
    Err err;
    const int rc = gt_snapshot_scan(snap, pos, hi, dir, nullptr, vids.data(), offs.data(), vids.size(), dsts.data(),
                                    ws.data(), nullptr, nullptr, dsts.size(), &nv, &ne, &next, err.get());
    EXPECT_EQ(rc, GT_OK) << err.msg();
    if (rc != GT_OK) break;
    for (size_t i = 0; i < nv; i++)
      for (uint64_t k = offs[i]; k < offs[i + 1]; k++) a[vids[i]][dsts[k]] = ws[k];
    pos = next;
  }
  return a;
}

Contents Read(gt_store *s) {
  Contents c;
  gt_snapshot *snap = nullptr;
  Err err;
  EXPECT_EQ(gt_snapshot_new(s, &snap, err.get()), GT_OK) << err.msg();
  if (!snap) return c;
  c.out = ScanDir(snap, GT_OUT);
  c.in = ScanDir(snap, GT_IN);
  c.seq = gt_snapshot_seq(snap);
  gt_snapshot_release(snap);
  size_t len = 0;
  gt_source_position(s, nullptr, 0, &len);
  c.srcpos.resize(len);
  gt_source_position(s, reinterpret_cast<uint8_t *>(&c.srcpos[0]), len, &len);
  uint32_t types[8];
  int64_t retain[8];
  size_t n = 0;
  Err aerr;
  EXPECT_EQ(gt_type_aggregates(s, types, retain, 8, &n, aerr.get()), GT_OK) << aerr.msg();
  for (size_t i = 0; i < n && i < 8; i++) c.aggs[types[i]] = retain[i];
  c.newest = gt_newest_event_time(s);
  uint8_t names[1024];
  uint64_t ends[16];
  size_t nl = 0;
  EXPECT_EQ(gt_event_sources(s, names, sizeof names, &nl, ends, 16, &n, aerr.get()), GT_OK) << aerr.msg();
  for (size_t i = 0, at = 0; i < n && i < 16; at = ends[i], i++)
    c.sources.emplace_back(reinterpret_cast<const char *>(names) + at, ends[i] - at);
  return c;
}

class OracleGraph {
 public:
  void Apply(const std::vector<gt_op> &ops) {
    for (const gt_op &op : ops) {
      if (op.kind != GT_OP_DELETE_VERTEX) c.newest = std::max(c.newest, op.time);
      if (op.kind == GT_OP_UPSERT) {
        c.out[op.src][op.dst] = op.weight;
        c.in[op.dst][op.src] = op.weight;
      } else if (op.kind == GT_OP_DELETE_EDGE) {
        Erase(op.src, op.dst);
      } else {
        std::vector<std::pair<uint64_t, uint64_t>> doomed;
        for (const auto &kv : c.out[op.src]) doomed.emplace_back(op.src, kv.first);
        for (const auto &kv : c.in[op.src]) doomed.emplace_back(kv.first, op.src);
        for (const auto &e : doomed) Erase(e.first, e.second);
        c.out.erase(op.src);
        c.in.erase(op.src);
      }
    }
  }
  Contents c;

 private:
  void Erase(uint64_t s, uint64_t d) {
    c.out[s].erase(d);
    if (c.out[s].empty()) c.out.erase(s);
    c.in[d].erase(s);
    if (c.in[d].empty()) c.in.erase(d);
  }
};

// Every file of dir (name -> bytes) but LOCK, which a read-write open
// creates empty and which holds no data.
std::map<std::string, std::string> Files(const std::string &dir) {
  std::map<std::string, std::string> m;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "LOCK")
      m[e.path().filename().string()] = gt_test::ReadFile(e.path().string());
  return m;
}

// "" when a and b hold the same files with the same bytes, else which differ.
std::string FileDiff(const std::map<std::string, std::string> &a, const std::map<std::string, std::string> &b) {
  std::string d;
  for (const auto &[n, bytes] : a)
    if (!b.count(n))
      d += " -" + n;
    else if (b.at(n) != bytes)
      d += " ~" + n;
  for (const auto &[n, bytes] : b)
    if (!a.count(n)) d += " +" + n;
  return d;
}

void CopyDir(const std::string &from, const std::string &to) {
  fs::remove_all(to);
  fs::create_directory(to);
  for (const auto &[name, bytes] : Files(from)) gt_test::WriteFile(to + "/" + name, bytes);
}

std::set<std::string> SegNames(const std::string &dir) {
  std::set<std::string> s;
  for (const auto &[name, bytes] : Files(dir))
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".seg") == 0) s.insert(name);
  return s;
}

// The built store: its directory, and the contents after each flush with
// the size MANIFEST had right after that flush's edit.
struct Built {
  TempDir dir;
  std::vector<std::pair<uint64_t, Contents>> states;  // (manifest size, contents), in order
  Contents final;
  // Every segment file seen after a call (files are immutable): name -> bytes.
  std::map<std::string, std::string> archive;
  // Archive keeps the segments the store holds now. The store is open: a
  // background compaction may delete a segment it merged between the
  // listing and the read, which is then skipped.
  void Archive() {
    for (const auto &e : fs::directory_iterator(dir.Sub("store"))) {
      const std::string name = e.path().filename().string();
      if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".seg") != 0) continue;
      std::ifstream in(e.path(), std::ios::binary);
      if (!in.good()) continue;
      archive[name] = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
};

void Build(Built *b) {
  const std::string path = b->dir.Sub("store");
  gt_store *s = nullptr;
  Err err;
  const gt_options opts = Opts();
  ASSERT_EQ(gt_open(path.c_str(), &opts, &s, err.get()), GT_OK) << err.msg();
  OracleGraph o;
  auto manifest_size = [&] { return static_cast<uint64_t>(fs::file_size(path + "/MANIFEST")); };
  b->states.emplace_back(manifest_size(), o.c);
  // Applies ops with source position pos, flushes, and records the state
  // and the files.
  auto flushed_batch = [&](const std::vector<gt_op> &ops, const std::string &pos, const std::string &payload = "") {
    uint64_t seq = 0;
    ASSERT_EQ(gt_apply_ex(s, ops.data(), ops.size(), reinterpret_cast<const uint8_t *>(payload.data()), payload.size(),
                          reinterpret_cast<const uint8_t *>(pos.data()), pos.size(), &seq, err.get()),
              GT_OK)
        << err.msg();
    o.Apply(ops);
    o.c.seq = seq;
    o.c.srcpos = pos;
    ASSERT_EQ(gt_flush(s, err.get()), GT_OK) << err.msg();
    b->states.emplace_back(manifest_size(), o.c);
    b->Archive();
  };
  // Records a type's aggregate (a kTypes edit) and the state after it.
  auto aggregate = [&](uint32_t t, int64_t retain) {
    ASSERT_EQ(gt_set_type_aggregate(s, t, GT_TYPE_ACCUMULATE, retain, err.get()), GT_OK) << err.msg();
    o.c.aggs[t] = retain;
    b->states.emplace_back(manifest_size(), o.c);
  };
  // Numbers an event source (a kSources edit) and records the state after it.
  auto source = [&](const std::string &name) {
    uint32_t id = 0;
    ASSERT_EQ(gt_add_event_source(s, reinterpret_cast<const uint8_t *>(name.data()), name.size(), &id, err.get()),
              GT_OK)
        << err.msg();
    ASSERT_EQ(id, o.c.sources.size() + 1);
    o.c.sources.push_back(name);
    b->states.emplace_back(manifest_size(), o.c);
  };
  ASSERT_NO_FATAL_FAILURE(aggregate(2, 500));
  ASSERT_NO_FATAL_FAILURE(source("payments/0"));
  const uint64_t hi = GT_HIGH_ID_BASE;
  for (int round = 0; round < 4; round++) {
    std::vector<gt_op> ops;
    for (uint64_t i = 0; i < 60; i++) {
      const uint64_t s0 = (i * 7 + round) % 40, d0 = (i * 13 + 3 * round) % 50;
      ops.push_back(Op(GT_OP_UPSERT, s0, d0, 1.0 + static_cast<double>(round)));
      ops.back().time = 1000 * (round + 1) + static_cast<int64_t>(i);  // the flushes record the newest
    }
    ops.push_back(Op(GT_OP_UPSERT, hi + round, 5, 2.5));  // a string-key id
    if (round == 2) ops.push_back(Op(GT_OP_DELETE_VERTEX, 7, 0, 0));
    if (round == 3) ops.push_back(Op(GT_OP_DELETE_EDGE, 0, 0, 0));
    // Events of type 2 with source positions (format-6 files), each on
    // an edge of its own (so that the oracle's weight is the event's).
    std::string payload;
    for (uint32_t k = 0; k < 3 && round != 2; k++) {
      ops.push_back(Op(GT_OP_UPSERT, 45 + k, 60 + round, 1.5));
      gt_op &op = ops.back();
      op.type = 2;
      op.time = 1000 * (round + 1) + 100;
      op.flags = GT_OP_ACCUMULATE | GT_OP_SOURCE;
      op.payload_off = payload.size();
      op.payload_len = GT_SOURCE_POS_BYTES;
      const uint32_t src = round == 3 ? 2 : 1;
      const uint64_t off = 1000 * round + k;
      payload.append(reinterpret_cast<const char *>(&src), 4);
      payload.append(reinterpret_cast<const char *>(&off), 8);
    }
    ASSERT_NO_FATAL_FAILURE(flushed_batch(ops, "position-" + std::to_string(round), payload));
    if (round == 1) {
      ASSERT_EQ(gt_compact_all(s, err.get()), GT_OK) << err.msg();
      b->Archive();
      ASSERT_NO_FATAL_FAILURE(aggregate(2, 900));  // a retain changed
      ASSERT_NO_FATAL_FAILURE(aggregate(3, 0));
      ASSERT_NO_FATAL_FAILURE(source("payments/1"));
    }
  }
  ASSERT_EQ(gt_compact_all(s, err.get()), GT_OK) << err.msg();
  b->Archive();
  {
    // The compactions purged vertex 7's delete; one after them stays live
    // (its flush rewrites no older file), so the MANIFEST ends with both a
    // purge and a live vertex delete.
    ASSERT_NO_FATAL_FAILURE(
        flushed_batch({Op(GT_OP_UPSERT, 41, 7, 4.5), Op(GT_OP_DELETE_VERTEX, 13, 0, 0)}, "position-4"));
  }
  b->final = Read(s);
  EXPECT_TRUE(b->final == o.c) << "the store differs from the oracle before any damage";
  ASSERT_EQ(gt_close(s, err.get()), GT_OK);
}

// Opens dir (read-write unless ro) and returns the code; on success *c gets
// the contents and the store is closed again.
int OpenAndRead(const std::string &dir, bool ro, Contents *c, Err *err) {
  gt_store *s = nullptr;
  gt_options o = Opts(ro);
  const int rc = gt_open(dir.c_str(), &o, &s, err->get());
  if (rc != GT_OK) return rc;
  *c = Read(s);
  gt_close(s, nullptr);
  return rc;
}

// gt_check's problem count (-1 when it could not check at all).
long CheckProblems(const std::string &dir, std::string *first = nullptr) {
  gt_check_report *r = nullptr;
  Err err;
  if (gt_check(dir.c_str(), UINT64_MAX, &r, err.get()) != GT_OK) return -1;
  const long n = static_cast<long>(r->nproblems);
  if (first && n > 0) *first = std::string(r->problems[0].file) + ": " + r->problems[0].what;
  gt_check_report_free(r);
  return n;
}

// The history floor (a tag added later): it round-trips, records without
// it read as 0, replay keeps the largest, and a snapshot record of that
// state (a MANIFEST rewrite) carries it.
TEST(RecoveryTest, HistoryFloorRoundTripsAndReplays) {
  gt::ManifestEdit create;
  create.kind = gt::EditKind::kCreate;
  create.has_in_edges = true;
  create.next_file = 1;
  gt::ManifestEdit flush = create;
  flush.kind = gt::EditKind::kFlush;
  flush.has_in_edges = false;
  flush.has_durable_seq = true;
  flush.durable_seq = 30;
  flush.history_floor = 12;
  gt::ManifestEdit compact = flush;
  compact.kind = gt::EditKind::kCompact;
  compact.has_durable_seq = false;
  compact.history_floor = 25;  // a compaction that wrote no file
  gt::ManifestEdit later = flush;
  later.history_floor = 20;
  for (const gt::ManifestEdit &e : {flush, compact}) {
    const std::string enc = gt::EncodeEdit(e);
    gt::ManifestEdit d;
    std::string why;
    ASSERT_TRUE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why)) << why;
    EXPECT_EQ(d.history_floor, e.history_floor);
    gt::ManifestEdit old = e;  // as written before the tag existed
    old.history_floor = 0;
    EXPECT_EQ(gt::EncodeEdit(old).size() + 9, enc.size()) << "a zero floor is not written";
  }
  gt::ManifestContents c;
  c.path = "MANIFEST";
  c.edits = {create, flush, compact, later};
  for (size_t i = 0; i < c.edits.size(); i++) c.offsets.push_back(16 + 100 * i);
  gt::ManifestState st;
  std::vector<gt::Problem> problems;
  gt::ReplayManifest(c, &st, &problems);
  ASSERT_TRUE(problems.empty()) << problems[0].what;
  EXPECT_EQ(st.history_floor, 25u);
  const gt::ManifestEdit snap = gt::SnapshotEdit(st, {}, {});
  EXPECT_EQ(snap.history_floor, 25u);
  gt::ManifestState st2;
  gt::AdvanceState(&st2, snap);
  EXPECT_EQ(st2.history_floor, 25u);
}

// The vertex-delete purge fields (tags added later): they round-trip,
// records without them read as 0, and replay drops purged records and
// refuses a purge past the durable seq or a later delete at or below it.
TEST(RecoveryTest, VdelPurgeFieldsRoundTripAndReplay) {
  auto edit = [](gt::EditKind k, uint64_t next) {
    gt::ManifestEdit e;
    e.kind = k;
    e.next_file = next;
    return e;
  };
  gt::ManifestEdit create = edit(gt::EditKind::kCreate, 1);
  create.has_in_edges = true;
  gt::ManifestEdit flush = edit(gt::EditKind::kFlush, 1);
  flush.has_durable_seq = true;
  flush.durable_seq = 20;
  flush.vdels = {{4, 10}, {5, 15}, {6, 20}};
  flush.vdel_clean = 7;
  gt::ManifestEdit purge = edit(gt::EditKind::kCompact, 1);
  purge.vdel_purge = 15;
  purge.vdel_clean = 15;
  for (const gt::ManifestEdit &e : {flush, purge}) {
    const std::string enc = gt::EncodeEdit(e);
    gt::ManifestEdit d;
    std::string why;
    ASSERT_TRUE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why)) << why;
    EXPECT_EQ(gt::EncodeEdit(d), enc);
    EXPECT_EQ(d.vdel_clean, e.vdel_clean);
    EXPECT_EQ(d.vdel_purge, e.vdel_purge);
  }
  {
    gt::ManifestEdit old = flush;  // as written before the tags existed
    old.vdel_clean = 0;
    const std::string enc = gt::EncodeEdit(old);
    EXPECT_EQ(enc.size() + 9, gt::EncodeEdit(flush).size()) << "a zero field is not written";
    gt::ManifestEdit d;
    std::string why;
    ASSERT_TRUE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why)) << why;
    EXPECT_EQ(d.vdel_clean, 0u);
    EXPECT_EQ(d.vdel_purge, 0u);
  }
  auto replay = [](const std::vector<gt::ManifestEdit> &edits, gt::ManifestState *st) {
    gt::ManifestContents c;
    c.path = "MANIFEST";
    c.edits = edits;
    for (size_t i = 0; i < edits.size(); i++) c.offsets.push_back(16 + 100 * i);
    std::vector<gt::Problem> problems;
    gt::ReplayManifest(c, st, &problems);
    return problems.empty() ? std::string() : problems[0].what;
  };
  gt::ManifestState st;
  EXPECT_EQ(replay({create, flush, purge}, &st), "");
  EXPECT_EQ(st.vdel_purge, 15u);
  EXPECT_EQ(st.vdels, (std::vector<std::pair<uint64_t, uint64_t>>{{6, 20}}));
  gt::ManifestEdit past = purge;
  past.vdel_purge = 21;
  st = gt::ManifestState();
  EXPECT_NE(replay({create, flush, past}, &st).find("past the durable seq"), std::string::npos);
  gt::ManifestEdit stale = flush;
  stale.durable_seq = 30;
  stale.vdels = {{9, 12}};
  st = gt::ManifestState();
  EXPECT_NE(replay({create, flush, purge, stale}, &st).find("at or below the purge point"), std::string::npos);

  // A snapshot record carries the purge point and per-file vdel_clean
  // values: they round-trip, and replay restores them (and refuses a value
  // for a file the snapshot does not add, or a delete at or below its purge).
  gt::ManifestEdit snap = edit(gt::EditKind::kSnapshot, 3);
  snap.has_in_edges = true;
  snap.has_durable_seq = true;
  snap.durable_seq = 20;
  snap.has_bounds = true;
  snap.added.resize(2);
  snap.added[0].id = 1;
  snap.added[1].id = 2;
  snap.added[1].level = 1;
  snap.vdels = {{6, 20}};
  snap.vdel_purge = 15;
  snap.vdel_cleans = {{1, 15}, {2, 18}};
  {
    const std::string enc = gt::EncodeEdit(snap);
    gt::ManifestEdit d;
    std::string why;
    ASSERT_TRUE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why)) << why;
    EXPECT_EQ(gt::EncodeEdit(d), enc);
    EXPECT_EQ(d.vdel_cleans, snap.vdel_cleans);
    EXPECT_EQ(d.vdel_purge, 15u);
  }
  auto replay3 = [&](const std::vector<gt::ManifestEdit> &edits, gt::ManifestState *s3) {
    gt::ManifestContents c;
    c.path = "MANIFEST";
    c.format = 3;
    c.edits = edits;
    for (size_t i = 0; i < edits.size(); i++) c.offsets.push_back(16 + 100 * i);
    std::vector<gt::Problem> problems;
    gt::ReplayManifest(c, s3, &problems);
    return problems.empty() ? std::string() : problems[0].what;
  };
  st = gt::ManifestState();
  EXPECT_EQ(replay3({snap}, &st), "");
  EXPECT_EQ(st.vdel_purge, 15u);
  EXPECT_EQ(st.vdels, snap.vdels);
  EXPECT_EQ(st.vdel_clean, (std::map<uint64_t, uint64_t>{{1, 15}, {2, 18}}));
  // The snapshot of that state is the same record.
  EXPECT_EQ(gt::EncodeEdit(gt::SnapshotEdit(st, {{6, 20}, {5, 15}}, {})), gt::EncodeEdit(snap))
      << "SnapshotEdit drops the deletes the purge took";
  gt::ManifestEdit compact = edit(gt::EditKind::kCompact, 4);
  compact.removed = {1};
  compact.added.resize(1);
  compact.added[0].id = 3;
  compact.added[0].level = 1;
  compact.vdel_clean = 20;
  compact.vdel_purge = 20;
  st = gt::ManifestState();
  EXPECT_EQ(replay3({snap, compact}, &st), "");
  EXPECT_EQ(st.vdel_clean, (std::map<uint64_t, uint64_t>{{2, 18}, {3, 20}}));
  EXPECT_TRUE(st.vdels.empty());
  gt::ManifestEdit bad = snap;
  bad.vdel_cleans.push_back({9, 1});
  st = gt::ManifestState();
  EXPECT_NE(replay3({bad}, &st).find("which it does not add"), std::string::npos);
  bad = snap;
  bad.vdels.push_back({7, 15});
  st = gt::ManifestState();
  EXPECT_NE(replay3({bad}, &st).find("at or below its purge point"), std::string::npos);
  bad = snap;
  bad.vdel_clean = 4;
  st = gt::ManifestState();
  EXPECT_NE(replay3({bad}, &st).find("one vdel_clean for all files"), std::string::npos);
  gt::ManifestEdit flush_cleans = flush;
  flush_cleans.vdel_cleans = {{1, 2}};
  st = gt::ManifestState();
  EXPECT_NE(replay({create, flush_cleans}, &st).find("only a snapshot record"), std::string::npos);
}

TEST(RecoveryTest, EditsRoundTripAndMalformedOnesAreRejected) {
  gt::ManifestEdit e;
  e.kind = gt::EditKind::kFlush;
  e.has_durable_seq = true;
  e.durable_seq = 77;
  gt::SegMeta m;
  m.id = 12;
  m.level = 0;
  m.dir = 1;
  m.min_src = 3;
  m.max_src = 900;
  m.max_dst = 1u << 31;
  m.nverts = 5;
  m.nentries = 9;
  m.bytes = 4096;
  m.min_seq = 2;
  m.max_seq = 77;
  e.added = {m};
  e.vdels = {{4, 70}, {GT_MAX_VERTEX, 71}};
  e.has_srcpos = true;
  e.srcpos = std::string("p\0s", 3);
  e.has_bounds = true;
  e.low_bound = 901;
  e.high_bound = GT_HIGH_ID_BASE + 3;
  e.next_file = 13;
  const std::string enc = gt::EncodeEdit(e);
  gt::ManifestEdit d;
  std::string why;
  ASSERT_TRUE(gt::DecodeEdit(enc.data(), enc.size(), &d, &why)) << why;
  EXPECT_EQ(gt::EncodeEdit(d), enc);
  EXPECT_EQ(d.durable_seq, 77u);
  ASSERT_EQ(d.added.size(), 1u);
  EXPECT_EQ(d.added[0].max_dst, m.max_dst);
  EXPECT_EQ(d.vdels, e.vdels);
  EXPECT_EQ(d.srcpos, e.srcpos);
  EXPECT_EQ(d.high_bound, e.high_bound);
  EXPECT_EQ(d.next_file, 13u);
  // Every proper prefix is malformed (a field cut short, or no next_file).
  for (size_t n = 0; n < enc.size(); n++) {
    why.clear();
    EXPECT_FALSE(gt::DecodeEdit(enc.data(), n, &d, &why)) << "prefix of " << n << " bytes decoded";
    EXPECT_FALSE(why.empty());
  }
  // An unknown tag, an unknown kind, a repeated single field.
  std::string bad = enc;
  bad += '\x63';
  EXPECT_FALSE(gt::DecodeEdit(bad.data(), bad.size(), &d, &why));
  bad = enc;
  bad[1] = 9;
  EXPECT_FALSE(gt::DecodeEdit(bad.data(), bad.size(), &d, &why));
  gt::ManifestEdit c;
  c.kind = gt::EditKind::kCreate;
  c.next_file = 1;
  bad = gt::EncodeEdit(c);
  bad += bad.substr(bad.size() - 9);  // next_file again
  EXPECT_FALSE(gt::DecodeEdit(bad.data(), bad.size(), &d, &why));
  EXPECT_NE(why.find("twice"), std::string::npos) << why;
}

// The offsets of a MANIFEST an exhaustive test tries: every one in the
// whole run (run_volume.sh); every kSanitizedStride-th under the
// sanitizer, from a phase GT_TEST_SEED picks (each opens a store, several
// times slower there; the sanitizer finds what it finds at any offset of
// a record as well as at the next).
struct Offsets {
  size_t first, step;
};
constexpr int kSanitizedStride = 4;
Offsets ExhaustiveOffsets() {
  const size_t step = static_cast<size_t>(gt_test::Volume(1, kSanitizedStride));
  const uint64_t seed = gt_store_test::Seed();
  return Offsets{static_cast<size_t>(seed % step), step};
}

TEST(RecoveryVolumeTest, EveryFlippedManifestByteIsRefusedOrHarmless) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  const std::string manifest = gt_test::ReadFile(src + "/MANIFEST");
  ASSERT_GT(manifest.size(), 200u);
  int refused = 0, harmless = 0;
  const Offsets at = ExhaustiveOffsets();
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(gt_store_test::Seed()));
  for (size_t off = at.first; off < manifest.size(); off += at.step) {
    SCOPED_TRACE("flipped bit " + std::to_string(off % 8) + " of MANIFEST byte " + std::to_string(off));
    CopyDir(src, work);
    std::string m = manifest;
    m[off] = static_cast<char>(m[off] ^ (1 << (off % 8)));
    gt_test::WriteFile(work + "/MANIFEST", m);
    const auto before = Files(work);
    // Checks and read-only opens write nothing.
    const long problems = CheckProblems(work);
    Contents ro;
    Err rerr;
    const int rrc = OpenAndRead(work, true, &ro, &rerr);
    ASSERT_EQ(FileDiff(before, Files(work)), "") << "a check or read-only open changed a file";
    Contents got;
    Err err;
    const int rc = OpenAndRead(work, false, &got, &err);
    if (rc == GT_OK) {
      harmless++;
      EXPECT_TRUE(got == b.final) << "opened to other contents";
      EXPECT_EQ(rrc, GT_OK) << rerr.msg();
      EXPECT_TRUE(ro == b.final);
      EXPECT_EQ(problems, 0);
    } else {
      refused++;
      EXPECT_EQ(rc, GT_ERR_CORRUPTION) << err.msg();
      EXPECT_EQ(err.file(), work + "/MANIFEST") << err.msg();
      EXPECT_NE(rrc, GT_OK);
      EXPECT_GT(problems, 0);
      EXPECT_EQ(FileDiff(before, Files(work)), "") << "a refused open changed a file";
    }
  }
  EXPECT_GT(refused, 0);
  RecordProperty("refused", refused);
  RecordProperty("harmless", harmless);
}

// The contents of the newest flush whose edit ends at or before end.
const Contents &StateAt(const Built &b, uint64_t end) {
  const Contents *want = &b.states.front().second;
  for (const auto &st : b.states)
    if (st.first <= end) want = &st.second;
  return *want;
}

// A MANIFEST cut anywhere in the final directory: the store either refuses
// (the prefix names files that later compactions deleted) or opens to the
// state of the newest complete flush, and the files left are all live.
TEST(RecoveryVolumeTest, ManifestCutAtEveryOffsetOpensToARealStateOrIsRefused) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  const std::string manifest = gt_test::ReadFile(src + "/MANIFEST");
  int opened = 0;
  const Offsets at = ExhaustiveOffsets();
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(gt_store_test::Seed()));
  // The whole MANIFEST (opened to the final state) is always one.
  std::vector<size_t> cuts;
  for (size_t cut = at.first; cut < manifest.size(); cut += at.step) cuts.push_back(cut);
  cuts.push_back(manifest.size());
  for (size_t cut : cuts) {
    SCOPED_TRACE("MANIFEST cut to " + std::to_string(cut) + " bytes");
    CopyDir(src, work);
    gt_test::WriteFile(work + "/MANIFEST", manifest.substr(0, cut));
    const auto before = Files(work);
    const long problems = CheckProblems(work);
    ASSERT_EQ(FileDiff(before, Files(work)), "") << "a check changed a file";
    Contents got;
    Err err;
    const int rc = OpenAndRead(work, false, &got, &err);
    if (rc != GT_OK) {
      EXPECT_EQ(rc, GT_ERR_CORRUPTION) << err.msg();
      EXPECT_GT(problems, 0);
      EXPECT_EQ(FileDiff(before, Files(work)), "") << "a refused open changed a file";
      continue;
    }
    opened++;
    EXPECT_EQ(problems, 0);
    EXPECT_TRUE(got == StateAt(b, cut)) << "not the state of the newest complete flush";
    const auto after = SegNames(work);
    Contents again;
    Err err2;
    ASSERT_EQ(OpenAndRead(work, false, &again, &err2), GT_OK) << err2.msg();
    EXPECT_EQ(SegNames(work), after) << "a second open found more to delete";
  }
  EXPECT_GE(opened, 1);
}

// A genuine torn tail: the directory as it was while the edit of record k
// was being appended (every file live after the records before it, and the
// files record k adds, already written), with the MANIFEST cut anywhere
// inside record k. Every such store opens, to the state of the records
// before k; the files record k added are deleted and the tail is cut.
TEST(RecoveryVolumeTest, GenuineTornTailsAlwaysRecover) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  const std::string manifest = gt_test::ReadFile(src + "/MANIFEST");
  gt::ManifestContents all;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(src + "/MANIFEST", &all, &problems).ok());
  ASSERT_TRUE(problems.empty());
  int cuts = 0, skipped = 0;
  const Offsets at = ExhaustiveOffsets();
  SCOPED_TRACE("GT_TEST_SEED=" + std::to_string(gt_store_test::Seed()));
  for (size_t k = 1; k < all.edits.size(); k++) {
    gt::ManifestContents prefix = all;
    prefix.edits.resize(k);
    prefix.offsets.resize(k);
    gt::ManifestState st;
    gt::ReplayManifest(prefix, &st, &problems);
    ASSERT_TRUE(problems.empty());
    std::set<std::string> need;
    for (const auto &kv : st.live) need.insert(gt::SegmentFileName(kv.first));
    std::set<std::string> added;
    for (const gt::SegMeta &m : all.edits[k].added) added.insert(gt::SegmentFileName(m.id));
    bool have = true;
    for (const auto *set : {&need, &added})
      for (const std::string &n : *set) have = have && b.archive.count(n);
    if (!have) {  // a file made and deleted within one compact_all call
      skipped++;
      continue;
    }
    const uint64_t start = all.offsets[k], end = k + 1 < all.offsets.size() ? all.offsets[k + 1] : manifest.size();
    // Every cut inside the record (every step-th, from the phase, under
    // the sanitizer).
    for (uint64_t cut = start + 1 + at.first; cut < end; cut += at.step) {
      SCOPED_TRACE("record " + std::to_string(k) + " cut to " + std::to_string(cut - start) + " of its " +
                   std::to_string(end - start) + " bytes");
      fs::remove_all(work);
      fs::create_directory(work);
      for (const auto *set : {&need, &added})
        for (const std::string &n : *set) gt_test::WriteFile(work + "/" + n, b.archive.at(n));
      gt_test::WriteFile(work + "/MANIFEST", manifest.substr(0, cut));
      Contents got;
      Err err;
      ASSERT_EQ(OpenAndRead(work, false, &got, &err), GT_OK) << err.msg() << " " << err.file();
      EXPECT_TRUE(got == StateAt(b, start));
      EXPECT_EQ(SegNames(work), need) << "the torn edit's files must go, every live one stay";
      EXPECT_EQ(gt_test::ReadFile(work + "/MANIFEST"), manifest.substr(0, start)) << "the torn tail is cut";
      cuts++;
    }
  }
  EXPECT_GT(cuts, static_cast<int>(manifest.size() / 2 / at.step)) << skipped << " records skipped";
}

TEST(RecoveryTest, MissingOrEmptyManifestBesideSegmentsIsRefused) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  const std::string manifest = gt_test::ReadFile(src + "/MANIFEST");
  for (const std::string &variant :
       {std::string("missing"), std::string("empty"), std::string("header only"), std::string("zeros")}) {
    SCOPED_TRACE(variant);
    CopyDir(src, work);
    if (variant == "missing")
      fs::remove(work + "/MANIFEST");
    else if (variant == "empty")
      gt_test::WriteFile(work + "/MANIFEST", "");
    else if (variant == "header only")
      gt_test::WriteFile(work + "/MANIFEST", manifest.substr(0, 16));
    else
      gt_test::WriteFile(work + "/MANIFEST", std::string(manifest.size(), '\0'));
    const auto before = Files(work);
    ASSERT_FALSE(SegNames(work).empty());
    for (bool ro : {true, false}) {
      Contents got;
      Err err;
      EXPECT_EQ(OpenAndRead(work, ro, &got, &err), GT_ERR_CORRUPTION) << err.msg();
      EXPECT_EQ(err.file(), work + "/MANIFEST");
      if (variant == "missing") {
        EXPECT_NE(err.msg().find(".seg"), std::string::npos) << "lists the files: " << err.msg();
      }
    }
    EXPECT_GT(CheckProblems(work), 0);
    EXPECT_EQ(FileDiff(before, Files(work)), "") << "every file must still be there, unchanged";
  }
  // With no segment file either, a missing MANIFEST is a new store.
  TempDir fresh;
  Contents got;
  Err err;
  EXPECT_EQ(OpenAndRead(fresh.path(), true, &got, &err), GT_ERR_INVALID) << "read-only never creates";
  EXPECT_FALSE(fs::exists(fresh.Sub("MANIFEST")));
  ASSERT_EQ(OpenAndRead(fresh.path(), false, &got, &err), GT_OK) << err.msg();
  EXPECT_TRUE(fs::exists(fresh.Sub("MANIFEST")));
  EXPECT_FALSE(fs::exists(fresh.Sub("MANIFEST.tmp")));
}

TEST(RecoveryTest, OnlyProvableGarbageIsDeleted) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  gt_check_report *r = nullptr;
  Err err;
  ASSERT_EQ(gt_check(src.c_str(), UINT64_MAX, &r, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(r->nproblems, 0u) << r->problems[0].file << ": " << r->problems[0].what;
  ASSERT_EQ(r->nnotes, 0u);
  EXPECT_EQ(r->manifest_ok, 1u);
  EXPECT_EQ(r->files_checked, r->live_files);
  EXPECT_EQ(r->durable_seq, b.final.seq);
  const uint64_t next = r->next_file;
  gt_check_report_free(r);
  const auto live = SegNames(src);
  ASSERT_FALSE(live.empty());
  const std::string any = src + "/" + *live.begin();

  // A file numbered at or above next_file: an unfinished flush's leftover.
  CopyDir(src, work);
  const std::string leftover = work + "/" + gt::SegmentFileName(next + 3);
  gt_test::WriteFile(leftover, "half a segment");
  ASSERT_EQ(gt_check(work.c_str(), UINT64_MAX, &r, err.get()), GT_OK) << err.msg();
  EXPECT_EQ(r->nproblems, 0u);
  ASSERT_EQ(r->nnotes, 1u);
  EXPECT_EQ(std::string(r->notes[0].file), leftover);
  gt_check_report_free(r);
  Contents got;
  ASSERT_EQ(OpenAndRead(work, true, &got, &err), GT_OK) << err.msg();
  EXPECT_TRUE(fs::exists(leftover)) << "a read-only open deleted a file";
  ASSERT_EQ(OpenAndRead(work, false, &got, &err), GT_OK) << err.msg();
  EXPECT_TRUE(got == b.final);
  EXPECT_FALSE(fs::exists(leftover)) << "the leftover of an unfinished flush must go";
  EXPECT_EQ(SegNames(work), live);

  // A valid segment under a number below next_file that no edit named: it
  // may be data the manifest lost. (No store makes one: the manifest is
  // rewritten with a larger next_file, as if a lost edit had named it.)
  CopyDir(src, work);
  gt::ManifestContents mc;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(work + "/MANIFEST", &mc, &problems).ok());
  ASSERT_TRUE(problems.empty());
  mc.edits.back().next_file = next + 10;
  gt_test::WriteFile(work + "/MANIFEST", gt::ManifestBytes(mc.edits));
  ASSERT_EQ(OpenAndRead(work, true, &got, &err), GT_OK) << err.msg();
  EXPECT_TRUE(got == b.final) << "the rewritten manifest describes the same store";
  const std::string stray = work + "/" + gt::SegmentFileName(next + 2);
  gt_test::WriteFile(stray, gt_test::ReadFile(any));
  std::string first;
  EXPECT_GE(CheckProblems(work, &first), 1);
  EXPECT_NE(first.find(gt::SegmentFileName(next + 2)), std::string::npos) << first;
  const auto before = Files(work);
  for (bool ro : {true, false}) {
    Err e2;
    EXPECT_EQ(OpenAndRead(work, ro, &got, &e2), GT_ERR_CORRUPTION);
    EXPECT_EQ(e2.file(), stray) << e2.msg();
  }
  EXPECT_EQ(FileDiff(before, Files(work)), "");
}

TEST(RecoveryTest, ReadOnlyOpenRefusesWritesAndSharesTheLock) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store");
  gt_options ro = Opts(true), rw = Opts(false);
  gt_store *r1 = nullptr, *r2 = nullptr, *w = nullptr;
  Err err;
  ASSERT_EQ(gt_open(src.c_str(), &ro, &r1, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(gt_open(src.c_str(), &ro, &r2, err.get()), GT_OK) << "readers share: " << err.msg();
  EXPECT_EQ(gt_open(src.c_str(), &rw, &w, err.get()), GT_ERR_LOCKED) << "no writer beside readers";
  err.Reset();
  gt_op op = Op(GT_OP_UPSERT, 1, 2);
  uint64_t seq = 0;
  EXPECT_EQ(gt_apply(r1, &op, 1, nullptr, 0, &seq, err.get()), GT_ERR_INVALID);
  err.Reset();
  EXPECT_EQ(gt_flush(r1, err.get()), GT_ERR_INVALID);
  err.Reset();
  EXPECT_EQ(gt_compact_all(r1, err.get()), GT_ERR_INVALID);
  err.Reset();
  EXPECT_TRUE(Read(r1) == b.final);
  gt_close(r1, nullptr);
  gt_close(r2, nullptr);
  ASSERT_EQ(gt_open(src.c_str(), &rw, &w, err.get()), GT_OK) << err.msg();
  gt_store *r3 = nullptr;
  EXPECT_EQ(gt_open(src.c_str(), &ro, &r3, err.get()), GT_ERR_LOCKED) << "no reader beside a writer";
  err.Reset();
  gt_check_report *rep = nullptr;
  EXPECT_EQ(gt_check(src.c_str(), UINT64_MAX, &rep, err.get()), GT_ERR_LOCKED);
  gt_close(w, nullptr);
}

}  // namespace

namespace {

// gt_check's note count (-1 when it could not check at all).
long CheckNotes(const std::string &dir) {
  gt_check_report *r = nullptr;
  Err err;
  if (gt_check(dir.c_str(), UINT64_MAX, &r, err.get()) != GT_OK) return -1;
  const long n = static_cast<long>(r->nnotes);
  gt_check_report_free(r);
  return n;
}

}  // namespace

// A MANIFEST rewritten as one snapshot record (format 3) of a store's state
// opens to the same store, read-only and read-write; a file a compaction
// removed and the snapshot lists as obsolete is a leftover (noted, deleted
// by a read-write open), while one it does not list is unexplained; a
// MANIFEST.tmp beside the MANIFEST is a leftover; and the snapshot record's
// checks hold (first record only, in format 3 only).
TEST(RecoveryTest, SnapshotManifestOpensToTheSameStore) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  gt::ManifestContents mc;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(src + "/MANIFEST", &mc, &problems).ok());
  EXPECT_EQ(mc.format, 2u);
  gt::ManifestState ms;
  gt::ReplayManifest(mc, &ms, &problems);
  ASSERT_TRUE(problems.empty()) << problems[0].what;
  ASSERT_FALSE(ms.vdels.empty()) << "the built store has a vertex delete";
  // A file a compaction removed (archived, not live now).
  std::string removed;
  uint64_t removed_id = 0;
  for (const auto &[name, bytes] : b.archive) {
    uint64_t id;
    if (gt::ParseSegmentName(name, &id) && ms.live.count(id) == 0 && id < ms.next_file) {
      removed = name;
      removed_id = id;
    }
  }
  ASSERT_FALSE(removed.empty());
  auto vdels = ms.vdels;
  std::sort(vdels.begin(), vdels.end());
  const gt::ManifestEdit snap = gt::SnapshotEdit(ms, vdels, {removed_id});
  const std::string bytes = gt::ManifestBytes({snap});

  CopyDir(src, work);
  gt_test::WriteFile(work + "/MANIFEST", bytes);
  gt::ManifestContents rc;
  ASSERT_TRUE(gt::ReadManifest(work + "/MANIFEST", &rc, &problems).ok());
  EXPECT_EQ(rc.format, 3u);
  gt::ManifestState rs;
  gt::ReplayManifest(rc, &rs, &problems);
  ASSERT_TRUE(problems.empty()) << problems[0].what;
  EXPECT_EQ(rs.live.size(), ms.live.size());
  EXPECT_EQ(rs.durable_seq, ms.durable_seq);
  EXPECT_EQ(rs.srcpos, ms.srcpos);
  EXPECT_EQ(rs.next_file, ms.next_file);
  EXPECT_EQ(rs.high_bound, ms.high_bound);
  EXPECT_EQ(rs.vdels, vdels);
  // The vertex-delete state: the purge the compactions recorded, and each
  // live file's vdel_clean.
  EXPECT_GT(ms.vdel_purge, 0u) << "the built store's compactions purged vertex 7's delete";
  EXPECT_EQ(rs.vdel_purge, ms.vdel_purge);
  EXPECT_FALSE(ms.vdel_clean.empty());
  EXPECT_EQ(rs.vdel_clean, ms.vdel_clean);
  EXPECT_EQ(CheckProblems(work), 0);
  Contents got;
  Err err;
  ASSERT_EQ(OpenAndRead(work, true, &got, &err), GT_OK) << err.msg();
  EXPECT_TRUE(got == b.final) << "read-only, from the snapshot";
  // The removed file back on disk, and a MANIFEST.tmp: two leftovers.
  gt_test::WriteFile(work + "/" + removed, b.archive.at(removed));
  gt_test::WriteFile(work + "/MANIFEST.tmp", bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(CheckProblems(work), 0);
  EXPECT_EQ(CheckNotes(work), 2);
  ASSERT_EQ(OpenAndRead(work, false, &got, &err), GT_OK) << err.msg();
  EXPECT_TRUE(got == b.final) << "read-write, from the snapshot";
  EXPECT_FALSE(fs::exists(work + "/" + removed)) << "an obsolete file the snapshot lists must go";
  EXPECT_FALSE(fs::exists(work + "/MANIFEST.tmp"));
  EXPECT_EQ(CheckProblems(work) + CheckNotes(work), 0);
  ASSERT_EQ(OpenAndRead(work, false, &got, &err), GT_OK) << err.msg();
  EXPECT_TRUE(got == b.final) << "reopened after appending to the snapshot";

  // Without the obsolete list the removed file is unexplained: refused.
  CopyDir(src, work);
  gt_test::WriteFile(work + "/MANIFEST", gt::ManifestBytes({gt::SnapshotEdit(ms, vdels, {})}));
  gt_test::WriteFile(work + "/" + removed, b.archive.at(removed));
  EXPECT_EQ(CheckProblems(work), 1);
  {
    Err e2;
    EXPECT_EQ(OpenAndRead(work, false, &got, &e2), GT_ERR_CORRUPTION);
  }

  // A snapshot after the first record, or a create record first in format 3.
  for (int k = 0; k < 2; k++) {
    SCOPED_TRACE(k == 0 ? "snapshot second" : "create first in format 3");
    std::vector<gt::ManifestEdit> edits = mc.edits;
    edits.insert(edits.begin() + 1, snap);
    std::string m = gt::ManifestBytes(edits);
    if (k == 1) {
      m = gt::ManifestBytes({snap}).substr(0, 16) + gt::ManifestBytes(mc.edits).substr(16);
    }
    CopyDir(src, work);
    gt_test::WriteFile(work + "/MANIFEST", m);
    Err e2;
    EXPECT_EQ(OpenAndRead(work, true, &got, &e2), GT_ERR_CORRUPTION);
  }
}

// The MANIFEST replayed: what the vertex-delete state and the file set
// must agree on between a store whose MANIFEST is rewritten and one whose
// is not.
struct ReplayedState {
  uint32_t format = 0;
  gt::ManifestState st;
  std::map<uint64_t, std::vector<uint64_t>> files;  // id -> (dir, level, min_src, max_src, entries, min_seq, max_seq)
};

void Replayed(const std::string &dir, ReplayedState *r) {
  gt::ManifestContents mc;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(dir + "/MANIFEST", &mc, &problems).ok());
  gt::ReplayManifest(mc, &r->st, &problems);
  ASSERT_TRUE(problems.empty()) << problems[0].what;
  r->format = mc.format;
  std::sort(r->st.vdels.begin(), r->st.vdels.end());
  r->files.clear();
  for (const auto &[id, m] : r->st.live)
    r->files[id] = {m.dir, m.level, m.min_src, m.max_src, m.nentries, m.min_seq, m.max_seq};
}

void ExpectSameVdelState(const ReplayedState &want, const ReplayedState &got) {
  EXPECT_EQ(got.files, want.files) << "live files";
  EXPECT_EQ(got.st.durable_seq, want.st.durable_seq);
  EXPECT_EQ(got.st.vdels, want.st.vdels) << "live vertex deletes";
  EXPECT_EQ(got.st.vdel_purge, want.st.vdel_purge) << "purge point";
  EXPECT_EQ(got.st.vdel_clean, want.st.vdel_clean) << "per-file vdel_clean";
}

// Vertex deletes, purges by compaction (some held back by a pinned
// snapshot) and flushes, applied alike to two stores: one whose MANIFEST is
// never rewritten and one whose MANIFEST is rewritten as a snapshot every
// few edits (test_manifest_rewrite_bytes = 1). After every step both
// MANIFESTs replay to the same files, live vertex deletes, purge point and
// per-file vdel_clean; the rewritten store reopens to the same graph, its
// files' in-memory vertex-delete floors and its map's purge point and
// records are the ones the other store's edits recorded, and compaction
// after the reopen does exactly what it does in the other store.
TEST(RecoveryTest, VertexDeleteStateSurvivesManifestRewrites) {
  TempDir dir;
  const std::string pa = dir.Sub("plain"), pb = dir.Sub("rewritten");
  gt_store *a = nullptr, *b = nullptr;
  Err err;
  gt_options oa = Opts(), ob = Opts();
  ob.test_manifest_rewrite_bytes = 1;
  ASSERT_EQ(gt_open(pa.c_str(), &oa, &a, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(gt_open(pb.c_str(), &ob, &b, err.get()), GT_OK) << err.msg();
  OracleGraph o;
  gt_snapshot *pin[2] = {nullptr, nullptr};
  int snapshots_read = 0, live_and_purged = 0, floors_above_purge = 0;
  auto both = [&](const std::function<int(gt_store *)> &f) {
    ASSERT_EQ(f(a), GT_OK) << err.msg();
    ASSERT_EQ(f(b), GT_OK) << err.msg();
  };
  auto compare = [&](const char *when) {
    SCOPED_TRACE(when);
    ReplayedState ra, rb;
    ASSERT_NO_FATAL_FAILURE(Replayed(pa, &ra));
    ASSERT_NO_FATAL_FAILURE(Replayed(pb, &rb));
    EXPECT_EQ(ra.format, 2u) << "the plain store's MANIFEST must not be rewritten";
    if (rb.format == 3) snapshots_read++;
    ExpectSameVdelState(ra, rb);
    if (!ra.st.vdels.empty() && ra.st.vdel_purge > 0) live_and_purged++;
    for (const auto &[id, clean] : ra.st.vdel_clean)
      if (clean > ra.st.vdel_purge && ra.st.vdel_purge > 0) floors_above_purge++;
  };
  for (int round = 0; round < 14; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<gt_op> ops;
    for (uint64_t i = 0; i < 80; i++)
      ops.push_back(Op(GT_OP_UPSERT, (i * 7 + round) % 60, (i * 11 + 5 * round) % 70, 1.0 + round));
    // Rounds without a delete: their compactions leave files clean above
    // the last purge point.
    if (round % 5 != 4 && round % 5 != 0) ops.push_back(Op(GT_OP_DELETE_VERTEX, (round * 17) % 60, 0, 0));
    if (round % 3 == 0) ops.push_back(Op(GT_OP_DELETE_VERTEX, (round * 29 + 3) % 70, 0, 0));
    both([&](gt_store *s) { return gt_apply(s, ops.data(), ops.size(), nullptr, 0, &o.c.seq, err.get()); });
    o.Apply(ops);
    both([&](gt_store *s) { return gt_flush(s, err.get()); });
    if (round % 4 == 1) {
      // A pinned snapshot holds back the purge of every later delete.
      for (gt_snapshot *&p : pin) gt_snapshot_release(p);
      ASSERT_EQ(gt_snapshot_new(a, &pin[0], err.get()), GT_OK);
      ASSERT_EQ(gt_snapshot_new(b, &pin[1], err.get()), GT_OK);
    } else if (round % 4 == 3) {
      for (gt_snapshot *&p : pin) {
        gt_snapshot_release(p);
        p = nullptr;
      }
    }
    if (round % 3 != 0) both([&](gt_store *s) { return gt_compact_all(s, err.get()); });
    ASSERT_NO_FATAL_FAILURE(compare("after the round"));
  }
  {
    // Live deletes at the end: flushed, not compacted.
    const std::vector<gt_op> ops = {Op(GT_OP_UPSERT, 3, 9, 7.5), Op(GT_OP_DELETE_VERTEX, 21, 0, 0),
                                    Op(GT_OP_DELETE_VERTEX, 44, 0, 0)};
    both([&](gt_store *s) { return gt_apply(s, ops.data(), ops.size(), nullptr, 0, &o.c.seq, err.get()); });
    o.Apply(ops);
    both([&](gt_store *s) { return gt_flush(s, err.get()); });
    ASSERT_NO_FATAL_FAILURE(compare("after the last flush"));
  }
  gt_metrics mb;
  gt_get_metrics(b, &mb);
  EXPECT_GE(mb.manifest_rewrites, 5u);
  EXPECT_GE(snapshots_read, 5);
  EXPECT_GE(live_and_purged, 3) << "the MANIFEST should often hold both a purge and live vertex deletes";
  EXPECT_GE(floors_above_purge, 3) << "files should often be clean above the purge point";
  for (gt_snapshot *&p : pin) gt_snapshot_release(p);
  const Contents want = Read(a);
  EXPECT_TRUE(want == o.c) << "the plain store differs from the oracle";
  EXPECT_TRUE(Read(b) == want);
  gt_metrics ma;
  gt_get_metrics(a, &ma);
  ASSERT_GT(ma.vertex_deletes, 0u);
  ASSERT_EQ(gt_close(a, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(gt_close(b, err.get()), GT_OK) << err.msg();
  ReplayedState ra;
  ASSERT_NO_FATAL_FAILURE(Replayed(pa, &ra));
  {
    ReplayedState rb;
    ASSERT_NO_FATAL_FAILURE(Replayed(pb, &rb));
    ASSERT_EQ(rb.format, 3u);
    ExpectSameVdelState(ra, rb);
  }

  // The rewritten store opened (read-only, so that nothing changes): every
  // file's floor and the map's purge point and records are the recorded ones.
  {
    gt::Options opt;
    gt_options c = Opts(true);
    ASSERT_TRUE(gt::ValidateOptions(&c, &opt).ok());
    std::unique_ptr<gt::Store> st;
    gt::Status s = gt::Store::Open(pb, opt, &st);
    ASSERT_TRUE(s.ok()) << s.msg << " " << s.file;
    auto ver = st->Current();
    size_t files = 0;
    for (const gt::Tree &t : ver->trees) {
      std::vector<std::shared_ptr<gt::Segment>> segs = t.l0;
      for (const auto &lv : t.levels) segs.insert(segs.end(), lv.begin(), lv.end());
      for (const auto &seg : segs) {
        const gt::SegMeta &m = seg->meta();
        auto it = ra.st.vdel_clean.find(m.id);
        const uint64_t clean = it == ra.st.vdel_clean.end() ? 0 : it->second;
        EXPECT_EQ(seg->vdel_floor(), std::max(m.min_seq, clean)) << gt::SegmentFileName(m.id);
        files++;
      }
    }
    EXPECT_EQ(files, ra.st.live.size());
    EXPECT_EQ(ver->vdel->purged_through(), ra.st.vdel_purge);
    std::vector<gt::VdelMap::Record> recs;
    ver->vdel->Records(UINT64_MAX, &recs);
    EXPECT_EQ(recs, ra.st.vdels);
  }

  // Both reopened read-write: the same graph and delete count; a full
  // compaction then does the same in both (the floors decide which files
  // it rewrites in place) and purges every delete.
  ASSERT_EQ(gt_open(pa.c_str(), &oa, &a, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(gt_open(pb.c_str(), &ob, &b, err.get()), GT_OK) << err.msg();
  EXPECT_TRUE(Read(b) == want);
  gt_get_metrics(b, &mb);
  EXPECT_EQ(mb.vertex_deletes, ma.vertex_deletes);
  both([&](gt_store *s) { return gt_compact_all(s, err.get()); });
  ASSERT_NO_FATAL_FAILURE(compare("compact all after the reopen"));
  gt_get_metrics(b, &mb);
  EXPECT_EQ(mb.vertex_deletes, 0u);
  EXPECT_TRUE(Read(b) == want);
  EXPECT_TRUE(Read(a) == want);
  ASSERT_EQ(gt_close(a, err.get()), GT_OK) << err.msg();
  ASSERT_EQ(gt_close(b, err.get()), GT_OK) << err.msg();
}
