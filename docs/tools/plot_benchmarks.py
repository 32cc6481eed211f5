#!/usr/bin/env python3
"""Turns the JMH JSON results of kvcache-bench/run-benchmarks.sh into tables and plots.

    python3 docs/tools/plot_benchmarks.py docs/results docs/img

Reads the results from one subdirectory of docs/results per page of docs/benchmarks/ (ram-tier,
codec, disk-tier, ...): JMH's JSON files wherever they lie, and the other files by their names below.
Writes docs/results/summary.md (the tables the pages quote, cited by docs/benchmarks/method.md) and
PNG plots into the image directory. Throughput is converted from operations/s to GB/s (10^9 bytes) with the block
size; errors are JMH's 99.9% confidence half-widths.
"""
import csv
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(results_dir):
    rows = []
    found = [(name, os.path.join(d, name)) for d, _, names in os.walk(results_dir) for name in names]
    for name, path in sorted(found):  # by file name, whatever the subdirectory
        if name.endswith(".json"):
            with open(path) as f:
                data = json.load(f)
            if not isinstance(data, list):  # not JMH's: read by the function for its file
                continue
            for r in data:
                r["file"] = name
                rows.append(r)
    return rows


def read_json(results_dir, name):
    """The JSON document of one result file, or None if the run has not been made."""
    path = os.path.join(results_dir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


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


def bar_panel(ax, ylabel, title):
    """Labels a panel of bars and puts its grid and legend on it."""
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def size_axis(ax, sizes, ylabel):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("block size")
    ax.set_ylabel(ylabel)


def median_range(values):
    """The median of some figures, and their least and greatest: "1.23 (1.10-1.40)"."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def ratio_cell(values, a, b):
    """A bold ratio of the first figures (the scores) of two entries, or "-" if either is missing."""
    return f"**{values[a][0] / values[b][0]:.2f}**" if a in values and b in values and values[b][0] else "-"


def ratio_bars(path, size, values, colors, labels, fontsize, ylabel, title):
    """One bar per ratio, with the line at 1 that tells better from worse."""
    fig, ax = plt.subplots(figsize=size)
    ax.bar(range(len(values)), values, color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels, fontsize=fontsize)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
    txt = os.path.join(results_dir, "ram-tier", "churn.txt")
    if os.path.exists(txt):
        lines = [l.strip() for l in open(txt) if l.startswith("churn:") and not l.startswith("churn: 0 puts")]
        if lines:
            out.append("")
            out.append("Allocator figures printed at the end of each `put` fork:")
            out.append("")
            out.extend(f"    {l}" for l in lines)
    out.append("")


def printed_ratios(results_dir, prefix, tag):
    """The ratios benchmark set-ups print, keyed by their fields, from the JMH text outputs."""
    found = {}
    for name in sorted(os.listdir(results_dir)):
        if name.startswith(prefix) and name.endswith(".txt"):
            for line in open(os.path.join(results_dir, name)):
                if line.startswith(tag):
                    f = dict(kv.split("=") for kv in line[len(tag):].split())
                    found[tuple(sorted(f.items()))] = f
    return list(found.values())


FILTERS = ["NONE", "BYTE_SHUFFLE_2", "BIT_SHUFFLE_2"]
FILTER_LABEL = {"NONE": "no filter", "BYTE_SHUFFLE_2": "byte shuffle", "BIT_SHUFFLE_2": "bit shuffle"}
DTYPE = {"kv_prose_fp16": "fp16", "kv_prose_bf16": "bf16", "random": "random"}


def codec_tables(rows, results_dir, out, img):
    block = 4 << 20
    score, err = {}, {}
    for r in rows:
        if klass(r) == "CodecBenchmark":
            q = r["params"]
            key = (q["data"], q["filter"], int(q["chunkSizeBytes"]), int(q.get("codecThreads", "1")), method(r))
            score[key] = r["primaryMetric"]["score"] * block / 1e9
            err[key] = r["primaryMetric"]["scoreError"] * block / 1e9
    if not score:
        return
    ratio = {}
    for f in printed_ratios(os.path.join(results_dir, "codec"), "codec", "ratio:"):
        ratio[(f["data"], f["filter"], int(f["chunk"]))] = float(f["container"])
    zstd = {}
    for r in rows:
        if klass(r) == "ZstdReferenceBenchmark":
            q = r["params"]
            zstd[(q["data"], q["filter"], int(q["level"]), method(r))] = r["primaryMetric"]["score"] * block / 1e9
    zratio = {}
    for f in printed_ratios(os.path.join(results_dir, "codec"), "zstd", "zstd ratio:"):
        zratio[(f["data"], f["filter"], int(f["level"]))] = float(f["ratio"])

    datas = [d for d in DTYPE if any(k[0] == d for k in score)]
    chunks = sorted({k[2] for k in score})
    g = lambda d, f, c, t, m: score.get((d, f, c, t, m))
    e = lambda d, f, c, t, m: err.get((d, f, c, t, m), 0)

    # 1. what to pick: ratio and single-core speed per dtype, 256 KiB chunks, zstd beside
    out.append("### Which setting for which data: ratio and one-core speed, 256 KiB chunks\n")
    out.append("| data | codec | ratio | encode GB/s | decode GB/s |")
    out.append("|---|---|---|---|---|")
    c0 = 262144 if 262144 in chunks else chunks[0]
    points = defaultdict(list)
    for d in datas:
        for f in FILTERS:
            enc, dec = g(d, f, c0, 1, "encode"), g(d, f, c0, 1, "decode")
            rt = ratio.get((d, f, c0))
            if enc is None or dec is None or rt is None:
                continue
            out.append(f"| {DTYPE[d]} | LZ4, {FILTER_LABEL[f]} | {rt:.3f} | {enc:.2f} ± {e(d, f, c0, 1, 'encode'):.2f} "
                       f"| {dec:.2f} ± {e(d, f, c0, 1, 'decode'):.2f} |")
            points[d].append((f"LZ4, {FILTER_LABEL[f]}", rt, dec))
        for f in ["NONE", "BYTE_SHUFFLE_2"]:
            for lvl in (1, 3):
                c, dz = zstd.get((d, f, lvl, "compress")), zstd.get((d, f, lvl, "decompress"))
                rt = zratio.get((d, f, lvl))
                if c is None or dz is None or rt is None:
                    continue
                out.append(f"| {DTYPE[d]} | zstd {lvl}, {FILTER_LABEL[f]} (reference, filter untimed) | {rt:.3f} | {c:.2f} | {dz:.2f} |")
                points[d].append((f"zstd {lvl}, {FILTER_LABEL[f]}", rt, dz))
    out.append("")
    points.pop("random", None)  # one point at ratio 1: nothing to compare
    if points:
        fig, axes = plt.subplots(1, len(points), figsize=(5.5 * len(points), 4.2), squeeze=False)
        for ax, (d, pts) in zip(axes[0], points.items()):
            for label, rt, dec in pts:
                marker = "s" if label.startswith("zstd") else "o"
                ax.scatter(dec, rt, marker=marker, s=40)
                ax.annotate(label, (dec, rt), textcoords="offset points", xytext=(5, 4), fontsize=7)
            ax.axvline(2.0, color="grey", linestyle=":", linewidth=1)
            ax.set_xscale("log")
            ax.set_xlabel("decode GB/s, one core (log)")
            ax.set_ylabel("compression ratio")
            ax.set_title(f"{DTYPE[d]}: ratio against decoding speed (goal: right of the line)")
        fig.tight_layout()
        fig.savefig(os.path.join(img, "codec-ratio-speed.png"), dpi=110)
        plt.close(fig)

    # ratio against chunk size
    out.append("### Compression ratio against chunk size\n")
    out.append("| data | filter | " + " | ".join(size_label(c) for c in chunks) + " |")
    out.append("|---|---|" + "---|" * len(chunks))
    for d in datas:
        for f in FILTERS:
            rs = [ratio.get((d, f, c)) for c in chunks]
            if any(r is not None for r in rs):
                out.append(f"| {DTYPE[d]} | {FILTER_LABEL[f]} | " + " | ".join(f"{r:.4f}" if r else "-" for r in rs) + " |")
    out.append("")

    # 2. what the container costs: codec against LZ4 (+ filter) chained by hand, one thread
    out.append("### Container cost: the codec against raw LZ4 and the same filter chained by hand (one thread, GB/s)\n")
    out.append("| data | filter | chunk | encode | by hand | encode / by hand | raw LZ4 compress | decode | by hand | decode / by hand | raw LZ4 decompress |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in datas:
        for f in FILTERS:
            for c in chunks:
                enc, hc, rc = g(d, f, c, 1, "encode"), g(d, f, c, 1, "rawCompressWithFilter"), g(d, f, c, 1, "rawCompress")
                dec, hd, rd = g(d, f, c, 1, "decode"), g(d, f, c, 1, "rawDecompressWithFilter"), g(d, f, c, 1, "rawDecompress")
                if None in (enc, hc, rc, dec, hd, rd):
                    continue
                out.append(f"| {DTYPE[d]} | {FILTER_LABEL[f]} | {size_label(c)} | {enc:.2f} | {hc:.2f} | **{enc / hc:.2f}** | {rc:.2f} "
                           f"| {dec:.2f} | {hd:.2f} | **{dec / hd:.2f}** | {rd:.2f} |")
    out.append("")

    # 3. two threads against one
    out.append("### Two codec threads against one (GB/s)\n")
    out.append("| data | filter | chunk | encode, 1 | encode, 2 | speed-up | decode, 1 | decode, 2 | speed-up |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for d in datas:
        for f in FILTERS:
            for c in chunks:
                e1, e2, d1, d2 = g(d, f, c, 1, "encode"), g(d, f, c, 2, "encode"), g(d, f, c, 1, "decode"), g(d, f, c, 2, "decode")
                if None in (e1, e2, d1, d2):
                    continue
                out.append(f"| {DTYPE[d]} | {FILTER_LABEL[f]} | {size_label(c)} | {e1:.2f} | {e2:.2f} | **{e2 / e1:.2f}** "
                           f"| {d1:.2f} | {d2:.2f} | **{d2 / d1:.2f}** |")
    out.append("")

    # plot: encode and decode speed against chunk size, per data, one line per filter
    fig, axes = plt.subplots(2, len(datas), figsize=(5 * len(datas), 7.5), squeeze=False)
    for col, d in enumerate(datas):
        for row, (m, hand) in enumerate((("encode", "rawCompressWithFilter"), ("decode", "rawDecompressWithFilter"))):
            ax = axes[row][col]
            for f in FILTERS:
                for t, style in ((1, "-o"), (2, "--^")):
                    ys = [g(d, f, c, t, m) for c in chunks]
                    if any(y is None for y in ys):
                        continue
                    ax.plot(chunks, ys, style, label=f"{FILTER_LABEL[f]}, {t} thread{'s' if t > 1 else ''}")
                hs = [g(d, f, c, 1, hand) for c in chunks]
                if not any(h is None for h in hs):
                    ax.plot(chunks, hs, ":", color="grey", linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_xticks(chunks)
            ax.set_xticklabels([size_label(c) for c in chunks])
            ax.set_yscale("log")
            ax.set_ylim(0.3, 60)
            ax.axhline(2.0, color="grey", linestyle="--", linewidth=0.8)
            ax.set_xlabel("chunk size")
            ax.set_ylabel(f"{m} GB/s (log)")
            ax.set_title(f"{DTYPE[d]}: {m} (dotted: LZ4 + filter by hand, 1 thread; dashed: 2 GB/s)", fontsize=9)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "codec-speed.png"), dpi=110)
    plt.close(fig)


def small_tables(rows, out):
    """The filter kernels and the checksum candidates, in GB/s beside a copy of the same bytes."""
    for cls, title, size_param in (("FilterBenchmark", "Filters alone on one chunk of bf16 tensors (heap arrays)", "chunkSizeBytes"),
                                   ("ChecksumBenchmark", "Chunk checksum candidates (direct buffer)", "chunkSizeBytes")):
        sel = [r for r in rows if klass(r) == cls]
        if not sel:
            continue
        out.append(f"### {title}\n")
        out.append("| operation | parameters | GB/s |")
        out.append("|---|---|---|")
        for r in sorted(sel, key=lambda r: (sorted(r["params"].items()), method(r))):
            q = {k: v for k, v in r["params"].items() if k != "dataDir"}
            size = int(q[size_param])
            m = r["primaryMetric"]
            params = ", ".join(f"{k}={size_label(v) if k == size_param else v}" for k, v in sorted(q.items()))
            out.append(f"| {method(r)} | {params} | {m['score'] * size / 1e9:.2f} ± {m['scoreError'] * size / 1e9:.2f} |")
        out.append("")


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


def put_path_tables(results_dir, out, img):
    """Sustained PUTs through kvcache-server over its disk tier beside the floor program, from
    python/benchmarks/put_path.py (put-path.json): medians over the rounds, GB/s and the server's
    CPU seconds per GiB, per RAM size and block size."""
    doc = read_json(results_dir, "puts-under-pressure/put-path.json")
    if doc is None:
        return
    runs = doc["runs"]
    names = {"kvcache": "kvcache, page cache", "kvcache-direct": "kvcache, HTTP/1.1 (Python)",
             "floor": "floor, page cache", "floor-direct": "floor, HTTP/1.1 (Python)",
             "kvcache-direct-h2": "kvcache, HTTP/2 (Java)", "floor-direct-h2": "floor, HTTP/2 (Java)"}
    systems = [s for s in names if any(r["system"] == s for r in runs)]
    cases = sorted({(r["ram_bytes"], r["block_bytes"]) for r in runs})

    def values(ram, size, system, field):
        return [r[field] for r in runs if (r["ram_bytes"], r["block_bytes"], r["system"]) == (ram, size, system)]

    out.append("\n### A PUT, socket to device: kvcache-server beside the floor program (medians)\n")
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
    fig.savefig(os.path.join(img, "put-path.png"), dpi=110)
    plt.close(fig)


def tiered_tables(rows, out, img):
    """The tiered cache beside RAM alone and disk alone (TieredCacheBenchmark), GB/s and ratios."""
    data = {}  # (method, stack, size) -> (GB/s, error)
    for r in rows:
        if klass(r) == "TieredCacheBenchmark" and r["file"] == "tiered.json":
            data[(method(r), r["params"]["stack"], int(r["params"]["blockSizeBytes"]))] = gbps(r)
    if not data:
        return
    stacks = [s for s in ["ram+disk", "ram+disk-no-promotion", "ram", "disk"] if any(k[1] == s for k in data)]
    sizes = sorted({k[2] for k in data})
    methods = [m for m in ["getInto", "put"] if any(k[0] == m for k in data)]
    out.append("\n### Tiered cache beside its tiers (GB/s)\n")
    out.append("| operation | block | " + " | ".join(stacks) + " | ram+disk / disk | ram+disk / ram |")
    out.append("|---|---:|" + "---:|" * (len(stacks) + 2))
    for m in methods:
        for size in sizes:
            cells = [f"{data[(m, st, size)][0]:.2f} ± {data[(m, st, size)][1]:.2f}" if (m, st, size) in data else "-"
                     for st in stacks]
            ratios = []
            for base in ["disk", "ram"]:
                if (m, "ram+disk", size) in data and (m, base, size) in data:
                    ratios.append(f"{data[(m, 'ram+disk', size)][0] / data[(m, base, size)][0]:.2f}")
                else:
                    ratios.append("-")
            out.append(f"| {m} | {size_label(size)} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    fig, axes = plt.subplots(1, len(methods), figsize=(6 * len(methods), 3.8), squeeze=False)
    width = 0.8 / len(stacks)
    for ax, m in zip(axes[0], methods):
        for i, st in enumerate(stacks):
            xs = [j + i * width for j in range(len(sizes))]
            vals = [data.get((m, st, size), (0, 0)) for size in sizes]
            ax.bar(xs, [v[0] for v in vals], width, yerr=[v[1] for v in vals], capsize=3, label=st)
        ax.set_xticks([j + width * (len(stacks) - 1) / 2 for j in range(len(sizes))])
        ax.set_xticklabels([size_label(size) for size in sizes])
        ax.set_xlabel("block size")
        bar_panel(ax, "GB/s", f"{m}: working set twice the RAM tier")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "tiered-vs-tiers.png"), dpi=110)
    plt.close(fig)


def hit_ratio_panel(ax, xlabel, trace):
    """Labels a panel of hit ratio against capacity (log scale) on a trace, with grid and legend."""
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("block hit ratio")
    ax.set_title(trace.replace("mooncake_", "Mooncake ").replace("_", " "))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def trace_tables(results_dir, out, img):
    """Hit ratio against capacity on the request traces (TraceReplay's CSV), one panel per trace."""
    path = os.path.join(results_dir, "traces", "trace-hit-ratio.csv")
    if not os.path.exists(path):
        return
    ratio = {}  # (trace, capacity, model) -> hit ratio
    with open(path) as f:
        for r in csv.DictReader(f):
            if r.get("copy", "1") == "1":
                ratio[(r["trace"], int(r["capacity_blocks"]), r["model"])] = float(r["hit_ratio"])
    for t, c in {(t, c) for t, c, m in list(ratio) if m.startswith("wtinylfu-window-")}:
        ratio[(t, c, "wtinylfu-best")] = max(v for (tt, cc, m), v in ratio.items()
                                             if tt == t and cc == c and m.startswith("wtinylfu-window-"))
    traces = sorted({t for t, _, _ in ratio})
    models = [m for m in ["lru", "lru-orphans-first", "lru-reuse-oracle", "wtinylfu-best", "kvcache",
                          "kvcache-w-tiny-lfu", "ceiling"]
              if any(k[2] == m for k in ratio)]
    names = {"lru": "exact LRU", "lru-orphans-first": "LRU, orphans first",
             "lru-reuse-oracle": "LRU, knows what is reused", "wtinylfu-best": "W-TinyLFU, best window",
             "kvcache": "kvcache RAM tier (LRU, default)",
             "kvcache-w-tiny-lfu": "kvcache RAM tier (W-TinyLFU)", "ceiling": "ceiling (Belady MIN)"}
    fig, axes = plt.subplots(1, len(traces), figsize=(6 * len(traces), 4), squeeze=False)
    for ax, t in zip(axes[0], traces):
        caps = sorted({c for tt, c, _ in ratio if tt == t}, key=lambda c: c if c else 1 << 62)
        limited = [c for c in caps if c]
        out.append(f"\n### Hit ratio, {t.replace('mooncake_', '').replace('_', ' ')}\n")
        out.append("| capacity (blocks) | " + " | ".join(names[m] for m in models) + " | gap closed |")
        out.append("|---:|" + "---:|" * (len(models) + 1))
        for c in caps:
            vals = {m: ratio.get((t, c, m)) for m in models}
            gap = "-"
            if None not in (vals.get("lru"), vals.get("ceiling"), vals.get("kvcache")):
                width = vals["ceiling"] - vals["lru"]
                if width > 1e-9:
                    gap = f"{(vals['kvcache'] - vals['lru']) / width:+.2f}"
            out.append(f"| {c if c else 'unlimited'} | " + " | ".join(
                f"{vals[m]:.3f}" if vals[m] is not None else "-" for m in models) + f" | {gap} |")
        for m in models:
            pts = [(c, ratio[(t, c, m)]) for c in limited if (t, c, m) in ratio]
            style = {"lru": dict(color="black", linewidth=2.5),
                     "lru-orphans-first": dict(linestyle=":", marker="."),
                     "wtinylfu-best": dict(linestyle="--", marker="s")}.get(m, dict(marker="o"))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=names[m], **style)
        if "lru" in models and "ceiling" in models:
            ax.fill_between(limited, [ratio[(t, c, "lru")] for c in limited],
                            [(ratio[(t, c, "lru")] + ratio[(t, c, "ceiling")]) / 2 for c in limited],
                            color="grey", alpha=0.15, label="target: half the gap closed")
        unlimited = ratio.get((t, 0, "lru"))
        if unlimited is not None:
            ax.axhline(unlimited, color="black", linestyle=":", linewidth=1, label="unlimited capacity")
        hit_ratio_panel(ax, "capacity (blocks of 512 tokens)", t)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "trace-hit-ratio.png"), dpi=110)
    plt.close(fig)


