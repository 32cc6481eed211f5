"""The disk tier (docs/benchmarks/disk-tier.md, results in disk-tier/): the tier against raw file IO
of the same bytes, warm and cold (disk-vs-raw.png), beside the disk stores a user would pick instead
(disk-peers.png), reopening a directory against its block count (disk-reopen.png), cold reads past
the page cache and through the mapping with their CPU cost (disk-cold-reads.png), a block put in
parts through the tier's writer (disk-writer.png), the tier before and after the storage device
seam, alternating in one session (disk-seam-ab.png), and a prefix pin on disk beside a lease per
block (disk-prefix-pin.png).
"""
import json
import os
import statistics
from collections import defaultdict

import matplotlib.pyplot as plt

from .common import read_json, method, klass, alloc_norm, size_label, gbps, bar_panel, size_axis, ratio_cell


def disk_tables(rows, out, img):
    """The disk tier beside raw file IO (warm and cold), beside the disk peers, and reopen times."""
    io = {}  # (medium, size, method) -> (GB/s, error)
    for r in rows:
        if klass(r) == "DiskThroughputBenchmark" and r["file"].startswith("disk-io"):
            medium = "tmpfs" if r["params"]["baseDir"].startswith("/dev/shm") else "disk"
            io[(medium, int(r["params"]["blockSizeBytes"]), method(r))] = gbps(r)
        elif (klass(r) == "DiskColdReadBenchmark" and r["file"] == "disk-cold.json"
              and r["params"].get("order", "written") == "written"
              and method(r) in ("readAll", "baselineReadAll")):
            # single shot: milliseconds to read the whole working set once
            ws = int(r["params"]["workingSetBytes"])
            ms, err = r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"]
            gb = ws / 1e9 / (ms / 1e3)
            io[("disk, cold", int(r["params"]["blockSizeBytes"]), {"readAll": "getInto", "baselineReadAll": "baselineGet"}[method(r)])] = (
                gb, gb * err / ms if ms and err == err else float("nan"))
    if io:
        out.append("### Disk tier against raw file IO of the same bytes (GB/s)\n")
        out.append("| medium | block | put | FileChannel write | put / write | getInto | mapped copy | getInto / copy | leaseGet |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        media = [m for m in ["disk", "tmpfs", "disk, cold"] if any(k[0] == m for k in io)]
        sizes = sorted({k[1] for k in io})

        def cell(k):
            return f"{io[k][0]:.2f} ± {io[k][1]:.2f}" if k in io else "-"

        def ratio(a, b):
            return ratio_cell(io, a, b)

        for m in media:
            for s in sizes:
                out.append(f"| {m} | {size_label(s)} | {cell((m, s, 'put'))} | {cell((m, s, 'baselinePut'))} | "
                           f"{ratio((m, s, 'put'), (m, s, 'baselinePut'))} | {cell((m, s, 'getInto'))} | "
                           f"{cell((m, s, 'baselineGet'))} | {ratio((m, s, 'getInto'), (m, s, 'baselineGet'))} | "
                           f"{cell((m, s, 'leaseGet'))} |")
        out.append("")
        fig, ax = plt.subplots(figsize=(8, 4.2))
        for m in media:
            for op, base, style in (("put", "baselinePut", "o-"), ("getInto", "baselineGet", "s--")):
                pts = [(s, io[(m, s, op)][0] / io[(m, s, base)][0]) for s in sizes
                       if (m, s, op) in io and (m, s, base) in io and io[(m, s, base)][0]]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{op}, {m}")
        ax.axhline(0.9, color="grey", linestyle=":", label="target 0.9")
        size_axis(ax, sizes, "kvcache / raw file IO")
        ax.set_title("Disk tier against raw file IO of the same bytes")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(img, "disk-vs-raw.png"), dpi=110)
        plt.close(fig)

    peers = {}  # (size, op, store) -> (GB/s, error)
    for r in rows:
        if klass(r) == "DiskPeerBenchmark":
            peers[(int(r["params"]["blockSizeBytes"]), method(r), r["params"]["store"])] = gbps(r)
    if peers:
        stores = [p for p in ["kvcache", "rocksdb", "ehcache", "files"] if any(k[2] == p for k in peers)]
        others = [p for p in stores if p != "kvcache"]
        sizes = sorted({k[0] for k in peers})
        out.append("### Disk tier beside the disk stores a user would pick instead (GB/s; ratio = kvcache / peer)\n")
        out.append("| op | block | " + " | ".join(stores) + " | " + " | ".join(f"× {p}" for p in others) + " |")
        out.append("|---|---|" + "---|" * (len(stores) + len(others)))
        for op in ["put", "get"]:
            for s in sizes:
                vals = {p: peers[(s, op, p)] for p in stores if (s, op, p) in peers}
                if "kvcache" not in vals:
                    continue
                cells = [f"{vals[p][0]:.2f} ± {vals[p][1]:.2f}" if p in vals else "-" for p in stores]
                ratios = [f"**{vals['kvcache'][0] / vals[p][0]:.1f}**" if p in vals and vals[p][0] else "-" for p in others]
                out.append(f"| {op} | {size_label(s)} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        out.append("")
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
        width = 0.8 / len(stores)
        for col, op in enumerate(["put", "get"]):
            ax = axes[col]
            for i, p in enumerate(stores):
                ys = [peers[(s, op, p)][0] if (s, op, p) in peers else 0 for s in sizes]
                ax.bar([x + i * width for x in range(len(sizes))], ys, width, label=p)
            ax.set_xticks([x + width * (len(stores) - 1) / 2 for x in range(len(sizes))])
            ax.set_xticklabels([size_label(s) for s in sizes])
            ax.set_ylabel("GB/s")
            ax.set_title(f"{op}, work tree's disk, page cache warm")
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(img, "disk-peers.png"), dpi=110)
        plt.close(fig)

    reopen = {}  # (method, blocks) -> (ms, error)
    for r in rows:
        if klass(r) == "DiskReopenBenchmark":
            reopen[(method(r), int(r["params"]["blocks"]))] = (r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"])
    if reopen:
        kinds = [k for k in ["afterClose", "afterCrash", "afterIndexLoss"] if any(m == k for m, _ in reopen)]
        counts = sorted({n for _, n in reopen})
        out.append("### Reopening a directory against the number of blocks (ms)\n")
        out.append("| blocks | " + " | ".join(kinds) + " |")
        out.append("|---|" + "---|" * len(kinds))
        for n in counts:
            out.append(f"| {n:,} | " + " | ".join(
                f"{reopen[(k, n)][0]:,.0f} ± {reopen[(k, n)][1]:,.0f}" if (k, n) in reopen else "-" for k in kinds) + " |")
        out.append("")
        fig, ax = plt.subplots(figsize=(7, 4))
        for k in kinds:
            pts = [(n, reopen[(k, n)][0]) for n in counts if (k, n) in reopen]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=k)
        ax.axhline(2000, color="grey", linestyle=":", label="target 2 s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("blocks in the directory")
        ax.set_ylabel("ms to open")
        ax.set_title("DiskTier.open against block count")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(img, "disk-reopen.png"), dpi=110)
        plt.close(fig)



