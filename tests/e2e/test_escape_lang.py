"""The escape probes of test_escape.py, written in bash and in JavaScript:
every promise of the sandbox attacked from a bash script and from a Node.js
module, through the real binary. Both languages always start cold (only
Python runs warm), through the same sandboxed child as a Python run.

ctest runs this file once per warm mode (MCPX_TEST_WARM: auto, after-reap,
0): a bash or JavaScript run beside whatever the warm pool prepared must be
as contained as a Python one, and in after-reap mode nothing prepared may
live beside it at all.

Needs bash; exits 77 (skipped) without it. Without Node.js (the standard
container image: scripts/container-test.sh runs this file inside it) the
JavaScript probes are skipped, each saying so.

Under gVisor (MCPX_WRAP=runsc_wrap.py, the pod's posture) every probe runs
as well; where gVisor gives a run something else (no Landlock, a procfs that
ignores dumpable) the check says so with a "[gVisor]" label and asserts what
gVisor gives instead."""
import os
import shutil
import socket
import sys
import tempfile
import time
import uuid

from mcpx_harness import (Failures, StdioServer, audits, base_env, server_is_root, structured,
                          under_gvisor, wait_bash_at_gate, warm_mode)

if not shutil.which("bash"):
    print("SKIP: bash missing (scripts/deps.sh installs it)")
    sys.exit(77)
NODE = os.access("/usr/bin/node", os.X_OK)


class LangFailures(Failures):
    """Every JavaScript check's label starts with "javascript"; without
    Node.js those are reported as skipped, not passed."""

    def check(self, cond, what, got=None):
        if not NODE and what.startswith("javascript"):
            print(f"skip {what} (no /usr/bin/node here)")
            return True
        return super().check(cond, what, got)


t = LangFailures()
# The default process budget: Node starts about a dozen threads, and
# RLIMIT_NPROC counts every task of uid 65532 (other servers' runs on a
# shared test machine too), so a tighter one makes Node's start flaky.
env = base_env(MCP_EXEC_MAX_PROCS=64, MCP_EXEC_MEMORY_MB=256, MCP_EXEC_MAX_FILE_MB=8)
s = StdioServer(env)
s.initialize()
mode = warm_mode(env)
if mode == "fork-server":
    t.check(s.wait_fork_server(), "the fork server's zygote became ready")


bash_runs = 0


def run(code, language, **kw):
    global bash_runs
    if language == "javascript" and not NODE:
        return {"stdout": "", "stderr": "", "exit_code": None, "limit": None}
    # In fork-server mode every bash probe after the first is run by the
    # prepared bash (bash_pool.c), which waited beside the runs before it:
    # the probes attack that way of starting too.
    if language == "bash" and mode == "fork-server" and bash_runs:
        wait_bash_at_gate(s.proc.pid)
    if language == "bash":
        bash_runs += 1
    r = s.call(code, language=language, **kw)
    sc = structured(r)
    if sc is None:
        print("   (no structured result)", r)
        return {"stdout": "", "stderr": "", "exit_code": None, "limit": None}
    print(f"   {language} probe said:",
          (sc["stdout"] + sc["stderr"]).strip()[-300:].replace("\n", " | "))
    return sc


def alive(what):
    r = s.request("ping")
    t.check(r and r.get("result") == {}, f"server alive after {what}")


lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(1)
port = lsock.getsockname()[1]

# ---- network ----
sc = run(f"""
for a in tcp/127.0.0.1/{port} udp/127.0.0.1/53 tcp/::1/{port}; do
  if (exec 3<>/dev/$a) 2>/dev/null; then echo CONNECTED $a; else echo denied $a; fi
done
""", "bash")
t.check("CONNECTED" not in sc["stdout"] and sc["stdout"].count("denied") == 3,
        "bash: /dev/tcp and /dev/udp cannot connect", sc["stdout"])
