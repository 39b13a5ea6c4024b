#!/usr/bin/env bash
# The linters `make lint` (and so `make test`) runs; each must pass:
#   golangci-lint  the Go code (.golangci.yml)
#   clang-format   the C++ core's layout (.clang-format), checked, never rewritten
#   clang-tidy     the C++ core (cgo/.clang-tidy: bugprone, concurrency, performance)
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
# the lock on its cache: wait for it rather than fail.
step golangci-lint .tools/bin/golangci-lint run --allow-serial-runners ./...

mapfile -t cpp < <(git ls-files 'cgo/*.cc' 'cgo/*.h')
step "clang-format (${#cpp[@]} files)" clang-format --dry-run -Werror "${cpp[@]}"

tidy() {
  local build="${GT_TIDY_BUILD_DIR:-cgo/build-tidy}"
  cmake -S cgo -B "$build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null || return 1
  # shellcheck disable=SC2016 # $0 and $1 are the inner shell's
  git ls-files -z 'cgo/*.cc' ':!:cgo/test/*' |
    xargs -0 -n 1 -P "$(nproc)" sh -c 'clang-tidy -p "$0" --quiet --warnings-as-errors="*" "$1" 2>/dev/null || { echo "clang-tidy: $1: failed" >&2; exit 1; }' "$build"
}
step "clang-tidy ($(git ls-files 'cgo/*.cc' ':!:cgo/test/*' | wc -l) translation units)" tidy

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