COLD_READS = (  # (file, method, directReads param, label)
    ("disk-cold.json", "readAll", "true", "tier, past the page cache"),
    ("disk-cold-mapped.json", "readAll", "false", "tier, through the mapping"),
    ("disk-cold.json", "leaseAllBatched", "true", "tier, batches of 16, past"),
    ("disk-cold-mapped.json", "leaseAllBatched", "false", "tier, batches of 16, mapping"),
    ("disk-cold.json", "directReadAll", "true", "O_DIRECT read"),
    ("disk-cold.json", "preadAll", "true", "pread"),
    ("disk-cold.json", "baselineReadAll", "true", "mapped copy"),
)



def cold_read_tables(rows, results_dir, out, img):
    """Cold reads: the tier past the page cache and through the mapping, beside plain file reads."""
    speed, cpu = {}, {}  # (size, order, label) -> GB/s (error) / CPU s per GiB
    labels = {(f, m, d): label for f, m, d, label in COLD_READS}
    for r in rows:
        if klass(r) != "DiskColdReadBenchmark" or "order" not in r["params"]:
            continue
        key = (r["file"], method(r), r["params"].get("directReads", "true"))
        if key not in labels:
            continue
        order, size = r["params"]["order"], int(r["params"]["blockSizeBytes"])
        ws = int(r["params"]["workingSetBytes"])
        read = ws // 16 if order == "sparse" else ws  # a sixteenth of the blocks, or all
        ms, err = r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"]
        gb = read / 1e9 / (ms / 1e3)
        speed[(size, order, labels[key])] = (gb, gb * err / ms if err == err else float("nan"))
    path = os.path.join(results_dir, "disk-tier", "disk-cold-cpu.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                c = json.loads(line)
                m = c["benchmark"].rsplit(".", 1)[1]
                for fname, meth, direct, label in COLD_READS:
                    if meth == m and direct == str(c.get("directReads", True)).lower():
                        cpu[(c["blockBytes"], c["order"], label)] = c["cpuSecondsPerGiB"]
    if not speed:
        return
    names = [label for *_, label in COLD_READS]
    orders = [o for o in ("written", "shuffled", "sparse") if any(k[1] == o for k in speed)]
    sizes = sorted({k[0] for k in speed})
    out.append("### Cold reads: the tier past the page cache and through the mapping (GB/s; CPU s/GiB)\n")
    out.append("| block | order | " + " | ".join(names) + " | past / through the mapping | batches |")
    out.append("|---|---|" + "---|" * (len(names) + 2))
    for s in sizes:
        for o in orders:
            cells = []
            for n in names:
                v = speed.get((s, o, n))
                c = cpu.get((s, o, n))
                cells.append("-" if v is None else f"{v[0]:.2f} ± {v[1]:.2f}" + ("" if c is None else f"; {c:.2f}"))
            out.append(f"| {size_label(s)} | {o} | " + " | ".join(cells) + " | "
                       + ratio_cell(speed, (s, o, names[0]), (s, o, names[1])) + " | "
                       + ratio_cell(speed, (s, o, names[2]), (s, o, names[3])) + " |")
    out.append("")
    colors = ["tab:blue", "tab:cyan", "tab:purple", "tab:pink", "tab:green", "tab:olive", "tab:grey"]
    fig, axes = plt.subplots(2, 1, figsize=(12, 8))
    groups = [(s, o) for s in sizes for o in orders]
    width = 0.8 / len(names)
    for ax, data, ylabel, title in ((axes[0], {k: v[0] for k, v in speed.items()}, "GB/s",
                                     "Cold reads, 1 GiB on the work disk"),
                                    (axes[1], cpu, "CPU s per GiB (process)",
                                     "CPU of the same reads")):
        for i, n in enumerate(names):
            xs = [g + (i - (len(names) - 1) / 2) * width for g in range(len(groups))]
            ys = [data.get((s, o, n), 0) for s, o in groups]
            ax.bar(xs, ys, width, label=n, color=colors[i])
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{size_label(s)}\n{o}" for s, o in groups], fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "disk-cold-reads.png"), dpi=110)
    plt.close(fig)



def disk_writer_table(rows, out, img):
    """A block put whole, through the disk tier's writer in 16 KiB parts, or gathered on the heap."""
    w = {}  # (medium, size, method) -> (GB/s, error, bytes allocated per put)
    for r in rows:
        if r["file"] == "disk-writer.json":
            medium = "tmpfs" if r["params"]["baseDir"].startswith("/dev/shm") else "disk"
            w[(medium, int(r["params"]["blockSizeBytes"]), method(r))] = gbps(r) + (alloc_norm(r),)
    if not w:
        return
    out.append("### A block in parts: the disk tier's writer (GB/s; heap bytes allocated per put)\n")
    out.append("| medium | block | put, whole | writer, 16 KiB parts | gathered on the heap, then put "
               "| FileChannel write | writer / put | gathered / put |")
    out.append("|---|---|---|---|---|---|---|---|")
    media = [m for m in ["disk", "tmpfs"] if any(k[0] == m for k in w)]
    sizes = sorted({k[1] for k in w})

    def cell(k):
        if k not in w:
            return "-"
        return f"{w[k][0]:.2f} ± {w[k][1]:.2f} ({w[k][2]:,.0f} B)" if w[k][2] is not None else f"{w[k][0]:.2f} ± {w[k][1]:.2f}"

    def ratio(a, b):
        return ratio_cell(w, a, b)

    for m in media:
        for s in sizes:
            out.append(f"| {m} | {size_label(s)} | {cell((m, s, 'put'))} | {cell((m, s, 'writerPut'))} | "
                       f"{cell((m, s, 'gatheredPut'))} | {cell((m, s, 'baselinePut'))} | "
                       f"{ratio((m, s, 'writerPut'), (m, s, 'put'))} | {ratio((m, s, 'gatheredPut'), (m, s, 'put'))} |")
    out.append("")
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for m, color in zip(media, ["tab:blue", "tab:orange"]):
        for op, style in (("writerPut", "o-"), ("gatheredPut", "s--")):
            pts = [(s, w[(m, s, op)][0] / w[(m, s, "put")][0]) for s in sizes
                   if (m, s, op) in w and (m, s, "put") in w and w[(m, s, "put")][0]]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color,
                        label={"writerPut": "writer, 16 KiB parts", "gatheredPut": "gathered on the heap"}[op] + f", {m}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    size_axis(ax, sizes, "throughput / put of the whole block")
    ax.set_title("A block arriving in parts, into the disk tier")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "disk-writer.png"), dpi=110)
    plt.close(fig)



