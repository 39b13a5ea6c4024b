// capi.cc -- the C entry points of graphtide.h. Every function converts
// Status to gt_code, and catches every exception so none crosses into Go.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>

#include "graphtide.h"
#include "recovery.h"
#include "store.h"

struct gt_store {
  std::unique_ptr<gt::Store> s;
};

struct gt_snapshot {
  gt::SnapshotReader r;
};

// INVARIANT: the core's Status codes are the C header's, value for value:
// Fail converts one to the other by a cast.
static_assert(static_cast<int32_t>(gt::Code::kOk) == GT_OK, "gt::Code::kOk != GT_OK");
static_assert(static_cast<int32_t>(gt::Code::kInvalid) == GT_ERR_INVALID, "gt::Code::kInvalid != GT_ERR_INVALID");
static_assert(static_cast<int32_t>(gt::Code::kIO) == GT_ERR_IO, "gt::Code::kIO != GT_ERR_IO");
static_assert(static_cast<int32_t>(gt::Code::kCorruption) == GT_ERR_CORRUPTION,
              "gt::Code::kCorruption != GT_ERR_CORRUPTION");
static_assert(static_cast<int32_t>(gt::Code::kClosed) == GT_ERR_CLOSED, "gt::Code::kClosed != GT_ERR_CLOSED");
static_assert(static_cast<int32_t>(gt::Code::kBuffer) == GT_ERR_BUFFER, "gt::Code::kBuffer != GT_ERR_BUFFER");
static_assert(static_cast<int32_t>(gt::Code::kInternal) == GT_ERR_INTERNAL, "gt::Code::kInternal != GT_ERR_INTERNAL");
static_assert(static_cast<int32_t>(gt::Code::kLocked) == GT_ERR_LOCKED, "gt::Code::kLocked != GT_ERR_LOCKED");

// INVARIANT: gt_file_info.flags passes the segment header's flags on as
// they are, so the header's bits are the segment format's.
static_assert(gt::kFlagDense == GT_FILE_DENSE, "kFlagDense != GT_FILE_DENSE");
static_assert(gt::kFlagVers == GT_FILE_VERSIONS, "kFlagVers != GT_FILE_VERSIONS");
static_assert(gt::kFlagWeights == GT_FILE_WEIGHTS, "kFlagWeights != GT_FILE_WEIGHTS");
static_assert(gt::kFlagDst32 == GT_FILE_DST32, "kFlagDst32 != GT_FILE_DST32");
static_assert(gt::kFlagMultiVersion == GT_FILE_MULTI_VERSION, "kFlagMultiVersion != GT_FILE_MULTI_VERSION");
static_assert(gt::kFlagTombstones == GT_FILE_TOMBSTONES, "kFlagTombstones != GT_FILE_TOMBSTONES");
static_assert(gt::kFlagHistory == GT_FILE_HISTORY, "kFlagHistory != GT_FILE_HISTORY");
static_assert(gt::kFlagCounts == GT_FILE_COUNTS, "kFlagCounts != GT_FILE_COUNTS");
static_assert(gt::kFlagPayload == GT_FILE_PAYLOADS, "kFlagPayload != GT_FILE_PAYLOADS");

