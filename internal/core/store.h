// store.h -- the storage core: MemGraphs, L0 files, leveled segmented CSR,
// version control, background flush and compaction, snapshots and reads.
//
// Version control. A Version (version.h) is an immutable set of everything
// readable: the active and frozen MemGraphs, the L0 files and the segments
// of each level, per edge direction, plus the vertex-delete map. Freezes,
// vertex deletes, flushes, compactions and recovery each describe their
// change as a VersionEdit and install it with InstallLocked, under mu_
// (ApplyEdit makes the next Version); a reader takes the current
// Version (one atomic shared_ptr load, never mu_) per call and reads it
// without locks, the MemGraphs included (memgraph.h). A replaced segment is unlinked only when the
// last Version that holds it is gone, so no reader ever sees a missing file,
// and since a Version swaps the compaction's inputs for its outputs in one
// step no reader ever sees a vertex's edges twice.
//
// This is where we depart from LSMGraph section 4.3: the paper keeps one
// mutable per-vertex index (with a per-vertex minimum readable L0 file and
// vertex-grained locks) because it copies no index per version. Here each
// segment carries its own vertex table (dense offsets array, or sorted
// (src, offset) pairs when sparse) inside the mmapped file, so a Version is
// only a list of file handles and copying it costs O(files), not O(vertices);
// the index is paged by the OS instead of being resident, which keeps the
// resident set bounded by the MemGraph budget rather than by vertex count.
//
// Snapshots pin a sequence number tau (LSMGraph's timestamp), not a Version:
// a snapshot reads whatever Version is current and filters by seq, so it
// never holds MemGraph memory or obsolete files. Flush and compaction
// therefore keep, for every pinned tau, the newest version with seq <= tau
// (RetainVersions).
//
//   Apply -> active MemGraph --full--> imm MemGraph --flush thread--> L0 file
//   L0 files --(>= trigger)--> L1 segments --(level over capacity)--> L2 ...
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compaction_plan.h"
#include "graphtide.h"
#include "manifest.h"
#include "memgraph.h"
#include "merge.h"
#include "segment.h"
#include "version.h"

namespace gt {

struct Options {
  uint64_t memgraph_bytes = 64ull << 20;
  uint64_t target_segment_bytes = 8ull << 20;
  uint32_t size_ratio = 10;
  uint32_t l0_trigger = 4;
  uint32_t max_levels = 7;
  bool in_edges = false;
  bool disable_auto_compaction = false;
  bool in_edges_as_stored = false;
  bool read_only = false;
  uint32_t test_pause_at = 0;  // gt_test_point
  // The MANIFEST rewrite bound (manifest.h, "Rewriting"); tests make it
  // small (gt_options.test_manifest_rewrite_bytes).
  uint64_t manifest_rewrite_bytes = kManifestRewriteBytes;
  // The format version of the segment files written (gt_options.
  // test_segment_format; 0: the current one).
  uint32_t segment_format = 0;
  // History (gt_options.keep_history, history_seqs).
  bool keep_history = false;
  uint64_t history_seqs = 0;
};

// What a flush or compaction must keep for readers: the pinned snapshots,
// ascending and distinct, with the history floor among them when history is
// kept (RetainParams).
struct Retention {
  std::vector<uint64_t> snaps;
  bool history = false;
  uint64_t floor = 0;
  // Event retention (RetainParams::watermark, retain_us).
  int64_t watermark = 0;
  std::vector<int64_t> retain_us;
};

// Fills *o from c (NULL = defaults) or says which field is wrong.
Status ValidateOptions(const gt_options *c, Options *o);

// The segment files on disk, sorted by what the manifest says of them
// (recovery.h).
struct DirScan;

class Store {
 public:
  static Status Open(const std::string &dir, const Options &opt, std::unique_ptr<Store> *out);
  ~Store();
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;

