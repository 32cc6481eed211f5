"""Shared by the area modules: reading the results (JMH's JSON rows from every file under the
results directory, or one named JSON document), the fields of a JMH row (benchmark method and class,
bytes allocated per operation, throughput in GB/s from operations/s and the block size), and the
helpers of the tables and plots (block size labels, a block-size axis, a labelled bar panel, median
and range, a bold ratio cell, a table of GB/s by block size, and a bar chart of ratios saved as
one PNG).
"""
import json
import os
import statistics

import matplotlib.pyplot as plt


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
