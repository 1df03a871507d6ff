"""MCP tasks on one server with the directory store, both protocol
generations, against the real binary.

2025-11-25 sessions: the tasks capability (list only for an authenticated
caller), execution.taskSupport on exec and on functions (the policy's
task_support), a tools/call with task answered at once with a
CreateTaskResult, tasks/get while working and when done, tasks/result waiting
for the end and returning exactly what a direct call returns (plus
related-task _meta), a tool error as status "failed", tasks/list, tasks/cancel
(the run killed, a second cancel -32602), a forbidden tool's task -32601 and a
required tool's direct call -32601, the audit line naming the task, another
caller getting exactly the unknown-id answer; the caps: the oldest finished
task dropped past MCP_EXEC_TASKS_PER_CALLER, no new task when all are
working, a result larger than MCP_EXEC_TASKS_MAX_MB failing its task;
notifications/tasks/status on stdio.

2026-07-28 requests: the extension in server/discover, a quick call answered
directly and a long one as a task (server-directed), tasks/get inlining the
result, tasks/cancel and tasks/update acknowledged, no tasks/result nor
tasks/list (-32601), -32021 without the extension (and for a required tool),
Mcp-Name checked against taskId.

Older sessions (2025-06-18) see no change; MCP_EXEC_TASKS=off turns tasks
off. Runs in the warm mode MCPX_TEST_WARM selects (auto, cold)."""
import json
import os
import time

from mcpx_harness import (Failures, HttpServer, NamedTokens, ScratchDir, StdioServer, base_env,
                          structured, write_policy)
from tasks_fixture import EXT, RELATED, V1, V2

t = Failures()
scratch = ScratchDir("mcpx-tasks-")
work = scratch.workdir()
store = os.path.join(scratch.path, "store")
tokens = NamedTokens(os.path.join(scratch.secrets, "tokens.json"),
                     ["alice", "bob", "carol", "dave"])
tokens.write(["alice", "bob", "carol", "dave"])

SOURCES = {
    "slow.py": "import time\ndef handler(args, ctx):\n    time.sleep(args['seconds'])\n"
               "    return {'slept': args['seconds']}\n",
    "never.py": "def handler(args, ctx):\n    return {'ok': True}\n",
    "must.py": "def handler(args, ctx):\n    return {'ok': True}\n",
    "big.py": "def handler(args, ctx):\n    return {'blob': 'x' * 700000}\n",
}
for name, src in SOURCES.items():
    scratch.secret(name, src)


def fn(name, src, support, props=None):
    d = {"name": name, "description": f"{name} for the tasks tests",
         "input_schema": {"type": "object", "properties": props or {},
                          "additionalProperties": False},
         "source_file": os.path.join(scratch.secrets, src), "timeout_s": 60}
    if support:
        d["task_support"] = support
    return d


policy = os.path.join(scratch.secrets, "policy.json")
write_policy(policy, {"functions": [
    fn("slow", "slow.py", None, {"seconds": {"type": "number"}}),
    fn("never", "never.py", "forbidden"),
    fn("must", "must.py", "required"),
    fn("big", "big.py", "optional"),
]})
ENV = {"MCP_EXEC_AUTH_TOKENS_FILE": tokens.path, "MCP_EXEC_POLICY": policy,
       "MCP_EXEC_WORKDIR_BASE": work, "MCP_EXEC_WORKSPACES": "dir:" + store,
       "MCP_EXEC_TASK_SYNC_MS": 1000}
srv = HttpServer(ENV)
# The caps on a server of their own (its callers' tasks only).
caps_srv = HttpServer(dict(ENV, MCP_EXEC_TASKS_PER_CALLER=3, MCP_EXEC_TASKS_MAX_MB=1))

# ---- 2025-11-25: negotiation -------------------------------------------------
alice = V1(srv, tokens.tokens["alice"])
caps = alice.init["result"]["capabilities"]
t.check(caps.get("tasks") == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "2025-11-25 initialize: tasks capability with list, cancel and requests.tools.call", caps)
tools = {x["name"]: x for x in alice.rpc("tools/list")["result"]["tools"]}
t.check(tools["exec"].get("execution") == {"taskSupport": "optional"},
        "tools/list: exec has execution.taskSupport optional", tools["exec"].get("execution"))
