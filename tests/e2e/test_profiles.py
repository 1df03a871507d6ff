"""Profiles and fair shares end to end over HTTP with the real binary and
named tokens: each caller's tools/list and tools/call follow its profile's
tools (a caller no profile matches sees exec alone); a profile's timeout and
memory lower the server's; a caller with max_queued 2 that sends 10 calls
gets 2 queued and 8 busy errors while another caller's call still enters the
queue; waiting callers are served round-robin; runs_per_minute refuses with
a retry-after; every audit line carries caller and profile; /metrics counts
runs by profile; a reload that drops a tool from a profile hides it.

Runs in the warm mode MCPX_TEST_WARM selects (cold, auto)."""
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading

from egress_fixture import Upstream, write_policy
from mcpx_harness import (Failures, HttpServer, McpHttpClient, structured, tool_error_text,
                          wait_until)

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-profiles-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")  # where runs live (readable by runs)
admin = os.path.join(tmp, "admin")  # tokens, policy, sources (not)
os.mkdir(work, 0o711)
os.mkdir(admin, 0o755)
tokens_file = os.path.join(admin, "tokens.json")
policy_file = os.path.join(admin, "policy.json")

CALLERS = ["billing-agent", "report-agent", "rate-agent", "blocker-agent", "other-agent"]
TOK = {c: "tok-" + c + "-" + os.urandom(8).hex() for c in CALLERS}
write_policy(tokens_file, [{"caller": c, "token_sha256": hashlib.sha256(TOK[c].encode()).hexdigest()}
                           for c in CALLERS])
for name, body in {"get_invoice.py": "def handler(args, ctx):\n    return {'n': 1}\n",
                   "list_reports.py": "def handler(args, ctx):\n    return {'reports': []}\n"}.items():
    with open(os.path.join(admin, name), "w") as f:
        f.write(body)


up = Upstream()
URL = f"http://127.0.0.1:{up.port}/"


def policy(report_tools=("list_*",)):
    return {
        "egress": [{"name": "local", "url_prefix": URL, "allow_cidrs": ["127.0.0.1/32"]}],
        "functions": [
            {"name": "get_invoice", "description": "an invoice", "source_file":
             os.path.join(admin, "get_invoice.py"), "input_schema": {"type": "object"},
             "callable_from_exec": True},
            {"name": "list_reports", "description": "the reports", "source_file":
             os.path.join(admin, "list_reports.py"), "input_schema": {"type": "object"}},
        ],
        "profiles": [
            {"name": "billing", "callers": ["billing-*"], "tools": ["exec", "get_*"],
             "exec": {"egress": ["local"]},
             "limits": {"timeout_s": 2, "memory_mb": 64, "max_queued": 2}},
            {"name": "reports", "callers": ["report-agent"], "tools": list(report_tools)},
            {"name": "limited", "callers": ["rate-agent"], "tools": ["exec"],
             "limits": {"runs_per_minute": 2}},
        ],
    }


write_policy(policy_file, policy())
srv = HttpServer({"MCP_EXEC_AUTH_TOKENS_FILE": tokens_file, "MCP_EXEC_POLICY": policy_file,
                  "MCP_EXEC_WORKDIR_BASE": work, "MCP_EXEC_MAX_QUEUE": 16})


def client(caller):
    c = McpHttpClient(srv, token=TOK[caller])
    c.initialize()
    return c


def tool_names(c):
    st, _, body = c.post({"jsonrpc": "2.0", "id": 50, "method": "tools/list"})
    return sorted(x["name"] for x in body["result"]["tools"]) if st == 200 else st


def call_tool(c, name, args=None, rid=60):
    return c.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": name, "arguments": args or {}}})


def background(c, rid, code, out, timeout_s=None):
    args = {"code": code}
    if timeout_s:
        args["timeout_s"] = timeout_s

    def go():
        out[rid] = c.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": "exec", "arguments": args}}, timeout=400)
    th = threading.Thread(target=go)
    th.start()
    return th


def queue_depth():
    return srv.metric("mcp_exec_queue_depth")


