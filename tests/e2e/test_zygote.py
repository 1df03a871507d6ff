"""The interpreter a run depends on dying, and the fork server's zygote
being replaced (issue 11, points 5 and 10).

- A run that kills itself (SIGKILL included) is the program's result.
- The zygote killed while a forked run executes: the run dies with it (its
  parent-death signal); the caller gets a tool error saying the execution
  environment failed, never "killed by SIGKILL", and the next call works.
- A warm interpreter (a child forked for the next run, or a fresh one in
  after-reap mode) killed before it has taken the code: a tool error too.
- After MCP_EXEC_WARM_MAX_RUNS runs, or MCP_EXEC_WARM_MAX_AGE_S seconds, a new
  zygote takes over (seen in the runs' parent pid, the log and /metrics),
  prepared while the old one served: no run starts cold meanwhile.
- The zygote's rlimits are a run's without the CPU and process limits (it
  lives across runs), its address-space limit soft only; each forked run
  gets the run's own, CPU included, its address space raised by what the
  zygote maps (docs/architecture.md, the fork server; docs/security.md).

Every wait is for an event: a notification, a log line, a process state.
The zygote parts need fork-server mode (Landlock ABI >= 6); in cold mode
(MCPX_TEST_WARM=0) only the first point applies."""
import json
import os
import re
import signal
import time

from mcpx_harness import (Failures, HttpServer, McpHttpClient, StdioServer, base_env,
                          structured, tool_error_text, warm_mode)

t = Failures()

def stop(s):
    """Ends a stdio server and checks it went cleanly (a sanitizer build
    reports leaks and errors through the exit status)."""
    rc = s.close()
    t.check(rc == 0, "the server exits cleanly", (rc, s.stderr_text()[-2000:]))

MODE = os.environ.get("MCPX_TEST_WARM", "auto")
DEADLINE = 120  # seconds; a safety net for waits on events, never a threshold


def start(mode, **extra):
    env = base_env(MCP_EXEC_WARM=mode, **extra)
    s = StdioServer(env)
    s.initialize()
    forked = warm_mode(env) == "fork-server"
    if forked:
        t.check(s.wait_fork_server(), f"[{mode}] the zygote became ready")
    return s, forked


def send_call(s, code, progress=None):
    rid = s.next_id
    s.next_id += 1
    params = {"name": "exec", "arguments": {"code": code}}
    if progress:
        params["_meta"] = {"progressToken": progress}
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
    return rid


def wait_message(s, pred):
    """Next notification matching pred; responses met on the way are kept."""
    deadline = time.time() + DEADLINE
    while time.time() < deadline:
        m = s.recv(deadline - time.time())
        if m is None:
            return None
        if "id" in m and ("result" in m or "error" in m):
            s.pending[m["id"]] = m
            continue
        if pred(m):
            return m
    return None


def wait_until(cond):
    deadline = time.time() + DEADLINE
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    return None


def zygote_of(server_pid):
    """The server's child that is the fork server's zygote (mcp-exec-zygote serve)
    the runs of these checks come from: the plain one (nothing preloaded), which
    takes code that imports only the standard library, where there are two
    (docs/architecture.md, "Two zygotes"); else the only one."""
    found = None
    for c in children_of(server_pid):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if argv[0].endswith(b"mcp-exec-zygote") and argv[1] == b"serve":
                if argv[3:4] == [b""]:
                    return c
                found = found or c
        except OSError:
            pass
    return found


