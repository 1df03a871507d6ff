"""A run's budget covers all of its processes (issue 11): output beyond the
cap is dropped while the program runs on; memory, disk and CPU are counted
for the run as a whole, not per process, and a function the run calls with
mcpx.call (issue 15) counts against the calling run's budget.

Runs through the real binary over stdio in the warm mode ctest picks
(MCPX_TEST_WARM); with warm interpreters on, every check runs once more in
after-reap mode, so fork-server children, fresh warm interpreters and cold
starts are all covered. Programs that must be stopped by a budget block
afterwards (sleep), so without the budget they would end by the timeout
instead: the result tells the two apart, no timing is involved.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from mcpx_harness import BIN, Failures, StdioServer, base_env, for_server, structured, warm_mode

t = Failures()

def stop(s):
    """Ends a stdio server and checks it went cleanly (a sanitizer build
    reports leaks and errors through the exit status)."""
    rc = s.close()
    t.check(rc == 0, "the server exits cleanly", (rc, s.stderr_text()[-2000:]))

MODES = ["auto", "after-reap"] if os.environ.get("MCPX_TEST_WARM", "auto") != "0" else ["0"]


def start(mode, **extra):
    env = base_env(MCP_EXEC_WARM=mode, **extra)
    s = StdioServer(env)
    s.initialize()
    if warm_mode(env) == "fork-server":
        t.check(s.wait_fork_server(), f"[{mode}] the fork server's zygote became ready")
    return s


def brief(sc):
    return sc and {k: (v if k not in ("stdout", "stderr") else v[-300:]) for k, v in sc.items()}


def run(s, code, **kw):
    r = s.call(code, timeout=180, **kw)
    sc = structured(r)
    if sc is None:
        print("   (no structured result)", r)
        return {"stdout": "", "stderr": "", "exit_code": None, "limit": None, "signal": None,
                "truncated": None, "cpu_ms": 0}
    return sc


def output_cap(mode):
    s = start(mode, MCP_EXEC_MAX_OUTPUT_BYTES=4096)
    # 10 MB through a 4 KiB cap (far more than a pipe holds), then work that
    # only happens if the program was neither killed nor blocked on a full
    # pipe.
    sc = run(s, """
import sys
for i in range(2000):
    sys.stdout.write('x' * 5000)
sys.stdout.flush()
print('still here', file=sys.stderr)
sys.exit(7)
""")
    t.check(sc["truncated"] is True and sc["exit_code"] == 7 and sc["signal"] is None
            and sc["limit"] is None,
            f"[{mode}] output over the cap: the run goes on to its own exit code, truncated",
            brief(sc))
    t.check(len(sc["stdout"]) + len(sc["stderr"]) == 4096 and sc["stdout"] == "x" * 4096,
            f"[{mode}] exactly the cap is kept, the rest is dropped",
            (len(sc["stdout"]), len(sc["stderr"])))
    sc = run(s, "print('small')")
    t.check(sc["truncated"] is False and sc["stdout"] == "small\n",
            f"[{mode}] a run under the cap is not truncated", brief(sc))
    stop(s)


# 12 processes of 100 MiB each: every one is far under RLIMIT_AS, together
# they are more than twice the run's budget. (Few processes on purpose:
# RLIMIT_NPROC counts every task of uid 65532 on the host, so a run with
# many would take the process budget of runs in tests running beside it.)
MANY_PROCS = """
import os, time
r, w = os.pipe()
for i in range(12):
    if os.fork() == 0:
        os.close(r)
        b = bytearray(b'\\x01') * (100 << 20)
        os.write(w, b'.')
        time.sleep(3600)
        os._exit(0)
os.close(w)
got = 0
while got < 12:
    got += len(os.read(r, 64))
print('all allocated', flush=True)
time.sleep(3600)
"""

# 256 MiB in the parent, shared (copy-on-write) with four forked workers:
# RSS summed per process is far over 512 MiB, the memory really used is not.
SHARED_DATA = """
import os, time
data = bytearray(b'\\x02') * (256 << 20)
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        while time.process_time() < 0.3:
            pass
        os._exit(data[12345])
    kids.append(pid)
