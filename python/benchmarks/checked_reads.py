"""What checking every block's CRC32C costs the Python client: each read and put with checksums
on, beside the same with ``checksums=False``, in the same run.

    python python/benchmarks/checked_reads.py --jar kvcache-server/target/kvcache-server.jar \
        --out docs/results/checksums/python-checked-reads.json

Starts kvcache-server on loopback with its RAM in shared memory (a directory under /dev/shm) and
times, in interleaved rounds, each way checked and unchecked:

* ``prefix load, shared memory``: an engine's load of a prefix of 32 blocks of 2 MiB with
  ``get_many_into`` from a server on this host, the pinned lookup included: each block copied out
  of the server's RAM file and (checked) its CRC32C computed slice by slice as it is copied;
* ``prefix load, socket``: the same through batch GETs (``shared_memory=False``);
* ``get_into, socket``: one block of 2 MiB through a GET;
* ``put``: one block of 2 MiB (checked: the client computes its CRC32C and sends it).

Each way is first run ``--warmup`` times untimed. Prints and writes the median and 90th percentile
of each, in milliseconds, and the ratio of the checked median to the unchecked one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import shm_server  # noqa: E402
from ram_hit import summary  # noqa: E402

import kvcache  # noqa: E402

BLOCK = 2 << 20
PREFIX = 32


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jar", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=100, help="untimed runs of each way first")
    parser.add_argument("--shm", default="/dev/shm", help="a tmpfs directory")
    args = parser.parse_args()
    with shm_server(args.jar, args.shm, "kvcache-checked") as (address, _):
        results = run(address, args.rounds, args.warmup)
    with open(args.out, "w") as f:
        json.dump({"rounds": args.rounds, "warmup": args.warmup, "results": results}, f, indent=1)
    print(f"{'way':<28} {'checked ms':>11} {'unchecked ms':>13} {'ratio':>7}")
    for way, r in results.items():
        print(f"{way:<28} {r['checked']['median_ms']:>11.3f} {r['unchecked']['median_ms']:>13.3f} "
              f"{r['checked']['median_ms'] / r['unchecked']['median_ms']:>7.3f}")


def run(address: str, rounds: int, warmup: int) -> dict[str, dict[str, dict[str, float]]]:
    blocks = [os.urandom(BLOCK) for _ in range(PREFIX)]
    keys = [kvcache.BlockKey(os.urandom(16)) for _ in range(PREFIX)]
    outs = [bytearray(BLOCK) for _ in range(PREFIX)]
    put_key = kvcache.BlockKey(os.urandom(16))
    clients = {(checked, shared): kvcache.Client(address, checksums=checked, shared_memory=shared)
               for checked in (True, False) for shared in (True, False)}
    try:
        if clients[True, True].put_many(list(zip(keys, blocks))) != [kvcache.PutStatus.STORED] * PREFIX:
            sys.exit("the prefix was not stored")
        ways: dict[tuple[str, str], Callable[[], None]] = {}
        for checked in (True, False):
            arm = "checked" if checked else "unchecked"
            shm, sock = clients[checked, True], clients[checked, False]
            ways["prefix load, shared memory", arm] = (
                lambda c=shm: c.get_many_into(keys, outs) and None)
            ways["prefix load, socket", arm] = lambda c=sock: c.get_many_into(keys, outs) and None
            ways["get_into, socket", arm] = lambda c=sock: c.get_into(keys[0], outs[0]) and None
            ways["put", arm] = lambda c=sock: c.put(put_key, blocks[1]) and None
        for (way, arm), run_once in ways.items():
            if way != "put":
                for out in outs:
                    out[:] = bytes(BLOCK)
                run_once()
                filled = outs if way.startswith("prefix") else outs[:1]
                if filled != [bytearray(b) for b in blocks[:len(filled)]]:
                    sys.exit(f"{way}, {arm} read other bytes")
            for _ in range(warmup):
                run_once()
        times: dict[tuple[str, str], list[float]] = {w: [] for w in ways}
        for _ in range(rounds):
            for w, run_once in ways.items():
                start = time.perf_counter()
                run_once()
                times[w].append((time.perf_counter() - start) * 1000)
        if clients[True, True].damaged_blocks or clients[True, False].damaged_blocks:
            sys.exit("a block arrived damaged")
    finally:
        for c in clients.values():
            c.close()
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, stats in summary({f"{w}|{a}": t for (w, a), t in times.items()}).items():
        way, _, arm = name.partition("|")
        results.setdefault(way, {})[arm] = stats
    return results


if __name__ == "__main__":
    main()
