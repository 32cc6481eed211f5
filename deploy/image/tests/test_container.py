"""The kvcache-server image under podman, as an operator runs it.

Run by deploy/image/test.sh, which builds the image and passes IMAGE_TAR (the image), RCLONE (an
S3 server) and WORK (a scratch directory). Every container runs with host networking on loopback
addresses and ports of its own, runc, a memory limit, a read-only root file system and the
image's own user; each is removed at the end of its test.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from containers import IMAGE, Container, block, free_port, podman

WORK = Path(os.environ["WORK"])


@pytest.fixture(scope="session", autouse=True)
def image() -> str:
    podman("load", "-q", "-i", os.environ["IMAGE_TAR"])
    return IMAGE


@pytest.fixture
def containers() -> Iterator[list[Container]]:
    made: list[Container] = []
    yield made
    for c in made:
        c.close()


def fresh(name: str) -> Path:
    path = WORK / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def test_a_ram_tier_the_memory_limit_cannot_hold_is_refused_with_the_reason(
        containers: list[Container]) -> None:
    r = podman("run", "--rm", "--network=host", "--read-only", "--memory=1g",
               "-e", "KVCACHE_CACHE_RAM_BYTES=1GiB", IMAGE, check=False)
    assert r.returncode == 78, r.stdout + r.stderr
    assert "more than the container's memory limit of 1024 MiB" in r.stderr
    assert "KVCACHE_CACHE_RAM_BYTES" in r.stderr
    bad = podman("run", "--rm", "--network=host", "--read-only", "--memory=1g",
                 "-e", "KVCACHE_HEAP=lots", IMAGE, check=False)
    assert bad.returncode == 78
    assert "KVCACHE_HEAP=lots is not a size" in bad.stderr


def test_serves_as_a_non_root_user_on_a_read_only_root_and_sizes_the_jvm(
        containers: list[Container]) -> None:
    c = Container("kv-basic", "127.0.0.1", free_port(), fresh("basic"))
    containers.append(c)
    c.wait_ready()
    status = Path(f"/proc/{c.pid()}/status").read_text()
    assert re.search(r"^Uid:\s+65532\s", status, re.M), status
    cmdline = Path(f"/proc/{c.pid()}/cmdline").read_bytes().split(b"\0")
    direct = (256 << 20) + 4096 + (256 << 20)
    assert f"-XX:MaxDirectMemorySize={direct}".encode() in cmdline
    assert b"-Xmx402653184" in cmdline
    assert c.put(1) == 201
    status_code, body = c.get(1)
    assert status_code == 200 and body == block(1)
    with urllib.request.urlopen(c.url("/health"), timeout=5) as r:
        assert b'"status":"UP"' in r.read()
    with urllib.request.urlopen(c.url("/health/liveness"), timeout=5) as r:
        assert r.status == 200
    # the root file system refuses writes; the disk tier lives on the volume
    assert any((c.data / "kvcache").iterdir()), "the disk tier's files are on the volume"
    denied = podman("exec", c.name, "/bin/sh", "-c", "echo x > /opt/x", check=False)
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr


def test_a_sigterm_lets_the_requests_under_way_finish_and_keeps_what_was_stored(
        containers: list[Container]) -> None:
    data = fresh("sigterm")
    c = Container("kv-sigterm", "127.0.0.1", free_port(), data)
    containers.append(c)
    c.wait_ready()
    stored: dict[int, bool] = {}
    failures: list[str] = []
    go = threading.Event()

    def writer(first: int) -> None:
        i = first
        while not go.is_set() or i < first + 4:
            try:
                code = c.put(i)
            except OSError as e:  # refused or reset: the server had closed its port before it
                failures.append(f"put {i}: {e}")
                return
            if code == 201:
                stored[i] = True
            else:
                failures.append(f"put {i}: {code}")
                return
            i += 1

    threads = [threading.Thread(target=writer, args=(n * 100_000,)) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    go.set()
    stopped_in = c.stop()
    for t in threads:
        t.join(30)
    logs = c.logs()
    assert c.exit_code() in (0, 143), logs
    assert "on close" in logs, logs
    assert len(stored) >= 4, (stored, failures)
    # every failure is a connection the stopped server refused, never a wrong answer
    assert all("put" in f and ("refused" in f.lower() or "reset" in f.lower()
                               or "disconnected" in f.lower() or "closed" in f.lower())
               for f in failures), failures
    c.close()
    again = Container("kv-sigterm-2", "127.0.0.1", free_port(), data)
    containers.append(again)
    again.wait_ready()
    missing = [i for i in stored if again.get(i) != (200, block(i))]
    assert not missing, f"acknowledged before the SIGTERM, gone after a restart: {missing}"
    print(f"stopped in {stopped_in:.1f} s with {len(stored)} blocks acknowledged")


def start_s3(name: str) -> tuple[subprocess.Popen[bytes], int]:
    root = fresh(name)
    (root / "data" / "kv-fleet").mkdir(parents=True)
    (root / "rclone.conf").write_text("")
    port = free_port()
    proc = subprocess.Popen([os.environ["RCLONE"], "serve", "s3", "--config",
                             str(root / "rclone.conf"), "--addr", f"127.0.0.1:{port}",
                             "--auth-key", "fleet-access,fleet-secret-key", str(root / "data")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("rclone serve s3 did not listen")


def test_three_containers_over_one_bucket_find_each_other_by_name_and_share_blocks(
        containers: list[Container]) -> None:
    s3, s3_port = start_s3("fleet-s3")
    try:
        port = free_port()
        hosts = [f"127.0.0.{11 + n}" for n in range(3)]
        # a name with the three addresses, as a headless Service's DNS name has its pods'
        fleet_hosts = [f"--add-host=kvcache-fleet:{h}" for h in hosts]
        fleet = []
        for n, host in enumerate(hosts):
            c = Container(f"kv-fleet-{n}", host, port, fresh(f"fleet-{n}"), env={
                "KVCACHE_CACHE_S3_ENDPOINT": f"http://127.0.0.1:{s3_port}",
                "KVCACHE_CACHE_S3_BUCKET": "kv-fleet",
                "KVCACHE_CACHE_S3_CAPACITY": "2GiB",
                "KVCACHE_CACHE_S3_ACCESS_KEY_ID": "fleet-access",
                "KVCACHE_CACHE_S3_SECRET_ACCESS_KEY": "fleet-secret-key",
                "KVCACHE_CACHE_S3_LOOKUP_BUDGET": "2s",
                "KVCACHE_CACHE_S3_FLEET_DNS": f"kvcache-fleet:{port}",
                "KVCACHE_CACHE_S3_FLEET_SELF": f"{host}:{port}",
            }, extra=fleet_hosts)
            containers.append(c)
            fleet.append(c)
        for c in fleet:
            c.wait_ready()
        for c in fleet:
            assert c.metric("kvcache_s3_fleet_member") == 1.0, c.logs()
        for i in range(12):
            assert fleet[0].put(i) == 201
        deadline = time.monotonic() + 60
        while fleet[0].metric("kvcache_uploads_waiting") > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        for reader in fleet[1:]:
            for i in range(12):
                code, body = reader.get(i)
                assert code == 200 and body == block(i), f"block {i} through {reader.name}: {code}"
            assert reader.metric('kvcache_tier_hits_total{tier="s3"}') >= 12
        fleet[0].stop()
        for i in range(12):
            assert fleet[1].get(i) == (200, block(i))
    finally:
        s3.terminate()
        s3.wait(10)
