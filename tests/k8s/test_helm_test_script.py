#!/usr/bin/python3
"""The chart's `helm test` script (deploy/helm/mcp-exec/files/helm-test.py)
against real servers: it must pass on a healthy server and fail, with the
failing check named, on each kind of broken one. Without this, a helm test
could pass for the wrong reason (its first check used to pass when the
server was unreachable).

  exec mode:       healthy server -> pass; nothing listening -> fail at the
                   probe (and no later check claims success); a server that
                   accepts calls without a token -> fail; a server with a
                   different token -> the 42 check fails;
                   a server without Landlock under MCP_EXEC_RUNTIME=vm -> the
                   token check says so (from /metrics) and what a run reads;
  isolation mode:  a reachable server -> fail (the NetworkPolicy would not be
                   working); a closed port -> pass; a name that does not
                   resolve -> fail (the check could mean nothing).

Needs the built mcp-exec and mcp-exec-client (MCPX_BIN, or build/).
"""
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from mcpx_harness import BIN, Failures, HttpServer, deny_syscalls  # noqa: E402

SCRIPT = os.path.join(ROOT, "deploy", "helm", "mcp-exec", "files", "helm-test.py")
CLIENT = os.path.join(os.path.dirname(os.path.abspath(BIN)), "mcp-exec-client")
t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-helm-test-")


def token_file(name, value):
    p = os.path.join(tmp, name)
    with open(p, "w") as fh:
        fh.write(value + "\n")
    os.chmod(p, 0o600)
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(mode, url, tok, **env):
    e = {"PATH": "/usr/bin:/bin", "MCP_URL": url, "TOKEN_FILE": tok, "MCP_EXEC_CLIENT": CLIENT,
         "CONNECT_TIMEOUT_S": "3"}
    e.update(env)
    p = subprocess.run(["/usr/bin/python3", SCRIPT, mode], env=e, capture_output=True, text=True,
                       timeout=600, cwd=tmp)
    print("   | " + p.stdout.strip().replace("\n", "\n   | "))
    return p.returncode, p.stdout


TOKEN = "helm-test-token-" + os.urandom(12).hex()
good_tok = token_file("token", TOKEN)
srv = HttpServer({"MCP_EXEC_AUTH_TOKEN_FILE": good_tok})
url = f"http://127.0.0.1:{srv.port}/mcp"

# Landlock decides whether the token check is asserted, as the chart's
# config.requireLandlock does in a cluster.
landlock = "landlock(" in subprocess.run([BIN, "--check-config"], capture_output=True, text=True,
                                          env={"PATH": "/usr/bin", "MCP_EXEC_AUTH_TOKEN": TOKEN}).stdout
rc, out = run("exec", url, good_tok, REQUIRE_LANDLOCK="1" if landlock else "0",
              SERVER_TOKEN_FILE=good_tok)
t.check(rc == 0 and "FAIL" not in out and "0 failed" in out, "exec mode passes on a healthy server", out)
t.check(("run code cannot read the server's token" in out) == landlock,
        "the token check runs exactly when Landlock is required", landlock)

# A server the runtime lets start without Landlock (MCP_EXEC_RUNTIME=vm, a
# kernel without Landlock simulated): the token check reads /metrics and says
# what a run reaches there (here the root server's uid drop keeps the 0600
# token out of reach; in the pod only file modes would) instead of failing.
vm_srv = HttpServer({"MCP_EXEC_AUTH_TOKEN_FILE": good_tok, "MCP_EXEC_REQUIRE_LANDLOCK": "1",
                     "MCP_EXEC_RUNTIME": "vm"},
                    preexec=deny_syscalls(["landlock_create_ruleset", "landlock_add_rule",
                                           "landlock_restrict_self"]))
rc, out = run("exec", f"http://127.0.0.1:{vm_srv.port}/mcp", good_tok, REQUIRE_LANDLOCK="1",
              SERVER_TOKEN_FILE=good_tok)
t.check(rc == 0 and "ok   [vm] the server reports no Landlock, accepted under this runtime: run code "
        "cannot read the server's token" in out,
        "under a VM without Landlock the token check says what runs reach, and passes", out)
vm_srv.stop()

rc, out = run("exec", f"http://127.0.0.1:{free_port()}/mcp", good_tok)
t.check(rc == 1 and "FAIL" in out and "ok " not in out, "exec mode fails on an unreachable server, and no "
        "check claims success", out)

other_tok = token_file("other", "another-token-" + os.urandom(12).hex())
rc, out = run("exec", url, other_tok)
t.check(rc == 1 and "FAIL exec print(6*7) with the token" in out, "exec mode fails with the wrong token", out)

open_srv = HttpServer({})  # loopback listener without a token: accepts every call
rc, out = run("exec", f"http://127.0.0.1:{open_srv.port}/mcp", good_tok)
t.check(rc == 1 and "FAIL a call without the token is refused" in out,
        "exec mode fails on a server that does not check the token", out)
open_srv.stop()

rc, out = run("isolation", url, good_tok)
t.check(rc == 1 and "FAIL a pod without the client labels cannot connect" in out,
        "isolation mode fails when the server is reachable", out)
rc, out = run("isolation", f"http://127.0.0.1:{free_port()}/mcp", good_tok)
t.check(rc == 0 and "1 failed" not in out, "isolation mode passes when the connection is refused", out)
rc, out = run("isolation", "http://mcpx-no-such-host.invalid:8080/mcp", good_tok)
t.check(rc == 1 and "resolves" in out, "isolation mode fails when the name does not resolve", out)

srv.stop()
t.done()
