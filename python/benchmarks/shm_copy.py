"""Where a chunk's time goes when the client copies pinned blocks out of a server's shared memory
into an engine's host buffer (1 MiB chunks, as vllm_ttft.py loads them): the memory copy alone and
the CRC32C check alone (the floor), the client's pinned copy (copy, check, and its bookkeeping),
the same with another thread keeping the GIL busy as vLLM's engine loop does, and the same into
a buffer whose pages this process has not mapped yet, as the tier's first copies into vLLM's host
tier are (a file in /dev/shm mapped anew); and the server writing the pinned blocks into the host
buffer's file itself (``Pin.copy_into``), all chunks in one request or one request per chunk,
with and without the busy thread.

    python/target/venv/bin/python python/benchmarks/shm_copy.py \\
        --jar kvcache-server/target/kvcache-server.jar --out docs/results/engines/python-shm-copy.json
"""
from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import sys
import threading
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_ttft import SERVER_OPTIONS, start_server  # noqa: E402

import crc32c  # noqa: E402

import kvcache  # noqa: E402

CHUNKS = 250
SIZE = 1 << 20
SWITCH_INTERVAL = 0.0002  # what kvcache.vllm.KvcacheTier sets

_memmove = ctypes.PyDLL(None).memmove
_memmove.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def ms_per_chunk(run: Callable[[], float], rounds: int) -> float:
    """The best of ``rounds`` runs of ``run`` (which returns its seconds), per chunk, in ms."""
    return min(run() for _ in range(rounds)) / CHUNKS * 1e3


class Busy:
    """Another thread that keeps the GIL busy, as an engine's scheduler loop does."""

    def __enter__(self) -> "Busy":
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin)
        self._thread.start()
        return self

    def _spin(self) -> None:
        while not self._stop.is_set():
            pass

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class HostBuffer:
    """A buffer in a /dev/shm file, as vLLM's host tier is, whose pages exist (written through
    another mapping) but are not mapped by the one the copies write into, unless ``touched``."""

    made = 0

    def __init__(self, touched: bool) -> None:
        HostBuffer.made += 1
        self.path = f"/dev/shm/kvcache-bench-host-{os.getpid()}-{HostBuffer.made}"
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        os.ftruncate(self.fd, CHUNKS * SIZE)
        writer = mmap.mmap(self.fd, CHUNKS * SIZE)
        writer[:] = bytes(CHUNKS * SIZE)  # the pages exist, as the engine's worker wrote them
        writer.close()
        self.region = mmap.mmap(self.fd, CHUNKS * SIZE)
        if touched:
            self.region[:] = bytes(CHUNKS * SIZE)
        self.view = memoryview(self.region)
        self.slots = [self.view[i * SIZE:(i + 1) * SIZE] for i in range(CHUNKS)]

    def close(self) -> None:
        for s in self.slots:
            s.release()
        self.view.release()
        self.region.close()
        os.close(self.fd)
        os.unlink(self.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--server-option", action="append", default=[],
                    help="a -D option of the server (kvcache.copy-threads=1), repeatable")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    SERVER_OPTIONS.extend(f"-D{o}" for o in args.server_option)
    server, port = start_server(args.jar, "ram-shm", "")
    try:
        client = kvcache.Client(f"127.0.0.1:{port}", shared_memory=True)
        ns = kvcache.Namespace("shm-copy", "bytes", "bench")
        keys = [kvcache.BlockKey.of_raw(ns, f"chunk-{i:012d}") for i in range(CHUNKS)]
        data = os.urandom(SIZE)
        client.put_many((k, data) for k in keys)
        sys.setswitchinterval(SWITCH_INTERVAL)

        def pinned(slots: list[memoryview]) -> float:
            with client.pin_prefix(keys, 30_000) as pin:
                assert pin.in_shared_memory == CHUNKS, pin.in_shared_memory
                start = time.perf_counter()
                for i in range(CHUNKS):
                    assert pin.get_into(i, slots[i]) == SIZE
                return time.perf_counter() - start

        def server_copies(slots: list[memoryview], per_request: int) -> float:
            with client.pin_prefix(keys, 30_000) as pin:
                start = time.perf_counter()
                for at in range(0, CHUNKS, per_request):
                    idx = list(range(at, min(CHUNKS, at + per_request)))
                    got = pin.copy_into(idx, [slots[i] for i in idx])
                    assert got == [SIZE] * len(idx), got
                return time.perf_counter() - start

        src = mmap.mmap(-1, CHUNKS * SIZE)
        src[:] = data * CHUNKS
        src_address = ctypes.addressof((ctypes.c_char * (CHUNKS * SIZE)).from_buffer(src))
        mapped = HostBuffer(touched=True)
        dst = (ctypes.c_char * (CHUNKS * SIZE)).from_buffer(mapped.region)
        dst_address = ctypes.addressof(dst)

        def copies() -> float:
            start = time.perf_counter()
            for i in range(CHUNKS):
                _memmove(dst_address + i * SIZE, src_address + i * SIZE, SIZE)
            return time.perf_counter() - start

        def checks() -> float:
            start = time.perf_counter()
            for s in mapped.slots:
                crc32c.crc32c(s, 0, 0)
            return time.perf_counter() - start

        pinned(mapped.slots)  # the client maps the server's file, and the pages of both
        row: dict[str, float] = {
            "memmove_ms": ms_per_chunk(copies, args.rounds),
            "crc32c_ms": ms_per_chunk(checks, args.rounds),
            "pinned_copy_ms": ms_per_chunk(lambda: pinned(mapped.slots), args.rounds)}
        row["server_copy_ms"] = ms_per_chunk(lambda: server_copies(mapped.slots, CHUNKS),
                                             args.rounds)
        row["server_copy_one_request_per_chunk_ms"] = ms_per_chunk(
            lambda: server_copies(mapped.slots, 1), args.rounds)
        with Busy():
            row["pinned_copy_busy_gil_ms"] = ms_per_chunk(lambda: pinned(mapped.slots),
                                                          args.rounds)
            row["server_copy_busy_gil_ms"] = ms_per_chunk(
                lambda: server_copies(mapped.slots, CHUNKS), args.rounds)
        firsts = []
        for _ in range(args.rounds):  # a new host buffer for each first copy
            fresh = HostBuffer(touched=False)
            firsts.append(pinned(fresh.slots) / CHUNKS * 1e3)
            fresh.close()
        row["pinned_copy_into_unmapped_pages_ms"] = min(firsts)
        firsts = []
        for _ in range(args.rounds):  # the server maps each new file anew
            fresh = HostBuffer(touched=True)
            firsts.append(server_copies(fresh.slots, CHUNKS) / CHUNKS * 1e3)
            fresh.close()
        row["server_copy_into_a_new_file_ms"] = min(firsts)
        del dst
        mapped.close()
        for k, v in row.items():
            print(f"{k:34s} {v:.3f} ms per 1 MiB chunk ({SIZE / v / 1e6:.2f} GB/s)")
        with open(args.out, "w") as f:
            json.dump({"chunks": CHUNKS, "chunk_bytes": SIZE, "rounds": args.rounds,
                       "best_of_rounds": True, "switch_interval_s": SWITCH_INTERVAL,
                       "cpus": os.cpu_count(), "ms_per_chunk": row}, f, indent=1)
            f.write("\n")
        client.close()
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
