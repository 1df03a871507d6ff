"""Callable functions end to end, with the real binary: admin-written Python
from the policy file published as tools next to exec.

tools/list shows them; a valid call returns the function's structured
result; every kind of invalid call is a tool error naming each failure's
JSON pointer and never reaches a sandbox (the function would leave a trace
at a local upstream, and an audit line); an exception is a tool error with
the traceback; exec code calls functions with mcpx.call, gets their result
but never their credential or rules; nesting is bounded; cancelling the
caller cancels its nested call; a reload is announced with
notifications/tools/list_changed (stdio, Streamable HTTP GET stream, legacy
SSE, 2026-07-28 subscriptions/listen) while a running call finishes with the
version it started with; /metrics counts calls by tool and outcome.

Runs in the warm mode MCPX_TEST_WARM selects (cold, auto)."""
import json
import os
import re
import shutil
import socket
import tempfile
import time
import uuid

from egress_fixture import Upstream, write_policy
from mcpx_harness import (Failures, HttpServer, McpHttpClient, StdioServer, base_env,
                          parse_sse, structured, tool_error_text, warm_mode)

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-functions-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")          # where runs live (readable by runs)
admin = os.path.join(tmp, "admin")        # policy, sources, secret (not)
os.mkdir(work, 0o711)
os.mkdir(admin, 0o755)
SECRET = "fn-secret-" + uuid.uuid4().hex
secret_file = os.path.join(admin, "key")
with open(secret_file, "w") as f:
    f.write(SECRET + "\n")
# World-readable on purpose: only the sandbox may keep runs out.
os.chmod(secret_file, 0o644)
policy_file = os.path.join(admin, "policy.json")
up = Upstream()
URL = f"http://127.0.0.1:{up.port}/"

SOURCES = {
    # Leaves a trace at the upstream on every call, with the credential.
    "invoice.py": f"""
def handler(args, ctx):
    r = ctx.fetch({URL!r} + "echo?trace=" + str(args["n"]))
    d = r.json()
    print("debug output of the function")
    return {{"n": args["n"], "has_key": d["has_key"], "items": len(args.get("items", []))}}
""",
    "raiser.py": """
def helper(x):
    raise ValueError("no invoice %d" % x)

def handler(args, ctx):
    return helper(args["n"])
""",
    "scalar.py": "def handler(args, ctx):\n    return [1, 2.5, args.get('x')]\n",
    "badout.py": "def handler(args, ctx):\n    return {'total': 'not a number'}\n",
    "hold_v1.py": f"""
def handler(args, ctx):
    body = ctx.fetch({URL!r} + "hang").text
    return {{"version": "v1", "body": body}}
""",
    "hold_v2.py": "def handler(args, ctx):\n    return {'version': 'v2'}\n",
    "recurse.py": """
import mcpx
def handler(args, ctx):
    try:
        return ctx.call("recurse", n=args["n"] + 1)
    except mcpx.ToolError as e:
        return {"deepest": args["n"], "error": str(e).splitlines()[0]}
""",
    "private.py": "def handler(args, ctx):\n    return {'private': True}\n",
    "tiny.py": "def handler(args, ctx):\n    return {}\n",
    "notjson.py": "def handler(args, ctx):\n    return {'tags': {'a', 'b'}}\n",
    "slow.py": "import time\ndef handler(args, ctx):\n    print('working')\n    time.sleep(60)\n",
    "added.py": "def handler(args, ctx):\n    return {'added': True}\n",
}
for name, text in SOURCES.items():
    with open(os.path.join(admin, name), "w") as f:
        f.write(text)
    os.chmod(os.path.join(admin, name), 0o644)


def src(name):
    return os.path.join(admin, name)


INVOICE_SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1},
        "customer": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
        "kind": {"enum": ["draft", "final"]},
        "items": {"type": "array", "maxItems": 5,
                  "items": {"type": "object", "properties": {"qty": {"type": "integer",
                                                                     "minimum": 1}},
                            "required": ["qty"]}},
    },
    "required": ["n"],
    "additionalProperties": False,
}
ANY = {"type": "object"}


def fn(name, source, **extra):
    d = {"name": name, "description": f"The {name} function.", "input_schema": ANY,
         "source_file": src(source)}
    d.update(extra)
    return d


