#include "manifest.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gt {
namespace {

constexpr size_t kMetaBytes = 80;  // encoded SegMeta: u64 id, u32 level, u32 dir, 8 x u64

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
    return Get(&m->id) && Get(&m->level) && Get(&m->dir) && Get(&m->min_src) && Get(&m->max_src) &&
           Get(&m->max_dst) && Get(&m->nverts) && Get(&m->nentries) && Get(&m->bytes) && Get(&m->min_seq) &&
           Get(&m->max_seq);
  }
  bool Bytes(size_t n, std::string *out) {
    if (n_ < n) return false;
    out->assign(p_, n);
    p_ += n;
    n_ -= n;
    return true;
  }
  bool done() const { return n_ == 0; }
  // Guards counts read from the file against absurd allocations.
  bool Fits(uint64_t count, size_t each) const { return count <= n_ / each; }

 private:
  const char *p_;
  size_t n_;
};

bool Decode(const char *p, size_t n, ManifestRecord *r) {
  Dec d(p, n);
  uint8_t type;
  if (!d.Get(&type)) return false;
  r->type = static_cast<RecType>(type);
  switch (r->type) {
    case RecType::kCreate:
      return d.Get(&r->in_edges) && d.done();
    case RecType::kFlush: {
      uint32_t nf, nv, len;
      uint8_t has;
      if (!d.Get(&r->durable_seq) || !d.Get(&nf) || !d.Fits(nf, kMetaBytes)) return false;
      r->added.resize(nf);
      for (auto &m : r->added)
        if (!d.Meta(&m)) return false;
      if (!d.Get(&nv) || !d.Fits(nv, 16)) return false;
      r->vdels.resize(nv);
      for (auto &v : r->vdels)
        if (!d.Get(&v.first) || !d.Get(&v.second)) return false;
      if (!d.Get(&has) || !d.Get(&len) || !d.Bytes(len, &r->srcpos)) return false;
      r->has_srcpos = has != 0;
      if (d.done()) return true;  // written before bounds were recorded
      r->has_bounds = true;
      return d.Get(&r->low_bound) && d.Get(&r->high_bound) && d.done();
    }
    case RecType::kCompact: {
      uint32_t nr, na;
      if (!d.Get(&nr) || !d.Fits(nr, 8)) return false;
      r->removed.resize(nr);
      for (auto &id : r->removed)
        if (!d.Get(&id)) return false;
      if (!d.Get(&na) || !d.Fits(na, kMetaBytes)) return false;
      r->added.resize(na);
      for (auto &m : r->added)
        if (!d.Meta(&m)) return false;
      return d.done();
    }
  }
  return false;
}

std::string Encode(const ManifestRecord &r) {
  Enc e;
  e.Put(static_cast<uint8_t>(r.type));
  switch (r.type) {
    case RecType::kCreate:
      e.Put(r.in_edges);
      break;
    case RecType::kFlush:
      e.Put(r.durable_seq);
      e.Put(static_cast<uint32_t>(r.added.size()));
      for (const auto &m : r.added) e.Meta(m);
      e.Put(static_cast<uint32_t>(r.vdels.size()));
      for (const auto &v : r.vdels) {
        e.Put(v.first);
        e.Put(v.second);
      }
      e.Put(static_cast<uint8_t>(r.has_srcpos ? 1 : 0));
      e.Put(static_cast<uint32_t>(r.srcpos.size()));
      e.s += r.srcpos;
      if (r.has_bounds) {
        e.Put(r.low_bound);
        e.Put(r.high_bound);
      }
      break;
    case RecType::kCompact:
      e.Put(static_cast<uint32_t>(r.removed.size()));
      for (uint64_t id : r.removed) e.Put(id);
      e.Put(static_cast<uint32_t>(r.added.size()));
      for (const auto &m : r.added) e.Meta(m);
      break;
  }
  return e.s;
}

}  // namespace

Manifest::~Manifest() {
  if (fd_ >= 0) ::close(fd_);
}

Status Manifest::Open(const std::string &dir, const std::function<Status(const ManifestRecord &)> &fn) {
  path_ = JoinPath(dir, "MANIFEST");
  struct stat st;
  created_ = ::stat(path_.c_str(), &st) != 0;
  std::string data;
  if (!created_) GT_RETURN_IF_ERROR(ReadWholeFile(path_, &data));
  size_t off = 0;
  while (off < data.size()) {
    if (data.size() - off < 8) {
      torn_offset_ = static_cast<int64_t>(off);
      break;
    }
    uint32_t len, crc;
    std::memcpy(&len, data.data() + off, 4);
    std::memcpy(&crc, data.data() + off + 4, 4);
    if (len > data.size() - off - 8) {
      torn_offset_ = static_cast<int64_t>(off);
      break;
    }
    const char *payload = data.data() + off + 8;
    if (Crc32c(payload, len) != crc) return Status::Corruption("manifest record checksum mismatch", path_, off);
    ManifestRecord r;
    if (!Decode(payload, len, &r)) return Status::Corruption("manifest record malformed", path_, off);
    GT_RETURN_IF_ERROR(fn(r));
    off += 8 + len;
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return Status::IO("open: " + ErrnoString(errno), path_);
  if (torn_offset_ >= 0 && ::ftruncate(fd_, torn_offset_) != 0)
    return Status::IO("truncate torn tail: " + ErrnoString(errno), path_);
  if (::lseek(fd_, static_cast<off_t>(off), SEEK_SET) < 0) return Status::IO("seek: " + ErrnoString(errno), path_);
  if (created_) GT_RETURN_IF_ERROR(SyncDir(dir));
  return Status::OK();
}

Status Manifest::Append(const ManifestRecord &r) {
  std::string payload = Encode(r);
  std::string rec(8, '\0');
  uint32_t len = static_cast<uint32_t>(payload.size());
  uint32_t crc = Crc32c(payload.data(), payload.size());
  std::memcpy(&rec[0], &len, 4);
  std::memcpy(&rec[4], &crc, 4);
  rec += payload;
  // One write per record so that a crash tears at most the tail record.
  GT_RETURN_IF_ERROR(WriteAll(fd_, rec.data(), rec.size(), path_));
  if (::fdatasync(fd_) != 0) return Status::IO("fdatasync: " + ErrnoString(errno), path_);
  return Status::OK();
}

}  // namespace gt
