#!/usr/bin/env bash
# kvcache-server beside nginx (static files over HTTP/2 cleartext) and Redis, moving the same
# bytes on loopback, measured with h2load and redis-benchmark (single blocks, and batches of 8:
# kvcache's batch-get beside Redis MGET); writes docs/results/server/server.csv,
# docs/results/server/server-alloc.csv and docs/results/server/server-lookup.csv. Installs nginx,
# nghttp2-client (h2load), redis-server and time with apt-get if they are missing (needs root).
# Takes about 40 minutes; run on an otherwise idle machine.
#
# Each count of requests in flight is measured two ways, the same for every system: as that many
# connections with one request each (Redis without pipelining), and as fewer connections carrying
# several requests each (HTTP/2 streams on one connection, 4 connections of 4 for 16; Redis
# pipelining as many commands per connection). Beside the throughput, each row gives the CPU time
# the server and the load generator spent per request (from /proc and /usr/bin/time).
#
#   kvcache-bench/run-server-benchmarks.sh
#   DURATION=3 ROUNDS=1 kvcache-bench/run-server-benchmarks.sh      # a quick look
#   PIN=1 ROUNDS=2 kvcache-bench/run-server-benchmarks.sh           # one core each (below)
#
# With PIN=1 the servers run on CPU 0 and the load generators on CPU 1 (taskset), so that a
# generator that needs more CPU per byte than another cannot take it from the server it drives;
# single blocks only, into docs/results/server/server-pinned.csv (no batches, allocation or lookup).
#
# Then: python3 docs/tools/plot_benchmarks.py docs/results docs/img
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
duration=${DURATION:-5}
rounds=${ROUNDS:-3}
pin=${PIN:-0}
on_server=()
on_generator=()
out=docs/results/server/server.csv
if [ "$pin" = 1 ]; then
  on_server=(taskset -c 0)
  on_generator=(taskset -c 1)
  out=docs/results/server/server-pinned.csv
fi
sizes=(262144 2097152 33554432)
streams=(1 4 16)

need=()
command -v nginx >/dev/null || need+=(nginx)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v redis-server >/dev/null || need+=(redis-server)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get install -y -q "${need[@]}" >/dev/null
fi

