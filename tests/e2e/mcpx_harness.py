"""Shared helpers for the end-to-end tests: start the real mcp-exec binary,
talk MCP to it over stdio (and, in other files, HTTP), collect results.

Every process a test starts is tracked by pid and killed at exit.
"""
import atexit
import hashlib
import json
import os
import select
import shlex
import signal
import shutil
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("MCPX_BIN") or os.path.join(
    os.environ.get("MCPX_BUILD_DIR", "build"), "mcp-exec")
PYTHON = "/usr/bin/python3"
# MCPX_WRAP: a command every server is started through, given
# "--uid N -- BINARY ARGS..." (runsc_wrap.py: gVisor in the pod's posture).
# The server then runs as uid 65532 (or as_uid) with no capabilities, on a
# read-only root; it is not this process's child, nor visible in its /proc.
WRAP = shlex.split(os.environ.get("MCPX_WRAP", ""))
POD_UID = 65532
if WRAP and "runsc" in " ".join(WRAP):
    _runsc = os.environ.get("MCPX_RUNSC") or shutil.which("runsc")
    if os.geteuid() != 0 or not _runsc or not os.access(_runsc, os.X_OK):
        print("SKIP: the gVisor pass needs root and runsc (bash scripts/deps.sh --gvisor)")
        sys.exit(77)


def wrapped():
    """True when servers run through MCPX_WRAP (under gVisor)."""
    return bool(WRAP)


def under_gvisor():
    """True when the servers run under gVisor: started through runsc_wrap.py,
    or this test itself runs there (the image under podman --runtime runsc),
    seen as the server sees it (/proc/cmdline names a -gvisor kernel). A
    probe's expectation that differs there says so with this."""
    if wrapped() and "runsc" in " ".join(WRAP):
        return os.environ.get("MCPX_OCI_RUNTIME", "runsc") != "runc"
    try:
        with open("/proc/cmdline") as f:
            return any(w.startswith("BOOT_IMAGE=") and w.endswith("-gvisor") for w in f.read().split())
    except OSError:
        return False


def server_is_root():
    """Whether the server runs as root (its runs then drop to 65532)."""
    return os.geteuid() == 0 and not wrapped()


def for_server(path):
    """path, made the server's own when it runs as another uid (MCPX_WRAP:
    65532): a workdir base the test made must be writable by the server."""
    if WRAP and os.geteuid() == 0:
        os.chown(path, POD_UID, POD_UID)
    return path

_procs = []
sys.stdout.reconfigure(line_buffering=True)


class ServerDied(RuntimeError):
    """The server under test exited while a test was still talking to it.
    Raised at once (no waiting for a timeout), with its last log lines."""


def _died(proc, log, what):
    lines = log.decode(errors="replace").strip().splitlines()[-15:]
    return ServerDied(f"the server exited (status {proc.returncode}) {what}; its last log "
                      "lines:\n  " + "\n  ".join(lines or ["(none)"]))


def _cleanup():
    for p in _procs:
        if p.poll() is None:
            try:
                if WRAP:  # lets the wrapper remove its sandbox first
                    p.terminate()
                    p.wait(timeout=5)
            except Exception:
                pass
        if p.poll() is None:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass


atexit.register(_cleanup)


def base_env(**extra):
    # ctest runs the end-to-end suite once per warm mode (MCPX_TEST_WARM):
    # results must be identical whichever way the interpreter was prepared.
    env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_LOG_FORMAT": "json",
           "MCP_EXEC_PYTHON": PYTHON, "MCP_EXEC_WARM": os.environ.get("MCPX_TEST_WARM", "auto")}
    for k, v in extra.items():
        env[k] = str(v)
    return env


_warm_mode = None


def warm_mode(env=None):
    """The warm mode the server picks on this machine for env (from --check-config):
    "fork-server", "after-reap" or "off"."""
    global _warm_mode
    if env is None and _warm_mode is not None:
        return _warm_mode
    cmd = [BIN, "--check-config"]
    if WRAP:
        cmd = WRAP + ["--uid", str(POD_UID), "--", bin_for_uid(), "--check-config"]
    out = subprocess.run(cmd, env=env or base_env(), capture_output=True, text=True,
                         timeout=60).stdout
    mode = next((l.split(":", 1)[1].split()[0] for l in out.splitlines()
                 if l.startswith("warm interpreters:")), "off")
    if env is None:
        _warm_mode = mode
    return mode


