#!/usr/bin/env python3
"""Sustained PUTs through kvcache-server over its disk tier, against the floor of a PUT in the same
run: the same bytes, from the same client, received by a plain program that writes them to files
(``PutFloorServer`` in kvcache-bench) and forces them once a second, as the disk tier's default
sync policy does.

    python/benchmarks/put_path.sh            # builds what is missing, runs this

or, in a venv with the kvcache package:

    python put_path.py --server-jar kvcache-server/target/kvcache-server.jar \\
        --bench-jar kvcache-bench/target/benchmarks.jar --dir target/put-path \\
        --out docs/results/puts-under-pressure/put-path.json

For each RAM size and block size, each round starts each system fresh on an empty directory of the
work disk (``--dir``), fills it with RAM's size and 1 GiB more (unmeasured: RAM fills), goes on
a GiB at a time until the JIT compiler has settled (under 5% of the server's CPU over a GiB, at
most 16 GiB more; both reported), then measures ``--measure`` bytes of PUTs under new keys from
``--threads`` threads: the RAM tier is full, so every byte put goes to disk at the pace the disk
tier takes it. The systems alternate within a round. A system whose name ends in ``-h2``
(``kvcache-direct-h2``, ``floor-direct-h2``) is driven by the Java client over HTTP/2 (``PutLoad``
in kvcache-bench, its threads sharing one client), the others by the Python client over HTTP/1.1
(a client per thread); each kvcache system is compared with the floor driven by the same client. Reported per run: GB/s, the server's CPU
seconds per GiB (user and system, all its threads, from /proc) and the JIT's part of them, the
client's, the bytes the server process wrote per byte put (``write_bytes`` of /proc/<pid>/io: what it sent towards the device, compaction and
journal included) and the put latency's p50, p95 and p99. The summary is the median over the
rounds with the least and greatest, and kvcache over the floor.
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
from typing import Any

import kvcache

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import free_port, wait_for_port  # noqa: E402

GIB = 1 << 30
TICKS = os.sysconf("SC_CLK_TCK")


def parse_size(text: str) -> int:
    units = {"KIB": 10, "MIB": 20, "GIB": 30}
    for unit, shift in units.items():
        if text.upper().endswith(unit):
            return int(text[:-len(unit)]) << shift
    return int(text)


def size_label(n: int) -> str:
    return f"{n >> 30} GiB" if n >= GIB else f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process and all its threads, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def jit_cpu_seconds(pid: int) -> float:
    """CPU seconds of a JVM's JIT compiler threads (``C1 CompilerThre``, ``C2 CompilerThre``)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except FileNotFoundError:
            continue  # the thread ended meanwhile
        if "CompilerThre" in head:
            fields = tail.split()
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def write_bytes(pid: int) -> int:
    """Bytes a process caused to be sent towards the storage device, from /proc/<pid>/io."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    raise RuntimeError(f"no write_bytes in /proc/{pid}/io")


def start(system: str, a: argparse.Namespace, ram: int, size: int, work: str) -> subprocess.Popen[bytes]:
    """Starts kvcache-server or the floor program on a new port; returns it with ``.port`` set."""
    port = free_port()
    jar, options = a.server_jar, a.server_option
    if system in a.variants:  # kvcache-server with its disk tier's direct writes, as a variant
        jar, more = a.variants[system]
        options = options + more
    if system.startswith("kvcache"):
        direct = system.removesuffix("-h2") != "kvcache"
        cmd = ["java", "-Xmx1g", f"-XX:MaxDirectMemorySize={(ram >> 20) + 2048}m",
               f"-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", f"-Dkvcache.cache.ram-bytes={ram}",
               f"-Dkvcache.cache.disk-dir={work}", f"-Dkvcache.cache.disk-capacity={a.capacity}",
               "-Dkvcache.cache.disk-min-free=0B", f"-Dkvcache.cache.max-block-bytes={max(size, 1 << 20)}",
               f"-Dkvcache.cache.disk-direct-writes={'true' if direct else 'false'}",
               *options, "-jar", jar]
    else:
        cmd = ["java", "-Xmx256m", f"-XX:MaxDirectMemorySize={4 * size + (64 << 20)}",
               "-cp", a.bench_jar, "dev.kvcache.bench.remote.PutFloorServer", "--dir", work,
               "--port", str(port), "--capacity", str(a.capacity), "--max-block-bytes", str(size),
               *(["--direct"] if system.removesuffix("-h2") == "floor-direct" else [])]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.path.join(a.dir, f"{system}.log"), "ab"))
    wait_for_port(port, p, system)
    p.port = port  # type: ignore[attr-defined]
    return p


class PythonPuts:
    """PUTs from the Python client (HTTP/1.1), each thread with its own client and block."""

    name = "python"
    pid = None  # the client's CPU is this process's

    def __init__(self, port: int, threads: int, size: int):
        self.port, self.threads, self.size = port, threads, size

    def put(self, total: int, first_key: int, latencies: list[float] | None) -> int:
        """Puts ``total`` bytes of blocks under new keys from ``first_key`` on; returns the next
        unused key number."""
        count = max(self.threads, total // self.size)
        per_thread = count // self.threads
        failures: list[str] = []

        def worker(t: int) -> None:
            client = kvcache.Client(f"127.0.0.1:{self.port}")
            block = bytearray(os.urandom(self.size))
            mine: list[float] = []
            try:
                for i in range(per_thread):
                    n = first_key + t * per_thread + i
                    block[:8] = n.to_bytes(8, "little")
                    key = b"pp" + n.to_bytes(14, "big")  # 16 bytes, as block keys are
                    t0 = time.perf_counter()
                    status = client.put(key, block)
                    mine.append(time.perf_counter() - t0)
                    if status is not kvcache.PutStatus.STORED:
                        failures.append(f"put {n}: {status}")
                        return
            except Exception as e:  # noqa: BLE001 - reported by the caller
                failures.append(f"thread {t}: {e!r}")
            finally:
                client.close()
                if latencies is not None:
                    latencies.extend(mine)

        ts = [threading.Thread(target=worker, args=(t,)) for t in range(self.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if failures:
            raise RuntimeError(failures[0])
        return first_key + per_thread * self.threads

    def close(self) -> None:
        pass


class JavaPuts:
    """PUTs from the Java client (``RemoteTier``, HTTP/2): kvcache-bench's ``PutLoad``, a process
    of its own whose threads share one client, driven a command at a time."""

    name = "java"

    def __init__(self, bench_jar: str, port: int, threads: int, size: int):
        self.size = size
        self.process = subprocess.Popen(
            ["java", "-Xmx512m", f"-XX:MaxDirectMemorySize={threads * size + (256 << 20)}",
             "-cp", bench_jar, "dev.kvcache.bench.remote.PutLoad", "--port", str(port),
             "--threads", str(threads), "--block-bytes", str(size)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = self.process.pid
        self.threads = threads

    def put(self, total: int, first_key: int, latencies: list[float] | None) -> int:
        count = max(self.threads, total // self.size)
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"put {first_key} {count} {1 if latencies is not None else 0}\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline() or '{"error": "PutLoad ended"}')
        if "error" in answer:
            raise RuntimeError(answer["error"])
        if latencies is not None:
            latencies.extend(answer["latencies_s"])
        return int(answer["next"])

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(60)


def driver(system: str, a: argparse.Namespace, port: int, size: int) -> PythonPuts | JavaPuts:
    """The Java client (HTTP/2) for a system named ``...-h2``, else the Python client (HTTP/1.1)."""
    if system.endswith("-h2"):
        return JavaPuts(a.bench_jar, port, a.threads, size)
    return PythonPuts(port, a.threads, size)


def warm_up(pid: int, puts: PythonPuts | JavaPuts, a: argparse.Namespace, size: int,
            first_key: int) -> tuple[int, float]:
    """Puts 1 GiB at a time until the JIT compiler threads took under ``--jit-settled`` of the
    server's CPU over the last GiB, or ``--warm-up-max`` bytes are put: a long-running server has
    compiled its hot paths, and the measured CPU should not include compiling them. Returns the
    bytes put and the JIT's share of the last GiB."""
    key, share = first_key, 1.0
    while (key - first_key) * size < parse_size(a.warm_up_max):
        cpu0, jit0 = cpu_seconds(pid), jit_cpu_seconds(pid)
        key = puts.put(GIB, key, None)
        share = (jit_cpu_seconds(pid) - jit0) / max(cpu_seconds(pid) - cpu0, 1e-9)
        if share < a.jit_settled:
            break
    return (key - first_key) * size, share


