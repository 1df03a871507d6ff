#!/usr/bin/env python3
"""check_store_render.py RENDER.yaml VALUES.yaml

Checks a chart render against the workspaces block of the values file it was
rendered from, each expectation computed here from the values:

  - the server's MCP_EXEC_WORKSPACES is off, dir:/var/lib/mcp-exec/workspaces
    (pvc, emptyDir) or the values' redis.url; the caps are the values';
  - pvc: a claim of the values' size and class, ReadWriteMany when more than
    one replica can run, mounted at /var/lib/mcp-exec (kept on uninstall);
    emptyDir: a sized emptyDir there;
  - redis: the password is a file, MCP_EXEC_WORKSPACES_PASSWORD_FILE, in a
    read-only volume of the existing Secret holding only that key (0440),
    never in the environment; the NetworkPolicy's egress is exactly DNS
    (when the URL names a host) and the store's peers on its port, and
    nothing else; no other volume is writable but /tmp and the store's.

Prints "ok ..." per check, exits 1 on any failure.
"""
import json
import re
import sys

import yaml

failed = 0


def check(cond, what, got=None):
    global failed
    if cond:
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}" + (f": got {got!r}" if got is not None else ""))


def canon(x):
    return json.dumps(x, sort_keys=True)


render, values = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(render)) if d]
vals = yaml.safe_load(open(values)) or {}
w = vals.get("workspaces", {})
store = w.get("store", "off")
dep = next(d for d in docs if d["kind"] == "Deployment")
pod = dep["spec"]["template"]["spec"]
c = pod["containers"][0]
env = {e["name"]: e for e in c["env"]}
mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
vols = {v["name"]: v for v in pod.get("volumes", [])}

want = {"off": "off", "pvc": "dir:/var/lib/mcp-exec/workspaces",
        "emptyDir": "dir:/var/lib/mcp-exec/workspaces"}.get(store, w.get("redis", {}).get("url"))
check(env["MCP_EXEC_WORKSPACES"].get("value") == want, f"MCP_EXEC_WORKSPACES is {want}",
      env["MCP_EXEC_WORKSPACES"])
for var, key, default in (("MCP_EXEC_WORKSPACE_MAX_MB", "maxMb", 64),
                          ("MCP_EXEC_WORKSPACE_TTL_S", "ttlS", 86400),
                          ("MCP_EXEC_WORKSPACES_PER_CALLER", "perCaller", 32)):
    check(env[var].get("value") == str(w.get(key, default)), f"{var} is the values'", env[var])
check(not any("PASSWORD" in n and "value" in e and "FILE" not in n for n, e in env.items()),
      "no password in the environment")

# Writable mounts: /tmp and the directory store's only.
writable = sorted(p for p, m in mounts.items() if not m.get("readOnly"))
check(writable == sorted(["/tmp"] + (["/var/lib/mcp-exec"] if store in ("pvc", "emptyDir") else [])),
      "writable mounts: /tmp and the store's directory only", writable)

if store in ("pvc", "emptyDir"):
    m = mounts.get("/var/lib/mcp-exec")
    v = vols.get(m["name"]) if m else None
    check(v is not None, "the store's volume is mounted at /var/lib/mcp-exec")
    if store == "emptyDir":
        check(v and v.get("emptyDir", {}).get("sizeLimit") == str(w.get("emptyDir", {}).get("sizeLimit", "1Gi")),
              "an emptyDir of the values' size", v)
    else:
        claim = v["persistentVolumeClaim"]["claimName"] if v else None
        pvcs = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
        many = vals.get("replicaCount", 2) > 1 or vals.get("autoscaling", {}).get("enabled")
        p = w.get("pvc", {})
        if p.get("existingClaim"):
            check(claim == p["existingClaim"] and not pvcs, "the existing claim, none made")
        else:
            check(len(pvcs) == 1 and pvcs[0]["metadata"]["name"] == claim, "one claim, the mounted one")
            spec = pvcs[0]["spec"] if pvcs else {}
            mode = p.get("accessMode") or ("ReadWriteMany" if many else "ReadWriteOnce")
            check(spec.get("accessModes") == [mode], f"access mode {mode}", spec.get("accessModes"))
            check(spec.get("resources", {}).get("requests", {}).get("storage") == str(p.get("size", "10Gi")),
                  "the values' size")
            check(spec.get("storageClassName") == p.get("storageClassName") or
                  (not p.get("storageClassName") and "storageClassName" not in spec), "the values' class")
            check(pvcs and pvcs[0]["metadata"].get("annotations", {}).get("helm.sh/resource-policy") == "keep",
                  "the claim outlives an uninstall")
else:
    check(not [d for d in docs if d["kind"] == "PersistentVolumeClaim"], "no claim")

np = next((d for d in docs if d["kind"] == "NetworkPolicy" and
           d["metadata"]["name"].endswith("mcp-exec")), None)
if store == "redis":
    r = w["redis"]
    key = r.get("passwordKey", "password")
    check(env.get("MCP_EXEC_WORKSPACES_PASSWORD_FILE", {}).get("value") ==
          f"/var/run/secrets/mcp-exec-store/{key}", "the password is a file")
    m = mounts.get("/var/run/secrets/mcp-exec-store")
    v = vols.get(m["name"]) if m else {}
    sec = v.get("secret", {})
    check(m and m.get("readOnly") is True and sec.get("secretName") == r["existingSecret"] and
          sec.get("defaultMode") == 0o440 and sec.get("items") == [{"key": key, "path": key}],
          "mounted read-only (0440) from the existing Secret, that key only", v)
    host, port = re.match(r"^redis://(?:[^@/]*@)?(\[[^\]]*\]|[^:/]+)(?::(\d+))?", r["url"]).groups()
    port = int(port or 6379)
    ip = bool(re.match(r"^[0-9.]+$", host)) or host.startswith("[")
    to = r.get("networkPolicyTo") or [{"ipBlock": {"cidr": host.strip("[]") + ("/128" if ":" in host else "/32")}}]
    want_rules = [{"to": to, "ports": [{"port": port, "protocol": "TCP"}]}]
    if not ip:
        want_rules.insert(0, {"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                              "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]})
    got = (np or {}).get("spec", {}).get("egress")
    check(sorted(map(canon, got or [])) == sorted(map(canon, want_rules)),
          "NetworkPolicy egress: exactly DNS (for a host name) and the store's peers on its port", got)
elif np:
    check(np["spec"].get("egress") == [], "NetworkPolicy egress stays []", np["spec"].get("egress"))

print(f"{'FAIL' if failed else 'ok'}: store render checks")
sys.exit(1 if failed else 0)
