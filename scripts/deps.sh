#!/usr/bin/env bash
# Installs what graphtide needs, if it is missing, in groups:
#
#   build  Go (>= 1.26.7, checked, not installed) and g++ with C++17 (cgo
#          compiles the C++ core into the binary): what `make build` and
#          `make run` need. `make run` installs only this group.
#   kafka  a Java runtime, 17 or newer, and Maven: what the real broker
#          (deploy/kafka/kafka.sh: Maven downloads Kafka's jars, Java runs
#          them) needs, for the tour and the tests in test/kafka.
#   test   build and kafka, and cmake, ninja, ccache and GoogleTest (the C++
#          core's sanitizer tests), openssl (the broker's TLS listener in the
#          tests), promtool (the metrics and alerting-rule tests;
#          Debian ships it in its prometheus package) and python3 (the
#          payments generator and the fraud monitors' reference,
#          scripts/payments, which the tests run).
#   lint   clang-format, clang-tidy, shellcheck, and golangci-lint, pinned,
#          built from the Go module proxy once a machine (into
#          ~/.cache/graphtide/tools) and copied into .tools/bin.
#   all    every group: what `make deps`, `make test` and `make lint` run.
#
# Usage: scripts/deps.sh [GROUP...] (no GROUP: all). Distribution packages
# come from apt-get (Debian, Ubuntu). Safe to run repeatedly; prints only
# what it does. With GRAPHTIDE_DEPS_DRY_RUN=1 it only prints what it would
# install. `make build` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pinned linter: bump deliberately (it changes what `make lint` says).
GOLANGCI_LINT_VERSION=v2.15.0
# Kafka 4 runs on Java 17 and newer.
JAVA_MIN=17
DRY_RUN="${GRAPHTIDE_DEPS_DRY_RUN:-}"

die() {
  echo "deps: $*" >&2
  exit 1
}

want_build="" want_kafka="" want_test="" want_lint=""
[ $# -gt 0 ] || set -- all
for g in "$@"; do
  case "$g" in
  build) want_build=1 ;;
  kafka) want_kafka=1 ;;
  test) want_build=1 want_kafka=1 want_test=1 ;;
  lint) want_lint=1 ;;
  all) want_build=1 want_kafka=1 want_test=1 want_lint=1 ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *) die "unknown group '$g': want build, kafka, test, lint or all (see --help)" ;;
  esac
done

# java_major JAVA: the major version of the Java at JAVA (8 for "1.8.0_x").
java_major() {
  local ver major
  ver="$("$1" -version 2>&1 | awk -F'"' '/version/ && v == "" {v = $2} END {print v}')"
  major="${ver%%.*}"
  if [ "$major" = 1 ]; then
    major="$(echo "$ver" | cut -d. -f2)"
  fi
  case "$major" in '' | *[!0-9]*) echo 0 ;; *) echo "$major" ;; esac
}

# java_ok: whether the Java kafka.sh would use (JAVA_HOME's, else the one
# on PATH) is JAVA_MIN or newer.
java_ok() {
  local j=""
  if [ -n "${JAVA_HOME:-}" ] && [ -x "${JAVA_HOME}/bin/java" ]; then
    j="${JAVA_HOME}/bin/java"
  elif command -v java >/dev/null 2>&1; then
    j="$(command -v java)"
  fi
  [ -n "$j" ] && [ "$(java_major "$j")" -ge "$JAVA_MIN" ]
}

# java_package: Debian's default Java runtime when it is new enough
# (bookworm's is 17, trixie's 21), else openjdk-17 by name.
java_package() {
  local v
  v="$(apt-cache policy default-jre-headless 2>/dev/null | sed -n 's/^ *Candidate: *[0-9]*:1\.\([0-9]*\).*/\1/p' | head -n1 || true)"
  if [ -n "$v" ] && [ "$v" -ge "$JAVA_MIN" ]; then
    echo default-jre-headless
  else
    echo "openjdk-${JAVA_MIN}-jre-headless"
  fi
}

