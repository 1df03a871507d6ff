{{/*
Workspaces and tasks: the store the server keeps them in (workspaces.store,
docs/deployment.md "Workspaces and tasks"), as the server's environment,
its volumes and the NetworkPolicy's egress.

  off       MCP_EXEC_WORKSPACES=off
  emptyDir  a directory on a volume of the pod's own: one replica only
  pvc       a PersistentVolumeClaim every replica mounts: ReadWriteMany
            whenever more than one replica can run
  redis     an existing Redis/Valkey (workspaces.redis.url), its password a
            file from an existing Secret; the NetworkPolicy opens exactly its
            peers (workspaces.redis.networkPolicyTo, or its address) and port,
            plus DNS when the URL names a host

A directory store lives under /var/lib/mcp-exec, a path a run cannot read
(Landlock allows /usr, /lib, /etc, /proc, /sys, /dev and the workdir), and
the Redis password under /var/run/secrets/mcp-exec-store (mode 0440).
*/}}
{{- define "mcp-exec.workspacesDir" -}}/var/lib/mcp-exec{{- end }}
{{- define "mcp-exec.workspacesSecretDir" -}}/var/run/secrets/mcp-exec-store{{- end }}

{{/* Whether more than one replica can run at once. */}}
{{- define "mcp-exec.manyReplicas" -}}
{{- if or .Values.autoscaling.enabled .Values.keda.enabled (gt (int64 .Values.replicaCount) 1) }}true{{ end }}
{{- end }}

{{/* {host, port, ip}: the parts of workspaces.redis.url the NetworkPolicy needs. */}}
{{- define "mcp-exec.redisTarget" -}}
{{- $u := .Values.workspaces.redis.url }}
{{- $authority := regexReplaceAll "/.*$" (regexReplaceAll "^redis://([^@/]*@)?" $u "") "" }}
{{- $host := $authority }}
{{- $port := 6379 }}
{{- if hasPrefix "[" $authority }}
{{- $host = regexReplaceAll "^\\[([^\\]]*)\\].*$" $authority "${1}" }}
{{- $p := regexFind ":[0-9]+$" (regexReplaceAll "^\\[[^\\]]*\\]" $authority "") }}
{{- if $p }}{{ $port = trimPrefix ":" $p | int }}{{ end }}
{{- else if regexMatch ":[0-9]+$" $authority }}
{{- $port = regexFind "[0-9]+$" $authority | int }}
{{- $host = regexReplaceAll ":[0-9]+$" $authority "" }}
{{- end }}
{{- $ip := or (regexMatch "^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$" $host) (contains ":" $host) }}
{{- toJson (dict "host" (lower $host) "port" $port "ip" $ip) }}
{{- end }}

{{/* The value of MCP_EXEC_WORKSPACES. */}}
{{- define "mcp-exec.workspacesValue" -}}
{{- $w := .Values.workspaces }}
{{- if eq $w.store "redis" }}{{ $w.redis.url }}
{{- else if or (eq $w.store "pvc") (eq $w.store "emptyDir") }}{{ printf "dir:%s/workspaces" (include "mcp-exec.workspacesDir" .) }}
{{- else }}off{{ end }}
{{- end }}

{{/* The server's store variables (a YAML list of EnvVar). */}}
{{- define "mcp-exec.workspacesEnv" -}}
{{- $w := .Values.workspaces }}
- name: MCP_EXEC_WORKSPACES
  value: {{ include "mcp-exec.workspacesValue" . | quote }}
{{- if and (eq $w.store "redis") $w.redis.existingSecret }}
- name: MCP_EXEC_WORKSPACES_PASSWORD_FILE
  value: {{ printf "%s/%s" (include "mcp-exec.workspacesSecretDir" .) $w.redis.passwordKey | quote }}
{{- end }}
- name: MCP_EXEC_WORKSPACE_MAX_MB
  value: {{ $w.maxMb | int64 | quote }}
- name: MCP_EXEC_WORKSPACE_TTL_S
  value: {{ $w.ttlS | int64 | quote }}
- name: MCP_EXEC_WORKSPACES_PER_CALLER
  value: {{ $w.perCaller | int64 | quote }}
{{- end }}