sc = run(f"""
import net from 'node:net';
import dgram from 'node:dgram';
import http from 'node:http';
const tcp = (host) => new Promise((res) => {{
  const c = net.connect({port}, host);
  c.on('connect', () => {{ res('CONNECTED ' + host); c.destroy(); }});
  c.on('error', (e) => res('denied ' + host + ' ' + e.code));
}});
console.log(await tcp('127.0.0.1'));
console.log(await tcp('::1'));
console.log(await new Promise((res) => {{
  try {{
    const u = dgram.createSocket('udp4');
    u.on('error', (e) => res('denied udp ' + e.code));
    u.send('x', 53, '127.0.0.1', (e) => res(e ? 'denied udp ' + e.code : 'SENT udp'));
  }} catch (e) {{ res('denied udp ' + e.code); }}
}}));
console.log(await new Promise((res) => {{
  const q = http.get('http://127.0.0.1:{port}/', (r) => res('FETCHED http ' + r.statusCode));
  q.on('error', (e) => res('denied http ' + e.code));
}}));
// Node 20's fetch() parses HTTP with WebAssembly, which cannot reserve its
// memory under the run's address-space limit: it fails before any connect
// (docs/security.md, RLIMIT_AS and V8). Either way it must not get through.
try {{ const r = await fetch('http://127.0.0.1:{port}/'); console.log('FETCHED', r.status); }}
catch (e) {{ console.log('fetch failed ' + ((e.cause && e.cause.code) || e.name)); }}
await new Promise((r) => setTimeout(r, 200));
""", "javascript")
t.check("CONNECTED" not in sc["stdout"] and "SENT" not in sc["stdout"] and "FETCHED" not in sc["stdout"]
        and sc["stdout"].count("denied") == 4 and "fetch failed" in sc["stdout"],
        "javascript: net, dgram, http and fetch cannot reach the network", sc["stdout"])

# ---- files outside the workdir ----
for language, code in (
        ("bash", """
for p in {name} /var/tmp/x-{u} ~/../sibling-{u}; do
  if (echo x > "$p") 2>/dev/null; then echo WROTE "$p"; else echo denied; fi
done
[ "$PWD" = "$HOME" ] && [ "$PWD" = "$TMPDIR" ] && echo cwd True
echo ok > mine.txt && echo own workdir writable"""),
        ("javascript", """
import fs from 'node:fs';
import os from 'node:os';
for (const p of ['{name}', '/var/tmp/x-{u}', os.homedir() + '/../sibling-{u}']) {{
  try {{ fs.writeFileSync(p, 'x'); console.log('WROTE', p); }} catch (e) {{ console.log('denied', e.code); }}
}}
if (process.cwd() === process.env.HOME && process.cwd() === process.env.TMPDIR) console.log('cwd True');
fs.writeFileSync('mine.txt', 'ok'); console.log('own workdir writable');""")):
    name = "/tmp/mcpx-escape-" + uuid.uuid4().hex
    sc = run(code.format(name=name, u=uuid.uuid4().hex), language)
    # Under gVisor the filesystem view (fs_view.c) refuses as Landlock does.
    t.check("WROTE" not in sc["stdout"] and sc["stdout"].count("denied") == 3
            and not os.path.exists(name), f"{language}: cannot write outside the workdir",
            sc["stdout"])
    t.check("cwd True" in sc["stdout"] and "own workdir writable" in sc["stdout"],
            f"{language}: the workdir is cwd, HOME and TMPDIR, and writable", sc["stdout"])

# ---- files outside the runtime ----


def check_reads(language, sc):
    if under_gvisor():
        # The filesystem view's /tmp holds only the run's own workdir.
        t.check("TOP-SECRET" not in sc["stdout"] and "READ" not in sc["stdout"],
                f"{language}: [gVisor] the filesystem view: no file outside the runtime is "
                "there to read", sc["stdout"])
    else:
        t.check("TOP-SECRET" not in sc["stdout"] and "READ" not in sc["stdout"]
                and "LISTED" not in sc["stdout"],
                f"{language}: cannot read or list files outside the runtime", sc["stdout"])


