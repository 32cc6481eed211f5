#!/usr/bin/env python3
"""The kvcache Python client against kvcache-server beside redis-py against redis-server, in one
run on one machine: GET into a preallocated buffer and PUT from one, for 256 KiB, 2 MiB and 32 MiB
blocks, from 1 and 4 threads; and a lookup of 128 keys (p50/p99).

    python/benchmarks/run.sh            # makes the venv, installs redis-server, runs this

or, in a venv with the kvcache package and redis[hiredis]:

    python client_vs_redis.py --jar kvcache-server/target/kvcache-server.jar \\
        --out docs/results/python-client/python-client.json

Both servers run on loopback as child processes: kvcache-server with a 2 GiB RAM tier and no disk,
redis-server with no persistence. Each case runs for --seconds, over --rounds rounds that
alternate the two stores, after a warm-up that lets the server's JIT compile its paths; the
figures are the medians over the rounds. CPU is the client process's (all threads) and the
server's (from /proc), per GB moved.

redis-py has no read into a caller's buffer: its GET returns a new bytes object, which is then
copied into the buffer, as an engine's connector must. Its PUT sends the buffer as it is.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import kvcache
import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import free_port, wait_for_port  # noqa: E402

SIZES = [256 << 10, 2 << 20, 32 << 20]
THREADS = [1, 4]
KEYS = 8
LOOKUP_KEYS = 128
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_kvcache(jar: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    p = subprocess.Popen(["java", "-Xmx512m", "-XX:MaxDirectMemorySize=3g",
                          f"-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", "-Dkvcache.cache.ram-bytes=2GiB",
                          "-Dkvcache.cache.disk-dir=", "-jar", jar],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, p, "kvcache-server")
    return p, port


def start_redis() -> tuple[subprocess.Popen[bytes], int]:
    server = shutil.which("redis-server")
    if server is None:
        print("installing redis-server with apt-get ...", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-q", "redis-server"], check=True,
                       stdout=subprocess.DEVNULL)
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    p = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--daemonize", "no"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, p, "redis-server")
    return p, port


class Store:
    """One store as the benchmark drives it: get into a buffer, put from one, look up 128 keys."""

    name: str
    pid: int

    def get_into(self, key: bytes, buf: bytearray) -> int: ...
    def put(self, key: bytes, buf: bytearray) -> None: ...
    def lookup(self, keys: list[bytes]) -> int: ...


class KvcacheStore(Store):
    name = "kvcache"

    def __init__(self, port: int, pid: int) -> None:
        self.client = kvcache.Client(f"127.0.0.1:{port}")
        self.pid = pid

    def get_into(self, key: bytes, buf: bytearray) -> int:
        n = self.client.get_into(key, buf)
        assert n == len(buf), n
        return n

    def put(self, key: bytes, buf: bytearray) -> None:
        assert self.client.put(key, buf) is kvcache.PutStatus.STORED

    def lookup(self, keys: list[bytes]) -> int:
        return self.client.lookup_prefix(keys)


class RedisStore(Store):
    name = "redis-py"

    def __init__(self, port: int, pid: int) -> None:
        self.client = redis.Redis(connection_pool=redis.ConnectionPool(
            host="127.0.0.1", port=port, max_connections=16))
        self.pid = pid

    def get_into(self, key: bytes, buf: bytearray) -> int:
        data = self.client.get(key)
        assert data is not None and len(data) == len(buf)
        memoryview(buf)[:len(data)] = data
        return len(data)

    def put(self, key: bytes, buf: bytearray) -> None:
        self.client.set(key, memoryview(buf))

    def lookup(self, keys: list[bytes]) -> int:
        return int(self.client.exists(*keys))


def throughput(store: Store, op: str, size: int, threads: int, seconds: float) -> dict[str, float]:
    keys = [b"%015d%c" % (size, 65 + i) for i in range(KEYS)]
    seed = bytearray(os.urandom(size))
    for k in keys:
        store.put(k, seed)
    stop = time.monotonic() + seconds
    done = [0] * threads

    def worker(t: int) -> None:
        buf = bytearray(size) if op == "get" else bytearray(seed)
        fn: Callable[[bytes, bytearray], Any] = store.get_into if op == "get" else store.put
        i = t
        while time.monotonic() < stop:
            fn(keys[i % KEYS], buf)
            done[t] += 1
            i += 1
    cpu0, server0, t0 = time.process_time(), cpu_seconds(store.pid), time.monotonic()
    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    gb = sum(done) * size / 1e9
    return {"gbps": gb / wall, "client_cpu_s_per_gb": (time.process_time() - cpu0) / gb,
            "server_cpu_s_per_gb": (cpu_seconds(store.pid) - server0) / gb}


def lookup_latency(store: Store, samples: int) -> dict[str, float]:
    keys = [b"lookup-%09d" % i for i in range(LOOKUP_KEYS)]
    for k in keys:
        store.put(k, bytearray(b"x" * 16))
    warm = time.monotonic() + 5  # the server compiles its lookup path (p99 2 ms cold, 0.6 ms warm)
    while time.monotonic() < warm:
        assert store.lookup(keys) == LOOKUP_KEYS
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        store.lookup(keys)
        times.append(time.perf_counter() - t0)
    times.sort()
    return {"p50_ms": times[len(times) // 2] * 1e3, "p99_ms": times[int(len(times) * 0.99)] * 1e3}


def measure(stores: list[Store], sizes: list[int], threads_list: list[int],
            a: argparse.Namespace) -> dict[tuple[str, str, int, int], list[dict[str, float]]]:
    """Each store's GETs and PUTs of each size from each count of threads, for ``a.seconds``,
    over ``a.rounds`` rounds that alternate the stores' order, after ``a.warmup`` seconds of
    warm-up per store."""
    for store in stores:
        print(f"warming up {store.name} for {a.warmup:.0f} s", file=sys.stderr)
        each = a.warmup / (len(sizes) * 2)
        for size in sizes:
            for op in ("put", "get"):
                throughput(store, op, size, 2, each)
    runs: dict[tuple[str, str, int, int], list[dict[str, float]]] = {}
    total = a.rounds * len(sizes) * len(threads_list) * 2 * len(stores)
    n = 0
    for r in range(a.rounds):
        for size in sizes:
            for threads in threads_list:
                for op in ("get", "put"):
                    order = stores if r % 2 == 0 else stores[::-1]
                    for store in order:
                        n += 1
                        result = throughput(store, op, size, threads, a.seconds)
                        runs.setdefault((store.name, op, size, threads), []).append(result)
                        print(f"[{n}/{total}] round {r + 1} {store.name:14} {op} "
                              f"{size >> 10:6} KiB x{threads}: {result['gbps']:.2f} GB/s",
                              file=sys.stderr)
    return runs


def medians(runs: dict[tuple[str, str, int, int], list[dict[str, float]]]) -> list[dict[str, Any]]:
    """A row per store, operation, size and threads: the medians over the rounds."""
    rows = []
    for (name, op, size, threads), results in sorted(runs.items()):
        rows.append({"store": name, "op": op, "size": size, "threads": threads,
                     "gbps": statistics.median(x["gbps"] for x in results),
                     "gbps_runs": [x["gbps"] for x in results],
                     "client_cpu_s_per_gb": statistics.median(x["client_cpu_s_per_gb"] for x in results),
                     "server_cpu_s_per_gb": statistics.median(x["server_cpu_s_per_gb"] for x in results)})
    return rows


def parse_rounds(ap: argparse.ArgumentParser) -> argparse.Namespace:
    """``ap``'s arguments with those of ``measure`` and ``--out``; a SIGTERM then exits, so that
    the servers the benchmark started are stopped too."""
    ap.add_argument("--out", required=True, help="where to write the JSON results")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=20.0, help="seconds of warm-up per store")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))
    return a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jar", required=True, help="the kvcache-server jar")
    a = parse_rounds(ap)

    kv_proc, kv_port = start_kvcache(a.jar)
    redis_proc, redis_port = start_redis()
    stores: list[Store] = [KvcacheStore(kv_port, kv_proc.pid), RedisStore(redis_port, redis_proc.pid)]
    try:
        runs = measure(stores, SIZES, THREADS, a)
        lookups = {s.name: lookup_latency(s, 3000) for s in stores}
    finally:
        for p in (kv_proc, redis_proc):
            p.terminate()
            p.wait()
    rows = medians(runs)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "platform": platform.platform(), "redis_py": redis.__version__,
               "hiredis": _hiredis_version(), "kvcache": kvcache.__version__,
               "date": time.strftime("%Y-%m-%d")}
    with open(a.out, "w") as f:
        json.dump({"machine": machine, "seconds": a.seconds, "rounds": a.rounds, "throughput": rows,
                   "lookup128": lookups}, f, indent=1)
    for row in rows:
        print(f"{row['store']:8} {row['op']} {row['size'] >> 10:6} KiB x{row['threads']}: "
              f"{row['gbps']:.2f} GB/s, client {row['client_cpu_s_per_gb']:.2f} s/GB, "
              f"server {row['server_cpu_s_per_gb']:.2f} s/GB")
    for name, l in lookups.items():
        print(f"{name:8} lookup of {LOOKUP_KEYS} keys: p50 {l['p50_ms']:.3f} ms, p99 {l['p99_ms']:.3f} ms")


def _hiredis_version() -> str:
    try:
        import hiredis
        return str(hiredis.__version__)
    except ImportError:
        return "not installed"


if __name__ == "__main__":
    main()
