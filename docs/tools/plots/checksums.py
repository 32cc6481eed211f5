"""End-to-end checksums (docs/benchmarks/checksums.md, results in checksums/): CRC32C against none
between the Java client and the server (EndToEndChecksumBenchmark, pooled over the runs;
checksum-cost.png), and what checking every block costs the Python client
(python/benchmarks/checked_reads.py; python-checked-reads.png).
"""
import os
import statistics
from collections import defaultdict

import matplotlib.pyplot as plt

from .common import read_json, method, klass, bar_panel, ratio_bars


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
