// memgraph.h -- the in-memory write buffer (LSMGraph's MemGraph).
//
// A hash map gives each source vertex a slot; a slot keeps the vertex's
// out-versions in arrival order. Low-degree vertices (the vast
// majority, LSMGraph Table 2) keep up to kInline versions inside the slot
// itself, which lives in a shared chunk of slots, so they cost no
// allocation at all; a vertex that outgrows that goes on in blocks carved
// from an arena, each an eighth as large as all before it (NextBlock),
// chained: a vertex with n versions has O(log n) contiguous blocks, and no
// version is ever copied (a hub's millionth version costs what its second
// did). A write is one hash probe and one append; versions are sorted when
// they are flushed or read.
//
// Hubs (issue 43): a vertex with many versions (a hub) keeps them also
// in a few sorted runs, its view: runs that together cover its first
// `covered` versions (in arrival order), newest first, each sorted into
// run order. A reader merges the view's runs with the versions past it
// (the remainder, sorted on their own), so a read never sorts more than
// the remainder. The writer keeps the view of every slot of at least
// 2*sort_min versions (sort_min: 64*hub_min) up to date as it appends: as
// soon as the remainder reaches sort_min versions it sorts it into a new
// run and merges runs as in an LSM (the newest run into the next while it
// is at least an eighth of it: a hub of n versions has at most
// log8(n/sort_min)+2 runs (and kMaxRuns), each more than 8 times as large
// as the next newer one, and a version is copied about 10 times at 2^20
// versions, by a merge that copies stretches of the larger run whole;
// this moves to Apply what the first read, or the flush, paid before: a
// sort of every version). So a hub's first read after any burst sorts at
// most sort_min versions (a fixed cost: about a millisecond) instead of
// the burst. Below that, readers publish a view of a vertex of at least
// hub_min versions as before (one run: the sorted copy a read made), which
// later readers take while the remainder is at most an eighth of it.
// Runs and views are reference counted: a reader takes the view (an
// atomic load of a shared_ptr) and holds it in its ReadBuf as long as it
// uses the runs (AddRuns); a replaced view is freed by its last holder.
// Their bytes count in bytes() (cache_bytes()) while they live: a
// MemGraph of hubs is full sooner (32 bytes a version of a plain run).
// A run of versions without extras is of PlainEntry (32 bytes a version,
// not an Entry's 40); a large one (kCacheMapBytes or more) is a mapping of
// its own, asked for huge pages.
//
// In-edges (issue 12; GraphOne derives both directions from one edge log):
// Apply writes the out-direction only, so an edge costs one version and
// one probe whether or not the store keeps in-edges. A flush builds the
// in-edge file from the sorted out-edges (SegmentBuilder::Transpose). A
// reader of in-edges reads the in-index: sorted runs of (dst, src,
// version), built from the slots lazily, by the first reader that needs
// batches the index does not cover yet, from the slots those batches
// touched (each shard lists them: the touched list, 4 bytes per vertex
// and batch, kept only with in-edges). The runs are merged as in an LSM
// (a run is merged into the next while it is at least half its size), so
// a version is copied O(log n) times and a read binary-searches O(log n)
// runs. The index is immutable once published (an atomic shared_ptr);
// readers that build it serialize on in_mu_, which the writer never
// takes. Its memory counts in bytes(), as the hub caches do: a MemGraph
// whose in-edges are read is full sooner. One that no one reads in-edges
// from never builds it.
//
// Apply (issue 12): the vertices are split by a hash into kShards shards,
// each with its own table, slots and arena, so that the shards are written
// by different threads with no lock and no shared cache line but the
// presence bits. The caller partitions the batch's ops by shard (one pass,
// over ops Store::Apply has just validated); each shard's ops are grouped
// by vertex (a stable counting sort: a vertex's ops keep their order, as
// later ops win), and then each vertex's slot is touched once per batch:
// one probe, its new versions appended, one publication of its count. The
// caller applies shard 0 and the MemGraph's helper thread shard 1, joined
// before Apply returns (small batches are applied on the caller alone; see
// parallel_min):
//
//   caller:  partition -> post -> group (shard 0) -> apply (shard 0) -> join
//   helper:                       group (shard 1) -> apply (shard 1) ---/
//
// Memory: tables, slot chunks, touched lists and arena blocks are mappings
// taken from the store's MappingPool (common.h) when it has one of the
// size, and given back to it when the MemGraph dies, so that a store's
// MemGraphs after its first write into pages that are already resident
// (a fresh page's fault and zeroing were a sixth of Apply's CPU time). A
// pooled mapping holds its last owner's bytes: a table is zeroed before
// use; everything else is built in place before it is published, as on
// fresh memory. bytes() counts a pooled mapping's pages as far as its last
// owner touched them.
//
// Concurrency: one writer (Apply, Freeze; serialized by Store::write_mu_)
// and any number of readers (Collect, AddRuns, VerticesFrom, vertices),
// which take no lock at all (but in_mu_ to build the in-index), as
// LSMGraph's MemGraph readers (section 4.3): a reader filters versions by
// its snapshot's seq, so what the writer appends meanwhile is invisible to
// it, and the writer never waits for a reader. What makes that safe:
//   - Nothing a reader can reach is ever moved or freed while the MemGraph
//     lives, but a hub's runs, which live while a view holds them (and a
//     reader holds the view it took). Slots
//     live in chunks that never move (SlotChunks); a slot's versions are
//     appended in place, in blocks that never move; the hash table grows
//     into a new one twice as large, into which the writer moves the old
//     one's cells a few per write (incremental rehash: no write pays for
//     the whole table), and the old tables stay mapped (counted in bytes():
//     at most as much again as the current one); the presence bitmaps are
//     mapped at their full size up front (pages are only touched where bits
//     are set).
//   - Everything is published with release stores and read with acquire
//     loads, in this order: a slot is built before its index enters the
//     table and before vertices() counts it; a block is linked before
//     versions are written to it, and a version is written before the
//     slot's count covers it. So a reader sees a prefix of each slot's
//     versions, in arrival order, and every batch with seq <= its
//     snapshot's (published by the store's release of last_seq_ after
//     Apply returned) entirely.
//   - A hub's view is built (by the writer, or a reader) from versions
//     published before, completely, before it is published (an atomic
//     compare-and-swap of the shared_ptr in the slot's HubBox, whose
//     pointer is published once, release) and read with atomic loads; it
//     only ever covers published versions, so a reader may take a view
//     covering more versions than its own load of the slot's count (newer
//     versions are allowed: readers filter by seq). The writer and readers
//     publish views among themselves lock-free: a publisher that lost the
//     race drops its view.
//   - The writer's helper thread only runs inside Apply, on shards the
//     caller does not touch (see Apply), and is joined before Apply returns;
//     so everything it wrote happens before the store publishes the
//     batch's seq, as if the caller had written it.
// INVARIANT: a reader keeps no pointer into MemGraph memory past one call,
// except into a hub's runs (AddRuns), which its ReadBuf holds: Collect and
// VerticesFrom copy out.
//
// Lifecycle:  active --(full)--> frozen (imm) --(flushed to L0)--> released
// INVARIANT: a frozen MemGraph is never written again.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.h"
#include "graphtide.h"
#include "merge.h"

