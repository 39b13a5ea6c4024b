// segment.h -- the immutable on-disk CSR file ("segment") of the core.
//
// One file holds the edges of a set of source vertices, each vertex's edge
// versions stored contiguously and sorted by (dst asc, type desc, seq desc). L0 files
// come from flushes; L1+ files are segments of that level's single CSR and
// cover disjoint vertex ranges.
//
// Layout (all integers little-endian, every section 8-byte aligned):
//   [0,128)   header: magic "GTSEG001", u32 format version, u32 flags,
//             u64 file id, u32 level, u32 dir, u64 nverts, u64 nentries,
//             u64 min_src, u64 max_src, u64 max_dst, u64 min_seq, u64 max_seq,
//             u64 table_len, u64 chunk_size, u64 bloom_blocks (0
//             without kBloom), u64 history_floor (0 without kHistory),
//             u16 min_type, u16 max_type (both 0 without kTypes),
//             u32 crc32c of bytes [0,124).
//             Format version 6 (a file with source positions; one
//             without is written as version 5, or 3, below, unchanged);
//             version 5 (before source positions: flag bits 25 and up
//             are 0); version 4 (before narrow columns: its
//             vers, count, first and payload offset columns are 8 bytes an
//             entry, first an absolute time, and flag bits 12 and up are
//             0) reads unchanged; version 3 (before event operands and
//             payloads) is the same without kCounts and kPayload (a file
//             of it reads as one whose versions are replace versions
//             without payload; a file that needs neither column is still
//             written as version 3, its vers column 8 bytes an entry, so
//             that a store using no events stays readable by a build
//             before them), version 2 (before the edge filter) is the
//             same without kBloom, and version 1 (before edge types) also
//             without kTypes and with 0 for min_type and max_type, and is
//             read as a file whose every edge has type 0.
//   Narrow columns (format 5): a column of unsigned integers w bytes an
//             entry (1 <= w <= 8, the least that holds the file's largest
//             value; little-endian, packed, padded with zeros to 8
//             bytes), its width in the flags: bits 12-14 vers width - 1,
//             15-17 count width - 1, 18-21 first width (0..8; 0: no
//             first column), 22-24 payload offset width - 1; bits of a
//             column the file lacks, and bits 25 and up, are 0. A value
//             is read with one unaligned 8-byte load masked to w bytes
//             (no branch, no varint: fixed width, randomly addressable);
//             the load may run up to 7 bytes past the column, which the
//             footer alone (32 bytes) keeps within the file, and those
//             bytes are masked off.
//   vertex table: dense (flag kDense): u64 off[table_len], table_len =
//             max_src-min_src+2, edges of v are [off[v-min], off[v-min+1]);
//             sparse: u64 src[nverts] then u64 off[nverts+1].
//   dst column: u32[nentries] when flag kDst32, else u64[nentries].
//   vers column: u64[nentries] (seq<<1|tombstone), present iff kVers;
//             absent means every version has seq 0 and is live. Format
//             5: narrow (a file whose newest versions are few keeps their
//             seqs in a byte or two an entry, not 8).
//   weight column: f64[nentries], present iff kWeights; absent means 1.0.
//   time column: i64[nentries], each version's event time (Unix µs; 0:
//             none), present iff kTimes (some version has one). Format 6:
//             narrow, time - min_time + 1 (0 for none; min_time, the least
//             nonzero time, in the source position section), its width
//             in flag bits 25-27 (width - 1).
//   type column: u16[nentries] padded to 8 bytes, present iff kTypes;
//             absent means every edge has type 0 (so a store of one type
//             pays nothing for types). In memory a version's type is in
//             the top bits of its vers word (common.h); the file keeps it
//             apart, in 2 bytes instead of 8.
//   count column: present iff kCounts (some version is an event
//             operand): each version's count of events (0: not an
//             operand; merge.h folds operands). Format 5: narrow; format
//             4: u64[nentries].
//   first column: present iff kCounts (format 5: and its width is not
//             0): an operand's least nonzero event time. Format 5:
//             narrow, time - first (mod 2^64) for an operand and 0 for a
//             version that is none; absent when that is 0 for every
//             operand (every operand's first time is its time: one event,
//             or events of one time), so first = time then. Format 4:
//             i64[nentries], the time itself (0 for a version that is
//             none).
//   payload column: present iff kPayload (some version has a payload):
//             off[nentries+1] (off[0] = 0, monotone; format 5: narrow,
//             format 4: u64), then the bytes, version i's [off[i],
//             off[i+1]), padded with zeros to 8 bytes; its length follows
//             from the sections around it. Open verifies the offsets (and
//             refuses damage with file and offset), so a read never runs
//             off the column.
//   source positions (format 6, which is written only when some version
//             has one: common.h EventPos; formats 1-5 have none): 40
//             bytes, u32 min_source, u32 max_source, u64 min_position, u64
//             radix, i64 min_time (0 without a time column), u8 source
//             width (0..4), u8 position width (0..8), 6 bytes of zeros;
//             then two narrow columns, source and position, each absent
//             (width 0) when not needed (every value 0). A version's
//             (source, position) is, with s and p its columns' values:
//             radix 0: (min_source + s, min_position + p); else (the
//             columns combined into one number, the source column then
//             absent): (min_source + p / radix, min_position + p % radix).
//             Source 0 is "none" (min_source is 0 when some version has
//             none): a file of one source and positions close together
//             takes a few bytes a version (bench serve's: 3), not text.
//             max_source is the largest source a version names (the
//             store's MANIFEST must number it: Open refuses otherwise).
//   edge filter: u32[8 * bloom_blocks], present iff kBloom (an out-edge
//             file's, but for one compaction wrote to the bottommost
//             level: bloom.h), over every (src, dst) pair of the file,
//             tombstones' included (a lookup must find them).
//   chunk crc table: u32 crc32c per chunk_size bytes of [128, body_end).
//   footer (32 bytes): u64 body_end, u64 nchunks, u32 crc of the crc table,
//             u32 crc of footer bytes [0,20), u64 magic "GTSEGEND".
//
// INVARIANT: within one vertex, at most one version per (dst, type) unless
// flag kMultiVersion is set (compaction kept versions for pinned snapshots).
// Header, footer, crc table and vertex table are verified when the file is
// opened; data chunks are verified on first touch (EnsureVerified) so that a
// flipped byte is reported with file name and offset and never read.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bloom.h"
#include "common.h"

