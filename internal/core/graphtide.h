/*
 * graphtide.h -- the whole cgo surface of the graphtide storage core.
 *
 * Rules of this interface (read before calling anything):
 *  - Handles (gt_store, gt_snapshot) are opaque. They are created by the core
 *    and freed only by gt_close / gt_snapshot_release.
 *  - Every function that can fail returns a gt_code and fills the caller-owned
 *    gt_error. On failure, err->message (and err->file, when the error is about
 *    a file) are malloc'd by the core and owned by the caller from then on:
 *    release them with gt_error_free. On success err is left untouched.
 *  - Pointer arguments are borrowed for the duration of the call only. The core
 *    never keeps a pointer it was given after the call returns, so Go memory
 *    may be passed directly (it must contain no Go pointers).
 *  - Nothing crosses the boundary per edge: writes come as batches of ops,
 *    reads of a vertex range fill caller buffers in one call.
 *  - The core never prints, never calls exit, and never lets a C++ exception
 *    escape: every entry point catches and converts to GT_ERR_INTERNAL.
 *  - All functions are safe for concurrent use on the same handles, except
 *    that gt_close must not race with any other call on that store, and
 *    gt_snapshot_release must not race with calls on that snapshot.
 *
 * Blocking: gt_apply may block while both MemGraphs are full (a write stall,
 * counted in gt_metrics.stalls). gt_flush and gt_compact_all block until the
 * work is durable. gt_close waits for background flush/compaction to stop.
 * Reads never block on flush or compaction.
 */
#ifndef GRAPHTIDE_H
#define GRAPHTIDE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_code {
  GT_OK = 0,
  GT_ERR_INVALID = 1,    /* bad argument or option */
  GT_ERR_IO = 2,         /* operating system I/O failure */
  GT_ERR_CORRUPTION = 3, /* checksum or format failure; err->file/offset set */
  GT_ERR_CLOSED = 4,     /* store is closed or in a failed state */
  GT_ERR_BUFFER = 5,     /* caller buffer too small; required size returned */
  GT_ERR_INTERNAL = 6,   /* bug: an exception or broken invariant */
  GT_ERR_LOCKED = 7      /* the store directory is open in another handle or process */
} gt_code;

typedef struct gt_error {
  int32_t code;
  char *message;   /* malloc'd by the core on failure; caller frees via gt_error_free */
  char *file;      /* malloc'd or NULL; the file a corruption/IO error is about */
  uint64_t offset; /* byte offset in file for corruption errors */
} gt_error;

/* Frees message and file (not e itself) and zeroes them. NULL-safe. */
void gt_error_free(gt_error *e);

/* Largest valid vertex id. Ids above it are rejected by gt_apply. */
#define GT_MAX_VERTEX ((uint64_t)0x7fffffffffffffffULL)
#define GT_MAX_LEVELS 16
/* The limits of the gt_options fields (0 always means the default). The
 * core validates against them (gt_open) and the Go engine takes them from
 * here, so both say the same. */
#define GT_MIN_MEMGRAPH_BYTES ((uint64_t)64 << 10)       /* 64 KiB */
#define GT_MAX_MEMGRAPH_BYTES ((uint64_t)64 << 30)       /* 64 GiB */
#define GT_MIN_TARGET_SEGMENT_BYTES ((uint64_t)16 << 10) /* 16 KiB */
#define GT_MAX_TARGET_SEGMENT_BYTES ((uint64_t)16 << 30) /* 16 GiB */
#define GT_MIN_SIZE_RATIO 2
#define GT_MAX_SIZE_RATIO 1000
#define GT_MIN_L0_COMPACTION_TRIGGER 1
#define GT_MAX_L0_COMPACTION_TRIGGER 64
#define GT_MIN_LEVELS 2 /* max_levels at least this, at most GT_MAX_LEVELS */
/* Vertex ids split into two bands: below GT_HIGH_ID_BASE (ids given as
 * numbers) and from it up (graphtide's key dictionary gives string keys ids
 * there). The core keeps a bound per band so that callers can index both
 * bands densely (see gt_snapshot_vertex_bounds). */
#define GT_HIGH_ID_BASE ((uint64_t)0x4000000000000000ULL)

