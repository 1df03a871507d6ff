"""Kubernetes ServiceAccount tokens (MCP_EXEC_AUTH_KUBERNETES) end to end
against a local HTTPS fixture that implements the documented TokenReview
request and response (tokenreview_fixture.py; no API server runs here): an
authenticated token becomes caller system:serviceaccount:<ns>:<name> (in the
audit line, matching a profile by glob), its verdict is cached (one review
for many requests) but never past the token's expiry; an unknown token and
a token for another audience get the same 401 as a wrong named token; an API
server that answers 5xx, answers too slowly or cannot be reached gets 503,
logged, never an admission; a session of a ServiceAccount does not continue
with another caller's token; the reviewer sends the pod's own token; a
username holding U+0000 is refused, not cut short.

The work an unauthenticated peer can cause is bounded: only JWT-shaped
values are reviewed (anything else is a 401 at once), new reviews are
rate-limited per client address and in total (429 past either), at most 16
are in flight (429 beyond), /healthz answers meanwhile, and /metrics counts
every decision by outcome. The limits are the documented defaults
(docs/security.md): per address 5/s with a burst of 20, in total 20/s with
a burst of 50.

Runs in the warm mode MCPX_TEST_WARM selects (cold, auto)."""
import http.client
import json
import os
import socket
import threading
import time

from egress_fixture import closed_port, write_policy
from mcpx_harness import (Failures, HttpServer, McpHttpClient, NamedTokens, ScratchDir, structured,
                          wait_until)
from tokenreview_fixture import TokenReviewServer, jwt

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

# ---- bounded work before authentication ----------------------------------
ADDR_BURST, ADDR_RATE, TOTAL_BURST, TOTAL_RATE, IN_FLIGHT = 20, 5, 50, 20, 16


def post_from(srv, source, token, timeout=60):
    """An initialize from another loopback address (127.0.0.0/8 is all ours):
    200 once admitted."""
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout,
                                   source_address=(source, 0))
    c.request("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
              {"Host": f"127.0.0.1:{srv.port}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer " + token})
    r = c.getresponse()
    out = (r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read())
    c.close()
    return out


def stranger():
    """A JWT-shaped value the API server does not know: what an attacker sends."""
    return jwt("system:serviceaccount:x:y", ["mcp-exec"], int(time.time()) + 3600)


