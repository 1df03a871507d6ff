"""A second mcp-exec as an upstream MCP server of the first: the inner one
serves HTTP on loopback with a token (X-MCP-AUTH) and a policy with a
function; the outer one (stdio) lists it in "upstreams" with that token from
a secret file, and exposes it.

  - discovery: mcpx.tools / describe show the inner server's exec and its
    function with their schemas; `from mcpx.servers import inner` stubs;
  - a run of the outer server calls the inner exec through mcpx.call and
    gets its structuredContent (stdout, exit_code), and the inner function's
    structured result;
  - the credential: the inner server accepts the outer's calls (it refuses
    any request without its token, so the header reached it), an entry with
    a wrong token file is refused (Denied upstream_down), and neither the
    outer run nor the inner run sees the token (environment, the secret
    file, the result), nor do the outer server's logs;
  - an inner run's error (exit code 3) comes back as structured data; an
    exec argument the inner server refuses raises ToolError;
  - cancellation: a call past its timeout_s, and a call whose outer run
    ends, cancel the inner run (the inner server audits it as cancelled);
  - list_changed: a new function in the inner policy reaches the outer run's
    mcpx.tools and the outer server's MCP client (notifications/tools/
    list_changed), through the inner server's GET stream;
  - gateway: the outer server's client calls inner.double directly and gets
    the inner result unchanged.

Runs in the warm mode MCPX_TEST_WARM selects (both servers)."""
import json
import os
import time
import uuid

from egress_fixture import write_policy
from mcpx_harness import (Failures, HttpServer, ScratchDir, StdioServer, base_env, structured,
                          wait_until, warm_mode)

t = Failures()
scratch = ScratchDir("mcpx-inner-")
secrets = scratch.secrets
TOKEN = "inner-" + uuid.uuid4().hex
token_file = scratch.secret("inner-token", TOKEN)
wrong_file = scratch.secret("wrong-token", "not-the-inner-token-0123456789")
workdir = scratch.workdir


def function(name, expr, desc):
    src = os.path.join(secrets, name + ".py")
    with open(src, "w") as f:
        f.write("def handler(args, ctx):\n    return {'value': %s}\n" % expr)
    os.chmod(src, 0o644)
    return {"name": name, "description": desc, "source_file": src,
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}},
                             "required": ["n"], "additionalProperties": False},
            "output_schema": {"type": "object", "properties": {"value": {"type": "integer"}},
                              "required": ["value"]}}


inner_policy = os.path.join(secrets, "inner.json")
DOUBLE = function("double", "args['n'] * 2", "Doubles n.")
write_policy(inner_policy, {"functions": [DOUBLE]})
inner = HttpServer(base_env(MCP_EXEC_AUTH_TOKEN=TOKEN, MCP_EXEC_POLICY=inner_policy,
                            MCP_EXEC_WORKDIR_BASE=workdir("inner-runs")))
url = f"http://127.0.0.1:{inner.port}/mcp"

outer_policy = os.path.join(secrets, "outer.json")
write_policy(outer_policy, {"upstreams": [
    {"name": "inner", "url": url, "allow_cidrs": ["127.0.0.1/32"], "expose": True,
     "credential": {"header": "X-MCP-AUTH", "secret_file": token_file}},
    {"name": "wrong", "url": url, "allow_cidrs": ["127.0.0.1/32"],
     "credential": {"header": "X-MCP-AUTH", "secret_file": wrong_file}},
    {"name": "innerslow", "url": url, "allow_cidrs": ["127.0.0.1/32"], "timeout_s": 2,
     "tools": {"allow": ["exec"]},
     "credential": {"header": "X-MCP-AUTH", "secret_file": token_file}}],
    "exec": {"upstreams": ["inner", "wrong", "innerslow"]}})
ENV = base_env(MCP_EXEC_POLICY=outer_policy, MCP_EXEC_WORKDIR_BASE=workdir("outer-runs"))
print("   warm mode:", warm_mode(ENV))
outer = StdioServer(ENV)
outer.initialize()

PRELUDE = """
import json, os, mcpx
def attempt(name, **args):
    try:
        return "ok %r" % (mcpx.call(name, **args),)
    except mcpx.Denied as e:
        return "denied %s" % e.reason
    except mcpx.ToolError as e:
        return "toolerror %s" % e
"""


def run(code, timeout_s=60):
    inner.drain_stderr()  # keep the inner server's stderr pipe empty
    return structured(outer.call(PRELUDE + code, timeout=180, timeout_s=timeout_s)) or {}


def lines(sc):
    return (sc or {}).get("stdout", "").splitlines()


def names(prefix="inner."):
    sc = run("print(json.dumps(sorted(t['name'] for t in mcpx.tools())))")
    try:
        return [n for n in json.loads(lines(sc)[-1]) if n.startswith(prefix)]
    except (IndexError, ValueError):
        return []


