"""Numbers travel exactly (issue 34 item 1), end to end with the real binary:
0.30000000000000004, 9007199254740991, 1.7976931348623157e308, -0.0, a
subnormal and an integer above 2^53 (and 1.0), through

  - the gateway: an upstream's result (structuredContent and its text block,
    which must agree) and its tool schemas reach the MCP client as the
    upstream's own bytes, and a client's arguments reach the upstream as
    the client's bytes;
  - mcpx.call: the run gets the upstream's values exactly, whole or with
    call_raw, and its arguments reach the upstream as the run wrote them;
  - a function: its arguments reach the handler exactly, and its result
    reaches the client (or a run's mcpx.call) as the function's own bytes.
    An argument that is an integer of 2^53 or more is refused by the
    function's schema validation, as before (docs/policy.md: its keywords
    compare doubles); in its result such an integer travels exactly.

Before: cJSON printed 15 significant digits (0.3, 9.00719925474099e+15, a
number that reads back as Infinity) and lost integers above 2^53 when it
parsed them.

Runs over stdio (the gateway, runs) and Streamable HTTP (a function), in the
warm mode MCPX_TEST_WARM selects."""
import json
import os
import re
import time

from egress_fixture import write_policy
from mcp_upstream_fixture import NUMBERS, McpUpstream
from mcpx_harness import (Failures, HttpServer, McpHttpClient, ScratchDir, StdioServer, base_env,
                          warm_mode)

t = Failures()
scratch = ScratchDir("mcpx-numbers-")
work = scratch.workdir()
policy_file = os.path.join(scratch.secrets, "policy.json")
up = McpUpstream()
# The values as Python reads them, and as a Python program writes them.
VALUES = json.loads(NUMBERS)["values"]
PY_VALUES = json.dumps(VALUES, separators=(",", ":"))
# The arguments' numbers as a client spells them (not as Python would).
ARG_TEXT = ("[0.30000000000000004,9007199254740991,1.7976931348623157e308,-0.0,"
            "4.9406564584124654e-324,18446744073709551617,1.0]")
# A function's arguments: the same but for the integer above 2^53.
FN_ARG_TEXT = ("[0.30000000000000004,9007199254740991,1.7976931348623157e308,-0.0,"
               "4.9406564584124654e-324,1.0]")
FN_OWN = json.dumps([0.30000000000000004, 9007199254740991, 1.7976931348623157e308, -0.0,
                     5e-324, 18446744073709551617], separators=(",", ":"))

fn_source = os.path.join(scratch.secrets, "nums.py")
with open(fn_source, "w") as f:
    f.write("def handler(args, ctx):\n"
            "    return {'got': args['values'], 'own': [0.30000000000000004, 9007199254740991,\n"
            "            1.7976931348623157e308, -0.0, 5e-324, 18446744073709551617]}\n")
os.chmod(fn_source, 0o644)
write_policy(policy_file, {
    "upstreams": [{"name": "nums", "url": up.url, "allow_cidrs": ["127.0.0.1/32"],
                   "expose": True}],
    "exec": {"upstreams": ["nums"]},
    "functions": [{"name": "nums", "description": "Echoes numbers.",
                   "input_schema": {"type": "object",
                                    "properties": {"values": {"type": "array"}}},
                   "source_file": fn_source, "callable_from_exec": True}]})
ENV = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work,
               MCP_EXEC_PRELOAD="json")
print("   warm mode:", warm_mode(ENV))


def raw_request(srv, rid, method, params):
    """Sends one request as text and returns the raw line of its answer."""
    srv.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method})[:-1] +
             ', "params": ' + params + "}")
    want = ('"id":%d,' % rid).encode()
    for _ in range(600):
        for line in srv.buf.split(b"\n")[:-1]:
            if want in line and (b'"result"' in line or b'"error"' in line):
                return line
        srv._pump(0.1)
    return b""


def stdout(resp):
    try:
        return resp["result"]["structuredContent"]["stdout"]
    except (KeyError, TypeError):
        return repr(resp)


s = StdioServer(ENV)
s.initialize()
# The gateway's tools are there once the upstream has answered (item 7
# makes that the first list); wait for them here either way.
for i in range(300):
    if b'"nums.numbers"' in raw_request(s, 10000 + i, "tools/list", "{}"):
        break
    time.sleep(0.1)

