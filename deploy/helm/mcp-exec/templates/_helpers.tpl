{{/*
Names, labels and the shared pieces of the Deployment and the helm test pod.
*/}}

{{- define "mcp-exec.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcp-exec.fullname" -}}
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

{{- define "mcp-exec.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcp-exec.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-exec.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mcp-exec.labels" -}}
helm.sh/chart: {{ include "mcp-exec.chart" . }}
{{ include "mcp-exec.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Server pods: selector labels plus the component. */}}
{{- define "mcp-exec.serverSelectorLabels" -}}
{{ include "mcp-exec.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "mcp-exec.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcp-exec.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mcp-exec.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "mcp-exec.secretName" -}}
{{- default (include "mcp-exec.fullname" .) .Values.auth.existingSecret }}
{{- end }}

{{/*
The chart-created Secret's data, base64-encoded, resolved once per render and
memoised in .Values so that secret.yaml and the Deployment's checksum
annotation see the same values. Precedence: the value given in values, then
the value already in the cluster (so upgrades keep a generated token), then a
freshly generated random string.
*/}}
{{- define "mcp-exec.resolveSecret" -}}
{{- if not (hasKey .Values.auth "_resolved") }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "mcp-exec.fullname" .) | default dict }}
{{- $data := get $existing "data" | default dict }}
{{- $token := "" }}
{{- if .Values.auth.token }}
{{- $token = .Values.auth.token | b64enc }}
{{- else if hasKey $data .Values.auth.tokenKey }}
{{- $token = get $data .Values.auth.tokenKey }}
{{- else }}
{{- $token = randAlphaNum 48 | b64enc }}
{{- end }}
{{- $skey := "" }}
{{- if .Values.auth.sessionKey }}
{{- $skey = .Values.auth.sessionKey | b64enc }}
{{- else if hasKey $data .Values.auth.sessionKeyKey }}
{{- $skey = get $data .Values.auth.sessionKeyKey }}
{{- else }}
{{- $skey = randAlphaNum 64 | b64enc }}
{{- end }}
{{- $_ := set .Values.auth "_resolved" (dict "token" $token "sessionKey" $skey) }}
{{- end }}
{{- end }}

{{/* Pod-level settings shared by the server and the helm test pod. */}}
{{- define "mcp-exec.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext }}
{{- end }}

{{- define "mcp-exec.containerSecurityContext" -}}
{{- toYaml .Values.securityContext }}
{{- end }}

{{/* The token as a file: only the token key, mode 0440 (group = fsGroup). */}}
{{/* The token alone (the helm test pod). */}}
{{- define "mcp-exec.tokenVolume" -}}
- name: auth-token
  secret:
    secretName: {{ include "mcp-exec.secretName" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.auth.tokenKey }}
        path: token
{{- end }}

{{/*
The server's secrets, in one read-only volume at /var/run/secrets/mcp-exec
(outside every path a run may read): the token, and with egress rules the
policy (policy/policy.json, from the ConfigMap) and each credential
(egress/<rule>/<key>, from the Secret the rule names). A projected volume is
updated in place when a source changes; the server notices and re-reads.
*/}}
{{- define "mcp-exec.serverSecretsVolume" -}}
- name: auth-token
  projected:
    defaultMode: 0440
    sources:
      - secret:
          name: {{ include "mcp-exec.secretName" . }}
          items:
            - key: {{ .Values.auth.tokenKey }}
              path: token
      {{- if .Values.egress.rules }}
      - configMap:
          name: {{ include "mcp-exec.fullname" . }}-policy
          items:
            - key: policy.json
              path: policy/policy.json
      {{- range .Values.egress.rules }}
      {{- $rule := . }}
      {{- with .credential }}
      - secret:
          name: {{ .secretName }}
          items:
            - key: {{ .key }}
              path: {{ printf "egress/%s/%s" $rule.name .key }}
      {{- end }}
      {{- end }}
      {{- end }}
{{- end }}

{{/* The policy file (docs/policy.md) the egress values make, as JSON. */}}
{{- define "mcp-exec.policyJson" -}}
{{- $e := .Values.egress }}
{{- $rules := list }}
{{- $names := list }}
{{- range $e.rules }}
{{- $r := omit . "credential" }}
{{- $rule := . }}
{{- with .credential }}
{{- $_ := set $r "credential" (dict "header" .header "prefix" (.prefix | default "") "secret_file" (printf "/var/run/secrets/mcp-exec/egress/%s/%s" $rule.name .key)) }}
{{- end }}
{{- $rules = append $rules $r }}
{{- $names = append $names .name }}
{{- end }}
{{- $exec := dict "egress" ($e.exec | default $names) "max_requests" $e.maxRequests "max_in_flight" $e.maxInFlight }}
{{- dict "egress" $rules "exec" $exec | toPrettyJson }}
{{- end }}

{{/* "host port" of a url_prefix (the port explicit or the scheme's). */}}
{{- define "mcp-exec.hostPort" -}}
{{- $hp := regexReplaceAll "^https?://([^/]+).*$" . "${1}" }}
{{- if regexMatch ":[0-9]+$" $hp }}
{{- printf "%s %s" (regexReplaceAll ":[0-9]+$" $hp "") (regexFind "[0-9]+$" $hp) }}
{{- else }}
{{- printf "%s %s" $hp (ternary "443" "80" (hasPrefix "https:" .)) }}
{{- end }}
{{- end }}

{{/* Refuse value combinations that would defeat the chart's guarantees. */}}
{{- define "mcp-exec.validate" -}}
{{- if le (int64 .Values.terminationGracePeriodSeconds) (int64 .Values.config.maxTimeoutS) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be greater than config.maxTimeoutS (%d), or a rollout kills running executions" (int64 .Values.terminationGracePeriodSeconds) (int64 .Values.config.maxTimeoutS)) }}
{{- end }}
{{- if gt (int64 .Values.config.defaultTimeoutS) (int64 .Values.config.maxTimeoutS) }}
{{- fail (printf "config.defaultTimeoutS (%d) exceeds config.maxTimeoutS (%d)" (int64 .Values.config.defaultTimeoutS) (int64 .Values.config.maxTimeoutS)) }}
{{- end }}
{{- $ruleNames := list }}
{{- range .Values.egress.rules }}
{{- if has .name $ruleNames }}
{{- fail (printf "egress.rules: two rules are named %s" .name) }}
{{- end }}
{{- $ruleNames = append $ruleNames .name }}
{{- end }}
{{- range .Values.egress.exec }}
{{- if not (has . $ruleNames) }}
{{- fail (printf "egress.exec names %s, which is not in egress.rules" .) }}
{{- end }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int64 .Values.autoscaling.minReplicas) (int64 .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- end }}