namespace {

char *Dup(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

int Fail(const gt::Status &st, gt_error *err) {
  if (err) {
    err->code = static_cast<int32_t>(st.code);
    err->message = Dup(st.msg);
    err->file = st.file.empty() ? nullptr : Dup(st.file);
    err->offset = st.offset;
  }
  return static_cast<int>(st.code);
}

int Done(const gt::Status &st, gt_error *err) { return st.ok() ? GT_OK : Fail(st, err); }

// GT_OK, or the failure for a direction the snapshot cannot read.
int CheckDir(const gt_snapshot *snap, uint32_t dir, gt_error *err) {
  if (dir > 2) return Fail(gt::Status::Invalid("dir must be 0 (out), 1 (in) or 2 (vertex cells)"), err);
  if (dir == 1 && !snap->r.store()->in_edges())
    return Fail(gt::Status::Invalid("in-edges are not kept by this store (open it with in_edges)"), err);
  return GT_OK;
}

template <typename F>
int Guard(gt_error *err, F &&f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return Fail(gt::Status::Internal("out of memory"), err);
  } catch (const std::exception &e) {
    return Fail(gt::Status::Internal(std::string("internal error: ") + e.what()), err);
  } catch (...) {
    return Fail(gt::Status::Internal("internal error: unknown exception"), err);
  }
}

int NewSnapshot(gt_store *s, bool durable, gt_snapshot **out, gt_error *err) {
  return Guard(err, [&] {
    // Allocate first so that a failed allocation leaves nothing pinned.
    auto snap = std::make_unique<gt_snapshot>(gt_snapshot{gt::SnapshotReader(s->s.get(), 0)});
    const uint64_t tau = s->s->PinSnapshot(durable);
    snap->r = gt::SnapshotReader(s->s.get(), tau);
    *out = snap.release();
    return static_cast<int>(GT_OK);
  });
}

}  // namespace

extern "C" {

void gt_error_free(gt_error *e) {
  if (!e) return;
  std::free(e->message);
  std::free(e->file);
  e->message = nullptr;
  e->file = nullptr;
}

int gt_in_edges(const gt_store *s) { return s->s->in_edges() ? 1 : 0; }

int gt_open(const char *dir, const gt_options *opts, gt_store **out, gt_error *err) {
  return Guard(err, [&] {
    if (dir == nullptr || out == nullptr) return Fail(gt::Status::Invalid("dir and out must not be null"), err);
    gt::Options o;
    gt::Status st = gt::ValidateOptions(opts, &o);
    if (!st.ok()) return Fail(st, err);
    std::unique_ptr<gt::Store> s;
    st = gt::Store::Open(dir, o, &s);
    if (!st.ok()) return Fail(st, err);
    *out = new gt_store{std::move(s)};
    return static_cast<int>(GT_OK);
  });
}

int gt_close(gt_store *s, gt_error *err) {
  return Guard(err, [&] {
    delete s;
    return static_cast<int>(GT_OK);
  });
}

int gt_apply(gt_store *s, const gt_op *ops, size_t n, const uint8_t *srcpos, size_t srcpos_len, uint64_t *out_seq,
             gt_error *err) {
  return Guard(err, [&] { return Done(s->s->Apply(ops, n, srcpos, srcpos_len, out_seq), err); });
}

int gt_apply_ex(gt_store *s, const gt_op *ops, size_t n, const uint8_t *payload, size_t payload_len,
                const uint8_t *srcpos, size_t srcpos_len, uint64_t *out_seq, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->Apply(ops, n, srcpos, srcpos_len, out_seq, payload, payload_len), err); });
}

int gt_set_type_aggregate(gt_store *s, uint32_t type, uint32_t flags, int64_t retain_us, gt_error *err) {
  return Guard(err, [&] {
    if ((flags & ~GT_TYPE_ACCUMULATE) != 0)
      return Fail(gt::Status::Invalid("unknown aggregate flags " + std::to_string(flags)), err);
    return Done(s->s->SetTypeAggregate(type, (flags & GT_TYPE_ACCUMULATE) != 0, retain_us), err);
  });
}

int gt_type_aggregates(gt_store *s, uint32_t *types, int64_t *retain_us, size_t cap, size_t *n, gt_error *err) {
  return Guard(err, [&] {
    if (n == nullptr || (cap > 0 && (types == nullptr || retain_us == nullptr)))
      return Fail(gt::Status::Invalid("n must not be null, nor types and retain_us when cap > 0"), err);
    const auto as = s->s->TypeAggregates();
    *n = as.size();
    for (size_t i = 0; i < as.size() && i < cap; i++) {
      types[i] = as[i].first;
      retain_us[i] = as[i].second;
    }
    if (as.size() > cap)
      return Fail(
          gt::Status{gt::Code::kBuffer,
                     "room for " + std::to_string(cap) + " types, " + std::to_string(as.size()) + " recorded", "", 0},
          err);
    return static_cast<int>(GT_OK);
  });
}

