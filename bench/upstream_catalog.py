"""What a hostile upstream's tool list costs the server (issue 34 item 3):
one upstream lists 50 pages of 100 tools with 39 KB descriptions (3.9 MB
per page); the script prints the server's VmRSS once the list is in (and
after 2 s of quiet, when the heap trim has run), the longest /healthz
answer time while the list arrived and while runs called mcpx.tools() ten
times, the tools mcpx.tools() saw, and that call's time in the run.

    MCPX_BIN=build/mcp-exec /usr/bin/python3 bench/upstream_catalog.py

Prints numbers only; compare two builds by running it with each.
"""
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from hostile_upstream_fixture import HostileUpstream  # noqa: E402

BIN = os.environ.get("MCPX_BIN", "build/mcp-exec")
up = HostileUpstream(pages=50, per_page=100, desc_bytes=39000)
tmp = tempfile.mkdtemp(prefix="mcpx-bench-catalog-")
os.chmod(tmp, 0o755)
policy = os.path.join(tmp, "policy.json")
with open(policy, "w") as f:
    json.dump({"upstreams": [{"name": "big", "url": up.url, "allow_cidrs": ["127.0.0.1/32"]}],
               "exec": {"upstreams": ["big"]}}, f)
os.chmod(policy, 0o644)
work = os.path.join(tmp, "work")
os.mkdir(work, 0o711)
env = dict(os.environ, MCP_EXEC_POLICY=policy, MCP_EXEC_WORKDIR_BASE=work,
           MCP_EXEC_TRANSPORT="http", MCP_EXEC_ADDR="127.0.0.1:0", MCP_EXEC_AUTH_TOKEN="t" * 32,
           MCP_EXEC_PRELOAD="json")
p = subprocess.Popen([BIN], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE, env=env)
err = b""
port = None
while port is None:
    line = p.stderr.readline()
    if not line:
        sys.exit("server did not start")
    err += line
    m = re.search(rb"listening on http://[^:]+:(\d+)", err)
    port = int(m.group(1)) if m else None
threading.Thread(target=lambda: [None for _ in iter(p.stderr.readline, b"")], daemon=True).start()


def rss_mb():
    with open(f"/proc/{p.pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS")).split()[1]) / 1024


worst = [0.0]
stop = threading.Event()


def poll_healthz():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        t0 = time.monotonic()
        c.request("GET", "/healthz")
        c.getresponse().read()
        worst[0] = max(worst[0], time.monotonic() - t0)
        time.sleep(0.01)


def mcp(body, sid=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "X-MCP-AUTH": "t" * 32, "Host": f"127.0.0.1:{port}"}
    if sid:
        h.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
    c.request("POST", "/mcp", json.dumps(body), h)
    r = c.getresponse()
    data = r.read()
    return r.getheader("Mcp-Session-Id"), data


sid, _ = mcp({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}})
mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
poller = threading.Thread(target=poll_healthz, daemon=True)
poller.start()
code = ("import time, mcpx\nt = time.monotonic()\nn = len(mcpx.tools())\n"
        "print(n, round((time.monotonic() - t) * 1000, 1))")
seen = "0"
deadline = time.time() + 300
while time.time() < deadline:
    _, data = mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "exec", "arguments": {"code": code, "timeout_s": 120}}}, sid)
    m = re.search(rb'"stdout":"(\d+) ([\d.]+)', data)
    seen = m.group(1).decode() if m else "?"
    if seen not in ("0", "?"):
        break
    time.sleep(0.2)
print("pages served:", up.pages_served)
print("tools seen by mcpx.tools():", seen)
print("server VmRSS with the list in: %.1f MiB" % rss_mb())
print("longest /healthz while the list arrived: %.0f ms" % (worst[0] * 1000))
worst[0] = 0.0
times = []
for i in range(10):
    _, data = mcp({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                   "params": {"name": "exec", "arguments": {"code": code, "timeout_s": 120}}}, sid)
    m = re.search(rb'"stdout":"(\d+) ([\d.]+)', data)
    times.append(float(m.group(2)) if m else -1)
print("mcpx.tools() in the run, ms (10 calls): min %.1f median %.1f max %.1f" %
      (min(times), sorted(times)[5], max(times)))
print("longest /healthz during those calls: %.0f ms" % (worst[0] * 1000))
time.sleep(2)
print("server VmRSS after 2 s quiet: %.1f MiB" % rss_mb())
stop.set()
p.terminate()
p.wait(timeout=60)
up.stop()
