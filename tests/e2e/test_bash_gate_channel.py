"""The prepared bash is prepared for one broker channel (bash_pool.c): with
a channel when the policy gives exec code a way out (egress rules,
upstreams or functions it may call), without one otherwise. A call whose
run needs the other kind must not take it: the policy changes between the
bash being prepared and the call (a reload), and the call runs cold, with
exactly the channel the policy now gives (MCPX_CHANNEL_FD and fd 4 there,
or neither), and the bash that was waiting is gone. Both ways: a bash
prepared without a channel is not handed a call that needs one, and one
prepared with a channel is not handed a call that must have none (its run
could reach the broker the policy no longer grants).

In fork-server and after-reap modes a bash is prepared; in the cold
variant (MCP_EXEC_WARM=0) none is, and the channel is still right."""
import os
import re

from mcpx_harness import (Failures, ScratchDir, StdioServer, audits, base_env, structured,
                          wait_bash_at_gate, wait_until, warm_mode, write_policy)
from mcpx_harness import prepared_bash_pids as harness_prepared_bash_pids

t = Failures()
scratch = ScratchDir("mcpx-bash-channel-")
work = scratch.workdir()
policy_file = os.path.join(scratch.secrets, "policy.json")
NO_WAY_OUT = {}
WAY_OUT = {"egress": [{"name": "example", "url_prefix": "https://example.com/"}],
           "exec": {"egress": ["example"]}}
write_policy(policy_file, NO_WAY_OUT)
env = base_env(MCP_EXEC_LANGUAGES="python,bash", MCP_EXEC_POLICY=policy_file,
               MCP_EXEC_WORKDIR_BASE=work)
mode = warm_mode(env)
prepares = mode in ("fork-server", "after-reap")
s = StdioServer(env)
s.initialize()
if mode == "fork-server":
    s.wait_fork_server()

PROBE = 'echo "pid=$$ fd=${MCPX_CHANNEL_FD-unset} has4=$([ -e /proc/self/fd/4 ] && echo yes || echo no)"'


def bash(code):
    return structured(s.call(code, language="bash")) or {}


def probe():
    """The run's pid and channel, and whether it started warm."""
    sc = bash(PROBE)
    m = re.search(r"pid=(\d+) fd=(\S+) has4=(\S+)", sc.get("stdout", ""))
    recs = audits(s.stderr_text(), "exec")
    warm = recs[-1].get("warm") if recs else None
    return (int(m.group(1)), m.group(2), m.group(3), warm) if m else (None, None, None, warm)


def reload(policy, version):
    write_policy(policy_file, policy)
    return wait_until(lambda: f"reloaded: version {version}" in s.stderr_text(), timeout=30)


def prepared():
    return harness_prepared_bash_pids(s.proc.pid)


pid, fd, has4, warm = probe()
t.check(fd == "unset" and has4 == "no", "without a way out, a bash run has no channel",
        (fd, has4))
if prepares:
    t.check(wait_bash_at_gate(s.proc.pid), f"{mode} mode: a bash is prepared (no channel)",
            prepared())
waiting = prepared()

# The policy now gives exec code a way out: runs need a channel.
t.check(reload(WAY_OUT, 2), "the policy is reloaded with an egress rule for exec")
pid, fd, has4, warm = probe()
t.check(fd == "4" and has4 == "yes", "the next bash run has its channel (MCPX_CHANNEL_FD=4)",
        (fd, has4))
t.check(pid not in waiting and warm is False,
        "... so it did not take the bash prepared without one: it started cold",
        (pid, waiting, warm))
t.check(wait_until(lambda: not set(waiting) & set(prepared()), timeout=10),
        "... and that bash is gone", (waiting, prepared()))
if prepares:
    t.check(wait_bash_at_gate(s.proc.pid), f"{mode} mode: a bash is prepared again (with one)",
            prepared())
    waiting = prepared()
    pid, fd, has4, warm = probe()
    t.check(fd == "4" and pid in waiting and warm is True,
            "a bash prepared with the channel takes the next call that needs one",
            (pid, waiting, fd, warm))
    t.check(wait_bash_at_gate(s.proc.pid), "... and another is prepared", prepared())
waiting = prepared()

# And back: the way out is gone, so must the channel be.
t.check(reload(NO_WAY_OUT, 3), "the policy is reloaded without the rule")
pid, fd, has4, warm = probe()
t.check(fd == "unset" and has4 == "no",
        "the next bash run has no channel, the policy giving exec no way out", (fd, has4))
t.check(pid not in waiting and warm is False,
        "... so it did not take the bash prepared with one", (pid, waiting, warm))

s.close()
scratch.remove()
t.done()
