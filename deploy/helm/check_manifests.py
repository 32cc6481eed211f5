"""Checks of the manifests the chart renders and of the engine examples, run by check.sh.

Every manifest is validated against the Kubernetes schemas of one version (kubernetes-validate,
strict: an unknown field is an error). Only ServiceMonitor and PrometheusRule, whose schemas
ship with the Prometheus operator and not with Kubernetes, are checked here instead, by hand.
Then the rendered chart is checked for what its users rely on: the memory limit is the sum of its
parts, the StatefulSet's volumes and headless Service, the DaemonSet's shared memory, the
security context, the probes, and secrets that reach the server from Secrets, never in plain
values. The engine examples' connector settings are checked against the options the adapters in
python/src read.

    python check_manifests.py chart --kube-version 1.33.0 --values values.yaml [-f ex.yaml ...] out.yaml
    python check_manifests.py engines --kube-version 1.33.0 --python-src python/src ex/engines/*.yaml
    python check_manifests.py rules files/alerts.yaml
"""
from __future__ import annotations

import argparse
import ast
import base64
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable

import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError

# Kinds without a schema in kubernetes-validate, each with the check that replaces it.
CUSTOM_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor"),
                ("monitoring.coreos.com/v1", "PrometheusRule")}
GPU_LABEL = "nvidia.com/gpu.present"
SECRET_ENV = re.compile(r"TOKEN|PASSWORD|SECRET|ACCESS_KEY|CREDENTIAL", re.I)


class Failures:
    def __init__(self, what: str) -> None:
        self.what = what
        self.messages: list[str] = []

    def check(self, ok: Any, message: str) -> bool:
        if not ok:
            self.messages.append(message)
        return bool(ok)

    def done(self) -> int:
        if self.messages:
            print(f"FAIL {self.what}:")
            for m in self.messages:
                print(f"  - {m}")
            return 1
        return 0


# -- sizes, as the server and the JVM write them ------------------------------------------------

_SHIFTS = {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40,
           "k": 10, "K": 10, "m": 20, "M": 20, "g": 30, "G": 30, "t": 40, "T": 40}