{{- define "mcp-exec.workspacesMounts" -}}
{{- $w := .Values.workspaces }}
{{- if or (eq $w.store "pvc") (eq $w.store "emptyDir") }}
- name: workspaces
  mountPath: {{ include "mcp-exec.workspacesDir" . }}
{{- else if and (eq $w.store "redis") $w.redis.existingSecret }}
- name: workspaces-password
  mountPath: {{ include "mcp-exec.workspacesSecretDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "mcp-exec.workspacesClaimName" -}}
{{- default (printf "%s-workspaces" (include "mcp-exec.fullname" .)) .Values.workspaces.pvc.existingClaim }}
{{- end }}

{{- define "mcp-exec.workspacesVolumes" -}}
{{- $w := .Values.workspaces }}
{{- if eq $w.store "pvc" }}
# Workspaces and tasks, shared by every replica (ReadWriteMany when there
# can be more than one); the server keeps them in workspaces/ (0700).
- name: workspaces
  persistentVolumeClaim:
    claimName: {{ include "mcp-exec.workspacesClaimName" . }}
{{- else if eq $w.store "emptyDir" }}
# Workspaces and tasks of this one replica: gone with the pod.
- name: workspaces
  emptyDir:
    sizeLimit: {{ $w.emptyDir.sizeLimit | quote }}
{{- else if and (eq $w.store "redis") $w.redis.existingSecret }}
# The Redis password: read by the server only, outside what a run may read.
- name: workspaces-password
  secret:
    secretName: {{ $w.redis.existingSecret }}
    defaultMode: 0440
    items:
      - key: {{ $w.redis.passwordKey }}
        path: {{ $w.redis.passwordKey }}
{{- end }}
{{- end }}

{{/* The NetworkPolicy egress rules the store needs: a JSON list (empty but
for redis). */}}
{{- define "mcp-exec.workspacesEgress" -}}
{{- $w := .Values.workspaces }}
{{- $rules := list }}
{{- if eq $w.store "redis" }}
{{- $t := include "mcp-exec.redisTarget" . | fromJson }}
{{- $to := $w.redis.networkPolicyTo | default list }}
{{- if and (not $to) $t.ip }}
{{- $to = list (dict "ipBlock" (dict "cidr" (printf "%s/%d" $t.host (ternary 128 32 (contains ":" $t.host))))) }}
{{- end }}
{{- if not $t.ip }}
{{- $rules = append $rules (include "mcp-exec.dnsRule" . | fromJson) }}
{{- end }}
{{- $rules = append $rules (dict "to" $to "ports" (list (dict "port" (int64 $t.port) "protocol" "TCP"))) }}
{{- end }}
{{- toJson $rules }}
{{- end }}

{{/* What the server's memory holds for the store at once, in MiB: the
workspace being saved or restored (Redis: also hiredis's read buffer). */}}
{{- define "mcp-exec.workspacesMiB" -}}
{{- $w := .Values.workspaces }}
{{- if eq $w.store "off" }}0{{ else }}{{ mul (int64 $w.maxMb) (ternary 2 1 (eq $w.store "redis")) }}{{ end }}
{{- end }}

{{/* Store values that would not work, refused with the reason. */}}
{{- define "mcp-exec.validateWorkspaces" -}}
{{- $w := .Values.workspaces }}
{{- $many := include "mcp-exec.manyReplicas" . }}
{{- if and (eq $w.store "emptyDir") $many }}
{{- fail "workspaces.store=emptyDir keeps each pod's workspaces on its own volume, but more than one replica can run (replicaCount > 1, autoscaling or keda): a call on another replica would not see them. Use workspaces.store=pvc (ReadWriteMany) or redis" }}
{{- end }}
{{- if eq $w.store "pvc" }}
{{- $mode := $w.pvc.accessMode | default (ternary "ReadWriteMany" "ReadWriteOnce" (not (empty $many))) }}
{{- if and $many (ne $mode "ReadWriteMany") }}
{{- fail (printf "workspaces.pvc.accessMode is %s, but more than one replica can run (replicaCount > 1, autoscaling or keda): every replica mounts the workspaces' volume, which needs ReadWriteMany (NFS, CephFS, EFS, Azure Files, Filestore ...)" $mode) }}
{{- end }}
{{- if and $w.pvc.existingClaim (or $w.pvc.storageClassName $w.pvc.accessMode) }}
{{- fail "workspaces.pvc.existingClaim names a claim the chart does not make: drop workspaces.pvc.storageClassName and workspaces.pvc.accessMode (set them on that claim)" }}
{{- end }}
{{- end }}
{{- if eq $w.store "redis" }}
{{- if not (regexMatch "^redis://([A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?(/[0-9]*)?$" ($w.redis.url | default "")) }}
{{- fail "workspaces.redis.url must be redis://[user@]host[:port][/db] without a password (the password comes from workspaces.redis.existingSecret)" }}
{{- end }}
{{- if not $w.redis.existingSecret }}
{{- fail "workspaces.store=redis needs workspaces.redis.existingSecret, a Secret holding the Redis password (key workspaces.redis.passwordKey): a store without a password is open to every pod that reaches it" }}
{{- end }}
{{- $t := include "mcp-exec.redisTarget" . | fromJson }}
{{- if and .Values.networkPolicy.enabled (not $t.ip) (not $w.redis.networkPolicyTo) }}
{{- fail (printf "workspaces.redis.url names the host %s, but the NetworkPolicy cannot open a host name: set workspaces.redis.networkPolicyTo to the Redis pods' peers (e.g. [{podSelector: {matchLabels: {app.kubernetes.io/name: valkey}}}], with a namespaceSelector when it runs in another namespace) or an ipBlock of its address" $t.host) }}
{{- end }}
{{- end }}
{{- end }}
