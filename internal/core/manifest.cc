#include "manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "graphtide.h"

namespace gt {
namespace {

constexpr char kMagic[8] = {'G', 'T', 'M', 'A', 'N', 'I', '0', '2'};
constexpr uint32_t kFormatCreate = 2;    // first record: kCreate
constexpr uint32_t kFormatSnapshot = 3;  // first record: kSnapshot (a rewritten MANIFEST)
constexpr size_t kFileHeader = 16;
constexpr size_t kRecHeader = 12;

// Field tags of an edit payload.
enum Tag : uint8_t {
  kTagKind = 1,       // u8 EditKind
  kTagInEdges = 2,    // u32
  kTagDurable = 3,    // u64 durable seq
  kTagAdded = 4,      // SegMeta (repeated)
  kTagRemoved = 5,    // u64 file id (repeated)
  kTagVdel = 6,       // u64 vertex, u64 seq (repeated)
  kTagSrcpos = 7,     // u32 length, bytes
  kTagBounds = 8,     // u64 low, u64 high
  kTagNextFile = 9,   // u64
  kTagObsolete = 10,  // u64 file id (repeated; kSnapshot)
  // Added with vertex-delete purging; records written before lack them
  // (read as 0: nothing purged, no file known free of deletes).
  kTagVdelClean = 11,      // u64 (flush, compaction)
  kTagVdelPurge = 12,      // u64 (compaction, snapshot)
  kTagVdelCleanFile = 13,  // u64 file id, u64 vdel_clean (repeated; kSnapshot)
  // Added with history; records written before lack it (read as 0).
  kTagHistoryFloor = 14,  // u64 (flush, compaction, snapshot)
  // Added with edge types' aggregates (issue 42); written only by a store
  // with an accumulate type.
  kTagAccumulate = 15,  // u32 type, i64 retain µs (repeated; types, snapshot)
  kTagNewestTime = 16,  // i64 Unix µs (flush, compaction, snapshot)
  // Event sources (issue 42).
  kTagSource = 17,  // u32 number, u32 length, name bytes (repeated; sources, snapshot)
};

std::string Hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

class Enc {
 public:
  template <typename T>
  void Put(T v) {
    const char *p = reinterpret_cast<const char *>(&v);
    s.append(p, sizeof v);
  }
  void Meta(const SegMeta &m) {
    Put(m.id);
    Put(m.level);
    Put(m.dir);
    Put(m.min_src);
    Put(m.max_src);
    Put(m.max_dst);
    Put(m.nverts);
    Put(m.nentries);
    Put(m.bytes);
    Put(m.min_seq);
    Put(m.max_seq);
  }
  std::string s;
};

class Dec {
 public:
  Dec(const char *p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  bool Get(T *v) {
    if (n_ < sizeof(T)) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    n_ -= sizeof(T);
    return true;
  }
  bool Meta(SegMeta *m) {
    return Get(&m->id) && Get(&m->level) && Get(&m->dir) && Get(&m->min_src) && Get(&m->max_src) && Get(&m->max_dst) &&
           Get(&m->nverts) && Get(&m->nentries) && Get(&m->bytes) && Get(&m->min_seq) && Get(&m->max_seq);
  }
  bool Bytes(size_t n, std::string *out) {
    if (n_ < n) return false;
    out->assign(p_, n);
    p_ += n;
    n_ -= n;
    return true;
  }
  bool done() const { return n_ == 0; }

 private:
  const char *p_;
  size_t n_;
};

template <typename T>
T Load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string FileHeader(uint32_t format) {
  Enc e;
  e.s.append(kMagic, sizeof kMagic);
  e.Put(format);
  e.Put(Crc32c(e.s.data(), e.s.size()));
  return e.s;
}

std::string Record(const ManifestEdit &e) {
  const std::string payload = EncodeEdit(e);
  Enc r;
  r.Put(static_cast<uint32_t>(payload.size()));
  r.Put(Crc32c(payload.data(), payload.size()));
  r.Put(Crc32c(r.s.data(), 8));
  r.s += payload;
  return r.s;
}

bool AllZero(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != 0) return false;
  return true;
}

struct FdCloser {
  int fd;
  FdCloser(const FdCloser &) = delete;
  FdCloser &operator=(const FdCloser &) = delete;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string EncodeEdit(const ManifestEdit &e) {
  Enc x;
  x.Put(static_cast<uint8_t>(kTagKind));
  x.Put(static_cast<uint8_t>(e.kind));
  if (e.has_in_edges) {
    x.Put(static_cast<uint8_t>(kTagInEdges));
    x.Put(e.in_edges);
  }
  if (e.has_durable_seq) {
    x.Put(static_cast<uint8_t>(kTagDurable));
    x.Put(e.durable_seq);
  }
  for (const SegMeta &m : e.added) {
    x.Put(static_cast<uint8_t>(kTagAdded));
    x.Meta(m);
  }
  for (uint64_t id : e.removed) {
    x.Put(static_cast<uint8_t>(kTagRemoved));
    x.Put(id);
  }
  for (const auto &v : e.vdels) {
    x.Put(static_cast<uint8_t>(kTagVdel));
    x.Put(v.first);
    x.Put(v.second);
  }
  for (uint64_t id : e.obsolete) {
    x.Put(static_cast<uint8_t>(kTagObsolete));
    x.Put(id);
  }
  if (e.has_srcpos) {
    x.Put(static_cast<uint8_t>(kTagSrcpos));
    x.Put(static_cast<uint32_t>(e.srcpos.size()));
    x.s += e.srcpos;
  }
  if (e.has_bounds) {
    x.Put(static_cast<uint8_t>(kTagBounds));
    x.Put(e.low_bound);
    x.Put(e.high_bound);
  }
  if (e.vdel_clean != 0) {
    x.Put(static_cast<uint8_t>(kTagVdelClean));
    x.Put(e.vdel_clean);
  }
  if (e.vdel_purge != 0) {
    x.Put(static_cast<uint8_t>(kTagVdelPurge));
    x.Put(e.vdel_purge);
  }
  for (const auto &c : e.vdel_cleans) {
    x.Put(static_cast<uint8_t>(kTagVdelCleanFile));
    x.Put(c.first);
    x.Put(c.second);
  }
  if (e.history_floor != 0) {
    x.Put(static_cast<uint8_t>(kTagHistoryFloor));
    x.Put(e.history_floor);
  }
  for (const auto &a : e.accumulate) {
    x.Put(static_cast<uint8_t>(kTagAccumulate));
    x.Put(a.first);
    x.Put(a.second);
  }
  if (e.newest_time != 0) {
    x.Put(static_cast<uint8_t>(kTagNewestTime));
    x.Put(e.newest_time);
  }
  for (const auto &src : e.sources) {
    x.Put(static_cast<uint8_t>(kTagSource));
    x.Put(src.first);
    x.Put(static_cast<uint32_t>(src.second.size()));
    x.s += src.second;
  }
  x.Put(static_cast<uint8_t>(kTagNextFile));
  x.Put(e.next_file);
  return x.s;
}

bool DecodeEdit(const char *p, size_t n, ManifestEdit *e, std::string *why) {
  *e = ManifestEdit();
  Dec d(p, n);
  uint8_t tag, kind;
  if (!d.Get(&tag) || tag != kTagKind || !d.Get(&kind)) {
    *why = "edit does not start with its kind";
    return false;
  }
  if (kind < static_cast<uint8_t>(EditKind::kCreate) || kind > static_cast<uint8_t>(EditKind::kSources)) {
    *why = "unknown edit kind " + std::to_string(kind);
    return false;
  }
  e->kind = static_cast<EditKind>(kind);
  bool has_next = false, has_clean = false, has_purge = false, has_floor = false, has_newest = false;
  auto once = [&](bool *seen, const char *name) {
    if (*seen) *why = std::string("field ") + name + " given twice";
    return !*seen && (*seen = true);
  };
  while (!d.done()) {
    d.Get(&tag);
    bool ok = false;
    switch (tag) {
      case kTagInEdges:
        ok = once(&e->has_in_edges, "in_edges") && d.Get(&e->in_edges);
        break;
      case kTagDurable:
        ok = once(&e->has_durable_seq, "durable_seq") && d.Get(&e->durable_seq);
        break;
      case kTagAdded: {
        SegMeta m;
        ok = d.Meta(&m);
        if (ok) e->added.push_back(m);
        break;
      }
      case kTagRemoved: {
        uint64_t id;
        ok = d.Get(&id);
        if (ok) e->removed.push_back(id);
        break;
      }
      case kTagVdel: {
        std::pair<uint64_t, uint64_t> v;
        ok = d.Get(&v.first) && d.Get(&v.second);
        if (ok) e->vdels.push_back(v);
        break;
      }
      case kTagObsolete: {
        uint64_t id;
        ok = d.Get(&id);
        if (ok) e->obsolete.push_back(id);
        break;
      }
      case kTagSrcpos: {
        uint32_t len;
        ok = once(&e->has_srcpos, "source position") && d.Get(&len) && d.Bytes(len, &e->srcpos);
        break;
      }
      case kTagBounds:
        ok = once(&e->has_bounds, "bounds") && d.Get(&e->low_bound) && d.Get(&e->high_bound);
        break;
      case kTagNextFile:
        ok = once(&has_next, "next_file") && d.Get(&e->next_file);
        break;
      case kTagVdelClean:
        ok = once(&has_clean, "vdel_clean") && d.Get(&e->vdel_clean);
        break;
      case kTagVdelPurge:
        ok = once(&has_purge, "vdel_purge") && d.Get(&e->vdel_purge);
        break;
      case kTagHistoryFloor:
        ok = once(&has_floor, "history_floor") && d.Get(&e->history_floor);
        break;
      case kTagAccumulate: {
        std::pair<uint32_t, int64_t> a;
        ok = d.Get(&a.first) && d.Get(&a.second);
        if (ok) e->accumulate.push_back(a);
        break;
      }
      case kTagNewestTime:
        ok = once(&has_newest, "newest event time") && d.Get(&e->newest_time);
        break;
      case kTagSource: {
        std::pair<uint32_t, std::string> src;
        uint32_t len;
        ok = d.Get(&src.first) && d.Get(&len) && d.Bytes(len, &src.second);
        if (ok) e->sources.push_back(std::move(src));
        break;
      }
      case kTagVdelCleanFile: {
        std::pair<uint64_t, uint64_t> c;
        ok = d.Get(&c.first) && d.Get(&c.second);
        if (ok) e->vdel_cleans.push_back(c);
        break;
      }
      default:
        *why = "unknown field tag " + std::to_string(tag);
        return false;
    }
    if (!ok) {
      if (why->empty()) *why = "field with tag " + std::to_string(tag) + " cut short";
      return false;
    }
  }
  if (!has_next) {
    *why = "edit has no next_file field";
    return false;
  }
  return true;
}

Status ReadManifest(const std::string &path, ManifestContents *out, std::vector<Problem> *problems, uint64_t limit) {
  *out = ManifestContents();
  out->path = path;
  std::string data;
  GT_RETURN_IF_ERROR(ReadWholeFile(path, &data));
  if (data.size() > limit) data.resize(limit);
  out->size = data.size();
  auto problem = [&](uint64_t off, std::string what) { problems->push_back(Problem{path, off, std::move(what)}); };
  if (data.empty()) {
    problem(0,
            "MANIFEST is empty (a manifest is created whole, with its header and create record, so no crash "
            "leaves it empty)");
    return Status::OK();
  }
  if (data.size() < kFileHeader) {
    problem(0, "MANIFEST file header cut short: " + std::to_string(data.size()) + " bytes, expected at least " +
                   std::to_string(kFileHeader));
    return Status::OK();
  }
  if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
    problem(0,
            "bad MANIFEST magic: expected \"GTMANI02\" (a MANIFEST written by graphtide before format 2 has no "
            "header and cannot be opened by this version)");
    return Status::OK();
  }
  const uint32_t hcrc = Load<uint32_t>(data.data() + 12), want = Crc32c(data.data(), 12);
  if (hcrc != want) {
    problem(12, "MANIFEST file header checksum mismatch: stored " + Hex32(hcrc) + ", computed " + Hex32(want));
    return Status::OK();
  }
  const uint32_t format = Load<uint32_t>(data.data() + 8);
  if (format != kFormatCreate && format != kFormatSnapshot) {
    problem(8, "unsupported MANIFEST format version " + std::to_string(format) + ", expected " +
                   std::to_string(kFormatCreate) + " or " + std::to_string(kFormatSnapshot));
    return Status::OK();
  }
  out->format = format;
  size_t off = kFileHeader;
  while (off < data.size()) {
    const size_t rem = data.size() - off;
    const char *p = data.data() + off;
    if (rem < kRecHeader || AllZero(p, rem)) {
      out->torn_offset = off;
      out->torn_bytes = rem;
      break;
    }
    const uint32_t len = Load<uint32_t>(p), pcrc = Load<uint32_t>(p + 4), rcrc = Load<uint32_t>(p + 8);
    const uint32_t rwant = Crc32c(p, 8);
    if (rcrc != rwant) {
      problem(off, "record header checksum mismatch: stored " + Hex32(rcrc) + ", computed " + Hex32(rwant) +
                       " (length field " + std::to_string(len) + "; the " + std::to_string(rem) +
                       " bytes from here on cannot be read)");
      return Status::OK();
    }
    if (len > rem - kRecHeader) {
      // The length is authenticated: the record was cut short by a crash.
      out->torn_offset = off;
      out->torn_bytes = rem;
      break;
    }
    const uint32_t pwant = Crc32c(p + kRecHeader, len);
    if (pcrc != pwant) {
      problem(off, "record payload checksum mismatch: stored " + Hex32(pcrc) + ", computed " + Hex32(pwant) + " over " +
                       std::to_string(len) + " bytes");
    } else {
      ManifestEdit e;
      std::string why;
      if (DecodeEdit(p + kRecHeader, len, &e, &why)) {
        out->edits.push_back(std::move(e));
        out->offsets.push_back(off);
      } else {
        problem(off, "malformed edit: " + why);
      }
    }
    off += kRecHeader + len;
  }
  return Status::OK();
}

namespace {

// Why a type or source record e is not one, or "": it carries its one
// field.
std::string OnlyFieldProblem(const ManifestEdit &e) {
  const bool others = e.has_in_edges || e.has_durable_seq || !e.added.empty() || !e.removed.empty() ||
                      !e.vdels.empty() || e.has_srcpos || e.has_bounds || e.vdel_clean != 0 || e.vdel_purge != 0 ||
                      e.history_floor != 0 || e.newest_time != 0;
  if (e.kind == EditKind::kTypes) {
    if (e.accumulate.empty()) return "type record names no type";
    if (others) return "type record carries a flush's or compaction's fields";
    return "";
  }
  if (e.sources.empty()) return "source record names no source";
  if (others || !e.accumulate.empty()) return "source record carries other fields";
  return "";
}

// Why the snapshot record e at index i is not one, or "": the first
// record of a rewritten MANIFEST.
std::string SnapshotProblem(const ManifestEdit &e, size_t i) {
  if (i != 0) return "a snapshot record after the first record";
  if (!e.has_in_edges) return "snapshot record without in_edges";
  if (!e.removed.empty()) return "snapshot record removes files";
  if (e.vdel_clean != 0) return "snapshot record carries one vdel_clean for all files, not one per file";
  if (e.vdel_purge > e.durable_seq)
    return "snapshot record purges vertex deletes through seq " + std::to_string(e.vdel_purge) +
           ", past its durable seq " + std::to_string(e.durable_seq);
  for (const auto &v : e.vdels)
    if (v.second <= e.vdel_purge)
      return "snapshot record holds a vertex delete at seq " + std::to_string(v.second) +
             ", at or below its purge point " + std::to_string(e.vdel_purge);
  std::set<uint64_t> adds, seen;
  for (const SegMeta &m : e.added) adds.insert(m.id);
  for (const auto &fc : e.vdel_cleans) {
    if (adds.count(fc.first) == 0)
      return "snapshot record gives a vdel_clean for " + SegmentFileName(fc.first) + ", which it does not add";
    if (!seen.insert(fc.first).second)
      return "snapshot record gives " + SegmentFileName(fc.first) + " two vdel_clean values";
  }
  return "";
}

// Why edit e, the edit at index i, is not one its kind may be given what
// the replay reached (st), or "" when it is: its kind's own fields.
std::string KindProblem(const ManifestEdit &e, size_t i, const ManifestState &st) {
  switch (e.kind) {
    case EditKind::kCreate:
      if (i != 0) return "a second create record";
      if (!e.has_in_edges) return "create record without in_edges";
      break;
    case EditKind::kFlush:
      if (!e.removed.empty()) return "flush record removes files";
      if (e.vdel_purge != 0) return "flush record purges vertex deletes";
      for (const auto &v : e.vdels)
        if (v.second <= st.vdel_purge)
          return "flush record holds a vertex delete at seq " + std::to_string(v.second) +
                 ", at or below the purge point " + std::to_string(st.vdel_purge);
      break;
    case EditKind::kCompact:
      if (e.has_durable_seq || e.has_srcpos || !e.vdels.empty()) return "compaction record carries a flush's fields";
      if (e.vdel_purge > st.durable_seq)
        return "compaction record purges vertex deletes through seq " + std::to_string(e.vdel_purge) +
               ", past the durable seq " + std::to_string(st.durable_seq);
      break;
    case EditKind::kTypes:
    case EditKind::kSources:
      return OnlyFieldProblem(e);
    case EditKind::kSnapshot:
      return SnapshotProblem(e, i);
  }
  return "";
}

// Why the event sources e numbers are not, or "": the next numbers, in order,
// each a new name of 1 to GT_MAX_EVENT_SOURCE_NAME bytes.
std::string SourcesProblem(const ManifestEdit &e, const ManifestState &st) {
  if (!e.sources.empty() && e.kind != EditKind::kSources && e.kind != EditKind::kSnapshot)
    return "only a source or snapshot record numbers event sources";
  std::set<std::string> names;
  uint32_t next = static_cast<uint32_t>(st.sources.size()) + 1;
  for (const auto &src : e.sources) {
    if (src.first != next)
      return "edit numbers event source \"" + src.second + "\" " + std::to_string(src.first) +
             ", not the next number " + std::to_string(next);
    if (src.second.empty() || src.second.size() > GT_MAX_EVENT_SOURCE_NAME)
      return "edit names event source " + std::to_string(src.first) + " with " + std::to_string(src.second.size()) +
             " bytes (1 to " + std::to_string(GT_MAX_EVENT_SOURCE_NAME) + ")";
    if (st.source_ids.count(src.second) != 0 || !names.insert(src.second).second)
      return "edit numbers event source \"" + src.second + "\" twice";
    if (next > GT_MAX_EVENT_SOURCES)
      return "edit numbers more than " + std::to_string(GT_MAX_EVENT_SOURCES) + " event sources";
    next++;
  }
  return "";
}

// Why the accumulate types e names, or the fields only some kinds carry,
// are not, or "": the newest event time, obsolete files, per-file vdel_clean.
std::string FieldsProblem(const ManifestEdit &e) {
  if (!e.accumulate.empty() && e.kind != EditKind::kTypes && e.kind != EditKind::kSnapshot)
    return "only a type or snapshot record names accumulate types";
  std::set<uint32_t> types;
  for (const auto &a : e.accumulate) {
    if (a.first >= kMaxEdgeTypes)
      return "edit makes edge type " + std::to_string(a.first) + " accumulate, out of range (max " +
             std::to_string(kMaxEdgeTypes - 1) + ")";
    if (a.second < 0)
      return "edit gives edge type " + std::to_string(a.first) + " a negative retain (" + std::to_string(a.second) +
             " µs)";
    if (!types.insert(a.first).second) return "edit names edge type " + std::to_string(a.first) + " twice";
  }
  if (e.newest_time < 0) return "edit records a negative newest event time (" + std::to_string(e.newest_time) + " µs)";
  if (e.newest_time != 0 && e.kind != EditKind::kFlush && e.kind != EditKind::kCompact && e.kind != EditKind::kSnapshot)
    return "only a flush, compaction or snapshot record carries the newest event time";
  if (!e.obsolete.empty() && e.kind != EditKind::kSnapshot) return "only a snapshot record lists obsolete files";
  if (!e.vdel_cleans.empty() && e.kind != EditKind::kSnapshot)
    return "only a snapshot record gives per-file vdel_clean values";
  return "";
}

// Applies the files e (at offset off) removes, adds and lists obsolete to
// st, with used every file number an edit has named; returns why it
// cannot, or "".
std::string ApplyFiles(const ManifestEdit &e, uint64_t off, ManifestState *st, std::set<uint64_t> *used) {
  for (uint64_t id : e.removed) {
    if (st->live.count(id) == 0) return "edit removes file " + SegmentFileName(id) + ", which is not live";
    st->added_at.erase(id);
    st->removed_at[id] = off;
  }
  for (const SegMeta &m : e.added) {
    if (m.id == 0 || !used->insert(m.id).second)
      return "edit adds file number " + std::to_string(m.id) + ", which is already in use";
    const bool level_ok = e.kind == EditKind::kSnapshot || (e.kind == EditKind::kFlush) == (m.level == 0);
    if (m.dir >= kTrees || m.level >= GT_MAX_LEVELS || !level_ok)
      return "edit adds " + SegmentFileName(m.id) + " at level " + std::to_string(m.level) + " in direction " +
             std::to_string(m.dir) + ", which a " + (e.kind == EditKind::kFlush ? "flush" : "compaction") +
             " cannot write";
    st->added_at[m.id] = off;
    st->max_file = std::max(st->max_file, m.id);
  }
  for (uint64_t id : e.removed) used->insert(id);
  for (uint64_t id : e.obsolete) {
    if (id == 0 || !used->insert(id).second)
      return "snapshot lists file number " + std::to_string(id) + " as obsolete, which is already in use";
    st->removed_at[id] = off;
    st->max_file = std::max(st->max_file, id);
  }
  return "";
}

// Advances st by e (AdvanceState), with the vertex deletes it adds and
// those its purge drops.
void ApplyEdit(const ManifestEdit &e, ManifestState *st) {
  const uint64_t purge_before = st->vdel_purge;
  AdvanceState(st, e);
  st->vdels.insert(st->vdels.end(), e.vdels.begin(), e.vdels.end());
  if (st->vdel_purge > purge_before) {
    const uint64_t p = st->vdel_purge;
    st->vdels.erase(std::remove_if(st->vdels.begin(), st->vdels.end(),
                                   [&](const std::pair<uint64_t, uint64_t> &v) { return v.second <= p; }),
                    st->vdels.end());
  }
}

// Replays the edit at index i onto st: why it cannot, or "".
std::string ReplayEdit(const ManifestEdit &e, size_t i, uint64_t off, ManifestState *st, std::set<uint64_t> *used) {
  if (e.next_file < st->next_file)
    return "next_file went back from " + std::to_string(st->next_file) + " to " + std::to_string(e.next_file);
  std::string why = KindProblem(e, i, *st);
  if (!why.empty()) return why;
  if (e.kind == EditKind::kCreate || e.kind == EditKind::kSnapshot) st->in_edges = e.in_edges != 0;
  why = SourcesProblem(e, *st);
  if (why.empty()) why = FieldsProblem(e);
  if (why.empty()) why = ApplyFiles(e, off, st, used);
  if (!why.empty()) return why;
  ApplyEdit(e, st);
  return "";
}

}  // namespace

void ReplayManifest(const ManifestContents &c, ManifestState *st, std::vector<Problem> *problems) {
  *st = ManifestState();
  auto fail = [&](size_t i, std::string what) {
    problems->push_back(Problem{c.path, i < c.offsets.size() ? c.offsets[i] : 0, std::move(what)});
  };
  // Format 3 (a rewritten MANIFEST) starts with a snapshot record, format
  // 2 with a create record.
  const bool rewritten = c.format == kFormatSnapshot;
  const std::string first = rewritten ? "snapshot" : "create";
  if (c.edits.empty() || c.edits[0].kind != (rewritten ? EditKind::kSnapshot : EditKind::kCreate)) {
    fail(0, c.edits.empty()
                ? "MANIFEST holds no complete " + first + " record"
                : "first edit is not a " + first + " record (MANIFEST format " + std::to_string(c.format) + ")");
    return;
  }
  std::set<uint64_t> used;  // every file number an edit has named
  for (size_t i = 0; i < c.edits.size(); i++) {
    std::string why = ReplayEdit(c.edits[i], i, c.offsets[i], st, &used);
    if (!why.empty()) return fail(i, std::move(why));
  }
}

void AdvanceState(ManifestState *st, const ManifestEdit &e) {
  for (uint64_t id : e.removed) {
    st->live.erase(id);
    st->vdel_clean.erase(id);
  }
  for (const SegMeta &m : e.added) {
    st->live[m.id] = m;
    if (e.vdel_clean != 0) st->vdel_clean[m.id] = e.vdel_clean;  // a flush's or compaction's files
  }
  for (const auto &c : e.vdel_cleans)  // a snapshot's, per file
    if (c.second != 0 && st->live.count(c.first) != 0) st->vdel_clean[c.first] = c.second;
  st->vdel_purge = std::max(st->vdel_purge, e.vdel_purge);
  st->history_floor = std::max(st->history_floor, e.history_floor);
  for (const auto &a : e.accumulate) st->accumulate[a.first] = a.second;
  st->newest_time = std::max(st->newest_time, e.newest_time);
  for (const auto &src : e.sources) {  // numbered in order (ReplayManifest checks)
    st->sources.push_back(src.second);
    st->source_ids[src.second] = src.first;
  }
  if (e.has_in_edges) st->in_edges = e.in_edges != 0;
  if (e.has_durable_seq) st->durable_seq = std::max(st->durable_seq, e.durable_seq);
  if (e.has_srcpos) {
    st->has_srcpos = true;
    st->srcpos = e.srcpos;
  }
  if (e.has_bounds) {
    st->low_bound = std::max(st->low_bound, e.low_bound);
    st->high_bound = std::max(st->high_bound, e.high_bound);
  }
  st->next_file = e.next_file;
}

ManifestEdit SnapshotEdit(const ManifestState &st, std::vector<std::pair<uint64_t, uint64_t>> vdels,
                          std::vector<uint64_t> obsolete) {
  ManifestEdit e;
  e.kind = EditKind::kSnapshot;
  e.has_in_edges = true;
  e.in_edges = st.in_edges ? 1 : 0;
  e.has_durable_seq = true;
  e.durable_seq = st.durable_seq;
  for (const auto &kv : st.live) e.added.push_back(kv.second);  // by file number: L0 replays newest first
  // The deletes a purge recorded are gone even where the caller's map
  // (the current Version, which installs a purge after its edit is
  // appended) still holds them.
  vdels.erase(std::remove_if(vdels.begin(), vdels.end(),
                             [&](const std::pair<uint64_t, uint64_t> &v) {
                               return v.second <= st.vdel_purge || v.second > st.durable_seq;
                             }),
              vdels.end());
  e.vdels = std::move(vdels);
  e.vdel_purge = st.vdel_purge;
  e.history_floor = st.history_floor;
  e.accumulate.assign(st.accumulate.begin(), st.accumulate.end());
  e.newest_time = st.newest_time;
  for (size_t i = 0; i < st.sources.size(); i++) e.sources.emplace_back(static_cast<uint32_t>(i + 1), st.sources[i]);
  for (const auto &kv : st.vdel_clean)
    if (st.live.count(kv.first) != 0) e.vdel_cleans.push_back(kv);
  e.obsolete = std::move(obsolete);
  e.has_srcpos = st.has_srcpos;
  e.srcpos = st.srcpos;
  e.has_bounds = true;
  e.low_bound = st.low_bound;
  e.high_bound = st.high_bound;
  e.next_file = st.next_file;
  return e;
}

std::string ManifestBytes(const std::vector<ManifestEdit> &edits) {
  const bool snap = !edits.empty() && edits[0].kind == EditKind::kSnapshot;
  std::string s = FileHeader(snap ? kFormatSnapshot : kFormatCreate);
  for (const ManifestEdit &e : edits) s += Record(e);
  return s;
}

Status CreateManifest(const std::string &dir, const ManifestEdit &create) {
  const std::string path = JoinPath(dir, "MANIFEST"), tmp = JoinPath(dir, kManifestTmp);
  const std::string data = ManifestBytes({create});
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IO("create: " + ErrnoString(errno), tmp);
  Status s = WriteAll(fd, data.data(), data.size(), tmp);
  if (s.ok() && ::fsync(fd) != 0) s = Status::IO("fsync: " + ErrnoString(errno), tmp);
  ::close(fd);
  GT_RETURN_IF_ERROR(s);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::IO("rename to MANIFEST: " + ErrnoString(errno), tmp);
  return SyncDir(dir);
}

Status RewriteManifest(const std::string &dir, const ManifestEdit &snapshot, const RewriteHooks &hooks,
                       uint64_t *bytes) {
  const std::string path = JoinPath(dir, "MANIFEST"), tmp = JoinPath(dir, kManifestTmp);
  const std::string data = ManifestBytes({snapshot});
  {
    FdCloser f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) return Status::IO("create: " + ErrnoString(errno), tmp);
    // Two writes, so that a crash test can stop between them.
    const size_t half = data.size() / 2;
    GT_RETURN_IF_ERROR(WriteAll(f.fd, data.data(), half, tmp));
    if (hooks.partial) GT_RETURN_IF_ERROR(hooks.partial());
    GT_RETURN_IF_ERROR(WriteAll(f.fd, data.data() + half, data.size() - half, tmp));
    if (::fsync(f.fd) != 0) return Status::IO("fsync: " + ErrnoString(errno), tmp);
  }
  if (hooks.before_switch) GT_RETURN_IF_ERROR(hooks.before_switch());
  // The switch: from here on MANIFEST is the rewritten one.
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Status::IO("rename to MANIFEST: " + ErrnoString(errno), tmp);
  GT_RETURN_IF_ERROR(SyncDir(dir));
  if (hooks.after_switch) GT_RETURN_IF_ERROR(hooks.after_switch());
  *bytes = data.size();
  return Status::OK();
}

ManifestWriter::~ManifestWriter() { Close(); }

void ManifestWriter::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status ManifestWriter::Open(const std::string &path, uint64_t end) {
  Close();
  path_ = path;
  size_ = end;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::IO("open: " + ErrnoString(errno), path);
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::IO("stat: " + ErrnoString(errno), path);
  if (static_cast<uint64_t>(st.st_size) > end) {
    if (::ftruncate(fd_, static_cast<off_t>(end)) != 0)
      return Status::IO("cut the torn tail at offset " + std::to_string(end) + ": " + ErrnoString(errno), path);
    if (::fdatasync(fd_) != 0) return Status::IO("fdatasync: " + ErrnoString(errno), path);
  }
  if (::lseek(fd_, static_cast<off_t>(end), SEEK_SET) < 0) return Status::IO("seek: " + ErrnoString(errno), path);
  return Status::OK();
}

Status ManifestWriter::Append(const ManifestEdit &e) {
  if (fd_ < 0) return Status::IO("manifest is not open for appending (closed after a failed rewrite)", path_);
  const std::string rec = Record(e);
  // One write per record, so that a crash tears at most this record.
  GT_RETURN_IF_ERROR(WriteAll(fd_, rec.data(), rec.size(), path_));
  if (::fdatasync(fd_) != 0) return Status::IO("fdatasync: " + ErrnoString(errno), path_);
  size_ += rec.size();
  return Status::OK();
}

}  // namespace gt
