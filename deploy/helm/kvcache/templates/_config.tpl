{{/*
The server's configuration file (server.yml in the ConfigMap, named by MICRONAUT_CONFIG_FILES).
It holds every setting but those the image's entrypoint reads from the environment (the RAM tier,
the heap, the direct memory beyond it, the disk tier's directory) and the secrets: the tokens and
the key store's password are ${...} placeholders the server resolves from environment variables
that come from Secrets. server.config is merged last.
*/}}
{{- define "kvcache.serverConfig" -}}
{{- $v := .Values }}
{{- $port := int $v.server.port }}
{{- $server := dict "host" $v.server.host "port" $port }}
{{- if $v.tls.enabled }}
{{- $keyStore := dict "path" "file:/etc/kvcache/tls/keystore.p12" "type" "PKCS12" "password" "${KVSECRET_KEYSTORE_PASSWORD}" }}
{{- $_ := set $server "ssl" (dict "enabled" true "port" $port "key-store" $keyStore) }}
{{- end }}
{{- $cache := dict "max-block-bytes" $v.cache.maxBlockBytes "ram-policy" $v.cache.ramPolicy "durability" $v.cache.durability "spill-on-close" $v.cache.spillOnClose }}
{{- if $v.disk.enabled }}
{{- $_ := set $cache "disk-capacity" $v.disk.capacity }}
{{- $_ := set $cache "disk-sync-policy" $v.disk.syncPolicy }}
{{- else }}
{{- $_ := set $cache "disk-dir" "" }}
{{- end }}
{{- if and (eq $v.shape "daemonset") $v.daemonset.sharedMemory.enabled }}
{{- $_ := set $cache "ram-shared-memory-dir" "/dev/shm" }}
{{- end }}
{{- if $v.objectTier.enabled }}
{{- $o := $v.objectTier }}
{{- $s3 := dict "bucket" $o.bucket "capacity" $o.capacity "prefix" $o.prefix "region" $o.region "addressing" $o.addressing "upload" $o.upload }}
{{- if $o.endpoint }}
{{- $_ := set $s3 "endpoint" $o.endpoint }}
{{- end }}
{{- if $o.allowPlainHttp }}
{{- $_ := set $s3 "allow-plain-http" true }}
{{- end }}
{{- if $o.ca.existingSecret }}
{{- $_ := set $s3 "ca-file" "/etc/kvcache/s3-ca/ca.pem" }}
{{- end }}
{{- if eq $o.fleet.mode "dns" }}
{{- $_ := set $s3 "fleet-dns" (printf "%s:%d" (include "kvcache.headlessFqdn" .) $port) }}
{{- else if eq $o.fleet.mode "list" }}
{{- $fleet := list }}
{{- range $i := until (int $v.replicas) }}
{{- $fleet = append $fleet (printf "%s-%d.%s:%d" (include "kvcache.fullname" $) $i (include "kvcache.headlessFqdn" $) $port) }}
{{- end }}
{{- $_ := set $s3 "fleet" (join "," $fleet) }}
{{- $_ := set $s3 "fleet-self" (printf "${POD_NAME}.%s:%d" (include "kvcache.headlessFqdn" .) $port) }}
{{- end }}
{{- $_ := set $cache "s3" (mustMergeOverwrite $s3 (deepCopy $o.settings)) }}
{{- end }}
{{- $tokensPerBlock := list }}
{{- range $ns, $tokens := $v.server.tokensPerBlock }}
{{- $tokensPerBlock = append $tokensPerBlock (printf "%s=%v" $ns $tokens) }}
{{- end }}
{{- $kvcache := dict "namespaces" $v.server.namespaces "tokens-per-block" $tokensPerBlock "cache" $cache }}
{{- if $v.server.quotas }}
{{- $quotas := dict }}
{{- range $ns, $q := $v.server.quotas }}
{{- $quota := dict }}
{{- if $q.ramBytes }}{{- $_ := set $quota "ram-bytes" $q.ramBytes }}{{- end }}
{{- if $q.diskBytes }}{{- $_ := set $quota "disk-bytes" $q.diskBytes }}{{- end }}
{{- if $q.objectBytes }}{{- $_ := set $quota "object-bytes" $q.objectBytes }}{{- end }}
{{- $_ := set $quotas $ns $quota }}
{{- end }}
{{- $_ := set $kvcache "quotas" $quotas }}
{{- end }}
{{- if $v.sealing.namespaces }}
{{- $_ := set $kvcache "sealing" (dict "namespaces" $v.sealing.namespaces "master-keys-file" (printf "/etc/kvcache/sealing/%s" $v.sealing.existingSecretKey)) }}
{{- end }}
{{- if $v.auth.tokens }}
{{- $tokens := dict }}
{{- range $name, $t := $v.auth.tokens }}
{{- $token := dict "secret" (printf "${%s}" (include "kvcache.tokenEnv" $name)) "read" ($t.read | default list) "write" ($t.write | default list) "metrics" ($t.metrics | default false) }}
{{- if $t.accessKey }}
{{- $_ := set $token "access-key" $t.accessKey }}
{{- end }}
{{- $_ := set $tokens $name $token }}
{{- end }}
{{- $_ := set $kvcache "auth" (dict "tokens" $tokens) }}
{{- end }}
{{- if $v.kvEvents.enabled }}
{{- $events := dict "endpoint" (printf "tcp://*:%d" (int $v.kvEvents.port)) }}
{{- if $v.kvEvents.replayPort }}
{{- $_ := set $events "replay-endpoint" (printf "tcp://*:%d" (int $v.kvEvents.replayPort)) }}
{{- end }}
{{- $_ := set $kvcache "events" $events }}
{{- end }}
{{- $_ := set $kvcache "s3" (dict "enabled" $v.s3Api.enabled "port" (int $v.s3Api.port) "base-domains" $v.s3Api.baseDomains) }}
{{- $config := dict "micronaut" (dict "server" $server) "kvcache" $kvcache }}
{{- toYaml (mustMergeOverwrite $config (deepCopy $v.server.config)) }}
{{- end }}