typedef struct gt_options {
  uint64_t memgraph_bytes;          /* size of one MemGraph; 0 = 64 MiB; GT_{MIN,MAX}_MEMGRAPH_BYTES */
  uint64_t target_segment_bytes;    /* segment size in L1+; 0 = 8 MiB; GT_{MIN,MAX}_TARGET_SEGMENT_BYTES */
  uint32_t size_ratio;              /* level capacity growth; 0 = 10; GT_{MIN,MAX}_SIZE_RATIO */
  uint32_t l0_compaction_trigger;   /* L0 files that trigger compaction; 0 = 4; GT_{MIN,MAX}_L0_COMPACTION_TRIGGER */
  uint32_t max_levels;              /* including L0; 0 = 7; GT_MIN_LEVELS to GT_MAX_LEVELS */
  uint32_t in_edges;                /* nonzero: keep in-edges in step */
  uint32_t disable_auto_compaction; /* nonzero: compact only on gt_compact_all */
  uint32_t in_edges_as_stored;      /* nonzero: an existing store keeps the in_edges it was
                                       created with (in_edges then applies to a new store only) */
  uint32_t read_only;               /* nonzero: open an existing store without writing a byte:
                                       no store is created, nothing is cut or deleted, no
                                       background work runs, writes fail with GT_ERR_INVALID,
                                       and the directory's LOCK is shared (GT_ERR_LOCKED while
                                       a writer holds it) */
  uint32_t test_pause_at;           /* testing only: a gt_test_point where background work
                                       stops, see gt_test_point; 0 = none */
  uint64_t test_manifest_rewrite_bytes; /* testing only: the MANIFEST size past which it is
                                           rewritten as a snapshot (still at least twice the
                                           snapshot's size); 0 = 4 MiB */
  uint32_t test_segment_format;         /* testing only: write segment files of this older format
                                           version, 2 (before edge filters), 3 (before event
                                           operands and payloads) or 4 (before narrow columns), as
                                           an older build did; 0 = the current one, 5 */
  uint32_t keep_history;                /* nonzero: keep history (reads as of a past seq,
                                           gt_snapshot_new_at): flush and compaction keep every
                                           version above the history floor (see
                                           gt_set_history_floor), which history_seqs raises */
  uint64_t history_seqs;                /* with keep_history: keep at least the last this many
                                           seqs readable (the floor follows the newest seq);
                                           0 = only gt_set_history_floor raises the floor */
} gt_options;

/* Testing only (crash tests): where gt_options.test_pause_at makes a flush
 * or compaction stop. There the core creates the empty file
 * "PAUSED-<point>" in the store directory and waits until gt_close, so that
 * a test can kill the process at exactly that point. */
typedef enum gt_test_point {
  GT_TEST_FLUSH_BEFORE_EDIT = 1,      /* flush: its L0 files durable, its manifest edit not written */
  GT_TEST_FLUSH_AFTER_EDIT = 2,       /* flush: its edit durable, the new file set not yet installed */
  GT_TEST_COMPACT_BEFORE_EDIT = 3,    /* compaction: its outputs durable, its edit not written */
  GT_TEST_COMPACT_AFTER_EDIT = 4,     /* compaction: its edit durable, its inputs not yet unlinked */
  GT_TEST_MANIFEST_PARTIAL = 5,       /* manifest rewrite: half of MANIFEST.tmp written */
  GT_TEST_MANIFEST_BEFORE_SWITCH = 6, /* manifest rewrite: MANIFEST.tmp whole and fsynced, not renamed */
  GT_TEST_MANIFEST_AFTER_SWITCH = 7   /* manifest rewrite: renamed over MANIFEST, directory fsynced,
                                         the old file still open for appending */
} gt_test_point;

/* Edge types: an edge is (src, dst, type), type in [0, GT_MAX_EDGE_TYPES);
 * two edges between the same vertices with different types are different
 * edges. Type 0 is the default: a store that never names another type
 * stores no type at all. Names for types are the caller's (graphtide's
 * type dictionary). */
#define GT_MAX_EDGE_TYPES 1024

/* A set of edge types, a read's filter: type t is in it when bit t is set
 * (bits[t / 64] >> (t % 64) & 1). Every read takes a const gt_type_set *;
 * NULL means every type. */
typedef struct gt_type_set {
  uint64_t bits[GT_MAX_EDGE_TYPES / 64];
} gt_type_set;

typedef enum gt_op_kind {
  GT_OP_UPSERT = 0,        /* insert or update edge (src,dst,type) with weight */
  GT_OP_DELETE_EDGE = 1,   /* delete edge (src,dst,type) */
  GT_OP_DELETE_VERTEX = 2, /* delete every edge incident to src, of every type, and every cell of src's
                              vertex record; dst ignored, type 0 */
  GT_OP_PUT_CELL = 3,      /* set cell dst of src's vertex record to (weight, time); type 0 */
  GT_OP_DELETE_CELL = 4    /* clear cell dst of src's vertex record; type 0 */
} gt_op_kind;

