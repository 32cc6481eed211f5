"""A kvcache-server container under podman, for the image's tests and its measurements.

Every container runs with host networking on a loopback address and port of its own, runc, a
memory limit, a read-only root file system and the image's own user.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

IMAGE = "localhost/kvcache-server:0.1.0-SNAPSHOT"
BLOCK = 4 << 20


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check,
                          timeout=timeout)


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
            "KVCACHE_S3_PORT": "-1",  # any free port: containers share the host's network
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
        podman("rm", "-f", "-t", "0", name, check=False)  # one a killed run left behind
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


