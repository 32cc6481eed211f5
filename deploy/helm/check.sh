#!/usr/bin/env bash
# Offline checks of the Helm chart deploy/helm/kvcache and its examples, without a cluster:
#
#   1. helm lint, on the default values and on each example's;
#   2. helm template of each case below, every manifest validated against the schemas of one
#      Kubernetes version (kubernetes-validate, strict: unknown fields are errors); the
#      Prometheus operator's kinds, which have no schema there, are checked by hand;
#   3. what a user relies on, in the rendered YAML (check_manifests.py): the memory limit is the
#      sum of its parts, the StatefulSet's volumes and headless Service, the DaemonSet's shared
#      memory, non-root and a read-only root, the probes' paths, secrets taken from Secrets;
#   4. values the chart must refuse, refused with the right message;
#   5. the engine examples (examples/engines/): valid manifests whose connector settings are
#      options the adapters in python/src read;
#   6. the values table of kvcache/README.md against values.yaml, and files/alerts.yaml (a rule
#      file) and files/dashboard.json (JSON) when they are there.
#
# Tools, made once under deploy/target (delete it to start over): helm, built from its Go module
# with the Go toolchain (Go's caches reused), and a venv with kubernetes-validate from PyPI.
#
#   deploy/helm/check.sh
#
# Settings (environment): KUBE_VERSION (1.33.0), GO (go on the PATH, else /usr/local/go/bin/go).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
target=$repo/deploy/target
chart=$here/kvcache
examples=$here/examples
kube_version=${KUBE_VERSION:-1.33.0}
helm_version=v3.22.0
validate_version=1.37.0
start=$SECONDS

say() { printf '[helm-check] %s\n' "$*"; }
die() { printf '[helm-check] FAILED: %s\n' "$*" >&2; exit 1; }

# -- tools ---------------------------------------------------------------------------------------
helm=$target/bin/helm
if [[ ! -x $helm ]]; then
  go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  [[ -x $go ]] || die "helm is not built ($helm) and there is no Go toolchain to build it (set GO)"
  say "building helm $helm_version into $target/bin (once)"
  GOBIN=$target/bin "$go" install "helm.sh/helm/v3/cmd/helm@$helm_version" \
    || die "could not build helm $helm_version"
fi
venv=$target/venv
installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' \
  2>/dev/null || true)
if [[ $installed != "$validate_version" ]]; then
  say "making $venv with kubernetes-validate==$validate_version (once)"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv" || die "python3 -m venv failed"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$validate_version" \
    || die "could not install kubernetes-validate==$validate_version"
fi
py=$venv/bin/python
checker=$here/check_manifests.py
"$py" "$checker" selftest --kube-version "$kube_version" \
  || die "kubernetes-validate does not reject what it should"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# -- the chart's files from elsewhere: alerts.yaml and dashboard.json ----------------------------
# They are the chart's own when present; a case that enables the PrometheusRule or the dashboard
# is then rendered with them. Until they exist, those cases use stand-ins in a copy of the chart,
# and say so.
copy=$work/kvcache
cp -r "$chart" "$copy"
if [[ -f $chart/files/alerts.yaml ]]; then
  "$py" "$checker" rules "$chart/files/alerts.yaml" || die "files/alerts.yaml is not a rule file"
  say "files/alerts.yaml: a Prometheus rule file"
else
  say "NOTE files/alerts.yaml is not in the chart yet: the PrometheusRule is rendered from a stand-in"
  mkdir -p "$copy/files"
  cat > "$copy/files/alerts.yaml" <<'EOF'
groups:
  - name: kvcache-stand-in
    rules:
      - alert: KvcacheDegraded
        expr: max by (pod) (kvcache_degraded) == 1
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: "{{ $labels.pod }} is degraded"
EOF
fi
if [[ -f $chart/files/dashboard.json ]]; then
  "$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$chart/files/dashboard.json" \
    || die "files/dashboard.json is not JSON"
  say "files/dashboard.json: JSON"