def tier_tables(results_dir, out, img):
    """Hits per tier of the disk tier alone and of RAM over disk on the request traces
    (TierReplay's CSV), beside LRU of the same capacity and of the blocks the disk held."""
    path = os.path.join(results_dir, "traces", "trace-tiers.csv")
    if not os.path.exists(path):
        return
    with open(path) as f:
        rows = list(csv.DictReader(f))
    traces = sorted({r["trace"] for r in rows})
    fig, axes = plt.subplots(1, len(traces), figsize=(6 * len(traces), 4), squeeze=False)
    for ax, t in zip(axes[0], traces):
        name = t.replace("mooncake_", "").replace("_", " ")
        mine = {(r["model"], int(r["disk_blocks"])): r for r in rows if r["trace"] == t}
        caps = sorted({c for _, c in mine})
        out.append(f"\n### Disk tier and RAM over disk, {name}\n")
        out.append("| disk capacity (blocks) | disk alone | blocks it held (mean) | LRU, same capacity"
                   " | LRU, blocks held | RAM over disk: RAM | spill | disk | total"
                   " | LRU, RAM + disk capacity |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        n = lambda r, col: int(r[col]) / int(r["accesses"])  # noqa: E731
        for c in caps:
            d, t2 = mine[("disk", c)], mine[("ram-over-disk", c)]
            out.append(f"| {c:,} | {float(d['hit_ratio']):.3f} | {int(d['disk_blocks_held_mean']):,}"
                       f" | {float(d['lru_same_capacity_hit_ratio']):.3f}"
                       f" | {float(d['lru_capacity_held_hit_ratio']):.3f}"
                       f" | {n(t2, 'ram_hits'):.3f} | {n(t2, 'spill_hits'):.3f} | {n(t2, 'disk_hits'):.3f}"
                       f" | {float(t2['hit_ratio']):.3f} | {float(t2['lru_same_capacity_hit_ratio']):.3f} |")
        series = [("disk tier alone", "disk", "hit_ratio", dict(marker="o", color="tab:blue")),
                  ("LRU, disk's capacity", "disk", "lru_same_capacity_hit_ratio",
                   dict(color="tab:blue", linestyle="--")),
                  ("LRU, blocks the disk held", "disk", "lru_capacity_held_hit_ratio",
                   dict(color="tab:blue", linestyle=":")),
                  ("RAM (¼ of disk) over disk", "ram-over-disk", "hit_ratio",
                   dict(marker="s", color="tab:orange")),
                  ("LRU, RAM + disk capacity", "ram-over-disk", "lru_same_capacity_hit_ratio",
                   dict(color="tab:orange", linestyle="--"))]
        for label, model, col, style in series:
            ax.plot(caps, [float(mine[(model, c)][col]) for c in caps], label=label, **style)
        ax.bar(caps, [n(mine[("ram-over-disk", c)], "ram_hits") for c in caps],
               width=[c * 0.25 for c in caps], color="tab:orange", alpha=0.3,
               label="of which RAM served")
        hit_ratio_panel(ax, "disk tier capacity (blocks of 512 tokens)", t)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "trace-tiers.png"), dpi=110)
    plt.close(fig)


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


