{{/*
The server container's environment. Every name appears once: server-side
apply (Helm 4's default) rejects a Deployment whose env list has two entries
with one name, and with client-side apply the later entry silently wins.
*/}}

{{/* The variables the chart sets, from its values (a YAML list of EnvVar). */}}
{{- define "mcp-exec.chartEnv" -}}
{{- $c := .Values.config }}
- name: MCP_EXEC_TRANSPORT
  value: http
- name: MCP_EXEC_ADDR
  value: {{ printf "0.0.0.0:%d" (int64 .Values.containerPort) | quote }}
# The token is a file from the Secret, never an environment value.
- name: MCP_EXEC_AUTH_TOKEN_FILE
  value: /var/run/secrets/mcp-exec/token
- name: MCP_EXEC_SESSION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "mcp-exec.secretName" . }}
      key: {{ .Values.auth.sessionKeyKey }}
      optional: true
- name: MCP_EXEC_DEFAULT_TIMEOUT_S
  value: {{ $c.defaultTimeoutS | int64 | quote }}
- name: MCP_EXEC_MAX_TIMEOUT_S
  value: {{ $c.maxTimeoutS | int64 | quote }}
- name: MCP_EXEC_MAX_OUTPUT_BYTES
  value: {{ $c.maxOutputBytes | int64 | quote }}
- name: MCP_EXEC_MAX_STDIN_BYTES
  value: {{ $c.maxStdinBytes | int64 | quote }}
- name: MCP_EXEC_MAX_CODE_BYTES
  value: {{ $c.maxCodeBytes | int64 | quote }}
- name: MCP_EXEC_MAX_BODY_BYTES
  value: {{ $c.maxBodyBytes | int64 | quote }}
- name: MCP_EXEC_MAX_FILES_IN_BYTES
  value: {{ $c.maxFilesInBytes | int64 | quote }}
- name: MCP_EXEC_MAX_FILES_OUT
  value: {{ $c.maxFilesOut | int64 | quote }}
- name: MCP_EXEC_MAX_FILES_OUT_BYTES
  value: {{ $c.maxFilesOutBytes | int64 | quote }}
- name: MCP_EXEC_HEADER_TIMEOUT_S
  value: {{ $c.headerTimeoutS | int64 | quote }}
- name: MCP_EXEC_BODY_TIMEOUT_S
  value: {{ $c.bodyTimeoutS | int64 | quote }}
- name: MCP_EXEC_MAX_CONNECTIONS
  value: {{ $c.maxConnections | int64 | quote }}
- name: MCP_EXEC_PYTHON
  value: {{ $c.python | quote }}
- name: MCP_EXEC_MEMORY_MB
  value: {{ $c.memoryMb | int64 | quote }}
- name: MCP_EXEC_MAX_PROCS
  value: {{ $c.maxProcs | int64 | quote }}
- name: MCP_EXEC_MAX_FILE_MB
  value: {{ $c.maxFileMb | int64 | quote }}
- name: MCP_EXEC_MAX_DISK_MB
  value: {{ $c.maxDiskMb | int64 | quote }}
- name: MCP_EXEC_CPU_S
  value: {{ $c.cpuS | int64 | quote }}
- name: MCP_EXEC_MAX_QUEUE
  value: {{ $c.maxQueue | int64 | quote }}
{{- $t := .Values.tasks }}
- name: MCP_EXEC_TASKS
  value: {{ ternary "true" "false" $t.enabled | quote }}
- name: MCP_EXEC_TASK_MAX_TIMEOUT_S
  value: {{ $t.maxTimeoutS | int64 | quote }}
- name: MCP_EXEC_TASK_TTL_MAX_S
  value: {{ $t.ttlMaxS | int64 | quote }}
- name: MCP_EXEC_TASKS_PER_CALLER
  value: {{ $t.perCaller | int64 | quote }}
- name: MCP_EXEC_TASKS_MAX_MB
  value: {{ $t.maxMb | int64 | quote }}
- name: MCP_EXEC_TASK_LEASE_S
  value: {{ $t.leaseS | int64 | quote }}
