"""The egress broker end to end, with the real binary: run code reaches
local upstreams (HTTP and HTTPS with a test CA) only through mcpx.fetch and
only where the policy allows, the credential is injected and invisible to the
run, every denial reason is reported, addresses are checked where curl
connects, redirects are re-checked, caps hold, a run ended mid-request leaves
nothing behind, the policy reloads, and without a policy nothing changes.

Runs over stdio and HTTP in the warm mode MCPX_TEST_WARM selects (cold,
auto, after-reap)."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

from egress_fixture import Upstream, closed_port, make_ca, tls_context, write_policy
from mcpx_harness import (BIN, Failures, HttpServer, McpHttpClient, StdioServer, audits,
                          base_env, structured, tool_error_text, warm_mode)

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-broker-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")          # where runs live (readable by runs)
secrets = os.path.join(tmp, "secrets")    # where the server's secrets live (not)
os.mkdir(work, 0o711)
os.mkdir(secrets, 0o755)
SECRET = "tok-" + uuid.uuid4().hex
current_secret = SECRET
secret_file = os.path.join(secrets, "token")
with open(secret_file, "w") as f:
    f.write(SECRET + "\n")
# World-readable on purpose: only the sandbox (Landlock) may keep runs out.
os.chmod(secret_file, 0o644)
policy_file = os.path.join(secrets, "policy.json")

ca = make_ca(tmp, "good")
make_ca(tmp, "rogue")
up = Upstream()
tls_up = Upstream(tls_context(tmp, "good"))
rogue_up = Upstream(tls_context(tmp, "rogue"))
DEAD = closed_port()
URL = f"http://127.0.0.1:{up.port}/"
LOCAL = ["127.0.0.1/32"]


def rules():
    return [
        {"name": "small", "url_prefix": URL + "big", "allow_cidrs": LOCAL,
         "max_response_bytes": 1000},
        {"name": "local", "url_prefix": URL, "methods": ["GET", "POST", "PUT"],
         "allow_cidrs": LOCAL, "timeout_s": 60,
         "credential": {"header": "X-Key", "secret_file": secret_file, "prefix": "K "}},
        {"name": "byname", "url_prefix": f"http://localhost:{up.port}/"},
        {"name": "metadata", "url_prefix": "http://169.254.169.254/"},
        {"name": "tls", "url_prefix": f"https://127.0.0.1:{tls_up.port}/", "allow_cidrs": LOCAL},
        {"name": "rogue", "url_prefix": f"https://127.0.0.1:{rogue_up.port}/",
         "allow_cidrs": LOCAL},
        {"name": "dead", "url_prefix": f"http://127.0.0.1:{DEAD}/", "allow_cidrs": LOCAL},
        {"name": "elsewhere", "url_prefix": "https://api.example.com/"},
    ]


GRANTED = ["small", "local", "byname", "metadata", "tls", "rogue", "dead"]


def policy(granted=GRANTED, **caps):
    return {"egress": rules(), "exec": dict({"egress": granted, "max_in_flight": 2,
                                             "max_requests": 40}, **caps)}


write_policy(policy_file, policy())
# Proxies in the server's environment must be ignored: they lead nowhere.
ENV = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work,
               MCP_EXEC_EGRESS_CA_FILE=ca, MCP_EXEC_PRELOAD="json",
               http_proxy=f"http://127.0.0.1:{DEAD}", HTTPS_PROXY=f"http://127.0.0.1:{DEAD}",
               ALL_PROXY=f"http://127.0.0.1:{DEAD}")
MODE = warm_mode(ENV)
print("   warm mode:", MODE)

PRELUDE = f"""
import json, os, mcpx
URL = {URL!r}
def attempt(f):
    try:
        r = f()
        return "allowed %d" % r.status
    except mcpx.Denied as e:
        return "denied %s %s" % (e.reason, isinstance(e, PermissionError))
    except mcpx.FetchError as e:
        return "fetcherror %s %s" % (isinstance(e, OSError), e)
"""


NONE_CODE = """
import os, mcpx
print("env", os.environ.get("MCPX_CHANNEL_FD"))
try:
    os.fstat(4); print("fd4 open")
except OSError:
    print("fd4 closed")