class ServerRuns:
    """The rows of a run-server-benchmarks.sh CSV, by (size, streams, connections, system, op):
    medians over the rounds of GB/s, of CPU µs per MiB moved and of cores kept busy, each for the
    server's process and for the load generator."""

    def __init__(self, path):
        runs = defaultdict(list)
        with open(path) as f:
            for r in csv.DictReader(f):
                runs[(int(r["size"]), int(r["streams"]), int(r["connections"]), r["system"],
                      r["op"])].append(r)

        def median(v, f):
            return statistics.median(f(r) for r in v)

        def per_mib(col):
            return lambda r: (float(r[col]) * 1048576
                              / (float(r["gb_per_s"]) * 1e9 / float(r["requests_per_s"])))

        def busy(col):
            return lambda r: float(r[col]) * float(r["requests_per_s"]) / 1e6

        cols = ("server_cpu_us", "client_cpu_us")
        self.gbps = {k: [float(r["gb_per_s"]) for r in v] for k, v in runs.items()}
        self.med = {k: statistics.median(v) for k, v in self.gbps.items()}
        self.cpu = {k: tuple(median(v, per_mib(c)) for c in cols) for k, v in runs.items()}
        self.busy = {k: tuple(median(v, busy(c)) for c in cols) for k, v in runs.items()}
        self.sizes = sorted({k[0] for k in self.med})
        # (streams, connections): one connection per request first
        self.modes = sorted({k[1:3] for k in self.med}, key=lambda m: (m[0], -m[1]))

    def cell(self, k):
        return median_range(self.gbps[k]) if k in self.gbps else "-"

    def ratio(self, a, b):
        med = self.med
        return f"**{med[a] / med[b]:.2f}**" if a in med and b in med and med[b] > 0 else "-"

    def rows(self):
        """Each row's first cells (block, requests in flight, connections × requests on each), and
        the key of a system's operation in that row."""
        for s in self.sizes:
            for n, c in self.modes:
                yield (f"| {size_label(s)} | {n} | {c} × {n // c} ",
                       lambda sys_, op, s=s, n=n, c=c: (s, n, c, sys_, op))