  // Writes fail with kInvalid on a store opened read-only.
  // payload[0, payload_len): the batch's payload buffer (gt_apply_ex).
  Status Apply(const gt_op *ops, size_t n, const uint8_t *srcpos, size_t srcpos_len, uint64_t *seq,
               const uint8_t *payload = nullptr, size_t payload_len = 0);
  // Records edge type t's aggregate (gt_set_type_aggregate) in the
  // manifest when it differs from the recorded one; refuses to make an
  // accumulate type replace. Flush and compaction read the retain when
  // they start.
  Status SetTypeAggregate(uint32_t type, bool accumulate, int64_t retain_us);
  // The types recorded as accumulate and their retain (µs), by type.
  std::vector<std::pair<uint32_t, int64_t>> TypeAggregates();
  // The number of the event source name (gt_add_event_source), recorded
  // in the manifest (durably) before it is returned the first time.
  Status AddEventSource(const std::string &name, uint32_t *source);
  // The recorded event sources' names: source i+1 is [i].
  std::vector<std::string> EventSources();
  // The greatest event time applied, or recorded by the manifest's edits
  // (0: none): retention's watermark.
  int64_t NewestEventTime() const { return newest_time_.load(std::memory_order_relaxed); }
  Status Flush();
  // Freezes the active MemGraph for a background flush and returns the seq
  // that is durable once durable_seq reaches it.
  Status RequestFlush(uint64_t *target);
  Status CompactAll();
  Status VerifyAll();
  std::string SourcePosition();
  uint64_t DurableSeq();
  void GetMetrics(gt_metrics *m);

  // The current Version, without taking mu_ (see current_).
  std::shared_ptr<const Version> Current() const;
  // Pins and returns the newest committed seq, or with durable the newest
  // durable one. Unpin with UnpinSnapshot.
  uint64_t PinSnapshot(bool durable = false);
  // Pins tau, a past seq (history): kInvalid when it is above the newest or
  // below the oldest readable seq.
  Status PinSnapshotAt(uint64_t tau);
  void UnpinSnapshot(uint64_t tau);
  // Raises the history floor to seq (history only).
  Status SetHistoryFloor(uint64_t seq);
  // The oldest seq PinSnapshotAt takes.
  uint64_t OldestReadable();
  uint64_t low_bound() const { return low_bound_.load(std::memory_order_acquire); }
  uint64_t high_bound() const { return high_bound_.load(std::memory_order_acquire); }
  // Live files of the current Version, in gt_list_files order.
  std::vector<gt_file_info> Files();
  bool in_edges() const { return opt_.in_edges; }
  // The trees this store keeps, in the order compaction visits them:
  // out-edges, in-edges (with in_edges), vertex cells.
  std::vector<int> Trees() const {
    if (opt_.in_edges) return {kOut, kIn, kVtx};
    return {kOut, kVtx};
  }

