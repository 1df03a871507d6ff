"""Honest start-up: --check-config judges the sandbox exactly as the server's
start does, and a missing Landlock is a warning that says what runs lose,
and a 0 in /metrics.

A kernel without seccomp or without Landlock is simulated by starting the
binary under a seccomp filter that answers ENOSYS to those syscalls
(deny_syscalls): the server then probes them and finds them missing, as it
would on such a kernel."""
import json
import subprocess

from mcpx_harness import (BIN, Failures, HttpServer, StdioServer, base_env, deny_syscalls,
                          structured)

t = Failures()
NO_SECCOMP = ["seccomp"]
NO_LANDLOCK = ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"]
# What gVisor offers (runsc 2022-12 and 2024-07): filters install and act,
# but SECCOMP_GET_ACTION_AVAIL answers EINVAL, pidfd_open ENOSYS, and there
# is no Landlock.
GVISOR_LIKE = ["seccomp_action_query", "pidfd_open"] + NO_LANDLOCK


def check_config(env, deny=None):
    p = subprocess.run([BIN, "--check-config"], env=env, capture_output=True, text=True,
                       timeout=120, preexec_fn=deny_syscalls(deny) if deny else None)
    return p.returncode, p.stdout, p.stderr


def server_start(env, deny):
    """Exit code and stderr of a stdio server whose stdin is already at EOF:
    one that serves exits 0 at once, one that refuses exits with its code."""
    p = subprocess.run([BIN], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120, preexec_fn=deny_syscalls(deny))
    return p.returncode, p.stderr


def warnings(stderr):
    return [json.loads(l) for l in stderr.splitlines()
            if l.startswith("{") and json.loads(l).get("level") == "warn"]


# ---- no seccomp: both refuse -----------------------------------------------------
env = base_env()
rc, out, err = check_config(env, NO_SECCOMP)
print("   check-config without seccomp:", rc, [l for l in out.splitlines() if "sandbox" in l])
t.check(rc != 0 and "seccomp=off" in out and "REFUSED" in out and "seccomp is unavailable" in out,
        "--check-config fails where seccomp is unavailable and says why", (rc, out[-600:], err[-300:]))
src, serr = server_start(env, NO_SECCOMP)
t.check(src == 69 and "seccomp is unavailable" in serr,
        "the server refuses to start there too (exit 69)", (src, serr[-400:]))

# ---- no Landlock, not required: a warning naming what is lost --------------------
rc, out, err = check_config(base_env(MCP_EXEC_WARM="auto"), NO_LANDLOCK)
print("   check-config without Landlock:", rc, [l for l in out.splitlines() if l.startswith(("sandbox", "self-test", "warm"))])
lost = [w["msg"] for w in warnings(err)]
t.check(rc == 0 and "landlock=off" in out and "self-test: passed" in out,
        "--check-config passes without Landlock when it is not required", (rc, out[-600:]))
t.check(any("outside their workdir" in m and "token file" in m for m in lost),
        "--check-config warns what runs lose without Landlock", err[-800:])
t.check("warm interpreters: after-reap" in out, "without Landlock warm interpreters (auto) are after-reap",
        out[-300:])

h = HttpServer(preexec=deny_syscalls(NO_LANDLOCK))
st, _, body = h.request("GET", "/metrics")
metrics = body.decode()
t.check(st == 200 and 'mcp_exec_sandbox_layer{layer="landlock"} 0' in metrics
        and 'mcp_exec_sandbox_layer{layer="seccomp"} 1' in metrics,
        "/metrics shows the missing Landlock layer as 0", [l for l in metrics.splitlines() if "layer" in l])
lost = [w["msg"] for w in warnings(h.drain_stderr())]
t.check(any("outside their workdir" in m and "token file" in m and "MCP_EXEC_REQUIRE_LANDLOCK" in m
            for m in lost),
        "the server logs a warning (not info) naming what is lost without Landlock", lost)
t.check(h.stop() == 0, "that server stops cleanly")

# ---- no Landlock, required: both refuse ------------------------------------------
env = base_env(MCP_EXEC_REQUIRE_LANDLOCK="1")
rc, out, err = check_config(env, NO_LANDLOCK)
t.check(rc != 0 and "REFUSED" in out and "MCP_EXEC_REQUIRE_LANDLOCK" in out,
        "--check-config fails when Landlock is required and missing", (rc, out[-400:]))
