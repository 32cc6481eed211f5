"""The object tier (docs/benchmarks/object-tier.md, results in object-tier/): the tier, on Netty
and on CRT, beside the AWS SDK's stock Netty and CRT S3 clients against the same S3 server, GB/s and
CPU seconds per GiB, GET and PUT at one and four threads (ObjectTierBenchmark; object-tier.png).
"""
import json
import os
from collections import defaultdict

import matplotlib.pyplot as plt

from .common import method, klass, read_json, size_label, bar_panel


def object_tier_tables(rows, results_dir, out, img):
    """The object tier beside the SDK's stock clients (ObjectTierBenchmark in object-tier-t<n>.json,
    CPU seconds per GiB in object-tier-cpu.jsonl, whose lines carry the threads or, in runs before
    they did, come in the order of the runs: one thread, then four)."""
    runs = [r for r in rows if r["file"].startswith("object-tier-t")
            and klass(r) == "ObjectTierBenchmark"]
    if not runs:
        return
    cpu = {}
    path = os.path.join(results_dir, "object-tier", "object-tier-cpu.jsonl")
    if os.path.exists(path):
        seen = defaultdict(int)
        with open(path) as f:
            for line in f:
                c = json.loads(line)
                key = (c["benchmark"].rsplit(".", 1)[1], c["client"], c["blockBytes"])
                threads = c.get("threads", (1, 4)[min(seen[key], 1)])
                seen[key] += 1
                cpu[key + (threads,)] = c["cpuSecondsPerGiB"]
    clients = ["tier", "tier-crt", "sdk-netty", "sdk-crt"]
    names = {"tier": "object tier (Netty)", "tier-crt": "object tier (CRT)",
             "sdk-netty": "SDK, Netty", "sdk-crt": "SDK, CRT S3 client"}
    table = defaultdict(dict)  # (threads, op, size) -> client -> (GB/s, error)
    for r in runs:
        threads = int(r["file"][len("object-tier-t"):-len(".json")])
        size = int(r["params"]["blockBytes"])
        score, err = r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"]
        table[(threads, method(r), size)][r["params"]["client"]] = (score * size / 1e9,
                                                                    err * size / 1e9)
    out.append("\n### The object tier beside the SDK's clients, rclone over tmpfs (GB/s; CPU s/GiB)\n")
    out.append("| threads | op | block | " + " | ".join(names[c] for c in clients)
               + " | tier / best stock | tier CPU / best stock's |")
    out.append("|---|---|---|" + "---:|" * (len(clients) + 2))
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for (threads, op, size), by in sorted(table.items()):
        cells = []
        for c in clients:
            if c in by:
                g, e = by[c]
                cs = cpu.get((op, c, size, threads))
                cells.append(f"{g:.3f} ± {e:.3f}" + (f"; {cs:.2f}" if cs is not None else ""))
            else:
                cells.append("")
        stock = [c for c in ("sdk-netty", "sdk-crt") if c in by]
        best = max(stock, key=lambda c: by[c][0]) if stock else None
        ratio = f"**{by['tier'][0] / by[best][0]:.2f}**" if best and "tier" in by else ""
        c_tier, c_best = cpu.get((op, "tier", size, threads)), cpu.get((op, best, size, threads))
        cpu_ratio = f"{c_tier / c_best:.2f}" if c_tier and c_best else ""
        out.append(f"| {threads} | {op} | {size_label(size)} | " + " | ".join(cells)
                   + f" | {ratio} | {cpu_ratio} |")
    for col, op in enumerate(("get", "put")):
        for row, threads in enumerate((1, 4)):
            ax = axes[row][col]
            sizes = sorted({s for (t, o, s) in table if t == threads and o == op})
            for i, c in enumerate(clients):
                vals = [table[(threads, op, s)].get(c, (0, 0)) for s in sizes]
                ax.bar([x + i * 0.2 for x in range(len(sizes))], [v[0] for v in vals], 0.2,
                       yerr=[v[1] for v in vals], label=names[c])
            ax.set_xticks([x + 0.3 for x in range(len(sizes))])
            ax.set_xticklabels([size_label(s) for s in sizes])
            bar_panel(ax, "GB/s", f"{op.upper()}, {threads} thread{'s' if threads > 1 else ''}")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Object tier and the SDK's clients against the same S3 server (rclone, tmpfs)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "object-tier.png"), dpi=110)
    plt.close(fig)


