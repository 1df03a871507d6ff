"""mcp-exec as the MCP client of the reference "everything" server
(@modelcontextprotocol/server-everything, pinned in package-lock.json), a
server nobody here wrote, in its Streamable HTTP mode on 127.0.0.1 at a port
the kernel picks (loopback.mjs). One mcp-exec on HTTP with a token uses it
as an upstream:

  - discovery: mcpx.tools / mcpx.describe list its tools with their
    schemas; `from mcpx.servers import everything` gives stubs, the
    kebab-case names (get-sum) as identifiers (get_sum);
  - results: text (echo, get-sum), structuredContent (get-structured-content,
    which has an outputSchema), an image through call_raw (get-tiny-image);
  - a tool error: get-sum with a string argument is answered with isError
    (the SDK's input validation), which raises mcpx.ToolError;
  - a denied tool: get-env (it prints the server's environment) is denied by
    the policy's globs: absent from the lists, mcpx.Denied when called;
  - a slow tool: trigger-long-running-operation for 30 s under timeout_s 2;
  - an upstream killed mid-call: a second everything process, killed while
    the run waits on its long-running tool, gives mcpx.Denied
    (upstream_down), not a hang;
  - the tools it registers after initialization (simulate-research-query,
    registered in its oninitialized hook) are in the list;
  - gateway: with expose, the official TypeScript SDK Client
    (gateway_client.mjs) lists and calls everything.* on mcp-exec and gets
    the server's result unchanged.

The pinned server announces tools.listChanged but sends list_changed only
from its initialization hook, before a GET stream can be open, so no test
here can provoke one; test_upstream_mcpexec.py (a second mcp-exec as the
upstream) and test_upstreams.py cover list_changed.

Usage: everything_check.py NODE BIN (from everything.sh). Prints ok/FAIL
lines and "N passed, N failed"; exits 1 on a failure."""
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
NODE, BIN = sys.argv[1], sys.argv[2]
os.environ["MCPX_BIN"] = BIN

from egress_fixture import write_policy  # noqa: E402
from mcpx_harness import (Failures, HttpServer, McpHttpClient, base_env,  # noqa: E402
                          structured)

EVERYTHING = os.path.join(HERE, "node_modules", "@modelcontextprotocol", "server-everything",
                          "dist", "index.js")
LOCAL = ["127.0.0.1/32"]
t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-everything-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")
os.mkdir(work, 0o711)
servers = []


class Everything:
    """The everything server on loopback; its stdout (one line per request
    it receives) is read by a thread into self.log."""

    def __init__(self):
        self.proc = subprocess.Popen([NODE, "--import", os.path.join(HERE, "loopback.mjs"),
                                      EVERYTHING, "streamableHttp"], cwd=tmp,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env={"PATH": "/usr/bin:/bin", "PORT": "0"})
        servers.append(self.proc)
        self.port = None
        self.log = []
        ready = threading.Event()

        def pump():
            for line in self.proc.stdout:
                if line.startswith("PORT ") and self.port is None:
                    self.port = int(line.split()[1])
                    ready.set()
                self.log.append(line.rstrip("\n"))
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(120)
        if self.port is None:
            raise RuntimeError("the everything server did not start: %r" % self.log)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def posts(self):
        return sum(1 for line in self.log if line == "Received MCP POST request")


PRELUDE = """
import json, mcpx
def attempt(name, **args):
    try:
        return "ok %r" % (mcpx.call(name, **args),)
    except mcpx.Denied as e:
        return "denied %s: %s" % (e.reason, e)
    except mcpx.ToolError as e:
        return "toolerror %s" % e
"""


def lines(sc):
    return (sc or {}).get("stdout", "").splitlines()


