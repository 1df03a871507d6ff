"""What the chart's scaling and readiness rely on, through the real binary
over HTTP with a queue of one (MCP_EXEC_MAX_QUEUE=1):

  - /metrics reports the busy slot (mcp_exec_running) and the queue length
    (mcp_exec_queue_depth): the gauges the HPA (through prometheus-adapter),
    the KEDA query and the PrometheusRule use;
  - /readyz stays ready while the queue has room, turns not-ready (503,
    "execution queue is full") once a run is going and the queue is full,
    with mcp_exec_ready 0, so the Service stops sending that replica new
    connections;
  - a call beyond the full queue gets the "busy" tool error;
  - when the running call is cancelled, the queued one runs and /readyz is
    ready again.

Every step waits for the state it needs (polling /metrics), never for time.
"""
import re
import threading
import time

from mcpx_harness import Failures, HttpServer, McpHttpClient, structured, tool_error_text

TOKEN = "readyz-queue-token-0123456789abcdef"
t = Failures()
srv = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN, "MCP_EXEC_MAX_QUEUE": 1})


def gauges():
    st, _h, body = srv.request("GET", "/metrics")
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^(mcp_exec_[a-z_]+) ([0-9]+)$", body.decode(), re.M)}


def wait_for(what, pred, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        g = gauges()
        if pred(g):
            return g
        time.sleep(0.05)
    t.check(False, f"waited for {what}", gauges())
    return None


def background(client, rid, code, out):
    def go():
        out[rid] = client.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                "params": {"name": "exec", "arguments": {"code": code, "timeout_s": 300}}},
                               timeout=400)
    th = threading.Thread(target=go)
    th.start()
    return th


cx = McpHttpClient(srv, TOKEN)
cx.initialize()
g = gauges()
t.check(g.get("mcp_exec_running") == 0 and g.get("mcp_exec_queue_depth") == 0 and g.get("mcp_exec_ready") == 1,
        "idle: running 0, queue 0, ready 1", g)

res = {}
long_run = background(cx, 101, "import time; time.sleep(600)", res)
g = wait_for("the long run to start", lambda g: g.get("mcp_exec_running") == 1)
st, _h, body = srv.request("GET", "/readyz")
t.check(st == 200, "one run going, queue empty: /readyz still 200", (st, body))

queued = background(cx, 102, "print('queued ran')", res)
g = wait_for("the second call to queue", lambda g: g.get("mcp_exec_queue_depth") == 1)
t.check(g and g.get("mcp_exec_running") == 1 and g.get("mcp_exec_ready") == 0,
        "queue full: mcp_exec_running 1, mcp_exec_queue_depth 1, mcp_exec_ready 0", g)
st, _h, body = srv.request("GET", "/readyz")
t.check(st == 503 and b"queue is full" in body, "queue full: /readyz 503 saying why", (st, body))
st, _h, body = srv.request("GET", "/healthz")
t.check(st == 200, "queue full: /healthz still 200 (alive, only not ready)", (st, body))

st, _h, body = cx.call("print('one too many')")
err = tool_error_text(body) or ""
t.check(st == 200 and "busy" in err, "a call beyond the full queue gets the busy tool error", (st, body))

st, _h, _b = cx.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 101}})
t.check(st == 202, "cancel the long run", st)
long_run.join(120)
queued.join(120)
out = structured((res.get(102) or (0, 0, None))[2]) or {}
t.check(out.get("stdout") == "queued ran\n", "the queued call ran once the slot was free", res.get(102))
g = wait_for("the replica to drain its queue", lambda g: g.get("mcp_exec_running") == 0 and
             g.get("mcp_exec_queue_depth") == 0)
st, _h, body = srv.request("GET", "/readyz")
t.check(st == 200 and g and g.get("mcp_exec_ready") == 1, "queue empty again: /readyz 200, mcp_exec_ready 1",
        (st, body, g))
busy = re.search(rb'mcp_exec_executions_total\{outcome="busy",limit="none"\} ([0-9]+)',
                 srv.request("GET", "/metrics")[2])
t.check(busy and int(busy.group(1)) == 1, "the refusal is counted as outcome busy (the alert's signal)",
        busy and busy.group(0))
srv.stop()
t.done()
