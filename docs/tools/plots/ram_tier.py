"""The RAM tier (docs/benchmarks/ram-tier.md, results in ram-tier/): put, getInto and lease-get
against a plain copy of the same bytes (RamTierBenchmark; ram-tier-throughput.png,
ram-tier-ratios.png, ram-tier-lease.png), kvcache beside the in-process peers (PeerBenchmark;
ram-tier-peers.png), the memory behind the tier (MemoryCopyBenchmark) and puts of mixed sizes under
constant eviction (RamTierChurnBenchmark, with the allocator figures of churn.txt); the last two are
tables only.
"""
import os

import matplotlib.pyplot as plt

from .common import method, klass, alloc_norm, size_label, gbps, size_axis


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
