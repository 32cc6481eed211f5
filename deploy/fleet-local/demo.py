"""A fleet over one bucket, shown: blocks stored through three servers are still hits after one
of them is killed with kill -9, because the two left find them in the bucket.

Run through ``run.sh demo`` (which starts nothing: run ``run.sh`` first), or by hand:

    PYTHONPATH=python/src deploy/fleet-local/target/venv/bin/python deploy/fleet-local/demo.py \
        --work deploy/fleet-local/target --servers 127.0.0.1:7070,127.0.0.1:7071,127.0.0.1:7072 \
        --bucket-dir deploy/fleet-local/target/s3/data/kv-fleet/fleet/

Only the standard library and the ``kvcache`` client (whose one dependency is ``crc32c``).
"""
from __future__ import annotations

import argparse
import logging
import os
import random
import re
import signal
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import kvcache

UPLOADS = re.compile(r'^kvcache_uploads_total\{to="s3"[^}]*\} ([0-9.eE+]+)$', re.M)
S3_HITS = re.compile(r'^kvcache_tier_hits_total\{tier="s3"[^}]*\} ([0-9.eE+]+)$', re.M)
HEX32 = re.compile(r"[0-9a-f]{32}")


def step(n: int, total: int, text: str) -> None:
    print(f"\n[demo] {n}/{total} {text}", flush=True)


def info(text: str) -> None:
    print(f"       {text}", flush=True)


def metric(server: str, pattern: re.Pattern[str]) -> float:
    """The sum of a metric's series on a server's /prometheus (0 when it has none yet)."""
    with urllib.request.urlopen(f"http://{server}/prometheus", timeout=5) as r:
        text = r.read().decode()
    return sum(float(v) for v in pattern.findall(text))


def bucket_blocks(bucket_dir: Path) -> int:
    """Block objects in the bucket, counted in rclone's directory: <prefix><folder>/<32 hex>."""
    if not bucket_dir.is_dir():
        return 0
    return sum(1 for p in bucket_dir.rglob("*") if p.is_file() and HEX32.fullmatch(p.name))


