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
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graphtide.h"
#include "manifest.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using gt_test::Err;
using gt_test::TempDir;

using Adj = std::map<uint64_t, std::map<uint64_t, double>>;  // src -> dst -> weight

gt_op Op(uint32_t kind, uint64_t src, uint64_t dst, double w = 1.0) {
  gt_op op;
  std::memset(&op, 0, sizeof op);
  op.kind = kind;
  op.src = src;
  op.dst = dst;
  op.weight = w;
  return op;
}

gt_options Opts(bool read_only = false) {
  gt_options o;
  std::memset(&o, 0, sizeof o);
  o.memgraph_bytes = 64 << 10;
  o.target_segment_bytes = 16 << 10;
  o.l0_compaction_trigger = 2;
  o.size_ratio = 3;
  o.max_levels = 4;
  o.in_edges = 1;
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
  bool operator==(const Contents &o) const { return out == o.out && in == o.in && seq == o.seq && srcpos == o.srcpos; }
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
    const int rc = gt_snapshot_scan(snap, pos, hi, dir, vids.data(), offs.data(), vids.size(), dsts.data(), ws.data(),
                                    dsts.size(), &nv, &ne, &next, err.get());
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
  return c;
}

class OracleGraph {
 public:
  void Apply(const std::vector<gt_op> &ops) {
    for (const gt_op &op : ops) {
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
  void Archive() {
    for (const auto &[name, bytes] : Files(dir.Sub("store")))
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".seg") == 0) archive[name] = bytes;
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
  const uint64_t hi = GT_HIGH_ID_BASE;
  for (int round = 0; round < 4; round++) {
    std::vector<gt_op> ops;
    for (uint64_t i = 0; i < 60; i++) {
      const uint64_t s0 = (i * 7 + round) % 40, d0 = (i * 13 + 3 * round) % 50;
      ops.push_back(Op(GT_OP_UPSERT, s0, d0, 1.0 + static_cast<double>(round)));
    }
    ops.push_back(Op(GT_OP_UPSERT, hi + round, 5, 2.5));  // a string-key id
    if (round == 2) ops.push_back(Op(GT_OP_DELETE_VERTEX, 7, 0, 0));
    if (round == 3) ops.push_back(Op(GT_OP_DELETE_EDGE, 0, 0, 0));
    uint64_t seq = 0;
    const std::string pos = "position-" + std::to_string(round);
    ASSERT_EQ(
        gt_apply(s, ops.data(), ops.size(), reinterpret_cast<const uint8_t *>(pos.data()), pos.size(), &seq, err.get()),
        GT_OK)
        << err.msg();
    o.Apply(ops);
    o.c.seq = seq;
    o.c.srcpos = pos;
    ASSERT_EQ(gt_flush(s, err.get()), GT_OK) << err.msg();
    b->states.emplace_back(manifest_size(), o.c);
    b->Archive();
    if (round == 1) {
      ASSERT_EQ(gt_compact_all(s, err.get()), GT_OK) << err.msg();
      b->Archive();
    }
  }
  ASSERT_EQ(gt_compact_all(s, err.get()), GT_OK) << err.msg();
  b->Archive();
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

TEST(RecoveryTest, EveryFlippedManifestByteIsRefusedOrHarmless) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  const std::string manifest = gt_test::ReadFile(src + "/MANIFEST");
  ASSERT_GT(manifest.size(), 200u);
  int refused = 0, harmless = 0;
  for (size_t off = 0; off < manifest.size(); off++) {
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
TEST(RecoveryTest, ManifestCutAtEveryOffsetOpensToARealStateOrIsRefused) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  const std::string manifest = gt_test::ReadFile(src + "/MANIFEST");
  int opened = 0;
  for (size_t cut = 0; cut <= manifest.size(); cut++) {
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
TEST(RecoveryTest, GenuineTornTailsAlwaysRecover) {
  Built b;
  ASSERT_NO_FATAL_FAILURE(Build(&b));
  const std::string src = b.dir.Sub("store"), work = b.dir.Sub("work");
  const std::string manifest = gt_test::ReadFile(src + "/MANIFEST");
  gt::ManifestContents all;
  std::vector<gt::Problem> problems;
  ASSERT_TRUE(gt::ReadManifest(src + "/MANIFEST", &all, &problems).ok());
  ASSERT_TRUE(problems.empty());
  int cuts = 0, skipped = 0;
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
    for (uint64_t cut = start + 1; cut < end; cut++) {
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
  EXPECT_GT(cuts, static_cast<int>(manifest.size() / 2)) << skipped << " records skipped";
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
