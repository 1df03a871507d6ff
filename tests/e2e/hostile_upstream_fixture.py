"""An MCP server over Streamable HTTP on 127.0.0.1 that behaves as a hostile
upstream may (tests/e2e/test_upstream_catalog.py, bench/upstream_catalog.py):

  - tools/list in `pages` pages of `per_page` tools, each tool's description
    `desc_bytes` long, so one connection offers pages * per_page tools;
  - the tool bad_utf8 answers with text holding bytes that are not UTF-8
    (a lone continuation byte, a truncated sequence, an overlong '/');
  - every other tool answers "ok".

JSON answers only, a session id at initialize, 405 for the GET stream.
What arrived is counted (tools/list pages served) for the test's eyes.
"""
import http.server
import json
import threading
import uuid

BAD = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"a\x80b\xe2\x82 c\xc0\xaf"}],' \
      b'"structuredContent":{"t":"\xff"}}}'


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class HostileUpstream:
    def __init__(self, pages=50, per_page=100, desc_bytes=39000):
        self.pages, self.per_page, self.desc_bytes = pages, per_page, desc_bytes
        self.pages_served = 0
        self.lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", 0), _handler(self))
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def page(self, n):
        tools = [{"name": "t%d_%d" % (n, i), "description": "d" * self.desc_bytes,
                  "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}
                 for i in range(self.per_page)]
        if n == 0:
            tools[0] = {"name": "bad_utf8", "description": "Answers bytes that are not UTF-8.",
                        "inputSchema": {"type": "object"}}
        result = {"tools": tools}
        if n + 1 < self.pages:
            result["nextCursor"] = str(n + 1)
        return result

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(up):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _send(self, status, body=b"", headers=()):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self._send(405)

        def do_POST(self):
            msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            method, rid = msg.get("method"), msg.get("id")
            if rid is None:
                self._send(202)
                return
            if method == "initialize":
                res = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "hostile", "version": "1"}}
                self._send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}).encode(),
                           [("Mcp-Session-Id", uuid.uuid4().hex)])
            elif method == "tools/list":
                n = int((msg.get("params") or {}).get("cursor") or 0)
                with up.lock:
                    up.pages_served += 1
                self._send(200, json.dumps({"jsonrpc": "2.0", "id": rid,
                                            "result": up.page(n)}).encode())
            elif method == "tools/call" and msg["params"].get("name") == "bad_utf8":
                self._send(200, BAD % json.dumps(rid).encode())
            else:
                self._send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
                    "content": [{"type": "text", "text": "ok"}]}}).encode())

    return H
