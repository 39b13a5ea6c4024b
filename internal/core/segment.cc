#include "segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "graphtide.h"

namespace gt {
namespace {

constexpr char kMagic[8] = {'G', 'T', 'S', 'E', 'G', '0', '0', '1'};
constexpr char kEndMagic[8] = {'G', 'T', 'S', 'E', 'G', 'E', 'N', 'D'};
// 6; 5: before source positions (and what a file without them is still
// written as); 4: before narrow columns; 3: before event operands and
// payloads; 2: also before the edge filter; 1: also before edge types
// (read as all type 0).
constexpr uint32_t kFormatVersion = 6;
constexpr uint64_t kHeaderSize = 128;
constexpr uint64_t kFooterSize = 32;
constexpr uint64_t kChunkSize = uint64_t{64} * 1024;

uint64_t Align8(uint64_t x) { return (x + 7) & ~uint64_t(7); }
// A column of n entries of w bytes, padded to 8.
uint64_t NarrowBytes(uint64_t n, uint32_t w) { return Align8(n * w); }

template <typename T>
void Put(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
T Get(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

// Streams bytes to a file in 1 MiB writes, keeping a crc per 64 KiB chunk of
// everything after the header.
class ChunkedWriter {
 public:
  ChunkedWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) { buf_.reserve(1 << 20); }
  Status Append(const void *data, size_t n) {
    const uint8_t *p = static_cast<const uint8_t *>(data);
    while (n > 0) {
      size_t room = kChunkSize - chunk_fill_;
      size_t take = std::min(room, n);
      chunk_crc_ = Crc32c(p, take, chunk_crc_);
      chunk_fill_ += take;
      buf_.insert(buf_.end(), p, p + take);
      p += take;
      n -= take;
      pos_ += take;
      if (chunk_fill_ == kChunkSize) CloseChunk();
      if (buf_.size() >= (1 << 20)) GT_RETURN_IF_ERROR(Drain());
    }
    return Status::OK();
  }
  Status Pad8() {
    static const uint8_t zeros[8] = {0};
    uint64_t total = kHeaderSize + pos_;
    return Append(zeros, Align8(total) - total);
  }
  void CloseChunk() {
    if (chunk_fill_ == 0) return;
    crcs_.push_back(chunk_crc_);
    chunk_crc_ = 0;
    chunk_fill_ = 0;
  }
  // Writes what is buffered and starts its writeback at once (RocksDB's
  // bytes_per_sync): a file's pages go to disk as it is written, not in
  // one burst at the final fsync that every other writer of the disk (the
  // Kafka broker beside the store) would queue behind. Advisory: the
  // fsync at the end is what makes the file durable, so an error here is
  // ignored.
  Status Drain() {
    GT_RETURN_IF_ERROR(WriteAll(fd_, buf_.data(), buf_.size(), path_));
    ::sync_file_range(fd_, static_cast<off_t>(written_), static_cast<off_t>(buf_.size()), SYNC_FILE_RANGE_WRITE);
    written_ += buf_.size();
    buf_.clear();
    return Status::OK();
  }
  uint64_t pos() const { return kHeaderSize + pos_; }
  std::vector<uint32_t> &crcs() { return crcs_; }

 private:
  int fd_;
  std::string path_;
  uint64_t written_ = kHeaderSize;  // file offset of buf_ (the header is written before)
  std::vector<uint8_t> buf_;
  uint64_t pos_ = 0;
  size_t chunk_fill_ = 0;
  uint32_t chunk_crc_ = 0;
  std::vector<uint32_t> crcs_;
};

namespace {

// Appends n values get(i), each in its low width bytes (little-endian,
// 1..8), then zeros to 8 bytes: a narrow column (segment.h).
template <typename F>
Status AppendNarrow(ChunkedWriter *w, uint64_t n, uint32_t width, F get) {
  uint8_t buf[8192];
  size_t fill = 0;
  for (uint64_t i = 0; i < n; i++) {
    const uint64_t v = get(i);
    std::memcpy(buf + fill, &v, 8);  // little-endian: the low bytes first
    fill += width;
    if (fill + 8 > sizeof buf) {
      GT_RETURN_IF_ERROR(w->Append(buf, fill));
      fill = 0;
    }
  }
  if (fill != 0) GT_RETURN_IF_ERROR(w->Append(buf, fill));
  return w->Pad8();
}

// The same of the array v[0, n): at 8 bytes, as it is.
Status AppendNarrow(ChunkedWriter *w, const uint64_t *v, uint64_t n, uint32_t width) {
  if (width == 8) return w->Append(v, n * 8);
  return AppendNarrow(w, n, width, [v](uint64_t i) { return v[i]; });
}

// Closes an fd on scope exit unless released.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Ends a file whose body w wrote: the rest of the body, the chunk
// checksum table (padded to 8 bytes) and the footer. *bytes: the file's
// size.
Status WriteFooter(int fd, const std::string &path, ChunkedWriter *w, uint64_t *bytes) {
  w->CloseChunk();
  const uint64_t body_end = w->pos();
  std::vector<uint32_t> crcs = w->crcs();
  GT_RETURN_IF_ERROR(w->Drain());
  GT_RETURN_IF_ERROR(WriteAll(fd, crcs.data(), crcs.size() * 4, path));
  if (crcs.size() % 2) {
    uint32_t z = 0;
    GT_RETURN_IF_ERROR(WriteAll(fd, &z, 4, path));
  }
  uint8_t foot[kFooterSize] = {0};
  Put<uint64_t>(foot, body_end);
  Put<uint64_t>(foot + 8, crcs.size());
  Put<uint32_t>(foot + 16, Crc32c(crcs.data(), crcs.size() * 4));
  Put<uint32_t>(foot + 20, Crc32c(foot, 20));
  std::memcpy(foot + 24, kEndMagic, 8);
  GT_RETURN_IF_ERROR(WriteAll(fd, foot, kFooterSize, path));
  *bytes = body_end + Align8(crcs.size() * 4) + kFooterSize;
  return Status::OK();
}

}  // namespace

std::string SegmentFileName(uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08" PRIu64 ".seg", id);
  return buf;
}

template <typename T>
void SegmentBuilder::AddKept(std::vector<T> *col, bool *kept, T x, T dflt, uint64_t n, uint64_t room) {
  if (x != dflt && !*kept) {
    col->reserve(std::max<uint64_t>(reserve_entries_, room));
    col->assign(n, dflt);
    *kept = true;
  }
  if (*kept) col->push_back(x);
}

void SegmentBuilder::AddVertex(uint64_t src, const Entry *e, size_t n) {
  if (n == 0) return;
  if (offs_.empty()) offs_.push_back(0);
  srcs_.push_back(src);
  for (size_t i = 0; i < n; i++) {
    const uint64_t d = e[i].dst;
    if (!d64_.empty()) {
      d64_.push_back(d);
    } else if (d < (1ull << 32)) {
      d32_.push_back(static_cast<uint32_t>(d));
    } else {  // first 64-bit id: widen the column once
      d64_.assign(d32_.begin(), d32_.end());
      d64_.push_back(d);
      std::vector<uint32_t>().swap(d32_);
    }
    const uint32_t t = VersType(e[i].vers);
    const uint64_t room = n_ + n;
    AddKept(&vers_, &has_vers_, e[i].vers & ~kTypeBits, uint64_t{0}, n_, room);  // seq and tombstone
    AddKept(&types_, &has_types_, static_cast<uint16_t>(t), uint16_t{0}, n_, room);
    AddKept(&times_, &has_times_, e[i].time, int64_t{0}, n_, room);
    if (e[i].time != 0) {
      min_time_ = std::min(min_time_, e[i].time);
      max_time_ = std::max(max_time_, e[i].time);
    }
    AddKept(&w_, &has_w_, e[i].weight, 1.0, n_, room);
    if (e[i].ext != nullptr || has_counts_ || has_pay_ || has_pos_) AddExt(e[i].ext, e[i].time, room);
    min_type_ = std::min(min_type_, t);
    max_type_ = std::max(max_type_, t);
    if (i > 0 && d == e[i - 1].dst && t == VersType(e[i - 1].vers)) multi_ = true;
    if (VersTomb(e[i].vers)) tomb_ = true;
    max_dst_ = std::max(max_dst_, d);
    const uint64_t s = VersSeq(e[i].vers);
    min_seq_ = std::min(min_seq_, s);
    max_seq_ = std::max(max_seq_, s);
    n_++;
  }
  offs_.push_back(n_);
}

void SegmentBuilder::AddExt(const ExtRec *x, int64_t time, uint64_t room) {
  const uint64_t c = x != nullptr ? x->count : 0;
  if (c != 0 && !has_counts_) {
    counts_.reserve(std::max<uint64_t>(reserve_entries_, room));
    firsts_.reserve(std::max<uint64_t>(reserve_entries_, room));
    counts_.assign(n_, 0);
    firsts_.assign(n_, 0);
    has_counts_ = true;
  }
  if (has_counts_) {
    counts_.push_back(c);
    firsts_.push_back(c != 0 ? x->first : 0);
  }
  if (c != 0) {
    max_count_ = std::max(max_count_, c);
    max_first_delta_ = std::max(max_first_delta_, static_cast<uint64_t>(time) - static_cast<uint64_t>(x->first));
  }
  const uint32_t len = x != nullptr ? x->len : 0;
  if (len != 0 && !has_pay_) {
    pay_offs_.assign(n_ + 1, 0);
    has_pay_ = true;
  }
  if (has_pay_) {
    if (len != 0) pay_bytes_.insert(pay_bytes_.end(), x->bytes(), x->bytes() + len);
    pay_offs_.push_back(pay_bytes_.size());
  }
  const EventPos pos = x != nullptr ? x->pos() : EventPos{};
  if (pos.source != 0 && !has_pos_) {
    pos_src_.reserve(std::max<uint64_t>(reserve_entries_, room));
    pos_off_.reserve(std::max<uint64_t>(reserve_entries_, room));
    pos_src_.assign(n_, 0);
    pos_off_.assign(n_, 0);
    pos_none_ = n_ != 0;
    has_pos_ = true;
  }
  if (has_pos_) {
    pos_src_.push_back(pos.source);
    pos_off_.push_back(pos.source != 0 ? pos.position : 0);
    if (pos.source == 0) {
      pos_none_ = true;
    } else {
      pos_min_src_ = std::min(pos_min_src_, pos.source);
      pos_max_src_ = std::max(pos_max_src_, pos.source);
      pos_min_ = std::min(pos_min_, pos.position);
      pos_max_ = std::max(pos_max_, pos.position);
    }
  }
}

SegmentBuilder::PosLayout SegmentBuilder::PositionLayout() const {
  PosLayout l;
  if (!has_pos_) return l;
  l.min_source = pos_none_ ? 0 : pos_min_src_;
  l.max_source = pos_max_src_;
  l.min_position = pos_min_;
  const uint64_t sources = uint64_t{l.max_source} - l.min_source;  // the source column's largest value
  const uint64_t range = pos_max_ - pos_min_;                      // the position column's
  // One column of source * radix + position when that fits 64 bits: it
  // takes the bytes of the product, never more than two columns would.
  if (range != UINT64_MAX && sources <= (UINT64_MAX - range) / (range + 1)) {
    l.radix = range + 1;
    const uint64_t top = sources * l.radix + range;
    l.wp = top == 0 ? 0 : BytesFor(top);
  } else {
    l.ws = sources == 0 ? 0 : BytesFor(sources);
    l.wp = range == 0 ? 0 : BytesFor(range);
  }
  if (has_times_) {
    l.min_time = min_time_;
    l.wt = BytesFor(static_cast<uint64_t>(max_time_ - min_time_) + 1);
  }
  if (min_width_ != 0) {
    l.wp = std::max(l.wp, min_width_);
    if (l.radix == 0) l.ws = std::max(l.ws, std::min(min_width_, 4u));
    l.wt = std::max(l.wt, min_width_);
  }
  return l;
}

void SegmentBuilder::Transpose(SegmentBuilder *in) const {
  in->Reset();
  if (n_ == 0) return;
  const std::vector<uint32_t> where = InOrder(in);
  ScatterColumns(where, in);
  if (has_pay_) ScatterPayloads(where, in);
  CopySummary(in);
}

std::vector<uint32_t> SegmentBuilder::InOrder(SegmentBuilder *in) const {
  auto dst = [&](uint64_t i) -> uint64_t { return d64_.empty() ? d32_[i] : d64_[i]; };
  uint64_t lo[2] = {UINT64_MAX, UINT64_MAX}, hi[2] = {0, 0};
  for (uint64_t i = 0; i < n_; i++) {
    const uint64_t d = dst(i);
    const int b = d >= GT_HIGH_ID_BASE ? 1 : 0;
    lo[b] = std::min(lo[b], d);
    hi[b] = std::max(hi[b], d);
  }
  const uint64_t span0 = lo[0] <= hi[0] ? hi[0] - lo[0] + 1 : 0;
  const uint64_t span1 = lo[1] <= hi[1] ? hi[1] - lo[1] + 1 : 0;
  // Entry counts fit 32 bits: a flush holds one MemGraph
  // (GT_MAX_MEMGRAPH_BYTES / 16 < 2^32).
  std::vector<uint32_t> where(n_);
  in->offs_.push_back(0);
  if (span0 + span1 <= 4 * n_ + 4096) {
    // Dense ids (from 0, or from GT_HIGH_ID_BASE, as key dictionaries
    // give them): a counting sort.
    auto bucket = [&](uint64_t d) { return d >= GT_HIGH_ID_BASE ? span0 + (d - lo[1]) : d - lo[0]; };
    std::vector<uint32_t> at(span0 + span1 + 1, 0);
    for (uint64_t i = 0; i < n_; i++) at[bucket(dst(i)) + 1]++;
    for (size_t b = 0; b + 1 < at.size(); b++) {
      if (at[b + 1] != 0) {
        in->srcs_.push_back(b < span0 ? lo[0] + b : lo[1] + (b - span0));
        in->offs_.push_back(in->offs_.back() + at[b + 1]);
      }
      at[b + 1] += at[b];
    }
    for (uint64_t i = 0; i < n_; i++) where[i] = at[bucket(dst(i))]++;
  } else {
    // Sparse ids: sort (dst, entry), which is unique.
    std::vector<std::pair<uint64_t, uint64_t>> order(n_);
    for (uint64_t i = 0; i < n_; i++) order[i] = {dst(i), i};
    std::sort(order.begin(), order.end());
    for (size_t j = 0; j < n_; j++) {
      where[order[j].second] = static_cast<uint32_t>(j);
      if (j + 1 == n_ || order[j + 1].first != order[j].first) {
        in->srcs_.push_back(order[j].first);
        in->offs_.push_back(j + 1);
      }
    }
  }
  return where;
}

void SegmentBuilder::ScatterColumns(const std::vector<uint32_t> &where, SegmentBuilder *in) const {
  // The in-direction's dst is the src here.
  const bool wide = srcs_.back() >= (uint64_t(1) << 32);
  if (wide)
    in->d64_.resize(n_);
  else
    in->d32_.resize(n_);
  if (has_vers_) in->vers_.resize(n_);
  if (has_w_) in->w_.resize(n_);
  if (has_types_) in->types_.resize(n_);
  if (has_times_) in->times_.resize(n_);
  if (has_counts_) {
    in->counts_.resize(n_);
    in->firsts_.resize(n_);
  }
  if (has_pos_) {
    in->pos_src_.resize(n_);
    in->pos_off_.resize(n_);
  }
  for (size_t k = 0; k + 1 < offs_.size(); k++) {
    for (uint64_t i = offs_[k]; i < offs_[k + 1]; i++) {
      const uint32_t p = where[i];
      if (wide)
        in->d64_[p] = srcs_[k];
      else
        in->d32_[p] = static_cast<uint32_t>(srcs_[k]);
      if (has_vers_) in->vers_[p] = vers_[i];
      if (has_w_) in->w_[p] = w_[i];
      if (has_types_) in->types_[p] = types_[i];
      if (has_times_) in->times_[p] = times_[i];
      if (has_counts_) {
        in->counts_[p] = counts_[i];
        in->firsts_[p] = firsts_[i];
      }
      if (has_pos_) {
        in->pos_src_[p] = pos_src_[i];
        in->pos_off_[p] = pos_off_[i];
      }
    }
  }
}

void SegmentBuilder::ScatterPayloads(const std::vector<uint32_t> &where, SegmentBuilder *in) const {
  // The payloads' lengths at their new positions, then their offsets.
  in->pay_offs_.assign(n_ + 1, 0);
  for (uint64_t i = 0; i < n_; i++) in->pay_offs_[where[i] + 1] = pay_offs_[i + 1] - pay_offs_[i];
  for (uint64_t p = 0; p < n_; p++) in->pay_offs_[p + 1] += in->pay_offs_[p];
  in->pay_bytes_.resize(pay_bytes_.size());
  for (uint64_t i = 0; i < n_; i++) {
    const uint64_t len = pay_offs_[i + 1] - pay_offs_[i];
    if (len != 0) std::memcpy(&in->pay_bytes_[in->pay_offs_[where[i]]], &pay_bytes_[pay_offs_[i]], len);
  }
}

void SegmentBuilder::CopySummary(SegmentBuilder *in) const {
  // Every property the file records is the same in both directions (the
  // seqs, tombstones, several versions of an edge, weights), but the
  // largest dst, which is the largest src here.
  in->n_ = n_;
  in->multi_ = multi_;
  in->tomb_ = tomb_;
  in->has_vers_ = has_vers_;
  in->has_w_ = has_w_;
  in->has_types_ = has_types_;
  in->has_times_ = has_times_;
  in->has_counts_ = has_counts_;
  in->has_pay_ = has_pay_;
  in->has_pos_ = has_pos_;
  in->pos_none_ = pos_none_;
  in->pos_min_src_ = pos_min_src_;
  in->pos_max_src_ = pos_max_src_;
  in->pos_min_ = pos_min_;
  in->pos_max_ = pos_max_;
  in->min_time_ = min_time_;
  in->max_time_ = max_time_;
  in->max_dst_ = srcs_.back();
  in->min_seq_ = min_seq_;
  in->max_seq_ = max_seq_;
  in->min_type_ = min_type_;
  in->max_type_ = max_type_;
  in->max_count_ = max_count_;
  in->max_first_delta_ = max_first_delta_;
}

void SegmentBuilder::NarrowWidths(uint32_t *wv, uint32_t *wc, uint32_t *wf, uint32_t *wp) const {
  // vers_ holds seq<<1|tombstone: below 2 * max_seq_ + 2.
  *wv = has_vers_ ? BytesFor(max_seq_ << 1 | 1) : 0;
  *wc = has_counts_ ? BytesFor(max_count_) : 0;
  *wf = has_counts_ && max_first_delta_ != 0 ? BytesFor(max_first_delta_) : 0;
  *wp = has_pay_ ? BytesFor(pay_bytes_.size()) : 0;
  if (min_width_ != 0) {
    auto at_least = [this](uint32_t *w) { *w = std::max(*w, min_width_); };
    if (has_vers_) at_least(wv);
    if (has_counts_) {
      at_least(wc);
      at_least(wf);
    }
    if (has_pay_) at_least(wp);
  }
}

uint64_t SegmentBuilder::EstimatedBytes() const {
  const uint64_t table =
      srcs_.empty() ? 0 : std::min<uint64_t>((srcs_.back() - srcs_.front() + 2) * 8, srcs_.size() * 16 + 8);
  // The vers, count, first and payload offset columns' bytes an entry: 8
  // each in a format-3 or -4 file, narrow in a format-5 one.
  uint32_t wv = has_vers_ ? 8 : 0, wc = has_counts_ ? 8 : 0, wf = has_counts_ ? 8 : 0, wp = has_pay_ ? 8 : 0;
  if ((has_counts_ || has_pay_) && (format_ == 0 || format_ >= 5)) NarrowWidths(&wv, &wc, &wf, &wp);
  uint64_t cols = d32_.size() * 4 + d64_.size() * 8 + n_ * (wv + wc + wf) + w_.size() * 8 + types_.size() * 2 +
                  pay_offs_.size() * wp + pay_bytes_.size();
  if (has_pos_ && (format_ == 0 || format_ >= 6)) {
    const PosLayout l = PositionLayout();
    cols += kPosHeaderBytes + n_ * (l.ws + l.wp) + times_.size() * l.wt;
  } else {
    cols += times_.size() * 8;
  }
  // The edge filter, when it will be written: at most kBloomBitsPerPair
  // bits an entry.
  const uint64_t bloom = edge_filter_ && (format_ == 0 || format_ >= 3) ? BloomBlocks(n_) * kBloomBlockWords * 4 : 0;
  return kHeaderSize + table + cols + bloom + cols / (kChunkSize / 4) + kFooterSize;
}

void SegmentBuilder::Reserve(uint64_t nverts, uint64_t nentries) {
  srcs_.reserve(nverts);
  offs_.reserve(nverts + 1);
  d32_.reserve(nentries);
  reserve_entries_ = nentries;
}

void SegmentBuilder::Reset() {
  srcs_.clear();
  offs_.clear();
  d32_.clear();
  d64_.clear();
  vers_.clear();
  w_.clear();
  types_.clear();
  times_.clear();
  counts_.clear();
  firsts_.clear();
  pay_offs_.clear();
  pay_bytes_.clear();
  pos_src_.clear();
  pos_off_.clear();
  n_ = 0;
  multi_ = tomb_ = has_vers_ = has_w_ = has_types_ = has_times_ = has_counts_ = has_pay_ = has_pos_ = false;
  pos_none_ = false;
  pos_min_src_ = UINT32_MAX;
  pos_max_src_ = 0;
  pos_min_ = UINT64_MAX;
  pos_max_ = 0;
  min_time_ = INT64_MAX;
  max_time_ = 0;
  max_dst_ = 0;
  min_seq_ = UINT64_MAX;
  max_seq_ = 0;
  min_type_ = UINT32_MAX;
  max_type_ = 0;
  max_count_ = max_first_delta_ = 0;
}

Status SegmentBuilder::Finish(const std::string &dir, uint64_t id, uint32_t level, uint32_t edge_dir, SegMeta *meta) {
  GT_RETURN_IF_ERROR(CheckFormat());
  const std::string path = JoinPath(dir, SegmentFileName(id));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IO("create: " + ErrnoString(errno), path);
  FdGuard guard{fd};
  const FileLayout l = Layout(edge_dir);
  uint8_t hdr[kHeaderSize] = {0};
  EncodeHeader(l, id, level, edge_dir, hdr);
  GT_RETURN_IF_ERROR(WriteAll(fd, hdr, kHeaderSize, path));
  ChunkedWriter w(fd, path);
  GT_RETURN_IF_ERROR(WriteTable(l, &w));
  GT_RETURN_IF_ERROR(WriteColumns(l, &w));
  if (has_pos_) GT_RETURN_IF_ERROR(WritePositions(l, &w));
  if (l.flags & kFlagPayload) {
    GT_RETURN_IF_ERROR(AppendNarrow(&w, pay_offs_.data(), n_ + 1, l.wp));
    if (!pay_bytes_.empty()) GT_RETURN_IF_ERROR(w.Append(pay_bytes_.data(), pay_bytes_.size()));
    GT_RETURN_IF_ERROR(w.Pad8());
  }
  if (l.flags & kFlagBloom) GT_RETURN_IF_ERROR(w.Append(l.bloom.data(), l.bloom.size() * 4));
  uint64_t bytes = 0;
  GT_RETURN_IF_ERROR(WriteFooter(fd, path, &w, &bytes));
  if (::fsync(fd) != 0) return Status::IO("fsync: " + ErrnoString(errno), path);

  meta->id = id;
  meta->level = level;
  meta->dir = edge_dir;
  meta->min_src = srcs_.front();
  meta->max_src = srcs_.back();
  meta->max_dst = max_dst_;
  meta->nverts = srcs_.size();
  meta->nentries = n_;
  meta->bytes = bytes;
  meta->min_seq = min_seq_;
  meta->max_seq = max_seq_;
  return Status::OK();
}

Status SegmentBuilder::CheckFormat() const {
  if (srcs_.empty()) return Status::Internal("segment builder: finish with no vertices");
  if (format_ > kFormatVersion)
    return Status::Internal("segment builder: no format version " + std::to_string(format_));
  if (format_ != 0 && format_ < 4 && (has_counts_ || has_pay_))
    return Status::Internal("segment builder: format version " + std::to_string(format_) +
                            " cannot hold event operands or payloads");
  if (format_ != 0 && format_ < 6 && has_pos_)
    return Status::Internal("segment builder: format version " + std::to_string(format_) +
                            " cannot hold source positions");
  return Status::OK();
}

SegmentBuilder::FileLayout SegmentBuilder::Layout(uint32_t edge_dir) const {
  FileLayout l;
  const uint64_t nv = srcs_.size();
  l.dense_len = srcs_.back() - srcs_.front() + 2;
  const bool dense = l.dense_len <= 2 * (2 * nv + 1);
  if (dense) l.flags |= kFlagDense;
  if (has_vers_) l.flags |= kFlagVers;
  if (has_w_) l.flags |= kFlagWeights;
  if (d64_.empty()) l.flags |= kFlagDst32;
  if (multi_) l.flags |= kFlagMultiVersion;
  if (tomb_) l.flags |= kFlagTombstones;
  if (has_types_) l.flags |= kFlagTypes;
  if (has_times_) l.flags |= kFlagTimes;
  if (has_counts_) l.flags |= kFlagCounts;
  if (has_pay_) l.flags |= kFlagPayload;
  l.table_len = dense ? l.dense_len : nv;
  // The current format, but 3 for a file without event operands or
  // payloads (it is the same): a store that uses none stays readable by a
  // build that reads up to format 3.
  // Likewise 5 for a file without source positions.
  l.version = format_ != 0 ? format_ : has_pos_ ? 6 : (has_counts_ || has_pay_) ? 5 : 3;
  // The vers, count, first and payload offset columns' widths: narrow in
  // format 5, 8 bytes before (first then the time itself, not a delta).
  if (l.version >= 5) {
    NarrowWidths(&l.wv, &l.wc, &l.wf, &l.wp);
    if (has_vers_) l.flags |= (l.wv - 1) << kVersWidthShift;
    if (has_counts_) l.flags |= (l.wc - 1) << kCountWidthShift | l.wf << kFirstWidthShift;
    if (has_pay_) l.flags |= (l.wp - 1) << kPayWidthShift;
  }
  l.pl = PositionLayout();
  if (has_pos_ && has_times_) l.flags |= (l.pl.wt - 1) << kTimeWidthShift;
  if (edge_dir == kOut && l.version >= 3 && edge_filter_) {
    l.bloom = EdgeFilter(&l.bloom_blocks);
    l.flags |= kFlagBloom;
  }
  if (history_ && l.version >= 3) l.flags |= kFlagHistory;
  return l;
}

std::vector<uint32_t> SegmentBuilder::EdgeFilter(uint64_t *blocks) const {
  // Over the distinct (src, dst) pairs (a vertex's versions come sorted by
  // dst: a pair's are adjacent).
  const uint64_t nv = srcs_.size();
  auto dst_at = [this](uint64_t i) { return d64_.empty() ? uint64_t{d32_[i]} : d64_[i]; };
  uint64_t pairs = 0;
  for (uint64_t k = 0; k < nv; k++)
    for (uint64_t i = offs_[k]; i < offs_[k + 1]; i++) pairs += i == offs_[k] || dst_at(i) != dst_at(i - 1);
  *blocks = BloomBlocks(pairs);
  std::vector<uint32_t> bloom(*blocks * kBloomBlockWords, 0);
  for (uint64_t k = 0; k < nv; k++)
    for (uint64_t i = offs_[k]; i < offs_[k + 1]; i++)
      if (i == offs_[k] || dst_at(i) != dst_at(i - 1)) BloomAdd(bloom.data(), *blocks, srcs_[k], dst_at(i));
  return bloom;
}

void SegmentBuilder::EncodeHeader(const FileLayout &l, uint64_t id, uint32_t level, uint32_t edge_dir,
                                  uint8_t *hdr) const {
  std::memcpy(hdr, kMagic, 8);
  Put<uint32_t>(hdr + 8, l.version);
  Put<uint32_t>(hdr + 12, l.flags);
  Put<uint64_t>(hdr + 16, id);
  Put<uint32_t>(hdr + 24, level);
  Put<uint32_t>(hdr + 28, edge_dir);
  Put<uint64_t>(hdr + 32, srcs_.size());
  Put<uint64_t>(hdr + 40, n_);
  Put<uint64_t>(hdr + 48, srcs_.front());
  Put<uint64_t>(hdr + 56, srcs_.back());
  Put<uint64_t>(hdr + 64, max_dst_);
  Put<uint64_t>(hdr + 72, min_seq_);
  Put<uint64_t>(hdr + 80, max_seq_);
  Put<uint64_t>(hdr + 88, l.table_len);
  Put<uint64_t>(hdr + 96, kChunkSize);
  Put<uint64_t>(hdr + 104, l.bloom_blocks);
  if (l.flags & kFlagHistory) Put<uint64_t>(hdr + 112, history_floor_);
  if (has_types_) {
    Put<uint16_t>(hdr + 120, static_cast<uint16_t>(min_type_));
    Put<uint16_t>(hdr + 122, static_cast<uint16_t>(max_type_));
  }
  Put<uint32_t>(hdr + 124, Crc32c(hdr, 124));
}

Status SegmentBuilder::WriteTable(const FileLayout &l, ChunkedWriter *w) const {
  const uint64_t nv = srcs_.size(), ne = n_;
  if (l.flags & kFlagDense) {
    const uint64_t min_src = srcs_.front();
    std::vector<uint64_t> table(l.dense_len);
    size_t k = 0;
    for (uint64_t v = 0; v + 1 < l.dense_len; v++) {
      table[v] = offs_[k];
      if (k < nv && srcs_[k] == min_src + v) k++;
    }
    table[l.dense_len - 1] = ne;
    GT_RETURN_IF_ERROR(w->Append(table.data(), table.size() * 8));
  } else {
    GT_RETURN_IF_ERROR(w->Append(srcs_.data(), nv * 8));
    GT_RETURN_IF_ERROR(w->Append(offs_.data(), (nv + 1) * 8));
  }
  if (l.flags & kFlagDst32) {
    GT_RETURN_IF_ERROR(w->Append(d32_.data(), ne * 4));
    return w->Pad8();
  }
  return w->Append(d64_.data(), ne * 8);
}

Status SegmentBuilder::WriteColumns(const FileLayout &l, ChunkedWriter *w) const {
  const uint64_t ne = n_;
  if (l.flags & kFlagVers) GT_RETURN_IF_ERROR(AppendNarrow(w, vers_.data(), ne, l.wv));
  if (l.flags & kFlagWeights) GT_RETURN_IF_ERROR(w->Append(w_.data(), ne * 8));
  if ((l.flags & kFlagTimes) && l.version >= 6) {
    // time - min_time + 1, 0 for none.
    const uint64_t base = static_cast<uint64_t>(l.pl.min_time) - 1;
    GT_RETURN_IF_ERROR(AppendNarrow(w, ne, l.pl.wt, [this, base](uint64_t i) -> uint64_t {
      return times_[i] == 0 ? 0 : static_cast<uint64_t>(times_[i]) - base;
    }));
  } else if (l.flags & kFlagTimes) {
    GT_RETURN_IF_ERROR(w->Append(times_.data(), ne * 8));
  }
  if (l.flags & kFlagTypes) {
    GT_RETURN_IF_ERROR(w->Append(types_.data(), ne * 2));
    GT_RETURN_IF_ERROR(w->Pad8());
  }
  if (!(l.flags & kFlagCounts)) return Status::OK();
  GT_RETURN_IF_ERROR(AppendNarrow(w, counts_.data(), ne, l.wc));
  if (l.version < 5) return w->Append(firsts_.data(), ne * 8);
  if (l.wf == 0) return Status::OK();
  // time - first (mod 2^64) of an operand, 0 of a version that is none.
  const bool times = has_times_;
  return AppendNarrow(w, ne, l.wf, [this, times](uint64_t i) -> uint64_t {
    if (counts_[i] == 0) return 0;
    return static_cast<uint64_t>(times ? times_[i] : 0) - static_cast<uint64_t>(firsts_[i]);
  });
}

Status SegmentBuilder::WritePositions(const FileLayout &l, ChunkedWriter *w) const {
  const PosLayout &pl = l.pl;
  const uint64_t ne = n_;
  uint8_t ph[kPosHeaderBytes];
  Put<uint32_t>(ph, pl.min_source);
  Put<uint32_t>(ph + 4, pl.max_source);
  Put<uint64_t>(ph + 8, pl.min_position);
  Put<uint64_t>(ph + 16, pl.radix);
  Put<int64_t>(ph + 24, pl.min_time);
  Put<uint8_t>(ph + 32, static_cast<uint8_t>(pl.ws));
  Put<uint8_t>(ph + 33, static_cast<uint8_t>(pl.wp));
  std::memset(ph + 34, 0, 6);
  GT_RETURN_IF_ERROR(w->Append(ph, sizeof ph));
  // A version without a position: source 0 (min_source is 0 then), its
  // position part 0.
  if (pl.ws != 0)
    GT_RETURN_IF_ERROR(
        AppendNarrow(w, ne, pl.ws, [this, &pl](uint64_t i) -> uint64_t { return pos_src_[i] - pl.min_source; }));
  if (pl.wp == 0) return Status::OK();
  return AppendNarrow(w, ne, pl.wp, [this, &pl](uint64_t i) -> uint64_t {
    if (pos_src_[i] == 0) return 0;
    const uint64_t p = pos_off_[i] - pl.min_position;
    return pl.radix != 0 ? uint64_t{pos_src_[i] - pl.min_source} * pl.radix + p : p;
  });
}

Status Segment::Open(const std::string &dir, uint64_t id, std::shared_ptr<Segment> *out) {
  std::shared_ptr<Segment> s(new Segment());
  s->path_ = JoinPath(dir, SegmentFileName(id));
  GT_RETURN_IF_ERROR(s->Map());
  ColumnWidths w;
  GT_RETURN_IF_ERROR(s->ReadHeader(id, &w));
  GT_RETURN_IF_ERROR(s->ReadFooter());
  Sections sec;
  GT_RETURN_IF_ERROR(s->LayOut(&w, &sec));
  GT_RETURN_IF_ERROR(s->BindTable(sec));
  s->BindColumns(w);
  if (s->has_pos_) GT_RETURN_IF_ERROR(s->ReadPositions(w));
  if (s->flags_ & kFlagPayload) GT_RETURN_IF_ERROR(s->CheckPayloadOffsets(w.pay, sec.pay_len));
  *out = std::move(s);
  return Status::OK();
}

Status Segment::Map() {
  const std::string &path = path_;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IO("open: " + ErrnoString(errno), path);
  FdGuard guard{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::IO("stat: " + ErrnoString(errno), path);
  size_ = static_cast<size_t>(st.st_size);
  if (size_ < kHeaderSize + kFooterSize)
    return Status::Corruption("segment too short (" + std::to_string(size_) + " bytes)", path, 0);
  void *m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return Status::IO("mmap: " + ErrnoString(errno), path);
  base_ = static_cast<const uint8_t *>(m);
  return Status::OK();
}

Status Segment::ReadHeader(uint64_t id, ColumnWidths *w) {
  const std::string &path = path_;
  const uint8_t *h = base_;
  if (std::memcmp(h, kMagic, 8) != 0) return Status::Corruption("bad segment magic", path, 0);
  if (Get<uint32_t>(h + 124) != Crc32c(h, 124)) return Status::Corruption("segment header checksum mismatch", path, 0);
  const uint32_t version = Get<uint32_t>(h + 8);
  if (version < 1 || version > kFormatVersion)
    return Status::Corruption("unsupported segment format version " + std::to_string(version) +
                                  " (this build reads 1 to " + std::to_string(kFormatVersion) + ")",
                              path, 8);
  GT_RETURN_IF_ERROR(CheckFlags(version));
  GT_RETURN_IF_ERROR(ReadWidths(version, w));
  if (version == 1 && (flags_ & (kFlagTypes | kFlagTimes)))
    return Status::Corruption("a format version 1 segment with a type or time column", path, 12);
  if (flags_ & kFlagTypes) {
    if (min_type_ > max_type_ || max_type_ >= kMaxEdgeTypes)
      return Status::Corruption("segment type range [" + std::to_string(min_type_) + ", " + std::to_string(max_type_) +
                                    "] is not within [0, " + std::to_string(kMaxEdgeTypes - 1) + "]",
                                path, 120);
  } else if (min_type_ != 0 || max_type_ != 0) {
    return Status::Corruption("segment without a type column has a type range", path, 120);
  }
  SegMeta &mt = meta_;
  mt.id = Get<uint64_t>(h + 16);
  mt.level = Get<uint32_t>(h + 24);
  mt.dir = Get<uint32_t>(h + 28);
  mt.nverts = Get<uint64_t>(h + 32);
  mt.nentries = Get<uint64_t>(h + 40);
  mt.min_src = Get<uint64_t>(h + 48);
  mt.max_src = Get<uint64_t>(h + 56);
  mt.max_dst = Get<uint64_t>(h + 64);
  mt.min_seq = Get<uint64_t>(h + 72);
  mt.max_seq = Get<uint64_t>(h + 80);
  mt.bytes = size_;
  table_len_ = Get<uint64_t>(h + 88);
  chunk_size_ = Get<uint64_t>(h + 96);
  if (mt.id != id)
    return Status::Corruption("segment id " + std::to_string(mt.id) + " does not match file name", path, 16);
  return Status::OK();
}

Status Segment::CheckFlags(uint32_t version) {
  const std::string &path = path_;
  const uint8_t *h = base_;
  flags_ = Get<uint32_t>(h + 12);
  bloom_blocks_ = Get<uint64_t>(h + 104);
  if (version < 3 && (flags_ & kFlagBloom))
    return Status::Corruption("a format version " + std::to_string(version) + " segment with an edge filter", path, 12);
  history_floor_ = Get<uint64_t>(h + 112);
  if (version < 3 && (flags_ & kFlagHistory))
    return Status::Corruption("a format version " + std::to_string(version) + " segment with a history floor", path,
                              12);
  if (!(flags_ & kFlagHistory) && history_floor_ != 0)
    return Status::Corruption("segment without history has a history floor", path, 112);
  if ((flags_ & kFlagBloom) ? bloom_blocks_ == 0 : bloom_blocks_ != 0)
    return Status::Corruption("segment edge filter size " + std::to_string(bloom_blocks_) + " does not match its flag",
                              path, 104);
  min_type_ = Get<uint16_t>(h + 120);
  max_type_ = Get<uint16_t>(h + 122);
  if (version < 4 && (flags_ & (kFlagCounts | kFlagPayload)))
    return Status::Corruption("a format version " + std::to_string(version) + " segment with a count or payload column",
                              path, 12);
  return Status::OK();
}

Status Segment::ReadWidths(uint32_t version, ColumnWidths *w) {
  const std::string &path = path_;
  // The narrow columns' widths: format 5's, else 8 bytes (first then an
  // absolute time); the time column's: format 6's narrow one, else 8.
  if (version < 5 && (flags_ & (kFlagWidthBits | kFlagUnused)))
    return Status::Corruption("a format version " + std::to_string(version) + " segment with unknown flags", path, 12);
  if (version == 5 && (flags_ & kFlagUnused))
    return Status::Corruption("a format version 5 segment with unknown flags", path, 12);
  if (version >= 6) {
    if (flags_ & kFlagUnused6) return Status::Corruption("segment with unknown flags", path, 12);
    w->time = (flags_ >> kTimeWidthShift & 7) + 1;
    if (!(flags_ & kFlagTimes) && w->time != 1)
      return Status::Corruption("segment without a time column has its width", path, 12);
    has_pos_ = true;
  }
  if (version >= 5) {
    w->vers = (flags_ >> kVersWidthShift & 7) + 1;
    w->count = (flags_ >> kCountWidthShift & 7) + 1;
    w->first = flags_ >> kFirstWidthShift & 15;
    w->pay = (flags_ >> kPayWidthShift & 7) + 1;
    if (!(flags_ & kFlagVers) && w->vers != 1)
      return Status::Corruption("segment without a version column has its width", path, 12);
    if (!(flags_ & kFlagCounts) && (w->count != 1 || w->first != 0))
      return Status::Corruption("segment without a count column has its widths", path, 12);
    if (!(flags_ & kFlagPayload) && w->pay != 1)
      return Status::Corruption("segment without a payload column has its offsets' width", path, 12);
    if (w->first > 8)
      return Status::Corruption("segment first-time width " + std::to_string(w->first) + " is over 8", path, 12);
    first_delta_ = true;
  }
  return Status::OK();
}

Status Segment::ReadFooter() {
  const std::string &path = path_;
  const uint8_t *f = base_ + size_ - kFooterSize;
  const uint64_t foot_off = size_ - kFooterSize;
  if (std::memcmp(f + 24, kEndMagic, 8) != 0)
    return Status::Corruption("bad segment footer magic", path, foot_off + 24);
  if (Get<uint32_t>(f + 20) != Crc32c(f, 20))
    return Status::Corruption("segment footer checksum mismatch", path, foot_off);
  body_end_ = Get<uint64_t>(f);
  nchunks_ = Get<uint64_t>(f + 8);
  if (chunk_size_ == 0 || body_end_ < kHeaderSize ||
      nchunks_ != (body_end_ - kHeaderSize + chunk_size_ - 1) / chunk_size_ ||
      body_end_ + Align8(nchunks_ * 4) + kFooterSize != size_)
    return Status::Corruption("segment footer sizes inconsistent", path, foot_off);
  crcs_ = reinterpret_cast<const uint32_t *>(base_ + body_end_);
  if (Get<uint32_t>(f + 16) != Crc32c(crcs_, nchunks_ * 4))
    return Status::Corruption("segment chunk checksum table mismatch", path, body_end_);
  // The table's padding to 8 bytes is zero (no checksum covers it).
  if (nchunks_ % 2 != 0 && Get<uint32_t>(base_ + body_end_ + nchunks_ * 4) != 0)
    return Status::Corruption("segment chunk checksum table padding is not zero", path, body_end_ + nchunks_ * 4);

  verified_.reset(new std::atomic<uint64_t>[(nchunks_ + 63) / 64]);
  for (uint64_t i = 0; i < (nchunks_ + 63) / 64; i++) verified_[i].store(0);
  return Status::OK();
}

Status Segment::LayOut(ColumnWidths *w, Sections *sec) {
  // Section offsets follow from the header alone (and format 6's source
  // position section's header, verified when it is read).
  const std::string &path = path_;
  const uint64_t nv = meta_.nverts, ne = meta_.nentries;
  uint64_t off = kHeaderSize;
  if (flags_ & kFlagDense) {
    if (table_len_ != meta_.max_src - meta_.min_src + 2)
      return Status::Corruption("dense table length mismatch", path, 88);
    sec->table_bytes = table_len_ * 8;
  } else {
    if (table_len_ != nv) return Status::Corruption("sparse table length mismatch", path, 88);
    sec->table_bytes = nv * 8 + (nv + 1) * 8;
  }
  sec->table_off = off;
  off += sec->table_bytes;
  dst_off_ = off;
  off += Align8(ne * ((flags_ & kFlagDst32) ? 4 : 8));
  // Every entry takes bytes of the file (4 of a dst at least), so a
  // larger count is damage (and the sums below could overflow).
  if (ne > size_) return Status::Corruption("segment entry count larger than the file", path, 40);
  if (flags_ & kFlagVers) {
    vers_off_ = off;
    off += NarrowBytes(ne, w->vers);
  }
  if (flags_ & kFlagWeights) {
    w_off_ = off;
    off += ne * 8;
  }
  if (flags_ & kFlagTimes) {
    times_off_ = off;
    off += NarrowBytes(ne, w->time);
  }
  if (flags_ & kFlagTypes) {
    types_off_ = off;
    off += Align8(ne * 2);
  }
  if (flags_ & kFlagCounts) {
    counts_off_ = off;
    off += NarrowBytes(ne, w->count);
    firsts_off_ = off;
    off += NarrowBytes(ne, w->first);
  }
  if (has_pos_) GT_RETURN_IF_ERROR(LayOutPositions(w, &off));
  return LayOutTail(*w, off, sec);
}

Status Segment::LayOutPositions(ColumnWidths *w, uint64_t *off) {
  // The source position columns' widths are in the section's header,
  // read (and verified) now.
  const std::string &path = path_;
  const uint64_t ne = meta_.nentries;
  pos_hdr_off_ = *off;
  if (*off + kPosHeaderBytes > body_end_)
    return Status::Corruption("segment source position section past the body", path, 40);
  GT_RETURN_IF_ERROR(VerifyBytes(*off, *off + kPosHeaderBytes));
  const uint8_t *ph = base_ + *off;
  w->pos_src = Get<uint8_t>(ph + 32);
  w->pos_off = Get<uint8_t>(ph + 33);
  if (w->pos_src > 4 || w->pos_off > 8)
    return Status::Corruption("segment source position widths " + std::to_string(w->pos_src) + " and " +
                                  std::to_string(w->pos_off) + " are over 4 and 8",
                              path, *off + 32);
  for (int k = 34; k < 40; k++)
    if (ph[k] != 0) return Status::Corruption("segment source position header padding is not zero", path, *off + k);
  *off += kPosHeaderBytes;
  pos_src_off_ = *off;
  *off += NarrowBytes(ne, w->pos_src);
  pos_off_off_ = *off;
  *off += NarrowBytes(ne, w->pos_off);
  if (*off > body_end_) return Status::Corruption("segment source position columns larger than the file", path, 40);
  return Status::OK();
}

Status Segment::LayOutTail(const ColumnWidths &w, uint64_t off, Sections *sec) {
  // The payload column and the edge filter, which ends the body.
  const std::string &path = path_;
  const uint64_t ne = meta_.nentries;
  uint64_t bloom_bytes = 0;
  if (flags_ & kFlagBloom) {
    // Blocks are at most one per 32 bytes of the file: a larger count is
    // damage (and would overflow below).
    if (bloom_blocks_ > size_ / (kBloomBlockWords * 4))
      return Status::Corruption("segment edge filter larger than the file", path, 104);
    bloom_bytes = bloom_blocks_ * kBloomBlockWords * 4;
  }
  if (flags_ & kFlagPayload) {
    // The offsets, then the bytes up to the edge filter (or the body's end).
    if (ne >= size_ || off + NarrowBytes(ne + 1, w.pay) + bloom_bytes > body_end_)
      return Status::Corruption("segment payload column larger than the file", path, 40);
    pay_offs_off_ = off;
    off += NarrowBytes(ne + 1, w.pay);
    pay_data_off_ = off;
    sec->pay_len = body_end_ - bloom_bytes - off;
    off += sec->pay_len;
  }
  sec->bloom_off = off;
  off += bloom_bytes;
  if (off != body_end_) return Status::Corruption("segment section sizes do not add up to body size", path, 0);
  return Status::OK();
}

Status Segment::BindTable(const Sections &sec) {
  const std::string &path = path_;
  const uint64_t nv = meta_.nverts, ne = meta_.nentries;
  GT_RETURN_IF_ERROR(VerifyBytes(sec.table_off, sec.table_off + sec.table_bytes));
  if (flags_ & kFlagBloom) {
    GT_RETURN_IF_ERROR(VerifyBytes(sec.bloom_off, body_end_));
    bloom_ = reinterpret_cast<const uint32_t *>(base_ + sec.bloom_off);
  }
  if (flags_ & kFlagDense) {
    offs_ = reinterpret_cast<const uint64_t *>(base_ + sec.table_off);
  } else {
    srcs_ = reinterpret_cast<const uint64_t *>(base_ + sec.table_off);
    offs_ = srcs_ + nv;
  }
  // The table must be monotone and end at nentries or reads would run off.
  const uint64_t offs_len = (flags_ & kFlagDense) ? table_len_ : nv + 1;
  if (offs_[0] != 0 || offs_[offs_len - 1] != ne)
    return Status::Corruption("vertex table does not span the edge column", path, sec.table_off);
  for (uint64_t i = 1; i < offs_len; i++)
    if (offs_[i] < offs_[i - 1]) return Status::Corruption("vertex table not monotone", path, sec.table_off + i * 8);
  return Status::OK();
}

void Segment::BindColumns(const ColumnWidths &w) {
  if (flags_ & kFlagDst32)
    dst32_ = reinterpret_cast<const uint32_t *>(base_ + dst_off_);
  else
    dst64_ = reinterpret_cast<const uint64_t *>(base_ + dst_off_);
  if (flags_ & kFlagVers) vers_.Set(base_ + vers_off_, w.vers);
  if (flags_ & kFlagWeights) w_ = reinterpret_cast<const double *>(base_ + w_off_);
  if (flags_ & kFlagTypes) types_ = reinterpret_cast<const uint16_t *>(base_ + types_off_);
  if (flags_ & kFlagTimes) tcol_.Set(base_ + times_off_, w.time);
  if (flags_ & kFlagCounts) {
    counts_.Set(base_ + counts_off_, w.count);
    if (w.first != 0) firsts_.Set(base_ + firsts_off_, w.first);
  }
}

Status Segment::ReadPositions(const ColumnWidths &w) {
  // The section's header (verified by LayOutPositions).
  const std::string &path = path_;
  const uint64_t at = pos_hdr_off_;
  const uint8_t *ph = base_ + at;
  pos_min_src_ = Get<uint32_t>(ph);
  pos_max_src_ = Get<uint32_t>(ph + 4);
  pos_min_ = Get<uint64_t>(ph + 8);
  pos_radix_ = Get<uint64_t>(ph + 16);
  const int64_t min_time = Get<int64_t>(ph + 24);
  if ((flags_ & kFlagTimes) ? min_time <= 0 : min_time != 0)
    return Status::Corruption("segment least time " + std::to_string(min_time) + " does not match its time column",
                              path, at + 24);
  if (flags_ & kFlagTimes) tbase_ = static_cast<uint64_t>(min_time) - 1;
  if (pos_max_src_ == 0 || pos_min_src_ > pos_max_src_ || pos_max_src_ > GT_MAX_EVENT_SOURCES)
    return Status::Corruption("segment source range [" + std::to_string(pos_min_src_) + ", " +
                                  std::to_string(pos_max_src_) + "] is not within [0, " +
                                  std::to_string(GT_MAX_EVENT_SOURCES) + "] or names none",
                              path, at);
  if (pos_radix_ != 0 && w.pos_src != 0)
    return Status::Corruption("segment combines its source position columns but has a source column", path, at + 32);
  if (w.pos_src != 0) pos_src_.Set(base_ + pos_src_off_, w.pos_src);
  if (w.pos_off != 0) pos_off_.Set(base_ + pos_off_off_, w.pos_off);
  return Status::OK();
}

Status Segment::CheckPayloadOffsets(uint32_t wp, uint64_t pay_len) {
  // The offsets must start at 0, never decrease and end within the
  // bytes (padding under 8), or a read would run off the column.
  const std::string &path = path_;
  const uint64_t ne = meta_.nentries;
  const uint64_t po_end = pay_offs_off_ + NarrowBytes(ne + 1, wp);
  GT_RETURN_IF_ERROR(VerifyBytes(pay_offs_off_, po_end));
  PackedColumn po;
  po.Set(base_ + pay_offs_off_, wp);
  if (po.at(0) != 0) return Status::Corruption("payload offsets do not start at 0", path, pay_offs_off_);
  for (uint64_t i = 1; i <= ne; i++)
    if (po.at(i) < po.at(i - 1) || po.at(i) > pay_len)
      return Status::Corruption("payload offset " + std::to_string(po.at(i)) + " of version " + std::to_string(i - 1) +
                                    " is not within [" + std::to_string(po.at(i - 1)) + ", " + std::to_string(pay_len) +
                                    "]",
                                path, pay_offs_off_ + i * wp);
  if (Align8(po.at(ne)) != pay_len)
    return Status::Corruption(
        "payload bytes end at " + std::to_string(po.at(ne)) + " but the column holds " + std::to_string(pay_len), path,
        pay_offs_off_ + ne * wp);
  pay_offs_ = po;
  pay_data_ = base_ + pay_data_off_;
  return Status::OK();
}

Segment::~Segment() {
  if (base_) ::munmap(const_cast<uint8_t *>(base_), size_);
  if (obsolete_.load()) ::unlink(path_.c_str());
}

bool Segment::Find(uint64_t v, uint64_t *b, uint64_t *e) const {
  if (v < meta_.min_src || v > meta_.max_src) return false;
  if (flags_ & kFlagDense) {
    uint64_t i = v - meta_.min_src;
    *b = offs_[i];
    *e = offs_[i + 1];
    return *e > *b;
  }
  const uint64_t *p = std::lower_bound(srcs_, srcs_ + meta_.nverts, v);
  if (p == srcs_ + meta_.nverts || *p != v) return false;
  uint64_t i = static_cast<uint64_t>(p - srcs_);
  *b = offs_[i];
  *e = offs_[i + 1];
  return true;
}

bool Segment::NextVertex(uint64_t v, uint64_t *out) const {
  if (v > meta_.max_src) return false;
  if (v < meta_.min_src) v = meta_.min_src;
  if (flags_ & kFlagDense) {
    for (uint64_t i = v - meta_.min_src; i + 1 < table_len_; i++) {
      if (offs_[i + 1] > offs_[i]) {
        *out = meta_.min_src + i;
        return true;
      }
    }
    return false;
  }
  const uint64_t *p = std::lower_bound(srcs_, srcs_ + meta_.nverts, v);
  if (p == srcs_ + meta_.nverts) return false;
  *out = *p;
  return true;
}

void Segment::CopyDsts(uint64_t b, uint64_t e, uint64_t *out) const {
  if (dst32_) {
    for (uint64_t i = b; i < e; i++) *out++ = dst32_[i];
  } else {
    std::memcpy(out, dst64_ + b, (e - b) * 8);
  }
}

void Segment::CopyWeights(uint64_t b, uint64_t e, double *out) const {
  if (w_) {
    std::memcpy(out, w_ + b, (e - b) * 8);
  } else {
    for (uint64_t i = b; i < e; i++) *out++ = 1.0;
  }
}

void Segment::CopyTypes(uint64_t b, uint64_t e, uint16_t *out) const {
  if (types_) {
    std::memcpy(out, types_ + b, (e - b) * 2);
  } else {
    std::memset(out, 0, (e - b) * 2);
  }
}

void Segment::CopyTimes(uint64_t b, uint64_t e, int64_t *out) const {
  if (!tcol_.present()) {
    std::memset(out, 0, (e - b) * 8);
  } else if (tcol_.w == 8 && tbase_ == 0) {
    std::memcpy(out, tcol_.p + b * 8, (e - b) * 8);
  } else {
    for (uint64_t i = b; i < e; i++) *out++ = time(i);
  }
}

Status Segment::AppendRange(uint64_t lo, uint64_t hi, uint64_t *vids, uint64_t *offs, size_t vcap, uint64_t *dsts,
                            double *w, uint16_t *t, int64_t *tm, size_t ecap, size_t *nv, size_t *ne, uint64_t *next,
                            uint64_t *need) const {
  *next = hi;
  *need = 0;
  lo = std::max(lo, meta_.min_src);
  const uint64_t end = std::min(hi, meta_.max_src + 1);
  if (lo >= end) return Status::OK();
  const bool dense = (flags_ & kFlagDense) != 0;
  // i walks table positions: dense -> v - min_src, sparse -> index in srcs_.
  uint64_t i =
      dense ? lo - meta_.min_src : static_cast<uint64_t>(std::lower_bound(srcs_, srcs_ + meta_.nverts, lo) - srcs_);
  const uint64_t iend =
      dense ? end - meta_.min_src : static_cast<uint64_t>(std::lower_bound(srcs_, srcs_ + meta_.nverts, end) - srcs_);
  const uint64_t first_edge = offs_[i];
  const size_t ne0 = *ne;
  size_t v_out = *nv;
  for (; i < iend; i++) {
    const uint64_t b = offs_[i], e = offs_[i + 1];
    if (e == b) continue;
    const uint64_t v = dense ? meta_.min_src + i : srcs_[i];
    if (v_out == vcap || ne0 + (e - first_edge) > ecap) {
      if (v_out == 0) *need = e - b;
      *next = v;
      break;
    }
    vids[v_out] = v;
    offs[++v_out] = ne0 + (e - first_edge);
  }
  const uint64_t last_edge = first_edge + (offs[v_out] - ne0);
  if (v_out > *nv) {
    GT_RETURN_IF_ERROR(EnsureVerified(first_edge, last_edge));
    CopyDsts(first_edge, last_edge, dsts + ne0);
    if (w) CopyWeights(first_edge, last_edge, w + ne0);
    if (t) CopyTypes(first_edge, last_edge, t + ne0);
    if (tm) CopyTimes(first_edge, last_edge, tm + ne0);
  }
  *nv = v_out;
  *ne = ne0 + (last_edge - first_edge);
  return Status::OK();
}

void Segment::ReleasePages(uint64_t upto) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  auto drop = [&](uint64_t from, uint64_t to) {
    uint64_t a = (from + page - 1) / page * page, b = to / page * page;
    if (b > a) ::madvise(const_cast<uint8_t *>(base_) + a, b - a, MADV_DONTNEED);
  };
  drop(dst_off_, dst_off_ + upto * (dst32_ ? 4 : 8));
  if (vers_.present()) drop(vers_off_, vers_off_ + upto * vers_.w);
  if (w_) drop(w_off_, w_off_ + upto * 8);
  if (types_) drop(types_off_, types_off_ + upto * 2);
  if (tcol_.present()) drop(times_off_, times_off_ + upto * tcol_.w);
  if (counts_.present()) drop(counts_off_, counts_off_ + upto * counts_.w);
  if (firsts_.present()) drop(firsts_off_, firsts_off_ + upto * firsts_.w);
  if (pos_src_.present()) drop(pos_src_off_, pos_src_off_ + upto * pos_src_.w);
  if (pos_off_.present()) drop(pos_off_off_, pos_off_off_ + upto * pos_off_.w);
  if (pay_data_ != nullptr) drop(pay_data_off_, pay_data_off_ + pay_offs_.at(upto));
}

Status Segment::VerifyChunk(uint64_t c) const {
  uint64_t word = c / 64, bit = uint64_t(1) << (c % 64);
  if (verified_[word].load(std::memory_order_acquire) & bit) return Status::OK();
  uint64_t from = kHeaderSize + c * chunk_size_;
  uint64_t to = std::min(body_end_, from + chunk_size_);
  const uint32_t got = Crc32c(base_ + from, to - from);
  if (got != crcs_[c]) {
    char b[64];
    std::snprintf(b, sizeof b, ": stored 0x%08x, computed 0x%08x", crcs_[c], got);
    return Status::Corruption("segment chunk " + std::to_string(c) + " checksum mismatch" + b, path_, from);
  }
  verified_[word].fetch_or(bit, std::memory_order_release);
  return Status::OK();
}

Status Segment::VerifyBytes(uint64_t from, uint64_t to) const {
  if (to <= from) return Status::OK();
  uint64_t c0 = (from - kHeaderSize) / chunk_size_;
  uint64_t c1 = (to - 1 - kHeaderSize) / chunk_size_;
  for (uint64_t c = c0; c <= c1; c++) GT_RETURN_IF_ERROR(VerifyChunk(c));
  return Status::OK();
}

Status Segment::EnsureVerified(uint64_t b, uint64_t e) const {
  if (e <= b) return Status::OK();
  const uint64_t dw = dst32_ ? 4 : 8;
  GT_RETURN_IF_ERROR(VerifyBytes(dst_off_ + b * dw, dst_off_ + e * dw));
  if (vers_.present()) GT_RETURN_IF_ERROR(VerifyBytes(vers_off_ + b * vers_.w, vers_off_ + e * vers_.w));
  if (w_) GT_RETURN_IF_ERROR(VerifyBytes(w_off_ + b * 8, w_off_ + e * 8));
  if (types_) GT_RETURN_IF_ERROR(VerifyBytes(types_off_ + b * 2, types_off_ + e * 2));
  if (tcol_.present()) GT_RETURN_IF_ERROR(VerifyBytes(times_off_ + b * tcol_.w, times_off_ + e * tcol_.w));
  if (counts_.present()) GT_RETURN_IF_ERROR(VerifyBytes(counts_off_ + b * counts_.w, counts_off_ + e * counts_.w));
  if (firsts_.present()) GT_RETURN_IF_ERROR(VerifyBytes(firsts_off_ + b * firsts_.w, firsts_off_ + e * firsts_.w));
  if (pos_src_.present()) GT_RETURN_IF_ERROR(VerifyBytes(pos_src_off_ + b * pos_src_.w, pos_src_off_ + e * pos_src_.w));
  if (pos_off_.present()) GT_RETURN_IF_ERROR(VerifyBytes(pos_off_off_ + b * pos_off_.w, pos_off_off_ + e * pos_off_.w));
  // The offsets were verified at open.
  if (pay_data_ != nullptr)
    GT_RETURN_IF_ERROR(VerifyBytes(pay_data_off_ + pay_offs_.at(b), pay_data_off_ + pay_offs_.at(e)));
  return Status::OK();
}

Status Segment::VerifyAll() const {
  for (uint64_t c = 0; c < nchunks_; c++) GT_RETURN_IF_ERROR(VerifyChunk(c));
  return Status::OK();
}

void Segment::VerifyEach(std::vector<Problem> *problems) const {
  for (uint64_t c = 0; c < nchunks_; c++) {
    Status s = VerifyChunk(c);
    if (!s.ok()) problems->push_back(Problem{s.file, s.offset, s.msg});
  }
}

}  // namespace gt