t.check([tools[n].get("execution", {}).get("taskSupport") for n in ("slow", "never", "must")]
        == ["optional", "forbidden", "required"],
        "tools/list: functions show the policy's task_support (default optional)",
        [tools[n].get("execution") for n in ("slow", "never", "must")])

# ---- a task: created at once, polled, its result -----------------------------
CODE = "import time\nprint('begin', flush=True)\ntime.sleep(2)\nprint(6 * 7)"
direct = alice.call(code=CODE)
task, raw = alice.start(CODE, ttl=1000)
t.check(task and task["status"] == "working" and len(task["taskId"]) == 32,
        "tools/call with task: CreateTaskResult with a working task", raw)
t.check(task and task["ttl"] == 60000 and task["pollInterval"] >= 1
        and task["createdAt"].endswith("Z") and "T" in task["createdAt"],
        "a ttl under a minute is raised to one; pollInterval; ISO 8601 createdAt", task)
tid = task["taskId"] if task else "0" * 32
g = alice.get(tid)["result"]
t.check(g["status"] == "working" and g["taskId"] == tid, "tasks/get while it runs: working", g)
res = alice.rpc("tasks/result", {"taskId": tid})
r, d = res.get("result", {}), direct.get("result", {})
t.check(r.get("_meta", {}).get(RELATED) == {"taskId": tid},
        "tasks/result waits for the end, then carries related-task _meta", res)
strip = lambda x: {k: v for k, v in x.get("structuredContent", {}).items()
                   if k not in ("duration_ms", "cpu_ms", "max_rss_kb")}
t.check(strip(r) == strip(d) and r.get("isError") is False and len(r["content"]) ==
        len(d["content"]) and structured(res)["stdout"] == "begin\n42\n",
        "tasks/result is what a direct call returns (timings aside)", (r, d))
g = alice.get(tid)["result"]
t.check(g["status"] == "completed" and g["lastUpdatedAt"] >= g["createdAt"],
        "tasks/get after the end: completed", g)
audit = [a for a in srv.audit_lines() if a.get("task_id") == tid]
t.check(len(audit) == 1 and audit[0]["status"] == "ok" and audit[0]["caller"] == "alice",
        "the run's audit line names the task", audit)

# ---- files and pictures come back the same way --------------------------------
PLOT = ("import os\nos.makedirs('out', exist_ok=True)\nopen('out/a.txt','w').write('hi')\n"
        "import matplotlib.pyplot as plt\nplt.plot([1,2])\nplt.show()\nprint('done')")
task, _ = alice.start(PLOT)
res = alice.rpc("tasks/result", {"taskId": task["taskId"]}) if task else {}
kinds = sorted(b["type"] for b in res.get("result", {}).get("content", []))
t.check(kinds == ["image", "resource", "text"] and structured(res)["stdout"] == "done\n",
        "out/ files and a plt.show() picture come back through tasks/result", kinds)

# ---- workspaces come back the same way ------------------------------------------
task, _ = alice.start("import os\nx = 41\nopen('kept.txt', 'w').write('k')\nprint('saved')",
                      workspace="tw")
res = alice.rpc("tasks/result", {"taskId": task["taskId"]}) if task else {}
ws = (structured(res) or {}).get("workspace", {})
t.check(ws.get("name") == "tw" and ws.get("saved") is True and "x" in ws.get("variables", []),
        "a task's run saves its workspace, reported in its result as for a direct call", res)
after = alice.call(code="print(x + 1, open('kept.txt').read())", workspace="tw")
t.check(structured(after).get("stdout") == "42 k\n",
        "the next (direct) call finds the task's variables and files", after)

# ---- a tool error: "failed", the result is the isError one --------------------
task, _ = alice.start("   ")
last, _ = alice.wait(task["taskId"]) if task else (None, None)
t.check(last and last["status"] == "failed" and "code" in last.get("statusMessage", ""),
        "a tool error (blank code) makes the task failed with a statusMessage", last)
res = alice.rpc("tasks/result", {"taskId": task["taskId"]}) if task else {}
t.check(res.get("result", {}).get("isError") is True,
        "tasks/result of that task: the isError result a direct call returns", res)

