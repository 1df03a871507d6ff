"""End-to-end over HTTP: the network front door (issue 10). Pipelined
requests get one answer and a closed connection, and the server stays
responsive and drains on SIGTERM; idle, slow and half-sent connections are
closed at their deadlines; the connection cap drops the oldest
unauthenticated idle connection first; a closed legacy SSE stream cancels
its run at once; auth edges (NUL in the header, blank token, listener names,
a rotated token file); protocol header errors of both eras.

Every wait here is on an event (a close, an answer, an audit line, a metric)
with a generous guard against hangs; nothing asserts a duration."""
import base64
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading

from mcpx_harness import (BIN, Failures, HttpServer, McpHttpClient, base_env, parse_sse,
                          raw_exchange, structured, wait_until)

t = Failures()
TOKEN = "front-door-token-0123456789"


def head(method, path, extra="", body=b""):
    h = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}"
    if body or method == "POST":
        h += f"Content-Length: {len(body)}\r\n"
    return (h + "\r\n").encode() + body


def responses(data):
    return data.count(b"HTTP/1.1 ")


def mcp_post(sid, msg, extra=""):
    body = json.dumps(msg).encode()
    return head("POST", "/mcp", f"X-MCP-AUTH: {TOKEN}\r\nMcp-Session-Id: {sid}\r\n"
                "MCP-Protocol-Version: 2025-11-25\r\nContent-Type: application/json\r\n"
                "Accept: application/json\r\n" + extra, body)


def healthy(srv):
    try:
        st, _, _ = srv.request("GET", "/healthz", timeout=30)
        return st == 200
    except OSError:
        return False


def recv_or_none(sock, n=100):
    """What the server sends next (b"" once it closed), or None if it sends
    nothing before the guard expires."""
    try:
        return sock.recv(n)
    except socket.timeout:
        return None
    except ConnectionResetError:
        return b""


def running(srv, n=1):
    return wait_until(lambda: srv.metric("mcp_exec_running") == n, timeout=60)


# ---- pipelining ----
srv = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN})
c = McpHttpClient(srv, TOKEN)
c.initialize()

# The reproduction from the issue: GET / then a POST with a body and no
# auth, in one write. lws 4.1.6 spun at 100 % here and never answered again.
body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
data, closed = raw_exchange(srv.port, head("GET", "/") + head("POST", "/mcp",
                            "Content-Type: application/json\r\n", body))
t.check(responses(data) == 1 and data.startswith(b"HTTP/1.1 404") and closed,
        "GET + POST pipelined: one answer, then the connection closes", data[:200])
t.check(b"connection: close" in data.lower(), "the answer says Connection: close", data[:200])
t.check(healthy(srv), "other connections are still served after the pipelined pair")

data, closed = raw_exchange(srv.port, head("GET", "/healthz") * 5)
t.check(responses(data) == 1 and data.startswith(b"HTTP/1.1 200") and closed,
        "five pipelined GETs: the first answered, the rest dropped", data[:300])

call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "exec", "arguments": {"code": "print('ran')"}}}
data, closed = raw_exchange(srv.port, mcp_post(c.sid, call) + head("GET", "/healthz"))
t.check(data.startswith(b"HTTP/1.1 400") and b"pipelined" in data and closed,
        "a call with a request behind it is refused (400) and nothing runs", data[:200])
data, closed = raw_exchange(srv.port, head("GET", "/sse", f"X-MCP-AUTH: {TOKEN}\r\n") + b"x")
t.check(data.startswith(b"HTTP/1.1 400") and closed,
        "an SSE stream with bytes behind its request is refused", data[:200])

# Heads the gate refuses before lws reads them.
data, closed = raw_exchange(srv.port, b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
t.check(data.startswith(b"HTTP/1.1 431") and closed, "a request head over 16 KiB -> 431", data[:60])
data, closed = raw_exchange(srv.port, b"GET /healthz HTTP/1.1\nHost: x\n\n")
t.check(data.startswith(b"HTTP/1.1 400") and closed, "bare LF line endings -> 400", data[:60])

# Bytes sent while a call runs are dropped; the call is still answered.
s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
slow = dict(call, params={"name": "exec", "arguments": {
    "code": "import time\ntime.sleep(1)\nprint('answered')"}})
s.sendall(mcp_post(c.sid, slow))
t.check(running(srv), "the call runs")
s.sendall(head("GET", "/healthz"))
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
s.close()
t.check(data.startswith(b"HTTP/1.1 200") and b"answered" in data and responses(data) == 1,
        "bytes sent during a call are dropped and the call is answered", data[:200])
t.check((srv.metric('mcp_exec_http_connections_closed_total{reason="pipelined"}') or 0) >= 2,
        "pipelining is counted in the metrics")
t.check(srv.stop() == 0, "SIGTERM still drains after all that (exit 0)")

# ---- deadlines ----
# The deadlines are 1 s here. A 5 s run on another connection is the
# yardstick: every stalled connection must be closed before that run's answer
# arrives (lws alone would hold them for its own 10 s).
d = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN, "MCP_EXEC_HEADER_TIMEOUT_S": "1",
                "MCP_EXEC_BODY_TIMEOUT_S": "1"})
