#!/usr/bin/env python3
"""How well what an engine knows when it stores a block predicts whether the block is used again.

For every block a Mooncake trace stores (the first time its id appears), records what is known at
that moment: how many leading blocks of its request were already cached (an unlimited cache), and
whether it is the request's last block. Prints, per group, how many blocks were stored and which
fraction of them is requested again later in the trace, as a Markdown table.

Usage: trace_reuse_features.py TRACE.jsonl[.zst] ...
"""
import collections
import json
import subprocess
import sys
from pathlib import Path


def requests(path):
    if path.suffix == ".zst":
        text = subprocess.run(["zstdcat", str(path)], check=True, capture_output=True, text=True).stdout
    else:
        text = path.read_text()
    return [json.loads(line)["hash_ids"] for line in text.splitlines() if line.strip()]


def prefix_group(cached):
    return "0" if cached == 0 else "1" if cached == 1 else "2 or more"


def main(paths):
    print("| trace | leading blocks already cached | block | blocks stored | used again |")
    print("|---|---|---|---:|---:|")
    for path in map(Path, paths):
        reqs = requests(path)
        uses = collections.Counter(block for ids in reqs for block in ids)
        seen = set()
        groups = collections.defaultdict(lambda: [0, 0])
        for ids in reqs:
            cached = 0
            while cached < len(ids) and ids[cached] in seen:
                cached += 1
            for i in range(cached, len(ids)):
                if ids[i] in seen:
                    continue
                seen.add(ids[i])
                group = groups[(prefix_group(cached), "last" if i == len(ids) - 1 else "not last")]
                group[0] += 1
                group[1] += uses[ids[i]] > 1
        name = path.name.split(".")[0]
        for (prefix, position), (stored, reused) in sorted(groups.items()):
            print(f"| {name} | {prefix} | {position} | {stored:,} | {reused / stored:.1%} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