try:
    ev = Everything()
    victim = Everything()
    policy = os.path.join(tmp, "policy.json")
    write_policy(policy, {"upstreams": [
        {"name": "everything", "url": ev.url, "allow_cidrs": LOCAL, "expose": True,
         "tools": {"deny": ["get-env"]}},
        {"name": "evslow", "url": ev.url, "allow_cidrs": LOCAL, "timeout_s": 2,
         "tools": {"allow": ["trigger-long-running-operation"]}},
        {"name": "victim", "url": victim.url, "allow_cidrs": LOCAL,
         "tools": {"allow": ["echo", "trigger-long-running-operation"]}}],
        "exec": {"upstreams": ["everything", "evslow", "victim"]}})
    TOKEN = "everything-token-0123456789abcdef"
    srv = HttpServer(base_env(MCP_EXEC_POLICY=policy, MCP_EXEC_WORKDIR_BASE=work,
                              MCP_EXEC_AUTH_TOKEN=TOKEN))
    c = McpHttpClient(srv, token=TOKEN)
    c.initialize()
    lock = threading.Lock()

    def call(code, client=c, **args):
        with lock:
            srv.drain_stderr()
        st, _, body = client.call(code, **args)
        if isinstance(body, list):
            body = next((m for m in body if "result" in m or "error" in m), None)
        return structured(body) or {}

    # The lists load at start-up: wait until all three upstreams are there.
    deadline = time.time() + 120
    while time.time() < deadline:
        sc = call(PRELUDE + "print(sorted({t['name'].split('.')[0] for t in mcpx.tools()}))")
        if lines(sc)[-1:] == ["['everything', 'evslow', 'victim']"]:
            break
        time.sleep(0.3)
    t.check(lines(sc)[-1:] == ["['everything', 'evslow', 'victim']"],
            "the everything servers' tool lists are loaded", sc)

    # ---- discovery ----
    sc = call(PRELUDE + """
names = sorted(t["name"] for t in mcpx.tools() if t["name"].startswith("everything."))
print(json.dumps(names))
d = mcpx.describe("everything.get-structured-content")
print(json.dumps([d["description"], sorted(d["input_schema"]["properties"]),
                  d["input_schema"]["properties"]["location"].get("enum"),
                  sorted(d["output_schema"]["properties"])]))
print(json.dumps(sorted(t["name"] for t in mcpx.tools("SUM of two"))))
from mcpx.servers import everything
print(json.dumps(sorted(n for n in dir(everything) if not n.startswith("_"))))
print(everything.get_sum.__doc__.splitlines()[0])
import inspect
print(inspect.signature(everything.get_sum))
""")
    out = lines(sc)
    names = json.loads(out[0]) if out else []
    t.check({"everything.echo", "everything.get-sum", "everything.get-tiny-image",
             "everything.get-structured-content", "everything.trigger-long-running-operation",
             "everything.get-annotated-message"} <= set(names) and
            "everything.get-env" not in names,
            "mcpx.tools lists the everything server's tools, the denied get-env not", names)
    t.check("everything.simulate-research-query" in names,
            "the tool the server registers once initialized (simulate-research-query) is "
            "listed", names)
    t.check(out[1:3] == [json.dumps(["Returns structured content along with an output schema "
                                     "for client data validation", ["location"],
                                     ["New York", "Chicago", "Los Angeles"],
                                     ["conditions", "humidity", "temperature"]]),
                         json.dumps(["everything.get-sum"])],
            "mcpx.describe gives its description and schemas; mcpx.tools(query) finds by "
            "description", out[1:3])
    t.check(len(out) >= 6 and {"echo", "get_sum", "get_tiny_image", "get_structured_content",
                               "trigger_long_running_operation"} <= set(json.loads(out[3]))
            and "get_env" not in json.loads(out[3]) and
            out[4] == "Returns the sum of two numbers" and out[5] == "(*, a, b)",
            "from mcpx.servers import everything: kebab-case tools as identifiers, with "
            "docstrings and keyword signatures", out[3:])

    # ---- results ----
    sc = call(PRELUDE + """
from mcpx.servers import everything
print(everything.echo(message="hello"))
print(everything.get_sum(a=2, b=40))
print(json.dumps(mcpx.call("everything.get-structured-content", location="Chicago"),
                 sort_keys=True))
raw = mcpx.call_raw("everything.get-tiny-image")
print(json.dumps([[b["type"], b.get("mimeType")] for b in raw["content"]]))
print(raw["content"][1]["data"][:40])
print(attempt("everything.get-sum", a="two", b=1))
print(attempt("everything.get-env"))
print(attempt("evslow.echo", message="x"))
""")
    out = lines(sc)
    t.check(out[:2] == ["Echo: hello", "The sum of 2 and 40 is 42."],
            "text results: the text blocks' text", out[:2])
    t.check(len(out) > 2 and json.loads(out[2]) == {"temperature": 36,
                                                    "conditions": "Light rain / drizzle",
                                                    "humidity": 82},
            "a structured result: structuredContent as a dict", out[2:3])
    png = base64.b64decode(out[4] + "=" * (-len(out[4]) % 4))[:8] if len(out) > 4 else b""
    t.check(len(out) > 4 and json.loads(out[3]) == [["text", None], ["image", "image/png"],
                                                    ["text", None]] and
            png == b"\x89PNG\r\n\x1a\n",
            "call_raw gives the whole result: text, a PNG image, text", out[3:5])
    t.check(len(out) > 5 and out[5].startswith("toolerror ") and "validation" in out[5].lower(),
            "a tool error (isError, the SDK's input validation) raises ToolError with its "
            "message", out[5:6])
    t.check(out[6:8] == ["denied not_allowed: everything.get-env is not allowed by the policy "
                         "(tools of upstream everything)",
                         "denied not_allowed: evslow.echo is not allowed by the policy "
                         "(tools of upstream evslow)"],
            "a tool the globs deny raises Denied (not_allowed)", out[6:8])

    # ---- a slow tool hits timeout_s ----
    sc = call(PRELUDE + "print(attempt('evslow.trigger-long-running-operation', duration=30, "
              "steps=30))")
    t.check(lines(sc)[:1] and
            lines(sc)[0].startswith("toolerror evslow.trigger-long-running-operation: no "
                                    "answer in 2 s"),
            "the long-running tool under timeout_s 2 ends with a ToolError", sc)

    # ---- the upstream killed mid-call ----
    c2 = McpHttpClient(srv, token=TOKEN)
    c2.initialize()
    before = victim.posts()
    out = {}
    th = threading.Thread(target=lambda: out.update(sc=call(PRELUDE + """
print(mcpx.call("victim.echo", message="alive"))
print(attempt("victim.trigger-long-running-operation", duration=60, steps=60).split(":")[0])
""", client=c2)))
    th.start()
    # Killed once the second call (after the echo) has reached it.
    deadline = time.time() + 120
    while time.time() < deadline and victim.posts() < before + 2:
        time.sleep(0.05)
    victim.proc.kill()
    th.join(120)
    t.check(lines(out.get("sc")) == ["Echo: alive", "denied upstream_down"],
            "the everything server killed mid-call gives Denied (upstream_down), not a hang",
            out)

    # ---- gateway: the SDK client calls everything.* on mcp-exec ----
    url = f"http://127.0.0.1:{srv.port}/mcp"

    def gateway(name, args):
        p = subprocess.run([NODE, os.path.join(HERE, "gateway_client.mjs"), url, TOKEN, name,
                            json.dumps(args)], cwd=HERE, capture_output=True, text=True,
                           timeout=120)
        with lock:
            srv.drain_stderr()
        try:
            return json.loads(p.stdout)
        except ValueError:
            return {"rc": p.returncode, "stderr": p.stderr[-2000:]}

    g = gateway("everything.get-structured-content", {"location": "New York"})
    tool, res = g.get("tool") or {}, g.get("result") or {}
    t.check(tool.get("outputSchema", {}).get("required") ==
            ["temperature", "conditions", "humidity"] and
            res.get("structuredContent") == {"temperature": 33, "conditions": "Cloudy",
                                             "humidity": 82} and
            json.loads(res["content"][0]["text"]) == res["structuredContent"],
            "gateway: the SDK client lists everything.get-structured-content with its "
            "outputSchema and gets structuredContent (the SDK validated it)", g)
    g = gateway("everything.get-tiny-image", {})
    res = g.get("result") or {}
    t.check([b.get("type") for b in res.get("content", [])] == ["text", "image", "text"] and
            res["content"][1]["mimeType"] == "image/png" and
            res["content"][0]["text"] == "Here's the image you requested:",
            "gateway: the image result reaches the SDK client unchanged", g)
    g = gateway("everything.get-sum", {"a": "two", "b": 1})
    res = g.get("result") or {}
    t.check(res.get("isError") is True and "validation" in json.dumps(res).lower(),
            "gateway: the server's isError result reaches the SDK client", g)
    g = gateway("everything.get-env", {})
    res = g.get("result") or {}
    t.check(g.get("tool") is None and res.get("isError") is True and
            "not allowed" in json.dumps(res),
            "gateway: the denied get-env is neither listed nor callable", g)

    srv.stop()
finally:
    for p in servers:
        p.kill()
        p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
