// Package core is the cgo binding of graphtide's C++ storage core. The C++
// sources in this directory are compiled by cgo as part of this package, so
// `go build` needs no separate step (they live here, flat, because the Go
// build cache only notices changes to files in the package directory).
//
// graphtide.h is the whole C surface; this package is the only Go code that
// calls it. It translates handles and buffers one to one and promises no
// more than the header does: callers (internal/engine) own locking and
// lifetime rules. Every pointer passed to C here is Go memory borrowed for
// the duration of one call and containing no Go pointers; C keeps none of
// them. Handles returned by C are owned by the Go value that wraps them.
package core

/*
#cgo CXXFLAGS: -std=c++17 -O2 -Wall -Wextra
#cgo LDFLAGS: -lstdc++ -lpthread
#include <stdlib.h>
#include "graphtide.h"
*/
import "C"

import (
	"unsafe"
)

// Error codes, as in gt_code.
const (
	CodeInvalid    = int(C.GT_ERR_INVALID)
	CodeIO         = int(C.GT_ERR_IO)
	CodeCorruption = int(C.GT_ERR_CORRUPTION)
	CodeClosed     = int(C.GT_ERR_CLOSED)
	CodeBuffer     = int(C.GT_ERR_BUFFER)
	CodeInternal   = int(C.GT_ERR_INTERNAL)
	CodeLocked     = int(C.GT_ERR_LOCKED)
)

// The bits of a file's flags, as in GT_FILE_*.
const (
	FileDense        = uint32(C.GT_FILE_DENSE)
	FileVersions     = uint32(C.GT_FILE_VERSIONS)
	FileWeights      = uint32(C.GT_FILE_WEIGHTS)
	FileDst32        = uint32(C.GT_FILE_DST32)
	FileMultiVersion = uint32(C.GT_FILE_MULTI_VERSION)
	FileTombstones   = uint32(C.GT_FILE_TOMBSTONES)
	FileTypes        = uint32(C.GT_FILE_TYPES)
	FileTimes        = uint32(C.GT_FILE_TIMES)
	FileBloom        = uint32(C.GT_FILE_BLOOM)
	FileHistory      = uint32(C.GT_FILE_HISTORY)
	FileCounts       = uint32(C.GT_FILE_COUNTS)
	FilePayloads     = uint32(C.GT_FILE_PAYLOADS)
)

// Edge events (see graphtide.h): OpAccumulate in an upsert's Flags makes
// it an event operand; an upsert's payload is at most MaxPayload bytes.
const (
	OpAccumulate = uint32(C.GT_OP_ACCUMULATE)
	MaxPayload   = int(C.GT_MAX_PAYLOAD)
	// OpSource in an upsert's Flags: its payload starts with its event's
	// source position, SourcePosBytes bytes (u32 source, u64 position,
	// little-endian).
	OpSource              = uint32(C.GT_OP_SOURCE)
	SourcePosBytes        = int(C.GT_SOURCE_POS_BYTES)
	MaxEventSources       = int(C.GT_MAX_EVENT_SOURCES)
	MaxEventSourceNameLen = int(C.GT_MAX_EVENT_SOURCE_NAME)
)

// MaxVertex is GT_MAX_VERTEX.
const MaxVertex = uint64(C.GT_MAX_VERTEX)

// The limits of the options, as in graphtide.h's GT_MIN_* and GT_MAX_*
// (the core validates against the same; 0 means the default).
const (
	MinMemGraphBytes       = int64(C.GT_MIN_MEMGRAPH_BYTES)
	MaxMemGraphBytes       = int64(C.GT_MAX_MEMGRAPH_BYTES)
	MinTargetSegmentBytes  = int64(C.GT_MIN_TARGET_SEGMENT_BYTES)
	MaxTargetSegmentBytes  = int64(C.GT_MAX_TARGET_SEGMENT_BYTES)
	MinSizeRatio           = int64(C.GT_MIN_SIZE_RATIO)
	MaxSizeRatio           = int64(C.GT_MAX_SIZE_RATIO)
	MinL0CompactionTrigger = int64(C.GT_MIN_L0_COMPACTION_TRIGGER)
	MaxL0CompactionTrigger = int64(C.GT_MAX_L0_COMPACTION_TRIGGER)
	MinLevels              = int64(C.GT_MIN_LEVELS)
	MaxLevels              = int64(C.GT_MAX_LEVELS)
)

// Error is a failed call's gt_error, copied into Go memory.
type Error struct {
	Code   int
	Msg    string
	File   string
	Offset uint64
}

func (e *Error) Error() string { return e.Msg }

