#!/usr/bin/env python3
"""Turns the JMH JSON results of kvcache-bench/run-benchmarks.sh into tables and plots.

    python3 docs/tools/plot_benchmarks.py docs/results docs/img

Writes docs/results/summary.md (the tables quoted in docs/benchmarks.md) and PNG plots into the
image directory. Throughput is converted from operations/s to GB/s (10^9 bytes) with the block
size; errors are JMH's 99.9% confidence half-widths.
"""
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(results_dir):
    rows = []
    for name in sorted(os.listdir(results_dir)):
        if name.endswith(".json"):
            with open(os.path.join(results_dir, name)) as f:
                for r in json.load(f):
                    rows.append(r)
    return rows


def method(r):
    return r["benchmark"].rsplit(".", 1)[1]


def klass(r):
    return r["benchmark"].rsplit(".", 2)[1]


def alloc_norm(r):
    for k, v in r.get("secondaryMetrics", {}).items():
        if k.endswith("gc.alloc.rate.norm"):
            return v["score"]
    return None


def size_label(b):
    b = int(b)
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def gbps(r):
    size = int(r["params"]["blockSizeBytes"])
    return r["primaryMetric"]["score"] * size / 1e9, r["primaryMetric"]["scoreError"] * size / 1e9


def size_axis(ax, sizes, ylabel):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("block size")
    ax.set_ylabel(ylabel)


