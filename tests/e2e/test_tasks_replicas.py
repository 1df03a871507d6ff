"""MCP tasks across server processes sharing a Redis store (Debian's
redis-server, started here with a password), against the real binary.

Three servers, A, B and C, one store, MCP_EXEC_MAX_TIMEOUT_S=60 (so a
90-second run is possible only as a task) and a 3-second task lease:
  - a 90-second exec started as a task on A answers at once; A's session is
    deleted; B (another session of the same caller) sees it working, lists
    it, and once it is done reads its result: the whole 90 seconds of output,
    with related-task _meta (2025-11-25) and inlined (2026-07-28);
  - while it runs (A runs one execution at a time, so C serves the rest): a
    client starts a task on C and goes away; B reads its result later, and a
    tasks/result on B waits for a task C is still running;
  - a task started on C is cancelled through B (both generations): C's run
    is killed (its audit line says cancelled, cut short), B answers with the
    cancelled task;
  - C is killed (SIGKILL) with a task running: once its lease lapses, B
    fails the task with a message saying why, never "working" forever.
One warm mode only (it is the slow test: its 90 seconds mostly sleep).
Without redis-server it is skipped (77)."""
import os
import signal
import sys
import time

from mcpx_harness import (Failures, HttpServer, NamedTokens, ScratchDir, structured)
from tasks_fixture import REDIS, RELATED, V1, V2, Redis

if not REDIS:
    print("skip: redis-server is not installed (scripts/deps.sh --test)")
    sys.exit(77)

t = Failures()
scratch = ScratchDir("mcpx-task-replicas-")
work = scratch.workdir()
tokens = NamedTokens(os.path.join(scratch.secrets, "tokens.json"), ["alice"])
tokens.write(["alice"])
TOK = tokens.tokens["alice"]
redis = Redis(scratch)
ENV = dict(redis.env(), MCP_EXEC_AUTH_TOKENS_FILE=tokens.path, MCP_EXEC_WORKDIR_BASE=work,
           MCP_EXEC_MAX_TIMEOUT_S=60, MCP_EXEC_TASK_LEASE_S=3, MCP_EXEC_TASK_SYNC_MS=200)
A, B, C = HttpServer(ENV), HttpServer(ENV), HttpServer(ENV)

# ---- the 90-second task on A ---------------------------------------------------
LONG = ("import time\nprint('start', flush=True)\nfor i in range(9):\n    time.sleep(10)\n"
        "    print('tick', i, flush=True)\nprint('done')")
a = V1(A, TOK)
long_task, raw = a.start(LONG, timeout_s=120)
LID = long_task["taskId"] if long_task else "0" * 32
g = a.get(LID).get("result", {})
t.check(long_task and long_task["status"] == "working" and g.get("status") == "working",
        "a 90-second exec as a task on A: a task id at once, working", raw)
st, _, _ = A.request("DELETE", "/mcp", None, a.c.headers())
t.check(st == 200, "A's session is gone (DELETE)", st)
b = V1(B, TOK)
g = b.get(LID).get("result", {})
t.check(g.get("status") == "working", "B, another session: tasks/get says working", g)
t.check(LID in [x["taskId"] for x in b.rpc("tasks/list", {})["result"]["tasks"]],
        "B lists the task A runs")

# ---- meanwhile on C: a client goes away, B reads the result later ----------------
c = V1(C, TOK)
gone, _ = c.start("import time\ntime.sleep(2)\nprint('after the client left')")
st, _, _ = C.request("DELETE", "/mcp", None, c.c.headers())
last, _ = b.wait(gone["taskId"]) if gone else (None, None)
res = b.rpc("tasks/result", {"taskId": gone["taskId"]}) if gone else {}
t.check(last and last["status"] == "completed" and structured(res)["stdout"] ==
        "after the client left\n", "a client that left C: its result read later on B", res)