src, serr = server_start(env, NO_LANDLOCK)
t.check(src == 69 and "MCP_EXEC_REQUIRE_LANDLOCK" in serr,
        "the server refuses to start there too (exit 69)", (src, serr[-400:]))

# ---- a kernel like gVisor's: seccomp judged by what a filter does ---------------
rc, out, err = check_config(base_env(), GVISOR_LIKE)
print("   check-config like gVisor:", rc, [l for l in out.splitlines() if l.startswith(("sandbox", "self-test", "  seccomp", "  run exits"))])
t.check(rc == 0 and "self-test: passed" in out and "  seccomp: holds" in out
        and "exit-watch=threads" in out and "run exits seen through: a waitid thread" in out,
        "without SECCOMP_GET_ACTION_AVAIL and pidfd_open the server starts: the filter is seen to "
        "act, run exits come through watcher threads", (rc, out[-900:], err[-300:]))
s2 = StdioServer(base_env(MCP_EXEC_WARM="after-reap"), preexec=deny_syscalls(GVISOR_LIKE))
s2.initialize()
got = []
for code, kw in (("print(6*7)", {}), ("import sys; sys.exit(3)", {}),
                 ("import os, time\nif os.fork() == 0:\n    time.sleep(60)\nprint('left one')", {}),
                 ("while True: pass", {"timeout_s": 1}),
                 ("import socket; socket.socket()", {})):
    got.append(structured(s2.call(code, **kw)) or {})
t.check(got[0].get("stdout") == "42\n" and got[1].get("exit_code") == 3
        and got[2].get("stdout") == "left one\n" and got[2].get("exit_code") == 0
        and got[3].get("limit") in ("timeout", "cpu") and "PermissionError" in got[4].get("stderr", ""),
        "there the server serves: output, exit codes, a leader that left a child, a timeout, the "
        "network denied", [(g.get("stdout"), g.get("exit_code"), g.get("limit")) for g in got])
t.check(s2.close() == 0, "that server stops cleanly", s2.stderr_text()[-500:])

# ---- Landlock required, missing, and the runtime said to replace the kernel ------
env = base_env(MCP_EXEC_REQUIRE_LANDLOCK="1")
rc, out, err = check_config(env, GVISOR_LIKE)
t.check(rc != 0 and "REFUSED" in out and "MCP_EXEC_RUNTIME" in out,
        "required and missing Landlock still refuses on the host, naming MCP_EXEC_RUNTIME",
        (rc, out[-400:]))
for runtime in ("vm", "gvisor"):
    env = base_env(MCP_EXEC_REQUIRE_LANDLOCK="1", MCP_EXEC_RUNTIME=runtime)
    rc, out, err = check_config(env, GVISOR_LIKE)
    lost = [w["msg"] for w in warnings(err)]
    t.check(rc == 0 and f"runtime: {runtime} (configured" in out and "self-test: passed" in out
            and "accepted under this runtime" in out
            and any(f"unavailable under {runtime}" in m and "token file" in m for m in lost),
            f"MCP_EXEC_RUNTIME={runtime}: a missing Landlock is accepted even where required, "
            "and the warning says what runs can still reach", (rc, out[-900:], lost))
rc, out, err = check_config(base_env(MCP_EXEC_RUNTIME="kata"))
t.check(rc == 78 and "MCP_EXEC_RUNTIME" in err and "auto|host|gvisor|vm" in err,
        "an unknown MCP_EXEC_RUNTIME is a configuration error", (rc, err[-300:]))

# ---- the usual kernel: both agree that all is well -------------------------------
rc, out, err = check_config(base_env())
t.check(rc == 0 and "self-test: passed" in out and not warnings(err),
        "--check-config passes, with no warning, where every layer is there", (rc, out[-300:], err[-300:]))

# ---- a token file the server could not read: both refuse -------------------------
env = base_env(MCP_EXEC_TRANSPORT="http", MCP_EXEC_ADDR="127.0.0.1:0",
               MCP_EXEC_AUTH_TOKEN_FILE="/nonexistent/mcpx-token")
rc, out, err = check_config(env)
t.check(rc == 78 and "auth: FAILED" in out, "--check-config reads the token file as the server does",
        (rc, out[-300:]))
t.done()
