"""mcp-exec as the MCP client of a server nobody here wrote: the official
TypeScript SDK's McpServer over Streamable HTTP (upstream_server.mjs), once
answering with event streams and once with JSON bodies. Run code calls its
tools with mcpx.call / call_raw; the credential reaches the SDK server and
not the run; the gateway (expose) forwards its results unchanged.

Usage: upstream_check.py NODE BIN (from run.sh). Prints ok/FAIL lines and
"N passed, N failed"; exits 1 on a failure."""
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
NODE, BIN = sys.argv[1], sys.argv[2]
os.environ["MCPX_BIN"] = BIN

from egress_fixture import write_policy  # noqa: E402
from mcpx_harness import Failures, StdioServer, base_env, structured  # noqa: E402

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-sdk-upstream-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")
secrets = os.path.join(tmp, "secrets")
os.mkdir(work, 0o711)
os.mkdir(secrets, 0o755)
TOKEN = "sdk-" + uuid.uuid4().hex
secret_file = os.path.join(secrets, "token")
with open(secret_file, "w") as f:
    f.write(TOKEN + "\n")
os.chmod(secret_file, 0o644)

servers = []


def start(*args):
    p = subprocess.Popen([NODE, os.path.join(HERE, "upstream_server.mjs"), *args], cwd=HERE,
                         stdout=subprocess.PIPE, text=True, env=dict(os.environ,
                                                                     UPSTREAM_TOKEN=TOKEN))
    servers.append(p)
    line = p.stdout.readline()
    return int(line.split()[1])


try:
    sse_port, json_port = start(), start("--json")
    cred = {"header": "Authorization", "secret_file": secret_file, "prefix": "Bearer "}
    policy = os.path.join(secrets, "policy.json")
    write_policy(policy, {"upstreams": [
        {"name": "sdk", "url": f"http://127.0.0.1:{sse_port}/mcp", "allow_cidrs": ["127.0.0.1/32"],
         "credential": cred, "expose": True},
        {"name": "sdkjson", "url": f"http://127.0.0.1:{json_port}/mcp",
         "allow_cidrs": ["127.0.0.1/32"], "credential": cred}],
        "exec": {"upstreams": ["sdk", "sdkjson"]}})
    s = StdioServer(base_env(MCP_EXEC_POLICY=policy, MCP_EXEC_WORKDIR_BASE=work))
    s.initialize()
    code = """
import mcpx, os, time
for _ in range(300):
    if len({t["name"].split(".")[0] for t in mcpx.tools()}) == 2:
        break
    time.sleep(0.1)
for up in ("sdk", "sdkjson"):
    print(mcpx.call(up + ".echo", text="hi " + up))
    print(mcpx.call(up + ".add", a=2, b=40))
    try:
        mcpx.call(up + ".fail")
    except mcpx.ToolError as e:
        print("toolerror", e)
    print(mcpx.call_raw(up + ".picture")["content"][0]["mimeType"])
print(sorted(t["name"] for t in mcpx.tools("adds")))
print(any("%s" in v for v in os.environ.values()))
""" % TOKEN[:12]
    sc = structured(s.call(code, timeout=120)) or {}
    out = sc.get("stdout", "").splitlines()
    want = []
    for up in ("sdk", "sdkjson"):
        want += [f"hi {up}", "{'sum': 42}", "toolerror sdk tool failed", "image/png"]
    want += ["['sdk.add', 'sdkjson.add']", "False"]
    t.check(out == want and TOKEN not in json.dumps(sc),
            "run code calls the SDK server's tools (event-stream and JSON answers): text, "
            "structured, isError, images; the credential stays out of the run", sc)
    r = s.request("tools/call", {"name": "sdk.add", "arguments": {"a": 1, "b": 2}})
    t.check(r and r.get("result") == {"content": [{"type": "text", "text": '{"sum":3}'}],
                                      "structuredContent": {"sum": 3}},
            "the gateway forwards the SDK server's result unchanged", r)
    r = s.request("tools/call", {"name": "sdk.auth_count", "arguments": {}})
    counts = structured(r) or {}
    t.check(counts.get("authorized", 0) > 0 and counts.get("refused") == 0,
            "every request reached the SDK server with the credential", counts)
    s.close()
    t.check(TOKEN not in s.stderr_text(), "the credential is not in the server's logs")
finally:
    for p in servers:
        p.kill()
        p.wait()
t.done()