# tasks/result on B waits for a task C still runs (B polls the store).
c = V1(C, TOK)
waiting, _ = c.start("import time\ntime.sleep(3)\nprint('waited for')")
res = b.rpc("tasks/result", {"taskId": waiting["taskId"]}) if waiting else {}
t.check(structured(res) and structured(res)["stdout"] == "waited for\n" and
        res["result"]["_meta"][RELATED]["taskId"] == waiting["taskId"],
        "tasks/result on B waits for C's task to end, then its result", res)

# ---- cancel on B, run on C (both generations) --------------------------------------
victim, _ = c.start("import time\ntime.sleep(50)", timeout_s=55)
VID = victim["taskId"] if victim else "0" * 32
time.sleep(1)  # let C's run start
r = b.rpc("tasks/cancel", {"taskId": VID})
t.check(r.get("result", {}).get("status") == "cancelled",
        "2025-11-25 tasks/cancel on B of C's task: cancelled once C confirms", r)
aud = [x for x in C.audit_lines() if x.get("task_id") == VID]
t.check(len(aud) == 1 and aud[0]["status"] == "cancelled" and aud[0]["wall_ms"] < 50000,
        "C's run was killed, not run to its end (its audit line)", aud)
v2c, v2b = V2(C, TOK), V2(B, TOK)
st, made = v2c.call(code="import time\ntime.sleep(50)", timeout_s=55)
V2ID = made["result"].get("taskId", "0" * 32)
st, r = v2b.rpc("tasks/cancel", {"taskId": V2ID})
t.check(st == 200 and "error" not in r, "2026-07-28 tasks/cancel on B: acknowledged", r)
t.check((v2b.wait(V2ID) or {}).get("status") == "cancelled",
        "2026-07-28: the task C ran settles as cancelled, read on B")
aud = [x for x in C.audit_lines() if x.get("task_id") == V2ID]
t.check(len(aud) == 1 and aud[0]["status"] == "cancelled", "C's 2026-07-28 run was killed", aud)

# ---- C killed with a task running: failed once its lease lapses -----------------------
doomed, _ = c.start("import time\ntime.sleep(50)", timeout_s=55)
DID = doomed["taskId"] if doomed else "0" * 32
time.sleep(1)
C.proc.send_signal(signal.SIGKILL)
C.proc.wait(timeout=30)
t.check(b.get(DID).get("result", {}).get("status") in ("working", "failed"),
        "B reads the task of the killed server")
last, _ = b.wait(DID, timeout=60)
t.check(last and last["status"] == "failed" and "stopped before it finished" in
        last.get("statusMessage", ""),
        "once the lease lapses B fails the task, saying why (never working forever)", last)
res = b.rpc("tasks/result", {"taskId": DID})
t.check(res.get("error", {}).get("code") == -32603, "its tasks/result: a -32603 error", res)
st, r = v2b.get(DID)
t.check(r["result"]["status"] == "failed" and r["result"]["error"]["code"] == -32603,
        "2026-07-28 on B: failed, with the error inlined", r)

# ---- the 90-second task's end, read on B ------------------------------------------------
last, _ = b.wait(LID, timeout=200)
t.check(last and last["status"] == "completed", "the 90-second task completed (read on B)", last)
res = b.rpc("tasks/result", {"taskId": LID})
sc = structured(res) or {}
t.check(sc.get("stdout", "").startswith("start\ntick 0\n") and sc["stdout"].endswith("tick 8\ndone\n")
        and sc["exit_code"] == 0 and sc["timed_out"] is False and sc["duration_ms"] >= 90000
        and res["result"]["_meta"][RELATED]["taskId"] == LID,
        "its result on B: 90 seconds of output, past MCP_EXEC_MAX_TIMEOUT_S", sc)
st, r = v2b.get(LID)
t.check(r["result"]["result"]["structuredContent"]["stdout"] == sc.get("stdout"),
        "the same result inlined by 2026-07-28 tasks/get on B", r)
aud = [x for x in A.audit_lines() if x.get("task_id") == LID]
t.check(len(aud) == 1 and aud[0]["status"] == "ok" and aud[0]["caller"] == "alice",
        "A's audit line names the task", aud)
for s in (A, B):
    t.check(s.stop() == 0, "a server exits 0 on SIGTERM")
redis.stop()
scratch.remove()
t.done()