namespace gt {

// The multiplier of the vertex hash: the top bit picks a vertex's shard, the
// bits from 20 up its cell in the shard's table.
constexpr uint64_t kVertexHashMul = 0x9E3779B97F4A7C15ull;

// A thread that runs one task at a time for its owner, started on first use
// and joined by Stop or the destructor. Owned by one writer thread: Run and
// Wait are never called concurrently.
class HelperThread {
 public:
  class Task {
   public:
    virtual void Run() = 0;

   protected:
    ~Task() = default;
  };
  HelperThread() = default;
  ~HelperThread() { Stop(); }
  HelperThread(const HelperThread &) = delete;
  HelperThread &operator=(const HelperThread &) = delete;
  // Starts t on the thread (t must live until Wait returns). Returns false,
  // having run nothing, if no thread could be started: the caller runs t.
  bool Post(Task *t);
  // Blocks until the posted task has run; rethrows what it threw.
  void Wait();
  // Joins the thread (a later Post starts a new one).
  void Stop();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  Task *task_ = nullptr;      // posted, not yet done; under mu_
  bool stop_ = false;         // under mu_
  std::exception_ptr error_;  // what the last task threw; under mu_
  std::thread thread_;        // owner only
};

class MemGraph {
 public:
  // hub_min: the number of versions from which a vertex's sorted versions
  // are kept by reads; 0 chooses limit_bytes/8192 within [8, 256] (tests
  // choose small values to exercise the cached path). The writer keeps
  // the sorted runs of a vertex from 2*sort_min() versions up, sort_min()
  // being 64*hub_min (see the top of this file). parallel_min: the
  // fewest ops of a batch that Apply splits between the caller and the
  // helper thread; 0 chooses limit_bytes/64Ki within [1, 1024] (a small
  // MemGraph, as in tests, splits every batch).
  // pool (may be null): where its memory comes from first, and goes to
  // when it dies (see MappingPool).
  // Every MemGraph but a cells one (cells true) holds a cells MemGraph
  // of its own for the vertex records' cells (kVtx): see cells().
  MemGraph(bool in_edges, uint64_t limit_bytes, uint32_t hub_min = 0, uint32_t parallel_min = 0,
           std::shared_ptr<MappingPool> pool = nullptr, bool cells = false);
  ~MemGraph();
  MemGraph(const MemGraph &) = delete;
  MemGraph &operator=(const MemGraph &) = delete;

  // Appends the batch with sequence number seq, above every earlier
  // batch's (the in-index covers batches by seq; a batch that threw may be
  // applied again with its seq). skip (may be empty) marks ops superseded
  // by a later vertex delete of the same batch.
  // Writer only (Store::write_mu_); runs beside readers, never waits for them.
  // Uses the helper thread for a batch of parallel_min ops or more, and
  // joins it before returning (also when it throws std::bad_alloc).
  // Returns the CPU time the helper thread spent on the batch (0 if it
  // took no part), in nanoseconds: the caller's own it can measure.
  // payload[0, payload_len): the batch's payload buffer, which an op's
  // payload slice points into (checked by Store::Apply); an op's payload
  // and an operand's count and first time go to an ExtRec in the shard's
  // arena (counted in bytes()).
  uint64_t Apply(const gt_op *ops, size_t n, uint64_t seq, const std::vector<uint8_t> &skip, const uint8_t *srcpos,
                 size_t srcpos_len, const uint8_t *payload = nullptr, size_t payload_len = 0);
  // Writer only. After it, nothing writes this MemGraph again (and its
  // helper thread is joined).
  void Freeze(uint64_t freeze_seq);
  // The MemGraph of the vertex records' cells (null in a cells MemGraph
  // itself): a cell op is an edge op there (dst: GT_CELL_BASE + index),
  // applied by the writer with the batch's seq before the batch's edge ops
  // here (Store::Apply), frozen with this one, and flushed to a file of
  // direction kVtx. The reads below given kVtx read it as out-edges. It
  // keeps no in-edges, never uses a helper thread, and its memory counts in
  // bytes().
  MemGraph *cells() { return cells_.get(); }
  const MemGraph *cells() const { return cells_.get(); }
  // Raises the per-band vertex bounds of what this MemGraph holds (one past
  // the largest id below GT_HIGH_ID_BASE, and at or above it). Writers only.
  void RaiseBounds(uint64_t low, uint64_t high) {
    if (low > low_bound_.load(std::memory_order_relaxed)) low_bound_.store(low, std::memory_order_relaxed);
    if (high > high_bound_.load(std::memory_order_relaxed)) high_bound_.store(high, std::memory_order_relaxed);
  }
  uint64_t low_bound() const { return low_bound_.load(std::memory_order_relaxed); }
  uint64_t high_bound() const { return high_bound_.load(std::memory_order_relaxed); }

