"""Who is calling, end to end over HTTP with the real binary: named tokens
(MCP_EXEC_AUTH_TOKENS_FILE) and the single token (caller "default"), the
caller in every audit line, sessions bound to their caller, one 401 body for
every failure, a token removed from the file refused within 2 s (its
session too), and a bad new file keeping the old one.

Runs in the warm mode MCPX_TEST_WARM selects (cold, auto)."""
import json
import os
import shutil
import time

from mcpx_harness import (Failures, HttpServer, McpHttpClient, NamedTokens, ScratchDir,
                          sha256_hex as sha, structured, wait_until, write_policy)

t = Failures()
scratch = ScratchDir("mcpx-identity-")
work = scratch.workdir()  # where runs live (readable by runs)
tokens = NamedTokens(os.path.join(scratch.path, "tokens.json"),  # not beneath it
                     ["billing-agent", "report-agent"])
TOK = tokens.tokens
SINGLE = "tok-single-" + os.urandom(8).hex()


def client(srv, caller):
    return McpHttpClient(srv, token=TOK.get(caller, caller))


def run_ok(c, code="print(6*7)"):
    st, _, body = c.call(code)
    return st == 200 and body and structured(body).get("exit_code") == 0, body


tokens.write(["billing-agent", "report-agent"])
srv = HttpServer({"MCP_EXEC_AUTH_TOKENS_FILE": tokens.path, "MCP_EXEC_AUTH_TOKEN": SINGLE,
                  "MCP_EXEC_WORKDIR_BASE": work})
try:
    # ---- each token its caller, in the audit line -------------------------
    b, r, d = client(srv, "billing-agent"), client(srv, "report-agent"), client(srv, SINGLE)
    for c in (b, r, d):
        st, hdrs, body, _ = c.initialize()
        t.check(st == 200 and c.sid, "initialize with a named or the single token", (st, body))
    ok, body = run_ok(b)
    t.check(ok, "billing-agent runs code", body)
    ok, body = run_ok(r, "print('r')")
    t.check(ok, "report-agent runs code", body)
    ok, body = run_ok(d, "print('d')")
    t.check(ok, "the single token still works", body)
    callers = [a.get("caller") for a in srv.audit_lines() if a.get("audit") == "exec"]
    t.check(callers == ["billing-agent", "report-agent", "default"],
            "each audit line names its caller (the single token's is \"default\")", callers)

    # ---- one 401 for every failure ---------------------------------------
    def post_as(token, sid=None):
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "MCP-Protocol-Version": "2025-11-25"}
        if token:
            h["Authorization"] = "Bearer " + token
        if sid:
            h["Mcp-Session-Id"] = sid
        return srv.request("POST", "/mcp", json.dumps(
            {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}), h)

    unknown = post_as("tok-nobody")
    missing = post_as(None)
    hashed = post_as(sha(TOK["billing-agent"]))
    # report-agent's token with billing-agent's session: the id is genuine,
    # but not this caller's.
    foreign = post_as(TOK["report-agent"], b.sid)
    own = post_as(TOK["billing-agent"], b.sid)
    t.check(own[0] == 200, "a session continues with its own caller's token", own[:1])
    t.check(all(x[0] == 401 for x in (unknown, missing, hashed, foreign)),
            "unknown token, no token, the hash as a token, another caller's session: 401",
            [x[0] for x in (unknown, missing, hashed, foreign)])
    t.check(len({x[2] for x in (unknown, missing, hashed, foreign)}) == 1,
            "... all with the same body", [x[2] for x in (unknown, missing, hashed, foreign)])
    # Nor can it end the session.
    h = {"X-MCP-AUTH": TOK["report-agent"], "Mcp-Session-Id": b.sid}
    st, _, body = srv.request("DELETE", "/mcp", None, h)
    t.check(st == 401, "another caller cannot DELETE the session", (st, body))
    t.check(run_ok(b)[0], "the session still works for its caller")

    # ---- no token or hash in the log -------------------------------------
    log = srv.drain_stderr()
    leaked = [s for s in list(TOK.values()) + [SINGLE] + [sha(v) for v in TOK.values()]
              if s in log]
    t.check(not leaked, "no token and no token hash appears in the log", leaked)

    # ---- removal on reload ------------------------------------------------
    write_policy(tokens.path, "[{\"caller\": ")  # half written: the old file stays
    time.sleep(1.1)
    t.check(run_ok(r)[0], "a bad new tokens file keeps the old one")
    t.check("was not reloaded" in srv.drain_stderr(), "the bad file is logged")
    tokens.write(["billing-agent"])
    t0 = time.time()
    gone = wait_until(lambda: post_as(TOK["report-agent"], r.sid)[0] == 401, timeout=10,
                      interval=0.1)
    took = time.time() - t0
    # The timeout only guards against a hang (no wall-clock threshold under
    # the shared load); test_revoke.py checks what the token opened ends.
    t.check(gone, "a removed token is refused, its session included", took)
    t.check(run_ok(b)[0], "the remaining caller is unaffected")
finally:
    srv.stop()

# ---- a tokens file runs could read is refused -----------------------------
inside = os.path.join(work, "tokens.json")
shutil.copy(tokens.path, inside)
bad = HttpServer({"MCP_EXEC_AUTH_TOKENS_FILE": inside, "MCP_EXEC_WORKDIR_BASE": work},
                 expect_start=False)
try:
    rc = bad.proc.wait(timeout=120)
    err = bad.drain_stderr()
    landlock = "Landlock is unavailable" not in err
    t.check(not landlock or (rc == 78 and "lies where runs can read it" in err),
            "a tokens file beneath the workdir base is refused at start (exit 78)",
            (rc, err[-300:]))
finally:
    bad.stop()

scratch.remove()
t.done()