int gt_add_event_source(gt_store *s, const uint8_t *name, size_t len, uint32_t *source, gt_error *err) {
  return Guard(err, [&] {
    if (source == nullptr || (len > 0 && name == nullptr))
      return Fail(gt::Status::Invalid("source must not be null, nor name when len > 0"), err);
    return Done(s->s->AddEventSource(std::string(reinterpret_cast<const char *>(name), len), source), err);
  });
}

int gt_event_sources(gt_store *s, uint8_t *names, size_t names_cap, size_t *names_len, uint64_t *ends, size_t cap,
                     size_t *n, gt_error *err) {
  return Guard(err, [&] {
    if (n == nullptr || names_len == nullptr || (cap > 0 && ends == nullptr) || (names_cap > 0 && names == nullptr))
      return Fail(gt::Status::Invalid("n and names_len must not be null, nor ends and names with room"), err);
    const auto srcs = s->s->EventSources();
    size_t bytes = 0;
    for (const auto &name : srcs) bytes += name.size();
    *n = srcs.size();
    *names_len = bytes;
    if (srcs.size() > cap || bytes > names_cap)
      return Fail(
          gt::Status{gt::Code::kBuffer,
                     "room for " + std::to_string(cap) + " sources of " + std::to_string(names_cap) + " bytes, " +
                         std::to_string(srcs.size()) + " of " + std::to_string(bytes) + " recorded",
                     "", 0},
          err);
    size_t at = 0;
    for (size_t i = 0; i < srcs.size(); i++) {
      std::copy(srcs[i].begin(), srcs[i].end(), names + at);
      at += srcs[i].size();
      ends[i] = at;
    }
    return static_cast<int>(GT_OK);
  });
}

int64_t gt_newest_event_time(gt_store *s) { return s->s->NewestEventTime(); }

int gt_flush(gt_store *s, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->Flush(), err); });
}

int gt_flush_async(gt_store *s, uint64_t *target, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->RequestFlush(target), err); });
}

int gt_compact_all(gt_store *s, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->CompactAll(), err); });
}

uint64_t gt_durable_seq(gt_store *s) { return s->s->DurableSeq(); }

void gt_source_position(gt_store *s, uint8_t *buf, size_t cap, size_t *len) {
  try {
    std::string p = s->s->SourcePosition();
    *len = p.size();
    // Binary bytes with a length, not a C string: no terminator.
    if (p.size() <= cap && !p.empty())
      std::memcpy(buf, p.data(), p.size());  // NOLINT(bugprone-not-null-terminated-result)
  } catch (...) {
    *len = 0;
  }
}

void gt_get_metrics(gt_store *s, gt_metrics *out) {
  try {
    s->s->GetMetrics(out);
  } catch (...) {
    std::memset(out, 0, sizeof *out);
  }
}

int gt_snapshot_new(gt_store *s, gt_snapshot **out, gt_error *err) { return NewSnapshot(s, false, out, err); }

int gt_snapshot_new_durable(gt_store *s, gt_snapshot **out, gt_error *err) { return NewSnapshot(s, true, out, err); }

int gt_snapshot_new_at(gt_store *s, uint64_t seq, gt_snapshot **out, gt_error *err) {
  return Guard(err, [&] {
    // Allocate first so that a failed allocation leaves nothing pinned.
    auto snap = std::make_unique<gt_snapshot>(gt_snapshot{gt::SnapshotReader(s->s.get(), seq)});
    if (int rc = Done(s->s->PinSnapshotAt(seq), err)) return rc;
    snap->r = gt::SnapshotReader(s->s.get(), seq);
    *out = snap.release();
    return static_cast<int>(GT_OK);
  });
}

