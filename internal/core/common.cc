#include "common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include "dcheck.h"

namespace gt {
namespace {

struct Crc32cTable {
  uint32_t t[256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
  }
};

uint32_t Crc32cSoft(const uint8_t *p, size_t n, uint32_t crc) {
  static const Crc32cTable table;  // immutable after construction
  for (size_t i = 0; i < n; i++) crc = table.t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cHw(const uint8_t *p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = __builtin_ia32_crc32qi(c32, *p++);
    n--;
  }
  return c32;
}
#endif

}  // namespace

uint32_t Crc32c(const void *data, size_t n, uint32_t seed) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  uint32_t crc = ~seed;
#if defined(__x86_64__)
  static const bool hw = __builtin_cpu_supports("sse4.2");
  crc = hw ? Crc32cHw(p, n, crc) : Crc32cSoft(p, n, crc);
#else
  crc = Crc32cSoft(p, n, crc);
#endif
  return ~crc;
}

std::string ErrnoString(int e) {
  char buf[256];
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return std::string(strerror_r(e, buf, sizeof buf));
#else
  strerror_r(e, buf, sizeof buf);
  return std::string(buf);
#endif
}

Status WriteAll(int fd, const void *buf, size_t n, const std::string &path) {
  const char *p = static_cast<const char *>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IO("write: " + ErrnoString(errno), path);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status SyncDir(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IO("open dir: " + ErrnoString(errno), dir);
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0) return Status::IO("fsync dir: " + ErrnoString(e), dir);
  return Status::OK();
}

Status ReadWholeFile(const std::string &path, std::string *out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IO("open: " + ErrnoString(errno), path);
  out->clear();
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return Status::IO("read: " + ErrnoString(e), path);
    }
    if (r == 0) break;
    out->append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return Status::OK();
}

std::string JoinPath(const std::string &dir, const std::string &name) {
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace gt

namespace gt {

void DcheckFailed(const char *file, int line, const char *cond, const std::string &msg) {
  // Debug builds only (dcheck.h): the one place the core prints.
  std::fprintf(stderr, "%s:%d: GT_DCHECK(%s) failed%s%s\n", file, line, cond, msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

uint64_t ThreadCpuNanos() {
  timespec t{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

Mapping::Mapping(size_t bytes, bool populate) : bytes_(bytes) {
  void *m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0),
                   -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  p_ = m;
}

Mapping::~Mapping() {
  if (p_ != nullptr) ::munmap(p_, bytes_);
}

Mapping &Mapping::operator=(Mapping &&o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) ::munmap(p_, bytes_);
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

Mapping MappingPool::Take(size_t bytes, size_t *resident) {
  std::lock_guard<std::mutex> l(mu_);
  for (size_t i = free_.size(); i-- > 0;) {
    if (free_[i].m.bytes() != bytes) continue;
    Mapping m = std::move(free_[i].m);
    *resident = free_[i].resident;
    free_[i] = std::move(free_.back());
    free_.pop_back();
    bytes_ -= bytes;
    return m;
  }
  *resident = 0;
  return Mapping();
}

void MappingPool::Give(Mapping m, size_t resident) {
  if (m.get() == nullptr) return;
  std::lock_guard<std::mutex> l(mu_);
  if (bytes_ + m.bytes() > cap_) return;  // m unmaps itself
  const size_t n = m.bytes();
  bytes_ += n;
  free_.push_back(Kept{std::move(m), std::min(resident, n)});
}

void MappingPool::Trim(uint64_t bytes) {
  std::vector<Kept> gone;  // unmapped after the lock is released
  {
    std::lock_guard<std::mutex> l(mu_);
    uint64_t freed = 0;
    while (freed < bytes && !free_.empty()) {
      freed += free_.back().m.bytes();
      gone.push_back(std::move(free_.back()));
      free_.pop_back();
    }
    bytes_ -= freed;
  }
}

uint64_t MappingPool::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return bytes_;
}

}  // namespace gt

namespace gt {

ExtRec *ExtArena::Alloc(size_t words, uint64_t count, int64_t first, uint32_t len, uint32_t ref, EventPos pos) {
  constexpr size_t kBlockWords = 8192;  // 64 KiB
  if (blocks_.empty() || used_ + words > blocks_.back().size()) {
    blocks_.emplace_back(std::max(kBlockWords, words));
    used_ = 0;
  }
  ExtRec *r = reinterpret_cast<ExtRec *>(blocks_.back().data() + used_);
  used_ += words;
  r->count = count;
  r->first = first;
  r->len = len;
  r->ref = ref;
  r->source = pos.source;
  r->position = pos.position;
  return r;
}

const ExtRec *ExtArena::Make(uint64_t count, int64_t first, const uint8_t *payload, uint32_t len, EventPos pos) {
  ExtRec *r = Alloc((sizeof(ExtRec) + len + 7) / 8, count, first, len, 0, pos);
  if (len > 0) std::memcpy(reinterpret_cast<uint64_t *>(r) + sizeof(ExtRec) / 8, payload, len);
  return r;
}

const ExtRec *ExtArena::Ref(uint64_t count, int64_t first, const uint8_t *payload, uint32_t len, EventPos pos) {
  if (len == 0) return Make(count, first, nullptr, 0, pos);
  ExtRec *r = Alloc((sizeof(ExtRec) + sizeof(payload)) / 8, count, first, len, 1, pos);
  std::memcpy(reinterpret_cast<uint64_t *>(r) + sizeof(ExtRec) / 8, &payload, sizeof payload);
  return r;
}

void ExtArena::Clear() {
  if (blocks_.size() > 1) blocks_.erase(blocks_.begin() + 1, blocks_.end());
  used_ = 0;
}

}  // namespace gt