cd = McpHttpClient(d, TOKEN)
cd.initialize()
yard = {}
yt = threading.Thread(target=lambda: yard.update(r=cd.call("import time; time.sleep(5); print('yard')")))
yt.start()
t.check(running(d), "the 5 s yardstick run is running")
stalled = [b"", b"GET /healthz HTTP/1.1\r\nHost: 127",
           (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-MCP-AUTH: {TOKEN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"").encode()]
socks = []
for payload in stalled:
    x = socket.create_connection(("127.0.0.1", d.port), timeout=60)
    x.sendall(payload)
    socks.append(x)
got = [recv_or_none(x) for x in socks]
t.check(got == [b"", b"", b""], "idle, half-sent head and half-sent body are all closed, unanswered", got)
t.check(yt.is_alive() and "r" not in yard, "... before the 5 s run was answered (the deadlines are 1 s)")
yt.join(60)
t.check(structured((yard.get("r") or (0, 0, None))[2]) is not None, "the yardstick run is answered")
t.check(d.metric('mcp_exec_http_connections_closed_total{reason="header_timeout"}') == 2 and
        d.metric('mcp_exec_http_connections_closed_total{reason="body_timeout"}') == 1,
        "the closes are counted by reason")
for x in socks:
    x.close()
d.stop()

# ---- the connection cap ----
# No deadline interferes here: every close is the cap's doing.
cap = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN, "MCP_EXEC_MAX_CONNECTIONS": "4",
                  "MCP_EXEC_HEADER_TIMEOUT_S": "3600"})
stream = socket.create_connection(("127.0.0.1", cap.port), timeout=60)
stream.sendall(head("GET", "/sse", f"X-MCP-AUTH: {TOKEN}\r\n"))
buf = b""
while b"event: endpoint" not in buf or not buf.endswith(b"\n\n"):
    buf += stream.recv(65536)
endpoint = [v for e, v in parse_sse(buf.split(b"\r\n\r\n", 1)[1]) if e == "endpoint"][0]
# Oldest first: a partial head, then two that send nothing.
partial = socket.create_connection(("127.0.0.1", cap.port), timeout=60)
partial.sendall(b"GET /healthz HTTP/1.1\r\n")
idle1 = socket.create_connection(("127.0.0.1", cap.port), timeout=60)
idle2 = socket.create_connection(("127.0.0.1", cap.port), timeout=60)
# Four are open now (the server accepts in arrival order); a fifth must
# make room.
data, closed = raw_exchange(cap.port, head("GET", "/healthz"))
t.check(data.startswith(b"HTTP/1.1 200"), "at the cap, a new request is still answered", data[:60])
t.check(recv_or_none(idle1) == b"", "the oldest connection that sent nothing was dropped")
partial.sendall(b"Host: 127.0.0.1\r\n\r\n")
got = recv_or_none(partial)
t.check(got and got.startswith(b"HTTP/1.1 200"),
        "an older connection that had sent part of its head survived", got)
idle2.sendall(head("GET", "/healthz"))
got = recv_or_none(idle2)
t.check(got and got.startswith(b"HTTP/1.1 200"), "the newer idle connection survived", got)
st, _, _ = cap.request("POST", endpoint, json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
                       {"X-MCP-AUTH": TOKEN, "Content-Type": "application/json"})
ev = b""
while b"\"id\":3" not in ev:
    ev += stream.recv(65536)
t.check(st == 202 and b"\"result\"" in ev,
        "the authenticated stream, the oldest connection, was not dropped", (st, ev[-100:]))
t.check((cap.metric('mcp_exec_http_connections_closed_total{reason="evicted"}') or 0) >= 1,
        "evictions are counted")
for x in (stream, partial, idle2):
    x.close()
# A peer that sends part of a head and hangs up: its slot is freed at once
# (a peek keeps returning the queued bytes, so the end of file behind them
# must be looked for), not when the (here hour-long) head deadline ends.
PEER_CLOSED = 'mcp_exec_http_connections_closed_total{reason="peer_closed"}'
t.check(wait_until(lambda: cap.metric("mcp_exec_http_connections") == 1),
        "the others are closed (only the metrics request is open)")
before = cap.metric(PEER_CLOSED) or 0
quitter = socket.create_connection(("127.0.0.1", cap.port), timeout=60)
quitter.sendall(b"GET /healthz HTTP/1.1\r\nX-Half: ")
quitter.close()
t.check(wait_until(lambda: (cap.metric(PEER_CLOSED) or 0) == before + 1),
        "a half-sent head whose client hung up is closed at once")
