// manifest.h -- the append-only, checksummed log of the store's file set.
//
// File "MANIFEST" (all integers little-endian):
//   [0,16)  file header: magic "GTMANI02", u32 format version (2 or 3),
//           u32 crc32c of bytes [0,12). Format 2: the first record is a
//           create record (a store as created). Format 3: the first
//           record is a snapshot record (a MANIFEST rewritten, below);
//           binaries that know only format 2 refuse it by its version.
//   then records, back to back, each
//           u32 payload length n, u32 crc32c(payload),
//           u32 crc32c of the record's bytes [0,8)  (the header checksum),
//           n payload bytes.
//   A payload is a version edit: a sequence of fields, each a u8 tag and
//   its data (tags below). Every edit starts with kTagKind.
//
// Event sources (issue 42). An event from a source (a Kafka topic's
// partition) without a reference of its own keeps its source position as a
// number and an offset (common.h, EventPos); the store numbers each
// source name the first time it is used, in a kSources edit (appended and
// fsynced before any version names it), and a snapshot record carries
// them all. Numbers go 1, 2, ... in record order and never change, so
// files name a source by its number. A store that numbers no source writes
// no such edit.
//
// Edge types' aggregates (issue 42). Which edge types accumulate (each
// upsert an event added to its edge) and their retain are the store's,
// not its openers' configuration: a kTypes edit records a type made
// accumulate or given another retain (Store::SetTypeAggregate), a
// snapshot record carries them all, and replay gives every opener the
// types as the last edits left them. No edit turns an accumulate type back
// into replace (the core refuses to: its next upsert would replace the
// events the edge holds). Flush and compaction edits of a store with an
// accumulate type also record the newest event time applied so far
// (retention's watermark, kept as the largest), so that a reopened store
// folds by time what the store before it would have. A store that records
// neither writes no new tag, so builds before them still open it; one that
// does is refused by those builds ("unknown edit kind", "unknown field
// tag"), which would otherwise read its accumulate types as replace.
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
// Rewriting (pebble's and LevelDB's MANIFEST rollover). The log only
// grows, so past a size bound (Store::AppendEdit: kManifestRewriteBytes,
// or kManifestGrowth times the last snapshot's size if larger) the store
// rewrites it as one snapshot record describing the state every record so
// far leaves (every live file at its level, the durable seq, source
// position and vertex bounds, the live vertex-delete records as the
// current Version holds them up to the durable seq, the purge point and
// each live file's vdel_clean, the files edits removed that may still be
// on disk, and next_file), followed by later edits. The
// protocol, under the store's manifest lock, so that no edit is appended
// meanwhile:
//   1. write the header (format 3) and the snapshot to MANIFEST.tmp, fsync;
//   2. rename MANIFEST.tmp over MANIFEST, fsync the directory;
//   3. append later edits to the new MANIFEST.
// The rename is the switch: a crash before it leaves the old MANIFEST, whole
// and still the store's, and a MANIFEST.tmp (cut short or whole) that holds
// nothing the MANIFEST does not; after it, the new MANIFEST alone. So
// recovery always reads MANIFEST; a MANIFEST.tmp beside it is a leftover
// of an unfinished rewrite, which a check notes and a read-write open
// deletes once the MANIFEST has replayed cleanly. (CreateManifest uses
// MANIFEST.tmp the same way.) No edit is appended to the new MANIFEST before
// the directory fsync, so an acknowledged edit never depends on a rename a
// crash could take back.
//
// File numbers. Every edit records next_file: every file number at or
// above it was allocated by a flush or compaction that had not recorded
// its edit when this one was appended (see Store::AppendEdit). So after a
// crash, a segment file that no edit keeps alive is provably garbage only
// if its number is >= the last edit's next_file (an unfinished operation)
// or an edit removed it (a compaction whose inputs were not yet unlinked;
// after a rewrite, the snapshot's obsolete list stands for the edits it
// replaced); any other is unexplained, and recovery refuses to open rather
// than delete it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common.h"
#include "segment.h"

