"""A small MCP server over Streamable HTTP on 127.0.0.1, for the upstream
tests: what mcp-exec connects to as an MCP client.

It speaks the transport as the 2025-06-18 specification describes it:
POST /mcp with one JSON-RPC message, answered with one JSON body or (with
sse=True) an event stream that carries a notification before the response;
a session id handed out at initialize and required afterwards (404 for an
unknown one); 202 for notifications; tools/list in pages of three with
nextCursor. An optional bearer token is required on every request (401
without it); what arrived is recorded (method, tool, session, whether the
token matched, notifications/cancelled), never shown to callers.

Tools: echo(text), add(a, b) (structuredContent), fail (isError), slow
(seconds; until release() or the client goes away), huge(n) (n bytes of
text), image (an image block), two_blocks, rpc_error (a JSON-RPC error),
secret_admin (for deny globs), grow (adds the tool "late" and announces
notifications/tools/list_changed in its answer, which needs sse=True),
record(id) (a 2 KB structured record), grow_quiet (adds the tool "quiet" and announces the change only on the GET
event streams clients keep open), whoami ({"authorized": bool}), numbers
(NUMBERS, the upstream's own bytes, as structuredContent and as its text
block; its input schema holds such numbers too) and echo_args (the
arguments back as structuredContent; each request's raw body is kept in
raw_bodies) and progress (three notifications/progress with the request's
progressToken before its answer, always as an event stream; the tokens
received are kept in progress_tokens). With init_gate (a threading.Event),
initialize is answered only once it is set.
"""
import base64
import http.server
import json
import select
import socket
import threading
import uuid

PAGE = 3
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()
# Numbers a double or cJSON's printing would change, in the upstream's own
# spelling (not Python's): written into the answer as these bytes.
NUMBERS = ('{"values":[0.30000000000000004,9007199254740991,1.7976931348623157e308,-0.0,'
           '4.9406564584124654e-324,18446744073709551617,1.0]}')

TOOLS = [
    {"name": "echo", "description": "Echoes the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string",
                                                               "description": "what to echo"}},
                     "required": ["text"]}},
    {"name": "add", "description": "Adds two numbers; structured.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"},
                                                      "b": {"type": "number"}},
                     "required": ["a", "b"]},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Waits.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "huge", "description": "Many bytes.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    {"name": "image", "description": "A picture.", "inputSchema": {"type": "object"}},
    {"name": "two_blocks", "description": "Two text blocks.", "inputSchema": {"type": "object"}},
    {"name": "rpc_error", "description": "A protocol error.", "inputSchema": {"type": "object"}},
    {"name": "secret_admin", "description": "Never allowed.", "inputSchema": {"type": "object"}},
    {"name": "grow", "description": "Adds a tool.", "inputSchema": {"type": "object"}},
    {"name": "grow_quiet", "description": "Adds a tool, said on GET streams.",
     "inputSchema": {"type": "object"}},
    {"name": "record", "description": "One invoice record (about 2 KB).",
     "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}},
                     "required": ["id"]}},
    {"name": "whoami", "description": "Whether the credential came.",
     "inputSchema": {"type": "object"}},
    {"name": "numbers", "description": "Numbers that must travel exactly.",
     "inputSchema": {"type": "object", "properties": {"x": {
         "type": "number", "minimum": -0.0, "maximum": 1.7976931348623157e308,
         "multipleOf": 0.30000000000000004, "default": 18446744073709551617,
         "examples": [9007199254740991, 5e-324]}}}},
    {"name": "echo_args", "description": "The arguments back.",
     "inputSchema": {"type": "object"}},
    {"name": "progress", "description": "Reports progress, then answers.",
     "inputSchema": {"type": "object"}},
]


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # clients that went away (cancelled calls) are expected


