"""Engines and standard benchmarks (docs/benchmarks/mlperf.md and engines.md, results in mlperf/,
engines/ and python-client/): the MLPerf Storage KV-cache benchmark's read and write latency
quantiles and bandwidth (mlperf-kv.png), a real vLLM engine's time to first token with its prompt's
KV loaded from kvcache-server or computed (vllm-ttft.png), and reads beside a thread that keeps the
GIL busy (table only).
"""
import json
import os

import matplotlib.pyplot as plt

from .common import read_json, size_label, bar_panel


def mlperf_tables(results_dir, out, img):
    """The MLPerf Storage KV-cache benchmark (mlperf_kv.py's JSON): storage read and write latency
    quantiles (total, device, host) and bandwidth of each run."""
    data = read_json(results_dir, "mlperf/mlperf-kv.json")
    if data is None:
        return
    runs = data["runs"]
    out.append("\n### MLPerf Storage KV-cache benchmark\n")
    for op in ("read", "write"):
        out.append(f"\n{op}s, ms (P50 / P95 / P99), GiB/s, and entries in the run\n")
        out.append("| run | total | device | host | bandwidth | entries |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for name, r in runs.items():
            cells = [" / ".join(f"{r[f'storage_{op}{part}_{q}_ms']:.0f}" if r[f'storage_{op}{part}_{q}_ms'] >= 10
                                else f"{r[f'storage_{op}{part}_{q}_ms']:.1f}" for q in ("p50", "p95", "p99"))
                     for part in ("", "_device", "_host")]
            out.append(f"| {name} | " + " | ".join(cells)
                       + f" | {r[f'storage_{op}_bandwidth_gbps']:.2f} | {r.get(f'storage_{op}s', '')} |")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), squeeze=False)
    names = list(runs)
    for ax, op in zip(axes[0], ("read", "write")):
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            ax.bar([q + i * width for q in range(3)],
                   [runs[name][f"storage_{op}_{q}_ms"] for q in ("p50", "p95", "p99")],
                   width=width, label=name)
        ax.set_xticks([q + 0.4 - width / 2 for q in range(3)], ["P50", "P95", "P99"])
        bar_panel(ax, "ms per entry (total)", f"storage {op}s, tiny-1b, 8 users, 60 s")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "mlperf-kv.png"), dpi=110)
    plt.close(fig)



def vllm_ttft_tables(results_dir, out, img):
    """A real vLLM engine's time to first token with its prompt's KV loaded from kvcache-server,
    against computing it (python/benchmarks/vllm_ttft.py: vllm-ttft.json), and reads beside a
    thread that keeps the GIL busy (python/benchmarks/busy_gil.py: python-busy-gil.json)."""
    path = os.path.join(results_dir, "engines", "vllm-ttft.json")
    if os.path.exists(path):
        with open(path) as f:
            run = json.load(f)
        m = run["model"]
        out.append(f"\n### vLLM: time to first token, loaded from kvcache-server or computed "
                   f"({m['layers']} layers, {m['kv_heads']} KV heads, {m['kv_bytes_per_token'] // 1024} "
                   f"KiB of KV per token, {m['block_tokens']} tokens per block)\n")
        out.append("| server | prompt tokens | computed s | loaded s | loaded / computed | saved s | "
                   "KV loaded MB | load GB/s | lookup wait s | transfer s | copy into vLLM s |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in run["runs"]:
            out.append(f"| {r['server']}{' (page cache dropped)' if r['page_cache_dropped'] else ''} | "
                       f"{r['tokens']:,} | {r['ttft_computed_s']:.3f} | {r['ttft_loaded_s']:.3f} | "
                       f"**{r['ratio']:.3f}** | {r['saved_s']:.2f} | {r['bytes_loaded'] / 1e6:,.0f} | "
                       f"{r['load_gbps']:.2f} | {r['lookup_s']:.3f} | {r['transfer_s']:.3f} | {r['copy_s']:.3f} |")
        servers = sorted({r["server"] for r in run["runs"]}, reverse=True)
        tokens = sorted({r["tokens"] for r in run["runs"]})
        fig, ax = plt.subplots(figsize=(8, 3.6))
        x = range(len(tokens))
        by = {(r["server"], r["tokens"]): r for r in run["runs"]}
        bars = [("computed", "tab:gray", lambda t: by[(servers[0], t)]["ttft_computed_s"])]
        bars += [(f"loaded from kvcache-server ({s})", c, (lambda s: lambda t: by[(s, t)]["ttft_loaded_s"])(s))
                 for s, c in zip(servers, ("tab:blue", "tab:orange"))]
        width = 0.8 / len(bars)
        for i, (label, color, value) in enumerate(bars):
            ax.bar([xi + (i - (len(bars) - 1) / 2) * width for xi in x], [value(t) for t in tokens],
                   width, label=label, color=color)
        ax.set_yscale("log")
        ax.set_xticks(list(x))
        ax.set_xticklabels([f"{t:,} tokens" for t in tokens])
        ax.set_ylabel("time to first token, s (log)")
        ax.set_title("vLLM on CPU: the prompt's KV loaded from kvcache-server or computed")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(img, "vllm-ttft.png"), dpi=110)
        plt.close(fig)
    path = os.path.join(results_dir, "python-client", "python-busy-gil.json")
    if os.path.exists(path):
        with open(path) as f:
            run = json.load(f)
        out.append(f"\n### Reads of {run['blocks']} blocks of {size_label(run['block_bytes'])} beside a "
                   f"thread that keeps the GIL busy (MB/s, best of {run['rounds']})\n")
        out.append("| busy thread | switch interval | one at a time (pin) | batch GETs |")
        out.append("|---|---:|---:|---:|")
        for r in run["rows"]:
            out.append(f"| {'yes' if r['busy_thread'] else 'no'} | {r['switch_interval_s'] * 1000:g} ms | "
                       f"{r['one_at_a_time_mb_s']:,.0f} | {r['batch_mb_s']:,.0f} |")
