"""End-to-end: the real mcp-exec binary over stdio - protocol, the exec tool
contract, limits, cancellation, queueing, config errors and the audit log."""
import json
import os
import subprocess
import time
import uuid

from mcpx_harness import (BIN, Failures, StdioServer, base_env, structured,
                          tool_error_text)

t = Failures()

# ---- lifecycle and protocol ----
s = StdioServer()
r = s.initialize("2025-11-25")
t.check(r and r["result"]["protocolVersion"] == "2025-11-25", "initialize 2025-11-25", r)
t.check(r and r["result"]["serverInfo"]["name"] == "mcp-exec", "serverInfo name")
t.check(r and "tools" in r["result"]["capabilities"], "tools capability declared")

r = s.request("ping")
t.check(r and r.get("result") == {}, "ping returns {}", r)

r = s.request("tools/list")
tools = r["result"]["tools"] if r and "result" in r else []
exec_tool = next((x for x in tools if x["name"] == "exec"), None)
t.check(exec_tool is not None, "tools/list has exec", r)
if exec_tool:
    sch = exec_tool["inputSchema"]
    t.check(sch.get("additionalProperties") is False and sch.get("required") == ["code"],
            "exec inputSchema: code required, no extra properties", sch)
    out = exec_tool.get("outputSchema", {})
    t.check(set(["stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out"])
            <= set(out.get("required", [])), "outputSchema requires the six fields", out)
    t.check("numpy" in exec_tool.get("description", ""), "description names the packages")

s.send("this is not json")
r = s.recv(10)
t.check(r and r.get("error", {}).get("code") == -32700 and r.get("id") is None,
        "unparsable line gives -32700 with id null", r)
r = s.request("ping")
t.check(r and r.get("result") == {}, "server keeps going after a parse error", r)

r = s.request("no/such/method")
t.check(r and r.get("error", {}).get("code") == -32601, "unknown method -32601", r)
r = s.request("tools/call", {"name": "nope", "arguments": {}})
t.check(r and r.get("error", {}).get("code") == -32602, "unknown tool -32602", r)

s.send([{"jsonrpc": "2.0", "id": 900, "method": "ping"}])
r = s.recv(10)
t.check(r is not None and (isinstance(r, dict) and "error" in r),
        "batch rejected under 2025-11-25", r)

# ---- the exec tool ----
r = s.call("print('hello'); import sys; print('err', file=sys.stderr)")
sc = structured(r)
t.check(sc and sc["stdout"] == "hello\n" and sc["stderr"] == "err\n" and sc["exit_code"] == 0,
        "exec prints stdout and stderr", r)
if sc:
    t.check(r["result"].get("isError") is False, "successful run is not isError")
    txt = r["result"]["content"][0]["text"]
    t.check(json.loads(txt) == sc, "text block carries the same JSON as structuredContent")
    t.check(sc["timed_out"] is False and sc["truncated"] is False and sc["signal"] is None
            and sc["limit"] is None, "normal run: no timeout, truncation, signal or limit", sc)
    t.check(isinstance(sc["duration_ms"], int) and isinstance(sc["cpu_ms"], int)
            and sc["max_rss_kb"] > 0, "duration, cpu and rss reported", sc)

r = s.call("import sys; print('x'); sys.exit(3)")
sc = structured(r)
t.check(sc and sc["exit_code"] == 3 and r["result"]["isError"] is False,
        "non-zero exit is a normal result", r)

r = s.call("raise ValueError('boom')")
sc = structured(r)
t.check(sc and sc["exit_code"] == 1 and "ValueError: boom" in sc["stderr"],
        "exception gives exit 1 with the traceback", r)

r = s.call("print(input()[::-1])", stdin="xyz\n")
sc = structured(r)
t.check(sc and sc["stdout"] == "zyx\n", "stdin is fed to the program", r)

