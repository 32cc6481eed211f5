#!/usr/bin/env bash
# GETs (or PUTs) from kvcache-server under different settings of one build, alternating on loopback
# under h2load, so that every setting sees the same machine. Needs h2load (Debian: nghttp2-client).
# Loads are written connections x streams per connection.
#
#   turns:        Netty's own HTTP/2 write turn (1 KiB) and socket buffer (64 KiB); the server's
#                 write turn (256 KiB) alone; both of the server's settings (the defaults: a 256 KiB
#                 turn and a 640 KiB buffer). 1 x 4.
#                 Writes docs/results/server/server-write-turns.csv.
#   fast-get:     kvcache.fast-get off and on, 1 x 1 and 1 x 4.
#                 Writes docs/results/server/server-fast-get.csv.
#   fast-put:     PUTs with kvcache.fast-put off and on, 1 x 1 and 1 x 4.
#                 Writes docs/results/server/server-fast-put.csv.
#   write-buffer: kvcache.write-buffer-bytes at each size in WRITE_BUFFERS (bytes; default 1 MiB,
#                 640 KiB and 320 KiB), 1 x 1, 1 x 4, 4 x 1 and 4 x 4.
#                 Writes docs/results/server/server-write-buffer[-pinned].csv.
#   event-loops:  the server's event-loop threads (micronaut.netty.event-loops.default.num-threads)
#                 at each count in EVENT_LOOPS (default 2, the count the server takes on a two-core
#                 machine, then 1 and 4), 1 x 1, 1 x 4, 4 x 1, 16 x 1 and 4 x 4.
#                 Writes docs/results/server/server-event-loops[-pinned].csv.
#   events:       KV events off and on (kvcache.events.endpoint, with a subscriber that reads and one
#                 that never does), PUTs naming their engine block (which a server without events
#                 ignores) and GETs, 1 x 1 and 1 x 4, after WARMUP seconds (15) of each first;
#                 with the server's CPU seconds per GiB moved, and the events the reading
#                 subscriber counted.
#                 Writes docs/results/server/server-events.csv and server-events-subscriber.csv.
#
# Every round runs the settings in turn, reversing their order every other round, so that neither
# always goes first. With PIN=1 the server runs on CPU 0 and h2load on CPU 1 (taskset).
#
#   kvcache-bench/compare-server-settings.sh turns
#   ROUNDS=1 DURATION=3 kvcache-bench/compare-server-settings.sh fast-get
#   PIN=1 ROUNDS=4 kvcache-bench/compare-server-settings.sh write-buffer
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: $0 turns|fast-get|fast-put|write-buffer|event-loops|events}
rounds=${ROUNDS:-3}
duration=${DURATION:-5}
pin=${PIN:-0}
port=17172
events_port=17173
command -v h2load >/dev/null || apt-get install -y -q nghttp2-client >/dev/null

case $suite in
  turns) settings=(netty turn both); loads=(1x4); out=server-write-turns ;;
  fast-get) settings=(off on); loads=(1x1 1x4); out=server-fast-get ;;
  fast-put) settings=(off-put on); loads=(1x1 1x4); out=server-fast-put ;;
  write-buffer)
    read -r -a buffers <<< "${WRITE_BUFFERS:-1048576 655360 327680}"
    settings=("${buffers[@]/#/buffer-}"); loads=(1x1 1x4 4x1 4x4); out=server-write-buffer ;;
  events) settings=(off-events on-events); loads=(1x1 1x4); out=server-events ;;
  event-loops)
    read -r -a counts <<< "${EVENT_LOOPS:-2 1 4}"
    settings=("${counts[@]/#/loops-}"); loads=(1x1 1x4 4x1 16x1 4x4); out=server-event-loops ;;
  *) echo "unknown suite '$suite' (turns, fast-get, fast-put, write-buffer, event-loops, events)" >&2
     exit 2 ;;
esac
if [ "$pin" = 1 ]; then
  on_server=(taskset -c 0)
  on_generator=(taskset -c 1)
  out=docs/results/server/$out-pinned.csv
else
  on_server=()
  on_generator=()
  out=docs/results/server/$out.csv
fi
args_of() { # setting: the server's system properties for it
  case $1 in
    netty) echo "-Dkvcache.http2-write-quantum=1024 -Dkvcache.write-buffer-bytes=65536" ;;
    turn) echo "-Dkvcache.write-buffer-bytes=65536" ;;
    off) echo "-Dkvcache.fast-get=false" ;;
    off-put) echo "-Dkvcache.fast-put=false" ;;
    buffer-*) echo "-Dkvcache.write-buffer-bytes=${1#buffer-}" ;;
    loops-*) echo "-Dmicronaut.netty.event-loops.default.num-threads=${1#loops-}" ;;
    on-events) echo "-Dkvcache.events.endpoint=tcp://127.0.0.1:$events_port -Dkvcache.events.pool=bench" ;;
    off-events) echo "" ;;
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

start_server() { # system properties...: a RAM-only server on $port, once it answers
  "${on_server[@]}" java -XX:MaxDirectMemorySize=6g -Xmx1g -Dmicronaut.server.port=$port -Dkvcache.s3.enabled=false \
      -Dkvcache.cache.ram-bytes=2GiB -Dkvcache.cache.disk-dir= "$@" \
      -jar kvcache-server/target/kvcache-server.jar > "$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
}

stop_server() {
  kill "$server"; wait "$server" 2>/dev/null || true
  server=
}

