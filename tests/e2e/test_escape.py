"""Escape probes through the real binary: each promise of the sandbox is
attacked from inside an exec call, and each probe prints what it got.

ctest runs this file once per warm mode (MCPX_TEST_WARM: auto, after-reap,
0 for cold). The first server runs as the test's user (root: runs drop to
65532). When the test runs as root, a second server runs as a uid of its
own, as in the pod: server and runs share that uid and nothing is root. That
one proves what only a same-uid server can show: the directories above the
workdir are put back after a run changed them, and a fork storm stays within
MCP_EXEC_MAX_PROCS (no other process of that uid moves the count).

Under gVisor (MCPX_WRAP=runsc_wrap.py: the pod's posture, read-only root,
uid 65532, no capabilities) every probe runs too; where gVisor gives a run
something else (no Landlock, a procfs that ignores dumpable), the check
says so with a "[gVisor]" label and asserts what gVisor gives instead."""
import json
import os
import shutil
import socket
import tempfile
import time
import uuid

from mcpx_harness import (Failures, StdioServer, base_env, server_is_root, structured,
                          tool_error_text, under_gvisor, warm_mode)

t = Failures()
env = base_env(MCP_EXEC_MAX_PROCS=32, MCP_EXEC_MEMORY_MB=256, MCP_EXEC_MAX_FILE_MB=8)
s = StdioServer(env)
s.initialize()
# Where the kernel allows it, every probe below runs in a child forked from
# the zygote: wait for it, so the probes attack that path and not a cold start.
forked = warm_mode(env) == "fork-server"
if forked:
    t.check(s.wait_fork_server(), "the fork server's zygote became ready")


def run(code, **kw):
    r = s.call(code, **kw)
    sc = structured(r)
    if sc is None:
        print("   (no structured result)", r)
        return {"stdout": "", "stderr": "", "exit_code": None, "limit": None}
    print("   probe said:", (sc["stdout"] + sc["stderr"]).strip()[-300:].replace("\n", " | "))
    return sc


# A listener the sandbox must not reach.
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(1)
port = lsock.getsockname()[1]

sc = run(f"""
import socket
for fam, typ, addr in [(socket.AF_INET, socket.SOCK_STREAM, ('127.0.0.1', {port})),
                       (socket.AF_INET6, socket.SOCK_STREAM, ('::1', {port})),
                       (socket.AF_INET, socket.SOCK_DGRAM, ('127.0.0.1', 53))]:
    try:
        s = socket.socket(fam, typ); s.connect(addr); print('CONNECTED', fam)
    except OSError as e:
        print('denied', fam, e.errno)
for fam in (16, 17):  # netlink, packet
    try:
        socket.socket(fam, socket.SOCK_RAW); print('OPENED', fam)
    except OSError as e:
        print('denied', fam, e.errno)
a, b = socket.socketpair(); a.send(b'u'); print('unix ok', b.recv(1))
""")
t.check("CONNECTED" not in sc["stdout"] and "OPENED" not in sc["stdout"]
        and sc["stdout"].count("denied") == 5, "no network socket can be opened or connected", sc["stdout"])
t.check("unix ok" in sc["stdout"], "AF_UNIX socketpair still works (multiprocessing needs it)")

name = "/tmp/mcpx-escape-" + uuid.uuid4().hex
sc = run(f"""
import os
for p in ['{name}', '/var/tmp/x-{uuid.uuid4().hex}', os.path.expanduser('~/../sibling')]:
    try:
        open(p, 'w').write('x'); print('WROTE', p)
    except OSError as e:
        print('denied', e.errno)
print('cwd', os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR'])
open('mine.txt', 'w').write('ok'); print('own workdir writable')
""")
# Under gVisor (no Landlock) the run's filesystem view (fs_view.c) holds
# only the runtime, the devices and its workdir: the same refusals.
t.check("WROTE" not in sc["stdout"] and not os.path.exists(name),
        "cannot write outside the workdir", sc["stdout"])
t.check("cwd True" in sc["stdout"] and "own workdir writable" in sc["stdout"],
        "workdir is cwd, HOME and TMPDIR and is writable")

secret_path = "/tmp/mcpx-secret-" + uuid.uuid4().hex
with open(secret_path, "w") as f:
    f.write("TOP-SECRET-TOKEN")
