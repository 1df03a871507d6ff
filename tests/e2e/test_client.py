"""End-to-end tests of mcp-exec-client against the real server over HTTP:
output and exit codes pass through exactly, inputs from --code, a file, `-`
and --stdin, the token from a file or the environment, and a distinct exit
code for each failure users must tell apart (auth 77, unreachable 69, busy
75, tool error 65, protocol 76, usage 64, timeout 124); probe and bench."""
import os
import socket
import subprocess
import tempfile
import time

from mcpx_harness import BIN, Failures, HttpServer

CLIENT = os.path.join(os.path.dirname(os.path.abspath(BIN)), "mcp-exec-client")
TOKEN = "client-e2e-token-0123456789abcdef"

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-client-")


def write(name, data, mode="w"):
    path = os.path.join(tmp, name)
    with open(path, mode) as f:
        f.write(data)
    return path


# A trailing newline, as `echo` or a Kubernetes secret would leave it.
token_file = write("token", TOKEN + "\n")
bad_token_file = write("bad-token", "not-the-token-987654321\n")


def client(*args, input=None, env=None, timeout=120):
    """Runs the client; returns (exit code, stdout bytes, stderr text)."""
    e = {"PATH": "/usr/bin:/bin"}
    e.update(env or {})
    p = subprocess.run([CLIENT, *args], input=input, capture_output=True, env=e,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


srv = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN})
URL = f"http://127.0.0.1:{srv.port}/mcp"


def call(*args, **kw):
    return client("call", "--url", URL, "--token-file", token_file, *args, **kw)


# ---- success and pass-through ----
rc, out, err = call("--code", "print(6*7)")
t.check(rc == 0 and out == b"42\n" and err == "", "call prints stdout and exits 0", (rc, out, err))
# --language: exec's language argument.
rc, out, err = call("--language", "bash", "--code", "echo $((6*7)); exit 4")
t.check(rc == 4 and out == b"42\n", "call --language bash runs a bash script", (rc, out, err))
rc, out, err = call("--language", "javascript", "--code", "console.log(6*7)")
t.check(rc == 0 and out == b"42\n", "call --language javascript runs Node.js", (rc, out, err))
rc, out, err = call("--language", "cobol", "--code", "x")
t.check(rc == 65 and "available: python" in err, "an unknown language: the server's error, exit 65",
        (rc, out, err))

rc, out, err = call("--code", "import sys\nprint('out')\nprint('oops', file=sys.stderr)\nsys.exit(3)")
t.check(rc == 3, "the program's exit code 3 becomes ours", rc)
t.check(out == b"out\n" and err == "oops\n", "stdout and stderr pass through unchanged", (out, err))

rc, out, err = call("--code", "import sys; sys.stdout.write('a\\0b\\ue000c\\ue0000 no newline')")
t.check(rc == 0 and out == "a\0b\ue000c\ue0000 no newline".encode(),
        "NUL bytes and U+E000 survive exactly", out)

rc, out, err = call("--code", "import sys; sys.stdout.write('\"\\\\\\n\\t\\u00e9' * 40000)")
t.check(rc == 0 and out == ("\"\\\n\t\u00e9" * 40000).encode(), "escape-heavy output is exact",
        (rc, len(out)))

# ---- inputs ----
stdin_file = write("stdin.txt", "line one\nline two\n")
rc, out, err = call("--stdin", stdin_file, "--code", "import sys; sys.stdout.write(sys.stdin.read().upper())")
t.check(rc == 0 and out == b"LINE ONE\nLINE TWO\n", "--stdin file feeds the program", (rc, out, err))

code_file = write("prog.py", "import sys\nprint('from a file', sys.argv[0] != '')\n")
rc, out, err = call(code_file)
t.check(rc == 0 and out == b"from a file True\n", "code from a FILE", (rc, out, err))

rc, out, err = call("-", input=b"print('from stdin')\n")
t.check(rc == 0 and out == b"from stdin\n", "code from - (standard input)", (rc, out, err))

rc, out, err = client("call", "--url", URL, "--code", "print('env token')", env={"MCP_EXEC_TOKEN": TOKEN})
t.check(rc == 0 and out == b"env token\n", "token from MCP_EXEC_TOKEN", (rc, out, err))

