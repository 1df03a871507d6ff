"""Kubernetes ServiceAccount tokens (MCP_EXEC_AUTH_KUBERNETES) end to end
against a local HTTPS fixture that implements the documented TokenReview
request and response (tokenreview_fixture.py; no API server runs here): an
authenticated token becomes caller system:serviceaccount:<ns>:<name> (in the
audit line, matching a profile by glob), its verdict is cached (one review
for many requests) but never past the token's expiry; an unknown token and
a token for another audience get the same 401 as a wrong named token; an API
server that answers 5xx, answers too slowly or cannot be reached gets 503,
logged, never an admission; a session of a ServiceAccount does not continue
with another caller's token; the reviewer sends the pod's own token.

Runs in the warm mode MCPX_TEST_WARM selects (cold, auto)."""
import json
import os
import socket
import time

from egress_fixture import closed_port, write_policy
from mcpx_harness import (Failures, HttpServer, McpHttpClient, NamedTokens, ScratchDir, structured,
                          wait_until)
from tokenreview_fixture import TokenReviewServer

t = Failures()
scratch = ScratchDir("mcpx-tokenreview-")
work = scratch.workdir()
admin = scratch.secrets
POD_TOKEN = "pod-own-token-" + os.urandom(8).hex()
pod_token_file = os.path.join(admin, "token")
with open(pod_token_file, "w") as f:
    f.write(POD_TOKEN + "\n")
api = TokenReviewServer(admin, POD_TOKEN)
tokens = NamedTokens(os.path.join(admin, "tokens.json"), ["named-agent"])
tokens.write(["named-agent"])
NAMED, tokens_file = tokens.tokens["named-agent"], tokens.path
policy_file = os.path.join(admin, "policy.json")
write_policy(policy_file, {"profiles": [
    {"name": "agents", "callers": ["system:serviceaccount:agents:*"], "tools": ["exec"]}]})


def server(api_url):
    return HttpServer({"MCP_EXEC_AUTH_KUBERNETES": "1",
                       "MCP_EXEC_AUTH_KUBERNETES_API": api_url,
                       "MCP_EXEC_AUTH_KUBERNETES_TOKEN_FILE": pod_token_file,
                       "MCP_EXEC_AUTH_KUBERNETES_CA_FILE": api.ca,
                       "MCP_EXEC_AUTH_TOKENS_FILE": tokens_file,
                       "MCP_EXEC_POLICY": policy_file,
                       "MCP_EXEC_WORKDIR_BASE": work})