/* Vertex records. A vertex's record is a row of up to GT_MAX_CELLS cells,
 * each a versioned (weight, time) pair, kept in a tree of their own
 * (GT_VERTEX) beside the edges: in the MemGraphs, flushed to files of
 * direction GT_VERTEX, compacted with the rest, retained under the same
 * history rules, and hidden by a vertex delete as its edges are. A cell's
 * dst is GT_CELL_BASE + its index: above every vertex id, so no vertex
 * delete names it, and a read of src in direction GT_VERTEX (degree,
 * neighbors, scan, gather) returns src's live cells as edges (dst, weight,
 * time) in index order. The core gives cells no meaning: graphtide's Go
 * engine stores a vertex's label and property document in them. A
 * GT_OP_PUT_CELL's weight must be finite and its time at least 0. */
#define GT_CELL_BASE ((uint64_t)0x8000000000000000ULL)
#define GT_MAX_CELLS 4096

/* Edge events (issue 42). An upsert with GT_OP_ACCUMULATE in its flags is
 * an event that adds to its edge instead of replacing it (a merge operand,
 * stored as a version of its own at the cost of a replace upsert: no read
 * before the write). A read folds an edge's visible operands, newest first,
 * down to the first older version that is not one (a replace version, a
 * tombstone, or one a vertex delete hides), into one edge: weight the sum
 * of the events' weights, time the greatest event time, and (the _ext
 * reads) count the number of events, first_time the least nonzero event
 * time, payload the newest event's. An upsert may carry a payload (any
 * bytes, at most GT_MAX_PAYLOAD; graphtide's engine stores an event
 * reference and a property document there), accumulate or not: a slice
 * [payload_off, payload_off + payload_len) of the batch's payload buffer
 * (gt_apply_ex). Flush and compaction fold the operands of an edge whose
 * event times are older than the store's newest event time minus the
 * type's retain (gt_set_type_aggregate) into one; a read never depends on
 * when that happened (it reads the same fold), but gt_snapshot_edge_events
 * lists only the events not yet folded. */
#define GT_OP_ACCUMULATE 0x1u
#define GT_MAX_PAYLOAD 8192u

/* An event's source position: an upsert with GT_OP_SOURCE in its flags
 * carries where its event came from as the first GT_SOURCE_POS_BYTES bytes
 * of its payload, a u32 source (a number the store gave a source name,
 * gt_add_event_source; 1 to the store's count) then a u64 position (its
 * offset in that source), little-endian; the rest of the payload is the
 * payload. Stored as two numbers, not bytes (files keep them in narrow
 * columns), and returned by the _ext reads (gt_edge_ext's source and
 * position) with the payload they go with: a fold's are its newest
 * event's. */
#define GT_OP_SOURCE 0x2u
#define GT_SOURCE_POS_BYTES 12u
/* The most event sources a store numbers, and the longest name. */
#define GT_MAX_EVENT_SOURCES 16777215u
#define GT_MAX_EVENT_SOURCE_NAME 512u

/* One operation of a batch. Layout is mirrored by the Go side. */
typedef struct gt_op {
  uint64_t src;
  uint64_t dst;
  double weight;
  uint32_t kind;        /* gt_op_kind */
  uint32_t type;        /* edge type, below GT_MAX_EDGE_TYPES */
  int64_t time;         /* event time (Unix microseconds, at least 0; 0: none): an upsert's or delete's is kept
                           with its version and returned by reads; a vertex delete's is not kept */
  uint32_t flags;       /* GT_OP_ACCUMULATE, GT_OP_SOURCE (an upsert only), or 0 */
  uint32_t payload_len; /* an upsert's payload length (0: none), at most GT_MAX_PAYLOAD */
  uint64_t payload_off; /* where its payload starts in the batch's payload buffer */
} gt_op;

/* GT_VERTEX: the vertex records' cells (see GT_OP_PUT_CELL). */
typedef enum gt_dir { GT_OUT = 0, GT_IN = 1, GT_VERTEX = 2 } gt_dir;

typedef struct gt_level_metrics {
  uint64_t files;
  uint64_t bytes;
  uint64_t entries; /* edge versions stored, tombstones included */
} gt_level_metrics;

