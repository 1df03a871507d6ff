"""The prepared bash is indistinguishable from a cold one where it can be
(issue 34, item 6; docs/security.md, "Can the script tell?").

A prepared bash starts long before its call and waits at its gate: at its
script's first line $SECONDS would count the time since it was prepared
(and so tell when the previous bash run ended, possibly another caller's),
and $_ would hold the last word of the gate's line. The gate resets both:
after waiting at the gate for a few seconds, a prepared run's $SECONDS at
its first line is what a cold run's is (0, or 1 across a second's edge)
and $_ is the same as a cold run's. What the docs say remains is checked
too: the environment block the process was started with
(/proc/$$/environ) still names the gate, although $BASH_ENV is unset.

The first bash call of a server starts cold; the next, once a bash waits at
its gate, is taken by it (its audit line says warm). In the cold variant
(MCP_EXEC_WARM=0) both are cold and the same results hold."""
import time

from mcpx_harness import (Failures, StdioServer, audits, base_env, structured, wait_bash_at_gate,
                          warm_mode)

t = Failures()
env = base_env(MCP_EXEC_LANGUAGES="python,bash")
mode = warm_mode(env)
prepares = mode in ("fork-server", "after-reap")
s = StdioServer(env)
s.initialize()
if mode == "fork-server":
    s.wait_fork_server()

PROBE = ('echo "s=$SECONDS u=$_ env=${BASH_ENV-unset}"; '
         'tr "\\0" "\\n" < /proc/$$/environ | grep -c "^BASH_ENV=" || true')


def bash(code):
    sc = structured(s.call(code, language="bash")) or {}
    rec = audits(s.stderr_text(), "exec")
    return sc.get("stdout", ""), (rec[-1] if rec else {}).get("warm")


def field(out, name):
    for word in out.split():
        if word.startswith(name + "="):
            return word[len(name) + 1:]
    return None


cold, cold_warm = bash(PROBE)
t.check(cold_warm is False and field(cold, "env") == "unset", "the first bash call starts cold",
        (cold, cold_warm))
t.check(field(cold, "s") in ("0", "1"), "a cold run's $SECONDS starts at 0", cold)
if prepares:
    t.check(wait_bash_at_gate(s.proc.pid), f"{mode}: a bash waits at its gate")
    # Long enough that an unreset $SECONDS could not read 0 or 1.
    time.sleep(3)
warm, warm_flag = bash(PROBE)
t.check(warm_flag is prepares, "the second bash call is the prepared one where there is one",
        (warm, warm_flag))
t.check(field(warm, "s") in ("0", "1"),
        "its $SECONDS at the first line counts from its call, not from its preparation", warm)
t.check(field(warm, "u") == field(cold, "u") and field(cold, "u"),
        "$_ at its first line is a cold run's", (cold, warm))
t.check(field(warm, "env") == "unset", "$BASH_ENV is unset for the script", warm)
# Documented as what remains (docs/security.md): the start-up environment
# block still holds the gate's variable in a prepared run.
lines = warm.strip().splitlines()
t.check(lines and lines[-1] == ("1" if prepares else "0"),
        "/proc/$$/environ names the gate exactly in a prepared run (documented)", warm)
rc = s.close()
t.check(rc == 0, "the server exits cleanly", (rc, s.stderr_text()[-2000:]))
t.done()