fd, secret = tempfile.mkstemp(prefix="mcpx-secret-", dir="/tmp")
with os.fdopen(fd, "w") as f:
    f.write("TOP-SECRET-TOKEN")
os.chmod(secret, 0o644)
sc = run(f"""
for p in {secret} /etc/shadow; do cat "$p" 2>/dev/null && echo READ || echo denied; done
ls /tmp >/dev/null 2>&1 && echo LISTED || echo list denied""", "bash")
check_reads("bash", sc)
sc = run(f"""
import fs from 'node:fs';
for (const p of ['{secret}', '/etc/shadow']) {{
  try {{ console.log('READ', fs.readFileSync(p, 'utf8')); }} catch (e) {{ console.log('denied', e.code); }}
}}
try {{ fs.readdirSync('/tmp'); console.log('LISTED'); }} catch (e) {{ console.log('list denied', e.code); }}
""", "javascript")
os.unlink(secret)
check_reads("javascript", sc)

# ---- the server: its /proc files and signals ----


def check_server_files(language, sc):
    out = sc["stdout"]
    if under_gvisor():
        # gVisor's procfs serves environ and maps to every process; the
        # server zeroes its environment block. mem and signals stay denied.
        t.check("ZEROS environ" in out and "denied mem" in out and "READ maps" in out
                and "SIGNALLED" not in out and "KILLED" not in out and out.count("denied") == 4,
                f"{language}: [gVisor] the server's environ shows only zeros, its mem is denied, "
                "no signal reaches it (its maps are readable there)", out)
    else:
        t.check("READ" not in out and "ZEROS" not in out and "SIGNALLED" not in out
                and "KILLED" not in out and out.count("denied") == 6,
                f"{language}: cannot read or signal the server", out)


sc = run("""
for f in environ mem maps; do
  if ! head -c 1 /proc/$PPID/$f >/dev/null 2>&1; then echo denied $f
  elif [ -n "$(head -c 65536 /proc/$PPID/$f | tr -d '\\0' | head -c 16)" ]; then echo READ $f
  else echo ZEROS $f; fi
done
kill -0 $PPID 2>/dev/null && echo SIGNALLED 0 || echo kill denied
kill -TERM $PPID 2>/dev/null && echo SIGNALLED TERM || echo kill denied
kill -KILL -1 2>/dev/null && echo KILLED ALL || echo kill -1 denied""", "bash")
check_server_files("bash", sc)
alive("the bash signal probes")
sc = run("""
import fs from 'node:fs';
const pp = process.ppid;
for (const f of ['environ', 'mem', 'maps']) {
  try {
    console.log(fs.readFileSync(`/proc/${pp}/${f}`).some((b) => b) ? 'READ' : 'ZEROS', f);
  } catch (e) { console.log('denied', f, e.code); }
}
for (const [pid, sig] of [[pp, 0], [pp, 'SIGTERM'], [-1, 'SIGKILL']]) {
  try { process.kill(pid, sig); console.log('SIGNALLED', pid, sig); } catch (e) { console.log('kill denied', e.code); }
}
""", "javascript")
check_server_files("javascript", sc)
alive("the javascript signal probes")

# ---- namespaces, mounts, new sessions, SysV IPC (bash reaches them through util-linux) ----
probes = [("unshare -U true", "unshare user"), ("unshare -n true", "unshare net"),
          ("unshare -m true", "unshare mount"), ("nsenter -t 1 -m true", "nsenter"),
          ("mount -t tmpfs none mnt", "mount"), ("setsid -w true", "setsid"),
          ("ipcmk -M 4096", "sysv shm"), ("ipcmk -Q", "sysv queue")]
have = [p for p in probes if shutil.which(p[0].split()[0])]
script = "mkdir -p mnt\n" + "\n".join(
    f"if {cmd} >/dev/null 2>&1; then echo ALLOWED '{what}'; else echo denied '{what}'; fi"
    for cmd, what in have)
