"""Warm execution opens no channel between executions.

A run attacks every process of its uid it can find around it: its parent (the
fork server's zygote in fork-server mode, the server otherwise) and its
parent's other children (in fork-server mode, the child forked for the next
run while this one runs, which happens when it was queued behind another
run; a lone run has none beside it). It tries to write code into their stdin through /proc, read
their environment, plant files in their working directories and signal them;
the next run proves nothing got through. Checked in every warm mode this
kernel offers: fork-server (Landlock ABI >= 6) and after-reap (a fresh
interpreter, prepared only after the previous run was reaped), and cold.
ctest runs it once per mode (MCPX_TEST_WARM: auto, after-reap, 0 for cold);
run by hand without it, it covers both warm modes.

In fork-server mode the forked child is also checked for what a fork could
leak: the run's seccomp filter stacked on the zygote's, setsid denied, the
zygote's workdir out of reach, no shared writable mapping, and fresh random
state in every run."""
import json
import os
import time

from mcpx_harness import Failures, StdioServer, base_env, structured, warm_mode

t = Failures()

ATTACK = r"""
import os, time
time.sleep(1.0)   # let the server prepare the next interpreter, if it does so now
me, parent = os.getpid(), os.getppid()
found = []
for d in os.listdir('/proc'):
    if not d.isdigit() or int(d) == me:
        continue
    pid = int(d)
    try:
        st = open(f'/proc/{pid}/status').read()
    except OSError:
        continue
    ppid = int([l for l in st.splitlines() if l.startswith('PPid:')][0].split()[1])
    # Only our parent and its other children: other servers on the machine
    # (parallel tests) have their own.
    if pid != parent and ppid != parent:
        continue
    found.append(pid)
    res = {}
    try:
        fd = os.open(f'/proc/{pid}/fd/0', os.O_WRONLY)
        os.write(fd, b"00000000000000000021 0000000030\nprint('INJECTED-XYZ')\n")
        res['stdin'] = 'WROTE'
    except OSError as e:
        res['stdin'] = e.errno
    try:
        open(f'/proc/{pid}/environ', 'rb').read(1); res['environ'] = 'READ'
    except OSError as e:
        res['environ'] = e.errno
    try:
        cwd = os.readlink(f'/proc/{pid}/cwd')
        open(os.path.join(cwd, 'planted.py'), 'w').write('x'); res['plant'] = 'PLANTED'
    except OSError as e:
        res['plant'] = e.errno
    try:
        os.kill(pid, 0); res['signal'] = 'SIGNALLED'
    except OSError as e:
        res['signal'] = e.errno
    print(pid, 'parent' if pid == parent else 'sibling', res)
print('siblings', sum(1 for p in found if p != parent))
"""

VICTIM = r"""
import os
print('victim', sorted(os.listdir('.')))
"""

FORK_PROBE = r"""
import os, random
st = open('/proc/self/status').read()
print('filters', [l.split()[1] for l in st.splitlines() if l.startswith('Seccomp_filters:')])
try:
    os.setsid(); print('SETSID')
except OSError as e:
    print('setsid denied', e.errno)
try:
    open(os.path.join(os.path.dirname(os.getcwd()), 'planted'), 'w').write('x'); print('ZYGOTE-DIR WRITTEN')
except OSError as e:
    print('zygote dir denied', e.errno)
try:
    os.listdir(os.path.dirname(os.getcwd())); print('ZYGOTE-DIR LISTED')
except OSError as e:
    print('zygote dir unlistable', e.errno)
shared = [l for l in open('/proc/self/maps') if l.split()[1].startswith('rw') and l.split()[1][3] == 's']
print('shared-writable', len(shared))
import numpy
print('rng', random.random(), numpy.random.random(), os.urandom(8).hex())
"""

auto = warm_mode(base_env(MCP_EXEC_WARM="auto"))
print("   auto mode on this kernel:", auto)
asked = os.environ.get("MCPX_TEST_WARM")
if asked == "0":
    modes = ["cold"]
elif asked == "after-reap" or (asked == "auto" and auto != "fork-server"):
    modes = ["after-reap"]
elif asked == "auto":
    modes = ["auto"]
else:
    modes = (["auto"] if auto == "fork-server" else []) + ["after-reap"]