def mebibytes(size: str) -> int:
    m = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB|TiB|[kKmMgGtT])", str(size).strip())
    if not m:
        raise ValueError(f"not a size: {size!r}")
    return -(-(int(m.group(1)) << _SHIFTS[m.group(2)]) // (1 << 20))


def quantity_mebibytes(q: str) -> int:
    m = re.fullmatch(r"(\d+)Mi", str(q))
    if not m:
        raise ValueError(f"not a quantity in Mi: {q!r}")
    return int(m.group(1))


# -- validation against the schemas -------------------------------------------------------------

def load_documents(path: Path) -> list[dict]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    for d in docs:
        if not isinstance(d, dict) or not d.get("apiVersion") or not d.get("kind") \
                or not (d.get("metadata") or {}).get("name"):
            raise SystemExit(f"FAIL {path}: a document without apiVersion, kind or metadata.name: "
                             f"{str(d)[:200]}")
    return docs


def validate(docs: Iterable[dict], version: str, f: Failures) -> None:
    for d in docs:
        name = f"{d['kind']}/{d['metadata']['name']}"
        try:
            kubernetes_validate.validate(d, version, strict=True)
        except SchemaNotFoundError:
            if (d["apiVersion"], d["kind"]) not in CUSTOM_KINDS:
                f.check(False, f"{name}: no schema for {d['apiVersion']} {d['kind']} in "
                               f"Kubernetes {version}, and no check of its own")
                continue
            if d["kind"] == "ServiceMonitor":
                check_service_monitor(d, f)
            else:
                check_rule_groups(d.get("spec", {}).get("groups"), f"{name} spec.groups", f)
            print(f"  {name}: no Kubernetes schema (a CRD); checked by hand")
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            f.check(False, f"{name}: {path}: {e.message}")


def check_service_monitor(d: dict, f: Failures) -> None:
    name = f"ServiceMonitor/{d['metadata']['name']}"
    spec = d.get("spec") or {}
    f.check(set(spec) <= {"selector", "namespaceSelector", "endpoints", "jobLabel"},
            f"{name}: unexpected spec fields {sorted(set(spec))}")
    f.check((spec.get("selector") or {}).get("matchLabels"), f"{name}: no selector.matchLabels")
    endpoints = spec.get("endpoints")
    if not f.check(isinstance(endpoints, list) and endpoints, f"{name}: no endpoints"):
        return
    for e in endpoints:
        f.check(set(e) <= {"port", "path", "scheme", "interval", "scrapeTimeout", "tlsConfig",
                           "authorization"},
                f"{name}: unexpected endpoint fields {sorted(set(e))}")
        f.check(isinstance(e.get("port"), str), f"{name}: an endpoint without a port name")
        f.check(e.get("path") == "/prometheus", f"{name}: scrapes {e.get('path')}, not /prometheus")
        f.check(e.get("scheme") in ("http", "https"), f"{name}: scheme {e.get('scheme')}")


def check_rule_groups(groups: Any, where: str, f: Failures) -> None:
    if not f.check(isinstance(groups, list) and groups, f"{where}: not a list of groups"):
        return
    for g in groups:
        if not f.check(isinstance(g, dict) and isinstance(g.get("name"), str),
                       f"{where}: a group without a name"):
            continue
        rules = g.get("rules")
        if not f.check(isinstance(rules, list) and rules, f"{where}: group {g['name']} has no rules"):
            continue
        for r in rules:
            kinds = [k for k in ("alert", "record") if k in r]
            f.check(len(kinds) == 1, f"{where}: group {g['name']}: a rule needs one of alert, record")
            f.check(isinstance(r.get("expr"), (str, int)) and str(r.get("expr")).strip(),
                    f"{where}: group {g['name']}: rule {r.get('alert') or r.get('record')} has no expr")
            for field in ("labels", "annotations"):
                values = r.get(field, {})
                f.check(isinstance(values, dict) and all(isinstance(v, str) for v in values.values()),
                        f"{where}: rule {r.get('alert') or r.get('record')}: {field} must be strings")


# -- the chart ----------------------------------------------------------------------------------

def merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base.get(k), v) if k in base else v
        return out
    return over


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def placeholders(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for v in value.values():
            found |= placeholders(v)
    elif isinstance(value, list):
        for v in value:
            found |= placeholders(v)
    elif isinstance(value, str):
        found |= set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", value))
    return found


def check_chart(docs: list[dict], values: dict, f: Failures) -> None:
    workloads = by_kind(docs, "StatefulSet") + by_kind(docs, "DaemonSet")
    if not f.check(len(workloads) == 1, f"{len(workloads)} workloads, not one"):
        return
    w = workloads[0]
    shape = w["kind"].lower()
    f.check(shape == values["shape"], f"a {w['kind']} for shape {values['shape']}")
    pod = w["spec"]["template"]
    spec = pod["spec"]
    labels = pod["metadata"]["labels"]
    f.check(selects(w["spec"]["selector"]["matchLabels"], labels), "the selector misses the pods")
    containers = {c["name"]: c for c in spec["containers"]}
    if not f.check("server" in containers, "no container named server"):
        return
    c = containers["server"]
    env = {e["name"]: e for e in c.get("env", [])}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    secrets = {d["metadata"]["name"]: d for d in by_kind(docs, "Secret")}

    # the configuration file
    config_map_name = None
    config: dict = {}
    files = env.get("MICRONAUT_CONFIG_FILES", {}).get("value", "")
    f.check(files, "MICRONAUT_CONFIG_FILES is not set")
    for path, m in mounts.items():
        if files.startswith(path.rstrip("/") + "/"):
            cm = volumes.get(m["name"], {}).get("configMap")
            if cm:
                config_map_name = cm["name"]
                key = files[len(path.rstrip("/")) + 1:]
                maps = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"] == cm["name"]]
                if f.check(maps and key in maps[0].get("data", {}),
                           f"{files}: no key {key} in ConfigMap {cm['name']}"):
                    config = yaml.safe_load(maps[0]["data"][key])
    if not f.check(config_map_name and config, f"{files} is not a mounted ConfigMap's file"):
        return
    kv = config.get("kvcache", {})
    server = config.get("micronaut", {}).get("server", {})
    cache = kv.get("cache", {})
    tls = bool(server.get("ssl", {}).get("enabled"))
    port = server.get("port")

    # tokens: required beyond loopback
    host = server.get("host")
    tokens = kv.get("auth", {}).get("tokens", {})
    loopback = host in ("127.0.0.1", "localhost", "::1")
    f.check(loopback or tokens, f"the server listens on {host} without tokens: it would not start")
    if shape == "statefulset":
        f.check(host == "0.0.0.0", f"a StatefulSet's server listens on {host}, not 0.0.0.0")

    # quotas: as the values give them, under the server's names
    for ns, q in (values.get("server", {}).get("quotas") or {}).items():
        got = kv.get("quotas", {}).get(ns, {})
        for key, name in (("ramBytes", "ram-bytes"), ("diskBytes", "disk-bytes"),
                          ("objectBytes", "object-bytes")):
            f.check(got.get(name) == q.get(key),
                    f"server.quotas.{ns}.{key} is {q.get(key)!r}, but the configuration's "
                    f"kvcache.quotas.{ns}.{name} is {got.get(name)!r}")

    # sealing: the namespaces as the values give them, the master keys a mounted Secret's file
    sealing = values.get("sealing") or {}
    if sealing.get("namespaces"):
        got = kv.get("sealing", {})
        f.check(got.get("namespaces") == sealing["namespaces"],
                f"sealing.namespaces is {sealing['namespaces']!r}, but the configuration's "
                f"kvcache.sealing.namespaces is {got.get('namespaces')!r}")
        keys = str(got.get("master-keys-file", ""))
        mounted = [m for p, m in mounts.items() if keys.startswith(p.rstrip("/") + "/")]
        secret = volumes.get(mounted[0]["name"], {}).get("secret", {}) if mounted else {}
        f.check(secret.get("secretName") == sealing.get("existingSecret")
                and any(i.get("key") == sealing.get("existingSecretKey", "master-keys")
                        and keys.endswith("/" + i.get("path", ""))
                        for i in secret.get("items", [])),
                f"kvcache.sealing.master-keys-file {keys!r} is not the file of Secret "
                f"{sealing.get('existingSecret')!r} mounted")
        f.check("master-keys" not in got, "the master keys are written in the ConfigMap")
    else:
        f.check("sealing" not in kv, "kvcache.sealing is set without sealing.namespaces")

    # secrets come from Secrets: placeholders in the file, secretKeyRef in the environment
    for name, t in tokens.items():
        f.check(re.fullmatch(r"\$\{[A-Z0-9_]+\}", str(t.get("secret"))),
                f"token {name}: its secret is written in the ConfigMap, not a ${{...}} placeholder")
    if tls:
        f.check(re.fullmatch(r"\$\{[A-Z0-9_]+\}",
                             str(server["ssl"].get("key-store", {}).get("password"))),
                "the key store's password is written in the ConfigMap")
    for key in ("access-key-id", "secret-access-key"):
        f.check(key not in cache.get("s3", {}), f"kvcache.cache.s3.{key} is in the ConfigMap")
    for name in placeholders(config):
        f.check(name in env, f"the configuration refers to ${{{name}}}, which the container "
                             f"does not have in its environment")
    secret_values = set()
    for s in secrets.values():
        for v in (s.get("data") or {}).values():
            secret_values.add(base64.b64decode(v).decode(errors="replace"))
        secret_values |= set((s.get("stringData") or {}).values())
    for name, e in env.items():
        if SECRET_ENV.search(name):
            f.check("secretKeyRef" in e.get("valueFrom", {}),
                    f"env {name} is not taken from a Secret (secretKeyRef)")
        f.check(e.get("value") not in secret_values,
                f"env {name} holds the value of a Secret in plain text")
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref and ref["name"] in secrets:
            s = secrets[ref["name"]]
            f.check(ref["key"] in {**(s.get("data") or {}), **(s.get("stringData") or {})},
                    f"env {name}: Secret {ref['name']} has no key {ref['key']}")
    rendered = yaml.safe_dump(config)
    for v in secret_values:
        f.check(len(v) < 8 or v not in rendered, "a Secret's value is in the ConfigMap")

    # memory: request and limit are the sum of their parts
    m = values["memory"]
    expected = (mebibytes(env["KVCACHE_CACHE_RAM_BYTES"]["value"]) + mebibytes(env["KVCACHE_HEAP"]["value"])
                + mebibytes(env["KVCACHE_DIRECT_EXTRA"]["value"]) + 256
                + mebibytes(m["pageCacheAllowance"]))
    f.check(env["KVCACHE_CACHE_RAM_BYTES"]["value"] == m["ramBytes"]
            and env["KVCACHE_HEAP"]["value"] == m["heap"]
            and env["KVCACHE_DIRECT_EXTRA"]["value"] == m["directExtra"],
            "the memory environment variables are not memory.*")
    res = c.get("resources", {})
    for kind in ("requests", "limits"):
        got = res.get(kind, {}).get("memory")
        f.check(got and quantity_mebibytes(got) == expected,
                f"memory {kind} {got}, expected {expected}Mi (RAM {m['ramBytes']} + heap {m['heap']}"
                f" + direct {m['directExtra']} + 256MiB + page cache {m['pageCacheAllowance']})")
    f.check(res.get("requests", {}).get("cpu"), "no cpu request")

    # security
    psc, csc = spec.get("securityContext", {}), c.get("securityContext", {})
    f.check(psc.get("runAsNonRoot") is True and psc.get("runAsUser") == 65532
            and psc.get("fsGroup") == 65532, f"pod securityContext {psc}")
    f.check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "no RuntimeDefault seccomp")
    f.check(csc.get("readOnlyRootFilesystem") is True, "the root file system is writable")
    f.check(csc.get("allowPrivilegeEscalation") is False, "privilege escalation allowed")
    f.check("ALL" in csc.get("capabilities", {}).get("drop", []), "capabilities not dropped")
    f.check(csc.get("runAsNonRoot") is True and csc.get("runAsUser", 65532) == 65532,
            f"container securityContext {csc}")
    f.check("/tmp" in mounts and "emptyDir" in volumes.get(mounts["/tmp"]["name"], {}),
            "no emptyDir at /tmp")
    f.check(spec.get("enableServiceLinks") is False, "service links on: KVCACHE_* variables would leak in")
    f.check(spec.get("terminationGracePeriodSeconds", 0) >= 30, "no terminationGracePeriodSeconds")

    # probes
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", []) if not p["name"].startswith("kv-")}
    s3_api = values["s3Api"]
    s3_port = [int(s3_api["port"])] if s3_api["enabled"] else []
    f.check(list(ports.values()) == [port] + s3_port,
            f"container ports {ports}, server port {port}, S3 API {s3_port}")
    s3_config = config.get("kvcache", {}).get("s3", {})
    f.check(s3_config.get("enabled") == s3_api["enabled"] and s3_config.get("port") == s3_api["port"]
            and s3_config.get("base-domains") == s3_api["baseDomains"],
            f"kvcache.s3 {s3_config} is not s3Api {s3_api}")
    for probe, path in (("readinessProbe", "/health/readiness"), ("livenessProbe", "/health/liveness"),
                        ("startupProbe", "/health/liveness")):
        get = c.get(probe, {}).get("httpGet", {})
        f.check(get.get("path") == path, f"{probe} path {get.get('path')}, not {path}")
        f.check(get.get("port") in ports, f"{probe} port {get.get('port')} is not a container port")
        f.check(get.get("scheme") == ("HTTPS" if tls else "HTTP"), f"{probe} scheme {get.get('scheme')}")
        if loopback:
            f.check(get.get("host") == "127.0.0.1", f"{probe} goes to the pod IP; the server is on loopback")

    # the disk tier
    disk = env.get("KVCACHE_CACHE_DISK_DIR", {}).get("value")
    if values["disk"]["enabled"]:
        f.check(disk == "/data/kvcache" and "/data" in mounts, "the disk tier is not /data/kvcache on a volume")
        f.check(mebibytes(cache.get("disk-capacity", "0B")) == mebibytes(values["disk"]["capacity"]),
                "disk-capacity is not disk.capacity")
    else:
        f.check(disk is None and cache.get("disk-dir") == "", "disk disabled, yet a disk directory")

    services = by_kind(docs, "Service")
    headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
    if f.check(len(headless) == 1, f"{len(headless)} headless Services"):
        h = headless[0]
        f.check(h["spec"].get("publishNotReadyAddresses") is False,
                "the headless Service publishes servers that are not ready")
        f.check(selects(h["spec"]["selector"], labels), "the headless Service does not select the servers")
        f.check([p["port"] for p in h["spec"]["ports"] if not p["name"].startswith("kv-")]
                == [port] + s3_port, "the headless Service's ports")
    namespace = values.get("_namespace", "default")
    fqdn = f"{headless[0]['metadata']['name']}.{namespace}.svc.{values['clusterDomain']}" if headless else ""

    if shape == "statefulset":
        f.check(w["spec"].get("serviceName") == (headless[0]["metadata"]["name"] if headless else None),
                "the StatefulSet's serviceName is not the headless Service")
        normal = [s for s in services if s["spec"].get("clusterIP") != "None"]
        f.check(len(normal) == 1 and selects(normal[0]["spec"]["selector"], labels),
                "no normal Service over the servers")
        f.check(len(normal) == 1 and [p["port"] for p in normal[0]["spec"]["ports"]]
                == [port] + s3_port, "the Service's ports")
        claims = w["spec"].get("volumeClaimTemplates", [])
        if values["disk"]["enabled"] and values["disk"]["volume"].get("type", "") in ("", "pvc"):
            f.check([t["metadata"]["name"] for t in claims] == ["data"]
                    and mounts.get("/data", {}).get("name") == "data",
                    "the StatefulSet has no volumeClaimTemplate data mounted at /data")
        for t in spec.get("topologySpreadConstraints", []):
            f.check(selects(t.get("labelSelector", {}).get("matchLabels"), labels),
                    f"topology spread over {t.get('topologyKey')} does not select the servers")
        f.check({t["topologyKey"] for t in spec.get("topologySpreadConstraints", [])}
                >= {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
                or not values["topologySpreadConstraints"], "no spread over zones and nodes")
    else:
        f.check(spec.get("hostNetwork") is True, "the DaemonSet is not on the node's network")
        f.check(spec.get("dnsPolicy") == "ClusterFirstWithHostNet", "dnsPolicy on the node's network")
        f.check(spec.get("hostPID") is True, "the DaemonSet is not in the node's PID namespace")
        f.check(spec.get("nodeSelector", {}).get(GPU_LABEL) == "true", "the DaemonSet is not on GPU nodes")
        f.check(any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])),
                "the DaemonSet does not tolerate the GPU taint")
        f.check(w["spec"]["updateStrategy"]["rollingUpdate"].get("maxSurge") == 0,
                "a surge pod would find the node's port taken")
        shm = cache.get("ram-shared-memory-dir")
        f.check(shm == "/dev/shm", f"ram-shared-memory-dir is {shm!r}, not /dev/shm")
        mount = mounts.get("/dev/shm")
        f.check(mount and volumes.get(mount["name"], {}).get("hostPath", {}).get("path") == "/dev/shm",
                "the node's /dev/shm (a hostPath) is not mounted at /dev/shm")
        f.check(not spec.get("hostIPC"), "hostIPC: the chart shares /dev/shm through a hostPath instead")

    # the object tier and its fleet
    s3 = cache.get("s3")
    if values["objectTier"]["enabled"]:
        if f.check(s3 and s3.get("bucket") == values["objectTier"]["bucket"], "no object tier"):
            mode = values["objectTier"]["fleet"]["mode"]
            if mode == "dns":
                f.check(s3.get("fleet-dns") == f"{fqdn}:{port}",
                        f"fleet-dns {s3.get('fleet-dns')}, not the headless Service {fqdn}:{port}")
            elif mode == "list":
                expected_fleet = [f"{w['metadata']['name']}-{i}.{fqdn}:{port}"
                                  for i in range(w["spec"]["replicas"])]
                f.check(s3.get("fleet", "").split(",") == expected_fleet, f"fleet {s3.get('fleet')}")
                f.check(s3.get("fleet-self") == f"${{POD_NAME}}.{fqdn}:{port}"
                        and env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {})
                        .get("fieldPath") == "metadata.name", "fleet-self does not name the pod")
    else:
        f.check(s3 is None, "an object tier that is not enabled")

    # disruption, monitoring, policy
    for pdb in by_kind(docs, "PodDisruptionBudget"):
        f.check(pdb["spec"].get("maxUnavailable") == 1 and selects(pdb["spec"]["selector"]["matchLabels"], labels),
                "the PodDisruptionBudget is not maxUnavailable 1 over the servers")
    f.check(by_kind(docs, "PodDisruptionBudget") or not values["podDisruptionBudget"]["enabled"],
            "no PodDisruptionBudget")
    for sm in by_kind(docs, "ServiceMonitor"):
        chosen = [s for s in services if selects(sm["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
        f.check(len(chosen) == 1 and chosen[0]["spec"].get("clusterIP") == "None",
                "the ServiceMonitor does not select the headless Service alone (each server once)")
        for e in sm["spec"]["endpoints"]:
            f.check(chosen and e["port"] in [p["name"] for p in chosen[0]["spec"]["ports"]],
                    f"the ServiceMonitor's port {e['port']} is not the Service's")
            f.check(e["scheme"] == ("https" if tls else "http"), "the ServiceMonitor's scheme")
            # with tokens, /prometheus needs one with the metrics right: the one the server reads
            # from the same Secret and key
            auth = e.get("authorization")
            if not tokens:
                f.check(auth is None, "the ServiceMonitor sends a token to a server without tokens")
                continue
            if not f.check(auth and auth.get("type") == "Bearer" and auth.get("credentials"),
                           "the ServiceMonitor scrapes a server with tokens without a bearer token"):
                continue
            cred = auth["credentials"]
            scrapers = [n for n, t in tokens.items() if t.get("metrics") is True
                        and (env.get(str(t.get("secret", "")).strip("${}"), {}).get("valueFrom", {})
                             .get("secretKeyRef") == {"name": cred.get("name"), "key": cred.get("key")})]
            f.check(scrapers, f"the ServiceMonitor's token (Secret {cred.get('name')}, key "
                              f"{cred.get('key')}) is no token of the server with metrics: true")
    f.check(bool(by_kind(docs, "ServiceMonitor")) == values["serviceMonitor"]["enabled"], "ServiceMonitor")
    f.check(bool(by_kind(docs, "PrometheusRule")) == values["prometheusRule"]["enabled"], "PrometheusRule")
    dashboards = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"] != config_map_name]
    f.check(bool(dashboards) == values["grafanaDashboard"]["enabled"], "dashboard ConfigMap")
    for d in dashboards:
        f.check(d["metadata"]["labels"].get("grafana_dashboard") == "1", "the dashboard lacks grafana_dashboard: \"1\"")
        for k, v in d["data"].items():
            try:
                json.loads(v)
            except ValueError as e:
                f.check(False, f"dashboard {k} is not JSON: {e}")
    # KV events: the server binds where the pod, the headless Service and the NetworkPolicy open
    events = values.get("kvEvents", {})
    event_ports = set()
    if events.get("enabled"):
        want = {"endpoint": f"tcp://*:{events['port']}"}
        event_ports.add(events["port"])
        if events.get("replayPort"):
            want["replay-endpoint"] = f"tcp://*:{events['replayPort']}"
            event_ports.add(events["replayPort"])
        f.check(kv.get("events") == want, f"kvcache.events is {kv.get('events')}, not {want}")
        opened = {p["containerPort"] for p in c.get("ports", [])}
        f.check(event_ports <= opened, f"the container opens {sorted(opened)}, not the KV events' ports")
        if shape == "statefulset" and headless:
            served = {p["port"] for p in headless[0]["spec"]["ports"]}
            f.check(event_ports <= served, "the headless Service lacks the KV events' ports")
    else:
        f.check("events" not in kv, "kvcache.events is set with kvEvents off")
    for np in by_kind(docs, "NetworkPolicy"):
        f.check(selects(np["spec"]["podSelector"]["matchLabels"], labels), "the NetworkPolicy misses the servers")
        f.check(all(p["port"] in {port} | event_ports | set(s3_port)
                    for r in np["spec"]["ingress"] for p in r.get("ports", [])),
                "the NetworkPolicy opens another port")
        f.check(set(s3_port) <= {p["port"] for r in np["spec"]["ingress"] for p in r.get("ports", [])},
                "the NetworkPolicy closes the S3 API's port")
        f.check(event_ports <= {p["port"] for r in np["spec"]["ingress"] for p in r.get("ports", [])},
                "the NetworkPolicy closes the KV events' ports")
    f.check(bool(by_kind(docs, "NetworkPolicy")) == values["networkPolicy"]["enabled"], "NetworkPolicy")


# -- the engine examples ------------------------------------------------------------------------

def adapter_options(src: Path) -> dict[str, set[str]]:
    """The options each adapter reads, from its source."""
    def tree(name: str) -> ast.Module:
        return ast.parse((src / "kvcache" / "integrations" / f"{name}.py").read_text())

    def constant(module: ast.Module, name: str) -> Any:
        for node in module.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            if node_value := (getattr(node, "value", None)
                              if any(getattr(t, "id", None) == name for t in targets) else None):
                if isinstance(node_value, ast.Dict):  # {option: type}: the options are its keys
                    return [ast.literal_eval(k) for k in node_value.keys if k is not None]
                return ast.literal_eval(node_value)
        raise SystemExit(f"FAIL: {name} not found in the adapter's source")

    vllm = tree("vllm")
    init = next(n for c in vllm.body if isinstance(c, ast.ClassDef) and c.name == "KvcacheTier"
                for n in c.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    params = {a.arg for a in init.args.args + init.args.kwonlyargs}
    params -= {"self", "offloading_spec", "primary_kv_view", "tier_type", "backpressure_detector"}
    sglang = tree("sglang")
    gets = {n.args[0].value for n in ast.walk(sglang)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
            and getattr(n.func.value, "id", None) == "extra" and n.args
            and isinstance(n.args[0], ast.Constant)}
    lmcache = tree("lmcache")
    return {
        # vLLM's secondary tier factory: the entry's type and module_path, the rest the tier's arguments
        "vllm": params | {"type", "module_path"},
        # SGLang's dynamic backend factory: backend_name, module_path, class_name; the rest the backend's
        "sglang": set(constant(sglang, "_CLIENT_OPTIONS")) | gets
        | {"backend_name", "module_path", "class_name"},
        # LMCache's plugin loader: module_path, class_name; the rest the connector's
        "lmcache": set(constant(lmcache, "_OPTIONS")) | {"module_path", "class_name"},
    }


def check_servers(servers: list[str], options: dict, pod: dict, where: str, f: Failures) -> None:
    """Loopback servers need the pod on the node's network with its /dev/shm; others need TLS,
    since the adapters send a token beyond loopback only over it."""
    for s in servers:
        host = re.sub(r"^https?://", "", s).rsplit(":", 1)[0]
        if host in ("127.0.0.1", "localhost"):
            spec = pod["spec"]
            shm = [v for v in spec.get("volumes", []) if v.get("hostPath", {}).get("path") == "/dev/shm"]
            f.check(spec.get("hostNetwork") is True, f"{where}: {s} on loopback needs hostNetwork")
            f.check(shm, f"{where}: {s} on loopback: no hostPath /dev/shm for shared memory")
            f.check(spec.get("securityContext", {}).get("runAsUser") == 65532,
                    f"{where}: the engine must run as the server's user 65532")
        else:
            f.check(s.startswith("https://"), f"{where}: {s} beyond loopback without TLS: "
                                              "the adapter would refuse to send its token")
            f.check("ca_file" in options, f"{where}: https servers without ca_file")


def check_engines(paths: list[Path], version: str, src: Path, namespaces: dict[str, list[str]],
                  f: Failures) -> None:
    known = adapter_options(src)
    for path in paths:
        docs = load_documents(path)
        validate(docs, version, f)
        engine = path.stem
        deployments = by_kind(docs, "Deployment")
        if not f.check(len(deployments) == 1, f"{path.name}: {len(deployments)} Deployments"):
            continue
        pod = deployments[0]["spec"]["template"]
        f.check(pod["metadata"]["labels"].get("kvcache-client") == "true",
                f"{path.name}: the engine pod lacks the label kvcache-client the NetworkPolicy admits")
        c = pod["spec"]["containers"][0]
        env = {e["name"]: e for e in c.get("env", [])}
        f.check("secretKeyRef" in env.get("KVCACHE_TOKEN", {}).get("valueFrom", {}),
                f"{path.name}: KVCACHE_TOKEN is not taken from a Secret")
        args = [str(a) for a in c.get("command", []) + c.get("args", [])]
        if engine == "lmcache":
            maps = by_kind(docs, "ConfigMap")
            conf = yaml.safe_load(next(iter(maps[0]["data"].values()))) if maps else {}
            f.check(env.get("LMCACHE_CONFIG_FILE"), f"{path.name}: no LMCACHE_CONFIG_FILE")
            f.check("kvcache" in conf.get("remote_storage_plugins", []), f"{path.name}: no kvcache plugin")
            prefix = "remote_storage_plugin.kvcache."
            options = {k[len(prefix):]: v for k, v in conf.get("extra_config", {}).items()
                       if k.startswith(prefix)}
            f.check(options.get("class_name") == "KvcacheConnectorAdapter"
                    and options.get("module_path") == "kvcache.integrations.lmcache",
                    f"{path.name}: not the kvcache plugin's class")
            servers = [s.strip() for s in str(options.get("servers", "")).split(",") if s.strip()]
        else:
            flag = {"vllm": "--kv-transfer-config", "sglang": "--hicache-storage-backend-extra-config"}[engine]
            if not f.check(flag in args, f"{path.name}: no {flag}"):
                continue
            try:
                config = json.loads(args[args.index(flag) + 1])
            except ValueError as e:
                f.check(False, f"{path.name}: {flag} is not JSON: {e}")
                continue
            if engine == "vllm":
                extra = config["kv_connector_extra_config"]
                f.check(config.get("kv_connector") == "OffloadingConnector"
                        and extra.get("spec_name") == "TieringOffloadingSpec",
                        f"{path.name}: not vLLM's OffloadingConnector with TieringOffloadingSpec")
                tiers = [t for t in extra.get("secondary_tiers", []) if t.get("type") == "KvcacheTier"]
                f.check(len(tiers) == 1 and tiers[0].get("module_path") == "kvcache.integrations.vllm",
                        f"{path.name}: no KvcacheTier from kvcache.integrations.vllm")
                options = tiers[0] if tiers else {}
            else:
                options = config
                f.check(options.get("class_name") == "KvcacheHiCacheStorage"
                        and options.get("module_path") == "kvcache.integrations.sglang",
                        f"{path.name}: not the kvcache HiCache backend")
            servers = options.get("servers", [])
        unknown = set(options) - known[engine]
        f.check(not unknown, f"{path.name}: options the {engine} adapter does not read: {sorted(unknown)}"
                             f" (it reads {sorted(known[engine])})")
        f.check(servers or options.get("dns"), f"{path.name}: no servers")
        check_servers(servers, options, pod, path.name, f)
        ns = options.get("namespace")
        f.check(ns in namespaces.get(engine, []),
                f"{path.name}: namespace {ns} is not served by its chart example ({namespaces.get(engine)})")


def value_paths(values_yaml: str) -> list[str]:
    """The values a user sets, as dotted paths, read from values.yaml's own lines: a key is one
    value when its comment starts with "# --" (helm-docs' mark, also on maps and lists taken
    whole), when it has a value on its line, or when a list follows it; else its keys are."""
    paths: list[str] = []
    stack: list[tuple[int, str]] = []
    marked = False
    opaque_indent: int | None = None
    lines = values_yaml.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("#"):
            marked = marked or stripped.startswith("# --")
            continue
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if opaque_indent is not None and indent > opaque_indent:
            continue
        opaque_indent = None
        m = re.match(r"^([A-Za-z0-9_.-]+):(.*)$", stripped)
        if not m or stripped.startswith("-"):
            marked = False
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [m.group(1)])
        rest = m.group(2).split(" #")[0].strip()
        following = next((x for x in lines[i + 1:] if x.strip() and not x.strip().startswith("#")), "")
        if marked or rest or following.strip().startswith("-"):
            paths.append(path)
            opaque_indent = indent
        else:
            stack.append((indent, m.group(1)))
        marked = False
    return paths


def check_readme(values: Path, readme: Path, f: Failures) -> None:
    paths = value_paths(values.read_text())
    listed = re.findall(r"^\| `([^`]+)` \|", readme.read_text(), re.M)
    for p in paths:
        f.check(p in listed, f"{readme.name}: the value {p} is not in the values table")
    for p in listed:
        f.check(p in paths, f"{readme.name}: the table lists {p}, which values.yaml does not have")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["chart", "engines", "rules", "readme", "selftest"])
    p.add_argument("files", nargs="*", type=Path)
    p.add_argument("--kube-version", default="1.33.0")
    p.add_argument("--values", type=Path, action="append", default=[],
                   help="the chart's values.yaml, then each -f file, in order")
    p.add_argument("--namespace", default="default")
    p.add_argument("--python-src", type=Path)
    p.add_argument("--served", action="append", default=[],
                   help="engine=namespace,namespace: the server namespaces each engine example may use")
    a = p.parse_intermixed_args()
    f = Failures(" ".join(str(x) for x in a.files) or a.what)
    if a.what == "selftest":
        # the validator must fail on what it should fail on, or its passes mean nothing
        bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dataa": {}}
        try:
            kubernetes_validate.validate(bad, a.kube_version, strict=True)
            print("FAIL: kubernetes-validate passed a ConfigMap with an unknown field")
            return 1
        except kubernetes_validate.ValidationError:
            pass
        try:
            kubernetes_validate.validate({"apiVersion": "example.com/v1", "kind": "Nothing",
                                          "metadata": {"name": "x"}}, a.kube_version, strict=True)
            print("FAIL: kubernetes-validate found a schema for a kind that does not exist")
            return 1
        except SchemaNotFoundError:
            pass
        return 0
    if a.what == "readme":
        check_readme(a.files[0], a.files[1], f)
        return f.done()
    if a.what == "rules":
        for path in a.files:
            try:
                doc = yaml.safe_load(path.read_text())
            except yaml.YAMLError as e:
                f.check(False, f"{path}: not YAML: {e}")
                continue
            f.check(isinstance(doc, dict) and set(doc) == {"groups"},
                    f"{path}: the top level must be groups: alone")
            if isinstance(doc, dict):
                check_rule_groups(doc.get("groups"), str(path), f)
        return f.done()
    if a.what == "engines":
        served = {k: v.split(",") for k, v in (s.split("=", 1) for s in a.served)}
        check_engines(a.files, a.kube_version, a.python_src, served, f)
        return f.done()
    values: dict = {}
    for v in a.values:
        values = merge(values, yaml.safe_load(v.read_text()) or {})
    values["_namespace"] = a.namespace
    docs = [d for path in a.files for d in load_documents(path)]
    validate(docs, a.kube_version, f)
    check_chart(docs, values, f)
    return f.done()


if __name__ == "__main__":
    sys.exit(main())