namespace gt {

struct SegMeta {
  uint64_t id = 0;
  uint32_t level = 0;
  uint32_t dir = 0;
  uint64_t min_src = 0, max_src = 0, max_dst = 0;
  uint64_t nverts = 0, nentries = 0, bytes = 0;
  uint64_t min_seq = 0, max_seq = 0;
};

constexpr uint32_t kFlagDense = 1u << 0;
constexpr uint32_t kFlagVers = 1u << 1;
constexpr uint32_t kFlagWeights = 1u << 2;
constexpr uint32_t kFlagDst32 = 1u << 3;
constexpr uint32_t kFlagMultiVersion = 1u << 4;
constexpr uint32_t kFlagTombstones = 1u << 5;
constexpr uint32_t kFlagTypes = 1u << 6;
constexpr uint32_t kFlagTimes = 1u << 7;
constexpr uint32_t kFlagBloom = 1u << 8;
constexpr uint32_t kFlagHistory = 1u << 9;   // written keeping history above history_floor
constexpr uint32_t kFlagCounts = 1u << 10;   // count and first columns (format 4)
constexpr uint32_t kFlagPayload = 1u << 11;  // payload column (format 4)
// Format 5: the narrow columns' widths (see the layout above).
constexpr uint32_t kVersWidthShift = 12;            // 3 bits: vers width - 1
constexpr uint32_t kCountWidthShift = 15;           // 3 bits: count width - 1
constexpr uint32_t kFirstWidthShift = 18;           // 4 bits: first width, 0..8
constexpr uint32_t kPayWidthShift = 22;             // 3 bits: payload offset width - 1
constexpr uint32_t kFlagWidthBits = 0x1FFFu << 12;  // bits 12-24
constexpr uint32_t kFlagUnused = ~0u << 25;         // in formats 1-5
// Format 6: the narrow time column's width (see the layout above); bits
// 28 and up are 0.
constexpr uint32_t kTimeWidthShift = 25;  // 3 bits: width - 1
constexpr uint32_t kFlagUnused6 = ~0u << 28;
constexpr uint64_t kPosHeaderBytes = 40;

// The bytes an unsigned value takes, 1..8 (1 for 0).
inline uint32_t BytesFor(uint64_t max) {
  uint32_t w = 1;
  while (w < 8 && (max >> (8 * w)) != 0) w++;
  return w;
}

// A fixed-width column of unsigned values, w bytes each (0: absent, every
// value 0), read with one unaligned 8-byte load masked to w bytes.
// INVARIANT: at least 7 bytes of the mapping follow the column (the
// footer does), so the load stays within the file.
struct PackedColumn {
  static constexpr uint8_t kZeros[8] = {0};
  const uint8_t *p = kZeros;  // absent: i * 0 reads the zeros, masked to 0
  uint32_t w = 0;
  uint64_t mask = 0;
  void Set(const uint8_t *base, uint32_t width) {
    p = base;
    w = width;
    mask = width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1;
  }
  bool present() const { return w != 0; }
  uint64_t at(uint64_t i) const {
    uint64_t v;
    __builtin_memcpy(&v, p + i * w, 8);
    return v & mask;
  }
};

std::string SegmentFileName(uint64_t id);

// Writes a segment file's body with its chunk checksums (segment.cc).
class ChunkedWriter;

// Accumulates vertices in increasing src order and writes one file.
// Memory: holds the whole segment in the columns it will write, each kept
// only once it is needed (dst as u32 until an id needs 64 bits, versions
// only once one is not 0, weights only once one is not 1), so its memory is
// about the file size; callers cut segments at a target size.
class SegmentBuilder {
 public:
  // Appends src's versions, already sorted by (dst asc, type desc, seq desc).
  // INVARIANT: src strictly greater than the previous call's src.
  void AddVertex(uint64_t src, const Entry *e, size_t n);
  size_t entries() const { return n_; }
  size_t vertices() const { return srcs_.size(); }
  // Approximate bytes the file will take.
  uint64_t EstimatedBytes() const;
  bool empty() const { return srcs_.empty(); }
  // Sizes the columns for about this many vertices and entries up front,
  // so that they do not double past what the file needs.
  void Reserve(uint64_t nverts, uint64_t nentries);
  // Builds in *in (reset first) the same versions with src and dst
  // exchanged: (d, s, vers, weight) for each (s, d, vers, weight) here,
  // each vertex's in run order (src asc, seq desc), since a stable sort by
  // dst keeps this builder's (src, dst, seq desc) order. A flush's in-edge
  // file, from its out-edge one (GraphOne derives both directions from one
  // edge log). O(n) plus the id span of the dsts when they are dense (a
  // counting sort, as ids from 0 or from GT_HIGH_ID_BASE are), else
  // O(n log n); it writes *in's columns directly, with 4 bytes per entry
  // and 4 per id of the span besides the two builders.
  void Transpose(SegmentBuilder *in) const;
  // Testing only: write format version 2 (no edge filter), 3 (no
  // operands or payloads), 4 (8-byte vers, count, first and payload
  // offset columns) or 5 (no source positions), as an older build did; 0
  // is the current format.
  // Finish refuses a version an older format cannot hold.
  void set_format(uint32_t v) { format_ = v; }
  // Testing only: a format-5 file's narrow columns take at least w bytes
  // an entry (1..8; and the first column is written even when every
  // operand's first time is its time), so a test reaches every width
  // without values that need it.
  void set_min_width(uint32_t w) { min_width_ = w; }
  // Whether an out-edge file gets an edge filter (the default; an in-edge
  // file never has one, and its builder should say so for
  // EstimatedBytes). Compaction leaves it out of files written to the
  // bottommost level (RocksDB's
  // optimize_filters_for_hits): a lookup that reaches that level searches
  // the one segment holding src there anyway, and it holds most of the
  // edges, so the filters' bytes go where they skip files.
  void set_edge_filter(bool on) { edge_filter_ = on; }
  // Written keeping history (RetainParams): every version above floor is
  // in the file. Without it a file may have dropped any version a
  // snapshot below its max_seq reads.
  void set_history(bool on, uint64_t floor) {
    history_ = on;
    history_floor_ = floor;
  }
  // Writes, fsyncs and closes dir/SegmentFileName(id). Fills *meta.
  Status Finish(const std::string &dir, uint64_t id, uint32_t level, uint32_t edge_dir, SegMeta *meta);
  void Reset();