- name: MCP_EXEC_QUEUE_TIMEOUT_S
  value: {{ $c.queueTimeoutS | int64 | quote }}
- name: MCP_EXEC_ALLOWED_ORIGINS
  value: {{ $c.allowedOrigins | quote }}
- name: MCP_EXEC_LOG_FORMAT
  value: {{ $c.logFormat | quote }}
- name: MCP_EXEC_LOG_LEVEL
  value: {{ $c.logLevel | quote }}
- name: MCP_EXEC_WARM
  value: {{ include "mcp-exec.warmEnv" . | quote }}
- name: MCP_EXEC_PRELOAD
  value: {{ $c.preload | quote }}
- name: MCP_EXEC_LANGUAGES
  value: {{ default "auto" $c.languages | quote }}
- name: MCP_EXEC_WARM_MAX_RUNS
  value: {{ $c.warmMaxRuns | int64 | quote }}
- name: MCP_EXEC_WARM_MAX_AGE_S
  value: {{ $c.warmMaxAgeS | int64 | quote }}
- name: MCP_EXEC_SESSION_TTL_S
  value: {{ $c.sessionTtlS | int64 | quote }}
- name: MCP_EXEC_WORKDIR_BASE
  value: {{ $c.workdirBase | quote }}
- name: MCP_EXEC_REQUIRE_LANDLOCK
  value: {{ ternary "1" "0" $c.requireLandlock | quote }}
- name: MCP_EXEC_RUNTIME
  value: {{ default "auto" $c.runtime | quote }}
{{- with $c.egressProxy }}
- name: MCP_EXEC_EGRESS_PROXY
  value: {{ . | quote }}
{{- end }}
{{- if include "mcp-exec.hasPolicy" . }}
# The policy file, re-read by the server when the ConfigMap changes.
- name: MCP_EXEC_POLICY
  value: {{ printf "%s/policy.json" (include "mcp-exec.policyDir" .) | quote }}
{{- end }}
{{- with include "mcp-exec.identityEnv" . | trim }}
{{ . }}
{{- end }}
{{ include "mcp-exec.workspacesEnv" . }}
{{- end }}

{{/*
Names the chart may set in some configuration (MCP_EXEC_EGRESS_PROXY and
MCP_EXEC_POLICY only with their values), so extraEnv may not name them in
any: a second entry would bypass the checks the chart makes on its values
(the drain against the grace period, the memory sum, Landlock, the
transport, the session key kept in the Secret).
*/}}
{{- define "mcp-exec.chartEnvNames" -}}
{{- $names := list "MCP_EXEC_EGRESS_PROXY" "MCP_EXEC_POLICY" "MCP_EXEC_AUTH_TOKENS_FILE" "MCP_EXEC_AUTH_KUBERNETES" "MCP_EXEC_AUTH_AUDIENCE" }}
{{- range (include "mcp-exec.chartEnv" . | fromYamlArray) }}
{{- $names = append $names .name }}
{{- end }}
{{- toJson (uniq $names) }}
{{- end }}

{{/*
The chart's variables then extraEnv, refused when two entries share a name
(extraEnv naming one of the chart's, or naming one twice).
*/}}
{{- define "mcp-exec.envChecked" -}}
{{- $chartNames := include "mcp-exec.chartEnvNames" . | fromJsonArray }}
{{- $env := include "mcp-exec.chartEnv" . | fromYamlArray }}
{{- range $i, $e := .Values.extraEnv }}
{{- if has $e.name $chartNames }}
{{- fail (printf "extraEnv[%d] sets %s, which the chart sets itself from its values (see values.yaml, config.*): set it there. A second entry with the same name is rejected by server-side apply and, where it is not, silently bypasses the checks the chart makes on that value" $i $e.name) }}
{{- end }}
{{- end }}
{{- $env = concat $env (.Values.extraEnv | default list) }}
{{- $seen := dict }}
{{- range $env }}
{{- if hasKey $seen .name }}
{{- fail (printf "the server container's env has two entries named %s (check extraEnv): server-side apply rejects duplicate names in the env list" .name) }}
{{- end }}
{{- $_ := set $seen .name true }}
{{- end }}
{{- toYaml $env }}
{{- end }}