def ranged_get_tables(results_dir, out, img):
    """GETs of 2 and 32 MiB blocks, the tier reading blocks of 16 MiB and more by ranged GETs at
    once, beside the SDK's stock clients and boto3 in one run (object-tier-ranged-t<n>.json,
    -cpu.jsonl, -boto3.jsonl; object-tier-ranged.png)."""
    base = os.path.join(results_dir, "object-tier")
    table = defaultdict(dict)  # (threads, size) -> client -> (GB/s, error, CPU s/GiB)
    cpu = {}
    path = os.path.join(base, "object-tier-ranged-cpu.jsonl")
    if not os.path.exists(path):
        return
    with open(path) as f:
        for line in f:
            c = json.loads(line)
            cpu[(c["client"], c["blockBytes"], c["threads"])] = c["cpuSecondsPerGiB"]
    for threads in (1, 4):
        for r in read_json(results_dir, f"object-tier/object-tier-ranged-t{threads}.json") or []:
            size, client = int(r["params"]["blockBytes"]), r["params"]["client"]
            m = r["primaryMetric"]
            table[(threads, size)][client] = (m["score"] * size / 1e9,
                                              m["scoreError"] * size / 1e9,
                                              cpu.get((client, size, threads)))
    with open(os.path.join(base, "object-tier-ranged-boto3.jsonl")) as f:
        for line in f:
            b = json.loads(line)
            if b["op"] == "get" and (b["threads"], b["blockBytes"]) in table:
                size = b["blockBytes"]
                table[(b["threads"], size)]["boto3"] = (
                    b["opsPerSecond"] * size / 1e9, b["opsPerSecondStdev"] * size / 1e9,
                    b["cpuSecondsPerGiB"])
    clients = ["tier", "tier-crt", "sdk-netty", "sdk-crt", "boto3"]
    names = {"tier": "object tier (Netty)", "tier-crt": "object tier (CRT)",
             "sdk-netty": "SDK, Netty", "sdk-crt": "SDK, CRT S3 client", "boto3": "boto3"}
    out.append("\n### GETs with ranged reads of large blocks, beside the stock clients and boto3 "
               "(GB/s ± error; CPU s/GiB)\n")
    out.append("| threads | block | " + " | ".join(names[c] for c in clients)
               + " | tier / boto3 | tier / best stock |")
    out.append("|---|---|" + "---:|" * (len(clients) + 2))
    for (threads, size), by in sorted(table.items()):
        cells = [f"{by[c][0]:.3f} ± {by[c][1]:.3f}; {by[c][2]:.2f}" if c in by else ""
                 for c in clients]
        best = max((by[c][0] for c in ("sdk-netty", "sdk-crt", "boto3") if c in by), default=0)
        vs_boto3 = f"**{by['tier'][0] / by['boto3'][0]:.2f}**" if "boto3" in by else ""
        out.append(f"| {threads} | {size_label(size)} | " + " | ".join(cells)
                   + f" | {vs_boto3} | {by['tier'][0] / best:.2f} |")
    out.append("")
    groups = sorted(table)
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for i, c in enumerate(clients):
        vals = [table[g].get(c, (0, 0, None)) for g in groups]
        ax.bar([x + (i - 2) * 0.16 for x in range(len(groups))], [v[0] for v in vals], 0.16,
               yerr=[v[1] for v in vals], label=names[c])
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{size_label(s)}, {t} thread{'s' if t > 1 else ''}" for t, s in groups])
    bar_panel(ax, "GB/s", "GETs against rclone on tmpfs; the tier reads 32 MiB by 4 ranges at once")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "object-tier-ranged.png"), dpi=110)
    plt.close(fig)
