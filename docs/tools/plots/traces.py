"""The request traces (docs/benchmarks/traces.md, results in traces/): hit ratio against capacity
for each eviction model beside exact LRU and the Belady ceiling (TraceReplay's CSV;
trace-hit-ratio.png), and the hits of the disk tier alone and of RAM over disk, tier by tier, beside
LRU of the same capacity (TierReplay's CSV; trace-tiers.png).
"""
import csv
import os

import matplotlib.pyplot as plt


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


def quota_tables(results_dir, out, img):
    """Quotas on the request traces: the three designs of QuotaDesigns's CSV (the quota's tenant
    and the tenant without one, per scenario), and QuotaReplay's hit ratios alone and flooded,
    with quotas and without, in RAM, on disk and in the bucket; quota-designs.png and
    quota-replay.png."""
    path = os.path.join(results_dir, "traces", "quota-designs.csv")
    if not os.path.exists(path):
        return
    with open(path) as f:
        rows = list(csv.DictReader(f))
    designs = ["PARTITIONS", "CAPS", "LENDING"]
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    ratio = {(r["design"], r["scenario"]): r for r in rows}
    out.append("\n### Quotas: partitions, caps over one order, lending partitions\n")
    out.append("| scenario | " + " | ".join(f"{d.lower()}: quota's tenant | {d.lower()}: others"
                                          for d in designs) + " |")
    out.append("|---|" + "---:|---:|" * len(designs))
    fmt = lambda v: "idle" if v == "nan" or v == "NaN" else f"{float(v):.3f}"  # noqa: E731
    for s in scenarios:
        out.append(f"| {s.lower().replace('_', ' ')} | " + " | ".join(
            f"{fmt(ratio[(d, s)]['quoted_hit_ratio'])} | {fmt(ratio[(d, s)]['others_hit_ratio'])}"
            for d in designs) + " |")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    width = 0.27
    colors = {"PARTITIONS": "tab:blue", "CAPS": "tab:red", "LENDING": "tab:green"}
    for ax, col, title in [(axes[0], "quoted_hit_ratio", "the tenant with a quota (half)"),
                           (axes[1], "others_hit_ratio", "the tenant without a quota")]:
        shown = [s for s in scenarios if ratio[(designs[0], s)][col].lower() != "nan"]
        for i, d in enumerate(designs):
            ax.bar([x + (i - 1) * width for x in range(len(shown))],
                   [float(ratio[(d, s)][col]) for s in shown], width, label=d.lower(),
                   color=colors[d])
        ax.set_xticks(range(len(shown)))
        ax.set_xticklabels([s.lower().replace("_", " ") for s in shown], fontsize=8)
        ax.set_title(title)
        ax.set_ylabel("block hit ratio")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "quota-designs.png"), dpi=110)
    plt.close(fig)
    replays = [("RAM", "quota-replay.csv"), ("disk", "quota-replay-disk.csv"),
               ("bucket", "quota-replay-bucket.csv")]
    rows = []
    for tier, name in replays:
        path = os.path.join(results_dir, "traces", name)
        if os.path.exists(path):
            with open(path) as f:
                rows += [dict(r, tier=tier) for r in csv.DictReader(f)]
    if not rows:
        return
    replay = {(r["tier"], r["trace"], r["quotas"], r["flooded"]): float(r["hit_ratio"])
              for r in rows}
    cases = list(dict.fromkeys((r["tier"], r["trace"]) for r in rows))
    out.append("\n### Quotas through the cache: a tenant alone and flooded\n")
    out.append("| tier | trace | quotas | alone | flooded at 10x the flood's quota |")
    out.append("|---|---|---|---:|---:|")
    for tier, t in cases:
        for q in ("true", "false"):
            out.append(f"| {tier} | {t.replace('mooncake_', '')} | {'yes' if q == 'true' else 'no'}"
                       f" | {replay[(tier, t, q, 'false')]:.4f}"
                       f" | {replay[(tier, t, q, 'true')]:.4f} |")
    fig, ax = plt.subplots(figsize=(12, 4))
    x = range(len(cases))
    width = 0.2
    bars = [("true", "false", "quotas, alone", "tab:green", None),
            ("true", "true", "quotas, flooded", "tab:green", "//"),
            ("false", "false", "no quotas, alone", "tab:gray", None),
            ("false", "true", "no quotas, flooded", "tab:red", "//")]
    for i, (q, fl, label, color, hatch) in enumerate(bars):
        ax.bar([k + (i - 1.5) * width for k in x],
               [replay[(tier, t, q, fl)] for tier, t in cases], width, label=label,
               color=color, hatch=hatch, alpha=0.8 if hatch is None else 0.5)
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{tier}\n{t.replace('mooncake_', '').replace('_trace', '')}"
                        for tier, t in cases], fontsize=8)
    ax.set_ylabel("the replaying tenant's block hit ratio")
    ax.set_title("A flood at ten times its quota, in RAM, on disk and in the bucket")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "quota-replay.png"), dpi=110)
    plt.close(fig)