# ---- cancel --------------------------------------------------------------------
task, _ = alice.start("import time\ntime.sleep(60)", timeout_s=120)
ctid = task["taskId"] if task else "0" * 32
time.sleep(0.5)
c = alice.rpc("tasks/cancel", {"taskId": ctid})
t.check(c.get("result", {}).get("status") == "cancelled", "tasks/cancel: the task, cancelled", c)
t.check(alice.get(ctid)["result"]["status"] == "cancelled", "tasks/get after cancel: cancelled")
c2 = alice.rpc("tasks/cancel", {"taskId": ctid})
t.check(c2.get("error", {}).get("code") == -32602, "cancelling a cancelled task: -32602", c2)
aud = [a for a in srv.audit_lines() if a.get("task_id") == ctid]
t.check(len(aud) == 1 and aud[0]["status"] == "cancelled" and aud[0]["wall_ms"] < 60000,
        "the cancelled task's run was killed (its audit line)", aud)
res = alice.rpc("tasks/result", {"taskId": ctid})
t.check(res.get("error", {}).get("code") == -32000, "tasks/result of a cancelled task: an error",
        res)

# ---- tasks/list ------------------------------------------------------------------
lst = alice.rpc("tasks/list", {})["result"]["tasks"]
ids = [x["taskId"] for x in lst]
t.check(ctid in ids and all(x["createdAt"] >= y["createdAt"] for x, y in zip(lst, lst[1:])),
        "tasks/list: the caller's tasks, newest first", ids)
bad = alice.rpc("tasks/list", {"cursor": "nope"})
t.check(bad.get("error", {}).get("code") == -32602, "tasks/list with an unknown cursor: -32602",
        bad)

# ---- task support -------------------------------------------------------------------
r = alice.call("never", task={})
t.check(r.get("error", {}).get("code") == -32601, "a forbidden tool's task: -32601", r)
r = alice.call("must")
t.check(r.get("error", {}).get("code") == -32601, "a required tool called directly: -32601", r)
task, r = alice.start(None, name="must")
t.check(task is not None, "a required tool as a task: created", r)

# ---- another caller: the unknown-id answer --------------------------------------------
bob = V1(srv, tokens.tokens["bob"])
mine, unknown = bob.get(tid), bob.get("0123456789abcdef0123456789abcdef")
t.check(mine.get("error") and mine["error"] == unknown["error"],
        "another caller's tasks/get: exactly the unknown-id error", (mine, unknown))
for method in ("tasks/result", "tasks/cancel"):
    x = bob.rpc(method, {"taskId": tid})
    t.check(x.get("error") == unknown["error"], f"another caller's {method}: the same error", x)
t.check(tid not in [x["taskId"] for x in bob.rpc("tasks/list", {})["result"]["tasks"]],
        "another caller's tasks/list does not show it")
t.check(alice.get(tid)["result"]["status"] == "completed", "the task is untouched by bob")

# ---- caps: the oldest finished task makes room; none when all work ---------------------
carol = V1(caps_srv, tokens.tokens["carol"])
first = [carol.start("print(%d)" % i)[0]["taskId"] for i in range(3)]
for x in first:
    carol.wait(x)
fourth = carol.start("print(4)")[0]
t.check(fourth and carol.get(first[0]).get("error", {}).get("code") == -32602
        and carol.get(first[1]).get("result"),
        "past MCP_EXEC_TASKS_PER_CALLER the oldest finished task is dropped", fourth)
dave = V1(caps_srv, tokens.tokens["dave"])
busy = [dave.start("import time\ntime.sleep(30)", timeout_s=60)[0] for _ in range(3)]
task, r = dave.start("print(1)")
t.check(task is None and r.get("error", {}).get("code") == -32000
        and "MCP_EXEC_TASKS_PER_CALLER" in r["error"]["message"],
        "a caller whose kept tasks all work gets no new task, with the reason", r)
for b in busy:
    if b:
        dave.rpc("tasks/cancel", {"taskId": b["taskId"]})
task, _ = carol.start(None, name="big")
last, _ = carol.wait(task["taskId"]) if task else (None, None)
t.check(last and last["status"] == "failed" and "MCP_EXEC_TASKS_MAX_MB" in last["statusMessage"],
        "a result larger than MCP_EXEC_TASKS_MAX_MB fails its task", last)
res = carol.rpc("tasks/result", {"taskId": task["taskId"]}) if task else {}
t.check(res.get("error", {}).get("code") == -32603, "its tasks/result: a -32603 error", res)