os.chmod(secret_path, 0o644)
sc = run(f"""
import os
for p in ['{secret_path}', '/etc/shadow']:
    try:
        print('READ', open(p).read()[:40])
    except OSError as e:
        print('denied', p, e.errno)
try:
    print('LISTED', len(os.listdir('/tmp')))
except OSError as e:
    print('list denied', e.errno)
""")
os.unlink(secret_path)
if under_gvisor():
    # The filesystem view's /tmp holds the run's own workdir and nothing else.
    t.check("TOP-SECRET" not in sc["stdout"] and "READ" not in sc["stdout"]
            and "LISTED 1" in sc["stdout"],
            "[gVisor] the filesystem view: no file outside the runtime is there to read (a "
            "mounted token, other runs' files); /tmp lists only the run's own workdir",
            sc["stdout"])
else:
    t.check("TOP-SECRET" not in sc["stdout"] and "READ" not in sc["stdout"],
            "cannot read files outside the runtime (a mounted token, other runs' files)",
            sc["stdout"])

sc = run("""
import os, glob
open('persist.txt', 'w').write('x')
try:
    open('/dev/shm/mcpx-persist', 'w').write('x')
except OSError as e:
    print('shm denied', e.errno)
print(os.getcwd())
""")
first_wd = sc["stdout"].strip().splitlines()[-1] if sc["stdout"].strip() else ""
sc = run("""
import os
print('persist', os.path.exists('persist.txt'), os.path.exists('/dev/shm/mcpx-persist'))
print(os.getcwd())
""")
t.check("persist False False" in sc["stdout"], "nothing written survives into the next run", sc["stdout"])
t.check(first_wd and not os.path.exists(first_wd), "the previous workdir is removed", first_wd)

sc = run("""
import os, signal
pp = os.getppid()
for path in [f'/proc/{pp}/environ', f'/proc/{pp}/mem', f'/proc/{pp}/maps']:
    try:
        data = open(path, 'rb').read(65536)
        print('READ' if data.strip(b'\\0') else 'ZEROS', path)
    except OSError as e:
        print('denied', path, e.errno)
for sig in (0, signal.SIGTERM):
    try:
        os.kill(pp, sig); print('SIGNALLED', sig)
    except OSError as e:
        print('kill denied', e.errno)
try:
    os.kill(-1, signal.SIGKILL); print('KILLED ALL')
except OSError as e:
    print('kill -1 denied', e.errno)
""")
if under_gvisor():
    # gVisor's procfs serves environ and maps to every process, whatever
    # the owner's dumpable flag; the server zeroes its environment block.
    lines = sc["stdout"].splitlines()
    t.check(any(l.startswith("ZEROS /proc/") and l.endswith("/environ") for l in lines)
            and any(l.startswith("denied /proc/") and "/mem " in l for l in lines)
            and "SIGNALLED" not in sc["stdout"] and "KILLED ALL" not in sc["stdout"],
            "[gVisor] the server's environ shows only zeros, its mem is denied, no signal "
            "reaches it (its maps are readable there)", sc["stdout"])
else:
    t.check("READ" not in sc["stdout"] and "ZEROS" not in sc["stdout"]
            and "SIGNALLED" not in sc["stdout"] and "KILLED ALL" not in sc["stdout"],
            "cannot read or signal the server", sc["stdout"])
r = s.request("ping")
t.check(r and r.get("result") == {}, "server alive after the signal probes")

sc = run("""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def probe(name, rc):
    print(name, 'denied' if rc == -1 else 'ALLOWED', ctypes.get_errno())
probe('ptrace', libc.ptrace(16, os.getppid(), 0, 0))      # PTRACE_ATTACH
probe('unshare', libc.unshare(0x10000000))               # CLONE_NEWUSER
probe('setsid', libc.setsid())
probe('setpgid', libc.setpgid(0, 0))
probe('mount', libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))
probe('bpf', libc.syscall(321, 0, 0, 0))
probe('keyctl', libc.syscall(250, 0, 0, 0))
probe('io_uring_setup', libc.syscall(425, 1, 0))
""")
t.check("ALLOWED" not in sc["stdout"] and sc["stdout"].count("denied") == 8,
        "ptrace, namespaces, setsid, mount, bpf, keyctl, io_uring denied", sc["stdout"])

sc = run("import os; print(os.getuid(), os.getgid(), os.getgroups())")
if server_is_root():
    # The group is the server's own for its runs: 0x40000000 + its pid.
    t.check(sc["stdout"].strip() == f"65532 {0x40000000 + s.proc.pid} []",
            "runs as 65532, in its server's own group, without groups when started as root",
            sc["stdout"])

