#!/usr/bin/env bash
# GETs from kvcache-server under three settings, alternating on loopback under h2load (one
# connection, 4 streams): Netty's own HTTP/2 write turn (1 KiB) and socket buffer (64 KiB); the
# server's write turn (256 KiB) alone; and both of the server's settings (the defaults). Writes
# docs/results/server-write-turns.csv (GB/s). Needs h2load (Debian: nghttp2-client).
#
#   kvcache-bench/compare-write-turns.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
duration=${DURATION:-5}
port=17172
command -v h2load >/dev/null || apt-get install -y -q nghttp2-client >/dev/null

work=$(mktemp -d /dev/shm/kvcache-turns.XXXXXX)
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

gets() { # settings...: one line per size, "size,GB/s"
  java -XX:MaxDirectMemorySize=6g -Xmx1g -Dmicronaut.server.port=$port \
      -Dkvcache.cache.ram-bytes=2GiB -Dkvcache.cache.disk-dir= "$@" \
      -jar kvcache-server/target/kvcache-server.jar > "$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
  for s in "${sizes[@]}"; do
    curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
        --data-binary "@$work/blk-$s" "$(url "$s")"
    rps=$(h2load -c 1 -m 4 --warm-up-time=2 -D "$duration" "$(url "$s")" | awk '/^finished/ {print $4}')
    awk -v s="$s" -v r="$rps" 'BEGIN {printf "%d,%.3f\n", s, r * s / 1e9}'
  done
  kill "$server"; wait "$server" 2>/dev/null || true
  server=
}

out=docs/results/server-write-turns.csv
echo "round,setting,size,gb_per_s" > "$out"
for round in $(seq 1 "$rounds"); do
  for setting in netty turn both; do
    case $setting in
      netty) args=(-Dkvcache.http2-write-quantum=1024 -Dkvcache.write-buffer-bytes=65536) ;;
      turn) args=(-Dkvcache.write-buffer-bytes=65536) ;;
      both) args=() ;;
    esac
    gets "${args[@]}" | sed "s/^/$round,$setting,/" | tee -a "$out"
  done
done
