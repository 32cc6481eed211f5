#!/usr/bin/env bash
# Builds the Python package as published: a wheel for Linux x86-64 and one for Linux arm64, each
# with the compiled module (kvcache._native, Python's stable ABI from 3.11, glibc 2.17 and later,
# cross-compiled with Zig's C compiler from PyPI), and the sdist, into python/target/dist. Each
# wheel is checked for its module, its machine and the newest glibc symbol it needs. The module's
# CRC32C is checked on each machine by native/selftest.c, built with the same compiler: on x86-64
# with its CPU instruction and, under qemu, on a CPU without it; on arm64 under qemu. The wheel of
# this machine is then installed into a new venv and the tests of the compiled module and of the
# protocol run against it (a server jar from kvcache-server/target, built first). The same tests
# then run against the arm64 wheel in an arm64 CPython: Debian 12's Python 3.11 (the oldest the
# wheel supports) for arm64, its packages fetched from Debian's archive, under qemu.
#
#   python/wheels.sh    # needs python3 (3.11 or later), the network to PyPI and to Debian's
#                       # archive, apt-get and dpkg-deb, and qemu-user (installed with apt-get
#                       # when missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target="$here/target"
dist="$target/dist"
tools="$target/wheel-tools"
python=${PYTHON:-python3}

rm -rf "$dist" "$target/wheel-src"
mkdir -p "$dist"
if [ ! -x "$tools/bin/python" ]; then
  "$python" -m venv "$tools"
fi
"$tools/bin/pip" install -q --disable-pip-version-check "ziglang==0.17.1" "setuptools>=77" \
  "wheel>=0.43" "build>=1.2"

for arch in x86_64 aarch64; do
  echo "== the wheel for Linux $arch"
  src="$target/wheel-src/$arch"  # a clean copy: no build directory or module of another machine
  mkdir -p "$src"
  (cd "$here" && tar cf - --exclude=./target --exclude=./build --exclude='*.so' \
    --exclude='*.egg-info' --exclude=__pycache__ .) | (cd "$src" && tar xf -)
  zig="$tools/bin/python -m ziglang cc -target $arch-linux-gnu.2.17"
  CC="$zig" LDSHARED="$zig -shared" "$tools/bin/pip" wheel -q --no-deps --no-build-isolation \
    --disable-pip-version-check -w "$dist" \
    --config-settings="--build-option=--plat-name=manylinux_2_17_$arch" "$src"
done
echo "== the sdist"
"$tools/bin/python" -m build -q --sdist --no-isolation -o "$dist" "$target/wheel-src/x86_64" \
  > /dev/null