class McpUpstream:
    def __init__(self, sse=False, token=None, port=0, init_gate=None):
        self.sse = sse
        self.init_gate = init_gate
        self.progress_tokens = []  # the progressToken of each progress call (None: none)
        self.token = token
        self.sessions = set()
        self.tools = [dict(t) for t in TOOLS]
        self.calls = []        # (tool, session, authorized)
        self.cancelled = []    # requestIds of notifications/cancelled
        self.auth_seen = []    # whether each request carried the token
        self.raw_auth = []     # the Authorization values (for the test's eyes only)
        self.raw_bodies = []   # each POST's body as it came
        self.hanging = 0
        self.listeners = 0     # GET event streams open now
        self.announced = []    # messages for the GET streams
        self.stopping = False
        self.on_hang = None    # called when a slow call starts waiting
        self.cond = threading.Condition()
        self._release = threading.Event()
        self._start(port)

    def _start(self, port):
        self.httpd = _Server(("127.0.0.1", port), _handler(self))
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        """Stops listening and forgets every session, as a crash would."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.sessions.clear()

    def restart(self):
        """A new process on the same port: no session survives."""
        self.stop()
        self._release.clear()
        self.stopping = False
        self._start(self.port)

    def release(self):
        self._release.set()

    def wait(self, pred, timeout=60):
        with self.cond:
            return self.cond.wait_for(pred, timeout)

    def count(self, tool):
        with self.cond:
            return sum(1 for c in self.calls if c[0] == tool)


def _text(s):
    return {"content": [{"type": "text", "text": s}]}


def _handler(up):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _send(self, status, body=b"", ctype="application/json", headers=()):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(body)

        def do_GET(self):
            sid = self.headers.get("Mcp-Session-Id")
            if sid not in up.sessions or "text/event-stream" not in self.headers.get("Accept", ""):
                self._send(405 if sid in up.sessions else 404, b"")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            with up.cond:
                up.listeners += 1
                seen = len(up.announced)
                up.cond.notify_all()
            try:
                while True:
                    with up.cond:
                        up.cond.wait_for(lambda: up.stopping or len(up.announced) > seen, 1)
                        if up.stopping or sid not in up.sessions:
                            return
                        new, seen = up.announced[seen:], len(up.announced)
                    # The client went away: the stream ends.
                    if select.select([self.connection], [], [], 0)[0] and \
                            not self.connection.recv(1, socket.MSG_PEEK):
                        return
                    for m in new:
                        self.wfile.write(b"data: " + json.dumps(m).encode() + b"\n\n")
                    self.wfile.flush()
            except OSError:
                pass
            finally:
                with up.cond:
                    up.listeners -= 1
                    up.cond.notify_all()

        def do_DELETE(self):
            up.sessions.discard(self.headers.get("Mcp-Session-Id"))
            self._send(200, b"")

        def _tool(self, name, args):
            if name == "echo":
                return _text(str(args.get("text", "")))
            if name == "add":
                s = args.get("a", 0) + args.get("b", 0)
                return {"content": [{"type": "text", "text": json.dumps({"sum": s})}],
                        "structuredContent": {"sum": s}}
            if name == "fail":
                return dict(_text("it broke: no such invoice"), isError=True)
            if name == "slow":
                with up.cond:
                    up.hanging += 1
                    up.cond.notify_all()
                if up.on_hang:
                    up.on_hang()
                up._release.wait(float(args.get("seconds", 60)))
                return _text("done")
            if name == "huge":
                return _text("x" * int(args.get("n", 0)))
            if name == "image":
                return {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}
            if name == "two_blocks":
                return {"content": [{"type": "text", "text": "one"},
                                    {"type": "text", "text": "two"}]}
            if name == "echo_args":
                return {"content": [{"type": "text", "text": "echoed"}],
                        "structuredContent": args}
            if name == "whoami":
                ok = bool(up.auth_seen and up.auth_seen[-1])
                return {"content": [{"type": "text", "text": "ok"}],
                        "structuredContent": {"authorized": ok}}
            if name == "record":
                i = int(args.get("id", 0))
                rec = {"id": i, "customer": "customer-%d" % (i % 7), "amount": i * 1.5,
                       "lines": [{"sku": "sku-%d-%d" % (i, k), "qty": k + 1,
                                  "note": "line note " * 8} for k in range(8)]}
                return {"content": [{"type": "text", "text": json.dumps(rec)}],
                        "structuredContent": rec}
            if name == "secret_admin":
                return _text("you should not see this")
            if name == "grow":
                if not any(t["name"] == "late" for t in up.tools):
                    up.tools.append({"name": "late", "description": "Added by grow.",
                                     "inputSchema": {"type": "object"}})
                return _text("grown")
            if name == "late":
                return _text("late tool")
            if name == "grow_quiet":
                with up.cond:
                    if not any(t["name"] == "quiet" for t in up.tools):
                        up.tools.append({"name": "quiet", "description": "Added quietly.",
                                         "inputSchema": {"type": "object"}})
                    up.announced.append({"jsonrpc": "2.0",
                                         "method": "notifications/tools/list_changed"})
                    up.cond.notify_all()
                return _text("grown quietly")
            if name == "quiet":
                return _text("quiet tool")
            return None

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(n)
            auth = self.headers.get("Authorization")
            with up.cond:
                up.raw_bodies.append(raw)
                up.raw_auth.append(auth)
                up.auth_seen.append(up.token is None or auth == "Bearer " + up.token)
            if up.token is not None and auth != "Bearer " + up.token:
                self._send(401, b'{"error": "unauthorized"}')
                return
            try:
                msg = json.loads(raw)
            except ValueError:
                self._send(400, b"")
                return
            method = msg.get("method")
            sid = self.headers.get("Mcp-Session-Id")
            if method == "initialize":
                if up.init_gate is not None:
                    up.init_gate.wait(120)
                sid = uuid.uuid4().hex
                up.sessions.add(sid)
                ver = msg["params"].get("protocolVersion")
                result = {"protocolVersion": ver if ver in ("2025-06-18", "2025-03-26")
                          else "2025-06-18",
                          "capabilities": {"tools": {"listChanged": True}},
                          "serverInfo": {"name": "fixture-upstream", "version": "1"}}
                self._answer(msg, {"result": result}, [("Mcp-Session-Id", sid)])
                return
            if sid not in up.sessions:
                self._send(404 if sid else 400, b"")
                return
            if "id" not in msg:
                if method == "notifications/cancelled":
                    with up.cond:
                        up.cancelled.append(msg["params"].get("requestId"))
                        up.cond.notify_all()
                self._send(202, b"")
                return
            if method == "tools/list":
                start = int((msg.get("params") or {}).get("cursor") or 0)
                page = up.tools[start:start + PAGE]
                result = {"tools": page}
                if start + PAGE < len(up.tools):
                    result["nextCursor"] = str(start + PAGE)
                self._answer(msg, {"result": result})
                return
            if method == "tools/call":
                name = msg["params"].get("name")
                with up.cond:
                    up.calls.append((name, sid, up.auth_seen[-1]))
                    up.cond.notify_all()
                if name == "numbers" and not up.sse:
                    body = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text",'
                            '"text":%s}],"structuredContent":%s}}'
                            % (json.dumps(msg["id"]), json.dumps(NUMBERS), NUMBERS))
                    self._send(200, body.encode())
                    return
                if name == "progress":
                    token = ((msg["params"].get("_meta") or {}).get("progressToken"))
                    with up.cond:
                        up.progress_tokens.append(token)
                    events = [] if token is None else [
                        {"jsonrpc": "2.0", "method": "notifications/progress",
                         "params": {"progressToken": token, "progress": i, "total": 3,
                                    "message": "step %d" % i}} for i in (1, 2, 3)]
                    events.append({"jsonrpc": "2.0", "id": msg["id"], "result": _text("done")})
                    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
                    self._send(200, body, ctype="text/event-stream")
                    return
                if name == "rpc_error":
                    self._answer(msg, {"error": {"code": -32602, "message": "bad params here"}})
                    return
                result = self._tool(name, msg["params"].get("arguments") or {})
                if result is None:
                    self._answer(msg, {"error": {"code": -32602,
                                                 "message": "unknown tool " + str(name)}})
                    return
                self._answer(msg, {"result": result}, changed=name == "grow")
                return
            self._answer(msg, {"error": {"code": -32601, "message": "no such method"}})

        def _answer(self, msg, part, headers=(), changed=False):
            resp = dict({"jsonrpc": "2.0", "id": msg["id"]}, **part)
            if not up.sse:
                self._send(200, json.dumps(resp).encode(), headers=headers)
                return
            events = []
            # Something else first, as servers do (logging, progress).
            events.append({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "working"}})
            if changed:
                events.append({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            events.append(resp)
            body = b"".join(b"event: message\ndata: " + json.dumps(e).encode() + b"\n\n"
                            for e in events)
            self._send(200, body, ctype="text/event-stream", headers=headers)

    return H


if __name__ == "__main__":
    # As a process of its own (for a test that kills it mid-call): serves
    # until killed, prints its port on stdout, then "hang" when a slow call
    # starts waiting.
    import sys
    import time
    srv = McpUpstream(sse="--sse" in sys.argv)
    srv.on_hang = lambda: print("hang", flush=True)
    print(srv.port, flush=True)
    while True:
        time.sleep(3600)
