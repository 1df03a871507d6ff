{{/*
Values that render into valid objects but cannot work in a pod: each is
refused at render, the message naming the value and why (tests/k8s/run.sh
has a test per refusal). The contradictions between values that defeat the
chart's guarantees (grace period, memory sum, PDB) are in _helpers.tpl.
*/}}

{{- define "mcp-exec.validateWorkable" -}}
{{- $c := .Values.config }}
{{- /* The workdirs must be on the memory-backed emptyDir, the only
writable path: elsewhere the read-only root filesystem refuses them. */}}
{{- $wb := toString $c.workdirBase }}
{{- if or (not (or (eq $wb "/tmp") (hasPrefix "/tmp/" $wb))) (regexMatch "(^|/)\\.\\.?(/|$)" $wb) }}
{{- fail (printf "config.workdirBase (%s) must be /tmp or a directory below it: /tmp is the pod's only writable path (the memory-backed emptyDir, tmp.sizeLimit); anywhere else the read-only root filesystem refuses the per-run workdirs" $wb) }}
{{- end }}
{{- /* RLIMIT_AS of every run process, the zygote's included, is
memoryMb: the preloaded interpreter must fit in it. Measured address space
(VmPeak) on Debian 12's python3: numpy and matplotlib 206 MiB (the fork
server's auto preload), pandas 89 MiB, numpy 47 MiB. */}}
{{- $forkServer := eq (include "mcp-exec.warmEnv" .) "1" }}
{{- $minMem := ternary 256 128 $forkServer }}
{{- if lt (int64 $c.memoryMb) (int64 $minMem) }}
{{- fail (printf "config.memoryMb (%d) must be at least %d%s: it is also each run process's address-space limit (RLIMIT_AS), and the interpreter with its modules does not fit below it (numpy and matplotlib, the fork server's preload: 206 MiB of address space; pandas: 89 MiB). The server would report ready, then the warm interpreter would fail to start and `import pandas` would fail in every run" (int64 $c.memoryMb) (int64 $minMem) (ternary " with config.warm=true" "" $forkServer)) }}
{{- end }}
{{- /* JavaScript runs on Node.js, which only the node image variant has:
the server refuses a language whose runtime is missing at start, and the
pod would crash-loop. */}}
{{- $langs := splitList "," (toString (default "auto" $c.languages)) }}
{{- if and (has "javascript" $langs) (ne (default "standard" .Values.image.variant) "node") }}
{{- fail (printf "config.languages (%s) lists javascript, which the standard image does not have (no Node.js): the server refuses to start and the pod crash-loops. Set image.variant=node (the <tag>-node image), or leave javascript out (auto offers what the image has)" $c.languages) }}
{{- end }}
{{- include "mcp-exec.validateUids" . }}
{{- /* Input files travel base64-encoded in the JSON request body. */}}
{{- $minBody := div (add (mul (int64 $c.maxFilesInBytes) 4) 2) 3 }}
{{- if lt (int64 $c.maxBodyBytes) $minBody }}
{{- fail (printf "config.maxBodyBytes (%d) must be at least 4/3 of config.maxFilesInBytes (%d), i.e. %d: input files arrive base64-encoded in the request body, so a call with files the server accepts would be refused with 413 before it is read (leave room for the code and the JSON around them too)" (int64 $c.maxBodyBytes) (int64 $c.maxFilesInBytes) $minBody) }}
{{- end }}
{{- /* out/ files are read into the server, base64-encoded into the result
and serialized into the response: about four times their size at once, in
the server's share of the memory sum. */}}
{{- $outNeed := mul (int64 $c.maxFilesOutBytes) 4 }}
{{- $serverBytes := mul (int64 .Values.sizing.serverMiB) 1048576 }}
{{- if gt $outNeed $serverBytes }}
{{- fail (printf "config.maxFilesOutBytes (%d) is beyond the server's memory: returning out/ files holds them, their base64 text and the serialized response at once, about 4 x %d = %d bytes, above sizing.serverMiB (%d MiB, the server's share of resources.limits.memory). Lower config.maxFilesOutBytes to at most %d, or raise sizing.serverMiB (and the memory limit with it)" (int64 $c.maxFilesOutBytes) (int64 $c.maxFilesOutBytes) $outNeed (int64 .Values.sizing.serverMiB) (div $serverBytes 4)) }}
{{- end }}
{{- /* Requests above limits: the API server refuses the Deployment's pods. */}}
{{- $req := .Values.resources.requests | default dict }}
{{- $lim := .Values.resources.limits | default dict }}
{{- range $r := list "memory" "cpu" }}
{{- if and (hasKey $req $r) (hasKey $lim $r) (not (kindIs "invalid" (get $req $r))) (not (kindIs "invalid" (get $lim $r))) }}
{{- /* CPU in millicores: in whole cores 2500m and 2 would compare equal. */}}
{{- $unit := ternary "mcp-exec.quantityMilli" "mcp-exec.quantityBytes" (eq $r "cpu") }}
{{- if gt (float64 (include $unit (get $req $r))) (float64 (include $unit (get $lim $r))) }}
{{- fail (printf "resources.requests.%s (%v) is above resources.limits.%s (%v): the API server refuses such a pod, and the ReplicaSet would create none" $r (get $req $r) $r (get $lim $r)) }}
{{- end }}
{{- end }}
{{- end }}
{{- include "mcp-exec.validatePolicyRefs" . }}
{{- include "mcp-exec.validateNetworkNeeds" . }}
{{- end }}

