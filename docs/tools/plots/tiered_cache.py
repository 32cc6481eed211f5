"""The tiered cache (docs/benchmarks/tiered-cache.md and durability.md, results in tiered-cache/ and
durability/): RAM over disk beside RAM alone and disk alone (TieredCacheBenchmark;
tiered-vs-tiers.png), and puts under each durability mode, through the tiered cache and through the
server with the Java client (ServerDurabilityBenchmark; durability-puts.png).
"""
import os

import matplotlib.pyplot as plt

from .common import method, klass, size_label, gbps, bar_panel, gbps_table


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



def durability_tables(rows, out, img):
    """Puts under each durability mode: through the tiered cache (TieredCacheBenchmark in
    durability.json) and through the server (ServerDurabilityBenchmark), GB/s and ratios."""
    tiered = {}  # (stack, size) -> (GB/s, error)
    server = {}  # (durability, size) -> (GB/s, error)
    for r in rows:
        if r["file"] == "durability.json" and method(r) == "put":
            tiered[(r["params"]["stack"], int(r["params"]["blockSizeBytes"]))] = gbps(r)
        elif klass(r) == "ServerDurabilityBenchmark" and not r["file"].startswith("seal-cost-"):
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
