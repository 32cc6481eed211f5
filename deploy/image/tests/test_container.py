"""The kvcache-server image under podman, as an operator runs it.

Run by deploy/image/test.sh, which builds the image and passes IMAGE_TAR (the image), RCLONE (an
S3 server) and WORK (a scratch directory). Every container runs with host networking on loopback
addresses and ports of its own, runc, a memory limit, a read-only root file system and the
image's own user; each is removed at the end of its test.
"""

from __future__ import annotations

import http.client
import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

IMAGE = "localhost/kvcache-server:0.1.0-SNAPSHOT"
WORK = Path(os.environ["WORK"])
BLOCK = 4 << 20


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check,
                          timeout=timeout)


@pytest.fixture(scope="session", autouse=True)
def image() -> str:
    podman("load", "-q", "-i", os.environ["IMAGE_TAR"])
    return IMAGE


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def key(i: int) -> str:
    return f"{i:032x}"


def block(i: int) -> bytes:
    """BLOCK bytes that differ for every i and at every offset."""
    seed = i.to_bytes(8, "little")
    return (seed * (BLOCK // 8))[: BLOCK - 8] + seed


class Container:
    """One kvcache-server container, started detached; stopped and removed by close()."""

    def __init__(self, name: str, host: str, port: int, data: Path, memory: str = "1536m",
                 env: dict[str, str] | None = None, extra: list[str] | None = None) -> None:
        self.name, self.host, self.port, self.data = name, host, port, data
        data.mkdir(parents=True, exist_ok=True)
        os.chown(data, 65532, 65532)
        settings = {
            "MICRONAUT_SERVER_HOST": host,
            "MICRONAUT_SERVER_PORT": str(port),
            "KVCACHE_CACHE_RAM_BYTES": "256MiB",
            "KVCACHE_CACHE_MAX_BLOCK_BYTES": "8MiB",
            "KVCACHE_CACHE_DISK_CAPACITY": "1GiB",
            "KVCACHE_HEAP": "384MiB",
            **(env or {}),
        }
        args = ["run", "-d", "--name", name, "--network=host", "--read-only",
                f"--memory={memory}", "-v", f"{data}:/data"]
        for k, v in settings.items():
            args += ["-e", f"{k}={v}"]
        self.started = time.monotonic()
        podman(*args, *(extra or []), IMAGE)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def wait_ready(self, timeout: float = 60) -> float:
        """Seconds from `podman run` until /health/readiness answers 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url("/health/readiness"), timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - self.started
            except OSError:
                pass
            if self.state() not in ("running", "created", "configured"):
                raise AssertionError(f"{self.name} stopped while starting:\n{self.logs()}")
            time.sleep(0.05)
        raise AssertionError(f"{self.name} not ready in {timeout} s:\n{self.logs()}")

    def state(self) -> str:
        return podman("inspect", "--format", "{{.State.Status}}", self.name,
                      check=False).stdout.strip()

    def exit_code(self) -> int:
        return int(podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout)

    def logs(self) -> str:
        r = podman("logs", self.name, check=False)
        return r.stdout + r.stderr

    def pid(self) -> int:
        return int(podman("inspect", "--format", "{{.State.Pid}}", self.name).stdout)

    def put(self, i: int, body: bytes | None = None) -> int:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request("PUT", f"/v1/namespaces/default/blocks/{key(i)}",
                         body=block(i) if body is None else body,
                         headers={"Content-Type": "application/octet-stream"})
            r = conn.getresponse()
            r.read()
            return r.status
        finally:
            conn.close()

    def get(self, i: int) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request("GET", f"/v1/namespaces/default/blocks/{key(i)}")
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(self.url("/prometheus"), timeout=5) as r:
            text = r.read().decode()
        m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
        assert m, f"{name} not among {self.name}'s metrics"
        return float(m.group(1))

    def stop(self, timeout: float = 60) -> float:
        """SIGTERM, then seconds until the container has exited."""
        t = time.monotonic()
        podman("kill", "--signal", "TERM", self.name)
        podman("wait", self.name, timeout=timeout)
        return time.monotonic() - t

    def close(self) -> None:
        podman("rm", "-f", "-t", "0", self.name, check=False)


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