class Failures:
    """Collects check results; prints `N passed, N failed` and sets the exit code."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, cond, what, got=None):
        if cond:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}" + (f": got {got!r}" if got is not None else ""))
        return cond

    def done(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)


_bin_copies = []


@atexit.register
def _remove_bin_copies():
    import shutil
    for d in _bin_copies:
        shutil.rmtree(d, ignore_errors=True)


def bin_for_uid():
    """The server binary as another uid can run it: the build tree may sit
    where that uid cannot look (a checkout in root's 0700 home), as a pod's
    image never does. So the server and its zygote are copied once into a
    fresh 0755 folder under /tmp, as an image installs them."""
    import shutil
    import tempfile
    if not _bin_copies:
        d = tempfile.mkdtemp(prefix="mcpx-bin-")
        os.chmod(d, 0o755)
        _bin_copies.append(d)
        src = os.path.dirname(os.path.abspath(BIN))
        for name in (os.path.basename(BIN), "mcp-exec-zygote"):
            if os.path.exists(os.path.join(src, name)):
                shutil.copy2(os.path.join(src, name), os.path.join(d, name))
    return os.path.join(_bin_copies[0], os.path.basename(BIN))


def _become(uid):
    """A preexec_fn that runs the server as uid (gid uid, no groups): the pod,
    where the server and its runs share one uid and nothing is root."""
    def drop():
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    return drop


# Syscall numbers for deny_syscalls, per machine (landlock_* and pidfd_open
# are the same on every architecture).
_NR = {"x86_64": {"seccomp": 317}, "aarch64": {"seccomp": 277}}
for _m in _NR.values():
    _m.update(landlock_create_ruleset=444, landlock_add_rule=445, landlock_restrict_self=446,
              pidfd_open=434)
# Rules on one operation of a syscall: (syscall, its first argument, errno).
# seccomp_action_query: SECCOMP_GET_ACTION_AVAIL answers EINVAL, as under
# gVisor, while filters still install.
_OPS = {"seccomp_action_query": ("seccomp", 2, 22)}


def deny_syscalls(names):
    """A preexec_fn that makes the named syscalls fail with ENOSYS for the
    server and everything it starts, as a kernel without them (or a runtime
    profile that denies them) would: a small seccomp filter installed
    between fork and exec. A name from _OPS denies one operation only."""
    import ctypes
    import platform
    import struct
    nr = _NR[platform.machine()]
    arch = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[platform.machine()]
    LD, JEQ, RET = 0x20, 0x15, 0x06
    ALLOW, ERRNO = 0x7FFF0000, 0x00050000
    prog = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, ALLOW)]
    for n in names:
        if n in _OPS:
            sysname, arg0, err = _OPS[n]
            prog += [(LD, 0, 0, 0), (JEQ, 0, 3, nr[sysname]),
                     (LD, 0, 0, 16), (JEQ, 0, 1, arg0),      # seccomp_data.args[0], low half
                     (RET, 0, 0, ERRNO | err)]
        else:
            prog += [(LD, 0, 0, 0), (JEQ, 0, 1, nr[n]), (RET, 0, 0, ERRNO | 38)]  # ENOSYS
    prog += [(RET, 0, 0, ALLOW)]
    code = b"".join(struct.pack("HBBI", *i) for i in prog)
    buf = ctypes.create_string_buffer(code, len(code))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Prog(len(prog), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)

    def install():
        if libc.prctl(38, 1, 0, 0, 0) != 0 or \
           libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:   # NO_NEW_PRIVS, SET_SECCOMP
            os._exit(121)
    install.keep = (buf, fprog)
    return install


class StdioServer:
    def __init__(self, env=None, args=(), as_uid=None, preexec=None, binary=None):
        binary = binary or (bin_for_uid() if as_uid is not None or WRAP else BIN)
        cmd = [binary, *args]
        if WRAP:
            # The uid is the wrapper's to set: runsc itself runs as root.
            if preexec is not None:
                raise RuntimeError("MCPX_WRAP: a preexec hook cannot reach a wrapped server")
            cmd = WRAP + ["--uid", str(as_uid if as_uid is not None else POD_UID), "--", *cmd]
            preexec = None
        elif as_uid is not None:
            preexec = _become(as_uid)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env or base_env(), preexec_fn=preexec)
        _procs.append(self.proc)
        self.buf = b""
        self.errbuf = b""
        self.eof = set()
        self.next_id = 1
        self.pending = {}
        self.notes = []  # notifications read while waiting for a response

    def send(self, obj):
        data = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
        if isinstance(data, str):
            data = data.encode()
        try:
            self.proc.stdin.write(data + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.proc.wait(timeout=30)
            while self._pump(0):
                pass
            raise _died(self.proc, self.errbuf, "before a message could be sent") from None

    def _pump(self, timeout):
        open_ = [f for f in (self.proc.stdout, self.proc.stderr) if f not in self.eof]
        if not open_:
            time.sleep(min(timeout, 0.05))
            return False
        r, _, _ = select.select(open_, [], [], timeout)
        got = False
        for f in r:
            chunk = os.read(f.fileno(), 65536)
            if not chunk:
                self.eof.add(f)
                continue
            got = True
            if f is self.proc.stdout:
                self.buf += chunk
            else:
                self.errbuf += chunk
        return got

    def recv(self, timeout=30):
        """Next message from stdout, or None on timeout/EOF."""
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            if not self._pump(left) and self.proc.stdout in self.eof:
                if b"\n" not in self.buf:
                    return None
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params=None, timeout=60):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(rid, timeout)

    def wait_for(self, rid, timeout=60):
        if rid in self.pending:
            return self.pending.pop(rid)
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.recv(deadline - time.time())
            if m is None:
                if self.proc.stdout in self.eof and self.proc.poll() is not None:
                    while self._pump(0):
                        pass
                    raise _died(self.proc, self.errbuf, f"while request {rid} waited")
                return None
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m
            if "id" in m and ("result" in m or "error" in m):
                self.pending[m["id"]] = m
            elif "method" in m:
                self.notes.append(m)
        return None

    def initialize(self, version="2025-11-25"):
        r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "e2e", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def wait_fork_server(self, timeout=60):
        """In fork-server mode, waits until the zygote has preloaded, so the calls
        that follow are forked from it (not started cold). True when it is ready."""
        deadline = time.time() + timeout
        while b"fork server ready" not in self.errbuf and time.time() < deadline:
            if not self._pump(0.2) and self.proc.poll() is not None:
                break
        return b"fork server ready" in self.errbuf

    def call(self, code=None, timeout=60, **args):
        a = dict(args)
        if code is not None:
            a["code"] = code
        return self.request("tools/call", {"name": "exec", "arguments": a}, timeout=timeout)

    def close(self, timeout=30):
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        deadline = time.time() + timeout
        while self.proc.poll() is None and time.time() < deadline:
            self._pump(0.1)
        while self._pump(0):
            pass
        return self.proc.poll()

    def server_pid(self):
        """The server's pid as its runs see it. Under MCPX_WRAP the server
        lives in the sandbox's own pid namespace: a run asks for its parent
        (the server, outside fork-server mode, which gVisor never gets)."""
        if not WRAP:
            return self.proc.pid
        if getattr(self, "_inner_pid", None) is None:
            sc = structured(self.call("import os; print(os.getppid())"))
            self._inner_pid = int(sc["stdout"]) if sc and sc["stdout"].strip().isdigit() else -1
        return self._inner_pid

    def stderr_text(self):
        while self._pump(0):
            pass
        return self.errbuf.decode(errors="replace")


def structured(resp):
    """structuredContent of a tools/call response, or None."""
    try:
        return resp["result"]["structuredContent"]
    except (KeyError, TypeError):
        return None


def tool_error_text(resp):
    try:
        r = resp["result"]
        if r.get("isError"):
            return r["content"][0]["text"]
    except (KeyError, TypeError, IndexError):
        pass
    return None


def processes_of_uid(uid):
    """PIDs of live processes owned by uid (zombies excluded)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                st = f.read()
        except OSError:
            continue
        fields = dict(l.split(":", 1) for l in st.splitlines() if ":" in l)
        if fields.get("Uid", "").split()[0:1] == [str(uid)] and "Z" not in fields.get("State", ""):
            out.append(int(d))
    return out


# ---------------------------------------------------------------- HTTP ----
import http.client
import re
import socket as _socket


class HttpServer:
    """The real binary serving HTTP on a loopback port chosen by the kernel."""

    def __init__(self, env_extra=None, args=(), transport="http", expect_start=True, preexec=None):
        env = base_env(MCP_EXEC_TRANSPORT=transport, MCP_EXEC_ADDR="127.0.0.1:0")
        env.update({k: str(v) for k, v in (env_extra or {}).items()})
        self.proc = subprocess.Popen([BIN, *args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                     preexec_fn=preexec)
        _procs.append(self.proc)
        self.err = b""
        self.port = None
        if expect_start:
            deadline = time.time() + 60
            while time.time() < deadline and self.port is None:
                r, _, _ = select.select([self.proc.stderr], [], [], 0.5)
                if r:
                    chunk = os.read(self.proc.stderr.fileno(), 65536)
                    if not chunk:
                        break
                    self.err += chunk
                    m = re.search(rb"listening on http://[^:]+:(\d+)", self.err)
                    if m:
                        self.port = int(m.group(1))
            if self.port is None:
                raise RuntimeError("server did not start: " + self.err.decode(errors="replace"))

    def drain_stderr(self):
        while True:
            r, _, _ = select.select([self.proc.stderr], [], [], 0)
            if not r:
                break
            chunk = os.read(self.proc.stderr.fileno(), 65536)
            if not chunk:
                break
            self.err += chunk
        return self.err.decode(errors="replace")

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = self.conn(timeout)
        h = {"Host": f"127.0.0.1:{self.port}"}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
        except (ConnectionError, http.client.RemoteDisconnected):
            if self.proc.poll() is None:
                raise
            raise _died(self.proc, self.drain_stderr().encode(),
                        f"before {method} {path} was answered") from None
        data = r.read()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def metric(self, name):
        """The value of one unlabelled metric (or a full "name{labels}"), or
        None when it is absent or the server does not answer."""
        try:
            st, _, body = self.request("GET", "/metrics", timeout=30)
        except OSError:
            return None
        for line in body.decode(errors="replace").splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def audit_lines(self, more=True):
        """The audit records logged so far (reading what stderr holds)."""
        if more:
            self.drain_stderr()
        out = []
        for l in self.err.decode(errors="replace").splitlines():
            if '"audit"' in l:
                try:
                    out.append(json.loads(l))
                except ValueError:
                    pass
        return out

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Signals the server and waits for its exit status, reading its
        stderr meanwhile (a sanitizer's report must not fill the pipe), so a
        check on the status can show self.err's tail."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        deadline = time.time() + timeout
        while self.proc.poll() is None and time.time() < deadline:
            self.drain_stderr()
            time.sleep(0.05)
        self.drain_stderr()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            return None
        return self.proc.returncode

    def tail(self, n=4000):
        """The last n characters the server wrote to stderr."""
        return self.drain_stderr()[-n:]


def write_policy(path, policy):
    """Replaces the file (a policy, a tokens file: JSON, or text as it is)
    by rename, as editors and kubelet do."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(policy if isinstance(policy, str) else json.dumps(policy, indent=1))
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


class ScratchDir:
    """A fresh temporary directory for one test's servers (0755: a run's uid
    may pass through it). workdir() makes a workdir base in it (0711: where
    runs live); secrets/ (0755) holds what the server reads and runs must
    not: policies, function sources, credentials written by secret() as
    0644, so only the sandbox (Landlock) keeps runs out, which is what the
    tests check. remove() at the end."""

    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.path, 0o755)
        self.secrets = os.path.join(self.path, "secrets")
        os.mkdir(self.secrets, 0o755)

    def workdir(self, name="work"):
        d = os.path.join(self.path, name)
        os.mkdir(d, 0o711)
        return d

    def secret(self, name, value):
        """Writes value (and a newline) to secrets/name; returns its path."""
        path = os.path.join(self.secrets, name)
        with open(path, "w") as f:
            f.write(value + "\n")
        os.chmod(path, 0o644)
        return path

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


def sha256_hex(s):
    return hashlib.sha256(s.encode()).hexdigest()


class NamedTokens:
    """Callers with tokens of their own (MCP_EXEC_AUTH_TOKENS_FILE at path):
    tokens[caller] is a fresh random token; write(callers) makes the file
    hold just those callers, each as its token's SHA-256, replaced by
    rename as kubelet does."""

    def __init__(self, path, callers):
        self.path = path
        self.tokens = {c: f"tok-{c}-{os.urandom(8).hex()}" for c in callers}

    def write(self, callers):
        write_policy(self.path, [{"caller": c, "token_sha256": sha256_hex(self.tokens[c])}
                                 for c in callers])


def prepared_bash_pids(server_pid):
    """The server's children that are a prepared bash (bash_pool.c): started
    with --noprofile before any call, as every bash run is."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if ppid == server_pid and b"--noprofile" in argv:
            pids.append(int(d))
    return pids


def wait_bash_at_gate(server_pid, timeout=10):
    """Waits until a prepared bash waits at its gate (blocked in open or, once
    the server holds the gate, in read), and a little more for the server to
    see it. False when none got there in time (or /proc does not say)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for pid in prepared_bash_pids(server_pid):
            try:
                with open(f"/proc/{pid}/wchan") as f:
                    # open(2) on the FIFO, or read(2) once the server holds
                    # it (anon_pipe_read on newer kernels).
                    wchan = f.read().strip()
                    if wchan == "wait_for_partner" or wchan.endswith("pipe_read"):
                        time.sleep(0.05)
                        return True
            except OSError:
                pass
        time.sleep(0.01)
    return False


def audits(text, kind):
    """The audit records of one kind ("exec", "egress", ...) among the JSON
    log lines in text."""
    out = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("audit") == kind:
            out.append(rec)
    return out


def wait_until(cond, timeout=60, interval=0.05):
    """Polls cond() until it returns a true value (returned) or timeout
    passes (None). For waiting on an event the test cannot be told about
    directly; the timeout only guards against a hang."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    return None


def raw_exchange(port, payload, timeout=60):
    """Sends payload on a new connection and reads until the server closes
    it. Returns (bytes received, True when the server closed it)."""
    s = _socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may answer and close before reading it all
    data, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except ConnectionResetError:
        closed = True  # closed with our bytes unread: a reset
    except _socket.timeout:
        pass
    s.close()
    return data, closed


def parse_sse(data):
    """List of (event, data) from an SSE body."""
    events = []
    for block in data.decode(errors="replace").split("\n\n"):
        ev, lines = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                ev = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].lstrip(" ") if line.startswith("data: ") else line[5:])
        if lines:
            events.append((ev, "\n".join(lines)))
    return events