print(sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in kids))
"""


# Bytes queued in socketpairs are kernel memory no process maps (issue 21 B):
# PROCS processes each fill PAIRS socketpairs with SO_SNDBUF as large as the
# host allows, 640 MiB together against a 512 MiB budget, then wait. Without
# counting the socket buffers the run would reach its timeout.
with open("/proc/sys/net/core/wmem_max") as f:
    SOCK_BUF = min(int(f.read()), 4 << 20)
SOCK_PAIRS = 100
SOCK_PROCS = -(-(640 << 20) // (2 * SOCK_BUF * SOCK_PAIRS))
SOCKET_BUFFERS = f"""
import os, socket, time
r, w = os.pipe()
for i in range({SOCK_PROCS}):
    if os.fork() == 0:
        os.close(r)
        held = []
        for j in range({SOCK_PAIRS}):
            a, b = socket.socketpair()
            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, {SOCK_BUF})
            a.setblocking(False)
            try:
                while True:
                    a.send(b'x' * 65536)
            except BlockingIOError:
                pass
            held.append((a, b))
        os.write(w, b'.')
        time.sleep(3600)
        os._exit(0)
os.close(w)
got = 0
while got < {SOCK_PROCS}:
    got += len(os.read(r, 64))
print('all filled', flush=True)
time.sleep(3600)
"""


def memory(mode):
    s = start(mode, MCP_EXEC_MEMORY_MB=512)
    sc = run(s, MANY_PROCS, timeout_s=30)
    t.check(sc["limit"] == "memory" and sc["signal"] == "SIGKILL" and sc["timed_out"] is False
            and "all allocated" not in sc["stdout"],
            f"[{mode}] 12 processes x 100 MiB against a 512 MiB budget end with limit memory",
            brief(sc))
    sc = run(s, SOCKET_BUFFERS, timeout_s=30)
    t.check(sc["limit"] == "memory" and sc["signal"] == "SIGKILL" and sc["timed_out"] is False,
            f"[{mode}] socket buffers ({SOCK_PROCS} processes x {SOCK_PAIRS} full socketpairs) "
            "count towards the memory budget", brief(sc))
    sc = run(s, SHARED_DATA, timeout_s=60)
    t.check(sc["exit_code"] == 0 and sc["limit"] is None and sc["stdout"] == "[2, 2, 2, 2]\n",
            f"[{mode}] memory shared copy-on-write by five processes counts once", brief(sc))
    stop(s)


# 160 MiB in one piece under a 256 MiB limit: a cold run starts with about
# 15 MiB of address space, a child of a zygote that preloaded numpy and
# matplotlib with ten times that; RLIMIT_AS is the limit plus what the run
# started with, so both can (issue 22).
ONE_BIG = """
b = bytearray(b'\\x03') * (160 << 20)
print(len(b) >> 20, b[-1])
"""

# A process of the run (not the leader) hits the memory limit: its
# MemoryError is the run's limit, though the leader carries on and exits 0.
CHILD_OOM = """
import subprocess, sys
r = subprocess.run([sys.executable, '-c', "b = bytearray(b'x') * (700 << 20)"])
print('child exit', r.returncode)
"""


def memory_like_cold(mode):
    s = start(mode, MCP_EXEC_MEMORY_MB=256)
    sc = run(s, ONE_BIG, timeout_s=60)
    t.check(sc["exit_code"] == 0 and sc["limit"] is None and sc["stdout"] == "160 3\n",
            f"[{mode}] a run can allocate 160 MiB in one piece under a 256 MiB limit, as a "
            "cold run can", brief(sc))
    sc = run(s, CHILD_OOM, timeout_s=60)
    t.check(sc["exit_code"] == 0 and sc["stdout"] == "child exit 1\n"
            and "MemoryError" in sc["stderr"] and sc["limit"] == "memory",
            f"[{mode}] a MemoryError in a child process of the run reports limit memory",
            brief(sc))
    stop(s)


def disk(mode):
    s = start(mode, MCP_EXEC_MAX_DISK_MB=16, MCP_EXEC_MAX_FILE_MB=4)
    # Each file is half the per-file cap; fifty of them are twelve times the
    # run's disk budget.
    sc = run(s, """
import time
chunk = b'x' * (2 << 20)
for i in range(50):
    with open('f%d' % i, 'wb') as f:
        f.write(chunk)
print('wrote all', flush=True)
time.sleep(3600)
""", timeout_s=30)
    t.check(sc["limit"] == "disk" and sc["signal"] == "SIGKILL" and sc["timed_out"] is False
            and "wrote all" not in sc["stdout"],
            f"[{mode}] many files under the per-file cap that pass the budget: limit disk",
            brief(sc))
    sc = run(s, """
