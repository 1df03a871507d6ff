"""Upstream MCP servers' tools called from run code, end to end with the real
binary and real Streamable HTTP MCP servers on loopback
(mcp_upstream_fixture.py): mcpx.call returns structuredContent or the joined
text, call_raw the whole result, mcpx.tools/describe and the mcpx.servers
stubs discover; isError and JSON-RPC errors raise ToolError; a tool the
globs deny, an upstream the run may not use, a spent budget, an answer over
max_response_bytes, an upstream that is down, killed mid-call, refuses the
credential or lives at a loopback address its allow_cidrs do not include
raise Denied with the reason; timeout_s ends a slow call and the upstream
hears notifications/cancelled, as it does when the run ends first; a
restarted upstream (its sessions gone) is reconnected; list_changed is
picked up; the credential reaches the upstream and never the run, the
logs or /metrics; each call is audited without its arguments.

Runs over stdio and HTTP in the warm mode MCPX_TEST_WARM selects."""
import json
import os
import re
import select
import signal
import subprocess
import threading
import time
import uuid

from egress_fixture import closed_port, write_policy
from mcp_upstream_fixture import McpUpstream
from mcpx_harness import (PYTHON, Failures, HttpServer, McpHttpClient, ScratchDir, StdioServer,
                          audits, base_env, structured, warm_mode)

t = Failures()
scratch = ScratchDir("mcpx-upstreams-")
work = scratch.workdir()
secrets = scratch.secrets
SECRET = "up-" + uuid.uuid4().hex
secret_file = scratch.secret("token", SECRET)
wrong_file = scratch.secret("wrong", "not-the-token")
policy_file = os.path.join(secrets, "policy.json")

LOCAL = ["127.0.0.1/32"]
plain = McpUpstream()
sse = McpUpstream(sse=True)
slow = McpUpstream()
authed = McpUpstream(token=SECRET)
restarting = McpUpstream()
DEAD = closed_port()
# A process of its own, killed mid-call.
victim = subprocess.Popen([PYTHON, os.path.join(os.path.dirname(__file__),
                                                "mcp_upstream_fixture.py")],
                          stdout=subprocess.PIPE, text=True)
VICTIM_PORT = int(victim.stdout.readline())


def upstreams():
    return [
        {"name": "fx", "url": plain.url, "allow_cidrs": LOCAL,
         "tools": {"deny": ["secret_*"]}, "max_response_bytes": 4096},
        {"name": "fs", "url": sse.url, "allow_cidrs": LOCAL, "max_calls_per_run": 3},
        {"name": "slowup", "url": slow.url, "allow_cidrs": LOCAL, "timeout_s": 2,
         "tools": {"allow": ["slow", "echo"]}},
        {"name": "auth", "url": authed.url, "allow_cidrs": LOCAL,
         "credential": {"header": "Authorization", "secret_file": secret_file,
                        "prefix": "Bearer "}},
        {"name": "badauth", "url": authed.url, "allow_cidrs": LOCAL,
         "credential": {"header": "Authorization", "secret_file": wrong_file,
                        "prefix": "Bearer "}},
        {"name": "dead", "url": f"http://127.0.0.1:{DEAD}/mcp", "allow_cidrs": LOCAL},
        {"name": "nocidr", "url": plain.url},
        {"name": "restart", "url": restarting.url, "allow_cidrs": LOCAL},
        {"name": "victim", "url": f"http://127.0.0.1:{VICTIM_PORT}/mcp", "allow_cidrs": LOCAL},
        {"name": "other", "url": plain.url, "allow_cidrs": LOCAL},
    ]


GRANTED = ["fx", "fs", "slowup", "auth", "badauth", "dead", "nocidr", "restart", "victim"]
fn_source = os.path.join(secrets, "via_other.py")
with open(fn_source, "w") as f:
    f.write("import mcpx\n"
            "def handler(args, ctx):\n"
            "    return {'echo': mcpx.call('other.echo', text=args['text'])}\n")
os.chmod(fn_source, 0o644)
FUNCTIONS = [{"name": "via_other", "description": "Echoes through upstream other.",
              "input_schema": {"type": "object", "properties": {"text": {"type": "string"}},
                               "required": ["text"]},
              "source_file": fn_source, "upstreams": ["other"]}]
write_policy(policy_file, {"upstreams": upstreams(), "exec": {"upstreams": GRANTED},
                           "functions": FUNCTIONS})
