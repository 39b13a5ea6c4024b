#!/usr/bin/env bash
# deploy/spark/setup.sh: installs what deploy/spark/graphframes_job.py
# needs, once (later runs only check): a Python virtual environment with
# pyspark and graphframes-py (requirements.txt), and the GraphFrames jars
# from Maven Central (mvn). Needs python3 with venv, Java 17+ and Maven
# (scripts/deps.sh kafka installs the last two on Debian).
#
#   deploy/spark/setup.sh [DIR]    # DIR: default .tools/spark in the repository
#
# Prints the environment to run the job with, e.g.
#   eval "$(deploy/spark/setup.sh)"; "$GRAPHTIDE_SPARK_PYTHON" deploy/spark/graphframes_job.py ...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-$root/.tools/spark}"
gf_version=0.10.0
jars=(graphframes-spark3_2.12 graphframes-graphx-spark3_2.12)

mkdir -p "$dir/jars"
stamp="$dir/.installed"
want="$(cat "$here/requirements.txt") $gf_version"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	for tool in python3 java mvn; do
		command -v "$tool" >/dev/null || { echo "setup.sh: $tool is missing (scripts/deps.sh kafka installs Java and Maven)" >&2; exit 1; }
	done
	echo "setup.sh: installing pyspark and graphframes-py into $dir/venv" >&2
	python3 -m venv "$dir/venv"
	"$dir/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
	for a in "${jars[@]}"; do
		mvn -q dependency:copy -Dartifact="io.graphframes:$a:$gf_version" -DoutputDirectory="$dir/jars" >&2
	done
	printf '%s' "$want" > "$stamp"
fi
classpath=""
for a in "${jars[@]}"; do
	f="$dir/jars/$a-$gf_version.jar"
	[ -f "$f" ] || { echo "setup.sh: $f is missing: remove $stamp and run again" >&2; exit 1; }
	classpath="${classpath:+$classpath,}$f"
done
echo "export GRAPHTIDE_SPARK_PYTHON='$dir/venv/bin/python'"
echo "export GRAPHFRAMES_JARS='$classpath'"
