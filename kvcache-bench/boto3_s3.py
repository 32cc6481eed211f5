"""PUT and GET of whole blocks with boto3, the stock Python S3 client, as the baseline the object
tier's own throughput is set against (run by ``run-object-tier-benchmarks.sh`` against the same
server in the same run as ``ObjectTierBenchmark``).

Each trial is one client, one operation, one block size and a number of threads, each thread
moving one block at a time, as the JMH benchmark does: warm-up rounds, then measured rounds of a
fixed time, reported as operations per second (mean and standard deviation over the rounds) and
CPU seconds per GiB moved (the process's user and system time over the measured rounds).

The client is ``boto3``'s own: ``put_object`` with the block as the body, ``get_object`` with the
body read whole. boto3's CRT transfer manager (``TransferConfig(preferred_transfer_client="crt")``)
is not a baseline here: it builds its own S3 client from the region alone and ignores a custom
``endpoint_url`` (boto/boto3 issue 4839), so it cannot reach an S3-compatible server on loopback.

One JSON line per trial goes to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import threading
import time
from typing import Callable

import boto3
from botocore.config import Config


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Mover:
    """Moves one block at a time under numbered names, as one client."""

    def __init__(self, endpoint: str, bucket: str, key_id: str, secret: str, threads: int,
                 block: bytes) -> None:
        self.bucket = bucket
        self.block = block
        self.client = boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key_id,
            aws_secret_access_key=secret,
            config=Config(max_pool_connections=max(10, 2 * threads),
                          s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          request_checksum_calculation="when_required",
                          response_checksum_validation="when_required"))

    def name(self, n: int) -> str:
        return f"boto3/{len(self.block)}/{n}"

    def put(self, n: int) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.name(n), Body=self.block)

    def get(self, n: int) -> None:
        length = len(self.client.get_object(Bucket=self.bucket, Key=self.name(n))["Body"].read())
        if length != len(self.block):
            raise RuntimeError(f"{self.name(n)}: {length} bytes, not {len(self.block)}")


def run_round(op: Callable[[int], None], threads: int, seconds: float, names: int) -> int:
    """Runs ``op`` from ``threads`` threads for ``seconds``; the operations done."""
    stop = time.monotonic() + seconds
    counts = [0] * threads
    errors: list[BaseException] = []

    def work(t: int) -> None:
        i = t
        try:
            while time.monotonic() < stop:
                op(i % names)
                counts[t] += 1
                i += threads
        except BaseException as e:  # reported after the round
            errors.append(e)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return sum(counts)


def trial(args: argparse.Namespace, op_name: str, size: int, threads: int) -> dict:
    block = os.urandom(size)
    mover = Mover(args.endpoint, args.bucket, args.access_key, args.secret_key, threads, block)
    names = 16
    for n in range(names):  # the GETs read these; the PUTs overwrite them
        mover.put(n)
    op = mover.put if op_name == "put" else mover.get
    for _ in range(args.warmup):
        run_round(op, threads, args.seconds, names)
    rates = []
    cpu = 0.0
    moved = 0
    for _ in range(args.rounds):
        c0 = cpu_seconds()
        t0 = time.monotonic()
        ops = run_round(op, threads, args.seconds, names)
        rates.append(ops / (time.monotonic() - t0))
        cpu += cpu_seconds() - c0
        moved += ops * size
    result = {"client": "boto3", "op": op_name, "blockBytes": size, "threads": threads,
              "opsPerSecond": statistics.mean(rates),
              "opsPerSecondStdev": statistics.stdev(rates) if len(rates) > 1 else 0.0,
              "cpuSeconds": round(cpu, 4), "bytes": moved,
              "cpuSecondsPerGiB": cpu / (moved / float(1 << 30)) if moved else None}
    print(f"boto3 {op_name} {size:>9d} B x{threads}: {result['opsPerSecond']:9.1f} "
          f"± {result['opsPerSecondStdev']:.1f} ops/s, {result['cpuSecondsPerGiB'] or 0:.2f} "
          f"CPU s/GiB", flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", default="bench")
    ap.add_argument("--access-key", default="bench-access")
    ap.add_argument("--secret-key", default="bench-secret-key")
    ap.add_argument("--sizes", type=int, nargs="+", default=[262144, 2097152, 33554432])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--warmup", type=int, default=3, help="warm-up rounds (default 3)")
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds (default 5)")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds a round (default 3)")
    ap.add_argument("--out", required=True, help="JSON lines file, appended to")
    args = ap.parse_args()
    with open(args.out, "a") as out:
        for threads in args.threads:
            for op_name in ("put", "get"):
                for size in args.sizes:
                    try:
                        r = trial(args, op_name, size, threads)
                    except Exception as e:  # one trial's failure does not end the run
                        print(f"boto3 {op_name} {size} x{threads} failed: {e!r}",
                              file=sys.stderr, flush=True)
                        r = {"client": "boto3", "op": op_name, "blockBytes": size,
                             "threads": threads, "error": repr(e)}
                    out.write(json.dumps(r) + "\n")
                    out.flush()


if __name__ == "__main__":
    main()