typedef struct gt_metrics {
  uint64_t last_seq;         /* newest committed sequence number */
  uint64_t durable_seq;      /* newest sequence number covered by a flush */
  uint64_t memgraph_bytes;   /* both MemGraphs */
  uint64_t memgraph_entries; /* edge versions buffered, one per edge op (in-edges are derived from them) */
  uint64_t flushes;
  uint64_t flush_nanos;
  uint64_t flush_bytes; /* bytes written by flushes */
  uint64_t compactions;
  uint64_t compaction_nanos;
  uint64_t compaction_bytes_read;
  uint64_t compaction_bytes_written;
  uint64_t stalls; /* gt_apply calls that waited for a flush */
  uint64_t stall_nanos;
  uint64_t snapshots_open;
  uint64_t vertex_deletes; /* vertex-delete records held */
  uint64_t background_errors;
  uint64_t deferred_flushes;    /* gt_flush_async calls made while a flush ran, served after it */
  uint64_t manifest_bytes;      /* size of the MANIFEST (0 when read-only) */
  uint64_t manifest_rewrites;   /* MANIFEST rewrites as a snapshot since open */
  uint64_t memgraph_pool_bytes; /* memory of flushed MemGraphs kept for the next ones (at most one MemGraph's size) */
  uint64_t apply_cpu_nanos;     /* CPU time spent in gt_apply, the MemGraph's helper thread's share included */
  uint64_t oldest_readable_seq; /* the oldest seq a snapshot can pin (gt_snapshot_new_at): the history
                                   floor with keep_history, else last_seq */
  uint32_t num_levels;          /* entries used in levels[] (L0 first) */
  uint32_t reserved;
  gt_level_metrics levels[GT_MAX_LEVELS]; /* out- and in-edge trees and vertex cells summed */
} gt_metrics;

typedef struct gt_store gt_store;
typedef struct gt_snapshot gt_snapshot;

/* Opens (creating if absent) the store in dir. opts may be NULL for defaults.
 * Replays the manifest and verifies every live file's header, footer and
 * index. Recovery never destroys what might be data: any damaged manifest
 * record, missing or mismatched live file, or segment file that is neither
 * live nor provably garbage is GT_ERR_CORRUPTION (err->file, err->offset)
 * and nothing is changed; a directory with segment files but no MANIFEST is
 * refused, never initialised. Only then does a read-write open cut a torn
 * manifest tail and delete the files the manifest proves garbage. On
 * success *out is owned by the caller: free with gt_close. */
int gt_open(const char *dir, const gt_options *opts, gt_store **out, gt_error *err);

/* Nonzero when the store keeps in-edges. */
int gt_in_edges(const gt_store *s);

/* Stops background work and frees the store. Unflushed MemGraph contents are
 * discarded (call gt_flush first to keep them). Live snapshots must have been
 * released. Always frees s, even on error. */
int gt_close(gt_store *s, gt_error *err);

/* Applies ops[0..n) atomically as one batch with one new sequence number,
 * written to *out_seq. srcpos[0..srcpos_len) (may be NULL/0 for none) is an
 * opaque source position recorded with the flush that makes this batch
 * durable. Ops apply in order within the batch. May block on a write stall. */
int gt_apply(gt_store *s, const gt_op *ops, size_t n, const uint8_t *srcpos, size_t srcpos_len, uint64_t *out_seq,
             gt_error *err);

/* gt_apply with a payload buffer: the ops' payload slices point into
 * payload[0, payload_len) (GT_ERR_INVALID when one does not, or is longer
 * than GT_MAX_PAYLOAD, or belongs to an op that is not an upsert; as is
 * GT_OP_ACCUMULATE on an op that is not an upsert). */
int gt_apply_ex(gt_store *s, const gt_op *ops, size_t n, const uint8_t *payload, size_t payload_len,
                const uint8_t *srcpos, size_t srcpos_len, uint64_t *out_seq, gt_error *err);

/* gt_set_type_aggregate's flags: the type accumulates (each upsert an
 * event operand added to its edge; gt_op's GT_OP_ACCUMULATE marks them). */
#define GT_TYPE_ACCUMULATE 1u

