"""Escape probes through the real binary: each promise of the sandbox is
attacked from inside an exec call, and each probe prints what it got."""
import os
import socket
import time
import uuid

from mcpx_harness import Failures, StdioServer, base_env, structured, warm_mode

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
t.check("WROTE" not in sc["stdout"] and not os.path.exists(name), "cannot write outside the workdir", sc["stdout"])
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
t.check("TOP-SECRET" not in sc["stdout"] and "READ" not in sc["stdout"],
        "cannot read files outside the runtime (a mounted token, other runs' files)", sc["stdout"])

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
        open(path, 'rb').read(16); print('READ', path)
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
t.check("READ" not in sc["stdout"] and "SIGNALLED" not in sc["stdout"] and "KILLED ALL" not in sc["stdout"],
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
if os.geteuid() == 0:
    t.check(sc["stdout"].strip() == "65532 65532 []", "runs as 65532 without groups when started as root", sc["stdout"])

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


t.check("leader exits" in sc["stdout"] and not marker_procs(),
        "no process started by a run survives it (double fork, setsid attempt)", marker_procs())

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
t.check(sc["exit_code"] == 1 and "fork stopped" in sc["stdout"], "a fork bomb is bounded", sc["stdout"])
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

rc = s.close()
t.check(rc == 0, "server exits cleanly after all probes", rc)
if forked:
    import json
    audit = [json.loads(l) for l in s.stderr_text().splitlines() if '"audit"' in l]
    t.check(audit and all(a.get("warm") for a in audit),
            "every probe ran in a forked child (fork-server mode)", [a.get("warm") for a in audit])
lsock.close()
t.done()
