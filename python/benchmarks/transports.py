#!/usr/bin/env python3
"""Which HTTP transport moves KV blocks fastest from Python to kvcache-server and back.

Measures GET into a preallocated buffer and PUT from one, for 256 KiB, 2 MiB and 32 MiB blocks,
from 1 and 4 threads, with each candidate transport, against a running server:

    python transports.py --url http://127.0.0.1:7070 [--seconds 2] [transport ...]

Transports: kvcache (the client package: its own HTTP/1.1 connections, CRC32C checked),
http.client (standard library, HTTP/1.1 keep-alive, readinto), urllib3 (HTTP/1.1 pool), httpx
(HTTP/2 through h2), pycurl (libcurl, HTTP/2 with prior knowledge), niquests (HTTP/2). Each one
that is not installed is skipped; a transport that fails a case is reported on stderr. Prints
one JSON line per case: GB/s and the client's CPU seconds per GB moved (process CPU time, all
threads). The server should be RAM only (kvcache.cache.disk-dir empty), or PUTs measure the disk.
"""
import argparse
import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

SIZES = [256 << 10, 2 << 20, 32 << 20]
KEYS_PER_CASE = 8


class _NoDelayConnection(http.client.HTTPConnection):
    def connect(self):
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def stdlib(base):
    u = urllib.parse.urlsplit(base)
    local = threading.local()

    def conn():
        c = getattr(local, "c", None)
        if c is None:
            c = local.c = _NoDelayConnection(u.hostname, u.port)
        return c

    def put(path, data):
        c = conn()
        c.request("PUT", path, body=data, headers={
            "Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
        r = c.getresponse()
        r.read()
        assert r.status in (201, 202), r.status

    def get(path, buf):
        c = conn()
        c.request("GET", path)
        r = c.getresponse()
        n = r.readinto(buf)
        assert r.status == 200 and n == len(buf), (r.status, n)
        r.read()
    return put, get


def urllib3_(base):
    import urllib3
    pool = urllib3.PoolManager(maxsize=8)

    def put(path, data):
        r = pool.request("PUT", base + path, body=data,
                         headers={"Content-Type": "application/octet-stream"})
        assert r.status in (201, 202), r.status

    def get(path, buf):
        r = pool.request("GET", base + path, preload_content=False)
        n = r.readinto(buf)
        assert r.status == 200 and n == len(buf), (r.status, n)
        r.release_conn()
    return put, get


def httpx_(base):
    import httpx
    client = httpx.Client(http2=True, http1=False, base_url=base, timeout=60)

    def put(path, data):
        r = client.put(path, content=bytes(data),
                       headers={"Content-Type": "application/octet-stream"})
        assert r.status_code in (201, 202), r.status_code

    def get(path, buf):
        mv = memoryview(buf)
        pos = 0
        with client.stream("GET", path) as r:
            for chunk in r.iter_raw():
                mv[pos:pos + len(chunk)] = chunk
                pos += len(chunk)
        assert pos == len(buf)
    return put, get


def pycurl_(base):
    import pycurl
    local = threading.local()

    def handle():
        c = getattr(local, "c", None)
        if c is None:
            c = local.c = pycurl.Curl()
            c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
            c.setopt(pycurl.TCP_NODELAY, 1)
        return c

    def put(path, data):
        c = handle()
        mv = memoryview(data)
        pos = [0]

        def read(n):
            chunk = mv[pos[0]:pos[0] + n]
            pos[0] += len(chunk)
            return bytes(chunk)
        c.setopt(pycurl.URL, base + path)
        c.setopt(pycurl.UPLOAD, 1)
        c.setopt(pycurl.READFUNCTION, read)
        c.setopt(pycurl.INFILESIZE_LARGE, len(mv))
        c.setopt(pycurl.HTTPHEADER, ["Content-Type: application/octet-stream", "Expect:"])
        c.setopt(pycurl.WRITEFUNCTION, lambda b: None)
        c.perform()
        assert c.getinfo(pycurl.RESPONSE_CODE) in (201, 202)

    def get(path, buf):
        c = handle()
        mv = memoryview(buf)
        pos = [0]

        def write(chunk):
            mv[pos[0]:pos[0] + len(chunk)] = chunk
            pos[0] += len(chunk)
        c.setopt(pycurl.UPLOAD, 0)
        c.setopt(pycurl.HTTPGET, 1)
        c.setopt(pycurl.URL, base + path)
        c.setopt(pycurl.WRITEFUNCTION, write)
        c.perform()
        assert c.getinfo(pycurl.RESPONSE_CODE) == 200 and pos[0] == len(buf)
    return put, get


def niquests_(base):
    import niquests
    s = niquests.Session(multiplexed=False)

    def put(path, data):
        r = s.put(base + path, data=bytes(data),
                  headers={"Content-Type": "application/octet-stream"})
        assert r.status_code in (201, 202), r.status_code

    def get(path, buf):
        r = s.get(base + path)
        assert r.status_code == 200 and len(r.content) == len(buf)
        memoryview(buf)[:] = r.content
    return put, get


def kvcache_(base):
    import kvcache
    u = urllib.parse.urlsplit(base)
    client = kvcache.Client(f"{u.hostname}:{u.port}", max_workers=8)

    def key(path):
        return path.rsplit("/", 1)[1]

    def put(path, data):
        assert client.put(key(path), data) is kvcache.PutStatus.STORED

    def get(path, buf):
        assert client.get_into(key(path), buf) == len(buf)
    return put, get


TRANSPORTS = {"kvcache": kvcache_, "http.client": stdlib, "urllib3": urllib3_, "httpx-h2": httpx_,
              "pycurl-h2": pycurl_, "niquests-h2": niquests_}


def run_case(put, get, op, size, threads, seconds, ns):
    data = os.urandom(size)
    paths = [f"/v1/namespaces/{ns}/blocks/{i:032x}" for i in range(KEYS_PER_CASE)]
    for p in paths:
        put(p, data)
    stop = time.monotonic() + seconds
    done = [0] * threads

    def worker(t):
        buf = bytearray(size)
        i = t
        while time.monotonic() < stop:
            p = paths[i % len(paths)]
            try:
                if op == "get":
                    get(p, buf)
                else:
                    put(p, memoryview(data))
            except Exception as e:  # a transport that fails is reported, not retried
                print(f"# {op} {size} x{threads}: {type(e).__name__}: {e}", file=sys.stderr)
                return
            done[t] += 1
            i += 1
    cpu0, t0 = time.process_time(), time.monotonic()
    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    moved = sum(done) * size
    if not moved:
        return {"gbps": 0.0, "cpu_s_per_gb": None, "ops": 0}
    return {"gbps": moved / wall / 1e9, "cpu_s_per_gb": cpu / (moved / 1e9), "ops": sum(done)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:7070")
    ap.add_argument("--namespace", default="default")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--warmup", type=float, default=12.0,
                    help="seconds of GETs and PUTs first, so that the server's JIT has compiled its paths")
    ap.add_argument("transports", nargs="*", default=list(TRANSPORTS))
    a = ap.parse_args()
    put, get = stdlib(a.url)
    for size in SIZES:
        for op in ("get", "put"):
            run_case(put, get, op, size, 2, a.warmup / (2 * len(SIZES)), a.namespace)
    for name in a.transports:
        try:
            put, get = TRANSPORTS[name](a.url)
        except ImportError as e:
            print(f"# {name}: not installed ({e})", file=sys.stderr)
            continue
        for size in SIZES:
            for threads in (1, 4):
                for op in ("get", "put"):
                    r = run_case(put, get, op, size, threads, a.seconds, a.namespace)
                    print(json.dumps({"transport": name, "op": op, "size": size,
                                      "threads": threads, **r}), flush=True)


if __name__ == "__main__":
    main()