  bool full() const { return bytes() >= limit_; }
  // No batch applied yet (a batch with no ops still counts: it carries a
  // sequence number and maybe a source position that a flush must record).
  bool empty() const { return batches_.load(std::memory_order_relaxed) == 0; }
  // Sequence number of the first batch applied (0 while empty). A reader
  // whose snapshot tau is below it finds nothing here and may skip it:
  // every batch with seq <= tau was applied before tau was published.
  uint64_t first_seq() const { return first_seq_.load(std::memory_order_relaxed); }
  // Everything held, hub runs and the in-index included (any thread).
  uint64_t bytes() const {
    return bytes_.load(std::memory_order_relaxed) + cache_bytes() + in_bytes_.load(std::memory_order_relaxed) +
           (cells_ != nullptr ? cells_->bytes() : 0);
  }
  // Of bytes(), what the hubs' runs and views take (any thread).
  uint64_t cache_bytes() const {
    return cache_bytes_.load(std::memory_order_relaxed) + run_bytes_->load(std::memory_order_relaxed);
  }
  // The remainder from which the writer sorts a hub's versions into a run.
  uint32_t sort_min() const { return sort_min_; }
  // Work counters (any thread, relaxed): versions the readers sorted,
  // scanned or copied to serve AddRuns, AddEdgeRuns and Collect (the
  // remainders they sorted or scanned, and what they copied out: Collect
  // copies every version), and versions the writer sorted or copied into
  // hubs' runs.
  uint64_t read_work() const { return read_work_.load(std::memory_order_relaxed); }
  uint64_t writer_work() const { return writer_work_.load(std::memory_order_relaxed); }
  // Of bytes(), what the in-index takes (any thread).
  uint64_t in_index_bytes() const { return in_bytes_.load(std::memory_order_relaxed); }
  // Versions buffered: one per edge op (the in-direction is derived).
  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  bool has_in_edges() const { return in_edges_; }
  // Vertices with out-versions (any thread; a reader may count vertices
  // of batches newer than its snapshot). For kIn, of a MemGraph that keeps
  // in-edges, the same count: it is not 0 exactly when some in-version
  // exists (every edge op makes one of each).
  size_t vertices(int dir) const {
    if (dir == kVtx) return cells_ != nullptr ? cells_->vertices(kOut) : 0;
    if (dir == kIn && !in_edges_) return 0;
    size_t n = 0;
    for (const Shard &sh : out_.shards) n += sh.nslots.load(std::memory_order_acquire);
    return n;
  }

  // Valid after Freeze.
  uint64_t freeze_seq() const { return freeze_seq_; }
  const std::vector<std::pair<uint64_t, uint64_t>> &vdels() const { return vdels_; }
  bool has_srcpos() const { return has_srcpos_; }
  const std::string &srcpos() const { return srcpos_; }

  // Any thread, no lock. Appends v's versions sorted into run order:
  // (dst asc, type desc, seq desc), and among equal seqs the later op first. Versions
  // newer than the caller's snapshot may be among them (filter by seq).
  // For a hub, O(d) with a cache that covers all but a few of them, and it
  // may publish a new cache (see the top of this file). In-edges: every
  // batch applied so far, from the in-index (built up to them first).
  void Collect(int dir, uint64_t v, std::vector<Entry> *out) const;
  // The most runs a hub's view holds: the LSM rule keeps them to about
  // log8(n/sort_min)+1, which is 4 for 2^21 versions at the default
  // sort_min; past that, runs are merged whatever their sizes.
  static constexpr size_t kMaxRuns = 8;
  // What a reader of AddRuns and AddEdgeRuns gives them to hold what its
  // runs point into: its copies (ents), and the hub view whose runs it
  // uses (hold), which lives while the ReadBuf holds it. Both are replaced
  // by the next call given this ReadBuf.
  struct ReadBuf {
    std::vector<Entry> ents;
    std::shared_ptr<const void> hold;
  };
  // Any thread, no lock. Appends v's versions to runs as sorted runs, the
  // newer first (so MergeRuns visits them in Collect's order), and returns
  // how many versions they hold. The runs point into scratch (its ents
  // cleared and its hold replaced first), which must outlive them. A hub
  // with a view: the sorted remainder (in scratch->ents) and the view's
  // runs (held by scratch->hold), at most kMaxRuns+1 runs, no copy of
  // them: O(r log r) for a remainder of r (below sort_min() when the
  // writer keeps the hub's runs); a vertex with no view, or a remainder
  // too large for it (TakesView): as Collect, one run in scratch, and it
  // may publish a view. In-edges: one run, in scratch, of every batch up
  // to tau at least (the caller's snapshot), from the in-index, built up
  // to tau first if need be (in_mu_).
  size_t AddRuns(int dir, uint64_t v, uint64_t tau, ReadBuf *scratch, std::vector<Run> *runs) const;
  // Any thread, no lock. As AddRuns for the out-versions of the edges from
  // v to dst only (an edge lookup): runs, the newer first, of the
  // versions with that dst. A hub with a view: a binary search of each of
  // its runs and a scan of the remainder (while it is at most an eighth of
  // the view, as AddRuns); a vertex below hub_min versions: a scan of its
  // versions; else as AddRuns (which may publish a view), then a binary
  // search.
  size_t AddEdgeRuns(uint64_t v, uint64_t dst, ReadBuf *scratch, std::vector<Run> *runs) const;
  // Any thread, no lock (in-edges: as AddRuns). Up to max sorted vertices
  // of dir in [lo, hi); *resume is where the next call should start (hi
  // when exhausted). On an active MemGraph it may list vertices only newer
  // batches (than tau) touched.
  void VerticesFrom(int dir, uint64_t lo, uint64_t hi, uint64_t tau, size_t max, std::vector<uint64_t> *out,
                    uint64_t *resume) const;
  // Frozen only. Calls f(v, versions) for every vertex with out-versions
  // in id order, versions sorted as by Collect (scratch is reused between
  // calls). The flush; its in-edge file is the transposition of what this
  // gives (after retention).
  template <typename F>
  void ForEachSorted(std::vector<Entry> *scratch, F &&f) const;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr int kShards = 2;
  // INVARIANT: a vertex's versions of a direction are all in shard
  // ShardOf(v) of it; writers and readers find the shard by this alone.
  static int ShardOf(uint64_t v) { return static_cast<int>((v * kVertexHashMul) >> 63); }
  static constexpr uint32_t kInline = 1;