/* Records edge type t's aggregate in the store (its MANIFEST, durably,
 * before returning), so that every later open of the store has it:
 * flags GT_TYPE_ACCUMULATE with retain_us (Unix microseconds, at least 0;
 * 0 folds every event older than the newest): events of t whose event
 * time is within retain_us of the store's newest event time stay readable
 * one by one (gt_snapshot_edge_events); flush and compaction fold older
 * ones into one operand. flags 0 (replace, retain_us 0) is what a type
 * never recorded is: nothing is written. A call that changes nothing
 * writes nothing. GT_ERR_INVALID: t out of range, unknown flags, a
 * negative retain or one on a replace type, a type recorded as accumulate
 * made replace (never allowed: its next upserts would replace the events
 * its edges hold), or a change on a store opened read-only. */
int gt_set_type_aggregate(gt_store *s, uint32_t type, uint32_t flags, int64_t retain_us, gt_error *err);

/* The edge types recorded as accumulate, by type, with their retain:
 * (types[i], retain_us[i]) for i < min(*n, cap); *n receives how many
 * there are (GT_ERR_BUFFER when more than cap). */
int gt_type_aggregates(gt_store *s, uint32_t *types, int64_t *retain_us, size_t cap, size_t *n, gt_error *err);

/* Gives the event source name[0..len) (bytes, 1 to
 * GT_MAX_EVENT_SOURCE_NAME of them) a number in the store, recorded in its
 * MANIFEST (durably, before returning) the first time, so that every later
 * open has it: *source receives it (1, 2, ... in the order of first use;
 * the same name always gets the same number). GT_OP_SOURCE names a source
 * by it. GT_ERR_INVALID: a bad name, GT_MAX_EVENT_SOURCES already numbered,
 * or a new name on a store opened read-only. */
int gt_add_event_source(gt_store *s, const uint8_t *name, size_t len, uint32_t *source, gt_error *err);

/* The store's event sources: their names, back to back in
 * names[0..names_cap), source i+1's from ends[i-1] (0 for i = 0) to
 * ends[i], for i < min(*n, cap); *n receives how many there are and
 * *names_len their bytes (GT_ERR_BUFFER when either does not fit). */
int gt_event_sources(gt_store *s, uint8_t *names, size_t names_cap, size_t *names_len, uint64_t *ends, size_t cap,
                     size_t *n, gt_error *err);

/* The greatest event time of every batch applied since open, or of those
 * the store's flushes and compactions recorded before it (a store with an
 * accumulate type records it; 0: none yet): the watermark of retention,
 * so a reopened store folds by time what it folded before. */
int64_t gt_newest_event_time(gt_store *s);

/* Makes every applied batch durable (and the newest source position) and
 * returns when the manifest is synced. */
int gt_flush(gt_store *s, gt_error *err);

/* Starts making every applied batch durable without waiting: freezes the
 * active MemGraph and returns; when the previous one is still flushing, the
 * flush thread freezes it as soon as that flush is done (writers never wait
 * for it). *target receives the sequence number that is durable once
 * gt_durable_seq reaches it. */
int gt_flush_async(gt_store *s, uint64_t *target, gt_error *err);

/* The newest sequence number covered by a completed flush (cheap: no
 * metrics are gathered). */
uint64_t gt_durable_seq(gt_store *s);

/* Flushes, then compacts all data into the deepest level in use. */
int gt_compact_all(gt_store *s, gt_error *err);

/* Copies the source position of the newest durable flush into buf[0..cap).
 * *len receives its full length; if *len > cap nothing is copied. */
void gt_source_position(gt_store *s, uint8_t *buf, size_t cap, size_t *len);

void gt_get_metrics(gt_store *s, gt_metrics *out);

/* Pins the newest committed sequence number. Free with gt_snapshot_release. */
int gt_snapshot_new(gt_store *s, gt_snapshot **out, gt_error *err);
/* Pins a past sequence number seq (keep_history): the snapshot reads the
 * store as it was when seq was the newest. GT_ERR_INVALID when seq is above
 * the newest or below the oldest readable one (gt_metrics.
 * oldest_readable_seq), with both named. Free with gt_snapshot_release. */
int gt_snapshot_new_at(gt_store *s, uint64_t seq, gt_snapshot **out, gt_error *err);
/* Raises the history floor to seq (never lowers it; above the newest seq it
 * stops at the newest): versions at or below it that no snapshot at the
 * floor or later reads may be dropped by the next flush or compaction.
 * keep_history only (GT_ERR_INVALID otherwise). */
int gt_set_history_floor(gt_store *s, uint64_t seq, gt_error *err);

/* Pins the newest durable sequence number (gt_metrics.durable_seq): the
 * snapshot sees only flushed data, so its reads skip the MemGraphs and a
 * compacted range is copied out in bulk. Free with gt_snapshot_release. */
