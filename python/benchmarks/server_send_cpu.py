"""The CPU a warm kvcache-server spends per GiB it sends: a RAM-only server holding 256 blocks of
2 MiB, loaded by the Python client (batch GETs, the compiled module where installed) for
``--warm-up`` seconds, then measured over ``--seconds``: GB/s, and the server's and the client's
CPU seconds per GiB. With ``--strace``, the server's system calls over the measured window are
counted (``strace -c -f``; strace slows the server somewhat).

    python python/benchmarks/server_send_cpu.py --jar kvcache-server/target/kvcache-server.jar
    python python/benchmarks/server_send_cpu.py --jar ... --strace /tmp/server-syscalls.txt
"""
from __future__ import annotations

import argparse
import mmap
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load_floor import BLOCK, BLOCKS, process_cpu  # noqa: E402
from vllm_ttft import start_server, stop  # noqa: E402

import kvcache  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", required=True)
    ap.add_argument("--warm-up", type=float, default=20.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--strace", help="count the server's system calls into this file")
    args = ap.parse_args()
    server, port = start_server(args.jar, "ram", "")
    try:
        client = kvcache.Client(f"127.0.0.1:{port}", shared_memory=False)
        ns = kvcache.Namespace("server-send-cpu", "bytes", "bench")
        keys = [kvcache.BlockKey.of_raw(ns, f"server-send-cpu-block-{i:06d}")
                for i in range(BLOCKS)]
        client.put_many((k, os.urandom(BLOCK)) for k in keys)
        region = mmap.mmap(-1, BLOCKS * BLOCK)
        region.write(bytes(BLOCKS * BLOCK))
        view = memoryview(region)
        buffers = [view[i * BLOCK:(i + 1) * BLOCK] for i in range(BLOCKS)]

        def loads(seconds: float) -> tuple[int, float]:
            start, n = time.monotonic(), 0
            while time.monotonic() - start < seconds:
                if client.get_many_into(keys, buffers) != [BLOCK] * BLOCKS:
                    raise RuntimeError("a block was missing")
                n += 1
            return n, time.monotonic() - start

        loads(args.warm_up)
        tracer = None
        if args.strace:
            tracer = subprocess.Popen(["strace", "-c", "-f", "-w", "-o", args.strace,
                                       "-p", str(server.pid)], stderr=subprocess.DEVNULL)
            time.sleep(1)
        server_cpu, mine = process_cpu(server.pid), os.times()
        n, seconds = loads(args.seconds)
        server_cpu = process_cpu(server.pid) - server_cpu
        after = os.times()
        if tracer is not None:
            tracer.terminate()
            tracer.wait(30)
        gib = n * BLOCKS * BLOCK / 2**30
        client_cpu = (after.user - mine.user) + (after.system - mine.system)
        print(f"{n * BLOCKS * BLOCK / seconds / 1e9:.2f} GB/s; server {server_cpu / gib:.3f} "
              f"CPU s/GiB sent, client {client_cpu / gib:.3f} (module: "
              f"{kvcache.native_transfers() or 'in use'})")
        client.close()
    finally:
        stop(server)


if __name__ == "__main__":
    main()
