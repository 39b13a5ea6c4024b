#!/usr/bin/env bash
# Installs what building, testing and linting graphtide needs, if it is
# missing: Go (>= 1.26.7, checked, not installed), g++ with C++17, make,
# cmake, ninja and GoogleTest (the C++ core and its sanitizer tests),
# clang-format, clang-tidy, shellcheck and promtool (the metrics and
# alerting-rule tests; Debian ships it in its prometheus package) from the
# distribution's packages, and golangci-lint, pinned, built from the Go
# module proxy into .tools/bin. Safe to run repeatedly; prints only what
# it does.
# `make deps` runs it; `make build` never does.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pinned linter: bump deliberately (it changes what `make lint` says).
GOLANGCI_LINT_VERSION=v2.15.0

need_apt=()
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v ninja >/dev/null 2>&1 || need_apt+=(ninja-build)
[ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
command -v clang-format >/dev/null 2>&1 || need_apt+=(clang-format)
command -v clang-tidy >/dev/null 2>&1 || need_apt+=(clang-tidy)
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: installing ${need_apt[*]} with apt-get" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# promtool: Debian ships it in its prometheus package (without its
# recommends, which would add prometheus-node-exporter, a second service).
if ! command -v promtool >/dev/null 2>&1; then
  echo "deps: installing prometheus (for promtool) with apt-get" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  command -v promtool >/dev/null 2>&1 || { echo "deps: the prometheus package installed no promtool on PATH" >&2; exit 1; }
fi

if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go is not installed; install Go >= 1.26.7 from the Go project's packages and put it on PATH" >&2
  exit 1
fi
# go.mod's go line; older toolchains fetch a newer one themselves
# (GOTOOLCHAIN=auto) unless that is turned off.
gov=$(go env GOVERSION | sed 's/^go//')
major=${gov%%.*}; rest=${gov#*.}; minor=${rest%%.*}
if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 26 ]; }; then
  echo "deps: Go $gov is too old; graphtide needs Go >= 1.26.7 (go.mod)" >&2
  exit 1
fi

tools="$PWD/.tools/bin"
want="${GOLANGCI_LINT_VERSION#v}"
if ! "$tools/golangci-lint" version 2>/dev/null | grep -q "version $want "; then
  echo "deps: building golangci-lint $GOLANGCI_LINT_VERSION into .tools/bin (a few minutes, once)" >&2
  GOBIN="$tools" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
fi