func takeError(rc C.int, e *C.gt_error) *Error {
	out := &Error{Code: int(rc), Msg: C.GoString(e.message), Offset: uint64(e.offset)}
	if e.file != nil {
		out.File = C.GoString(e.file)
	}
	C.gt_error_free(e)
	return out
}

// Op kinds, as in gt_op_kind.
const (
	OpUpsert       = uint32(C.GT_OP_UPSERT)
	OpDeleteEdge   = uint32(C.GT_OP_DELETE_EDGE)
	OpDeleteVertex = uint32(C.GT_OP_DELETE_VERTEX)
	OpPutCell      = uint32(C.GT_OP_PUT_CELL)
	OpDeleteCell   = uint32(C.GT_OP_DELETE_CELL)
)

// Vertex records' cells (see GT_OP_PUT_CELL): a cell's Dst is CellBase
// plus its index, below MaxCells; reads in direction DirVertex return them.
const (
	CellBase  = uint64(C.GT_CELL_BASE)
	MaxCells  = int(C.GT_MAX_CELLS)
	DirVertex = uint32(C.GT_VERTEX)
)

// Op mirrors gt_op byte for byte (checked in init).
type Op struct {
	Src, Dst   uint64
	Weight     float64
	Kind       uint32
	Type       uint32 // edge type, below MaxEdgeTypes
	Time       int64  // event time, Unix µs (0: none)
	Flags      uint32 // OpAccumulate (an upsert) or 0
	PayloadLen uint32 // an upsert's payload: [PayloadOff, PayloadOff+PayloadLen) of the batch's payload buffer
	PayloadOff uint64
}

// MaxEdgeTypes is GT_MAX_EDGE_TYPES: edge types are 0 to MaxEdgeTypes-1.
const MaxEdgeTypes = int(C.GT_MAX_EDGE_TYPES)

// TypeSet mirrors gt_type_set: bit t set means type t is in the set.
type TypeSet [MaxEdgeTypes / 64]uint64

func init() {
	if unsafe.Sizeof(Op{}) != unsafe.Sizeof(C.gt_op{}) ||
		unsafe.Offsetof(Op{}.Kind) != unsafe.Offsetof(C.gt_op{}.kind) ||
		unsafe.Offsetof(Op{}.Type) != unsafe.Offsetof(C.gt_op{}._type) ||
		unsafe.Offsetof(Op{}.Time) != unsafe.Offsetof(C.gt_op{}.time) ||
		unsafe.Offsetof(Op{}.Flags) != unsafe.Offsetof(C.gt_op{}.flags) ||
		unsafe.Offsetof(Op{}.PayloadLen) != unsafe.Offsetof(C.gt_op{}.payload_len) ||
		unsafe.Offsetof(Op{}.PayloadOff) != unsafe.Offsetof(C.gt_op{}.payload_off) {
		panic("core: Op layout does not match gt_op")
	}
	if unsafe.Sizeof(TypeSet{}) != unsafe.Sizeof(C.gt_type_set{}) {
		panic("core: TypeSet layout does not match gt_type_set")
	}
	if unsafe.Sizeof(EdgeExt{}) != unsafe.Sizeof(C.gt_edge_ext{}) ||
		unsafe.Offsetof(EdgeExt{}.PayloadOff) != unsafe.Offsetof(C.gt_edge_ext{}.payload_off) ||
		unsafe.Offsetof(EdgeExt{}.PayloadLen) != unsafe.Offsetof(C.gt_edge_ext{}.payload_len) ||
		unsafe.Offsetof(EdgeExt{}.Source) != unsafe.Offsetof(C.gt_edge_ext{}.source) ||
		unsafe.Offsetof(EdgeExt{}.Position) != unsafe.Offsetof(C.gt_edge_ext{}.position) {
		panic("core: EdgeExt layout does not match gt_edge_ext")
	}
}

// tsp passes a type filter (nil: every type). The core only reads it
// during the call.
func tsp(ts *TypeSet) *C.gt_type_set { return (*C.gt_type_set)(unsafe.Pointer(ts)) }

// cptr passes a Go slice of plain numbers to the core as a pointer to its
// first element of the C type P of the same layout (nil when empty); the
// core only borrows it for the call. u64p, f64p, i64p and u16p are its
// instances.
func cptr[P, T any](s []T) *P {
	if len(s) == 0 {
		return nil
	}
	return (*P)(unsafe.Pointer(&s[0]))
}

