# daemon.sh -- helpers shared by deploy/kafka/kafka.sh and
# deploy/prometheus/run.sh, which run one local daemon out of a directory
# with a PID file. Source it after setting:
#   PROG          the script's name (for messages)
#   DEFAULT_DIR   the default --dir
#   PID_FILE      the PID file's name inside the dir
#   NOUN          what the daemon is called in messages ("broker", ...)
#   STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL
#   START_TIMEOUT seconds to wait for readiness after starting
#   READY_SCHEME  what the ready address starts with ("" or "http://")
# and defining usage, running_pid DIR (print the daemon's PID for DIR if
# it is alive and really it, else fail), is_ready PORT (true once the
# daemon serves on 127.0.0.1:PORT) and log_tail DIR (print the end of its
# logs to stderr).
# shellcheck shell=bash

die() {
	echo "${PROG}: error: $*" >&2
	exit 1
}

log() {
	echo "${PROG}: $*" >&2
}

is_uint() {
	[[ "$1" =~ ^[0-9]+$ ]]
}

# port_open PORT: true if something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
	local port="$1"
	if command -v nc >/dev/null 2>&1; then
		nc -z -w 1 127.0.0.1 "${port}" >/dev/null 2>&1
	elif command -v timeout >/dev/null 2>&1; then
		timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/${port}" >/dev/null 2>&1
	else
		# Loopback connects succeed or get refused at once; no timeout needed.
		(exec 3<>"/dev/tcp/127.0.0.1/${port}") >/dev/null 2>&1
	fi
}

abs_dir() {
	mkdir -p "$1"
	(cd "$1" && pwd -P)
}

# parse_dir_only SUBCOMMAND ARGS...: sets DIR_ARG from --dir (else DEFAULT_DIR).
parse_dir_only() {
	local sub="$1"
	shift
	DIR_ARG="${DEFAULT_DIR}"
	while (($#)); do
		case "$1" in
		--dir) [[ $# -ge 2 ]] || die "--dir needs a value"; DIR_ARG="$2"; shift 2 ;;
		--dir=*) DIR_ARG="${1#*=}"; shift ;;
		-h | --help) usage; exit 0 ;;
		*) die "${sub}: unknown argument '$1' (see --help)" ;;
		esac
	done
}

# cmd_stop [--dir DIR]: SIGTERM the daemon, SIGKILL after STOP_TIMEOUT.
cmd_stop() {
	parse_dir_only stop "$@"
	local dir="${DIR_ARG}"
	if [[ ! -d "${dir}" ]]; then
		log "not running (no dir ${dir})"
		return 0
	fi
	dir="$(cd "${dir}" && pwd -P)"
	local pid
	if ! pid="$(running_pid "${dir}")"; then
		rm -f "${dir:?}/${PID_FILE}"
		log "not running"
		return 0
	fi
	log "stopping ${NOUN} pid ${pid}"
	kill -TERM "${pid}" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while kill -0 "${pid}" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			log "still running after ${STOP_TIMEOUT}s; sending SIGKILL"
			kill -KILL "${pid}" 2>/dev/null || true
			local i
			for ((i = 0; i < 50; i++)); do
				kill -0 "${pid}" 2>/dev/null || break
				sleep 0.1
			done
			break
		fi
		sleep 0.2
	done
	if kill -0 "${pid}" 2>/dev/null; then
		die "could not stop ${NOUN} pid ${pid}"
	fi
	rm -f "${dir:?}/${PID_FILE}"
	log "stopped"
}

# wait_ready DIR PORT PID: wait until the daemon PID is ready on PORT
# (is_ready), up to START_TIMEOUT seconds. Dies with the end of its logs
# if it exits first, or is not ready in time (it is then left running,
# and the message says how to stop it).
wait_ready() {
	local dir="$1" port="$2" pid="$3"
	local deadline=$((SECONDS + START_TIMEOUT))
	while ((SECONDS < deadline)); do
		if ! kill -0 "${pid}" 2>/dev/null; then
			rm -f "${dir:?}/${PID_FILE}"
			log_tail "${dir}"
			die "${NOUN} (pid ${pid}) exited during startup"
		fi
		if is_ready "${port}"; then
			log "ready on ${READY_SCHEME}127.0.0.1:${port}"
			return 0
		fi
		sleep 0.5
	done
	log_tail "${dir}"
	die "${NOUN} (pid ${pid}) was not ready on 127.0.0.1:${port} within ${START_TIMEOUT}s; it is still running, stop it with: ${PROG} stop --dir ${dir}"
}
