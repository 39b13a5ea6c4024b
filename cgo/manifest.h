// manifest.h -- the append-only, checksummed log of the store's file set.
//
// File "MANIFEST": a sequence of records [u32 len][u32 crc32c(payload)][payload].
// Payload = u8 type + fields (little-endian):
//   kCreate  : u32 in_edges
//   kFlush   : u64 durable_seq, u32 nfiles, SegMeta*, u32 nvdel, (u64 v, u64 seq)*,
//              u8 has_srcpos, u32 len, bytes,
//              [u64 low_bound, u64 high_bound]  (absent in stores written before
//              bounds were recorded; see ManifestRecord::has_bounds)
//   kCompact : u32 nremoved, u64 id*, u32 nadded, SegMeta*
// A record is durable once Append returns (fdatasync). A record cut short by a
// crash (its length runs past end of file) is a torn tail: it was never
// acknowledged, so Open truncates it and reports the offset in torn_offset.
// A complete record whose checksum fails is corruption, reported with the
// manifest path and the record's offset; it is never skipped.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common.h"
#include "segment.h"

namespace gt {

enum class RecType : uint8_t { kCreate = 1, kFlush = 2, kCompact = 3 };

struct ManifestRecord {
  RecType type = RecType::kCreate;
  uint32_t in_edges = 0;
  uint64_t durable_seq = 0;
  std::vector<SegMeta> added;
  std::vector<uint64_t> removed;
  std::vector<std::pair<uint64_t, uint64_t>> vdels;
  bool has_srcpos = false;
  std::string srcpos;
  // kFlush: the store's per-band vertex bounds (graphtide.h,
  // gt_snapshot_vertex_bounds) when the record was written; they cover every
  // file the store held then. has_bounds is false for older records.
  bool has_bounds = false;
  uint64_t low_bound = 0, high_bound = 0;
};

class Manifest {
 public:
  Manifest() = default;
  ~Manifest();
  Manifest(const Manifest &) = delete;
  Manifest &operator=(const Manifest &) = delete;

  // Replays dir/MANIFEST (creating it if absent) through fn, then opens it
  // for appending.
  Status Open(const std::string &dir, const std::function<Status(const ManifestRecord &)> &fn);
  // Appends and syncs one record. Not thread-safe: the store serializes.
  Status Append(const ManifestRecord &r);
  const std::string &path() const { return path_; }
  int64_t torn_offset() const { return torn_offset_; }
  bool created() const { return created_; }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t torn_offset_ = -1;
  bool created_ = false;
};

}  // namespace gt