marker = "mcpx-orphan-" + uuid.uuid4().hex
sc = run(f"""
import os, sys, time, subprocess
# Double fork: the grandchild detaches from the leader and tries to leave the
# process group; it should die with the run anyway. The sleepers are Python
# (the runtime image has no /bin/sleep), marked by an extra argument.
sleeper = [sys.executable, '-c', 'import time; time.sleep(300)', '{marker}']
if os.fork() == 0:
    try: os.setsid()
    except OSError: pass
    if os.fork() == 0:
        os.execv(sys.executable, sleeper)
    os._exit(0)
subprocess.Popen(sleeper)
time.sleep(0.5)
print('leader exits')
""")
time.sleep(0.5)


def marker_procs():
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(d)
            except OSError:
                pass
    return found


# Seen from a run too: under gVisor the sandbox's processes are not in this
# host's /proc at all.
look = run(f"""
import os
found = []
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            if b'{marker}' in open('/proc/%s/cmdline' % d, 'rb').read():
                found.append(d)
        except OSError:
            pass
print('survivors', len(found))
""")
t.check("leader exits" in sc["stdout"] and not marker_procs() and "survivors 0" in look["stdout"],
        "no process started by a run survives it (double fork, setsid attempt), seen from the "
        "host and from the next run", (marker_procs(), look["stdout"]))

sc = run("""
import os
n = 0
try:
    while True:
        if os.fork() == 0:
            import time; time.sleep(20); os._exit(0)
        n += 1
except OSError as e:
    print('fork stopped after', n, 'errno', e.errno)
    raise SystemExit(1)
""", timeout_s=20)
# Bounded either way: the program sees EAGAIN and exits, or the watchdog's
# process count ends it first (a slow machine). Under gVisor the memory
# budget may come first: its smaps give no proportional size, so the
# pages the forks share count once per fork.
bounded = (sc["exit_code"] == 1 and "fork stopped" in sc["stdout"]) or sc["limit"] == "processes"
if under_gvisor():
    t.check(bounded or sc["limit"] == "memory",
            "[gVisor] a fork bomb is bounded (by EAGAIN, the process count, or the memory budget, "
            "which counts shared pages once per fork there)", (sc["stdout"], sc["limit"]))
else:
    t.check(bounded, "a fork bomb is bounded", (sc["stdout"], sc["exit_code"], sc["limit"]))
r = s.request("ping")
t.check(r and r.get("result") == {}, "server alive after the fork bomb")

sc = run("x = bytearray(1024 * 1024 * 1024)")
t.check(sc["limit"] == "memory" and sc["exit_code"] != 0, "a memory bomb ends with limit memory", sc["limit"])

sc = run("""
with open('big', 'wb') as f:
    while True:
        f.write(b'0' * 65536)
""")
t.check(sc["limit"] == "file_size", "a disk filler ends with limit file_size", sc["limit"])

sc = run("while True: pass", timeout_s=2)
t.check(sc["limit"] in ("cpu", "timeout") and sc["exit_code"] == -1, "a busy loop is stopped", sc["limit"])

sc = run("""
import numpy, multiprocessing, threading
def sq(x): return x * x
with multiprocessing.Pool(2) as p:
    print(sum(p.map(sq, range(10))))
th = threading.Thread(target=lambda: print('thread ok')); th.start(); th.join()
print(numpy.arange(5).sum())
""", timeout_s=60)
t.check(sc["stdout"].split() == ["285", "thread", "ok", "10"],
        "numpy, multiprocessing.Pool and threads work inside the sandbox", sc["stdout"] + sc["stderr"][-500:])

# ---- the escape probe (tests/probes/escape.py) through the server ----------
# The same probe the sandbox unit test runs, here in whatever way this mode
# starts a run (forked from the zygote, a fresh warm interpreter, cold).
# Every rule of the seccomp filter is checked; the server always has it.
PROBES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probes")
with open(os.path.join(PROBES, "escape.py")) as f:
    sc = run(f.read(), stdin="%d\n" % s.server_pid(), timeout_s=60)
got = dict(l.split("=", 1) for l in sc["stdout"].splitlines() if "=" in l)
SECCOMP_EPERM = ["sock_inet", "sock_inet6", "sock_netlink", "kill_server", "kill_server_group",
                 "kill_all", "kill_all_raw32", "setsid", "setpgid", "ptrace_attach",
                 "ptrace_traceme", "unshare_user", "unshare_net", "clone_newnet", "setns",
                 "mount", "keyctl", "bpf", "perf_event_open", "userfaultfd", "personality_query",
                 "pidfd_open_server", "process_vm_readv", "kcmp", "prlimit_server",
                 "setpriority_user", "tiocsti", "clone_parent", "sysv_shmget", "sysv_msgget",
                 "sysv_semget", "mq_open", "sched_setaffinity_other", "sched_setscheduler_other",
                 "sched_setparam_other", "setpriority_other", "ioprio_set_other", "prlimit_other",
                 "ptrace_child", "sched_setaffinity_own_pid"]