func u64p(s []uint64) *C.uint64_t { return cptr[C.uint64_t](s) }
func f64p(s []float64) *C.double  { return cptr[C.double](s) }
func i64p(s []int64) *C.int64_t   { return cptr[C.int64_t](s) }
func u16p(s []uint16) *C.uint16_t { return cptr[C.uint16_t](s) }
func u32p(s []uint32) *C.uint32_t { return cptr[C.uint32_t](s) }
func u8p(s []byte) *C.uint8_t     { return cptr[C.uint8_t](s) }
func extp(s []EdgeExt) *C.gt_edge_ext {
	return cptr[C.gt_edge_ext](s)
}

// EdgeExt mirrors gt_edge_ext (checked in init): an edge's count of
// events (0: a replace edge), first event time and payload, bytes
// [PayloadOff, PayloadOff+PayloadLen) of the read's payload buffer, and
// the same version's source position (Source 0: none).
type EdgeExt struct {
	Count      uint64
	FirstTime  int64
	PayloadOff uint64
	PayloadLen uint32
	Source     uint32
	Position   uint64
}

// Options mirrors gt_options; zero fields mean the core's defaults.
type Options struct {
	MemGraphBytes, TargetSegmentBytes         uint64
	SizeRatio, L0CompactionTrigger, MaxLevels uint32
	InEdges, DisableAutoCompaction            bool
	InEdgesAsStored                           bool
	ReadOnly                                  bool
	TestPauseAt                               uint32 // gt_test_point; testing only
	TestManifestRewriteBytes                  uint64 // testing only; 0 = the core's bound
	KeepHistory                               bool   // gt_options.keep_history
	HistorySeqs                               uint64 // gt_options.history_seqs
}

// Test points of gt_test_point (Options.TestPauseAt).
const (
	TestFlushBeforeEdit      = uint32(C.GT_TEST_FLUSH_BEFORE_EDIT)
	TestFlushAfterEdit       = uint32(C.GT_TEST_FLUSH_AFTER_EDIT)
	TestCompactBeforeEdit    = uint32(C.GT_TEST_COMPACT_BEFORE_EDIT)
	TestCompactAfterEdit     = uint32(C.GT_TEST_COMPACT_AFTER_EDIT)
	TestManifestPartial      = uint32(C.GT_TEST_MANIFEST_PARTIAL)
	TestManifestBeforeSwitch = uint32(C.GT_TEST_MANIFEST_BEFORE_SWITCH)
	TestManifestAfterSwitch  = uint32(C.GT_TEST_MANIFEST_AFTER_SWITCH)
)

func b2u(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}

// Store owns a gt_store handle.
type Store struct{ h *C.gt_store }

// Open calls gt_open.
func Open(dir string, o Options) (*Store, *Error) {
	co := C.gt_options{
		memgraph_bytes:              C.uint64_t(o.MemGraphBytes),
		target_segment_bytes:        C.uint64_t(o.TargetSegmentBytes),
		size_ratio:                  C.uint32_t(o.SizeRatio),
		l0_compaction_trigger:       C.uint32_t(o.L0CompactionTrigger),
		max_levels:                  C.uint32_t(o.MaxLevels),
		in_edges:                    b2u(o.InEdges),
		disable_auto_compaction:     b2u(o.DisableAutoCompaction),
		in_edges_as_stored:          b2u(o.InEdgesAsStored),
		read_only:                   b2u(o.ReadOnly),
		test_pause_at:               C.uint32_t(o.TestPauseAt),
		test_manifest_rewrite_bytes: C.uint64_t(o.TestManifestRewriteBytes),
		keep_history:                b2u(o.KeepHistory),
		history_seqs:                C.uint64_t(o.HistorySeqs),
	}
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var h *C.gt_store
	var e C.gt_error
	if rc := C.gt_open(cdir, &co, &h, &e); rc != 0 {
		return nil, takeError(rc, &e)
	}
	return &Store{h: h}, nil
}

// InEdges calls gt_in_edges.
func (s *Store) InEdges() bool { return C.gt_in_edges(s.h) != 0 }

// Close calls gt_close; the handle is freed even on error.
func (s *Store) Close() *Error {
	var e C.gt_error
	rc := C.gt_close(s.h, &e)
	s.h = nil
	if rc != 0 {
		return takeError(rc, &e)
	}
	return nil
}

// Apply calls gt_apply with ops borrowed for the call.
func (s *Store) Apply(ops []Op, srcpos []byte) (uint64, *Error) {
	return s.ApplyEx(ops, nil, srcpos)
}