else
  say "NOTE files/dashboard.json is not in the chart yet: the dashboard is rendered from a stand-in"
  mkdir -p "$copy/files"
  echo '{"title": "kvcache (stand-in)", "panels": [], "schemaVersion": 39}' > "$copy/files/dashboard.json"
fi

# -- cases: a name and the values files that make it, each case as a user would install it ------
mkdir -p "$work/values"
cat > "$work/values/daemonset-loopback.yaml" <<'EOF'
# a DaemonSet reachable from its node only: no tokens; the disk tier in an emptyDir
server:
  host: 127.0.0.1
auth:
  tokens: null
disk:
  volume:
    type: emptyDir
    size: 220Gi
EOF
cat > "$work/values/inline-secrets.yaml" <<'EOF'
# every secret given inline (the chart makes the Secrets), the object tier with a fleet listed by
# the pods' names, RAM only above it
tls:
  existingSecret: ""
  passwordSecret: ""
  keystoreBase64: MIIKeAIBAzCCCjIGCSqGSIb3DQEHAaCCCiMEggofMIIKGzCCBZ8GCSqGSIb3DQEHAaCCBZAEggWM
  password: keystore-password-for-the-check
auth:
  tokens:
    engines:
      existingSecret: ""
      secret: an-inline-engines-token-of-forty-characters
objectTier:
  enabled: true
  bucket: kv-fleet
  capacity: 10TiB
  endpoint: https://s3.example.internal
  fleet:
    mode: list
  credentials:
    accessKeyId: AKIAEXAMPLEFORTHECHECK
    secretAccessKey: an-inline-secret-access-key-for-the-check
disk:
  enabled: false
memory:
  pageCacheAllowance: 0MiB
EOF
cat > "$work/values/kv-events.yaml" <<'EOF'
# KV events for routers, with the NetworkPolicy that lets them in
kvEvents:
  enabled: true
networkPolicy:
  enabled: true
EOF
cat > "$work/values/no-s3-api.yaml" <<'EOF'
# the S3 API off, with the NetworkPolicy: its port is in no manifest
s3Api:
  enabled: false
networkPolicy:
  enabled: true
EOF
cat > "$work/values/quotas.yaml" <<'EOF'
# a RAM and a disk quota for one namespace, a disk quota alone for the other
server:
  quotas:
    llama-8b: {ramBytes: 8GiB, diskBytes: 100GiB}
    qwen-72b: {diskBytes: 200GiB}
EOF
cat > "$work/values/quotas-bucket.yaml" <<'EOF'
# a bucket quota for one namespace of the object tier's example
server:
  quotas:
    llama-8b: {objectBytes: 2TiB}
EOF
cat > "$work/values/sealing.yaml" <<'EOF'
# one namespace sealed at rest on the disk and in the bucket, its master keys in a Secret
server:
  namespaces: [llama-8b, qwen-72b]
sealing:
  namespaces: [llama-8b]
  existingSecret: kvcache-master-keys
EOF
cases=(
  "default:"
  "statefulset:$examples/statefulset.yaml"
  "daemonset:$examples/daemonset.yaml"
  "tls-tokens:$examples/tls-tokens.yaml"
  "object-tier:$examples/object-tier.yaml"
  "daemonset-loopback:$examples/daemonset.yaml,$work/values/daemonset-loopback.yaml"
  "inline-secrets:$examples/tls-tokens.yaml,$work/values/inline-secrets.yaml"
  "kv-events:$examples/statefulset.yaml,$work/values/kv-events.yaml"
  "no-s3-api:$examples/statefulset.yaml,$work/values/no-s3-api.yaml"
  "quotas:$examples/statefulset.yaml,$work/values/quotas.yaml"
  "quotas-bucket:$examples/object-tier.yaml,$work/values/quotas-bucket.yaml"
  "sealing:$examples/object-tier.yaml,$work/values/sealing.yaml"
)

"$py" "$checker" readme "$chart/values.yaml" "$chart/README.md" || die "the values table of README.md"

