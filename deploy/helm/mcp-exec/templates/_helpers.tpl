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
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if eq (default "standard" .Values.image.variant) "node" }}
{{- $tag = printf "%s-node" $tag }}
{{- end }}
{{- printf "%s:%s" .Values.image.repository $tag }}
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

{{/*
Pod-level settings shared by the server and the helm test pods. Null fields
(runAsUser, runAsGroup, fsGroup left to the platform, as OpenShift's
restricted-v2 SCC does) are left out rather than rendered as null.
*/}}
{{- define "mcp-exec.podSecurityContext" -}}
{{- include "mcp-exec.withReleaseUid" (dict "sc" .Values.podSecurityContext "uid" (include "mcp-exec.releaseUid" .)) }}
{{- end }}

{{- define "mcp-exec.containerSecurityContext" -}}
{{- include "mcp-exec.withReleaseUid" (dict "sc" .Values.securityContext "uid" (include "mcp-exec.releaseUid" .)) }}
{{- end }}

{{/*
Whether the server pods get a user namespace of their own (hostUsers:
false): userNamespaces.enabled true, or auto on Kubernetes >= 1.33, where
the UserNamespacesSupport feature is on by default, unless a
runtimeClassName is set (runsc and Kata refuse hostUsers: false, and a pod
under them has a kernel of its own, where RLIMIT_NPROC is the pod's own
anyway). Then uid 65532 in the pod is a host uid range of the pod's own, and
RLIMIT_NPROC (counted per user and user namespace) is the pod's own.
*/}}
{{- define "mcp-exec.userNamespaces" -}}
{{- $u := toString .Values.userNamespaces.enabled }}
{{- if eq $u "true" }}
{{- if semverCompare "<1.25-0" .Capabilities.KubeVersion.Version }}
{{- fail (printf "userNamespaces.enabled=true needs Kubernetes >= 1.25 (hostUsers), and the UserNamespacesSupport feature gate before 1.33; this is %s" .Capabilities.KubeVersion.Version) }}
{{- end }}true
{{- else if and (eq $u "auto") (not .Values.runtimeClassName) (semverCompare ">=1.33-0" .Capabilities.KubeVersion.Version) }}true
{{- end }}
{{- end }}

{{/*
Without a user namespace, the uid this release runs as when
userNamespaces.perReleaseUid is true: 10000 + a hash of namespace/release
modulo 50000. Below 65536 (the kubelet never maps user-namespaced pods
there) and above the usual login uids; not 65532, the uid distroless images
share. Empty when user namespaces are on or the option is off.
*/}}
{{- define "mcp-exec.releaseUid" -}}
{{- if and (not (include "mcp-exec.userNamespaces" .)) .Values.userNamespaces.perReleaseUid }}
{{- add 10000 (mod (adler32sum (printf "%s/%s" .Release.Namespace .Release.Name)) 50000) }}
{{- end }}
{{- end }}

{{/* A security context without its null fields, its uids replaced by the
release's uid when there is one (fields left null stay to the platform). */}}
{{- define "mcp-exec.withReleaseUid" -}}
{{- $out := include "mcp-exec.withoutNulls" .sc | fromYaml }}
{{- if .uid }}
{{- range $k := list "runAsUser" "runAsGroup" "fsGroup" }}
{{- if hasKey $out $k }}{{ $_ := set $out $k (int64 $.uid) }}{{ end }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{- define "mcp-exec.withoutNulls" -}}
{{- $out := dict }}
{{- range $k, $v := . }}
{{- if not (kindIs "invalid" $v) }}
{{- $_ := set $out $k $v }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* The token as a file: only the token key, mode 0440 (group = fsGroup). */}}
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
A Kubernetes Quantity (string or number) in bytes, as a decimal string:
"1Gi" -> 1073741824, "1.5G" -> 1500000000, "1e9" -> 1000000000, 512 -> 512.
The schema's pattern has already checked the form.
*/}}
{{- define "mcp-exec.quantityBytes" -}}
{{- printf "%.0f" (float64 (include "mcp-exec.quantityBytesExact" .)) }}
{{- end }}

{{/* The same, unrounded (a fraction of 1 stays: "250m" -> 0.25). */}}
{{- define "mcp-exec.quantityBytesExact" -}}
{{- $q := toString . | trim }}
{{- $num := regexFind "^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)" $q }}
{{- $suffix := trimPrefix $num $q }}
{{- $mult := dict "" 1.0 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 }}
{{- if regexMatch "^[eE][+-]?[0-9]+$" $suffix }}
{{- float64 $q }}
{{- else if hasKey $mult $suffix }}
{{- mulf (float64 $num) (get $mult $suffix) }}
{{- else }}
{{- fail (printf "cannot read the quantity %q" $q) }}
{{- end }}
{{- end }}