try:
    mcpx.fetch("http://127.0.0.1/")
except mcpx.Denied as e:
    print("denied", e.reason, e)
"""


def lines(sc):
    return (sc or {}).get("stdout", "").splitlines()


def battery(call, tag):
    """The checks every transport and warm mode must pass; call(code, **args)
    returns structuredContent."""
    sc = call(PRELUDE + """
r = mcpx.fetch(URL + "echo?q=1&token=abc")
d = r.json()
print("get", r.status, d["method"], d["path"], d["has_key"], r.headers.get("content-type"))
print("url", r.url, r.ok)
print("channel", os.environ.get("MCPX_CHANNEL_FD"))
""")
    out = lines(sc)
    t.check(out[:1] == ["get 200 GET /echo?q=1&token=abc True application/json"],
            f"[{tag}] allowed GET with its query", sc)
    t.check(f"url {URL}echo?q=1&token=abc True" in out and "channel 4" in out,
            f"[{tag}] the response carries the final URL; the channel is fd 4", out)
    got = up.last("/echo?q=1")
    t.check(got and got["headers"].get("x-key") == "K " + current_secret,
            f"[{tag}] the rule's credential reached the upstream", got and got["headers"])
    t.check(SECRET not in json.dumps(sc), f"[{tag}] the credential is invisible to the run")

    sc = call(PRELUDE + """
r = mcpx.fetch(URL + "echo", method="POST", json={"a": [1, "x"]})
d = r.json()
print("post", r.status, d["method"], d["body"], d["headers"].get("content-type"))
r = mcpx.fetch(URL + "echo", method="put", data="raw-bytes", headers={"X-Test": "v"})
d = r.json()
print("put", d["method"], d["body"], d["headers"].get("x-test"), d["headers"].get("content-type"))
r = mcpx.fetch(URL + "headers")
print("headers", r.headers.get("x-upstream"), r.headers.get("set-cookie"))
print("status", mcpx.fetch(URL + "status?code=404").status)
print("small", len(mcpx.fetch(URL + "big?n=500").content))
r = mcpx.fetch(URL + "redirect?to=/echo%3Ffrom%3Dredirect")
print("redirected", r.status, r.url.endswith("from=redirect"), r.json()["has_key"])
r = mcpx.fetch(URL + "redirect?to=https://127.0.0.1:{TLS_PORT}/echo%3Ffrom%3Dxorigin")
print("xorigin", r.status, r.url.startswith("https://"), r.json()["has_key"])
""".replace("{TLS_PORT}", str(tls_up.port)))
    out = lines(sc)
    t.check('post 200 POST {"a": [1, "x"]} application/json' in out,
            f"[{tag}] POST with json= sends the JSON and its content type", out)
    t.check("put PUT raw-bytes v None" in out,
            f"[{tag}] data= and headers= are sent as given, no invented content type", out)
    t.check("headers yes a=1, b=2" in out, f"[{tag}] response headers, repeated ones joined", out)
    t.check("status 404" in out and "small 500" in out,
            f"[{tag}] an HTTP error status is a response; a small body passes the cap", out)
    t.check("redirected 200 True True" in out,
            f"[{tag}] a redirect inside the policy is followed, credential and all", out)
    # The first hop's rule has a credential, the target's rule (another
    # origin) none: the credential stays behind (issue 21 10).
    got = tls_up.last("/echo?from=xorigin")
    t.check("xorigin 200 True False" in out and got is not None and "x-key" not in got["headers"],
            f"[{tag}] a redirect to another origin does not carry the first rule's credential",
            (out, got and got["headers"]))

    sc = call(PRELUDE + f"""
