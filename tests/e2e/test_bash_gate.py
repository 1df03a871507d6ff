"""The prepared bash (src/exec/bash_pool.c, src/sandbox/gate.c): in
fork-server and after-reap modes, once a bash call has come, the next bash
waits inside the sandbox at a gate for its script (in after-reap mode only
after a bash run, and never beside another run). A run it takes must look exactly like a
cold one: $0, no BASH_ENV, no gate in the workdir, the call's CPU and memory
limits, stdin, files in and out/, the timeout. A run beside the waiting bash
cannot signal it or read it (fork-server mode); in after-reap mode a Python
run finds none beside it. A prepared bash that died while it waited costs
the next call nothing but the cold start. In the cold variant
(MCP_EXEC_WARM=0) nothing is prepared and the same results hold."""
import os
import signal
import time

from mcpx_harness import Failures, StdioServer, audits, base_env, structured, warm_mode
from mcpx_harness import prepared_bash_pids as harness_prepared_bash_pids, wait_bash_at_gate

t = Failures()
MEMORY_MB = 300
env = base_env(MCP_EXEC_MAX_PROCS=64, MCP_EXEC_MEMORY_MB=MEMORY_MB, MCP_EXEC_LANGUAGES="python,bash")
mode = warm_mode(env)
forked = mode == "fork-server"
prepares = mode in ("fork-server", "after-reap")
s = StdioServer(env)
s.initialize()
if forked:
    s.wait_fork_server()


def bash(code, **kw):
    sc = structured(s.call(code, language="bash", **kw)) or {}
    return sc


def last_exec_audit():
    recs = audits(s.stderr_text(), "exec")
    return recs[-1] if recs else {}


def prepared_bash_pids():
    return harness_prepared_bash_pids(s.proc.pid)


def wait_prepared(timeout=10):
    """A prepared bash waits at its gate (and the server has seen it)."""
    return wait_bash_at_gate(s.proc.pid, timeout)


# The first bash call starts cold; it is what makes the server prepare one.
LIMITS = 'echo "cpu=$(ulimit -S -t)/$(ulimit -H -t) as=$(ulimit -S -v)/$(ulimit -H -v)"'
sc = bash(LIMITS, timeout_s=7)
cold_limits = sc.get("stdout", "")
t.check(sc.get("exit_code") == 0 and
        f"cpu=7/8 as={MEMORY_MB * 1024}/{MEMORY_MB * 1024}" in cold_limits,
        "a first bash call runs, with the call's CPU limit and the server's memory limit", sc)
t.check(last_exec_audit().get("warm") is False, "the first bash call starts cold", last_exec_audit())
if prepares:
    t.check(wait_prepared(), f"{mode} mode: a bash is prepared after the first bash call",
            prepared_bash_pids())
else:
    time.sleep(0.3)
    t.check(not prepared_bash_pids(), "with the warm path off no bash is prepared",
            prepared_bash_pids())

# ---- a taken run looks like a cold one -----------------------------------
SCRIPT = r'''
echo "0=$0"
echo "env=${BASH_ENV-unset}"
echo "sub=$(bash -c 'echo ${BASH_ENV-unset}')"
echo "files=$(ls -A | tr '\n' ' ')"
LIMITS
echo "in=$(cat)"
echo "line=$LINENO"
cp .mcpx-gate out/copy.txt
nosuch_command_here
exit 3
'''
sc = bash(SCRIPT.replace("LIMITS", LIMITS), timeout_s=7, stdin="hello",
          files=[{"path": ".mcpx-gate", "content": "an input file may have the gate's name"}])
out = sc.get("stdout", "")
want = ["0=main.sh", "env=unset", "sub=unset", "files=.mcpx-gate main.sh out ",
        cold_limits.strip(), "in=hello", "line=8"]
t.check(all(w + "\n" in out for w in want), "the script sees what a cold run sees", out)
t.check(sc.get("exit_code") == 3 and "main.sh: line 10: nosuch_command_here" in sc.get("stderr", ""),
        "exit code and bash's own error messages name main.sh", sc)
got = {f["path"]: f for f in sc.get("files", [])}
t.check("out/copy.txt" in got, "files in and out/ work", sc.get("files"))
rec = last_exec_audit()
t.check(rec.get("warm") is prepares, f"the run was {'taken by the prepared bash' if prepares else 'cold'}",
        rec)
t.check(isinstance(sc.get("cpu_ms"), int) and sc.get("cpu_ms") >= 0, "cpu_ms reported", sc)

# The call's timeout holds (the wall clock starts with the call, not the preparation).
if prepares:
    wait_prepared()
sc = bash("sleep 30", timeout_s=1)
t.check(sc.get("timed_out") is True and sc.get("limit") == "timeout", "the timeout ends a prepared bash's run", sc)

# ---- a run beside the waiting bash cannot reach it ------------------------
if prepares:
    t.check(wait_prepared(), "a bash is prepared again after the timed-out run", prepared_bash_pids())
PROBE = r'''
import os
me = os.getpgrp()
found, reached = 0, []
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        with open(f"/proc/{d}/stat") as f:
            pgrp = int(f.read().rsplit(")", 1)[1].split()[2])
        if os.stat(f"/proc/{d}").st_uid != os.getuid() or pgrp == me:
            continue
    except OSError:
        continue
    found += 1
    try:
        os.kill(int(d), 0)
        reached.append(f"kill {d}")
    except OSError:
        pass
    for what in ("environ", "mem"):
        try:
            open(f"/proc/{d}/{what}", "rb").read(1)
            reached.append(f"{what} {d}")
        except OSError:
            pass
    try:
        os.readlink(f"/proc/{d}/cwd")
        reached.append(f"cwd {d}")
    except OSError:
        pass
siblings = 0  # the server's other children
for d in os.listdir("/proc"):
    try:
        with open(f"/proc/{d}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        siblings += int(fields[1]) == os.getppid() and int(fields[2]) != me
    except (OSError, ValueError, IndexError):
        pass
print(found, reached, "siblings", siblings)
'''
sc = structured(s.call(PROBE)) or {}
out = sc.get("stdout", "").strip()
if forked:
    t.check(out.startswith(tuple("123456789")) and "[] siblings" in out,
            "a Python run sees the waiting processes of its uid but cannot signal or read them",
            sc)
if mode == "after-reap":
    t.check(out.endswith("siblings 0"), "after-reap: a Python run has no prepared bash beside it",
            sc)
sc = bash("echo still")
t.check(sc.get("stdout") == "still\n", "the next bash call works", sc)
if forked:
    t.check(last_exec_audit().get("warm") is True, "and was taken by the prepared bash",
            last_exec_audit())

# ---- a prepared bash that died while it waited ------------------------------
if prepares:
    t.check(wait_prepared(), "prepared again", prepared_bash_pids())
    for pid in prepared_bash_pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    sc = bash("echo after")
    t.check(sc.get("stdout") == "after\n" and sc.get("exit_code") == 0,
            "a call finds the prepared bash dead and starts cold", sc)
    t.check(last_exec_audit().get("warm") is False, "that call was cold", last_exec_audit())
    t.check(wait_prepared(), "and the next one is prepared", prepared_bash_pids())
    sc = bash("echo again")
    t.check(sc.get("stdout") == "again\n" and last_exec_audit().get("warm") is True,
            "taken by the new prepared bash", (sc, last_exec_audit()))

# ---- shutdown ends it --------------------------------------------------------
pids = prepared_bash_pids()
s.close()
time.sleep(0.2)
alive = [p for p in pids if os.path.exists(f"/proc/{p}")]
t.check(not alive, "the server's exit ends the prepared bash", alive)
t.done()