 private:
  // Appends x to col, a column kept only once some value is not dflt
  // (*kept): the first such value fills dflt in for the n entries before
  // it, in room for at least room entries (or what Reserve asked).
  template <typename T>
  void AddKept(std::vector<T> *col, bool *kept, T x, T dflt, uint64_t n, uint64_t room);
  // Appends a version's extras (null: none) to the count, first,
  // payload and source position columns, each kept once some version
  // needs it.
  void AddExt(const ExtRec *x, int64_t time, uint64_t room);
  // The source position section of these entries: its header values and
  // columns' widths (segment.h layout), and each version's values.
  struct PosLayout {
    uint32_t min_source = 0, max_source = 0;
    uint64_t min_position = 0, radix = 0;
    uint32_t ws = 0, wp = 0;
    int64_t min_time = 0;  // the least nonzero time (the time column's base)
    uint32_t wt = 8;       // the time column's width
  };
  PosLayout PositionLayout() const;
  // The narrow columns' widths a format-5 file of these entries takes:
  // vers, count, first (0: none), payload offset.
  void NarrowWidths(uint32_t *wv, uint32_t *wc, uint32_t *wf, uint32_t *wp) const;

  // Transpose's phases. InOrder: each entry's position in the
  // in-direction's columns, in (dst, entry) order, so stable, with in's
  // vertices and where each ends. ScatterColumns and ScatterPayloads: the
  // entries' columns at those positions. CopySummary: what the file
  // records about them.
  std::vector<uint32_t> InOrder(SegmentBuilder *in) const;
  void ScatterColumns(const std::vector<uint32_t> &where, SegmentBuilder *in) const;
  void ScatterPayloads(const std::vector<uint32_t> &where, SegmentBuilder *in) const;
  void CopySummary(SegmentBuilder *in) const;