  // A version of weight 1 (or a tombstone, whose weight is 0) without an
  // event time, as a narrow block keeps it: 16 bytes instead of an Entry's
  // 32. Unweighted streams without event times are all narrow.
  struct NarrowEntry {
    uint64_t dst, vers;
  };
  // A version without an event time, as a wide block keeps it: 24 bytes.
  struct WideEntry {
    uint64_t dst, vers;
    double weight;
  };
  // A version without extras, as a timed block keeps it: 32 bytes.
  using TimedEntry = PlainEntry;
  // The kinds of block, each holding the versions of the kinds below it
  // too: narrow (NarrowEntry), wide (WideEntry), timed (TimedEntry), event
  // (Entry, with its extras: a payload). A replace-only store never makes
  // an event block, so it pays nothing for them; neither does an
  // accumulate type without payloads: an operand of one event without a
  // payload is kept as a replace version is, its vers marked with
  // kOperand, and read back with the shared extras kOneEvent (merge.h).
  enum Kind : uint8_t { kNarrow = 0, kWide = 1, kTimed = 2, kEvent = 3 };
  // The kind an op's version needs.
  static Kind KindOf(const gt_op &op) {
    if (op.payload_len != 0) return kEvent;
    if (op.time != 0) return kTimed;
    return op.kind == GT_OP_DELETE_EDGE || op.weight == 1.0 ? kNarrow : kWide;
  }
  // Bits of a vers as the MemGraph keeps it, above every type (types are
  // below 2^10, from bit 48): never in an Entry. kOperand: an operand of
  // one event without payload (Entry::ext &kOneEvent), in any kind of
  // block and inline. kInlineExt: see Slot::inl.
  static constexpr uint64_t kOperand = uint64_t{1} << 62;
  static constexpr uint64_t kInlineExt = uint64_t{1} << 63;
  // An Entry's vers as a narrow, wide or timed block keeps it (its ext
  // null or &kOneEvent).
  static uint64_t PackVers(const Entry &e) { return e.ext == &kOneEvent ? e.vers | kOperand : e.vers; }
  static const ExtRec *UnpackExt(uint64_t vers) { return (vers & kOperand) != 0 ? &kOneEvent : nullptr; }
  static Entry Widen(const NarrowEntry &x) {
    return Entry{x.dst, x.vers & ~kOperand, VersTomb(x.vers) ? 0.0 : 1.0, 0, UnpackExt(x.vers)};
  }
  static Entry Widen(const WideEntry &x) { return Entry{x.dst, x.vers & ~kOperand, x.weight, 0, UnpackExt(x.vers)}; }
  static Entry Widen(const TimedEntry &x) {
    return Entry{x.dst, x.vers & ~kOperand, x.weight, x.time, UnpackExt(x.vers)};
  }
  // An inline version (Slot::inl): a timed entry (kOperand in its vers
  // for an operand without payload), or one with a payload, whose vers
  // has kInlineExt and whose time field holds its ExtRec (ExtRec::first is
  // its time: the MemGraph writes every ExtRec's first so, and readers read
  // first only of an operand, whose first is its time).
  static TimedEntry ToInline(const Entry &e) {
    if (e.ext == nullptr || e.ext == &kOneEvent) return TimedEntry{e.dst, PackVers(e), e.weight, e.time};
    return TimedEntry{e.dst, e.vers | kInlineExt, e.weight, static_cast<int64_t>(reinterpret_cast<uintptr_t>(e.ext))};
  }
  static Entry FromInline(const TimedEntry &x) {
    if ((x.vers & kInlineExt) == 0) return Widen(x);
    const ExtRec *ext = reinterpret_cast<const ExtRec *>(static_cast<uintptr_t>(x.time));
    return Entry{x.dst, x.vers & ~kInlineExt, x.weight, ext->first, ext};
  }
  static size_t KindBytes(Kind k) {
    switch (k) {
      case kNarrow:
        return sizeof(NarrowEntry);
      case kWide:
        return sizeof(WideEntry);
      case kTimed:
        return sizeof(TimedEntry);
      default:
        return sizeof(Entry);
    }
  }

  // Versions [base, base + cap) of a slot, after prev's (the first block's
  // prev is null: versions [0, kInline) are inline), or fewer: the block
  // after it starts at its base, and a block is left for a new one of a
  // larger kind as soon as a version does not fit it. Carved from the
  // arena: this 16-byte header, then cap entries of its kind. The header
  // is never changed once the block is linked.
  struct Block {
    static constexpr uint32_t kKindShift = 30;  // bits: cap | kind << kKindShift
    const Block *prev;
    uint32_t base, bits;
    uint32_t cap() const { return bits & ((uint32_t(1) << kKindShift) - 1); }
    Kind kind() const { return static_cast<Kind>(bits >> kKindShift); }
    NarrowEntry *thin() { return reinterpret_cast<NarrowEntry *>(this + 1); }
    const NarrowEntry *thin() const { return reinterpret_cast<const NarrowEntry *>(this + 1); }
    WideEntry *wide() { return reinterpret_cast<WideEntry *>(this + 1); }
    const WideEntry *wide() const { return reinterpret_cast<const WideEntry *>(this + 1); }
    TimedEntry *timed() { return reinterpret_cast<TimedEntry *>(this + 1); }
    const TimedEntry *timed() const { return reinterpret_cast<const TimedEntry *>(this + 1); }
    Entry *full() { return reinterpret_cast<Entry *>(this + 1); }
    const Entry *full() const { return reinterpret_cast<const Entry *>(this + 1); }
  };
  static_assert(sizeof(Block) % alignof(Entry) == 0 && alignof(Block) <= alignof(Entry), "entries follow the header");
  static constexpr uint32_t kMaxBlock = uint32_t(1) << 28;  // entries; keeps cap below the kind bits
  // A slot that is full gets a block of an eighth of what it holds (at
  // least kMinBlock, at most kMaxBlock): at most a ninth of its capacity is
  // ever unused (a block as large as all before it leaves up to half unused,
  // a quarter on average: that was 8 of the 36 bytes a version cost in the
  // arena on an R-MAT stream), and a vertex of n versions still has only
  // O(log n) blocks (about 100 for 2^21 versions).
  static constexpr uint32_t kMinBlock = 4;
  static uint32_t NextBlock(uint32_t cap) { return std::min(std::max(cap / 8, kMinBlock), kMaxBlock); }

  // A sorted run of a hub: k of its versions, consecutive in arrival
  // order, sorted into run order. Immutable once made; freed by its last
  // holder (a view, or a writer or reader making one). A large one
  // (kCacheMapBytes or more) is a mapping of its own, asked for huge
  // pages: a hub's degree is a scan of it, and on 4 KiB pages that scan ran
  // at a third of the memory's bandwidth in some runs (a TLB miss per 170
  // versions); a small one is on the heap. When none of the versions has
  // extras (ext null: every hub of a replace-only store) the copy is of
  // PlainEntry, 32 bytes a version, not an Entry's 40: a read of the hub
  // scans a fifth less.
  struct Cache {
    uint32_t k = 0;
    const Entry *ents = nullptr;        // heap's or map's; or null, and
    const PlainEntry *plain = nullptr;  // heap's or map's
    std::unique_ptr<Entry[]> heap;
    std::unique_ptr<PlainEntry[]> plain_heap;
    Mapping map;
    uint64_t bytes = 0;  // counted in cache_bytes_ while it lives
    // Versions [b, e) as a run.
    Run Slice(uint64_t b, uint64_t e) const { return Run{ents, nullptr, b, e, plain, false}; }
    // Version j as an Entry.
    Entry At(uint64_t j) const {
      if (ents != nullptr) return ents[j];
      return Entry{plain[j].dst, plain[j].vers, plain[j].weight, plain[j].time, nullptr};
    }
  };
  using RunPtr = std::shared_ptr<const Cache>;
  // A hub's view: runs covering its versions [0, covered), newest first
  // (each run's versions arrived after the next one's). Immutable once
  // published.
  struct HubView {
    std::vector<RunPtr> runs;
    uint32_t covered = 0;
  };
  using ViewPtr = std::shared_ptr<const HubView>;
  // Where a hub's view is published (std::atomic_load/atomic_store and
  // compare-and-swap of view). Made once per hub (by the writer or a
  // reader, published with a compare-and-swap of Slot::hub), listed in
  // boxes_ and freed by the destructor.
  struct HubBox {
    ViewPtr view;
    HubBox *next = nullptr;  // boxes_
  };
  static constexpr uint64_t kCacheMapBytes = uint64_t(2) << 20;