{{/* A CPU quantity in millicores, as a decimal string: "250m" -> 250,
"2" -> 2000, "1.5" -> 1500 (compared in millicores, since a whole-core
rounding reads 2500m as 2). */}}
{{- define "mcp-exec.quantityMilli" -}}
{{- printf "%.0f" (mulf (float64 (include "mcp-exec.quantityBytesExact" .)) 1000.0) }}
{{- end }}

{{/* Quantity -> MiB, rounded down, as an int64. */}}
{{- define "mcp-exec.quantityMiB" -}}
{{- divf (float64 (include "mcp-exec.quantityBytes" .)) 1048576.0 | floor | int64 }}
{{- end }}

{{/*
How long the server may take to drain after SIGTERM: it waits for the running
execution at most config.maxTimeoutS + DRAIN_SLACK_S seconds, then stops
(src/app.c, on_signal: max_timeout_s + 10). tests/k8s/run.sh checks that the
two numbers agree.
*/}}
{{- define "mcp-exec.drainSlackS" -}}10{{- end }}
{{- define "mcp-exec.exitMarginS" -}}5{{- end }}

{{/* Replicas the release keeps at least, whatever scales it. */}}
{{- define "mcp-exec.minReplicas" -}}
{{- if .Values.keda.enabled }}{{ .Values.keda.minReplicaCount }}
{{- else if .Values.autoscaling.enabled }}{{ .Values.autoscaling.minReplicas }}
{{- else }}{{ .Values.replicaCount }}{{ end }}
{{- end }}

{{/* PromQL label matchers for this release's series. */}}
{{- define "mcp-exec.promSelector" -}}
{{- default (printf "namespace=%q,job=%q" .Release.Namespace (include "mcp-exec.fullname" .)) .Values.monitoring.selector }}
{{- end }}

{{/*
The policy: whether there is one, the file rendered from values, and where
it and the credentials live in the pod. Both directories are outside what a
run may read (Landlock allows /usr, /lib, /etc, /proc, /sys, /dev and the
workdir), so run code cannot read the policy, the function sources or the
secrets even though it shares the server's uid.
*/}}
{{- define "mcp-exec.policyDir" -}}/var/run/mcp-exec/policy{{- end }}
{{- define "mcp-exec.credentialsDir" -}}/var/run/secrets/mcp-exec-credentials{{- end }}

{{- define "mcp-exec.hasPolicy" -}}
{{- $p := .Values.policy }}
{{- if or $p.existingConfigMap $p.egress $p.exec $p.functions $p.profiles $p.upstreams }}true{{ end }}
{{- end }}

{{- define "mcp-exec.policyConfigMapName" -}}
{{- default (printf "%s-policy" (include "mcp-exec.fullname" .)) .Values.policy.existingConfigMap }}
{{- end }}

{{/* The function source's key in the ConfigMap. */}}
{{- define "mcp-exec.functionKey" -}}
{{- printf "function-%s.py" (regexReplaceAll "[^A-Za-z0-9_.-]" . "_") }}
{{- end }}

{{- define "mcp-exec.policyJson" -}}
{{- $p := .Values.policy }}
{{- $doc := dict }}
{{- if $p.egress }}{{ $_ := set $doc "egress" $p.egress }}{{ end }}
{{- if $p.exec }}{{ $_ := set $doc "exec" $p.exec }}{{ end }}
{{- if $p.functions }}
{{- $fns := list }}
{{- range $p.functions }}
{{- $f := omit . "source" }}
{{- if hasKey . "source" }}
{{- $_ := set $f "source_file" (printf "%s/%s" (include "mcp-exec.policyDir" $) (include "mcp-exec.functionKey" .name)) }}
{{- end }}
{{- $fns = append $fns $f }}
{{- end }}
{{- $_ := set $doc "functions" $fns }}
{{- end }}
{{- if $p.profiles }}{{ $_ := set $doc "profiles" $p.profiles }}{{ end }}
{{- if $p.upstreams }}
{{- /* networkPolicy is the chart's own (the NetworkPolicy's peers and
ports for that upstream), not the server's. */}}
{{- $ups := list }}
{{- range $p.upstreams }}{{ $ups = append $ups (omit . "networkPolicy") }}{{ end }}
{{- $_ := set $doc "upstreams" $ups }}
{{- end }}
{{- toPrettyJson $doc }}
{{- end }}

