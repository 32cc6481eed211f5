"""Puts under pressure (docs/benchmarks/puts-under-pressure.md, results in puts-under-pressure/):
sustained PUTs through kvcache-server over its disk tier beside the floor program
(python/benchmarks/put_path.py; put-path.png), and writes that outrun the disk
(SpillBackPressureBenchmark): the sustained rate against the raw file writer's and the p95 latency
against a write + fsync, one table per block size and one plot per group of runs
(spill-back-pressure*.png).
"""
import os
import statistics

import matplotlib.pyplot as plt

from .common import read_json, klass, size_label, bar_panel, median_range


def put_path_tables(results_dir, out, img, result="put-path"):
    """Sustained PUTs through kvcache-server over its disk tier beside the floor program, from
    python/benchmarks/put_path.py (puts-under-pressure/<result>.json, plotted as <result>.png):
    medians over the rounds, GB/s and the server's CPU seconds per GiB, per RAM size and block
    size."""
    doc = read_json(results_dir, f"puts-under-pressure/{result}.json")
    if doc is None:
        return
    runs = doc["runs"]
    names = {"kvcache-copied": "kvcache, spills copied (before), HTTP/1.1 (Python)",
             "kvcache": "kvcache, page cache", "kvcache-direct": "kvcache, HTTP/1.1 (Python)",
             "floor": "floor, page cache", "floor-direct": "floor, HTTP/1.1 (Python)",
             "kvcache-direct-h2": "kvcache, HTTP/2 (Java)", "floor-direct-h2": "floor, HTTP/2 (Java)"}
    systems = [s for s in names if any(r["system"] == s for r in runs)]
    cases = sorted({(r["ram_bytes"], r["block_bytes"]) for r in runs})

    def values(ram, size, system, field):
        return [r[field] for r in runs if (r["ram_bytes"], r["block_bytes"], r["system"]) == (ram, size, system)]

    out.append(f"\n### A PUT, socket to device: kvcache-server beside the floor program ({result}, medians)\n")
    out.append("| RAM | block | system | GB/s | server CPU s/GiB | p50 ms | p95 ms |")
    out.append("|---|---|---|---|---|---|---|")
    for ram, size in cases:
        for system in systems:
            cells = [median_range(values(ram, size, system, f)) for f in ("gbps", "server_cpu_s_per_gib", "p50_ms", "p95_ms")]
            out.append(f"| {size_label(ram) if ram < 1 << 30 else f'{ram >> 30} GiB'} | {size_label(size)} | "
                       f"{names[system]} | " + " | ".join(cells) + " |")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    labels = [f"RAM {size_label(ram) if ram < 1 << 30 else f'{ram >> 30} GiB'}\n{size_label(size)} blocks"
              for ram, size in cases]
    width = 0.8 / len(systems)
    for ax, field, ylabel in ((axes[0], "gbps", "GB/s"), (axes[1], "server_cpu_s_per_gib", "CPU s / GiB")):
        for i, system in enumerate(systems):
            meds = [statistics.median(values(ram, size, system, field)) for ram, size in cases]
            lows = [m - min(values(ram, size, system, field)) for m, (ram, size) in zip(meds, cases)]
            highs = [max(values(ram, size, system, field)) - m for m, (ram, size) in zip(meds, cases)]
            ax.bar([x + i * width for x in range(len(cases))], meds, width, yerr=[lows, highs],
                   label=names[system])
        ax.set_xticks([x + width * (len(systems) - 1) / 2 for x in range(len(cases))])
        ax.set_xticklabels(labels, fontsize=8)
        bar_panel(ax, ylabel, "sustained PUT speed" if field == "gbps" else "server CPU per GiB put (lower is better)")
    fig.suptitle("PUTs (4 threads) through kvcache-server over its disk tier, beside the floor "
                 "program driven by the same client")
    fig.tight_layout()
    fig.savefig(os.path.join(img, f"{result}.png"), dpi=110)
    plt.close(fig)



