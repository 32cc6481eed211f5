"""What sealing a namespace at rest costs (docs/benchmarks/sealing.md, results in
sealing/seal-cost-*): puts and reads of sealed blocks beside plain ones in the same runs, on the
disk tier (DiskThroughputBenchmark, DiskColdReadBenchmark) and through the server
(ServerDurabilityBenchmark), each with sealed=false,true; sealing-cost.png.
"""
import json
import os
import statistics

import matplotlib.pyplot as plt

from .common import klass, method, size_label


def _gbps(r, scores):
    """GB/s, mean and standard deviation, of a JMH row's kind over the scores pooled from its
    runs: throughput rows by ops/s and block size, single-shot ones by the working set read in
    the time of one operation."""
    p = r["params"]
    size = int(p.get("blockSizeBytes", p.get("blockBytes")))
    if r["mode"] == "thrpt":
        values = [x * size / 1e9 for x in scores]
    else:
        values = [int(p["workingSetBytes"]) / 1e9 / (x / 1e3) for x in scores]
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def sealing_tables(rows, results_dir, out, img):
    """Sealed against plain, by operation, place and block size."""
    pooled = {}  # (label, size) -> {sealed: (a row, the iterations of every run)}
    tail = {}  # (label, size) -> plain blocks 29 bytes longer: (a row, the iterations)
    order = []
    for r in rows:
        if not r["file"].startswith("seal-cost-"):
            continue
        p = r["params"]
        size = int(p.get("blockSizeBytes", p.get("blockBytes")))
        if klass(r) == "DiskThroughputBenchmark":
            where = "tmpfs" if p["baseDir"].startswith("/dev/shm") else "work disk, page cache"
            writes = "direct writes" if p.get("directWrites") == "true" else None
            label = f"{method(r)}, {where}" + (f", {writes}" if writes else "")
        elif klass(r) == "ServerDurabilityBenchmark":
            label = (f"server PUT, {p['durability']}" if method(r) == "put"
                     else f"server GET from disk, RAM {p['ramBytes']}") + ", Java client"
        elif klass(r) == "DiskColdReadBenchmark":
            path = "past the page cache" if p["directReads"] == "true" else "through the mapping"
            label = f"cold getInto, {p['order']}, plain {path}"
        else:
            continue
        if size % 4096 == 29 and p["sealed"] == "false":  # plain, a sealed block's length
            tail.setdefault((label, size - 29), (r, []))[1].extend(
                x for fork in r["primaryMetric"]["rawData"] for x in fork)
            continue
        key = (label, size)
        if key not in pooled:
            order.append(key)
        row, scores = pooled.setdefault(key, {}).setdefault(p["sealed"], (r, []))
        scores.extend(x for fork in r["primaryMetric"]["rawData"] for x in fork)
    if not pooled:
        return
    cases = {k: {sealed: _gbps(row, scores) for sealed, (row, scores) in arms.items()}
             for k, arms in pooled.items()}
    cpu = {}  # (order, directReads, size, sealed) -> CPU s per GiB of each fork
    path = os.path.join(results_dir, "sealing", "seal-cost-cold-cpu.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                c = json.loads(line)
                cpu.setdefault((c["order"], str(c["directReads"]).lower(), c["blockBytes"],
                                str(c["sealed"]).lower()), []).append(c["cpuSecondsPerGiB"])
    out.append("\n### Sealed namespaces on the disk tier: sealed against plain, same runs"
               " (GB/s, mean ± sd of every iteration of the runs; cold reads also CPU s/GiB)\n")
    out.append("| operation | block | plain | sealed | sealed / plain |")
    out.append("|---|---:|---:|---:|---:|")
    labels, ratios = [], []
    for key in order:
        arms = cases[key]
        if "false" not in arms or "true" not in arms:
            continue
        label, size = key
        cells = []
        for sealed in ("false", "true"):
            gb, err = arms[sealed]
            cell = f"{gb:.2f} ± {err:.2f}"
            if label.startswith("cold"):
                o = label.split(", ")[1]
                direct = "true" if "past" in label else "false"
                c = cpu.get((o, direct, size, sealed))
                cell += "" if c is None else f"; {statistics.mean(c):.2f}"
            cells.append(cell)
        ratio = arms["true"][0] / arms["false"][0]
        out.append(f"| {label} | {size_label(size)} | {cells[0]} | {cells[1]} | **{ratio:.2f}** |")
        labels.append(f"{label}, {size_label(size)}")
        ratios.append(ratio)
    for (label, size), (row, scores) in tail.items():
        plain = cases.get((label, size), {}).get("false")
        if plain is None:
            continue
        gb, err = _gbps(row, scores)
        out.append(f"| {label}: plain blocks 29 bytes longer (a sealed block's length) | "
                   f"{size_label(size)} + 29 B | {plain[0]:.2f} ± {plain[1]:.2f} "
                   f"| {gb:.2f} ± {err:.2f} (plain) | **{gb / plain[0]:.2f}** |")
        labels.append(f"plain {size_label(size)} + 29 B / plain, direct writes (longer)")
        ratios.append(gb / plain[0])
    out.append("")
    fig, ax = plt.subplots(figsize=(11, 0.32 * len(ratios) + 1.4))
    colors = ["grey" if "(longer)" in lab else "#dd8452" if lab.startswith("cold")
              else "#4c72b0" if "put" in lab.lower() else "#55a868" for lab in labels]
    y = list(range(len(ratios)))[::-1]
    ax.barh(y, ratios, color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvline(1 / 1.15, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7.5)
    ax.set_xlabel("throughput, sealed / plain (dashed: the goal, time at most 1.15 times)")
    ax.set_title("Sealing at rest: blue puts, green reads in memory, orange cold reads,"
                 " grey a plain block 29 bytes longer", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "sealing-cost.png"), dpi=110)
    plt.close(fig)
