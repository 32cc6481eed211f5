#!/usr/bin/env bash
# Runs the MLPerf Storage KV-cache benchmark against kvcache-server and the harness's file backend
# (mlperf_kv.py "all": four runs of 60 s, about 6 minutes) and writes docs/results/mlperf/mlperf-kv.json.
# The harness is not part of this project: clone it first and give its kv_cache_benchmark
# directory,
#   git clone https://github.com/mlcommons/storage.git
#   python/benchmarks/mlperf_kv.sh storage/kv_cache_benchmark
# Needs the server jar (./mvnw -q install -DskipTests), and root to mount the tmpfs of the file
# backend's tmpfs run (the harness refuses directories under /dev and /tmp).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
harness=$(cd "${1:?give the kv_cache_benchmark directory of a clone of mlcommons/storage}" && pwd)
shift
venv="$root/python/target/mlperf/venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy pyyaml
fi
"$venv/bin/pip" install -q --disable-pip-version-check "$root/python"
tmpfs="$root/python/target/mlperf/tmpfs"
mkdir -p "$tmpfs"
if ! mountpoint -q "$tmpfs"; then
  mount -t tmpfs -o size=6g kvcache-mlperf "$tmpfs"
  trap 'umount "$tmpfs"' EXIT
fi
commit=$(git -C "$harness" rev-parse HEAD 2>/dev/null || echo unknown)
"$venv/bin/python" "$root/python/benchmarks/mlperf_kv.py" --harness "$harness" all \
  --jar "$root/kvcache-server/target/kvcache-server.jar" --work "$root/python/target/mlperf" \
  --tmpfs "$tmpfs" --out "$root/docs/results/mlperf/mlperf-kv.json" --harness-commit "$commit" "$@"