def running(pid: int) -> bool:
    """Whether the process runs (a zombie, killed but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kill9(pid: int, marker: str) -> None:
    """kill -9 of a server this fleet started, checked by its command line first."""
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    if marker not in cmdline:
        sys.exit(f"[demo] pid {pid} is not a server of this fleet ({cmdline[:80]!r}); not killing")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def read_all(client: kvcache.Client, keys: list[kvcache.BlockKey],
             blocks: list[bytes]) -> tuple[int, int, int]:
    """(hits with the bytes stored, misses, hits with other bytes) reading every key."""
    hits = misses = wrong = 0
    for key, block in zip(keys, blocks):
        got = client.get(key)
        if got is None:
            misses += 1
        elif got == block:
            hits += 1
        else:
            wrong += 1
    return hits, misses, wrong


def tiers(location: kvcache.PrefixLocation) -> str:
    return ", ".join(f"{t} {n}" for t, n in sorted(location.tiers.items())) or "none"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, type=Path, help="run.sh's work directory")
    ap.add_argument("--servers", required=True, help="the fleet, host:port,host:port,...")
    ap.add_argument("--bucket-dir", required=True, type=Path,
                    help="the bucket's prefix as rclone stores it on disk")
    ap.add_argument("--blocks", type=int, default=24, help="blocks to store (default 24)")
    ap.add_argument("--block-kib", type=int, default=256, help="KiB a block (default 256)")
    ap.add_argument("--kill", type=int, default=0,
                    help="which server to kill -9, by its place in --servers (default 0)")
    args = ap.parse_args()
    logging.basicConfig(format="       (client log) %(message)s", level=logging.WARNING)

    servers = args.servers.split(",")
    victim = servers[args.kill]
    victim_pid = int((args.work / "pids" / f"server-{args.kill}.pid").read_text())
    survivors = [s for s in servers if s != victim]
    total = 7

    # -- 1. the blocks of one prompt --------------------------------------------------------
    step(1, total, f"a client over the fleet: kvcache.Client({servers})")
    ns = kvcache.Namespace("demo-model", "bf16", "tp0of1", tenant=f"run-{time.time_ns()}")
    block_tokens = 16
    tokens = [random.Random(7).randrange(32000) for _ in range(args.blocks * block_tokens)]
    keys = kvcache.PrefixKeys(ns, block_tokens=block_tokens).keys_for(tokens)
    size = args.block_kib << 10
    blocks = [random.Random(i).randbytes(size) for i in range(len(keys))]
    fleet = kvcache.Client(servers, timeout=10)
    owner = [fleet.server_for(k) for k in keys]
    placement = Counter(owner)
    info(f"a prompt of {len(tokens)} tokens: {len(keys)} blocks of {args.block_kib} KiB "
         f"({block_tokens} tokens each), keys chained as an engine's prefix")
    info("rendezvous hashing places them: "
         + ", ".join(f"{s} {placement[s]}" for s in servers))

    # -- 2. look up, then store -------------------------------------------------------------
    step(2, total, "the engine looks the prompt up (nothing yet), computes its KV, stores the "
         "blocks (put_many)")
    before = bucket_blocks(args.bucket_dir)
    where = fleet.locate_prefix(keys)
    info(f"lookup: {where.present} of {len(keys)} leading blocks cached")
    t0 = time.monotonic()
    statuses = fleet.put_many(zip(keys, blocks))
    info(f"put: {dict(Counter(s.name for s in statuses))} in {time.monotonic() - t0:.2f} s")
    if any(s is not kvcache.PutStatus.STORED for s in statuses):
        print("[demo] not every block was stored; stopping here", file=sys.stderr)
        return 1

    # -- 3. uploads ---------------------------------------------------------------------------------
    step(3, total, "waiting until the servers have uploaded them to the bucket "
         "(each server's kvcache_uploads_total{to=\"s3\"})")
    t0 = time.monotonic()
    while True:
        uploaded = {s: metric(s, UPLOADS) for s in servers}
        if sum(uploaded.values()) >= len(keys) or time.monotonic() - t0 > 60:
            break
        time.sleep(0.2)
    info("uploaded: " + ", ".join(f"{s} {int(n)}" for s, n in uploaded.items())
         + f" (after {time.monotonic() - t0:.1f} s)")
    info(f"the bucket holds {bucket_blocks(args.bucket_dir)} block objects "
         f"({before} before this run) under {args.bucket_dir}")
    if sum(uploaded.values()) < len(keys):
        print("[demo] not every block reached the bucket within 60 s; stopping here",
              file=sys.stderr)
        return 1
    where = fleet.locate_prefix(keys)
    info(f"lookup through the fleet: {where.present} of {len(keys)} leading blocks cached "
         f"({tiers(where)})")

    # -- 4. kill -9 ---------------------------------------------------------------------------------
    step(4, total, f"kill -9 {victim} (pid {victim_pid}): its RAM and disk are gone with it, "
         f"and with them its {placement[victim]} blocks' local copies")
    kill9(victim_pid, "kvcache-server.jar")
    info(f"pid {victim_pid} {'still runs' if running(victim_pid) else 'is gone'}")

    # -- 5. the same client ------------------------------------------------------------------------
    step(5, total, "reading every block through the same client, which still lists all three")
    hits, misses, wrong = read_all(fleet, keys, blocks)
    info(f"{hits} hits, {misses} misses, {wrong} with wrong bytes: the client still sends "
         f"{victim}'s keys to {victim}, which is down, so they miss")
    info(f"its lookup stops at the first key of the server that is down: "
         f"{fleet.lookup_prefix(keys)} of {len(keys)}")
    fleet.close()

    # -- 6. the servers left -----------------------------------------------------------------------
    step(6, total, f"a client over the two servers left, as a DNS name would list them now: "
         f"kvcache.Client({survivors})")
    left = kvcache.Client(survivors, timeout=10)
    moved = Counter(left.server_for(k) for k, s in zip(keys, owner) if s == victim)
    info(f"{victim}'s {placement[victim]} keys move to "
         + ", ".join(f"{s} {moved[s]}" for s in survivors) + "; the others stay where they were")
    s3_hits_before = {s: metric(s, S3_HITS) for s in survivors}
    where = left.locate_prefix(keys)
    info(f"lookup: {where.present} of {len(keys)} leading blocks cached ({tiers(where)})")
    if where.present < len(keys):
        info("  (short: the servers ask the bucket about keys they do not know with HEAD "
             "requests, for at most kvcache.cache.s3.lookup-budget, 50 ms by default, per "
             "lookup; see README.md)")
        where = left.locate_prefix(keys)
        info(f"lookup again: {where.present} of {len(keys)} ({tiers(where)})")
    t0 = time.monotonic()
    hits, misses, wrong = read_all(left, keys, blocks)
    info(f"read back: {hits} hits with the bytes stored, {misses} misses, {wrong} with wrong "
         f"bytes, in {time.monotonic() - t0:.2f} s")
    s3_hits = {s: int(metric(s, S3_HITS) - s3_hits_before[s]) for s in survivors}
    info("of which the bucket served (kvcache_tier_hits_total{tier=\"s3\"}): "
         + ", ".join(f"{s} {n}" for s, n in s3_hits.items()))

    # -- 7. promoted ---------------------------------------------------------------------------------
    step(7, total, "looking the prompt up again")
    where = left.locate_prefix(keys)
    info(f"lookup: {where.present} of {len(keys)} ({tiers(where)}): the blocks read from the "
         f"bucket are now in the RAM of the servers they moved to")
    left.close()

    ok = hits == len(keys) and wrong == 0
    print(f"\n[demo] {'OK' if ok else 'NOT OK'}: {hits} of {len(keys)} blocks are hits through "
          f"the two servers left after {victim} was killed"
          + ("" if ok else f" ({misses} misses, {wrong} wrong)"), flush=True)
    print(f"[demo] {victim} stays down; 'run.sh stop' stops the rest "
          f"(then 'run.sh' starts a fresh fleet over the same bucket)", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
