// store_internal.h -- helpers shared by the store's files (store*.cc) and
// nothing else: timing, a vertex's run of one segment, and VertexCursor, the
// next-vertex iterator that scans merge (store_read.cc; compaction reads
// its inputs front to back instead, store_compact.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "common.h"
#include "memgraph.h"
#include "merge.h"
#include "segment.h"

namespace gt {

inline uint64_t NowNanos() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Hands the heap's free pages back to the OS (glibc's malloc_trim), so
// that the resident set follows what the store holds after a flush or a
// compaction freed a MemGraph's index or a builder's columns. Not under
// AddressSanitizer: its allocator is not glibc's, so there is nothing to
// trim, and glibc's arenas, never used then, are first set up by
// malloc_trim itself; a test crashed there once, reading a bin of an arena
// half set up (SEGV at 0x8 in mtrim from RunCompaction, while the flush
// thread could be trimming too: TypesTest.RandomTypedBatchesMatchTheOracle).
inline void ReturnFreePages() {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  malloc_trim(0);
#endif
}

// Appends the run [b, e) of s to *runs, verifying its chunks first.
inline Status AddVerifiedRun(const Segment *s, uint64_t b, uint64_t e, std::vector<Run> *runs) {
  GT_RETURN_IF_ERROR(s->EnsureVerified(b, e));
  runs->push_back(Run{nullptr, s, b, e});
  return Status::OK();
}

// Appends v's run in s to *runs, if s holds v, verifying its chunks first.
Status AddSegmentRun(const Segment *s, uint64_t v, std::vector<Run> *runs);

// Next vertex >= a position, over one source. Used by scans and compaction.
class VertexCursor {
 public:
  static VertexCursor ForSegment(const Segment *s, uint64_t lo, uint64_t hi) {
    VertexCursor c;
    c.segs_.push_back(s);
    c.pos_ = lo;
    c.hi_ = hi;
    return c;
  }
  static VertexCursor ForLevel(const std::vector<std::shared_ptr<Segment>> &lv, uint64_t lo, uint64_t hi) {
    VertexCursor c;
    for (const auto &s : lv)
      if (s->meta().max_src >= lo && s->meta().min_src < hi) c.segs_.push_back(s.get());
    c.pos_ = lo;
    c.hi_ = hi;
    return c;
  }
  // tau: the reader's snapshot (MemGraph::VerticesFrom).
  static VertexCursor ForMem(const MemGraph *m, int dir, uint64_t lo, uint64_t hi, uint64_t tau) {
    VertexCursor c;
    c.mem_ = m;
    c.dir_ = dir;
    c.tau_ = tau;
    c.pos_ = lo;
    c.hi_ = hi;
    return c;
  }
  // Smallest vertex >= the cursor position, or false when exhausted.
  bool Head(uint64_t *v) {
    if (have_) {
      *v = head_;
      return true;
    }
    if (mem_ != nullptr) {
      while (mpos_ >= mbuf_.size()) {
        if (pos_ >= hi_) return false;
        mbuf_.clear();
        mpos_ = 0;
        uint64_t resume;
        mem_->VerticesFrom(dir_, pos_, hi_, tau_, 4096, &mbuf_, &resume);
        pos_ = resume;
      }
      head_ = mbuf_[mpos_];
      have_ = true;
      *v = head_;
      return true;
    }
    while (si_ < segs_.size()) {
      uint64_t x;
      if (pos_ < hi_ && segs_[si_]->NextVertex(pos_, &x) && x < hi_) {
        head_ = x;
        have_ = true;
        *v = x;
        return true;
      }
      si_++;
    }
    return false;
  }
  // Moves past the current head.
  void Advance() {
    if (!have_) return;
    have_ = false;
    if (mem_ != nullptr)
      mpos_++;
    else
      pos_ = head_ + 1;
  }

 private:
  std::vector<const Segment *> segs_;
  size_t si_ = 0;
  const MemGraph *mem_ = nullptr;
  int dir_ = 0;
  uint64_t tau_ = 0;
  std::vector<uint64_t> mbuf_;
  size_t mpos_ = 0;
  uint64_t pos_ = 0, hi_ = 0;
  uint64_t head_ = 0;
  bool have_ = false;
};

// The smallest head of cs (*any false when every cursor is exhausted): of
// VertexCursors, or of anything with their bool Head(uint64_t *).
template <typename Cursor>
uint64_t MinHead(std::vector<Cursor> &cs, bool *any) {
  uint64_t best = UINT64_MAX;
  *any = false;
  for (auto &c : cs) {
    uint64_t v;
    if (c.Head(&v) && (!*any || v < best)) {
      best = v;
      *any = true;
    }
  }
  return best;
}

// Moves every cursor whose head is v past it.
inline void AdvancePast(std::vector<VertexCursor> &cs, uint64_t v) {
  for (auto &c : cs) {
    uint64_t h;
    if (c.Head(&h) && h == v) c.Advance();
  }
}

}  // namespace gt
