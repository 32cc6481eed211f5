"""The S3 API (docs/s3-api.md, results in s3-api/): boto3 against kvcache-server's S3 API, against
Versity Gateway over tmpfs, and kvcache's own Python client, in one run (python/benchmarks/s3_api.py:
s3-api.json; s3-api.png).
"""
import os

import matplotlib.pyplot as plt

from .common import read_json, size_label

# the stores as the plot and the table name them, and their colours
STORES = [("kvcache-s3", "boto3 → kvcache S3 API", "tab:blue"),
          ("versitygw", "boto3 → versitygw (tmpfs)", "tab:orange"),
          ("kvcache-client", "kvcache Python client", "tab:gray"),
          ("kvcache-s3-parts", "boto3 transfer, 8 MiB parts → kvcache", "tab:cyan"),
          ("versitygw-parts", "boto3 transfer, 8 MiB parts → versitygw", "tab:olive")]


def s3_api_tables(results_dir, out, img):
    run = read_json(results_dir, "s3-api/s3-api.json")
    if run is None:
        return
    rows = {(r["store"], r["op"], r["size"], r["threads"]): r for r in run["throughput"]}
    m = run["machine"]
    out.append(f"\n### boto3 against the S3 API ({m['date']}, {m['cpus']} cores, Python "
               f"{m['python']}, boto3 {m['boto3']}, {m['versitygw']}; "
               f"medians of {run['rounds']} rounds of {run['seconds']:g} s)\n")
    out.append("| op | object | callers | kvcache S3 GB/s | versitygw GB/s | ratio | kvcache client "
               "GB/s | ratio | server CPU s/GB kvcache S3 | versitygw | kvcache client | "
               "client CPU s/GB kvcache S3 | versitygw |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    sizes = sorted({k[2] for k in rows})
    for op in ("get", "put"):
        for size in sizes:
            for threads in (1, 4):
                a = rows.get(("kvcache-s3", op, size, threads))
                b = rows.get(("versitygw", op, size, threads))
                c = rows.get(("kvcache-client", op, size, threads))
                if not a or not b or not c:
                    continue
                out.append(
                    f"| {op.upper()} | {size_label(size)} | {threads} | {a['gbps']:.2f} | "
                    f"{b['gbps']:.2f} | **{a['gbps'] / b['gbps']:.2f}** | {c['gbps']:.2f} | "
                    f"**{a['gbps'] / c['gbps']:.2f}** | {a['server_cpu_s_per_gb']:.2f} | "
                    f"{b['server_cpu_s_per_gb']:.2f} | {c['server_cpu_s_per_gb']:.2f} | "
                    f"{a['client_cpu_s_per_gb']:.2f} | {b['client_cpu_s_per_gb']:.2f} |")
    out.append("\n| PUT in 8 MiB parts | callers | kvcache S3 GB/s | versitygw GB/s | ratio | kvcache "
               "S3, one PUT | parts / one PUT | server CPU s/GB kvcache | versitygw |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    big = max(sizes) if sizes else 0
    for threads in (1, 4):
        a = rows.get(("kvcache-s3-parts", "put", big, threads))
        b = rows.get(("versitygw-parts", "put", big, threads))
        one = rows.get(("kvcache-s3", "put", big, threads))
        if a and b and one:
            out.append(f"| {size_label(big)} | {threads} | {a['gbps']:.2f} | {b['gbps']:.2f} | "
                       f"**{a['gbps'] / b['gbps']:.2f}** | {one['gbps']:.2f} | "
                       f"{a['gbps'] / one['gbps']:.2f} | {a['server_cpu_s_per_gb']:.2f} | "
                       f"{b['server_cpu_s_per_gb']:.2f} |")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.3), sharey=True)
    for ax, op in zip(axes, ("get", "put")):
        groups = [(size, t) for size in sizes for t in (1, 4)]
        shown = [s for s in STORES if op == "put" or not s[0].endswith("-parts")]
        width = 0.8 / len(shown)
        for i, (store, label, color) in enumerate(shown):
            values = [rows.get((store, op, g[0], g[1]), {}).get("gbps", 0) for g in groups]
            ax.bar([x + (i - (len(shown) - 1) / 2) * width for x in range(len(groups))], values,
                   width, label=label, color=color)
        ax.set_xticks(list(range(len(groups))))
        ax.set_xticklabels([f"{size_label(sz)}\n{t} thr" for sz, t in groups], fontsize=8)
        ax.set_title(("GET" if op == "get" else "PUT") + " of an object, loopback")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("GB/s")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(os.path.join(img, "s3-api.png"), dpi=110)
    plt.close(fig)
