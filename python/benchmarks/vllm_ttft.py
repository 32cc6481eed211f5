"""Time to first token of a real vLLM engine whose prompt's KV comes back from kvcache-server,
against computing it again (run by ``vllm_ttft.sh``).

For each server (RAM, and disk with a small RAM tier and the page cache dropped before loading)
and each prompt length: a random prompt is run once (prefill computed, its blocks stored in
kvcache-server), the engine's prefix cache and host tier are emptied, and the prompt is run
again: its whole blocks are looked up, loaded from the server into vLLM's host tier and copied
into the engine's KV cache, and only the rest is computed. The model is a random-weight Llama of
16 layers with 8 KV heads of 64 (32 KiB of bf16 KV per token); vLLM runs on the CPU.
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
from typing import Any

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


def start_server(jar: str, kind: str, data: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    settings = {"ram": ["-Dkvcache.cache.ram-bytes=4GiB", "-Dkvcache.cache.disk-dir="],
                "disk": ["-Dkvcache.cache.ram-bytes=64MiB", f"-Dkvcache.cache.disk-dir={data}",
                         "-Dkvcache.cache.disk-capacity=8GiB",
                         "-Dkvcache.cache.durability=write_through"]}[kind]
    p = subprocess.Popen(["java", "-Xmx512m", "-XX:MaxDirectMemorySize=5g",
                          f"-Dmicronaut.server.port={port}", *settings, "-jar", jar],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, p, f"kvcache-server ({kind})")
    return p, port


def server_metric(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/prometheus", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + " ") or line.startswith(name + "{"))


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


def measure(llm: Any, port: int, tokens: int, seed: int, cold_disk: bool) -> dict[str, Any]:
    from vllm import SamplingParams
    rng = random.Random(seed)
    prompt = {"prompt_token_ids": [rng.randrange(2, 4000) for _ in range(tokens)]}
    params = SamplingParams(max_tokens=1, temperature=0)
    chunks = tokens // BLOCK_TOKENS

    def ttft() -> tuple[float, int, list[int]]:
        start = time.monotonic()
        out = llm.generate([prompt], params, use_tqdm=False)[0]
        return time.monotonic() - start, out.num_cached_tokens, list(out.outputs[0].token_ids)

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
    dropped = drop_page_cache() if cold_disk else False
    before = engine_metrics()
    hits = server_metric(port, "kvcache_hits_total")
    loaded, cached, second = ttft()
    after = engine_metrics()
    delta = {k: after[k] - before[k] for k in after}
    if second != reference:
        sys.exit(f"{tokens} tokens: the loaded run's first token {second} is not the one of the "
                 f"run that reused the engine's own cache {reference} (computed: {first})")
    return {"tokens": tokens, "cached_tokens": cached, "ttft_computed_s": computed,
            "ttft_loaded_s": loaded, "ratio": loaded / computed, "saved_s": computed - loaded,
            "bytes_loaded": delta["transfer_bytes"], "server_hits": server_metric(port, "kvcache_hits_total") - hits,
            "lookup_s": delta["lookup_s"] / delta["lookups"] if delta["lookups"] else None,
            "transfer_s": delta["transfer_s"],
            "copy_s": delta["copy_s"], "chunk_hits": delta["chunk_hits"],
            "load_gbps": delta["transfer_bytes"] / delta["transfer_s"] / 1e9 if delta["transfer_s"] else None,
            "page_cache_dropped": dropped}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", required=True)
    ap.add_argument("--tokens", type=int, nargs="+", default=[2000, 8000, 32000])
    ap.add_argument("--servers", nargs="+", default=["ram", "disk"], choices=["ram", "disk"])
    ap.add_argument("--switch-interval", type=float,
                    help="the tier's switch_interval (0: Python's own, 0.005 s)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if len(args.servers) > 1:  # one engine per process: each server kind in a process of its own
        runs: list[Any] = []
        for kind in args.servers:
            part = f"{args.out}.{kind}"
            subprocess.run([sys.executable, __file__, "--jar", args.jar, "--servers", kind,
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
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": []}
    try:
        model = make_model(os.path.join(work, "model"), layers=LAYERS, hidden=HIDDEN, heads=HEADS,
                           kv_heads=KV_HEADS)
        for kind in args.servers:
            server, port = start_server(args.jar, kind, os.path.join(work, "data"))
            try:
                config = KVTransferConfig(
                    kv_connector="OffloadingConnector", kv_role="kv_both",
                    kv_connector_extra_config={
                        "spec_name": "HostCopyTieringSpec", "spec_module_path": "vllm_cpu",
                        "cpu_bytes_to_use": longest * KV_BYTES_PER_TOKEN * 3 // 2,
                        "secondary_tiers": [{"type": "KvcacheTier", "module_path": "kvcache.vllm",
                                             "servers": [f"127.0.0.1:{port}"],
                                             **tier_options}]})
                llm = LLM(model=model, dtype="bfloat16", max_model_len=longest + 64,
                          enforce_eager=True,
                          kv_transfer_config=config, enable_prefix_caching=True,
                          block_size=BLOCK_TOKENS, gpu_memory_utilization=0.3, max_num_seqs=1,
                          seed=0, disable_log_stats=False)
                for i, tokens in enumerate(args.tokens):
                    r = measure(llm, port, tokens, seed=1000 * i + len(kind), cold_disk=kind == "disk")
                    r["server"] = kind
                    results["runs"].append(r)
                    print(json.dumps(r), flush=True)
                llm.llm_engine.engine_core.shutdown()
                del llm
            finally:
                server.terminate()
                server.wait(30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