cap.stop()

# ---- a closed legacy SSE stream cancels its run at once ----
srv = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN})
stream = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
stream.sendall(head("GET", "/sse", f"X-MCP-AUTH: {TOKEN}\r\n"))
buf = b""
while b"event: endpoint" not in buf or not buf.endswith(b"\n\n"):
    buf += stream.recv(65536)
endpoint = [v for e, v in parse_sse(buf.split(b"\r\n\r\n", 1)[1]) if e == "endpoint"][0]
hdr = {"X-MCP-AUTH": TOKEN, "Content-Type": "application/json"}
srv.request("POST", endpoint, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "l", "version": "1"}}}), hdr)
# The run's own limit (5 s) is shorter than the stream's keep-alive (15 s):
# a server that notices the close only when the keep-alive fails would
# report a timeout, not a cancellation.
srv.request("POST", endpoint, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "exec", "arguments": {"code": "import time; time.sleep(60)", "timeout_s": 5}}}), hdr)
t.check(running(srv), "the stream's run is running")
stream.close()
rec = wait_until(lambda: [a for a in srv.audit_lines() if a.get("request_id") == "2"], timeout=60)
t.check(rec and rec[0].get("status") == "cancelled",
        "closing the /sse stream cancels its run (not left to time out)", rec)
srv.stop()

# ---- auth edges ----
p = subprocess.run([BIN], env=base_env(MCP_EXEC_TRANSPORT="http", MCP_EXEC_ADDR="0.0.0.0:0",
                                       MCP_EXEC_AUTH_TOKEN=" \t "),
                   capture_output=True, timeout=60)
t.check(p.returncode == 78 and b"empty or only whitespace" in p.stderr,
        "a token of only whitespace stops the start", p.stderr[-300:])
p = subprocess.run([BIN], env=base_env(MCP_EXEC_TRANSPORT="http",
                                       MCP_EXEC_ADDR="no-such-host.invalid:0"),
                   capture_output=True, timeout=60)
t.check(p.returncode == 78 and b"cannot resolve" in p.stderr,
        "a listener name that does not resolve stops the start", p.stderr[-300:])
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen(1)
p = subprocess.run([BIN], env=base_env(MCP_EXEC_TRANSPORT="http",
                                       MCP_EXEC_ADDR=f"127.0.0.1:{busy.getsockname()[1]}"),
                   capture_output=True, timeout=60)
t.check(p.returncode == 69 and b"could not listen" in p.stderr,
        "a listener that cannot be bound stops the start", p.stderr[-300:])
busy.close()
# localhost:PORT is resolved and really listened on (lws took it for an
# interface name and listened nowhere).
free = socket.socket()
free.bind(("127.0.0.1", 0))
port = free.getsockname()[1]
free.close()
lh = HttpServer({"MCP_EXEC_ADDR": f"localhost:{port}"})
st, _, _ = lh.request("GET", "/healthz")
t.check(lh.port == port and st == 200, "MCP_EXEC_ADDR=localhost:PORT listens on loopback", st)
lh.stop()

srv = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN})
ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
data, _ = raw_exchange(srv.port, head("POST", "/messages?sessionId=x",
                       "X-MCP-AUTH: " + TOKEN + "\0junk\r\nContent-Type: application/json\r\n", ping))
t.check(data.startswith(b"HTTP/1.1 400"), "a NUL inside X-MCP-AUTH is refused, not cut short", data[:60])
init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "n", "version": "1"}}}).encode()
data, _ = raw_exchange(srv.port, head("POST", "/mcp", "X-MCP-AUTH: " + TOKEN + "\0x\r\n"
                       "Content-Type: application/json\r\nAccept: application/json\r\n", init))
t.check(data.startswith(b"HTTP/1.1 400") and b"mcp-session-id" not in data.lower(),
        "the token followed by a NUL and junk does not open a session", data[:60])
for hdrs, what in (({"Content-Type": "application/json"}, "without a token"),
                   ({"Content-Type": "application/json", "X-MCP-AUTH": "wrong"}, "with a wrong token")):
    st, _, raw = srv.request("POST", "/messages?sessionId=anything", ping, hdrs)
    t.check(st == 401 and raw == b"unauthorized\n", f"POST /messages {what} -> 401", (st, raw))

# A forged session id of the right length and shape: only the MAC can tell.
c = McpHttpClient(srv, TOKEN)
c.initialize()


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


