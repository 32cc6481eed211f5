"""kvcache-server (docs/benchmarks/server.md, results in server/): the server beside nginx and Redis
from run-server-benchmarks.sh, GB/s and CPU per MiB moved, batches, lookup latency and heap per
request (server.png), the same with the servers and the load generators on one core each
(server-pinned.png), and several settings of one server build against a base setting in
alternating rounds (compare-server-settings.sh; server-write-buffer.png, server-event-loops.png).
"""
import csv
import os
import statistics
from collections import defaultdict

import matplotlib.pyplot as plt

from .common import size_label, size_axis, median_range


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


def events_table(results_dir, out, img):
    """compare-server-settings.sh events: h2load PUTs (naming their engine block) and GETs with KV
    events off and on (a subscriber reading, one not), in alternating rounds; GB/s on against off in
    the same round, the server's CPU seconds per GiB moved, and what the reading subscriber counted."""
    path = os.path.join(results_dir, "server", "server-events.csv")
    if not os.path.exists(path):
        return
    data = {}  # (op, size, connections, streams) -> {setting: {round: (GB/s, CPU s/GiB)}}
    with open(path) as f:
        for r in csv.DictReader(f):
            load = (r["op"], int(r["size"]), int(r["connections"]), int(r["streams"]))
            data.setdefault(load, {}).setdefault(r["setting"], {})[int(r["round"])] = (
                float(r["gb_per_s"]), float(r["server_cpu_s_per_gib"]))
    out.append("\n### KV events on against off (h2load; GB/s and ratios in the same round, median of "
               "rounds (min-max); the server's CPU seconds per GiB moved, median)\n")
    out.append("| op | block | connections × streams | events off | events on | on / off "
               "| CPU s/GiB off | CPU s/GiB on |")
    out.append("|---|---|---|---:|---:|---:|---:|---:|")
    points = []
    for (op, size, c, m), by in sorted(data.items()):
        off, on = by.get("off-events", {}), by.get("on-events", {})
        rounds = sorted(set(off) & set(on))
        if not rounds:
            continue
        ratios = [on[i][0] / off[i][0] for i in rounds]
        points.append((f"{op.upper()}\n{size_label(size)}\n{c} × {m}", ratios))
        out.append(f"| {op.upper()} | {size_label(size)} | {c} × {m} | "
                   f"{median_range([v[0] for v in off.values()])} | "
                   f"{median_range([v[0] for v in on.values()])} | **{median_range(ratios)}** | "
                   f"{statistics.median(v[1] for v in off.values()):.3f} | "
                   f"{statistics.median(v[1] for v in on.values()):.3f} |")
    sub = os.path.join(results_dir, "server", "server-events-subscriber.csv")
    if os.path.exists(sub):
        with open(sub) as f:
            rows = list(csv.DictReader(f))
        if rows:
            out.append("\nWhat the reading subscriber received, per run of the server with events on:\n")
            out.append("| round | batches | events | BlockStored | bytes per event | events per second "
                       "| gaps |")
            out.append("|---|---:|---:|---:|---:|---:|---:|")
            for r in rows:
                events = int(r["events"])
                out.append(f"| {r['round']} | {r['batches']} | {events} | {r['stored']} | "
                           f"{int(r['payload_bytes']) / max(events, 1):.1f} | "
                           f"{events / float(r['seconds']):.0f} | {r['gaps']} |")
    if not points:
        return
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for i, (load, ratios) in enumerate(points):
        ax.scatter([i] * len(ratios), ratios, color="C0", alpha=0.5, s=14)
        ax.plot([i - 0.3, i + 0.3], [statistics.median(ratios)] * 2, color="C0", linewidth=2.5)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.97, color="C3", linewidth=0.8, linestyle="--", label="goal: 0.97")
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels([p[0] for p in points], fontsize=7)
    ax.set_ylabel("GB/s with events on / off, same round")
    ax.set_title("KV events on against off (h2load, a subscriber reading and one not):\n"
                 "a dot per round, a bar per median", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "server-events.png"), dpi=110)
    plt.close(fig)
