#!/usr/bin/env bash
# Runs vllm_ttft.py (time to first token of a real vLLM engine with its prompt's KV loaded from
# kvcache-server, against computing it) in the vLLM environment of python/engine-tests.sh, and
# writes docs/results/engines/vllm-ttft.json. About 10 minutes. Extra arguments go to the script.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/python/engine-tests.sh" --setup vllm
exec "$root/python/target/engines/vllm/bin/python" "$root/python/benchmarks/vllm_ttft.py" \
  --jar "$root/kvcache-server/target/kvcache-server.jar" --out "$root/docs/results/engines/vllm-ttft.json" "$@"