def seam_tables(results_dir, out, img):
    """The disk tier before the storage device seam and after it, alternating in one session
    (disk-seam-ab.json): GB/s per side (mean of the rounds' scores) and after / before per round."""
    doc = read_json(results_dir, "disk-tier/disk-seam-ab.json")
    if doc is None:
        return
    scores = defaultdict(list)  # (benchmark, size, side) -> GB/s of each round, in order
    for run in doc["runs"]:
        for r in run["results"]:
            size = int(r["params"]["blockSizeBytes"])
            scores[(method(r), size, run["side"])].append(gbps(r)[0])
    keys = sorted({(b, s) for (b, s, side) in scores})
    out.append("\n### The disk tier before and after the storage device seam (GB/s, work disk)\n")
    out.append("| benchmark | block | before | seam alone | after | after / before, per round |")
    out.append("|---|---|---|---|---|---|")
    labels, ratios, rounds = [], [], []
    for b, size in keys:
        before, after = scores[(b, size, "before")], scores[(b, size, "after")]
        seam = scores.get((b, size, "seam"), [])
        per_round = [a / o for o, a in zip(before, after)]
        cell = lambda v: f"{statistics.mean(v):.2f}" if v else "-"
        out.append(f"| {b} | {size_label(size)} | {cell(before)} | {cell(seam)} | {cell(after)} | "
                   f"**{statistics.mean(after) / statistics.mean(before):.2f}** "
                   f"({', '.join(f'{x:.2f}' for x in per_round)}) |")
        labels.append(f"{b} {size_label(size)}")
        ratios.append(statistics.mean(after) / statistics.mean(before))
        rounds.append(per_round)
    fig, ax = plt.subplots(figsize=(11, 4))
    control = [label.startswith("baseline") for label in labels]
    for flag, color, name in ((False, "tab:blue", "the tier: mean of the rounds"),
                              (True, "tab:gray", "plain file IO, the same code in both: the noise")):
        xs = [i for i in range(len(ratios)) if control[i] == flag]
        ax.bar(xs, [ratios[i] for i in xs], color=color, alpha=0.6, label=name)
    for i, rs in enumerate(rounds):
        ax.plot([i] * len(rs), rs, "k.", label="one round" if i == 0 else None)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7, rotation=35, ha="right")
    ax.set_ylim(0, 1.8)
    bar_panel(ax, "after / before", "The disk tier through the storage device seam, against the tier "
              "before it (same session, alternating)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "disk-seam-ab.png"), dpi=110)
    plt.close(fig)


def prefix_pin_table(rows, out, img):
    """A prefix pin of 16 blocks on disk (DiskThroughputBenchmark prefix* in disk-prefix-pin.json):
    the tier's own pin, which holds the records and reads each when it is read, beside a lease per
    block (what a pin was before), the lookup alone and with the load."""
    score = {}
    for r in rows:
        if r["file"] == "disk-prefix-pin.json" and klass(r) == "DiskThroughputBenchmark":
            score[method(r)] = (r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"])
    if not score:
        return
    out.append("\n### A prefix pin of 16 blocks of 2 MiB on disk, page cache hot (pins per second)\n")
    out.append("| | the tier's pin | a lease per block | pin / leases |")
    out.append("|---|---:|---:|---:|")
    labels, ratios = [], []
    for name, pin, leases in (("the lookup (pin, then let go)", "prefixPin", "prefixLeases"),
                              ("the lookup and the load (each block copied out)",
                               "prefixPinLoad", "prefixLeasesLoad")):
        if pin in score and leases in score:
            ratio = score[pin][0] / score[leases][0]
            out.append(f"| {name} | {score[pin][0]:.0f} ± {score[pin][1]:.0f} "
                       f"| {score[leases][0]:.0f} ± {score[leases][1]:.0f} | **{ratio:.2f}** |")
            labels.append(f"{name}\n{ratio:.0f}x" if ratio > 10 else f"{name}\n{ratio:.2f}x")
            ratios.append(ratio)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(range(len(ratios)), ratios, 0.6, color=["#4c72b0", "#55a868"])
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(ratios)))
    ax.set_xticklabels(labels, fontsize=8)
    bar_panel(ax, "pins per second, the tier's pin / a lease per block (log)",
              "A prefix pin of 16 blocks of 2 MiB on disk (higher is better)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "disk-prefix-pin.png"), dpi=110)
    plt.close(fig)