./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package
work=$(mktemp -d /dev/shm/kvcache-server-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/www" "$work/nginx"
chmod 755 "$work" "$work/www"   # nginx's workers run as www-data
for s in "${sizes[@]}"; do head -c "$s" /dev/urandom > "$work/www/blk-$s"; done
chmod 644 "$work"/www/*

kv_port=17070
nginx_port=18081
redis_port=16380
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 10000000;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  server {
    listen 127.0.0.1:$nginx_port http2;
    root $work/www;
  }
}
CONF
"${on_server[@]}" nginx -c "$work/nginx/nginx.conf" & pids+=($!)
nginx_pid=$!
"${on_server[@]}" redis-server --port $redis_port --bind 127.0.0.1 --save '' --appendonly no \
    --proto-max-bulk-len 64mb > "$work/redis.log" 2>&1 & pids+=($!)
redis_pid=$!
(cd "$work" && exec "${on_server[@]}" java -XX:MaxDirectMemorySize=6g -Xmx1g \
    -Dmicronaut.server.port=$kv_port -Dkvcache.s3.enabled=false -Dkvcache.cache.ram-bytes=4GiB -Dkvcache.cache.disk-dir= \
    -jar "$root/kvcache-server/target/kvcache-server.jar" > "$work/kvcache.log" 2>&1) & pids+=($!)
kv_pid=$!
for i in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$kv_port/health" >/dev/null && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$kv_port/health" >/dev/null || { cat "$work/kvcache.log"; exit 1; }

key() { printf '%032x' "$1"; }
block_url() { echo "http://127.0.0.1:$kv_port/v1/namespaces/default/blocks/$(key "$1")"; }
for s in "${sizes[@]}"; do
  curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
      --data-binary "@$work/www/blk-$s" "$(block_url "$s")"
done

# batch forms, for the blocks small enough to gain from them: 8 blocks of s bytes in one request
# (kvcache batch-get; Redis MGET of 8 keys)
batch=8
batch_sizes=(262144 2097152)
for s in "${batch_sizes[@]}"; do
  keys=""
  for i in $(seq 1 $batch); do
    curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
        --data-binary "@$work/www/blk-$s" "$(block_url $((s + 100 + i)))"
    keys="$keys${keys:+,}\"$(key $((s + 100 + i)))\""
    redis-cli -p $redis_port -x SET "b$s-$i" < "$work/www/blk-$s" > /dev/null
  done
  echo "{\"keys\":[$keys]}" > "$work/batch-$s.json"
done

source kvcache-bench/cpu-time.sh
# h2load against server pids: requests per second counting only 2xx answers (anything else
# fails the run), then the server's and h2load's CPU microseconds per request
h2() {
  local srv=$1 conns=$2 m=$3
  shift 3
  timed "$work/gen.out" 2 $srv -- "${on_generator[@]}" \
      h2load -c "$conns" -m "$m" --warm-up-time=2 -D "$duration" "$@"
  if ! grep -q 'status codes: [0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx' "$work/gen.out" \
      || ! grep -q ' 0 failed, 0 errored' "$work/gen.out"; then
    echo "h2load $*: requests failed" >&2
    cat "$work/gen.out" >&2
    exit 1
  fi
  local rps
  rps=$(awk '/^finished in/ {gsub(/,/, ""); print $4}' "$work/gen.out")
  echo "$rps $(cpu_per_request "$rps")"
}
# redis-benchmark: requests per second, server and generator CPU microseconds per request, for the
# one command it was given (-t set, -t get or a command line)
rb() {
  timed "$work/gen.out" 0 $redis_pid -- "${on_generator[@]}" \
      redis-benchmark -p $redis_port -q --csv "$@"
  local rps
  rps=$(tr -d '"' < "$work/gen.out" | awk -F, 'NR > 1 && $2 ~ /^[0-9.]+$/ {print $2; exit}')
  [ -n "$rps" ] || { echo "redis-benchmark $*: no result" >&2; cat "$work/gen.out" >&2; exit 1; }
  echo "$rps $(cpu_per_request "$rps")"
}
gbps() { awk -v r="$1" -v s="$2" 'BEGIN {printf "%.6f", r * s / 1e9}'; }
# row round size streams connections system op "rps server_us client_us" bytes_per_request
row() {
  read -r rps srv_us gen_us <<< "$7"
  echo "$1,$2,$3,$4,$5,$6,$rps,$(gbps "$rps" "$8"),$srv_us,$gen_us" >> "$out"
}
conns_for() { if [ "$1" -ge 16 ]; then echo 4; else echo 1; fi; }

echo "round,size,streams,connections,system,op,requests_per_s,gb_per_s,server_cpu_us,client_cpu_us" > "$out"
for round in $(seq 1 "$rounds"); do
  for s in "${sizes[@]}"; do
    count=$(( (duration * 4000000000) / s + 20 ))
    for n in "${streams[@]}"; do
      # n connections of one request each; then (for n > 1) c connections of n / c requests each
      modes=("$n")
      [ "$n" -eq 1 ] || modes+=("$(conns_for "$n")")
      for c in "${modes[@]}"; do
        m=$((n / c))
        row "$round" "$s" "$n" "$c" kvcache get "$(h2 "$kv_pid" "$c" "$m" "$(block_url "$s")")" "$s"
        row "$round" "$s" "$n" "$c" kvcache put "$(h2 "$kv_pid" "$c" "$m" -d "$work/www/blk-$s" \
            -H ':method: PUT' -H 'content-type: application/octet-stream' "$(block_url $((s + 1)))")" "$s"
        pipeline=()
        [ "$m" -eq 1 ] || pipeline=(-P "$m")
        row "$round" "$s" "$n" "$c" redis set "$(rb -t set -d "$s" -c "$c" "${pipeline[@]}" -n "$count")" "$s"
        row "$round" "$s" "$n" "$c" redis get "$(rb -t get -d "$s" -c "$c" "${pipeline[@]}" -n "$count")" "$s"
        if [ "$c" -ne "$n" ] || [ "$n" -eq 1 ]; then # HTTP/2 streams: nginx beside kvcache
          row "$round" "$s" "$n" "$c" nginx get \
              "$(h2 "$nginx_pid" "$c" "$m" "http://127.0.0.1:$nginx_port/blk-$s")" "$s"
        fi
        if [ "$pin" != 1 ] && [ "$c" -eq "$n" ] && [[ " ${batch_sizes[*]} " == *" $s "* ]]; then
          row "$round" "$s" "$n" "$c" kvcache batch-get "$(h2 "$kv_pid" "$c" 1 -d "$work/batch-$s.json" \
              -H 'content-type: application/json' \
              "http://127.0.0.1:$kv_port/v1/namespaces/default/batch-get")" $((s * batch))
          row "$round" "$s" "$n" "$c" redis mget "$(rb -c "$c" -n $((count / batch + 20)) \
              MGET $(for i in $(seq 1 $batch); do echo -n "b$s-$i "; done))" $((s * batch))
        fi
      done
      tail -n 12 "$out" | grep "^$round,$s,$n,"
    done
  done
done

[ "$pin" != 1 ] || exit 0

# heap allocated per request by the server: the JVM's allocation counter (Micrometer's
# jvm_gc_memory_allocated_bytes_total, advanced at each GC) read after a forced GC, before and after
# a fixed number of requests; the scrape between them adds its own few hundred KB, spread over them
allocated() {
  jcmd "$kv_pid" GC.run > /dev/null
  curl -sf "http://127.0.0.1:$kv_port/prometheus" \
    | awk '/^jvm_gc_memory_allocated_bytes_total/ {printf "%.0f", $2}'
}
echo "size,op,requests,heap_bytes_per_request" > docs/results/server/server-alloc.csv
for s in "${sizes[@]}"; do
  n=$(( 4000000000 / s )); [ "$n" -ge 200 ] || n=200
  for op in get put; do
    before=$(allocated)
    if [ "$op" = get ]; then
      h2load -c 1 -m 4 -n "$n" "$(block_url "$s")" > "$work/gen.out" 2>&1
    else
      h2load -c 1 -m 4 -n "$n" -d "$work/www/blk-$s" -H ':method: PUT' \
          -H 'content-type: application/octet-stream' "$(block_url $((s + 1)))" > "$work/gen.out" 2>&1
    fi
    grep -q "status codes: $n 2xx" "$work/gen.out" || { cat "$work/gen.out" >&2; exit 1; }
    after=$(allocated)
    echo "$s,$op,$n,$(( (after - before) / n ))" >> docs/results/server/server-alloc.csv
  done
done
cat docs/results/server/server-alloc.csv

# lookup of 128 keys (the first 64 present), one stream: latency per request from h2load's log
for i in $(seq 0 63); do
  curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
      --data-binary "block $i" "$(block_url $((1000 + i)))"
done
{
  printf '{"keys":['
  for i in $(seq 0 127); do printf '%s"%s"' "$([ "$i" = 0 ] || echo ,)" "$(key $((1000 + i)))"; done
  printf ']}'
} > "$work/lookup.json"
h2load -c 1 -m 1 --warm-up-time=2 -D "$duration" -d "$work/lookup.json" \
    -H 'content-type: application/json' --log-file="$work/lookup.log" \
    "http://127.0.0.1:$kv_port/v1/namespaces/default/lookup" > /dev/null 2>&1
awk -F'\t' '$2 == 200 {print $3}' "$work/lookup.log" | sort -n | awk '
  {v[NR] = $1}
  END {
    print "requests,p50_us,p99_us,max_us"
    printf "%d,%d,%d,%d\n", NR, v[int(NR * 0.5)], v[int(NR * 0.99)], v[NR]
  }' > docs/results/server/server-lookup.csv
cat docs/results/server/server-lookup.csv