wrong = {k: got.get(k) for k in SECCOMP_EPERM if not (got.get(k) or "").startswith("errno:1:")}
wrong.update({k: got.get(k) for k in ("io_uring_setup", "clone3")
              if not (got.get(k) or "").startswith("errno:38:")})
wrong.update({k: got.get(k) for k in ("sock_unix", "socketpair_unix", "write_workdir",
                                      "sched_setaffinity_self", "setpriority_self", "prlimit_self")
              if got.get(k) != "ok"})
t.check(got.get("done") == "1" and not wrong,
        "escape probe: SysV IPC, mqueues, CLONE_PARENT, other pids' scheduling and limits, "
        "ptrace, namespaces, ... refused; the caller's own (pid 0) kept", wrong or sc["stderr"][-300:])

# ---- ptrace within the run and of its parent ---------------------------------
# Two children of the run: one allows any tracer (Yama) and waits, the other
# attaches to it. Same uid, same Landlock domain, dumpable: only seccomp's
# ptrace rule stands in the way. The parent is the zygote in fork-server
# mode and the server otherwise.
sc = run("""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def attach(pid):
    rc = libc.ptrace(16, pid, 0, 0)          # PTRACE_ATTACH
    e = ctypes.get_errno()
    if rc == 0:
        libc.ptrace(17, pid, 0, 0)           # PTRACE_DETACH
    return 'ATTACHED' if rc == 0 else 'denied %d' % e
r, w = os.pipe()
a = os.fork()
if a == 0:
    os.close(w)
    libc.prctl(0x59616d61, ctypes.c_ulong(2**64 - 1), 0, 0, 0)   # PR_SET_PTRACER_ANY
    os.read(r, 1)                            # until the sibling is done
    os._exit(0)
b = os.fork()
if b == 0:
    print('sibling', attach(a), flush=True)
    os._exit(0)
os.waitpid(b, 0)
os.kill(a, 9)                                # stopped, if an attach got through
os.waitpid(a, 0)
print('parent', os.getppid(), attach(os.getppid()))
""")
lines = dict(l.split(" ", 1) for l in sc["stdout"].splitlines() if " " in l)
t.check(lines.get("sibling") == "denied 1", "ptrace of a sibling process of the same run is denied",
        sc["stdout"] + sc["stderr"][-300:])
parent = (lines.get("parent") or " ").split(" ", 1)
t.check(parent[1].startswith("denied"), "ptrace of the run's parent is denied", sc["stdout"])
if forked:
    t.check(parent[0] != str(s.proc.pid), "[fork-server] that parent is the zygote, not the server",
            (parent[0], s.proc.pid))

# ---- metadata of the directories above the workdir -------------------------
# A run changes whatever it can on every directory above its workdir
# (attributes, times, then the bits); the next run must start normally and
# see every one of them as before. chgrp is left out: the run has no other
# group to give.
LOOK = """
import os, json
out, d = [], os.getcwd()
while d != '/':
    d = os.path.dirname(d)
    st = os.stat(d)
    try:
        x = sorted(os.listxattr(d))
    except OSError as e:
        x = ['errno:%d' % e.errno]
    out.append([d, oct(st.st_mode & 0o7777), st.st_uid, st.st_gid, st.st_mtime, x])
print(json.dumps(out))
"""
CHANGE = """
import os, json
out, d = {}, os.getcwd()
while d != '/':
    d = os.path.dirname(d)
    res = []
    for name, fn in [('xattr', lambda: os.setxattr(d, 'user.mcpx', b'leak')),
                     ('utime', lambda: os.utime(d, (1e9, 1e9))),
                     ('chmod', lambda: os.chmod(d, 0))]:
        try:
            fn()
            res.append(name)
        except OSError:
            pass
    out[d] = res
print(json.dumps(out))
"""


