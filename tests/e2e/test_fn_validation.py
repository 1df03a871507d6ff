"""Function argument validation does not run on the server's loop, and the
run whose mcpx.call caused it pays for it (issue 21 C).

A function's input schema holds a pattern that backtracks on every item of
an array, so validating one call's arguments runs until the validator's own
CPU limit (MCPX_SCHEMA_CPU_LIMIT_MS, 250 ms) stops it. Two checks, neither
timed:
- three such tools/call and a ping written at once: the ping is answered
  before the three refusals (on the loop, the three validations came first);
- a run that makes eight such mcpx.call, using some tens of ms of CPU
  itself, has at least 8 x 250 ms in its cpu_ms (before, the loop did the
  work for free).
"""
import json
import os

from egress_fixture import write_policy
from mcpx_harness import Failures, ScratchDir, StdioServer, base_env, structured, warm_mode

t = Failures()
scratch = ScratchDir("mcpx-fnval-")
work = scratch.workdir()
admin = scratch.secrets
src = os.path.join(admin, "slow.py")
with open(src, "w") as f:
    f.write("def handler(args, ctx):\n    return {'n': len(args['items'])}\n")
policy_file = os.path.join(admin, "policy.json")
SCHEMA = {"type": "object", "required": ["items"],
          "properties": {"items": {"type": "array",
                                   "items": {"type": "string", "pattern": "^(\\w+\\s?)*$"}}}}
write_policy(policy_file, {"functions": [
    {"name": "slow", "description": "Validation that costs.", "input_schema": SCHEMA,
     "source_file": src, "callable_from_exec": True}]})
ITEMS = ["a" * 26 + "!"] * 4000
LIMIT_MS = 250
CALLS = 8

env = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work, MCP_EXEC_CPU_S=60)
s = StdioServer(env)
s.initialize()
if warm_mode(env) == "fork-server":
    t.check(s.wait_fork_server(), "the fork server's zygote became ready")

# Three expensive validations and a ping, in one write.
lines = []
for i in range(3):
    lines.append(json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                             "params": {"name": "slow", "arguments": {"items": ITEMS}}}))
lines.append(json.dumps({"jsonrpc": "2.0", "id": 200, "method": "ping"}))
s.send("\n".join(lines))
order = []
while len(order) < 4:
    m = s.recv(timeout=120)
    if m is None:
        break
    if m.get("id") in (100, 101, 102, 200):
        order.append(m["id"])
        if m["id"] == 100:
            first = m
print("   answers in order:", order)
t.check(len(order) == 4 and order[0] == 200,
        "a ping written after three costly tools/call is answered before them "
        "(validation is off the loop)", order)
text = (first.get("result") or {}).get("content", [{}])[0].get("text", "") if order else ""
t.check("invalid arguments" in text and first["result"].get("isError") is True,
        "an argument the validator gives up on is still a tool error", text[:300])

CODE = f"""
import mcpx, time
items = {ITEMS[:1]!r} * {len(ITEMS)}
errors = 0
for i in range({CALLS}):
    try:
        mcpx.call("slow", items=items)
    except mcpx.ToolError as e:
        errors += "invalid arguments" in str(e)
print(errors, round(time.process_time() * 1000))
"""
sc = structured(s.call(CODE, timeout=300, timeout_s=120))
out = (sc or {}).get("stdout", "").split()
own_ms = int(out[1]) if len(out) == 2 else None
print("   caller cpu_ms", sc and sc.get("cpu_ms"), "its own process", own_ms)
t.check(len(out) == 2 and out[0] == str(CALLS), "each mcpx.call was refused as invalid", sc)
# The run's own process uses some tens of ms; only the charge makes this.
t.check(own_ms is not None and own_ms < CALLS * LIMIT_MS and sc["cpu_ms"] >= CALLS * LIMIT_MS,
        "the calling run's cpu_ms includes the validation its calls caused",
        sc and (sc.get("cpu_ms"), own_ms))

t.check(s.close() == 0, "the server exits cleanly", s.stderr_text()[-2000:])
scratch.remove()
t.done()
