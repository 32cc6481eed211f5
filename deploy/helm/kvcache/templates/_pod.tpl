{{/*
The server's pod template, shared by the StatefulSet and the DaemonSet.
*/}}
{{- define "kvcache.podTemplate" -}}
{{- $v := .Values }}
{{- $daemon := eq $v.shape "daemonset" }}
{{- $scheme := include "kvcache.scheme" . | upper }}
{{- $portName := include "kvcache.scheme" . }}
{{- $memory := printf "%sMi" (include "kvcache.memoryMebibytes" .) }}
{{- $diskType := include "kvcache.diskVolumeType" . }}
metadata:
  labels:
    {{- include "kvcache.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/component: server
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # a change of settings or of the chart's own secrets rolls the servers
    checksum/config: {{ include "kvcache.serverConfig" . | sha256sum }}
    checksum/secrets: {{ toJson (list $v.auth $v.tls.keystoreBase64 $v.tls.password $v.objectTier.credentials) | sha256sum }}
    {{- with $v.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "kvcache.serviceAccountName" . }}
  automountServiceAccountToken: {{ $v.serviceAccount.automountServiceAccountToken }}
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  # no Service environment variables: KVCACHE_SERVICE_HOST and the like would reach the server's
  # settings as kvcache.* properties
  enableServiceLinks: false
  {{- if $daemon }}
  {{- if $v.daemonset.hostNetwork }}
  # on the node's network, so that the node's engines reach the server over loopback, which is
  # what the server requires before it hands out shared memory or copies into an engine's file
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  {{- end }}
  {{- if $v.daemonset.hostPID }}
  # the node's process ids: the RAM files in /dev/shm are named by them (see values.yaml)
  hostPID: true
  {{- end }}
  {{- end }}
  securityContext:
    {{- toYaml $v.podSecurityContext | nindent 4 }}
  # On SIGTERM the server closes its port at once, finishes the requests under way (Micronaut's
  # grace period, 30 s), then closes the cache: RAM is written to the disk tier and queued
  # uploads to the bucket are waited for (kvcache.cache.s3.close-wait). This must cover it all.
  terminationGracePeriodSeconds: {{ include "kvcache.gracePeriodSeconds" . }}
  containers:
    - name: server
      image: {{ include "kvcache.image" . | quote }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      securityContext:
        {{- toYaml $v.securityContext | nindent 8 }}
      ports:
        - name: {{ $portName }}
          containerPort: {{ $v.server.port }}
          protocol: TCP
        {{- if $v.s3Api.enabled }}
        - name: s3
          containerPort: {{ $v.s3Api.port }}
          protocol: TCP
        {{- end }}
        {{- if $v.kvEvents.enabled }}
        - name: kv-events
          containerPort: {{ $v.kvEvents.port }}
          protocol: TCP
        {{- if $v.kvEvents.replayPort }}
        - name: kv-replay
          containerPort: {{ $v.kvEvents.replayPort }}
          protocol: TCP
        {{- end }}
        {{- end }}
      env:
        - name: MICRONAUT_CONFIG_FILES
          value: /etc/kvcache/config/server.yml
        # read by the image's entrypoint to size the JVM, and by the server
        - name: KVCACHE_CACHE_RAM_BYTES
          value: {{ $v.memory.ramBytes | quote }}
        - name: KVCACHE_HEAP
          value: {{ $v.memory.heap | quote }}
        - name: KVCACHE_DIRECT_EXTRA
          value: {{ $v.memory.directExtra | quote }}
        {{- if $v.disk.enabled }}
        - name: KVCACHE_CACHE_DISK_DIR
          value: /data/kvcache
        {{- end }}
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- range $name, $t := $v.auth.tokens }}
        - name: {{ include "kvcache.tokenEnv" $name }}
          valueFrom:
            secretKeyRef:
              {{- if $t.existingSecret }}
              name: {{ $t.existingSecret }}
              key: {{ $t.existingSecretKey | default $name }}
              {{- else }}
              name: {{ include "kvcache.tokensSecretName" $ }}
              key: {{ $name }}
              {{- end }}
        {{- end }}
        {{- if $v.tls.enabled }}
        - name: KVSECRET_KEYSTORE_PASSWORD
          valueFrom:
            secretKeyRef:
              name: {{ $v.tls.passwordSecret | default (include "kvcache.tlsSecretName" .) }}
              key: {{ $v.tls.passwordKey }}
        {{- end }}
        {{- if and $v.objectTier.enabled (include "kvcache.s3Credentials" .) }}
        # the AWS SDK's default credentials chain reads these
        - name: AWS_ACCESS_KEY_ID
          valueFrom:
            secretKeyRef:
              name: {{ include "kvcache.s3SecretName" . }}
              key: {{ $v.objectTier.credentials.accessKeyIdKey }}
        - name: AWS_SECRET_ACCESS_KEY
          valueFrom:
            secretKeyRef:
              name: {{ include "kvcache.s3SecretName" . }}
              key: {{ $v.objectTier.credentials.secretAccessKeyKey }}
        {{- end }}
        {{- with $v.server.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      resources:
        # the RAM tier, the heap, the direct memory beyond the RAM tier, 256 MiB for the JVM and
        # the page-cache allowance (memory.*), added up by the chart
        requests:
          cpu: {{ $v.cpu.request | quote }}
          memory: {{ $memory }}
        limits:
          {{- with $v.cpu.limit }}
          cpu: {{ . | quote }}
          {{- end }}
          memory: {{ $memory }}
      {{- $probeHost := include "kvcache.loopback" . }}
      startupProbe:
        httpGet:
          path: /health/liveness
          port: {{ $portName }}
          scheme: {{ $scheme }}
          {{- if $probeHost }}
          host: 127.0.0.1
          {{- end }}
        periodSeconds: {{ $v.probes.startup.periodSeconds }}
        timeoutSeconds: {{ $v.probes.startup.timeoutSeconds }}
        failureThreshold: {{ $v.probes.startup.failureThreshold }}
      readinessProbe:
        httpGet:
          path: /health/readiness
          port: {{ $portName }}
          scheme: {{ $scheme }}
          {{- if $probeHost }}
          host: 127.0.0.1
          {{- end }}
        initialDelaySeconds: {{ $v.probes.readiness.initialDelaySeconds }}
        periodSeconds: {{ $v.probes.readiness.periodSeconds }}
        timeoutSeconds: {{ $v.probes.readiness.timeoutSeconds }}
        failureThreshold: {{ $v.probes.readiness.failureThreshold }}
      livenessProbe:
        httpGet:
          path: /health/liveness
          port: {{ $portName }}
          scheme: {{ $scheme }}
          {{- if $probeHost }}
          host: 127.0.0.1
          {{- end }}
        initialDelaySeconds: {{ $v.probes.liveness.initialDelaySeconds }}
        periodSeconds: {{ $v.probes.liveness.periodSeconds }}
        timeoutSeconds: {{ $v.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ $v.probes.liveness.failureThreshold }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        - name: config
          mountPath: /etc/kvcache/config
          readOnly: true
        {{- if $v.disk.enabled }}
        - name: data
          mountPath: /data
        {{- end }}
        {{- if $v.tls.enabled }}
        - name: tls
          mountPath: /etc/kvcache/tls
          readOnly: true
        {{- end }}
        {{- if and $v.objectTier.enabled $v.objectTier.ca.existingSecret }}
        - name: s3-ca
          mountPath: /etc/kvcache/s3-ca
          readOnly: true
        {{- end }}
        {{- if $v.sealing.namespaces }}
        - name: master-keys
          mountPath: /etc/kvcache/sealing
          readOnly: true
        {{- end }}
        {{- if and $daemon $v.daemonset.sharedMemory.enabled }}
        - name: shm
          mountPath: /dev/shm
        {{- end }}
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: {{ $v.tmpSizeLimit }}
    - name: config
      configMap:
        name: {{ include "kvcache.fullname" . }}
    {{- if $v.disk.enabled }}
    {{- if eq $diskType "emptyDir" }}
    - name: data
      emptyDir:
        sizeLimit: {{ $v.disk.volume.size }}
    {{- else if eq $diskType "hostPath" }}
    - name: data
      hostPath:
        path: {{ $v.disk.volume.hostPath }}
        type: {{ $v.disk.volume.hostPathType }}
    {{- end }}
    {{- end }}
    {{- if $v.tls.enabled }}
    - name: tls
      secret:
        secretName: {{ include "kvcache.tlsSecretName" . }}
        items:
          - key: {{ $v.tls.keystoreKey }}
            path: keystore.p12
    {{- end }}
    {{- if and $v.objectTier.enabled $v.objectTier.ca.existingSecret }}
    - name: s3-ca
      secret:
        secretName: {{ $v.objectTier.ca.existingSecret }}
        items:
          - key: {{ $v.objectTier.ca.key }}
            path: ca.pem
    {{- end }}
    {{- if $v.sealing.namespaces }}
    - name: master-keys
      secret:
        secretName: {{ $v.sealing.existingSecret }}
        defaultMode: 0400
        items:
          - key: {{ $v.sealing.existingSecretKey }}
            path: {{ $v.sealing.existingSecretKey }}
    {{- end }}
    {{- if and $daemon $v.daemonset.sharedMemory.enabled }}
    # the node's /dev/shm, mounted at the same path in the engines' pods
    - name: shm
      hostPath:
        path: {{ $v.daemonset.sharedMemory.hostPath }}
        type: Directory
    {{- end }}
  {{- $nodeSelector := $v.nodeSelector }}
  {{- $tolerations := $v.tolerations }}
  {{- if $daemon }}
  {{- $nodeSelector = merge (deepCopy ($v.nodeSelector | default dict)) ($v.daemonset.nodeSelector | default dict) }}
  {{- $tolerations = concat ($v.tolerations | default list) ($v.daemonset.tolerations | default list) }}
  {{- end }}
  {{- with $nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if and (not $daemon) $v.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- range $v.topologySpreadConstraints }}
    {{- $c := deepCopy . }}
    {{- if not (hasKey $c "labelSelector") }}
    {{- $_ := set $c "labelSelector" (dict "matchLabels" (include "kvcache.selectorLabels" $ | fromYaml)) }}
    {{- end }}
    - {{ toYaml $c | indent 6 | trim }}
    {{- end }}
  {{- end }}
{{- end }}