def outcomes(srv):
    st, _, body = srv.request("GET", "/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line.startswith("mcp_exec_tokenreviews_total{outcome=\""):
            out[line.split('"')[1]] = int(float(line.split()[-1]))
    return out


def refill(srv):
    """Waits until the total bucket is full again (its burst at its rate)."""
    time.sleep(TOTAL_BURST / TOTAL_RATE + 0.5)


srv = server(api.url)
try:
    base_total = api.total
    # Not JWT-shaped: refused at once, nothing asked.
    shapes = ["tok-" + os.urandom(8).hex(), "a.b", "a.b.c.d", "e30.e30.", ".e30.e30",
              "e30.e30.a+b", "e30.e30.a=", "bm90anNvbg.e30.c2ln", "e30.bm90anNvbg.c2ln",
              stranger() + "." + "A", "x" * 2000]
    answers = [post_bearer(srv, v)[0] for v in shapes]
    t.check(answers == [401] * len(shapes) and api.total == base_total,
            "values that are not JWT-shaped (three base64url parts, a JSON header) get 401 "
            "without a TokenReview", (answers, api.total - base_total))
    st, _, _ = post_bearer(srv, stranger())
    t.check(st == 401 and api.total == base_total + 1, "a JWT-shaped unknown value is reviewed "
            "once and refused", (st, api.total - base_total))

    # A username holding U+0000 is refused, not read as its part before the NUL.
    nul = api.add_token("system:serviceaccount:agents:x\u0000y")
    st, _, body = post_from(srv, "127.0.0.1", nul)
    t.check(st == 401, "a username with a NUL (agents:x\\u0000y) is refused, not admitted as "
            "agents:x", (st, body[:200]))

    # Per client address: a burst, then its rate; other addresses unaffected.
    refill(srv)
    st, _, _ = post_from(srv, "127.0.0.2", good)
    t.check(st == 200, "a ServiceAccount token is admitted (and its verdict cached)", st)
    before, t0, got = api.total, time.time(), []
    for _ in range(4 * ADDR_BURST):
        got.append(post_from(srv, "127.0.0.2", stranger()))
    elapsed = time.time() - t0
    reviewed = api.total - before
    limited = [g for g in got if g[0] == 429]
    t.check(reviewed <= ADDR_BURST + ADDR_RATE * elapsed + 1,
            "one address gets at most its burst plus its rate of reviews",
            (reviewed, round(elapsed, 2)))
    t.check(limited and all(g[1].get("retry-after") and b"this address" in g[2]
                            for g in limited),
            "... the rest: 429 with Retry-After, saying the address is limited",
            [g[:1] + (g[2][:80],) for g in got[-2:]])
    t.check({g[0] for g in got} <= {401, 429}, "... every answer a 401 or a 429",
            {g[0] for g in got})
    ok = api.add_token("system:serviceaccount:agents:neighbour")
    st, _, _ = post_from(srv, "127.0.0.3", ok)
    t.check(st == 200, "another address is still reviewed and admitted", st)
    st, _, _ = post_from(srv, "127.0.0.2", good)
    t.check(st == 200, "a token admitted before passes from the limited address (cached)", st)

    # In total: 40 addresses, each within its own burst, from 8 clients at
    # a time (fewer than the 16 reviews in flight, so only the total
    # limits them).
    refill(srv)
    before, t0, got, lock = api.total, time.time(), [], threading.Lock()

    def flood(sources, n):
        for _ in range(n):
            for source in sources:
                r = post_from(srv, source, stranger())
                with lock:
                    got.append(r)

    threads = [threading.Thread(target=flood, args=(
        [f"127.0.1.{i}" for i in range(k * 5 + 1, k * 5 + 6)], ADDR_BURST // 2))
        for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.time() - t0
    reviewed = api.total - before
    t.check(reviewed <= TOTAL_BURST + TOTAL_RATE * elapsed + 1,
            "40 addresses together get at most the total burst plus the total rate",
            (reviewed, len(got), round(elapsed, 2)))
    t.check(any(g[0] == 429 and g[2].startswith(b"too many token reviews: ") for g in got) and
            {g[0] for g in got} <= {401, 429},
            "... the rest 429, saying the total is spent", sorted({g[0] for g in got}))

    # In flight: a slow API server; /healthz answers all along.
    refill(srv)
    api.mode, api.delay, api.max_in_flight, got = "slow", 2, 0, []
    threads = [threading.Thread(target=flood, args=([f"127.0.2.{i}"], 1)) for i in range(1, 31)]
    for th in threads:
        th.start()
    health = []
    while any(th.is_alive() for th in threads):
        t1 = time.time()
        health.append((srv.request("GET", "/healthz", timeout=30)[0], time.time() - t1))
        time.sleep(0.05)
    for th in threads:
        th.join()
    api.mode = "ok"
    t.check(0 < api.max_in_flight <= IN_FLIGHT, "at most 16 reviews in flight at once",
            api.max_in_flight)
    t.check(any(g[0] == 429 and b"in progress" in g[2] for g in got),
            "... beyond: 429", sorted({g[0] for g in got}))
    t.check(health and all(h[0] == 200 for h in health),
            "/healthz answers 200 all along", health)
    print("  /healthz during the flood: %d probes, slowest %.1f ms" %
          (len(health), 1000 * max(h[1] for h in health)))

    # /metrics: every decision by outcome; the reviews sent match the fixture's.
    m = outcomes(srv)
    sent = m.get("admitted", 0) + m.get("refused", 0) + m.get("unavailable", 0)
    t.check(sent == api.total - base_total,
            "/metrics: admitted + refused + unavailable = the reviews the API server got",
            (m, api.total - base_total))
    t.check(m.get("not_jwt") == len(shapes), "... not_jwt counts the values never sent",
            m)
    t.check(m.get("limited_address", 0) >= 1 and m.get("limited_total", 0) >= 1 and
            m.get("limited_in_flight", 0) >= 1, "... and each limit that refused", m)
finally:
    srv.stop()
api.stop()

scratch.remove()
t.done()
