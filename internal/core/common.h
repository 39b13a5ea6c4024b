// common.h -- shared vocabulary of the core: Status, entry encoding, CRC32C,
// and small POSIX file helpers.
//
// Contract:
//  - Status is the only way errors travel inside the core. No function in
//    src/ throws on purpose; the C API (capi.cc) still catches everything.
//  - An edge version is (dst, vers, weight, time) where time is its event
//    time (Unix µs; 0: none) and
//    vers = type << 48 | seq << 1 | tombstone: the edge's type (0 to
//    GT_MAX_EDGE_TYPES-1) in the top 16 bits, so that (src, dst, type) is an
//    edge's identity and ordering versions by vers >> 1 descending groups
//    them by type, newest first (VersOrder). seq 0 means "older than every
//    snapshot" and is produced only by compaction into the bottommost level
//    (RetainVersions, merge.h; run by store_compact.cc).
//    INVARIANT: seq <= kMaxSeq (store_write.cc refuses a batch past it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace gt {

enum class Code : int32_t {
  kOk = 0,
  kInvalid = 1,
  kIO = 2,
  kCorruption = 3,
  kClosed = 4,
  kBuffer = 5,
  kInternal = 6,
  kLocked = 7
};

struct Status {
  Code code = Code::kOk;
  std::string msg;
  std::string file;
  uint64_t offset = 0;

  bool ok() const { return code == Code::kOk; }
  static Status OK() { return Status(); }
  static Status Invalid(std::string m) { return Status{Code::kInvalid, std::move(m), "", 0}; }
  static Status IO(std::string m, std::string f) { return Status{Code::kIO, std::move(m), std::move(f), 0}; }
  static Status Corruption(std::string m, std::string f, uint64_t off) {
    return Status{Code::kCorruption, std::move(m), std::move(f), off};
  }
  static Status Closed(std::string m) { return Status{Code::kClosed, std::move(m), "", 0}; }
  static Status Internal(std::string m) { return Status{Code::kInternal, std::move(m), "", 0}; }
};

// A problem found in a store file: what is wrong, where, and what was
// expected. Checks (gt_check) collect every one; opens refuse with the
// first (as a kCorruption Status).
struct Problem {
  std::string file;
  uint64_t offset = 0;
  std::string what;
  uint32_t kind = 0;  // gt_finding_kind; 0: damage
  Status AsStatus() const { return Status::Corruption(what, file, offset); }
};

#define GT_RETURN_IF_ERROR(expr) \
  do {                           \
    ::gt::Status _s = (expr);    \
    if (!_s.ok()) return _s;     \
  } while (0)

constexpr int kTypeShift = 48;
constexpr uint32_t kMaxEdgeTypes = 1024;  // GT_MAX_EDGE_TYPES
constexpr uint64_t kMaxSeq = (uint64_t{1} << (kTypeShift - 1)) - 1;
constexpr uint64_t kTypeBits = ~uint64_t{0} << kTypeShift;
inline uint64_t MakeVers(uint64_t seq, bool tomb, uint32_t type = 0) {
  return (uint64_t{type} << kTypeShift) | (seq << 1) | (tomb ? 1u : 0u);
}
inline uint64_t VersSeq(uint64_t vers) { return (vers >> 1) & kMaxSeq; }
inline bool VersTomb(uint64_t vers) { return (vers & 1u) != 0; }
inline uint32_t VersType(uint64_t vers) { return static_cast<uint32_t>(vers >> kTypeShift); }
// The merge key within one dst: versions come in descending VersOrder, so
// type descending, then seq descending.
inline uint64_t VersOrder(uint64_t vers) { return vers >> 1; }
// vers with its seq and tombstone bit cleared: a live version of the same
// type at seq 0 (what compaction into the bottommost level writes).
inline uint64_t VersTypeOnly(uint64_t vers) { return vers & kTypeBits; }

// A set of edge types (a read's filter): one bit per type, GT_MAX_EDGE_TYPES
// bits. A null TypeSet pointer means every type.
struct TypeSet {
  uint64_t bits[kMaxEdgeTypes / 64];
  bool Has(uint32_t t) const { return t < kMaxEdgeTypes && ((bits[t >> 6] >> (t & 63)) & 1) != 0; }
  // Every type in [lo, hi] is in the set.
  bool HasAll(uint32_t lo, uint32_t hi) const {
    for (uint32_t t = lo; t <= hi; t++)
      if (!Has(t)) return false;
    return true;
  }
  // Some type in [lo, hi] is in the set.
  bool HasAny(uint32_t lo, uint32_t hi) const {
    for (uint32_t t = lo; t <= hi && t < kMaxEdgeTypes; t++)
      if (Has(t)) return true;
    return false;
  }
};
inline bool Wanted(const TypeSet *ts, uint32_t t) { return ts == nullptr || ts->Has(t); }