# version, expiry, nonce (12 bytes) and caller tag (12 bytes)
payload = b"2025-11-25" + (2 ** 40).to_bytes(8, "big") + os.urandom(24)
forged = "m2." + b64url(payload) + "." + b64url(os.urandom(32))
t.check(len(forged) == len(c.sid), "the forged id has the real length", (len(forged), len(c.sid)))
st, _, body = c.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"Mcp-Session-Id": forged})
t.check(st == 404, "a forged id of the right shape -> 404 (the MAC refuses it)", (st, body))

# ---- protocol header (RFC 9110 whitespace, both eras' errors) ----
st, _, body = c.post({"jsonrpc": "2.0", "id": 3, "method": "ping"},
                     {"MCP-Protocol-Version": " 2025-11-25 \t", "Mcp-Session-Id": "  " + c.sid + " "})
t.check(st == 200 and body.get("result") == {}, "header values are compared after trimming", (st, body))
st, _, body = c.post({"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"MCP-Protocol-Version": "1999-01-01"})
t.check(st == 400 and body["error"]["code"] == -32600 and body.get("id") == 4,
        "unknown version in a session: 400, -32600, the request's id", body)
meta = {"io.modelcontextprotocol/protocolVersion": "1999-01-01", "io.modelcontextprotocol/clientCapabilities": {}}
st, _, raw = srv.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 5, "method": "server/discover",
                         "params": {"_meta": meta}}),
                         {"X-MCP-AUTH": TOKEN, "Content-Type": "application/json",
                          "Accept": "application/json", "MCP-Protocol-Version": "1999-01-01"})
err = json.loads(raw).get("error", {}) if raw else {}
t.check(st == 400 and err.get("code") == -32022 and err.get("data", {}).get("requested") == "1999-01-01"
        and "2026-07-28" in err.get("data", {}).get("supported", [])
        and json.loads(raw).get("id") == 5,
        "unknown version without a session: 400, UnsupportedProtocolVersionError with the "
        "request's id", (st, raw[:300]))
# A body that is not one request with an id: the error says null.
st, _, raw = srv.request("POST", "/mcp", "[1, 2", {"X-MCP-AUTH": TOKEN, "Content-Type": "application/json",
                         "Accept": "application/json", "MCP-Protocol-Version": "1999-01-01"})
t.check(st == 400 and raw and json.loads(raw).get("id", "missing") is None,
        "unknown version, unparsable body: the error's id is null", (st, raw[:300]))
srv.stop()

# ---- the session key follows a rotated token file, on every replica ----
tmp = tempfile.mkdtemp(prefix="mcpx-e2e-token-")
tok_file = os.path.join(tmp, "token")


def rotate(value):
    with open(tok_file + ".new", "w") as f:
        f.write(value + "\n")
    os.rename(tok_file + ".new", tok_file)


rotate("token-one-0123456789")
a = HttpServer({"MCP_EXEC_AUTH_TOKEN_FILE": tok_file})
b = HttpServer({"MCP_EXEC_AUTH_TOKEN_FILE": tok_file})
ca = McpHttpClient(a, "token-one-0123456789")
ca.initialize()
cb = McpHttpClient(b, "token-one-0123456789")
cb.sid, cb.version = ca.sid, ca.version
st, _, _ = cb.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
t.check(st == 200, "replicas reading one token file accept each other's sessions", st)
rotate("token-two-0123456789")
ca.token = cb.token = "token-two-0123456789"


def status_not_401(cl):
    st, _, _ = cl.post({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    return st if st != 401 else None  # 401 until the replica has re-read the file


st = wait_until(lambda: status_not_401(ca), timeout=60, interval=0.2)
t.check(st == 404, "after the rotation a session sealed under the old token is gone", st)
ca.sid = None
ca.initialize()
cb.sid = ca.sid
st = wait_until(lambda: status_not_401(cb), timeout=60, interval=0.2)
t.check(st == 200, "a replica that re-read the new token accepts the new session", st)
a.stop()
b.stop()
os.unlink(tok_file)
os.rmdir(tmp)
# ---- a hard RLIMIT_NOFILE below what the cap needs -------------------------
# Container runtimes may set nofile=1024: the cap (2 descriptors each plus a
# reserve of 256) is lowered to what fits, with a warning, and the server
# serves; where not even 32 connections fit, it refuses to start.
import resource


def nofile(n):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


low = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN}, preexec=nofile(384))
st, _, _ = low.request("GET", "/healthz")
t.check(st == 200 and "at most 64 connections are held open" in low.drain_stderr(),
        "a low hard RLIMIT_NOFILE lowers the connection cap (warned) and the server serves",
        (st, low.drain_stderr()[-400:]))
low.stop()
tiny = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN}, preexec=nofile(300), expect_start=False)
rc = tiny.proc.wait(timeout=60)
err = tiny.drain_stderr()
t.check(rc != 0 and "room for fewer than 32 connections" in err,
        "a hard RLIMIT_NOFILE too low for 32 connections stops the start", (rc, err[-400:]))

t.done()
