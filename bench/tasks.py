#!/usr/bin/env python3
"""What running a call as an MCP task costs (issue 32), for each store.

One mcp-exec over Streamable HTTP per store (a directory store, and a
Debian redis-server started here on a free loopback port with a password),
the same call (`code: CODE`, by default a 200 ms sleep: long enough to
become a task behind a sync window of 0, short enough for one of 2 s)
each way:

  direct      a 2025-11-25 session's plain tools/call
  v1-create   tools/call with "task": until the CreateTaskResult
  v1-result   the same, then tasks/result: until the CallToolResult
  v2-sync     a 2026-07-28 request with the tasks extension, answered
              within the sync window (MCP_EXEC_TASK_SYNC_MS, 2 s here so
              that a loaded machine does not turn it into a task)
  v2-polled   the same on a server whose sync window is 0: the task
              handle, then tasks/get every 20 ms until completed

and with Redis, a second server on the same store answering tasks/result
of a task the first runs (it polls the store once a second: that is the
cross-replica latency).

Calls alternate between the ways round by round (so a slow minute of the
machine hits them all), WARMUP unmeasured calls each first; the median and
p90 of each are printed, with the median minus direct's.

  /usr/bin/python3 bench/tasks.py                 # build/mcp-exec, ROUNDS=20, both stores
  ROUNDS=40 STORES=redis /usr/bin/python3 bench/tasks.py

Only the standard library; all traffic on 127.0.0.1.
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
os.environ.setdefault("MCPX_BIN", os.path.join(HERE, "..", "build", "mcp-exec"))

from mcpx_harness import HttpServer, ScratchDir, structured  # noqa: E402
from tasks_fixture import V1, V2  # noqa: E402
from workspace_fixture import REDIS, Store  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "20"))
WARMUP = int(os.environ.get("WARMUP", "3"))
CODE = os.environ.get("CODE", "import time\ntime.sleep(0.2)")
STORES = [s for s in os.environ.get("STORES", "dir,redis").split(",") if s]


def ok(res):
    sc = structured({"result": res} if res else None) or {}
    if sc.get("exit_code") != 0:
        raise RuntimeError(f"a call failed: {res}")


def direct(v1, v2, v2p):
    ok(v1.call(code=CODE)["result"])


def v1_create(v1, v2, v2p):
    task, r = v1.start(CODE)
    if not task:
        raise RuntimeError(f"no task: {r}")
    v1.rpc("tasks/result", {"taskId": task["taskId"]})  # not timed apart: see v1_result


def v1_result(v1, v2, v2p):
    task, _ = v1.start(CODE)
    ok(v1.rpc("tasks/result", {"taskId": task["taskId"]})["result"])


def v2_sync(v1, v2, v2p):
    st, r = v2.call(code=CODE)
    if r["result"].get("resultType") != "complete":
        raise RuntimeError(f"not answered in the window: {r}")
    ok(r["result"])


def v2_polled(v1, v2, v2p):
    st, r = v2p.call(code=CODE)
    if r["result"].get("resultType") == "complete":
        # The run ended while the task was being made (a slow store):
        # answered directly, as it should be.
        DIRECT_ANSWERS[0] += 1
        ok(r["result"])
        return
    tid = r["result"]["taskId"]
    while True:
        st, g = v2p.get(tid)
        if g["result"]["status"] != "working":
            break
        time.sleep(0.02)
    ok(g["result"].get("result"))


def timed_create(v1):
    t0 = time.perf_counter()
    task, _ = v1.start(CODE)
    dt = (time.perf_counter() - t0) * 1000
    v1.rpc("tasks/result", {"taskId": task["taskId"]})
    return dt


DIRECT_ANSWERS = [0]
WAYS = {"direct": direct, "v1-create": None, "v1-result": v1_result, "v2-sync": v2_sync,
        "v2-polled": v2_polled}


def report(label, times):
    base = statistics.median(times["direct"])
    print(f"\n{label}: median and p90 of {ROUNDS} calls each (ms)")
    print(f"{'way':<22}{'median':>10}{'p90':>10}{'added':>10}")
    for n, ts in times.items():
        ts = sorted(ts)
        med = statistics.median(ts)
        p90 = ts[min(len(ts) - 1, int(len(ts) * 0.9))]
        added = "" if n == "direct" else f"{med - base:+.1f}"
        print(f"{n:<22}{med:>10.1f}{p90:>10.1f}{added:>10}")


def server(store, scratch, name, extra=None):
    env = dict(store.env())
    env["MCP_EXEC_WORKDIR_BASE"] = scratch.workdir("work-" + name)
    env.update(extra or {})
    return HttpServer(env)


def one_call(way, v1, v2, v2p):
    if way == "v1-create":
        return timed_create(v1)
    t0 = time.perf_counter()
    WAYS[way](v1, v2, v2p)
    return (time.perf_counter() - t0) * 1000


def main():
    for kind in STORES:
        if kind == "redis" and not REDIS:
            print("skip redis: redis-server is not installed")
            continue
        scratch = ScratchDir(f"mcpx-bench-tasks-{kind}-")
        store = Store(kind, scratch)
        try:
            a = server(store, scratch, "a", {"MCP_EXEC_TASK_SYNC_MS": "2000"})
            p = server(store, scratch, "p", {"MCP_EXEC_TASK_SYNC_MS": "0"})
            v1, v2, v2p = V1(a), V2(a), V2(p)
            times = {n: [] for n in WAYS}
            for n in WAYS:
                for _ in range(WARMUP):
                    one_call(n, v1, v2, v2p)
            for _ in range(ROUNDS):
                for n in WAYS:
                    times[n].append(one_call(n, v1, v2, v2p))
                    for s in (a, p):
                        s.drain_stderr()
                        s.err = b""
            report(f"{kind} store, warm mode {os.environ.get('MCPX_TEST_WARM', 'auto')}", times)
            if DIRECT_ANSWERS[0]:
                print(f"(v2-polled: {DIRECT_ANSWERS[0]} calls ended before their task was made "
                      f"and were answered directly)")
                DIRECT_ANSWERS[0] = 0
            if kind == "redis":
                b = V1(p)
                cross = []
                for _ in range(max(5, ROUNDS // 4)):
                    task, _ = v1.start(CODE)
                    t0 = time.perf_counter()
                    ok(b.rpc("tasks/result", {"taskId": task["taskId"]})["result"])
                    cross.append((time.perf_counter() - t0) * 1000)
                    for s in (a, p):
                        s.drain_stderr()
                        s.err = b""
                cross.sort()
                print(f"tasks/result on the other server, from CreateTaskResult: median "
                      f"{statistics.median(cross):.0f} ms, max {cross[-1]:.0f} ms "
                      f"({len(cross)} tasks)")
            a.stop()
            p.stop()
        finally:
            store.close()
            scratch.remove()


main()