# ---- 2026-07-28 ------------------------------------------------------------------------
v2 = V2(srv, tokens.tokens["alice"])
st, disc = v2.rpc("server/discover")
t.check(disc["result"]["capabilities"].get("extensions") == {EXT: {}},
        "server/discover lists the tasks extension", disc)
st, quick = v2.call(code="print('quick')")
t.check(quick["result"].get("resultType") == "complete" and structured(quick)["stdout"] ==
        "quick\n", "2026-07-28: a quick call is answered directly", quick)
st, made = v2.call(code="import time\ntime.sleep(2)\nprint('slow')")
m = made["result"]
t.check(m.get("resultType") == "task" and "task" not in m and m.get("ttlMs") and
        m.get("pollIntervalMs") and "ttl" not in m and "result" not in m,
        "2026-07-28: a long call becomes a task (flat CreateTaskResult, ttlMs)", m)
t2 = m.get("taskId", "0" * 32)
st, g = v2.get(t2)
t.check(g["result"]["status"] == "working" and g["result"]["resultType"] == "complete",
        "tasks/get while it runs: working, resultType complete", g)
done = v2.wait(t2)
t.check(done and done["status"] == "completed" and done["result"]["structuredContent"]["stdout"]
        == "slow\n" and RELATED not in done["result"].get("_meta", {}),
        "tasks/get when done inlines the result (no related-task _meta)", done)
st, r = v2.rpc("tasks/result", {"taskId": t2})
t.check(st == 404 and r["error"]["code"] == -32601, "2026-07-28 has no tasks/result (-32601)",
        (st, r))
st, r = v2.rpc("tasks/list")
t.check(r["error"]["code"] == -32601, "2026-07-28 has no tasks/list (-32601)", r)
st, r = v2.rpc("tasks/update", {"taskId": t2, "inputResponses": {"k": {}}})
t.check(r.get("result") == {"resultType": "complete", "_meta": r["result"].get("_meta")},
        "tasks/update: an empty acknowledgement", r)
st, r = v2.rpc("tasks/update", {"taskId": "0" * 32, "inputResponses": {}})
t.check(r.get("error", {}).get("code") == -32602, "tasks/update of an unknown task: -32602", r)
st, made = v2.call(code="import time\ntime.sleep(60)", timeout_s=120)
t3 = made["result"].get("taskId", "0" * 32)
st, r = v2.rpc("tasks/cancel", {"taskId": t3})
t.check(set(r.get("result", {})) <= {"resultType", "_meta"}, "tasks/cancel: an empty ack", r)
t.check((v2.wait(t3) or {}).get("status") == "cancelled", "the task settles as cancelled")
st, r = v2.rpc("tasks/cancel", {"taskId": t3})
t.check(set(r.get("result", {})) <= {"resultType", "_meta"},
        "tasks/cancel of a finished task: the same ack", r)
st, r = v2.get(t2, ext=False)
t.check(r["error"]["code"] == -32021 and r["error"]["data"] ==
        {"requiredCapabilities": {"extensions": {EXT: {}}}},
        "tasks/get without the extension: -32021 naming it", r)
st, r = V2(srv, tokens.tokens["alice"], ext=False).call(code="import time\ntime.sleep(1)\nprint(1)")
t.check(r["result"].get("resultType") == "complete" and "taskId" not in r["result"],
        "without the extension a long call is answered directly", r)
st, r = V2(srv, tokens.tokens["alice"], ext=False).call("must")
t.check(r.get("error", {}).get("code") == -32021, "a required tool without the extension: -32021",
        r)
st, r = v2.get(t2, headers={"Mcp-Name": "f" * 32})
t.check(st == 400 and r["error"]["code"] == -32020, "Mcp-Name that is not the taskId: -32020",
        (st, r))
st, r = v2.get(tid)
t.check(r["result"]["status"] == "completed" and r["result"]["result"]["structuredContent"]
        ["stdout"] == "begin\n42\n", "a 2025-11-25 task read through 2026-07-28", r)

# ---- an upstream's tool keeps what its upstream lists ------------------------------
# The gateway (expose) lists a second mcp-exec's tools as it gives them: it
# speaks 2025-06-18 to its upstreams, whose Tool objects have no execution
# (no task support), so "up.exec" is not offered as a task (-32601), and is
# still called directly.
up_token = "tasks-upstream-" + os.urandom(8).hex()
upstream = HttpServer({"MCP_EXEC_AUTH_TOKEN": up_token, "MCP_EXEC_WORKDIR_BASE": work,
                       "MCP_EXEC_WORKSPACES": "off"})
