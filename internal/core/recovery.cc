// recovery.cc -- what a store directory holds, judged against its manifest
// (recovery.h): shared by opening a store (Store::Recover, store_open.cc)
// and by the read-only check (CheckStore, behind gt_check).
#include "recovery.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "graphtide.h"

namespace gt {
namespace {

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Status NamesKnownSources(const Segment &seg, size_t nsources) {
  if (seg.max_source() <= nsources) return Status::OK();
  return Status::Corruption("file names event source " + std::to_string(seg.max_source()) +
                                ", but the MANIFEST numbers " + std::to_string(nsources),
                            seg.path(), seg.positions_offset());
}

Status MatchesManifest(const Segment &seg, const SegMeta &m, const std::string &mpath, uint64_t rec_off) {
  const SegMeta &h = seg.meta();
  struct Field {
    const char *name;
    uint64_t file, manifest;
  } fields[] = {{"level", h.level, m.level},         {"direction", h.dir, m.dir},
                {"entries", h.nentries, m.nentries}, {"vertices", h.nverts, m.nverts},
                {"min_src", h.min_src, m.min_src},   {"max_src", h.max_src, m.max_src},
                {"max_dst", h.max_dst, m.max_dst},   {"min_seq", h.min_seq, m.min_seq},
                {"max_seq", h.max_seq, m.max_seq},   {"bytes", h.bytes, m.bytes}};
  for (const Field &f : fields)
    if (f.file != f.manifest)
      return Status::Corruption("segment does not match its manifest entry (record at offset " +
                                    std::to_string(rec_off) + " of " + mpath + "): " + f.name + " is " +
                                    std::to_string(f.file) + " in the file, " + std::to_string(f.manifest) +
                                    " in the manifest",
                                seg.path(), 0);
  return Status::OK();
}

bool ParseSegmentName(const std::string &name, uint64_t *id) {
  const size_t n = name.size();
  if (n < 12 || n > 24 || name.compare(n - 4, 4, ".seg") != 0) return false;
  uint64_t v = 0;
  for (size_t i = 0; i + 4 < n; i++) {
    const char c = name[i];
    if (c < '0' || c > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  // Only the names SegmentFileName writes: no other spelling of a number.
  if (SegmentFileName(v) != name) return false;
  *id = v;
  return true;
}

Status ListSegments(const std::string &dir, std::vector<uint64_t> *ids) {
  ids->clear();
  DIR *d = ::opendir(dir.c_str());
  if (d == nullptr) return Status::IO("opendir: " + ErrnoString(errno), dir);
  // readdir is safe here: this thread owns the stream d (the check is
  // about streams shared between threads).
  while (struct dirent *e = ::readdir(d)) {  // NOLINT(concurrency-mt-unsafe)
    uint64_t id;
    if (ParseSegmentName(e->d_name, &id)) ids->push_back(id);
  }
  ::closedir(d);
  std::sort(ids->begin(), ids->end());
  return Status::OK();
}

std::string FileList(const std::vector<uint64_t> &ids, size_t max) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < max; i++) {
    if (i > 0) s += ", ";
    s += SegmentFileName(ids[i]);
  }
  if (ids.size() > max) s += " and " + std::to_string(ids.size() - max) + " more";
  return s;
}

void ScanDir(const ManifestState &ms, const std::vector<uint64_t> &on_disk, DirScan *out) {
  *out = DirScan();
  for (uint64_t id : on_disk) {
    if (ms.live.count(id))
      out->live.push_back(id);
    else if (ms.removed_at.count(id))
      out->removed.push_back(id);
    else if (id >= ms.next_file)
      out->unfinished.push_back(id);
    else
      out->unexplained.push_back(id);
  }
  for (const auto &kv : ms.live)
    if (!std::binary_search(on_disk.begin(), on_disk.end(), kv.first)) out->missing.push_back(kv.first);
}

Status LockStoreDir(const std::string &dir, bool exclusive, int *fd) {
  *fd = -1;
  const std::string path = JoinPath(dir, "LOCK");
  const int f = ::open(path.c_str(), exclusive ? (O_RDWR | O_CREAT | O_CLOEXEC) : (O_RDONLY | O_CLOEXEC), 0644);
  if (f < 0) {
    if (!exclusive && errno == ENOENT) return Status::OK();  // no writer ever opened it
    return Status::IO("open: " + ErrnoString(errno), path);
  }
  int rc;
  do {
    rc = ::flock(f, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int e = errno;
    ::close(f);
    if (e == EWOULDBLOCK)
      return Status{Code::kLocked,
                    exclusive ? "store is in use by another process (flock: " + ErrnoString(e) + ")"
                              : "store is open for writing by another process (flock: " + ErrnoString(e) + ")",
                    path, 0};
    return Status::IO("flock: " + ErrnoString(e), path);
  }
  *fd = f;
  return Status::OK();
}

Status CheckNoManifest(const std::string &dir) {
  std::vector<uint64_t> segs;
  GT_RETURN_IF_ERROR(ListSegments(dir, &segs));
  if (segs.empty()) return Status::OK();
  return Status::Corruption("no MANIFEST, but the directory holds " + std::to_string(segs.size()) +
                                " segment file(s) (" + FileList(segs) +
                                "): refusing to start a new store over what may be data; restore the MANIFEST from "
                                "a backup, or move the segment files away to start over",
                            JoinPath(dir, "MANIFEST"), 0);
}

Status CheckStore(const std::string &dir, uint64_t cut, CheckResult *out) {
  *out = CheckResult();
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::Invalid("no store in " + dir + " (not a directory)");
  FdCloser lock{-1};
  GT_RETURN_IF_ERROR(LockStoreDir(dir, false, &lock.fd));
  std::vector<uint64_t> on_disk;
  GT_RETURN_IF_ERROR(ListSegments(dir, &on_disk));
  const std::string path = JoinPath(dir, "MANIFEST");
  ManifestContents mc;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::IO("stat: " + ErrnoString(errno), path);
    if (on_disk.empty()) return Status::Invalid("no store in " + dir + " (no MANIFEST)");
    out->problems.push_back(Problem{path, 0, CheckNoManifest(dir).msg});
  } else {
    const Status s = ReadManifest(path, &mc, &out->problems, cut);
    if (!s.ok()) out->problems.push_back(Problem{path, 0, s.msg});
    out->manifest_bytes = mc.size;
    out->manifest_records = mc.edits.size();
    if (mc.torn())
      out->notes.push_back(Problem{path, mc.torn_offset,
                                   "torn tail: the last record (" + std::to_string(mc.torn_bytes) +
                                       " bytes) was cut short by a crash before it was acknowledged; the next "
                                       "read-write open drops it",
                                   GT_FINDING_TORN_TAIL});
    if (out->problems.empty()) {
      ReplayManifest(mc, &out->state, &out->problems);
      out->manifest_ok = out->problems.empty();
    }
    const std::string tmp = JoinPath(dir, kManifestTmp);
    if (::stat(tmp.c_str(), &st) == 0)
      out->notes.push_back(Problem{tmp, 0,
                                   "left by a manifest rewrite (or creation) that a crash interrupted before it "
                                   "was renamed over the MANIFEST (" +
                                       std::to_string(st.st_size) +
                                       " bytes): the MANIFEST is the store's, complete and current, and this file "
                                       "holds nothing it does not; the next read-write open deletes it",
                                   GT_FINDING_LEFTOVER});
  }
  const ManifestState &ms = out->state;
  DirScan scan;
  if (out->manifest_ok) ScanDir(ms, on_disk, &scan);
  for (uint64_t id : on_disk) {
    const bool live = out->manifest_ok && ms.live.count(id);
    const bool garbage = out->manifest_ok && !live && (ms.removed_at.count(id) || id >= ms.next_file);
    const std::string f = JoinPath(dir, SegmentFileName(id));
    if (garbage) {
      out->notes.push_back(Problem{
          f, 0,
          ms.removed_at.count(id)
              ? "removed by the compaction recorded at offset " + std::to_string(ms.removed_at.at(id)) +
                    " of the MANIFEST but not yet unlinked; the next read-write open deletes it"
              : "written by a flush or compaction that never recorded it (numbered at or above the manifest's next "
                "file number " +
                    std::to_string(ms.next_file) + "); the next read-write open deletes it",
          GT_FINDING_LEFTOVER});
      continue;
    }
    std::shared_ptr<Segment> seg;
    Status s = Segment::Open(dir, id, &seg);
    if (!s.ok()) {
      out->problems.push_back(Problem{s.file.empty() ? f : s.file, s.offset, s.msg});
      continue;
    }
    if (live) {
      s = MatchesManifest(*seg, ms.live.at(id), path, ms.added_at.at(id));
      if (!s.ok()) out->problems.push_back(Problem{s.file, s.offset, s.msg});
      s = NamesKnownSources(*seg, ms.sources.size());
      if (!s.ok()) out->problems.push_back(Problem{s.file, s.offset, s.msg});
    }
    seg->VerifyEach(&out->problems);
    out->files_checked++;
    out->bytes_checked += seg->meta().bytes;
  }
  for (uint64_t id : scan.missing)
    out->problems.push_back(Problem{
        JoinPath(dir, SegmentFileName(id)), 0,
        "live segment file missing: added by the manifest record at offset " + std::to_string(ms.added_at.at(id)),
        GT_FINDING_MISSING});
  for (uint64_t id : scan.unexplained)
    out->problems.push_back(Problem{JoinPath(dir, SegmentFileName(id)), 0,
                                    "neither live nor provably garbage (numbered below the manifest's next file "
                                    "number " +
                                        std::to_string(ms.next_file) +
                                        ", removed by no edit): it may be data the manifest lost",
                                    GT_FINDING_UNEXPLAINED});
  return Status::OK();
}

}  // namespace gt
