#!/usr/bin/env python3
"""The two halves of deploy/monitoring/check.sh that speak HTTP (Python's standard library only).

  check.py traffic  --server 127.0.0.1:PORT
      Drives a kvcache-server with every tier (RAM over disk over an object store, small RAM and
      disk) so that every tier serves reads: PUTs, RAM hits, disk hits, object-tier hits after
      the disk dropped the blocks, misses, HEAD, DELETE, a batch GET, a pinned lookup read through
      its lease and copied into a file, PUTs and GETs in a second namespace. Fails unless the
      server's own counters show hits of the ram, disk and s3 tiers. It speaks HTTP/1.1, so no
      GET takes the HTTP/2 fast path (kvcache_fast_gets_total stays 0; its series is there all
      the same): curl 7.88, Debian 12's, fails every request after the first on a reused
      prior-knowledge HTTP/2 connection (curl issue #10634, fixed in curl 8.0).

  check.py evaluate --prometheus http://127.0.0.1:PORT --dashboard FILE --rules FILE
                    --job JOB --instance HOST:PORT
      Evaluates through Prometheus' HTTP API every query of the dashboard (template variables
      substituted) and every alert rule's expression with its threshold taken off, and each
      metric selector inside the rules. Fails listing every query that returns no series (or
      series without a label its legend names), every metric docs/metrics.md does not list,
      rules Prometheus could not evaluate, and alerts pending or firing on the healthy server.
"""
import argparse
import http.client
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

BLOCK = 128 * 1024


def say(msg):
    print(f"[monitoring] {msg}", flush=True)