// ApplyEx calls gt_apply_ex: the ops' payload slices point into payload.
func (s *Store) ApplyEx(ops []Op, payload, srcpos []byte) (uint64, *Error) {
	var p *C.gt_op
	if len(ops) > 0 {
		p = (*C.gt_op)(unsafe.Pointer(&ops[0]))
	}
	var seq C.uint64_t
	var e C.gt_error
	if rc := C.gt_apply_ex(s.h, p, C.size_t(len(ops)), u8p(payload), C.size_t(len(payload)), u8p(srcpos),
		C.size_t(len(srcpos)), &seq, &e); rc != 0 {
		return 0, takeError(rc, &e)
	}
	return uint64(seq), nil
}

// SetTypeAggregate calls gt_set_type_aggregate: it records type t as
// accumulate with retainMicros, or (accumulate false, retain 0) checks
// that t is not recorded as accumulate.
func (s *Store) SetTypeAggregate(t uint32, accumulate bool, retainMicros int64) *Error {
	var flags C.uint32_t
	if accumulate {
		flags = C.GT_TYPE_ACCUMULATE
	}
	return s.simple(func(e *C.gt_error) C.int {
		return C.gt_set_type_aggregate(s.h, C.uint32_t(t), flags, C.int64_t(retainMicros), e)
	})
}

// TypeAggregate is one edge type recorded as accumulate (gt_type_aggregates).
type TypeAggregate struct {
	Type         uint32
	RetainMicros int64
}

// TypeAggregates calls gt_type_aggregates: the types recorded as
// accumulate, by type.
func (s *Store) TypeAggregates() ([]TypeAggregate, *Error) {
	types, retain := make([]C.uint32_t, 16), make([]C.int64_t, 16)
	for {
		var n C.size_t
		var e C.gt_error
		rc := C.gt_type_aggregates(s.h, &types[0], &retain[0], C.size_t(len(types)), &n, &e)
		if rc != 0 {
			err := takeError(rc, &e)
			if err.Code == CodeBuffer && int(n) > len(types) {
				types, retain = make([]C.uint32_t, n), make([]C.int64_t, n)
				continue
			}
			return nil, err
		}
		out := make([]TypeAggregate, n)
		for i := range out {
			out[i] = TypeAggregate{Type: uint32(types[i]), RetainMicros: int64(retain[i])}
		}
		return out, nil
	}
}

// AddEventSource calls gt_add_event_source: the store's number of the
// event source name (recorded durably the first time).
func (s *Store) AddEventSource(name string) (uint32, *Error) {
	var src C.uint32_t
	b := []byte(name)
	err := s.simple(func(e *C.gt_error) C.int {
		return C.gt_add_event_source(s.h, u8p(b), C.size_t(len(b)), &src, e)
	})
	return uint32(src), err
}

// EventSources calls gt_event_sources: the recorded event sources' names,
// source i+1 at [i].
func (s *Store) EventSources() ([]string, *Error) {
	names, ends := make([]byte, 4096), make([]uint64, 64)
	for {
		var n, nl C.size_t
		var e C.gt_error
		rc := C.gt_event_sources(s.h, u8p(names), C.size_t(len(names)), &nl, u64p(ends), C.size_t(len(ends)), &n, &e)
		if rc != 0 {
			err := takeError(rc, &e)
			if err.Code == CodeBuffer && (int(n) > len(ends) || int(nl) > len(names)) {
				names, ends = make([]byte, max(int(nl), len(names))), make([]uint64, max(int(n), len(ends)))
				continue
			}
			return nil, err
		}
		out := make([]string, n)
		var at uint64
		for i := range out {
			out[i] = string(names[at:ends[i]])
			at = ends[i]
		}
		return out, nil
	}
}

// NewestEventTime calls gt_newest_event_time.
func (s *Store) NewestEventTime() int64 { return int64(C.gt_newest_event_time(s.h)) }

func (s *Store) simple(f func(*C.gt_error) C.int) *Error {
	var e C.gt_error
	if rc := f(&e); rc != 0 {
		return takeError(rc, &e)
	}
	return nil
}

// Flush calls gt_flush.
func (s *Store) Flush() *Error {
	return s.simple(func(e *C.gt_error) C.int { return C.gt_flush(s.h, e) })
}

// FlushAsync calls gt_flush_async.
func (s *Store) FlushAsync() (uint64, *Error) {
	var target C.uint64_t
	var e C.gt_error
	if rc := C.gt_flush_async(s.h, &target, &e); rc != 0 {
		return 0, takeError(rc, &e)
	}
	return uint64(target), nil
}

// DurableSeq calls gt_durable_seq.
func (s *Store) DurableSeq() uint64 { return uint64(C.gt_durable_seq(s.h)) }

