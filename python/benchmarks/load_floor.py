"""Loads of 2 MiB blocks over loopback TCP against the floor of plain sockets moving the same bytes,
with and without a thread of the process keeping the interpreter's lock busy (as an engine's
scheduler loop does while its requests wait for their blocks), at Python's default switch
interval.

* ``floor``: a sender process writes the bytes on C connections with ``sendall``; this process
  receives them with ``recv_into`` straight into the blocks' buffers, one thread per connection,
  unchecked: the least any Python load does.
* ``native``: ``Client.get_many_into`` from kvcache-server with the compiled module (the load split
  across connections, received and checked without the lock).
* ``python``: the same with ``KVCACHE_PURE_PYTHON=1`` (each run of the client is its own process,
  so that the two paths never share a process).

Each run of a path is a new process with new connections, as an engine that has just started:
its first load is reported apart from the warm ones after it. The buffers are touched before the
first load, as an engine's pinned host buffers are when it allocates them. Rounds alternate between the paths; the
client's CPU seconds per GiB are the process's user and system time over the load (with the
busy thread's own), the sender's those of kvcache-server or of the floor's sender process.

    python python/benchmarks/load_floor.py --jar kvcache-server/target/kvcache-server.jar \\
        --out docs/results/python-client/load-floor.json
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import free_port  # noqa: E402
from shm_copy import Busy  # noqa: E402
from vllm_ttft import start_server  # noqa: E402

BLOCK = 2 << 20
BLOCKS = 256  # 512 MiB, about the KV of 4,000 tokens of an 8B model in bf16
CONNECTIONS = int(os.environ.get("LOAD_FLOOR_CONNECTIONS", "4"))


def fresh_buffers() -> list[memoryview]:
    """The engine's host buffers: allocated and touched (pinned, as engines allocate them)."""
    region = mmap.mmap(-1, BLOCKS * BLOCK)
    region.write(bytes(BLOCKS * BLOCK))
    view = memoryview(region)
    return [view[i * BLOCK:(i + 1) * BLOCK] for i in range(BLOCKS)]


