"""A RAM hit read from Python, beside reading the same bytes from a file on tmpfs.

    python python/benchmarks/ram_hit.py --jar kvcache-server/target/kvcache-server.jar \
        --out docs/results/python-client/python-ram-hit.json

Starts kvcache-server on loopback with its RAM in shared memory (a directory under /dev/shm),
puts one block of each size, and reads it, in interleaved rounds, five ways into the same
preallocated buffer, beside one round trip:

* ``tmpfs file``: ``readinto`` from a file on /dev/shm holding the same bytes (the baseline);
* ``get_into, socket``: ``Client.get_into`` with ``shared_memory=False``, the bytes through the
  loopback socket;
* ``get_into, shared memory``: ``Client.get_into``, the block pinned, copied straight out of the
  server's RAM file, and let go;
* ``pin, socket``: ``pin_prefix`` + ``Pin.get_into`` + release, with ``shared_memory=False``;
* ``pin, shared memory``: the same, copied straight out of the server's RAM file;
* ``head, one round trip``: ``Client.head``, which moves no block bytes: the floor of a read
  through the server;

and, for an engine's load of a prefix, 32 blocks of 2 MiB: 32 files read in turn,
``get_many_into`` through the socket and from shared memory, and one pin of the 32 read from shared
memory (``Pin.read_into``), timed per block. Each way is first run ``--warmup`` times untimed, so
that the server's code is compiled, as in a server that has been serving. Prints and writes the
median and 90th percentile of each, in milliseconds.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Callable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import shm_server  # noqa: E402

import kvcache  # noqa: E402

SIZES = [2 << 20, 64 << 20]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jar", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=200, help="untimed reads of each way first")
    parser.add_argument("--shm", default="/dev/shm", help="a tmpfs directory")
    args = parser.parse_args()
    with shm_server(args.jar, args.shm, "kvcache-ram-hit") as (address, work):
        results = run(address, work, args.rounds, args.warmup)
    with open(args.out, "w") as f:
        json.dump({"rounds": args.rounds, "warmup": args.warmup, "results": results}, f, indent=1)
    print(f"{'block':>8} {'read':<28} {'median ms':>10} {'p90 ms':>8} {'/ tmpfs':>8}")
    for size, reads in results.items():
        base = next(iter(reads.values()))["median_ms"]
        for name, r in reads.items():
            print(f"{size:>8} {name:<28} {r['median_ms']:>10.2f} {r['p90_ms']:>8.2f} "
                  f"{r['median_ms'] / base:>8.2f}")


def run(address: str, work: str, rounds: int,
        warmup: int) -> dict[str, dict[str, dict[str, float]]]:
    results: dict[str, dict[str, dict[str, float]]] = {}
    with kvcache.Client(address) as shared, kvcache.Client(address, shared_memory=False) as plain:
        for size in SIZES:
            block = os.urandom(size)
            key = kvcache.BlockKey(os.urandom(16))
            if shared.put(key, block) != kvcache.PutStatus.STORED:
                sys.exit("the block was not stored")
            path = os.path.join(work, f"file-{size}")
            with open(path, "wb") as f:
                f.write(block)
            out = bytearray(size)

            def file_read() -> None:
                with open(path, "rb", buffering=0) as f:
                    f.readinto(out)

            def get_into(client: kvcache.Client) -> Callable[[], None]:
                return lambda: client.get_into(key, out) and None

            def pinned(client: kvcache.Client) -> Callable[[], None]:
                def read() -> None:
                    with client.pin_prefix([key]) as pin:
                        pin.get_into(0, out)
                return read
            reads: dict[str, Callable[[], None]] = {
                "tmpfs file": file_read, "get_into, socket": get_into(plain),
                "get_into, shared memory": get_into(shared),
                "pin, socket": pinned(plain), "pin, shared memory": pinned(shared)}
            round_trip = {"head, one round trip": lambda: shared.head(key) and None}
            results[str(size)] = summary(time_reads(reads, [out], [block], rounds, warmup,
                                                    round_trip))
        results["32 x 2097152"] = summary(prefix(shared, plain, work, rounds, warmup))
    return results


def time_reads(reads: dict[str, Callable[[], None]], outs: list[bytearray],
               blocks: list[bytes], rounds: int, warmup: int,
               unchecked: Optional[dict[str, Callable[[], None]]] = None) -> dict[str, list[float]]:
    """Checks that each way of reading fills ``outs`` with ``blocks``, runs each (and each of
    ``unchecked``, requests that read no bytes) ``warmup`` times, then times them in interleaved
    rounds; milliseconds per block."""
    everything = {**reads, **(unchecked or {})}
    for name, read in everything.items():
        if name in reads:
            for out in outs:
                out[:] = bytes(len(out))
            read()
            if outs != [bytearray(b) for b in blocks]:
                sys.exit(f"{name} read other bytes")
        for _ in range(warmup):
            read()
    times: dict[str, list[float]] = {name: [] for name in everything}
    for _ in range(rounds):
        for name, read in everything.items():
            start = time.perf_counter()
            read()
            times[name].append((time.perf_counter() - start) * 1000 / len(outs))
    return times


def summary(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {name: {"median_ms": statistics.median(t), "p90_ms": sorted(t)[int(len(t) * 0.9)]}
            for name, t in times.items()}


def prefix(shared: kvcache.Client, plain: kvcache.Client, work: str, rounds: int,
           warmup: int) -> dict[str, list[float]]:
    """A prefix of 32 blocks of 2 MiB read four ways; milliseconds per block."""
    size, n = 2 << 20, 32
    blocks = [os.urandom(size) for _ in range(n)]
    keys = [kvcache.BlockKey(os.urandom(16)) for _ in range(n)]
    if shared.put_many(list(zip(keys, blocks))) != [kvcache.PutStatus.STORED] * n:
        sys.exit("the prefix was not stored")
    paths = [os.path.join(work, f"prefix-{i}") for i in range(n)]
    for path, block in zip(paths, blocks):
        with open(path, "wb") as f:
            f.write(block)
    outs = [bytearray(size) for _ in range(n)]

    def files() -> None:
        for path, out in zip(paths, outs):
            with open(path, "rb", buffering=0) as f:
                f.readinto(out)

    def batch(client: kvcache.Client) -> Callable[[], None]:
        return lambda: client.get_many_into(keys, outs) and None

    def pinned() -> None:
        with shared.pin_prefix(keys) as pin:
            pin.read_into(outs)
    reads = {"tmpfs file": files, "get_many_into, socket": batch(plain),
             "get_many_into, shared memory": batch(shared), "pin, shared memory": pinned}
    return time_reads(reads, outs, blocks, rounds, warmup)


if __name__ == "__main__":
    main()