def post_bearer(srv, token, sid=None, timeout=60):
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer " + token}
    if sid:
        h["Mcp-Session-Id"] = sid
    return srv.request("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}), h, timeout=timeout)


class BearerClient(McpHttpClient):
    def headers(self, extra=None):
        h = super().headers(extra)
        h.pop("X-MCP-AUTH", None)
        h["Authorization"] = "Bearer " + self.token
        return h


srv = server(api.url)
try:
    good = api.add_token("system:serviceaccount:agents:billing")
    other_aud = api.add_token("system:serviceaccount:agents:billing", audiences=("vault",))

    # ---- an authenticated ServiceAccount ---------------------------------
    c = BearerClient(srv, good)
    st, hdrs, body, _ = c.initialize()
    t.check(st == 200 and c.sid, "a ServiceAccount token with audience mcp-exec is admitted",
            (st, body))
    st, _, body = c.call("print('sa')")
    t.check((structured(body) or {}).get("stdout") == "sa\n", "... and runs code", body)
    lines = [a for a in srv.audit_lines() if a.get("audit") == "exec"]
    t.check(lines and lines[-1].get("caller") == "system:serviceaccount:agents:billing" and
            lines[-1].get("profile") == "agents",
            "the audit line names the ServiceAccount and the profile its glob matched",
            lines[-1:])
    t.check(api.count(good) == 1,
            "initialize, notifications/initialized and tools/call: one review (cached)",
            api.count(good))
    t.check(not api.bad_requests, "every review was the documented request, with the pod's "
            "own token", api.bad_requests)

    # ---- refusals: one 401 for all ---------------------------------------
    wrong_named = post_bearer(srv, "tok-nobody-" + os.urandom(4).hex())
    unknown = post_bearer(srv, api.add_token("system:serviceaccount:agents:x") + "x")
    wrong_aud = post_bearer(srv, other_aud)
    foreign = post_bearer(srv, NAMED, c.sid)
    t.check([x[0] for x in (wrong_named, unknown, wrong_aud, foreign)] == [401] * 4,
            "unknown token, token for another audience, another caller on a ServiceAccount's "
            "session: 401", [x[0] for x in (wrong_named, unknown, wrong_aud, foreign)])
    t.check(len({x[2] for x in (wrong_named, unknown, wrong_aud, foreign)}) == 1,
            "... all with the same body as a wrong named token",
            [x[2] for x in (wrong_named, unknown, wrong_aud, foreign)])
    n = api.count(other_aud)
    post_bearer(srv, other_aud)
    t.check(api.count(other_aud) == n, "a refusal is cached too (no review per request)",
            api.count(other_aud))
    t.check(post_bearer(srv, NAMED)[0] not in (401, 503),
            "named tokens work beside ServiceAccounts")

    # ---- never cached past the token's expiry ----------------------------
    short = api.add_token("system:serviceaccount:agents:short", exp_in=2)
    t.check(post_bearer(srv, short)[0] not in (401, 503), "a token about to expire is admitted")
    time.sleep(2.5)
    post_bearer(srv, short)
    t.check(api.count(short) == 2, "past its exp claim the cached verdict is not used",
            api.count(short))

    # ---- a stream ends once its token no longer passes review -------------
    def sse_open(token):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        s.sendall((f"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                   f"Authorization: Bearer {token}\r\n\r\n").encode())
        buf = b""
        while b"event: endpoint" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return s, buf

    def ended(s):
        s.settimeout(0.2)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return True
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True

    doomed = api.add_token("system:serviceaccount:agents:doomed", exp_in=3)
    lasting = api.add_token("system:serviceaccount:agents:lasting")
    sd, bd = sse_open(doomed)
    sl, bl = sse_open(lasting)
    t.check(b"event: endpoint" in bd and b"event: endpoint" in bl,
            "two ServiceAccounts hold legacy SSE streams", (bd[:40], bl[:40]))
    with api.lock:
        del api.tokens[doomed]  # its ServiceAccount (or pod) was deleted
    # Its cached verdict lasts until the token's exp claim (3 s); the
    # review after that refuses it.
    t.check(wait_until(lambda: ended(sd), timeout=60),
            "the stream of a token that fails its next review ends")
    t.check(api.count(doomed) >= 2, "... after a second review", api.count(doomed))
    t.check(not ended(sl), "another ServiceAccount's stream stays open")
    t.check("agents:doomed no longer passes its review" in srv.drain_stderr(),
            "the log names the ServiceAccount")
    sd.close()
    sl.close()

    # ---- the API server failing: 503, logged, never admitted -------------
    api.mode = "500"
    fresh = api.add_token("system:serviceaccount:agents:fresh")
    st, hdrs, body = post_bearer(srv, fresh)
    t.check(st == 503, "the API server answering 500: 503", (st, body))
    t.check("answered HTTP 500" in srv.drain_stderr(), "... and the log says so")
    st, _, _ = post_bearer(srv, good, c.sid)
    t.check(st == 200, "a token reviewed before still works from the cache", st)
    api.mode = "slow"
    st, _, body = post_bearer(srv, api.add_token("system:serviceaccount:agents:slow"),
                              timeout=60)
    t.check(st == 503, "the API server answering too slowly: 503", (st, body))
    api.mode = "ok"
    t.check(post_bearer(srv, fresh)[0] not in (401, 503), "unavailability is not cached")
    log = srv.drain_stderr()
    t.check(good not in log and POD_TOKEN not in log and NAMED not in log,
            "no token appears in the log")
finally:
    srv.stop()

# ---- the API server unreachable ------------------------------------------
srv = server(f"https://127.0.0.1:{closed_port()}")
try:
    st, _, body = post_bearer(srv, api.add_token("system:serviceaccount:agents:billing"))
    t.check(st == 503, "the API server unreachable: 503, never an admission", (st, body))
    t.check("TokenReview at" in srv.drain_stderr(), "... logged")
finally:
    srv.stop()
api.stop()

scratch.remove()
t.done()
