"""The image's figures for docs/deployment.md ("The image"), under podman on this host.

    deploy/image/test.sh builds the image and the venv; then
    CONTAINERS_CONF=deploy/target/image-test/containers.conf \\
      deploy/target/venv/bin/python deploy/image/measure.py kvcache-server/target/kvcache-server-image.tar

prints: the image's size (its layers compressed, as a registry stores them), the time from
`podman run` to a ready /health/readiness with a 1 GiB and a 16 GiB RAM tier (three runs each),
and how long a SIGTERM takes to stop a server whose RAM holds 1 and 4 GiB only RAM has
(durability ram_first, so the stop writes all of it to the disk tier), per GiB.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "tests"))
from containers import BLOCK, Container, free_port, podman  # noqa: E402

WORK = Path(__file__).resolve().parents[1] / "target" / "image-measure"


def fresh(name: str) -> Path:
    path = WORK / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def image_size(tar_path: str) -> None:
    with tarfile.open(tar_path) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        manifest_digest = index["manifests"][0]["digest"].split(":")[1]
        manifest = json.load(tar.extractfile(f"blobs/sha256/{manifest_digest}"))  # type: ignore[arg-type]
    layers = [layer["size"] for layer in manifest["layers"]]
    print(f"image: {len(layers)} layers, {sum(layers) / 2**20:.1f} MiB compressed"
          f" ({', '.join(f'{s / 2**20:.1f}' for s in sorted(layers, reverse=True))} MiB)")


def start_to_ready(ram: str, memory: str) -> None:
    times = []
    for run in range(3):
        c = Container(f"kv-start-{run}", "127.0.0.1", free_port(), fresh(f"start-{run}"),
                      memory=memory, env={"KVCACHE_CACHE_RAM_BYTES": ram,
                                          "KVCACHE_CACHE_DISK_CAPACITY": "2GiB"})
        try:
            times.append(c.wait_ready(120))
            deadline = time.monotonic() + 300
            zeroed = None
            while zeroed is None and time.monotonic() < deadline:
                zeroed = re.search(r"MiB reserved and zeroed in (\d+) ms", c.logs())
                time.sleep(0.5)
        finally:
            c.close()
        print(f"  RAM tier {ram}: ready {times[-1]:.2f} s after podman run;"
              f" the whole RAM tier zeroed {int(zeroed.group(1)) / 1000 if zeroed else '?'} s"
              " after the server began to listen")
    print(f"start to ready, RAM tier {ram}: {', '.join(f'{t:.2f}' for t in times)} s")


def stop_per_gib(gib: int) -> None:
    c = Container(f"kv-stop-{gib}", "127.0.0.1", free_port(), fresh(f"stop-{gib}"),
                  memory=f"{gib + 2}g", env={
                      "KVCACHE_CACHE_RAM_BYTES": f"{gib + 1}GiB",
                      "KVCACHE_CACHE_DISK_CAPACITY": f"{gib + 4}GiB",
                      "KVCACHE_CACHE_DURABILITY": "ram_first"})
    try:
        c.wait_ready(120)
        for i in range((gib << 30) // BLOCK):
            assert c.put(i) == 201
        stopped = c.stop(timeout=600)
        wrote = re.search(r"wrote (\d+) blocks \((\d+) MiB\) from RAM to the disk tier on close"
                          r" in (\d+) ms", c.logs())
    finally:
        c.close()
    assert wrote, "no spill on close in the log"
    mib, ms = int(wrote.group(2)), int(wrote.group(3))
    print(f"stop with {mib} MiB only in RAM: {stopped:.2f} s from SIGTERM to exit, the spill"
          f" {ms / 1000:.2f} s: {ms / 1000 / (mib / 1024):.2f} s per GiB spilled")


if __name__ == "__main__":
    podman("load", "-q", "-i", sys.argv[1])
    image_size(sys.argv[1])
    start_to_ready("1GiB", "3g")
    start_to_ready("16GiB", "18g")
    stop_per_gib(1)
    stop_per_gib(4)