r = s.call("import sys; sys.stdout.buffer.write(b'a\\xffb\\n')")
sc = structured(r)
t.check(sc and sc["stdout"] == "a\ufffdb\n", "invalid UTF-8 becomes U+FFFD", r)

r = s.call("import time\nprint('before', flush=True)\ntime.sleep(30)", timeout_s=1)
sc = structured(r)
t.check(sc and sc["timed_out"] is True and sc["exit_code"] == -1 and sc["limit"] == "timeout",
        "timeout: timed_out, exit -1, limit timeout", r)
t.check(sc and sc["stdout"] == "before\n", "timeout keeps partial output", sc)
t.check(sc and 900 <= sc["duration_ms"] < 10000, "timeout fires after about 1 s", sc)

for args, needle in [
    ({"code": ""}, "code must not be empty"),
    ({"code": "   \n\t"}, "code must not be empty"),
    ({}, "validating"),
    ({"code": 5}, "validating"),
    ({"code": "print(1)", "timeout_s": "10"}, "validating"),
    ({"code": "print(1)", "timeout_s": 1.5}, "validating"),
    ({"code": "print(1)", "extra": 1}, "validating"),
    ({"code": "print(1)", "stdin": 7}, "validating"),
]:
    r = s.request("tools/call", {"name": "exec", "arguments": args})
    msg = tool_error_text(r)
    t.check(msg is not None and needle in msg, f"bad arguments {args!r} -> tool error", r)

r = s.call("print('t')", timeout_s=100000)
t.check(structured(r) and structured(r)["stdout"] == "t\n", "huge timeout_s is clamped, not rejected", r)

# ping answers while a run is in progress
s.send({"jsonrpc": "2.0", "id": 5000, "method": "tools/call",
        "params": {"name": "exec", "arguments": {"code": "import time; time.sleep(3); print('slow')"}}})
time.sleep(0.3)
s.send({"jsonrpc": "2.0", "id": 5001, "method": "ping"})
first = s.recv(10)
# Ordering, not timing: the ping's answer comes before the run's.
t.check(first and first.get("id") == 5001, "ping is answered while a run is in progress", first)
r = s.wait_for(5000, 20)
t.check(structured(r) and structured(r)["stdout"] == "slow\n", "the slow run still completes", r)

# cancellation kills a running execution and suppresses its response
marker = uuid.uuid4().hex
s.send({"jsonrpc": "2.0", "id": 6000, "method": "tools/call",
        "params": {"name": "exec", "arguments": {
            "code": f"import time\n# {marker}\ntime.sleep(30)"}}})
time.sleep(0.8)
s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 6000, "reason": "test"}})
r = s.request("tools/call", {"name": "exec", "arguments": {"code": "print('after cancel')"}},
              timeout=15)
t.check(structured(r) and structured(r)["stdout"] == "after cancel\n",
        "next run starts promptly after a cancel", r)
t.check(6000 not in s.pending, "cancelled request gets no response")

rc = s.close()
t.check(rc == 0, "exit 0 on stdin EOF", rc)
err = s.stderr_text()
audit = [json.loads(l) for l in err.splitlines() if l.startswith("{") and '"audit"' in l]
t.check(len(audit) >= 8, "one audit line per execution", len(audit))
t.check(any(a.get("status") == "cancelled" for a in audit), "cancelled run is audited")
t.check(all("code_sha256" in a and len(a["code_sha256"]) == 64 for a in audit),
        "audit lines carry the code hash")
for secret in ("hello", "zyx", "ValueError", "after cancel", marker):
    t.check(secret not in err, f"stderr log never contains code/stdin/output ({secret!r})")

# ---- limits and queueing ----
s = StdioServer(base_env(MCP_EXEC_MAX_OUTPUT_BYTES=1000))
s.initialize()
r = s.call("import sys\nfor i in range(50): sys.stdout.write('x'*100)\nsys.exit(3)")
sc = structured(r)
t.check(sc and sc["truncated"] is True and sc["limit"] is None and sc["exit_code"] == 3
        and len(sc["stdout"]) == 1000,
        "output flood: truncated at the cap, the program's own exit code",
        sc and {k: v for k, v in sc.items() if k != 'stdout'})