def one_run(system: str, a: argparse.Namespace, ram: int, size: int) -> dict[str, Any]:
    work = os.path.join(a.dir, system)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.sync()  # no writeback left from the run before
    p = start(system, a, ram, size, work)
    puts = driver(system, a, p.port, size)
    client_cpu = (lambda: cpu_seconds(puts.pid)) if puts.pid else time.process_time
    try:
        next_key = puts.put(ram + GIB, 0, None)
        warmed, jit_share = warm_up(p.pid, puts, a, size, next_key)
        next_key += warmed // size
        latencies: list[float] = []
        cpu0, jit0, io0 = cpu_seconds(p.pid), jit_cpu_seconds(p.pid), write_bytes(p.pid)
        client0, t0 = client_cpu(), time.monotonic()
        after = puts.put(a.measure, next_key, latencies)
        wall = time.monotonic() - t0
        put = (after - next_key) * size
        gib = put / GIB
        latencies.sort()
        pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e3  # noqa: E731
        return {"system": system, "ram_bytes": ram, "block_bytes": size, "threads": a.threads,
                "warm_up_bytes": ram + GIB + warmed, "warm_up_last_jit_share": jit_share,
                "bytes_put": put, "seconds": wall, "gbps": put / 1e9 / wall,
                "server_cpu_s_per_gib": (cpu_seconds(p.pid) - cpu0) / gib,
                "server_jit_cpu_s_per_gib": (jit_cpu_seconds(p.pid) - jit0) / gib,
                "client": puts.name, "client_cpu_s_per_gib": (client_cpu() - client0) / gib,
                "server_write_bytes_per_byte": (write_bytes(p.pid) - io0) / put,
                "p50_ms": pick(0.50), "p95_ms": pick(0.95), "p99_ms": pick(0.99)}
    finally:
        puts.close()
        p.terminate()
        p.wait(60)
        shutil.rmtree(work, ignore_errors=True)