def process_cpu(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(load: Callable[[], None]) -> tuple[float, float]:
    """(seconds, CPU seconds of this process) of one load."""
    cpu, start = os.times(), time.perf_counter()
    load()
    end, cpu_end = time.perf_counter(), os.times()
    return end - start, (cpu_end.user - cpu.user) + (cpu_end.system - cpu.system)


def with_busy_thread(busy: bool, fn: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    if not busy:
        return fn()
    with Busy():
        return fn()


# -- the floor: a sender process and recv_into here ---------------------------------------------

def sender(port: int) -> None:
    """Serves BLOCKS * BLOCK / CONNECTIONS bytes on each connection it accepts, again per byte it
    is sent (one per load)."""
    data = os.urandom(BLOCKS * BLOCK // CONNECTIONS)
    listener = socket.create_server(("127.0.0.1", port))

    def serve(conn: socket.socket) -> None:
        with conn:
            while conn.recv(1):
                conn.sendall(data)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def floor_load(port: int, buffers: list[memoryview]) -> None:
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(CONNECTIONS)]
    per = BLOCKS // CONNECTIONS

    def receive(c: int) -> None:
        sock = conns[c]
        sock.sendall(b"g")
        for view in buffers[c * per:(c + 1) * per]:
            got = 0
            while got < len(view):
                n = sock.recv_into(view[got:])
                if not n:
                    raise ConnectionError("the sender closed")
                got += n
    threads = [threading.Thread(target=receive, args=(c,)) for c in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in conns:
        s.close()


# -- one run of a path, in its own process ------------------------------------------------------

def run_path(path: str, port: int, rounds: int, busy: bool) -> list[dict[str, float]]:
    """Rounds of one path in this process: the first into fresh buffers, the rest warm."""
    if path == "floor":
        def load(buffers: list[memoryview]) -> None:
            floor_load(port, buffers)
    else:
        import kvcache
        assert (kvcache.native_transfers() is None) == (path == "native"), \
            kvcache.native_transfers()
        client = kvcache.Client(f"127.0.0.1:{port}", shared_memory=False,
                                max_workers=CONNECTIONS)
        ns = kvcache.Namespace("load-floor", "bytes", "bench")
        keys = [kvcache.BlockKey.of_raw(ns, f"load-floor-block-{i:06d}") for i in range(BLOCKS)]

        def load(buffers: list[memoryview]) -> None:
            got = client.get_many_into(keys, buffers)
            if got != [BLOCK] * BLOCKS:
                raise RuntimeError(f"{got.count(None)} blocks missing")
    buffers = fresh_buffers()
    out = []
    for r in range(rounds):
        seconds, cpu = with_busy_thread(busy, lambda: timed(lambda: load(buffers)))
        out.append({"round": r, "seconds": seconds, "cpu_seconds": cpu})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the three paths")
    ap.add_argument("--loads", type=int, default=4, help="loads per run (the first one fresh)")
    ap.add_argument("--out")
    ap.add_argument("--run", nargs=3, metavar=("PATH", "PORT", "BUSY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        path, port, busy = args.run
        print(json.dumps(run_path(path, int(port), args.loads, busy == "busy")))
        return
    if not args.jar or not args.out:
        ap.error("--jar and --out are required")
    server, port = start_server(args.jar, "ram", "")
    floor_port = free_port()
    floor = subprocess.Popen([sys.executable, "-c",
                              f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
                              f"import load_floor; load_floor.sender({floor_port})"])
    try:
        import kvcache
        with kvcache.Client(f"127.0.0.1:{port}", shared_memory=False) as c:
            ns = kvcache.Namespace("load-floor", "bytes", "bench")
            data = os.urandom(BLOCK)
            keys = [kvcache.BlockKey.of_raw(ns, f"load-floor-block-{i:06d}") for i in range(BLOCKS)]
            c.put_many((k, data) for k in keys)
        rows = []
        for rnd in range(args.rounds):
            for busy in (False, True):
                for path in ("floor", "native", "python"):
                    env = dict(os.environ)
                    env.pop("KVCACHE_PURE_PYTHON", None)
                    if path == "python":
                        env["KVCACHE_PURE_PYTHON"] = "1"
                    target = floor_port if path == "floor" else port
                    sending = floor.pid if path == "floor" else server.pid
                    sender_cpu = process_cpu(sending)
                    got = subprocess.run([sys.executable, __file__, "--loads", str(args.loads),
                                          "--run", path, str(target),
                                          "busy" if busy else "idle"],
                                         env=env, check=True, capture_output=True, text=True)
                    loads = json.loads(got.stdout.strip().splitlines()[-1])
                    sender_cpu = (process_cpu(sending) - sender_cpu) / len(loads)
                    for load in loads:
                        row = {"path": path, "busy_thread": busy, "alternation": rnd,
                               "first": load["round"] == 0, **load,
                               "gb_s": BLOCKS * BLOCK / load["seconds"] / 1e9,
                               "cpu_s_per_gib": load["cpu_seconds"] / (BLOCKS * BLOCK / 2**30),
                               "sender_cpu_s_per_gib": sender_cpu / (BLOCKS * BLOCK / 2**30)}
                        rows.append(row)
                        print(json.dumps(row), flush=True)
        summary = []
        for busy in (False, True):
            for first in (True, False):
                floor_rate = statistics.median(r["gb_s"] for r in rows if r["path"] == "floor"
                                               and r["busy_thread"] == busy and r["first"] == first)
                for path in ("floor", "native", "python"):
                    sel = [r for r in rows if r["path"] == path and r["busy_thread"] == busy
                           and r["first"] == first]
                    rate = statistics.median(r["gb_s"] for r in sel)
                    summary.append({"path": path, "busy_thread": busy, "first": first,
                                    "gb_s": rate, "vs_floor": rate / floor_rate,
                                    "cpu_s_per_gib": statistics.median(r["cpu_s_per_gib"]
                                                                       for r in sel),
                                    "sender_cpu_s_per_gib": statistics.median(
                                        r["sender_cpu_s_per_gib"] for r in sel)})
                    print(json.dumps(summary[-1]))
        with open(args.out, "w") as f:
            json.dump({"block_bytes": BLOCK, "blocks": BLOCKS, "connections": CONNECTIONS,
                       "switch_interval_s": sys.getswitchinterval(), "summary": summary,
                       "rows": rows}, f, indent=1)
            f.write("\n")
    finally:
        floor.terminate()
        floor.wait(10)
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