// CompactAll calls gt_compact_all.
func (s *Store) CompactAll() *Error {
	return s.simple(func(e *C.gt_error) C.int { return C.gt_compact_all(s.h, e) })
}

// VerifyAll calls gt_verify_all.
func (s *Store) VerifyAll() *Error {
	return s.simple(func(e *C.gt_error) C.int { return C.gt_verify_all(s.h, e) })
}

// SourcePosition copies the newest durable source position.
func (s *Store) SourcePosition() []byte {
	var n C.size_t
	C.gt_source_position(s.h, nil, 0, &n)
	for n > 0 {
		buf := make([]byte, n)
		var got C.size_t
		C.gt_source_position(s.h, (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &got)
		if got <= C.size_t(len(buf)) {
			return buf[:got]
		}
		n = got // a newer flush recorded a longer position in between
	}
	return nil
}

// LevelMetrics mirrors gt_level_metrics.
type LevelMetrics struct{ Files, Bytes, Entries uint64 }

// Metrics mirrors gt_metrics.
type Metrics struct {
	LastSeq, DurableSeq, MemGraphBytes, MemGraphEntries                uint64
	Flushes, FlushNanos, FlushBytes                                    uint64
	Compactions, CompactionNanos, CompactionRead, CompactionWritten    uint64
	Stalls, StallNanos, SnapshotsOpen, VertexDeletes, BackgroundErrors uint64
	DeferredFlushes                                                    uint64
	ManifestBytes, ManifestRewrites, MemGraphPoolBytes, ApplyCPUNanos  uint64
	OldestReadableSeq                                                  uint64
	Levels                                                             []LevelMetrics
}

// Metrics calls gt_get_metrics.
func (s *Store) Metrics() Metrics {
	var c C.gt_metrics
	C.gt_get_metrics(s.h, &c)
	m := Metrics{
		LastSeq: uint64(c.last_seq), DurableSeq: uint64(c.durable_seq),
		MemGraphBytes: uint64(c.memgraph_bytes), MemGraphEntries: uint64(c.memgraph_entries),
		Flushes: uint64(c.flushes), FlushNanos: uint64(c.flush_nanos), FlushBytes: uint64(c.flush_bytes),
		Compactions: uint64(c.compactions), CompactionNanos: uint64(c.compaction_nanos),
		CompactionRead: uint64(c.compaction_bytes_read), CompactionWritten: uint64(c.compaction_bytes_written),
		Stalls: uint64(c.stalls), StallNanos: uint64(c.stall_nanos), SnapshotsOpen: uint64(c.snapshots_open),
		VertexDeletes: uint64(c.vertex_deletes), BackgroundErrors: uint64(c.background_errors),
		DeferredFlushes: uint64(c.deferred_flushes),
		ManifestBytes:   uint64(c.manifest_bytes), ManifestRewrites: uint64(c.manifest_rewrites),
		MemGraphPoolBytes: uint64(c.memgraph_pool_bytes), ApplyCPUNanos: uint64(c.apply_cpu_nanos),
		OldestReadableSeq: uint64(c.oldest_readable_seq),
	}
	for i := 0; i < int(c.num_levels) && i < len(c.levels); i++ {
		l := c.levels[i]
		m.Levels = append(m.Levels, LevelMetrics{uint64(l.files), uint64(l.bytes), uint64(l.entries)})
	}
	return m
}

// Snapshot owns a gt_snapshot handle.
type Snapshot struct{ h *C.gt_snapshot }

// HighIDBase is GT_HIGH_ID_BASE: ids from it up form the high band.
const HighIDBase = uint64(C.GT_HIGH_ID_BASE)

// Snapshot calls gt_snapshot_new, or gt_snapshot_new_durable with durable.
func (s *Store) Snapshot(durable bool) (*Snapshot, *Error) {
	var h *C.gt_snapshot
	var e C.gt_error
	var rc C.int
	if durable {
		rc = C.gt_snapshot_new_durable(s.h, &h, &e)
	} else {
		rc = C.gt_snapshot_new(s.h, &h, &e)
	}
	if rc != 0 {
		return nil, takeError(rc, &e)
	}
	return &Snapshot{h: h}, nil
}

// SnapshotAt calls gt_snapshot_new_at: a snapshot of the past seq.
func (s *Store) SnapshotAt(seq uint64) (*Snapshot, *Error) {
	var h *C.gt_snapshot
	var e C.gt_error
	if rc := C.gt_snapshot_new_at(s.h, C.uint64_t(seq), &h, &e); rc != 0 {
		return nil, takeError(rc, &e)
	}
	return &Snapshot{h: h}, nil
}

// SetHistoryFloor calls gt_set_history_floor.
func (s *Store) SetHistoryFloor(seq uint64) *Error {
	var e C.gt_error
	if rc := C.gt_set_history_floor(s.h, C.uint64_t(seq), &e); rc != 0 {
		return takeError(rc, &e)
	}
	return nil
}

// FileInfo mirrors gt_file_info.
type FileInfo struct {
	ID                                       uint64
	Level, Dir                               uint32
	MinSrc, MaxSrc, MaxDst                   uint64
	Vertices, Entries, Bytes, MinSeq, MaxSeq uint64
	Flags                                    uint32
}

// Files calls gt_list_files.
func (s *Store) Files() []FileInfo {
	var n C.size_t
	C.gt_list_files(s.h, nil, 0, &n)
	for {
		buf := make([]C.gt_file_info, int(n)+8) // room for files added meanwhile
		var got C.size_t
		C.gt_list_files(s.h, &buf[0], C.size_t(len(buf)), &got)
		if int(got) > len(buf) {
			n = got
			continue
		}
		out := make([]FileInfo, got)
		for i := range out {
			f := &buf[i]
			out[i] = FileInfo{ID: uint64(f.id), Level: uint32(f.level), Dir: uint32(f.dir),
				MinSrc: uint64(f.min_src), MaxSrc: uint64(f.max_src), MaxDst: uint64(f.max_dst),
				Vertices: uint64(f.vertices), Entries: uint64(f.entries), Bytes: uint64(f.bytes),
				MinSeq: uint64(f.min_seq), MaxSeq: uint64(f.max_seq), Flags: uint32(f.flags)}
		}
		return out
	}
}

// Release calls gt_snapshot_release.
func (sn *Snapshot) Release() {
	C.gt_snapshot_release(sn.h)
	sn.h = nil
}

// Seq calls gt_snapshot_seq.
func (sn *Snapshot) Seq() uint64 { return uint64(C.gt_snapshot_seq(sn.h)) }

// VertexBound calls gt_snapshot_vertex_bound.
func (sn *Snapshot) VertexBound() uint64 { return uint64(C.gt_snapshot_vertex_bound(sn.h)) }

// VertexBounds calls gt_snapshot_vertex_bounds.
func (sn *Snapshot) VertexBounds() (low, high uint64) {
	var l, h C.uint64_t
	C.gt_snapshot_vertex_bounds(sn.h, &l, &h)
	return uint64(l), uint64(h)
}

// Gather calls gt_snapshot_gather; len(offs) must be len(vids)+1 and w,
// t and tm, when not nil, as long as dsts. On CodeBuffer, ne is the edge
// count the first vertex needs.
func (sn *Snapshot) Gather(vids []uint64, dir uint32, ts *TypeSet, offs, dsts []uint64, w []float64, t []uint16, tm []int64) (done, ne int, err *Error) {
	var cdone, cne C.size_t
	var e C.gt_error
	rc := C.gt_snapshot_gather(sn.h, u64p(vids), C.size_t(len(vids)), C.uint32_t(dir), tsp(ts), u64p(offs), u64p(dsts),
		f64p(w), u16p(t), i64p(tm), C.size_t(len(dsts)), &cdone, &cne, &e)
	if rc != 0 {
		return int(cdone), int(cne), takeError(rc, &e)
	}
	return int(cdone), int(cne), nil
}

// Degree calls gt_snapshot_degree.
func (sn *Snapshot) Degree(v uint64, dir uint32, ts *TypeSet) (uint64, *Error) {
	var d C.uint64_t
	var e C.gt_error
	if rc := C.gt_snapshot_degree(sn.h, C.uint64_t(v), C.uint32_t(dir), tsp(ts), &d, &e); rc != 0 {
		return 0, takeError(rc, &e)
	}
	return uint64(d), nil
}

// Neighbors calls gt_snapshot_neighbors with dsts (and w, t and tm unless
// nil) as the caller buffers; n is the full count even when it exceeds
// len(dsts) (CodeBuffer).
func (sn *Snapshot) Neighbors(v uint64, dir uint32, ts *TypeSet, dsts []uint64, w []float64, t []uint16, tm []int64) (int, *Error) {
	var n C.size_t
	var e C.gt_error
	rc := C.gt_snapshot_neighbors(sn.h, C.uint64_t(v), C.uint32_t(dir), tsp(ts), u64p(dsts), f64p(w), u16p(t),
		i64p(tm), C.size_t(len(dsts)), &n, &e)
	if rc != 0 {
		return int(n), takeError(rc, &e)
	}
	return int(n), nil
}

// NeighborsAfter calls gt_snapshot_neighbors_after with dsts (and w, t and
// tm unless nil, as long as dsts) as the page buffer; the page starts past
// the edge (after, afterType).
func (sn *Snapshot) NeighborsAfter(v uint64, dir uint32, ts *TypeSet, after uint64, afterType uint16, hasAfter bool, dsts []uint64, w []float64, t []uint16, tm []int64) (n int, more bool, err *Error) {
	var cn C.size_t
	var cmore C.uint32_t
	var e C.gt_error
	rc := C.gt_snapshot_neighbors_after(sn.h, C.uint64_t(v), C.uint32_t(dir), tsp(ts), C.uint64_t(after),
		C.uint32_t(afterType), b2u(hasAfter), u64p(dsts), f64p(w), u16p(t), i64p(tm), C.size_t(len(dsts)), &cn, &cmore, &e)
	if rc != 0 {
		return 0, false, takeError(rc, &e)
	}
	return int(cn), cmore != 0, nil
}

// Edge calls gt_snapshot_edge with w (and t and tm unless nil, as long as
// w) as the buffer of the edges from src to dst; n is the full count even
// when it exceeds len(w) (CodeBuffer).
func (sn *Snapshot) Edge(src, dst uint64, ts *TypeSet, w []float64, t []uint16, tm []int64) (int, *Error) {
	var n C.size_t
	var e C.gt_error
	rc := C.gt_snapshot_edge(sn.h, C.uint64_t(src), C.uint64_t(dst), tsp(ts), f64p(w), u16p(t), i64p(tm),
		C.size_t(len(w)), &n, &e)
	if rc != 0 {
		return int(n), takeError(rc, &e)
	}
	return int(n), nil
}

// EdgeCounts calls gt_snapshot_edge_counts; srcs, dsts and counts have
// the same length.
func (sn *Snapshot) EdgeCounts(srcs, dsts []uint64, ts *TypeSet, counts []uint32) *Error {
	if len(srcs) == 0 {
		return nil
	}
	var e C.gt_error
	if rc := C.gt_snapshot_edge_counts(sn.h, u64p(srcs), u64p(dsts), C.size_t(len(srcs)), tsp(ts), u32p(counts), &e); rc != 0 {
		return takeError(rc, &e)
	}
	return nil
}

// EdgeExt calls gt_snapshot_edge_ext: as Edge, with x (as long as w) and
// the payload buffer pay. On CodeBuffer n and payLen are what it needs.
func (sn *Snapshot) EdgeExt(src, dst uint64, ts *TypeSet, w []float64, t []uint16, tm []int64, x []EdgeExt, pay []byte) (n, payLen int, err *Error) {
	var cn, cpl C.size_t
	var e C.gt_error
	rc := C.gt_snapshot_edge_ext(sn.h, C.uint64_t(src), C.uint64_t(dst), tsp(ts), f64p(w), u16p(t), i64p(tm), extp(x),
		C.size_t(len(w)), u8p(pay), C.size_t(len(pay)), &cpl, &cn, &e)
	if rc != 0 {
		return int(cn), int(cpl), takeError(rc, &e)
	}
	return int(cn), int(cpl), nil
}

// NeighborsAfterExt calls gt_snapshot_neighbors_after_ext: as
// NeighborsAfter, with x (as long as dsts) and the payload buffer pay. On
// CodeBuffer payLen is what the first edge needs.
func (sn *Snapshot) NeighborsAfterExt(v uint64, dir uint32, ts *TypeSet, after uint64, afterType uint16, hasAfter bool, dsts []uint64, w []float64, t []uint16, tm []int64, x []EdgeExt, pay []byte) (n, payLen int, more bool, err *Error) {
	var cn, cpl C.size_t
	var cmore C.uint32_t
	var e C.gt_error
	rc := C.gt_snapshot_neighbors_after_ext(sn.h, C.uint64_t(v), C.uint32_t(dir), tsp(ts), C.uint64_t(after),
		C.uint32_t(afterType), b2u(hasAfter), u64p(dsts), f64p(w), u16p(t), i64p(tm), extp(x), C.size_t(len(dsts)),
		u8p(pay), C.size_t(len(pay)), &cpl, &cn, &cmore, &e)
	if rc != 0 {
		return 0, int(cpl), false, takeError(rc, &e)
	}
	return int(cn), int(cpl), cmore != 0, nil
}

// EdgeEvents calls gt_snapshot_edge_events with seqs, w, tm and x (as long
// as seqs) and the payload buffer pay. On CodeBuffer payLen is what the
// first event needs.
func (sn *Snapshot) EdgeEvents(src, dst uint64, t uint32, since int64, skip uint64, seqs []uint64, w []float64, tm []int64, x []EdgeExt, pay []byte) (n, payLen int, more, folded bool, err *Error) {
	var cn, cpl C.size_t
	var cmore, cfolded C.uint32_t
	var e C.gt_error
	rc := C.gt_snapshot_edge_events(sn.h, C.uint64_t(src), C.uint64_t(dst), C.uint32_t(t), C.int64_t(since),
		C.uint64_t(skip), u64p(seqs), f64p(w), i64p(tm), extp(x), C.size_t(len(seqs)), u8p(pay), C.size_t(len(pay)),
		&cpl, &cn, &cmore, &cfolded, &e)
	if rc != 0 {
		return 0, int(cpl), false, false, takeError(rc, &e)
	}
	return int(cn), int(cpl), cmore != 0, cfolded != 0, nil
}

// Scan calls gt_snapshot_scan; len(offs) must be len(vids)+1 and w, t and
// tm, when not nil, as long as dsts.
func (sn *Snapshot) Scan(lo, hi uint64, dir uint32, ts *TypeSet, vids, offs, dsts []uint64, w []float64, t []uint16, tm []int64) (nv, ne int, next uint64, err *Error) {
	var cnv, cne C.size_t
	var cnext C.uint64_t
	var e C.gt_error
	rc := C.gt_snapshot_scan(sn.h, C.uint64_t(lo), C.uint64_t(hi), C.uint32_t(dir), tsp(ts), u64p(vids), u64p(offs),
		C.size_t(len(vids)), u64p(dsts), f64p(w), u16p(t), i64p(tm), C.size_t(len(dsts)), &cnv, &cne, &cnext, &e)
	if rc != 0 {
		return int(cnv), int(cne), uint64(cnext), takeError(rc, &e)
	}
	return int(cnv), int(cne), uint64(cnext), nil
}

// Finding kinds, as in gt_finding_kind.
const (
	FindingDamage      = uint32(C.GT_FINDING_DAMAGE)
	FindingMissing     = uint32(C.GT_FINDING_MISSING)
	FindingUnexplained = uint32(C.GT_FINDING_UNEXPLAINED)
	FindingTornTail    = uint32(C.GT_FINDING_TORN_TAIL)
	FindingLeftover    = uint32(C.GT_FINDING_LEFTOVER)
)

// Problem is one gt_problem, copied into Go memory.
type Problem struct {
	File   string
	Offset uint64
	What   string
	Kind   uint32
}

// CheckReport is a gt_check_report, copied into Go memory.
type CheckReport struct {
	Problems, Notes                []Problem
	ManifestOK, InEdges            bool
	ManifestBytes, ManifestRecords uint64
	FilesChecked, BytesChecked     uint64
	LiveFiles, DurableSeq          uint64
	LowBound, HighBound, NextFile  uint64
}

func problems(p *C.gt_problem, n C.size_t) []Problem {
	if n == 0 {
		return nil
	}
	out := make([]Problem, int(n))
	for i, q := range unsafe.Slice(p, int(n)) {
		out[i] = Problem{File: C.GoString(q.file), Offset: uint64(q.offset), What: C.GoString(q.what), Kind: uint32(q.kind)}
	}
	return out
}

// Check calls gt_check (cut: math.MaxUint64 for the whole manifest); the
// report the core allocates is copied and freed before it returns.
func Check(dir string, cut uint64) (*CheckReport, *Error) {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var r *C.gt_check_report
	var e C.gt_error
	if rc := C.gt_check(cdir, C.uint64_t(cut), &r, &e); rc != 0 {
		return nil, takeError(rc, &e)
	}
	defer C.gt_check_report_free(r)
	return &CheckReport{
		Problems: problems(r.problems, r.nproblems), Notes: problems(r.notes, r.nnotes),
		ManifestOK: r.manifest_ok != 0, InEdges: r.in_edges != 0,
		ManifestBytes: uint64(r.manifest_bytes), ManifestRecords: uint64(r.manifest_records),
		FilesChecked: uint64(r.files_checked), BytesChecked: uint64(r.bytes_checked),
		LiveFiles: uint64(r.live_files), DurableSeq: uint64(r.durable_seq),
		LowBound: uint64(r.low_bound), HighBound: uint64(r.high_bound), NextFile: uint64(r.next_file),
	}, nil
}
