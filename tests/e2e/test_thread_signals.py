"""Every thread of the server is out of a run's reach, by the seccomp filter
alone: the pod's posture (server and runs share uid 65532, nothing is root)
on a kernel without Landlock (no signal scope), simulated by running the
server as 65532 under a filter that answers ENOSYS to landlock_*.

kill(tid) of any thread signals the whole server. The server starts worker
threads after the sandbox is set up (the executor's disk walker and
remover, function validation); each must be among the filter's targets,
in cold runs and in runs forked by the warm interpreter alike. Signal 0 is
the probe: it asks the kernel whether a signal may be sent, and sends none.

Root only (it changes uid); exits 77 elsewhere."""
import os
import sys

from mcpx_harness import (Failures, StdioServer, base_env, bin_for_uid, deny_syscalls,
                          structured)

if os.geteuid() != 0:
    print("SKIP: needs root to run the server as uid 65532")
    sys.exit(77)

NO_LANDLOCK = ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"]
deny = deny_syscalls(NO_LANDLOCK)


def pod():
    os.setgroups([])
    os.setresgid(65532, 65532, 65532)
    os.setresuid(65532, 65532, 65532)
    deny()


t = Failures()
env = base_env(MCP_EXEC_REQUIRE_LANDLOCK="0")
s = StdioServer(env, preexec=pod, binary=bin_for_uid())
s.initialize()
server = s.proc.pid
tids = sorted(int(x) for x in os.listdir(f"/proc/{server}/task"))
print(f"   server {server}: threads {tids}")
t.check(len(tids) >= 3, "the server has worker threads beside its main thread", tids)

PROBE = f"""
import os
for tid in {tids!r}:
    try:
        os.kill(tid, 0)
        print('ALLOWED', tid)
    except PermissionError:
        print('denied', tid)
    except ProcessLookupError:
        print('gone', tid)
"""
for attempt in ("first run", "second run"):
    sc = structured(s.call(PROBE))
    out = sc["stdout"] if sc else ""
    t.check(sc and "ALLOWED" not in out and out.count("denied") == len(tids),
            f"{attempt} (MCPX_TEST_WARM={os.environ.get('MCPX_TEST_WARM')}): kill(tid, 0) is refused for every server thread", out)
r = s.request("ping")
t.check(r and r.get("result") == {}, "the server is alive")
rc = s.close()
t.check(rc == 0, "the server exits cleanly", rc)
t.done()