if have:
    sc = run(script, "bash")
    t.check("ALLOWED" not in sc["stdout"] and sc["stdout"].count("denied") == len(have),
            f"bash: namespaces, mount, setsid and SysV IPC are denied ({len(have)} probes)", sc["stdout"])
else:  # the image ships no util-linux: a bash script has no way to ask
    print("skip bash: namespaces, mount, setsid and SysV IPC (no util-linux here)")
sc = run("""
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
// libuv's detached child calls setsid() and ignores its failure: the child
// must still be in the run's session (field 6 of /proc/<pid>/stat).
const sid = (stat) => stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3];
const mine = sid(fs.readFileSync('/proc/self/stat', 'utf8'));
const r = spawnSync('cat', ['/proc/self/stat'], { detached: true, encoding: 'utf8' });
const theirs = r.error ? null : sid(r.stdout);
console.log(theirs === null ? 'setsid denied ' + r.error.code : theirs === mine ? 'same session' : 'NEW SESSION');
""", "javascript")
t.check("NEW SESSION" not in sc["stdout"] and ("same session" in sc["stdout"] or "denied" in sc["stdout"]),
        "javascript: a detached child stays in the run's session", sc["stdout"])

# ---- identity ----
# The group is the server's own for its runs: 0x40000000 + its pid (as
# test_escape.py checks for Python); no supplementary groups (`id -G` and
# getgroups list the primary group when there are none).
gid = str(0x40000000 + s.proc.pid)
sc = run("id -u; id -g; id -G", "bash")
if server_is_root():
    t.check(sc["stdout"].split() == ["65532", gid, gid], "bash runs as 65532 in its server's group, no others",
            sc["stdout"])
sc = run("console.log(process.getuid(), process.getgid(), process.getgroups().join(','))", "javascript")
if server_is_root():
    t.check(sc["stdout"].split() in (["65532", gid], ["65532", gid, gid]),
            "javascript runs as 65532 in its server's group, no others", sc["stdout"])

# ---- fork bombs are bounded ----
# bash retries a failed fork for a while, then gives up and exits.
sc = run("""
n=0
while [ $n -lt 400 ]; do sleep 20 & n=$((n+1)); echo $n; done
""", "bash", timeout_s=120)
started = int(sc["stdout"].split()[-1]) if sc["stdout"].split() else 0
t.check(0 < started < 400 and sc["limit"] == "processes" and "Resource temporarily unavailable" in sc["stderr"],
        "bash: a fork bomb is bounded by MCP_EXEC_MAX_PROCS (limit processes)",
        (started, sc["limit"], sc["stderr"][-200:]))
alive("the bash fork bomb")
sc = run("""
import { spawn } from 'node:child_process';
let n = 0, failed = null;
for (; n < 400; n++) {
  const c = spawn('sleep', ['20'], { stdio: 'ignore' });
  const err = await new Promise((res) => { c.on('spawn', () => res(null)); c.on('error', res); });
  if (err) { failed = err.code; break; }
}
console.log('spawned', n, 'then', failed);
process.exit(0);
""", "javascript", timeout_s=60)
# Under gVisor the memory budget may come first: its smaps give no
# proportional size, so what the children share counts once per child.
t.check("then EAGAIN" in sc["stdout"] or ("spawned" in sc["stdout"] and "spawned 400" not in sc["stdout"])
        or sc["limit"] == "processes" or (under_gvisor() and sc["limit"] == "memory"),
        "javascript: a spawn storm is bounded by MCP_EXEC_MAX_PROCS (EAGAIN, or the watchdog's "
        "process count first; [gVisor] or the memory budget)",
        (sc["stdout"] + sc["stderr"][-200:], sc["limit"]))
alive("the javascript spawn storm")

# ---- nothing survives a run ----
marker = "mcpx-orphan-" + uuid.uuid4().hex


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


def survivors_seen():
    """The marked processes a later run finds in /proc: under gVisor the
    sandbox's processes are not in this host's /proc at all."""
    pattern = marker[:-1] + "[" + marker[-1] + "]"  # a pattern grep's own argv does not match
    got = run(f"grep -l '{pattern}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l", "bash")
    return int(got["stdout"].strip() or -1)


