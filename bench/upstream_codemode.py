#!/usr/bin/env python3
"""Code mode against calling tools one by one (issue 24): a task that needs
N upstream calls (fetch N records, return one aggregate), done two ways
against the same upstream MCP server (tests/e2e/mcp_upstream_fixture.py,
its `record` tool, ~2 KB of structuredContent plus the same JSON as text),
through the same mcp-exec over stdio:

  direct     the agent's client calls the exposed tool fx.record N times
             (the gateway) and aggregates itself: it receives every record
  code mode  one exec call whose code calls mcpx.call("fx.record") N times
             and prints the aggregate: the agent receives one small result

Prints, for each way and round, the bytes of JSON-RPC the client received
and the wall time, then medians.

  /usr/bin/python3 bench/upstream_codemode.py            # build/mcp-exec, N=20, ROUNDS=5
  N=50 ROUNDS=3 MCPX_BIN=/path/mcp-exec /usr/bin/python3 bench/upstream_codemode.py

Only the standard library; all traffic on 127.0.0.1.
"""
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
os.environ.setdefault("MCPX_BIN", os.path.join(HERE, "..", "build", "mcp-exec"))

from egress_fixture import write_policy  # noqa: E402
from mcp_upstream_fixture import McpUpstream  # noqa: E402
from mcpx_harness import StdioServer, base_env  # noqa: E402

N = int(os.environ.get("N", "20"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))

up = McpUpstream()
tmp = tempfile.mkdtemp(prefix="mcpx-bench-upstream-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")
secrets = os.path.join(tmp, "secrets")
os.mkdir(work, 0o711)
os.mkdir(secrets, 0o755)
policy = os.path.join(secrets, "policy.json")
write_policy(policy, {"upstreams": [{"name": "fx", "url": up.url, "allow_cidrs": ["127.0.0.1/32"],
                                     "expose": True, "max_calls_per_run": 1000}],
                      "exec": {"upstreams": ["fx"]}})
s = StdioServer(base_env(MCP_EXEC_POLICY=policy, MCP_EXEC_WORKDIR_BASE=work,
                         MCP_EXEC_LOG_FORMAT="text"))
s.initialize()
deadline = time.time() + 60
while time.time() < deadline:
    tools = s.request("tools/list")["result"]["tools"]
    if any(t["name"] == "fx.record" for t in tools):
        break
    time.sleep(0.2)
s.wait_fork_server()

received = 0
_recv = s.recv


def counting_recv(timeout=30):
    """Counts the bytes of each message the client reads."""
    global received
    m = _recv(timeout)
    if m is not None:
        received += len(json.dumps(m, separators=(",", ":")))
    return m


s.recv = counting_recv

CODE = """
import mcpx
total = 0.0
by_customer = {}
for i in range(%d):
    r = mcpx.call("fx.record", id=i)
    total += r["amount"]
    by_customer[r["customer"]] = by_customer.get(r["customer"], 0) + 1
print(round(total, 2), len(by_customer))
""" % N


def direct():
    total, customers = 0.0, set()
    for i in range(N):
        r = s.request("tools/call", {"name": "fx.record", "arguments": {"id": i}})
        if not r or "result" not in r:
            raise SystemExit("direct call failed: %r %s" % (r, s.stderr_text()[-2000:]))
        rec = r["result"]["structuredContent"]
        total += rec["amount"]
        customers.add(rec["customer"])
    return "%s %d" % (round(total, 2), len(customers))


def code_mode():
    r = s.request("tools/call", {"name": "exec", "arguments": {"code": CODE}})
    return r["result"]["structuredContent"]["stdout"].strip()


results = {"direct": [], "code mode": []}
for rnd in range(ROUNDS):
    for name, fn in (("direct", direct), ("code mode", code_mode)):
        received = 0
        t0 = time.perf_counter()
        answer = fn()
        ms = (time.perf_counter() - t0) * 1000
        results[name].append((received, ms))
        print(f"round {rnd + 1} {name:9s} N={N}: {received:7d} bytes received, {ms:7.1f} ms, "
              f"answer {answer}")
print()
print(f"medians over {ROUNDS} rounds, N={N}:")
for name, rows in results.items():
    print(f"  {name:9s} {statistics.median(b for b, _ in rows):8.0f} bytes "
          f"{statistics.median(m for _, m in rows):8.1f} ms")
s.close()