import os, time
chunk = b'x' * (2 << 20)
for i in range(20):
    with open('/dev/shm/mcpx-budget-%d-%d' % (os.getpid(), i), 'wb') as f:
        f.write(chunk)
print('wrote shm', flush=True)
time.sleep(3600)
""", timeout_s=30)
    t.check(sc["limit"] == "disk" and sc["timed_out"] is False,
            f"[{mode}] files in /dev/shm count towards the run's disk", brief(sc))
    # No name leads to any of these; each is under the per-file cap.
    sc = run(s, """
import os, time
held = []
for i in range(5):
    f = open('hidden%d' % i, 'wb')
    os.unlink('hidden%d' % i)
    f.write(b'x' * (2 << 20))
    f.flush()
    held.append(f)
for i in range(5):
    m = os.fdopen(os.memfd_create('more'), 'wb')
    m.write(b'y' * (2 << 20))
    m.flush()
    held.append(m)
print('wrote unlinked', flush=True)
time.sleep(3600)
""", timeout_s=30)
    t.check(sc["limit"] == "disk" and sc["timed_out"] is False,
            f"[{mode}] an unlinked file held open and a memfd count towards the run's disk",
            brief(sc))
    sc = run(s, "for n in 'ab': open(n, 'wb').write(b'z' * (3 << 20))\nprint('fine')")
    t.check(sc["exit_code"] == 0 and sc["limit"] is None and sc["stdout"] == "fine\n",
            f"[{mode}] a run under its disk budget is left alone", brief(sc))
    stop(s)


def fast_disk(mode):
    """A run that writes faster than any reading and exits at once (issue
    34): 40 x 1 MiB under a 20 MiB budget. The write that crosses the
    budget fails, or the run is stopped before it can write much more, and
    the result says limit "disk" however it ended; twice each, in the
    workdir, in /dev/shm, in files held open after unlinking them, and as
    one file. The workdirs are on tmpfs, as in the pod (/tmp is a
    memory-backed emptyDir): writes there are as fast as memory."""
    base = tempfile.mkdtemp(prefix="mcpx-fast-disk-", dir="/dev/shm")
    os.chmod(base, 0o711)
    s = start(mode, MCP_EXEC_MAX_DISK_MB=20, MCP_EXEC_MAX_FILE_MB=64, MCP_EXEC_WORKDIR_BASE=base)
    cases = {
        "workdir files": "open('f%d' % i, 'wb')",
        "/dev/shm files": "open('/dev/shm/mcpx-fast-%d-%d' % (os.getpid(), i), 'wb')",
        "files held open after unlinking": "unlinked('u%d' % i)",
    }
    prelude = ("import os, sys\nheld = []\n"
               "def unlinked(name):\n"
               "    f = open(name, 'wb')\n"
               "    os.unlink(name)\n"
               "    held.append(f)\n"
               "    return f\n")
    for what, opener in cases.items():
        for attempt in (1, 2):
            sc = run(s, prelude + f"""
n = 0
try:
    for i in range(40):
        f = {opener}
        f.write(b'x' * (1 << 20))
        f.flush()
        n += 1
        print(n, flush=True)
except OSError as e:
    print('stopped:', e.strerror)
print('wrote', n)
""", timeout_s=30)
            # How many MiB it had written when it was stopped: the last
            # number it printed (all 40 and "wrote 40" if nothing stopped it).
            counts = re.findall(r"^(\d+)$", sc["stdout"], re.M)
            wrote = int(counts[-1]) if counts else 0
            print(f"   [{mode}] {what}, run {attempt}: stopped after {wrote} MiB, "
                  f"exit {sc['exit_code']}")
            # Many files pass RLIMIT_FSIZE one by one: what stops them is
            # the server's reaction to the watch's events, so how far they
            # got depends on the CPU the server gets. Beside CPU spinners
            # (scripts/test.sh sets MCPX_TEST_LOADED) a run may finish all
            # 40 first; the limit it reports must not change.
            if os.environ.get("MCPX_TEST_LOADED") == "1":
                t.check(sc["limit"] == "disk" and sc["exit_code"] == -1,
                        f"[{mode}] {what}, run {attempt}: 40 x 1 MiB under 20 MiB, exiting at "
                        f"once, beside CPU spinners: limit disk ({wrote} written)", brief(sc))
            else:
                t.check(sc["limit"] == "disk" and wrote < 40 and "wrote 40" not in sc["stdout"],
                        f"[{mode}] {what}, run {attempt}: 40 x 1 MiB under 20 MiB, exiting at "
                        f"once: limit disk, stopped before the 40th ({wrote} written)", brief(sc))
    # One file: RLIMIT_FSIZE (at most the budget, lowered to what remains
    # plus a block as the run writes) fails the write that would cross it,
    # whether or not a reading got there first; the file never grows past
    # the budget by more than that block.
    sc = run(s, """