def metadata_attack(srv, label):
    """Returns what the attacking run managed to change, after checking that
    none of it reached the next run."""
    before = structured(srv.call(LOOK)) or {}
    ra = srv.call(CHANGE)
    attack = structured(ra) or {}
    t.check(attack.get("exit_code") == 0, f"[{label}] the attacking run ran", tool_error_text(ra) or attack)
    r = srv.call(LOOK)
    after = structured(r) or {}
    print(f"   [{label}] the attack changed:", attack.get("stdout", "").strip())
    try:
        changed = json.loads(attack.get("stdout") or "{}")
    except ValueError:
        changed = {}
    t.check(after.get("exit_code") == 0 and after.get("stdout"),
            f"[{label}] the run after it starts and runs normally (not exit 127, not a tool error)",
            tool_error_text(r) or after)
    try:
        b = {e[0]: e for e in json.loads(before["stdout"])}
        a = {e[0]: e for e in json.loads(after["stdout"])}
    except (KeyError, ValueError):
        t.check(False, f"[{label}] the directories above the workdir were listed", (before, after))
        return changed
    same = [d for d in a if d in b and a[d][1] == b[d][1] and a[d][2:4] == b[d][2:4]
            and "user.mcpx" not in a[d][5] and a[d][4] != 1e9]
    t.check(len(same) == len(a) == len(b),
            f"[{label}] every directory above the workdir has its mode, owner, attributes "
            "and times back", (b, a))
    return changed


metadata_attack(s, "server as %s" % ("root" if server_is_root() else "its user"))

rc = s.close()
t.check(rc == 0, "server exits cleanly after all probes", rc)
if forked:
    audit = [json.loads(l) for l in s.stderr_text().splitlines() if '"audit"' in l]
    t.check(audit and all(a.get("warm") for a in audit),
            "every probe ran in a forked child (fork-server mode)", [a.get("warm") for a in audit])
lsock.close()

# ---- the pod: server and runs share one uid ----------------------------------
if os.geteuid() == 0:
    MAX_PROCS = 16
    uid = 70000 + os.getpid() % 20000  # a uid no other test's processes have
    base = tempfile.mkdtemp(prefix="mcpx-pod-")
    os.chown(base, uid, uid)           # a workdir base of the run uid: guarded too
    penv = base_env(MCP_EXEC_WORKDIR_BASE=base, MCP_EXEC_MAX_PROCS=MAX_PROCS)
    p = StdioServer(penv, as_uid=uid)
    p.initialize()
    if forked:
        t.check(p.wait_fork_server(), "[pod] the fork server's zygote became ready")
    # A fork storm: children that wait on a pipe, forked until fork fails or
    # four times the budget is reached. The run then holds them all while
    # the server must still answer; the call is cancelled after that.
    STORM = """
import os
r, w = os.pipe()
made, stop = 0, 'cap'
while made < %d:
    try:
        pid = os.fork()
    except OSError as e:
        stop = 'errno:%%d' %% e.errno
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    made += 1
print('storm forks=%%d stop=%%s' %% (made, stop), flush=True)
os.read(r, 1)
""" % (4 * MAX_PROCS)
    rid = p.next_id
    p.next_id += 1
    p.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "exec", "arguments": {"code": STORM, "timeout_s": 120},
                       "_meta": {"progressToken": "storm"}}})
    storm, deadline = None, time.time() + 120
    while storm is None and time.time() < deadline:
        m = p.recv(deadline - time.time())
        if m is None:
            break
        if m.get("method") == "notifications/progress" and "storm forks=" in m["params"].get("message", ""):
            storm = m["params"]["message"]
        elif "id" in m:
            p.pending[m["id"]] = m
    print("   [pod] storm:", storm)
    fields = dict(x.split("=") for x in (storm or "").split() if "=" in x)
    forks = int(fields.get("forks", "-1"))
    t.check(0 < forks <= MAX_PROCS and fields.get("stop") == "errno:11",
            "[pod] a fork storm stays within MCP_EXEC_MAX_PROCS (%d) and ends in EAGAIN" % MAX_PROCS,
            storm)
    r = p.request("ping", timeout=30)
    t.check(r and r.get("result") == {}, "[pod] the server answers while the storm holds its processes", r)
    p.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
    sc = structured(p.call("print('after the storm')"))
    t.check(sc and sc["stdout"] == "after the storm\n", "[pod] the next run works after the storm", sc)

    changed = metadata_attack(p, "pod")
    t.check(any("chmod" in v for v in changed.values()),
            "[pod] the attack really changed a directory above its workdir (not vacuous)", changed)

    rc = p.close()
    t.check(rc == 0, "[pod] server exits cleanly", (rc, p.stderr_text()[-1500:]))
    t.check(os.path.isdir(base) and not os.listdir(base), "[pod] no workdir is left in the base",
            os.listdir(base) if os.path.isdir(base) else None)
    shutil.rmtree(base, ignore_errors=True)
t.done()