try:
    c = {name: client(name) for name in CALLERS}

    # ---- tools follow the profile ----------------------------------------
    t.check(tool_names(c["billing-agent"]) == ["exec", "get_invoice"],
            "billing sees exec and get_*", tool_names(c["billing-agent"]))
    t.check(tool_names(c["report-agent"]) == ["list_reports"],
            "reports sees list_* only (no exec)", tool_names(c["report-agent"]))
    t.check(tool_names(c["other-agent"]) == ["exec"],
            "a caller no profile matches sees exec alone", tool_names(c["other-agent"]))
    st, _, body = call_tool(c["report-agent"], "exec", {"code": "print(1)"})
    t.check(st == 200 and body.get("error", {}).get("code") == -32602 and
            "Unknown tool: exec" in body["error"]["message"],
            "a tool outside the profile is answered as an unknown tool", body)
    st, _, body = call_tool(c["other-agent"], "get_invoice")
    t.check(body.get("error", {}).get("message") == "Unknown tool: get_invoice",
            "an unmatched caller cannot call a function", body)
    st, _, body = call_tool(c["billing-agent"], "get_invoice")
    t.check(st == 200 and structured(body) == {"n": 1}, "billing calls get_invoice", body)
    st, _, body = call_tool(c["report-agent"], "list_reports")
    t.check(st == 200 and structured(body) == {"reports": []}, "reports calls list_reports", body)
    # exec code cannot reach around the filter with mcpx.call either.
    code = ("import mcpx\ntry:\n    print(mcpx.call('get_invoice'))\n"
            "except mcpx.ToolError as e:\n    print('refused:', e)\n")
    st, _, body = c["billing-agent"].call(code)
    t.check((structured(body) or {}).get("stdout") == "{'n': 1}\n",
            "billing's code may mcpx.call get_invoice", body)
    st, _, body = c["other-agent"].call(code)
    out = (structured(body) or {}).get("stdout", "")
    t.check(out.startswith("refused:") and "get_invoice" in out,
            "an unmatched caller's code may not mcpx.call it", body)

    # ---- exec's description follows the profile ---------------------------
    def exec_desc(cl):
        st, _, body = cl.post({"jsonrpc": "2.0", "id": 51, "method": "tools/list"})
        d = [x for x in body["result"]["tools"] if x["name"] == "exec"] if st == 200 else []
        return d[0]["description"] if d else ""

    bd, rd, od = (exec_desc(c[n]) for n in ("billing-agent", "rate-agent", "other-agent"))
    t.check(URL in bd and "mcpx.fetch" in bd and "get_invoice" in bd,
            "billing's exec description names its profile's egress and the function its code "
            "may call", bd[-600:])
    t.check("timeout 2s by default, at most 2s" in bd and "memory 64 MiB" in bd and
            "at most 2 of your calls waiting at once" in bd,
            "... and its profile's lower limits and share", bd)
    t.check(URL not in rd and "no network access" in rd and
            "at most 2 runs started per minute" in rd and rd != bd,
            "rate-agent's (a profile without exec: the top-level section) differs", rd)
    t.check(URL not in od and "no network access" in od and "get_invoice" not in od and
            "Your share" not in od,
            "a caller no profile matches sees the top-level exec section's, no functions", od)

    # ---- egress follows the profile --------------------------------------
    fetch = ("import mcpx\ntry:\n    print(mcpx.fetch(%r).status)\n"
             "except mcpx.Denied as e:\n    print('denied', e.reason)\n" % (URL + "echo"))
    st, _, body = c["billing-agent"].call(fetch)
    t.check((structured(body) or {}).get("stdout") == "200\n",
            "billing's code reaches its profile's egress rule", body)
    st, _, body = c["other-agent"].call(fetch)
    t.check((structured(body) or {}).get("stdout", "").startswith("denied"),
            "an unmatched caller's code gets the top-level exec grant (none here)", body)
    lines = [a for a in srv.audit_lines() if a.get("audit") == "egress"]
    t.check(any(a.get("caller") == "billing-agent" and a.get("profile") == "billing" and
                a.get("decision") == "allowed" for a in lines),
            "the egress audit line carries caller and profile", lines[-2:])

    # ---- limits lowered ---------------------------------------------------
    st, _, body = c["billing-agent"].call("import time; time.sleep(30); print('slept')",
                                          timeout_s=60)
    out = structured(body) or {}
    t.check(out.get("limit") == "timeout" and out.get("timed_out"),
            "billing's timeout_s 2 ends a run that asked for 60", out)
    st, _, body = c["other-agent"].call("import time; time.sleep(3); print('slept')", timeout_s=60)
    t.check((structured(body) or {}).get("stdout") == "slept\n",
            "... while another caller's same run finishes", body)
    st, _, body = c["billing-agent"].call("b = bytearray(200 << 20); print(len(b))")
    out = structured(body) or {}
    t.check(out.get("exit_code") != 0 and (out.get("limit") == "memory" or
                                           "MemoryError" in out.get("stderr", "")),
            "billing's memory_mb 64 refuses 200 MiB", out)
    st, _, body = c["other-agent"].call("b = bytearray(200 << 20); print(len(b))")
    t.check((structured(body) or {}).get("exit_code") == 0,
            "... which the server's own limit allows another caller", body)

    # ---- fair shares ------------------------------------------------------
    res, threads = {}, []
    threads.append(background(c["blocker-agent"], 100, "import time; time.sleep(300)", res,
                              timeout_s=300))
    wait_until(lambda: srv.metric("mcp_exec_running") == 1, timeout=60)
    for i in range(10):
        threads.append(background(c["billing-agent"], 200 + i, f"print('billing {i}')", res))
    wait_until(lambda: sum(1 for k in range(200, 210) if k in res) >= 8, timeout=60)
    wait_until(lambda: queue_depth() == 2, timeout=60)
    busy = [k for k in range(200, 210) if k in res and
            "server busy for this caller" in (tool_error_text(res[k][2]) or "")]
    t.check(len(busy) == 8 and queue_depth() == 2,
            "billing (max_queued 2) sends 10: 2 queued, 8 busy errors",
            (len(busy), queue_depth(), [tool_error_text(res[k][2]) for k in busy[:1]]))
    threads.append(background(c["other-agent"], 300, "print('other')", res))
    t.check(wait_until(lambda: queue_depth() == 3, timeout=60),
            "another caller's call still enters the queue", queue_depth())
    # The slot frees: the queue holds billing, billing, other (in that
    # order); round-robin serves billing, other, billing.
    c["blocker-agent"].post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": 100}})
    for th in threads:
        th.join(300)
    order = [a.get("caller") for a in srv.audit_lines()
             if a.get("audit") == "exec" and a.get("status") == "ok" and
             a.get("caller") in ("billing-agent", "other-agent") and a.get("queue_wait_ms", 0) > 0]
    t.check(order[-3:] == ["billing-agent", "other-agent", "billing-agent"],
            "waiting callers are served round-robin, not first-come", order)

    # ---- runs per minute --------------------------------------------------
    r = c["rate-agent"]
    oks = [structured(r.call("print(1)")[2]) for _ in range(2)]
    st, _, body = r.call("print(1)")
    err = tool_error_text(body) or ""
    m = re.search(r"retry after (\d+) s", err)
    t.check(all(o and o.get("exit_code") == 0 for o in oks) and m and 1 <= int(m.group(1)) <= 30,
            "runs_per_minute 2: two pass, the third is refused with a retry-after", (oks, err))

    # ---- audit and metrics ------------------------------------------------
    lines = [a for a in srv.audit_lines() if a.get("audit") == "exec"]
    prof = {(a.get("caller"), a.get("profile")) for a in lines}
    t.check(("billing-agent", "billing") in prof and ("report-agent", "reports") in prof and
            ("other-agent", None) in prof and all("profile" in a for a in lines),
            "every audit line carries caller and profile (null without one)", sorted(map(str, prof)))
    t.check(srv.metric('mcp_exec_profile_runs_total{profile="billing",outcome="busy"}') == 8,
            "/metrics counts billing's 8 refusals by profile",
            srv.metric('mcp_exec_profile_runs_total{profile="billing",outcome="busy"}'))
    t.check(srv.metric('mcp_exec_profile_runs_total{profile="limited",outcome="rate_limited"}') == 1,
            "... and the rate-limited one", None)
    st, _, body = srv.request("GET", "/metrics")
    t.check(b"billing-agent" not in body, "/metrics never names a caller")

    # ---- reload -----------------------------------------------------------
    write_policy(policy_file, policy(report_tools=("exec",)))
    t.check(wait_until(lambda: tool_names(c["report-agent"]) == ["exec"], timeout=30),
            "a reload changes what a profile's callers see", tool_names(c["report-agent"]))
finally:
    srv.stop()

shutil.rmtree(tmp, ignore_errors=True)
t.done()