"$tools/bin/python" - "$dist" <<'EOF'
"""Each wheel holds the compiled module, built for its machine and glibc 2.17."""
import re, subprocess, sys, zipfile, pathlib, tempfile
machines = {"x86_64": "X86-64", "aarch64": "AArch64"}
for wheel in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    arch = re.search(r"manylinux_2_17_(\w+)\.whl$", wheel.name)
    if not arch or "-cp311-abi3-" not in wheel.name:
        sys.exit(f"{wheel.name}: not a cp311-abi3 manylinux_2_17 wheel")
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as tmp:
        names = [n for n in z.namelist() if n.startswith("kvcache/_native") and n.endswith(".so")]
        if names != ["kvcache/_native.abi3.so"]:
            sys.exit(f"{wheel.name}: the compiled module is missing (it failed to build): {names}")
        so = z.extract(names[0], tmp)
        header = subprocess.run(["readelf", "-h", so], capture_output=True, text=True).stdout
        versions = subprocess.run(["readelf", "-V", so], capture_output=True, text=True).stdout
        if machines[arch.group(1)] not in header:
            sys.exit(f"{wheel.name}: the module is not built for {arch.group(1)}")
        glibc = max((tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_([\d.]+)", versions)),
                    default=(0,))
        if glibc > (2, 17):
            sys.exit(f"{wheel.name}: the module needs glibc {glibc}, newer than 2.17")
    print(f"{wheel.name}: kvcache/_native.abi3.so for {arch.group(1)}, glibc {'.'.join(map(str, glibc))}")
EOF
ls "$dist"/*.tar.gz

echo "== the module's CRC32C on each machine (native/selftest.c)"
if ! command -v qemu-aarch64 > /dev/null || ! command -v qemu-x86_64 > /dev/null; then
  if command -v apt-get > /dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q qemu-user > "$target/qemu-install.log" 2>&1 \
      || { echo "installing qemu-user failed: $target/qemu-install.log" >&2; exit 1; }
  else
    echo "qemu-user is missing (qemu-aarch64, qemu-x86_64): install it to check the arm64 wheel" >&2
    exit 1
  fi
fi
for arch in x86_64 aarch64; do
  "$tools/bin/python" -m ziglang cc -target "$arch-linux-musl" -O2 -std=c11 -D_GNU_SOURCE -Wall \
    -Werror -static -o "$target/selftest-$arch" "$here/native/selftest.c"
done
qemu-x86_64 -cpu max "$target/selftest-x86_64"
qemu-x86_64 -cpu qemu64 "$target/selftest-x86_64"   # no SSE 4.2: the tables
qemu-aarch64 -cpu max "$target/selftest-aarch64"

machine=$(uname -m)
wheel=$(ls "$dist"/*manylinux_2_17_"$machine".whl)
echo "== $(basename "$wheel") installed in a new venv: the compiled module's tests and the protocol's"
venv="$target/wheel-venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "$wheel" "pytest>=8" "numpy>=1.24"
cd "$here/tests"  # the tests import the installed package, never the sources
KVCACHE_SERVER_JAR="${KVCACHE_SERVER_JAR:-$here/../kvcache-server/target/kvcache-server.jar}" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$here/tests" \
  -c /dev/null test_native.py test_protocol.py

echo "== the arm64 wheel in Debian 12's arm64 CPython 3.11, under qemu: the same tests"
arm="$target/arm64-python"  # Debian's packages, fetched without changing this machine's apt
if [ ! -x "$arm/root/usr/bin/python3.11" ]; then
  command -v apt-get > /dev/null && command -v dpkg-deb > /dev/null \
    || { echo "apt-get and dpkg-deb are needed to fetch an arm64 Python" >&2; exit 1; }
  rm -rf "$arm"
  mkdir -p "$arm/lists/partial" "$arm/cache/archives/partial" "$arm/debs" "$arm/root"
  echo "deb [arch=arm64] http://deb.debian.org/debian bookworm main" > "$arm/sources.list"
  apt=(-q -o APT::Architecture=arm64 -o APT::Architectures::=arm64
       -o Dir::State::Lists="$arm/lists" -o Dir::Cache="$arm/cache"
       -o Dir::Etc::SourceList="$arm/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o Dir::State::status=/dev/null)
  { apt-get "${apt[@]}" update \
    && (cd "$arm/debs" && apt-get "${apt[@]}" download python3.11-minimal libpython3.11-minimal \
      libpython3.11-stdlib libc6 zlib1g libexpat1 libssl3 libffi8 libbz2-1.0 liblzma5 \
      libsqlite3-0 libuuid1 libncursesw6 libtinfo6 libcrypt1 libtirpc3 libnsl2); } \
    > "$arm/apt.log" 2>&1 || { echo "fetching Debian's arm64 Python failed: $arm/apt.log" >&2; exit 1; }
  for deb in "$arm"/debs/*.deb; do dpkg-deb -x "$deb" "$arm/root"; done
fi
rm -rf "$arm/site"
"$tools/bin/pip" install -q --disable-pip-version-check --target "$arm/site" --only-binary=:all: \
  --platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64 --python-version 3.11 \
  --implementation cp --abi cp311 --abi abi3 --abi none \
  "$(ls "$dist"/*manylinux_2_17_aarch64.whl)" "pytest>=8" "numpy>=1.24"
KVCACHE_SERVER_JAR="${KVCACHE_SERVER_JAR:-$here/../kvcache-server/target/kvcache-server.jar}" \
  PYTHONPATH="$arm/site" qemu-aarch64 -L "$arm/root" "$arm/root/usr/bin/python3.11" \
  -m pytest -q -p no:cacheprovider --rootdir "$here/tests" -c /dev/null test_native.py test_protocol.py