  // One vertex's versions in arrival order (so with non-decreasing seqs):
  // [0, kInline) in inl, the rest in the chain of blocks from head.
  // Built in place (placement new) in a slot chunk, trivially destructible.
  // INVARIANT: head is set (release) to a new block before n passes the
  // capacity before it, and a version is never changed once n covers it;
  // so with n loaded (acquire) before head, the chain from head holds
  // versions [kInline, n) (a null head means n <= kInline), each in the
  // newest block whose base is at most its index.
  struct Slot {
    explicit Slot(uint64_t vertex) : v(vertex) {}
    const uint64_t v;                          // the vertex
    std::atomic<uint32_t> n{0};                // versions published
    uint32_t cap = kInline;                    // one past what the head block can hold; writer only
    std::atomic<const Block *> head{nullptr};  // newest block; owned by the arena
    // Where its view is published (null until it was a hub): set once by
    // compare-and-swap (release), by the writer or a reader.
    mutable std::atomic<HubBox *> hub{nullptr};
    // Writer only: the head block's base and kind, so that where the
    // next version goes is known from the slot alone (the block's header
    // is another cache miss).
    uint32_t hbase = 0;
    Kind hkind = kNarrow;
    // Timed entries, so that a slot costs what it did before events: an
    // event version here has kInlineExt set in its vers and its ExtRec's
    // address in time (its time is the ExtRec's first: InlineEntry).
    TimedEntry inl[kInline];
  };
  static_assert(std::is_trivially_destructible<Slot>::value, "slots are never destroyed one by one");

  // Element i of an array that never moves, in chunks: chunk c holds
  // 2^(kFirstBits+c) elements, mapped when its first element is placed;
  // only its pages that elements were placed in are counted (an untouched
  // page is no memory: counting whole chunks was 1.5 bytes of the 40 a
  // version cost on an R-MAT stream). Elements are placed in index order
  // by the one writer; readers read published ones.
  template <typename T, int kFirstBits>
  class Chunked {
   public:
    static constexpr int kChunks = 33 - kFirstBits;  // up to 2^32 - 2^kFirstBits elements
    // Any thread, for a published i.
    const T &at(uint64_t i) const {
      int c;
      size_t off;
      Locate(i, &c, &off);
      return chunks_[c].load(std::memory_order_acquire)[off];
    }
    // Writer only: element i, to change.
    T &mut(uint64_t i) { return const_cast<T &>(at(i)); }
    // Writer only: the memory of element i (the next one), its chunk
    // mapped (from pool first, if not null) if need be, to build it in.
    void *Place(uint64_t i, MappingPool *pool) { return PlaceRun(i, 1, pool); }
    // Writer only: the memory of elements [i, i + n) (the next ones), n at
    // least 1 and all in element i's chunk, mapped if need be.
    T *PlaceRun(uint64_t i, size_t n, MappingPool *pool);
    // Writer only: elements [i, i + n) are copies of src[0, n) (trivially
    // copyable T), over as many chunks as they span.
    void Append(uint64_t i, const T *src, size_t n, MappingPool *pool) {
      while (n > 0) {
        int c;
        size_t off;
        Locate(i, &c, &off);
        const size_t k = std::min(n, (size_t(1) << (kFirstBits + c)) - off);
        std::copy(src, src + k, PlaceRun(i, k, pool));
        i += k;
        src += k;
        n -= k;
      }
    }
    // The pages touched so far (by this or, for a chunk from a pool, its
    // last owner). Writer only.
    uint64_t bytes() const { return bytes_; }
    // Gives every chunk to pool. Nothing may read this any more.
    void GiveBack(MappingPool *pool) {
      for (int c = 0; c < kChunks; c++) pool->Give(std::move(maps_[c]), touched_[c]);
    }

   private:
    static void Locate(uint64_t i, int *c, size_t *off) {
      const uint64_t j = i + (uint64_t(1) << kFirstBits);
      const int hb = 63 - __builtin_clzll(j);
      *c = hb - kFirstBits;
      *off = static_cast<size_t>(j - (uint64_t(1) << hb));
    }
    std::atomic<T *> chunks_[kChunks] = {};
    Mapping maps_[kChunks];           // writer only; freed with the MemGraph
    uint64_t touched_[kChunks] = {};  // bytes from each chunk's start touched; writer only
    uint64_t bytes_ = 0;
  };
  // 3 KiB of slots first: a small MemGraph is not filled by its slots.
  using SlotChunks = Chunked<Slot, 6>;

  // Open-addressing map vertex -> slot, of cells holding slot index + 1
  // (0: empty), compared through the slot's vertex. When five-eighths full
  // (not half: the tables, outgrown ones included, then take a third less,
  // 0.7 bytes per version of an R-MAT stream, which paid for the slot's
  // hbase; a lookup probes 1.8 cells on average instead of 1.5, mostly in
  // one cache line) it is replaced by an empty table twice as large
  // (Grow), into which its
  // vertices are added a few per SlotOf call (Migrate), in slot order: the
  // slots are read front to back, not hopped to from the old cells (that
  // was a cache miss per cell moved, a fifth of Apply's time); it is never
  // written again.
  struct Table {
    Mapping cells;  // (mask + 1) uint32 cells
    uint64_t mask = 0;
    uint32_t *cell() const { return static_cast<uint32_t *>(cells.get()); }
    // The cell v's probe starts at.
    uint64_t Home(uint64_t v) const { return ((v * kVertexHashMul) >> 20) & mask; }
  };