def server_tables(results_dir, out, img):
    """kvcache-server beside nginx and Redis (run-server-benchmarks.sh): medians over the rounds.

    Each count of requests in flight ("streams") comes as many connections of one request each,
    and (above one) as fewer connections of several: HTTP/2 streams, Redis pipelining.
    """
    path = os.path.join(results_dir, "server", "server.csv")
    if not os.path.exists(path):
        return
    runs = ServerRuns(path)
    med, cpu, sizes = runs.med, runs.cpu, runs.sizes
    cell, ratio, rows = runs.cell, runs.ratio, runs.rows

    out.append("\n### kvcache-server beside nginx and Redis (GB/s, median of rounds (min-max))\n")
    out.append("| block | in flight | connections × per connection | kvcache GET | nginx GET | Redis GET "
               "| kvcache PUT | Redis SET | GET / nginx | GET / Redis | PUT / Redis SET |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for head, k in rows():
        out.append(head + f"| {cell(k('kvcache', 'get'))} "
                   f"| {cell(k('nginx', 'get'))} | {cell(k('redis', 'get'))} | {cell(k('kvcache', 'put'))} "
                   f"| {cell(k('redis', 'set'))} | {ratio(k('kvcache', 'get'), k('nginx', 'get'))} "
                   f"| {ratio(k('kvcache', 'get'), k('redis', 'get'))} "
                   f"| {ratio(k('kvcache', 'put'), k('redis', 'set'))} |")

    def us(k, i):
        return f"{cpu[k][i]:,.0f}" if k in cpu else "-"

    def cpu_ratio(a, b, i):
        return f"**{cpu[a][i] / cpu[b][i]:.2f}**" if a in cpu and b in cpu and cpu[b][i] > 0 else "-"

    out.append("\n### CPU time per MiB moved (µs; the server's process, and the load generator's)\n")
    out.append("| block | in flight | connections × per connection | server: kvcache GET | Redis GET "
               "| kvcache / Redis | kvcache PUT | Redis SET | kvcache / Redis | generator: h2load GET "
               "| redis-benchmark GET | h2load PUT | redis-benchmark SET |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for head, k in rows():
        out.append(head + f"| {us(k('kvcache', 'get'), 0)} | {us(k('redis', 'get'), 0)} "
                   f"| {cpu_ratio(k('kvcache', 'get'), k('redis', 'get'), 0)} "
                   f"| {us(k('kvcache', 'put'), 0)} | {us(k('redis', 'set'), 0)} "
                   f"| {cpu_ratio(k('kvcache', 'put'), k('redis', 'set'), 0)} "
                   f"| {us(k('kvcache', 'get'), 1)} | {us(k('redis', 'get'), 1)} "
                   f"| {us(k('kvcache', 'put'), 1)} | {us(k('redis', 'set'), 1)} |")

    batch = sorted(k[:3] for k in med if k[3:] == ("kvcache", "batch-get"))
    if batch:
        out.append("\n### Batches of 8 blocks: kvcache batch-get beside Redis MGET of 8 keys, "
                   "one request per connection (GB/s, median of rounds (min-max))\n")
        out.append("| block | connections | kvcache batch-get | Redis MGET | batch / MGET "
                   "| batch / Redis GET | batch / kvcache GET |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for s, n, c in batch:
            k = lambda sys_, op: (s, n, c, sys_, op)
            out.append(f"| {size_label(s)} | {c} | {cell(k('kvcache', 'batch-get'))} "
                       f"| {cell(k('redis', 'mget'))} "
                       f"| {ratio(k('kvcache', 'batch-get'), k('redis', 'mget'))} "
                       f"| {ratio(k('kvcache', 'batch-get'), k('redis', 'get'))} "
                       f"| {ratio(k('kvcache', 'batch-get'), k('kvcache', 'get'))} |")
    lookup = os.path.join(results_dir, "server", "server-lookup.csv")
    if os.path.exists(lookup):
        with open(lookup) as f:
            r = next(csv.DictReader(f))
        out.append(f"\nLookup of 128 keys, one stream: p50 {int(r['p50_us'])} µs, p99 {int(r['p99_us'])} µs, "
                   f"max {int(r['max_us'])} µs over {int(r['requests'])} requests.")
    alloc = os.path.join(results_dir, "server", "server-alloc.csv")
    if os.path.exists(alloc):
        per = {}
        with open(alloc) as f:
            for r in csv.DictReader(f):
                per[(int(r["size"]), r["op"])] = (int(r["heap_bytes_per_request"]), int(r["requests"]))
        out.append("\n### Heap allocated by kvcache-server per request (h2load, 4 streams)\n")
        out.append("| block | GET bytes/request | per KiB of block | PUT bytes/request | per KiB of block |")
        out.append("|---|---:|---:|---:|---:|")
        for s in sorted({k[0] for k in per}):
            g = per.get((s, "get"), (0, 0))[0]
            p_ = per.get((s, "put"), (0, 0))[0]
            out.append(f"| {size_label(s)} | {g:,} | {g * 1024 / s:.0f} | {p_:,} | {p_ * 1024 / s:.0f} |")

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    series = [("kvcache", "get", "kvcache GET", dict(color="C0", marker="o", linewidth=2.5)),
              ("nginx", "get", "nginx GET (static file)", dict(color="C2", marker="s")),
              ("redis", "get", "Redis GET", dict(color="C3", marker="^")),
              ("kvcache", "put", "kvcache PUT", dict(color="C0", marker="o", linestyle="--", linewidth=2.5)),
              ("redis", "set", "Redis SET", dict(color="C3", marker="^", linestyle="--")),
              ("kvcache", "batch-get", "kvcache batch-get of 8", dict(color="C1", marker="D", linewidth=2.5)),
              ("redis", "mget", "Redis MGET of 8", dict(color="C4", marker="v"))]
    panels = [((1, 1), "one connection, one request"),
              ((16, 16), "16 connections, one request each"),
              ((16, 4), "4 connections of 4 requests\n(HTTP/2 streams; Redis pipelining)")]
    for ax, ((n, c), title) in zip(axes, panels):
        for sys_, op, label, style in series:
            pts = [(s, med[(s, n, c, sys_, op)]) for s in sizes if (s, n, c, sys_, op) in med]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **style)
        size_axis(ax, sizes, "GB/s on loopback")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "server.png"), dpi=110)
    plt.close(fig)


