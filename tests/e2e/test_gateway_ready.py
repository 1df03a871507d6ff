"""Gateway tools are there from the first list (issue 34 item 7), end to end
with the real binary: with exposed upstreams, a tools/list sent right
after initialize waits until every exposed upstream has answered or
failed once, at most its timeout_s, and then lists their tools; /readyz
says 503 ("waiting for upstream ...") meanwhile; an upstream that never
answers holds the list no longer than its timeout_s and is left out (the
log says so). An upstream's progress of a gateway call reaches the client
that asked for progress (with the client's own token; the upstream gets a
token of the server's), and nothing is asked of the upstream when the
client did not ask.

Before: the first tools/list showed only exec (the catalogue arrived
0.2-0.5 s later), /readyz never waited, and progress stayed upstream.

Runs over stdio and HTTP in the warm mode MCPX_TEST_WARM selects."""
import json
import os
import threading
import time

from egress_fixture import closed_port, write_policy
from mcp_upstream_fixture import McpUpstream
from mcpx_harness import Failures, HttpServer, ScratchDir, StdioServer, base_env, warm_mode

t = Failures()
scratch = ScratchDir("mcpx-gwready-")
work = scratch.workdir()
policy_file = os.path.join(scratch.secrets, "policy.json")
LOCAL = ["127.0.0.1/32"]
held = threading.Event()
slow = McpUpstream(init_gate=held)          # answers initialize once released
mute = McpUpstream(init_gate=threading.Event())  # never answers
quick = McpUpstream()
write_policy(policy_file, {"upstreams": [
    {"name": "slow", "url": slow.url, "allow_cidrs": LOCAL, "expose": True, "timeout_s": 120},
    {"name": "mute", "url": mute.url, "allow_cidrs": LOCAL, "expose": True, "timeout_s": 1},
    {"name": "dead", "url": f"http://127.0.0.1:{closed_port()}/mcp", "allow_cidrs": LOCAL,
     "expose": True},
    {"name": "quick", "url": quick.url, "allow_cidrs": LOCAL, "expose": True}]})
ENV = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work)
print("   warm mode:", warm_mode(ENV))


def names(resp):
    return sorted(x["name"] for x in ((resp or {}).get("result") or {}).get("tools", []))


# ---- HTTP: /readyz waits too ----
h = HttpServer(ENV)
st, _, body = h.request("GET", "/readyz")
t.check(st == 503 and b"waiting for upstream slow" in body,
        "/readyz is 503 while an exposed upstream has not answered", (st, body))

# ---- stdio: the first tools/list ----
s = StdioServer(ENV)
s.initialize()
s.send({"jsonrpc": "2.0", "id": 500, "method": "tools/list"})
early = None
for _ in range(5):
    early = s.recv(0.1)
    if early and early.get("id") == 500:
        break
t.check(not (early and early.get("id") == 500),
        "the first tools/list waits while an exposed upstream has not answered", early)
held.set()
first = s.wait_for(500, timeout=120)
got = names(first)
t.check("slow.echo" in got and "quick.echo" in got and "exec" in got,
        "the first tools/list has the gateway's tools", got)
t.check(not any(n.startswith("mute.") or n.startswith("dead.") for n in got),
        "upstreams that did not answer (in their timeout_s) or failed are left out", got)
t.check("upstream mute: no answer within its timeout_s (1 s)" in s.stderr_text(),
        "the log names the upstream that ran out of time", s.stderr_text()[-600:])

deadline = time.time() + 60
while time.time() < deadline and h.request("GET", "/readyz")[0] != 200:
    time.sleep(0.1)
st, _, body = h.request("GET", "/readyz")
t.check(st == 200, "/readyz is 200 once every exposed upstream answered or failed", (st, body))
h.stop()

# ---- progress of a gateway call ----
s.notes.clear()
r = s.request("tools/call", {"name": "quick.progress", "arguments": {},
                             "_meta": {"progressToken": "tok-1"}}, timeout=120)
prog = [n["params"] for n in s.notes if n.get("method") == "notifications/progress"]
t.check(r and r["result"]["content"][0]["text"] == "done" and
        [p.get("progressToken") for p in prog] == ["tok-1"] * 3 and
        [p.get("progress") for p in prog] == [1, 2, 3] and prog[0].get("message") == "step 1",
        "an upstream's progress reaches the client that asked, with its token", (r, prog))
t.check(quick.progress_tokens and quick.progress_tokens[-1] not in (None, "tok-1"),
        "the upstream is asked with a token of the server's", quick.progress_tokens)
s.notes.clear()
r = s.request("tools/call", {"name": "quick.progress", "arguments": {}}, timeout=120)
t.check(r and not any(n.get("method") == "notifications/progress" for n in s.notes) and
        quick.progress_tokens[-1] is None,
        "without a progressToken nothing is asked of the upstream or sent", quick.progress_tokens)
s.close()
mute.init_gate.set()
scratch.remove()
t.done()
