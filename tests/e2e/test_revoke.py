"""A token removed from the tokens file ends what it opened, end to end over
HTTP with the real binary (issue 25, "no confusion between callers"):
within about a second of the change, without any request presenting a
token, the removed caller's legacy SSE stream, Streamable HTTP GET stream
and SSE-streamed POST end, its POST waiting for an answer gets the 401
every failed authentication gets, its running run is killed and its
queued one dropped (both audited "cancelled"); another caller's streams
and its queued run are untouched, and the run completes. The log names
the caller, never the token or its hash.

A token moved to another caller (the same hash under a new name) is a
revocation of the old caller's credential too: its legacy SSE stream ends,
its running run is killed and its queued one dropped, and the same token
is from then on the new caller's.

The timeouts below only guard against a hang; nothing asserts how fast.
Runs in the warm mode MCPX_TEST_WARM selects (cold, auto)."""
import json
import os
import socket
import threading
import time

from mcpx_harness import (Failures, HttpServer, McpHttpClient, NamedTokens, ScratchDir,
                          parse_sse, sha256_hex as sha, structured, wait_until, write_policy)

t = Failures()
scratch = ScratchDir("mcpx-revoke-")
work = scratch.workdir()  # where runs live (readable by runs)
tokens = NamedTokens(os.path.join(scratch.path, "tokens.json"),  # not beneath it
                     ["gone-agent", "kept-agent", "mover"])
TOK = tokens.tokens
policy_file = os.path.join(scratch.path, "policy.json")  # a policy: GET /mcp streams exist
LONG = "import time; time.sleep(120)"


