#!/usr/bin/env bash
# bench-report.sh: run the benchmarks of docs/benchmarks.md with the commands
# that page states, keep each one's JSON result in docs/bench/<name>.json
# (with the command, how long it took, and the load average and a
# calibration of the machine measured just before it), record the machine in
# docs/bench/machine.json, and render docs/benchmarks.md from those files.
# The commands and the page's tables are in internal/bench/report.
#
#   scripts/bench-report.sh                     every benchmark, then the page
#   scripts/bench-report.sh --only ingest,dgs   some of them (the others' files stay)
#   scripts/bench-report.sh --brokers H:P       use a running Kafka broker for kafka and serve
#   scripts/bench-report.sh --render            only render the page from docs/bench/*.json
#
# Without --brokers, the benchmarks that need Kafka get a broker of their own
# from deploy/kafka/kafka.sh on 127.0.0.1:${GRAPHTIDE_BENCH_KAFKA_PORT:-19392},
# stopped at the end; those that run the Differential Dataflow baseline get
# it built first (scripts/dd.sh build, cached). A benchmark that fails is reported and its file left
# as it was; the script then exits 1 after rendering the others.
set -euo pipefail

cd "$(dirname "$0")/.."
only="" brokers="" render_only=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--only) only="${2:?--only needs a list of names}"; shift 2 ;;
	--brokers) brokers="${2:?--brokers needs host:port}"; shift 2 ;;
	--render) render_only=1; shift ;;
	-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-report.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

GO="${GO:-go}"
out=docs/bench
mkdir -p "$out" bin
"$GO" build -o bin/benchreport ./internal/bench/report/benchreport

if [[ "$render_only" == 0 ]]; then
	"$GO" build -o bin/ ./cmd/graphtide ./cmd/graphtide-bench
	mapfile -t all < <(bin/benchreport list)
	names=() need_kafka=0 need_dd=0
	for line in "${all[@]}"; do
		name="${line%% *}"
		if [[ -n "$only" && ",$only," != *",$name,"* ]]; then
			continue
		fi
		names+=("$name")
		[[ "$line" == *" kafka"* ]] && need_kafka=1
		[[ "$line" == *" dd" ]] && need_dd=1
	done
	if [[ ${#names[@]} -eq 0 ]]; then
		echo "bench-report.sh: --only $only names no benchmark ($(bin/benchreport list | cut -d' ' -f1 | paste -sd,))" >&2
		exit 2
	fi
	if [[ "$need_kafka" == 1 && -z "$brokers" ]]; then
		kdir="$(mktemp -d /tmp/graphtide-bench-kafka.XXXXXX)"
		trap 'deploy/kafka/kafka.sh stop --dir "$kdir" >/dev/null 2>&1 || true; rm -rf "$kdir"' EXIT
		brokers="$(deploy/kafka/kafka.sh start --port "${GRAPHTIDE_BENCH_KAFKA_PORT:-19392}" --dir "$kdir" | tail -1)"
	fi
	if [[ "$need_dd" == 1 ]]; then
		scripts/dd.sh build >&2 # the Differential Dataflow baseline (cached; minutes the first time)
	fi
	bin/benchreport machine -dir "$out"
	failed=()
	for name in "${names[@]}"; do
		echo "bench-report.sh: $name" >&2
		if ! bin/benchreport run -dir "$out" -bin bin/graphtide -brokers "$brokers" "$name"; then
			failed+=("$name")
		fi
	done
fi

bin/benchreport render -dir "$out" -out docs/benchmarks.md
echo "bench-report.sh: wrote docs/benchmarks.md" >&2
if [[ "$render_only" == 0 && ${#failed[@]} -gt 0 ]]; then
	echo "bench-report.sh: failed: ${failed[*]} (their files in $out are as they were)" >&2
	exit 1
fi
