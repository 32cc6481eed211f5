#!/usr/bin/env bash
# Runs the S3 API's benchmark (s3_api.py): boto3 against kvcache-server's S3 API, against Versity
# Gateway (a stock S3-compatible server) over /dev/shm, and kvcache's own client, in one run.
# Makes a venv under python/target with the package and boto3 from PyPI, builds the server jar if
# it is missing, builds versitygw from its Go module once (kvcache-s3-api/conformance/versitygw.sh:
# minutes on two cores; Go's caches are reused), and writes docs/results/s3-api/s3-api.json. About 10
# minutes. Extra arguments go to the script.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/python/target/bench-venv"
jar="$root/kvcache-server/target/kvcache-server.jar"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root/python[bench,test]"
[ -f "$jar" ] || (cd "$root" && ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package)
versitygw=$("$root/kvcache-s3-api/conformance/versitygw.sh")
mkdir -p "$root/docs/results/s3-api"
exec "$venv/bin/python" "$root/python/benchmarks/s3_api.py" --jar "$jar" \
  --versitygw "$versitygw" --out "$root/docs/results/s3-api/s3-api.json" "$@"
