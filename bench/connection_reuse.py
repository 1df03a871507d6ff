#!/usr/bin/env python3
"""What one request per connection costs: /healthz round trips over one
client connection that is reused when the server allows it, and over a new
connection each time. Prints p50 / p90 in microseconds for both, ROUNDS
times.

A server that keeps connections alive shows the difference between the two
lines; one that closes every connection after its response (this server
since issue 10) makes both lines the same, the cost of a TCP handshake on
top of the request.

  /usr/bin/python3 bench/connection_reuse.py                              # build/mcp-exec
  MCPX_BIN=/tmp/old/mcp-exec N=2000 ROUNDS=3 /usr/bin/python3 bench/connection_reuse.py

Only the standard library; all traffic on 127.0.0.1.
"""
import http.client
import os
import re
import select
import signal
import subprocess
import sys
import time

BIN = os.environ.get("MCPX_BIN", os.path.join(os.path.dirname(__file__), "..", "build", "mcp-exec"))
N = int(os.environ.get("N", "2000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def start_server():
    env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_TRANSPORT": "http", "MCP_EXEC_ADDR": "127.0.0.1:0",
           "MCP_EXEC_PYTHON": "/usr/bin/python3", "MCP_EXEC_LOG_FORMAT": "text"}
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
            return p, int(m.group(1))


def measure(port, reuse):
    lat = []
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(N):
        t0 = time.perf_counter()
        if not reuse:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/healthz")
        c.getresponse().read()
        if not reuse:
            c.close()
        lat.append((time.perf_counter() - t0) * 1e6)
    c.close()
    lat.sort()
    return lat[len(lat) // 2], lat[int(len(lat) * 0.9)]


def main():
    p, port = start_server()
    try:
        print(f"server {BIN}; {N} GET /healthz per line")
        for r in range(1, ROUNDS + 1):
            for reuse in (True, False):
                p50, p90 = measure(port, reuse)
                what = "one connection, reused if kept" if reuse else "a new connection each"
                print(f"round {r}  {what:31}  p50 {p50:7.0f} us  p90 {p90:7.0f} us", flush=True)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


if __name__ == "__main__":
    main()