try:
    t.check(wait_until(lambda: names() == ["inner.double", "inner.exec"] and
                       names("innerslow.") == ["innerslow.exec"], 120),
            "the outer run lists the inner server's tools (exec, its function)", names())

    sc = run("""
d = mcpx.describe("inner.exec")
print(json.dumps([sorted(d["input_schema"]["properties"])[:3], "code" in d["input_schema"]["required"],
                  sorted(d["output_schema"]["properties"])[:3]]))
from mcpx.servers import inner
print(inner.double(n=21))
print(json.dumps(mcpx.describe("inner.double")["output_schema"]))
""")
    out = lines(sc)
    t.check(out[:1] and json.loads(out[0])[1] is True and "code" in json.loads(out[0])[0] and
            out[1:3] == ["{'value': 42}", json.dumps(DOUBLE["output_schema"])],
            "describe gives the inner exec's schemas; the stub calls the inner function", out)

    sc = run("""
r = mcpx.call("inner.exec", code="import os\\nprint(6 * 7)\\nprint(any('%s' in v for v in os.environ.values()))\\nprint(sorted(k for k in os.environ if 'AUTH' in k.upper()))")
print(json.dumps([r["stdout"], r["exit_code"]]))
r = mcpx.call("inner.exec", code="import sys\\nprint('bye')\\nsys.exit(3)")
print(json.dumps([r["stdout"], r["exit_code"]]))
print(attempt("inner.exec", code=5))
print(attempt("wrong.exec", code="print(1)"))
print(any("%s" in v for v in os.environ.values()))
try:
    open(%r).read()
    print("read the secret")
except OSError as e:
    print("secret file:", type(e).__name__)
""" % (TOKEN[:16], TOKEN[:16], token_file))
    out = lines(sc)
    t.check(out[:2] == [json.dumps(["42\nFalse\n[]\n", 0]), json.dumps(["bye\n", 3])],
            "the outer run calls the inner exec: its stdout and exit code (a failing run is "
            "data, not an error); the inner run sees no token", out)
    t.check(len(out) > 2 and out[2].startswith("toolerror ") and
            '/properties/code: type: 5 has type "integer", want "string"' in out[2],
            "arguments the inner server refuses raise ToolError with its message", out[2:3])
    t.check(out[3:6] == ["denied upstream_down", "False", "secret file: PermissionError"] and
            TOKEN not in json.dumps(sc),
            "a wrong token is refused by the inner server (Denied); the outer run has neither "
            "the token nor its file", out[3:])

    # Cancellation: the inner run ends when the outer call is given up, by
    # timeout_s or because the outer run itself ends.
    def cancelled():
        return [a for a in inner.audit_lines() if a.get("audit") == "exec" and
                a.get("status") == "cancelled"]

    sc = run("print(attempt('innerslow.exec', code='import time\\ntime.sleep(60)'))")
    t.check(lines(sc)[:1] and lines(sc)[0].startswith("toolerror innerslow.exec: no answer in 2 s"),
            "an inner run longer than timeout_s ends the outer call with ToolError", sc)
    t.check(wait_until(lambda: len(cancelled()) == 1, 60),
            "the inner server hears notifications/cancelled and cancels its run", cancelled())
    # 8 s: time for the run to start and send its call even on a loaded
    # machine (the inner run sleeps far longer).
    sc = run("mcpx.call('inner.exec', code='import time\\ntime.sleep(60)')", timeout_s=8)
    t.check(wait_until(lambda: len(cancelled()) == 2, 60),
            "an outer run that ends mid-call cancels the inner run too", (sc, cancelled()))

    # list_changed: a function added to the inner policy.
    outer.notes.clear()
    write_policy(inner_policy, {"functions": [DOUBLE, function("triple", "args['n'] * 3",
                                                                "Triples n.")]})
    t.check(wait_until(lambda: "inner.triple" in names(), 120),
            "a function added to the inner policy reaches the outer run's mcpx.tools "
            "(the inner server's list_changed)", names())
    sc = run("print(mcpx.call('inner.triple', n=5)['value'])")
    t.check(lines(sc) == ["15"], "and the new tool can be called", sc)
    t.check(wait_until(lambda: (outer._pump(0.1), any(
        n.get("method") == "notifications/tools/list_changed" for n in outer.notes))[1], 60),
            "the outer server's MCP client hears notifications/tools/list_changed",
            [n.get("method") for n in outer.notes])

    # Gateway: the outer server's client calls the inner function directly.
    tl = outer.request("tools/list")["result"]["tools"]
    r = outer.request("tools/call", {"name": "inner.double", "arguments": {"n": 4}})
    t.check({"inner.exec", "inner.double", "inner.triple"} <= {x["name"] for x in tl} and
            not any(x["name"].startswith(("wrong.", "innerslow.")) for x in tl) and
            r.get("result", {}).get("structuredContent") == {"value": 8} and
            json.loads(r["result"]["content"][0]["text"]) == {"value": 8},
            "gateway: inner.double through the outer server gives the inner result", r)

    outer.close()
    err = outer.stderr_text()
    ups = [json.loads(line) for line in err.splitlines()
           if line.startswith("{") and '"audit":"upstream"' in line.replace(" ", "")]
    t.check(TOKEN not in err and any(a.get("upstream") == "inner" and a.get("tool") == "exec"
                                     and a.get("status") == "ok" for a in ups),
            "the outer server audits the calls, and its logs hold no token", ups[:2])
    inner.drain_stderr()
    st, _, body = inner.request("GET", "/metrics")
    t.check(st == 200 and TOKEN not in inner.err.decode(errors="replace"),
            "the inner server's logs hold no token either")
finally:
    inner.stop()
    scratch.remove()
t.done()
