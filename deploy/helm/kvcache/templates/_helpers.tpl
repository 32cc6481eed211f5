{{/*
Names and labels.
*/}}
{{- define "kvcache.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kvcache.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless Service: clients shard over its DNS name, the StatefulSet's pods are named under it. */}}
{{- define "kvcache.headlessName" -}}
{{- printf "%s-headless" (include "kvcache.fullname" . | trunc 54 | trimSuffix "-") }}
{{- end }}

{{- define "kvcache.headlessFqdn" -}}
{{- printf "%s.%s.svc.%s" (include "kvcache.headlessName" .) .Release.Namespace .Values.clusterDomain }}
{{- end }}

{{- define "kvcache.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kvcache.labels" -}}
helm.sh/chart: {{ include "kvcache.chart" . }}
{{ include "kvcache.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: server
{{- end }}

{{- define "kvcache.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kvcache.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kvcache.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kvcache.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "kvcache.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Sizes. "kvcache.mebibytes" turns a size as the server or the JVM writes it (512MiB, 4GiB, 1TiB,
4096B; the JVM's 512m, 2g) into whole MiB, rounded up; anything else fails, naming the value.
Call it with (dict "value" <size> "what" <the value's name>).
*/}}
{{- define "kvcache.mebibytes" -}}
{{- $v := toString .value | trim }}
{{- if not (regexMatch "^[0-9]+(B|KiB|MiB|GiB|TiB|[kKmMgGtT])$" $v) }}
{{- fail (printf "%s: %q is not a size with a unit, such as 512MiB or 4GiB (the heap also as the JVM writes it, 512m)" .what $v) }}
{{- end }}
{{- $n := regexFind "^[0-9]+" $v | int64 }}
{{- $unit := regexReplaceAll "^[0-9]+" $v "" }}
{{- $shift := get (dict "B" 0 "KiB" 10 "k" 10 "K" 10 "MiB" 20 "m" 20 "M" 20 "GiB" 30 "g" 30 "G" 30 "TiB" 40 "t" 40 "T" 40) $unit | int }}
{{- $bytes := $n }}
{{- range until $shift }}{{ $bytes = mul $bytes 2 }}{{ end }}
{{- div (add $bytes 1048575) 1048576 }}
{{- end }}

{{/*
A Kubernetes quantity (100Gi, 500G, 2Ti) in whole MiB, rounded down; for the volume a disk tier
must fit in. Call it with (dict "value" <quantity> "what" <the value's name>).
*/}}
{{- define "kvcache.quantityMebibytes" -}}
{{- $v := toString .value | trim }}
{{- if not (regexMatch "^[0-9]+(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$" $v) }}
{{- fail (printf "%s: %q is not a whole Kubernetes quantity such as 100Gi" .what $v) }}
{{- end }}
{{- $n := regexFind "^[0-9]+" $v | int64 }}
{{- $unit := regexReplaceAll "^[0-9]+" $v "" }}
{{- $bytes := $n }}
{{- if hasSuffix "i" $unit }}
{{- range until (get (dict "Ki" 10 "Mi" 20 "Gi" 30 "Ti" 40 "Pi" 50) $unit | int) }}{{ $bytes = mul $bytes 2 }}{{ end }}
{{- else if $unit }}
{{- range until (get (dict "k" 1 "M" 2 "G" 3 "T" 4 "P" 5) $unit | int) }}{{ $bytes = mul $bytes 1000 }}{{ end }}
{{- end }}
{{- div $bytes 1048576 }}
{{- end }}

{{/*
The container's memory, in MiB: the RAM tier, the heap, the direct memory beyond the RAM tier, the
256 MiB the image's entrypoint reserves for the JVM itself, and the page-cache allowance. The
entrypoint refuses to start when the first four exceed the limit.
*/}}
{{- define "kvcache.memoryMebibytes" -}}
{{- $m := .Values.memory }}
{{- $ram := include "kvcache.mebibytes" (dict "value" $m.ramBytes "what" "memory.ramBytes") | int64 }}
{{- $heap := include "kvcache.mebibytes" (dict "value" $m.heap "what" "memory.heap") | int64 }}
{{- $direct := include "kvcache.mebibytes" (dict "value" $m.directExtra "what" "memory.directExtra") | int64 }}
{{- $pageCache := include "kvcache.mebibytes" (dict "value" $m.pageCacheAllowance "what" "memory.pageCacheAllowance") | int64 }}
{{- add $ram $heap $direct 256 $pageCache }}
{{- end }}

{{/* The disk tier's volume: pvc, emptyDir or hostPath. */}}
{{- define "kvcache.diskVolumeType" -}}
{{- $type := .Values.disk.volume.type | default (ternary "pvc" "emptyDir" (eq .Values.shape "statefulset")) }}
{{- if not (has $type (list "pvc" "emptyDir" "hostPath")) }}
{{- fail (printf "disk.volume.type: %q is not pvc, emptyDir or hostPath" $type) }}
{{- end }}
{{- if and (eq $type "pvc") (ne .Values.shape "statefulset") }}
{{- fail "disk.volume.type: pvc needs shape statefulset (a DaemonSet has no volumeClaimTemplates): use emptyDir or hostPath" }}
{{- end }}
{{- if and (eq $type "hostPath") (ne .Values.shape "daemonset") }}
{{- fail "disk.volume.type: hostPath needs shape daemonset (a StatefulSet's servers would share a node's directory): use pvc or emptyDir" }}
{{- end }}
{{- $type }}
{{- end }}

{{- define "kvcache.loopback" -}}
{{- if has .Values.server.host (list "127.0.0.1" "localhost" "::1") }}true{{ end }}
{{- end }}

{{- define "kvcache.scheme" -}}
{{- ternary "https" "http" (.Values.tls.enabled | default false) }}
{{- end }}

{{/* The environment variable the server reads a token's secret from. */}}
{{- define "kvcache.tokenEnv" -}}
{{- printf "KVSECRET_TOKEN_%s" (. | upper | replace "-" "_") }}
{{- end }}

{{- define "kvcache.tokensSecretName" -}}
{{- printf "%s-tokens" (include "kvcache.fullname" .) }}
{{- end }}

{{- define "kvcache.tlsSecretName" -}}
{{- .Values.tls.existingSecret | default (printf "%s-tls" (include "kvcache.fullname" .)) }}
{{- end }}

{{- define "kvcache.s3SecretName" -}}
{{- .Values.objectTier.credentials.existingSecret | default (printf "%s-s3" (include "kvcache.fullname" .)) }}
{{- end }}

{{- define "kvcache.s3Credentials" -}}
{{- $c := .Values.objectTier.credentials }}
{{- if or $c.existingSecret $c.accessKeyId $c.secretAccessKey }}true{{ end }}
{{- end }}

{{/*
Checks of the values that the server would otherwise only refuse at start, or not at all.
*/}}
{{/*
The seconds a stop can take: 30 s for the requests under way (Micronaut's grace period), the spill
of what only RAM holds to the disk tier at about a second per GiB (0.71-0.77 s measured,
docs/deployment.md), and with the object tier up to 30 s for queued uploads (s3.close-wait).
*/}}
{{- define "kvcache.stopSeconds" -}}
{{- $v := .Values }}
{{- $stop := 30 }}
{{- if and $v.disk.enabled $v.cache.spillOnClose }}
{{- $ramMiB := include "kvcache.mebibytes" (dict "value" $v.memory.ramBytes "what" "memory.ramBytes") | int64 }}
{{- $stop = add $stop (div (add $ramMiB 1023) 1024) }}
{{- end }}
{{- if $v.objectTier.enabled }}
{{- $stop = add $stop 30 }}
{{- end }}
{{- $stop }}
{{- end }}

{{/* The pod's grace: terminationGracePeriodSeconds, or the stop's seconds and 15 more. */}}
{{- define "kvcache.gracePeriodSeconds" -}}
{{- if ne (toString .Values.terminationGracePeriodSeconds) "" }}
{{- .Values.terminationGracePeriodSeconds }}
{{- else }}
{{- add (include "kvcache.stopSeconds" . | int64) 15 }}
{{- end }}
{{- end }}

{{- define "kvcache.validate" -}}
{{- $v := .Values }}
{{- if not (has $v.shape (list "statefulset" "daemonset")) }}
{{- fail (printf "shape: %q is neither statefulset nor daemonset" $v.shape) }}
{{- end }}
{{- $loopback := include "kvcache.loopback" . }}
{{- if and $loopback (ne $v.shape "daemonset") }}
{{- fail "server.host: loopback serves only the pod itself; a StatefulSet's servers listen on 0.0.0.0 (with auth.tokens)" }}
{{- end }}
{{- if and $loopback (not $v.daemonset.hostNetwork) }}
{{- fail "server.host: loopback needs daemonset.hostNetwork, or nothing outside the pod reaches the server" }}
{{- end }}
{{- if and (not $loopback) (empty $v.auth.tokens) }}
{{- fail (printf "auth.tokens: the server refuses to listen on %q without bearer tokens (docs/server.md, \"Auth\"): configure at least one token, or, with shape daemonset, set server.host to 127.0.0.1" $v.server.host) }}
{{- end }}
{{- if or (empty $v.server.namespaces) (gt (len $v.server.namespaces) 64) }}
{{- fail "server.namespaces: the server serves 1 to 64 namespaces" }}
{{- end }}
{{- if and $v.s3Api.enabled (or (eq (int $v.s3Api.port) (int $v.server.port)) (and $v.kvEvents.enabled (has (int $v.s3Api.port) (list (int $v.kvEvents.port) (int $v.kvEvents.replayPort))))) }}
{{- fail (printf "s3Api.port: %d is already the port of the server or of its KV events" (int $v.s3Api.port)) }}
{{- end }}
{{- $stop := include "kvcache.stopSeconds" . | int64 }}
{{- if and (ne (toString $v.terminationGracePeriodSeconds) "") (lt (int64 $v.terminationGracePeriodSeconds) $stop) }}
{{- fail (printf "terminationGracePeriodSeconds: %v s is shorter than a stop can take, %d s (30 s for the requests under way%s%s; docs/deployment.md, \"Stopping within the grace period\"): raise it, leave it empty for the chart to compute, or set cache.spillOnClose: false" $v.terminationGracePeriodSeconds $stop (ternary (printf ", about 1 s per GiB of memory.ramBytes %s written to disk" $v.memory.ramBytes) "" (and $v.disk.enabled $v.cache.spillOnClose)) (ternary ", 30 s for queued uploads" "" $v.objectTier.enabled)) }}
{{- end }}
{{- range $v.server.namespaces }}
{{- if not (regexMatch "^[A-Za-z0-9._-]{1,64}$" (toString .)) }}
{{- fail (printf "server.namespaces: %q is not 1 to 64 of A-Z a-z 0-9 . _ -" .) }}
{{- end }}
{{- end }}
{{- if and $v.serviceMonitor.enabled $v.auth.tokens }}
{{- $scraper := get $v.auth.tokens (toString $v.serviceMonitor.token) }}
{{- if not (and $scraper $scraper.metrics) }}
{{- fail (printf "serviceMonitor.token: %q is not a token of auth.tokens with metrics: true, which /prometheus needs once tokens are configured" (toString $v.serviceMonitor.token)) }}
{{- end }}
{{- end }}
{{- range $name, $t := $v.auth.tokens }}
{{- if not (regexMatch "^[a-z0-9]([a-z0-9-]*[a-z0-9])?$" $name) }}
{{- fail (printf "auth.tokens: the token name %q is not lower case letters, digits and -" $name) }}
{{- end }}
{{- if and $t.secret $t.existingSecret }}
{{- fail (printf "auth.tokens.%s: give secret or existingSecret, not both" $name) }}
{{- end }}
{{- if and $t.secret (lt (len $t.secret) 32) }}
{{- fail (printf "auth.tokens.%s.secret: a token is at least 32 characters" $name) }}
{{- end }}
{{- range concat ($t.read | default list) ($t.write | default list) }}
{{- if not (has . $v.server.namespaces) }}
{{- fail (printf "auth.tokens.%s: the namespace %q is not one of server.namespaces %v" $name . $v.server.namespaces) }}
{{- end }}
{{- end }}
{{- end }}
{{- $quoted := 0 }}
{{- $diskQuoted := 0 }}
{{- $objectQuoted := 0 }}
{{- range $ns, $q := $v.server.quotas }}
{{- if not (has $ns $v.server.namespaces) }}
{{- fail (printf "server.quotas: the namespace %q is not one of server.namespaces %v" $ns $v.server.namespaces) }}
{{- end }}
{{- if not (and (kindIs "map" $q) (or $q.ramBytes $q.diskBytes $q.objectBytes)) }}
{{- fail (printf "server.quotas.%s: give ramBytes, the RAM its blocks may hold at most, diskBytes, the disk tier's, or objectBytes, the bucket's" $ns) }}
{{- end }}
{{- if $q.ramBytes }}
{{- $quoted = add $quoted (include "kvcache.mebibytes" (dict "value" $q.ramBytes "what" (printf "server.quotas.%s.ramBytes" $ns)) | int64) }}
{{- end }}
{{- if $q.diskBytes }}
{{- if not $v.disk.enabled }}
{{- fail (printf "server.quotas.%s.diskBytes: a disk quota needs the disk tier (disk.enabled)" $ns) }}
{{- end }}
{{- $diskQuoted = add $diskQuoted (include "kvcache.mebibytes" (dict "value" $q.diskBytes "what" (printf "server.quotas.%s.diskBytes" $ns)) | int64) }}
{{- end }}
{{- if $q.objectBytes }}
{{- if not $v.objectTier.enabled }}
{{- fail (printf "server.quotas.%s.objectBytes: a bucket quota needs the object tier (objectTier.enabled)" $ns) }}
{{- end }}
{{- $objectQuoted = add $objectQuoted (include "kvcache.mebibytes" (dict "value" $q.objectBytes "what" (printf "server.quotas.%s.objectBytes" $ns)) | int64) }}
{{- end }}
{{- end }}
{{- if and (gt (int64 $objectQuoted) 0) (ge (int64 $objectQuoted) (include "kvcache.mebibytes" (dict "value" $v.objectTier.capacity "what" "objectTier.capacity") | int64)) }}
{{- fail (printf "server.quotas: the bucket quotas (%d MiB in all) must leave some of objectTier.capacity (%s) to the other namespaces" (int64 $objectQuoted) $v.objectTier.capacity) }}
{{- end }}
{{- if and (gt (int64 $diskQuoted) 0) (ge (int64 $diskQuoted) (include "kvcache.mebibytes" (dict "value" $v.disk.capacity "what" "disk.capacity") | int64)) }}
{{- fail (printf "server.quotas: the disk quotas (%d MiB in all) must leave some of disk.capacity (%s) to the other namespaces" (int64 $diskQuoted) $v.disk.capacity) }}
{{- end }}
{{- if ge (int64 $quoted) (include "kvcache.mebibytes" (dict "value" $v.memory.ramBytes "what" "memory.ramBytes") | int64) }}
{{- fail (printf "server.quotas: the RAM quotas (%d MiB in all) must leave some of memory.ramBytes (%s) to the other namespaces" (int64 $quoted) $v.memory.ramBytes) }}
{{- end }}
{{- range $ns := $v.sealing.namespaces }}
{{- if not (has $ns $v.server.namespaces) }}
{{- fail (printf "sealing.namespaces: the namespace %q is not one of server.namespaces %v" $ns $v.server.namespaces) }}
{{- end }}
{{- end }}
{{- if and $v.sealing.namespaces (not $v.sealing.existingSecret) }}
{{- fail "sealing.namespaces: give sealing.existingSecret, a Secret of yours holding the master keys as id:base64 entries (kubectl create secret generic kvcache-master-keys --from-literal=master-keys=1:$(openssl rand -base64 32))" }}
{{- end }}
{{- if and $v.sealing.namespaces (not $v.disk.enabled) (not $v.objectTier.enabled) }}
{{- fail "sealing.namespaces: sealing needs the disk tier or the object tier: RAM keeps blocks as they are" }}
{{- end }}
{{- if $v.tls.enabled }}
{{- if and (not $v.tls.existingSecret) (not $v.tls.keystoreBase64) }}
{{- fail "tls.enabled: give tls.existingSecret (a Secret with a PKCS12 key store) or tls.keystoreBase64 and tls.password" }}
{{- end }}
{{- if and $v.tls.keystoreBase64 (not $v.tls.password) }}
{{- fail "tls.keystoreBase64: give tls.password too" }}
{{- end }}
{{- end }}
{{- if $v.objectTier.enabled }}
{{- if not $v.objectTier.bucket }}
{{- fail "objectTier.bucket: the object tier needs a bucket" }}
{{- end }}
{{- if not (regexMatch "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$" $v.objectTier.bucket) }}
{{- fail (printf "objectTier.bucket: %q is not an S3 bucket name (3 to 63 of a-z 0-9 . -, starting and ending with a letter or digit)" $v.objectTier.bucket) }}
{{- end }}
{{- if not $v.objectTier.capacity }}
{{- fail "objectTier.capacity: the object tier needs the bytes the fleet keeps in the bucket (such as 10TiB)" }}
{{- end }}
{{- $_ := include "kvcache.mebibytes" (dict "value" $v.objectTier.capacity "what" "objectTier.capacity") }}
{{- if not (has $v.objectTier.fleet.mode (list "dns" "list" "none")) }}
{{- fail (printf "objectTier.fleet.mode: %q is not dns, list or none" $v.objectTier.fleet.mode) }}
{{- end }}
{{- if and (eq $v.objectTier.fleet.mode "list") (ne $v.shape "statefulset") }}
{{- fail "objectTier.fleet.mode: list names the StatefulSet's pods; with shape daemonset use dns or none" }}
{{- end }}
{{- $c := $v.objectTier.credentials }}
{{- if and $c.existingSecret (or $c.accessKeyId $c.secretAccessKey) }}
{{- fail "objectTier.credentials: give existingSecret or the inline keys, not both" }}
{{- end }}
{{- if and (not $c.existingSecret) (ne (empty $c.accessKeyId) (empty $c.secretAccessKey)) }}
{{- fail "objectTier.credentials: give both accessKeyId and secretAccessKey" }}
{{- end }}
{{- if and (hasPrefix "http://" $v.objectTier.endpoint) (not $v.objectTier.allowPlainHttp) }}
{{- fail "objectTier.endpoint: plain http:// to another host needs objectTier.allowPlainHttp (blocks and signed requests then cross the link in the clear)" }}
{{- end }}
{{- end }}
{{- if $v.disk.enabled }}
{{- $capacity := include "kvcache.mebibytes" (dict "value" $v.disk.capacity "what" "disk.capacity") | int64 }}
{{- $type := include "kvcache.diskVolumeType" . }}
{{- if ne $type "hostPath" }}
{{- $size := include "kvcache.quantityMebibytes" (dict "value" $v.disk.volume.size "what" "disk.volume.size") | int64 }}
{{- if gt $capacity $size }}
{{- fail (printf "disk.capacity (%s) does not fit disk.volume.size (%s)" $v.disk.capacity $v.disk.volume.size) }}
{{- end }}
{{- end }}
{{- end }}
{{- $_ := include "kvcache.memoryMebibytes" . }}
{{- if and (eq $v.shape "statefulset") (lt (int $v.replicas) 1) }}
{{- fail "replicas: at least 1" }}
{{- end }}
{{- end }}