int gt_snapshot_new_durable(gt_store *s, gt_snapshot **out, gt_error *err);
void gt_snapshot_release(gt_snapshot *snap);
uint64_t gt_snapshot_seq(const gt_snapshot *snap);
/* One past the largest vertex id any edge of the store mentions (an upper
 * bound for the snapshot; never smaller than the true bound). */
uint64_t gt_snapshot_vertex_bound(const gt_snapshot *snap);
/* Per-band bounds as of the snapshot: *low is one past the largest id below
 * GT_HIGH_ID_BASE any edge mentions (0 if none), *high one past the largest
 * id at or above it (0 if none). Upper bounds, never smaller than the truth. */
void gt_snapshot_vertex_bounds(const gt_snapshot *snap, uint64_t *low, uint64_t *high);

/* Reads of edges. Each takes types, the edge types to read (NULL: every
 * type), and writes each edge's dst, weight, type and event time (Unix
 * microseconds, 0 when its operation gave none) at the same index of dsts,
 * weights, types_out and times_out (all but dsts may be NULL). A
 * vertex's edges come sorted by dst, and those to one dst by type
 * descending: (dst asc, type desc). */

/* The number of v's edges of the given types visible in the snapshot. */
int gt_snapshot_degree(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types, uint64_t *out,
                       gt_error *err);

/* Edges of v visible in the snapshot into dsts[0..cap) (and weights,
 * types_out). *n receives the count; if it is larger than cap, GT_ERR_BUFFER
 * is returned and nothing useful is copied. */
int gt_snapshot_neighbors(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types, uint64_t *dsts,
                          double *weights, uint16_t *types_out, int64_t *times_out, size_t cap, size_t *n,
                          gt_error *err);

/* One page of v's edges: those after the edge (after, after_type) in
 * (dst asc, type desc) order (all of them when has_after is 0), at most cap
 * of them into dsts[0..cap) (and weights, types_out). To page, pass the
 * last edge's dst and type as the next call's cursor. *n receives how many
 * were written and *more is 1 when more remain past them. Memory is bounded
 * by cap whatever the degree; a compacted vertex is found by binary search. */
int gt_snapshot_neighbors_after(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types, uint64_t after,
                                uint32_t after_type, uint32_t has_after, uint64_t *dsts, double *weights,
                                uint16_t *types_out, int64_t *times_out, size_t cap, size_t *n, uint32_t *more,
                                gt_error *err);

/* Edge lookup: the visible edges from src to dst of the given types (at
 * most one per type; several when src links to dst by edges of several
 * types), in type descending order, their weights, types and event times
 * into weights, types_out and times_out[0..cap) (each may be NULL). *n
 * receives the count (0: no such edge); if it is larger than cap,
 * GT_ERR_BUFFER is returned and nothing useful is copied (cap
 * GT_MAX_EDGE_TYPES always suffices). Each file holding src is searched
 * by binary search within src's edges, a MemGraph hub's cached versions
 * too, so a lookup costs O(log degree) per file, not the degree. */
int gt_snapshot_edge(gt_snapshot *snap, uint64_t src, uint64_t dst, const gt_type_set *types, double *weights,
                     uint16_t *types_out, int64_t *times_out, size_t cap, size_t *n, gt_error *err);

/* A batch of edge lookups: counts[i] receives the number of visible edges
 * from srcs[i] to dsts[i] of the given types (what gt_snapshot_edge's *n
 * would be), for i in [0, n). One call reads the store's current files
 * once for the whole batch and allocates nothing per lookup. */
int gt_snapshot_edge_counts(gt_snapshot *snap, const uint64_t *srcs, const uint64_t *dsts, size_t n,
                            const gt_type_set *types, uint32_t *counts, gt_error *err);

/* The extras of an edge an _ext read returns: count (events folded in; 0:
 * a replace edge), first_time (the least nonzero event time of its events)
 * and its payload (the newest event's, or a replace version's), the bytes
 * [payload_off, payload_off + payload_len) of the caller's payload buffer,
 * and the same version's source position (source 0: none; GT_OP_SOURCE). */
typedef struct gt_edge_ext {
  uint64_t count;
  int64_t first_time;
  uint64_t payload_off;
  uint32_t payload_len;
  uint32_t source;
  uint64_t position;
} gt_edge_ext;

/* gt_snapshot_edge, also filling ext[0..cap) and the payload buffer
 * payload[0..payload_cap). *payload_len receives the payload bytes the
 * edges need; if that is larger than payload_cap (or *n than cap),
 * GT_ERR_BUFFER is returned and nothing useful is copied. */
