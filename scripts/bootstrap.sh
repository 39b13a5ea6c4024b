#!/usr/bin/env bash
# Installs what building and testing graphtide needs, if it is missing:
# Go (>= 1.26), g++ with C++17, cmake and GoogleTest (for the C++ core's
# AddressSanitizer tests). Safe to run repeatedly; prints what it does.
set -euo pipefail

need_apt=()
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
[ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: installing ${need_apt[*]} with apt-get" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
  echo "bootstrap: Go is not installed; install Go >= 1.26 from the Go project's packages and put it on PATH" >&2
  exit 1
fi
gov=$(go env GOVERSION | sed 's/^go//')
major=${gov%%.*}; rest=${gov#*.}; minor=${rest%%.*}
if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 26 ]; }; then
  echo "bootstrap: Go $gov is too old; graphtide needs Go >= 1.26" >&2
  exit 1
fi