def pinned_server_table(results_dir, out, img):
    """run-server-benchmarks.sh with PIN=1: the servers on one core, the load generators on the
    other; beside each throughput, how much of its core each process kept busy."""
    path = os.path.join(results_dir, "server", "server-pinned.csv")
    if not os.path.exists(path):
        return
    runs = ServerRuns(path)
    pinned_server_plot(runs, img)

    def busy(a, b):
        if a not in runs.busy or b not in runs.busy:
            return "-"
        return f"{runs.busy[a][0]:.2f} / {runs.busy[a][1]:.2f} · {runs.busy[b][0]:.2f} / {runs.busy[b][1]:.2f}"

    out.append("\n### One core each: servers on CPU 0, load generators on CPU 1 "
               "(GB/s, median of rounds (min-max))\n")
    out.append("Cores busy: the server's / its generator's, kvcache and h2load · Redis and "
               "redis-benchmark.\n")
    out.append("| block | in flight | connections × per connection | kvcache GET | nginx GET | Redis GET "
               "| GET / nginx | GET / Redis | cores busy, GET | kvcache PUT | Redis SET "
               "| PUT / Redis SET | cores busy, PUT |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
    for head, k in runs.rows():
        out.append(head + f"| {runs.cell(k('kvcache', 'get'))} | {runs.cell(k('nginx', 'get'))} "
                   f"| {runs.cell(k('redis', 'get'))} | {runs.ratio(k('kvcache', 'get'), k('nginx', 'get'))} "
                   f"| {runs.ratio(k('kvcache', 'get'), k('redis', 'get'))} "
                   f"| {busy(k('kvcache', 'get'), k('redis', 'get'))} "
                   f"| {runs.cell(k('kvcache', 'put'))} | {runs.cell(k('redis', 'set'))} "
                   f"| {runs.ratio(k('kvcache', 'put'), k('redis', 'set'))} "
                   f"| {busy(k('kvcache', 'put'), k('redis', 'set'))} |")


def pinned_server_plot(runs, img):
    """Two panels for 4 connections of one request each: GB/s of each system by block size, and how
    much of its core each server and each load generator kept busy for the PUTs."""
    n, c = 4, 4
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    series = [("kvcache", "get", "kvcache GET", dict(color="C0", marker="o", linewidth=2.5)),
              ("redis", "get", "Redis GET", dict(color="C3", marker="^")),
              ("kvcache", "put", "kvcache PUT", dict(color="C0", marker="o", linestyle="--", linewidth=2.5)),
              ("redis", "set", "Redis SET", dict(color="C3", marker="^", linestyle="--"))]
    for sys_, op, label, style in series:
        pts = [(s, runs.med[(s, n, c, sys_, op)]) for s in runs.sizes if (s, n, c, sys_, op) in runs.med]
        if pts:
            left.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **style)
    size_axis(left, runs.sizes, "GB/s on loopback")
    left.set_title("4 connections, one request each;\nservers on CPU 0, load generators on CPU 1")
    left.legend(fontsize=7)
    bars = [(s, sys_, op) for s in runs.sizes for sys_, op in (("kvcache", "put"), ("redis", "set"))
            if (s, n, c, sys_, op) in runs.busy]
    x = range(len(bars))
    server = [runs.busy[(s, n, c, sys_, op)][0] for s, sys_, op in bars]
    generator = [runs.busy[(s, n, c, sys_, op)][1] for s, sys_, op in bars]
    right.bar([i - 0.2 for i in x], server, 0.4, label="server's core", color="C0")
    right.bar([i + 0.2 for i in x], generator, 0.4, label="load generator's core", color="C7")
    right.set_xticks(list(x))
    right.set_xticklabels([f"{'kvcache PUT' if sys_ == 'kvcache' else 'Redis SET'}\n{size_label(s)}"
                           for s, sys_, op in bars], fontsize=7)
    right.set_ylim(0, 1.05)
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_ylabel("share of its core kept busy")
    right.set_title("PUTs: the load generator's core is full,\nthe server's is not")
    right.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "server-pinned.png"), dpi=110)
    plt.close(fig)