sc = run(f"""
( exec -a {marker} sleep 300 ) &
setsid bash -c 'exec -a {marker} sleep 300' &
nohup bash -c 'exec -a {marker} sleep 300' >/dev/null 2>&1 &
disown -a
sleep 0.3
echo leader exits""", "bash")
time.sleep(0.5)
t.check("leader exits" in sc["stdout"] and not marker_procs() and survivors_seen() == 0,
        "bash: nothing it started in the background survives the run (seen from the host and "
        "from the next run)", marker_procs())
sc = run(f"""
import {{ spawn }} from 'node:child_process';
spawn('bash', ['-c', 'exec -a {marker} sleep 300'], {{ stdio: 'ignore' }}).unref();
try {{ spawn('bash', ['-c', 'exec -a {marker} sleep 300'], {{ stdio: 'ignore', detached: true }}).unref(); }} catch (e) {{}}
await new Promise((r) => setTimeout(r, 300));
console.log('leader exits');
""", "javascript")
time.sleep(0.5)
t.check("leader exits" in sc["stdout"] and not marker_procs() and survivors_seen() == 0,
        "javascript: nothing it spawned survives the run (seen from the host and from the next "
        "run)", marker_procs())

# ---- budgets ----
sc = run("const b = []; for (let i = 0; i < 40; i++) b.push(Buffer.alloc(64 << 20, 1));"
         " console.log('ALLOCATED', b.length)", "javascript", timeout_s=60)
t.check(sc["limit"] == "memory" and "ALLOCATED" not in sc["stdout"],
        "javascript: memory outside V8's heap (Buffers) is held to the budget too", sc["limit"])
sc = run("import fs from 'node:fs'; const z = Buffer.alloc(1 << 20);"
         " const fd = fs.openSync('big', 'w'); for (;;) fs.writeSync(fd, z);", "javascript")
t.check(sc["limit"] == "file_size", "javascript: a disk filler ends with limit file_size", sc["limit"])
sc = run("while :; do :; done", "bash", timeout_s=2)
t.check(sc["limit"] in ("cpu", "timeout") and sc["exit_code"] == -1, "bash: a busy loop is stopped", sc["limit"])
sc = run("for (;;) {}", "javascript", timeout_s=2)
t.check(sc["limit"] in ("cpu", "timeout") and sc["exit_code"] == -1, "javascript: a busy loop is stopped",
        sc["limit"])

# ---- after-reap: nothing prepared lives beside a bash or JavaScript run ----
if mode == "after-reap" and server_is_root():
    s.call("print(1)")  # a Python run; its successor is prepared after it
    time.sleep(1.0)
    sc = run("""
# The server's other children (a warm interpreter is one), not this run.
me=$(cut -d' ' -f5 /proc/self/stat)
for p in /proc/[0-9]*; do
  read -r _ _ _ ppid pgid _ < $p/stat 2>/dev/null || continue
  [ "$ppid" = "$PPID" ] && [ "$pgid" != "$me" ] && echo OTHER $(tr '\\0' ' ' < $p/cmdline | head -c 60)
done
echo scanned""", "bash")
    t.check("scanned" in sc["stdout"] and "OTHER" not in sc["stdout"],
            "after-reap: no warm interpreter lives beside a bash run", sc["stdout"])

if mode == "fork-server":
    bash_audits = [a for a in audits(s.stderr_text(), "exec") if a.get("language") == "bash"]
    taken = sum(1 for a in bash_audits if a.get("warm"))
    t.check(bash_runs > 1 and taken >= bash_runs - 2,
            f"fork-server: the bash probes after the first ran in a prepared bash "
            f"({taken} of {bash_runs})", [a.get("warm") for a in bash_audits])

alive("every probe")
rc = s.close()
t.check(rc == 0, "server exits cleanly after all probes", rc)
t.done()