cases = [
    ("no_rule", lambda: mcpx.fetch("https://api.example.com/x")),
    ("no_rule", lambda: mcpx.fetch("http://127.0.0.2:{up.port}/echo")),
    ("method", lambda: mcpx.fetch(URL + "echo", method="DELETE")),
    ("header", lambda: mcpx.fetch(URL + "echo", headers={{"Host": "evil.example"}})),
    ("header", lambda: mcpx.fetch(URL + "echo", headers={{"x-key": "mine"}})),
    ("header", lambda: mcpx.fetch(URL + "echo", headers={{"X-A": "a\\r\\nX-Key: forged"}})),
    ("header", lambda: mcpx.fetch(URL + "echo", headers={{"Proxy-Authorization": "x"}})),
    ("header", lambda: mcpx.fetch(URL + "echo", headers={{"Connection": "close"}})),
    ("address", lambda: mcpx.fetch("http://localhost:{up.port}/echo")),
    ("address", lambda: mcpx.fetch("http://169.254.169.254/latest/meta-data/")),
    ("redirect", lambda: mcpx.fetch(URL + "redirect?to=http://10.1.2.3/")),
    ("redirect", lambda: mcpx.fetch(URL + "redirect?to=https://api.example.com/")),
    # Covered by a rule, refused at its address, as a redirect too.
    ("address", lambda: mcpx.fetch(URL + "redirect?to=http://169.254.169.254/latest/meta-data/")),
    ("redirect", lambda: mcpx.fetch(URL + "loop")),
    ("too_large", lambda: mcpx.fetch(URL + "big?n=5000")),
    ("bad_url", lambda: mcpx.fetch("ftp://127.0.0.1/")),
    ("bad_url", lambda: mcpx.fetch("http://u:p@127.0.0.1:{up.port}/echo")),
    ("bad_url", lambda: mcpx.fetch(URL + "a/%2e%2e/echo")),
    # Disguised dot segments, and a host that changes under decoding.
    ("bad_url", lambda: mcpx.fetch(URL + "a/..;/echo")),
    ("bad_url", lambda: mcpx.fetch(URL + "a/%2e%2e%3b/echo")),
    ("bad_url", lambda: mcpx.fetch("http://127%2e0%2e0%2e1:{up.port}/echo")),
]
for want, f in cases:
    print(want, attempt(f))
print("dead", attempt(lambda: mcpx.fetch("http://127.0.0.1:{DEAD}/")))
print("tls", attempt(lambda: mcpx.fetch("https://127.0.0.1:{tls_up.port}/echo")))
print("rogue", attempt(lambda: mcpx.fetch("https://127.0.0.1:{rogue_up.port}/echo")))
""")
    out = lines(sc)
    bad = [l for l in out[:21] if l.split() != [l.split()[0], "denied", l.split()[0], "True"]]
    t.check(len(out) == 24 and not bad,
            f"[{tag}] each refusal raises mcpx.Denied (a PermissionError) with its reason", bad or out)
    t.check(any(l.startswith("dead fetcherror True") for l in out),
            f"[{tag}] a network failure raises mcpx.FetchError (an OSError)", out)
    t.check("tls allowed 200" in out, f"[{tag}] HTTPS to a server the configured CA signed", out)
    rogue = next((l for l in out if l.startswith("rogue")), "")
    t.check(rogue.startswith("rogue fetcherror True") and "certificate" in rogue.lower(),
            f"[{tag}] TLS verification is on: an untrusted certificate fails", rogue)

    sc = call(PRELUDE + f"""
import socket
for p in [{secret_file!r}, {policy_file!r}]:
    try:
        open(p).read(); print("READ", p)
    except OSError as e:
        print("unreadable", e.errno)
print("env", any("tok-" in v for v in os.environ.values()))
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", {up.port})); print("CONNECTED")
except OSError as e:
    print("socket denied", e.errno)
""")
    out = lines(sc)
    t.check(out.count("unreadable 13") == 2 and "env False" in out,
            f"[{tag}] the run can read neither the secret file nor the policy file", out)
    t.check(any(l.startswith("socket denied") for l in out) and "CONNECTED" not in out,
            f"[{tag}] a run with egress still cannot open a network socket", out)

    # A run that abuses its channel only breaks its own mcpx.
    sc = call(PRELUDE + """