need_apt=()
need_java=""
if [ -n "$want_build" ]; then
  command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
fi
if [ -n "$want_kafka" ]; then
  java_ok || need_java=1
  command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
fi
if [ -n "$want_test" ]; then
  command -v make >/dev/null 2>&1 || need_apt+=(make)
  command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
  command -v ninja >/dev/null 2>&1 || need_apt+=(ninja-build)
  command -v ccache >/dev/null 2>&1 || need_apt+=(ccache)
  [ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
  command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
  command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
fi
if [ -n "$want_lint" ]; then
  command -v clang-format >/dev/null 2>&1 || need_apt+=(clang-format)
  command -v clang-tidy >/dev/null 2>&1 || need_apt+=(clang-tidy)
  command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)
fi
# promtool: Debian ships it in its prometheus package (without its
# recommends, which would add prometheus-node-exporter, a second service).
need_promtool=""
if [ -n "$want_test" ] && ! command -v promtool >/dev/null 2>&1; then
  need_promtool=1
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
if [ ${#need_apt[@]} -gt 0 ] || [ -n "$need_java" ] || [ -n "$need_promtool" ]; then
  if [ -z "$DRY_RUN" ]; then
    $SUDO apt-get update -qq
  fi
fi
if [ -n "$need_java" ]; then
  need_apt+=("$(java_package)")
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: installing ${need_apt[*]} with apt-get" >&2
  if [ -z "$DRY_RUN" ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
fi
if [ -n "$need_promtool" ]; then
  echo "deps: installing prometheus (for promtool) with apt-get" >&2
  if [ -z "$DRY_RUN" ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    command -v promtool >/dev/null 2>&1 || die "the prometheus package installed no promtool on PATH"
  fi
fi
if [ -n "$need_java" ] && [ -z "$DRY_RUN" ] && ! java_ok; then
  # An older Java kept first on PATH (or in JAVA_HOME): name the new one.
  jvm="$(find /usr/lib/jvm -mindepth 3 -maxdepth 3 -path '*/bin/java' 2>/dev/null | sort -V | tail -n1)"
  die "installed a Java runtime, but the java kafka.sh would run is older than $JAVA_MIN; set JAVA_HOME=${jvm%/bin/java} (kafka.sh uses it)"
fi

if [ -n "$want_build$want_lint" ]; then
  if ! command -v go >/dev/null 2>&1; then
    die "Go is not installed; install Go >= 1.26.7 from the Go project's packages and put it on PATH"
  fi
  # go.mod's go line; older toolchains fetch a newer one themselves
  # (GOTOOLCHAIN=auto) unless that is turned off.
  gov=$(go env GOVERSION | sed 's/^go//')
  major=${gov%%.*}
  rest=${gov#*.}
  minor=${rest%%.*}
  if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 26 ]; }; then
    die "Go $gov is too old; graphtide needs Go >= 1.26.7 (go.mod)"
  fi
fi

if [ -n "$want_lint" ]; then
  # Built once per machine and version into the user's cache, then copied
  # into this clone's .tools/bin: a fresh clone does not build it again.
  tools="$PWD/.tools/bin"
  want="${GOLANGCI_LINT_VERSION#v}"
  built="${XDG_CACHE_HOME:-$HOME/.cache}/graphtide/tools/golangci-lint-$GOLANGCI_LINT_VERSION"
  if ! "$tools/golangci-lint" version 2>/dev/null | grep -q "version $want "; then
    if ! "$built/golangci-lint" version 2>/dev/null | grep -q "version $want "; then
      echo "deps: building golangci-lint $GOLANGCI_LINT_VERSION into $built (a few minutes, once a machine)" >&2
      if [ -z "$DRY_RUN" ]; then
        GOBIN="$built" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
      fi
    fi
    echo "deps: golangci-lint $GOLANGCI_LINT_VERSION into .tools/bin" >&2
    if [ -z "$DRY_RUN" ]; then
      mkdir -p "$tools"
      cp "$built/golangci-lint" "$tools/golangci-lint"
    fi
  fi
fi
