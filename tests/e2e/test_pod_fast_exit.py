"""Runs that end at once, in the pod's posture (server and runs share uid
65532, no uid drop): the server raises a run's oom_score_adj after exec,
and a run can be over before that write (bash `true` takes about a
millisecond). A task that has exited owns its /proc files as root, so the
write can never succeed; such a run must still return its result, not
"sandbox setup failed at step oom_score_adj".

Root only (it runs the server as 65532); exits 77 elsewhere."""
import os
import shutil
import sys

from mcpx_harness import Failures, StdioServer, base_env, bin_for_uid, structured

if os.geteuid() != 0 or not shutil.which("bash"):
    print("SKIP: needs root (to run the server as uid 65532) and bash")
    sys.exit(77)

t = Failures()
s = StdioServer(base_env(), as_uid=65532, binary=bin_for_uid())
s.initialize()
bad = []
for i in range(60):
    r = s.call("exit 0", language="bash")
    sc = structured(r)
    if not sc or sc.get("exit_code") != 0:
        bad.append(r)
t.check(not bad, "60 bash runs that end at once all return exit 0", bad[:2])
sc = structured(s.call("print(1)"))
t.check(sc and sc["stdout"] == "1\n", "a Python run after them works", sc)
t.check(s.close() == 0, "the server exits cleanly")
t.done()
