#!/usr/bin/env bash
# kafka.sh: install and run a single-node Apache Kafka broker (KRaft mode,
# broker+controller in one JVM) on 127.0.0.1, from the Apache Kafka jars on
# Maven Central. No Docker, no Kafka tarball: Java 17+ and Maven are enough.
#
# This is a test/dev broker: one node, replication factor 1. Beside the
# PLAINTEXT listener, start can add an SSL listener that requires client
# certificates (mTLS; the script makes a CA and the certificates) and a
# SASL_PLAINTEXT listener with SCRAM and, given a JWKS URL, OAUTHBEARER.
#
# Run `kafka.sh --help` for usage.
set -euo pipefail

readonly KAFKA_VERSION="4.3.1"
readonly SCALA_VERSION="2.13"
# Must match the log4j-core that kafka_2.13 pulls in (2.25.x for 4.3.1);
# the generated pom pins log4j-api/log4j-core to this version as well.
readonly LOG4J_VERSION="2.25.4"

PROG="$(basename "$0")"
KAFKA_HOME_DIR="${GRAPHTIDE_KAFKA_HOME:-${HOME}/.cache/graphtide/kafka-${KAFKA_VERSION}}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx512m -Xms128m}"
EXTRA_JVM_OPTS="${KAFKA_JVM_OPTS:-}"
START_TIMEOUT="${GRAPHTIDE_KAFKA_START_TIMEOUT:-60}"
STOP_TIMEOUT="${GRAPHTIDE_KAFKA_STOP_TIMEOUT:-20}"
DEFAULT_DIR="./.kafka-data"
PID_FILE="kafka.pid"
NOUN="broker"
READY_SCHEME=""
# shellcheck source-path=SCRIPTDIR source=../lib/daemon.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/../lib/daemon.sh"
# The log cleaner's dedupe buffer defaults to 128 MB, which does not fit a
# small heap; 16 MB is plenty for a test broker.
DEDUPE_BUFFER="${GRAPHTIDE_KAFKA_DEDUPE_BUFFER:-16777216}"

# What a missing Java or Maven message suggests.
INSTALL_HINT="in a graphtide checkout, scripts/deps.sh kafka (make deps-kafka) installs both with apt-get; or apt-get install default-jre-headless maven"

LIB_DIR="${KAFKA_HOME_DIR}/lib"
MARKER="${KAFKA_HOME_DIR}/.installed-kafka_${SCALA_VERSION}-${KAFKA_VERSION}"

