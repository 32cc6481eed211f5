#!/usr/bin/env bash
# Runs the Python client's benchmark against redis-py (client_vs_redis.py): makes a venv under
# python/target with the package and redis[hiredis] from PyPI, builds the server jar if it is
# missing, installs Debian's redis-server if it is missing, and writes
# docs/results/python-client/python-client.json. About 5 minutes. Extra arguments go to the script.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/python/target/bench-venv"
jar="$root/kvcache-server/target/kvcache-server.jar"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root/python[bench]"
[ -f "$jar" ] || (cd "$root" && ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package)
command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null
exec "$venv/bin/python" "$root/python/benchmarks/client_vs_redis.py" --jar "$jar" \
  --out "$root/docs/results/python-client/python-client.json" "$@"
