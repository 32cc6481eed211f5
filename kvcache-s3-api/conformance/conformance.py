#!/usr/bin/env python3
"""Versity Gateway's own S3 test harness (``versitygw test <name>``, one process per test) against
kvcache-server's S3 API, the results by group (a test's name up to its first ``_``: the
operation or feature it tests).

    kvcache-s3-api/conformance/run.sh            # builds versitygw once, runs this

Each test makes its bucket ``test-bucket-1`` with CreateBucket and deletes it after; the server
serves that name as a namespace, so CreateBucket finds it and DeleteBucket leaves it, empty. A
test's other buckets (``test-bucket-2``, ...) are not namespaces: those of a test that makes
several fail, and those of a test of a bucket that does not exist do not exist. The harness compares an error's message with AWS's own text as
well as its code: a test that failed only on the text (``expected X, instead got X``) is counted
apart, since kvcache's messages say what was wrong instead.

Two other kinds of failure are counted apart too: those on a choice the docs state (an ETag that
is not an MD5, no CRC64NVME computed for an object sent without a checksum), and those of tests
of versitygw itself (its admin and IAM API, which the harness calls to make users, and its
file-system back end's limits on names and directories, ``POSIX_ONLY``).

A group is applicable if the API serves its operation (``SERVED``); the others are listed with the
reason they are not. The run fails if a test named in ``passing.txt`` (the tests that passed when
it was last recorded) fails now; ``--record`` rewrites that file and the results in the docs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PASSING = HERE / "passing.txt"
RESULTS = ROOT / "docs" / "results" / "s3-api" / "conformance.json"
ACCESS_KEY, SECRET = "AKIDCONFORMANCE", "0123456789abcdef0123456789abcdef-conformance"
# the bucket a test makes first; its tests of a bucket that does not exist name the next ones
BUCKETS = ["test-bucket-1"]

# the groups of the operations the API serves; every other group is not applicable, for the
# reason NOT_SERVED gives it (or the default)
SERVED = {"PutObject", "GetObject", "HeadObject", "DeleteObject", "DeleteObjects", "ListObjectsV2",
          "ListObjects",
          "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload",
          "AbortMultipartUpload", "HeadBucket", "ListBuckets", "CreateBucket", "DeleteBucket",
          "PresignedAuth", "Authentication"}
NOT_SERVED = {
    "CopyObject": "copies are not served (an engine stores its blocks; it never copies one)",
    "UploadPartCopy": "copies are not served",
    "ListObjectVersions": "versioning is not served: a cache keeps one version of an object",
    "Versioning": "versioning is not served",
    "ListParts": "ListParts is not served: parts are kept only until their upload completes",
    "ListMultipartUploads": "ListMultipartUploads is not served",
    "GetObjectAttributes": "GetObjectAttributes is not served",
    "PostObject": "browser form uploads (POST object) are not served",
    "WebsiteHosting": "static websites are not served",
}
NOT_SERVED_DEFAULT = ("not served: ACLs, policies, tagging, object lock, CORS, IAM and the like "
                      "are beyond a KV cache (its tokens are its access control)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(jar: str) -> tuple[subprocess.Popen[bytes], int]:
    port, s3 = free_port(), free_port()
    names = ",".join(["default", *BUCKETS])
    settings = {
        "micronaut.server.port": port, "micronaut.server.host": "127.0.0.1",
        "kvcache.s3.port": s3, "kvcache.cache.ram-bytes": "1GiB", "kvcache.cache.disk-dir": "",
        "kvcache.namespaces": names,
        "kvcache.auth.tokens.conformance.secret": SECRET,
        "kvcache.auth.tokens.conformance.access-key": ACCESS_KEY,
        "kvcache.auth.tokens.conformance.read": names,
        "kvcache.auth.tokens.conformance.write": names,
    }
    p = subprocess.Popen(["java", "-Xmx512m", "-XX:MaxDirectMemorySize=2g",
                          *[f"-D{k}={v}" for k, v in settings.items()], "-jar", jar],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if p.poll() is not None:
            sys.exit(f"kvcache-server exited with {p.returncode}")
        try:
            socket.create_connection(("127.0.0.1", s3), 0.2).close()
            return p, s3
        except OSError:
            time.sleep(0.1)
    p.kill()
    sys.exit("kvcache-server did not listen within 60 s")


def test_names(versitygw: str) -> list[str]:
    out = subprocess.run([versitygw, "test", "--help"], capture_output=True, text=True).stdout
    return sorted(m.group(1) for m in re.finditer(r"^\s+(\S+)\s+Runs \S+ integration test$",
                                                   out, re.M))


def group(name: str) -> str:
    return name.split("_", 1)[0]


def run_test(versitygw: str, port: int, name: str, timeout: float) -> tuple[str, str]:
    """``pass``, ``message`` (failed only on an error's text), ``choice`` (on a documented choice),
    ``versitygw`` (a test of versitygw itself), or ``fail``; and the output."""
    # the harness's client has no CA bundle to add over plain HTTP: AWS_CA_BUNDLE stops it
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    try:
        r = subprocess.run([versitygw, "test", "--access", ACCESS_KEY, "--secret", SECRET,
                            "--endpoint", f"http://127.0.0.1:{port}", name],
                           capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "fail", f"no answer within {timeout:.0f} s"
    out = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout + r.stderr)
    reasons = re.findall(r"^FAIL \S+: (.*)$", out, re.M)
    if r.returncode == 0 and not reasons:
        return "pass", out
    if name in POSIX_ONLY or VERSITYGW_ONLY.search(out):
        return "versitygw", out
    for kind, pattern in (("message", MESSAGE_ONLY), ("choice", DOCUMENTED_CHOICE)):
        if reasons and all(pattern.search(x) for x in reasons):
            return kind, out
    return "fail", out


# failures on a choice docs/s3-api.md states: ETags are not MD5s (a PutObject's answer names the
# one the server made; the harness expects the MD5 of the bytes, or versitygw's own checksum
# ETags), and no CRC64NVME is computed for an object sent without a checksum
DOCUMENTED_CHOICE = re.compile(r"ETag to be|crc64nvme", re.I)
# the harness calling versitygw's admin command or IAM API (to make users)
VERSITYGW_ONLY = re.compile(r"fork/exec \./versitygw|operation error IAM:")
# the tests of versitygw's file-system back end (its tests/integration/posix.go): the length of a
# file name, and keys that are directories of others
POSIX_ONLY = {"PutObject_overwrite_dir_obj", "PutObject_overwrite_file_obj",
              "PutObject_overwrite_file_obj_with_nested_obj", "PutObject_dir_obj_with_data",
              "PutObject_with_slashes", "CreateMultipartUpload_dir_obj", "PutObject_name_too_long",
              "HeadObject_name_too_long", "DeleteObject_name_too_long",
              "PutObject_race_with_delete"}


# a failure on an error's message alone: its code and status were the ones expected
MESSAGE_ONLY = re.compile(r"expected error message to be |^(?:test (?:case )?\d+ failed: )?"
                          r"expected error message")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jar", required=True, help="the kvcache-server jar")
    ap.add_argument("--versitygw", required=True, help="the versitygw binary")
    ap.add_argument("--record", action="store_true",
                    help="rewrite passing.txt and docs/results/s3-api/conformance.json")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test")
    ap.add_argument("--only", default="", help="the groups to run, comma-separated (all: empty)")
    a = ap.parse_args()

    names = test_names(a.versitygw)
    if not names:
        sys.exit("versitygw listed no integration tests")
    only = {g for g in a.only.split(",") if g}
    applicable = [n for n in names if group(n) in SERVED and (not only or group(n) in only)]
    expected = set(PASSING.read_text().split()) if PASSING.exists() else set()
    server, port = start_server(a.jar)
    outcome: dict[str, str] = {}
    failures: dict[str, str] = {}
    started = time.monotonic()
    try:
        for i, name in enumerate(applicable, 1):
            result, out = run_test(a.versitygw, port, name, a.timeout)
            outcome[name] = result
            if result == "fail":
                reasons = re.findall(r"^FAIL \S+: (.*)$", out, re.M)
                failures[name] = reasons[0] if reasons else "\n".join(out.strip().splitlines()[-3:])
            if i % 50 == 0 or i == len(applicable):
                passed = sum(r == "pass" for r in outcome.values())
                print(f"[conformance] {i}/{len(applicable)} tests, {passed} passed, "
                      f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    finally:
        server.terminate()
        server.wait()

    columns = {"pass": "passed", "message": "message_text_only", "choice": "documented_choice",
               "versitygw": "versitygw_only", "fail": "failed"}
    groups: dict[str, dict[str, int]] = defaultdict(
        lambda: {"ran": 0, **{c: 0 for c in columns.values()}})
    for name, result in outcome.items():
        g = groups[group(name)]
        g["ran"] += 1
        g[columns[result]] += 1
    not_applicable: dict[str, dict[str, object]] = {}
    for name in names:
        g = group(name)
        if g not in SERVED:
            entry = not_applicable.setdefault(g, {"tests": 0,
                                                  "reason": NOT_SERVED.get(g, NOT_SERVED_DEFAULT)})
            entry["tests"] = int(str(entry["tests"])) + 1
    for g, counts in sorted(groups.items()):
        print(f"{g:26} {counts['passed']:4} passed, {counts['message_text_only']:4} failed on the "
              f"message text only, {counts['documented_choice']:4} on a documented choice, "
              f"{counts['versitygw_only']:4} tests of versitygw, {counts['failed']:4} failed, "
              f"of {counts['ran']}")
    for name, tail in sorted(failures.items()):
        print(f"FAILED {name}: {tail}", file=sys.stderr)

    passing = sorted(n for n, r in outcome.items() if r == "pass")
    regressed = sorted(n for n in expected if n in outcome and outcome[n] != "pass")
    if a.record and not only:
        PASSING.write_text("\n".join(passing) + "\n")
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({
            "harness": "versitygw test", "versitygw": os.path.basename(a.versitygw),
            "date": time.strftime("%Y-%m-%d"),
            "tests": len(names), "applicable": len(applicable), "groups": dict(sorted(groups.items())),
            "not_applicable": dict(sorted(not_applicable.items()))}, indent=1) + "\n")
        print(f"recorded {len(passing)} passing tests in {PASSING} and the groups in {RESULTS}")
    if regressed:
        sys.exit(f"{len(regressed)} tests that passed before fail now: " + ", ".join(regressed))


if __name__ == "__main__":
    main()
