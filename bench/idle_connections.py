#!/usr/bin/env python3
"""How long /healthz, /readyz and an authenticated tools/call take while many
idle or slowloris connections are open (issue 10, point 2).

Starts the server (the binary given by MCPX_BIN, default build/mcp-exec) on
127.0.0.1 with a token, then for each count of attacking connections opens
them, waits until the server has seen them, and times REPS requests of each
kind on fresh connections. Prints one line per (mode, count, request) with
p50 / p95 / max in milliseconds, the connections the server held open at
the end (its mcp_exec_http_connections gauge, "-" for a server without it)
and the server's resident memory then (VmRSS, KiB).

  - idle: the connection is made and nothing is sent;
  - slowloris: a partial request head, then one more header byte every
    second, so the head never completes.

The attacker keeps its connections open for the whole measurement: every
one the server closes (head deadline, eviction) is opened again, as a real
attacker would. With HEADER_TIMEOUT unset the server's head deadline is
raised (MCP_EXEC_HEADER_TIMEOUT_S=3600), so a server that can hold them all
(MAX_CONNECTIONS above the count) is measured holding them all. A request that gets no answer
within TIMEOUT seconds (default 60) counts as TIMEOUT ms and is reported.

  /usr/bin/python3 bench/idle_connections.py                 # counts 0 257 1000
  COUNTS="0 257 1000" REPS=20 MAX_CONNECTIONS=2048 /usr/bin/python3 bench/idle_connections.py
  MCPX_BIN=/tmp/old/mcp-exec /usr/bin/python3 bench/idle_connections.py   # another build

Only the standard library; needs RLIMIT_NOFILE for the connections (raised
here up to the hard limit).
"""
import json
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time

BIN = os.environ.get("MCPX_BIN", os.path.join(os.path.dirname(__file__), "..", "build", "mcp-exec"))
COUNTS = [int(x) for x in os.environ.get("COUNTS", "0 257 1000").split()]
MODES = os.environ.get("MODES", "idle slowloris").split()
REPS = int(os.environ.get("REPS", "20"))
TIMEOUT = float(os.environ.get("TIMEOUT", "60"))
TOKEN = "bench-token-0123456789abcdef"


def start_server():
    env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_TRANSPORT": "http", "MCP_EXEC_ADDR": "127.0.0.1:0",
           "MCP_EXEC_AUTH_TOKEN": TOKEN, "MCP_EXEC_PYTHON": "/usr/bin/python3",
           "MCP_EXEC_LOG_FORMAT": "text", "MCP_EXEC_LOG_LEVEL": "info",
           "MCP_EXEC_HEADER_TIMEOUT_S": os.environ.get("HEADER_TIMEOUT", "3600")}
    if os.environ.get("MAX_CONNECTIONS"):
        env["MCP_EXEC_MAX_CONNECTIONS"] = os.environ["MAX_CONNECTIONS"]
    p = subprocess.Popen([BIN], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = b""
    while True:
        r, _, _ = select.select([p.stderr], [], [], 60)
        chunk = os.read(p.stderr.fileno(), 65536) if r else b""
        if not chunk:
            sys.exit("server did not start: " + err.decode(errors="replace"))
        err += chunk
        m = re.search(rb"listening on http://[^:]+:(\d+)", err)
        if m:
            break
    # Keep draining its log so it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in iter(lambda: p.stderr.read(65536), b"")],
                     daemon=True).start()
    return p, int(m.group(1))


def exchange(port, raw, timeout=TIMEOUT):
    """Sends raw on a new connection; returns (ms, status) once the whole
    response is in (by Content-Length or close), or (timeout ms, None)."""
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(raw)
        data = b""
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise socket.timeout()
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if sep and m and len(body) >= int(m.group(1)):
                break
        s.close()
        st = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
        return (time.monotonic() - t0) * 1000, st
    except OSError:
        return timeout * 1000, None


def post(body, sid=None):
    h = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-MCP-AUTH: {TOKEN}\r\n"
         "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
    if sid:
        h += f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    return (h + f"Content-Length: {len(body)}\r\n\r\n").encode() + body.encode()


def session(port):
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}})
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(post(body))
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    s.close()
    return re.search(rb"(?i)mcp-session-id:\s*(\S+)", data).group(1).decode()


def open_gauge(port):
    """The server's count of open connections ("-" when it has no gauge)."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if sep and m and len(body) >= int(m.group(1)):
                break
        s.close()
        m = re.search(rb"\nmcp_exec_http_connections (\d+)", data)
        return int(m.group(1)) if m else "-"
    except OSError:
        return "?"


class Attacker:
    """Keeps n connections open the way an attacker would: each one the
    server closes is opened again. Slowloris ones send a partial head and
    then one more byte a second."""

    def __init__(self, port, mode, n):
        self.port, self.mode = port, mode
        self.socks = [self.connect() for _ in range(n)]
        self.reopened = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def connect(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        except OSError:
            return None
        s.setblocking(False)
        if self.mode == "slowloris":
            try:
                s.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            except OSError:
                pass
        return s

    def closed(self, s):
        try:
            return s.recv(4096) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def run(self):
        while not self.stop.wait(1.0):
            for i, s in enumerate(self.socks):
                if s is None or self.closed(s):
                    if s is not None:
                        s.close()
                    self.socks[i] = self.connect()
                    self.reopened += 1
                elif self.mode == "slowloris":
                    try:
                        s.send(b"a")
                    except OSError:
                        pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            if s is not None:
                s.close()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(COUNTS) + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    p, port = start_server()
    try:
        sid = session(port)
        call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "exec", "arguments": {"code": "print(1)"}}})
        reqs = [("healthz", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
                ("readyz", b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
                ("tools/call", post(call, sid))]
        print(f"server {BIN} pid {p.pid}; bench RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}; "
              f"server RLIMIT_NOFILE {open(f'/proc/{p.pid}/limits').read().split('Max open files')[1].split()[0]}")
        print(f"{'mode':10} {'conns':>6} {'held':>6} {'rss KiB':>8} {'request':11} {'p50 ms':>8} "
              f"{'p95 ms':>8} {'max ms':>8} {'failed':>6}")
        for mode in MODES:
            for n in COUNTS:
                att = Attacker(port, mode, n)
                time.sleep(1.0)  # let the server accept the backlog
                lines = []
                for name, raw in reqs:
                    res = []
                    for _ in range(REPS):
                        res.append(exchange(port, raw))
                        time.sleep(0.1)  # sample over time, not one burst
                    ms = [r[0] for r in res]
                    failed = sum(1 for r in res if r[1] != 200)
                    lines.append((name, ms, failed))
                held = open_gauge(port)
                rss = rss_kb(p.pid)
                for name, ms, failed in lines:
                    print(f"{mode:10} {n:>6} {held!s:>6} {rss:>8} {name:11} {pct(ms, .5):8.1f} "
                          f"{pct(ms, .95):8.1f} {max(ms):8.1f} {failed:>6}", flush=True)
                att.close()
                print(f"{mode:10} {n:>6} (the attacker re-opened {att.reopened} closed connections)")
                time.sleep(1.0)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


if __name__ == "__main__":
    main()
