"""A hostile upstream cannot make the server big or slow (issue 34 item 3),
end to end with the real binary: an upstream that lists 50 pages of 100
tools keeps at most max_tools tools (1000 by default) and max_tools_bytes
of their text (8 MiB by default) or its own policy's caps, the listing
stops at the cap (no further pages are asked for) and the log says so
once; mcpx.tools() and the gateway list exactly what was kept; an
upstream's text that is not UTF-8 reaches the run and a gateway client
with U+FFFD in place of the bad bytes, never as raw bytes.

Before: every page was kept (5000 tools, 207 MB of server RSS for 50 pages
of 3.9 MB) and an answer's bytes reached the run as they came (the run's
json.loads failed with UnicodeDecodeError).

Runs over stdio in the warm mode MCPX_TEST_WARM selects."""
import json
import os
import time

from egress_fixture import write_policy
from hostile_upstream_fixture import HostileUpstream
from mcpx_harness import Failures, ScratchDir, StdioServer, base_env, warm_mode

t = Failures()
scratch = ScratchDir("mcpx-catalog-")
work = scratch.workdir()
policy_file = os.path.join(scratch.secrets, "policy.json")
LOCAL = ["127.0.0.1/32"]
big = HostileUpstream(pages=50, per_page=100, desc_bytes=39000)    # 3.9 MB pages
many = HostileUpstream(pages=50, per_page=100, desc_bytes=10)      # 5000 small tools
capped = HostileUpstream(pages=50, per_page=100, desc_bytes=1000)
write_policy(policy_file, {
    "upstreams": [
        {"name": "big", "url": big.url, "allow_cidrs": LOCAL},
        {"name": "many", "url": many.url, "allow_cidrs": LOCAL},
        {"name": "capped", "url": capped.url, "allow_cidrs": LOCAL, "expose": True,
         "max_tools": 25, "max_tools_bytes": 65536}],
    "exec": {"upstreams": ["big", "many", "capped"]}})
ENV = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work,
               MCP_EXEC_PRELOAD="json")
print("   warm mode:", warm_mode(ENV))

s = StdioServer(ENV)
s.initialize()
COUNT = """
import json, mcpx
tools = mcpx.tools()
by = {}
for e in tools:
    up = e["name"].split(".")[0]
    by.setdefault(up, [0, 0])
    by[up][0] += 1
    by[up][1] += len(json.dumps(e))
print(json.dumps(by))
"""


def counts():
    r = s.call(COUNT, timeout=120)
    try:
        return json.loads(r["result"]["structuredContent"]["stdout"])
    except (KeyError, TypeError, ValueError):
        return {"error": repr(r)[:300]}


deadline = time.time() + 120
by = counts()
while time.time() < deadline and not all(k in by for k in ("big", "many", "capped")):
    time.sleep(0.5)
    by = counts()
print("   kept per upstream (tools, bytes of their entries):", by)
t.check(by.get("many", [0])[0] == 1000,
        "an upstream listing 5000 tools keeps max_tools (1000 by default)", by)
t.check(0 < by.get("big", [0, 0])[0] < 1000 and by["big"][1] <= 8 << 20,
        "an upstream listing 50 pages of 3.9 MB keeps at most max_tools_bytes (8 MiB)", by)
t.check(by.get("capped", [0])[0] == 25, "an upstream's own max_tools holds", by)
t.check(big.pages_served <= 3 and many.pages_served <= 11 and capped.pages_served == 1,
        "the listing stops at the cap: no further page is asked for",
        (big.pages_served, many.pages_served, capped.pages_served))
log = s.stderr_text()
t.check(log.count("upstream many: its tool list passes max_tools (1000)") == 1 and
        "upstream big: its tool list passes" in log,
        "the log says once that a list passed its caps",
        [l for l in log.splitlines() if "passes max_tools" in l])

# The gateway lists what was kept, and nothing more.
r = s.request("tools/list")
names = [x["name"] for x in r["result"]["tools"]]
t.check(len([n for n in names if n.startswith("capped.")]) == 25 and
        not any(n.startswith("big.") or n.startswith("many.") for n in names),
        "the gateway lists the kept tools of exposed upstreams", len(names))

# Bytes that are not UTF-8 arrive as U+FFFD.
r = s.call("import mcpx\nraw = mcpx.call_raw('capped.bad_utf8')\n"
           "print(ascii(raw['content'][0]['text']), ascii(raw['structuredContent']['t']))",
           timeout=120)
out = (r or {}).get("result", {}).get("structuredContent", {}).get("stdout", "")
t.check(out.strip() == "'a\\ufffdb\\ufffd c\\ufffd\\ufffd' '\\ufffd'",
        "an upstream's invalid UTF-8 reaches the run as U+FFFD", out or r)
s.send({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "capped.bad_utf8", "arguments": {}}})
raw = b""
for _ in range(600):
    line = next((l for l in s.buf.split(b"\n") if b'"id":77' in l), None)
    if line:
        raw = line
        break
    s._pump(0.1)
try:
    raw.decode("utf-8")
    valid = True
except UnicodeDecodeError:
    valid = False
t.check(valid and b"a\xef\xbf\xbdb" in raw,
        "a gateway client receives valid UTF-8 (U+FFFD in place of the bad bytes)", raw[:300])
s.close()
for u in (big, many, capped):
    u.stop()
scratch.remove()
t.done()