import os
with open('one', 'wb') as f:
    try:
        for i in range(40):
            f.write(b'x' * (1 << 20))
            f.flush()
            print(f.tell(), flush=True)
    except OSError as e:
        print('stopped:', e.strerror, os.fstat(f.fileno()).st_size, flush=True)
""", timeout_s=30)
    sizes = [int(x) for x in re.findall(r"(\d+)$", sc["stdout"], re.M)]
    t.check(sc["limit"] == "disk" and sizes and max(sizes) <= (20 << 20) + 4096,
            f"[{mode}] one file of 40 MiB under 20 MiB: it never grows past the budget by more "
            f"than a block (largest seen {max(sizes or [0])} bytes), and the result says limit "
            f"disk", brief(sc))
    stop(s)
    shutil.rmtree(base, ignore_errors=True)


# Two children burn half a CPU second each and live on: the leader never
# waits for them, so only the server (which reaps them after the run, as
# the subreaper they were handed to) can count them.
CHILDREN_BURN = """
import os, time
r, w = os.pipe()
for i in range(2):
    if os.fork() == 0:
        while time.process_time() < 0.5:
            pass
        os.write(w, b'.')
        time.sleep(3600)
os.close(w)
got = 0
while got < 2:
    got += len(os.read(r, 8))
print('children burnt', flush=True)
"""

# Four children spin forever; each alone would hit its own RLIMIT_CPU only
# after MCP_EXEC_CPU_S, together they pass the run's budget after a quarter
# of that.
SPINNERS = """
import os
for i in range(4):
    if os.fork() == 0:
        while True:
            pass
for i in range(4):
    os.wait()
print('children ended', flush=True)
"""


def cpu(mode):
    s = start(mode, MCP_EXEC_CPU_S=4)
    sc = run(s, CHILDREN_BURN, timeout_s=60)
    t.check(sc["exit_code"] == 0 and sc["cpu_ms"] >= 1000,
            f"[{mode}] cpu_ms counts children the program never waited for", brief(sc))
    sc = run(s, SPINNERS, timeout_s=60)
    t.check(sc["limit"] == "cpu" and sc["signal"] == "SIGKILL" and sc["cpu_ms"] >= 4000
            and sc["cpu_ms"] < 4 * 4000 and "children ended" not in sc["stdout"],
            f"[{mode}] MCP_EXEC_CPU_S holds for the whole run: limit cpu", brief(sc))
    stop(s)


# ---- nested calls ----------------------------------------------------------

# A function that takes what it is asked to (memory, files in its workdir,
# CPU), then returns, or holds on to it until something ends it.
HOG = """
import time
def handler(args, ctx):
    held = bytearray(b'\\x03') * (args.get('mb', 0) << 20)
    for i in range(args.get('files', 0)):
        with open('hog%d' % i, 'wb') as f:
            f.write(b'h' * (2 << 20))
    while time.process_time() < args.get('spin_s', 0):
        pass
    if args.get('hold'):
        time.sleep(3600)
    return {'held_mb': len(held) >> 20, 'files': args.get('files', 0)}
"""

# The caller takes its share, then calls hog for the rest and waits.
CALLER = """
import mcpx, time
{take}
print('took my share', flush=True)
try:
    print('call returned', mcpx.call('hog', **{args}))
except mcpx.ToolError as e:
    print('tool error:', e)
