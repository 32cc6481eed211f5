"""The clients (docs/benchmarks/java-client.md and python-client.md, results in java-client/ and
python-client/): the Java client beside Jedis (RemoteClientBenchmark; remote-client.png), the Python
client beside redis-py with the Java client's GB/s for the same sizes (python-client.png), a RAM
hit read from Python beside a tmpfs file (python-ram-hit.png), and Python loads against the floor
of plain sockets (python-load-floor.png).
"""
import json
import os

import matplotlib.pyplot as plt

from .common import read_json, method, size_label, bar_panel, ratio_bars


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


def load_floor_tables(results_dir, out, img):
    """Python loads against the floor of plain sockets (python/benchmarks/load_floor.py:
    python-client/load-floor.json): GB/s and CPU s/GiB of the floor, the compiled module and pure
    Python, with and without a busy thread, first load and warm; python-load-floor.png."""
    run = read_json(results_dir, "python-client/load-floor.json")
    if run is None:
        return
    paths = ("floor", "native", "python")
    names = {"floor": "floor (recv_into)", "native": "compiled module", "python": "pure Python"}
    out.append("\n### Python loads against the floor of plain sockets "
               f"({run['blocks']} blocks of {size_label(run['block_bytes'])}, "
               f"{run['connections']} connections; GB/s, median of the runs; "
               "in brackets the client's and the sender's CPU s/GiB)\n")
    out.append("| busy thread | load | " + " | ".join(names[p] for p in paths)
               + " | module / floor |")
    out.append("|---|---|" + "---:|" * (len(paths) + 1))
    cases = {(s["path"], s["busy_thread"], s["first"]): s for s in run["summary"]}
    groups = []
    for busy in (False, True):
        for first in (True, False):
            cells = []
            for p in paths:
                s = cases[(p, busy, first)]
                cells.append(f"{s['gb_s']:.2f} ({s['cpu_s_per_gib']:.2f}; "
                             f"{s['sender_cpu_s_per_gib']:.2f})")
            ratio = cases[("native", busy, first)]["vs_floor"]
            out.append(f"| {'yes' if busy else 'no'} | {'first' if first else 'warm'} | "
                       + " | ".join(cells) + f" | **{ratio:.2f}** |")
            groups.append((f"{'busy GIL' if busy else 'idle'}, {'first' if first else 'warm'}",
                           [cases[(p, busy, first)]["gb_s"] for p in paths]))
    out.append("")
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.26
    colors = {"floor": "grey", "native": "#4c72b0", "python": "#dd8452"}
    for k, p in enumerate(paths):
        xs = [i + (k - 1) * width for i in range(len(groups))]
        ax.bar(xs, [g[1][k] for g in groups], width, label=names[p], color=colors[p])
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups])
    ax.set_ylabel("GB/s")
    ax.set_title(f"Loads of {size_label(run['block_bytes'])} blocks over loopback on "
                 f"{run['connections']} connections, against the floor", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "python-load-floor.png"), dpi=110)
    plt.close(fig)