os.write(4, b"\\xff" * 64)
print("after", attempt(lambda: mcpx.fetch(URL + "echo")))
""")
    t.check(any(l.startswith("after fetcherror True") for l in lines(sc)),
            f"[{tag}] garbage on the channel closes it: the run gets FetchError", sc)
    sc = call(PRELUDE + "print(attempt(lambda: mcpx.fetch(URL + 'echo')))")
    t.check(lines(sc) == ["allowed 200"], f"[{tag}] the next run is served as before", sc)


def stdio_call(s):
    def call(code, **args):
        return structured(s.call(code, **args)) or {}
    return call


def wait_log(s, text, timeout=30):
    deadline = time.time() + timeout
    while text not in s.stderr_text() and time.time() < deadline:
        s._pump(0.2)
    return text in s.stderr_text()


# ---- stdio ----
s = StdioServer(ENV)
s.initialize()
if MODE == "fork-server":
    t.check(s.wait_fork_server(), "the fork server's zygote became ready")
call = stdio_call(s)
if MODE == "after-reap":
    # Waits until a run is served by an interpreter prepared before the call
    # (and with the channel): runs back to back find it still preloading.
    for _ in range(40):
        call(PRELUDE + "print(attempt(lambda: mcpx.fetch(URL + 'echo')))")
        if any(a.get("warm") for a in audits(s.stderr_text(), "exec")):
            break
        time.sleep(0.25)
    t.check(any(a.get("warm") for a in audits(s.stderr_text(), "exec")),
            "[after-reap] an egress run was served by a prepared interpreter")

r = s.request("tools/list")
tool = next(x for x in r["result"]["tools"] if x["name"] == "exec")
t.check("mcpx.fetch" in tool["description"] and URL in tool["description"]
        and "api.example.com" not in tool["description"],
        "exec's description names mcpx.fetch and only the URLs exec may reach", tool["description"][-600:])
t.check(tool["annotations"]["openWorldHint"] is True and tool["annotations"]["destructiveHint"] is True,
        "the annotations say the world is open and POST can change it", tool["annotations"])

battery(call, "stdio")

# Caps: requests in flight, requests per run; a run that ends mid-request.
up.rearm()
sc = call(PRELUDE + """
import threading
# Counts the two hanging requests out of the run: once both are on the
# channel, the broker reads the next request after them.
ch = mcpx._get_channel()
sent, send = threading.Semaphore(0), ch._send
def counted(msg, body):
    send(msg, body)
    sent.release()
ch._send = counted
for _ in range(2):
    threading.Thread(target=lambda: mcpx.fetch(URL + "hang"), daemon=True).start()
sent.acquire(); sent.acquire()
print("third", attempt(lambda: mcpx.fetch(URL + "echo")))
os._exit(0)      # ends with two requests in flight
""")
t.check(lines(sc) == ["third denied in_flight True"],
        "a request beyond max_in_flight is refused while two hang", sc)

# A run cancelled while two of its requests hang upstream: both are cut.
# Its requests carry a tag of their own: the previous run's, cut when it
# ended, may reach the upstream late and be cut then.
tag = f"cancel-{s.next_id}"
rid = s.next_id
s.next_id += 1
s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "exec", "arguments": {
    "code": PRELUDE + """
import threading
ths = [threading.Thread(target=lambda: mcpx.fetch(URL + "hang?tag=TAG")) for _ in range(2)]
[x.start() for x in ths]
[x.join() for x in ths]
""".replace("TAG", tag)}}})
t.check(up.wait(lambda: up.hanging_tag.get(tag) == 2), "two requests of a run hang upstream",
        up.hanging_tag)
s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
t.check(up.wait(lambda: up.disconnects_tag.get(tag) == 2 and up.hanging_tag.get(tag) == 0),
        "the cancelled run's end cut both connections upstream",
        (up.disconnects_tag.get(tag), up.hanging_tag.get(tag)))

sc = call(PRELUDE + """
n = 0
while True:
    a = attempt(lambda: mcpx.fetch(URL + "echo"))
    if not a.startswith("allowed"):
        break
    n += 1
print(n, a)
print(attempt(lambda: mcpx.fetch(URL + "echo")))
""")
t.check(lines(sc) == ["40 denied run_limit True", "denied run_limit True"],
        "max_requests caps the run's requests", sc)

sc = call(PRELUDE + "mcpx.fetch(URL + 'hang')", timeout_s=1)
t.check(sc.get("timed_out") is True, "a run killed (timeout) while its request hangs", sc)
t.check(up.wait(lambda: up.hanging == 0), "nothing of it hangs upstream", up.hanging)
sc = call(PRELUDE + """
import threading
res = []
ths = [threading.Thread(target=lambda: res.append(attempt(lambda: mcpx.fetch(URL + "echo"))))
       for _ in range(2)]
