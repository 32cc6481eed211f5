"""The codec (docs/benchmarks/codec.md, results in codec/): compression ratio against one-core speed
for each dtype and filter with zstd beside (CodecBenchmark, ZstdReferenceBenchmark and the ratios the
runs print; codec-ratio-speed.png), ratio against chunk size, the container's cost against LZ4 and
the filter chained by hand, two codec threads against one (codec-speed.png), the filter kernels and
checksum candidates alone (tables only), and the wire codec against plain blocks per link
(WireCodecBenchmark; wire-codec.png).
"""
import json
import os
from collections import defaultdict

import matplotlib.pyplot as plt

from .common import method, klass, size_label, ratio_bars


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