usage() {
	cat <<EOF
Usage: ${PROG} <command> [options]

Install and run a single-node Apache Kafka ${KAFKA_VERSION} broker (KRaft mode)
on 127.0.0.1, for tests and local development.

Commands:
  install                   Download the Kafka jars into the cache dir (once;
                            later runs are no-ops).
  start  [--port P] [--controller-port C] [--dir D]
         [--ssl-port S] [--sasl-port A]
         [--oauth-jwks-url URL [--oauth-issuer I] [--oauth-audience AUD]]
                            Install if needed, format D if needed, start the
                            broker in the background and wait until it accepts
                            connections. Prints the bootstrap address
                            (127.0.0.1:P). Succeeds if already running.
  stop   [--dir D]          Stop the broker (SIGTERM, then SIGKILL after
                            ${STOP_TIMEOUT}s). Succeeds if not running.
  status [--dir D]          Print whether the broker is running. Exit code 0 if
                            running, 3 if not.
  help, -h, --help          Show this help.

Options:
  --port P             PLAINTEXT (client) port. Default 9092.
  --controller-port C  KRaft controller port. Default P+1.
  --dir D              Data/state dir (server.properties, PID file, logs/,
                       data/). Default ./.kafka-data.
  --ssl-port S         Also an SSL listener on 127.0.0.1:S that requires a
                       client certificate signed by the script's CA. The
                       CA, the broker's keystore and a client certificate
                       are made (once) in D/tls: ca.pem, client.pem and
                       client.key are the client's files.
  --sasl-port A        Also a SASL_PLAINTEXT listener on 127.0.0.1:A with
                       SCRAM-SHA-256 and SCRAM-SHA-512 (create users with
                       the Admin API, AlterUserScramCredentials) and, with
                       --oauth-jwks-url, OAUTHBEARER.
  --oauth-jwks-url URL OAUTHBEARER on the SASL listener: tokens are JWTs
                       checked by Kafka's OAuthBearerValidatorCallbackHandler
                       against the keys this JWKS URL serves (the JVM is
                       allowed that URL by the system property
                       org.apache.kafka.sasl.oauthbearer.allowed.urls).
  --oauth-issuer I     The iss claim tokens must carry (default: any).
  --oauth-audience AUD An aud value tokens must carry (default: any).

Environment:
  GRAPHTIDE_KAFKA_HOME           Jar cache dir.
                                 Default: \$HOME/.cache/graphtide/kafka-${KAFKA_VERSION}
  KAFKA_HEAP_OPTS                JVM heap flags. Default: -Xmx512m -Xms128m
  KAFKA_JVM_OPTS                 Extra JVM flags.
  GRAPHTIDE_KAFKA_START_TIMEOUT  Seconds to wait for the port. Default 60.
  GRAPHTIDE_KAFKA_STOP_TIMEOUT   Seconds to wait after SIGTERM. Default 20.
  GRAPHTIDE_KAFKA_DEDUPE_BUFFER  log.cleaner.dedupe.buffer.size. Default 16 MiB.
  JAVA_HOME                      Java to use (else \`java\` on PATH).
  MVN                            Maven command. Default: mvn
EOF
}

java_bin() {
	local j
	if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
		j="${JAVA_HOME}/bin/java"
	elif command -v java >/dev/null 2>&1; then
		j="$(command -v java)"
	else
		die "java not found (set JAVA_HOME or put java 17+ on PATH; ${INSTALL_HINT})"
	fi
	local ver major
	ver="$("$j" -version 2>&1 | awk -F'"' '/version/ && v == "" {v = $2} END {print v}')"
	major="${ver%%.*}"
	if [[ "${major}" == "1" ]]; then
		major="$(echo "${ver}" | cut -d. -f2)"
	fi
	if ! is_uint "${major}" || ((major < 17)); then
		die "Kafka ${KAFKA_VERSION} needs Java 17 or newer; ${j} is version '${ver}' (set JAVA_HOME to a newer one; ${INSTALL_HINT})"
	fi
	echo "$j"
}

# ---------------------------------------------------------------- install

write_pom() {
	cat >"$1" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by ${PROG}: resolves the Kafka broker runtime classpath. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.github.graphtide</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>${KAFKA_VERSION}</version>
  <packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>org.apache.logging.log4j</groupId>
        <artifactId>log4j-api</artifactId>
        <version>${LOG4J_VERSION}</version>
      </dependency>
      <dependency>
        <groupId>org.apache.logging.log4j</groupId>
        <artifactId>log4j-core</artifactId>
        <version>${LOG4J_VERSION}</version>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_${SCALA_VERSION}</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <!-- Kafka logs through slf4j 1.7; without this binding the broker logs nothing. -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF
}

cmd_install() {
	if [[ -f "${MARKER}" ]] && compgen -G "${LIB_DIR}/kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar" >/dev/null; then
		log "Kafka ${KAFKA_VERSION} already installed in ${KAFKA_HOME_DIR}"
		return 0
	fi
	local mvn="${MVN:-mvn}"
	command -v "${mvn%% *}" >/dev/null 2>&1 || die "maven ('${mvn}') not found; it is needed to download the Kafka jars (${INSTALL_HINT})"
	java_bin >/dev/null

	mkdir -p "${KAFKA_HOME_DIR}"
	local work="${KAFKA_HOME_DIR}/.install.$$"
	rm -rf "${work}"
	mkdir -p "${work}/lib"
	# shellcheck disable=SC2064
	trap "rm -rf '${work}'" EXIT
	write_pom "${work}/pom.xml"

	log "downloading Kafka ${KAFKA_VERSION} jars (via ${mvn}) into ${KAFKA_HOME_DIR} ..."
	# shellcheck disable=SC2086
	if ! ${mvn} -q -B -f "${work}/pom.xml" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="${work}/lib" >"${work}/mvn.log" 2>&1; then
		cat "${work}/mvn.log" >&2
		die "maven could not resolve org.apache.kafka:kafka_${SCALA_VERSION}:${KAFKA_VERSION} (see output above)"
	fi
	[[ -f "${work}/lib/kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar" ]] ||
		die "maven succeeded but kafka_${SCALA_VERSION}-${KAFKA_VERSION}.jar is missing from the output"
	[[ -f "${work}/lib/log4j-slf4j-impl-${LOG4J_VERSION}.jar" && -f "${work}/lib/log4j-core-${LOG4J_VERSION}.jar" ]] ||
		die "log4j jars missing or mismatched in the output (expected log4j-core and log4j-slf4j-impl ${LOG4J_VERSION})"

	# Swap the new lib dir in, then write the marker last.
	rm -rf "${LIB_DIR}"
	mv "${work}/lib" "${LIB_DIR}"
	mv "${work}/pom.xml" "${KAFKA_HOME_DIR}/pom.xml"
	rm -rf "${work}"
	trap - EXIT
	date -u +%Y-%m-%dT%H:%M:%SZ >"${MARKER}"
	log "installed $(find "${LIB_DIR}" -name '*.jar' | wc -l) jars into ${LIB_DIR}"
}

# ---------------------------------------------------------------- helpers

# is_ready PORT: the broker accepts connections on 127.0.0.1:PORT.
is_ready() {
	port_open "$1"
}

# running_pid DIR: print the broker PID for DIR if it is alive, else fail.
running_pid() {
	local dir="$1" pid
	[[ -f "${dir}/kafka.pid" ]] || return 1
	pid="$(cat "${dir}/kafka.pid" 2>/dev/null || true)"
	is_uint "${pid}" || return 1
	kill -0 "${pid}" 2>/dev/null || return 1
	# Guard against a recycled PID: it must be a Kafka broker using this dir.
	if [[ -r "/proc/${pid}/cmdline" ]]; then
		tr '\0' ' ' <"/proc/${pid}/cmdline" | grep -qF -- "${dir}/server.properties" || return 1
	fi
	echo "${pid}"
}

# configured_port DIR KEY: read a port back from DIR/server.properties.
configured_port() {
	local dir="$1"
	[[ -f "${dir}/server.properties" ]] || return 1
	sed -n 's/^advertised\.listeners=PLAINTEXT:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "${dir}/server.properties" | head -n1
}

# configured_listeners DIR: the advertised listeners of DIR/server.properties.
configured_listeners() {
	local dir="$1"
	[[ -f "${dir}/server.properties" ]] || return 1
	sed -n 's/^advertised\.listeners=//p' "${dir}/server.properties" | head -n1
}

# make_tls DIR: the CA, the broker's keystore and truststore, and a client
# certificate, in DIR/tls (made once; kept across restarts).
make_tls() {
	local tls="$1/tls"
	if [[ -f "${tls}/broker.p12" && -f "${tls}/truststore.p12" && -f "${tls}/client.pem" && -f "${tls}/client.key" ]]; then
		return 0
	fi
	command -v openssl >/dev/null 2>&1 || die "--ssl-port needs openssl"
	local keytool="keytool"
	if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/keytool" ]]; then
		keytool="${JAVA_HOME}/bin/keytool"
	fi
	command -v "${keytool}" >/dev/null 2>&1 || die "--ssl-port needs keytool (it comes with the JDK)"
	rm -rf "${tls}"
	mkdir -p "${tls}"
	chmod 700 "${tls}"
	local out="${tls}/make.log" pw
	pw="$(openssl rand -hex 16)"
	echo "${pw}" >"${tls}/store.password"
	{
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=graphtide test CA" \
			-keyout "${tls}/ca.key" -out "${tls}/ca.pem" &&
			openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
				-keyout "${tls}/broker.key" -out "${tls}/broker.csr" &&
			printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"${tls}/broker.ext" &&
			openssl x509 -req -days 3650 -in "${tls}/broker.csr" -CA "${tls}/ca.pem" -CAkey "${tls}/ca.key" \
				-CAcreateserial -extfile "${tls}/broker.ext" -out "${tls}/broker.pem" &&
			openssl pkcs12 -export -name broker -in "${tls}/broker.pem" -inkey "${tls}/broker.key" \
				-certfile "${tls}/ca.pem" -passout "pass:${pw}" -out "${tls}/broker.p12" &&
			"${keytool}" -importcert -noprompt -alias ca -file "${tls}/ca.pem" \
				-keystore "${tls}/truststore.p12" -storetype PKCS12 -storepass "${pw}" &&
			openssl req -newkey rsa:2048 -nodes -subj "/CN=graphtide-client" \
				-keyout "${tls}/client.key" -out "${tls}/client.csr" &&
			printf 'extendedKeyUsage=clientAuth\n' >"${tls}/client.ext" &&
			openssl x509 -req -days 3650 -in "${tls}/client.csr" -CA "${tls}/ca.pem" -CAkey "${tls}/ca.key" \
				-CAcreateserial -extfile "${tls}/client.ext" -out "${tls}/client.pem"
	} >"${out}" 2>&1 || {
		tail -n 20 "${out}" >&2
		rm -f "${tls}/broker.p12" "${tls}/client.pem"
		die "making the TLS files in ${tls} failed (see ${out})"
	}
	chmod 600 "${tls}"/*.key "${tls}/store.password" "${tls}/broker.p12"
	rm -f "${tls}"/*.csr "${tls}"/*.ext
	log "made a CA, the broker's keystore and a client certificate in ${tls}"
}

log_tail() {
	local dir="$1" f
	for f in "${dir}/logs/server.log" "${dir}/logs/kafka.out"; do
		if [[ -s "${f}" ]]; then
			echo "----- last 40 lines of ${f} -----" >&2
			tail -n 40 "${f}" >&2
		fi
	done
}

# advertised_listeners PORT SSL_PORT SASL_PORT: the client listeners.
advertised_listeners() {
	local l="PLAINTEXT://127.0.0.1:$1"
	[[ -z "$2" ]] || l+=",SSL://127.0.0.1:$2"
	[[ -z "$3" ]] || l+=",SASL_PLAINTEXT://127.0.0.1:$3"
	echo "${l}"
}

# write_server_properties DIR PORT CPORT SSL_PORT SASL_PORT JWKS ISSUER AUDIENCE
# (the last five may be empty).
write_server_properties() {
	local dir="$1" port="$2" cport="$3" sslport="$4" saslport="$5" jwks="$6" issuer="$7" audience="$8"
	local adv
	adv="$(advertised_listeners "${port}" "${sslport}" "${saslport}")"
	cat >"${dir}/server.properties" <<EOF
# Generated by ${PROG}; rewritten on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:${cport}
listeners=${adv},CONTROLLER://127.0.0.1:${cport}
advertised.listeners=${adv}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=${dir}/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.cleaner.dedupe.buffer.size=${DEDUPE_BUFFER}
EOF
	if [[ -n "${sslport}" ]]; then
		local pw
		pw="$(cat "${dir}/tls/store.password")"
		cat >>"${dir}/server.properties" <<EOF
# The SSL listener: the broker's certificate, and client certificates
# required, signed by the CA of tls/ca.pem.
listener.name.ssl.ssl.keystore.type=PKCS12
listener.name.ssl.ssl.keystore.location=${dir}/tls/broker.p12
listener.name.ssl.ssl.keystore.password=${pw}
listener.name.ssl.ssl.key.password=${pw}
listener.name.ssl.ssl.truststore.type=PKCS12
listener.name.ssl.ssl.truststore.location=${dir}/tls/truststore.p12
listener.name.ssl.ssl.truststore.password=${pw}
listener.name.ssl.ssl.client.auth=required
EOF
	fi
	if [[ -n "${saslport}" ]]; then
		local mechs="SCRAM-SHA-256,SCRAM-SHA-512"
		[[ -z "${jwks}" ]] || mechs+=",OAUTHBEARER"
		cat >>"${dir}/server.properties" <<EOF
# The SASL_PLAINTEXT listener.
listener.name.sasl_plaintext.sasl.enabled.mechanisms=${mechs}
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
EOF
		if [[ -n "${jwks}" ]]; then
			cat >>"${dir}/server.properties" <<EOF
# OAUTHBEARER: JWTs validated against the keys of the JWKS endpoint.
listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
sasl.oauthbearer.jwks.endpoint.url=${jwks}
EOF
			[[ -z "${issuer}" ]] || echo "sasl.oauthbearer.expected.issuer=${issuer}" >>"${dir}/server.properties"
			[[ -z "${audience}" ]] || echo "sasl.oauthbearer.expected.audience=${audience}" >>"${dir}/server.properties"
		fi
	fi
}

write_log4j2() {
	local dir="$1"
	cat >"${dir}/log4j2.properties" <<EOF
# Generated by ${PROG}.
status = warn
name = graphtide-kafka
# Keep logging through Kafka's own shutdown (log4j's hook would stop first).
shutdownHook = disable
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = ${dir}/logs/server.log
appender.file.filePattern = ${dir}/logs/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache.kafka
logger.apache.level = info
EOF
}

# format_dir JAVA DIR CP LOG_OPTS...: format DIR/data for KRaft unless it
# already is (a JVM start saved); --ignore-formatted keeps re-runs harmless.
format_dir() {
	local java="$1" dir="$2" cp="$3"
	shift 3
	local -a log_opts=("$@")
	if [[ -f "${dir}/data/meta.properties" && -f "${dir}/data/bootstrap.checkpoint" ]]; then
		return 0
	fi
	local cluster_id=""
	if [[ -f "${dir}/cluster.id" ]]; then
		cluster_id="$(cat "${dir}/cluster.id")"
	elif [[ -f "${dir}/data/meta.properties" ]]; then
		cluster_id="$(sed -n 's/^cluster\.id=//p' "${dir}/data/meta.properties" | head -n1)"
	fi
	if [[ -z "${cluster_id}" ]]; then
		cluster_id="$("${java}" "${log_opts[@]}" -cp "${cp}" kafka.tools.StorageTool random-uuid 2>>"${dir}/logs/format.log" | tail -n1)"
		[[ -n "${cluster_id}" ]] || die "kafka.tools.StorageTool random-uuid produced no id (see ${dir}/logs/format.log)"
	fi
	echo "${cluster_id}" >"${dir}/cluster.id"
	log "formatting ${dir}/data (cluster id ${cluster_id})"
	if ! "${java}" "${log_opts[@]}" -cp "${cp}" kafka.tools.StorageTool format \
		-t "${cluster_id}" -c "${dir}/server.properties" --ignore-formatted >>"${dir}/logs/format.log" 2>&1; then
		tail -n 40 "${dir}/logs/format.log" >&2
		die "formatting ${dir}/data failed (see ${dir}/logs/format.log)"
	fi
}

# ---------------------------------------------------------------- start

cmd_start() {
	local port="9092" cport="" dir="${DEFAULT_DIR}" sslport="" saslport="" jwks="" issuer="" audience=""
	while (($#)); do
		case "$1" in
		--port) [[ $# -ge 2 ]] || die "--port needs a value"; port="$2"; shift 2 ;;
		--port=*) port="${1#*=}"; shift ;;
		--controller-port) [[ $# -ge 2 ]] || die "--controller-port needs a value"; cport="$2"; shift 2 ;;
		--controller-port=*) cport="${1#*=}"; shift ;;
		--dir) [[ $# -ge 2 ]] || die "--dir needs a value"; dir="$2"; shift 2 ;;
		--dir=*) dir="${1#*=}"; shift ;;
		--ssl-port) [[ $# -ge 2 ]] || die "--ssl-port needs a value"; sslport="$2"; shift 2 ;;
		--ssl-port=*) sslport="${1#*=}"; shift ;;
		--sasl-port) [[ $# -ge 2 ]] || die "--sasl-port needs a value"; saslport="$2"; shift 2 ;;
		--sasl-port=*) saslport="${1#*=}"; shift ;;
		--oauth-jwks-url) [[ $# -ge 2 ]] || die "--oauth-jwks-url needs a value"; jwks="$2"; shift 2 ;;
		--oauth-jwks-url=*) jwks="${1#*=}"; shift ;;
		--oauth-issuer) [[ $# -ge 2 ]] || die "--oauth-issuer needs a value"; issuer="$2"; shift 2 ;;
		--oauth-issuer=*) issuer="${1#*=}"; shift ;;
		--oauth-audience) [[ $# -ge 2 ]] || die "--oauth-audience needs a value"; audience="$2"; shift 2 ;;
		--oauth-audience=*) audience="${1#*=}"; shift ;;
		-h | --help) usage; exit 0 ;;
		*) die "start: unknown argument '$1' (see --help)" ;;
		esac
	done
	if ! is_uint "${port}" || ((port < 1 || port > 65535)); then die "invalid --port '${port}': want 1-65535"; fi
	[[ -n "${cport}" ]] || cport=$((port + 1))
	if ! is_uint "${cport}" || ((cport < 1 || cport > 65535)); then die "invalid --controller-port '${cport}': want 1-65535"; fi
	((cport != port)) || die "--controller-port must differ from --port"
	local -A taken=(["${port}"]=--port ["${cport}"]=--controller-port)
	local name p
	for name in ssl-port sasl-port; do
		p="${sslport}"
		[[ "${name}" == ssl-port ]] || p="${saslport}"
		[[ -n "${p}" ]] || continue
		if ! is_uint "${p}" || ((p < 1 || p > 65535)); then die "invalid --${name} '${p}': want 1-65535"; fi
		[[ -z "${taken[${p}]:-}" ]] || die "--${name} ${p} is also ${taken[${p}]}: give each listener a port of its own"
		taken["${p}"]="--${name}"
	done
	if [[ -n "${jwks}${issuer}${audience}" && -z "${saslport}" ]]; then
		die "--oauth-jwks-url, --oauth-issuer and --oauth-audience configure OAUTHBEARER on the SASL listener: they need --sasl-port"
	fi
	if [[ -n "${issuer}${audience}" && -z "${jwks}" ]]; then
		die "--oauth-issuer and --oauth-audience need --oauth-jwks-url"
	fi
	if [[ -n "${jwks}" && ! "${jwks}" =~ ^https?:// ]]; then
		die "--oauth-jwks-url must be an http:// or https:// URL, got '${jwks}'"
	fi
	dir="$(abs_dir "${dir}")"
	local want_listeners
	want_listeners="$(advertised_listeners "${port}" "${sslport}" "${saslport}")"

	# Already running for this dir?
	local pid
	if pid="$(running_pid "${dir}")"; then
		local cur
		cur="$(configured_port "${dir}" || true)"
		if [[ -n "${cur}" && "${cur}" != "${port}" ]]; then
			die "a broker for ${dir} is already running (pid ${pid}) on port ${cur}, not ${port}; stop it first"
		fi
		cur="$(configured_listeners "${dir}" || true)"
		if [[ -n "${cur}" && "${cur}" != "${want_listeners}" ]]; then
			die "a broker for ${dir} is already running (pid ${pid}) with listeners ${cur}, not ${want_listeners}; stop it first"
		fi
		if port_open "${port}"; then
			log "already running (pid ${pid})"
			echo "127.0.0.1:${port}"
			return 0
		fi
		log "broker pid ${pid} is running but port ${port} is not open yet; waiting"
		wait_ready "${dir}" "${port}" "${pid}"
		echo "127.0.0.1:${port}"
		return 0
	fi
	rm -f "${dir}/kafka.pid"

	if port_open "${port}"; then
		die "port ${port} on 127.0.0.1 is already in use by another process"
	fi
	if port_open "${cport}"; then
		die "controller port ${cport} on 127.0.0.1 is already in use by another process (use --controller-port)"
	fi
	for p in ${sslport} ${saslport}; do
		if port_open "${p}"; then
			die "port ${p} (${taken[${p}]}) on 127.0.0.1 is already in use by another process"
		fi
	done

	cmd_install
	local java
	java="$(java_bin)"

	mkdir -p "${dir}/logs" "${dir}/data"
	[[ -z "${sslport}" ]] || make_tls "${dir}"
	write_server_properties "${dir}" "${port}" "${cport}" "${sslport}" "${saslport}" "${jwks}" "${issuer}" "${audience}"
	write_log4j2 "${dir}"

	local cp="${LIB_DIR}/*"
	local -a log_opts=("-Dlog4j2.configurationFile=${dir}/log4j2.properties" "-Dkafka.logs.dir=${dir}/logs")

	format_dir "${java}" "${dir}" "${cp}" "${log_opts[@]}"

	# shellcheck disable=SC2206
	local -a jvm=(${HEAP_OPTS} ${EXTRA_JVM_OPTS})
	# Kafka 4 fetches only the OAuth URLs the JVM is allowed.
	[[ -z "${jwks}" ]] || jvm+=("-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${jwks}")
	: >"${dir}/logs/kafka.out"
	nohup "${java}" "${jvm[@]}" -XX:+UseG1GC -Djava.awt.headless=true \
		"${log_opts[@]}" -cp "${cp}" kafka.Kafka "${dir}/server.properties" \
		>>"${dir}/logs/kafka.out" 2>&1 </dev/null &
	pid=$!
	echo "${pid}" >"${dir}/kafka.pid"
	log "started broker pid ${pid} (logs: ${dir}/logs)"

	wait_ready "${dir}" "${port}" "${pid}"
	for p in ${sslport} ${saslport}; do
		wait_ready "${dir}" "${p}" "${pid}"
	done
	[[ -z "${sslport}" ]] || log "SSL (client certificates required) on 127.0.0.1:${sslport}; the client's files: ${dir}/tls/ca.pem, ${dir}/tls/client.pem, ${dir}/tls/client.key"
	[[ -z "${saslport}" ]] || log "SASL_PLAINTEXT on 127.0.0.1:${saslport}: SCRAM-SHA-256, SCRAM-SHA-512${jwks:+, OAUTHBEARER (keys from ${jwks})}"
	echo "127.0.0.1:${port}"
}

# ---------------------------------------------------------------- stop / status

cmd_status() {
	parse_dir_only status "$@"
	local dir="${DIR_ARG}" pid port
	if [[ -d "${dir}" ]]; then
		dir="$(cd "${dir}" && pwd -P)"
		if pid="$(running_pid "${dir}")"; then
			port="$(configured_port "${dir}" || true)"
			if [[ -n "${port}" ]] && port_open "${port}"; then
				echo "running pid=${pid} bootstrap=127.0.0.1:${port} dir=${dir}"
			else
				echo "starting pid=${pid} port=${port:-?} (not accepting connections yet) dir=${dir}"
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
	help | -h | --help) usage ;;
	*)
		usage >&2
		die "unknown command '${cmd}'"
		;;
	esac
}

main "$@"