# each round runs measure <setting> <its system properties...> for every setting, in the settings'
# order, reversed every other round; its lines go to $out after the round and the setting
run_rounds() { # measure
  local order i setting args
  for round in $(seq 1 "$rounds"); do
    order=("${settings[@]}")
    if [ $((round % 2)) = 0 ]; then
      order=()
      for ((i = ${#settings[@]} - 1; i >= 0; i--)); do order+=("${settings[i]}"); done
    fi
    for setting in "${order[@]}"; do
      read -r -a args <<< "$(args_of "$setting")"
      "$1" "$setting" "${args[@]}" | sed "s/^/$round,$setting,/" | tee -a "$out"
    done
  done
}

gets() { # setting, its properties...: "size,connections,streams,GB/s" per size and load; PUTs for fast-put
  shift
  start_server "$@"
  for s in "${sizes[@]}"; do
    curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
        --data-binary "@$work/blk-$s" "$(url "$s")"
    for load in "${loads[@]}"; do
      c=${load%x*} m=${load#*x}
      if [ "$suite" = fast-put ]; then
        body=(-d "$work/blk-$s" -H ':method: PUT' -H 'content-type: application/octet-stream')
      else
        body=()
      fi
      rps=$("${on_generator[@]}" h2load -c "$c" -m "$m" --warm-up-time=2 -D "$duration" \
          "${body[@]}" "$(url "$s")" | awk '/^finished/ {print $4}')
      awk -v s="$s" -v c="$c" -v m="$m" -v r="$rps" \
        'BEGIN {printf "%d,%d,%d,%.3f\n", s, c, m, r * s / 1e9}'
    done
  done
  stop_server
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

events() { # setting: "op,size,connections,streams,GB/s,server CPU s per GiB" per op, size and load
  local setting=$1; shift
  start_server "$@"
  local readers=()
  if [ "$setting" = on-events ]; then
    "$venv/bin/python" "$work/subscriber.py" "tcp://127.0.0.1:$events_port" read \
        > "$work/subscriber.out" & readers+=($!)
    "$venv/bin/python" "$work/subscriber.py" "tcp://127.0.0.1:$events_port" idle & readers+=($!)
    sleep 1
  fi
  local hz
  hz=$(getconf CLK_TCK)
  # a PUT naming its engine block (16 tokens), which a server without events ignores
  local named=(-H ':method: PUT' -H 'content-type: application/octet-stream'
               -H 'kvcache-engine-hash: 12345' -H 'kvcache-engine-model: bench'
               -H "kvcache-engine-tokens: $(seq -s, 1 16)")
  # the JIT's warm-up, off the books: a fresh server compiles its PUT path (and the events' path)
  # for its first seconds, which h2load's own warm-up does not cover
  h2load -c 1 -m 4 -D "$warmup" -d "$work/blk-${sizes[0]}" "${named[@]}" \
      "$(url "${sizes[0]}")" > /dev/null
  h2load -c 1 -m 4 -D "$warmup" "$(url "${sizes[0]}")" > /dev/null
  for s in "${sizes[@]}"; do
    for op in put get; do
      for load in "${loads[@]}"; do
        c=${load%x*} m=${load#*x}
        if [ "$op" = put ]; then
          body=(-d "$work/blk-$s" "${named[@]}")
        else
          body=()
        fi
        before=$(cpu_ticks "$server")
        rps=$("${on_generator[@]}" h2load -c "$c" -m "$m" --warm-up-time=2 -D "$duration" \
            "${body[@]}" "$(url "$s")" | awk '/^finished/ {print $4}')
        after=$(cpu_ticks "$server")
        awk -v op="$op" -v s="$s" -v c="$c" -v m="$m" -v r="$rps" -v t=$((after - before)) \
            -v hz="$hz" -v d="$duration" \
          'BEGIN {printf "%s,%d,%d,%d,%.3f,%.3f\n", op, s, c, m, r * s / 1e9,
                  t / hz / (r * d * s / 1073741824)}'
      done
    done
  done
  stop_server
  for r in "${readers[@]}"; do kill -INT "$r" 2>/dev/null || true; wait "$r" 2>/dev/null || true; done
  if [ "$setting" = on-events ]; then
    sed "s/^/$round,/" "$work/subscriber.out" >> "${out%.csv}-subscriber.csv"
  fi
}

if [ "$suite" = events ]; then
  warmup=${WARMUP:-15}
  venv=python/target/venv
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "pyzmq>=25" "msgpack>=1.0"
  cat > "$work/subscriber.py" <<'PY'
import signal, sys, time
import msgpack, zmq
endpoint, mode = sys.argv[1], sys.argv[2]
sub = zmq.Context().socket(zmq.SUB)
sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
sub.setsockopt(zmq.RCVHWM, 100000)
sub.connect(endpoint)
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
if mode == "idle":  # connected, never reads: the server's queue to it fills to its high-water mark
    while not stop:
        time.sleep(0.2)
    sys.exit(0)
batches = events = stored = payload = gaps = 0
last = None
start = time.monotonic()
while not stop:
    if not sub.poll(200):
        continue
    topic, seq, body = sub.recv_multipart()
    n = int.from_bytes(seq, "big")
    gaps += last is not None and n != last + 1
    last = n
    batch = msgpack.unpackb(body)
    batches += 1
    payload += len(body)
    events += len(batch[1])
    stored += sum(1 for e in batch[1] if e["type"] == "BlockStored")
seconds = time.monotonic() - start
print(f"{batches},{events},{stored},{payload},{gaps},{seconds:.1f}")
PY
  echo "round,setting,op,size,connections,streams,gb_per_s,server_cpu_s_per_gib" > "$out"
  echo "round,batches,events,stored,payload_bytes,gaps,seconds" > "${out%.csv}-subscriber.csv"
  run_rounds events
  exit 0
fi

echo "round,setting,size,connections,streams,gb_per_s" > "$out"
run_rounds gets