  // What Finish writes besides the entries: the format version and flags,
  // the vertex table's length (dense_len: that of a dense one), the narrow
  // columns' widths (8 bytes before format 5), the source position
  // section's layout and the edge filter.
  struct FileLayout {
    uint32_t version = 0, flags = 0;
    uint64_t dense_len = 0, table_len = 0;
    uint32_t wv = 8, wc = 8, wf = 8, wp = 8;
    PosLayout pl;
    std::vector<uint32_t> bloom;
    uint64_t bloom_blocks = 0;
  };
  // Finish's phases, in this order: whether the format asked for holds
  // these entries; the file's layout; its header; then its body: the
  // vertex table with the dst column, the other entry columns, the source
  // position section (the payload column and the edge filter follow).
  Status CheckFormat() const;
  FileLayout Layout(uint32_t edge_dir) const;
  // The edge filter over the distinct (src, dst) pairs; *blocks its size.
  std::vector<uint32_t> EdgeFilter(uint64_t *blocks) const;
  void EncodeHeader(const FileLayout &l, uint64_t id, uint32_t level, uint32_t edge_dir, uint8_t *hdr) const;
  Status WriteTable(const FileLayout &l, ChunkedWriter *w) const;
  Status WriteColumns(const FileLayout &l, ChunkedWriter *w) const;
  Status WritePositions(const FileLayout &l, ChunkedWriter *w) const;