class Stream:
    """A raw GET whose response is an SSE stream, read as it comes."""

    def __init__(self, srv, path, headers):
        self.s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        h = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{h}\r\n".encode())
        self.buf = b""
        self.eof = False

    def pump(self, timeout):
        """Reads what arrives within timeout; notes the end of the stream."""
        self.s.settimeout(timeout)
        try:
            chunk = self.s.recv(65536)
        except socket.timeout:
            return
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
        self.buf += chunk

    def events(self):
        return parse_sse(self.buf.split(b"\r\n\r\n", 1)[-1])

    def wait(self, cond, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline and not self.eof:
            v = cond()
            if v:
                return v
            self.pump(0.2)
        return cond()

    def message(self, rid):
        for ev, data in self.events():
            if ev == "message":
                m = json.loads(data)
                if m.get("id") == rid:
                    return m
        return None

    def closed(self):
        self.pump(0.1)
        return self.eof

    def close(self):
        self.s.close()


def legacy(srv, caller):
    """A legacy SSE session of caller, initialized: (stream, POST path)."""
    st = Stream(srv, "/sse", {"Accept": "text/event-stream", "X-MCP-AUTH": TOK[caller]})
    ep = st.wait(lambda: [d for e, d in st.events() if e == "endpoint"])
    path = ep[0] if ep else None
    if path:
        legacy_post(srv, caller, path, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"}}})
        st.wait(lambda: st.message(1))
        legacy_post(srv, caller, path, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return st, path


def legacy_post(srv, caller, path, msg):
    return srv.request("POST", path, json.dumps(msg),
                       {"X-MCP-AUTH": TOK[caller], "Content-Type": "application/json"})[0]


def call_msg(rid, code, progress=False):
    params = {"name": "exec", "arguments": {"code": code}}
    if progress:
        params["_meta"] = {"progressToken": "p%d" % rid}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def in_thread(fn):
    out = {}

    def run():
        try:
            out["r"] = fn()
        except Exception as e:  # reported by the checks that read out
            out["e"] = repr(e)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th, out


tokens.write(["gone-agent", "kept-agent"])
write_policy(policy_file, {})
srv = HttpServer({"MCP_EXEC_AUTH_TOKENS_FILE": tokens.path, "MCP_EXEC_POLICY": policy_file,
                  "MCP_EXEC_WORKDIR_BASE": work, "MCP_EXEC_MAX_QUEUE": 16})
streams = []
try:
    # ---- what each caller has open ---------------------------------------
    g_sse, g_path = legacy(srv, "gone-agent")
    k_sse, k_path = legacy(srv, "kept-agent")
    streams += [g_sse, k_sse]
    t.check(g_path and k_path and g_sse.message(1) and k_sse.message(1),
            "both callers hold an initialized legacy SSE session",
            (g_path, k_path, g_sse.buf[-200:], k_sse.buf[-200:]))
    g, k = McpHttpClient(srv, TOK["gone-agent"]), McpHttpClient(srv, TOK["kept-agent"])
    for c in (g, k):
        c.initialize()
    g_get = Stream(srv, "/mcp", dict(g.headers(), Accept="text/event-stream"))
    k_get = Stream(srv, "/mcp", dict(k.headers(), Accept="text/event-stream"))
    streams += [g_get, k_get]
    for s in (g_get, k_get):
        s.wait(lambda: b"\r\n\r\n" in s.buf, timeout=30)
    t.check(g_get.buf.startswith(b"HTTP/1.1 200") and k_get.buf.startswith(b"HTTP/1.1 200"),
            "both callers hold a Streamable HTTP GET stream", (g_get.buf[:40], k_get.buf[:40]))

    # gone-agent: a run on its legacy stream (runs first: one slot), then a
    # POST streamed as SSE and a POST waiting for JSON, both queued behind
    # it; kept-agent: a POST queued behind them all.
    t.check(legacy_post(srv, "gone-agent", g_path, call_msg(2, LONG)) == 202,
            "gone-agent's run is accepted on its legacy stream")
    wait_until(lambda: srv.metric("mcp_exec_running") == 1, timeout=60)
    g_sse_post, g_sse_out = in_thread(lambda: g.post(call_msg(3, LONG, progress=True)))
    g_json_post, g_json_out = in_thread(lambda: g.post(call_msg(4, LONG), extra={
        "Accept": "application/json"}))
    wait_until(lambda: srv.metric("mcp_exec_queue_depth") == 2, timeout=60)
    k_post, k_out = in_thread(lambda: k.call("print('kept')"))
    queued = wait_until(lambda: srv.metric("mcp_exec_queue_depth") == 3, timeout=60)
    t.check(queued and srv.metric("mcp_exec_running") == 1,
            "one run of gone-agent runs, two of its calls and kept-agent's wait",
            (srv.metric("mcp_exec_running"), srv.metric("mcp_exec_queue_depth")))

    # ---- before: another caller can neither cancel nor observe them -------
    st = legacy_post(srv, "kept-agent", g_path, {
        "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    t.check(st == 401, "kept-agent cannot post (cancel) to gone-agent's legacy session", st)
    st, _, _ = srv.request("GET", "/mcp", None, dict(g.headers(), Accept="text/event-stream",
                                                      **{"X-MCP-AUTH": TOK["kept-agent"]}))
    t.check(st == 401, "nor open a GET stream on gone-agent's session", st)
    st, _, _ = k.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 3}}, extra={"Mcp-Session-Id": g.sid})
    t.check(st == 401, "nor cancel on gone-agent's Streamable HTTP session", st)
    t.check(srv.metric("mcp_exec_running") == 1 and srv.metric("mcp_exec_queue_depth") == 3 and
            not [a for a in srv.audit_lines() if a.get("status") == "cancelled"],
            "gone-agent's runs go on", srv.metric("mcp_exec_queue_depth"))

    # ---- gone-agent's token is removed -----------------------------------
    tokens.write(["kept-agent"])
    ended = wait_until(lambda: g_sse.closed() and g_get.closed(), timeout=20, interval=0.05)
    t.check(ended, "the removed caller's legacy SSE and GET /mcp streams end",
            (g_sse.eof, g_get.eof))
    g_sse_post.join(60)
    g_json_post.join(60)
    st = g_sse_out.get("r", (None,))[0]
    msgs = g_sse_out.get("r", (None, None, None))[2] or []
    t.check(st == 200 and not any(m.get("id") == 3 for m in msgs),
            "its POST streamed as SSE ends without a result", g_sse_out)
    t.check(g_json_out.get("r", (None,))[0] == 401,
            "its POST waiting for JSON is answered 401", g_json_out)
    k_post.join(120)
    st, _, body = k_out.get("r", (None, None, None))
    t.check(st == 200 and body and structured(body).get("stdout") == "kept\n",
            "kept-agent's queued run still runs, to its end", k_out)

    audits = srv.audit_lines()
    cancelled = [a for a in audits if a.get("audit") == "exec" and
                 a.get("caller") == "gone-agent" and a.get("status") == "cancelled"]
    t.check(len(cancelled) == 3,
            "gone-agent's running run is killed and its queued ones dropped (audited)",
            [(a.get("caller"), a.get("status")) for a in audits if a.get("audit") == "exec"])
    t.check(wait_until(lambda: srv.metric("mcp_exec_running") == 0 and
                       srv.metric("mcp_exec_queue_depth") == 0, timeout=60),
            "nothing of gone-agent's is left running or queued")

    # ---- kept-agent is untouched -----------------------------------------
    t.check(not k_sse.closed() and not k_get.closed(), "kept-agent's streams stay open",
            (k_sse.eof, k_get.eof))
    legacy_post(srv, "kept-agent", k_path, {"jsonrpc": "2.0", "id": 7, "method": "ping"})
    t.check(k_sse.wait(lambda: k_sse.message(7)), "kept-agent's legacy session still answers")
    st = legacy_post(srv, "gone-agent", k_path, {"jsonrpc": "2.0", "id": 8, "method": "ping"})
    t.check(st == 401, "the removed token is refused", st)

    log = srv.drain_stderr()
    t.check("gone-agent" in log and "ended" in log, "the log says whose token went", log[-600:])
    t.check(not any(s in log for s in (TOK["gone-agent"], sha(TOK["gone-agent"]))),
            "without the token or its hash")

    # ---- a token moved to another caller --------------------------------
    tokens.write(["kept-agent", "mover"])
    t.check(wait_until(lambda: McpHttpClient(srv, TOK["mover"]).initialize()[0] == 200,
                       timeout=20), "the tokens file now has mover")
    m_sse, m_path = legacy(srv, "mover")
    streams.append(m_sse)
    t.check(m_path and m_sse.message(1), "mover holds an initialized legacy SSE session",
            m_sse.buf[-200:])
    t.check(legacy_post(srv, "mover", m_path, call_msg(2, LONG)) == 202,
            "mover's run is accepted on its legacy stream")
    wait_until(lambda: srv.metric("mcp_exec_running") == 1, timeout=60)
    m = McpHttpClient(srv, TOK["mover"])
    m.initialize()
    m_json_post, m_json_out = in_thread(lambda: m.post(call_msg(5, LONG), extra={
        "Accept": "application/json"}))
    t.check(wait_until(lambda: srv.metric("mcp_exec_queue_depth") == 1, timeout=60),
            "mover has a run running and one queued",
            (srv.metric("mcp_exec_running"), srv.metric("mcp_exec_queue_depth")))
    write_policy(tokens.path, [{"caller": "kept-agent", "token_sha256": sha(TOK["kept-agent"])},
                               {"caller": "new-owner", "token_sha256": sha(TOK["mover"])}])
    t.check(wait_until(lambda: m_sse.closed(), timeout=20, interval=0.05),
            "moved to new-owner: mover's legacy SSE stream ends", m_sse.eof)
    m_json_post.join(60)
    t.check(m_json_out.get("r", (None,))[0] == 401,
            "mover's POST waiting for JSON is answered 401", m_json_out)
    def mover_cancelled():
        return [a for a in srv.audit_lines() if a.get("audit") == "exec" and
                a.get("caller") == "mover" and a.get("status") == "cancelled"]

    # The killed run's line comes once it is reaped, after the 401.
    t.check(wait_until(lambda: len(mover_cancelled()) == 2, timeout=60),
            "mover's running run is killed and its queued one dropped",
            [(a.get("caller"), a.get("status")) for a in srv.audit_lines()
             if a.get("audit") == "exec"][-4:])
    t.check(wait_until(lambda: srv.metric("mcp_exec_running") == 0 and
                       srv.metric("mcp_exec_queue_depth") == 0, timeout=60),
            "nothing of mover's is left running or queued")
    n = McpHttpClient(srv, TOK["mover"])
    n.initialize()
    st, _, body = n.call("print('moved')")
    new_runs = [a for a in srv.audit_lines() if a.get("audit") == "exec" and
                a.get("status") == "ok"]
    t.check(st == 200 and structured(body).get("stdout") == "moved\n" and new_runs and
            new_runs[-1].get("caller") == "new-owner",
            "the same token now calls as new-owner", (st, new_runs[-1:]))
    log = srv.drain_stderr()
    t.check("a token of caller mover was removed" in log, "the log names mover", log[-600:])
finally:
    for s in streams:
        s.close()
    srv.stop()

scratch.remove()
t.done()