def ram_tables(rows, out, img):
    data = {}  # (threads, size, method) -> row
    for r in rows:
        if klass(r) == "RamTierBenchmark":
            data[(r["threads"], int(r["params"]["blockSizeBytes"]), method(r))] = r
    if not data:
        return
    sizes = sorted({k[1] for k in data})
    threads = sorted({k[0] for k in data})
    out.append("### RAM tier against a plain copy of the same bytes\n")
    out.append("| threads | block | copy in GB/s | put GB/s | put / copy | copy out GB/s | getInto GB/s | getInto / copy | lease-get ops/s | alloc B/op put, getInto, lease |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for t in threads:
        for s in sizes:
            g = lambda m: data.get((t, s, m))
            bp, p, bg, gi, lg = g("baselinePut"), g("put"), g("baselineGet"), g("getInto"), g("leaseGet")
            if not all([bp, p, bg, gi, lg]):
                continue
            (bpv, bpe), (pv, pe), (bgv, bge), (giv, gie) = gbps(bp), gbps(p), gbps(bg), gbps(gi)
            allocs = ", ".join("%.0f" % a if a is not None else "-" for a in map(alloc_norm, (p, gi, lg)))
            out.append(
                f"| {t} | {size_label(s)} | {bpv:.2f} ± {bpe:.2f} | {pv:.2f} ± {pe:.2f} | **{pv / bpv:.2f}** "
                f"| {bgv:.2f} ± {bge:.2f} | {giv:.2f} ± {gie:.2f} | **{giv / bgv:.2f}** "
                f"| {lg['primaryMetric']['score']:,.0f} | {allocs} |")
    out.append("")

    fig, axes = plt.subplots(1, len(threads), figsize=(6 * len(threads), 4.2), squeeze=False)
    for ax, t in zip(axes[0], threads):
        for m, label, style in [("baselinePut", "plain copy in", "k--"), ("put", "put", "C0-o"),
                                ("baselineGet", "plain copy out", "k:"), ("getInto", "getInto", "C1-s")]:
            xs = [s for s in sizes if (t, s, m) in data]
            ys = [gbps(data[(t, s, m)])[0] for s in xs]
            es = [gbps(data[(t, s, m)])[1] for s in xs]
            ax.errorbar(xs, ys, yerr=es, fmt=style, label=label, capsize=3)
        size_axis(ax, sizes, "GB/s")
        ax.set_title(f"RAM tier vs plain copy, {t} thread{'s' if t > 1 else ''}")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(img, "ram-tier-throughput.png"), dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for t, marker in zip(threads, ["o", "s"]):
        for m, base, colour, target in [("put", "baselinePut", "C0", 0.85), ("getInto", "baselineGet", "C1", 0.9)]:
            xs = [s for s in sizes if (t, s, m) in data and (t, s, base) in data]
            ys = [gbps(data[(t, s, m)])[0] / gbps(data[(t, s, base)])[0] for s in xs]
            ax.plot(xs, ys, "-" + marker, color=colour, alpha=1.0 if t == 1 else 0.55,
                    label=f"{m} / plain copy, {t} thread{'s' if t > 1 else ''}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(0.9, color="C1", ls=":", lw=1, label="getInto target 0.9")
    ax.axhline(0.85, color="C0", ls=":", lw=1, label="put target 0.85")
    size_axis(ax, sizes, "ratio to a plain copy of the same bytes")
    ax.set_ylim(0, 1.6)
    ax.set_title("RAM tier cost: ratio to a plain memory copy (1.0 = free)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="lower center")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "ram-tier-ratios.png"), dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for t in threads:
        xs = [s for s in sizes if (t, s, "leaseGet") in data]
        ax.plot(xs, [data[(t, s, "leaseGet")]["primaryMetric"]["score"] / 1e6 for s in xs], "-o",
                label=f"{t} thread{'s' if t > 1 else ''}")
    size_axis(ax, sizes, "million leases / s")
    ax.set_title("lease-get (open, read one word, close)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(img, "ram-tier-lease.png"), dpi=110)
    plt.close(fig)


def peer_tables(rows, out, img):
    data = {}  # (threads, size, op, peer) -> row
    for r in rows:
        if klass(r) == "PeerBenchmark":
            data[(r["threads"], int(r["params"]["blockSizeBytes"]), method(r), r["params"]["peer"])] = r
    if not data:
        return
    sizes = sorted({k[1] for k in data})
    threads = sorted({k[0] for k in data})
    peers = [p for p in ["kvcache", "ehcache", "ohc", "chronicle-map"] if any(k[3] == p for k in data)]
    others = [p for p in peers if p != "kvcache"]
    out.append("### kvcache beside the peers (GB/s; ratio = kvcache / peer)\n")
    out.append("| threads | op | block | " + " | ".join(peers) + " | " + " | ".join(f"× {p}" for p in others) + " |")
    out.append("|---|---|---|" + "---|" * (len(peers) + len(others)))
    for t in threads:
        for op in ["put", "get"]:
            for s in sizes:
                vals = {p: gbps(data[(t, s, op, p)]) for p in peers if (t, s, op, p) in data}
                if "kvcache" not in vals:
                    continue
                cells = [f"{vals[p][0]:.2f} ± {vals[p][1]:.2f}" if p in vals else "-" for p in peers]
                ratios = [f"**{vals['kvcache'][0] / vals[p][0]:.1f}**" if p in vals else "-" for p in others]
                out.append(f"| {t} | {op} | {size_label(s)} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    out.append("")

    fig, axes = plt.subplots(len(threads), 2, figsize=(11, 3.8 * len(threads)), squeeze=False)
    width = 0.8 / len(peers)
    for row, t in enumerate(threads):
        for col, op in enumerate(["put", "get"]):
            ax = axes[row][col]
            for i, p in enumerate(peers):
                ys = [gbps(data[(t, s, op, p)])[0] if (t, s, op, p) in data else 0 for s in sizes]
                ax.bar([x + i * width for x in range(len(sizes))], ys, width, label=p)
            ax.set_xticks([x + width * (len(peers) - 1) / 2 for x in range(len(sizes))])
            ax.set_xticklabels([size_label(s) for s in sizes])
            ax.set_ylabel("GB/s")
            ax.set_title(f"{op}, {t} thread{'s' if t > 1 else ''}")
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "ram-tier-peers.png"), dpi=110)
    plt.close(fig)


def memory_table(rows, out):
    data = {(int(r["params"]["blockSizeBytes"]), method(r)): r for r in rows if klass(r) == "MemoryCopyBenchmark"}
    if not data:
        return
    out.append("### Memory behind the RAM tier: direct ByteBuffer against Chronicle Bytes (GB/s)\n")
    out.append("| block | direct write | Chronicle write | direct read | Chronicle read |")
    out.append("|---|---|---|---|---|")
    for s in sorted({k[0] for k in data}):
        cell = lambda m: "%.2f ± %.2f" % gbps(data[(s, m)]) if (s, m) in data else "-"
        out.append(f"| {size_label(s)} | {cell('directBufferWrite')} | {cell('chronicleWrite')} "
                   f"| {cell('directBufferRead')} | {cell('chronicleRead')} |")
    out.append("")


def churn_table(rows, results_dir, out):
    data = {method(r): r for r in rows if klass(r) == "RamTierChurnBenchmark"}
    if not data:
        return
    # twelve sizes from 64 KiB to 4 MiB, evenly spaced on a log scale, each 100 bytes short
    sizes = [int(65536 * (64 ** (i / 11))) - 100 for i in range(12)]
    average = sum(sizes) / len(sizes)
    out.append("### Puts of mixed sizes under constant eviction (fragmentation)\n")
    out.append("| operation | GB/s | ratio to plain copy |")
    out.append("|---|---|---|")
    base = data.get("baselinePut")
    for m in ["baselinePut", "put"]:
        if m in data:
            s, e = (data[m]["primaryMetric"][k] * average / 1e9 for k in ("score", "scoreError"))
            ratio = s / (base["primaryMetric"]["score"] * average / 1e9) if base else float("nan")
            out.append(f"| {m} | {s:.2f} ± {e:.2f} | **{ratio:.2f}** |")
    txt = os.path.join(results_dir, "churn.txt")
    if os.path.exists(txt):
        lines = [l.strip() for l in open(txt) if l.startswith("churn:") and not l.startswith("churn: 0 puts")]
        if lines:
            out.append("")
            out.append("Allocator figures printed at the end of each `put` fork:")
            out.append("")
            out.extend(f"    {l}" for l in lines)
    out.append("")


def codec_table(rows, results_dir, out):
    data = {}
    for r in rows:
        if klass(r) == "CodecBenchmark":
            q = r["params"]
            key = (q["data"], q["filter"], int(q["chunkSizeBytes"]), int(q.get("codecThreads", "1")))
            data[(key, method(r))] = r["primaryMetric"]["score"] * (4 << 20) / 1e9
    if not data:
        return
    ratios = {}
    txt = os.path.join(results_dir, "codec.txt")
    if os.path.exists(txt):
        for line in open(txt):
            if line.startswith("ratio:"):
                f = dict(kv.split("=") for kv in line.split()[1:])
                ratios[(f["data"], f["filter"], int(f["chunk"]))] = float(f["container"])
    out.append("### Codec against raw LZ4 on the same (filtered) bytes, 4 MiB blocks (GB/s)\n")
    out.append("| data | filter | chunk | threads | ratio | encode | raw compress | encode / raw | decode | raw decompress | decode / raw |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    keys = sorted({k for k, _ in data})
    for k in keys:
        g = lambda m: data.get((k, m))
        enc, rc, dec, rd = g("encode"), g("rawCompress"), g("decode"), g("rawDecompress")
        if None in (enc, rc, dec, rd):
            continue
        ratio = ratios.get(k[:3])
        out.append(f"| {k[0]} | {k[1]} | {size_label(k[2])} | {k[3]} | {ratio if ratio else '-'} "
                   f"| {enc:.2f} | {rc:.2f} | **{enc / rc:.2f}** | {dec:.2f} | {rd:.2f} | **{dec / rd:.2f}** |")
    out.append("")


def main():
    results_dir, img = sys.argv[1], sys.argv[2]
    os.makedirs(img, exist_ok=True)
    rows = load(results_dir)
    out = []
    ram_tables(rows, out, img)
    churn_table(rows, results_dir, out)
    peer_tables(rows, out, img)
    memory_table(rows, out)
    codec_table(rows, results_dir, out)
    with open(os.path.join(results_dir, "summary.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