  std::vector<uint64_t> srcs_, offs_;
  std::vector<uint32_t> d32_;       // while every dst < 2^32
  std::vector<uint64_t> d64_;       // once one is not
  std::vector<uint64_t> vers_;      // kept once has_vers_ (some seq or tombstone bit not 0); no type bits
  std::vector<double> w_;           // kept once has_w_ (some weight not 1)
  std::vector<uint16_t> types_;     // kept once has_types_ (some type not 0)
  std::vector<int64_t> times_;      // kept once has_times_ (some time not 0)
  std::vector<uint64_t> counts_;    // kept once has_counts_ (some version is an operand)
  std::vector<int64_t> firsts_;     // with counts_
  std::vector<uint64_t> pay_offs_;  // kept once has_pay_ (some payload): n_ + 1 offsets
  std::vector<uint8_t> pay_bytes_;
  std::vector<uint32_t> pos_src_;  // kept once has_pos_ (some version has a source position)
  std::vector<uint64_t> pos_off_;  // with pos_src_
  uint64_t n_ = 0, reserve_entries_ = 0;
  bool multi_ = false, tomb_ = false, has_vers_ = false, has_w_ = false, has_types_ = false, has_times_ = false;
  bool has_counts_ = false, has_pay_ = false, has_pos_ = false;
  // Over the versions with a source position: the least and largest
  // source and position; pos_none_: some version has none.
  uint32_t pos_min_src_ = UINT32_MAX, pos_max_src_ = 0;
  uint64_t pos_min_ = UINT64_MAX, pos_max_ = 0;
  bool pos_none_ = false;
  int64_t min_time_ = INT64_MAX, max_time_ = 0;  // over the nonzero times
  uint64_t max_dst_ = 0, min_seq_ = UINT64_MAX, max_seq_ = 0;
  uint64_t max_count_ = 0, max_first_delta_ = 0;  // over the operands: count, time - first (mod 2^64)
  uint32_t min_type_ = UINT32_MAX, max_type_ = 0;
  uint32_t format_ = 0;  // 0: the current one
  uint32_t min_width_ = 0;
  bool edge_filter_ = true;
  bool history_ = false;
  uint64_t history_floor_ = 0;
};

// A read-only, memory-mapped segment. Shared by Versions via shared_ptr;
// the file is unlinked when the last reference drops after MarkObsolete.
class Segment {
 public:
  static Status Open(const std::string &dir, uint64_t id, std::shared_ptr<Segment> *out);
  ~Segment();
  Segment(const Segment &) = delete;
  Segment &operator=(const Segment &) = delete;

  const SegMeta &meta() const { return meta_; }
  const std::string &path() const { return path_; }
  uint32_t flags() const { return flags_; }
  // True when every entry is visible at snapshot tau, live and alone for
  // its (src, dst): such a file's runs can be copied out as they are.
  bool AllVisibleAt(uint64_t tau) const {
    return meta_.max_seq <= tau && !(flags_ & (kFlagTombstones | kFlagMultiVersion));
  }

  // Vertex deletes of seq <= vdel_floor() hide nothing here: every version
  // is at least min_seq, and the writer dropped what deletes up to its
  // clean seq hide (VdelCleanSeq, merge.h). Set once, before the segment
  // is shared.
  uint64_t vdel_floor() const { return meta_.min_seq > vdel_clean_ ? meta_.min_seq : vdel_clean_; }
  void set_vdel_clean(uint64_t seq) { vdel_clean_ = seq; }

