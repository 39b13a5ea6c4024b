#!/usr/bin/env bash
# run_volume.sh -- builds the C++ core and its GoogleTest suite without
# sanitizers (-O2, line tables, GT_DCHECK and assert on) into
# internal/core/build-volume and runs the tests of volume, whole: the suites whose
# name ends in VolumeTest (test_util.h), which the sanitizer build
# (run_asan.sh) runs smaller or skips. Exits non-zero on any build or
# test failure, or when it finds no such test. Works from any current
# directory.
#
# Environment: as common.sh says, and
#   GT_VOLUME_BUILD_DIR  build directory (default: <repo>/internal/core/build-volume)
set -euo pipefail

# shellcheck source=internal/core/test/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build="${GT_VOLUME_BUILD_DIR:-$gt_src/build-volume}"

gt_build "$build" -DGT_SANITIZE=OFF -DGT_DCHECK=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1"
gt_ctest "$build" -R 'VolumeTest\.' --no-tests=error
