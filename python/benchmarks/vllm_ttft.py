"""Time to first token of a real vLLM engine whose prompt's KV comes back from kvcache-server,
against computing it again (run by ``vllm_ttft.sh``).

For each server (RAM, and disk with a small RAM tier and the page cache dropped before loading)
and each prompt length: a random prompt is run once (prefill computed, its blocks stored in
kvcache-server), the engine's prefix cache and host tier are emptied, and the prompt is run
again: its whole blocks are looked up, loaded from the server into vLLM's host tier and copied
into the engine's KV cache, and only the rest is computed. The model is a random-weight Llama of
16 layers with 8 KV heads of 64 (32 KiB of bf16 KV per token); vLLM runs on the CPU.

The server ``s3`` has an object tier under a small RAM tier and a disk tier, over a bucket of
``rclone serve s3`` on loopback (its directory on /dev/shm). Once the prompt's blocks are all
uploaded, the server is stopped and a new one started on the same port with an empty RAM and an
empty disk, over the same bucket: the loaded run's KV can only come from the bucket, and the
server's per-tier hits (``kvcache_tier_hits_total``) during it show that it did.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from loopback import free_port, wait_for_port  # noqa: E402
ENGINES = os.path.join(HERE, "..", "tests", "engines")
sys.path.insert(0, ENGINES)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ENGINES, os.environ.get("PYTHONPATH")]))
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

BLOCK_TOKENS = 32
LAYERS, HIDDEN, HEADS, KV_HEADS = 16, 512, 8, 8
KV_BYTES_PER_TOKEN = 2 * LAYERS * KV_HEADS * (HIDDEN // HEADS) * 2
RCLONE = os.path.join(HERE, "..", "..", "kvcache-s3", "target", "s3-servers", "bin", "rclone")
S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY = "kv-bench", "bench-access", "bench-secret-key"
SERVER_TIERS = ("ram", "spill", "disk", "s3")
SHARED_MEMORY_DIR = f"/dev/shm/kvcache-vllm-bench-{os.getpid()}"
#: How the tier loads from each kind of server (``kvcache.vllm.KvcacheTier``'s options).
KIND_OPTIONS: dict[str, dict[str, Any]] = {"ram": {"shared_memory": False},
                                           "ram-shm": {"server_copies": False}}


#: Further -D options of every server started (--server-option).
SERVER_OPTIONS: list[str] = []


def start_server(jar: str, kind: str, data: str, port: Optional[int] = None,
                 s3_endpoint: str = "") -> tuple[subprocess.Popen[bytes], int]:
    port = port or free_port()
    os.makedirs(SHARED_MEMORY_DIR, exist_ok=True)
    settings = {"ram": ["-Dkvcache.cache.ram-bytes=4GiB", "-Dkvcache.cache.disk-dir="],
                # the server writes pinned blocks into vLLM's host tier (a file in /dev/shm)
                "ram-local": ["-Dkvcache.cache.ram-bytes=4GiB", "-Dkvcache.cache.disk-dir="],
                # RAM in shared memory: a client on the same host copies pinned blocks out of it
                "ram-shm": ["-Dkvcache.cache.ram-bytes=4GiB", "-Dkvcache.cache.disk-dir=",
                            f"-Dkvcache.cache.ram-shared-memory-dir={SHARED_MEMORY_DIR}"],
                "disk": ["-Dkvcache.cache.ram-bytes=64MiB", f"-Dkvcache.cache.disk-dir={data}",
                         "-Dkvcache.cache.disk-capacity=8GiB",
                         "-Dkvcache.cache.durability=write_through"],
                "s3": ["-Dkvcache.cache.ram-bytes=64MiB", f"-Dkvcache.cache.disk-dir={data}",
                       "-Dkvcache.cache.disk-capacity=8GiB",
                       "-Dkvcache.cache.durability=write_through",
                       f"-Dkvcache.cache.s3.endpoint={s3_endpoint}",
                       f"-Dkvcache.cache.s3.bucket={S3_BUCKET}",
                       "-Dkvcache.cache.s3.capacity=8GiB", "-Dkvcache.cache.s3.prefix=vllm-ttft/",
                       f"-Dkvcache.cache.s3.access-key-id={S3_ACCESS_KEY}",
                       f"-Dkvcache.cache.s3.secret-access-key={S3_SECRET_KEY}",
                       # HEADs of keys the index does not know: rclone's take longer than the
                       # default 50ms on two busy cores
                       "-Dkvcache.cache.s3.lookup-budget=1s"]}[kind]
    p = subprocess.Popen(["java", "-Xmx512m", "-XX:MaxDirectMemorySize=5g",
                          f"-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", *settings, *SERVER_OPTIONS, "-jar", jar],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, p, f"kvcache-server ({kind})")
    except BaseException:
        stop(p)
        raise
    return p, port


def stop(process: subprocess.Popen[bytes], wait: float = 60) -> None:
    """Stops a process this script started, by its pid: SIGTERM, then SIGKILL after ``wait``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def server_metric(port: int, name: str, labels: str = "") -> float:
    """The sum of a metric's samples, or of those whose labels start with ``labels``
    (``tier="s3"``)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/prometheus", timeout=5).read().decode()
    if labels:
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name + "{" + labels))
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + " ") or line.startswith(name + "{"))


def tier_hits(port: int) -> dict[str, float]:
    """The server's reads served by each tier (``kvcache_tier_hits_total``)."""
    return {t: server_metric(port, "kvcache_tier_hits_total", f'tier="{t}"') for t in SERVER_TIERS}