ENV = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work,
               MCP_EXEC_PRELOAD="json")
MODE = warm_mode(ENV)
print("   warm mode:", MODE)

PRELUDE = """
import json, os, mcpx
def attempt(name, **args):
    try:
        return "ok %r" % (mcpx.call(name, **args),)
    except mcpx.Denied as e:
        return "denied %s %s: %s" % (e.reason, isinstance(e, PermissionError), e)
    except mcpx.ToolError as e:
        return "toolerror %s" % e
"""


def lines(sc):
    return (sc or {}).get("stdout", "").splitlines()


def grow_then_call(grow, late):
    """Run code: calls grow (which adds the tool late upstream), waits until
    mcpx.tools() lists late (30 s at most), then calls it."""
    return PRELUDE + f"""
print(attempt({grow!r}))
import time
for i in range(300):
    if any(t["name"] == {late!r} for t in mcpx.tools()):
        break
    time.sleep(0.1)
print(attempt({late!r}))
"""


def wait_connected(call):
    """Until every upstream that can connect has (the lists load at start)."""
    want = ["auth", "fs", "fx", "restart", "slowup"] + (["victim"] if victim.poll() is None else [])
    deadline = time.time() + 60
    while time.time() < deadline:
        sc = call(PRELUDE + "print(sorted({t['name'].split('.')[0] for t in mcpx.tools()}))")
        if lines(sc) and lines(sc)[-1] == str(want):
            return True
        time.sleep(0.2)
    return False