int gt_set_history_floor(gt_store *s, uint64_t seq, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->SetHistoryFloor(seq), err); });
}

void gt_snapshot_release(gt_snapshot *snap) {
  if (!snap) return;
  snap->r.store()->UnpinSnapshot(snap->r.tau());
  delete snap;
}

uint64_t gt_snapshot_seq(const gt_snapshot *snap) { return snap->r.tau(); }
uint64_t gt_snapshot_vertex_bound(const gt_snapshot *snap) { return snap->r.vertex_bound(); }

void gt_snapshot_vertex_bounds(const gt_snapshot *snap, uint64_t *low, uint64_t *high) {
  *low = snap->r.low_bound();
  *high = snap->r.high_bound();
}

static_assert(GT_MAX_EDGE_TYPES == gt::kMaxEdgeTypes, "the C API and the core must agree on the edge types");
static_assert(sizeof(gt_type_set) == sizeof(gt::TypeSet), "gt_type_set and gt::TypeSet must have one layout");

namespace {
// The C filter as the core's (the same bits; checked above).
const gt::TypeSet *Types(const gt_type_set *t) { return reinterpret_cast<const gt::TypeSet *>(t); }
}  // namespace

int gt_snapshot_degree(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types, uint64_t *out,
                       gt_error *err) {
  return Guard(err, [&] {
    if (int rc = CheckDir(snap, dir, err)) return rc;
    return Done(snap->r.Degree(v, static_cast<int>(dir), Types(types), out), err);
  });
}

int gt_snapshot_neighbors(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types, uint64_t *dsts,
                          double *weights, uint16_t *types_out, int64_t *times_out, size_t cap, size_t *n,
                          gt_error *err) {
  return Guard(err, [&] {
    if (int rc = CheckDir(snap, dir, err)) return rc;
    return Done(snap->r.Neighbors(v, static_cast<int>(dir), Types(types),
                                  gt::EdgeOut{dsts, weights, types_out, times_out}, cap, n),
                err);
  });
}

int gt_snapshot_scan(gt_snapshot *snap, uint64_t lo, uint64_t hi, uint32_t dir, const gt_type_set *types,
                     uint64_t *vids, uint64_t *offs, size_t vcap, uint64_t *dsts, double *weights, uint16_t *types_out,
                     int64_t *times_out, size_t ecap, size_t *nv, size_t *ne, uint64_t *next, gt_error *err) {
  return Guard(err, [&] {
    if (int rc = CheckDir(snap, dir, err)) return rc;
    return Done(snap->r.Scan(lo, hi, static_cast<int>(dir), Types(types), vids, offs, vcap,
                             gt::EdgeOut{dsts, weights, types_out, times_out}, ecap, nv, ne, next),
                err);
  });
}

int gt_snapshot_gather(gt_snapshot *snap, const uint64_t *vids, size_t n, uint32_t dir, const gt_type_set *types,
                       uint64_t *offs, uint64_t *dsts, double *weights, uint16_t *types_out, int64_t *times_out,
                       size_t ecap, size_t *done, size_t *ne, gt_error *err) {
  return Guard(err, [&] {
    *done = 0;
    *ne = 0;
    if (int rc = CheckDir(snap, dir, err)) return rc;
    if (n > 0 && (vids == nullptr || offs == nullptr))
      return Fail(gt::Status::Invalid("vids and offs are required"), err);
    return Done(snap->r.Gather(vids, n, static_cast<int>(dir), Types(types), offs,
                               gt::EdgeOut{dsts, weights, types_out, times_out}, ecap, done, ne),
                err);
  });
}