def fail(msg):
    print(f"[monitoring] error: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


# ------------------------------------------------------------------------------------ traffic

class Server:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return resp.status, data, resp
            except (ConnectionError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def metrics(self):
        status, data, _ = self.request("GET", "/prometheus")
        if status != 200:
            fail(f"GET /prometheus answered {status}")
        values = {}
        for line in data.decode().splitlines():
            if not line or line.startswith("#"):
                continue
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                pass
        return values


def key(i):
    return f"{i:032x}"


def blocks(ns, i):
    return f"/v1/namespaces/{ns}/blocks/{key(i)}"


def body(i):
    # a block's bytes: its number, repeated (the server stores them as they come)
    return (i.to_bytes(4, "big") * (BLOCK // 4))


def metric(values, name, **labels):
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    total = 0.0
    for series, v in values.items():
        base, _, rest = series.partition("{")
        if base != name:
            continue
        if all(f'{k}="{v}"' in rest for k, v in labels.items()):
            total += v
    return total, want


def wait_uploads(srv, deadline_s=60):
    """Waits until the disk tier has nothing queued for the object tier."""
    end = time.monotonic() + deadline_s
    while True:
        waiting, _ = metric(srv.metrics(), "kvcache_uploads_waiting")
        if waiting == 0:
            return
        if time.monotonic() > end:
            fail(f"uploads to the object store still waiting after {deadline_s}s: {waiting:.0f}")
        time.sleep(0.2)


def cmd_traffic(args):
    srv = Server(args.server)
    ns, ns2 = args.namespaces.split(",")[:2]
    n = args.blocks
    started = time.monotonic()

    # PUTs, in batches, letting the uploads to the bucket keep up (an upload whose block the
    # disk no longer holds when its turn comes is dropped, and the block would be in no tier)
    statuses = {}
    for i in range(n):
        status, data, _ = srv.request("PUT", blocks(ns, i), body(i),
                                      {"Content-Type": "application/octet-stream"})
        statuses[status] = statuses.get(status, 0) + 1
        if status != 201:
            fail(f"PUT {blocks(ns, i)} answered {status}: {data[:200]!r}")
        if i % 16 == 15:
            wait_uploads(srv)
    wait_uploads(srv)
    say(f"  PUT {n} blocks of {BLOCK // 1024} KiB in '{ns}': {statuses}")

    def get(i, expect, what, ns_=ns):
        status, data, _ = srv.request("GET", blocks(ns_, i))
        if status != expect:
            fail(f"GET of {what} ({blocks(ns_, i)}) answered {status}, expected {expect}")
        if status == 200 and data != body(i):
            fail(f"GET of {what} ({blocks(ns_, i)}) answered other bytes")

    def tier_hits():
        values = srv.metrics()
        return {t: metric(values, "kvcache_tier_hits_total", tier=t)[0]
                for t in ("ram", "spill", "disk", "s3")}

    before = tier_hits()
    # the newest blocks are in RAM; older ones only on disk; the oldest only in the bucket
    for i in range(n - 3, n):
        get(i, 200, "a recent block")
    for i in range(n - 60, n - 55):
        get(i, 200, "a block RAM evicted")
    # the first blocks are read from the bucket. rclone's S3 server now and then refuses one of
    # the first uploads into a new folder ("Dir.Rename error: file does not exist" in its log);
    # the server counts it (kvcache_s3_puts_not_stored_total) and tries it again a second later,
    # from the disk: a block the disk evicted before that is a miss, never other bytes
    refused, _ = metric(srv.metrics(), "kvcache_s3_puts_not_stored_total")
    missed = 0
    for i in range(0, 8):
        status, data, _ = srv.request("GET", blocks(ns, i))
        if status == 404:
            missed += 1
        elif status != 200 or data != body(i):
            fail(f"GET of one of the first blocks ({blocks(ns, i)}) answered {status}"
                 + (", other bytes" if status == 200 else ""))
    if missed > refused or missed == 8:
        fail(f"{missed} of the first 8 blocks missed, {refused:.0f} uploads refused by the store")
    after = tier_hits()
    gained = {t: after[t] - before[t] for t in after}
    say("  GETs served by tier: " + ", ".join(f"{t} {v:.0f}" for t, v in gained.items()))

    # misses, HEAD, DELETE
    for i in range(10):
        get(10_000_000 + i, 404, "a key never stored")
    status, _, resp = srv.request("HEAD", blocks(ns, n - 1))
    if status != 200:
        fail(f"HEAD answered {status}")
    status, _, _ = srv.request("DELETE", blocks(ns, n - 2))
    if status != 204:
        fail(f"DELETE answered {status}")
    say("  10 misses, a HEAD, a DELETE")

    # a batch GET
    keys = [key(i) for i in range(n - 8, n - 3)]
    status, data, resp = srv.request("POST", f"/v1/namespaces/{ns}/batch-get",
                                     json.dumps({"keys": keys}),
                                     {"Content-Type": "application/json"})
    if status != 200:
        fail(f"batch GET answered {status}: {data[:200]!r}")
    say(f"  batch GET of {len(keys)} keys: lengths {resp.getheader('Kvcache-Block-Lengths')}")

    # a pinned lookup, read through its lease, and copied into a file of this host
    keys = [key(i) for i in range(n - 12, n - 8)]
    status, data, _ = srv.request("POST", f"/v1/namespaces/{ns}/lookup",
                                  json.dumps({"keys": keys, "pin_ms": 30000,
                                              "shared_memory": True}),
                                  {"Content-Type": "application/json"})
    if status != 200:
        fail(f"pinned lookup answered {status}: {data[:200]!r}")
    found = json.loads(data)
    lease = found.get("lease")
    if not lease or found.get("present", 0) < 2:
        fail(f"pinned lookup found {found.get('present')} of {len(keys)} blocks: {found}")
    status, data, _ = srv.request("GET", f"/v1/namespaces/{ns}/leases/{lease}/blocks/0")
    if status != 200 or data != body(n - 12):
        fail(f"GET through the lease answered {status}")
    copied = "no copy token"
    token = found.get("copy_token")
    if token:
        path = os.path.join(args.work, "copy-into.bin")
        length = found["lengths"][1]
        # the token in the place's last 16 bytes and at the start of each 4 KiB before those
        # (docs/server.md, "Copies into a file of the client")
        marked = bytearray(length)
        mark = bytes.fromhex(token)
        for at in [*range(0, length - 2 * len(mark) + 1, 4096), length - len(mark)]:
            marked[at:at + len(mark)] = mark
        with open(path, "wb") as f:
            f.write(marked)
        status, data, _ = srv.request("POST", f"/v1/namespaces/{ns}/leases/{lease}/copy-into",
                                      json.dumps({"file": path, "token": token,
                                                  "blocks": [[1, 0]]}),
                                      {"Content-Type": "application/json"})
        if status != 200:
            fail(f"copy-into answered {status}: {data[:200]!r}")
        copied = json.loads(data)["blocks"]
        with open(path, "rb") as f:
            if f.read() != body(n - 11):
                fail("copy-into wrote other bytes than the block's")
    status, _, _ = srv.request("DELETE", f"/v1/namespaces/{ns}/leases/{lease}")
    if status != 204:
        fail(f"releasing the lease answered {status}")
    say(f"  pinned lookup: {found['present']} blocks, read one through the lease, "
        f"copy-into {copied}, released")

    # a second namespace
    for i in range(3):
        status, data, _ = srv.request("PUT", blocks(ns2, i), body(i),
                                      {"Content-Type": "application/octet-stream"})
        if status != 201:
            fail(f"PUT {blocks(ns2, i)} answered {status}: {data[:200]!r}")
        get(i, 200, "a block of the second namespace", ns2)
    say(f"  3 PUTs and GETs in '{ns2}'")
    wait_uploads(srv)

    values = srv.metrics()
    missing = [t for t in ("ram", "disk", "s3")
               if metric(values, "kvcache_tier_hits_total", tier=t)[0] == 0]
    if missing:
        fail("no hits of the tier(s) " + ", ".join(missing) + " after the traffic: "
             "kvcache_tier_hits_total " + json.dumps(tier_hits()))
    avoided = []
    for series, v in values.items():
        m = re.match(r'kvcache_prefill_tokens_avoided_total\{.*namespace="([^"]*)"', series)
        if m:
            avoided.append(f"{m.group(1)} {v:.0f}")
    say("  prefill tokens avoided: " + ", ".join(avoided))
    say(f"  traffic done in {time.monotonic() - started:.1f}s")


# ----------------------------------------------------------------------------------- evaluate

FUNCTIONS_AND_KEYWORDS = {
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values", "group", "by", "without", "on", "ignoring", "group_left", "group_right",
    "and", "or", "unless", "bool", "offset", "rate", "irate", "increase", "delta", "idelta",
    "deriv", "clamp_min", "clamp_max", "clamp", "abs", "absent", "absent_over_time",
    "max_over_time", "min_over_time", "avg_over_time", "sum_over_time", "count_over_time",
    "last_over_time", "histogram_quantile", "label_replace", "label_join", "vector", "scalar",
    "time", "timestamp", "round", "ceil", "floor", "sort", "sort_desc", "resets", "changes",
    "predict_linear", "humanize", "inf", "nan",
}


class Prometheus:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def get(self, path, **params):
        q = urllib.parse.urlencode(params, doseq=True)
        with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=30) as r:
            doc = json.load(r)
        if doc.get("status") != "success":
            raise RuntimeError(f"{path}: {doc}")
        return doc["data"]

    def query(self, expr):
        try:
            data = self.get("/api/v1/query", query=expr)
        except urllib.error.HTTPError as e:
            return None, e.read().decode(errors="replace")[:300]
        except RuntimeError as e:
            return None, str(e)[:300]
        if data["resultType"] != "vector":
            return [data["result"]], None
        return data["result"], None


def substitute(expr, variables):
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    return expr


def strip_threshold(expr):
    """The expression without its last top-level comparison with a number."""
    m = re.match(r"^(.*?)\s*(==|!=|>=|<=|>|<)\s*(bool\s+)?[-+0-9.eE]+\s*$", expr, re.S)
    return (m.group(1).strip(), m.group(2)) if m else (expr.strip(), None)


def selectors(expr):
    """Each metric selector of a PromQL expression: name{matchers}, without ranges."""
    plain = re.sub(r'"(?:\\.|[^"\\])*"', lambda m: "_" * len(m.group(0)), expr)
    inside = [False] * len(plain)  # within {matchers} or [a range]
    for m in re.finditer(r"\{[^}]*\}|\[[^\]]*\]", plain):
        for i in range(m.start() + 1, m.end()):
            inside[i] = True
    found = []
    for m in re.finditer(r"(?<![\w:])[a-zA-Z_:][a-zA-Z0-9_:]*", plain):
        name = m.group(0)
        if inside[m.start()] or name in FUNCTIONS_AND_KEYWORDS:
            continue
        after = plain[m.end():].lstrip()
        if after.startswith("("):  # a function
            continue
        if re.search(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*$",
                     plain[:m.start()]):  # a label name in a grouping
            continue
        sel = name
        if after.startswith("{"):
            open_at = plain.index("{", m.end())
            sel = name + expr[open_at:plain.index("}", open_at) + 1]
        if sel not in found:
            found.append(sel)
    return found


def sample(result, most=3):
    """A few of the values a query returned, for the log."""
    if not result:
        return ""
    out = []
    for r in result[:most]:
        v = float(r["value"][1])
        text = "NaN" if v != v else f"{v:.4g}"
        lab = ",".join(f"{k}={val}" for k, val in sorted(r["metric"].items())
                       if k not in ("job", "instance", "__name__"))
        out.append(f"{lab}={text}" if lab else text)
    more = f", +{len(result) - most}" if len(result) > most else ""
    return "   (" + "; ".join(out) + more + ")"


PROMETHEUS_OWN = {"up", "ALERTS", "ALERTS_FOR_STATE"}


def documented_families(path):
    """The metric families docs/metrics.md lists: exact names, and prefixes ('jvm_*')."""
    exact, prefixes = set(), []
    with open(path) as f:
        for line in f:
            m = re.match(r"^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)(\*?)`", line)
            if m:
                (prefixes.append(m.group(1)) if m.group(2) else exact.add(m.group(1)))
    return exact, prefixes


def is_documented(selector, documented):
    exact, prefixes = documented
    name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", selector).group(0)
    if name in PROMETHEUS_OWN or name in exact or any(name.startswith(p) for p in prefixes):
        return True
    # a summary's series: name_sum, name_count, name_max
    base = re.sub(r"_(sum|count|max)$", "", name)
    return base in exact


def cmd_evaluate(args):
    prom = Prometheus(args.prometheus)
    problems = []
    started = time.monotonic()

    with open(args.dashboard) as f:
        dash = json.load(f)
    if not 36 <= dash.get("schemaVersion", 0) <= 41:
        problems.append(f"dashboard schemaVersion {dash.get('schemaVersion')}, expected about 39")
    tvars = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    ds = tvars.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("dashboard: no template variable 'datasource' of type datasource "
                        "(prometheus)")

    variables = {"__rate_interval": args.rate_interval, "__range": args.range,
                 "__interval": "15s", "job": args.job, "instance": args.instance,
                 "datasource": "prometheus"}

    # the template variables' own queries: label_values(selector, label)
    for name, v in tvars.items():
        if v.get("type") != "query":
            continue
        q = v.get("definition") or v["query"]["query"]
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", q)
        if not m:
            problems.append(f"variable ${name}: not label_values(selector, label): {q}")
            continue
        sel = substitute(m.group(1), {**variables, "job": args.job})
        values = prom.get(f"/api/v1/label/{m.group(2)}/values", **{"match[]": sel})
        want = {"job": args.job, "instance": args.instance}.get(name)
        ok = bool(values) and (want is None or want in values)
        print(f"  {'ok ' if ok else 'NO '} variable ${name}: {q} -> {values}")
        if not ok:
            problems.append(f"variable ${name}: {q} returned {values}")

    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    documented = documented_families(args.metrics_doc)
    count = 0
    row = ""
    for p in panels(dash["panels"]):
        if p.get("type") == "row":
            row = p["title"]
            print(f"  --- {row}")
            continue
        uid = (p.get("datasource") or {}).get("uid")
        if uid != "${datasource}":
            problems.append(f"panel '{p['title']}': datasource uid {uid!r}, not ${{datasource}}")
        if not p.get("targets"):
            problems.append(f"panel '{p['title']}': no queries")
        for t in p.get("targets", []):
            expr = substitute(t["expr"], variables)
            left = re.findall(r"\$\{?\w+", expr)
            result, err = prom.query(expr)
            count += 1
            n = len(result) if result is not None else 0
            legend = t.get("legendFormat", "")
            # every label the legend names is on every series
            unlabelled = sorted({lab for lab in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend)
                                 for r in result or [] if lab not in r["metric"]})
            undocumented = [sel for sel in selectors(t["expr"])
                            if not is_documented(sel, documented)]
            status = "ok " if n and not left and not unlabelled and not undocumented else "NO "
            print(f"  {status} {n:3d} series  {p['title']} [{t['refId']}] {legend}"
                  f"{sample(result)}")
            if unlabelled:
                problems.append(f"panel '{p['title']}' [{t['refId']}]: legend {legend!r} names "
                                f"labels {unlabelled} that some series lack: {expr}")
            if undocumented:
                problems.append(f"panel '{p['title']}' [{t['refId']}]: metrics not listed in "
                                f"docs/metrics.md: {undocumented}")
            if err:
                problems.append(f"panel '{p['title']}' [{t['refId']}]: error {err}: {expr}")
            elif left:
                problems.append(f"panel '{p['title']}' [{t['refId']}]: unknown variables "
                                f"{left}: {t['expr']}")
            elif not n:
                problems.append(f"panel '{p['title']}' [{t['refId']}] ({row}): no series: {expr}")
    say(f"{count} dashboard queries evaluated")

    # alert rules, as Prometheus loaded them: each expression without its threshold, and each
    # selector in it
    with open(args.rules) as f:
        in_file = re.findall(r"^\s*- alert:\s*(\S+)", f.read(), re.M)
    rules_api = prom.get("/api/v1/rules", type="alert")
    loaded = [r for g in rules_api["groups"] for r in g["rules"]]
    if sorted(r["name"] for r in loaded) != sorted(in_file):
        problems.append(f"Prometheus loaded the alerts {sorted(r['name'] for r in loaded)}, "
                        f"the rule file has {sorted(in_file)}")
    for rule in loaded:
        name = rule["name"]
        expr = " ".join(rule["query"].split())
        bare, op = strip_threshold(expr)
        if rule.get("health") != "ok":
            problems.append(f"alert {name}: health {rule.get('health')}: "
                            f"{rule.get('lastError')}")
        for sel in selectors(expr):
            if not is_documented(sel, documented):
                problems.append(f"alert {name}: {sel} is not listed in docs/metrics.md")
        for what, q in [("expression", bare)] + [("selector", s) for s in selectors(expr)]:
            result, err = prom.query(q)
            n = len(result) if result is not None else 0
            print(f"  {'ok ' if n else 'NO '} {n:3d} series  {name} {what}: {q}{sample(result)}")
            if err:
                problems.append(f"alert {name}: {what} {q}: error {err}")
            elif not n:
                problems.append(f"alert {name}: {what} {q}: no series")
        if op is None:
            problems.append(f"alert {name}: no threshold found to take off: {expr}")
    say(f"{len(loaded)} alert rules evaluated")

    result, _ = prom.query("ALERTS")
    for a in result or []:
        lab = a["metric"]
        problems.append(f"alert {lab.get('alertname')} is {lab.get('alertstate')} on the "
                        f"healthy server: {lab}")
    if not result:
        say("ALERTS is empty: no alert pending or firing on the healthy server")

    say(f"evaluated in {time.monotonic() - started:.1f}s")
    if problems:
        for p in problems:
            print(f"[monitoring] FAIL: {p}", file=sys.stderr)
        fail(f"{len(problems)} problem(s) with the dashboard or the alert rules")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("traffic")
    t.add_argument("--server", required=True)
    t.add_argument("--namespaces", default="default,llama-8b")
    t.add_argument("--blocks", type=int, default=200)
    t.add_argument("--work", required=True)
    e = sub.add_parser("evaluate")
    e.add_argument("--prometheus", required=True)
    e.add_argument("--dashboard", required=True)
    e.add_argument("--rules", required=True)
    e.add_argument("--metrics-doc", required=True)
    e.add_argument("--job", required=True)
    e.add_argument("--instance", required=True)
    e.add_argument("--rate-interval", default="1m")
    e.add_argument("--range", default="1h")
    args = ap.parse_args()
    {"traffic": cmd_traffic, "evaluate": cmd_evaluate}[args.cmd](args)


if __name__ == "__main__":
    main()