  // Bump allocator for version blocks. Memory is mapped directly from the
  // OS and unmapped when the MemGraph dies, so a flushed MemGraph's memory
  // leaves the resident set at once instead of lingering in malloc's heap;
  // a request of more than a quarter of a mapping gets one of its own
  // (touched page by page as it fills). Writer only; nothing carved is
  // ever reused or freed.
  class Arena {
   public:
    Arena() = default;
    // Blocks of about limit/16 bytes (4 KiB..1 MiB), so that a small
    // MemGraph is not filled by its first block.
    void SetBlockBytes(uint64_t b) { block_bytes_ = b; }
    Arena(const Arena &) = delete;
    Arena &operator=(const Arena &) = delete;
    // n bytes, a multiple of 8, 8-aligned, from pool's mappings first
    // (may be null). Throws std::bad_alloc if the OS refuses
    // (GT_ERR_INTERNAL).
    void *Alloc(size_t n, MappingPool *pool);
    // Gives every block to pool. Nothing may read this any more.
    void GiveBack(MappingPool *pool);
    // The pages touched: a shared mapping is carved front to back and its
    // pages are populated kPopulate bytes at a time ahead of the carving
    // (one call instead of a fault per page: a tenth of Apply's time on a
    // fresh MemGraph), so its pages up to there count (its unused end was
    // 1 MiB per shard: 1.3 bytes per version at 2^20 versions), or up to
    // where its last owner touched it, if it came from a pool; a request
    // of its own counts whole.
    uint64_t bytes() const { return bytes_ + populated_; }

   private:
    static constexpr size_t kPopulate = 64 << 10;
    struct Kept {
      Mapping m;
      size_t resident;  // bytes from its start touched, once it is not the current one
    };
    std::vector<Kept> blocks_;
    size_t block_bytes_ = 1 << 20;
    size_t cur_block_ = 0;  // blocks_[cur_block_] is the current shared mapping, once cur_ is set
    char *cur_ = nullptr;
    size_t used_ = 0, cap_ = 0, populated_ = 0;
    uint64_t bytes_ = 0;  // all but the current shared mapping
  };

  // Presence bits of the vertices of one id band ([0] from 0, [1] from
  // GT_HIGH_ID_BASE): bit i is set iff base+i has a slot (in either shard).
  // Mapped at its full size (cap_words) up front; words are read and
  // written with atomic builtins (set with an atomic or: the shards' threads
  // share words). used (words up to the last set bit) bounds what
  // VerticesFrom walks. far is set once a vertex of the band lies past the
  // bits; VerticesFrom then probes past them.
  struct Band {
    Mapping words;
    uint64_t cap_words = 0;
    std::atomic<uint64_t> used{0};
    std::atomic<bool> far{false};
    uint64_t *word() const { return static_cast<uint64_t *>(words.get()); }
  };

  // The gathered and grouped ops of one shard of one batch (see Apply):
  // scratch of its writer thread, reused from batch to batch.
  struct Group {
    uint64_t v;      // the vertex
    uint32_t start;  // its ops are order[start, start + count)
    uint32_t count;
  };
  struct Scratch {
    std::vector<uint32_t> ops;      // the shard's ops (indices into the batch), in batch order
    std::vector<uint32_t> gid;      // group of ops[i]
    std::vector<uint32_t> cells;    // vertex -> group index + 1, open addressing
    std::vector<Group> groups;      // in order of first appearance
    std::vector<uint32_t> order;    // ops grouped by vertex, in batch order within a group
    std::vector<uint32_t> touched;  // with in-edges: the slots appended to, in order
  };

  // One shard: the vertices v with ShardOf(v) == its index.
  struct Shard {
    // Every vertex with a slot is in table or, while a migration runs, in
    // old (the table before it, which holds slots [0, migrate_end), of
    // which [0, migrated) are in table too). A reader loads table before
    // old (both acquire); Grow stores old before table (release), so a
    // reader that sees a table sees the old table of that table's
    // migration, or a later value (null once it is done).
    // INVARIANT: tables.back() is what table points to; earlier tables
    // stay mapped (readers may still probe them) until the MemGraph dies.
    std::atomic<const Table *> table{nullptr};
    std::atomic<const Table *> old{nullptr};
    std::vector<std::unique_ptr<Table>> tables;  // writer only
    uint64_t migrated = 0, migrate_end = 0;      // writer only
    uint64_t table_bytes = 0;                    // all tables; writer only
    SlotChunks slots;
    std::atomic<uint32_t> nslots{0};  // slots [0, nslots) are built
    Arena arena;
    Scratch scratch;  // its writer thread only
    // With in-edges: the slots each batch appended to, in batch order (a
    // slot once per batch), entries [0, ntouched) published (release at
    // the end of the batch). The in-index is built from them.
    Chunked<uint32_t, 10> touched;
    std::atomic<uint64_t> ntouched{0};
  };

  // INVARIANT: during Apply, shards[i] is written by one thread only (the
  // caller for 0, the helper thread for 1), and bands only with atomic
  // read-modify-writes.
  struct Dir {
    Shard shards[kShards];
    Band bands[2];
    // (vertex, slot in shard ShardOf(vertex)) sorted by vertex, built once
    // after Freeze (sorted_once_).
    std::vector<std::pair<uint64_t, uint32_t>> sorted;
  };

  static constexpr uint64_t kBitmapIds = uint64_t(1) << 26;  // per band: at most 8 MiB of bits

