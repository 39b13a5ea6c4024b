#!/usr/bin/env bash
# `make test`: the parts of the test suite, run at the same time (most of
# them wait on I/O, a broker or one core for long stretches), each into a
# log that is printed whole when the part ends, so that outputs never
# interleave:
#   lint        scripts/lint.sh (every linter)
#   vet         go vet ./...
#   test-go     the Go tests under the race detector
#   test-kafka  the tests against a real broker (test/kafka)
#   test-cpp    the C++ core's tests under ASan and UBSan
#   test-alone  the tests that measure serve against its memory budget,
#               run after all the others, alone on the machine
# (The tests of volume whole, make test-volume, are not a part of it:
# .ci/run runs them after it.)
# test-kafka starts once the race build of the packages (`go build -race`
# of all but the commands; test-go then reuses it) is done, so that the
# two do not compile the same packages at once. At the end: each part's
# result, wall time and CPU, and the slowest tests of the Go runs. Exits
# non-zero when any part fails. Run `scripts/deps.sh` first (`make test`
# does).
#
# Environment: TEST_OUT, the directory of the logs and of the go test
# JSON streams (default .test-out); GT_TEST_PARTS, the parts to run
# (default all of the above).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

# As the Makefile: go commands with -trimpath (the build cache by content).
case " ${GOFLAGS:-} " in *" -trimpath "*) ;; *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath" ;; esac

out="${TEST_OUT:-.test-out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
read -r -a parts <<<"${GT_TEST_PARTS:-lint vet test-go test-kafka test-cpp test-alone}"
make_part() { make --no-print-directory NO_DEPS=1 TEST_OUT="$out" "$@"; }
# run_part runs a part in this (sub)shell and records the CPU (user and
# system seconds) of the processes it waited for into $out/PART.cpu: the
# machine's two cores are make test's budget, and a part's wall time says
# little of its share when they all run at once. (A daemon a part starts,
# such as the Kafka broker, is not waited for and not counted.)
run_part() {
  local st
  make_part "$1"
  st=$?
  times >"$out/$1.times" # the builtin: no fork, so it sees this shell's children
  awk 'END { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }; printf "%d\n", t + 0.5 }' "$out/$1.times" >"$out/$1.cpu"
  return $st
}

t0=$(date +%s)
declare -A pid start
rm -f "$out"/*.log "$out"/*.json "$out"/*.cpu "$out"/*.times "$out/race-build.done"

# The lanes run in the background; each writes its own log and status.
for p in "${parts[@]}"; do
  case "$p" in
    test-go)
      (
        # The race build both Go test parts use; test-kafka waits for it.
        # Its errors, if any, are test-go's build failures, shown there.
        # (Commands are left out: go build would link them for nothing.)
        mapfile -t libs < <(go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... 2>/dev/null | grep .)
        go build -race "${libs[@]}" >/dev/null 2>&1
        touch "$out/race-build.done"
        run_part test-go
      ) >"$out/$p.log" 2>&1 &
      ;;
    test-kafka)
      (
        if [[ " ${parts[*]} " == *" test-go "* ]]; then
          until [ -e "$out/race-build.done" ] || ! kill -0 "${pid[test-go]:-}" 2>/dev/null; do sleep 1; done
        fi
        run_part test-kafka
      ) >"$out/$p.log" 2>&1 &
      ;;
    lint | vet | test-cpp)
      (run_part "$p") >"$out/$p.log" 2>&1 &
      ;;
    test-alone)
      continue # after the others (below)
      ;;
    *)
      echo "test.sh: no part named $p" >&2
      exit 2
      ;;
  esac
  pid[$p]=$!
  start[$p]=$(date +%s)
done
trap 'kill "${pid[@]}" 2>/dev/null; exit 130' INT TERM

# Print each part as it ends, in the order they end.
declare -A status secs
left=()
for p in "${parts[@]}"; do [ "$p" = test-alone ] || left+=("$p"); done
report() { # part: prints its log and verdict
  local verdict=ok
  [ "${status[$1]}" = 0 ] || verdict="FAILED (exit ${status[$1]})"
  echo "=================== $1: $verdict in ${secs[$1]} s"
  cat "$out/$1.log"
  echo "=================== end of $1: $verdict"
  echo
}
while [ ${#left[@]} -gt 0 ]; do
  wait -n "${pid[@]}" 2>/dev/null
  still=()
  for p in "${left[@]}"; do
    if kill -0 "${pid[$p]}" 2>/dev/null; then
      still+=("$p")
      continue
    fi
    wait "${pid[$p]}"
    status[$p]=$?
    secs[$p]=$(($(date +%s) - start[$p]))
    report "$p"
  done
  left=("${still[@]}")
done
if [[ " ${parts[*]} " == *" test-alone "* ]]; then
  start[test-alone]=$(date +%s)
  (run_part test-alone) >"$out/test-alone.log" 2>&1
  status[test-alone]=$?
  secs[test-alone]=$(($(date +%s) - start[test-alone]))
  report test-alone
fi

fail=0
echo "make test: each part's wall time and CPU (they ran at the same time, test-alone after them):"
cpu_total=0
for p in "${parts[@]}"; do
  verdict=ok
  [ "${status[$p]}" = 0 ] || { verdict=FAILED; fail=1; }
  cpu=$(cat "$out/$p.cpu" 2>/dev/null || echo 0)
  cpu_total=$((cpu_total + cpu))
  printf '  %-11s %-7s %4d s %6d s CPU\n' "$p" "$verdict" "${secs[$p]}" "$cpu"
done
printf '  %-19s %4d s %6d s CPU\n' total "$(($(date +%s) - t0))" "$cpu_total"
mapfile -t streams < <(ls "$out"/*.json 2>/dev/null)
if [ ${#streams[@]} -gt 0 ]; then
  go run ./scripts/testreport -slowest 10 "${streams[@]}" || fail=1
fi
if [ "$fail" != 0 ]; then
  echo "make test: FAILED (see the parts above)"
  exit 1
fi
echo "make test: ok"