def setting_table(results_dir, out, img, stem, base, label, what):
    """compare-server-settings.sh: h2load GETs under several settings of one server build (the
    settings are "<name>-<number>"), in alternating rounds, on shared cores (<stem>.csv) and with one
    core each (<stem>-pinned.csv); each setting against base in the same round."""
    placements = {}  # placement -> {(size, connections, streams): {setting: {round: GB/s}}}
    for placement, name in [("shared cores", f"{stem}.csv"), ("one core each", f"{stem}-pinned.csv")]:
        path = os.path.join(results_dir, "server", name)
        if os.path.exists(path):
            with open(path) as f:
                data = placements.setdefault(placement, {})
                for r in csv.DictReader(f):
                    load = (int(r["size"]), int(r["connections"]), int(r["streams"]))
                    data.setdefault(load, {}).setdefault(r["setting"], {})[int(r["round"])] = float(r["gb_per_s"])
    others = sorted({st for data in placements.values() for by in data.values() for st in by if st != base},
                    key=lambda st: int(st.split("-")[1]))
    if not others:
        return
    name = {st: label(int(st.split("-")[1])) for st in others + [base]}

    out.append(f"\n### {what} against {name[base]} (h2load GETs; GB/s and ratios in the same round, "
               "median of rounds (min-max))\n")
    out.append(f"| placement | block | connections × streams | {name[base]} | "
               + " | ".join(f"{name[st]} | {name[st]} / {name[base]}" for st in others) + " |")
    out.append("|---|---|---|---:|" + "---:|---:|" * len(others))
    points = []  # (load label, placement, setting, ratios)
    for placement, data in placements.items():
        for (size, c, m), by_setting in sorted(data.items()):
            old = by_setting.get(base, {})
            if not old:
                continue
            cells = []
            for st in others:
                new = by_setting.get(st, {})
                rounds = sorted(set(old) & set(new))
                if not rounds:
                    cells += ["-", "-"]
                    continue
                ratios = [new[i] / old[i] for i in rounds]
                cells += [median_range(list(new.values())), f"**{median_range(ratios)}**"]
                points.append((f"{size_label(size)}\n{c} × {m}", placement, st, ratios))
            out.append(f"| {placement} | {size_label(size)} | {c} × {m} | {median_range(list(old.values()))} | "
                       + " | ".join(cells) + " |")
    loads = list(dict.fromkeys(p[0] for p in points))
    series = [(pl, st) for pl in placements for st in others]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(series)
    for i, (placement, setting) in enumerate(series):
        color, first = f"C{i}", True
        for load, where, st, ratios in points:
            if (where, st) != (placement, setting):
                continue
            x = loads.index(load) + (i - (len(series) - 1) / 2) * width
            ax.scatter([x] * len(ratios), ratios, color=color, alpha=0.45, s=12,
                       label=f"{name[setting]}, {placement}" if first else None)
            ax.plot([x - width / 2.5, x + width / 2.5], [statistics.median(ratios)] * 2, color=color, linewidth=2.5)
            first = False
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(loads)))
    ax.set_xticklabels(loads, fontsize=7)
    ax.set_ylabel(f"GB/s against {name[base]}, same round")
    ax.set_title(f"{what} (h2load GETs): a dot per round, a bar per median;\n"
                 f"above 1 the setting beats {name[base]}", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(img, f"{stem}.png"), dpi=110)
    plt.close(fig)


