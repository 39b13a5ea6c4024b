// test_util.h -- small helpers shared by the core's GoogleTest files: a
// self-deleting temporary directory, whole-file read/write, byte flipping,
// a gt_error holder that always frees what the core allocated, and the
// documented segment file layout (segment.h) recomputed from a file's bytes,
// for the corruption tests; and the size of the tests of volume.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "graphtide.h"
#include "segment.h"

namespace gt_test {

// Tests of volume (many random cases against an oracle) cost five to ten
// times more under AddressSanitizer than without it, and the sanitizer
// finds what it finds in the first cases as well as in the last. The
// sanitizer build (run_asan.sh) runs them smaller (Volume) or not at all
// (GT_WHOLE_RUN_ONLY, for a variant whose paths another test drives under
// the sanitizer); the plain build (run_volume.sh: -O2, GT_DCHECK and
// assert on, no sanitizer) runs them whole. The plain run finds them by
// their suite, whose name ends in "VolumeTest"; both fail a test outside
// such a suite, which would never run whole.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// CheckVolumeSuite fails the running test unless its suite is a
// *VolumeTest one.
inline void CheckVolumeSuite() {
  const ::testing::TestInfo *info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string suite = info != nullptr ? info->test_suite_name() : "";
  const std::string tail = "VolumeTest";
  if (suite.size() < tail.size() || suite.compare(suite.size() - tail.size(), tail.size(), tail) != 0)
    ADD_FAILURE() << "a test of volume must be in a suite whose name ends in " << tail
                  << " (run_volume.sh runs those whole), not in " << suite;
}

// SeedOr is a randomized test's seed: GT_TEST_SEED when it is set (to
// rerun a failure, or to try other seeds), else fallback, the test's own.
inline uint64_t SeedOr(uint64_t fallback) {
  const char *s = std::getenv("GT_TEST_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : fallback;
}

// Volume is a test of volume's size: full, or sanitized in the sanitizer
// build.
inline int Volume(int full, int sanitized) {
  CheckVolumeSuite();
  return kSanitized ? sanitized : full;
}

// GT_WHOLE_RUN_ONLY skips a test of volume in the sanitizer build.
#define GT_WHOLE_RUN_ONLY()                                                                            \
  do {                                                                                                 \
    ::gt_test::CheckVolumeSuite();                                                                     \
    if (::gt_test::kSanitized) GTEST_SKIP() << "a test of volume: run_volume.sh runs it, unsanitized"; \
  } while (0)

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on
// destruction.
class TempDir {
 public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/graphtide_test_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp(" << tmpl << "): " << std::strerror(errno);
      return;
    }
    path_ = buf.data();
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string Sub(const std::string &name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(out.good()) << "cannot write " << path;
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << "short write to " << path;
}

// XORs the byte at off with mask (default 0x5a) in place.
inline void FlipByte(const std::string &path, uint64_t off, uint8_t mask = 0x5a) {
  std::string d = ReadFile(path);
  ASSERT_LT(off, d.size()) << path;
  d[off] = static_cast<char>(static_cast<uint8_t>(d[off]) ^ mask);
  WriteFile(path, d);
}

template <typename T>
T GetLE(const std::string &d, uint64_t off) {
  T v;
  std::memcpy(&v, d.data() + off, sizeof v);
  return v;
}

// A gt_error that is zeroed on construction and freed on destruction and on
// Reset, so every message the core malloc's is released (ASan leak check).
struct Err {
  gt_error e;
  Err() { std::memset(&e, 0, sizeof e); }
  ~Err() { gt_error_free(&e); }
  Err(const Err &) = delete;
  Err &operator=(const Err &) = delete;
  gt_error *get() { return &e; }
  std::string msg() const { return e.message ? e.message : ""; }
  std::string file() const { return e.file ? e.file : ""; }
  void Reset() {
    gt_error_free(&e);
    std::memset(&e, 0, sizeof e);
  }
};

constexpr uint64_t kHeaderSize = 128;  // segment.h layout
constexpr uint64_t kFooterSize = 32;

// The documented layout of a segment file, computed from its header and
// footer (segment.h), independently of segment.cc.
struct Layout {
  uint64_t size, flags, nverts, nentries, table_len, chunk_size;
  uint64_t table_off, table_bytes, dst_off, dst_width, vers_off, w_off, body_end, nchunks, crc_off, foot_off;
  uint64_t times_off = 0, types_off = 0, bloom_off = 0, bloom_bytes = 0;
  uint64_t counts_off = 0, firsts_off = 0, pay_offs_off = 0, pay_data_off = 0, pay_len = 0;
  uint64_t version;
  // Bytes an entry of the vers, count, first and payload offset columns
  // (format 5: from the flags; before: 8).
  uint64_t vers_width = 8, count_width = 8, first_width = 8, pay_width = 8;
  // Format 6: the time column's width, and the source position section:
  // its header's offset, its columns' widths and offsets.
  uint64_t time_width = 8, pos_hdr_off = 0, src_width = 0, pos_width = 0, src_off = 0, pos_off = 0;

  explicit Layout(const std::string &d) {
    size = d.size();
    version = GetLE<uint32_t>(d, 8);
    flags = GetLE<uint32_t>(d, 12);
    if (version >= 5) {
      vers_width = (flags & gt::kFlagVers) ? (flags >> 12 & 7) + 1 : 0;
      count_width = (flags & gt::kFlagCounts) ? (flags >> 15 & 7) + 1 : 0;
      first_width = flags >> 18 & 15;
      pay_width = (flags >> 22 & 7) + 1;
    }
    auto pad8 = [](uint64_t x) { return (x + 7) & ~uint64_t(7); };
    nverts = GetLE<uint64_t>(d, 32);
    nentries = GetLE<uint64_t>(d, 40);
    table_len = GetLE<uint64_t>(d, 88);
    chunk_size = GetLE<uint64_t>(d, 96);
    table_off = kHeaderSize;
    table_bytes = (flags & gt::kFlagDense) ? table_len * 8 : nverts * 8 + (nverts + 1) * 8;
    dst_off = table_off + table_bytes;
    dst_width = (flags & gt::kFlagDst32) ? 4 : 8;
    uint64_t off = dst_off + ((nentries * dst_width + 7) & ~uint64_t(7));
    vers_off = w_off = 0;
    if (flags & gt::kFlagVers) {
      vers_off = off;
      off += pad8(nentries * vers_width);
    }
    if (flags & gt::kFlagWeights) {
      w_off = off;
      off += nentries * 8;
    }
    if (version >= 6 && (flags & gt::kFlagTimes)) time_width = (flags >> 25 & 7) + 1;
    if (flags & gt::kFlagTimes) {
      times_off = off;
      off += pad8(nentries * time_width);
    }
    if (flags & gt::kFlagTypes) {
      types_off = off;
      off += (nentries * 2 + 7) & ~uint64_t(7);
    }
    if (flags & gt::kFlagCounts) {
      counts_off = off;
      off += pad8(nentries * count_width);
      firsts_off = off;
      off += pad8(nentries * first_width);
    }
    if (version >= 6) {
      pos_hdr_off = off;
      src_width = uint8_t(d[off + 32]);
      pos_width = uint8_t(d[off + 33]);
      off += 40;
      src_off = off;
      off += pad8(nentries * src_width);
      pos_off = off;
      off += pad8(nentries * pos_width);
    }
    if (flags & gt::kFlagPayload) {
      // Offsets [nentries+1], then the bytes to the last offset, padded to 8.
      pay_offs_off = off;
      off += pad8((nentries + 1) * pay_width);
      pay_data_off = off;
      uint64_t last = 0;  // the last offset, pay_width bytes little-endian
      for (uint64_t k = 0; k < pay_width; k++)
        last |= uint64_t(uint8_t(d[pay_offs_off + nentries * pay_width + k])) << (8 * k);
      pay_len = pad8(last);
      off += pay_len;
    }
    if (flags & gt::kFlagBloom) {
      bloom_off = off;
      bloom_bytes = GetLE<uint64_t>(d, 104) * 32;  // blocks of 8 u32 words
      off += bloom_bytes;
    }
    foot_off = size - kFooterSize;
    body_end = GetLE<uint64_t>(d, foot_off);
    nchunks = GetLE<uint64_t>(d, foot_off + 8);
    crc_off = body_end;
    EXPECT_EQ(off, body_end) << "layout of segment.h does not match the file";
  }
  uint64_t Chunk(uint64_t byte) const { return (byte - kHeaderSize) / chunk_size; }
  uint64_t ChunkBegin(uint64_t c) const { return kHeaderSize + c * chunk_size; }
  // Whether entries [b,e) have a byte in chunk c (in any column).
  bool RangeTouchesChunk(uint64_t b, uint64_t e, uint64_t c) const {
    if (e <= b) return false;
    auto touches = [&](uint64_t col, uint64_t width) {
      uint64_t from = col + b * width, to = col + e * width;  // [from,to)
      return Chunk(from) <= c && c <= Chunk(to - 1);
    };
    if (touches(dst_off, dst_width)) return true;
    if ((flags & gt::kFlagVers) && touches(vers_off, vers_width)) return true;
    if ((flags & gt::kFlagWeights) && touches(w_off, 8)) return true;
    return false;
  }
};

// Recomputes every checksum of a segment file (its chunks', the crc
// table's, the footer's and the header's), so that a file edited on
// purpose passes them: a writer's bug, not a flipped bit, which the checks
// behind the checksums must refuse. L: the file's layout before the edit.
inline void Reseal(const std::string &path, const Layout &L) {
  std::string d = ReadFile(path);
  for (uint64_t c = 0; c < L.nchunks; c++) {
    const uint64_t from = L.ChunkBegin(c), to = std::min(L.body_end, from + L.chunk_size);
    const uint32_t crc = gt::Crc32c(d.data() + from, to - from);
    std::memcpy(&d[L.crc_off + 4 * c], &crc, 4);
  }
  const uint32_t tcrc = gt::Crc32c(d.data() + L.crc_off, L.nchunks * 4);
  std::memcpy(&d[L.foot_off + 16], &tcrc, 4);
  const uint32_t fcrc = gt::Crc32c(d.data() + L.foot_off, 20);
  std::memcpy(&d[L.foot_off + 20], &fcrc, 4);
  const uint32_t hcrc = gt::Crc32c(d.data(), 124);
  std::memcpy(&d[124], &hcrc, 4);
  WriteFile(path, d);
}

}  // namespace gt_test
