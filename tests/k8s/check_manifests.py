#!/usr/bin/python3
"""Security and shape checks on rendered Kubernetes manifests.

The schema validator (tools/k8s-validate) proves the manifests are well
formed; this proves they still carry the defences the project promises
(design.md section 5, docs/deployment.md), so that a change to the chart that
weakens one fails CI:

  pods:     no env name twice in a container, runAsNonRoot, a non-zero uid when one is set (it may be left to
            the platform, as OpenShift does), RuntimeDefault seccomp, no service
            account token, no host namespaces or hostPath, every container
            read-only root, no privilege escalation, capabilities drop ALL and
            add none, not privileged, a memory limit, /tmp a sized emptyDir
  server:   hostUsers false on Kubernetes >= 1.33 (default profile),
            liveness /healthz and readiness /readyz on the http port, grace
            period above the server's drain (MCP_EXEC_MAX_TIMEOUT_S + 10 s) plus
            5 s, memory limit above
            MCP_EXEC_MEMORY_MB + /tmp size, every MCP_EXEC_* setting present,
            the token only as a mounted Secret file (never an env value)
  network:  a NetworkPolicy selecting the server pods with Ingress+Egress,
            egress [] (with a policy: DNS and the rules' ports only), ingress
            only to the http port and only from non-empty peer lists
  helm test: the exec pod runs files/helm-test.py (python, no shell) against
            the Service with the token and is admitted by a peer that does not
            depend on clientNamespaceSelector; the isolation pod carries no
            client label and no peer admits it
  profiles: default, full (every optional object), openshift (uids left to
            the platform), policy (policy ConfigMap, credentials, egress,
            Cilium), keda, identity (ServiceAccount tokens: the binding and
            the API-server egress), gvisor and kata (runtimeClassName set: the
            class, no hostUsers, MCP_EXEC_RUNTIME), netpol (the plain
            networkpolicy/ files)

Usage:
  check_manifests.py --profile PROFILE [--chart DIR] FILE...
  check_manifests.py --env-names FILE...   only the duplicate env name check
  check_manifests.py --self-test FILE   (FILE: a default render) mutates the
      manifests one weakness at a time and checks each one is caught.
Prints ok/FAIL lines and a summary line "checks: N passed, N failed".
"""
import argparse
import base64
import copy
import json
import re
import sys

import yaml

SERVER_ENV = [
    "MCP_EXEC_TRANSPORT", "MCP_EXEC_ADDR", "MCP_EXEC_AUTH_TOKEN_FILE", "MCP_EXEC_SESSION_KEY",
    "MCP_EXEC_DEFAULT_TIMEOUT_S", "MCP_EXEC_MAX_TIMEOUT_S", "MCP_EXEC_MAX_OUTPUT_BYTES",
    "MCP_EXEC_MAX_STDIN_BYTES", "MCP_EXEC_MAX_CODE_BYTES", "MCP_EXEC_MAX_BODY_BYTES",
    "MCP_EXEC_HEADER_TIMEOUT_S", "MCP_EXEC_BODY_TIMEOUT_S", "MCP_EXEC_MAX_CONNECTIONS",
    "MCP_EXEC_PYTHON", "MCP_EXEC_MEMORY_MB", "MCP_EXEC_MAX_PROCS", "MCP_EXEC_MAX_FILE_MB",
    "MCP_EXEC_MAX_DISK_MB", "MCP_EXEC_CPU_S", "MCP_EXEC_MAX_QUEUE", "MCP_EXEC_QUEUE_TIMEOUT_S",
    "MCP_EXEC_ALLOWED_ORIGINS", "MCP_EXEC_LOG_FORMAT", "MCP_EXEC_LOG_LEVEL", "MCP_EXEC_WARM",
    "MCP_EXEC_PRELOAD", "MCP_EXEC_LANGUAGES", "MCP_EXEC_WARM_MAX_RUNS", "MCP_EXEC_WARM_MAX_AGE_S",
    "MCP_EXEC_SESSION_TTL_S", "MCP_EXEC_WORKDIR_BASE", "MCP_EXEC_REQUIRE_LANDLOCK",
    "MCP_EXEC_MAX_FILES_IN_BYTES", "MCP_EXEC_MAX_FILES_OUT", "MCP_EXEC_MAX_FILES_OUT_BYTES",
]
# Defaults the chart must render (design.md section 3 plus the chart's choices).
DEFAULT_ENV = {
    "MCP_EXEC_TRANSPORT": "http", "MCP_EXEC_ADDR": "0.0.0.0:8080",
    "MCP_EXEC_AUTH_TOKEN_FILE": "/var/run/secrets/mcp-exec/token",
    "MCP_EXEC_DEFAULT_TIMEOUT_S": "30", "MCP_EXEC_MAX_TIMEOUT_S": "300",
    "MCP_EXEC_MAX_OUTPUT_BYTES": "1048576", "MCP_EXEC_MAX_STDIN_BYTES": "1048576",
    "MCP_EXEC_PYTHON": "/usr/bin/python3", "MCP_EXEC_MEMORY_MB": "512", "MCP_EXEC_MAX_PROCS": "64",
    "MCP_EXEC_MAX_FILE_MB": "64", "MCP_EXEC_CPU_S": "0", "MCP_EXEC_MAX_QUEUE": "16",
    "MCP_EXEC_QUEUE_TIMEOUT_S": "60", "MCP_EXEC_ALLOWED_ORIGINS": "", "MCP_EXEC_LOG_FORMAT": "json",
    "MCP_EXEC_LOG_LEVEL": "info", "MCP_EXEC_WARM": "1",
    "MCP_EXEC_PRELOAD": "auto", "MCP_EXEC_LANGUAGES": "auto",
    "MCP_EXEC_MAX_BODY_BYTES": "8388608", "MCP_EXEC_SESSION_TTL_S": "86400",
    "MCP_EXEC_REQUIRE_LANDLOCK": "1", "MCP_EXEC_MAX_DISK_MB": "128",
    "MCP_EXEC_WARM_MAX_RUNS": "100", "MCP_EXEC_WARM_MAX_AGE_S": "300",
    "MCP_EXEC_MAX_FILES_IN_BYTES": "4194304", "MCP_EXEC_MAX_FILES_OUT": "16",
    "MCP_EXEC_MAX_FILES_OUT_BYTES": "8388608",
    "MCP_EXEC_HEADER_TIMEOUT_S": "10", "MCP_EXEC_BODY_TIMEOUT_S": "10",
    "MCP_EXEC_MAX_CONNECTIONS": "512",
}
# The server's drain after SIGTERM: MCP_EXEC_MAX_TIMEOUT_S + DRAIN_SLACK_S
# (src/app.c), then EXIT_MARGIN_S to stop; the grace period must cover both.
DRAIN_SLACK_S = 10
EXIT_MARGIN_S = 5
POLICY_DIR = "/var/run/mcp-exec/policy"
CREDENTIALS_DIR = "/var/run/secrets/mcp-exec-credentials"
SECRETISH = re.compile(r"TOKEN|SECRET|PASSWORD|SESSION_KEY|API_KEY", re.I)

