"""What the MCP tasks tests share: a Redis store (the workspace tests'
redis-server, workspace_fixture.py), and clients for both generations of
tasks over Streamable HTTP: a 2025-11-25 session (tools/call with "task",
tasks/get, tasks/result, tasks/list, tasks/cancel) and 2026-07-28 requests
that declare the io.modelcontextprotocol/tasks extension (tasks/get,
tasks/cancel, tasks/update)."""
import json
import time

import workspace_fixture
from mcpx_harness import McpHttpClient, parse_sse

EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"


class Redis(workspace_fixture.Redis):
    """The workspace tests' redis-server (loopback, a free port, a password),
    with the environment a server needs to use it as its store."""

    def env(self):
        return {"MCP_EXEC_WORKSPACES": self.url(),
                "MCP_EXEC_WORKSPACES_PASSWORD_FILE": self.password_file}


REDIS = workspace_fixture.REDIS


def answer(body):
    """The JSON-RPC answer of a POST's body (an SSE stream's last answer)."""
    if isinstance(body, list):
        return next((m for m in reversed(body) if "result" in m or "error" in m), None)
    return body


class V1:
    """A 2025-11-25 session on one server, as a caller (token)."""

    def __init__(self, server, token=None):
        self.c = McpHttpClient(server, token)
        st, _, body, _ = self.c.initialize()
        self.init = body
        self.next_id = 100

    def rpc(self, method, params=None, timeout=120):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        st, _, body = self.c.post(msg, timeout=timeout)
        return answer(body)

    def call(self, name="exec", task=None, **args):
        params = {"name": name, "arguments": args}
        if task is not None:
            params["task"] = task
        return self.rpc("tools/call", params)

    def start(self, code, ttl=None, name="exec", **args):
        """A task of exec (or name) with these arguments: the CreateTaskResult's task."""
        r = self.call(name, task={} if ttl is None else {"ttl": ttl}, code=code, **args) \
            if name == "exec" else self.call(name, task={} if ttl is None else {"ttl": ttl}, **args)
        return (r or {}).get("result", {}).get("task"), r

    def get(self, tid):
        return self.rpc("tasks/get", {"taskId": tid})

    def wait(self, tid, timeout=120):
        """tasks/get until the task is no longer working: its last Task."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            r = self.get(tid)
            last = (r or {}).get("result")
            if not last or last.get("status") != "working":
                return last, r
            time.sleep(0.2)
        return last, None


class V2:
    """2026-07-28 requests to one server, as a caller (token), declaring the
    tasks extension unless ext is False."""

    def __init__(self, server, token=None, ext=True):
        self.s = server
        self.token = token
        self.ext = ext
        self.next_id = 1000

    def rpc(self, method, params=None, ext=None, headers=None, timeout=120):
        ext = self.ext if ext is None else ext
        caps = {"extensions": {EXT: {}}} if ext else {}
        p = dict(params or {})
        p["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": caps}
        h = {"Accept": "application/json, text/event-stream",
             "Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28",
             "Mcp-Method": method}
        if self.token:
            h["X-MCP-AUTH"] = self.token
        if method == "tools/call":
            h["Mcp-Name"] = p.get("name", "")
        elif method.startswith("tasks/") and isinstance(p.get("taskId"), str):
            h["Mcp-Name"] = p["taskId"]
        h.update(headers or {})
        self.next_id += 1
        st, hdrs, raw = self.s.request(
            "POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                        "params": p}), h, timeout)
        body = None
        if raw and hdrs.get("content-type", "").startswith("application/json"):
            body = json.loads(raw)
        elif raw:
            body = answer([json.loads(d) for e, d in parse_sse(raw) if e == "message"])
        return st, body

    def call(self, name="exec", **args):
        return self.rpc("tools/call", {"name": name, "arguments": args})

    def get(self, tid, **kw):
        return self.rpc("tasks/get", {"taskId": tid}, **kw)

    def wait(self, tid, timeout=120):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            st, r = self.get(tid)
            last = (r or {}).get("result")
            if not last or last.get("status") != "working":
                return last
            time.sleep(0.2)
        return last