// The extras of an edge version beyond (dst, vers, weight, time), kept only
// by the versions that have some (issue 42): an event operand's count and
// first time, and a payload (the engine's event reference and property
// document, opaque here). Immutable once an Entry points to it; the bytes
// follow the record. Lives in a MemGraph shard's arena (as long as the
// MemGraph) or in an ExtArena (flush and compaction, per vertex).
//
// Operands (GT_OP_ACCUMULATE, RocksDB's merge operands): a version with
// count >= 1 is an operand, its weight the sum of its events' weights, its
// time the greatest event time, first the least nonzero one, its payload
// its newest event's. A read folds the visible operands of an edge newest
// first while the next older visible version is an operand too (merge.h,
// VisibleEdges); count 0 is a replace version (or a tombstone), which ends
// a fold.
//
// An event's source position (issue 42): an event that came from a source
// the store numbered (gt_add_event_source: a Kafka topic's partition) and
// has no reference of its own keeps where it came from as (source,
// position), a number and an offset, not as text in its payload: readers
// render it ("<source name>/<position>"), and files keep it in narrow
// columns (segment.h). It goes with the payload: a fold keeps its newest
// event's payload and position together.
struct EventPos {
  uint32_t source = 0;    // the store's number of the event's source; 0: none
  uint64_t position = 0;  // its offset in the source (with source only)
};

struct ExtRec {
  uint64_t count;  // events folded in; 0: not an operand
  int64_t first;   // an operand's least nonzero event time (0: none)
  uint32_t len;    // payload bytes that follow this record
  // 0: the payload follows this record; 1: the payload's address does
  // (ExtArena::Ref: bytes of a file being compacted, or of a record that
  // outlives this one).
  uint32_t ref : 1;
  uint32_t source : 31;  // EventPos::source (0: none)
  uint64_t position;     // EventPos::position
  EventPos pos() const { return EventPos{source, position}; }
  const uint8_t *bytes() const {
    if (ref == 0) return reinterpret_cast<const uint8_t *>(this + 1);
    const uint8_t *p;
    std::memcpy(&p, this + 1, sizeof p);
    return p;
  }
};
static_assert(sizeof(ExtRec) == 32, "ExtRec's bytes follow it 8-aligned");

// An edge version without extras, 32 bytes: how a MemGraph keeps one with
// an event time (its timed blocks), and a hub's cached versions when none
// of them has extras (a replace-only store's hubs: their reads scan 32
// bytes a version, not an Entry's 40).
struct PlainEntry {
  uint64_t dst, vers;
  double weight;
  int64_t time;
};

// One edge version as the MemGraph and the merge code see it. time is the
// event time its operation gave (Unix µs), 0 when none. ext: its extras,
// or null (a replace version without payload: the whole of a replace-only
// store).
struct Entry {
  uint64_t dst;
  uint64_t vers;
  double weight;
  int64_t time = 0;
  const ExtRec *ext = nullptr;
};

inline uint64_t EntryCount(const Entry &e) { return e.ext != nullptr ? e.ext->count : 0; }

// Appends (dst, vers, weight, time, ext) to *out field by field.
// push_back(Entry{...}) built the entry on the stack in 8-byte stores and
// copied it with 16-byte loads, which cannot be forwarded from them: a
// stall per entry that was a quarter of compaction's retention loop.
inline void AppendEntry(std::vector<Entry> *out, uint64_t dst, uint64_t vers, double weight, int64_t time,
                        const ExtRec *ext = nullptr) {
  out->emplace_back();
  Entry &e = out->back();
  e.dst = dst;
  e.vers = vers;
  e.weight = weight;
  e.time = time;
  e.ext = ext;
}

// The least of two event times, 0 (none) ignored.
inline int64_t MinTime(int64_t a, int64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return a < b ? a : b;
}