for mode in modes:
    s = StdioServer(base_env(MCP_EXEC_WARM="0" if mode == "cold" else mode))
    s.initialize()
    if mode == "auto":
        t.check(s.wait_fork_server(), "[fork-server] the zygote became ready")
    s.call("print('prime')")                 # the first run; the next interpreter follows
    time.sleep(3)                            # let it finish preloading
    r = s.call(ATTACK, timeout_s=20)
    sc = structured(r) or {}
    out = sc.get("stdout", "")
    print(f"   [{mode}] attacker saw:", out.strip().replace("\n", " | "))
    t.check("parent" in out and "WROTE" not in out and "READ" not in out and "PLANTED" not in out
            and "SIGNALLED" not in out,
            f"[{mode}] the running code cannot write to, read, plant into or signal its parent "
            "or the next interpreter", out)
    t.check("siblings 0" in out,
            f"[{mode}] no other interpreter exists while a lone run's untrusted code runs "
            "(the next one is prepared after it)", out)
    if mode == "auto":
        # A run with a call queued behind it has that call's child forked
        # beside it: the attack runs between two queued calls (the first
        # makes it wait, the last is waiting when it starts), and Landlock
        # must keep it away from the child prepared beside it.
        ids = []
        for code in ("import time; time.sleep(1)", ATTACK, "print('after')"):
            ids.append(s.next_id)
            s.next_id += 1
            s.send({"jsonrpc": "2.0", "id": ids[-1], "method": "tools/call",
                    "params": {"name": "exec", "arguments": {"code": code, "timeout_s": 20}}})
        replies = [s.wait_for(i) for i in ids]
        t.check(all(x is not None for x in replies), "[fork-server] the three queued calls answered")
        r = replies[1] or {}
        out = (structured(r) or {}).get("stdout", "")
        print(f"   [{mode}] queued attacker saw:", out.strip().replace("\n", " | "))
        t.check("parent" in out and "WROTE" not in out and "READ" not in out
                and "PLANTED" not in out and "SIGNALLED" not in out,
                "[fork-server] the queued run cannot write to, read, plant into or signal "
                "its parent or the next run's child", out)
        t.check("siblings 1" in out,
                "[fork-server] the attack really met the next run's child (the probe is not vacuous)", out)
    time.sleep(3)
    r = s.call(VICTIM)
    sc = structured(r) or {}
    # A clean workdir is main.py and the empty out/ the server made; nothing
    # planted there may come back as the next run's output file either.
    t.check(sc.get("stdout") == "victim ['main.py', 'out']\n" and sc.get("files") == []
            and "INJECTED" not in sc.get("stdout", "") + sc.get("stderr", ""),
            f"[{mode}] the next run sees only its own code and a clean workdir", sc)
    calls = 6 if mode == "auto" else 3  # auto: three more, the queued attack between two calls
    if mode == "auto":
        outs = []
        for _ in range(2):
            sc = structured(s.call(FORK_PROBE)) or {}
            outs.append(sc.get("stdout", ""))
            calls += 1
        o = outs[0]
        print("   [fork-server] forked child saw:", o.strip().replace("\n", " | "))
        t.check("filters ['2']" in o, "[fork-server] the run's seccomp filter is stacked on the zygote's", o)
        t.check("setsid denied 1" in o, "[fork-server] the forked run cannot leave its session", o)
        t.check("zygote dir denied" in o and "zygote dir unlistable" in o,
                "[fork-server] the zygote's workdir (holding other runs' workdirs) is out of reach", o)
        t.check("shared-writable 0" in o, "[fork-server] no shared writable mapping is inherited from the zygote", o)
        rng = [next((l for l in x.splitlines() if l.startswith("rng ")), "") for x in outs]
        a, b = (x.split()[1:] for x in rng)
        t.check(len(a) == 3 and len(b) == 3 and all(x != y for x, y in zip(a, b)),
                "[fork-server] random, numpy.random and os.urandom differ between runs", rng)
    s.close()
    audit = [json.loads(l) for l in s.stderr_text().splitlines() if '"audit"' in l]
    if mode == "cold":
        t.check(len(audit) == calls and not any(a.get("warm") for a in audit),
                "[cold] every run started cold", [a.get("warm") for a in audit])
    else:
        t.check(len(audit) == calls and all(a.get("warm") for a in audit[1:]),
                f"[{mode}] the runs after the first were served warm", [a.get("warm") for a in audit])

t.done()