def battery(call, tag):
    t.check(wait_connected(call), f"[{tag}] the upstreams that answer are connected")

    sc = call(PRELUDE + """
print(mcpx.call("fx.echo", text="hello"))
print(mcpx.call("fx.add", a=2, b=3))
print(mcpx.call("fs.add", a=1, b=1))
print(mcpx.call("fx.two_blocks"))
raw = mcpx.call_raw("fx.image")
print(raw["content"][0]["type"], raw["content"][0]["mimeType"])
print(mcpx.call_raw("fx.fail")["isError"])
""")
    t.check(lines(sc) == ["hello", "{'sum': 5}", "{'sum': 2}", "one", "two", "image image/png",
                          "True"],
            f"[{tag}] mcpx.call gives structuredContent or the joined text (JSON and SSE "
            "answers); call_raw the whole result", sc)

    sc = call(PRELUDE + """
print(attempt("fx.fail"))
print(attempt("fx.rpc_error"))
print(attempt("fx.nosuch"))
""")
    t.check(lines(sc) == ["toolerror it broke: no such invoice",
                          "toolerror fx.rpc_error: bad params here",
                          "denied no_tool True: upstream fx has no tool named nosuch"],
            f"[{tag}] isError and a JSON-RPC error raise ToolError; an unknown tool is denied",
            sc)

    sc = call(PRELUDE + """
names = [t["name"] for t in mcpx.tools()]
print("fx.secret_admin" in names, "fx.echo" in names, "other.echo" in names)
print([t["name"] for t in mcpx.tools("SOMETHING that matches nothing")])
found = [t["name"] for t in mcpx.tools("ADDS two")]
print("fx.add" in found and "fs.add" in found and all(n.endswith(".add") for n in found))
d = mcpx.describe("fx.add")
print(d["description"], d["input_schema"]["required"], d["output_schema"]["type"])
print(sorted(t["name"] for t in mcpx.tools() if t["name"].startswith("slowup.")))
from mcpx.servers import fx
print(fx.add(a=40, b=2), fx.echo.__doc__.splitlines()[0])
import inspect
print(inspect.signature(fx.add))
print(attempt("fx.secret_admin"))
print(attempt("other.echo"))
print(attempt("slowup.add"))
""")
    t.check(lines(sc) == ["False True False", "[]", "True",
                          "Adds two numbers; structured. ['a', 'b'] object",
                          "['slowup.echo', 'slowup.slow']",
                          "{'sum': 42} Echoes the text back.", "(*, a, b)",
                          "denied not_allowed True: fx.secret_admin is not allowed by the policy "
                          "(tools of upstream fx)",
                          "denied not_allowed True: upstream other is not one this run may call",
                          "denied not_allowed True: slowup.add is not allowed by the policy "
                          "(tools of upstream slowup)"],
            f"[{tag}] discovery lists what the run may call; deny globs, allow globs and the "
            "grant refuse the rest", sc)

    sc = call(PRELUDE + """
for i in range(5):
    print(attempt("fs.echo", text=str(i)))
""")
    t.check(lines(sc)[:3] == ["ok '0'", "ok '1'", "ok '2'"] and
            all(l.startswith("denied budget True: this run made its 3 calls of upstream fs")
                for l in lines(sc)[3:]) and len(lines(sc)) == 5,
            f"[{tag}] max_calls_per_run holds per run", sc)
    sc = call(PRELUDE + "print(attempt('fs.echo', text='again'))")
    t.check(lines(sc) == ["ok 'again'"], f"[{tag}] the budget is per run", sc)

    sc = call(PRELUDE + """
print(attempt("fx.huge", n=100))
print(attempt("fx.huge", n=100000))
""")
    t.check(lines(sc) == ["ok '" + "x" * 100 + "'",
                          "denied too_large True: fx.huge: the answer is larger than 4096 bytes "
                          "(max_response_bytes)"],
            f"[{tag}] max_response_bytes caps the answer", sc)

    before = len(slow.cancelled)
    sc = call(PRELUDE + "print(attempt('slowup.slow', seconds=60))")
    t.check(lines(sc) and lines(sc)[0].startswith("toolerror slowup.slow: no answer in 2 s"),
            f"[{tag}] timeout_s ends a slow call with a ToolError", sc)
    t.check(slow.wait(lambda: len(slow.cancelled) > before, 30),
            f"[{tag}] the upstream hears notifications/cancelled for the timed-out call",
            slow.cancelled)

    sc = call(PRELUDE + """
print(attempt("auth.whoami"))
print(any("%s" in v for v in os.environ.values()))
print(attempt("badauth.echo", text="x").split(":")[0])
""" % SECRET[:12])
    t.check(lines(sc)[0] == "ok {'authorized': True}" and lines(sc)[1] == "False" and
            lines(sc)[2] == "denied upstream_down True" and SECRET not in json.dumps(sc),
            f"[{tag}] the credential reaches the upstream, not the run; a wrong one is refused",
            sc)
    t.check(all(a is None or a == "Bearer " + SECRET or a == "Bearer not-the-token"
                for a in authed.raw_auth) and "Bearer " + SECRET in authed.raw_auth,
            f"[{tag}] the upstream saw the credential header as configured")

    sc = call(PRELUDE + """
print(attempt("dead.echo", text="x").split(":")[0])
r = attempt("nocidr.echo", text="x")
print(r.split(":")[0], "loopback" in r)
""")
    t.check(lines(sc) == ["denied upstream_down True", "denied upstream_down True True"],
            f"[{tag}] an upstream that is down, or at an address its allow_cidrs do not "
            "include, is refused with the reason", sc)

    restarting.restart()
    sc = call(PRELUDE + "print(attempt('restart.echo', text='after restart'))")
    t.check(lines(sc) == ["ok 'after restart'"],
            f"[{tag}] an upstream that restarted (sessions gone) is reconnected and the call "
            "goes through", sc)

    sc = call(grow_then_call("fs.grow", "fs.late"))
    t.check(lines(sc) == ["ok 'grown'", "ok 'late tool'"],
            f"[{tag}] notifications/tools/list_changed refreshes the tool list", sc)

    t.check(plain.wait(lambda: plain.listeners > 0, 30),
            f"[{tag}] the server keeps a GET event stream open to an upstream that announces "
            "list changes")
    sc = call(grow_then_call("fx.grow_quiet", "fx.quiet"))
    t.check(lines(sc) == ["ok 'grown quietly'", "ok 'quiet tool'"],
            f"[{tag}] list_changed on the GET event stream refreshes the tool list", sc)

    # The run ends (its timeout) while its call waits: the upstream hears it.
    before = len(slow.cancelled)
    sc = call(PRELUDE + "print(attempt('slowup.slow', seconds=0.5)); "
              "mcpx.call('slowup.slow', seconds=60)", timeout_s=1)
    t.check(slow.wait(lambda: len(slow.cancelled) > before, 30),
            f"[{tag}] a run that ends mid-call cancels it upstream", (sc, slow.cancelled))
    slow.release()
    time.sleep(0.1)
    slow._release.clear()


