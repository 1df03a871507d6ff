#!/usr/bin/env python3
"""check_policy_render.py BIN RENDER.yaml [--break]

Loads the policy a chart render holds in the real binary: the ConfigMap's
policy.json and the function sources beside it are written to a temporary
directory, their in-pod paths (/var/run/mcp-exec/policy/<key>, and
credentials of egress rules and upstreams under
/var/run/secrets/mcp-exec-credentials/<secret>/<key>, which get a dummy
secret) rewritten to it, and `BIN --check-config --policy`
must accept it and print its summary. So a schema keyword the server's
validator refuses, a source that does not load, or a path the chart renders
wrong fails here, before a pod would crash-loop.

--break adds an unsupported keyword to the first function's input_schema
and expects the server to refuse it, naming the pointer: the check can fail.

Prints "ok ..." lines and exits 0, or prints why and exits 1.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

POLICY_DIR = "/var/run/mcp-exec/policy/"
CRED_DIR = "/var/run/secrets/mcp-exec-credentials/"


def policy_configmap(render):
    with open(render) as f:
        for doc in yaml.safe_load_all(f):
            if doc and doc.get("kind") == "ConfigMap" and "policy.json" in doc.get("data", {}):
                return doc["data"]
    return None


def relocate(data, tmp):
    """Writes the ConfigMap's files under tmp/policy, dummy secrets under
    tmp/credentials, and returns the policy with its paths rewritten."""
    pdir = os.path.join(tmp, "policy")
    os.mkdir(pdir)
    for key, text in data.items():
        if key != "policy.json":
            with open(os.path.join(pdir, key), "w") as f:
                f.write(text)
    policy = json.loads(data["policy.json"])
    for fn in policy.get("functions", []):
        sf = fn.get("source_file", "")
        if not sf.startswith(POLICY_DIR):
            raise SystemExit(f"FAIL function {fn.get('name')}: source_file {sf} is not in "
                             f"{POLICY_DIR}")
        fn["source_file"] = os.path.join(pdir, sf[len(POLICY_DIR):])
    for rule in policy.get("egress", []) + policy.get("upstreams", []):
        cred = rule.get("credential")
        if cred:
            sf = cred["secret_file"]
            if not sf.startswith(CRED_DIR):
                raise SystemExit(f"FAIL rule {rule['name']}: secret_file {sf} is not in {CRED_DIR}")
            path = os.path.join(tmp, "credentials", sf[len(CRED_DIR):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("dummy-secret\n")
            cred["secret_file"] = path
    return policy


def check_config(binary, policy, tmp):
    path = os.path.join(tmp, "policy", "policy.json")
    with open(path, "w") as f:
        json.dump(policy, f)
    runs = os.path.join(tmp, "runs")
    os.makedirs(runs, exist_ok=True)
    os.chmod(runs, 0o711)
    env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_PYTHON": "/usr/bin/python3",
           "MCP_EXEC_WORKDIR_BASE": runs, "MCP_EXEC_LOG_FORMAT": "text"}
    p = subprocess.run([binary, "--check-config", "--policy", path], env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def main():
    args = sys.argv[1:]
    breaking = "--break" in args
    args = [a for a in args if a != "--break"]
    if len(args) != 2:
        raise SystemExit(__doc__)
    binary, render = args
    data = policy_configmap(render)
    if data is None:
        raise SystemExit(f"FAIL {render} has no ConfigMap with policy.json")
    tmp = tempfile.mkdtemp(prefix="mcpx-k8s-policy-")
    os.chmod(tmp, 0o711)  # runs pass through it to their workdirs
    try:
        policy = relocate(data, tmp)
        if breaking:
            fn = policy["functions"][0]
            fn["input_schema"].setdefault("properties", {})["mail"] = {"type": "string",
                                                                        "format": "email"}
        rc, out = check_config(binary, policy, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = [line for line in out.splitlines() if line.startswith("policy:")]
    if breaking:
        want = "/functions/0/input_schema/properties/mail/format: unsupported keyword"
        if rc != 0 and want in out:
            print(f"ok the server refuses the render with an unsupported keyword ({want})")
            return 0
        print(f"FAIL an unsupported keyword was not refused (exit {rc}):\n{out}")
        return 1
    if rc == 0 and summary and "functions" in summary[0]:
        print(f"ok the render's policy loads in the server: {summary[0]}")
        return 0
    print(f"FAIL --check-config exit {rc}:\n{out}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