[x.start() for x in ths]
[x.join() for x in ths]
print(sorted(res))
""")
t.check(lines(sc) == ["['allowed 200', 'allowed 200']"],
        "the next run is clean: its own two requests in flight are allowed", sc)

# Policy reload: a new grant, a bad file that leaves it in force, a restore.
write_policy(policy_file, policy(granted=["small"]))
t.check(wait_log(s, "reloaded: version 2"), "an edited policy is reloaded")
sc = call(PRELUDE + "print(attempt(lambda: mcpx.fetch(URL + 'echo')))")
t.check(lines(sc) == ["denied no_rule True"], "runs after the reload get the new grant", sc)
write_policy(policy_file, '{"egress": [], "exec": {"egress": ["nope"]}}')
t.check(wait_log(s, "version 2 stays in force"), "a bad new policy is logged and the old one kept")
t.check("/exec/egress/0" in s.stderr_text(), "the log names the JSON pointer of the problem")
# A version that grants exec nothing: runs (warm ones prepared before it too)
# get no channel.
write_policy(policy_file, policy(granted=[]))
t.check(wait_log(s, "reloaded: version 3"), "a policy without exec rules is loaded")
sc = call(NONE_CODE)
t.check(lines(sc) == ["env None", "fd4 closed", "denied not_configured no egress is configured for this run"],
        "after it, runs have no channel, even one prepared before the reload", sc)
write_policy(policy_file, policy())
t.check(wait_log(s, "reloaded: version 4"), "the fixed policy is loaded")
sc = call(PRELUDE + "print(attempt(lambda: mcpx.fetch(URL + 'echo')))")
t.check(lines(sc) == ["allowed 200"], "and used", sc)
current_secret = "rotated-" + SECRET
with open(secret_file, "w") as f:
    f.write(current_secret + "\n")
t.check(wait_log(s, "reloaded: version 5"), "a rotated secret is picked up")
call(PRELUDE + "mcpx.fetch(URL + 'echo?rotated')")
got = up.last("/echo?rotated")
t.check(got and got["headers"].get("x-key") == "K rotated-" + SECRET, "with its new value",
        got and got["headers"].get("x-key"))

t.check(s.close() == 0, "the server exits cleanly (everything of the broker freed)")
err = s.stderr_text()
t.check("Sanitizer" not in err, "no sanitizer report", err[-2000:] if "Sanitizer" in err else None)
eg = audits(err, "egress")
ex = {a["run_id"] for a in audits(err, "exec")}
t.check(eg and all(a["run_id"] in ex for a in eg),
        "every egress audit line names the run of an exec audit line", len(eg))
t.check(all("?" not in (a.get("path") or "") for a in eg) and "token=abc" not in err,
        "audit lines carry the path without its query")
t.check(SECRET not in err, "the secret appears in no log line")
reasons = {a["reason"] for a in eg if a["decision"] == "denied"}
t.check({"no_rule", "method", "header", "address", "redirect", "too_large", "bad_url",
         "in_flight", "run_limit"} <= reasons, "denials are audited with their reason", reasons)
t.check(any(a["decision"] == "allowed" and a.get("result") == "cancelled" for a in eg),
        "a cancelled request is audited as such")
t.check(any(a["rule"] == "local" and a["status"] == 200 and a["bytes_in"] > 0 and
            a["origin"] == f"http://127.0.0.1:{up.port}" for a in eg),
        "an allowed request's line: rule, origin, status, bytes", eg[:1])
t.check(any(a["hop"] == 1 for a in eg), "a redirect's second hop has its own line")
if MODE != "off":
    t.check(sum(1 for a in audits(err, "exec") if a.get("warm")) >= 1,
            f"[{MODE}] egress runs were served warm")

# ---- HTTP ----
TOKEN = "broker-token-0123456789abcdef"
srv = HttpServer(dict(ENV, MCP_EXEC_AUTH_TOKEN=TOKEN))
c = McpHttpClient(srv, token=TOKEN)
c.initialize()
if MODE == "fork-server":
    deadline = time.time() + 60
    while "fork server ready" not in srv.drain_stderr() and time.time() < deadline:
        time.sleep(0.1)


battery(c.call_structured, "http")
st, _, m = srv.request("GET", "/metrics")
m = m.decode()
t.check('mcp_exec_egress_requests_total{rule="local",outcome="ok",reason="none"}' in m and
        'outcome="denied",reason="no_rule"' in m and SECRET not in m,
        "/metrics counts requests by rule and outcome", [l for l in m.splitlines() if "egress" in l][:8])
srv.stop()

# ---- a proxy only when MCP_EXEC_EGRESS_PROXY names one ----
proxy = Upstream()
s = StdioServer(dict(ENV, MCP_EXEC_EGRESS_PROXY=f"http://127.0.0.1:{proxy.port}"))
s.initialize()
sc = structured(s.call(PRELUDE + "print(mcpx.fetch(URL + 'echo?via').json())")) or {}
t.check(lines(sc) == [f"{{'proxied': '{URL}echo?via'}}"],
        "with MCP_EXEC_EGRESS_PROXY every request goes through that proxy", sc)
s.close()

# ---- without a policy, or without exec rules: nothing changes ----
no_exec = os.path.join(secrets, "no-exec.json")
write_policy(no_exec, {"egress": rules()[:2]})
for name, env in (("no policy", base_env(MCP_EXEC_WORKDIR_BASE=work)),
                  ("no exec rules", dict(ENV, MCP_EXEC_POLICY=no_exec))):
    s = StdioServer(env)
    s.initialize()
    sc = structured(s.call(NONE_CODE)) or {}
    t.check(lines(sc) == ["env None", "fd4 closed",
                          "denied not_configured no egress is configured for this run"],
            f"[{name}] no channel, no variable; mcpx.fetch says egress is not configured", sc)
    tool = next(x for x in s.request("tools/list")["result"]["tools"] if x["name"] == "exec")
    t.check("mcpx.fetch" not in tool["description"] and "no network access" in tool["description"]
            and tool["annotations"]["openWorldHint"] is False,
            f"[{name}] exec's description is today's", tool["description"][:200])
    s.close()

# ---- --check-config shows the egress settings and loads the policy ----
write_policy(policy_file, policy())
p = subprocess.run([BIN, "--check-config"], env=dict(ENV, MCP_EXEC_EGRESS_PROXY="http://u:pw@127.0.0.1:1"),
                   capture_output=True, text=True, timeout=120)
t.check(f"MCP_EXEC_POLICY={policy_file}" in p.stdout and f"MCP_EXEC_EGRESS_CA_FILE={ca}" in p.stdout
        and "policy: version 1, 8 egress rules, exec may use 7" in p.stdout
        and "MCP_EXEC_EGRESS_PROXY=<set, with credentials: redacted>" in p.stdout
        and "pw@" not in p.stdout + p.stderr and SECRET not in p.stdout + p.stderr,
        "--check-config shows the egress settings (a proxy password redacted) and loads the policy",
        p.stdout[-800:])

# ---- a bad policy stops the start, naming the problem ----
bad = os.path.join(secrets, "bad.json")
write_policy(bad, {"egress": [{"name": "a", "url_prefix": "http://a/", "bogus": 1}]})
p = subprocess.run([BIN], env=dict(ENV, MCP_EXEC_POLICY=bad), stdin=subprocess.DEVNULL,
                   capture_output=True, text=True, timeout=120)
t.check(p.returncode != 0 and "/egress/0/bogus: unknown key" in p.stderr,
        "a bad policy at start refuses to start, naming the JSON pointer", (p.returncode, p.stderr[-300:]))
readable = os.path.join(work, "policy.json")
write_policy(readable, policy())
p = subprocess.run([BIN], env=dict(ENV, MCP_EXEC_POLICY=readable), stdin=subprocess.DEVNULL,
                   capture_output=True, text=True, timeout=120)
t.check(p.returncode != 0 and "runs can read" in p.stderr,
        "a policy file where runs can read refuses to start", (p.returncode, p.stderr[-300:]))

shutil.rmtree(tmp, ignore_errors=True)
t.done()
