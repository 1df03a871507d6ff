"""End-to-end: what SIGINT and SIGTERM do to a server with an execution
running, over Streamable HTTP and stdio, and the exit codes
docs/configuration.md promises.

- One SIGINT (or SIGTERM): drain. The running execution finishes and is
  answered, then the server exits 0.
- Calls accepted before the signal but still queued behind the running one
  run too, after it, while their timeout ends within the drain budget
  (MCP_EXEC_MAX_TIMEOUT_S + 10 s from the signal); only one whose timeout
  would outlast it is answered "shutting down" instead (issue 34).
- A second signal during the drain: stop now. The run's processes are
  killed, the server tears down cleanly (no crash) and exits 128 + the
  signal's number: 130 for SIGINT, 143 for SIGTERM.

No sleeps order the steps: the program reports its workdir and pids through
a progress notification, the test waits for the server's "draining" log
line, and the program finishes only when the test creates a file named `go`
in its workdir."""
import http.client
import json
import os
import select
import signal
import time

from mcpx_harness import Failures, HttpServer, McpHttpClient, StdioServer, parse_sse, structured

t = Failures()

# Prints where it runs and which processes it consists of (itself and a
# child it started), then waits for the test's go-ahead.
PROGRAM = r"""
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
sys.stdout.write(f"ready {os.getcwd()} {os.getpid()} {child.pid}\n")
sys.stdout.flush()
while not os.path.exists("go"):
    time.sleep(0.02)
child.kill()
print("done")
"""


def identity(pid):
    """(pid, start time) of a live, non-zombie process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else (pid, fields[19])


def parse_ready(text):
    """(workdir, [(pid, start)]) from the program's first line, or None."""
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "ready":
            ids = [identity(int(p)) for p in parts[2:]]
            return parts[1], [i for i in ids if i]
    return None


def wait_stderr(proc, buf, needle, timeout=60):
    """Reads proc's stderr into buf (a bytearray) until needle appears."""
    deadline = time.time() + timeout
    while needle not in buf and time.time() < deadline:
        r, _, _ = select.select([proc.stderr], [], [], 0.5)
        if r:
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                break
            buf.extend(chunk)
    return needle in buf


def left_over(ids):
    """The processes among ids that still run (same pid and start time)."""
    return [i for i in ids if identity(i[0]) == i]


class SseCall:
    """A tools/call over Streamable HTTP whose SSE reply is read as it comes."""

    def __init__(self, client, rid):
        srv = client.s
        self.conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
            "name": "exec", "_meta": {"progressToken": "t"}, "arguments": {"code": PROGRAM}}})
        h = client.headers({"Host": f"127.0.0.1:{srv.port}"})
        self.conn.request("POST", "/mcp", body, h)
        self.resp = self.conn.getresponse()

    def next_message(self):
        """The next SSE message event as JSON, or None at the end."""
        block = b""
        while True:
            line = self.resp.readline()
            if not line:
                return None
            if line in (b"\n", b"\r\n"):
                ev = parse_sse(block)
                if ev and ev[0][0] == "message":
                    return json.loads(ev[0][1])
                block = b""
                continue
            block += line

    def wait_ready(self):
        while True:
            m = self.next_message()
            if m is None or "id" in m:
                return None
            r = parse_ready(m.get("params", {}).get("message"))
            if r:
                return r


def http_run(first, second=None):
    """Starts a run over HTTP, signals the server, returns what happened."""
    srv = HttpServer()
    c = McpHttpClient(srv)
    c.initialize()
    call = SseCall(c, 1)
    ready = call.wait_ready()
    err = bytearray(srv.err)
    srv.proc.send_signal(first)
    draining = wait_stderr(srv.proc, err, b"draining")
    final = None
    if second is None:
        if ready:
            open(os.path.join(ready[0], "go"), "w").close()
        while True:
            m = call.next_message()
            if m is None or "id" in m:
                final = m
                break
    else:
        srv.proc.send_signal(second)
    rc = srv.proc.wait(timeout=120)
    wait_stderr(srv.proc, err, b"\0", timeout=1)  # collect what is left
    return ready, draining, final, rc, err.decode(errors="replace")


# ---- one SIGINT: drain, the run finishes, exit 0 ----
ready, draining, final, rc, err = http_run(signal.SIGINT)
t.check(ready is not None and len(ready[1]) == 2, "http: the run reported its workdir and processes", ready)
t.check(draining, "http: SIGINT starts the drain", err[-500:])
sc = structured(final)
t.check(sc and sc["stdout"].endswith("done\n") and sc["exit_code"] == 0,
        "http: after one SIGINT the running execution finishes and is answered", final)
t.check(rc == 0, "http: one SIGINT exits 0 once drained", (rc, err[-500:]))

# ---- queued calls accepted before SIGTERM run while they fit ----
# MCP_EXEC_MAX_TIMEOUT_S=20: the drain budget is 30 s. Behind the running
# call, one with timeout_s 5 and one with timeout_s 20 wait. The running
# one is released 12 s after SIGTERM: the first then still fits (18 s left,
# 5 needed) and runs; the second (20 needed) does not, and is answered.
import threading