def check_logs(err, tag):
    ups = audits(err, "upstream")
    t.check(any(a["upstream"] == "fx" and a["tool"] == "echo" and a["status"] == "ok" and
                a["decision"] == "allowed" and a["run_id"] for a in ups) and
            any(a["decision"] == "denied" and a["reason"] == "budget" for a in ups) and
            any(a["reason"] == "not_allowed" and a["tool"] == "secret_admin" for a in ups) and
            any(a["status"] == "timeout" for a in ups),
            f"[{tag}] every call has an audit line (allowed and denied, with the reason)",
            ups[:5])
    t.check(all("caller" in a and "profile" in a for a in ups),
            f"[{tag}] every upstream audit line carries caller and profile", ups[:2])
    t.check(SECRET not in err and "hello" not in "".join(json.dumps(a) for a in ups),
            f"[{tag}] neither the credential nor arguments reach the logs")


# ---- the upstream killed mid-call (once: it does not come back) ----
def killed_mid_call(call):
    code = PRELUDE + """
print(mcpx.call("victim.echo", text="alive"))
print(attempt("victim.slow", seconds=60).split(":")[0])
"""
    out = {}
    th = threading.Thread(target=lambda: out.update(sc=call(code)))
    th.start()
    # Killed once its slow call is waiting there.
    if select.select([victim.stdout], [], [], 60)[0] and victim.stdout.readline().strip() == "hang":
        victim.send_signal(signal.SIGKILL)
    th.join(60)
    t.check(lines(out.get("sc"))[-1:] == ["denied upstream_down True"] and
            lines(out.get("sc"))[0] == "alive",
            "an upstream killed mid-call gives Denied (upstream_down), not a hang", out)


# ---- stdio ----
s = StdioServer(ENV)
s.initialize()


def stdio_call(code, **args):
    return structured(s.call(code, **args)) or {}


battery(stdio_call, "stdio")
killed_mid_call(stdio_call)

exec_tool = next(x for x in s.request("tools/list")["result"]["tools"] if x["name"] == "exec")
desc = exec_tool["description"]
t.check("Upstream MCP servers" in desc and "mcpx.tools(query)" in desc and
        re.search(r"- fx: \d+ tools \(server fixture-upstream\)", desc) and "- dead: not connected yet" in desc
        and "- other" not in desc and "inputSchema" not in desc and "Echoes the text" not in desc
        and exec_tool["annotations"]["openWorldHint"] is True,
        "exec's description names each upstream code may use with its tool count, not schemas",
        desc[-700:])
r = s.request("tools/call", {"name": "via_other", "arguments": {"text": "from a function"}})
t.check(structured(r) == {"echo": "from a function"},
        "a function calls the upstreams of its own entry (exec may not call that one)", r)
s.close()
check_logs(s.stderr_text(), "stdio")

# ---- HTTP ----
TOKEN = "upstream-token-0123456789abcdef"
srv = HttpServer(dict(ENV, MCP_EXEC_AUTH_TOKEN=TOKEN))
c = McpHttpClient(srv, token=TOKEN)
c.initialize()


def http_call(code, **args):
    srv.drain_stderr()  # the harness reads stderr only when asked: keep the pipe empty
    return c.call_structured(code, **args)


battery(http_call, "http")
st, _, m = srv.request("GET", "/metrics")
m = m.decode()
t.check('mcp_exec_upstream_calls_total{upstream="fx",outcome="ok"}' in m and
        'mcp_exec_upstream_calls_total{upstream="fs",outcome="denied"}' in m and
        'mcp_exec_upstream_up{upstream="fx"} 1' in m and
        'mcp_exec_upstream_up{upstream="dead"} 0' in m and
        "mcp_exec_upstream_call_duration_seconds_count" in m and SECRET not in m,
        "/metrics counts upstream calls by outcome, their latency, and an up gauge per upstream",
        [l for l in m.splitlines() if "upstream" in l][:12])
st, _, body = srv.request("GET", "/readyz")
t.check(st == 200, "/readyz does not depend on the upstreams (one is down)", (st, body))
srv.stop()
check_logs(srv.drain_stderr(), "http")

# ---- the gateway: exposed upstreams' tools are tools of this server ----
gw_policy = os.path.join(secrets, "gateway.json")
gw_sse = McpUpstream(sse=True)
write_policy(gw_policy, {"upstreams": [
    {"name": "gw", "url": plain.url, "allow_cidrs": LOCAL, "expose": True,
     "tools": {"deny": ["secret_*", "slow"]}},
    {"name": "gws", "url": gw_sse.url, "allow_cidrs": LOCAL, "expose": True,
     "tools": {"allow": ["grow", "late", "echo"]}},
    {"name": "hidden", "url": plain.url, "allow_cidrs": LOCAL}]})