for suffix in ("", "/"):
    rc, out, err = client("call", "--url", f"http://127.0.0.1:{srv.port}{suffix}", "--token-file",
                          token_file, "--code", "print('bare')")
    t.check(rc == 0 and out == b"bare\n", f"a URL with path '{suffix}' gets /mcp", (rc, out, err))

rc, out, err = call("--progress", "--code",
                    "import time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.4)")
t.check(rc == 0 and out == b"0\n1\n2\n", "--progress: the SSE reply gives the exact output", (rc, out, err))
t.check("mcp-exec-client: progress:" in err and "execution started" in err,
        "--progress: progress and log notifications on stderr", err)

# ---- what the program did not say itself ----
rc, out, err = call("--timeout", "1", "--code", "import time; time.sleep(30)")
t.check(rc == 124 and "timed out after 1s" in err, "a timed-out run exits 124 with a message", (rc, err))

rc, out, err = call("--code", "import os; print('bye', flush=True); os.kill(os.getpid(), 9)")
t.check(rc == 128 + 9 and out == b"bye\n" and "killed by SIGKILL" in err,
        "a run killed by a signal exits 128+N and says so", (rc, out, err))

rc, out, err = call("--code", "import sys; sys.stdout.write('x' * (3 << 20))")
t.check(len(out) < (3 << 20) and "output truncated" in err, "truncated output gets a note on stderr",
        (rc, len(out), err[-200:]))

# ---- failures, each with its own exit code ----
rc, out, err = client("call", "--url", URL, "--token-file", bad_token_file, "--code", "print(1)")
t.check(rc == 77 and "authentication failed: check the token" in err, "wrong token -> 77", (rc, err))
t.check("not-the-token" not in err and b"not-the-token" not in out and TOKEN not in err,
        "the token is never printed", err)
rc, out, err = client("call", "--url", URL, "--code", "print(1)")
t.check(rc == 77, "no token -> 77", (rc, err))

dead = free_port()
rc, out, err = client("call", "--url", f"http://127.0.0.1:{dead}/mcp", "--token-file", token_file,
                      "--code", "print(1)")
t.check(rc == 69 and f"cannot connect to http://127.0.0.1:{dead}/mcp" in err,
        "unreachable server -> 69 'cannot connect'", (rc, err))

rc, out, err = call("--code", " ")
t.check(rc == 65 and "empty" in err, "a tool error (blank code) -> 65 with the server's message", (rc, err))

bad_stdin = write("bad-stdin", b"\xff\xfe", "wb")
rc, out, err = call("--stdin", bad_stdin, "--code", "print(1)")
t.check(rc == 65 and "UTF-8" in err, "stdin that is not UTF-8 -> 65 before sending", (rc, err))

rc, out, err = client("call", "--url", f"http://127.0.0.1:{srv.port}/elsewhere", "--token-file",
                      token_file, "--code", "print(1)")
t.check(rc == 76 and "HTTP 404" in err, "no MCP endpoint at the URL -> 76", (rc, err))

rc, out, err = client("call", "--url", URL, "--token-file", token_file)
t.check(rc == 64 and "no code" in err, "no code -> usage error 64", (rc, err))
rc, out, err = client("call", "--url", URL, "--code", "1", code_file)
t.check(rc == 64, "--code and FILE together -> 64", (rc, err))
rc, out, err = client("probe", "--url", URL, "--clients", "2")
t.check(rc == 64 and "does not apply" in err, "an option of another command -> 64", (rc, err))
rc, out, err = client("call", "--code", "1")
t.check(rc == 64 and "--url" in err, "missing --url -> 64", (rc, err))
rc, out, err = client("call", "--url", URL, "--token-file", os.path.join(tmp, "missing"), "--code", "1")
t.check(rc == 66 and "token file" in err, "unreadable token file -> 66", (rc, err))
for cmd in ("call", "probe", "bench"):
    rc, out, err = client(cmd, "--help")
    t.check(rc == 0 and out.startswith(b"usage: mcp-exec-client " + cmd.encode()),
            f"{cmd} --help", (rc, out[:80]))
rc, out, err = client("--help")
t.check(rc == 0 and b"call" in out and b"probe" in out and b"bench" in out, "--help lists the commands", out[:200])

