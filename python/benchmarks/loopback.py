"""Servers the benchmarks start on loopback: a free port, and waiting until one listens."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from typing import Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    """Returns once ``process`` listens on ``port``; exits the benchmark if it ends first or does
    not listen within 60 s."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{what} did not listen on {port} within 60 s")


@contextlib.contextmanager
def shm_server(jar: str, shm: str, name: str) -> Iterator[tuple[str, str]]:
    """A RAM-only kvcache-server of 512 MiB with its RAM in shared memory, in a new directory
    ``name-<pid>`` under the tmpfs directory ``shm``; yields its address and that directory (where
    a benchmark may keep files of its own), then stops it and removes the directory."""
    work = os.path.join(shm, f"{name}-{os.getpid()}")
    os.makedirs(work)
    port = free_port()
    server = subprocess.Popen(
        ["java", "-Xmx512m", "-XX:MaxDirectMemorySize=1g", f"-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false",
         "-Dkvcache.cache.ram-bytes=512MiB", "-Dkvcache.cache.disk-dir=",
         f"-Dkvcache.cache.ram-shared-memory-dir={work}", "-jar", jar],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, server, "kvcache-server")
        yield f"127.0.0.1:{port}", work
    finally:
        server.terminate()
        server.wait(60)
        shutil.rmtree(work, ignore_errors=True)