{{/*
The parts of one egress rule's url_prefix (or an upstream's url) the
NetworkPolicies need: {host, port}. "https://*.example.com/v1" -> {host: "*.example.com", port: 443}.
*/}}
{{- define "mcp-exec.ruleTarget" -}}
{{- $m := regexFind "^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]+" (.url_prefix | default .url) }}
{{- $scheme := lower (regexReplaceAll "://.*$" $m "") }}
{{- $authority := regexReplaceAll "^[^:]+://([^@]*@)?" $m "" }}
{{- $host := $authority }}
{{- $port := ternary 443 80 (eq $scheme "https") }}
{{- if hasPrefix "[" $authority }}
{{- $host = regexReplaceAll "^\\[([^\\]]*)\\].*$" $authority "${1}" }}
{{- $p := regexFind ":[0-9]+$" (regexReplaceAll "^\\[[^\\]]*\\]" $authority "") }}
{{- if $p }}{{ $port = trimPrefix ":" $p | int }}{{ end }}
{{- else if regexMatch ":[0-9]+$" $authority }}
{{- $port = regexFind "[0-9]+$" $authority | int }}
{{- $host = regexReplaceAll ":[0-9]+$" $authority "" }}
{{- end }}
{{- toJson (dict "host" (lower $host) "port" $port) }}
{{- end }}

{{/* MCP_EXEC_WARM from config.warm: true "1", false "0", "after-reap"
itself (a fresh preloaded interpreter per run, made once the previous run
is gone). */}}
{{- define "mcp-exec.warmEnv" -}}
{{- $w := toString .Values.config.warm }}
{{- if eq $w "true" }}1{{ else if eq $w "after-reap" }}after-reap{{ else if eq $w "false" }}0{{ else }}
{{- fail (printf "config.warm (%s) must be true, false or after-reap" $w) }}
{{- end }}
{{- end }}