int gt_snapshot_neighbors_after(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types, uint64_t after,
                                uint32_t after_type, uint32_t has_after, uint64_t *dsts, double *weights,
                                uint16_t *types_out, int64_t *times_out, size_t cap, size_t *n, uint32_t *more,
                                gt_error *err) {
  return Guard(err, [&] {
    *n = 0;
    *more = 0;
    if (int rc = CheckDir(snap, dir, err)) return rc;
    if (cap > 0 && dsts == nullptr) return Fail(gt::Status::Invalid("dsts is required"), err);
    bool m = false;
    const int rc =
        Done(snap->r.NeighborsAfter(v, static_cast<int>(dir), Types(types), has_after != 0, after, after_type,
                                    gt::EdgeOut{dsts, weights, types_out, times_out}, cap, n, &m),
             err);
    *more = m ? 1 : 0;
    return rc;
  });
}

int gt_snapshot_edge(gt_snapshot *snap, uint64_t src, uint64_t dst, const gt_type_set *types, double *weights,
                     uint16_t *types_out, int64_t *times_out, size_t cap, size_t *n, gt_error *err) {
  return Guard(err, [&] {
    *n = 0;
    return Done(snap->r.Edge(src, dst, Types(types), gt::EdgeOut{nullptr, weights, types_out, times_out}, cap, n), err);
  });
}

int gt_snapshot_edge_counts(gt_snapshot *snap, const uint64_t *srcs, const uint64_t *dsts, size_t n,
                            const gt_type_set *types, uint32_t *counts, gt_error *err) {
  return Guard(err, [&] {
    if (n > 0 && (srcs == nullptr || dsts == nullptr || counts == nullptr))
      return Fail(gt::Status::Invalid("srcs, dsts or counts is null"), err);
    return Done(snap->r.EdgeCounts(srcs, dsts, n, Types(types), counts), err);
  });
}

int gt_snapshot_edge_ext(gt_snapshot *snap, uint64_t src, uint64_t dst, const gt_type_set *types, double *weights,
                         uint16_t *types_out, int64_t *times_out, gt_edge_ext *ext, size_t cap, uint8_t *payload,
                         size_t payload_cap, size_t *payload_len, size_t *n, gt_error *err) {
  return Guard(err, [&] {
    *n = 0;
    *payload_len = 0;
    if (payload_cap > 0 && payload == nullptr) return Fail(gt::Status::Invalid("payload is null"), err);
    return Done(snap->r.EdgeExt(src, dst, Types(types), gt::EdgeOut{nullptr, weights, types_out, times_out},
                                gt::ExtOut{ext, payload, payload_cap, payload_len}, cap, n),
                err);
  });
}

int gt_snapshot_neighbors_after_ext(gt_snapshot *snap, uint64_t v, uint32_t dir, const gt_type_set *types,
                                    uint64_t after, uint32_t after_type, uint32_t has_after, uint64_t *dsts,
                                    double *weights, uint16_t *types_out, int64_t *times_out, gt_edge_ext *ext,
                                    size_t cap, uint8_t *payload, size_t payload_cap, size_t *payload_len, size_t *n,
                                    uint32_t *more, gt_error *err) {
  return Guard(err, [&] {
    *n = 0;
    *more = 0;
    *payload_len = 0;
    if (int rc = CheckDir(snap, dir, err)) return rc;
    if (dir == GT_VERTEX) return Fail(gt::Status::Invalid("an _ext read takes out- or in-edges"), err);
    if (cap > 0 && dsts == nullptr) return Fail(gt::Status::Invalid("dsts is required"), err);
    if (payload_cap > 0 && payload == nullptr) return Fail(gt::Status::Invalid("payload is null"), err);
    bool m = false;
    const int rc = Done(snap->r.NeighborsAfterExt(v, static_cast<int>(dir), Types(types), has_after != 0, after,
                                                  after_type, gt::EdgeOut{dsts, weights, types_out, times_out},
                                                  gt::ExtOut{ext, payload, payload_cap, payload_len}, cap, n, &m),
                        err);
    *more = m ? 1 : 0;
    return rc;
  });
}