 private:
  Store(std::string dir, const Options &opt);
  // Opens the store as the manifest describes it (store_open.cc): refuses
  // on any corruption or unexplained file; in read-write mode then cuts a
  // torn manifest tail and deletes the files the manifest proves garbage.
  Status Recover();
  // Recover's phases, in this order (store_open.cc). ReplayManifestAt: the
  // manifest at path read and replayed, refused when damaged or made with
  // other in_edges (unless in_edges_as_stored).
  Status ReplayManifestAt(const std::string &path, ManifestContents *mc, ManifestState *ms);
  // Opens every live file the replay left, each checked against its
  // record (the manifest at path) and the store's options.
  Status OpenLive(const std::string &path, const ManifestState &ms,
                  std::map<uint64_t, std::shared_ptr<Segment>> *live) const;
  // The state the manifest recorded: logged_, the types' aggregates, the
  // watermark and the event sources.
  void AdoptRecorded(const ManifestState &ms);
  // Read-write: opens the manifest for appends, its torn tail cut, and
  // deletes what the manifest proves garbage (scan) and a leftover
  // MANIFEST.tmp.
  Status TakeOverManifest(const std::string &path, const ManifestContents &mc, const DirScan &scan);
  // Installs each record of mc as a VersionEdit, from an empty Version.
  void ReplayVersions(const ManifestContents &mc, const std::map<uint64_t, std::shared_ptr<Segment>> &live);
  // history_floor_ from the manifest's floor and the live files'.
  void RecoverHistoryFloor(const ManifestState &ms);
  // Read-write only: the new store's manifest, when dir has none (and no
  // segment file either).
  Status CreateIfMissing();
  void StartThreads();
  void Shutdown();
  void FlushLoop();
  void CompactLoop();
  // Freezes the active MemGraph, waiting while the previous one is flushing.
  // Requires write_mu_ held.
  Status FreezeActiveLocked(std::unique_lock<std::mutex> *write_lock);
  // The current Version for a writer to apply to: its active MemGraph
  // frozen first when full, or when a deferred flush request waits for it
  // (FreezeActiveLocked). Requires write_mu_ held.
  Status ActiveForWrite(std::unique_lock<std::mutex> *write_lock, std::shared_ptr<const Version> *ver);
  // Flush thread, after a flush: freezes the active MemGraph if a flush was
  // requested for data it holds.
  void MaybeFreezeRequested();
  Status FlushMemGraph(const std::shared_ptr<MemGraph> &mem);
  Status RunCompaction(int dir, const CompactionPlan &plan);
  // RunCompaction's phases (store_compact.cc). MergeInputs: merges the
  // inputs' versions, as rp retains them (in an arena of its own), into new files at the plan's
  // level, cut at the target size; *outs their metas.
  Status MergeInputs(int dir, const CompactionPlan &plan, const std::vector<std::shared_ptr<Segment>> &inputs,
                     const Retention &ret, const RetainParams &rp, std::vector<SegMeta> *outs);
  // Installs the compaction the manifest recorded (*r, its removed files
  // taken) with its opened outputs segs.
  void InstallCompaction(int dir, const CompactionPlan &plan, ManifestEdit *r,
                         std::vector<std::shared_ptr<Segment>> segs);
  // Purges the vertex deletes no file needs (store_compact.cc), logging
  // the purge as a compaction edit without files.
  Status PurgeVertexDeletes();
  // Syncs the directory and opens the files a flush or compaction wrote,
  // each with vdel_clean (store_write.cc).
  Status OpenWritten(const std::vector<SegMeta> &metas, uint64_t vdel_clean,
                     std::vector<std::shared_ptr<Segment>> *segs);
  // Records e in the manifest (setting e->next_file); the files it adds
  // stop being pending once it is durable. Then rewrites the manifest if
  // it has outgrown its bound (RewriteManifestLocked); an error there
  // leaves e durable but stops all further appends.
  Status AppendEdit(ManifestEdit *e);
  // AppendEdit with manifest_mu_ held.
  Status AppendEditLocked(ManifestEdit *e);
  // Rewrites the manifest as a snapshot of logged_ (manifest.h,
  // "Rewriting"). Requires manifest_mu_ held.
  Status RewriteManifestLocked();
  // Makes ApplyEdit(*current_, e) current and applies e's store state (the
  // durable seq and source position, a compaction pointer). The one place
  // current_ changes after Recover's empty start. Requires mu_ held.
  void InstallLocked(const VersionEdit &e);
  // Testing only (gt_options.test_pause_at): at point, marks the pause with
  // the file dir/PAUSED-<point> and waits until the store shuts down, then
  // returns kClosed. OK at every other point.
  Status TestPause(uint32_t point);
  LevelState PlanState(const Version &v, int dir) const;
  PlanConfig PlanCfg() const;
  // The pins and the history floor, raised first by history_seqs, taken
  // together under snap_mu_ (so that a pin at a past seq either is among
  // them or was checked against a floor at least this one).
  Retention RetentionNow();
  // Raises history_floor_ by history_seqs and returns the oldest readable
  // seq. Requires snap_mu_ held.
  uint64_t OldestReadableLocked();
  void SetBackgroundError(const Status &s);
  uint64_t NewFileId();
  // An empty MemGraph of the configured size, its memory from pool_ first.
  // A read-only store never writes: its MemGraph only keeps reads uniform.
  std::shared_ptr<MemGraph> NewMemGraph() const {
    if (opt_.read_only) return std::make_shared<MemGraph>(opt_.in_edges, 64u << 10);
    return std::make_shared<MemGraph>(opt_.in_edges, opt_.memgraph_bytes, 0, 0, pool_);
  }

  const std::string dir_;
  Options opt_;  // in_edges may be set by Recover (in_edges_as_stored); fixed after
  // The memory of dead MemGraphs, for the next ones (MappingPool): at most
  // one MemGraph's worth.
  const std::shared_ptr<MappingPool> pool_;
  int lock_fd_ = -1;

  // Serializes Apply/Flush freezing: the MemGraphs' one writer. No reader
  // ever takes it.
  std::mutex write_mu_;