"""


def nested_setup():
    """A policy publishing hog, its source where runs cannot read it."""
    top = tempfile.mkdtemp(prefix="mcpx-budget-fn-")
    os.chmod(top, 0o755)
    work, admin = os.path.join(top, "work"), os.path.join(top, "admin")
    os.mkdir(work, 0o711)
    for_server(work)
    os.mkdir(admin, 0o755)
    with open(os.path.join(admin, "hog.py"), "w") as f:
        f.write(HOG)
    pol = {"functions": [{"name": "hog", "description": "Takes memory, disk or CPU.",
                          "input_schema": {"type": "object"},
                          "source_file": os.path.join(admin, "hog.py"),
                          "timeout_s": 20, "callable_from_exec": True}]}
    with open(os.path.join(admin, "policy.json"), "w") as f:
        json.dump(pol, f)
    for name in ("hog.py", "policy.json"):
        os.chmod(os.path.join(admin, name), 0o644)
    return top, work, os.path.join(admin, "policy.json")


def hog_audits(s):
    return [json.loads(l) for l in s.stderr_text().splitlines()
            if '"audit":"exec"' in l and '"tool":"hog"' in l]


def fcall(s, args):
    return structured(s.request("tools/call", {"name": "hog", "arguments": args}, timeout=180))


def nested_case(s, mode, what, take, args, limit):
    """The function alone, then the caller's share plus the same call: alone
    each is within the budget; together they pass it, and the caller ends
    with the limit (so does its nested run, told by the caller's budget)."""
    alone = dict(args, hold=False)
    sc = fcall(s, alone)
    t.check(sc and sc.get("held_mb") == alone.get("mb", 0),
            f"[{mode}] {what}: the function alone stays within the budget", sc)
    before = len(hog_audits(s))
    sc = run(s, CALLER.format(take=take, args=repr(dict(args, hold=True))), timeout_s=60)
    t.check(sc["limit"] == limit and sc["signal"] == "SIGKILL" and sc["timed_out"] is False
            and "took my share" in sc["stdout"] and "call returned" not in sc["stdout"]
            and "tool error" not in sc["stdout"],
            f"[{mode}] {what}: a caller whose nested call passes the budget ends with limit "
            f"{limit}", brief(sc))
    # The nested run is reaped after its caller's answer went out: its
    # audit line is waited for, not assumed.
    deadline = time.time() + 60
    while len(hog_audits(s)) == before and time.time() < deadline:
        s._pump(0.2)
    nested = hog_audits(s)[before:]
    t.check(len(nested) == 1 and nested[0]["depth"] == 1 and nested[0]["limit"] == limit,
            f"[{mode}] {what}: the nested run ended with the caller's budget", nested)


def nested(mode):
    top, work, policy = nested_setup()
    env = dict(MCP_EXEC_POLICY=policy, MCP_EXEC_WORKDIR_BASE=work, MCP_EXEC_MEMORY_MB=512,
               MCP_EXEC_MAX_DISK_MB=16)
    # Memory and disk with a CPU budget that cannot be reached first: on a
    # loaded machine filling 300 MiB twice takes more than a second of CPU,
    # and which limit comes first must not depend on the load.
    s = start(mode, MCP_EXEC_CPU_S=60, **env)
    sc = run(s, "data = bytearray(b'\\x01') * (300 << 20)\nprint('fine')", timeout_s=60)
    t.check(sc["exit_code"] == 0 and sc["limit"] is None,
            f"[{mode}] the caller alone may hold 300 MiB of the 512 MiB budget", brief(sc))
    nested_case(s, mode, "memory", "data = bytearray(b'\\x01') * (300 << 20)", {"mb": 300},
                "memory")
    nested_case(s, mode, "disk", "for i in range(5):\n    open('mine%d' % i, 'wb').write("
                "b'm' * (2 << 20))", {"files": 5}, "disk")
    stop(s)
    s = start(mode, MCP_EXEC_CPU_S=2, **env)
    nested_case(s, mode, "cpu", "while time.process_time() < 1.2:\n    pass",
                {"spin_s": 1.2}, "cpu")
    stop(s)
    shutil.rmtree(top, ignore_errors=True)


def check_config():
    out = subprocess.run([BIN, "--check-config"], env=base_env(MCP_EXEC_MAX_DISK_MB=77),
                         capture_output=True, text=True, timeout=60).stdout
    t.check("MCP_EXEC_MAX_DISK_MB=77" in out, "--check-config shows MCP_EXEC_MAX_DISK_MB")
    t.check(re.search(r"^run budget: memory 512 MiB, disk 77 MiB .*method: (watchdog \(no "
                      r"per-run cgroups: .+\)|cgroup \(one cgroup v2 per run under /.+\))$",
                      out, re.M),
            "--check-config names the run budget's method and why", out[-600:])


check_config()
for mode in MODES:
    output_cap(mode)
    memory(mode)
    memory_like_cold(mode)
    disk(mode)
    fast_disk(mode)
    cpu(mode)
    nested(mode)

t.done()
