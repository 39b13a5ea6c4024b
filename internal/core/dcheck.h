// dcheck.h -- GT_DCHECK, the core's debug-only invariant checks (pebble's
// `invariants` build tag).
//
// Contract:
//  - Enabled when GT_ENABLE_DCHECK is defined: the CMake build defines it
//    with GT_SANITIZE=ON (internal/core/test/run_asan.sh), or with GT_DCHECK=ON. The
//    cgo build (core.go) does not: there every check compiles to nothing and
//    its condition is not evaluated (but still type-checked), so a check may
//    cost O(files) or more.
//  - A failed check prints "file:line: GT_DCHECK(cond) failed: message" to
//    stderr and aborts. It never throws (nothing may cross the C boundary)
//    and is never a way to report bad input: on-disk data is judged by
//    Status-returning code (recovery.h); a GT_DCHECK states what the core's
//    own code keeps true.
//  - Each check sits next to an `// INVARIANT:` comment saying what it
//    guards.
#pragma once

#include <string>

namespace gt {

// Prints where and what failed, then aborts. Used by GT_DCHECK only.
[[noreturn]] void DcheckFailed(const char *file, int line, const char *cond, const std::string &msg);

}  // namespace gt

#if defined(GT_ENABLE_DCHECK)
#define GT_DCHECK_ENABLED 1
// GT_DCHECK_MSG(cond, msg): msg (a std::string expression) is evaluated
// only when cond is false.
#define GT_DCHECK_MSG(cond, msg) ((cond) ? static_cast<void>(0) : ::gt::DcheckFailed(__FILE__, __LINE__, #cond, (msg)))
#else
#define GT_DCHECK_ENABLED 0
#define GT_DCHECK_MSG(cond, msg) \
  do {                           \
    if (false) {                 \
      static_cast<void>(cond);   \
      static_cast<void>(msg);    \
    }                            \
  } while (0)
#endif

#define GT_DCHECK(cond) GT_DCHECK_MSG(cond, std::string())