g = StdioServer(dict(ENV, MCP_EXEC_POLICY=gw_policy))
init = g.initialize()


def gw_names():
    return sorted(x["name"] for x in g.request("tools/list")["result"]["tools"])


deadline = time.time() + 60
while time.time() < deadline and "gws.echo" not in gw_names():
    time.sleep(0.2)
names = gw_names()
t.check("gw.add" in names and "gw.image" in names and "gws.echo" in names and "exec" in names
        and "gw.secret_admin" not in names and "gw.slow" not in names and "gws.add" not in names
        and not any(n.startswith("hidden.") for n in names),
        "exposed upstreams' allowed tools are listed as <upstream>.<tool>, others not", names)
tool = next(x for x in g.request("tools/list")["result"]["tools"] if x["name"] == "gw.add")
t.check(tool["inputSchema"]["required"] == ["a", "b"] and tool["outputSchema"]["type"] == "object"
        and tool["description"] == "Adds two numbers; structured.",
        "an exposed tool keeps the upstream's description and schemas", tool)
r = g.request("tools/call", {"name": "gw.add", "arguments": {"a": 20, "b": 22}})
t.check(r["result"] == {"content": [{"type": "text", "text": '{"sum": 42}'}],
                        "structuredContent": {"sum": 42}},
        "a gateway call returns the upstream's result unchanged", r)
answers = []
for i in range(40):
    answers.append(g.request("tools/call", {"name": "gw.echo", "arguments": {"text": str(i)}}))
    if answers[-1] is None:
        break
t.check([((a or {}).get("result") or {}).get("content") for a in answers] ==
        [[{"type": "text", "text": str(i)}] for i in range(40)] and g.proc.poll() is None,
        "forty gateway calls in a row all answer, and the server lives (each call is freed "
        "once)", [a for a in answers if not a or "result" not in a][:2])
r = g.request("tools/call", {"name": "gw.fail", "arguments": {}})
t.check(r["result"].get("isError") is True and
        r["result"]["content"][0]["text"] == "it broke: no such invoice",
        "an upstream tool error reaches the client unchanged", r)
r = g.request("tools/call", {"name": "gw.image", "arguments": {}})
t.check(r["result"]["content"][0]["type"] == "image", "images pass through the gateway", r)
r = g.request("tools/call", {"name": "gw.secret_admin", "arguments": {}})
t.check(r["result"].get("isError") is True and "not allowed" in r["result"]["content"][0]["text"],
        "a denied tool cannot be called through the gateway", r)
r = g.request("tools/call", {"name": "hidden.echo", "arguments": {"text": "x"}})
t.check("error" in r or r["result"].get("isError") is True,
        "an upstream without expose is not reachable through the gateway", r)
g.notes.clear()
r = g.request("tools/call", {"name": "gws.grow", "arguments": {}})
deadline = time.time() + 60
while time.time() < deadline and "gws.late" not in gw_names():
    time.sleep(0.2)
t.check("gws.late" in gw_names() and
        any(n.get("method") == "notifications/tools/list_changed" for n in g.notes),
        "an upstream's list_changed reaches the client as notifications/tools/list_changed",
        [n.get("method") for n in g.notes])
g.close()
gw_audits = audits(g.stderr_text(), "upstream")
t.check(any(a["upstream"] == "gw" and a["tool"] == "add" and a["run_id"] is None and
            a["status"] == "ok" for a in gw_audits),
        "gateway calls are audited (without a run id)", gw_audits[:3])

# ---- a bad upstreams entry stops the start, naming the problem ----
bad = os.path.join(secrets, "bad.json")
write_policy(bad, {"upstreams": [{"name": "Bad-Name", "url": plain.url}]})
p = subprocess.run([os.environ["MCPX_BIN"]], env=dict(ENV, MCP_EXEC_POLICY=bad),
                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
t.check(p.returncode != 0 and "/upstreams/0/name" in p.stderr,
        "a bad upstream entry refuses to start, naming the JSON pointer",
        (p.returncode, p.stderr[-300:]))

victim.kill()
victim.wait()
scratch.remove()
t.done()
