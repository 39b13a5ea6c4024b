#!/usr/bin/env bash
# run_asan.sh -- builds the C++ core and its GoogleTest suite with
# AddressSanitizer + UndefinedBehaviorSanitizer (GT_SANITIZE=ON, Debug, -O1,
# line tables) into internal/core/build-asan and runs it with ctest. The tests of
# volume run smaller here, or not at all (test_util.h); run_volume.sh runs
# them whole. Exits non-zero on any build or test failure. Works from any
# current directory.
#
# Environment: as common.sh says, and
#   GT_ASAN_BUILD_DIR  build directory (default: <repo>/internal/core/build-asan)
#
# LeakSanitizer needs ptrace-like access to the process; under some sandboxes
# and debuggers it aborts with "LeakSanitizer has encountered a fatal error"
# or "LeakSanitizer does not work under ptrace". That is detected up front and
# the run falls back to detect_leaks=0 with a note.
set -euo pipefail

# shellcheck source=internal/core/test/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build="${GT_ASAN_BUILD_DIR:-$gt_src/build-asan}"

# What the build costs (a fresh clone after a change to a core header
# compiles all of it, on 2 cores beside the Go parts of make test):
# -g1, line tables and function names only, is all that the sanitizers'
# reports use (file:line of every frame, inlined ones too; the variable
# names of stack reports are compiled in by ASan itself), and it takes a
# third off the compile (full -g's variable tracking and DWARF types). It
# changes nothing that is instrumented or checked.
gt_build "$build" -DGT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1"

common_opts="abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# Probe LeakSanitizer with the test binary itself (listing tests leaks nothing).
leaks=1
probe_out="$(ASAN_OPTIONS="detect_leaks=1:$common_opts" "$build/graphtide_core_test" --gtest_list_tests 2>&1)" || {
  if grep -qE "LeakSanitizer has encountered a fatal error|LeakSanitizer does not work under ptrace" <<<"$probe_out"; then
    echo "NOTE: LeakSanitizer cannot run in this environment (ptrace restrictions);"
    echo "NOTE: falling back to ASAN_OPTIONS=detect_leaks=0 (no leak checking)."
    leaks=0
  else
    echo "$probe_out"
    echo "error: the test binary fails to list its tests" >&2
    exit 1
  fi
}
export ASAN_OPTIONS="detect_leaks=$leaks:$common_opts"
echo "== ASAN_OPTIONS=$ASAN_OPTIONS"

gt_ctest "$build"