_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "m": 10**-3}


def quantity_bytes(q):
    """Kubernetes Quantity -> number (bytes for memory)."""
    if isinstance(q, (int, float)):
        return float(q)
    m = re.fullmatch(r"([+-]?[0-9.]+)(e[+-]?[0-9]+)?([a-zA-Z]*)", str(q).strip())
    if not m or m.group(3) not in _SUFFIX:
        raise ValueError(f"bad quantity {q!r}")
    n = float(m.group(1) + (m.group(2) or ""))
    return n * _SUFFIX[m.group(3)]


class Report:
    def __init__(self, quiet=False):
        self.passed = 0
        self.failed = []
        self.quiet = quiet

    def check(self, cond, what):
        if cond:
            self.passed += 1
            if not self.quiet:
                print(f"ok   {what}")
        else:
            self.failed.append(what)
            if not self.quiet:
                print(f"FAIL {what}")
        return cond


def load(files):
    """YAML documents of files; a file holding one document also gets its
    leading comment as "_comment" (the plain NetworkPolicies explain themselves)."""
    docs = []
    for f in files:
        with open(f) as fh:
            text = fh.read()
        found = [d for d in yaml.safe_load_all(text) if d]
        if len(found) == 1:
            found[0]["_comment"] = "\n".join(l for l in text.splitlines() if l.startswith("#"))
        docs += found
    return docs


def pod_specs(docs):
    """(label, pod spec, pod metadata) for every workload in the render."""
    out = []
    for d in docs:
        kind = d.get("kind")
        name = f"{kind}/{d.get('metadata', {}).get('name')}"
        if kind == "Pod":
            out.append((name, d.get("spec", {}), d.get("metadata", {})))
        elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            t = d.get("spec", {}).get("template", {})
            out.append((name, t.get("spec", {}), t.get("metadata", {})))
        elif kind == "CronJob":
            t = d["spec"]["jobTemplate"]["spec"]["template"]
            out.append((name, t.get("spec", {}), t.get("metadata", {})))
    return out


def env_map(container):
    return {e["name"]: e for e in container.get("env", []) or []}


def selector_matches(match_labels, labels):
    return bool(match_labels) and all(labels.get(k) == v for k, v in match_labels.items())


def label_selector_matches(sel, labels):
    """A full LabelSelector (matchLabels and matchExpressions) against labels."""
    sel = sel or {}
    if not sel.get("matchLabels") and not sel.get("matchExpressions"):
        return False
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        ok = {"In": k in labels and labels[k] in vals, "NotIn": labels.get(k) not in vals,
              "Exists": k in labels, "DoesNotExist": k not in labels}[op]
        if not ok:
            return False
    return True