def summary(runs: list[dict[str, Any]], systems: list[str]) -> list[str]:
    """Markdown rows: per RAM and block size, each system's medians (least-greatest) and the
    ratios of kvcache to each floor."""
    out = ["| RAM | block | system | GB/s | server CPU s/GiB | of which JIT | device bytes / byte | p50 ms | p95 ms |",
           "|---|---|---|---|---|---|---|---|---|"]
    cases = sorted({(r["ram_bytes"], r["block_bytes"]) for r in runs})

    def cell(values: list[float], digits: int = 2) -> str:
        return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"

    def of(ram: int, size: int, system: str) -> list[dict[str, Any]]:
        return [r for r in runs if (r["ram_bytes"], r["block_bytes"], r["system"]) == (ram, size, system)]

    for ram, size in cases:
        for system in systems:
            rs = of(ram, size, system)
            if rs:
                out.append(f"| {size_label(ram)} | {size_label(size)} | {system} | "
                           f"{cell([r['gbps'] for r in rs])} | {cell([r['server_cpu_s_per_gib'] for r in rs])} | "
                           f"{cell([r.get('server_jit_cpu_s_per_gib', float('nan')) for r in rs])} | "
                           f"{cell([r['server_write_bytes_per_byte'] for r in rs])} | "
                           f"{cell([r['p50_ms'] for r in rs], 1)} | {cell([r['p95_ms'] for r in rs], 1)} |")
        for server in (s for s in systems if s.startswith("kvcache")):
            for floor in (s for s in systems if not s.startswith("kvcache")
                          and s.endswith("-h2") == server.endswith("-h2")):  # the same client
                kv, fl = of(ram, size, server), of(ram, size, floor)
                if kv and fl:  # ratios within a round: its runs are minutes apart at most
                    gb = [k["gbps"] / f["gbps"] for k, f in zip(kv, fl)]
                    cpu = [k["server_cpu_s_per_gib"] / f["server_cpu_s_per_gib"] for k, f in zip(kv, fl)]
                    p95 = [k["p95_ms"] / f["p95_ms"] for k, f in zip(kv, fl)]
                    out.append(f"| {size_label(ram)} | {size_label(size)} | {server} / {floor} | "
                               f"**{cell(gb)}** | **{cell(cpu)}** | | | | **{cell(p95)}** |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server-jar", required=True)
    ap.add_argument("--bench-jar", required=True, help="kvcache-bench's jar, for the floor program")
    ap.add_argument("--dir", required=True, help="a directory on the disk to measure")
    ap.add_argument("--out", required=True, help="where to write the JSON results")
    ap.add_argument("--ram", default="256MiB,4GiB", help="the server's RAM sizes")
    ap.add_argument("--sizes", default="2MiB,64MiB", help="block sizes")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--measure", default="4GiB", help="bytes put per measured run")
    ap.add_argument("--capacity", default=str(8 * GIB), help="bytes of disk each system keeps")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm-up-max", default="16GiB",
                    help="most bytes put after the fill to let the JIT settle before measuring")
    ap.add_argument("--jit-settled", type=float, default=0.05,
                    help="the JIT's share of the server's CPU over a GiB under which it has settled")
    ap.add_argument("--systems", default="kvcache-direct,floor-direct",
                    help="kvcache-direct (the server's default: its disk tier's direct writes on), "
                    "kvcache (direct writes off), floor-direct (O_DIRECT) and floor (buffered "
                    "writes), in order; a name ending in -h2 (kvcache-direct-h2, floor-direct-h2) "
                    "is driven by the Java client over HTTP/2 (PutLoad), the others by the Python "
                    "client over HTTP/1.1")
    ap.add_argument("--server-option", action="append", default=[],
                    help="a -D option more for kvcache-server (repeatable)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=JAR[,OPTION...]",
                    help="one more system: kvcache-server as kvcache-direct, from JAR (empty: "
                    "--server-jar) with these -D options more, for an A/B in the same run; NAME "
                    "starts with kvcache- and goes in --systems (repeatable)")
    a = ap.parse_args()
    a.variants = {}
    for v in a.variant:
        name, _, spec = v.partition("=")
        jar, *more = spec.split(",")
        if not name.startswith("kvcache-"):
            ap.error(f"variant {name}: its name must start with kvcache-")
        a.variants[name] = (jar or a.server_jar, more)
    a.measure, a.capacity = parse_size(a.measure), parse_size(a.capacity)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))  # so the servers are stopped too
    os.makedirs(a.dir, exist_ok=True)
    systems = a.systems.split(",")
    rams = [parse_size(x) for x in a.ram.split(",")]
    sizes = [parse_size(x) for x in a.sizes.split(",")]
    runs: list[dict[str, Any]] = []
    total = a.rounds * len(rams) * len(sizes) * len(systems)
    for r in range(a.rounds):
        for ram in rams:
            for size in sizes:
                for system in systems:
                    print(f"[{len(runs) + 1}/{total}] round {r + 1}: {system}, RAM {size_label(ram)}, "
                          f"blocks of {size_label(size)}", file=sys.stderr, flush=True)
                    run = one_run(system, a, ram, size)
                    run["round"] = r + 1
                    runs.append(run)
                    print(f"    {run['gbps']:.3f} GB/s, server {run['server_cpu_s_per_gib']:.2f} CPU-s/GiB (JIT {run['server_jit_cpu_s_per_gib']:.2f}), "
                          f"p95 {run['p95_ms']:.1f} ms", file=sys.stderr, flush=True)
    doc = {"machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
           "settings": {k: v for k, v in vars(a).items() if k not in ("out",)}, "runs": runs}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print("\n".join(summary(runs, systems)))


if __name__ == "__main__":
    main()