  // False only when no version of an edge from src to dst is here (the
  // edge filter says so); always true for a file without one.
  bool MayHold(uint64_t src, uint64_t dst) const {
    return bloom_ == nullptr || BloomMayHold(bloom_, bloom_blocks_, src, dst);
  }

  // Written keeping history (kFlagHistory): every version above
  // history_floor() is in it. A file written keeping none may have dropped
  // any version below the durable seq of its writing (the store's open
  // takes its durable seq as the floor then).
  bool keeps_history() const { return (flags_ & kFlagHistory) != 0; }
  uint64_t history_floor() const { return history_floor_; }

  // Prefetches what MayHold(src, dst) and Find(src) read first (the
  // filter's block; a dense table's entry of src), so that a batch of
  // lookups overlaps their cache misses (SnapshotReader::EdgeCounts).
  void PrefetchLookup(uint64_t src, uint64_t dst) const {
    if (bloom_ != nullptr) __builtin_prefetch(bloom_ + BloomBlock(BloomHash(src, dst), bloom_blocks_));
    if ((flags_ & kFlagDense) && src >= meta_.min_src && src <= meta_.max_src)
      __builtin_prefetch(offs_ + (src - meta_.min_src));
  }

  // Edge index range of v; false if v has no edges here.
  bool Find(uint64_t v, uint64_t *b, uint64_t *e) const;
  // First vertex >= v present in this file, or false.
  bool NextVertex(uint64_t v, uint64_t *out) const;
  // The vertex table read in order, without a search (compaction reads
  // every input front to back): positions [0, positions()), each a vertex
  // and its edge index range, empty for a dense table's absent ids.
  uint64_t positions() const { return (flags_ & kFlagDense) ? table_len_ - 1 : meta_.nverts; }
  void AtPosition(uint64_t i, uint64_t *v, uint64_t *b, uint64_t *e) const {
    *v = (flags_ & kFlagDense) ? meta_.min_src + i : srcs_[i];
    *b = offs_[i];
    *e = offs_[i + 1];
  }

