// test_util.h -- small helpers shared by the core's GoogleTest files: a
// self-deleting temporary directory, whole-file read/write, byte flipping,
// and a gt_error holder that always frees what the core allocated.
#pragma once

#include <gtest/gtest.h>

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

namespace gt_test {

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

}  // namespace gt_test
