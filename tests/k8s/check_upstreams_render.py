#!/usr/bin/env python3
"""check_upstreams_render.py [--cilium] RENDER.yaml VALUES.yaml

Checks a chart render against the policy.upstreams of the values file it was
rendered from, each expectation computed here from the values, not read
back from the chart:

  - the policy ConfigMap's policy.json has "upstreams" equal to the values'
    entries, the chart-only networkPolicy key removed, and exec's grant;
  - each credential is a secret_file in a read-only volume of an existing
    Secret (listed in credentialSecrets), never a value in the ConfigMap;
  - the server's NetworkPolicy egress is exactly DNS plus, per upstream,
    its networkPolicy {to, ports} when given, else its url's port to its
    allow_cidrs, else that port to the public internet (one rule per
    port); with --cilium no public rule, and instead the
    CiliumNetworkPolicy admits exactly those upstreams' hosts on their port.

Prints "ok ..." per check, exits 1 on any failure.
"""
import json
import re
import sys

import yaml

CRED_DIR = "/var/run/secrets/mcp-exec-credentials/"
INTERNET = [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.168.0.0/16", "224.0.0.0/4"]}},
            {"ipBlock": {"cidr": "::/0", "except": ["::1/128", "fc00::/7", "fe80::/10", "ff00::/8"]}}]
failed = 0


def check(cond, what, got=None):
    global failed
    if cond:
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}" + (f": got {got!r}" if got is not None else ""))


def target(url):
    m = re.match(r"^([a-z]+)://([^/:]+)(?::(\d+))?", url)
    return m.group(2), int(m.group(3)) if m.group(3) else (443 if m.group(1) == "https" else 80)


def canon(rule):
    return json.dumps(rule, sort_keys=True)


args = sys.argv[1:]
cilium = "--cilium" in args
args = [a for a in args if a != "--cilium"]
render, values = args
docs = [d for d in yaml.safe_load_all(open(render)) if d]
pol = yaml.safe_load(open(values))["policy"]
ups = pol["upstreams"]

cm = next(d for d in docs if d["kind"] == "ConfigMap" and "policy.json" in d.get("data", {}))
doc = json.loads(cm["data"]["policy.json"])
want = [{k: v for k, v in u.items() if k != "networkPolicy"} for u in ups]
check(doc.get("upstreams") == want and "networkPolicy" not in cm["data"]["policy.json"],
      "policy.json's upstreams are the values' entries as written, without the chart's "
      "networkPolicy key", doc.get("upstreams"))
check(doc.get("exec", {}).get("upstreams") == pol["exec"]["upstreams"],
      "policy.json's exec grant names the upstreams", doc.get("exec"))

dep = next(d for d in docs if d["kind"] == "Deployment")
pod = dep["spec"]["template"]["spec"]
mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
for u in ups:
    cred = u.get("credential")
    if not cred:
        continue
    sf = cred["secret_file"]
    m = mounts.get(sf.rsplit("/", 1)[0], {})
    secret = (vols.get(m.get("name"), {}).get("secret") or {}).get("secretName")
    check(sf.startswith(CRED_DIR) and m.get("readOnly") is True and
          secret == sf[len(CRED_DIR):].split("/")[0] and secret in pol["credentialSecrets"] and
          set(cred) <= {"header", "secret_file", "prefix"},
          f"upstream {u['name']}: its credential is {sf}, a read-only mount of Secret {secret}, "
          "no value in the ConfigMap", (m, secret))

np = next(d for d in docs if d["kind"] == "NetworkPolicy" and
          d["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "server")
eg = np["spec"].get("egress") or []
expect = [{"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
           "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}]
public_ports, fqdns = set(), set()
for u in ups:
    host, port = target(u["url"])
    if u.get("networkPolicy"):
        expect.append({"to": u["networkPolicy"]["to"],
                       "ports": [{"port": p, "protocol": "TCP"} for p in u["networkPolicy"]["ports"]]})
    elif u.get("allow_cidrs"):
        expect.append({"to": [{"ipBlock": {"cidr": c}} for c in u["allow_cidrs"]],
                       "ports": [{"port": port, "protocol": "TCP"}]})
    else:
        public_ports.add(port)
        fqdns.add((host, str(port)))
if not cilium:
    expect += [{"to": INTERNET, "ports": [{"port": p, "protocol": "TCP"}]} for p in public_ports]
check(sorted(map(canon, eg)) == sorted(map(canon, expect)),
      "the NetworkPolicy's egress is exactly DNS and each upstream's peers and port "
      f"({len(expect) - 1} rules{', public ones left to Cilium' if cilium else ''})", eg)

cnps = [d for d in docs if d["kind"] == "CiliumNetworkPolicy"]
if cilium:
    got = {(sel.get("matchName"), p["port"]) for e in (cnps[0]["spec"]["egress"] if cnps else [])
           for sel in e.get("toFQDNs", []) for tp in e.get("toPorts", []) for p in tp["ports"]}
    check(bool(cnps) and got == fqdns,
          f"the CiliumNetworkPolicy admits exactly the public upstreams' hosts {sorted(fqdns)}", got)
else:
    check(not cnps, "no CiliumNetworkPolicy without networkPolicy.cilium.enabled")
sys.exit(1 if failed else 0)
