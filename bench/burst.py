#!/usr/bin/python3
"""How far a fast memory burst overshoots the run budget under the watchdog
(the chart's sizing.overshootMiB rests on it).

Runs bursts of N forked processes of M MiB each (16 x 100 MiB and 32 x 60
MiB by default, as in issue 23) against MCP_EXEC_MEMORY_MB=512 through the
real binary over stdio, and reads what the server saw when it stopped each
run: the "passed its memory budget (X KiB of 524288)" log line. Prints one
line per run and the largest overshoot. Where the server has per-run
cgroups (root on a cgroup v2 host) the kernel enforces the budget and there
is nothing to measure: run it where the watchdog is the method (a pod, or
this development host's hybrid cgroups).

    /usr/bin/python3 bench/burst.py [REPEATS]       # default 3
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from mcpx_harness import StdioServer, base_env, structured  # noqa: E402

BURST = """
import os, time
r, w = os.pipe()
for i in range({n}):
    if os.fork() == 0:
        os.close(r)
        b = bytearray(b'\\x01') * ({mb} << 20)
        os.write(w, b'.')
        time.sleep(3600)
        os._exit(0)
os.close(w)
got = 0
while got < {n}:
    got += len(os.read(r, 64))
print('all allocated', flush=True)
time.sleep(3600)
"""

BUDGET_MB = 512


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    worst = 0
    for mode in ("auto", "after-reap"):
        s = StdioServer(base_env(MCP_EXEC_WARM=mode, MCP_EXEC_MEMORY_MB=BUDGET_MB))
        s.initialize()
        if mode == "auto":
            s.wait_fork_server()
        for n, mb in ((16, 100), (32, 60)):
            for _ in range(repeats):
                before = len(s.stderr_text())
                sc = structured(s.call(BURST.format(n=n, mb=mb), timeout=120, timeout_s=60)) or {}
                log = s.stderr_text()[before:]
                m = re.search(r"passed its memory budget \((\d+) KiB", log)
                seen = int(m.group(1)) >> 10 if m else None
                if seen:
                    worst = max(worst, seen - BUDGET_MB)
                print(f"{mode:10} {n:2} x {mb:3} MiB: limit={sc.get('limit')} "
                      f"seen at {seen} MiB (budget {BUDGET_MB})", flush=True)
        s.close()
    print(f"largest overshoot: {worst} MiB over {BUDGET_MB} MiB")


if __name__ == "__main__":
    main()
