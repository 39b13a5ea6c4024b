#!/usr/bin/env bash
# The linters `make lint` (and so `make test`) runs; each must pass:
#   golangci-lint  the Go code (.golangci.yml)
#   clang-format   the C++ core's layout (.clang-format), checked, never rewritten
#   clang-tidy     the C++ core (internal/core/.clang-tidy: bugprone, concurrency, performance,
#                  no function over 120 lines)
#   every shell script, checked by shellcheck
# The architecture's rules (which package may import which) are a Go test:
# internal/archtest, run by `make test-go`. Checks only: nothing is changed.
# Run `scripts/deps.sh` first (`make lint` does).
set -euo pipefail
cd "$(dirname "$0")/.."

# The linters run at the same time (clang-tidy a translation unit per
# core), each into its own log, printed in this order once all are done.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
names=()
step() {
  local name=$1
  shift
  names+=("$name")
  ("$@" >"$logs/${#names[@]}" 2>&1) &
  pids+=($!)
}

# Another golangci-lint on this machine (another clone's make test) holds
# the lock on its cache: wait for it rather than fail. Without -trimpath
# (which make exports for the tests' builds): with it, the build cache
# hands this checkout the cgo output another checkout compiled, whose line
# directives name that checkout's files, and golangci-lint's cgo analysis
# fails once that checkout is gone.
#
# golangci-lint keys its cache by each file's path as well as its
# content, and the go build cache keys cgo's output (without -trimpath)
# by the package's directory: run from a fresh clone's own path, it
# analyses every package again (about 100 s of CPU on 2 cores, in
# parallel with the tests). So it runs from one fixed path per machine,
# ${GT_LINT_ROOT:-~/.cache/graphtide/lint}/graphtide, a symbolic link to
# this checkout (the shell's logical working directory, which go list
# reports): a clone then analyses only what differs from what was linted
# before. Runs hold a lock on the link for their whole run (golangci-lint
# already runs one at a time); GT_LINT_ROOT=none lints from here.
gf=${GOFLAGS:-}
golangci() {
  local root="${GT_LINT_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/graphtide/lint}"
  if [ "$root" = none ] || ! command -v flock >/dev/null 2>&1; then
    env GOFLAGS="${gf//-trimpath/}" .tools/bin/golangci-lint run --allow-serial-runners ./...
    return
  fi
  mkdir -p "$root" || return 1
  local here=$PWD
  (
    flock 9 || exit 1
    ln -sfn "$here" "$root/graphtide" || exit 1
    cd "$root/graphtide" || exit 1
    env GOFLAGS="${gf//-trimpath/}" "$here/.tools/bin/golangci-lint" run --allow-serial-runners ./...
  ) 9>"$root/lock"
}
step golangci-lint golangci

# gofmt: golangci-lint's default linters do not check formatting.
gofmt_check() {
  local bad
  bad=$(git ls-files -z '*.go' | xargs -0 gofmt -l)
  if [ -n "$bad" ]; then
    echo "not formatted by gofmt (gofmt -w them):"
    echo "$bad"
    return 1
  fi
}
step gofmt gofmt_check

mapfile -t cpp < <(git ls-files 'internal/core/*.cc' 'internal/core/*.h')
step "clang-format (${#cpp[@]} files)" clang-format --dry-run -Werror "${cpp[@]}"

# clang-tidy's verdict on a translation unit is kept when it is clean, in
# ${GT_TIDY_CACHE:-~/.cache/graphtide/clang-tidy} (GT_TIDY_CACHE=none: no
# cache), under a hash of everything it read: the unit, every header of
# the core, the compile commands (with this clone's path taken out), the
# .clang-tidy checks and the versions of clang-tidy and of the compiler
# (the system headers). A unit is analysed again when any of them changes.
tidy_one() {
  local build=$1 tu=$2 key
  if [ "$GT_TIDY_CACHE" != none ]; then
    key=$({
      clang-tidy --version
      c++ --version
      cat internal/core/.clang-tidy
      sed "s|$PWD|@ROOT@|g" "$build/compile_commands.json"
      echo "$tu"
      cat "$tu"
      git ls-files -z 'internal/core/*.h' | xargs -0 cat
    } | sha256sum | cut -d' ' -f1)
    [ -e "$GT_TIDY_CACHE/$key" ] && return 0
  fi
  if ! clang-tidy -p "$build" --quiet --warnings-as-errors='*' "$tu" 2>/dev/null; then
    echo "clang-tidy: $tu: failed" >&2
    return 1
  fi
  if [ "$GT_TIDY_CACHE" != none ]; then
    mkdir -p "$GT_TIDY_CACHE" && : >"$GT_TIDY_CACHE/$key"
  fi
}
tidy() {
  local build="${GT_TIDY_BUILD_DIR:-internal/core/build-tidy}"
  cmake -S internal/core -B "$build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null || return 1
  export GT_TIDY_CACHE="${GT_TIDY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/graphtide/clang-tidy}"
  export -f tidy_one
  # shellcheck disable=SC2016 # $0 and $1 are the inner shell's
  git ls-files -z 'internal/core/*.cc' ':!:internal/core/test/*' |
    xargs -0 -n 1 -P "$(nproc)" bash -c 'tidy_one "$0" "$1"' "$build"
}
step "clang-tidy ($(git ls-files 'internal/core/*.cc' ':!:internal/core/test/*' | wc -l) translation units)" tidy

mapfile -t sh < <(git ls-files '*.sh' .ci/run)
step "shellcheck (${#sh[@]} scripts)" shellcheck "${sh[@]}"

fail=0
for i in "${!pids[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  if [ "$status" = 0 ]; then
    echo "== lint: ${names[$i]}: ok" >&2
  else
    echo "== lint: ${names[$i]}: FAILED" >&2
    fail=1
  fi
  cat "$logs/$((i + 1))" >&2
done

if [ "$fail" != 0 ]; then
  echo "lint: FAILED (see above)" >&2
  exit 1
fi
echo "lint: ok" >&2