class ObjectTier:
    """The servers of kind ``s3``: ``rclone serve s3`` over a bucket in a directory on /dev/shm,
    and a kvcache-server over it, which :meth:`swap` replaces by a new one on the same port with
    an empty RAM and an empty disk directory once the blocks stored are all uploaded. Every
    process it starts is stopped by :meth:`close`."""

    def __init__(self, jar: str, rclone: str, work: str) -> None:
        self.jar, self.rclone, self.work = jar, rclone, work
        self.shm = tempfile.mkdtemp(prefix="kvcache-vllm-bench-s3-", dir="/dev/shm")
        self.rclone_process: Optional[subprocess.Popen[bytes]] = None
        self.server: Optional[subprocess.Popen[bytes]] = None
        self.port = 0
        self.servers_started = 0
        self.uploads_before = 0.0

    def start(self) -> int:
        """Starts rclone and the first server; returns the server's port."""
        data = os.path.join(self.shm, "data")
        os.makedirs(os.path.join(data, S3_BUCKET))  # rclone over a directory: a bucket per subdirectory
        config = os.path.join(self.shm, "rclone.conf")
        open(config, "w").close()  # an empty config: nothing from ~/.config/rclone
        s3_port = free_port()
        self.rclone_process = subprocess.Popen(
            [self.rclone, "serve", "s3", "--config", config, "--addr", f"127.0.0.1:{s3_port}",
             "--auth-key", f"{S3_ACCESS_KEY},{S3_SECRET_KEY}", data],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(s3_port, self.rclone_process, "rclone serve s3")
        self.endpoint = f"http://127.0.0.1:{s3_port}"
        self._start_server()
        return self.port

    def _start_server(self) -> None:
        disk = os.path.join(self.work, f"disk-{self.servers_started}")  # a new, empty directory
        self.servers_started += 1
        self.server, self.port = start_server(self.jar, "s3", disk, self.port or None,
                                              self.endpoint)

    def storing(self) -> None:
        """Called before the prompt's first run: the uploads counted from here are its blocks'."""
        self.uploads_before = server_metric(self.port, "kvcache_uploads_total", 'to="s3"')

    def swap(self, chunks: int) -> dict[str, Any]:
        """Waits until the prompt's ``chunks`` blocks are uploaded, then replaces the server by
        a new one with an empty RAM and disk over the same bucket, and waits until it has listed
        the bucket. Returns what it saw, for the run's record."""
        port, start = self.port, time.monotonic()
        while True:
            uploaded = server_metric(port, "kvcache_uploads_total", 'to="s3"') - self.uploads_before
            waiting = server_metric(port, "kvcache_uploads_waiting", 'to="s3"')
            lost = (server_metric(port, "kvcache_uploads_dropped_total")
                    + server_metric(port, "kvcache_uploads_failed_total"))
            if lost:
                sys.exit(f"{lost:.0f} uploads to the bucket were dropped or failed")
            if uploaded >= chunks and waiting == 0:
                break
            if time.monotonic() - start > 300:
                sys.exit(f"{uploaded:.0f} of the prompt's {chunks} blocks uploaded in 300 s")
            time.sleep(0.1)
        upload_wait = time.monotonic() - start
        assert self.server is not None
        stop(self.server)
        self._start_server()
        start = time.monotonic()
        while server_metric(self.port, "kvcache_s3_listings_total") < 1:  # its first listing
            if time.monotonic() - start > 120:
                sys.exit("the new server did not list the bucket in 120 s")
            time.sleep(0.1)
        return {"s3_uploaded": uploaded, "s3_upload_wait_s": upload_wait,
                "s3_listed_objects": server_metric(self.port, "kvcache_s3_last_listing_objects"),
                "s3_listing_errors": server_metric(self.port, "kvcache_s3_request_errors_total",
                                                   'op="LIST"')}

    def close(self) -> None:
        try:
            if self.server is not None:
                stop(self.server)
        finally:
            if self.rclone_process is not None:
                stop(self.rclone_process, 10)
            shutil.rmtree(self.shm, ignore_errors=True)


def cpu() -> dict[str, Any]:
    """The CPU's model and whether it has AVX-512 (bf16 prefill on the CPU is far slower without)."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not model:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {"cpu": model, "avx512": "avx512f" in flags, "avx512_bf16": "avx512_bf16" in flags}


def engine_metrics() -> dict[str, float]:
    """vLLM's offloading metrics, from the process's Prometheus registry (seconds as floats)."""
    from prometheus_client import REGISTRY
    wanted = {"vllm:kv_offload_tiering_lookup_async_delay_seconds_sum": "lookup_s",
              "vllm:kv_offload_tiering_lookup_async_delay_seconds_count": "lookups",
              "vllm:kv_offload_tiering_read_time_total": "transfer_s",
              "vllm:kv_offload_tiering_read_bytes_total": "transfer_bytes",
              "vllm:kv_offload_load_time_total": "copy_s",
              "vllm:kv_offload_tiering_chunk_hits_total": "chunk_hits"}
    out = {v: 0.0 for v in wanted.values()}
    for metric in REGISTRY.collect():
        for s in metric.samples:
            if s.name in wanted and s.labels.get("tier", "1:KvcacheTier") == "1:KvcacheTier":
                out[wanted[s.name]] += s.value
    return out


def drop_page_cache() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        return True
    except OSError:
        return False


def measure(llm: Any, port: int, tokens: int, seed: int, cold_disk: bool,
            objects: Optional[ObjectTier] = None) -> dict[str, Any]:
    """One prompt's computed and loaded runs; with ``objects``, the server is replaced by an
    empty one over the bucket between them."""
    from vllm import SamplingParams
    rng = random.Random(seed)
    prompt = {"prompt_token_ids": [rng.randrange(2, 4000) for _ in range(tokens)]}
    params = SamplingParams(max_tokens=1, temperature=0)
    chunks = tokens // BLOCK_TOKENS

    def ttft() -> tuple[float, int, list[int]]:
        start = time.monotonic()
        out = llm.generate([prompt], params, use_tqdm=False)[0]
        return time.monotonic() - start, out.num_cached_tokens, list(out.outputs[0].token_ids)

    if objects is not None:
        objects.storing()
    puts = server_metric(port, "kvcache_puts_total")
    computed, _, first = ttft()
    # vLLM stores a step's blocks in later steps: step the (in-process) engine until they are in
    deadline = time.monotonic() + 120
    while server_metric(port, "kvcache_puts_total") - puts < chunks:
        if time.monotonic() > deadline:
            sys.exit("the prompt's blocks did not reach the server")
        llm.llm_engine.step()
        time.sleep(0.01)
    # the reference for the loaded run: the same prefix reused from the engine's own cache (a
    # prefill of the prompt's last tokens over cached KV can round differently from a whole one)
    _, reused, reference = ttft()
    assert reused == chunks * BLOCK_TOKENS, reused
    assert llm.reset_prefix_cache(reset_connector=True)
    swapped = objects.swap(chunks) if objects is not None else {}
    dropped = drop_page_cache() if cold_disk else False
    before = engine_metrics()
    hits = server_metric(port, "kvcache_hits_total")
    tiers = tier_hits(port)
    s3_gets = server_metric(port, "kvcache_s3_requests_total", 'op="GET"')
    s3_heads = server_metric(port, "kvcache_s3_requests_total", 'op="HEAD"')
    loaded, cached, second = ttft()
    after = engine_metrics()
    delta = {k: after[k] - before[k] for k in after}
    tiers = {t: n - tiers[t] for t, n in tier_hits(port).items()}
    if second != reference:
        sys.exit(f"{tokens} tokens: the loaded run's first token {second} is not the one of the "
                 f"run that reused the engine's own cache {reference} (computed: {first})")
    # the new server's RAM and disk started empty: each chunk loaded was read from the bucket
    if objects is not None and (not delta["chunk_hits"] or tiers["s3"] < delta["chunk_hits"]
                                or tiers["disk"] or tiers["spill"]):
        sys.exit(f"{tokens} tokens: {delta['chunk_hits']:.0f} chunks loaded, but the server read "
                 f"{tiers} by tier")
    return {"tokens": tokens, "cached_tokens": cached, "ttft_computed_s": computed,
            "ttft_loaded_s": loaded, "ratio": loaded / computed, "saved_s": computed - loaded,
            "bytes_loaded": delta["transfer_bytes"], "server_hits": server_metric(port, "kvcache_hits_total") - hits,
            "lookup_s": delta["lookup_s"] / delta["lookups"] if delta["lookups"] else None,
            "transfer_s": delta["transfer_s"],
            "copy_s": delta["copy_s"], "chunk_hits": delta["chunk_hits"],
            "load_gbps": delta["transfer_bytes"] / delta["transfer_s"] / 1e9 if delta["transfer_s"] else None,
            "page_cache_dropped": dropped,
            # where the server read the loaded blocks from: its reads by tier during the loaded run
            "kv_from": {t: n for t, n in tiers.items() if n},
            **({"s3_gets": server_metric(port, "kvcache_s3_requests_total", 'op="GET"') - s3_gets,
                "s3_heads": server_metric(port, "kvcache_s3_requests_total", 'op="HEAD"') - s3_heads,
                **swapped} if objects is not None else {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", required=True)
    ap.add_argument("--tokens", type=int, nargs="+", default=[2000, 8000, 32000])
    ap.add_argument("--servers", nargs="+", default=["ram", "disk"],
                    choices=["ram", "ram-shm", "ram-local", "disk", "s3"],
                    help="ram: RAM only, read through the socket; ram-shm: RAM only in shared "
                    "memory, which the tier copies straight out of; ram-local: RAM only, the "
                    "server writes the blocks into vLLM's host tier; disk: RAM over disk, the page "
                    "cache dropped before each load; s3: a new server over a bucket (disk and s3 "
                    "load as ram-local does)")
    ap.add_argument("--switch-interval", type=float,
                    help="the tier's switch_interval (0: Python's own, 0.005 s)")
    ap.add_argument("--rclone", default=RCLONE,
                    help="the rclone binary that serves the bucket of --servers s3 (default: the "
                         "one the build installs into kvcache-s3/target/s3-servers)")
    ap.add_argument("--server-option", action="append", default=[],
                    help="a -D option of every server (kvcache.copy-threads=1), repeatable")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    SERVER_OPTIONS.extend(f"-D{o}" for o in args.server_option)
    if len(args.servers) > 1:  # one engine per process: each server kind in a process of its own
        runs: list[Any] = []
        for kind in args.servers:
            part = f"{args.out}.{kind}"
            extra = [] if args.switch_interval is None else ["--switch-interval",
                                                             str(args.switch_interval)]
            options = [x for o in args.server_option for x in ("--server-option", o)]
            subprocess.run([sys.executable, __file__, "--jar", args.jar, "--servers", kind,
                            "--rclone", args.rclone, *extra, *options,
                            "--out", part, "--tokens", *map(str, args.tokens)], check=True)
            with open(part) as f:
                merged = json.load(f)
            os.remove(part)
            runs += merged["runs"]
        merged["runs"] = runs
        with open(args.out, "w") as f:
            json.dump(merged, f, indent=1)
            f.write("\n")
        return
    longest = max(args.tokens)
    tier_options = {} if args.switch_interval is None else {"switch_interval": args.switch_interval}
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(max(1, -(-longest * KV_BYTES_PER_TOKEN * 2 // (1 << 30)))))

    from vllm import LLM
    from vllm.config import KVTransferConfig
    from vllm_cpu import make_model

    work = tempfile.mkdtemp(prefix="kvcache-vllm-bench-")
    results: dict[str, Any] = {
        "model": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS,
                  "dtype": "bfloat16", "kv_bytes_per_token": KV_BYTES_PER_TOKEN,
                  "block_tokens": BLOCK_TOKENS},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), **cpu()},
        "runs": []}
    try:
        model = make_model(os.path.join(work, "model"), layers=LAYERS, hidden=HIDDEN, heads=HEADS,
                           kv_heads=KV_HEADS)
        for kind in args.servers:
            objects = ObjectTier(args.jar, args.rclone, work) if kind == "s3" else None
            server: Optional[subprocess.Popen[bytes]] = None
            try:
                if objects is not None:
                    port = objects.start()
                else:
                    server, port = start_server(args.jar, kind, os.path.join(work, "data"))
                config = KVTransferConfig(
                    kv_connector="OffloadingConnector", kv_role="kv_both",
                    kv_connector_extra_config={
                        "spec_name": "HostCopyTieringSpec", "spec_module_path": "vllm_cpu",
                        "cpu_bytes_to_use": longest * KV_BYTES_PER_TOKEN * 3 // 2,
                        "secondary_tiers": [{"type": "KvcacheTier", "module_path": "kvcache.vllm",
                                             "servers": [f"127.0.0.1:{port}"],
                                             **tier_options, **KIND_OPTIONS.get(kind, {})}]})
                llm = LLM(model=model, dtype="bfloat16", max_model_len=longest + 64,
                          enforce_eager=True,
                          kv_transfer_config=config, enable_prefix_caching=True,
                          block_size=BLOCK_TOKENS, gpu_memory_utilization=0.3, max_num_seqs=1,
                          seed=0, disable_log_stats=False)
                for i, tokens in enumerate(args.tokens):
                    r = measure(llm, port, tokens, seed=1000 * i + len(kind),
                                cold_disk=kind == "disk", objects=objects)
                    r["server"] = kind
                    results["runs"].append(r)
                    print(json.dumps(r), flush=True)
                llm.llm_engine.engine_core.shutdown()
                del llm
            finally:
                if server is not None:
                    server.terminate()
                    server.wait(30)
                if objects is not None:
                    objects.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(SHARED_MEMORY_DIR, ignore_errors=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