say "helm lint and template of ${#cases[@]} cases, validated against Kubernetes $kube_version"
"$helm" lint --quiet --strict "$chart" >"$work/lint.log" 2>&1 \
  || { cat "$work/lint.log"; die "helm lint of the default values"; }
for c in "${cases[@]}"; do
  name=${c%%:*}
  files=${c#*:}
  args=()
  values=(--values "$chart/values.yaml")
  IFS=, read -r -a list <<<"$files"
  for f in "${list[@]}"; do
    [[ -n $f ]] || continue
    args+=(-f "$f")
    values+=(--values "$f")
  done
  "$helm" lint --quiet --strict "$copy" "${args[@]}" >"$work/lint-$name.log" 2>&1 \
    || { cat "$work/lint-$name.log"; die "helm lint, case $name"; }
  "$helm" template kvcache "$copy" --namespace kvcache --kube-version "$kube_version" \
    "${args[@]}" >"$work/$name.yaml" 2>"$work/$name.err" \
    || { cat "$work/$name.err"; die "helm template, case $name"; }
  kinds=$(grep -c '^kind:' "$work/$name.yaml" || true)
  say "case $name: $kinds manifests"
  "$py" "$checker" chart --kube-version "$kube_version" --namespace kvcache "${values[@]}" \
    "$work/$name.yaml" || die "case $name (rendered manifests in $work/$name.yaml)"
done
# the notes render for both shapes
{ printf '{{- define "kvcache.notesForCheck" -}}\n'; cat "$copy/templates/NOTES.txt"
  printf '{{- end }}\nnotes: {{ include "kvcache.notesForCheck" . | toJson }}\n'; } \
  >"$copy/templates/notes-for-check.yaml"
for shape in statefulset daemonset; do
  "$helm" template kvcache "$copy" --namespace kvcache --kube-version "$kube_version" \
    -f "$examples/$shape.yaml" --show-only templates/notes-for-check.yaml >"$work/notes-$shape.yaml" \
    || die "NOTES.txt does not render for shape $shape"
  grep -q '127.0.0.1\|headless' "$work/notes-$shape.yaml" || die "NOTES.txt for $shape says nothing of how to reach it"
done
rm "$copy/templates/notes-for-check.yaml"

# -- values the chart refuses --------------------------------------------------------------------
refused=0
refuse() {  # refuse <what> <expected message> <helm template arguments...>
  local what=$1 expected=$2
  shift 2
  refused=$((refused + 1))
  if "$helm" template kvcache "$copy" --kube-version "$kube_version" "$@" >/dev/null 2>"$work/refused.err"; then
    die "the chart took $what"
  fi
  grep -qF -- "$expected" "$work/refused.err" \
    || { cat "$work/refused.err"; die "the chart refused $what, but without saying: $expected"; }
}
refuse "0.0.0.0 without tokens" "refuses to listen on \"0.0.0.0\" without bearer tokens" \
  --set auth.tokens=null
refuse "a disk tier larger than its volume" "does not fit disk.volume.size" --set disk.capacity=200GiB
refuse "a size without a binary unit" "is not a size with a unit" --set memory.ramBytes=4GB
refuse "a fleet list for a DaemonSet" "objectTier.fleet.mode: list names the StatefulSet's pods" \
  -f "$examples/daemonset.yaml" --set objectTier.enabled=true --set objectTier.bucket=kv-fleet \
  --set objectTier.capacity=1TiB --set objectTier.fleet.mode=list
refuse "a PVC for a DaemonSet" "pvc needs shape statefulset" -f "$examples/daemonset.yaml" \
  --set disk.volume.type=pvc
refuse "loopback for a StatefulSet" "a StatefulSet's servers listen on 0.0.0.0" --set server.host=127.0.0.1
refuse "a token for a namespace not served" "is not one of server.namespaces" \
  --set 'auth.tokens.engines.read={other}'
refuse "a quota for a namespace not served" "server.quotas: the namespace \"other\" is not one of" \
  --set server.quotas.other.ramBytes=1GiB
refuse "RAM quotas that leave no RAM to the others" "must leave some of memory.ramBytes" \
  --set server.quotas.default.ramBytes=4GiB
refuse "a sealed namespace not served" "sealing.namespaces: the namespace \"other\" is not one of" \
  --set 'sealing.namespaces={other}' --set sealing.existingSecret=keys
refuse "sealing without master keys" "give sealing.existingSecret" \
  --set 'sealing.namespaces={default}'
refuse "disk quotas that leave no disk to the others" "must leave some of disk.capacity" \
  --set disk.enabled=true --set server.quotas.default.diskBytes=100GiB
refuse "a disk quota without a disk tier" "a disk quota needs the disk tier" \
  --set disk.enabled=false --set server.quotas.default.diskBytes=1GiB
refuse "a bucket quota without an object tier" "a bucket quota needs the object tier" \
  --set server.quotas.default.objectBytes=1TiB
refuse "a short inline token" "a token is at least 32 characters" --set auth.tokens.engines.secret=short
refuse "a ServiceMonitor with a token that may not read the metrics" \
  "is not a token of auth.tokens with metrics: true" --set serviceMonitor.enabled=true \
  --set serviceMonitor.token=engines
refuse "plain http to the store" "needs objectTier.allowPlainHttp" --set objectTier.enabled=true \
  --set objectTier.bucket=kv-fleet --set objectTier.capacity=1TiB --set objectTier.endpoint=http://s3.internal:9000
refuse "an unknown shape" "is neither statefulset nor daemonset" --set shape=deployment
refuse "the S3 API on the server's port" "is already the port of the server" --set s3Api.port=7070
refuse "a grace period shorter than the stop" "is shorter than a stop can take, 94 s" \
  --set memory.ramBytes=64GiB --set terminationGracePeriodSeconds=60
refuse "a bucket name S3 does not take" "is not an S3 bucket name" --set objectTier.enabled=true \
  --set objectTier.bucket=KV_Fleet --set objectTier.capacity=1TiB
# the Prometheus operator's kinds need their files: the chart's own copy, without stand-ins
if [[ ! -f $chart/files/alerts.yaml ]]; then
  refuse "a PrometheusRule without files/alerts.yaml" "the chart has no files/alerts.yaml" \
    --set prometheusRule.enabled=true
  "$helm" template kvcache "$chart" --kube-version "$kube_version" --set prometheusRule.enabled=true \
    >/dev/null 2>&1 && die "the chart rendered a PrometheusRule without files/alerts.yaml"
fi
say "$refused kinds of wrong values refused, each with its message"

# -- the engine examples -------------------------------------------------------------------------
served() {  # the server namespaces a chart example serves
  "$py" -c 'import sys, yaml; print(",".join(yaml.safe_load(open(sys.argv[1]))["server"]["namespaces"]))' "$1"
}
"$py" "$checker" engines --kube-version "$kube_version" --python-src "$repo/python/src" \
  --served "vllm=$(served "$examples/daemonset.yaml")" \
  --served "sglang=$(served "$examples/tls-tokens.yaml")" \
  --served "lmcache=$(served "$examples/tls-tokens.yaml")" \
  "$examples"/engines/*.yaml || die "the engine examples"
# the servers the remote examples list are the StatefulSet's pods, as tls-tokens.yaml renders them
expected=$("$py" - "$work/tls-tokens.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
s = next(d for d in docs if d["kind"] == "StatefulSet")
port = s["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
print(" ".join(f"https://{s['metadata']['name']}-{i}.{s['spec']['serviceName']}.kvcache.svc.cluster.local:{port}"
               for i in range(s["spec"]["replicas"])))
EOF
)
for engine in sglang lmcache; do
  for server in $expected; do
    grep -qF "$server" "$examples/engines/$engine.yaml" \
      || die "examples/engines/$engine.yaml does not list $server, a server of tls-tokens.yaml"
  done
done
say "engine examples: vLLM, SGLang and LMCache settings are the adapters' options"

say "OK in $((SECONDS - start)) s"