{{/*
The policy's references: Secret names usable as Kubernetes names, and
grants naming rules that exist (the server refuses such a policy at start,
and the pod would crash-loop).
*/}}
{{- define "mcp-exec.validatePolicyRefs" -}}
{{- $p := .Values.policy }}
{{- range $i, $s := $p.credentialSecrets }}
{{- if or (gt (len $s) 253) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" $s)) }}
{{- fail (printf "policy.credentialSecrets[%d] (%q) is not a Secret name: a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)" $i $s) }}
{{- end }}
{{- end }}
{{- $rules := list }}
{{- range $p.egress }}{{ $rules = append $rules .name }}{{ end }}
{{- if and $p.exec (not $p.existingConfigMap) }}
{{- range $i, $g := ($p.exec.egress | default list) }}
{{- if not (has $g $rules) }}
{{- fail (printf "policy.exec.egress[%d] names the rule %q, which policy.egress does not define (rules: %s): the server refuses the policy at start and the pod crash-loops" $i $g (join ", " $rules | default "none")) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $pr := ($p.profiles | default list) }}
{{- range $i, $g := (($pr.exec | default dict).egress | default list) }}
{{- if not (has $g $rules) }}
{{- fail (printf "policy.profiles[%s].exec.egress[%d] names the rule %q, which policy.egress does not define (rules: %s): the server refuses the policy at start and the pod crash-loops" $pr.name $i $g (join ", " $rules | default "none")) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $f := $p.functions }}
{{- range $i, $g := ($f.egress | default list) }}
{{- if not (has $g $rules) }}
{{- fail (printf "policy.functions[%s].egress[%d] names the rule %q, which policy.egress does not define (rules: %s): the server refuses the policy at start and the pod crash-loops" $f.name $i $g (join ", " $rules | default "none")) }}
{{- end }}
{{- end }}
{{- end }}
{{- include "mcp-exec.validateUpstreams" . }}
{{- end }}

{{/*
policy.upstreams: names unique (the schema checks their form), every grant
naming one that exists, and each chart-only networkPolicy override complete
(peers without ports, or ports without peers, would open nothing or
everything).
*/}}
{{- define "mcp-exec.validateUpstreams" -}}
{{- $p := .Values.policy }}
{{- $names := list }}
{{- range $i, $u := ($p.upstreams | default list) }}
{{- if has $u.name $names }}
{{- fail (printf "policy.upstreams[%d]: the name %q is used twice: upstream names must be unique (the server refuses the policy at start and the pod crash-loops)" $i $u.name) }}
{{- end }}
{{- $names = append $names $u.name }}
{{- if hasKey $u "networkPolicy" }}
{{- if or (not $u.networkPolicy.to) (not $u.networkPolicy.ports) }}
{{- fail (printf "policy.upstreams[%s].networkPolicy needs both `to` (NetworkPolicy peers, e.g. a namespaceSelector and podSelector of the upstream's pods) and `ports` (the ports those pods listen on): it replaces the rule the chart derives from allow_cidrs and the url's port" $u.name) }}
{{- end }}
{{- end }}
{{- end }}
{{- $grants := list }}
{{- if and $p.exec (not $p.existingConfigMap) }}
{{- range $i, $g := ($p.exec.upstreams | default list) }}{{ $grants = append $grants (list (printf "policy.exec.upstreams[%d]" $i) $g) }}{{ end }}
{{- end }}
{{- range $f := ($p.functions | default list) }}
{{- range $i, $g := ($f.upstreams | default list) }}{{ $grants = append $grants (list (printf "policy.functions[%s].upstreams[%d]" $f.name $i) $g) }}{{ end }}
{{- end }}
{{- range $pr := ($p.profiles | default list) }}
{{- range $i, $g := (($pr.exec | default dict).upstreams | default list) }}{{ $grants = append $grants (list (printf "policy.profiles[%s].exec.upstreams[%d]" $pr.name $i) $g) }}{{ end }}
{{- end }}
{{- range $grants }}
{{- if not (has (index . 1) $names) }}
{{- fail (printf "%s names the upstream %q, which policy.upstreams does not define (upstreams: %s): the server refuses the policy at start and the pod crash-loops" (index . 0) (index . 1) (join ", " $names | default "none")) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
What the NetworkPolicy must admit for the enabled features to work: the
chart cannot tell who Prometheus is or where the proxy is, so it asks for
peers to be named rather than render a setup that fails silently.
*/}}
{{- define "mcp-exec.validateNetworkNeeds" -}}
{{- $np := .Values.networkPolicy }}
{{- if $np.enabled }}
{{- $scrapers := list }}
{{- if .Values.serviceMonitor.enabled }}{{ $scrapers = append $scrapers "serviceMonitor.enabled" }}{{ end }}
{{- if .Values.keda.enabled }}{{ $scrapers = append $scrapers "keda.enabled" }}{{ end }}
{{- if .Values.prometheusRule.enabled }}{{ $scrapers = append $scrapers "prometheusRule.enabled" }}{{ end }}
{{- if and $scrapers (not $np.extraIngressFrom) }}
{{- fail (printf "%s %s Prometheus to scrape /metrics, but the NetworkPolicy admits only the labelled clients: list Prometheus's pods in networkPolicy.extraIngressFrom (e.g. [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}, podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}}]), or set networkPolicy.enabled=false" (join ", " $scrapers) (ternary "needs" "need" (eq (len $scrapers) 1))) }}
{{- end }}
{{- $rules := or .Values.policy.egress .Values.policy.existingConfigMap }}
{{- if and .Values.config.egressProxy $rules (not $np.extraEgress) (not (and $np.egress.to $np.egress.ports)) }}
{{- fail (printf "config.egressProxy (%s) is set, but the NetworkPolicy has no rule to the proxy: the broker's requests go to the proxy, not to the rules' hosts. Set networkPolicy.egress.to and networkPolicy.egress.ports to the proxy's address and port (or list a rule in networkPolicy.extraEgress), or set networkPolicy.enabled=false" .Values.config.egressProxy) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
MCP tasks need the store (workspaces.store), and with more than one replica
one they all reach: a task's tasks/get, tasks/result and tasks/cancel may
reach any replica. pvc (ReadWriteMany with several replicas, which the
workspaces' own checks require) and redis are shared; emptyDir is the pod's.
*/}}
{{- define "mcp-exec.validateTasks" -}}
{{- $max := int64 .Values.replicaCount }}
{{- if .Values.autoscaling.enabled }}{{ $max = int64 .Values.autoscaling.maxReplicas }}{{ end }}
{{- if .Values.keda.enabled }}{{ $max = int64 .Values.keda.maxReplicaCount }}{{ end }}
{{- $store := toString .Values.workspaces.store }}
{{- if and .Values.tasks.enabled (eq $store "off") }}
{{- fail "tasks.enabled needs a store: a task's status and result are kept in it (set workspaces.store: emptyDir for one replica, pvc or redis for several; docs/deployment.md, \"MCP tasks\")" }}
{{- end }}
{{- if and .Values.tasks.enabled (gt $max 1) (not (or (eq $store "pvc") (eq $store "redis"))) }}
{{- fail (printf "tasks.enabled with up to %d replicas needs a store every replica shares (a task is read back from any replica): workspaces.store pvc (ReadWriteMany) or redis, not %s; docs/deployment.md, \"MCP tasks\"" $max $store) }}
{{- end }}
{{- end }}

{{/*
Without user namespaces the release runs as a uid of its own
(userNamespaces.perReleaseUid, mcp-exec.releaseUid), which replaces the
security contexts' runAsUser, runAsGroup and fsGroup. A value other than the
image's 65532 there was chosen by someone: replacing it without a word would
run the pods as a uid they did not ask for, so the chart refuses and says
how to keep it.
*/}}
{{- define "mcp-exec.validateUids" -}}
{{- $uid := include "mcp-exec.releaseUid" . }}
{{- if $uid }}
{{- range $sc := list "podSecurityContext" "securityContext" }}
{{- range $k := list "runAsUser" "runAsGroup" "fsGroup" }}
{{- $m := index $.Values $sc | default dict }}
{{- $v := ternary (index $m $k) nil (hasKey $m $k) }}
{{- if and (not (kindIs "invalid" $v)) (ne (int64 $v) 65532) }}
{{- fail (printf "%s.%s (%d) would be replaced by this release's uid (%s): without user namespaces (Kubernetes %s; userNamespaces.enabled=%v), userNamespaces.perReleaseUid gives every pod of the release a uid of its own. Set userNamespaces.perReleaseUid=false to run as %d, or leave %s.%s at 65532" $sc $k (int64 $v) $uid $.Capabilities.KubeVersion.Version $.Values.userNamespaces.enabled (int64 $v) $sc $k) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