s.close()

s = StdioServer(base_env(MCP_EXEC_MAX_QUEUE=0))
s.initialize()
s.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "exec", "arguments": {"code": "import time; time.sleep(2)"}}})
time.sleep(0.3)
s.send({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "exec", "arguments": {"code": "print(1)"}}})
r = s.wait_for(11, 10)
msg = tool_error_text(r)
t.check(msg is not None and "busy" in msg, "full queue gives a busy tool error at once", r)
r = s.wait_for(10, 10)
t.check(structured(r) is not None, "the running execution still completes", r)
s.close()

# ---- version negotiation and batches ----
s = StdioServer()
r = s.initialize("1999-01-01")
t.check(r and r["result"]["protocolVersion"] == "2025-11-25", "unknown version -> latest", r)
s.close()
s = StdioServer()
r = s.initialize("2024-11-05")
t.check(r and r["result"]["protocolVersion"] == "2024-11-05", "2024-11-05 negotiated", r)
s.close()
s = StdioServer()
s.initialize("2025-03-26")
s.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
r = s.recv(10)
t.check(isinstance(r, list) and sorted(x["id"] for x in r) == [1, 2],
        "batch answered under 2025-03-26", r)
s.close()

# ---- secrets never reach the code ----
s = StdioServer(base_env(MCP_EXEC_AUTH_TOKEN="tok-SECRET-123", OTHER_SECRET="zzz-SECRET"))
s.initialize()
r = s.call("import os; print(sorted(os.environ.items()))")
sc = structured(r)
t.check(sc and "SECRET" not in sc["stdout"] and "HOME" in sc["stdout"],
        "the server's environment (and token) never reaches the code", sc and sc["stdout"])
r = s.call("import os; print(open(f'/proc/{os.getppid()}/environ','rb').read())")
sc = structured(r)
t.check(sc and "SECRET" not in sc["stdout"] + sc["stderr"], "server environ unreadable", sc)
s.close()

# ---- configuration errors ----
def run_cfg(env, args=(), input_=b""):
    p = subprocess.run([BIN, *args], env=env, input=input_, capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()

rc, out, err = run_cfg(base_env(MCP_EXEC_MAX_TIMEOUT_S="abc"))
t.check(rc == 78 and "MCP_EXEC_MAX_TIMEOUT_S" in err, "bad number -> EX_CONFIG naming the variable", (rc, err))
rc, out, err = run_cfg(base_env(MCP_EXEC_TRANSPORT="carrier-pigeon"))
t.check(rc == 78 and "MCP_EXEC_TRANSPORT" in err and "stdio|http|sse" in err, "bad transport -> EX_CONFIG", (rc, err))
rc, out, err = run_cfg(base_env(), ["--no-such-flag"])
t.check(rc == 64 and "unknown flag" in err, "unknown flag -> EX_USAGE", (rc, err))
rc, out, err = run_cfg(base_env(MCP_EXEC_PYTHON="/nonexistent/python3"))
t.check(rc == 78 and "not found" in err, "missing interpreter -> clear startup error", (rc, err))
rc, out, err = run_cfg(base_env(MCP_EXEC_DEFAULT_TIMEOUT_S=500))
t.check(rc == 78 and "exceeds" in err, "default timeout above max -> error", (rc, err))
rc, out, err = run_cfg(base_env(MCP_EXEC_AUTH_TOKEN="hunter2-token"), ["--check-config"])
t.check(rc == 0 and "sandbox layers:" in out and "seccomp" in out, "--check-config shows layers", (rc, out, err))
t.check("hunter2" not in out + err and "<redacted>" in out, "--check-config redacts the token")
rc, out, err = run_cfg(base_env(), ["--version"])
t.check(rc == 0 and out.startswith("mcp-exec "), "--version", out)

t.done()