def check_pod(r, label, spec, secret_values):
    psc = spec.get("securityContext", {}) or {}
    r.check(spec.get("automountServiceAccountToken") is False,
            f"{label}: automountServiceAccountToken is false")
    for f in ("hostNetwork", "hostPID", "hostIPC"):
        r.check(not spec.get(f), f"{label}: no {f}")
    vols = {v["name"]: v for v in spec.get("volumes", []) or []}
    r.check(not any("hostPath" in v for v in vols.values()), f"{label}: no hostPath volume")
    r.check(psc.get("runAsNonRoot") is True, f"{label}: pod runAsNonRoot")
    r.check(psc.get("runAsUser") != 0 and psc.get("runAsGroup") != 0,
            f"{label}: pod runAsUser/runAsGroup not 0 (unset: left to the platform)")
    r.check((psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault",
            f"{label}: pod seccompProfile RuntimeDefault")
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    r.check(len(containers) > 0, f"{label}: has containers")
    for c in containers:
        cl = f"{label}/{c.get('name')}"
        sc = c.get("securityContext", {}) or {}
        caps = sc.get("capabilities", {}) or {}
        r.check(sc.get("readOnlyRootFilesystem") is True, f"{cl}: readOnlyRootFilesystem")
        r.check(sc.get("allowPrivilegeEscalation") is False, f"{cl}: allowPrivilegeEscalation false")
        r.check("ALL" in (caps.get("drop") or []), f"{cl}: capabilities drop ALL")
        r.check(not caps.get("add"), f"{cl}: no capabilities added")
        r.check(sc.get("privileged") is not True, f"{cl}: not privileged")
        r.check(sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True and
                sc.get("runAsUser", psc.get("runAsUser")) != 0,
                f"{cl}: runs as non-root")
        cmd = (c.get("command") or []) + (c.get("args") or [])
        r.check(not any(x in ("/bin/sh", "/bin/bash", "sh", "bash") for x in cmd[:1]),
                f"{cl}: does not need a shell (the server never starts one)")
        ctype = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        r.check(ctype == "RuntimeDefault", f"{cl}: effective seccomp RuntimeDefault")
        mem = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        r.check(mem is not None, f"{cl}: memory limit set")
        tmp = [m for m in c.get("volumeMounts", []) or [] if m.get("mountPath") == "/tmp"]
        ok_tmp = False
        if tmp:
            v = vols.get(tmp[0]["name"], {})
            ed = v.get("emptyDir")
            ok_tmp = isinstance(ed, dict) and ed.get("medium") == "Memory" and bool(ed.get("sizeLimit"))
        r.check(ok_tmp, f"{cl}: /tmp is a memory emptyDir with a sizeLimit")
        names = [e.get("name") for e in c.get("env") or []]
        dups = sorted({n for n in names if names.count(n) > 1})
        r.check(not dups, f"{cl}: no env name appears twice (server-side apply rejects it) {dups or ''}")
        env = env_map(c)
        r.check("MCP_EXEC_AUTH_TOKEN" not in env, f"{cl}: no MCP_EXEC_AUTH_TOKEN env")
        plain_secrets = [n for n, e in env.items()
                         if SECRETISH.search(n) and not n.endswith("_FILE") and "value" in e]
        r.check(not plain_secrets, f"{cl}: no secret-looking env with a plain value {plain_secrets or ''}")
        flat = yaml.safe_dump(c)
        r.check(not any(s and s in flat for s in secret_values),
                f"{cl}: the token/session key do not appear in the container spec")


def check_server(r, d, docs, profile):
    label = f"Deployment/{d['metadata']['name']}"
    spec = d["spec"]["template"]["spec"]
    c = spec["containers"][0]
    env = env_map(c)
    vals = {n: e.get("value") for n, e in env.items()}
    missing = [n for n in SERVER_ENV if n not in env]
    r.check(not missing, f"{label}: every MCP_EXEC_* setting is set {missing or ''}")
    r.check(vals.get("MCP_EXEC_TRANSPORT") == "http", f"{label}: MCP_EXEC_TRANSPORT=http")
    if profile == "default":
        wrong = {k: (vals.get(k), v) for k, v in DEFAULT_ENV.items() if vals.get(k) != v}
        r.check(not wrong, f"{label}: default MCP_EXEC_* values {wrong or ''}")
    sk = (env.get("MCP_EXEC_SESSION_KEY") or {}).get("valueFrom", {}).get("secretKeyRef")
    r.check(bool(sk) and sk.get("optional") is True, f"{label}: session key from an optional secretKeyRef")
    # The token file lives in a mounted Secret volume.
    tfile = vals.get("MCP_EXEC_AUTH_TOKEN_FILE") or ""
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    ok = False
    for m in c.get("volumeMounts", []):
        if tfile.startswith(m["mountPath"].rstrip("/") + "/"):
            sec = vols.get(m["name"], {}).get("secret")
            rel = tfile[len(m["mountPath"].rstrip("/")) + 1:]
            ok = bool(sec) and m.get("readOnly") is True and \
                any(i.get("path") == rel for i in sec.get("items", []))
    r.check(ok, f"{label}: MCP_EXEC_AUTH_TOKEN_FILE is a read-only mounted Secret key")
    # Probes.
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    r.check("http" in ports, f"{label}: container port named http")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        g = (c.get(probe) or {}).get("httpGet") or {}
        r.check(g.get("path") == path and g.get("port") in ("http", ports.get("http")),
                f"{label}: {probe} GET {path} on the http port")
    # Grace period and memory.
    maxt = int(vals.get("MCP_EXEC_MAX_TIMEOUT_S") or 300)
    need = maxt + DRAIN_SLACK_S + EXIT_MARGIN_S
    r.check(int(spec.get("terminationGracePeriodSeconds", 30)) >= need,
            f"{label}: terminationGracePeriodSeconds >= the drain (MCP_EXEC_MAX_TIMEOUT_S + "
            f"{DRAIN_SLACK_S}) + {EXIT_MARGIN_S} = {need}")
    disk = int(vals.get("MCP_EXEC_MAX_DISK_MB") or 0) * 2**20
    tmpv = [v for v in spec.get("volumes", []) if v["name"] ==
            next((m["name"] for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"), None)]
    tmp_bytes = quantity_bytes((tmpv[0].get("emptyDir") or {}).get("sizeLimit", 0)) if tmpv else 0
    mem = ((c.get("resources") or {}).get("limits") or {}).get("memory")
    budget = int(vals.get("MCP_EXEC_MEMORY_MB") or 512) * 2**20 + tmp_bytes
    r.check(mem is not None and quantity_bytes(mem) > budget,
            f"{label}: memory limit {mem} > MCP_EXEC_MEMORY_MB + /tmp sizeLimit ({budget / 2**20:.0f}Mi)")
    r.check(0 < disk < tmp_bytes, f"{label}: MCP_EXEC_MAX_DISK_MB below the /tmp sizeLimit")
    tsc = spec.get("topologySpreadConstraints") or []
    labels = d["spec"]["template"]["metadata"]["labels"]
    r.check(bool(tsc) and all(selector_matches((t.get("labelSelector") or {}).get("matchLabels"), labels)
                              for t in tsc),
            f"{label}: topologySpreadConstraints select the server pods")
    r.check(selector_matches(d["spec"]["selector"].get("matchLabels"), labels),
            f"{label}: selector matches the pod template")


def check_netpol(r, np_doc, server_labels, http_port, allow_egress=False):
    label = f"NetworkPolicy/{np_doc['metadata']['name']}"
    spec = np_doc.get("spec", {})
    pt = spec.get("policyTypes") or []
    r.check("Ingress" in pt and "Egress" in pt, f"{label}: policyTypes Ingress and Egress")
    if server_labels is not None:
        r.check(selector_matches((spec.get("podSelector") or {}).get("matchLabels"), server_labels),
                f"{label}: podSelector selects the server pods")
    if not allow_egress:
        r.check(spec.get("egress") == [], f"{label}: egress is [] (deny all)")
    ing = spec.get("ingress")
    if ing is None:
        return
    for i, rule in enumerate(ing):
        ports = rule.get("ports") or []
        r.check(bool(ports) and all(p.get("port") in ("http", http_port) for p in ports),
                f"{label}: ingress[{i}] only to the http port")
        frm = rule.get("from") or []
        r.check(bool(frm) and all(p for p in frm), f"{label}: ingress[{i}] has explicit, non-empty peers")
        for j, peer in enumerate(frm):
            if "ipBlock" in peer:
                continue
            ps = peer.get("podSelector")
            r.check(ps is not None and bool(ps.get("matchLabels") or ps.get("matchExpressions")) or
                    peer.get("namespaceSelector") not in (None, {}),
                    f"{label}: ingress[{i}].from[{j}] is not an any-pod wildcard")


def run_checks(docs, profile, r, chart_dir=None):
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    if profile == "netpol":
        # The plain manifests split the concerns: one policy denies egress,
        # one admits clients; an optional one denies everything namespace-wide.
        nps = by_kind.get("NetworkPolicy", [])
        r.check(bool(nps), "networkpolicy/: has NetworkPolicies")
        server = {"app.kubernetes.io/name": "mcp-exec", "app.kubernetes.io/component": "server"}

        def selects_server(np):
            ml = (np["spec"].get("podSelector") or {}).get("matchLabels")
            return ml == {} or ml is None or selector_matches(ml, server)
        r.check(any(selects_server(np) and "Egress" in np["spec"].get("policyTypes", []) and
                    np["spec"].get("egress") == [] for np in nps),
                "networkpolicy/: a policy selecting the server denies all egress (egress: [])")
        r.check(any(selects_server(np) and "Ingress" in np["spec"].get("policyTypes", []) for np in nps),
                "networkpolicy/: a policy selecting the server isolates ingress")
        client = {"mcp-exec-client": "true"}
        for np in nps:
            name = f"NetworkPolicy/{np['metadata']['name']}"
            spec = np["spec"]
            r.check(bool(spec.get("policyTypes")), f"{name}: policyTypes explicit")
            r.check(np.get("_comment", "").count("Blocks:") == 1 and "Lets through:" in np.get("_comment", ""),
                    f"{name}: its comment says whom it blocks and whom it lets through")
            if selector_matches((spec.get("podSelector") or {}).get("matchLabels"), client):
                # The client egress policy: DNS and the server's port, nothing else.
                eg = spec.get("egress") or []
                r.check(spec.get("policyTypes") == ["Egress"] and not spec.get("ingress"),
                        f"{name}: client pods, egress only")
                r.check(len(eg) == 2 and all(rule.get("to") and rule.get("ports") for rule in eg) and
                        {p["port"] for rule in eg for p in rule["ports"]} == {53, 8080},
                        f"{name}: clients may reach DNS and the server's port 8080 only")
                r.check(any(selector_matches((peer.get("podSelector") or {}).get("matchLabels"), server)
                            for rule in eg for peer in rule["to"]), f"{name}: port 8080 only to the server pods")
                continue
            r.check(selects_server(np), f"{name}: selects the server pods (or the whole namespace)")
            r.check(spec.get("egress") in (None, []), f"{name}: opens no egress")
            for i, rule in enumerate(spec.get("ingress") or []):
                ports = rule.get("ports") or []
                r.check(bool(ports) and all(p.get("port") in ("http", 8080) for p in ports),
                        f"{name}: ingress[{i}] only to port 8080")
                frm = rule.get("from") or []
                r.check(bool(frm) and all(
                    bool(((p.get("podSelector") or {}).get("matchLabels"))) for p in frm),
                    f"{name}: ingress[{i}] only from labelled pods")
        return

    secret_values = []
    for sec in by_kind.get("Secret", []):
        for v in (sec.get("data") or {}).values():
            secret_values.append(base64.b64decode(v).decode())
    for label, spec, _meta in pod_specs(docs):
        check_pod(r, label, spec, secret_values)
    deps = by_kind.get("Deployment", [])
    r.check(len(deps) == 1, "exactly one Deployment")
    if not deps:
        return
    dep = deps[0]
    check_server(r, dep, docs, profile)
    labels = dep["spec"]["template"]["metadata"]["labels"]
    # The API-server policy (identity.kubernetes) only admits, beside the
    # server's own: profile_identity checks it.
    nps = [np for np in by_kind.get("NetworkPolicy", [])
           if label_selector_matches(np["spec"].get("podSelector"), labels) and
           not np["metadata"]["name"].endswith("-apiserver")]
    r.check(len(nps) == 1, "one NetworkPolicy selects the server pods")
    for np in nps:
        check_netpol(r, np, labels, 8080, allow_egress=profile == "policy")
    svc = (by_kind.get("Service") or [{}])[0]
    sp = svc.get("spec", {})
    r.check(sp.get("type") == "ClusterIP", "Service is ClusterIP")
    r.check(any(p.get("name") == "http" and p.get("port") == 8080 for p in sp.get("ports", [])),
            "Service port 8080 named http")
    r.check(selector_matches(sp.get("selector"), labels), "Service selects the server pods")
    for sa in by_kind.get("ServiceAccount", []):
        r.check(sa.get("automountServiceAccountToken") is False,
                f"ServiceAccount/{sa['metadata']['name']}: automountServiceAccountToken false")
    check_helm_tests(r, by_kind, dep, nps, chart_dir)
    PROFILES[profile](r, by_kind, dep, labels, sp, nps)


def admits_same_namespace(np_doc, pod_labels):
    """A peer of the policy admits a pod with these labels in the release's own
    namespace, whatever namespaces the client selector names."""
    for rule in np_doc["spec"].get("ingress") or []:
        for peer in rule.get("from") or []:
            ps = peer.get("podSelector")
            ns = peer.get("namespaceSelector")
            if ps is None or "ipBlock" in peer:
                continue
            if ns not in (None, {}):
                continue  # admits the release namespace only if it carries those labels
            if selector_matches(ps.get("matchLabels"), pod_labels):
                return True
    return False


def check_helm_tests(r, by_kind, dep, nps, chart_dir):
    hooks = [d for k in by_kind for d in by_kind[k]
             if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"]
    pods = {d["spec"]["containers"][0]["name"]: d for d in hooks if d["kind"] == "Pod"}
    r.check("exec" in pods, "a helm test pod (exec) is rendered")
    scripts = {n: open(f"{chart_dir}/files/{f}").read() if chart_dir else None
               for n, f in (("exec", "helm-test.py"), ("isolation", "helm-test.py"),
                            ("serviceaccount", "helm-test-serviceaccount.py"))}
    server_img = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    svc_url = f"http://{dep['metadata']['name']}.{dep['metadata'].get('namespace', 'mcp')}.svc:8080/mcp"
    for name, t in pods.items():
        c = t["spec"]["containers"][0]
        cmd = c.get("command") or []
        env = {e["name"]: e.get("value") for e in c.get("env") or []}
        if name == "serviceaccount":
            # identity.kubernetes: a client with a ServiceAccount token.
            r.check(cmd[:2] == ["/usr/bin/python3", "-c"] and
                    (scripts[name] is None or cmd[2] == scripts[name]),
                    "helm test serviceaccount: runs files/helm-test-serviceaccount.py with the image's python3")
        else:
            r.check(cmd[:2] == ["/usr/bin/python3", "-c"] and cmd[-1] == name and
                    (scripts[name] is None or cmd[2] == scripts[name]),
                    f"helm test {name}: runs files/helm-test.py {name} with the image's python3")
        r.check(c["image"] == server_img, f"helm test {name}: uses the server image")
        r.check(env.get("MCP_URL") == svc_url, f"helm test {name}: MCP_URL is the Service ({svc_url})")
        tl = t["metadata"].get("labels", {})
        admitted = any(admits_same_namespace(np, tl) for np in nps)
        if name == "serviceaccount":
            r.check(admitted or not nps, "helm test serviceaccount: admitted by the NetworkPolicy like a client")
        elif name == "exec":
            r.check(admitted or not nps, "helm test exec: admitted by the NetworkPolicy in the release "
                    "namespace, whatever clientNamespaceSelector says")
            mounts = {m["mountPath"]: m for m in c.get("volumeMounts") or []}
            r.check(env.get("TOKEN_FILE") == "/token/token" and mounts.get("/token", {}).get("readOnly"),
                    "helm test exec: the token is mounted read-only at /token/token")
        else:
            r.check(not admitted, f"helm test {name}: no NetworkPolicy peer admits it")
    if nps:
        r.check("isolation" in pods, "with a NetworkPolicy, the isolation test pod is rendered")
        eg = [d for d in hooks if d["kind"] == "NetworkPolicy"]
        r.check(len(eg) == 1 and eg[0]["spec"].get("policyTypes") == ["Egress"] and
                len(eg[0]["spec"].get("egress") or []) == 2,
                "helm test pods: an Egress policy admits only DNS and the server")
        for d in eg:
            w = int(d["metadata"]["annotations"].get("helm.sh/hook-weight", "0"))
            r.check(all(w < int(p["metadata"]["annotations"].get("helm.sh/hook-weight", "0"))
                        for p in pods.values()), "helm test: the egress policy is created before the pods")


def profile_default(r, by_kind, dep, labels, sp, nps):
    kinds = set(by_kind)
    r.check(dep["spec"].get("replicas") == 2, "default: replicas 2")
    r.check(not kinds & {"HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor",
                         "PrometheusRule", "ScaledObject", "CiliumNetworkPolicy", "ConfigMap"},
            "default: no HPA, PDB, ServiceMonitor, PrometheusRule, ScaledObject, Cilium policy or ConfigMap")
    r.check(sp.get("sessionAffinity") == "None", "default: sessionAffinity None")
    sec = by_kind.get("Secret", [])
    tok = base64.b64decode(sec[0]["data"]["token"]).decode() if sec else ""
    r.check(len(tok) >= 32, "default: the chart creates a Secret with a generated token (>= 32 chars)")
    ann = dep["spec"]["template"]["metadata"].get("annotations") or {}
    r.check(re.fullmatch(r"[0-9a-f]{64}", ann.get("checksum/secret", "")) is not None,
            "default: checksum/secret annotation on the pod template")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    r.check("MCP_EXEC_POLICY" not in env_map(c), "default: no policy (MCP_EXEC_POLICY unset)")
    psc = dep["spec"]["template"]["spec"]["securityContext"]
    r.check(psc.get("runAsUser") == 65532 and psc.get("fsGroup") == 65532, "default: uid and fsGroup 65532")
    r.check(dep["spec"]["template"]["spec"].get("hostUsers") is False,
            "default: hostUsers false (a user namespace per pod, RLIMIT_NPROC its own) on Kubernetes >= 1.33")
    r.check("runtimeClassName" not in dep["spec"]["template"]["spec"],
            "default: no runtimeClassName (the cluster's default runtime)")


def profile_full(r, by_kind, dep, labels, sp, nps):
    kinds = set(by_kind)
    r.check("replicas" not in dep["spec"], "full: HPA owns replicas (no spec.replicas)")
    hpa = (by_kind.get("HorizontalPodAutoscaler") or [{}])[0]
    r.check(hpa.get("apiVersion") == "autoscaling/v2" and
            hpa.get("spec", {}).get("scaleTargetRef", {}).get("name") == dep["metadata"]["name"],
            "full: autoscaling/v2 HPA targets the Deployment")
    pm = [m for m in hpa.get("spec", {}).get("metrics", []) if m.get("type") == "Pods"]
    r.check(bool(pm) and pm[0]["pods"]["metric"]["name"] == "mcp_exec_load" and
            pm[0]["pods"]["target"]["type"] == "AverageValue",
            "full: the HPA scales on the Pods metric mcp_exec_load (AverageValue)")
    pdb = (by_kind.get("PodDisruptionBudget") or [{}])[0]
    r.check(pdb.get("apiVersion") == "policy/v1" and
            selector_matches(pdb.get("spec", {}).get("selector", {}).get("matchLabels"), labels),
            "full: policy/v1 PDB selects the server pods")
    sm = (by_kind.get("ServiceMonitor") or [{}])[0]
    r.check(sm.get("apiVersion") == "monitoring.coreos.com/v1" and
            any(e.get("path") == "/metrics" and e.get("port") == "http"
                for e in sm.get("spec", {}).get("endpoints", [])),
            "full: ServiceMonitor scrapes /metrics on the http port")
    pr = (by_kind.get("PrometheusRule") or [{}])[0]
    alerts = {x.get("alert") for g in pr.get("spec", {}).get("groups", []) for x in g.get("rules", [])}
    r.check(alerts >= {"MCPExecQueueSaturated", "MCPExecServerSideErrors", "MCPExecLandlockMissing",
                       "MCPExecRestarting"}, f"full: PrometheusRule alerts {sorted(alerts)}")
    cms = [c for c in by_kind.get("ConfigMap", []) if "mcp-exec.json" in (c.get("data") or {})]
    r.check(len(cms) == 1 and json.loads(cms[0]["data"]["mcp-exec.json"]).get("uid") == "mcp-exec" and
            cms[0]["metadata"]["labels"].get("grafana_dashboard") == "1",
            "full: the Grafana dashboard ConfigMap carries the sidecar label")
    r.check("Secret" not in kinds, "full: existingSecret -> no chart-made Secret")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    sk = env_map(c)["MCP_EXEC_SESSION_KEY"]["valueFrom"]["secretKeyRef"]
    vol = [v for v in dep["spec"]["template"]["spec"]["volumes"] if "secret" in v]
    r.check(sk["name"] == "my-mcp-token" and all(v["secret"]["secretName"] == "my-mcp-token" for v in vol),
            "full: existingSecret is used for the token file and the session key")
    r.check(sp.get("sessionAffinity") == "ClientIP" and
            sp.get("sessionAffinityConfig", {}).get("clientIP", {}).get("timeoutSeconds") == 3600,
            "full: Service sessionAffinity ClientIP with its timeout")
    ann = dep["spec"]["template"]["metadata"].get("annotations") or {}
    r.check("checksum/secret" not in ann, "full: no checksum annotation for an existing Secret")


def profile_openshift(r, by_kind, dep, labels, sp, nps):
    for label, spec, _meta in pod_specs([d for k in by_kind for d in by_kind[k]]):
        scs = [spec.get("securityContext") or {}] + [c.get("securityContext") or {}
                                                     for c in spec.get("containers", [])]
        r.check(not any(k in sc for sc in scs for k in ("runAsUser", "runAsGroup", "fsGroup")),
                f"openshift: {label} leaves runAsUser, runAsGroup and fsGroup to the platform")
    eg = [d for d in by_kind.get("NetworkPolicy", []) if d["metadata"]["name"].endswith("-test-egress")]
    ports = {p.get("port") for d in eg for rule in d["spec"]["egress"] for p in rule.get("ports", [])}
    r.check(5353 in ports, "openshift: DNS on 5353 (OpenShift's DNS pods) is admitted for the test pods")


def profile_keda(r, by_kind, dep, labels, sp, nps):
    so = (by_kind.get("ScaledObject") or [{}])[0]
    spec = so.get("spec", {})
    trig = (spec.get("triggers") or [{}])[0]
    q = trig.get("metadata", {}).get("query", "")
    r.check("replicas" not in dep["spec"], "keda: KEDA owns replicas (no spec.replicas)")
    r.check("HorizontalPodAutoscaler" not in by_kind, "keda: no HPA of the chart's own")
    r.check(spec.get("scaleTargetRef", {}).get("name") == dep["metadata"]["name"],
            "keda: the ScaledObject targets the Deployment")
    r.check(trig.get("type") == "prometheus" and trig.get("metricType") == "AverageValue" and
            "mcp_exec_running" in q and "mcp_exec_queue_depth" in q,
            f"keda: Prometheus trigger on running + queued ({q})")


def profile_policy(r, by_kind, dep, labels, sp, nps):
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = env_map(c)
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    r.check(env.get("MCP_EXEC_POLICY", {}).get("value") == f"{POLICY_DIR}/policy.json",
            "policy: MCP_EXEC_POLICY names the mounted policy.json")
    pm = mounts.get(POLICY_DIR, {})
    cmname = (vols.get(pm.get("name"), {}).get("configMap") or {}).get("name")
    r.check(pm.get("readOnly") is True and bool(cmname) and "subPath" not in pm,
            "policy: the policy ConfigMap is mounted read-only as a directory (so updates reach it)")
    cm = next((x for x in by_kind.get("ConfigMap", []) if x["metadata"]["name"] == cmname), None)
    r.check(cm is not None, f"policy: ConfigMap {cmname} is rendered")
    if not cm:
        return
    data = cm.get("data") or {}
    doc = json.loads(data.get("policy.json", "{}"))
    r.check(set(doc) <= {"egress", "exec", "functions"} and doc.get("egress"),
            "policy: policy.json has only egress/exec/functions, with egress rules")
    for f in doc.get("functions", []):
        sf = f.get("source_file", "")
        r.check("source" not in f and sf.startswith(POLICY_DIR + "/") and
                "def handler" in data.get(sf[len(POLICY_DIR) + 1:], ""),
                f"policy: function {f.get('name')} source is a file of the ConfigMap ({sf})")
    for rule in doc.get("egress", []):
        sf = (rule.get("credential") or {}).get("secret_file")
        if not sf:
            continue
        m = mounts.get(sf.rsplit("/", 1)[0], {})
        sec = (vols.get(m.get("name"), {}).get("secret") or {}).get("secretName")
        r.check(m.get("readOnly") is True and bool(sec) and sf.startswith(CREDENTIALS_DIR + "/"),
                f"policy: rule {rule['name']} credential {sf} is a read-only mounted Secret ({sec})")
    for np in nps:
        eg = np["spec"].get("egress") or []
        r.check(bool(eg) and all(rule.get("ports") and rule.get("to") for rule in eg),
                "policy: every egress rule names peers and ports (no allow-all)")
        ports = {(p.get("port"), p.get("protocol")) for rule in eg for p in rule["ports"]}
        cilium = bool(by_kind.get("CiliumNetworkPolicy"))
        r.check((53, "UDP") in ports and (cilium or (443, "TCP") in ports),
                "policy: egress to DNS and (without Cilium's toFQDNs) to the rules' port 443/TCP")
        blocks = [p["ipBlock"] for rule in eg for p in rule["to"] if "ipBlock" in p]
        cidrs = {a for rule in doc["egress"] for a in rule.get("allow_cidrs", [])}
        r.check(cidrs <= {b["cidr"] for b in blocks}, f"policy: each rule's allow_cidrs is admitted {sorted(cidrs)}")
        r.check(all("169.254.0.0/16" in b.get("except", []) for b in blocks if b["cidr"] == "0.0.0.0/0"),
                "policy: the public range excludes link-local (cloud metadata)")
        # Each port opens to the public range only for the rules that may
        # reach public addresses (no allow_cidrs): a private rule's port
        # stays closed to the internet.
        public_ports = {p.get("port") for rule in eg for p in rule["ports"]
                        if any(b.get("ipBlock", {}).get("cidr") == "0.0.0.0/0" for b in rule["to"])}
        want = {rule_port(rule["url_prefix"]) for rule in doc["egress"] if not rule.get("allow_cidrs")}
        r.check(cilium or public_ports == want,
                f"policy: the public range is opened on exactly the public rules' ports {sorted(public_ports)}"
                f" (want {sorted(want)})")
        for rule in doc["egress"]:
            if rule.get("allow_cidrs"):
                port = rule_port(rule["url_prefix"])
                r.check(all(set(b.get("ipBlock", {}).get("cidr") for b in er["to"]) <= set(rule["allow_cidrs"])
                            for er in eg if any(p.get("port") == port for p in er["ports"]) and
                            port not in want),
                        f"policy: rule {rule['name']}'s port {port} opens to its allow_cidrs only")
    if not by_kind.get("CiliumNetworkPolicy"):
        return
    cnp = by_kind["CiliumNetworkPolicy"][0]
    fq = {sel.get("matchName") or sel.get("matchPattern")
          for e in cnp.get("spec", {}).get("egress", []) for sel in e.get("toFQDNs", [])}
    hosts = {re.match(r"^[a-z]+://([^/:]+)", rule["url_prefix"]).group(1) for rule in doc["egress"]}
    r.check(fq == hosts, f"policy: the CiliumNetworkPolicy admits exactly the rules' hosts {sorted(fq)}")


def profile_identity(r, by_kind, dep, labels, sp, nps):
    """identity.kubernetes: the ServiceAccount bound to auth-delegator is the
    chart's own (never the namespace's default), and the API-server policy
    admits DNS and the API server only: every rule names peers and ports (a
    rule without peers, `to: []`, admits every destination)."""
    pod = dep["spec"]["template"]["spec"]
    env = env_map(pod["containers"][0])
    r.check(env.get("MCP_EXEC_AUTH_KUBERNETES", {}).get("value") == "1",
            "identity: MCP_EXEC_AUTH_KUBERNETES=1")
    sa = pod.get("serviceAccountName")
    crbs = [c for c in by_kind.get("ClusterRoleBinding", [])
            if c["roleRef"].get("name") == "system:auth-delegator"]
    r.check(len(crbs) == 1, "identity: one ClusterRoleBinding to system:auth-delegator")
    for c in crbs:
        subj = c.get("subjects") or []
        r.check(len(subj) == 1 and subj[0].get("kind") == "ServiceAccount" and
                subj[0].get("name") == sa and sa not in (None, "default"),
                f"identity: it binds the server's own ServiceAccount ({sa}), not the namespace's default")
    r.check(any(s["metadata"]["name"] == sa for s in by_kind.get("ServiceAccount", [])),
            f"identity: ServiceAccount {sa} is rendered")
    api = [np for np in by_kind.get("NetworkPolicy", []) if np["metadata"]["name"].endswith("-apiserver")]
    r.check(len(api) == 1, "identity: one API-server NetworkPolicy")
    for np in api:
        spec = np["spec"]
        eg = spec.get("egress") or []
        r.check(label_selector_matches(spec.get("podSelector"), labels) and
                spec.get("policyTypes") == ["Egress"] and not spec.get("ingress"),
                "identity: the API-server policy selects the server pods, egress only")
        r.check(len(eg) == 2 and all(rule.get("to") and rule.get("ports") and all(rule["to"])
                                     for rule in eg),
                "identity: every API-server policy rule names peers and ports (no to: [], no {} peer)")
        if len(eg) != 2 or not all(rule.get("to") and rule.get("ports") for rule in eg):
            continue
        dns, apis = eg
        r.check({p.get("port") for p in dns["ports"]} <= {53, 5353} and
                not any("ipBlock" in p and p["ipBlock"]["cidr"] in ("0.0.0.0/0", "::/0") for p in dns["to"]),
                "identity: the first rule is the cluster DNS (port 53, the preset's peers)")
        r.check(all(set(p) == {"ipBlock"} and p["ipBlock"]["cidr"] not in ("0.0.0.0/0", "::/0") and
                    not p["ipBlock"].get("except") for p in apis["to"]) and
                all(p.get("protocol") == "TCP" for p in apis["ports"]),
                "identity: the second rule is the API server's addresses on TCP only")


def rule_port(url_prefix):
    """The port of an egress rule's url_prefix (the scheme's by default)."""
    m = re.match(r"^([a-z]+)://(?:\[[^\]]*\]|[^/:]+)(?::(\d+))?", url_prefix)
    return int(m.group(2)) if m.group(2) else (443 if m.group(1) == "https" else 80)


def runtime_class(name, runtime):
    """A render with runtimeClassName set (issue 33): the pod names the class,
    asks for no user namespace (runsc and Kata refuse hostUsers: false), and
    the server is told the runtime (MCP_EXEC_RUNTIME) as the values say."""
    def profile(r, by_kind, dep, labels, sp, nps):
        spec = dep["spec"]["template"]["spec"]
        env = env_map(spec["containers"][0])
        r.check(spec.get("runtimeClassName") == name, f"{name}: the pods run under RuntimeClass {name}")
        r.check("hostUsers" not in spec, f"{name}: no hostUsers (the runtime refuses it; a kernel per pod)")
        r.check(env.get("MCP_EXEC_RUNTIME", {}).get("value") == runtime,
                f"{name}: MCP_EXEC_RUNTIME={runtime}")
        r.check(env.get("MCP_EXEC_REQUIRE_LANDLOCK", {}).get("value") == "1",
                f"{name}: Landlock still required (the server accepts its absence only under "
                "gVisor or a VM)")
        r.check(any(d["kind"] == "RuntimeClass" for k in by_kind for d in by_kind[k]) is False,
                f"{name}: the chart creates no RuntimeClass")
    return profile


PROFILES = {"default": profile_default, "full": profile_full, "openshift": profile_openshift,
            "keda": profile_keda, "policy": profile_policy, "identity": profile_identity,
            "gvisor": runtime_class("gvisor", "auto"), "kata": runtime_class("kata", "vm")}


# Each mutation weakens one property; the checks must catch every one.
def _ctr(docs):
    return next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]


def _pod(docs):
    return next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]


def _np(docs):
    return next(d for d in docs if d["kind"] == "NetworkPolicy")["spec"]


def _test_pod(docs, name):
    return next(d for d in docs if d["kind"] == "Pod" and d["spec"]["containers"][0]["name"] == name)


def _env(docs, name, value):
    next(e for e in _ctr(docs)["env"] if e["name"] == name)["value"] = value


def _admit_test_pod_only_via_namespaces(docs):
    ing = _np(docs)["ingress"][0]
    ing["from"] = [p for p in ing["from"] if "helm-test" not in str(p)]
    ing["from"][0]["namespaceSelector"] = {"matchLabels": {"mcp-exec-clients": "allowed"}}


MUTATIONS = {
    "readOnlyRootFilesystem false": lambda d: _ctr(d)["securityContext"].update(readOnlyRootFilesystem=False),
    "allowPrivilegeEscalation true": lambda d: _ctr(d)["securityContext"].update(allowPrivilegeEscalation=True),
    "capabilities drop []": lambda d: _ctr(d)["securityContext"]["capabilities"].update(drop=[]),
    "capabilities add NET_RAW": lambda d: _ctr(d)["securityContext"]["capabilities"].update(add=["NET_RAW"]),
    "privileged true": lambda d: _ctr(d)["securityContext"].update(privileged=True),
    "runAsNonRoot removed": lambda d: (_ctr(d)["securityContext"].pop("runAsNonRoot"),
                                       _pod(d)["securityContext"].pop("runAsNonRoot")),
    "runAsUser 0": lambda d: _ctr(d)["securityContext"].update(runAsUser=0),
    "seccomp Unconfined": lambda d: (_ctr(d)["securityContext"].update(seccompProfile={"type": "Unconfined"})),
    "hostUsers removed": lambda d: _pod(d).pop("hostUsers"),
    "automountServiceAccountToken true": lambda d: _pod(d).update(automountServiceAccountToken=True),
    "hostNetwork true": lambda d: _pod(d).update(hostNetwork=True),
    "hostPath volume": lambda d: _pod(d)["volumes"].append({"name": "h", "hostPath": {"path": "/"}}),
    "/tmp sizeLimit removed": lambda d: next(v for v in _pod(d)["volumes"] if v["name"] == "tmp")["emptyDir"].pop("sizeLimit"),
    "memory limit removed": lambda d: _ctr(d)["resources"]["limits"].pop("memory"),
    "memory limit below the run budget": lambda d: _ctr(d)["resources"]["limits"].update(memory="512Mi"),
    "liveness probe removed": lambda d: _ctr(d).pop("livenessProbe"),
    "readiness probe on /healthz": lambda d: _ctr(d)["readinessProbe"]["httpGet"].update(path="/healthz"),
    "grace period 300": lambda d: _pod(d).update(terminationGracePeriodSeconds=300),
    "grace period 314 (drain 310 + 5)": lambda d: _pod(d).update(terminationGracePeriodSeconds=314),
    "MCP_EXEC_MAX_DISK_MB above /tmp": lambda d: _env(d, "MCP_EXEC_MAX_DISK_MB", "300"),
    "helm test pod admitted only through clientNamespaceSelector": _admit_test_pod_only_via_namespaces,
    "isolation pod carries the client label": lambda d: _test_pod(d, "isolation")["metadata"]["labels"].update(
        {"mcp-exec-client": "true"}),
    "helm test runs a shell": lambda d: _test_pod(d, "exec")["spec"]["containers"][0].update(
        command=["/bin/sh", "-c", "true"]),
    "helm test script edited": lambda d: _test_pod(d, "exec")["spec"]["containers"][0]["command"].__setitem__(
        2, "print(1)"),
    "isolation pod removed": lambda d: d.remove(_test_pod(d, "isolation")),
    "token as a plain env value": lambda d: _ctr(d)["env"].append({"name": "MCP_EXEC_AUTH_TOKEN", "value": "x" * 32}),
    "session key as a plain env value": lambda d: next(e for e in _ctr(d)["env"] if e["name"] == "MCP_EXEC_SESSION_KEY").update(value="k" * 32) or next(e for e in _ctr(d)["env"] if e["name"] == "MCP_EXEC_SESSION_KEY").pop("valueFrom"),
    "an env name twice": lambda d: _ctr(d)["env"].append({"name": "MCP_EXEC_MAX_TIMEOUT_S", "value": "3600"}),
    "MCP_EXEC_MAX_QUEUE missing": lambda d: _ctr(d).update(env=[e for e in _ctr(d)["env"] if e["name"] != "MCP_EXEC_MAX_QUEUE"]),
    "egress allow-all": lambda d: _np(d).update(egress=[{}]),
    "egress rules dropped": lambda d: _np(d).pop("egress"),
    "policyTypes Ingress only": lambda d: _np(d).update(policyTypes=["Ingress"]),
    "ingress from anywhere": lambda d: _np(d)["ingress"][0].pop("from"),
    "ingress to every port": lambda d: _np(d)["ingress"][0].pop("ports"),
    "ingress from any pod": lambda d: _np(d)["ingress"][0].update(**{"from": [{"podSelector": {}}]}),
    "NetworkPolicy removed": lambda d: d.remove(next(x for x in d if x["kind"] == "NetworkPolicy")),
}


def self_test(files, chart_dir):
    base = load(files)
    r = Report()
    baseline = Report(quiet=True)
    run_checks(copy.deepcopy(base), "default", baseline, chart_dir)
    r.check(not baseline.failed, f"self-test: the unmodified render passes ({baseline.passed} checks)")
    for name, mutate in MUTATIONS.items():
        docs = copy.deepcopy(base)
        mutate(docs)
        rr = Report(quiet=True)
        run_checks(docs, "default", rr, chart_dir)
        r.check(bool(rr.failed), f"self-test: caught '{name}'" +
                (f" -> {rr.failed[0]}" if rr.failed else " (NOT caught)"))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", choices=sorted(PROFILES) + ["netpol"], default="default")
    ap.add_argument("--chart", help="the chart directory (to compare the helm test script)")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--env-names", action="store_true",
                    help="only check that no container of any workload has an env name twice")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.self_test:
        r = self_test(a.files, a.chart)
    elif a.env_names:
        r = Report()
        for label, spec, _meta in pod_specs(load(a.files)):
            for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
                names = [e.get("name") for e in c.get("env") or []]
                dups = sorted({n for n in names if names.count(n) > 1})
                r.check(not dups, f"{label}/{c.get('name')}: no env name twice {dups or ''}")
    else:
        r = Report()
        run_checks(load(a.files), a.profile, r, a.chart)
    print(f"checks: {r.passed} passed, {len(r.failed)} failed")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
