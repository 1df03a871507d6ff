"""A run's budget covers all of its processes (issue 11): output beyond the
cap is dropped while the program runs on; memory, disk and CPU are counted
for the whole run, not per process.

Runs through the real binary over stdio, in the warm mode ctest picks
(MCPX_TEST_WARM) and, for the parts that depend on it, in after-reap mode too.
"""
import os

from mcpx_harness import Failures, StdioServer, base_env, structured, warm_mode

t = Failures()
MODE = os.environ.get("MCPX_TEST_WARM", "auto")


def start(**extra):
    env = base_env(**extra)
    s = StdioServer(env)
    s.initialize()
    if warm_mode(env) == "fork-server":
        t.check(s.wait_fork_server(), "the fork server's zygote became ready")
    return s


def brief(sc):
    return sc and {k: (v if k not in ("stdout", "stderr") else v[-300:]) for k, v in sc.items()}


# ---- output: over the cap the program runs on, its exit code is reported ----
s = start(MCP_EXEC_MAX_OUTPUT_BYTES=4096)
# 10 MB through a 4 KiB cap (far more than a pipe holds), then work that only
# happens if the program was neither killed nor blocked on a full pipe.
sc = structured(s.call("""
import sys
for i in range(2000):
    sys.stdout.write('x' * 5000)
sys.stdout.flush()
print('still here', file=sys.stderr)
sys.exit(7)
"""))
t.check(sc and sc["truncated"] is True and sc["exit_code"] == 7 and sc["signal"] is None
        and sc["limit"] is None,
        "output over the cap: the run goes on to its own exit code, truncated", brief(sc))
t.check(sc and len(sc["stdout"]) + len(sc["stderr"]) == 4096 and sc["stdout"] == "x" * 4096,
        "exactly the cap is kept, the rest is dropped",
        sc and (len(sc["stdout"]), len(sc["stderr"])))
sc = structured(s.call("print('small')"))
t.check(sc and sc["truncated"] is False and sc["stdout"] == "small\n",
        "a run under the cap is not truncated", brief(sc))
s.close()

t.done()
