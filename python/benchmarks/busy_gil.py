"""Reads of 1 MiB blocks with another thread of the process keeping the GIL busy, as an engine's
scheduler loop does while a request waits for its blocks: one block at a time from a pin, and by
batch GETs, at several GIL switch intervals, against the same reads with no busy thread.

    python python/benchmarks/busy_gil.py --jar kvcache-server/target/kvcache-server.jar \\
        --out docs/results/python-client/python-busy-gil.json
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
import threading
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_ttft import start_server  # noqa: E402

import kvcache  # noqa: E402

BLOCKS = 250
SIZE = 1 << 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    server, port = start_server(args.jar, "ram", "")
    try:
        client = kvcache.Client(f"127.0.0.1:{port}")
        ns = kvcache.Namespace("busy-gil", "bytes", "bench")
        keys = [kvcache.BlockKey.of_raw(ns, f"block-{i:012d}") for i in range(BLOCKS)]
        data = os.urandom(SIZE)
        client.put_many((k, data) for k in keys)
        region = mmap.mmap(-1, BLOCKS * SIZE)
        view = memoryview(region)
        slots = [view[i * SIZE:(i + 1) * SIZE] for i in range(BLOCKS)]

        def pinned() -> None:
            with client.pin_prefix(keys, 30_000) as pin:
                for i in range(pin.present):
                    pin.get_into(i, slots[i])

        def batch() -> None:
            client.get_many_into(keys, slots)

        def rate(read: Callable[[], None]) -> float:
            best = 0.0
            for _ in range(args.rounds):
                start = time.monotonic()
                read()
                best = max(best, BLOCKS * SIZE / (time.monotonic() - start) / 1e6)
            return best

        rows = [{"busy_thread": False, "switch_interval_s": sys.getswitchinterval(),
                 "one_at_a_time_mb_s": rate(pinned), "batch_mb_s": rate(batch)}]
        for interval in (0.005, 0.001, 0.0002):
            sys.setswitchinterval(interval)
            stop = threading.Event()

            def spin() -> None:
                while not stop.is_set():
                    pass
            busy = threading.Thread(target=spin)
            busy.start()
            try:
                rows.append({"busy_thread": True, "switch_interval_s": interval,
                             "one_at_a_time_mb_s": rate(pinned), "batch_mb_s": rate(batch)})
            finally:
                stop.set()
                busy.join()
        for row in rows:
            print(json.dumps(row))
        with open(args.out, "w") as f:
            json.dump({"blocks": BLOCKS, "block_bytes": SIZE, "rounds": args.rounds,
                       "best_of_rounds": True, "rows": rows}, f, indent=1)
            f.write("\n")
        client.close()
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