def wire_tables(results_dir, out, img):
    """The wire codec against plain blocks (WireCodecBenchmark), per link: wire-<link>.json."""
    links = {}  # link -> {(method, size): (GB/s, error)}
    codec_dir = os.path.join(results_dir, "codec")
    for name in sorted(os.listdir(codec_dir)) if os.path.isdir(codec_dir) else []:
        if name.startswith("wire-") and name.endswith(".json"):
            with open(os.path.join(codec_dir, name)) as f:
                links[name[len("wire-"):-len(".json")]] = {
                    (method(r), int(r["params"]["blockBytes"])): tuple(
                        r["primaryMetric"][k] * int(r["params"]["blockBytes"]) / 1e9
                        for k in ["score", "scoreError"]) for r in json.load(f)}
    if not links:
        return
    order = sorted(links, key=lambda link: (link != "loopback", link))
    sizes = sorted({k[1] for data in links.values() for k in data})
    ratios = printed_ratios(os.path.join(results_dir, "codec"), "wire-", "wire:")
    out.append("\n### The wire codec beside plain blocks (GB/s of decoded blocks; ratio = coded / plain)\n")
    if ratios:
        out.append("Bytes on the wire per block byte, " + ratios[0]["data"] + " with " + ratios[0]["filter"] + ": "
                   + ", ".join(f"{size_label(int(f['block']))} {f['encoded/raw']}"
                               for f in sorted(ratios, key=lambda f: int(f["block"]))) + "\n")
    out.append("| link | block | plain GET | coded GET | GET ratio | plain PUT | coded PUT | PUT ratio |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for link in order:
        data = links[link]
        for size in sizes:
            cells = []
            for op in ["Get", "Put"]:
                plain, coded = data.get((f"plain{op}", size)), data.get((f"coded{op}", size))
                if plain and coded:
                    cells += [f"{plain[0]:.2f} ± {plain[1]:.2f}", f"{coded[0]:.2f} ± {coded[1]:.2f}",
                              f"**{coded[0] / plain[0]:.2f}**"]
                else:
                    cells += ["-", "-", "-"]
            out.append(f"| {link} | {size_label(size)} | " + " | ".join(cells) + " |")
    bars = [(link, op, size) for link in order for op in ["Get", "Put"] for size in sizes]
    vals = [links[l].get((f"coded{op}", sz), (0, 0))[0] / links[l].get((f"plain{op}", sz), (1, 0))[0]
            for l, op, sz in bars]
    ratio_bars(os.path.join(img, "wire-codec.png"), (7, 3.6), vals,
               ["tab:blue" if l == "loopback" else "tab:orange" for l, _, _ in bars],
               [f"{l}\n{op} {size_label(sz)}" for l, op, sz in bars], 7, "coded / plain (blocks per s)",
               "Wire codec (LZ4 + byte shuffle, bf16 KV tensors): above 1 it pays")


def client_tables(results_dir, out, img):
    """The Java client beside Jedis (RemoteClientBenchmark): remote-t<n>.json, remote-batch-t<n>.json."""
    runs = {}  # threads -> {(method, size): (ops/s, error)}
    client_dir = os.path.join(results_dir, "java-client")
    for name in sorted(os.listdir(client_dir)) if os.path.isdir(client_dir) else []:
        for prefix in ["remote-t", "remote-batch-t"]:
            if name.startswith(prefix) and name.endswith(".json") and name[len(prefix):-5].isdigit():
                with open(os.path.join(client_dir, name)) as f:
                    data = runs.setdefault(int(name[len(prefix):-5]), {})
                    for r in json.load(f):
                        if r["mode"] == "thrpt":
                            data[(method(r), int(r["params"]["blockBytes"]))] = (
                                r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"])
    if not runs:
        return
    pairs = [("GET", "kvcacheGet", "redisGet"), ("PUT", "kvcachePut", "redisSet"),
             ("batch of 8", "kvcacheGetBatch8", "redisMget8")]
    sizes = sorted({k[1] for data in runs.values() for k in data})
    out.append("\n### The Java client beside Jedis (operations/s; ratio = RemoteTier / Jedis)\n")
    out.append("| threads | block | " + " | ".join(f"{p[0]} kvcache | {p[0]} Jedis | {p[0]} ratio" for p in pairs) + " |")
    out.append("|---|---|" + "---:|" * (3 * len(pairs)))
    bars = []
    for threads in sorted(runs):
        data = runs[threads]
        for size in sizes:
            cells = []
            for label, ours, theirs in pairs:
                a, b = data.get((ours, size)), data.get((theirs, size))
                if a and b:
                    cells += [f"{a[0]:,.0f} ± {a[1]:,.0f}", f"{b[0]:,.0f} ± {b[1]:,.0f}", f"**{a[0] / b[0]:.2f}**"]
                    bars.append((threads, label, size, a[0] / b[0]))
                else:
                    cells += ["-", "-", "-"]
            out.append(f"| {threads} | {size_label(size)} | " + " | ".join(cells) + " |")
    colors = {"GET": "tab:blue", "PUT": "tab:orange", "batch of 8": "tab:green"}
    ratio_bars(os.path.join(img, "remote-client.png"), (8, 3.6), [v for *_, v in bars],
               [colors[label] for _, label, _, _ in bars],
               [f"{t} thr\n{label}\n{size_label(sz)}" for t, label, sz, _ in bars], 6, "RemoteTier / Jedis",
               "Java client against Jedis on loopback: above 1 is faster than Redis")


def python_client_tables(results_dir, out, img):
    """The Python client beside redis-py (python/benchmarks/client_vs_redis.py: python-client.json),
    with the Java client's GB/s for the same sizes from RemoteClientBenchmark (remote-t<n>.json)."""
    run = read_json(results_dir, "python-client/python-client.json")
    if run is None:
        return
    rows = {(r["store"], r["op"], r["size"], r["threads"]): r for r in run["throughput"]}
    java = {}
    for threads in (1, 4):
        jpath = os.path.join(results_dir, "java-client", f"remote-t{threads}.json")
        if os.path.exists(jpath):
            with open(jpath) as f:
                for r in json.load(f):
                    if r["mode"] == "thrpt" and method(r) in ("kvcacheGet", "kvcachePut"):
                        size = int(r["params"]["blockBytes"])
                        op = "get" if method(r) == "kvcacheGet" else "put"
                        java[(op, size, threads)] = r["primaryMetric"]["score"] * size / 1e9
    m = run["machine"]
    out.append(f"\n### The Python client beside redis-py ({m['date']}, {m['cpus']} cores, Python "
               f"{m['python']}, redis-py {m['redis_py']}, hiredis {m['hiredis']}; medians of "
               f"{run['rounds']} rounds of {run['seconds']:g} s)\n")
    out.append("| op | block | callers | kvcache GB/s | redis-py GB/s | ratio | client CPU s/GB kvcache | "
               "redis-py | server CPU s/GB kvcache | redis | Java client GB/s |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    sizes = sorted({k[2] for k in rows})
    for op in ("get", "put"):
        for size in sizes:
            for threads in (1, 4):
                a, b = rows.get(("kvcache", op, size, threads)), rows.get(("redis-py", op, size, threads))
                if not a or not b:
                    continue
                j = java.get((op, size, threads))
                out.append(f"| {op.upper()} | {size_label(size)} | {threads} | {a['gbps']:.2f} | {b['gbps']:.2f} | "
                           f"**{a['gbps'] / b['gbps']:.2f}** | {a['client_cpu_s_per_gb']:.2f} | "
                           f"{b['client_cpu_s_per_gb']:.2f} | {a['server_cpu_s_per_gb']:.2f} | "
                           f"{b['server_cpu_s_per_gb']:.2f} | {f'{j:.2f}' if j else '-'} |")
    look = run["lookup128"]
    out.append("\n| lookup of 128 keys | p50 ms | p99 ms |\n|---|---:|---:|")
    for name, l in look.items():
        out.append(f"| {name} | {l['p50_ms']:.3f} | {l['p99_ms']:.3f} |")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, op in zip(axes, ("get", "put")):
        groups = [(size, t) for size in sizes for t in (1, 4)]
        x = range(len(groups))
        series = [("kvcache (Python)", "tab:blue", lambda g: rows[("kvcache", op, g[0], g[1])]["gbps"]),
                  ("redis-py", "tab:red", lambda g: rows[("redis-py", op, g[0], g[1])]["gbps"]),
                  ("kvcache (Java client)", "tab:gray", lambda g: java.get((op, g[0], g[1]), 0))]
        for i, (label, color, value) in enumerate(series):
            ax.bar([xi + (i - 1) * 0.27 for xi in x], [value(g) for g in groups], 0.27, label=label,
                   color=color)
        ax.set_xticks(list(x))
        ax.set_xticklabels([f"{size_label(sz)}\n{t} thr" for sz, t in groups], fontsize=8)
        ax.set_title(("GET into a buffer" if op == "get" else "PUT from a buffer") + ", loopback")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("GB/s")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "python-client.png"), dpi=110)
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


def gbps_table(out, title, data, columns, names, ratios):
    """A table of GB/s by block size (rows) and column, data keyed (column, size), then the ratios
    named by (numerator, denominator, heading)."""
    out.append(f"\n### {title}\n")
    out.append("| block | " + " | ".join(names) + " | " + " | ".join(r[2] for r in ratios) + " |")
    out.append("|---:|" + "---:|" * (len(names) + len(ratios)))
    for size in sorted({k[1] for k in data}):
        per = {k[0]: v for k, v in data.items() if k[1] == size}
        cells = [f"{per[c][0]:.2f} ± {per[c][1]:.2f}" if c in per else "-" for c in columns]
        out.append(f"| {size_label(size)} | " + " | ".join(cells) + " | "
                   + " | ".join(ratio_cell(per, a, b) for a, b, _ in ratios) + " |")


def durability_tables(rows, out, img):
    """Puts under each durability mode: through the tiered cache (TieredCacheBenchmark in
    durability.json) and through the server (ServerDurabilityBenchmark), GB/s and ratios."""
    tiered = {}  # (stack, size) -> (GB/s, error)
    server = {}  # (durability, size) -> (GB/s, error)
    for r in rows:
        if r["file"] == "durability.json" and method(r) == "put":
            tiered[(r["params"]["stack"], int(r["params"]["blockSizeBytes"]))] = gbps(r)
        elif klass(r) == "ServerDurabilityBenchmark":
            size = int(r["params"]["blockBytes"])
            score, error = r["primaryMetric"]["score"], r["primaryMetric"]["scoreError"]
            server[(r["params"]["durability"], size)] = (score * size / 1e9, error * size / 1e9)
    if not tiered and not server:
        return
    stacks = ["ram+disk", "ram+disk-write-behind", "ram+disk-write-through", "disk",
              "ram+disk-write-through-sync", "disk-sync"]
    names = ["ram_first", "write_behind", "write_through", "disk alone", "write_through, sync always",
             "disk alone, sync always"]
    sizes = sorted({k[1] for k in tiered})
    gbps_table(out, "Puts under each durability mode, tiered cache (GB/s)", tiered, stacks, names,
               [("ram+disk-write-behind", "ram+disk", "behind / ram_first"),
                ("ram+disk-write-through", "ram+disk", "through / ram_first"),
                ("ram+disk-write-through-sync", "disk-sync", "through sync / disk sync")])
    modes = ["ram_first", "write_behind", "write_through"]
    server_sizes = sorted({k[1] for k in server})
    if server:
        gbps_table(out, "PUTs under each durability mode, server and Java client, one thread (GB/s)",
                   server, modes, modes,
                   [("write_behind", "ram_first", "behind / ram_first"),
                    ("write_through", "ram_first", "through / ram_first")])
    groups = [(f"tiered, {size_label(size)}", {n: tiered.get((st, size)) for n, st in zip(modes, stacks)})
              for size in sizes]
    groups += [(f"server, {size_label(size)}", {m: server.get((m, size)) for m in modes}) for size in server_sizes]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / len(modes)
    for i, m in enumerate(modes):
        xs, vals, errs = [], [], []
        for j, (_, values) in enumerate(groups):
            base, v = values.get("ram_first"), values.get(m)
            if base and v:
                xs.append(j + i * width)
                vals.append(v[0] / base[0])
                errs.append(v[1] / base[0])
        ax.bar(xs, vals, width, yerr=errs, capsize=3, label=m)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + width * (len(modes) - 1) / 2 for j in range(len(groups))])
    ax.set_xticklabels([g[0] for g in groups], fontsize=8)
    ax.set_ylabel("put throughput / ram_first")
    ax.set_title("Sustained puts (RAM full, every put evicts), by durability mode")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "durability-puts.png"), dpi=110)
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