  uint64_t dst(uint64_t i) const { return dst32_ ? dst32_[i] : dst64_[i]; }
  // The version word as in memory: the type column's type in the top bits.
  uint64_t vers(uint64_t i) const { return vers_.at(i) | (types_ ? uint64_t{types_[i]} << kTypeShift : 0); }
  uint32_t type(uint64_t i) const { return types_ ? types_[i] : 0; }
  // Format 6 keeps a time as time - min_time + 1 (0: none) in tcol_'s
  // width; older formats as it is (tbase_ 0, width 8).
  int64_t time(uint64_t i) const {
    const uint64_t v = tcol_.at(i);
    return static_cast<int64_t>(v + (v != 0 ? tbase_ : 0));
  }
  double weight(uint64_t i) const { return w_ ? w_[i] : 1.0; }
  bool has_weights() const { return w_ != nullptr; }
  // An event operand's count (0: a replace version) and first event time
  // (0 for a version that is no operand).
  uint64_t count(uint64_t i) const { return counts_.at(i); }
  int64_t first(uint64_t i) const {
    if (!first_delta_) return static_cast<int64_t>(firsts_.at(i));  // format 4 (or no operands): as stored
    if (counts_.at(i) == 0) return 0;
    return static_cast<int64_t>(static_cast<uint64_t>(time(i)) - firsts_.at(i));
  }
  // Version i's payload: its length, and *p (valid while the segment is).
  uint32_t payload(uint64_t i, const uint8_t **p) const {
    if (pay_data_ == nullptr) {
      *p = nullptr;
      return 0;
    }
    const uint64_t b = pay_offs_.at(i);
    *p = pay_data_ + b;
    return static_cast<uint32_t>(pay_offs_.at(i + 1) - b);
  }
  // Version i's source position (source 0: none; format 6).
  EventPos pos(uint64_t i) const {
    if (!has_pos_) return EventPos{};
    const uint64_t p = pos_off_.at(i);
    EventPos e;
    if (pos_radix_ != 0) {
      e.source = pos_min_src_ + static_cast<uint32_t>(p / pos_radix_);
      e.position = pos_min_ + p % pos_radix_;
    } else {
      e.source = pos_min_src_ + static_cast<uint32_t>(pos_src_.at(i));
      e.position = pos_min_ + p;
    }
    if (e.source == 0) return EventPos{};
    return e;
  }
  // The largest source a version names (0: none), and the file offset of
  // the source position section (0: none).
  uint32_t max_source() const { return pos_max_src_; }
  uint64_t positions_offset() const { return has_pos_ ? pos_hdr_off_ : 0; }
  uint32_t source_width() const { return pos_src_.w; }
  uint32_t position_width() const { return pos_off_.w; }
  // Some version has extras (a count, a payload or a source position):
  // reads of the file must look at them.
  bool has_ext() const { return counts_.present() || pay_data_ != nullptr || has_pos_; }
  // The bytes an entry of each narrow column takes (0: no such column):
  // vers, count, first, payload offset.
  uint32_t vers_width() const { return vers_.w; }
  uint32_t count_width() const { return counts_.w; }
  uint32_t first_width() const { return firsts_.w; }
  uint32_t payload_offset_width() const { return pay_offs_.w; }
  // The smallest and largest edge type here (0 and 0 without a type column).
  uint32_t min_type() const { return min_type_; }
  uint32_t max_type() const { return max_type_; }
  // Every edge here has a type ts holds (null: every type), so a filtered
  // read can copy runs out whole.
  bool AllTypesIn(const TypeSet *ts) const { return ts == nullptr || ts->HasAll(min_type_, max_type_); }
  // Copies dsts [b,e) widened to u64.
  void CopyDsts(uint64_t b, uint64_t e, uint64_t *out) const;
  void CopyWeights(uint64_t b, uint64_t e, double *out) const;
  void CopyTypes(uint64_t b, uint64_t e, uint16_t *out) const;
  void CopyTimes(uint64_t b, uint64_t e, int64_t *out) const;

  // Appends the vertices of [lo, hi) present here, with all their entries,
  // to a scan's output: vids[*nv..], offs[*nv+1..] (offsets continue from
  // *ne), dsts/w/t/tm[*ne..] (w, t and tm may be null). Requires a clean-enough file (the caller checks
  // that every entry is visible and unique per dst). Stops before a vertex
  // that does not fit in vcap/ecap and sets *next to it (else to hi);
  // *need is that vertex's edge count when it alone exceeds ecap.
  Status AppendRange(uint64_t lo, uint64_t hi, uint64_t *vids, uint64_t *offs, size_t vcap, uint64_t *dsts, double *w,
                     uint16_t *t, int64_t *tm, size_t ecap, size_t *nv, size_t *ne, uint64_t *next,
                     uint64_t *need) const;

  // Verifies the checksums of the chunks holding entries [b,e).
  Status EnsureVerified(uint64_t b, uint64_t e) const;
  Status VerifyAll() const;
  // Verifies every chunk and appends one problem per damaged chunk.
  void VerifyEach(std::vector<Problem> *problems) const;

  void MarkObsolete() { obsolete_.store(true); }
  // Drops this mapping's pages of entries [0, upto) from the resident set
  // (they stay in the page cache and fault back in if read again). Used by
  // compaction, which reads its inputs once, front to back.
  void ReleasePages(uint64_t upto) const;

 private:
  Segment() = default;
  Status VerifyBytes(uint64_t from, uint64_t to) const;
  Status VerifyChunk(uint64_t c) const;

