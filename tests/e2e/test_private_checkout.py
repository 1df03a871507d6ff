"""A checkout where the run uid cannot look: root's clone in a 0700 home.

The runs drop to uid 65532, which cannot search a 0700 folder of root's.
The server must still start, pass its self-test and serve warm and cold
runs from binaries there (the zygote is opened before the drop and executed
through its descriptor, docs/architecture.md); what cannot work says so by
path, uid and cause: a zygote the run uid may not execute turns warm runs
off with one warning and the server serves cold; an interpreter the run uid
cannot reach is a refusal naming MCP_EXEC_PYTHON.

The build's binaries are copied into a fresh 0700 folder (mkdtemp's mode),
which is what matters, wherever this checkout itself lies. Root only (the
uid drop is root's); the warm part runs in the default ctest variant, the
cold part in the .cold one."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from mcpx_harness import BIN, Failures, StdioServer, base_env, structured, warm_mode

if os.geteuid() != 0:
    print("skipped: needs root (the runs drop to another uid only when started as root)")
    sys.exit(77)

t = Failures()
COLD = os.environ.get("MCPX_TEST_WARM") == "0"
home = tempfile.mkdtemp(prefix="mcpx-private-")  # 0700, root's: like /root
t.check(os.stat(home).st_mode & 0o777 == 0o700, "the folder is 0700", oct(os.stat(home).st_mode))
build = os.path.join(home, "src", "mcp-exec", "build")
os.makedirs(build)
for name in ("mcp-exec", "mcp-exec-zygote"):
    shutil.copy2(os.path.join(os.path.dirname(os.path.abspath(BIN)), name),
                 os.path.join(build, name))
PRIV_BIN = os.path.join(build, "mcp-exec")
ZYGOTE = os.path.join(build, "mcp-exec-zygote")


def check_config(env):
    p = subprocess.run([PRIV_BIN, "--check-config"], env=env, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout


def audit(server):
    return [json.loads(l) for l in server.stderr_text().splitlines() if '"audit"' in l]


def one_run(env, what, forked=False):
    s = StdioServer(env, binary=PRIV_BIN)
    r = s.initialize()
    t.check(r and "result" in r, f"{what}: initialize answered", r)
    if forked:
        t.check(s.wait_fork_server(), f"{what}: the fork server's zygote became ready",
                s.stderr_text()[-2000:])
    sc = structured(s.call("import os; print(os.getuid(), os.getcwd() != '/')"))
    t.check(sc and sc["exit_code"] == 0 and sc["stdout"] == "65532 True\n",
            f"{what}: the run ran as 65532", sc)
    rc = s.close()
    t.check(rc == 0, f"{what}: the server exits cleanly", rc)
    return s


try:
    if not COLD:
        env = base_env(MCP_EXEC_WARM="auto")
        rc, out = check_config(env)
        t.check(rc == 0 and "self-test: passed" in out, "--check-config: the self-test passes",
                out)
        t.check(f"warm interpreter binary: {ZYGOTE}" in out,
                "--check-config: the zygote in the 0700 folder is used", out)
        forked = "warm interpreters: fork-server" in out
        t.check(forked == (warm_mode() == "fork-server"),
                "the same warm mode as the build tree's own binary", out)
        s = one_run(env, "warm", forked)
        runs = audit(s)
        if forked:
            t.check(runs and runs[-1].get("warm") is True, "the run was forked from the zygote",
                    runs)

        # A zygote the run uid may not execute: warm runs off, said once, cold serves.
        os.chmod(ZYGOTE, 0o700)
        want = f"{ZYGOTE} is mode 0700 (owner 0): uid 65532 cannot execute it"
        rc, out = check_config(env)
        t.check(rc == 0 and "self-test: passed" in out and want in out,
                "--check-config: names the zygote's path, uid and mode, and still passes", out)
        t.check("warm interpreters: off" in out, "--check-config: warm interpreters off", out)
        s = one_run(env, "zygote not executable")
        warns = [json.loads(l)["msg"] for l in s.stderr_text().splitlines()
                 if l.startswith("{") and json.loads(l).get("level") == "warn"]
        t.check(len([w for w in warns if want in w]) == 1,
                "one warning names the path, the uid and the cause", warns)
        runs = audit(s)
        t.check(runs and runs[-1].get("warm") is False, "the run started cold", runs)
    else:
        env = base_env(MCP_EXEC_WARM="0")
        rc, out = check_config(env)
        t.check(rc == 0 and "self-test: passed" in out, "--check-config (cold): passes", out)
        one_run(env, "cold")

        # An interpreter the run uid cannot reach is a refusal that says what to change.
        py = os.path.join(home, "python3")
        shutil.copy2(os.path.realpath("/usr/bin/python3"), py)
        env = base_env(MCP_EXEC_WARM="0", MCP_EXEC_PYTHON=py)
        rc, out = check_config(env)
        t.check(rc != 0 and "cannot reach" in out and "MCP_EXEC_PYTHON" in out,
                "--check-config: an unreachable interpreter fails, naming MCP_EXEC_PYTHON", out)
        p = subprocess.run([PRIV_BIN], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=120)
        t.check(p.returncode != 0 and f"{home} is mode 0700" in p.stderr
                and "uid 65532 cannot reach" in p.stderr,
                "the server refuses to start, naming the folder's mode and the uid",
                (p.returncode, p.stderr[-600:]))
finally:
    shutil.rmtree(home, ignore_errors=True)
t.done()
