#!/usr/bin/env python3
"""Online admission and eviction policies that try to pass LRU on the Mooncake traces.

Replays each trace four times in a row (each copy with block ids of its own) the way
`TraceReplay` does: the leading blocks found are hits and are touched, every block after the
first miss is put. Each policy runs at 1,000 to 50,000 blocks; the output is a Markdown table of
the hit ratio in the first and the fourth copy and the worst difference to exact LRU over all
copies, then where an unlimited cache's hits come from on each trace, and, with --csv, every copy
of every run as CSV.

Usage: trace_admission_policies.py [--csv OUT] TRACE.jsonl[.zst] ...

The policies (all but exact LRU leave out the request's last block, the partial one; the ghost
SLRUs store a request's blocks with the chain's head most recent, so a chain loses its tail
first):
* LRU, last block left out: the reference every other policy builds on.
* Random admission: a request's new blocks are admitted with probability q.
* Ghost SLRU: a probation and a protected LRU segment and a ghost list of the keys evicted (twice
  the capacity). Hits go to protected. A request whose first missing block is in the ghost list
  (its conversation would have hit, had the cache kept it) puts its new blocks in protected,
  others in probation. The probation share is fixed, or adapted as ARC does (a probation ghost
  hit grows it, a protected one shrinks it), or adapted from recent ghost hits only.
* Ghost SLRU, share by miniature caches: the share is chosen every 500 requests among eight
  values by eight caches of half the capacity, fed with half the conversations (by a hash of the
  conversation's second block); with or without demoting protected blocks into probation when
  protected passes its share.
"""
import collections
import csv
import random
import sys
import zlib
from collections import OrderedDict
from pathlib import Path

from trace_reuse_features import requests  # the same reader of the traces' hash_ids

CAPACITIES = [1000, 5000, 10000, 30000, 50000]
COPIES = 4


def replay(policy, reqs, copies):
    """Hit ratio of each copy of ``reqs`` (each id paired with its copy number)."""
    ratios = []
    for copy in range(copies):
        hits = total = 0
        for ids in reqs:
            ids = [(copy, x) for x in ids]
            k = 0
            while k < len(ids) and policy.contains(ids[k]):
                k += 1
            policy.access(ids, k)
            hits += k
            total += len(ids)
        ratios.append(hits / total)
    return ratios


def fraction(key):
    """A stable number in [0, 1) from a key."""
    return (zlib.crc32(repr(key).encode()) & 0xFFFFFFFF) / 2**32


class Lru:
    """Exact LRU; ``skip_last`` leaves each request's last block out."""

    def __init__(self, capacity, skip_last=False):
        self.capacity, self.skip_last, self.d = capacity, skip_last, OrderedDict()

    def contains(self, x):
        return x in self.d

    def access(self, ids, k):
        for x in ids[:k]:
            self.d.move_to_end(x)
        for x in ids[k:len(ids) - 1 if self.skip_last else len(ids)]:
            self.d[x] = None
            self.d.move_to_end(x)
            if len(self.d) > self.capacity:
                self.d.popitem(last=False)


class RandomAdmission(Lru):
    """LRU, last block left out, admitting a request's new blocks with probability ``q``."""

    def __init__(self, capacity, q):
        super().__init__(capacity, skip_last=True)
        self.q, self.rng = q, random.Random(1)

    def access(self, ids, k):
        admitted = k < len(ids) - 1 and self.rng.random() < self.q
        super().access(ids if admitted else ids[:k], k)


class GhostSlru:
    """Probation P and protected M LRU segments, a ghost list G of evicted keys (tagged with their
    segment), P's share ``f`` of the capacity; ``adapt``: None, "arc" or "recent" (ghost hits
    within 0.3 capacities of evictions only); ``demote``: protected past its share moves its oldest
    blocks to probation rather than keeping P at its share by evicting from P."""

    def __init__(self, capacity, f, adapt=None, demote=False, ghosts=2.0):
        self.capacity, self.p, self.adapt, self.demote = capacity, f * capacity, adapt, demote
        self.P, self.M, self.G = OrderedDict(), OrderedDict(), OrderedDict()
        self.ghost_capacity = int(ghosts * capacity)
        self.evicted = {"P": 0, "M": 0}
        self.low, self.high = (0.05 if adapt == "recent" else 0.02) * capacity, 0.98 * capacity

    def contains(self, x):
        return x in self.P or x in self.M

    def _ghost(self, x, tag):
        self.evicted[tag] += 1
        self.G[x] = (tag, self.evicted[tag])
        self.G.move_to_end(x)
        if len(self.G) > self.ghost_capacity:
            self.G.popitem(last=False)

    def _evict(self):
        P, M = self.P, self.M
        if self.demote:
            while M and len(M) > self.capacity - self.p:
                P[M.popitem(last=False)[0]] = None
            source, tag = (P, "P") if P else (M, "M")
        else:
            source, tag = (P, "P") if (P and len(P) > self.p) or not M else (M, "M")
        self._ghost(source.popitem(last=False)[0], tag)

    def _touch_hits(self, ids, k):
        for x in reversed(ids[:k]):
            if x in self.P:
                del self.P[x]
                self.M[x] = None
            elif x in self.M:  # (not if the request's own new blocks evicted it)
                self.M.move_to_end(x)

    def access(self, ids, k):
        P, M, G = self.P, self.M, self.G
        end = len(ids) - 1
        target = P
        if k < end and ids[k] in G:
            tag, seq = G[ids[k]]
            target = M
            recent = self.adapt != "recent" or self.evicted[tag] - seq <= 0.3 * self.capacity
            if self.adapt and recent:
                run = 0
                while k + run < end and ids[k + run] in G and G[ids[k + run]][0] == tag:
                    run += 1
                self.p = min(self.high, self.p + run) if tag == "P" else max(self.low, self.p - run)
        self._touch_hits(ids, k)
        for x in reversed(ids[k:end]):  # the chain's head ends most recent
            P.pop(x, None)
            M.pop(x, None)
            G.pop(x, None)
            target[x] = None
            if len(P) + len(M) > self.capacity:
                self._evict()
        if 0 < k < end:
            self._touch_hits(ids, k)  # a request's hits stay more recent than its new blocks


