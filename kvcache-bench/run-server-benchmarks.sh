#!/usr/bin/env bash
# kvcache-server beside nginx (static files over HTTP/2 cleartext) and Redis, moving the same
# bytes on loopback, measured with h2load and redis-benchmark (single blocks, and batches of 8:
# kvcache's batch-get beside Redis MGET); writes docs/results/server.csv,
# docs/results/server-alloc.csv and docs/results/server-lookup.csv. Installs nginx,
# nghttp2-client (h2load) and redis-server with apt-get if they are missing (needs root). Takes
# about 30 minutes; run on an otherwise idle machine.
#
#   kvcache-bench/run-server-benchmarks.sh
#   DURATION=3 ROUNDS=1 kvcache-bench/run-server-benchmarks.sh      # a quick look
#
# Then: python3 docs/tools/plot_benchmarks.py docs/results docs/img
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
duration=${DURATION:-5}
rounds=${ROUNDS:-3}
sizes=(262144 2097152 33554432)
streams=(1 4 16)

need=()
command -v nginx >/dev/null || need+=(nginx)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v redis-server >/dev/null || need+=(redis-server)
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
nginx -c "$work/nginx/nginx.conf" & pids+=($!)
redis-server --port $redis_port --bind 127.0.0.1 --save '' --appendonly no \
    --proto-max-bulk-len 64mb > "$work/redis.log" 2>&1 & pids+=($!)
(cd "$work" && exec java -XX:MaxDirectMemorySize=6g -Xmx1g \
    -Dmicronaut.server.port=$kv_port -Dkvcache.cache.ram-bytes=4GiB -Dkvcache.cache.disk-dir= \
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

# h2load: requests per second, counting only 2xx answers (anything else fails the run)
h2() {
  local conns=$1 m=$2
  shift 2
  h2load -c "$conns" -m "$m" --warm-up-time=2 -D "$duration" "$@" > "$work/h2load.out" 2>&1
  if ! grep -q 'status codes: [0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx' "$work/h2load.out" \
      || ! grep -q ' 0 failed, 0 errored' "$work/h2load.out"; then
    echo "h2load $*: requests failed" >&2
    cat "$work/h2load.out" >&2
    exit 1
  fi
  awk '/^finished in/ {gsub(/,/, ""); print $4}' "$work/h2load.out"
}
gbps() { awk -v r="$1" -v s="$2" 'BEGIN {printf "%.6f", r * s / 1e9}'; }
conns_for() { if [ "$1" -ge 16 ]; then echo 4; else echo 1; fi; }
per_conn() { if [ "$1" -ge 16 ]; then echo $(($1 / 4)); else echo "$1"; fi; }

out=docs/results/server.csv
echo "round,size,streams,system,op,requests_per_s,gb_per_s" > "$out"
for round in $(seq 1 "$rounds"); do
  for s in "${sizes[@]}"; do
    for n in "${streams[@]}"; do
      c=$(conns_for "$n"); m=$(per_conn "$n")
      rps=$(h2 "$c" "$m" "$(block_url "$s")")
      echo "$round,$s,$n,kvcache,get,$rps,$(gbps "$rps" "$s")" >> "$out"
      rps=$(h2 "$c" "$m" "http://127.0.0.1:$nginx_port/blk-$s")
      echo "$round,$s,$n,nginx,get,$rps,$(gbps "$rps" "$s")" >> "$out"
      rps=$(h2 "$c" "$m" -d "$work/www/blk-$s" -H ':method: PUT' \
          -H 'content-type: application/octet-stream' "$(block_url $((s + 1)))")
      echo "$round,$s,$n,kvcache,put,$rps,$(gbps "$rps" "$s")" >> "$out"
      # Redis: one connection per stream (no pipelining), SET then GET of one key of s bytes
      count=$(( (duration * 4000000000) / s + 20 ))
      redis-benchmark -p $redis_port -q --csv -t set,get -d "$s" -c "$n" -n "$count" 2>/dev/null \
        | tr -d '"' | awk -F, -v r="$round" -v s="$s" -v n="$n" \
            '$1 == "SET" || $1 == "GET" {printf "%s,%s,%s,redis,%s,%s,%.6f\n", r, s, n, tolower($1), $2, $2 * s / 1e9}' \
        >> "$out"
      if [[ " ${batch_sizes[*]} " == *" $s "* ]]; then
        rps=$(h2 "$c" "$m" -d "$work/batch-$s.json" -H 'content-type: application/json' \
            "http://127.0.0.1:$kv_port/v1/namespaces/default/batch-get")
        echo "$round,$s,$n,kvcache,batch-get,$rps,$(gbps "$rps" $((s * batch)))" >> "$out"
        redis-benchmark -p $redis_port -q --csv -c "$n" -n $((count / batch + 20)) \
            MGET $(for i in $(seq 1 $batch); do echo -n "b$s-$i "; done) 2>/dev/null \
          | tr -d '"' | awk -F, -v r="$round" -v s="$s" -v n="$n" -v b="$batch" \
              '$1 ~ /^MGET/ {printf "%s,%s,%s,redis,mget,%s,%.6f\n", r, s, n, $2, $2 * s * b / 1e9}' \
          >> "$out"
      fi
      tail -n 6 "$out"
    done
  done
done

# heap allocated per request by the server: the JVM's allocation counter (Micrometer's
# jvm_gc_memory_allocated_bytes_total, advanced at each GC) read after a forced GC, before and after
# a fixed number of requests; the scrape between them adds its own few hundred KB, spread over them
allocated() {
  jcmd "$kv_pid" GC.run > /dev/null
  curl -sf "http://127.0.0.1:$kv_port/prometheus" \
    | awk '/^jvm_gc_memory_allocated_bytes_total/ {printf "%.0f", $2}'
}
echo "size,op,requests,heap_bytes_per_request" > docs/results/server-alloc.csv
for s in "${sizes[@]}"; do
  n=$(( 4000000000 / s )); [ "$n" -ge 200 ] || n=200
  for op in get put; do
    before=$(allocated)
    if [ "$op" = get ]; then
      h2load -c 1 -m 4 -n "$n" "$(block_url "$s")" > "$work/h2load.out" 2>&1
    else
      h2load -c 1 -m 4 -n "$n" -d "$work/www/blk-$s" -H ':method: PUT' \
          -H 'content-type: application/octet-stream' "$(block_url $((s + 1)))" > "$work/h2load.out" 2>&1
    fi
    grep -q "status codes: $n 2xx" "$work/h2load.out" || { cat "$work/h2load.out" >&2; exit 1; }
    after=$(allocated)
    echo "$s,$op,$n,$(( (after - before) / n ))" >> docs/results/server-alloc.csv
  done
done
cat docs/results/server-alloc.csv

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
  }' > docs/results/server-lookup.csv
cat docs/results/server-lookup.csv
