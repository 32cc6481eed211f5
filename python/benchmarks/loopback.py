"""Servers the benchmarks start on loopback: a free port, and waiting until one listens."""
from __future__ import annotations

import socket
import subprocess
import sys
import time


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