int gt_snapshot_edge_ext(gt_snapshot *snap, uint64_t src, uint64_t dst, const gt_type_set *types, double *weights,
                         uint16_t *types_out, int64_t *times_out, gt_edge_ext *ext, size_t cap, uint8_t *payload,
                         size_t payload_cap, size_t *payload_len, size_t *n, gt_error *err);

/* gt_snapshot_neighbors_after, also filling ext[0..cap) and the payload
 * buffer payload[0..payload_cap). A page stops early (*more 1) before an
 * edge whose payload does not fit; when the first edge's does not,
 * GT_ERR_BUFFER is returned with *payload_len the size it needs. */
int gt_snapshot_neighbors_after_ext(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types,
                                    uint64_t after, uint32_t after_type, uint32_t has_after, uint64_t *dsts,
                                    double *weights, uint16_t *types_out, int64_t *times_out, gt_edge_ext *ext,
                                    size_t cap, uint8_t *payload, size_t payload_cap, size_t *payload_len, size_t *n,
                                    uint32_t *more, gt_error *err);

/* The events of the edge (src, dst, type) visible in the snapshot that are
 * still held one by one (not folded by retention) and whose event time is
 * at least since_us, newest first (by seq; events of one batch in reverse
 * op order): their seqs, weights, times and payloads (ext: count 1,
 * first_time the time) into seqs/weights/times_out/ext[0..cap) (each may be
 * NULL) and payload[0..payload_cap). skip events that qualify are passed
 * over first (paging). *n receives how many were written; *more is 1 when
 * more qualify past them (a page also stops before an event whose payload
 * does not fit, GT_ERR_BUFFER when the first one's does not); *folded is 1
 * when the edge's fold holds events retention folded (older events exist
 * that are no longer listed). A replace edge, or none, has no events. */
int gt_snapshot_edge_events(gt_snapshot *snap, uint64_t src, uint64_t dst, uint32_t type, int64_t since_us,
                            uint64_t skip, uint64_t *seqs, double *weights, int64_t *times_out, gt_edge_ext *ext,
                            size_t cap, uint8_t *payload, size_t payload_cap, size_t *payload_len, size_t *n,
                            uint32_t *more, uint32_t *folded, gt_error *err);

/* Edges of every vertex in [lo, hi) that has at least one visible edge of
 * the given types, in vertex order. Fills vids[0..*nv), offs[0..*nv] (edge
 * offsets into dsts, offs[0] = 0), dsts/weights/types_out[0..*ne). Stops
 * early when either buffer is full (a vertex is never split) and sets *next
 * to the first vertex not yet reported (hi when done). offs must have room
 * for vcap+1 entries. If the first vertex alone needs more than ecap edges,
 * GT_ERR_BUFFER is returned and *ne holds the edge count it needs. */
int gt_snapshot_scan(gt_snapshot *snap, uint64_t lo, uint64_t hi, uint32_t dir, const gt_type_set *types,
                     uint64_t *vids, uint64_t *offs, size_t vcap, uint64_t *dsts, double *weights, uint16_t *types_out,
                     int64_t *times_out, size_t ecap, size_t *nv, size_t *ne, uint64_t *next, gt_error *err);

/* Edges of the vertices vids[0..n) (any order, repeats allowed) in one
 * call: vertex i's edges are dsts[offs[i]..offs[i+1]) (and weights,
 * types_out). offs must have room for n+1 entries; offs[0] = 0. Vertices
 * with no visible edge get an empty range. Stops before the first vertex
 * whose edges do not fit in ecap and sets *done to the number of vertices
 * filled (n when all fit). If vertex 0 alone needs more than ecap edges,
 * GT_ERR_BUFFER is returned and *ne holds the count it needs; otherwise *ne
 * is the number of edges written. */
int gt_snapshot_gather(gt_snapshot *snap, const uint64_t *vids, size_t n, uint32_t dir, const gt_type_set *types,
                       uint64_t *offs, uint64_t *dsts, double *weights, uint16_t *types_out, int64_t *times_out,
                       size_t ecap, size_t *done, size_t *ne, gt_error *err);

