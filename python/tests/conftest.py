"""Starts real kvcache-server processes (the jar the Maven build makes) on loopback ports."""
from __future__ import annotations

import glob
import json
import mmap
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Iterator, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
JAR = Path(os.environ.get("KVCACHE_SERVER_JAR", REPO / "kvcache-server" / "target" / "kvcache-server.jar"))
JAVA = os.environ.get("KVCACHE_JAVA") or shutil.which("java") or "java"
LISTENING = re.compile(r"listening on (https?)://([^:/\s]+):(\d+)")
S3_LISTENING = re.compile(r"S3 API: (https?://[^:/\s]+:\d+)")


class KvServer:
    """One kvcache-server child process. ``settings`` become ``-D`` system properties."""

    def __init__(self, settings: dict[str, str], port: int = -1) -> None:
        if not JAR.is_file():
            pytest.fail(f"{JAR} is missing: build it first (./mvnw -pl kvcache-server -am package)")
        self.settings = dict(settings)
        self.port = port
        self.process: Optional[subprocess.Popen[str]] = None
        self.log: list[str] = []

    def start(self, timeout: float = 60.0) -> "KvServer":
        command = [JAVA, "-Xmx256m", "-XX:MaxDirectMemorySize=1g",
                   f"-Dmicronaut.server.port={self.port}", "-Dkvcache.s3.port=-1"]
        if "micronaut.server.ssl.enabled" in self.settings:
            command[3] = "-Dmicronaut.server.port=-1"
            command.append(f"-Dmicronaut.server.ssl.port={self.port}")
        command += [f"-D{k}={v}" for k, v in self.settings.items()]
        command += ["-jar", str(JAR)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        found: list[re.Match[str]] = []
        ready = threading.Event()

        def pump() -> None:
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                self.log.append(line)
                m = LISTENING.search(line)
                if m and not found:
                    found.append(m)
                    ready.set()
            ready.set()
        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout) or not found:
            self.stop()
            pytest.fail("kvcache-server did not start:\n" + "".join(self.log[-40:]))
        self.scheme, self.host, self.port = found[0].group(1), found[0].group(2), int(found[0].group(3))
        return self

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def s3_url(self) -> str:
        """Where the server's S3 API listens (any free port, unless ``kvcache.s3.port`` is set),
        as its welcome says."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for line in self.log:
                m = S3_LISTENING.search(line)
                if m:
                    return m.group(1)
            time.sleep(0.05)
        pytest.fail("kvcache-server named no S3 API:\n" + "".join(self.log[-40:]))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self) -> "KvServer":
        self.stop()
        return self.start()


def ram_only(**extra: str) -> dict[str, str]:
    settings = {"kvcache.cache.ram-bytes": "512MiB", "kvcache.cache.disk-dir": "",
                "kvcache.namespaces": "default,other"}
    settings.update(extra)
    return settings


def with_events(pool: str, **extra: str) -> dict[str, str]:
    """Settings of a RAM-only server that publishes KV events (its own ``pool``) on a loopback
    port, in batches every 5 ms."""
    return ram_only(**{"kvcache.events.endpoint": "tcp://127.0.0.1:*",
                       "kvcache.events.pool": pool, "kvcache.events.interval": "5ms", **extra})


def events_socket(server: KvServer) -> "object":
    """A ZMQ SUB socket on a server's KV events (where its log says they are, since its last
    start), subscribed to every ``kv@`` topic; the subscription reaches the server in a moment."""
    import zmq
    said = re.compile(r"KV events on (tcp://[^\s,]+)")
    where = [m.group(1) for m in map(said.search, server.log) if m]
    assert where, "the server did not say where its KV events are"
    socket = zmq.Context.instance().socket(zmq.SUB)
    socket.setsockopt(zmq.RCVHWM, 0)
    socket.setsockopt_string(zmq.SUBSCRIBE, "kv@")
    socket.connect(where[-1])
    return socket


def lookup_by_engine_hashes(server: KvServer, hashes: list[int], model: str) -> dict[str, object]:
    """The server's ``POST /lookup`` by engine block hashes, in namespace ``default``."""
    request = urllib.request.Request(
        f"http://{server.address}/v1/namespaces/default/lookup", method="POST",
        data=json.dumps({"engine_hashes": hashes, "model": model}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as r:
        answer: dict[str, object] = json.loads(r.read())
        return answer


@pytest.fixture(scope="session")
def server() -> Iterator[KvServer]:
    """A RAM-only server, shared by the tests that need nothing special."""
    s = KvServer(ram_only()).start()
    yield s
    s.stop()


@pytest.fixture
def client(server: KvServer) -> Iterator["object"]:
    import kvcache
    with kvcache.Client(server.address) as c:
        yield c


@pytest.fixture
def unique_keys() -> Iterator[object]:
    """Keys no other test uses: random 16 bytes each."""
    import kvcache

    def make(n: int) -> list[kvcache.BlockKey]:
        return [kvcache.BlockKey(os.urandom(16)) for _ in range(n)]
    yield make


def damage_ram_files(directory: str) -> int:
    """Flips a byte in every 4 KiB of a server's RAM files in ``directory`` (its
    ``kvcache.cache.ram-shared-memory-dir``), as failing memory or another process writing them
    would: every block the server holds in RAM is damaged. Returns how many files."""
    files = glob.glob(os.path.join(directory, "kvcache-ram-*"))
    damage_files(files)
    return len(files)


def damage_files(paths: list[str]) -> None:
    """Flips a byte in every 4 KiB of each file."""
    for path in paths:
        size = os.path.getsize(path)
        if not size:
            continue
        with open(path, "r+b") as f, mmap.mmap(f.fileno(), size) as m:
            for at in range(100, size, 4096):
                m[at] ^= 0x5A


def wait_until(condition, timeout: float = 10.0, interval: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())


@pytest.fixture(params=["native", "python"])
def transfers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once with loads through the compiled module (without the interpreter's lock)
    and once through pure Python, the fallback where the module is not installed."""
    from kvcache import _native_io
    if request.param == "python":
        monkeypatch.setattr(_native_io, "_native", None)
    elif _native_io.native_transfers() is not None:
        pytest.fail(f"loads run through pure Python here: {_native_io.native_transfers()}")
    return str(request.param)
