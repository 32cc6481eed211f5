#!/usr/bin/env python3
"""boto3 against kvcache-server's S3 API, against a stock S3-compatible server on the same
machine (Versity Gateway over a tmpfs directory), and kvcache's own Python client against
kvcache-server, in one run: GET and PUT of 2 MiB and 32 MiB objects, from 1 and 4 threads; and
boto3's managed transfer, whose PUTs of 32 MiB are multipart uploads of 8 MiB parts (kvcache
keeps the parts until the upload completes, then copies them into the object's block).

    python/benchmarks/s3_api.sh     # makes the venv, builds versitygw once, runs this

or, in a venv with the kvcache package and boto3:

    python s3_api.py --jar kvcache-server/target/kvcache-server.jar --versitygw path/to/versitygw \\
        --out docs/results/s3-api/s3-api.json

kvcache-server runs with a 2 GiB RAM tier and no disk, its S3 API signed with a token's access
key (as boto3 signs by default: SigV4, the payload's SHA-256 over plain HTTP, a CRC32 of every
body); versitygw stores its objects as files in a directory of /dev/shm, so both serve from
memory. boto3 reads a GET's body into a new bytes object (its response's ``read()``) and checks
the CRC32 each server returns with it; kvcache's client reads into a preallocated buffer, with
shared memory off (the bytes come over the socket, as boto3's do). Each case runs for --seconds,
over --rounds rounds that alternate the stores, after a warm-up; the figures are the medians over
the rounds. CPU is the client process's (all threads) and the server's (from /proc), per GB.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import boto3
import boto3.s3.transfer
import botocore.config
import kvcache

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_vs_redis import KvcacheStore, Store, measure, medians, parse_rounds  # noqa: E402
from loopback import free_port, wait_for_port  # noqa: E402

SIZES = [2 << 20, 32 << 20]
THREADS = [1, 4]
PART = 8 << 20  # boto3's and awscrt's default part
# what each of kvcache's stores is compared with, in the same run
BASELINES = {"kvcache-s3": ("versitygw", "kvcache-client"),
             "kvcache-s3-parts": ("versitygw-parts", "kvcache-s3")}
ACCESS_KEY, SECRET = "AKIDKVCACHEBENCH", "0123456789abcdef0123456789abcdef-bench"


def start_kvcache(jar: str) -> tuple[subprocess.Popen[bytes], int, int]:
    port, s3_port = free_port(), free_port()
    p = subprocess.Popen(["java", "-Xmx512m", "-XX:MaxDirectMemorySize=3g",
                          f"-Dmicronaut.server.port={port}", f"-Dkvcache.s3.port={s3_port}",
                          "-Dkvcache.cache.ram-bytes=2GiB", "-Dkvcache.cache.disk-dir=",
                          "-Dmicronaut.server.host=127.0.0.1",
                          "-Dkvcache.auth.tokens.bench.secret=" + SECRET,
                          "-Dkvcache.auth.tokens.bench.access-key=" + ACCESS_KEY,
                          "-Dkvcache.auth.tokens.bench.read=default",
                          "-Dkvcache.auth.tokens.bench.write=default", "-jar", jar],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, p, "kvcache-server")
    wait_for_port(s3_port, p, "kvcache-server's S3 API")
    return p, port, s3_port


def start_versitygw(binary: str, root: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "ROOT_ACCESS_KEY": ACCESS_KEY, "ROOT_SECRET_KEY": SECRET}
    p = subprocess.Popen([binary, "--port", f"127.0.0.1:{port}", "posix", root], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, p, "versitygw")
    return p, port


class Boto3Store(Store):
    """boto3 with its defaults; with ``parts``, PUTs go through its managed transfer in parts of
    that size (a multipart upload for a larger object)."""

    def __init__(self, name: str, port: int, pid: int, bucket: str, parts: int = 0) -> None:
        self.name, self.pid, self.bucket = name, pid, bucket
        self.transfer = boto3.s3.transfer.TransferConfig(
            multipart_threshold=parts, multipart_chunksize=parts, max_concurrency=4) if parts else None
        self.s3 = boto3.client(
            "s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET,
            config=botocore.config.Config(max_pool_connections=16,
                                          retries={"max_attempts": 1}))

    def get_into(self, key: bytes, buf: bytearray) -> int:
        data = self.s3.get_object(Bucket=self.bucket, Key=key.hex())["Body"].read()
        assert len(data) == len(buf), len(data)
        return len(data)

    def put(self, key: bytes, buf: bytearray) -> None:
        if self.transfer is None:
            self.s3.put_object(Bucket=self.bucket, Key=key.hex(), Body=bytes(buf))
        else:
            self.s3.upload_fileobj(io.BytesIO(buf), self.bucket, key.hex(), Config=self.transfer)


class KvcacheClientStore(KvcacheStore):
    """kvcache's Python client, with the token the S3 API signs with, shared memory off."""

    name = "kvcache-client"

    def __init__(self, port: int, pid: int) -> None:
        self.client = kvcache.Client(f"127.0.0.1:{port}", token=SECRET, shared_memory=False)
        self.pid = pid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jar", required=True, help="the kvcache-server jar")
    ap.add_argument("--versitygw", required=True, help="the versitygw binary")
    a = parse_rounds(ap)

    root = tempfile.mkdtemp(prefix="versitygw-", dir="/dev/shm")
    os.mkdir(os.path.join(root, "default"))  # its bucket: a directory
    kv_proc, kv_port, s3_port = start_kvcache(a.jar)
    gw_proc, gw_port = start_versitygw(a.versitygw, root)
    stores: list[Store] = [Boto3Store("kvcache-s3", s3_port, kv_proc.pid, "default"),
                           Boto3Store("versitygw", gw_port, gw_proc.pid, "default"),
                           Boto3Store("kvcache-s3-parts", s3_port, kv_proc.pid, "default", PART),
                           Boto3Store("versitygw-parts", gw_port, gw_proc.pid, "default", PART),
                           KvcacheClientStore(kv_port, kv_proc.pid)]
    try:
        runs = measure(stores, SIZES, THREADS, a)
    finally:
        for p in (kv_proc, gw_proc):
            p.terminate()
            p.wait()
        shutil.rmtree(root, ignore_errors=True)
    rows = medians(runs)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "platform": platform.platform(), "boto3": boto3.__version__,
               "kvcache": kvcache.__version__, "versitygw": os.path.basename(a.versitygw),
               "date": time.strftime("%Y-%m-%d")}
    with open(a.out, "w") as f:
        json.dump({"machine": machine, "seconds": a.seconds, "rounds": a.rounds,
                   "throughput": rows}, f, indent=1)
    by = {(r["store"], r["op"], r["size"], r["threads"]): r for r in rows}
    for row in rows:
        line = (f"{row['store']:14} {row['op']} {row['size'] >> 20:3} MiB x{row['threads']}: "
                f"{row['gbps']:.2f} GB/s, client {row['client_cpu_s_per_gb']:.2f} s/GB, "
                f"server {row['server_cpu_s_per_gb']:.2f} s/GB")
        for other in BASELINES.get(row["store"], ()):
            o = by.get((other, row["op"], row["size"], row["threads"]))
            if o:
                line += f", {row['gbps'] / o['gbps']:.2f}x {other}"
        print(line)


if __name__ == "__main__":
    main()
