#!/usr/bin/env bash
# run_asan.sh -- builds the C++ core and its GoogleTest suite with
# AddressSanitizer + UndefinedBehaviorSanitizer (GT_SANITIZE=ON, Debug, -O1,
# line tables) into cgo/build-asan and runs it with ctest. Exits non-zero on
# any build or test failure. Works from any current directory.
#
# Environment:
#   GT_ASAN_BUILD_DIR  build directory (default: <repo>/cgo/build-asan)
#   GT_CTEST_ARGS      extra ctest arguments (e.g. "-R Store")
#   GT_TEST_SEED       seed of the randomized tests (default fixed)
#   GT_CCACHE          0: compile without ccache (default: with it when
#                      installed)
#   TMPDIR             where the tests make their stores (default: a fresh
#                      directory on /dev/shm when it is a tmpfs with 512 MiB
#                      free, else /tmp)
#
# LeakSanitizer needs ptrace-like access to the process; under some sandboxes
# and debuggers it aborts with "LeakSanitizer has encountered a fatal error"
# or "LeakSanitizer does not work under ptrace". That is detected up front and
# the run falls back to detect_leaks=0 with a note.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/.." && pwd)"  # cgo/
build="${GT_ASAN_BUILD_DIR:-$src/build-asan}"
jobs=2

generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f "$build/CMakeCache.txt" || -f "$build/build.ninja" ]]; then
  generator=(-G Ninja)
fi

# ccache (scripts/deps.sh installs it) keeps compiled objects by content,
# so a fresh clone, at any path, compiles only what changed: paths under
# the repository are hashed relative to it (CCACHE_BASEDIR, and
# CCACHE_NOHASHDIR: the build directory is not part of the key).
launcher=()
if command -v ccache >/dev/null 2>&1 && [[ "${GT_CCACHE:-1}" != 0 ]]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CCACHE_BASEDIR="$(cd "$src/.." && pwd)"
  export CCACHE_BASEDIR CCACHE_NOHASHDIR=1
fi

# What the build costs (a fresh clone after a change to a core header
# compiles all of it, on 2 cores beside the Go parts of make test):
# -g1, line tables and function names only, is all that the sanitizers'
# reports use (file:line of every frame, inlined ones too; the variable
# names of stack reports are compiled in by ASan itself), and it takes a
# third off the compile (full -g's variable tracking and DWARF types). It
# changes nothing that is instrumented or checked.
start=$(date +%s)
echo "== configure ($build)"
cmake -S "$src" -B "$build" "${generator[@]}" "${launcher[@]}" \
  -DGT_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1"

echo "== build"
cmake --build "$build" -j"$jobs"

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

# The tests' stores on tmpfs: they check what the store reads back, and
# what a crash leaves by cutting and flipping files themselves, never by
# losing power, so the disk's fsyncs (thousands: flushes, compactions,
# MANIFEST edits) only made the run wait, and everything else on the
# machine with it. An explicit TMPDIR is kept.
if [[ -z "${TMPDIR:-}" && "$(stat -f -c %T /dev/shm 2>/dev/null)" == tmpfs ]] &&
  (($(df -k --output=avail /dev/shm 2>/dev/null | tail -n 1) >= 512 * 1024)); then
  TMPDIR="$(mktemp -d /dev/shm/graphtide-ctest-XXXXXX)"
  export TMPDIR
  trap 'rm -rf "$TMPDIR"' EXIT
fi
echo "== test (stores under ${TMPDIR:-/tmp})"
status=0
# shellcheck disable=SC2086
(cd "$build" && ctest --output-on-failure -j"$jobs" ${GT_CTEST_ARGS:-}) || status=$?
echo "== done in $(($(date +%s) - start)) s"
exit $status
