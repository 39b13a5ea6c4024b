// recovery.h -- what a store directory holds, judged against its manifest:
// the shared ground of recovery (Store::Recover, in store_open.cc) and of the
// read-only check (gt_check).
//
// Contract: nothing here writes. A segment file that no manifest edit
// keeps alive is garbage only when the manifest proves it (manifest.h,
// "File numbers"); every other one is unexplained, might be data, and
// stops an open.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "manifest.h"

namespace gt {

// Parses a segment file name (SegmentFileName: the decimal file number,
// zero-padded to at least 8 digits, then ".seg").
bool ParseSegmentName(const std::string &name, uint64_t *id);

// The file numbers of the segment files in dir, ascending.
Status ListSegments(const std::string &dir, std::vector<uint64_t> *ids);

// "00000001.seg, 00000002.seg and 3 more": at most max names.
std::string FileList(const std::vector<uint64_t> &ids, size_t max = 8);

// Whether every event source seg names is one of the nsources the
// MANIFEST numbers (a source's edit is durable before any version names
// it): a corruption naming the file and its source position section if
// not.
Status NamesKnownSources(const Segment &seg, size_t nsources);

// Checks that the header of seg, a live file added by the record at rec_off
// of the manifest at mpath, says what the manifest says of it (m): a
// kCorruption naming the first field that differs.
Status MatchesManifest(const Segment &seg, const SegMeta &m, const std::string &mpath, uint64_t rec_off);

// The segment files on disk, sorted by what the manifest says of them.
struct DirScan {
  std::vector<uint64_t> live;         // live, present
  std::vector<uint64_t> missing;      // live, absent
  std::vector<uint64_t> removed;      // not live: an edit removed it (a compaction input not yet unlinked)
  std::vector<uint64_t> unfinished;   // not live: numbered >= next_file (a flush or compaction that never recorded)
  std::vector<uint64_t> unexplained;  // not live, below next_file, never removed: might be data
};
void ScanDir(const ManifestState &ms, const std::vector<uint64_t> &on_disk, DirScan *out);

// Takes the store directory's LOCK file: exclusively for a writer, shared
// for readers (read-only opens and checks). kLocked when it is taken the
// other way. A reader of a directory without LOCK takes no lock (*fd = -1)
// and creates nothing.
Status LockStoreDir(const std::string &dir, bool exclusive, int *fd);

// A refusal when dir has no MANIFEST (or cannot have one created): OK when
// dir holds no segment file either, else a kCorruption naming them.
Status CheckNoManifest(const std::string &dir);

// The result of a check of a store directory (gt_check): every problem
// found, and notes on what a read-write open would change that holds no
// data (a torn tail, leftovers of unfinished operations).
struct CheckResult {
  std::vector<Problem> problems, notes;
  bool manifest_ok = false;  // the manifest read and replayed cleanly
  ManifestState state;       // valid when manifest_ok
  uint64_t manifest_bytes = 0, manifest_records = 0;
  uint64_t files_checked = 0, bytes_checked = 0;
};

// Checks dir without writing anything: the manifest record by record, every
// segment file present (header, footer, index and every data chunk), and
// each against the manifest (missing, mismatched and unexplained files).
// With cut below the manifest's size, the check goes as if the manifest
// held only its first cut bytes (what a repair that cuts it there leaves).
// The returned Status is for failures to check at all (no such directory,
// the store locked by a writer).
Status CheckStore(const std::string &dir, uint64_t cut, CheckResult *out);

}  // namespace gt