  // The narrow columns' widths in bytes, from the header's flags (8 before
  // format 5; the time column's before format 6) and the source position
  // section's header (0: no such column).
  struct ColumnWidths {
    uint32_t vers = 8, count = 8, first = 8, pay = 8, time = 8;
    uint32_t pos_src = 0, pos_off = 0;
  };
  // Where the vertex table, the edge filter and the payload bytes are.
  struct Sections {
    uint64_t table_off = 0, table_bytes = 0, bloom_off = 0, pay_len = 0;
  };
  // Open's phases, in this order; each fails with the damage it finds in
  // what it reads. Map: opens and maps path_.
  Status Map();
  // The header: its checksum, format version, flags (CheckFlags), the
  // columns' widths (ReadWidths), type range and meta_.
  Status ReadHeader(uint64_t id, ColumnWidths *w);
  Status CheckFlags(uint32_t version);
  Status ReadWidths(uint32_t version, ColumnWidths *w);
  // The footer: the body's size and the chunk checksum table.
  Status ReadFooter();
  // The sections' offsets, which must add up to the body: the columns,
  // the source position section (LayOutPositions, whose header gives its
  // columns' widths) and the payload and edge filter (LayOutTail).
  Status LayOut(ColumnWidths *w, Sections *sec);
  Status LayOutPositions(ColumnWidths *w, uint64_t *off);
  Status LayOutTail(const ColumnWidths &w, uint64_t off, Sections *sec);
  // The vertex table (verified, monotone, spanning the entries) and the
  // edge filter; then the entry columns.
  Status BindTable(const Sections &sec);
  void BindColumns(const ColumnWidths &w);
  // Format 6: the source position section's header values and columns.
  Status ReadPositions(const ColumnWidths &w);
  // The payload offsets: verified, from 0, monotone, within the bytes.
  Status CheckPayloadOffsets(uint32_t wp, uint64_t pay_len);

  std::string path_;
  SegMeta meta_;
  uint64_t vdel_clean_ = 0;
  uint32_t flags_ = 0;
  const uint8_t *base_ = nullptr;
  size_t size_ = 0;
  uint64_t table_len_ = 0;
  const uint64_t *srcs_ = nullptr;  // sparse only
  const uint64_t *offs_ = nullptr;
  const uint32_t *dst32_ = nullptr;
  const uint64_t *dst64_ = nullptr;
  PackedColumn vers_;
  const double *w_ = nullptr;
  const uint16_t *types_ = nullptr;
  PackedColumn tcol_;   // the time column (absent: every time 0)
  uint64_t tbase_ = 0;  // format 6: min_time - 1 (mod 2^64); else 0
  PackedColumn counts_;
  PackedColumn firsts_;
  bool first_delta_ = false;  // format 5: firsts_ holds time - first
  PackedColumn pay_offs_;     // verified at open: monotone, within the column
  const uint8_t *pay_data_ = nullptr;
  bool has_pos_ = false;  // format 6: the source position section
  uint32_t pos_min_src_ = 0, pos_max_src_ = 0;
  uint64_t pos_min_ = 0, pos_radix_ = 0;
  PackedColumn pos_src_, pos_off_;
  uint64_t pos_hdr_off_ = 0, pos_src_off_ = 0, pos_off_off_ = 0;
  const uint32_t *bloom_ = nullptr;  // verified at open
  uint64_t bloom_blocks_ = 0;
  uint64_t history_floor_ = 0;  // with kFlagHistory
  uint32_t min_type_ = 0, max_type_ = 0;
  uint64_t dst_off_ = 0, vers_off_ = 0, w_off_ = 0, types_off_ = 0, times_off_ = 0;
  uint64_t counts_off_ = 0, firsts_off_ = 0, pay_offs_off_ = 0, pay_data_off_ = 0;
  uint64_t chunk_size_ = 0, nchunks_ = 0, body_end_ = 0;
  const uint32_t *crcs_ = nullptr;
  // One bit per chunk: set once its crc matched. Relaxed races only cause
  // a chunk to be verified twice.
  std::unique_ptr<std::atomic<uint64_t>[]> verified_;
  std::atomic<bool> obsolete_{false};
};

}  // namespace gt
