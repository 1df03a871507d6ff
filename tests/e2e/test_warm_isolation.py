"""Warm interpreters open no channel between executions: a run attacks the
interpreter that will serve the next run (signal it, write code into its
stdin through /proc, read its environment, plant files in its workdir), and
the next run proves nothing got through. Checked in both warm modes: the
next interpreter prepared while the attacker runs (Landlock with signal
scoping) and prepared only after the attacker was reaped."""
import json
import os

import subprocess
import time

from mcpx_harness import BIN, Failures, StdioServer, base_env, structured

t = Failures()

ATTACK = r"""
import os, signal, time
time.sleep(1.0)   # let the server prepare the next interpreter
me = os.getpid()
server = os.getppid()
mine = {me}
found = []
for d in os.listdir('/proc'):
    if not d.isdigit() or int(d) in mine:
        continue
    pid = int(d)
    try:
        st = open(f'/proc/{pid}/status').read()
    except OSError:
        continue
    uid = [l for l in st.splitlines() if l.startswith('Uid:')]
    if not uid or uid[0].split()[1] != str(os.getuid()):
        continue
    ppid = int([l for l in st.splitlines() if l.startswith('PPid:')][0].split()[1])
    # Only this server's other children: other servers on the machine
    # (parallel tests) have their own warm interpreters.
    if ppid != server:
        continue
    found.append(pid)
    res = {}
    try:
        fd = os.open(f'/proc/{pid}/fd/0', os.O_WRONLY)
        os.write(fd, b"21 30\nprint('INJECTED-XYZ')\n")
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
    print(pid, res)
print('candidates', len(found))
"""

VICTIM = r"""
import os
print('victim', sorted(os.listdir('.')))
"""

cc = subprocess.run([BIN, "--check-config"], env=base_env(MCP_EXEC_WARM="auto"),
                    capture_output=True, text=True, timeout=60).stdout
concurrent = "warm interpreters: concurrent" in cc
print("   auto mode on this kernel:", "concurrent" if concurrent else "after-reap")

for mode in ("auto", "after-reap"):
    s = StdioServer(base_env(MCP_EXEC_WARM=mode))
    s.initialize()
    s.call("print('prime')")                 # the first run; the next interpreter follows
    time.sleep(3)                            # let it finish preloading
    r = s.call(ATTACK, timeout_s=20)
    sc = structured(r) or {}
    print(f"   [{mode}] attacker saw:", sc.get("stdout", "").strip().replace("\n", " | "))
    out = sc.get("stdout", "")
    t.check("WROTE" not in out and "READ" not in out and "PLANTED" not in out and "SIGNALLED" not in out,
            f"[{mode}] the running code cannot write to, read, plant into or signal the next interpreter", out)
    if mode == "after-reap":
        t.check("candidates 0" in out, "[after-reap] no interpreter exists while untrusted code runs", out)
    elif concurrent:
        t.check("candidates 0" not in out and "candidates" in out,
                "[auto] the attack really met the next interpreter (the probe is not vacuous)", out)
    time.sleep(3)
    r = s.call(VICTIM)
    sc = structured(r) or {}
    t.check(sc.get("stdout") == "victim ['main.py']\n" and "INJECTED" not in sc.get("stdout", "") + sc.get("stderr", ""),
            f"[{mode}] the next run sees only its own code and a clean workdir", sc)
    s.close()
    audit = [json.loads(l) for l in s.stderr_text().splitlines() if '"audit"' in l]
    t.check(len(audit) == 3 and audit[2].get("warm"),
            f"[{mode}] the run after the attack was served warm", [a.get("warm") for a in audit])

t.done()