/* The bits of gt_file_info.flags (as the segment file's header stores them). */
#define GT_FILE_DENSE 0x01u         /* a dense vertex table (else a sparse index) */
#define GT_FILE_VERSIONS 0x02u      /* a version column */
#define GT_FILE_WEIGHTS 0x04u       /* a weight column */
#define GT_FILE_DST32 0x08u         /* destinations stored in 32 bits */
#define GT_FILE_MULTI_VERSION 0x10u /* some edge has several versions */
#define GT_FILE_TOMBSTONES 0x20u    /* some version is a delete */
#define GT_FILE_TYPES 0x40u         /* a type column (some edge's type is not 0) */
#define GT_FILE_TIMES 0x80u         /* a time column (some version has an event time) */
#define GT_FILE_BLOOM 0x100u        /* an edge filter (out-edge files): lookups skip files without the edge */
#define GT_FILE_HISTORY 0x200u      /* written keeping history above a floor */
#define GT_FILE_COUNTS 0x400u       /* count (and first-time) columns: some version is an event operand */
#define GT_FILE_PAYLOADS 0x800u     /* a payload column (some version has a payload) */

/* One live file of the store, for inspection. */
typedef struct gt_file_info {
  uint64_t id;
  uint32_t level; /* 0 = L0 */
  uint32_t dir;   /* gt_dir */
  uint64_t min_src, max_src, max_dst;
  uint64_t vertices, entries, bytes;
  uint64_t min_seq, max_seq;
  uint32_t flags; /* GT_FILE_* bits */
  uint32_t reserved;
} gt_file_info;

/* Copies up to cap live files (L0 newest first, then each level by min_src;
 * out-edges, then in-edges, then vertex cells) into out. *n receives the total count; if it is
 * larger than cap only cap were copied. The file name of id is
 * printf("%08llu.seg", id) in the store directory. */
void gt_list_files(gt_store *s, gt_file_info *out, size_t cap, size_t *n);

/* Reads and verifies every checksum of every live file. Returns the first
 * corruption found. */
int gt_verify_all(gt_store *s, gt_error *err);

/* What a finding of gt_check is about. */
typedef enum gt_finding_kind {
  GT_FINDING_DAMAGE = 0,      /* a checksum, format or consistency failure */
  GT_FINDING_MISSING = 1,     /* a live segment file is missing */
  GT_FINDING_UNEXPLAINED = 2, /* a segment file neither live nor provably garbage */
  GT_FINDING_TORN_TAIL = 3,   /* note: the MANIFEST's last record was cut short by a crash */
  GT_FINDING_LEFTOVER = 4     /* note: a segment file the manifest proves garbage, or a MANIFEST.tmp */
} gt_finding_kind;

/* One finding of gt_check: the file it is about, a byte offset in it, what
 * is wrong (what was expected and what was found), and its kind. */
typedef struct gt_problem {
  char *file;
  uint64_t offset;
  char *what;
  uint32_t kind; /* gt_finding_kind */
  uint32_t reserved;
} gt_problem;

/* What gt_check found. problems: everything that stops the store from
 * opening or would be refused on read. notes: what a read-write open would
 * change that holds no data (a torn manifest tail it drops, leftovers of
 * unfinished flushes and compactions it deletes). The manifest summary
 * fields are valid when manifest_ok. */
typedef struct gt_check_report {
  gt_problem *problems;
  size_t nproblems;
  gt_problem *notes;
  size_t nnotes;
  uint32_t manifest_ok;
  uint32_t in_edges;
  uint64_t manifest_bytes, manifest_records;
  uint64_t files_checked, bytes_checked; /* segment files read whole, and their bytes */
  uint64_t live_files;
  uint64_t durable_seq;
  uint64_t low_bound, high_bound; /* as gt_snapshot_vertex_bounds, of durable data */
  uint64_t next_file;
} gt_check_report;

/* Checks the store in dir without writing a byte: every manifest record,
 * every segment file present (header, footer, index, every data chunk),
 * each against the manifest, and the directory for files that are neither
 * live nor provably garbage. With manifest_cut below the MANIFEST's size it
 * checks as if the MANIFEST held only its first manifest_cut bytes (what a
 * repair that cuts it there would leave); UINT64_MAX checks it whole. Takes
 * the directory's LOCK shared, so it fails with GT_ERR_LOCKED while a
 * writer has the store open. Fails otherwise only when it cannot check at
 * all (no store there). On success *out is owned by the caller: free with
 * gt_check_report_free. */
int gt_check(const char *dir, uint64_t manifest_cut, gt_check_report **out, gt_error *err);
void gt_check_report_free(gt_check_report *r);

#ifdef __cplusplus
}
#endif
#endif /* GRAPHTIDE_H */