  // The batch being applied, for the helper thread's task.
  struct Batch {
    const gt_op *ops;
    size_t n;
    uint64_t seq;
    const std::vector<uint8_t> *skip;
    const uint8_t *payload;  // the ops' payload slices point into it
  };
  struct ShardTask final : HelperThread::Task {
    MemGraph *m = nullptr;
    Batch b{};
    int shard = 0;
    uint64_t cpu_nanos = 0;  // the helper thread's CPU time in the last Run
    void Run() override {
      const uint64_t t0 = ThreadCpuNanos();
      m->ApplyShard(b, shard);
      cpu_nanos = ThreadCpuNanos() - t0;
    }
  };
  // Applies the batch's versions of shard `shard`.
  void ApplyShard(const Batch &b, int shard);
  // Caller only, before the helper's task is posted: fills each shard's
  // scratch.ops with its edge ops of the batch, in batch order.
  void Partition(const Batch &b);
  // Fills the rest of sh.scratch from its ops: grouped by source.
  void GatherGroups(const Batch &b, Shard &sh) const;
  // The slot of v, made if v has none.
  uint32_t SlotOf(Dir &d, Shard &sh, uint64_t v);
  // With in-edges: lists the slots this batch appended to (scratch.touched)
  // in sh.touched and publishes them. Writer of sh only.
  void ListTouched(Shard &sh);
  // Appends a group's versions to its slot and publishes them at once.
  void AppendGroup(const Batch &b, Shard &sh, uint32_t si, const Group &g);
  void Mark(Dir &d, uint64_t v) const;
  void NewTable(Shard &d, uint64_t cells);
  // Writer only: element i of c, built in.
  template <typename T, int kBits>
  void *Place(Chunked<T, kBits> *c, uint64_t i) {
    return c->Place(i, pool_.get());
  }
  // Writer only: adds up to k more of the old table's slots to the current one.
  void Migrate(Shard &d, uint64_t k);
  // Slot of v, or kNil; *cell is v's cell, or the empty one that ends its probe.
  uint32_t Find(const Shard &d, const Table &t, uint64_t v, uint64_t *cell) const;
  // v's slot, or null.
  const Slot *Lookup(const Dir &d, uint64_t v) const;
  // VerticesFrom of an active MemGraph past the bitmaps.
  void ProbeVerticesFrom(const Dir &d, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                         uint64_t *resume) const;
  // AddRuns and AddEdgeRuns; then the runs from first on are marked
  // no_operands while this MemGraph has none.
  size_t AddRunsOf(int dir, uint64_t v, uint64_t tau, ReadBuf *scratch, std::vector<Run> *runs) const;
  size_t AddEdgeRunsOf(uint64_t v, uint64_t dst, ReadBuf *scratch, std::vector<Run> *runs) const;
  void MarkNoOperands(std::vector<Run> *runs, size_t first) const;
  // publish: whether a hub's read may publish a new view (not the flush's:
  // the MemGraph dies after it).
  void CollectSlot(const Slot &s, std::vector<Entry> *out, bool publish) const;
  // The slot's box, made if it has none (null if memory was refused).
  HubBox *BoxOf(const Slot &s) const;
  // An empty run of room for k versions (of PlainEntry if plain), its
  // bytes set; null if memory was refused.
  static std::unique_ptr<Cache> NewRun(uint32_t k, bool plain);
  // c, counted in cache_bytes_ until its last holder frees it.
  RunPtr Own(std::unique_ptr<Cache> c) const;
  // A run of ents[0, k) (already sorted), counted in cache_bytes_; null if
  // memory was refused.
  RunPtr MakeRun(const Entry *ents, uint32_t k) const;
  // newer and older merged into one run (newer's versions arrived after
  // older's: they go first on ties); null if memory was refused.
  RunPtr MergeTwo(const Cache &newer, const Cache &older) const;
  // Publishes a view of one run of ents[0, k) (a reader's merged copy) in
  // place of old.
  void Publish(const Slot &s, const ViewPtr &old, const Entry *ents, uint32_t k) const;
  // Whether a read of n versions takes a view covering `covered` of them
  // and sorts the rest (else it merges them into a copy and publishes it
  // as a new view): while the rest is at most an eighth of the view, or,
  // for a hub the writer keeps (n >= 2*sort_min_), below sort_min_ (the
  // writer sorts it once it reaches that).
  bool TakesView(uint32_t n, uint32_t covered) const {
    const uint32_t rem = n > covered ? n - covered : 0;
    return rem <= covered / 8 || (rem < sort_min_ && n >= 2 * uint64_t(sort_min_));
  }
  // Writer only, after the slot's versions [0, n) were published: sorts
  // its remainder into a run when it reached sort_min_, and merges runs.
  void KeepHubRuns(const Slot &s, uint32_t n);
  // Appends the slot's versions [k, n) sorted into run order (blk: its
  // head, loaded after n).
  static void SortedTail(const Slot &s, const Block *blk, uint32_t k, uint32_t n, std::vector<Entry> *t);
  // What a reader of a slot reads of it: n before head (see Slot), then
  // the view, so that a view covering n holds every version published
  // before the read began.
  struct SlotRead {
    uint32_t n;
    const Block *blk;
    ViewPtr view;
  };
  static SlotRead ReadSlot(const Slot &s) {
    SlotRead r;
    r.n = s.n.load(std::memory_order_acquire);
    r.blk = s.head.load(std::memory_order_acquire);
    const HubBox *b = s.hub.load(std::memory_order_acquire);
    if (b != nullptr) r.view = std::atomic_load(&b->view);
    return r;
  }
  // Appends to *t the versions [k, n) of s whose dst is dst, sorted into
  // run order.
  static void SortedTailTo(const Slot &s, const Block *blk, uint32_t k, uint32_t n, uint64_t dst,
                           std::vector<Entry> *t);
  // Calls f(e) for each version [k, n) of s, the newest first.
  template <typename F>
  static void ForTailNewestFirst(const Slot &s, const Block *blk, uint32_t k, uint32_t n, F &&f);
  const Dir &SortedOut() const;
  void Grow(Shard &d);
  void BuildSorted(Dir &d) const;
  uint64_t ComputeBytes() const;

  // The in-index (see the top of this file). A record is an in-version:
  // key the in-vertex (the edge's dst), e.dst the edge's src.
  struct InRec {
    uint64_t key;
    Entry e;
  };
  // Sorted by (key asc, e.dst asc, type desc, seq desc), the later op first among
  // equal seqs: for each in-vertex, its versions in run order.
  struct InRun {
    std::vector<InRec> recs;
  };
  struct InIndex {
    std::vector<std::shared_ptr<const InRun>> runs;  // newest first
    // Every batch with seq <= covered is in the runs (and maybe versions
    // of newer ones).
    uint64_t covered = 0;
  };
  // The in-index covering every batch with seq <= tau that was applied (so
  // every one a reader at tau sees), built to there first if need be.
  // Null when no batch was applied.
  std::shared_ptr<const InIndex> InIndexAt(uint64_t tau) const;
  // Appends v's in-versions of x in run order (one merged run).
  static void CollectIn(const InIndex &x, uint64_t v, std::vector<Entry> *out);
  // VerticesFrom of the in-direction: the in-vertices of x's runs.
  static void InVerticesFrom(const InIndex &x, uint64_t lo, uint64_t hi, size_t max, std::vector<uint64_t> *out,
                             uint64_t *resume);