gw_policy = os.path.join(scratch.secrets, "gateway.json")
write_policy(gw_policy, {"upstreams": [
    {"name": "up", "url": f"http://127.0.0.1:{upstream.port}/mcp",
     "allow_cidrs": ["127.0.0.1/32"], "expose": True,
     "credential": {"header": "X-MCP-AUTH",
                    "secret_file": scratch.secret("up-token", up_token)}}]})
gateway = HttpServer(dict(ENV, MCP_EXEC_POLICY=gw_policy))
gw = V1(gateway, tokens.tokens["alice"])
listed = {}
for _ in range(100):  # the upstream's tool list arrives in the background
    listed = {x["name"]: x for x in gw.rpc("tools/list")["result"]["tools"]}
    if "up.exec" in listed:
        break
    time.sleep(0.1)
t.check("up.exec" in listed and listed["up.exec"].get("execution", {}).get("taskSupport",
                                                                          "forbidden")
        == "forbidden", "the gateway lists the upstream's tool as not a task (its upstream "
        "listed no execution)", listed.get("up.exec", {}).get("execution"))
r = gw.call("up.exec", task={}, code="print(1)")
t.check(r.get("error", {}).get("code") == -32601,
        "a task of an upstream's tool that does not say it may be one: -32601", r)
r = gw.call("up.exec", code="print(2)")
t.check(structured(r).get("stdout") == "2\n", "the same tool called directly", r)
for x in (gateway, upstream):
    x.stop()

# ---- older sessions see no change ---------------------------------------------------------
old = V1.__new__(V1)
from mcpx_harness import McpHttpClient
old.c = McpHttpClient(srv, tokens.tokens["alice"], version="2025-06-18")
old.init = old.c.initialize()[2]
old.next_id = 1
t.check("tasks" not in old.init["result"]["capabilities"], "2025-06-18: no tasks capability")
t.check("execution" not in old.rpc("tools/list")["result"]["tools"][0],
        "2025-06-18: no execution in tools/list")
r = old.call(task={"ttl": 1000}, code="print(5)")
t.check(structured(r).get("stdout") == "5\n", "2025-06-18: a task member is ignored", r)
t.check(old.get(tid).get("error", {}).get("code") == -32601, "2025-06-18: tasks/get -32601")
for name, x in (("the server", srv), ("the caps server", caps_srv)):
    rc = x.stop()
    t.check(rc == 0, f"{name} exits 0 on SIGTERM (nothing left behind)", f"exit {rc}: {x.tail()}")

# ---- stdio: status notifications; MCP_EXEC_TASKS=off ----------------------------------------
s = StdioServer(env=base_env(MCP_EXEC_WORKSPACES="dir:" + store, MCP_EXEC_WORKDIR_BASE=work))
s.initialize()
r = s.request("tools/call", {"name": "exec", "arguments": {"code": "print(7)"}, "task": {}})
stid = r["result"]["task"]["taskId"]
res = s.request("tasks/result", {"taskId": stid})
t.check(structured(res)["stdout"] == "7\n", "stdio: a task and its result", res)
s.request("ping")  # whatever came before its answer is read
notes = [m for m in s.notes if m.get("method") == "notifications/tasks/status"]
t.check(s.close() == 0, "stdio: the server exits 0 at EOF")
t.check(any(n["params"]["taskId"] == stid and n["params"]["status"] == "completed"
            for n in notes), "stdio: notifications/tasks/status when the task ends", notes)
off = StdioServer(env=base_env(MCP_EXEC_WORKSPACES="dir:" + store, MCP_EXEC_TASKS="off",
                               MCP_EXEC_WORKDIR_BASE=work))
init = off.initialize()
t.check("tasks" not in init["result"]["capabilities"], "MCP_EXEC_TASKS=off: no tasks capability")
t.check(off.request("tasks/get", {"taskId": stid}).get("error", {}).get("code") == -32601,
        "MCP_EXEC_TASKS=off: tasks/get -32601")
t.check(off.close() == 0, "MCP_EXEC_TASKS=off: the server exits 0 at EOF")
scratch.remove()
t.done()