def policy(hold="hold_v1.py", added=False):
    fns = [
        fn("get_invoice", "invoice.py", title="Get an invoice", input_schema=INVOICE_SCHEMA,
           output_schema={"type": "object", "properties": {"n": {"type": "integer"}},
                          "required": ["n"]},
           egress=["fnlocal"], timeout_s=60, callable_from_exec=True),
        fn("raiser", "raiser.py", input_schema={"type": "object", "properties": {
            "n": {"type": "integer"}}, "required": ["n"]}),
        fn("scalar", "scalar.py"),
        fn("badout", "badout.py", output_schema={"type": "object", "properties": {
            "total": {"type": "number"}}}),
        fn("hold", hold, egress=["fnlocal"], callable_from_exec=True),
        fn("recurse", "recurse.py", callable_from_exec=True),
        fn("private", "private.py"),
        fn("notjson", "notjson.py"),
        fn("tiny", "tiny.py", callable_from_exec=True),
        fn("slow", "slow.py", timeout_s=1),
    ]
    if added:
        fns.append(fn("added", "added.py"))
    return {
        "egress": [
            {"name": "fnlocal", "url_prefix": URL, "allow_cidrs": ["127.0.0.1/32"],
             "credential": {"header": "X-Key", "secret_file": secret_file}},
            {"name": "execlocal", "url_prefix": URL + "status", "allow_cidrs": ["127.0.0.1/32"]},
        ],
        "exec": {"egress": ["execlocal"]},
        "functions": fns,
    }


write_policy(policy_file, policy())
ENV = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work, MCP_EXEC_PRELOAD="json")
print("   warm mode:", warm_mode(ENV))


# ---- helpers ----------------------------------------------------------------

