#!/usr/bin/env bash
# run.sh: run Prometheus on 127.0.0.1 as a dashboard for one graphtide serve,
# without Grafana. It scrapes the target every 5s, evaluates the project's
# alerting rules (graphtide-rules.yml beside this script) and serves the
# console template consoles/graphtide.html at
# http://127.0.0.1:PORT/consoles/graphtide.html.
#
# Prometheus comes from Debian's package (installed with apt-get if the
# binary is missing); its console libraries (prom.lib) are the package's
# own, nothing of theirs is copied into the repository.
#
# Run `run.sh --help` for usage.
set -euo pipefail

PROG="$(basename "$0")"
HERE="$(cd "$(dirname "$0")" && pwd -P)"
readonly RULES_FILE="${HERE}/graphtide-rules.yml"
readonly CONSOLES_DIR="${HERE}/consoles"
readonly CONSOLE="graphtide.html"

PROMETHEUS="${GRAPHTIDE_PROMETHEUS_BIN:-prometheus}"
RETENTION="${GRAPHTIDE_PROMETHEUS_RETENTION:-6h}"
START_TIMEOUT="${GRAPHTIDE_PROMETHEUS_START_TIMEOUT:-60}"
STOP_TIMEOUT="${GRAPHTIDE_PROMETHEUS_STOP_TIMEOUT:-20}"
DEFAULT_DIR="./.prometheus-data"
PID_FILE="prometheus.pid"
NOUN="prometheus"
READY_SCHEME="http://"
# shellcheck source-path=SCRIPTDIR source=../lib/daemon.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/../lib/daemon.sh"

# Where packages put Prometheus's console libraries (prom.lib, menu.lib):
# Debian and Ubuntu ship them as examples of the prometheus package; the
# upstream release tarball has them beside the binary, often copied to
# /etc/prometheus.
readonly LIBRARY_DIRS=(
	/usr/share/doc/prometheus/examples/console_libraries
	/usr/share/prometheus/console_libraries
	/etc/prometheus/console_libraries
)

