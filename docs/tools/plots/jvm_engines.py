"""Jlama with kvcache (docs/jvm-engines.md, results in jvm-engines/): the time to first token with
the prompt's prefix loaded from RAM, disk or kvcache-server against computed
(kvcache-jlama-bench FirstTokenBenchmark: first-token.json), and a Mooncake conversation's turns
(ConversationReplay: conversation.json); jvm-engines.png.
"""
import os

import matplotlib.pyplot as plt

from .common import klass, read_json

# the sources as the table and the plot name them, and their colours
SOURCES = [("computed", "computed", "tab:gray"), ("ram", "loaded: RAM", "tab:blue"),
           ("disk", "loaded: disk, page cache dropped", "tab:orange"),
           ("server", "loaded: kvcache-server", "tab:green")]


def jvm_engine_tables(rows, results_dir, out, img):
    first = {(r["params"]["source"], int(r["params"]["promptTokens"])): r["primaryMetric"]
             for r in rows if klass(r) == "FirstTokenBenchmark"}
    talk = read_json(results_dir, "jvm-engines/conversation.json")
    if not first and talk is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
    if first:
        tokens = sorted({t for _, t in first})
        out.append("\n### Jlama's time to first token, prefix loaded or computed "
                   "(FirstTokenBenchmark, ms, JMH single shots ± 99.9% half-width)\n")
        out.append("| prompt tokens | " + " | ".join(label for _, label, _ in SOURCES)
                   + " | RAM / computed | disk / computed | server / computed |")
        out.append("|---:|" + "---:|" * (len(SOURCES) + 3))
        for t in tokens:
            cells = []
            for source, _, _ in SOURCES:
                m = first.get((source, t))
                cells.append(f"{m['score']:,.1f} ± {m['scoreError']:,.1f}" if m else "–")
            base = first.get(("computed", t))
            ratios = [f"**{first[(s, t)]['score'] / base['score']:.3f}**"
                      if base and (s, t) in first else "–" for s in ("ram", "disk", "server")]
            out.append(f"| {t:,} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        ax = axes[0]
        width = 0.8 / len(SOURCES)
        for i, (source, label, color) in enumerate(SOURCES):
            ax.bar([x + (i - (len(SOURCES) - 1) / 2) * width for x in range(len(tokens))],
                   [first.get((source, t), {}).get("score", 0) / 1000 for t in tokens], width,
                   label=label, color=color)
        ax.set_yscale("log")
        ax.set_xticks(list(range(len(tokens))))
        ax.set_xticklabels([f"{t:,} prompt tokens" for t in tokens])
        ax.set_ylabel("time to first token (s, log scale)")
        ax.set_title("Prefix loaded or computed")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    if talk is not None:
        out.append(f"\n### A Mooncake conversation's turns ({talk['trace']}, trace blocks of "
                   f"{talk['traceBlockTokens']} tokens, medians of {talk['repeats']} runs)\n")
        out.append("| turn | prompt tokens | loaded | first token, earlier turns loaded (ms) | "
                   "computed (ms) | ratio |")
        out.append("|---:|---:|---:|---:|---:|---:|")
        for row in talk["turns"]:
            out.append(f"| {row['turn']} | {row['promptTokens']:,} | {row['loadedTokens']:,} | "
                       f"{row['firstTokenLoadedMs']:,.0f} | {row['firstTokenComputedMs']:,.0f} | "
                       f"**{row['firstTokenLoadedMs'] / row['firstTokenComputedMs']:.2f}** |")
        ax = axes[1]
        turns = [row["turn"] for row in talk["turns"]]
        ax.plot(turns, [row["firstTokenComputedMs"] / 1000 for row in talk["turns"]], "o-",
                color="tab:gray", label="computed")
        ax.plot(turns, [row["firstTokenLoadedMs"] / 1000 for row in talk["turns"]], "o-",
                color="tab:blue", label="earlier turns loaded (RAM)")
        ax.set_xlabel("turn of the conversation")
        ax.set_ylabel("time to first token (s)")
        ax.set_title("A conversation, turn by turn")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "jvm-engines.png"), dpi=110)
    plt.close(fig)