# ---- busy: one run at a time and no queue ----
busy_srv = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN, "MCP_EXEC_MAX_QUEUE": 0})
BUSY_URL = f"http://127.0.0.1:{busy_srv.port}/mcp"
e = {"PATH": "/usr/bin:/bin"}
long_run = subprocess.Popen([CLIENT, "call", "--url", BUSY_URL, "--token-file", token_file, "--code",
                             "import time; time.sleep(5); print('long done')"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
deadline = time.time() + 60
running = False
while time.time() < deadline and not running:
    st, h, body = busy_srv.request("GET", "/metrics")
    running = b"\nmcp_exec_running 1" in body
    if not running:
        time.sleep(0.1)
t.check(running, "the long run started", running)
rc, out, err = client("call", "--url", BUSY_URL, "--token-file", token_file, "--code", "print(1)")
t.check(rc == 75 and "busy" in err, "busy server -> 75 with the server's message", (rc, err))
rc, out, err = client("probe", "--url", BUSY_URL)
t.check(rc == 1 and b"readyz: 503" in out, "probe on a saturated server -> 1 (not ready)", (rc, out, err))
lout, lerr = long_run.communicate(timeout=120)
t.check(long_run.returncode == 0 and lout == b"long done\n", "the long run still finishes",
        (long_run.returncode, lout, lerr))
busy_srv.stop()

# ---- probe ----
rc, out, err = client("probe", "--url", URL)
t.check(rc == 0 and b"healthz: 200" in out and b"readyz: 200" in out, "probe on a live server -> 0",
        (rc, out, err))
rc, out, err = client("probe", "--url", f"http://127.0.0.1:{free_port()}/mcp")
t.check(rc != 0 and "cannot connect" in err, "probe on a dead port -> non-zero", (rc, out, err))

# ---- bench ----
def bench_kv(out):
    """The key=value line bench/run.sh greps for (it starts with p50_ms=)."""
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("p50_ms="):
            return dict(p.split("=", 1) for p in line.split() if "=" in p)
    return {}


rc, out, err = client("bench", "--url", URL, "--token-file", token_file, "--clients", "2", "--calls", "3")
kv = bench_kv(out)
t.check(rc == 0 and "p50_ms" in kv and kv.get("errors") == "0" and kv.get("calls") == "6"
        and kv.get("ok") == "6", "bench 2 clients x 3 calls: p50 and 0 errors", (rc, out[:300], err))
t.check(all(float(kv.get(k, "0")) > 0 for k in ("p50_ms", "p99_ms", "max_ms", "calls_per_s")),
        "bench numbers are positive", kv)
t.check(float(kv.get("p50_ms", 0)) <= float(kv.get("p90_ms", 0)) <= float(kv.get("p99_ms", 0))
        <= float(kv.get("max_ms", 0)), "bench percentiles are ordered", kv)
t.check(b"latency (ms)" in out and b"calls/s" in out, "bench prints a table for people", out[-300:])
rc, out, err = client("bench", "--url", URL, "--token-file", token_file, "--clients", "1", "--calls",
                      "2", "--code", "import sys; sys.exit(1)")
t.check(rc == 1 and bench_kv(out).get("errors") == "2", "bench counts failing programs as errors",
        (rc, out[:200], err))
# The form bench/run.sh uses, also against other MCP servers.
rc, out, err = client("bench", "--url", URL, "--token-file", token_file, "--clients", "2", "--calls",
                      "2", "--warmup", "1", "--tool", "exec", "--args", '{"code":"print(1)"}',
                      "--expect", '"exit_code":0')
kv = bench_kv(out)
t.check(rc == 0 and kv.get("ok") == "4" and kv.get("errors") == "0",
        "bench --tool/--args/--expect/--warmup: warm-up calls are not counted", (rc, out[:300], err))
rc, out, err = client("bench", "--url", URL, "--token-file", token_file, "--calls", "2",
                      "--args", '{"code":"print(1)"}', "--expect", "never in the result")
t.check(rc == 1 and bench_kv(out).get("errors") == "2", "bench --expect that does not match -> errors",
        (rc, out[:200], err))
rc, out, err = client("bench", "--url", URL, "--token-file", token_file, "--calls", "1",
                      "--tool", "no_such_tool", "--args", "{}")
t.check(rc == 1 and bench_kv(out).get("errors") == "1", "bench against an unknown tool -> errors",
        (rc, out[:200], err))
rc, out, err = client("bench", "--url", URL, "--args", "[1]")
t.check(rc == 64 and "JSON object" in err, "bench --args that is not an object -> 64", (rc, err))

srv.stop()
log = srv.drain_stderr()
t.check(TOKEN not in log, "server logs carry no token")
t.done()