{{/* Refuse value combinations that would defeat the chart's guarantees. */}}
{{- define "mcp-exec.validate" -}}
{{- $c := .Values.config }}
{{- $drain := add (int64 $c.maxTimeoutS) (int64 (include "mcp-exec.drainSlackS" .)) }}
{{- $minGrace := add $drain (int64 (include "mcp-exec.exitMarginS" .)) }}
{{- if lt (int64 .Values.terminationGracePeriodSeconds) $minGrace }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be at least %d: after SIGTERM the server waits up to config.maxTimeoutS + %s = %d s for the running execution (src/app.c), and needs a few seconds more to stop; with less, a rollout or node drain kills running executions" (int64 .Values.terminationGracePeriodSeconds) $minGrace (include "mcp-exec.drainSlackS" .) $drain) }}
{{- end }}
{{- if gt (int64 $c.defaultTimeoutS) (int64 $c.maxTimeoutS) }}
{{- fail (printf "config.defaultTimeoutS (%d) exceeds config.maxTimeoutS (%d)" (int64 $c.defaultTimeoutS) (int64 $c.maxTimeoutS)) }}
{{- end }}
{{- include "mcp-exec.validateSizing" . }}
{{- include "mcp-exec.validateScaling" . }}
{{- include "mcp-exec.validatePolicy" . }}
{{- include "mcp-exec.validateWorkable" . }}
{{- include "mcp-exec.validateWorkspaces" . }}
{{- include "mcp-exec.validateTasks" . }}
{{- end }}

{{- define "mcp-exec.validateSizing" -}}
{{- $c := .Values.config }}
{{- $tmp := include "mcp-exec.quantityMiB" .Values.tmp.sizeLimit | int64 }}
{{- $limit := include "mcp-exec.quantityMiB" .Values.resources.limits.memory | int64 }}
{{- $warm := ternary (int64 .Values.sizing.warmMiB) 0 (ne (include "mcp-exec.warmEnv" .) "0") }}
{{- $over := int64 .Values.sizing.overshootMiB }}
{{- $ws := include "mcp-exec.workspacesMiB" . | int64 }}
{{- $need := add (int64 $c.memoryMb) $over (int64 .Values.sizing.serverMiB) $warm $tmp $ws }}
{{- if lt $limit $need }}
{{- fail (printf "resources.limits.memory (%s = %d MiB) is below what one replica can hold at once: config.memoryMb %d (the run's budget) + sizing.overshootMiB %d (what a fast burst allocates before the watchdog's reading ends it) + sizing.serverMiB %d (the server) + sizing.warmMiB %d (the waiting warm interpreter; 0 with config.warm=false) + tmp.sizeLimit %d MiB (memory-backed /tmp) + %d MiB (a workspace saved or restored: workspaces.maxMb, twice with redis; 0 with workspaces.store=off) = %d MiB. Past the limit the kernel kills the whole container, server included (cgroup v2 memory.oom.group); the server ends a run near the limit to prevent it, which then ends runs within their budget. Raise resources.limits.memory to at least %dMi or lower one of the others" (toString .Values.resources.limits.memory) $limit (int64 $c.memoryMb) $over (int64 .Values.sizing.serverMiB) $warm $tmp $ws $need $need) }}
{{- end }}
{{- if ge (int64 $c.maxDiskMb) $tmp }}
{{- fail (printf "config.maxDiskMb (%d MiB, one run's files) must be below tmp.sizeLimit (%s = %d MiB), or a single run can fill /tmp, where the warm interpreter and the next run live" (int64 $c.maxDiskMb) (toString .Values.tmp.sizeLimit) $tmp) }}
{{- end }}
{{- if gt (int64 $c.maxFileMb) (int64 $c.maxDiskMb) }}
{{- fail (printf "config.maxFileMb (%d) exceeds config.maxDiskMb (%d): one file cannot be larger than all of a run's files" (int64 $c.maxFileMb) (int64 $c.maxDiskMb)) }}
{{- end }}
{{- end }}

{{- define "mcp-exec.validateScaling" -}}
{{- if and .Values.autoscaling.enabled .Values.keda.enabled }}
{{- fail "autoscaling.enabled and keda.enabled are exclusive: KEDA creates its own HorizontalPodAutoscaler, and two would fight over the replica count" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int64 .Values.autoscaling.minReplicas) (int64 .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- if and .Values.keda.enabled (gt (int64 .Values.keda.minReplicaCount) (int64 .Values.keda.maxReplicaCount)) }}
{{- fail "keda.minReplicaCount must not exceed keda.maxReplicaCount" }}
{{- end }}
{{- $pdb := .Values.podDisruptionBudget }}
{{- if $pdb.enabled }}
{{- $n := include "mcp-exec.minReplicas" . | int64 }}
{{- $src := ternary "replicaCount" (ternary "keda.minReplicaCount" "autoscaling.minReplicas" .Values.keda.enabled) (not (or .Values.autoscaling.enabled .Values.keda.enabled)) }}
{{- if not (kindIs "invalid" $pdb.minAvailable) }}
{{- $min := 0 }}
{{- if kindIs "string" $pdb.minAvailable }}
{{- $pct := trimSuffix "%" $pdb.minAvailable | float64 }}
{{- $min = ceil (divf (mulf $pct (float64 $n)) 100.0) | int64 }}
{{- else }}
{{- $min = int64 $pdb.minAvailable }}
{{- end }}
{{- if ge (int64 $min) $n }}
{{- fail (printf "podDisruptionBudget.minAvailable (%v, i.e. %d pods) must be below %s (%d): otherwise no pod may ever be evicted and node drains block forever" $pdb.minAvailable (int64 $min) $src $n) }}
{{- end }}
{{- else if or (kindIs "invalid" $pdb.maxUnavailable) (eq (toString $pdb.maxUnavailable) "0") (eq (toString $pdb.maxUnavailable) "0%") }}
{{- fail "podDisruptionBudget.maxUnavailable must be at least 1 (or a non-zero percentage): with 0 no pod may ever be evicted and node drains block forever" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcp-exec.validatePolicy" -}}
{{- $p := .Values.policy }}
{{- if and $p.existingConfigMap (or $p.egress $p.exec $p.functions $p.upstreams) }}
{{- fail "policy.existingConfigMap replaces policy.egress, policy.exec, policy.functions and policy.upstreams: set one or the other" }}
{{- end }}
{{- range $p.functions }}
{{- if not (or (hasKey . "source") (hasKey . "source_file")) }}
{{- fail (printf "policy.functions[%s] needs its Python source: `source` (inline) or `source_file`" .name) }}
{{- end }}
{{- if and (hasKey . "source_file") (not $p.existingConfigMap) (not (hasPrefix (printf "%s/" (include "mcp-exec.policyDir" $)) .source_file)) }}
{{- fail (printf "policy.functions[%s].source_file (%s) is not in the pod: give the source inline as `source`, or use policy.existingConfigMap" .name .source_file) }}
{{- end }}
{{- end }}
{{- range $p.egress }}
{{- if and .credential .credential.secret_file }}
{{- $sf := .credential.secret_file }}
{{- $ok := false }}
{{- range $p.credentialSecrets }}
{{- if regexMatch (printf "^%s/%s/[^/]+$" (include "mcp-exec.credentialsDir" $) (regexQuoteMeta .)) $sf }}{{ $ok = true }}{{ end }}
{{- end }}
{{- if not $ok }}
{{- fail (printf "policy.egress[%s].credential.secret_file (%s) must be %s/<secret>/<key> for a Secret listed in policy.credentialSecrets, which the chart mounts read-only there" .name $sf (include "mcp-exec.credentialsDir" $)) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $p.upstreams }}
{{- if and .credential .credential.secret_file }}
{{- $sf := .credential.secret_file }}
{{- $ok := false }}
{{- range $p.credentialSecrets }}
{{- if regexMatch (printf "^%s/%s/[^/]+$" (include "mcp-exec.credentialsDir" $) (regexQuoteMeta .)) $sf }}{{ $ok = true }}{{ end }}
{{- end }}
{{- if not $ok }}
{{- fail (printf "policy.upstreams[%s].credential.secret_file (%s) must be %s/<secret>/<key> for a Secret listed in policy.credentialSecrets, which the chart mounts read-only there (the token itself never goes into values or the ConfigMap)" .name $sf (include "mcp-exec.credentialsDir" $)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The volume of one credential Secret: a DNS-1123 label whatever the Secret's
name (which may hold dots and be 253 characters long).
*/}}
{{- define "mcp-exec.credentialVolume" -}}
{{- printf "cred-%s" (sha256sum . | trunc 16) }}
{{- end }}

{{/*
The cluster DNS as one NetworkPolicy egress rule {to, ports}, from
networkPolicy.dns: the preset's peers plus dns.to, on dns.ports or the
preset's ports.
  kube-dns        the kube-dns (CoreDNS) pods, port 53
  node-local-dns  NodeLocal DNSCache's link-local address 169.254.20.10 (the
                  node-local-dns pods use the host network, so a pod
                  selector cannot name them) and the kube-dns pods it
                  forwards to and that pods fall back to
  gke             the kube-dns pods, NodeLocal DNSCache, and the metadata
                  server 169.254.169.254 that answers pods' lookups with
                  Cloud DNS for GKE, port 53 only (its HTTP API stays closed)
  openshift       the openshift-dns pods, which listen on 5353 (the Service
                  maps 53 to 5353; NetworkPolicies see the pod port)
  none            only dns.to and dns.ports
*/}}
{{- define "mcp-exec.dnsRule" -}}
{{- $d := .Values.networkPolicy.dns }}
{{- $kubeDns := dict "namespaceSelector" dict "podSelector" (dict "matchLabels" (dict "k8s-app" "kube-dns")) }}
{{- $nodeLocal := dict "ipBlock" (dict "cidr" "169.254.20.10/32") }}
{{- $p53 := list (dict "port" 53 "protocol" "UDP") (dict "port" 53 "protocol" "TCP") }}
{{- $presets := dict
  "kube-dns" (dict "to" (list $kubeDns) "ports" $p53)
  "node-local-dns" (dict "to" (list $nodeLocal $kubeDns) "ports" $p53)
  "gke" (dict "to" (list $kubeDns $nodeLocal (dict "ipBlock" (dict "cidr" "169.254.169.254/32"))) "ports" $p53)
  "openshift" (dict "to" (list (dict "namespaceSelector" (dict "matchLabels" (dict "kubernetes.io/metadata.name" "openshift-dns")) "podSelector" (dict "matchLabels" (dict "dns.operator.openshift.io/daemonset-dns" "default")))) "ports" (concat (list (dict "port" 5353 "protocol" "UDP") (dict "port" 5353 "protocol" "TCP")) $p53))
  "none" (dict "to" list "ports" list) }}
{{- $p := get $presets ($d.preset | default "kube-dns") }}
{{- $to := concat $p.to ($d.to | default list) }}
{{- $ports := $d.ports | default $p.ports }}
{{- if or (not $to) (not $ports) }}
{{- fail "networkPolicy.dns.preset is none, but networkPolicy.dns.to or networkPolicy.dns.ports is empty: name the cluster DNS's peers and ports, or pick a preset (kube-dns, node-local-dns, gke, openshift)" }}
{{- end }}
{{- toJson (dict "to" $to "ports" $ports) }}
{{- end }}

{{/* Labels of this release's helm test pods (plus their component). */}}
{{- define "mcp-exec.helmTestSelectorLabels" -}}
{{ include "mcp-exec.selectorLabels" . }}
{{- end }}
