#!/usr/bin/env bash
# The Differential Dataflow baseline of `graphtide bench analytics`
# (bench/dd: DD 0.26.0 and timely 0.32.0 as Cargo.lock pins them, built
# from their crates.io sources).
#
# Usage:
#   scripts/dd.sh build   builds bench/dd in release mode (cargo, from
#                         ~/.cargo/bin when it is not on PATH) into
#                         $GRAPHTIDE_DD_TARGET (default
#                         ~/.cache/graphtide/dd-target, outside the tree)
#                         and prints the binary's path
#   scripts/dd.sh path    prints the built binary's path; exits 1, printing
#                         nothing, when it is not built
#
# `make dd` runs the build; make build and make test do not.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${GRAPHTIDE_DD_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/graphtide/dd-target}"
bin="$target/release/graphtide-dd"

cargo_bin() {
  if command -v cargo >/dev/null 2>&1; then
    command -v cargo
  elif [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "$HOME/.cargo/bin/cargo"
  else
    echo "dd.sh: cargo not found (install Rust 1.88 or newer: https://rustup.rs)" >&2
    exit 1
  fi
}

case "${1:-}" in
build)
  cargo="$(cargo_bin)"
  mkdir -p "$target"
  # --locked: the versions Cargo.lock names, never newer ones.
  "$cargo" build --release --locked \
    --manifest-path "$root/bench/dd/Cargo.toml" --target-dir "$target" >&2
  echo "$bin"
  ;;
path)
  [ -x "$bin" ] || exit 1
  echo "$bin"
  ;;
*)
  echo "usage: scripts/dd.sh build|path" >&2
  exit 2
  ;;
esac