usage() {
	local lib_lines
	lib_lines="$(printf '                                         %s\n' "${LIBRARY_DIRS[@]}")"
	cat <<EOF
Usage: ${PROG} <command> [options]

Run Prometheus on 127.0.0.1 as a dashboard for graphtide serve: it scrapes
the target every 5s, loads graphtide-rules.yml, keeps ${RETENTION} of data and
serves the console http://127.0.0.1:PORT/consoles/${CONSOLE}.

Commands:
  install        Install Prometheus (Debian's package, with apt-get) unless
                 the prometheus binary is already there.
  start  [--port P] [--target HOST:PORT] [--dir D]
                 Install if needed, write the configuration into D, start
                 Prometheus in the background and wait until it is ready.
                 Prints the dashboard's URL. Succeeds if already running
                 with the same settings.
  stop   [--dir D]
                 Stop it (SIGTERM, then SIGKILL after ${STOP_TIMEOUT}s).
                 Succeeds if not running.
  status [--dir D]
                 Print whether it is running. Exit code 0 if running, 3 if
                 not.
  config [--port P] [--target HOST:PORT] [--dir D]
                 Only write D/prometheus.yml and D/prometheus.args (the
                 command line start runs), then print the command line.
  help, -h, --help
                 Show this help.

Options:
  --port P             Port of Prometheus's web UI and API on 127.0.0.1.
                       Default 9090.
  --target HOST:PORT   The graphtide serve to scrape (its --http-addr).
                       Default 127.0.0.1:9464.
  --dir D              State dir (prometheus.yml, prometheus.args, PID file,
                       prometheus.log, data/). Default ./.prometheus-data.

Environment:
  GRAPHTIDE_PROMETHEUS_BIN             Prometheus binary. Default: prometheus
  GRAPHTIDE_PROMETHEUS_LIBRARIES       Console libraries dir (with prom.lib).
                                       Default: the first of these that
                                       has prom.lib:
${lib_lines}
  GRAPHTIDE_PROMETHEUS_RETENTION       --storage.tsdb.retention.time. Default 6h.
  GRAPHTIDE_PROMETHEUS_START_TIMEOUT   Seconds to wait for readiness. Default 60.
  GRAPHTIDE_PROMETHEUS_STOP_TIMEOUT    Seconds to wait after SIGTERM. Default 20.
EOF
}

# ---------------------------------------------------------------- install

cmd_install() {
	if command -v "${PROMETHEUS}" >/dev/null 2>&1; then
		log "prometheus already installed: $(command -v "${PROMETHEUS}")"
		return 0
	fi
	[[ -z "${GRAPHTIDE_PROMETHEUS_BIN:-}" ]] ||
		die "GRAPHTIDE_PROMETHEUS_BIN=${GRAPHTIDE_PROMETHEUS_BIN} is not an executable"
	command -v apt-get >/dev/null 2>&1 ||
		die "prometheus is not installed and there is no apt-get; install Prometheus 2.x and put it on PATH (or set GRAPHTIDE_PROMETHEUS_BIN)"
	local -a sudo=()
	if [[ "$(id -u)" != 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "installing prometheus needs root: run 'apt-get install prometheus' as root"
		sudo=(sudo)
	fi
	# Recommends would add prometheus-node-exporter, a second service.
	log "installing prometheus with: ${sudo[*]:+${sudo[*]} }apt-get install -y --no-install-recommends prometheus"
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
	command -v "${PROMETHEUS}" >/dev/null 2>&1 || die "apt-get installed prometheus but '${PROMETHEUS}' is not on PATH"
	log "installed $("${PROMETHEUS}" --version 2>&1 | head -n1)"
	# On a machine run by systemd the package enables and starts its own
	# service, which listens on :9090 (all interfaces).
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
		log "note: the package also started its own service 'prometheus' on :9090;" \
			"stop it ('systemctl disable --now prometheus') or use --port with another port"
	fi
}

# libraries_dir: print the console libraries dir (one with prom.lib), or
# fail.
libraries_dir() {
	local d
	if [[ -n "${GRAPHTIDE_PROMETHEUS_LIBRARIES:-}" ]]; then
		[[ -f "${GRAPHTIDE_PROMETHEUS_LIBRARIES}/prom.lib" ]] ||
			die "GRAPHTIDE_PROMETHEUS_LIBRARIES=${GRAPHTIDE_PROMETHEUS_LIBRARIES} has no prom.lib"
		echo "${GRAPHTIDE_PROMETHEUS_LIBRARIES}"
		return 0
	fi
	for d in "${LIBRARY_DIRS[@]}"; do
		if [[ -f "${d}/prom.lib" ]]; then
			echo "${d}"
			return 0
		fi
	done
	return 1
}

# ---------------------------------------------------------------- helpers

# is_ready PORT: true once Prometheus answers /-/ready with 200 (it answers
# 503 while it replays its write-ahead log). Without curl, an open port
# has to do.
is_ready() {
	local port="$1"
	if command -v curl >/dev/null 2>&1; then
		curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:${port}/-/ready" 2>/dev/null
	else
		port_open "${port}"
	fi
}

# running_pid DIR: print the Prometheus PID for DIR if it is alive, else fail.
running_pid() {
	local dir="$1" pid
	[[ -f "${dir}/prometheus.pid" ]] || return 1
	pid="$(cat "${dir}/prometheus.pid" 2>/dev/null || true)"
	is_uint "${pid}" || return 1
	kill -0 "${pid}" 2>/dev/null || return 1
	# Guard against a recycled PID: it must be a Prometheus using this dir.
	if [[ -r "/proc/${pid}/cmdline" ]]; then
		tr '\0' ' ' <"/proc/${pid}/cmdline" | grep -qF -- "--config.file=${dir}/prometheus.yml" || return 1
	fi
	echo "${pid}"
}

# configured_port DIR: read the port back from DIR/prometheus.args.
configured_port() {
	local dir="$1"
	[[ -f "${dir}/prometheus.args" ]] || return 1
	sed -n 's/^--web\.listen-address=127\.0\.0\.1:\([0-9]*\)$/\1/p' "${dir}/prometheus.args" | head -n1
}

# configured_target DIR: read the scrape target back from DIR/prometheus.yml.
configured_target() {
	local dir="$1"
	[[ -f "${dir}/prometheus.yml" ]] || return 1
	sed -n '/^      - targets:$/{n;s/^          - //p;}' "${dir}/prometheus.yml" | head -n1
}

log_tail() {
	local f="$1/prometheus.log"
	if [[ -s "${f}" ]]; then
		echo "----- last 40 lines of ${f} -----" >&2
		tail -n 40 "${f}" >&2
	fi
}

# write_config FILE TARGET: the scrape configuration.
write_config() {
	local file="$1" target="$2"
	cat >"${file}" <<EOF
# Generated by ${PROG}; rewritten on every start.
global:
  scrape_interval: 5s
  evaluation_interval: 5s

rule_files:
  - ${RULES_FILE}

scrape_configs:
  # The job name is the one graphtide-rules.yml and consoles/${CONSOLE} select.
  - job_name: graphtide
    metrics_path: /metrics
    scheme: http
    scrape_interval: 5s
    scrape_timeout: 4s
    static_configs:
      - targets:
          - ${target}
        labels:
          service: graphtide
EOF
}

# write_args FILE DIR PORT LIBRARIES: Prometheus's command line, one
# argument a line, as start runs it.
write_args() {
	local file="$1" dir="$2" port="$3" libs="$4"
	cat >"${file}" <<EOF
--config.file=${dir}/prometheus.yml
--storage.tsdb.path=${dir}/data
--storage.tsdb.retention.time=${RETENTION}
--web.listen-address=127.0.0.1:${port}
--web.console.templates=${CONSOLES_DIR}
--web.console.libraries=${libs}
EOF
}

# Options of start and config, set by parse_start_opts.
OPT_PORT="9090"
OPT_TARGET="127.0.0.1:9464"
OPT_DIR="${DEFAULT_DIR}"

parse_start_opts() {
	local sub="$1"
	shift
	while (($#)); do
		case "$1" in
		--port) [[ $# -ge 2 ]] || die "--port needs a value"; OPT_PORT="$2"; shift 2 ;;
		--port=*) OPT_PORT="${1#*=}"; shift ;;
		--target) [[ $# -ge 2 ]] || die "--target needs a value"; OPT_TARGET="$2"; shift 2 ;;
		--target=*) OPT_TARGET="${1#*=}"; shift ;;
		--dir) [[ $# -ge 2 ]] || die "--dir needs a value"; OPT_DIR="$2"; shift 2 ;;
		--dir=*) OPT_DIR="${1#*=}"; shift ;;
		-h | --help) usage; exit 0 ;;
		*) die "${sub}: unknown argument '$1' (see --help)" ;;
		esac
	done
	if ! is_uint "${OPT_PORT}" || ((OPT_PORT < 1 || OPT_PORT > 65535)); then
		die "invalid --port '${OPT_PORT}'"
	fi
	[[ "${OPT_TARGET}" =~ ^[^[:space:]/]+:[0-9]+$ ]] || die "invalid --target '${OPT_TARGET}' (want HOST:PORT, e.g. 127.0.0.1:9464)"
	[[ -f "${RULES_FILE}" ]] || die "no rules file ${RULES_FILE}"
	[[ -f "${CONSOLES_DIR}/${CONSOLE}" ]] || die "no console ${CONSOLES_DIR}/${CONSOLE}"
}

# generate DIR LIBRARIES: write DIR/prometheus.yml and DIR/prometheus.args
# from the options.
generate() {
	local dir="$1" libs="$2"
	write_config "${dir}/prometheus.yml" "${OPT_TARGET}"
	write_args "${dir}/prometheus.args" "${dir}" "${OPT_PORT}" "${libs}"
}

# ---------------------------------------------------------------- config

cmd_config() {
	parse_start_opts config "$@"
	local dir libs
	dir="$(abs_dir "${OPT_DIR}")"
	if ! libs="$(libraries_dir)"; then
		libs="${LIBRARY_DIRS[0]}"
		log "warning: no console libraries (prom.lib) found yet; assuming Debian's ${libs}"
	fi
	generate "${dir}" "${libs}"
	log "wrote ${dir}/prometheus.yml and ${dir}/prometheus.args"
	echo "${PROMETHEUS} $(tr '\n' ' ' <"${dir}/prometheus.args")"
}

# ---------------------------------------------------------------- start

cmd_start() {
	parse_start_opts start "$@"
	local dir port="${OPT_PORT}"
	dir="$(abs_dir "${OPT_DIR}")"
	local url="http://127.0.0.1:${port}/consoles/${CONSOLE}"

	# Already running for this dir?
	local pid
	if pid="$(running_pid "${dir}")"; then
		local cur_port cur_target
		cur_port="$(configured_port "${dir}" || true)"
		cur_target="$(configured_target "${dir}" || true)"
		if [[ "${cur_port}" != "${port}" || "${cur_target}" != "${OPT_TARGET}" ]]; then
			die "Prometheus for ${dir} is already running (pid ${pid}) on port ${cur_port:-?} scraping ${cur_target:-?}, not port ${port} scraping ${OPT_TARGET}; stop it first: ${PROG} stop --dir ${dir}"
		fi
		log "already running (pid ${pid})"
		wait_ready "${dir}" "${port}" "${pid}"
		echo "${url}"
		return 0
	fi
	rm -f "${dir}/prometheus.pid"

	if port_open "${port}"; then
		die "port ${port} on 127.0.0.1 is already in use by another process (on a systemd machine, perhaps the prometheus package's own service: 'systemctl disable --now prometheus'); or use --port"
	fi

	cmd_install
	local libs
	libs="$(libraries_dir)" ||
		die "no Prometheus console libraries (prom.lib) in ${LIBRARY_DIRS[*]}; Debian's prometheus package puts them in ${LIBRARY_DIRS[0]} (missing if dpkg excludes /usr/share/doc); set GRAPHTIDE_PROMETHEUS_LIBRARIES to a dir with prom.lib"

	mkdir -p "${dir}/data"
	generate "${dir}" "${libs}"
	local -a args
	mapfile -t args <"${dir}/prometheus.args"

	: >"${dir}/prometheus.log"
	nohup "${PROMETHEUS}" "${args[@]}" >>"${dir}/prometheus.log" 2>&1 </dev/null &
	pid=$!
	echo "${pid}" >"${dir}/prometheus.pid"
	log "started prometheus pid ${pid} scraping ${OPT_TARGET} every 5s (config: ${dir}/prometheus.yml, log: ${dir}/prometheus.log)"

	wait_ready "${dir}" "${port}" "${pid}"
	echo "${url}"
}

# ---------------------------------------------------------------- stop / status

cmd_status() {
	parse_dir_only status "$@"
	local dir="${DIR_ARG}" pid port
	if [[ -d "${dir}" ]]; then
		dir="$(cd "${dir}" && pwd -P)"
		if pid="$(running_pid "${dir}")"; then
			port="$(configured_port "${dir}" || true)"
			if [[ -n "${port}" ]] && is_ready "${port}"; then
				echo "running pid=${pid} dashboard=http://127.0.0.1:${port}/consoles/${CONSOLE} dir=${dir}"
			else
				echo "starting pid=${pid} port=${port:-?} (not ready yet) dir=${dir}"
			fi
			return 0
		fi
	fi
	echo "stopped dir=${dir}"
	return 3
}

# ---------------------------------------------------------------- main

main() {
	if (($# == 0)); then
		usage >&2
		exit 2
	fi
	local cmd="$1"
	shift
	case "${cmd}" in
	install)
		(($# == 0)) || { [[ "$1" == -h || "$1" == --help ]] && { usage; exit 0; }; die "install takes no arguments"; }
		cmd_install
		;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	status) cmd_status "$@" ;;
	config) cmd_config "$@" ;;
	help | -h | --help) usage ;;
	*)
		usage >&2
		die "unknown command '${cmd}'"
		;;
	esac
}

main "$@"
