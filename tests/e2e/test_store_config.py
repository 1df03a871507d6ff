"""End-to-end: the workspace store as the real binary configures it.

--check-config names the store (a Redis password never, only its file);
bad values stop the server with 78 naming the variable and not echoing the
value; a password file or a directory runs could read is refused; a server
on a Redis store (redis-server started here on a free loopback port with a
password, stopped by pid) reports it in /metrics, says when it goes down and
comes back without a restart, and never logs its address or password; a
directory store is made private (0700)."""
import os
import shutil
import socket
import subprocess
import time

from mcpx_harness import BIN, Failures, HttpServer, ScratchDir, base_env, wait_until

t = Failures()
scratch = ScratchDir("mcpx-store-e2e-")
# Runs live here; the rest of the scratch directory (secrets/) is out of
# their reach, as /tmp itself would not be.
WORK = scratch.workdir()
PASSWORD = "e2e-store-password-7f3a"


def check_config(**env):
    env.setdefault("MCP_EXEC_WORKDIR_BASE", WORK)
    p = subprocess.run([BIN, "--check-config"], env=base_env(**env), capture_output=True,
                       timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_redis(port):
    p = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port),
                          "--requirepass", PASSWORD, "--save", "", "--appendonly", "no",
                          "--dir", scratch.path], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                c.sendall(b"AUTH " + PASSWORD.encode() + b"\r\nPING\r\n")
                got = b""
                while b"PONG" not in got:
                    chunk = c.recv(64)
                    if not chunk:
                        break
                    got += chunk
                if b"PONG" in got:
                    return p
        except OSError:
            time.sleep(0.05)
    return p


def stop(p):
    p.kill()
    p.wait()


# Bad values: 78, the variable named, the value not repeated.
rc, _, err = check_config(MCP_EXEC_WORKSPACES="redis://mcp:sekrit-in-url@cache:6379")
t.check(rc == 78 and "MCP_EXEC_WORKSPACES" in err and "sekrit-in-url" not in err,
        "a password in the URL -> 78, not echoed", (rc, err))
rc, _, err = check_config(MCP_EXEC_WORKSPACES="memcached://cache")
t.check(rc == 78 and "MCP_EXEC_WORKSPACES" in err, "an unknown store -> 78", (rc, err))
rc, _, err = check_config(MCP_EXEC_WORKSPACE_MAX_MB="0")
t.check(rc == 78 and "MCP_EXEC_WORKSPACE_MAX_MB" in err, "a 0 MiB cap -> 78", (rc, err))

# A Redis store in --check-config: its address, its password file, never the password.
pwfile = scratch.secret("redis-password", PASSWORD)
rc, out, err = check_config(MCP_EXEC_WORKSPACES="redis://127.0.0.1:6399/2",
                            MCP_EXEC_WORKSPACES_PASSWORD_FILE=pwfile)
t.check(rc == 0 and f"MCP_EXEC_WORKSPACES=redis://127.0.0.1:6399/2 (password from {pwfile})"
        in out and "workspaces: redis://127.0.0.1:6399/2" in out and PASSWORD not in out + err,
        "--check-config shows the Redis store and its password file only", (rc, out[-600:], err))

# A password file where runs can read it (in the workdir base): refused.
in_reach = os.path.join(WORK, "redis-password")
shutil.copy(pwfile, in_reach)
os.chmod(in_reach, 0o644)
rc, out, err = check_config(MCP_EXEC_WORKSPACES="redis://127.0.0.1:6399",
                            MCP_EXEC_WORKSPACES_PASSWORD_FILE=in_reach)
t.check(rc == 78 and "workspaces: REFUSED" in out and "runs can read" in out,
        "a password file runs could read -> refused", (rc, out[-400:], err))

# A directory store: made with its v1/ private.
store_dir = os.path.join(scratch.path, "ws-store")
rc, out, err = check_config(MCP_EXEC_WORKSPACES="dir:" + store_dir)
t.check(rc == 0 and f"workspaces: dir:{store_dir} (out of runs' reach" in out,
        "--check-config judges a directory store", (rc, out[-400:], err))
s = HttpServer({"MCP_EXEC_WORKSPACES": "dir:" + store_dir, "MCP_EXEC_WORKDIR_BASE": WORK})
t.check(os.stat(os.path.join(store_dir, "v1")).st_mode & 0o777 == 0o700,
        "the directory store's v1/ is 0700")
st, _, body = s.request("GET", "/metrics")
t.check('workspaces="dir"' in body.decode(), "/metrics names the directory store",
        body.decode()[-800:])
s.stop()

# A server on Redis: up, down, up again without a restart; nothing logged names it.
if shutil.which("redis-server") is None:
    print("skip: redis-server is not installed (scripts/deps.sh --test)")
else:
    port = free_port()
    redis = start_redis(port)
    s = HttpServer({"MCP_EXEC_WORKSPACES": f"redis://127.0.0.1:{port}",
                    "MCP_EXEC_WORKSPACES_PASSWORD_FILE": pwfile, "MCP_EXEC_WORKDIR_BASE": WORK})
    up = 'mcp_exec_store_up{store="redis"}'
    t.check(wait_until(lambda: s.metric(up) == 1, timeout=30), "Redis store up in /metrics")
    st, _, body = s.request("GET", "/metrics")
    t.check('workspaces="redis"' in body.decode(), "/metrics names the Redis store")
    stop(redis)
    t.check(wait_until(lambda: s.metric(up) == 0, timeout=30), "a stopped Redis: up 0")
    redis = start_redis(port)
    t.check(wait_until(lambda: s.metric(up) == 1, timeout=30),
            "Redis back: up 1 again, the server not restarted")
    st, _, _ = s.request("GET", "/healthz")
    t.check(st == 200, "the server stayed healthy throughout")
    s.stop()
    log = s.drain_stderr()
    t.check("store: connected to redis" in log and "lost" in log,
            "the log says the store went and came back", log[-1500:])
    t.check(PASSWORD not in log and f"127.0.0.1:{port}" not in log and str(port) not in log,
            "the log never names the store's address, port or password", log[-1500:])
    stop(redis)

scratch.remove()
t.done()