srv = HttpServer({"MCP_EXEC_MAX_TIMEOUT_S": 20, "MCP_EXEC_DEFAULT_TIMEOUT_S": 20, "MCP_EXEC_MAX_QUEUE": 4})
c = McpHttpClient(srv)
c.initialize()
call = SseCall(c, 1)
ready = call.wait_ready()
answers = {}


def queued(rid, timeout_s):
    q = McpHttpClient(srv)
    q.sid = c.sid
    answers[rid] = q.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "exec", "arguments": {"code": f"print('queued {rid} ran')",
                                      "timeout_s": timeout_s}}}, timeout=120)


threads = [threading.Thread(target=queued, args=(rid, to)) for rid, to in ((2, 5), (3, 20))]
for th in threads:
    th.start()
    time.sleep(0.3)
waiting = False
deadline = time.time() + 30
while time.time() < deadline and not waiting:
    waiting = srv.metric("mcp_exec_queue_depth") == 2
    time.sleep(0.05)
t.check(ready is not None and waiting, "http: one call runs and two wait in the queue",
        (ready, srv.metric("mcp_exec_queue_depth")))
err = bytearray(srv.err)
srv.proc.send_signal(signal.SIGTERM)
t.check(wait_stderr(srv.proc, err, b"draining"), "http: SIGTERM starts the drain")
time.sleep(12)
if ready:
    open(os.path.join(ready[0], "go"), "w").close()
final = None
while True:
    m = call.next_message()
    if m is None or "id" in m:
        final = m
        break
for th in threads:
    th.join(120)
rc = srv.proc.wait(timeout=120)
wait_stderr(srv.proc, err, b"\0", timeout=1)
sc = structured(final)
t.check(sc and sc["stdout"].endswith("done\n"), "http: the running call finishes", final)


def answer_text(rid):
    st, _, msgs = answers.get(rid, (None, None, None))
    msgs = [msgs] if isinstance(msgs, dict) else msgs or []
    res = next((m for m in msgs if m.get("id") == rid), {}).get("result", {})
    return st, (res.get("structuredContent") or {}).get("stdout"), \
        " ".join(b.get("text", "") for b in res.get("content", []))


st, out, text = answer_text(2)
t.check(st == 200 and out == "queued 2 ran\n",
        "http: a call queued before SIGTERM whose timeout fits the drain runs after it "
        "(was: answered 'did not run this execution')", (st, out, text[:200]))
st, out, text = answer_text(3)
t.check(st == 200 and out is None and "shutting down" in text and "20 s" in text,
        "http: one whose timeout would outlast the drain is answered, saying why",
        (st, out, text[:300]))
t.check(rc == 0, "http: the drain ends with exit 0", (rc, err.decode(errors="replace")[-500:]))

# ---- two SIGINTs: stop now, exit 130, nothing of the run left ----
ready, draining, final, rc, err = http_run(signal.SIGINT, signal.SIGINT)
t.check(ready is not None and len(ready[1]) == 2, "http: the run reported its processes", ready)
t.check(rc == 130, "http: a second SIGINT stops at once with exit 130 (was SIGSEGV)", (rc, err[-800:]))
t.check("stopping now" in err, "http: the second signal is logged", err[-500:])
t.check(ready is not None and not left_over(ready[1]), "http: no process of the run is left",
        ready and left_over(ready[1]))

# ---- two SIGTERMs: the same, exit 143 ----
ready, draining, final, rc, err = http_run(signal.SIGTERM, signal.SIGTERM)
t.check(rc == 143, "http: a second SIGTERM stops at once with exit 143", (rc, err[-800:]))
t.check(ready is not None and not left_over(ready[1]), "http: no process of the run is left (SIGTERM)",
        ready and left_over(ready[1]))

# ---- stdio: one SIGINT drains (exit 0), two stop at once (exit 130) ----
for signals, want in (((signal.SIGINT,), 0), ((signal.SIGINT, signal.SIGINT), 130)):
    s = StdioServer()
    s.initialize()
    s.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "exec", "_meta": {"progressToken": 1}, "arguments": {"code": PROGRAM}}})
    ready = None
    while ready is None:
        m = s.recv(60)
        if m is None or "id" in m:
            break
        ready = parse_ready(m.get("params", {}).get("message"))
    for sig in signals:
        s.proc.send_signal(sig)
        err = bytearray(s.errbuf)
        wait_stderr(s.proc, err, b"draining")
        s.errbuf = bytes(err)
    if len(signals) == 1 and ready:
        open(os.path.join(ready[0], "go"), "w").close()
        final = s.wait_for(5, 60)
        sc = structured(final)
        t.check(sc and sc["stdout"].endswith("done\n"), "stdio: after one SIGINT the run is answered", final)
    rc = s.proc.wait(timeout=120)
    t.check(rc == want, f"stdio: {len(signals)} SIGINT(s) -> exit {want}", (rc, s.stderr_text()[-500:]))
    t.check(ready is not None and not left_over(ready[1]), f"stdio: no process of the run is left ({len(signals)})",
            ready and left_over(ready[1]))
t.done()
