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

fail=0
step() { echo "== lint: $*" >&2; }

step golangci-lint
.tools/bin/golangci-lint run ./... || fail=1

mapfile -t cpp < <(git ls-files 'cgo/*.cc' 'cgo/*.h')
step "clang-format (${#cpp[@]} files)"
clang-format --dry-run -Werror "${cpp[@]}" || fail=1

step clang-tidy
build="${GT_TIDY_BUILD_DIR:-cgo/build-tidy}"
cmake -S cgo -B "$build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
mapfile -t tus < <(git ls-files 'cgo/*.cc' ':!:cgo/test/*')
clang-tidy -p "$build" --quiet --warnings-as-errors='*' "${tus[@]}" 2>/dev/null || fail=1

mapfile -t sh < <(git ls-files '*.sh' .ci/run)
step "shellcheck (${#sh[@]} scripts)"
shellcheck "${sh[@]}" || fail=1

if [ "$fail" != 0 ]; then
  echo "lint: FAILED (see above)" >&2
  exit 1
fi
echo "lint: ok" >&2
