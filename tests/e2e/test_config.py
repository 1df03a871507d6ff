"""End-to-end: over-long configuration values stop the real binary with
EX_CONFIG (78) and a message naming the setting; none crashes it or is
silently cut short."""
import subprocess

from mcpx_harness import BIN, Failures, base_env

t = Failures()


def run(env, args=()):
    p = subprocess.run([BIN, *args, "--check-config"], env=env, capture_output=True, timeout=120)
    return p.returncode, p.stderr.decode(errors="replace")


rc, err = run(base_env(MCP_EXEC_TRANSPORT="http", MCP_EXEC_ADDR="[" + "a" * 280 + "]:8080"))
t.check(rc == 78 and "MCP_EXEC_ADDR" in err and "280 bytes" in err,
        "bracketed 280-byte host -> 78 naming MCP_EXEC_ADDR (was SIGSEGV)", (rc, err))
rc, err = run(base_env(), ["--addr=" + "h" * 400 + ":80"])
t.check(rc == 78 and "--addr" in err, "over-long --addr -> 78 naming the flag", (rc, err))
rc, err = run(base_env(TMPDIR="/" + "t" * 5000))
t.check(rc == 78 and "TMPDIR" in err and "MCP_EXEC_WORKDIR_BASE" in err,
        "over-long TMPDIR -> 78 naming it, not a cut path", (rc, err))
rc, err = run(base_env(MCP_EXEC_WORKDIR_BASE="/" + "w" * 4031))
t.check(rc == 78 and "MCP_EXEC_WORKDIR_BASE" in err and "4031 allowed" in err,
        "over-long workdir base -> 78 with the limit", (rc, err))
rc, err = run(base_env(MCP_EXEC_AUTH_TOKEN="x" * 5000))
t.check(rc == 78 and "MCP_EXEC_AUTH_TOKEN" in err and "x" * 20 not in err,
        "over-long token -> 78, the value not echoed", (rc, err[:300]))
rc, err = run(base_env(MCP_EXEC_MAX_QUEUE="9" * 5000))
t.check(rc == 78 and "MCP_EXEC_MAX_QUEUE" in err and len(err) < 400,
        "over-long number -> 78, message stays short", (rc, err[:300]))
t.done()
