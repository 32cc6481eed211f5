#!/usr/bin/env bash
# Runs the PUT-path benchmark (put_path.py): kvcache-server over its disk tier against the floor
# program in the same run. Makes a venv under python/target with the package, builds the server
# and benchmark jars if they are missing, measures on python/target/put-path (the work tree's
# disk) and writes docs/results/puts-under-pressure/put-path.json. About 25 minutes with the defaults. Extra
# arguments go to the script (--ram, --sizes, --rounds, --systems kvcache,floor, --variant, ...).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/python/target/bench-venv"
server="$root/kvcache-server/target/kvcache-server.jar"
bench="$root/kvcache-bench/target/benchmarks.jar"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root/python"
[ -f "$server" ] || (cd "$root" && ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package)
[ -f "$bench" ] || (cd "$root" && ./mvnw -q -B -ntp -pl kvcache-bench -am -DskipTests package)
exec "$venv/bin/python" "$root/python/benchmarks/put_path.py" --server-jar "$server" \
  --bench-jar "$bench" --dir "$root/python/target/put-path" \
  --out "$root/docs/results/puts-under-pressure/put-path.json" "$@"
