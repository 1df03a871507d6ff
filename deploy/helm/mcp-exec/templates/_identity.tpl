{{/*
Who is calling (docs/security.md, "Callers"): the named tokens file from a
Secret, and Kubernetes ServiceAccount tokens reviewed with TokenReview. The
deployment includes the three pieces below; each renders nothing unless
identity.tokensFile.existingSecret or identity.kubernetes.enabled is set.
*/}}

{{- define "mcp-exec.tokensDir" -}}/var/run/secrets/mcp-exec-tokens{{- end }}
{{- define "mcp-exec.kubeApiDir" -}}/var/run/secrets/kubernetes.io/serviceaccount{{- end }}

{{/* Environment of the server container. */}}
{{- define "mcp-exec.identityEnv" -}}
{{- $id := .Values.identity }}
{{- if $id.tokensFile.existingSecret }}
# One token per caller: hashes only, re-read when the Secret changes.
- name: MCP_EXEC_AUTH_TOKENS_FILE
  value: {{ printf "%s/tokens.json" (include "mcp-exec.tokensDir" .) | quote }}
{{- end }}
{{- if $id.kubernetes.enabled }}
# Callers' projected ServiceAccount tokens, checked with TokenReview.
- name: MCP_EXEC_AUTH_KUBERNETES
  value: "1"
- name: MCP_EXEC_AUTH_AUDIENCE
  value: {{ $id.kubernetes.audience | quote }}
{{- end }}
{{- end }}

{{/* Mounts of the server container. */}}
{{- define "mcp-exec.identityMounts" -}}
{{- $id := .Values.identity }}
{{- if $id.tokensFile.existingSecret }}
- name: auth-tokens
  mountPath: {{ include "mcp-exec.tokensDir" . }}
  readOnly: true
{{- end }}
{{- if $id.kubernetes.enabled }}
- name: kube-api-access
  mountPath: {{ include "mcp-exec.kubeApiDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Volumes of the server pod. automountServiceAccountToken stays false:
the token the server reviews with is projected here only when
identity.kubernetes.enabled, for the API server's own audience. */}}
{{- define "mcp-exec.identityVolumes" -}}
{{- $id := .Values.identity }}
{{- if $id.tokensFile.existingSecret }}
- name: auth-tokens
  secret:
    secretName: {{ $id.tokensFile.existingSecret }}
    defaultMode: 0440
    items:
      - key: {{ $id.tokensFile.key }}
        path: tokens.json
{{- end }}
{{- if $id.kubernetes.enabled }}
- name: kube-api-access
  projected:
    defaultMode: 0440
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3607
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
{{- end }}
{{- end }}
