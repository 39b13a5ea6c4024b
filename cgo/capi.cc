// capi.cc -- the C entry points of graphtide.h. Every function converts
// Status to gt_code, and catches every exception so none crosses into Go.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>

#include "graphtide.h"
#include "store.h"

struct gt_store {
  std::unique_ptr<gt::Store> s;
};

struct gt_snapshot {
  gt::SnapshotReader r;
};

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

}  // namespace

extern "C" {

void gt_error_free(gt_error *e) {
  if (!e) return;
  std::free(e->message);
  std::free(e->file);
  e->message = nullptr;
  e->file = nullptr;
}

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

int gt_flush(gt_store *s, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->Flush(), err); });
}

int gt_flush_async(gt_store *s, uint64_t *target, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->RequestFlush(target), err); });
}

int gt_compact_all(gt_store *s, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->CompactAll(), err); });
}

void gt_source_position(gt_store *s, uint8_t *buf, size_t cap, size_t *len) {
  try {
    std::string p = s->s->SourcePosition();
    *len = p.size();
    if (p.size() <= cap && !p.empty()) std::memcpy(buf, p.data(), p.size());
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

int gt_snapshot_new(gt_store *s, gt_snapshot **out, gt_error *err) {
  return Guard(err, [&] {
    uint64_t tau = s->s->PinSnapshot();
    *out = new gt_snapshot{gt::SnapshotReader(s->s.get(), tau, s->s->vertex_bound())};
    return static_cast<int>(GT_OK);
  });
}

void gt_snapshot_release(gt_snapshot *snap) {
  if (!snap) return;
  snap->r.store()->UnpinSnapshot(snap->r.tau());
  delete snap;
}

uint64_t gt_snapshot_seq(const gt_snapshot *snap) { return snap->r.tau(); }
uint64_t gt_snapshot_vertex_bound(const gt_snapshot *snap) { return snap->r.vertex_bound(); }

int gt_snapshot_degree(gt_snapshot *snap, uint64_t v, uint32_t dir, uint64_t *out, gt_error *err) {
  return Guard(err, [&] {
    if (dir > 1) return Fail(gt::Status::Invalid("dir must be 0 (out) or 1 (in)"), err);
    if (dir == 1 && !snap->r.store()->in_edges())
      return Fail(gt::Status::Invalid("in-edges are not kept by this store (open it with in_edges)"), err);
    return Done(snap->r.Degree(v, static_cast<int>(dir), out), err);
  });
}

int gt_snapshot_neighbors(gt_snapshot *snap, uint64_t v, uint32_t dir, uint64_t *dsts, double *weights, size_t cap,
                          size_t *n, gt_error *err) {
  return Guard(err, [&] {
    if (dir > 1) return Fail(gt::Status::Invalid("dir must be 0 (out) or 1 (in)"), err);
    if (dir == 1 && !snap->r.store()->in_edges())
      return Fail(gt::Status::Invalid("in-edges are not kept by this store (open it with in_edges)"), err);
    return Done(snap->r.Neighbors(v, static_cast<int>(dir), dsts, weights, cap, n), err);
  });
}

int gt_snapshot_scan(gt_snapshot *snap, uint64_t lo, uint64_t hi, uint32_t dir, uint64_t *vids, uint64_t *offs,
                     size_t vcap, uint64_t *dsts, double *weights, size_t ecap, size_t *nv, size_t *ne,
                     uint64_t *next, gt_error *err) {
  return Guard(err, [&] {
    if (dir > 1) return Fail(gt::Status::Invalid("dir must be 0 (out) or 1 (in)"), err);
    if (dir == 1 && !snap->r.store()->in_edges())
      return Fail(gt::Status::Invalid("in-edges are not kept by this store (open it with in_edges)"), err);
    return Done(snap->r.Scan(lo, hi, static_cast<int>(dir), vids, offs, vcap, dsts, weights, ecap, nv, ne, next),
                err);
  });
}

int gt_verify_all(gt_store *s, gt_error *err) {
  return Guard(err, [&] { return Done(s->s->VerifyAll(), err); });
}

}  // extern "C"