class McpHttpClient:
    """A minimal Streamable HTTP client for the tests."""

    def __init__(self, server, token=None, version="2025-11-25"):
        self.s = server
        self.token = token
        self.version = version
        self.sid = None
        self.next_id = 1

    def headers(self, extra=None):
        h = {"Accept": "application/json, text/event-stream",
             "Content-Type": "application/json"}
        if self.token:
            h["X-MCP-AUTH"] = self.token
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
            h["MCP-Protocol-Version"] = self.version
        h.update(extra or {})
        return h

    def post(self, msg, extra=None, timeout=120):
        st, hdrs, body = self.s.request("POST", "/mcp", json.dumps(msg), self.headers(extra), timeout)
        parsed = None
        if hdrs.get("content-type", "").startswith("application/json") and body:
            parsed = json.loads(body)
        elif hdrs.get("content-type", "").startswith("text/event-stream"):
            parsed = [json.loads(d) for e, d in parse_sse(body) if e == "message"]
        return st, hdrs, parsed

    def initialize(self):
        st, hdrs, body = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": self.version, "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"}}})
        self.sid = hdrs.get("mcp-session-id")
        if body and "result" in body:
            self.version = body["result"]["protocolVersion"]
        st2, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return st, hdrs, body, st2

    def call(self, code, extra=None, **args):
        rid = self.next_id
        self.next_id += 1
        a = {"code": code}
        a.update(args)
        return self.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                          "params": {"name": "exec", "arguments": a}}, extra)

    def call_structured(self, code, **args):
        """An exec call's structuredContent ({} when there is none); from an
        SSE stream's messages, the answer's."""
        st, _, body = self.call(code, **args)
        if isinstance(body, list):
            body = next((m for m in body if "result" in m or "error" in m), None)
        return structured(body) or {}