class MiniatureChosenSlru:
    """A GhostSlru whose probation share is the best of ``shares`` on miniature caches."""

    def __init__(self, capacity, shares, demote, sample=0.5, period=500, decay=0.8):
        self.main = GhostSlru(capacity, 0.5, demote=demote)
        self.shares, self.sample, self.period, self.decay = shares, sample, period, decay
        self.minis = [GhostSlru(max(1, int(capacity * sample)), f, demote=demote) for f in shares]
        self.scores = [0.0] * len(shares)
        self.capacity, self.n = capacity, 0

    def contains(self, x):
        return self.main.contains(x)

    def access(self, ids, k):
        self.main.access(ids, k)
        if fraction(ids[1] if len(ids) > 1 else ids[0]) < self.sample:
            for i, mini in enumerate(self.minis):
                hits = 0
                while hits < len(ids) and mini.contains(ids[hits]):
                    hits += 1
                mini.access(ids, hits)
                self.scores[i] += hits
        self.n += 1
        if self.n % self.period == 0:
            best = max(range(len(self.shares)), key=self.scores.__getitem__)
            self.main.p = self.shares[best] * self.capacity
            self.scores = [s * self.decay for s in self.scores]


SHARES = (0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9, 1.0)
POLICIES = [
    ("exact LRU", lambda c: Lru(c)),
    ("LRU, last block left out", lambda c: Lru(c, skip_last=True)),
    ("random admission, q = 0.5", lambda c: RandomAdmission(c, 0.5)),
    ("ghost SLRU, 10% probation", lambda c: GhostSlru(c, 0.1)),
    ("ghost SLRU, share adapted as ARC", lambda c: GhostSlru(c, 0.1, adapt="arc")),
    ("ghost SLRU, share adapted by recent ghost hits", lambda c: GhostSlru(c, 0.5, adapt="recent")),
    ("ghost SLRU, share by miniature caches", lambda c: MiniatureChosenSlru(c, SHARES[:6], False)),
    ("ghost SLRU, share by miniature caches, demotion",
     lambda c: MiniatureChosenSlru(c, SHARES, True)),
]


def hit_sources(reqs):
    """Hit ratio of an unlimited cache, split by where the hits come from: a request's first block
    (on the conversation trace, one block that every request shares), and the blocks after it in a
    conversation's first return or in its later returns (a conversation named by its second
    block)."""
    seen, returns, split = set(), collections.Counter(), collections.Counter()
    total = 0
    for ids in reqs:
        k = 0
        while k < len(ids) and ids[k] in seen:
            k += 1
        total += len(ids)
        split["first block"] += min(k, 1)
        if k > 1:
            conversation = ids[1]
            split["first return" if returns[conversation] == 0 else "later returns"] += k - 1
            returns[conversation] += 1
        seen.update(ids)
    return {source: hits / total for source, hits in sorted(split.items())}


def main(args):
    out = None
    if args[:1] == ["--csv"]:
        out, args = args[1], args[2:]
    if not args:
        sys.exit(__doc__)
    rows = []
    for path in map(Path, args):
        trace = path.name.split(".")[0].replace("mooncake_", "").replace("_trace", "")
        reqs = requests(path)
        lru = None
        print(f"\n{trace} trace, hit ratio in the first / the fourth copy\n")
        print("| policy | " + " | ".join(f"{c:,} blocks" for c in CAPACITIES) + " | worst vs LRU |")
        print("|---|" + "---:|" * (len(CAPACITIES) + 1))
        for name, make in POLICIES:
            runs = [replay(make(c), reqs, COPIES) for c in CAPACITIES]
            lru = lru or runs
            worst = min(r[i] - l[i] for r, l in zip(runs, lru) for i in range(COPIES))
            cells = " | ".join(f"{r[0]:.3f} / {r[-1]:.3f}" for r in runs)
            print(f"| {name} | {cells} | {worst:+.3f} |", flush=True)
            for c, r in zip(CAPACITIES, runs):
                rows += [[trace, name, c, i + 1, round(h, 4)] for i, h in enumerate(r)]
        print(f"\nwhere an unlimited cache's hits come from ({trace}):",
              ", ".join(f"{s} {h:.3f}" for s, h in hit_sources(reqs).items()))
    if out:
        with open(out, "w", newline="") as f:
            csv.writer(f).writerows([["trace", "policy", "capacity", "copy", "hit_ratio"]] + rows)


if __name__ == "__main__":
    main(sys.argv[1:])
