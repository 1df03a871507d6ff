"""A function a run calls shares its caller's /dev/shm: what either puts
there is counted and wiped with the caller's run, never by the end of the
call (issue 21, "run and its nested functions share one /dev/shm group").

All runs of a server have one uid and group, and a run's /dev/shm entries
are found by them and by ctime. The end of a nested call wiped every entry
of that group newer than the call's start: the caller's own, made while the
call ran, too. Here the caller and the function hand over to each other
through /dev/shm (no sleeps):
- the function makes B, then waits for the caller's C;
- a thread of the caller waits for B, then makes C;
- once mcpx.call has returned and the server has logged the end of the
  call's cleanup (this test then makes GO for the caller to see), the caller
  looks for both: before, both were gone (the call's end took them); now
  both are there;
- after the run, neither is left (the caller's end took them).
"""
import json
import os
import time
import uuid

from egress_fixture import write_policy
from mcpx_harness import Failures, ScratchDir, StdioServer, base_env, structured, warm_mode

t = Failures()
scratch = ScratchDir("mcpx-shmnest-")
work = scratch.workdir()
admin = scratch.secrets
tag = uuid.uuid4().hex[:12]
B = f"/dev/shm/mcpx-nest-{tag}-B"
C = f"/dev/shm/mcpx-nest-{tag}-C"
GO = f"/dev/shm/mcpx-nest-{tag}-go"

src = os.path.join(admin, "maker.py")
with open(src, "w") as f:
    f.write(f"""
import os, time
def handler(args, ctx):
    with open({B!r}, "w") as f:
        f.write("from the function")
    for _ in range(3000):
        if os.path.exists({C!r}):
            return {{"saw_c": True}}
        time.sleep(0.01)
    return {{"saw_c": False}}
""")
policy_file = os.path.join(admin, "policy.json")
write_policy(policy_file, {"functions": [
    {"name": "maker", "description": "Makes a file in /dev/shm.",
     "input_schema": {"type": "object"}, "source_file": src, "callable_from_exec": True}]})

env = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work,
               MCP_EXEC_LOG_LEVEL="debug")
s = StdioServer(env)
s.initialize()
if warm_mode(env) == "fork-server":
    t.check(s.wait_fork_server(), "the fork server's zygote became ready")

CODE = f"""
import json, mcpx, os, threading, time
def make_c():
    for _ in range(3000):
        if os.path.exists({B!r}):
            with open({C!r}, "w") as f:
                f.write("from the caller")
            return
        time.sleep(0.01)
th = threading.Thread(target=make_c)
th.start()
r = mcpx.call("maker")
th.join()
for _ in range(6000):
    if os.path.exists({GO!r}):
        break
    time.sleep(0.01)
print(json.dumps({{"r": r, "b": os.path.exists({B!r}), "c": os.path.exists({C!r})}}))
"""
log_from = len(s.stderr_text().encode())
s.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
        "params": {"name": "exec", "arguments": {"code": CODE, "timeout_s": 90}}})
# The call's cleanup is the first to finish while the caller runs.
deadline = time.time() + 90
while b"cleanup finished" not in s.errbuf[log_from:] and time.time() < deadline:
    s._pump(0.1)
t.check(b"cleanup finished" in s.errbuf[log_from:],
        "the function's run was cleaned up while its caller ran")
with open(GO, "w") as f:
    f.write("go")
os.chmod(GO, 0o644)
sc = structured(s.wait_for(50, timeout=120))
out = {}
try:
    out = json.loads((sc or {}).get("stdout", "") or "{}")
except ValueError:
    pass
print("   caller saw:", out, "stderr:", (sc or {}).get("stderr", "")[-300:])
t.check(out.get("r") == {"saw_c": True}, "the function saw the caller's file", sc)
t.check(out.get("c") is True,
        "the caller's own /dev/shm file made during the call survives the call's end", out)
t.check(out.get("b") is True,
        "the function's /dev/shm file stays while its caller runs (it is the caller's)", out)
# The caller's result is sent before its files are removed (run_cleanup.c);
# the next run starts only once they are, so after its result both are gone.
s.call("print(1)", timeout=60)
t.check(not os.path.exists(B) and not os.path.exists(C),
        "both are wiped with the caller's run", [p for p in (B, C) if os.path.exists(p)])

t.check(s.close() == 0, "the server exits cleanly", s.stderr_text()[-2000:])
for p in (B, C, GO):
    if os.path.exists(p):
        os.unlink(p)
scratch.remove()
t.done()
