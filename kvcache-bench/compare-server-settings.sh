#!/usr/bin/env bash
# GETs (or PUTs) from kvcache-server under different settings of one build, alternating on loopback
# under h2load (one connection), so that every setting sees the same machine. Needs h2load (Debian:
# nghttp2-client).
#
#   turns:    Netty's own HTTP/2 write turn (1 KiB) and socket buffer (64 KiB); the server's write
#             turn (256 KiB) alone; both of the server's settings (the defaults). 4 streams.
#             Writes docs/results/server-write-turns.csv.
#   fast-get: kvcache.fast-get off and on, on 1 and 4 streams.
#             Writes docs/results/server-fast-get.csv.
#   fast-put: PUTs with kvcache.fast-put off and on, on 1 and 4 streams.
#             Writes docs/results/server-fast-put.csv.
#
#   kvcache-bench/compare-server-settings.sh turns
#   ROUNDS=1 DURATION=3 kvcache-bench/compare-server-settings.sh fast-get
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: $0 turns|fast-get|fast-put}
rounds=${ROUNDS:-3}
duration=${DURATION:-5}
port=17172
command -v h2load >/dev/null || apt-get install -y -q nghttp2-client >/dev/null

case $suite in
  turns) settings=(netty turn both); streams=(4); out=docs/results/server-write-turns.csv ;;
  fast-get) settings=(off on); streams=(1 4); out=docs/results/server-fast-get.csv ;;
  fast-put) settings=(off-put on); streams=(1 4); out=docs/results/server-fast-put.csv ;;
  *) echo "unknown suite '$suite' (turns, fast-get, fast-put)" >&2; exit 2 ;;
esac
args_of() { # setting: the server's system properties for it
  case $1 in
    netty) echo "-Dkvcache.http2-write-quantum=1024 -Dkvcache.write-buffer-bytes=65536" ;;
    turn) echo "-Dkvcache.write-buffer-bytes=65536" ;;
    off) echo "-Dkvcache.fast-get=false" ;;
    off-put) echo "-Dkvcache.fast-put=false" ;;
    both|on) echo "" ;;
  esac
}

work=$(mktemp -d /dev/shm/kvcache-settings.XXXXXX)
server=
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package
sizes=(262144 2097152)
for s in "${sizes[@]}"; do head -c "$s" /dev/urandom > "$work/blk-$s"; done
url() { printf 'http://127.0.0.1:%d/v1/namespaces/default/blocks/%032x' "$port" "$1"; }

gets() { # settings...: one line per size and stream count, "size,streams,GB/s"; PUTs for fast-put
  java -XX:MaxDirectMemorySize=6g -Xmx1g -Dmicronaut.server.port=$port \
      -Dkvcache.cache.ram-bytes=2GiB -Dkvcache.cache.disk-dir= "$@" \
      -jar kvcache-server/target/kvcache-server.jar > "$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
  for s in "${sizes[@]}"; do
    curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
        --data-binary "@$work/blk-$s" "$(url "$s")"
    for m in "${streams[@]}"; do
      if [ "$suite" = fast-put ]; then
        body=(-d "$work/blk-$s" -H ':method: PUT' -H 'content-type: application/octet-stream')
      else
        body=()
      fi
      rps=$(h2load -c 1 -m "$m" --warm-up-time=2 -D "$duration" "${body[@]}" "$(url "$s")" \
        | awk '/^finished/ {print $4}')
      awk -v s="$s" -v m="$m" -v r="$rps" 'BEGIN {printf "%d,%d,%.3f\n", s, m, r * s / 1e9}'
    done
  done
  kill "$server"; wait "$server" 2>/dev/null || true
  server=
}

echo "round,setting,size,streams,gb_per_s" > "$out"
for round in $(seq 1 "$rounds"); do
  for setting in "${settings[@]}"; do
    read -r -a args <<< "$(args_of "$setting")"
    gets "${args[@]}" | sed "s/^/$round,$setting,/" | tee -a "$out"
  done
done