  const bool in_edges_;
  const uint64_t limit_;
  // The vertex records' cells (cells()); null in a cells MemGraph. Made
  // with this one and never replaced.
  std::unique_ptr<MemGraph> cells_;
  // Where the mappings below come from first and go to when this dies
  // (may be null).
  const std::shared_ptr<MappingPool> pool_;
  const uint32_t hub_min_;
  const uint32_t sort_min_;  // 64 * hub_min_
  const uint32_t parallel_min_;
  mutable Dir out_;
  std::atomic<uint64_t> bytes_{0};  // all but the caches and the in-index; writer only
  // Every hub's box (a list only pushed to, by the writer and readers, and
  // freed by the destructor), and the bytes of the boxes and of the runs
  // that live.
  mutable std::atomic<HubBox *> boxes_{nullptr};
  // Shared with the runs' deleters: a run may outlive a view's holder.
  const std::shared_ptr<std::atomic<uint64_t>> run_bytes_ = std::make_shared<std::atomic<uint64_t>>(0);
  mutable std::atomic<uint64_t> cache_bytes_{0};  // the boxes'
  mutable std::atomic<uint64_t> read_work_{0}, writer_work_{0};
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> batches_{0};
  // The seq of the newest batch applied whole (release after its last
  // write, the helper thread's included).
  std::atomic<uint64_t> applied_seq_{0};
  // The in-index: published with std::atomic_store, read with
  // std::atomic_load; built only under in_mu_, by readers.
  mutable std::shared_ptr<const InIndex> in_index_;
  mutable std::mutex in_mu_;
  // Build state, under in_mu_: per shard, the touched entries consumed
  // and, per slot, how many of its versions the index holds.
  mutable uint64_t in_pos_[kShards] = {};
  mutable std::vector<uint32_t> in_covered_[kShards];
  mutable std::atomic<uint64_t> in_bytes_{0};  // the published index's records
  std::atomic<uint64_t> first_seq_{0};
  // Written by the one writer (Store::write_mu_); read after Freeze.
  std::atomic<uint64_t> low_bound_{0}, high_bound_{0};
  // Writer only until Freeze; read after it (by the flush, which got this
  // MemGraph from the Version published after Freeze, under Store::mu_).
  std::vector<std::pair<uint64_t, uint64_t>> vdels_;  // (vertex, seq)
  std::string srcpos_;
  bool has_srcpos_ = false;
  bool payloads_ = false;  // some batch had payloads (ForEachSorted fetches them ahead)
  // Some batch had an operand (set, release, by the shard's writer before
  // it publishes the operand; a reader that sees the operand loads it
  // after): until then the runs this gives hold none (Run::no_operands).
  std::atomic<bool> operands_{false};
  uint64_t freeze_seq_ = 0;
  // Set (release) by Freeze after the last write: a reader that loads it
  // true (acquire) sees every version.
  std::atomic<bool> frozen_{false};
  mutable std::once_flag sorted_once_;
  ShardTask task_;  // writer only
  // Applies shard 1 during Apply; idle otherwise. Last: it is joined before
  // anything it writes is destroyed.
  HelperThread helper_;
};

template <typename T, int kFirstBits>
T *MemGraph::Chunked<T, kFirstBits>::PlaceRun(uint64_t i, size_t count, MappingPool *pool) {
  int c;
  size_t off;
  Locate(i, &c, &off);
  T *chunk = chunks_[c].load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    const size_t n = size_t(1) << (kFirstBits + c);
    size_t resident = 0;
    if (pool != nullptr) maps_[c] = pool->Take(n * sizeof(T), &resident);
    if (maps_[c].get() == nullptr) {
      // Its pages become resident as elements are placed: the pool gives
      // up as much at once.
      if (pool != nullptr) pool->Trim(n * sizeof(T));
      maps_[c] = Mapping(n * sizeof(T));
    }
    touched_[c] = resident;
    chunk = static_cast<T *>(maps_[c].get());
    // Published before any element of it (the element's index is
    // released later).
    chunks_[c].store(chunk, std::memory_order_release);
  }
  // Every chunk before c whole, and c's pages up to the last element's end.
  constexpr uint64_t kPage = 4096;
  const uint64_t before = ((uint64_t(1) << (kFirstBits + c)) - (uint64_t(1) << kFirstBits)) * sizeof(T);
  const uint64_t chunk_bytes = (uint64_t(1) << (kFirstBits + c)) * sizeof(T);
  touched_[c] = std::max(touched_[c], std::min(chunk_bytes, ((off + count) * sizeof(T) + kPage - 1) / kPage * kPage));
  bytes_ = before + touched_[c];
  return &chunk[off];
}

template <typename F>
void MemGraph::ForEachSorted(std::vector<Entry> *scratch, F &&f) const {
  const Dir &d = SortedOut();
  const size_t n = d.sorted.size();
  auto slot = [&](size_t j) -> const Slot & {
    return d.shards[ShardOf(d.sorted[j].first)].slots.at(d.sorted[j].second);
  };
  // A flush reads the slots in id order, which is no order in memory, and
  // walks each one's chain of blocks newest first, each block a cache miss
  // that waits for the one before. So they are fetched ahead, a stage per
  // kStep vertices: vertex i + (kDepth+1)*kStep's slot, then its newest
  // block, the one before, and so on (the pointers followed are in cache
  // by then): the misses of several vertices overlap.
  // The versions with a payload point to it in the arena, in no order
  // either (a record per version, written as its batch came): a cache
  // miss per version of a flush's retention (count, first) and builder
  // (payload). So each vertex's versions are gathered one vertex ahead
  // (into next) and its records fetched while the one before is retained.
  constexpr size_t kStep = 4, kDepth = 4;
  std::vector<Entry> next;
  auto gather = [&](size_t j, std::vector<Entry> *into) {
    into->clear();
    CollectSlot(slot(j), into, false);
    if (!payloads_) return;
    for (const Entry &e : *into)
      if (e.ext != nullptr) __builtin_prefetch(e.ext);
  };
  if (n > 0) gather(0, scratch);
  for (size_t i = 0; i < n; i++) {
    if (i + (kDepth + 1) * kStep < n) __builtin_prefetch(&slot(i + (kDepth + 1) * kStep));
    for (size_t s = 0; s < kDepth; s++) {
      const size_t j = i + (kDepth - s) * kStep;
      if (j >= n) continue;
      // Frozen: no writer, so relaxed loads see every block.
      const Block *b = slot(j).head.load(std::memory_order_relaxed);
      for (size_t k = 0; k < s && b != nullptr; k++) b = b->prev;
      if (b != nullptr) {
        __builtin_prefetch(b);
        __builtin_prefetch(reinterpret_cast<const char *>(b) + 64);
      }
    }
    if (i + 1 < n) gather(i + 1, &next);
    f(d.sorted[i].first, *scratch);
    scratch->swap(next);
  }
}

}  // namespace gt