class Stdio(StdioServer):
    """StdioServer that waits for notifications and calls functions."""

    def wait_note(self, method, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, n in enumerate(self.notes):
                if n.get("method") == method:
                    return self.notes.pop(i)
            m = self.recv(deadline - time.time())
            if m is None:
                return None
            if "method" in m:
                self.notes.append(m)
            elif "id" in m:
                self.pending[m["id"]] = m
        return None

    def fcall(self, name, args, timeout=120):
        p = {"name": name}
        if args is not None:
            p["arguments"] = args
        return self.request("tools/call", p, timeout=timeout)

    def wait_stderr(self, pred, timeout=60):
        """Waits until pred(stderr text) holds (an audit or log line came)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if pred(self.errbuf.decode(errors="replace")):
                return True
            self._pump(0.2)
        return pred(self.errbuf.decode(errors="replace"))


def audits(text, tool=None):
    out = []
    for line in text.splitlines():
        if '"audit":"exec"' in line:
            rec = json.loads(line)
            if tool is None or rec.get("tool") == tool:
                out.append(rec)
    return out


def traces():
    with up.cond:
        return [r["path"] for r in up.seen if r["path"].startswith("/echo?trace=")]


def exec_out(resp):
    sc = structured(resp) or {}
    return sc.get("stdout", "") + sc.get("stderr", "")


# ---- stdio ----------------------------------------------------------------------

srv = Stdio(ENV)
init = srv.initialize()
t.check(init and init["result"]["capabilities"]["tools"]["listChanged"] is True,
        "a policy file: tools.listChanged is declared", init)

r = srv.request("tools/list", {})
tools = {x["name"]: x for x in (r or {}).get("result", {}).get("tools", [])}
t.check(list(tools)[:1] == ["exec"] and {"get_invoice", "raiser", "scalar", "badout", "hold",
                                         "recurse", "private"} <= set(tools),
        "tools/list: exec first, then the functions", list(tools))
gi = tools.get("get_invoice", {})
t.check(gi.get("title") == "Get an invoice" and gi.get("description") == "The get_invoice function."
        and gi.get("inputSchema") == INVOICE_SCHEMA
        and gi.get("outputSchema", {}).get("required") == ["n"],
        "a function's Tool: name, title, description, inputSchema, outputSchema", gi)
t.check("outputSchema" not in tools.get("scalar", {}) and "title" not in tools.get("scalar", {}),
        "no output_schema or title in the policy: none in the Tool", tools.get("scalar"))
ex = tools.get("exec", {})
t.check("`mcpx.call(name, **arguments)`" in ex.get("description", "") and
        ex.get("description", "").endswith(": get_invoice, hold, recurse, tiny.") and
        ex.get("annotations", {}).get("openWorldHint") is True,
        "exec's description names the functions code may call; their egress opens its world",
        ex.get("description", "")[-300:])

# A valid call.
r = srv.fcall("get_invoice", {"n": 7, "customer": "ABC-12", "kind": "final",
                              "items": [{"qty": 1}, {"qty": 2}]})
sc = structured(r)
t.check(sc == {"n": 7, "has_key": True, "items": 2} and r["result"].get("isError") is False,
        "valid call: the returned dict is structuredContent", r)
t.check(r and json.loads(r["result"]["content"][0]["text"]) == sc,
        "the same JSON in a text block", r)
t.check("/echo?trace=7" in traces(), "the function reached its upstream", traces())
t.check(SECRET not in json.dumps(r) and "debug output" not in json.dumps(r),
        "the credential and the function's prints are not in the result")
got = up.last("/echo?trace=7")
t.check(got and got["headers"].get("x-key") == SECRET, "the function's credential was added",
        got and got["headers"])

# Every kind of invalid call: a tool error naming each failure's pointer.
INVALID = [
    ({"n": "seven"}, ["/n: must be integer"]),
    ({}, ['(root): missing required property "n"']),
    ({"n": 1, "extra": True}, ["/extra: property not allowed"]),
    ({"n": 0}, ["/n: must be >= 1"]),
    ({"n": 1, "customer": "abc"}, ['/customer: must match pattern "^[A-Z]{3}-[0-9]+$"']),
    ({"n": 1, "kind": "paid"}, ["/kind: must be one of"]),
    ({"n": 1, "items": [{"qty": 1}, {"qty": 1}, {"qty": 0}, {}]},
     ["/items/2/qty: must be >= 1", '/items/3: missing required property "qty"']),
    ({"n": 1, "items": [{"qty": 1}] * 6}, ["/items: must have at most 5 items"]),
    ([1, 2], ["(root): must be object"]),
    (None, ['(root): missing required property "n"']),
    ({"n": 0, "extra": 1, "customer": 5}, ["invalid arguments: 3 errors", "/n: must be >= 1",
                                           "/extra: property not allowed",
                                           "/customer: must be string"]),
]
before_traces = len(traces())
before_audits = len(audits(srv.stderr_text(), "get_invoice"))
for args, want in INVALID:
    r = srv.fcall("get_invoice", args)
    text = tool_error_text(r) or ""
    t.check(text.startswith("invalid arguments") and all(w in text for w in want),
            f"invalid {json.dumps(args)[:50]}: {want[0]}", text or r)
# The next valid call is the first to reach the upstream and the audit log:
# none of the invalid ones was ever queued before it.
r = srv.fcall("get_invoice", {"n": 8})
t.check(structured(r) == {"n": 8, "has_key": True, "items": 0}, "a valid call after them", r)
t.check(traces()[before_traces:] == ["/echo?trace=8"],
        "no invalid call reached a sandbox (the upstream saw only the valid one)",
        traces()[before_traces:])
t.check(len(audits(srv.stderr_text(), "get_invoice")) == before_audits + 1,
        "no invalid call was audited as an execution")

# Audit: tool name, argument size and hash, never the arguments.
a = audits(srv.stderr_text(), "get_invoice")[-1]
args_text = json.dumps({"n": 8}, separators=(",", ":"))
import hashlib
t.check(a["arguments_bytes"] == len(args_text) and
        a["arguments_sha256"] == hashlib.sha256(args_text.encode()).hexdigest() and
        a["depth"] == 0 and a["parent_run_id"] is None and "code_sha256" not in a,
        "the audit line: tool, argument size and sha256", a)
t.check(a["source_sha256"] == hashlib.sha256(SOURCES["invoice.py"].encode()).hexdigest(),
        "the audit line: the source's sha256", a)
t.check('"customer"' not in srv.stderr_text() and "ABC-12" not in srv.stderr_text(),
        "the arguments are not logged")

# An exception: a tool error with the message and the traceback.
r = srv.fcall("raiser", {"n": 42})
text = tool_error_text(r) or ""
t.check(text.startswith("ValueError: no invoice 42\n\nTraceback (most recent call last):"),
        "exception -> tool error with the message first", text or r)
t.check('File "raiser.py", line 6, in handler' in text and 'File "raiser.py", line 3, in helper'
        in text and "mcpx_function" not in text,
        "the traceback shows the function's own frames only", text)

r = srv.fcall("scalar", {"x": "y"})
t.check(structured(r) == {"result": [1, 2.5, "y"]}, "another JSON value -> {\"result\": value}", r)
# U+0000 travels both ways exactly: into the handler's arguments and back.
r = srv.fcall("scalar", {"x": "a\x00b"})
t.check(structured(r) == {"result": [1, 2.5, "a\x00b"]}
        and '"a\\u0000b"' in (r.get("result", {}).get("content") or [{}])[0].get("text", ""),
        "a NUL in an argument reaches the handler and comes back as sent", r)
r = srv.fcall("badout", {})
t.check((tool_error_text(r) or "").startswith(
    "the function's result does not match its output schema: 1 error\n/total: must be number"),
    "a result against output_schema -> tool error", r)

r = srv.fcall("notjson", {})
t.check((tool_error_text(r) or "").startswith("the function's return value is not JSON: "
                                                "Object of type set"),
        "a return value that is not JSON -> tool error", r)
r = srv.request("tools/call", {"name": "slow", "arguments": {},
                                "_meta": {"progressToken": "slow-1"}}, timeout=120)
text = tool_error_text(r) or ""
t.check(text.startswith("slow did not finish within ") and "(its time limit)" in text and
        "stdout" not in text, "a function past its timeout_s -> tool error naming the limit", r)
prog = [n for n in srv.notes if n.get("method") == "notifications/progress"
        and n["params"].get("progressToken") == "slow-1"]
# "working" and its newline may come as two writes: 7 or 8 bytes so far.
t.check(prog and prog[0]["params"]["progress"] in (7, 8) and
        "message" not in prog[0]["params"] and "working" not in json.dumps(srv.notes),
        "a function's progress counts its output without quoting it", prog)

# exec's own arguments are checked by the validator too.
srv.send('{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"exec",'
         '"arguments":{"code":"print(1)","code":5}}}')
r = srv.wait_for(900)
t.check((tool_error_text(r) or "").startswith("invalid arguments: 1 error\n/code: must be string"),
        "exec: a repeated key's second value is checked against exec's inputSchema", r)
r = srv.call(None, timeout_s="x")
t.check((tool_error_text(r) or "").startswith('validating "arguments": validating '
                                                '/properties/timeout_s'),
        "exec keeps the Go server's messages for its own checks", r)

# mcpx.call from exec: the result, never the credential or the rules.
code = f"""
import json, mcpx, os
print("call", json.dumps(mcpx.call("get_invoice", n=9), sort_keys=True))
for name, args in [("get_invoice", {{"n": "x"}}), ("private", {{}}), ("exec", {{"code": "1"}}),
                   ("nope", {{}})]:
    try:
        mcpx.call(name, **args)
    except mcpx.ToolError as e:
        print("toolerror", name, str(e).replace("\\n", " | "))
try:
    mcpx.fetch({URL!r} + "echo?from=exec")
except mcpx.Denied as e:
    print("fetch denied", e.reason)
for path in [{src("invoice.py")!r}, {secret_file!r}, {policy_file!r}]:
    try:
        open(path).read()
        print("READ", path)
    except OSError as e:
        print("unreadable", type(e).__name__)
ch = mcpx._get_channel()
a, _ = ch.request({{"op": "result", "status": "ok"}}, b"{{}}")
print("forged result", a.get("error"), a.get("message"))
print("env", sorted(k for k in os.environ if "KEY" in k or "SECRET" in k))
"""
r = srv.call(code)
out = exec_out(r)
t.check('call {"has_key": true, "items": 0, "n": 9}' in out,
        "exec: mcpx.call returns the function's structured result", out)
t.check("toolerror get_invoice invalid arguments: 1 error | /n: must be integer" in out,
        "exec: invalid arguments -> mcpx.ToolError with the pointer", out)
t.check('toolerror private no function named "private" may be called from code' in out and
        'toolerror exec no function named "exec"' in out and 'toolerror nope no function' in out,
        "exec: only functions callable_from_exec can be called", out)
t.check("fetch denied no_rule" in out, "exec: the function's egress rule is not exec's", out)
t.check(out.count("unreadable PermissionError") == 3 and "READ" not in out,
        "exec: the source, the secret and the policy file are unreadable", out)
t.check("forged result denied this run is not a function's run" in out,
        "exec: a run that is not a function's cannot send a result", out)
t.check(SECRET not in json.dumps(r) and "env []" in out, "exec never sees the credential", out)
nested = [x for x in audits(srv.stderr_text(), "get_invoice") if x["depth"] == 1]
parent = audits(srv.stderr_text(), None)[-1]
t.check(nested and nested[-1]["parent_run_id"] == parent["run_id"] and
        parent["tool"] == "exec" and not nested[-1]["warm"],
        "the nested call is audited with its caller's run (started cold beside it)",
        (nested[-1:], parent))

# Nesting is bounded: recurse calls itself until refused.
r = srv.call("import json, mcpx\nprint(json.dumps(mcpx.call('recurse', n=1)))")
out = exec_out(r)
try:
    deepest = json.loads(out.strip().splitlines()[-1])
except (ValueError, IndexError):
    deepest = {}
t.check(deepest.get("deepest") == 3 and "calls nest at most 3 deep" in deepest.get("error", ""),
        "nested calls stop at depth 3", out)
depths = sorted(x["depth"] for x in audits(srv.stderr_text(), "recurse"))
t.check(depths == [1, 2, 3], "each level audited with its depth", depths)

# A run makes at most 100 calls.
r = srv.call("import mcpx\nn = 0\ntry:\n    for i in range(101):\n        mcpx.call('tiny')\n"
             "        n += 1\nexcept mcpx.ToolError as e:\n    print(n, e)\n", timeout_s=300,
             timeout=600)
t.check(exec_out(r) == "100 tiny: this run made its 100 calls\n", "a run makes at most 100 calls",
        exec_out(r))

# Cancelling the caller cancels its nested call.
up.rearm()
srv.send({"jsonrpc": "2.0", "id": 700, "method": "tools/call", "params": {
    "name": "exec", "arguments": {"code": "import mcpx\nprint(mcpx.call('hold'))"}}})
t.check(up.wait(lambda: up.hanging >= 1), "the nested call is running (its request hangs)")
gone = up.disconnects
srv.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 700}})
t.check(up.wait(lambda: up.disconnects > gone), "cancelling the caller ended its nested call's "
        "request")
t.check(srv.wait_stderr(lambda s: any(x["status"] == "cancelled" and x["depth"] == 1
                                      for x in audits(s, "hold"))),
        "the nested run is audited as cancelled")
r = srv.fcall("scalar", {})
t.check(structured(r) == {"result": [1, 2.5, None]}, "the slot is free afterwards", r)

# A reload: the running call keeps its version; listeners hear of the change.
up.rearm()
srv.send({"jsonrpc": "2.0", "id": 800, "method": "tools/call",
          "params": {"name": "hold", "arguments": {}}})
t.check(up.wait(lambda: up.hanging >= 1), "a call of hold (v1) is running")
write_policy(policy_file, policy(hold="hold_v2.py", added=True))
note = srv.wait_note("notifications/tools/list_changed")
t.check(note is not None and "params" not in note, "stdio: notifications/tools/list_changed", note)
up.release()
r = srv.wait_for(800)
t.check(structured(r) == {"version": "v1", "body": "released"},
        "the running call finished with the version it started with", r)
r = srv.fcall("hold", {})
t.check(structured(r) == {"version": "v2"}, "a new call runs the new version", r)
r = srv.request("tools/list", {})
names = [x["name"] for x in r["result"]["tools"]]
t.check("added" in names, "tools/list shows the new function", names)
rc = srv.close()
t.check(rc == 0 and "Sanitizer" not in srv.stderr_text(),
        "the stdio server exits cleanly (no sanitizer report)", rc)

# Stopped at once while a nested call runs: the caller and its nested call
# are torn down with the server, and nothing leaks.
write_policy(policy_file, policy())
s3 = Stdio(ENV)
s3.initialize()
up.rearm()
s3.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "exec", "arguments": {"code": "import mcpx\nprint(mcpx.call('hold'))"}}})
t.check(up.wait(lambda: up.hanging >= 1), "a nested call is running when the server is stopped")
gone = up.disconnects
s3.proc.send_signal(15)
s3.wait_stderr(lambda s: "draining" in s)
s3.proc.send_signal(15)
try:
    rc = s3.proc.wait(timeout=60)
except Exception:
    rc = None
t.check(rc == 143 and up.wait(lambda: up.disconnects > gone) and
        "Sanitizer" not in s3.stderr_text(),
        "a second SIGTERM ends the caller and its nested call (exit 143, nothing left)",
        (rc, s3.stderr_text()[-400:]))

# A policy that uses a keyword the validator does not know is refused, with
# its pointer.
bad = policy()
bad["functions"][2]["input_schema"] = {"type": "object", "properties": {
    "email": {"type": "string", "format": "email"}}}
bad_file = os.path.join(admin, "bad.json")
write_policy(bad_file, bad)
s2 = StdioServer(base_env(MCP_EXEC_POLICY=bad_file, MCP_EXEC_WORKDIR_BASE=work))
rc = s2.close()
msgs = [json.loads(line).get("msg", "") for line in s2.stderr_text().splitlines()
        if line.startswith("{")]
t.check(rc == 78 and any(m.endswith(': /functions/2/input_schema/properties/email/format: '
                                    'unsupported keyword "format"') for m in msgs),
        "a schema with an unsupported keyword refuses the policy, naming its pointer",
        (rc, msgs[-1:]))


# ---- HTTP: every kind of listener, and /metrics ---------------------------------

write_policy(policy_file, policy())
hs = HttpServer(dict(ENV))


class Stream:
    """A raw HTTP request whose response is an event stream, read as it comes."""

    def __init__(self, method, path, headers, body=b""):
        self.s = socket.create_connection(("127.0.0.1", hs.port), timeout=60)
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for k, v in headers.items():
            head += f"{k}: {v}\r\n"
        if body:
            head += f"Content-Length: {len(body)}\r\n"
        self.s.sendall(head.encode() + b"\r\n" + body)
        self.buf = b""

    def status(self):
        while b"\r\n\r\n" not in self.buf:
            if not self._more():
                break
        m = re.match(rb"HTTP/1.1 (\d+)", self.buf)
        return int(m.group(1)) if m else None

    def _more(self):
        try:
            chunk = self.s.recv(65536)
        except socket.timeout:
            return False
        self.buf += chunk
        return bool(chunk)

    def events(self):
        return parse_sse(self.buf.split(b"\r\n\r\n", 1)[-1])

    def wait(self, pred):
        while True:
            for ev, data in self.events():
                if ev in ("message", "endpoint") and pred(ev, data):
                    return data
            if not self._more():
                return None


def method_is(name):
    return lambda ev, data: ev == "message" and json.loads(data).get("method") == name


c = McpHttpClient(hs)
st, h, body, _ = c.initialize()
t.check(body and body["result"]["capabilities"]["tools"]["listChanged"] is True,
        "HTTP: tools.listChanged declared", body)
get = Stream("GET", "/mcp", {"Accept": "text/event-stream", "Mcp-Session-Id": c.sid,
                             "MCP-Protocol-Version": c.version})
t.check(get.status() == 200 and b"text/event-stream" in get.buf,
        "Streamable HTTP: GET /mcp opens the session's stream", get.buf[:200])
st, _, _ = hs.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
t.check(st == 400, "GET /mcp without a session -> 400", st)
st, _, _ = hs.request("GET", "/mcp", headers={"Mcp-Session-Id": c.sid, "Accept": "application/json"})
t.check(st == 406, "GET /mcp without Accept: text/event-stream -> 406", st)
st, _, _ = hs.request("GET", "/mcp", headers={"Mcp-Session-Id": c.sid, "Accept": "text/event-stream",
                                              "MCP-Protocol-Version": "2026-07-28"})
t.check(st == 405, "GET /mcp under 2026-07-28 -> 405 (subscriptions/listen replaced it)", st)
st, hdrs, _ = hs.request("PUT", "/mcp", "{}", {"Mcp-Session-Id": c.sid})
t.check(st == 405 and hdrs.get("allow") == "GET, POST, DELETE",
        "PUT /mcp -> 405 naming GET among the methods allowed", (st, hdrs.get("allow")))

meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}
listen = {"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
          "params": {"_meta": meta, "notifications": {"toolsListChanged": True,
                                                      "promptsListChanged": True}}}
st, _, _ = hs.request("POST", "/mcp", json.dumps(listen), {
    "Accept": "application/json", "Content-Type": "application/json",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"})
t.check(st == 406, "subscriptions/listen without Accept: text/event-stream -> 406", st)
sub = Stream("POST", "/mcp", {"Accept": "application/json, text/event-stream",
                              "Content-Type": "application/json",
                              "MCP-Protocol-Version": "2026-07-28",
                              "Mcp-Method": "subscriptions/listen"},
             json.dumps(listen).encode())
ack = sub.wait(method_is("notifications/subscriptions/acknowledged"))
ack = json.loads(ack) if ack else {}
t.check(ack.get("params") == {"notifications": {"toolsListChanged": True},
                              "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}},
        "2026-07-28: subscriptions/listen acknowledged with the honoured filter", ack)

legacy = Stream("GET", "/sse", {"Accept": "text/event-stream"})
endpoint = legacy.wait(lambda ev, data: ev == "endpoint")
st, _, _ = hs.request("POST", endpoint or "/messages", json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "l", "version": "1"}}}),
    {"Content-Type": "application/json"})
t.check(legacy.wait(lambda ev, data: ev == "message" and json.loads(data).get("id") == 1),
        "legacy SSE session initialized")

# Invalid calls and a valid one, for /metrics.
c.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "get_invoice", "arguments": {"n": -1}}})
st, _, r = c.post({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                   "params": {"name": "scalar", "arguments": {}}})
t.check(structured(r) == {"result": [1, 2.5, None]}, "HTTP: a function call", r)

write_policy(policy_file, policy(added=True))
for what, stream in [("Streamable HTTP GET stream", get), ("legacy SSE stream", legacy)]:
    t.check(stream.wait(method_is("notifications/tools/list_changed")) is not None,
            f"{what}: notifications/tools/list_changed", stream.buf[-300:])
n = sub.wait(method_is("notifications/tools/list_changed"))
t.check(n and json.loads(n).get("params") == {
    "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}},
    "subscriptions/listen: list_changed carries the subscription id", n)

st, _, text = hs.request("GET", "/metrics")
text = text.decode()
t.check('mcp_exec_tool_calls_total{tool="get_invoice",outcome="invalid_arguments"} 1' in text
        and 'mcp_exec_tool_calls_total{tool="scalar",outcome="ok"} 1' in text
        and 'mcp_exec_tool_calls_total{tool="exec",outcome="ok"}' not in text,
        "/metrics: tool calls by tool and outcome",
        [l for l in text.splitlines() if "tool_calls" in l])

# Draining ends the subscription with its completion result.
hs.proc.send_signal(15)
done = sub.wait(lambda ev, data: ev == "message" and json.loads(data).get("id") == "listen-1")
done = json.loads(done) if done else {}
t.check(done.get("result", {}).get("_meta", {}).get("io.modelcontextprotocol/subscriptionId")
        == "listen-1" and done["result"].get("resultType") == "complete",
        "draining: the subscription ends with its completion result", done)
try:
    rc = hs.proc.wait(timeout=120)
except Exception:
    rc = None
t.check(rc == 0 and "Sanitizer" not in hs.drain_stderr(),
        "the server drains with every kind of listener open and exits 0", rc)
t.check("not h2 substream" not in hs.drain_stderr() and '"level":"error"' not in hs.drain_stderr(),
        "event streams (GET /mcp, legacy SSE, subscriptions/listen) log no lws error",
        [l for l in hs.drain_stderr().splitlines() if '"error"' in l][:5])
for s in (get, sub, legacy):
    s.s.close()

shutil.rmtree(tmp, ignore_errors=True)
t.done()
