"""Nothing waits on the event loop (issue 30, item 2): the paths that used to
block the server's one thread (the fork server's answers to a fork taken at
once and to every warm run's reap, a prepared process ended, a zygote
renewed and the old one stopped, a run's cgroup removed) are driven from
the loop's watches or a worker thread.

The server counts every wait that blocks its loop's thread
(mcp_exec_loop_blocking_waits_total in /metrics; a debug build, as the
sanitizer run of this test, aborts at the first one). This test drives
those paths through the real binary over HTTP: back-to-back and spaced
Python calls (each reaped through the zygote), calls that find their child
asked for and not yet answered, bash calls (the prepared bash taken, and
ended when a run it may not wait beside comes), zygotes renewed every few
runs, runs that need a broker channel once a policy reload grants exec
egress while the prepared child has none (it is discarded), and a run
killed by its timeout; then it checks the counter
is 0 and that /metrics reports the loop's longest stall.

Every wait is for an event; no wall-clock threshold is asserted."""
import json
import os
import time

from mcpx_harness import (Failures, HttpServer, McpHttpClient, ScratchDir, base_env,
                          warm_mode, write_policy)

t = Failures()
MODE = os.environ.get("MCPX_TEST_WARM", "auto")


def ok(resp, want=None):
    st, _, body = resp
    if isinstance(body, list):
        body = next((m for m in body if "result" in m or "error" in m), None)
    sc = (body or {}).get("result", {}).get("structuredContent") or {}
    return st == 200 and sc.get("exit_code") == 0 and (want is None or sc.get("stdout") == want)


def waits(s):
    return s.metric("mcp_exec_loop_blocking_waits_total")


def waited_lines(s):
    """What the server logged of the waits that blocked its loop."""
    return [l for l in s.drain_stderr().splitlines() if "event loop's thread waited" in l][:3]


def run_paths(s, c, forked, label):
    """Drives every path; returns how many calls came back as expected."""
    good = 0
    # Back to back: each next child asked for beside the run, each run
    # reaped through its zygote; a renewal every 4 runs.
    for i in range(12):
        good += ok(c.call(f"print({i})"), f"{i}\n")
    # Spaced: the child asked for after the run, taken once answered.
    for i in range(3):
        time.sleep(0.15)
        good += ok(c.call("import os; print(os.getpid() > 1)"), "True\n")
    # bash: the first one cold, the next ones through the prepared bash;
    # a Python run between them (the prepared bash waits beside it in
    # fork-server mode).
    for i in range(3):
        good += ok(c.call(f"echo {i}", language="bash"), f"{i}\n")
        time.sleep(0.05)
    good += ok(c.call("print('py')"), "py\n")
    good += ok(c.call("echo last", language="bash"), "last\n")
    # A run ended by its timeout: killed, reaped, its result worded.
    st, _, body = c.call("import time; time.sleep(30)", timeout_s=1)
    good += st == 200
    return good


s = HttpServer({"MCP_EXEC_WARM_MAX_RUNS": "4", "MCP_EXEC_WARM": MODE})
forked = warm_mode(base_env(MCP_EXEC_WARM=MODE)) == "fork-server"
c = McpHttpClient(s)
c.initialize()
good = run_paths(s, c, forked, MODE)
t.check(good == 21, f"[{MODE}] every call of the run came back as expected", good)
if forked:
    # A zygote due for renewal waits for a pause (100 ms without a run):
    # renewed twice, the old ones stopped once their last run is reaped.
    renewed = lambda: s.metric('mcp_exec_zygote_replacements_total{reason="runs"}') or 0
    for _ in range(4):
        if renewed() >= 2:
            break
        before = renewed()
        for i in range(4):
            ok(c.call("print(1)"))
        deadline = time.time() + 60
        while time.time() < deadline and renewed() == before:
            time.sleep(0.1)
    t.check(renewed() >= 2, f"[{MODE}] zygotes renewed twice, the old ones stopped", renewed())
stall = s.metric("mcp_exec_loop_stall_max_seconds")
t.check(stall is not None and stall >= 0, f"[{MODE}] /metrics reports the loop's longest stall",
        stall)
t.check(waits(s) == 0, f"[{MODE}] the loop's thread never waited", (waits(s), waited_lines(s)))
t.check(not waited_lines(s), f"[{MODE}] no blocking wait was logged", waited_lines(s))
rc = s.stop()
t.check(rc == 0, f"[{MODE}] the server exits cleanly", (rc, s.drain_stderr()[-2000:]))

# A run that needs a broker channel (a policy grants exec egress): the child
# prepared before the policy came has none and is discarded (ended without
# waiting); children prepared after have one.
if forked:
    d = ScratchDir("mcpx-loopwaits-")
    pol = os.path.join(d.secrets, "policy.json")
    rule = {"name": "ex", "url_prefix": "https://example.com/"}
    write_policy(pol, {"egress": [rule]})
    s = HttpServer({"MCP_EXEC_POLICY": pol, "MCP_EXEC_WARM": MODE,
                    "MCP_EXEC_WORKDIR_BASE": d.workdir()})
    c = McpHttpClient(s)
    c.initialize()
    good = sum(ok(c.call("print(1)"), "1\n") for _ in range(3))
    write_policy(pol, {"egress": [rule], "exec": {"egress": ["ex"]}})
    deadline = time.time() + 60
    while time.time() < deadline and "reloaded: version 2" not in s.drain_stderr():
        time.sleep(0.1)
    has = "import os; print('MCPX_CHANNEL_FD' in os.environ)"
    seen = [c.call_structured(has).get("stdout") for _ in range(4)]
    t.check(good == 3 and seen[-1] == "True\n",
            "[channel] runs without a channel, then with one once exec is granted egress",
            (good, seen))
    t.check(waits(s) == 0, "[channel] the loop's thread never waited",
            (waits(s), waited_lines(s)))
    rc = s.stop()
    t.check(rc == 0, "[channel] the server exits cleanly", (rc, s.drain_stderr()[-2000:]))
    d.remove()

t.done()
