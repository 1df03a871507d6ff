"""End-to-end: JSON-RPC batches with the real binary, over stdio and
Streamable HTTP. Under 2025-03-26 (the only revision with batches) a batch
gets one JSON array holding one response per request, tool calls included,
none for notifications; a batch of only notifications gets nothing (HTTP
202); an empty array is a single Invalid Request; under any other version the
whole batch is refused with one error whose id is null."""
import json

from mcpx_harness import Failures, HttpServer, McpHttpClient, StdioServer, structured

t = Failures()


def req(rid, method, params=None):
    m = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        m["params"] = params
    return m


def call(rid, code, meta=None):
    p = {"name": "exec", "arguments": {"code": code}}
    if meta:
        p["_meta"] = meta
    return req(rid, "tools/call", p)


NOTE = {"jsonrpc": "2.0", "method": "notifications/whatever"}


def by_id(arr):
    return {m.get("id"): m for m in arr} if isinstance(arr, list) else {}


# ---- stdio ----
s = StdioServer()
s.initialize("2025-03-26")
s.send([call(1, "print(6*7)"), NOTE, req(2, "ping"), 5])
r = s.recv(60)
ids = by_id(r)
t.check(isinstance(r, list) and len(r) == 3, "stdio: one array, a response per request and per invalid element", r)
t.check(structured(ids.get(1)) and structured(ids[1])["stdout"] == "42\n",
        "stdio: the tool call's result is inside the array", r)
t.check(ids.get(2, {}).get("result") == {} and ids.get(None, {}).get("error", {}).get("code") == -32600,
        "stdio: ping result and the invalid element's error in the same array", r)
r = s.request("ping")
t.check(r and r.get("result") == {}, "stdio: nothing else was written for the batch", r)

s.send([NOTE, NOTE])
s.send(req(3, "ping"))
r = s.recv(10)
t.check(r and r.get("id") == 3, "stdio: a batch of only notifications gets no reply", r)

s.send([])
r = s.recv(10)
t.check(isinstance(r, dict) and r.get("id") is None and r.get("error", {}).get("code") == -32600,
        "stdio: [] is a single Invalid Request, not an array", r)
s.send("[1]")
r = s.recv(10)
t.check(isinstance(r, list) and len(r) == 1 and r[0]["error"]["code"] == -32600,
        "stdio: [1] is an array with one Invalid Request", r)
s.close()

s = StdioServer()
s.initialize("2025-06-18")
s.send([req(1, "ping"), req(2, "ping")])
r = s.recv(10)
t.check(isinstance(r, dict) and r.get("id") is None and r.get("error", {}).get("code") == -32600
        and "2025-03-26" in r["error"]["message"],
        "stdio: batch under 2025-06-18 refused with one error, id null", r)
s.close()

# ---- Streamable HTTP ----
srv = HttpServer()
c = McpHttpClient(srv, version="2025-03-26")
st, h, body, _ = c.initialize()
t.check(st == 200 and body["result"]["protocolVersion"] == "2025-03-26", "http: 2025-03-26 session", body)

st, h, body = c.post([call(1, "print('a')"), NOTE, req(2, "ping")])
ids = by_id(body)
t.check(st == 200 and h.get("content-type", "").startswith("application/json") and isinstance(body, list)
        and len(body) == 2 and structured(ids.get(1)) and ids.get(2, {}).get("result") == {},
        "http: JSON reply is one array with both responses", (st, body))

# A progress token makes the reply an SSE stream: progress events first,
# then the whole batch as one array in one event.
st, h, body = c.post([call(7, "import time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.3)",
                           {"progressToken": "p"}), req(8, "ping")])
arrays = [m for m in body or [] if isinstance(m, list)]
singles = [m for m in body or [] if isinstance(m, dict) and "id" in m]
t.check(st == 200 and h.get("content-type", "").startswith("text/event-stream") and len(arrays) == 1
        and not singles and sorted(x["id"] for x in arrays[0]) == [7, 8],
        "http: SSE reply carries the batch as one array event", body)

st, h, body = c.post([NOTE, NOTE])
t.check(st == 202 and body is None, "http: only notifications -> 202, no body", (st, body))

st, h, body = c.post([5])
t.check(st == 400 and isinstance(body, list) and len(body) == 1 and body[0]["error"]["code"] == -32600,
        "http: [5] -> 400 with an array of one error", (st, body))

st, h, body = c.post([])
t.check(st == 400 and isinstance(body, dict) and body.get("id") is None
        and body.get("error", {}).get("code") == -32600, "http: [] -> 400 with a single error", (st, body))

c2 = McpHttpClient(srv, version="2025-11-25")
c2.initialize()
st, h, body = c2.post([req(1, "ping"), req(2, "ping")])
t.check(st == 400 and isinstance(body, dict) and body.get("id") is None
        and body.get("error", {}).get("code") == -32600 and "2025-03-26" in body["error"]["message"],
        "http: batch on a 2025-11-25 session -> 400, one error with id null", (st, body))
srv.stop()
t.done()