int gt_snapshot_edge_events(gt_snapshot *snap, uint64_t src, uint64_t dst, uint32_t type, int64_t since_us,
                            uint64_t skip, uint64_t *seqs, double *weights, int64_t *times_out, gt_edge_ext *ext,
                            size_t cap, uint8_t *payload, size_t payload_cap, size_t *payload_len, size_t *n,
                            uint32_t *more, uint32_t *folded, gt_error *err) {
  return Guard(err, [&] {
    *n = 0;
    *more = 0;
    *folded = 0;
    *payload_len = 0;
    if (payload_cap > 0 && payload == nullptr) return Fail(gt::Status::Invalid("payload is null"), err);
    bool m = false, f = false;
    const int rc =
        Done(snap->r.EdgeEvents(src, dst, type, since_us, skip, seqs, gt::EdgeOut{nullptr, weights, nullptr, times_out},
                                gt::ExtOut{ext, payload, payload_cap, payload_len}, cap, n, &m, &f),
             err);
    *more = m ? 1 : 0;
    *folded = f ? 1 : 0;
    return rc;
  });
}

void gt_list_files(gt_store *s, gt_file_info *out, size_t cap, size_t *n) {
  try {
    std::vector<gt_file_info> fs = s->s->Files();
    *n = fs.size();
    for (size_t i = 0; i < fs.size() && i < cap; i++) out[i] = fs[i];
  } catch (...) {
    *n = 0;
  }
}

int gt_verify_all(gt_store *s, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->VerifyAll(), err); });
}

void gt_check_report_free(gt_check_report *r) {
  if (!r) return;
  for (size_t i = 0; i < r->nproblems; i++) {
    std::free(r->problems[i].file);
    std::free(r->problems[i].what);
  }
  for (size_t i = 0; i < r->nnotes; i++) {
    std::free(r->notes[i].file);
    std::free(r->notes[i].what);
  }
  std::free(r->problems);
  std::free(r->notes);
  std::free(r);
}

int gt_check(const char *dir, uint64_t manifest_cut, gt_check_report **out, gt_error *err) {
  return Guard(err, [&] {
    if (dir == nullptr || out == nullptr) return Fail(gt::Status::Invalid("dir and out must not be null"), err);
    gt::CheckResult c;
    gt::Status st = gt::CheckStore(dir, manifest_cut, &c);
    if (!st.ok()) return Fail(st, err);
    // Built with malloc (the caller frees with gt_check_report_free) and
    // owned by a guard until handed over, so a failed allocation leaks
    // nothing.
    std::unique_ptr<gt_check_report, void (*)(gt_check_report *)> r(
        static_cast<gt_check_report *>(std::calloc(1, sizeof(gt_check_report))), gt_check_report_free);
    if (!r) throw std::bad_alloc();
    auto copy = [](const std::vector<gt::Problem> &from, gt_problem **to, size_t *n) {
      if (from.empty()) return;
      *to = static_cast<gt_problem *>(std::calloc(from.size(), sizeof(gt_problem)));
      if (!*to) throw std::bad_alloc();
      for (const gt::Problem &p : from) {
        gt_problem &q = (*to)[(*n)++];
        q.file = Dup(p.file);
        q.what = Dup(p.what);
        q.offset = p.offset;
        q.kind = p.kind;
        if (!q.file || !q.what) throw std::bad_alloc();
      }
    };
    copy(c.problems, &r->problems, &r->nproblems);
    copy(c.notes, &r->notes, &r->nnotes);
    r->manifest_ok = c.manifest_ok ? 1 : 0;
    r->in_edges = c.state.in_edges ? 1 : 0;
    r->manifest_bytes = c.manifest_bytes;
    r->manifest_records = c.manifest_records;
    r->files_checked = c.files_checked;
    r->bytes_checked = c.bytes_checked;
    r->live_files = c.state.live.size();
    r->durable_seq = c.state.durable_seq;
    r->low_bound = c.state.low_bound;
    r->high_bound = c.state.high_bound;
    r->next_file = c.state.next_file;
    *out = r.release();
    return static_cast<int>(GT_OK);
  });
}

}  // extern "C"
