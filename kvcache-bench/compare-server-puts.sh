#!/usr/bin/env bash
# PUT throughput of kvcache-server built at another revision beside the working tree's, the two
# alternating on loopback under h2load, so that both see the same machine. Appends to
# docs/results/server/server-put-ab.csv, or to $OUT (requests per second, and the CPU microseconds the
# server and h2load each spent per request). Needs h2load (Debian: nghttp2-client) and
# /usr/bin/time (time).
#
#   kvcache-bench/compare-server-puts.sh 38b8a7b
#   OUT=docs/results/server/server-put-ab-trywriter.csv kvcache-bench/compare-server-puts.sh 71d967a
#   ROUNDS=1 DURATION=3 kvcache-bench/compare-server-puts.sh HEAD~3
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
rev=${1:?usage: $0 <git revision to compare with>}
rounds=${ROUNDS:-3}
duration=${DURATION:-5}
port=17171
out=${OUT:-docs/results/server/server-put-ab.csv}
header="round,server,block,connections,streams_per_connection,requests_per_s,server_cpu_us,h2load_cpu_us"
[ -s "$out" ] || echo "$header" > "$out"
if [ "$(head -n 1 "$out")" != "$header" ]; then
  echo "$out has other columns (an older run's); name a new file with OUT=" >&2
  exit 2
fi
command -v h2load >/dev/null || apt-get install -y -q nghttp2-client >/dev/null
[ -x /usr/bin/time ] || apt-get install -y -q time >/dev/null
source kvcache-bench/cpu-time.sh

work=$(mktemp -d /dev/shm/kvcache-put-ab.XXXXXX)
server=
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  git -C "$root" worktree remove --force "$work/tree" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package
cp kvcache-server/target/kvcache-server.jar "$work/current.jar"
git worktree add -q "$work/tree" "$rev"
(cd "$work/tree" && ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package)
cp "$work/tree/kvcache-server/target/kvcache-server.jar" "$work/$rev.jar"
for s in 262144 2097152 33554432; do head -c "$s" /dev/urandom > "$work/blk-$s"; done

puts() { # jar size connections streams: requests per second, server and h2load CPU us per request
  java -XX:MaxDirectMemorySize=6g -Xmx1g -Dmicronaut.server.port=$port -Dkvcache.s3.enabled=false \
      -Dkvcache.cache.ram-bytes=4GiB -Dkvcache.cache.disk-dir= -jar "$1" > "$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
  timed "$work/h2load.out" 3 "$server" -- h2load -c "$3" -m "$4" --warm-up-time=3 -D "$duration" \
      -d "$work/blk-$2" -H ':method: PUT' -H 'content-type: application/octet-stream' \
      "http://127.0.0.1:$port/v1/namespaces/default/blocks/00000000000000000000000000000001"
  local rps
  rps=$(awk '/^finished/ {print $4}' "$work/h2load.out")
  cpu_per_request "$rps" | awk -v r="$rps" '{print r "," $1 "," $2}'
  kill "$server"; wait "$server" 2>/dev/null || true
  server=
}

for round in $(seq 1 "$rounds"); do
  for cfg in "262144 1 1" "262144 1 4" "2097152 1 4" "33554432 1 4" "262144 4 4"; do
    set -- $cfg
    for build in "$rev" current; do
      echo "$round,$build,$1,$2,$3,$(puts "$work/$build.jar" "$1" "$2" "$3")" | tee -a "$out"
    done
  done
done
