"""The MLPerf Storage KV-cache benchmark (``kv_cache_benchmark`` of github.com/mlcommons/storage)
against kvcache-server, beside the harness's own file backend, in one session (run by
``mlperf_kv.sh``).

The harness stores each entry (one request's KV, a float16 array of up to several hundred MiB)
through a storage backend whose ``write`` and ``read`` return their time split into host and
device parts. It has no plug-in point for backends: ``run`` imports the harness from ``--harness``
and replaces its file backend class (``kv_cache.cache.NVMeBackend``, the storage tier) with
:class:`KvcacheBackend` before calling the harness's own ``main``, which is not changed.

:class:`KvcacheBackend` cuts an entry into blocks of ``--block-mib`` (64 MiB: the server's
largest block by default), stored and read with the kvcache Python client. Device time is the
transfer (the PUTs of the entry's blocks; on reads, ``get_many_into``, which copies the blocks
in RAM straight out of the server's RAM, kept in shared memory under ``--shm``, and reads those on
disk with batch GETs); host time is the conversion (the array's bytes cut into blocks; a buffer
for the entry and the array over it). The harness's file backend, for comparison: host is
``np.save`` into the page cache and device its ``fsync`` on writes; on reads, device is
``np.load`` after dropping the file's pages, host the rest.

    python mlperf_kv.py --harness DIR all --out results.json     # the four runs, in turn
    python mlperf_kv.py --harness DIR run --backend kvcache --servers 127.0.0.1:7070 -- ARGS
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from loopback import free_port, wait_for_port  # noqa: E402

#: The workload of every run: the harness's tiny-1b model, 8 users for 60 s, no GPU or CPU tier
#: (every entry goes to the storage backend), 3 GiB of storage, no simulated token generation.
WORKLOAD = ["--model", "tiny-1b", "--num-users", "8", "--duration", "60", "--gpu-mem-gb", "0",
            "--cpu-mem-gb", "0", "--storage-capacity-gb", "3", "--generation-mode", "none",
            "--seed", "42"]


class KvcacheBackend:
    """A storage backend of the harness over kvcache-server; thread-safe (the harness's user
    threads call it at once). Entries are kept as blocks under keys derived from the entry's key
    and the block's index; their shapes are kept here, as the file backend keeps them in its
    ``.npy`` headers."""

    servers: list[str] = []
    block_bytes = 64 << 20

    def __init__(self, base_path: Any = None) -> None:
        import kvcache
        from kv_cache.backends import StorageBackend
        self._timing = StorageBackend.IOTiming
        self.client = kvcache.Client(self.servers, max_workers=8, timeout=120)
        self.entries: dict[str, tuple[tuple[int, ...], Any, int]] = {}
        self.lock = threading.Lock()

    def _keys(self, key: str, nbytes: int) -> list[bytes]:
        parts = max(1, -(-nbytes // self.block_bytes))
        return [hashlib.blake2b(f"{key}/{i}".encode(), digest_size=16).digest()
                for i in range(parts)]

    def write(self, key: str, data: Any) -> Any:
        import numpy as np
        start = time.perf_counter()
        flat = memoryview(np.ascontiguousarray(data)).cast("B")
        keys = self._keys(key, flat.nbytes)
        blocks = [flat[i * self.block_bytes:(i + 1) * self.block_bytes] for i in range(len(keys))]
        converted = time.perf_counter()
        statuses = self.client.put_many(zip(keys, blocks))
        sent = time.perf_counter()
        if any(s.value != "stored" for s in statuses):
            raise IOError(f"kvcache-server did not store {key}: {[s.value for s in statuses]}")
        with self.lock:
            self.entries[key] = (data.shape, data.dtype, flat.nbytes)
        return self._timing(total=sent - start, device=sent - converted, host=converted - start)

    def read(self, key: str) -> tuple[Any, Any]:
        import numpy as np
        start = time.perf_counter()
        with self.lock:
            shape, dtype, nbytes = self.entries[key]  # KeyError, as the file backend's
        out = np.empty(nbytes, dtype=np.uint8)
        keys = self._keys(key, nbytes)
        views = [out[i * self.block_bytes:(i + 1) * self.block_bytes] for i in range(len(keys))]
        allocated = time.perf_counter()
        # from shared memory, the blocks in RAM (copied straight out of it), the rest with
        # batch GETs
        lengths = self.client.get_many_into(keys, views)
        received = time.perf_counter()
        if any(n != len(v) for n, v in zip(lengths, views)):
            raise KeyError(f"{key}: kvcache-server no longer holds all of its blocks")
        data = out.view(dtype).reshape(shape)
        done = time.perf_counter()
        return data, self._timing(total=done - start, device=received - allocated,
                                  host=(allocated - start) + (done - received))

    def delete(self, key: str) -> None:
        with self.lock:
            entry = self.entries.pop(key, None)
        if entry is not None:
            for k in self._keys(key, entry[2]):
                try:
                    self.client.delete(k)
                except Exception:  # a server that is down keeps nothing anyway
                    pass

    def clear(self) -> None:
        with self.lock:
            keys = list(self.entries)
        for key in keys:
            self.delete(key)


def run(args: argparse.Namespace) -> None:
    """Runs the harness's main in this process with ``args.harness_args``."""
    sys.path.insert(0, args.harness)
    import kv_cache.cache
    from kv_cache import cli
    if args.backend == "kvcache":
        KvcacheBackend.servers = args.servers.split(",")
        KvcacheBackend.block_bytes = args.block_mib << 20
        kv_cache.cache.NVMeBackend = KvcacheBackend
    sys.argv = ["kv-cache.py", *args.harness_args]
    cli.main()


