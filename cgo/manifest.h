// manifest.h -- the append-only, checksummed log of the store's file set.
//
// File "MANIFEST" (all integers little-endian):
//   [0,16)  file header: magic "GTMANI02", u32 format version (2),
//           u32 crc32c of bytes [0,12).
//   then records, back to back, each
//           u32 payload length n, u32 crc32c(payload),
//           u32 crc32c of the record's bytes [0,8)  (the header checksum),
//           n payload bytes.
//   A payload is a version edit: a sequence of fields, each a u8 tag and
//   its data (tags below). Every edit starts with kTagKind.
//
// Torn tails. The header checksum authenticates the length, so a damaged
// length is corruption, never mistaken for a record cut short. A record
// is a torn tail -- provably incomplete, written by an append that a crash
// interrupted and that was therefore never acknowledged -- only when:
//   - fewer than 12 bytes follow the last complete record, or
//   - its header checksum matches and its payload runs past end of file, or
//   - from its first byte to end of file every byte is zero (a crash can
//     leave a file extended with zeros).
// Everything else -- a header or payload checksum mismatch, an edit that
// does not decode, an edit that contradicts the ones before it -- is
// corruption, reported with the path, the record's byte offset and what
// was expected; the store does not open. A MANIFEST is created whole (its
// header and create record written to MANIFEST.tmp, fsynced and renamed),
// so an empty or header-less MANIFEST is corruption too.
//
// File numbers. Every edit records next_file: every file number at or
// above it was allocated by a flush or compaction that had not recorded
// its edit when this one was appended (see Store::AppendEdit). So after a
// crash, a segment file that no edit keeps alive is provably garbage only
// if its number is >= the last edit's next_file (an unfinished operation)
// or an edit removed it (a compaction whose inputs were not yet unlinked);
// any other is unexplained, and recovery refuses to open rather than
// delete it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common.h"
#include "segment.h"

namespace gt {

// What an edit is, for replay's checks and for inspection.
enum class EditKind : uint8_t { kCreate = 1, kFlush = 2, kCompact = 3 };

// One manifest record: the logged part of a change to the store's file set
// (pebble's VersionEdit as written to its MANIFEST). The in-memory change
// that installs a new Version is a VersionEdit (version.h): flush and
// compaction log this record first, and recovery replays each record as a
// VersionEdit. Fields absent from the payload keep these defaults.
struct ManifestEdit {
  EditKind kind = EditKind::kCreate;
  // kCreate only: whether the store keeps in-edges (fixed at creation).
  bool has_in_edges = false;
  uint32_t in_edges = 0;
  // kFlush: the newest sequence number the flush made durable.
  bool has_durable_seq = false;
  uint64_t durable_seq = 0;
  std::vector<SegMeta> added;
  std::vector<uint64_t> removed;                     // file ids (kCompact)
  std::vector<std::pair<uint64_t, uint64_t>> vdels;  // (vertex, seq) (kFlush)
  bool has_srcpos = false;
  std::string srcpos;
  // kFlush: per-band vertex bounds (graphtide.h, gt_snapshot_vertex_bounds)
  // of every durable edge as of this edit.
  bool has_bounds = false;
  uint64_t low_bound = 0, high_bound = 0;
  // Every edit: see "File numbers" above.
  uint64_t next_file = 0;
  // Vertex-delete purging (tags added later; absent in older records,
  // which read as 0). vdel_clean (kFlush, kCompact): no file this edit adds
  // holds a version that a vertex delete of seq <= vdel_clean hides.
  // vdel_purge (kCompact): the vertex deletes of seq <= vdel_purge are
  // gone (at most the durable seq).
  uint64_t vdel_clean = 0;
  uint64_t vdel_purge = 0;
};

// Encodes e as a record payload; DecodeEdit is its inverse. DecodeEdit
// returns false and says why in *why when p[0..n) is not a valid payload.
std::string EncodeEdit(const ManifestEdit &e);
bool DecodeEdit(const char *p, size_t n, ManifestEdit *e, std::string *why);

// A MANIFEST as read from disk.
struct ManifestContents {
  std::string path;
  uint64_t size = 0;  // bytes in the file
  std::vector<ManifestEdit> edits;
  std::vector<uint64_t> offsets;  // offsets[i]: byte offset of edits[i]'s record
  // Offset of a torn tail record and how many bytes it has (both 0 if
  // none). Complete records end at torn_offset (or at size).
  uint64_t torn_offset = 0, torn_bytes = 0;
  bool torn() const { return torn_bytes != 0; }
};

// Reads path, or only its first limit bytes. Every damaged record is
// appended to *problems (a check collects them all: a record whose header
// checksum holds is skipped and reading goes on; a damaged header stops
// it, since framing is lost). The returned Status is for I/O failures only
// (ENOENT included).
Status ReadManifest(const std::string &path, ManifestContents *out, std::vector<Problem> *problems,
                    uint64_t limit = UINT64_MAX);

// The store's file set as the edits describe it.
struct ManifestState {
  bool in_edges = false;
  uint64_t durable_seq = 0;
  bool has_srcpos = false;
  std::string srcpos;
  uint64_t low_bound = 0, high_bound = 0;
  uint64_t next_file = 1;  // the last edit's next_file
  uint64_t max_file = 0;   // the largest file number any edit names
  std::map<uint64_t, SegMeta> live;
  std::map<uint64_t, uint64_t> added_at;             // live file -> offset of the record that added it
  std::map<uint64_t, uint64_t> removed_at;           // removed file -> offset of the record that removed it
  std::vector<std::pair<uint64_t, uint64_t>> vdels;  // live: not purged
  uint64_t vdel_purge = 0;                           // the largest purge point
};

// Replays the edits of c into *st. An edit that contradicts the ones
// before it (no create record first, a second create, a file number used
// twice, a file removed while not live, a flush adding a file outside L0
// or a compaction adding one in it, a level or direction out of range) is
// a problem appended to *problems naming the record's offset; replay
// stops at the first one.
void ReplayManifest(const ManifestContents &c, ManifestState *st, std::vector<Problem> *problems);

// The bytes of a MANIFEST holding edits: the file header, then one record
// per edit.
std::string ManifestBytes(const std::vector<ManifestEdit> &edits);

// Creates dir/MANIFEST holding the header and a create edit, atomically:
// written to MANIFEST.tmp, fsynced, renamed, and the directory fsynced.
Status CreateManifest(const std::string &dir, const ManifestEdit &create);

// Appends edits to an existing, validated MANIFEST.
class ManifestWriter {
 public:
  ManifestWriter() = default;
  ~ManifestWriter();
  ManifestWriter(const ManifestWriter &) = delete;
  ManifestWriter &operator=(const ManifestWriter &) = delete;

  // Opens path for appending at end, the end of its complete records:
  // a torn tail past it is cut off (and the cut fsynced).
  Status Open(const std::string &path, uint64_t end);
  // Appends and fdatasyncs one record. Not thread-safe: the store
  // serializes appends.
  Status Append(const ManifestEdit &e);
  const std::string &path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace gt