def spill_tables(rows, out, img):
    """Writes that outrun the disk (SpillBackPressureBenchmark, sample mode, several threads): the
    sustained rate (threads x block / mean time) against the raw file writer's, and the p95 latency
    against a write + fsync of the same bytes, per block size."""
    groups = {}  # run group -> (size, config) -> (GB/s, error, p50, p95, p99) in GB/s and ms
    for r in rows:
        if klass(r) != "SpillBackPressureBenchmark":
            continue
        group = next((g for g in ("ordered", "queue") if g in r["file"]), "")
        runs = groups.setdefault(group, {})
        size, stack = int(r["params"]["blockSizeBytes"]), r["params"]["stack"]
        ram = {"ram-small+disk": "256 MiB", "ram+disk": "1 GiB", "ram-large+disk": "4 GiB"}
        threads = r["params"].get("spillThreads")
        config = f"{ram[stack]} RAM over disk, {threads} spill thread{'s' if threads != '1' else ''}" \
            if stack in ram else {"disk": "disk tier alone"}.get(stack, stack)
        if group == "queue" and stack in ram:
            config += f", {r['params']['spillQueueBlocks']} blocks unwritten at most"
            if r["params"].get("diskSync", "PERIODIC") != "PERIODIC":
                config += f", disk sync {r['params']['diskSync']}"
        m = r["primaryMetric"]
        rate = r["threads"] * size / (m["score"] / 1e3) / 1e9
        error = rate * m["scoreError"] / m["score"]
        pct = m["scorePercentiles"]
        runs.setdefault((size, config), (rate, error, pct["50.0"], pct["95.0"], pct["99.0"]))
    for group, runs in sorted(groups.items()):
        spill_group(runs, out, img, group)



def spill_group(runs, out, img, group):
    """The tables and the plot of one group of SpillBackPressureBenchmark runs."""
    sizes = sorted({k[0] for k in runs})
    fixed = ["file", "file-fsync", "disk tier alone"]
    by_ram = {"256": 0, "1 G": 1, "4 G": 2}
    present = {k[1] for k in runs}
    order = [c for c in fixed if c in present] + sorted(
        present - set(fixed), key=lambda c: (by_ram[c[:3]], len(c), c))
    baselines = {size: (runs.get((size, "file")), runs.get((size, "file-fsync"))) for size in sizes}
    for size in sizes:
        file, fsync = baselines[size]
        title = {"ordered": ", puts in the order they came",
                 "queue": ", by the bound on unwritten blocks"}.get(group, "")
        out.append(f"\n### Writes that outrun the disk{title}, {size_label(size)} blocks, 8 threads\n")
        out.append("| writer | GB/s | / file | p50 ms | p95 ms | p99 ms | p95 / file-fsync |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for config in order:
            v = runs.get((size, config))
            if v is None:
                continue
            ratio = f"**{v[0] / file[0]:.2f}**" if file else "-"
            p95 = f"**{v[3] / fsync[3]:.2f}**" if fsync else "-"
            out.append(f"| {config} | {v[0]:.2f} ± {v[1]:.2f} | {ratio} | {v[2]:.0f} | {v[3]:.0f} "
                       f"| {v[4]:.0f} | {p95} |")
    configs = [c for c in order if c not in ("file", "file-fsync")]
    # a panel per baseline the runs have: the rate against the raw writer, the p95 against fsync
    panels = [(k, value, target, ylabel, title) for k, value, target, ylabel, title in (
        (0, 0, 0.9, "sustained rate / FileChannel writer", "Sustained rate (higher is better)"),
        (1, 3, 1.5, "p95 latency / write + fsync", "p95 latency (lower is better)"))
        if any(b[k] for b in baselines.values())]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.8), squeeze=False)
    width = 0.8 / len(sizes)
    for ax, (k, value, target, ylabel, title) in zip(axes[0], panels):
        for i, size in enumerate(sizes):
            base = baselines[size][k]
            shown = [c for c in configs if (size, c) in runs]
            if not base:
                continue
            xs = [j + i * width for j, c in enumerate(configs) if (size, c) in runs]
            errs = [runs[(size, c)][1] / base[0] for c in shown] if value == 0 else None
            ax.bar(xs, [runs[(size, c)][value] / base[value] for c in shown], width, yerr=errs,
                   capsize=3, label=size_label(size))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(target, color="red", linewidth=0.8, linestyle="--", label=f"target {target}")
        ax.set_xticks([j + width * (len(sizes) - 1) / 2 for j in range(len(configs))])
        ax.set_xticklabels([c.replace(" RAM over disk, ", " RAM\n").replace(", ", "\n")
                            .replace(" spill thread", " thread")
                            .replace(" blocks unwritten at most", " queued")
                            .replace("disk tier alone", "disk\nalone") for c in configs], fontsize=7)
        bar_panel(ax, ylabel, title)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "spill-back-pressure" + (f"-{group}" if group else "") + ".png"),
                dpi=110)
    plt.close(fig)
