#!/usr/bin/env bash
# deploy/spark/measure.sh: what an export costs, for docs/spark.md: a
# Graph500 graph (graphtide gen, --scale, default 22; edge factor 16)
# loaded into a store and compacted, then exported; prints the Parquet
# bytes per edge, the export's edges per second and its peak RSS.
#
#   make build && deploy/spark/measure.sh [SCALE] [WORKDIR]
#
# Needs about 6 GB of disk at scale 22 in WORKDIR (default a temporary
# directory, removed at the end); a few minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$here/../../bin/graphtide"
scale="${1:-22}"
work="${2:-}"
if [ -z "$work" ]; then
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' EXIT
fi
[ -x "$bin" ] || { echo "measure.sh: $bin is missing: make build" >&2; exit 1; }
mkdir -p "$work"
cd "$work"
rm -rf data ex g.bin
"$bin" gen --scale "$scale" --edge-factor 16 --out g.bin >&2
"$bin" load --dir data g.bin >&2
"$bin" compact --dir data >&2
/usr/bin/time -f '%e %M' -o export.time "$bin" export --dir data --out ex --part a > export.out
read -r secs rss_kb < export.time
edges=$(sed -n 's/^part a in ex: \([0-9]*\) edges.*/\1/p' export.out)
bytes=$(( $(stat -c %s ex/a.edges.parquet) + $(stat -c %s ex/a.vertices.parquet) ))
awk -v s="$scale" -v e="$edges" -v b="$bytes" -v t="$secs" -v r="$rss_kb" -v cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" -v n="$(nproc)" 'BEGIN {
	printf "scale %d: %d edges on %d cores (%s)\n", s, e, n, cpu
	printf "| Parquet on disk | %.2f bytes per edge (%.0f MB for %d edges) |\n", b / e, b / 1e6, e
	printf "| export time | %.1f s: %.2fM edges per second |\n", t, e / t / 1e6
	printf "| peak memory (RSS) | %.0f MB |\n", r / 1024
}'