  // Protects the fields below (current_ as written there). INVARIANT: held
  // only for O(1) or O(files) work (making and swapping current_, counters,
  // the pending file set), never across I/O, a MemGraph or segment read, or
  // a wait other than on cv_ (which releases it). Readers never take it.
  std::mutex mu_;
  std::condition_variable cv_;
  // The current Version, published to readers without mu_.
  // INVARIANT: written only with mu_ held and only through
  // std::atomic_store (InstallLocked, Recover's empty start, ~Store); read
  // without mu_ only through std::atomic_load (Current()); read plainly
  // only with mu_ held (no write can then run: every write holds mu_, and
  // the lock-free loads beside it only read). A Version once published is
  // immutable, so a reader that loaded it needs no lock to read it.
  std::shared_ptr<const Version> current_;
  uint64_t durable_seq_ = 0;
  std::string durable_srcpos_;
  uint64_t next_file_id_ = 1;
  // File numbers handed out whose edit is not yet in the manifest.
  // INVARIANT: every segment file a flush or compaction writes has its
  // number in here from allocation until its edit is durable, so each
  // edit's next_file (the smallest pending number, or next_file_id_) is at
  // most every number not yet recorded (manifest.h, "File numbers").
  std::set<uint64_t> pending_files_;
  bool shutting_down_ = false;
  Status bg_error_;
  std::vector<uint64_t> pointers_[kTrees];
  bool compaction_wanted_ = false;
  // Newest seq a flush was requested for while another flush ran; the
  // flush thread freezes the active MemGraph for it once that one is done.
  uint64_t flush_requested_ = 0;

  std::mutex manifest_mu_;   // serializes manifest appends and rewrites
  ManifestWriter manifest_;  // not open in read-only mode; Protected by manifest_mu_.
  // The state the manifest's records leave (AdvanceState's fields only;
  // no history). Protected by manifest_mu_.
  // INVARIANT: equals ReplayManifest of the MANIFEST as it is on disk in
  // those fields: set by Recover (read-only too: its types' aggregates),
  // advanced by every successful append.
  ManifestState logged_;
  // Size of the MANIFEST's first record (its snapshot or create record), for
  // the rewrite bound. Protected by manifest_mu_.
  uint64_t manifest_base_bytes_ = 0;
  std::atomic<uint64_t> manifest_bytes_{0}, manifest_rewrites_{0};  // for gt_metrics
  // Bounds of every durable edge (recorded with each flush). Touched only by
  // Recover and the flush thread.
  uint64_t durable_low_ = 0, durable_high_ = 0;
  std::mutex compaction_mu_;  // one compaction at a time (background or CompactAll)

  // Pins of snapshots. Never taken by Apply; held for one multiset insert or
  // erase by readers, and for a copy of the pins by flush and compaction.
  std::mutex snap_mu_;
  std::multiset<uint64_t> snaps_;  // Protected by snap_mu_.
  // With history: every version above it is kept. Only grows; set at open
  // to the largest floor any live file was written with. Protected by
  // snap_mu_.
  uint64_t history_floor_ = 0;

  std::atomic<uint64_t> last_seq_{0};
  // durable_seq_, published for readers that must not take mu_ (pins).
  // INVARIANT: written under mu_ right after durable_seq_; never ahead of it.
  std::atomic<uint64_t> durable_pub_{0};
  // One past the largest id of any applied or stored edge below
  // GT_HIGH_ID_BASE, and at or above it (0 = none); the overall bound is
  // the larger. Only ever grow. (Recorded bounds can exceed the files' own:
  // they remember ids whose edges are gone.)
  std::atomic<uint64_t> low_bound_{0}, high_bound_{0};

  // Counters for gt_metrics.
  std::atomic<uint64_t> flushes_{0}, flush_nanos_{0}, flush_bytes_{0};
  std::atomic<uint64_t> compactions_{0}, compaction_nanos_{0}, compaction_read_{0}, compaction_written_{0};
  std::atomic<uint64_t> stalls_{0}, stall_nanos_{0}, bg_errors_{0};
  std::atomic<uint64_t> apply_cpu_nanos_{0};  // CPU time in Apply, both of its threads
  // Retention (issue 42): the newest event time applied (only grows; at
  // open the largest the manifest recorded, 0 if none) and each type's
  // retain (at open as recorded; SetTypeAggregate).
  // Flush and compaction read both when they start (RetainParams): a fold
  // uses a watermark no newer than what was applied, so an event within
  // retain of the newest is never folded.
  std::atomic<int64_t> newest_time_{0};
  std::atomic<int64_t> retain_us_[kMaxEdgeTypes] = {};
  // The event sources recorded (logged_.sources' size): an op may name
  // sources 1 to this (Apply). Stored (release) once the source's edit is
  // durable, so a version never names a source a crash could lose.
  std::atomic<uint32_t> event_sources_{0};
  std::atomic<uint64_t> deferred_flushes_{0};