// ExtRecs made by flush and compaction (folded operands, a segment
// version's extras as an Entry): blocks that live until Clear. Not
// thread-safe; one per writer.
class ExtArena {
 public:
  ExtArena() = default;
  ExtArena(const ExtArena &) = delete;
  ExtArena &operator=(const ExtArena &) = delete;
  const ExtRec *Make(uint64_t count, int64_t first, const uint8_t *payload, uint32_t len, EventPos pos = {});
  // The same without a copy of the payload: the record points to it,
  // which must outlive the record (a segment being compacted, a MemGraph
  // being flushed, or an older record of this arena).
  const ExtRec *Ref(uint64_t count, int64_t first, const uint8_t *payload, uint32_t len, EventPos pos = {});
  // Forgets every record (keeps the first block for reuse).
  void Clear();

 private:
  // A record of words 8-byte words (header and what follows it), filled
  // with count, first, len, ref and pos.
  ExtRec *Alloc(size_t words, uint64_t count, int64_t first, uint32_t len, uint32_t ref, EventPos pos);
  std::vector<std::vector<uint64_t>> blocks_;
  size_t used_ = 0;  // words of blocks_.back()
};

constexpr int kOut = 0;
constexpr int kIn = 1;
constexpr int kVtx = 2;    // the vertex records' cells (GT_VERTEX)
constexpr int kTrees = 3;  // out, in, vertex cells

// CRC32C (Castagnoli). Hardware instruction when available, table otherwise.
uint32_t Crc32c(const void *data, size_t n, uint32_t seed = 0);

// File helpers. All return a Status naming the path on failure.
Status WriteAll(int fd, const void *buf, size_t n, const std::string &path);
Status SyncDir(const std::string &dir);
Status ReadWholeFile(const std::string &path, std::string *out);
std::string JoinPath(const std::string &dir, const std::string &name);
std::string ErrnoString(int e);

// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), in
// nanoseconds; 0 where the clock is missing.
uint64_t ThreadCpuNanos();

// Zero-filled anonymous memory mapped from the OS and unmapped when this
// dies: pages cost resident memory only once touched, and leave the
// resident set at once when unmapped (not lingering in malloc's heap).
class Mapping {
 public:
  Mapping() = default;
  // populate: fault every page in now (MAP_POPULATE), for memory that
  // will be touched whole anyway: one call instead of a page fault per
  // page (the faults were a tenth of Apply's time on fresh MemGraphs, and
  // of a flush's). Throws std::bad_alloc if the OS refuses.
  explicit Mapping(size_t bytes, bool populate = false);
  ~Mapping();
  Mapping(Mapping &&o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  Mapping &operator=(Mapping &&o) noexcept;
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  void *get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void *p_ = nullptr;
  size_t bytes_ = 0;
};

// Mappings a MemGraph gave back when it died, for the next one to take
// instead of mapping fresh memory: a fresh page costs a fault or a
// populate call and the kernel's zeroing, a sixth of Apply's CPU time on
// an R-MAT stream, and a store's MemGraphs map the same sizes over and
// over. It keeps at most cap bytes (one MemGraph's size; the rest is
// unmapped at once), and a MemGraph that maps fresh memory first trims
// the pool by as much (Trim). So a store's frozen MemGraph, active
// MemGraph and pool together stay within two MemGraphs' size: a frozen
// one's memory moves here when it is flushed, the active one takes from
// here, and what it maps fresh replaces pooled memory rather than adding
// to it. That is still more than before there was a pool, when the active
// MemGraph was mostly small while the frozen one flushed: serve's memory
// budget counts the pool as a MemGraph of its own (internal/budget).
// Thread-safe: writers take and trim, whoever drops a MemGraph gives.
class MappingPool {
 public:
  explicit MappingPool(uint64_t cap_bytes) : cap_(cap_bytes) {}
  MappingPool(const MappingPool &) = delete;
  MappingPool &operator=(const MappingPool &) = delete;
  // A mapping of exactly `bytes` holding whatever its last owner wrote
  // (zero it if that matters), and in *resident how many bytes from its
  // start its last owner touched (so are resident); empty (get() null) if
  // the pool has none of that size.
  Mapping Take(size_t bytes, size_t *resident);
  // Keeps m, of which the first `resident` bytes were touched, for a later
  // Take, or unmaps it when the pool is full.
  void Give(Mapping m, size_t resident);
  // Unmaps kept mappings until `bytes` of them are gone, or all are.
  void Trim(uint64_t bytes);
  // What the pool holds now (whole mappings).
  uint64_t bytes() const;

 private:
  struct Kept {
    Mapping m;
    size_t resident;
  };
  const uint64_t cap_;
  mutable std::mutex mu_;
  std::vector<Kept> free_;  // Protected by mu_.
  uint64_t bytes_ = 0;      // of free_; protected by mu_.
};

}  // namespace gt
