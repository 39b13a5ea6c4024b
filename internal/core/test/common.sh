# shellcheck shell=bash
# common.sh -- sourced by run_asan.sh and run_volume.sh: what their builds
# and runs of the C++ core's tests share. Not a script of its own.
#
# Environment:
#   GT_CCACHE     0: compile without ccache (default: with it when installed)
#   GT_CTEST_ARGS extra ctest arguments (e.g. "-R Store")
#   GT_TEST_SEED  seed of the randomized tests (default fixed)
#   TMPDIR        where the tests make their stores (default: a fresh
#                 directory on /dev/shm when it is a tmpfs with 512 MiB
#                 free, else /tmp)

# gt_src is internal/core/, the CMake project; gt_start when the run started.
gt_src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gt_start=$(date +%s)

# gt_configure BUILD ARGS...: configures BUILD from gt_src with ARGS, with
# Ninja when it is installed (and BUILD is not a Makefile build already).
#
# ccache (scripts/deps.sh installs it) keeps compiled objects by content,
# so a fresh clone, at any path, compiles only what changed: paths under
# the repository are hashed relative to it (CCACHE_BASEDIR, and
# CCACHE_NOHASHDIR: the build directory is not part of the key).
gt_configure() {
  local build="$1"
  shift
  local generator=() launcher=()
  if command -v ninja >/dev/null 2>&1 && [[ ! -f "$build/CMakeCache.txt" || -f "$build/build.ninja" ]]; then
    generator=(-G Ninja)
  fi
  if command -v ccache >/dev/null 2>&1 && [[ "${GT_CCACHE:-1}" != 0 ]]; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    CCACHE_BASEDIR="$(cd "$gt_src/.." && pwd)"
    export CCACHE_BASEDIR CCACHE_NOHASHDIR=1
  fi
  echo "== configure ($build)"
  cmake -S "$gt_src" -B "$build" "${generator[@]}" "${launcher[@]}" "$@"
}

# gt_build BUILD ARGS...: configures BUILD with ARGS (gt_configure) and
# builds the core and its test binary.
gt_build() {
  gt_configure "$@"
  echo "== build"
  cmake --build "$1" -j2 --target graphtide_core_test
}

# gt_ctest BUILD ARGS...: runs BUILD's tests (3 at a time: on 2 cores most
# of them wait on a lock or a background flush for part of their run; and
# GT_CTEST_ARGS) with their stores on tmpfs: they check what the store
# reads back, and what a crash leaves by cutting and flipping files
# themselves, never by losing power, so the disk's fsyncs (thousands:
# flushes, compactions, MANIFEST edits) only made the run wait, and
# everything else on the machine with it. An explicit TMPDIR is kept.
# Last it says how long the whole run took.
gt_ctest() {
  local build="$1" st=0 tmp=""
  shift
  if [[ -z "${TMPDIR:-}" && "$(stat -f -c %T /dev/shm 2>/dev/null)" == tmpfs ]] &&
    (($(df -k --output=avail /dev/shm 2>/dev/null | tail -n 1) >= 512 * 1024)); then
    tmp="$(mktemp -d /dev/shm/graphtide-ctest-XXXXXX)"
  fi
  # ctest starts the tests it knows to be long first, from the cost data
  # of its earlier runs; a fresh build has none, and the longest (numbered
  # near the end) started last and ended the run alone, for minutes.
  # ctest_costs.txt seeds it.
  local costs="$build/Testing/Temporary/CTestCostData.txt"
  if [[ ! -f "$costs" ]]; then
    mkdir -p "$(dirname "$costs")"
    { awk '!/^#/ && NF == 2 { print $1, 1, $2 }' "$gt_src/test/ctest_costs.txt"; echo "---"; } >"$costs"
  fi
  echo "== test (stores under ${tmp:-${TMPDIR:-/tmp}})"
  # shellcheck disable=SC2086
  (cd "$build" && TMPDIR="${tmp:-${TMPDIR:-}}" ctest --output-on-failure -j3 "$@" ${GT_CTEST_ARGS:-}) || st=$?
  [[ -z "$tmp" ]] || rm -rf "$tmp"
  echo "== done in $(($(date +%s) - gt_start)) s"
  return $st
}