  std::thread flush_thread_, compact_thread_;
};

// A pinned read view at one sequence number.
// Where a read writes the edges it returns, each at the same index of
// every column: their dsts, and when not null their weights, types and
// event times (0: none).
struct EdgeOut {
  uint64_t *dsts;
  double *w;
  uint16_t *t;
  int64_t *tm;
};

// Where an _ext read writes each edge's extras (gt_edge_ext) and the
// payload bytes they point to; *len receives the bytes written, or needed.
struct ExtOut {
  gt_edge_ext *ext;
  uint8_t *buf;
  size_t cap;
  size_t *len;
};

class SnapshotReader {
 public:
  // Takes the store's vertex bounds as they are now (after the pin).
  SnapshotReader(Store *s, uint64_t tau) : store_(s), tau_(tau), low_(s->low_bound()), high_(s->high_bound()) {}
  uint64_t tau() const { return tau_; }
  uint64_t vertex_bound() const { return std::max(low_, high_); }
  uint64_t low_bound() const { return low_; }
  uint64_t high_bound() const { return high_; }
  Store *store() const { return store_; }

  // Every read takes a type filter ts (null: every type) and writes edges
  // to an EdgeOut; the C API (graphtide.h) documents each.
  Status Degree(uint64_t v, int dir, const TypeSet *ts, uint64_t *out);
  Status Neighbors(uint64_t v, int dir, const TypeSet *ts, const EdgeOut &o, size_t cap, size_t *n);
  Status Scan(uint64_t lo, uint64_t hi, int dir, const TypeSet *ts, uint64_t *vids, uint64_t *offs, size_t vcap,
              const EdgeOut &o, size_t ecap, size_t *nv, size_t *ne, uint64_t *next);
  Status Gather(const uint64_t *vids, size_t n, int dir, const TypeSet *ts, uint64_t *offs, const EdgeOut &o,
                size_t ecap, size_t *done, size_t *ne);
  Status NeighborsAfter(uint64_t v, int dir, const TypeSet *ts, bool has_after, uint64_t after, uint32_t after_type,
                        const EdgeOut &o, size_t cap, size_t *n, bool *more);
  // The visible edges from v to dst (one per type ts holds), as
  // gt_snapshot_edge documents.
  Status Edge(uint64_t v, uint64_t dst, const TypeSet *ts, const EdgeOut &o, size_t cap, size_t *n);
  // counts[i] = the number of visible edges from srcs[i] to dsts[i] (one
  // per type ts holds), for i in [0, n), as gt_snapshot_edge_counts
  // documents: Edge's lookups, on one Version and one set of buffers.
  Status EdgeCounts(const uint64_t *srcs, const uint64_t *dsts, size_t n, const TypeSet *ts, uint32_t *counts);
  // gt_snapshot_edge_ext and gt_snapshot_neighbors_after_ext: Edge and
  // NeighborsAfter with each edge's extras (x) and payload bytes.
  Status EdgeExt(uint64_t v, uint64_t dst, const TypeSet *ts, const EdgeOut &o, const ExtOut &x, size_t cap, size_t *n);
  Status NeighborsAfterExt(uint64_t v, int dir, const TypeSet *ts, bool has_after, uint64_t after, uint32_t after_type,
                           const EdgeOut &o, const ExtOut &x, size_t cap, size_t *n, bool *more);
  // gt_snapshot_edge_events.
  Status EdgeEvents(uint64_t v, uint64_t dst, uint32_t type, int64_t since, uint64_t skip, uint64_t *seqs,
                    const EdgeOut &o, const ExtOut &x, size_t cap, size_t *n, bool *more, bool *folded);

 private:
  Store *store_;
  uint64_t tau_;
  uint64_t low_, high_;
};

}  // namespace gt