def children_of(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def waiting_for_code(pid):
    """True while pid is blocked reading its stdin (a warm interpreter that
    said it is ready and waits for its code)."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()[:2] == ["0", "0x0"]
    except OSError:
        return False


def self_kill(mode):
    s, _ = start(mode)
    r = s.call("import os\nprint('bye', flush=True)\nos.kill(os.getpid(), 9)")
    sc = structured(r)
    t.check(sc is not None and not r["result"].get("isError") and sc["signal"] == "SIGKILL"
            and sc["exit_code"] == -1 and sc["stdout"] == "bye\n",
            f"[{mode}] a run that SIGKILLs itself is the program's result, not a tool error", r)
    stop(s)


def zygote_killed_mid_run():
    s, _ = start("auto", MCP_EXEC_LOG_FORMAT="json")
    zyg = zygote_of(s.proc.pid)
    rid = send_call(s, "import time\nprint('running', flush=True)\ntime.sleep(600)", "p1")
    note = wait_message(s, lambda m: m.get("method") == "notifications/progress")
    t.check(note is not None, "the forked run is running (its output arrived as progress)")
    os.kill(zyg, signal.SIGKILL)
    r = s.wait_for(rid, DEADLINE)
    err = tool_error_text(r)
    t.check(err is not None and "execution environment failed" in err and "zygote" in err
            and "SIGKILL" not in err,
            "the zygote killed mid-run: a tool error saying the environment failed", r)
    sc = structured(s.call("print('after')"))
    t.check(sc is not None and sc["stdout"] == "after\n" and sc["exit_code"] == 0,
            "the next call works", sc)
    renewed = wait_until(lambda: re.search(r"fork server renewed: zygote pid (\d+) replaced pid "
                                           + str(zyg) + r" \(died", s.stderr_text()))
    t.check(renewed, "a new zygote replaces the dead one")
    new = int(renewed.group(1)) if renewed else -1
    sc = structured(s.call("import os; print(os.getppid())"))
    t.check(new != zyg and sc is not None and sc["stdout"] == f"{new}\n",
            "runs are forked from the new zygote again", (zyg, new, sc))
    stop(s)
    audit = [json.loads(l) for l in s.stderr_text().splitlines() if '"audit"' in l]
    t.check(any(a["status"] == "failed" for a in audit), "the failed run is audited as failed")


def killed_before_code(label, mode, waiting_parent):
    """The interpreter prepared for the next call (a child of waiting_parent(s))
    is stopped, a call starts on it, then it is killed before it took the
    code: the caller gets a tool error, never a program result, and the next
    call works."""
    s, _ = start(mode, MCP_EXEC_LOG_FORMAT="json")
    s.request("logging/setLevel", {"level": "info"})
    if mode == "after-reap":
        structured(s.call("print(1)"))  # after a run, a fresh interpreter is prepared
    parent = waiting_parent(s)
    warm = wait_until(lambda: next((c for c in children_of(parent) if waiting_for_code(c)), None))
    t.check(warm, f"[{label}] the next call's interpreter waits for its code")
    os.kill(warm, signal.SIGSTOP)
    rid = send_call(s, "print('never')")
    started = wait_message(s, lambda m: m.get("method") == "notifications/message"
                           and m["params"].get("data") == "execution started")
    t.check(started is not None, f"[{label}] the run started on that interpreter")
    os.kill(warm, signal.SIGKILL)
    r = s.wait_for(rid, DEADLINE)
    err = tool_error_text(r)
    t.check(err is not None and "before it had taken the code" in err,
            f"[{label}] the interpreter killed before it took the code: a tool error", r)
    sc = structured(s.call("print('after')"))
    t.check(sc is not None and sc["stdout"] == "after\n", f"[{label}] the next call works", sc)
    stop(s)


def pending_child_killed():
    killed_before_code("fork-server", "auto", lambda s: zygote_of(s.proc.pid))


def after_reap_interpreter_killed():
    killed_before_code("after-reap", "after-reap", lambda s: s.proc.pid)


def metric(text, name):
    m = re.search(r"^" + re.escape(name) + r" (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


def renewal_after_runs():
    srv = HttpServer({"MCP_EXEC_WARM_MAX_RUNS": 3, "MCP_EXEC_WARM_MAX_AGE_S": 0})
    c = McpHttpClient(srv)
    c.initialize()
    wait_until(lambda: "fork server ready" in srv.drain_stderr())
    first = zygote_of(srv.proc.pid)
    _, _, body = srv.request("GET", "/metrics")
    t.check(metric(body.decode(), "mcp_exec_zygote_pid") == first,
            "/metrics shows the zygote's pid", first)
    ppids = []
    for i in range(3):
        _, _, r = c.call("import os; print(os.getppid())")
        ppids.append(r["result"]["structuredContent"]["stdout"].strip())
    t.check(ppids == [str(first)] * 3, "the first runs come from the first zygote", ppids)
    line = wait_until(lambda: re.search(r"fork server renewed: zygote pid (\d+) replaced pid "
                                        + str(first) + r" \(runs", srv.drain_stderr()))
    t.check(line, "after MCP_EXEC_WARM_MAX_RUNS runs a new zygote takes over")
    second = int(line.group(1)) if line else -1
    _, _, r = c.call("import os; print(os.getppid())")
    t.check(r["result"]["structuredContent"]["stdout"].strip() == str(second),
            "the next run comes from the new zygote", r)
    t.check(wait_until(lambda: not os.path.exists(f"/proc/{first}")),
            "the old zygote is gone once its runs are reaped")
    _, _, body = srv.request("GET", "/metrics")
    text = body.decode()
    t.check(metric(text, "mcp_exec_zygote_pid") == second and
            'mcp_exec_zygote_replacements_total{reason="runs"} 1' in text,
            "/metrics shows the new pid and one replacement for runs")
    t.check(re.search(r'mcp_exec_info\{[^}]*budget="(watchdog|cgroup)"', text),
            "/metrics names the run budget's method")
    t.check(srv.stop() == 0, "the HTTP server exits cleanly on SIGTERM")
    audit = [json.loads(l) for l in srv.drain_stderr().splitlines() if '"audit"' in l]
    t.check(len(audit) >= 4 and all(a["warm"] for a in audit),
            "every run was forked: none waited for the new zygote or started cold",
            [a["warm"] for a in audit])


def renewal_after_age():
    s, _ = start("auto", MCP_EXEC_LOG_FORMAT="json", MCP_EXEC_WARM_MAX_AGE_S=1,
                 MCP_EXEC_WARM_MAX_RUNS=0)
    first = zygote_of(s.proc.pid)
    line = wait_until(lambda: re.search(r"fork server renewed: zygote pid (\d+) replaced pid "
                                        + str(first) + r" \(age", s.stderr_text()))
    t.check(line, "an idle zygote is replaced after MCP_EXEC_WARM_MAX_AGE_S")
    sc = structured(s.call("import os; print(os.getppid())"))
    t.check(line and sc is not None and sc["stdout"] == line.group(1) + "\n",
            "runs come from the new zygote", sc)
    stop(s)


def limits_of(text, hard=False):
    """/proc/<pid>/limits as {name: soft (or hard) limit string}."""
    out = {}
    for line in text.splitlines()[1:]:
        m = re.match(r"(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if m:
            out[m.group(1)] = m.group(3 if hard else 2)
    return out


def zygote_rlimits():
    s, _ = start("auto", MCP_EXEC_MEMORY_MB="384", MCP_EXEC_MAX_PROCS="24")
    zyg = zygote_of(s.proc.pid)
    with open(f"/proc/{zyg}/limits") as f:
        text = f.read()
        z, zh = limits_of(text), limits_of(text, hard=True)
    with open(f"/proc/{zyg}/status") as f:
        zyg_vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmPeak:"))
    print("   zygote limits:", z)
    sc = structured(s.call("print(open('/proc/self/limits').read())")) or {}
    r, rh = limits_of(sc.get("stdout", "")), limits_of(sc.get("stdout", ""), hard=True)
    print("   forked run's limits:", r)
    # RLIMIT_NPROC is left as the server had it (each child sets the run's).
    t.check(z.get("Max cpu time") == "unlimited" and z.get("Max processes") != r.get("Max processes"),
            "the zygote has no CPU or process limit of its own", z)
    t.check(z.get("Max address space") == str(384 * 1024 * 1024) and z.get("Max core file size") == "0"
            and zh.get("Max address space") == "unlimited"
            and z.get("Max open files") not in (None, "unlimited"),
            "the zygote has the run's memory (soft: its children set theirs), core and "
            "descriptor limits", (z, zh))
    # Its address space: the run's limit plus what the zygote had mapped when it
    # forked it (the run can allocate what a cold run can; its budget still holds).
    run_as = int(r.get("Max address space", "0")) if r.get("Max address space", "x").isdigit() else 0
    t.check(r.get("Max cpu time") not in (None, "unlimited") and
            r.get("Max processes") not in (None, "unlimited") and
            384 * 1024 * 1024 + 8 * 1024 * 1024 < run_as <= 384 * 1024 * 1024 + zyg_vm
            and rh.get("Max address space") == r.get("Max address space")
            and r.get("Max open files") == "256" and r.get("Max core file size") == "0",
            "a forked run gets the run's rlimits, CPU and processes included, its address "
            "space raised by what the zygote maps", (r, zyg_vm))
    # RLIMIT_CPU of a warm run is re-based when its code arrives: the whole
    # seconds the process had used (none, for a fresh fork) + 1 + the run's
    # CPU seconds (its timeout here), hard one more (docs/security.md).
    sc = structured(s.call("print(open('/proc/self/limits').read())", timeout_s=7)) or {}
    cpu = re.search(r"Max cpu time\s+(\S+)\s+(\S+)", sc.get("stdout", ""))
    t.check(cpu and cpu.groups() == ("8", "9"),
            "a forked run's RLIMIT_CPU is (timeout + 1, timeout + 2)", cpu and cpu.groups())
    stop(s)


def first_run_waits_for_zygote():
    """Start-up does not wait for the first zygote (protocol requests are answered
    while it preloads), and neither does a run (issue 30, item 6): one sent at
    once starts cold when no zygote of its kind is proven yet, or is forked
    from one that is."""
    s = StdioServer(base_env(MCP_EXEC_WARM="auto"))
    r = s.request("server/discover", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}})
    t.check(r is not None and "result" in r, "server/discover is answered at start-up", r)
    s.initialize()
    sc = structured(s.call("import os; print(os.getppid())"))
    zyg = zygote_of(s.proc.pid)
    t.check(sc is not None and sc["exit_code"] == 0 and
            sc["stdout"] in (f"{s.proc.pid}\n", f"{zyg}\n"),
            "a run sent at start-up does not wait for the preload: cold, or forked from the "
            "zygote", (sc, zyg, s.proc.pid))
    stop(s)


self_kill(MODE)
if MODE != "0":
    if warm_mode(base_env(MCP_EXEC_WARM="auto")) == "fork-server":
        first_run_waits_for_zygote()
        zygote_rlimits()
        zygote_killed_mid_run()
        pending_child_killed()
        renewal_after_runs()
        renewal_after_age()
    else:
        print("(no fork-server mode on this kernel: zygote checks skipped)")
    self_kill("after-reap")
    after_reap_interpreter_killed()
t.done()
