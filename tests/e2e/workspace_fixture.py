"""What the workspace tests share: the two stores (a directory, and a
Debian redis-server started here on a free loopback port with a password),
servers that use them, and calls with a workspace.

Every test runs its scenarios against both stores (MCPX_WS_STORES narrows
that, e.g. "dir"). redis-server is Debian's (scripts/deps.sh); without it the
Redis half is skipped with a line saying so, never passed."""
import os
import shutil
import signal
import socket
import subprocess
import time

from mcpx_harness import HttpServer, McpHttpClient, NamedTokens, ScratchDir, _procs, structured

REDIS = shutil.which("redis-server", path="/usr/bin:/bin")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    """redis-server on 127.0.0.1:<free port> with a password, its data in
    dir (append-only, fsync'd on every write, so a restart keeps it)."""

    def __init__(self, scratch):
        self.dir = os.path.join(scratch.path, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.password = "ws-" + os.urandom(12).hex()
        self.password_file = scratch.secret("redis-password", self.password)
        self.port = None
        self.proc = None
        self.start()

    def start(self):
        """Starts (or restarts, on the same port) the server."""
        keep = self.port
        for _ in range(5):
            self.port = keep or free_port()
            self.proc = subprocess.Popen(
                [REDIS, "--bind", "127.0.0.1", "--port", str(self.port), "--requirepass",
                 self.password, "--dir", self.dir, "--appendonly", "yes", "--appendfsync",
                 "always", "--save", "", "--daemonize", "no", "--protected-mode", "yes"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _procs.append(self.proc)
            if self.wait_ready():
                return
            self.proc.kill()
            self.proc.wait()
        raise RuntimeError("redis-server did not start")

    def wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            if self.ping():
                return True
            time.sleep(0.05)
        return False

    def command(self, *words):
        """One command over RESP after AUTH; both replies as text, or None
        when the server cannot be reached."""
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            return None
        try:
            req = b""
            for cmd in (("AUTH", self.password), words):
                req += b"*%d\r\n" % len(cmd)
                for w in cmd:
                    w = w.encode() if isinstance(w, str) else w
                    req += b"$%d\r\n%s\r\n" % (len(w), w)
            s.sendall(req)
            data = b""
            while data.count(b"\r\n") < 2:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data.decode(errors="replace")
        except OSError:
            return None
        finally:
            s.close()

    def ping(self):
        return (self.command("PING") or "").endswith("+PONG\r\n")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def url(self):
        return f"redis://127.0.0.1:{self.port}"


def stores():
    want = os.environ.get("MCPX_WS_STORES", "dir,redis").split(",")
    return [s for s in ("dir", "redis") if s in want]


class Store:
    """One store for one scenario: the environment its servers get."""

    def __init__(self, kind, scratch):
        self.kind = kind
        self.scratch = scratch
        self.redis = None
        if kind == "dir":
            self.path = os.path.join(scratch.path, "store")
            os.makedirs(self.path, 0o700, exist_ok=True)
        else:
            self.redis = Redis(scratch)

    def env(self):
        if self.kind == "dir":
            return {"MCP_EXEC_WORKSPACES": "dir:" + self.path}
        return {"MCP_EXEC_WORKSPACES": self.redis.url(),
                "MCP_EXEC_WORKSPACES_PASSWORD_FILE": self.redis.password_file}

    def close(self):
        if self.redis:
            self.redis.stop()


_servers_started = 0


class Servers:
    """Servers sharing one store, each with the same two named callers
    (alice, bob) in a tokens file."""

    def __init__(self, store, extra=None):
        self.store = store
        self.tokens = NamedTokens(os.path.join(store.scratch.secrets, "tokens.json"),
                                  ["alice", "bob"])
        self.tokens.write(["alice", "bob"])
        self.extra = extra or {}
        self.all = []

    def start(self, extra=None):
        global _servers_started
        _servers_started += 1
        env = {"MCP_EXEC_AUTH_TOKENS_FILE": self.tokens.path,
               "MCP_EXEC_WORKDIR_BASE": self.store.scratch.workdir(f"work{_servers_started}")}
        env.update(self.store.env())
        env.update(self.extra)
        env.update(extra or {})
        srv = HttpServer(env)
        self.all.append(srv)
        return srv

    def client(self, srv, caller="alice"):
        c = McpHttpClient(srv, token=self.tokens.tokens[caller])
        c.initialize()
        return c

    def stop(self):
        for s in self.all:
            s.stop()


def ws_call(client, code, workspace, **args):
    """An exec call with a workspace: (structuredContent, the whole answer)."""
    st, _, body = client.call(code, workspace=workspace, **args)
    if isinstance(body, list):
        body = next((m for m in body if "result" in m or "error" in m), None)
    return structured(body) or {}, body


def error_text(body):
    """A tool error's text, or None for a result that is not one."""
    r = (body or {}).get("result") or {}
    if not r.get("isError"):
        return None
    return "".join(c.get("text", "") for c in r.get("content", []))