# ---- the gateway ----
line = raw_request(s, 9001, "tools/call", '{"name": "nums.numbers", "arguments": {}}')
t.check(b'"structuredContent":' + NUMBERS.encode() in line,
        "a gateway result's structuredContent is the upstream's own bytes", line[:400])
t.check(b'"text":' + json.dumps(NUMBERS).encode() in line,
        "and so is its text block", line[:400])
res = json.loads(line)["result"]
t.check(json.loads(res["content"][0]["text"]) == res["structuredContent"] == json.loads(NUMBERS),
        "the text block and structuredContent agree", res)

line = raw_request(s, 9002, "tools/list", "{}")
schema = next((x["inputSchema"] for x in json.loads(line)["result"]["tools"]
               if x["name"] == "nums.numbers"), None)
own = next(x["inputSchema"] for x in __import__("mcp_upstream_fixture").TOOLS
           if x["name"] == "numbers")
t.check(json.dumps(own, separators=(",", ":")).encode() in line and schema == own,
        "an upstream's tool schema reaches the client with its numbers' bytes",
        (line[:600], json.dumps(own, separators=(",", ":"))))

del up.raw_bodies[:]
raw_request(s, 9003, "tools/call",
            '{"name": "nums.echo_args", "arguments": {"values": ' + ARG_TEXT + '}}')
sent = b"".join(up.raw_bodies)
t.check(b'"arguments":{"values":' + ARG_TEXT.encode() + b"}" in sent,
        "a gateway client's arguments reach the upstream as the client's bytes", sent[-400:])

# ---- mcpx.call from a run ----
code = f"""
import json, mcpx
r = mcpx.call("nums.numbers")
print(json.dumps(r["values"], separators=(",", ":")))
raw = mcpx.call_raw("nums.numbers")
print(json.dumps(raw["structuredContent"]["values"], separators=(",", ":")))
print(json.dumps(json.loads(raw["content"][0]["text"])["values"], separators=(",", ":")))
got = mcpx.call("nums.echo_args", values={PY_VALUES})
print(json.dumps(got["values"], separators=(",", ":")))
fn = mcpx.call("nums", values=json.loads({FN_ARG_TEXT!r}))
print(json.dumps(fn["own"], separators=(",", ":")))
print(json.dumps(fn["got"], separators=(",", ":")))
"""
del up.raw_bodies[:]
out = stdout(s.call(code, timeout=120)).splitlines()
t.check(out[:3] == [PY_VALUES] * 3,
        "mcpx.call and call_raw give the run the upstream's values exactly", (out, PY_VALUES))
t.check(out[3:4] == [PY_VALUES],
        "an upstream's echo of a run's arguments comes back exactly", out)
t.check(out[4:6] == [FN_OWN, json.dumps(json.loads(FN_ARG_TEXT), separators=(",", ":"))],
        "a function called with mcpx.call gets its arguments and returns its result exactly",
        (out, FN_OWN))
sent = b"".join(b for b in up.raw_bodies if b'"echo_args"' in b)
t.check(b'"values":' + PY_VALUES.encode() in sent,
        "a run's mcpx.call arguments reach the upstream as the run wrote them", sent[-400:])
s.close()

# ---- a function, over HTTP ----
h = HttpServer(ENV)
c = McpHttpClient(h)
c.initialize()
body = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nums",'
        '"arguments":{"values":' + FN_ARG_TEXT + '}}}')
st, hdrs, raw = h.request("POST", "/mcp", body, c.headers(), 120)
t.check(st == 200 and ('"own":' + FN_OWN).encode() in raw,
        "a function's result reaches the client as the function's own bytes", (st, raw[:600]))
fn_got = json.dumps(json.loads(FN_ARG_TEXT), separators=(",", ":"))
t.check(('"got":' + fn_got).encode() in raw,
        "a function's arguments reach its handler exactly (and come back)", (raw[:600], fn_got))
msg = next((json.loads(l[5:]) for l in raw.split(b"\n") if l.startswith(b"data:")), None) \
    if raw.startswith(b"event:") or raw.startswith(b"data:") else json.loads(raw)
res = (msg or {}).get("result", {})
t.check(json.loads(res.get("content", [{}])[0].get("text", "null")) ==
        res.get("structuredContent") and res.get("structuredContent") is not None,
        "a function's text block and structuredContent agree", res)
h.stop()
scratch.remove()
t.done()