namespace gt {

// What an edit is, for replay's checks and for inspection.
enum class EditKind : uint8_t { kCreate = 1, kFlush = 2, kCompact = 3, kSnapshot = 4, kTypes = 5, kSources = 6 };

// One manifest record: the logged part of a change to the store's file set
// (pebble's VersionEdit as written to its MANIFEST). The in-memory change
// that installs a new Version is a VersionEdit (version.h): flush and
// compaction log this record first, and recovery replays each record as a
// VersionEdit. Fields absent from the payload keep these defaults.
//
// A kSnapshot record (only ever the first record of a format-3 MANIFEST)
// stands for a create record and every edit after it: in_edges, the
// durable seq, source position and bounds they leave, every live file in
// added (any level; by file number, so that L0 replays newest first), the
// live vertex deletes in vdels with the purge point they leave in
// vdel_purge, each live file's vdel_clean in vdel_cleans (the value the
// edit that added it recorded; files with 0 left out), and in obsolete the
// files they removed that may still be on disk.
struct ManifestEdit {
  EditKind kind = EditKind::kCreate;
  // kCreate, kSnapshot: whether the store keeps in-edges (fixed at creation).
  bool has_in_edges = false;
  uint32_t in_edges = 0;
  // kFlush: the newest sequence number the flush made durable.
  bool has_durable_seq = false;
  uint64_t durable_seq = 0;
  std::vector<SegMeta> added;
  std::vector<uint64_t> removed;                     // file ids (kCompact)
  std::vector<std::pair<uint64_t, uint64_t>> vdels;  // (vertex, seq) (kFlush, kSnapshot)
  std::vector<uint64_t> obsolete;                    // file ids (kSnapshot)
  bool has_srcpos = false;
  std::string srcpos;
  // kFlush, kSnapshot: per-band vertex bounds (graphtide.h,
  // gt_snapshot_vertex_bounds) of every durable edge as of this edit.
  bool has_bounds = false;
  uint64_t low_bound = 0, high_bound = 0;
  // Every edit: see "File numbers" above.
  uint64_t next_file = 0;
  // Vertex-delete purging (tags added later; absent in older records,
  // which read as 0). vdel_clean (kFlush, kCompact): no file this edit adds
  // holds a version that a vertex delete of seq <= vdel_clean hides.
  // vdel_purge (kCompact, kSnapshot): the vertex deletes of seq <=
  // vdel_purge are gone (at most the durable seq). vdel_cleans
  // (kSnapshot): (file id, vdel_clean) of the files it adds, one each.
  uint64_t vdel_clean = 0;
  uint64_t vdel_purge = 0;
  std::vector<std::pair<uint64_t, uint64_t>> vdel_cleans;
  // History (tag added with it; absent in older records, read as 0).
  // kFlush, kCompact: the history floor the edit's files were written
  // with (it may have dropped versions below it, even with no file to
  // record it); kSnapshot: the largest floor of the edits it stands for.
  uint64_t history_floor = 0;
  // Edge types' aggregates (issue 42). kTypes (at least one), kSnapshot:
  // (type, retain in µs) of each type recorded as accumulate by it, by
  // type, each once.
  std::vector<std::pair<uint32_t, int64_t>> accumulate;
  // kFlush, kCompact, kSnapshot: the newest event time applied before the
  // edit was appended (Unix µs; 0: not recorded): at least the watermark
  // any fold its files hold used.
  int64_t newest_time = 0;
  // Event sources (issue 42). kSources (at least one), kSnapshot: (number,
  // name) of each source the edit numbers; numbers go 1, 2, ... in record
  // order, each name once.
  std::vector<std::pair<uint32_t, std::string>> sources;
};

// Encodes e as a record payload; DecodeEdit is its inverse. DecodeEdit
// returns false and says why in *why when p[0..n) is not a valid payload.
std::string EncodeEdit(const ManifestEdit &e);
bool DecodeEdit(const char *p, size_t n, ManifestEdit *e, std::string *why);

// Rewrite bounds (see "Rewriting" above): the MANIFEST is rewritten once it
// holds at least kManifestRewriteBytes (gt_options.test_manifest_rewrite_bytes
// overrides it in tests) and at least kManifestGrowth times the size of
// its latest snapshot, so that a rewrite's cost is amortized over at least
// as many bytes of appended edits.
constexpr uint64_t kManifestRewriteBytes = 4ull << 20;
constexpr uint64_t kManifestGrowth = 2;

// A MANIFEST as read from disk.
struct ManifestContents {
  std::string path;
  uint64_t size = 0;    // bytes in the file
  uint32_t format = 0;  // the header's format version (2 or 3), 0 if unread
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
  // Live file -> the vdel_clean of the edit that added it (a snapshot's
  // per-file value); files with 0 are left out.
  std::map<uint64_t, uint64_t> vdel_clean;
  // The largest history floor any edit recorded: reads as of a seq below
  // it may miss versions a flush or compaction dropped.
  uint64_t history_floor = 0;
  // Edge types recorded as accumulate -> their retain (µs), as the last
  // edit naming each left it.
  std::map<uint32_t, int64_t> accumulate;
  // The largest newest event time any edit recorded (0: none).
  int64_t newest_time = 0;
  // The event sources' names, source i+1 at [i], and their numbers by name.
  std::vector<std::string> sources;
  std::map<std::string, uint32_t> source_ids;
};

// Replays the edits of c into *st. An edit that contradicts the ones
// before it (no create record first in format 2 or snapshot record first
// in format 3, a second create or snapshot, a file number used twice, a
// file removed while not live, a flush adding a file outside L0 or a
// compaction adding one in it, a level or direction out of range, a type
// edit with files or seqs, or a type or retain out of range) is a
// problem appended to *problems naming the record's offset; replay stops
// at the first one. A snapshot's obsolete files count as removed by it.
void ReplayManifest(const ManifestContents &c, ManifestState *st, std::vector<Problem> *problems);

// Applies e, an edit appended after the ones st was replayed from, to st's
// in_edges, durable_seq, srcpos, bounds, next_file, live, vdel_purge,
// vdel_clean, accumulate and newest_time: what
// SnapshotEdit needs (ReplayManifest does the same per edit, with its
// checks and history). The store keeps such a running state as it appends.
void AdvanceState(ManifestState *st, const ManifestEdit &e);

// The snapshot record of the state st (the fields AdvanceState keeps),
// with the vertex deletes vdels (what the current Version holds up to
// st.durable_seq; those at or below st.vdel_purge, which the Version may
// still hold until it installs the purge, are dropped) and the obsolete
// files.
ManifestEdit SnapshotEdit(const ManifestState &st, std::vector<std::pair<uint64_t, uint64_t>> vdels,
                          std::vector<uint64_t> obsolete);

// The bytes of a MANIFEST holding edits: the file header (format 3 when
// the first edit is a snapshot, else 2), then one record per edit.
std::string ManifestBytes(const std::vector<ManifestEdit> &edits);

// The name of the file a MANIFEST is written to before it is renamed into
// place (CreateManifest, a rewrite).
constexpr const char *kManifestTmp = "MANIFEST.tmp";

// Creates dir/MANIFEST holding the header and a create edit, atomically:
// written to MANIFEST.tmp, fsynced, renamed, and the directory fsynced.
Status CreateManifest(const std::string &dir, const ManifestEdit &create);

// Hooks of RewriteManifest between its steps (crash tests pause there);
// a non-OK Status stops it, leaving the files as a crash there would.
struct RewriteHooks {
  std::function<Status()> partial;        // half of MANIFEST.tmp written
  std::function<Status()> before_switch;  // MANIFEST.tmp whole and fsynced
  std::function<Status()> after_switch;   // renamed over MANIFEST, directory fsynced
};

// Replaces dir/MANIFEST with a format-3 MANIFEST holding only snapshot (a
// kSnapshot edit), by the protocol above (steps 1 and 2); *bytes is its
// size. The caller then reopens its ManifestWriter on dir/MANIFEST.
Status RewriteManifest(const std::string &dir, const ManifestEdit &snapshot, const RewriteHooks &hooks,
                       uint64_t *bytes);

// Appends edits to an existing, validated MANIFEST.
class ManifestWriter {
 public:
  ManifestWriter() = default;
  ~ManifestWriter();
  ManifestWriter(const ManifestWriter &) = delete;
  ManifestWriter &operator=(const ManifestWriter &) = delete;

  // Opens path for appending at end, the end of its complete records:
  // a torn tail past it is cut off (and the cut fsynced). Closes the file
  // it had open, if any (after a rewrite).
  Status Open(const std::string &path, uint64_t end);
  // Appends and fdatasyncs one record. Not thread-safe: the store
  // serializes appends.
  Status Append(const ManifestEdit &e);
  // Stops appending: Append fails from here on (until Open).
  void Close();
  const std::string &path() const { return path_; }
  // Bytes in the file: its complete records' end.
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace gt
