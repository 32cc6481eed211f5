"""What sealing a namespace at rest costs the disk tier (docs/benchmarks/sealing.md, results in
sealing/seal-cost-*): puts and reads of sealed blocks beside plain ones in the same runs
(DiskThroughputBenchmark, DiskColdReadBenchmark with sealed=false,true; sealing-cost.png).
"""
import json
import os

import matplotlib.pyplot as plt

from .common import klass, method, size_label


def _gbps(r):
    """GB/s of a JMH row: throughput rows by ops/s and block size, single-shot ones by the working
    set read in the time of one operation."""
    size = int(r["params"]["blockSizeBytes"])
    score, err = r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"]
    if r["mode"] == "thrpt":
        return score * size / 1e9, (err if err == err else 0.0) * size / 1e9
    ws = int(r["params"]["workingSetBytes"])
    gb = ws / 1e9 / (score / 1e3)
    return gb, gb * (err if err == err else 0.0) / score


def sealing_tables(rows, results_dir, out, img):
    """Sealed against plain, by operation, place and block size."""
    cases = {}  # (label, size) -> {sealed: (GB/s, err)}
    order = []
    for r in rows:
        if not r["file"].startswith("seal-cost-"):
            continue
        p = r["params"]
        size = int(p["blockSizeBytes"])
        if klass(r) == "DiskThroughputBenchmark":
            where = "tmpfs" if p["baseDir"].startswith("/dev/shm") else "work disk, page cache"
            writes = "direct writes" if p.get("directWrites") == "true" else None
            label = f"{method(r)}, {where}" + (f", {writes}" if writes else "")
        elif klass(r) == "DiskColdReadBenchmark":
            path = "past the page cache" if p["directReads"] == "true" else "through the mapping"
            label = f"cold getInto, {p['order']}, plain {path}"
        else:
            continue
        key = (label, size)
        if key not in cases:
            order.append(key)
        cases.setdefault(key, {})[p["sealed"]] = _gbps(r)
    if not cases:
        return
    cpu = {}  # (order, directReads, size, sealed) -> CPU s per GiB
    path = os.path.join(results_dir, "sealing", "seal-cost-cold-cpu.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                c = json.loads(line)
                cpu[(c["order"], str(c["directReads"]).lower(), c["blockBytes"],
                     str(c["sealed"]).lower())] = c["cpuSecondsPerGiB"]
    out.append("\n### Sealed namespaces on the disk tier: sealed against plain, same runs"
               " (GB/s ± error; cold reads also CPU s/GiB)\n")
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
                cell += "" if c is None else f"; {c:.2f}"
            cells.append(cell)
        ratio = arms["true"][0] / arms["false"][0]
        out.append(f"| {label} | {size_label(size)} | {cells[0]} | {cells[1]} | **{ratio:.2f}** |")
        labels.append(f"{label.replace(', ', chr(10), 1)}\n{size_label(size)}")
        ratios.append(ratio)
    out.append("")
    fig, ax = plt.subplots(figsize=(13, 4.6))
    colors = ["#dd8452" if lab.startswith("cold") else "#4c72b0" if "put" in lab else "#55a868"
              for lab in labels]
    ax.bar(range(len(ratios)), ratios, color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(ratios)))
    ax.set_xticklabels(labels, fontsize=6.5)
    ax.set_ylabel("throughput, sealed / plain")
    ax.set_title("Sealing at rest on the disk tier, one thread: above 1 is faster than plain"
                 " (blue: puts, green: reads in memory, orange: cold reads)")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "sealing-cost.png"), dpi=110)
    plt.close(fig)