def ram_hit_tables(results_dir, out, img):
    """A RAM hit read from Python beside a tmpfs file (python/benchmarks/ram_hit.py)."""
    data = read_json(results_dir, "python-client/python-ram-hit.json")
    if data is None:
        return
    results = data["results"]
    out.append("\n### A RAM hit from Python beside a tmpfs file (ms per block)\n")
    out.append("| blocks | read | median | p90 | median / tmpfs |")
    out.append("|---|---|---:|---:|---:|")
    groups = []
    for size, reads in results.items():
        count, _, block = size.rpartition(" x ")
        label = (f"{count} x " if count else "") + size_label(block)
        base = next(iter(reads.values()))["median_ms"]
        for name, r in reads.items():
            out.append(f"| {label} | {name} | {r['median_ms']:.2f} | {r['p90_ms']:.2f} "
                       f"| **{r['median_ms'] / base:.2f}** |")
        groups.append((label, {n: r["median_ms"] / base for n, r in reads.items()}))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    names = list(dict.fromkeys(n for _, g in groups for n in g))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs = [j + i * width for j, (_, g) in enumerate(groups) if name in g]
        ax.bar(xs, [g[name] for _, g in groups if name in g], width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(groups))])
    ax.set_xticklabels([g[0] for g in groups])
    bar_panel(ax, "time per block / tmpfs file (log)",
              "A RAM hit from Python, against reading a tmpfs file (lower is better)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "python-ram-hit.png"), dpi=110)
    plt.close(fig)


def checked_reads_tables(results_dir, out, img):
    """What checking every block costs the Python client (python/benchmarks/checked_reads.py)."""
    data = read_json(results_dir, "checksums/python-checked-reads.json")
    if data is None:
        return
    results = data["results"]
    out.append("\n### Checked reads and puts from Python, beside unchecked (ms)\n")
    out.append("| way | checked median | p90 | unchecked median | p90 | checked / unchecked |")
    out.append("|---|---:|---:|---:|---:|---:|")
    ratios = {}
    for way, arms in results.items():
        c, u = arms["checked"], arms["unchecked"]
        ratios[way] = c["median_ms"] / u["median_ms"]
        out.append(f"| {way} | {c['median_ms']:.2f} | {c['p90_ms']:.2f} | {u['median_ms']:.2f} "
                   f"| {u['p90_ms']:.2f} | **{ratios[way]:.2f}** |")
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(range(len(ratios)), list(ratios.values()), 0.6, label="checked / unchecked, medians")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(ratios)))
    ax.set_xticklabels([w.replace(", ", "\n") for w in ratios], fontsize=8)
    bar_panel(ax, "time, checked / unchecked",
              "What checking every block's CRC32C costs the Python client (lower is better)")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "python-checked-reads.png"), dpi=110)
    plt.close(fig)


def checksum_table(rows, out, img):
    """End-to-end CRC32C against none (EndToEndChecksumBenchmark in checksum-N.json): each arm's
    iterations pooled over the runs, the ratio of the pooled means and of each run's scores."""
    pooled = defaultdict(list)  # (method, arm) -> iteration scores
    runs = defaultdict(dict)  # (method, file) -> arm -> score
    for r in rows:
        if not (r["file"].startswith("checksum-") and klass(r) == "EndToEndChecksumBenchmark"):
            continue
        arm = r["params"]["checksums"]
        pooled[(method(r), arm)].extend(x for fork in r["primaryMetric"]["rawData"] for x in fork)
        runs[(method(r), r["file"])][arm] = r["primaryMetric"]["score"]
    if not pooled:
        return
    out.append("\n### End-to-end checksums, 2 MiB, one client thread (ops/s, mean ± sd)\n")
    out.append("| | none | crc32c | crc32c / none | the runs |")
    out.append("|---|---:|---:|---:|---|")
    labels, values = [], []
    for m, name in (("getInto", "GET into a buffer"), ("put", "PUT")):
        none, crc = pooled[(m, "none")], pooled[(m, "crc32c")]
        if not none or not crc:
            continue
        ratio = statistics.mean(crc) / statistics.mean(none)
        each = [v["crc32c"] / v["none"] for (mm, _), v in sorted(runs.items())
                if mm == m and "none" in v and "crc32c" in v]
        out.append(f"| {name} | {statistics.mean(none):.0f} ± {statistics.stdev(none):.0f} "
                   f"| {statistics.mean(crc):.0f} ± {statistics.stdev(crc):.0f} | **{ratio:.2f}** "
                   f"| {', '.join(f'{x:.2f}' for x in each)} |")
        labels.append(f"{name}\n(runs {', '.join(f'{x:.2f}' for x in each)})")
        values.append(ratio)
    ratio_bars(os.path.join(img, "checksum-cost.png"), (6, 3.6), values, ["#4c72b0", "#dd8452"],
               labels, 9, "crc32c / none (pooled means)",
               "End-to-end CRC32C, 2 MiB blocks, Java client against the server")


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


def main():
    results_dir, img = sys.argv[1], sys.argv[2]
    os.makedirs(img, exist_ok=True)
    rows = load(results_dir)
    out = []
    ram_tables(rows, out, img)
    churn_table(rows, results_dir, out)
    peer_tables(rows, out, img)
    memory_table(rows, out)
    codec_tables(rows, results_dir, out, img)
    small_tables(rows, out)
    disk_tables(rows, out, img)
    cold_read_tables(rows, results_dir, out, img)
    disk_writer_table(rows, out, img)
    seam_tables(results_dir, out, img)
    put_path_tables(results_dir, out, img)
    tiered_tables(rows, out, img)
    durability_tables(rows, out, img)
    spill_tables(rows, out, img)
    checksum_table(rows, out, img)
    trace_tables(results_dir, out, img)
    tier_tables(results_dir, out, img)
    mlperf_tables(results_dir, out, img)
    ram_hit_tables(results_dir, out, img)
    checked_reads_tables(results_dir, out, img)
    server_tables(results_dir, out, img)
    pinned_server_table(results_dir, out, img)
    setting_table(results_dir, out, img, "server-write-buffer", "buffer-1048576", size_label, "Socket write buffer")
    setting_table(results_dir, out, img, "server-event-loops", "loops-2",
                  lambda n: f"{n} event loop{'s' if n > 1 else ''}", "Event-loop threads")
    client_tables(results_dir, out, img)
    python_client_tables(results_dir, out, img)
    vllm_ttft_tables(results_dir, out, img)
    wire_tables(results_dir, out, img)
    object_tier_tables(rows, results_dir, out, img)
    with open(os.path.join(results_dir, "summary.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