def start_server(jar: str, port: int, ram: str, data: str, shm: str,
                 log: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(["java", "-Xmx1g", "-XX:MaxDirectMemorySize=6g",
                          f"-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", f"-Dkvcache.cache.ram-bytes={ram}",
                          f"-Dkvcache.cache.ram-shared-memory-dir={shm}",
                          f"-Dkvcache.cache.disk-dir={data}", "-Dkvcache.cache.disk-capacity=8GiB",
                          "-jar", jar], stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    wait_for_port(port, p, "kvcache-server")
    return p


#: The figures each run reports, from the harness's JSON: latency quantiles of the storage tier's
#: reads and writes (total, device, host), its bandwidth, and how many entries it read and wrote.
def summary(path: str) -> dict[str, Any]:
    with open(path) as f:
        stats = json.load(f)["summary"]["cache_stats"]
    out = {}
    for op in ("read", "write"):
        for part in ("", "_device", "_host"):
            for q in ("p50", "p95", "p99"):
                name = f"storage_{op}{part}_{q}_ms"
                out[name] = stats.get(name)
        out[f"storage_{op}_bandwidth_gbps"] = stats.get(f"tier_storage_{op}_bandwidth_gbps")
        out[f"storage_{op}s"] = stats.get(f"{op}_iops")  # entries, in the whole run
    return out


def all_runs(args: argparse.Namespace) -> None:
    """The four runs in turn: the file backend on the work disk and on tmpfs, and kvcache-server
    with a RAM tier smaller than the working set (over its disk tier) and one that holds it all."""
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    results = {}
    runs = [("file, disk", "file", os.path.join(work, "files"), None),
            ("file, tmpfs", "file", os.path.join(os.path.abspath(args.tmpfs), "files"), None),
            ("kvcache-server, 256 MiB RAM over disk", "kvcache", None, "256MiB"),
            ("kvcache-server, 4 GiB RAM over disk", "kvcache", None, "4GiB")]
    for name, backend, cache_dir, ram in runs:
        out = os.path.join(work, f"run-{len(results)}.json")
        command = [sys.executable, os.path.abspath(__file__), "--harness", args.harness, "run",
                   "--backend", backend]
        server = None
        data = os.path.join(work, "kvcache-data")
        cache_dir = cache_dir or os.path.join(work, "unused")
        for d in (cache_dir, data):
            shutil.rmtree(d, ignore_errors=True)
        shm = os.path.join(args.shm, f"kvcache-mlperf-{os.getpid()}")
        if backend == "kvcache":
            port = free_port()
            os.makedirs(shm, exist_ok=True)
            server = start_server(args.jar, port, ram, data, shm,
                                  os.path.join(work, f"server-{len(results)}.log"))
            command += ["--servers", f"127.0.0.1:{port}"]
        print(f"== {name}", flush=True)
        try:
            subprocess.run([*command, "--", *WORKLOAD, "--cache-dir", cache_dir, "--output", out],
                           check=True)
        finally:
            if server is not None:
                server.terminate()
                server.wait(120)
            shutil.rmtree(cache_dir, ignore_errors=True)
            shutil.rmtree(shm, ignore_errors=True)
        results[name] = summary(out)
    with open(args.out, "w") as f:
        json.dump({"workload": WORKLOAD, "harness": args.harness_commit, "runs": results}, f,
                  indent=1)
    print(json.dumps(results, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harness", required=True,
                        help="the kv_cache_benchmark directory of a clone of mlcommons/storage")
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="one run of the harness, in this process")
    one.add_argument("--backend", choices=["file", "kvcache"], required=True)
    one.add_argument("--servers", default="127.0.0.1:7070")
    one.add_argument("--block-mib", type=int, default=64)
    one.add_argument("harness_args", nargs=argparse.REMAINDER)
    every = sub.add_parser("all", help="the four runs of the comparison, in turn")
    every.add_argument("--jar", required=True)
    every.add_argument("--work", required=True, help="a directory on the disk to measure")
    every.add_argument("--tmpfs", required=True,
                       help="a directory on a tmpfs (not under /dev or /tmp: the harness refuses"
                            " those)")
    every.add_argument("--shm", default="/dev/shm",
                       help="a tmpfs where the server keeps its RAM, shared with the backend")
    every.add_argument("--out", required=True)
    every.add_argument("--harness-commit", default="", help="recorded with the results")
    args = parser.parse_args()
    if args.command == "run":
        args.harness_args = [a for a in args.harness_args if a != "--"]
        run(args)
    else:
        all_runs(args)


if __name__ == "__main__":
    main()
