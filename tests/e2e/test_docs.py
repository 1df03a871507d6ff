"""The README's and docs/policy.md's commands and snippets, run as written.

A newcomer copies them; each must work as it stands:
- README "Start here": `scripts/run.sh --transport=http` is started from the
  checkout, the line it prints when ready is the one the README shows, and
  the client command prints 42;
- README's token setup: the token command, the server started with the
  token file, and both `mcp-exec-client` commands;
- every `exec` call shown in the README (a JSON block naming "exec") runs
  with exit code 0 and, when it shows files, returns them;
- every policy shown in README.md and docs/policy.md loads in
  `--check-config`, with its secret and source files (the paths under
  /var/run/secrets/mcp-exec/ are laid out in a folder of the test's own, the
  only change made to a snippet; a function's source is the Python block
  that names its path);
- docs/policy.md "Try it locally": its shell block runs as it stands and its
  client command prints 200;
- every Python block compiles (those that reach hosts outside this machine
  cannot run here).
The MCP client configuration snippets are loaded by LangChain's MCP
adapters in tests/interop/run.sh, where the npm packages are.

The HTTP parts need ports 8080 and 8000 free on loopback, as the docs use
them; the test fails (and says so) when they are not."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

from mcpx_harness import BIN, Failures, StdioServer, base_env, structured

t = Failures()
ROOT = os.environ.get("MCPX_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
SECRETS = "/var/run/secrets/mcp-exec/"


def fenced(text):
    """(language, text) of every fenced block in Markdown text."""
    out, lang, buf = [], None, None
    for line in text.splitlines(keepends=True):
        m = re.match(r"^\s*```(\w*)\s*$", line)
        if m and buf is None:
            lang, buf = m.group(1), []
        elif m and buf is not None:
            out.append((lang, "".join(buf)))
            buf = None
        elif buf is not None:
            buf.append(line)
    return out


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def blocks(rel):
    return fenced(read(rel))


def section(rel, title):
    """The blocks of one ## section."""
    text = read(rel)
    start = text.index("## " + title + "\n")
    end = text.find("\n## ", start + 1)
    return fenced(text[start:end if end > 0 else len(text)])


def port_free(port):
    """Whether a server could listen on port now (as the server binds:
    connections of an earlier server in TIME_WAIT do not count)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_listening(port, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


class Background:
    """Shell lines of the docs, read by bash line by line as a terminal's
    shell does (with `bash -c` the last command would replace the shell, and
    a server would then be the parent of what the lines put in the
    background), in a process group of their own so that the server and
    anything in the background go with it; collects what they print."""

    def __init__(self, cmd, env=None):
        self.proc = subprocess.Popen(["bash", "-s"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.proc.stdin.write(cmd.encode())
        self.proc.stdin.close()
        self.out = b""

    def wait_for(self, pattern, timeout=600):
        deadline = time.time() + timeout
        os.set_blocking(self.proc.stdout.fileno(), False)
        while time.time() < deadline:
            if re.search(pattern, self.out):
                return True
            chunk = self.proc.stdout.read()
            if chunk:
                self.out += chunk
            elif self.proc.poll() is not None:
                return bool(re.search(pattern, self.out))
            else:
                time.sleep(0.1)
        return False

    def stop(self):
        """SIGTERM to the whole group, then wait until every process of it
        is gone (the server drains after its shell has already exited), so
        that the next command finds its port free; SIGKILL after 60 s."""
        pgid = self.proc.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.time() + 60
        while time.time() < deadline:
            self.proc.poll()
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def text(self):
        return self.out.decode(errors="replace")


def sh(cmd, env=None, timeout=120):
    p = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def user_env(**extra):
    """What a newcomer's shell has: the machine's PATH, no MCP_EXEC_* of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_EXEC_", "MCPX_"))}
    env.update(extra)
    return env


# ---- README: Start here ----------------------------------------------------------
start = section("README.md", "Start here")
shells = [b for lang, b in start if lang == "sh"]
ready_shown = next(b for lang, b in start if lang == "").strip()
serve_cmd = [l for l in shells[0].splitlines() if l.startswith("scripts/run.sh")][0]
client_cmds_start = shells[1].strip().splitlines()
t.check(serve_cmd == "scripts/run.sh --transport=http", "README: the serve command", serve_cmd)
if t.check(port_free(8080), "port 8080 is free for the README's commands"):
    srv = Background(serve_cmd, user_env())
    try:
        ready_re = re.escape(ready_shown).replace(re.escape("…"), ".*").encode()
        t.check(srv.wait_for(ready_re), "README: the server prints the ready line shown",
                srv.text()[-1500:])
        t.check(len(client_cmds_start) == 2, "README: a Python and a bash call", client_cmds_start)
        for cmd in client_cmds_start:
            rc, out, err = sh(cmd, user_env())
            t.check(rc == 0 and out == "42\n", f"README: `{cmd}` prints 42", (rc, out, err))
    finally:
        srv.stop()

# ---- README: the token setup and the client's commands ---------------------------------
http = section("README.md", "Calling it")
token_setup = next(b for lang, b in http if lang == "sh" and "token.txt" in b and "run.sh" in b)
client_cmds = next(b for lang, b in http if lang == "sh" and "mcp-exec-client call" in b)
make_token, serve_tok = token_setup.strip().splitlines()
token_file = os.path.join(ROOT, "token.txt")
t.check(not os.path.exists(token_file), "no token.txt in the checkout before the test")
try:
    rc, _, err = sh(make_token, user_env())
    token = open(token_file).read() if os.path.exists(token_file) else ""
    t.check(rc == 0 and len(token) >= 32 and os.stat(token_file).st_mode & 0o777 == 0o600,
            "README: the token command makes a 0600 token file", (rc, err, len(token)))
    if t.check(port_free(8080), "port 8080 is free for the token setup"):
        srv = Background(serve_tok, user_env())
        try:
            t.check(srv.wait_for(rb"listening on http://127\.0\.0\.1:8080"),
                    "README: the server starts with the token file", srv.text()[-1500:])
            for line in client_cmds.strip().splitlines():
                cmd = line.split("#")[0].strip()
                rc, out, err = sh(cmd, user_env())
                want = "42\n" if " call " in cmd else None
                t.check(rc == 0 and (want is None or out == want), f"README: `{cmd}`",
                        (rc, out, err))
            rc, out, err = sh("build/mcp-exec-client call --url http://127.0.0.1:8080/mcp "
                              "--code 'print(1)'", user_env(MCP_EXEC_TOKEN="wrong"))
            t.check(rc != 0, "…and without the right token the call is refused", (rc, out, err))
        finally:
            srv.stop()
finally:
    if os.path.exists(token_file):
        os.unlink(token_file)

# ---- README: every exec call shown runs ---------------------------------------------
calls = []
for lang, b in blocks("README.md"):
    if lang != "json" or "…" in b:
        continue
    v = json.loads(b)
    if isinstance(v, dict) and v.get("name") == "exec":
        calls.append(v["arguments"])
t.check(len(calls) >= 2, "README shows exec calls", len(calls))
s = StdioServer(base_env())
s.initialize()
for args in calls:
    r = s.request("tools/call", {"name": "exec", "arguments": args})
    sc = structured(r)
    ok = sc is not None and sc["exit_code"] == 0 and not r["result"].get("isError")
    if "files" in args:
        ok = ok and any(f.get("returned") for f in sc.get("files", []))
    t.check(ok, "README: the exec call %r runs" % args["code"][:40], r)
s.close()


# ---- every policy shown loads --------------------------------------------------------
def python_sources(rel):
    """Function sources shown in a doc: Python blocks whose first line names
    the file (`# /var/run/secrets/mcp-exec/policy/x.py`) or that define
    handler (a README-style `# x.py`)."""
    out = {}
    for lang, b in blocks(rel):
        first = b.splitlines()[0] if b.strip() else ""
        if lang == "python" and first.startswith("# ") and first.endswith(".py"):
            out[os.path.basename(first[2:].strip())] = b
    return out


def load_policy(rel, text, sources):
    """--check-config of one policy, its /var/run/secrets paths laid out in
    a folder only the server's uid can read."""
    home = tempfile.mkdtemp(prefix="mcpx-docs-", dir="/var/tmp")
    try:
        for path in set(re.findall(re.escape(SECRETS) + r"[A-Za-z0-9_./-]+", text)):
            local = os.path.join(home, path[len(SECRETS):])
            os.makedirs(os.path.dirname(local), exist_ok=True)
            with open(local, "w") as f:
                if local.endswith(".py"):
                    f.write(sources.get(os.path.basename(local), "def handler(args, ctx):\n"
                                        "    return {}\n"))
                else:
                    f.write("docs-test-secret\n")
        pol = os.path.join(home, "policy.json")
        with open(pol, "w") as f:
            f.write(text.replace(SECRETS, home + "/"))
        p = subprocess.run([BIN, "--check-config"], env=base_env(MCP_EXEC_POLICY=pol),
                           capture_output=True, text=True, timeout=120)
        line = next((l for l in p.stdout.splitlines() if l.startswith("policy:")), "")
        return line, p.stdout[-800:] + p.stderr[-800:]
    finally:
        subprocess.run(["rm", "-rf", home])


for rel in ("README.md", "docs/policy.md"):
    sources = python_sources(rel)
    n = 0
    for lang, b in blocks(rel):
        if lang != "json" or "…" in b or "..." in b:
            continue
        try:
            v = json.loads(b)
        except ValueError:
            continue
        if not isinstance(v, dict) or not set(v) & {"egress", "functions"}:
            continue
        n += 1
        line, out = load_policy(rel, b, sources)
        t.check(line.startswith("policy: version 1,"),
                f"{rel}: the policy with {sorted(v)} loads", out)
    t.check(n >= 1, f"{rel} shows a policy", n)

# ---- docs/policy.md: Try it locally ---------------------------------------------------
local = [b for lang, b in section("docs/policy.md", "Try it locally") if lang == "sh"]
setup, client = local[0], local[1].strip()
policy_dir = "/var/lib/mcp-exec"
had_dir = os.path.exists(policy_dir)
if t.check(port_free(8080) and port_free(8000), "ports 8080 and 8000 are free for policy.md"):
    srv = Background(setup, user_env())
    try:
        t.check(srv.wait_for(rb"listening on http://127\.0\.0\.1:8080"),
                "policy.md: the server starts with the policy", srv.text()[-1500:])
        t.check(wait_listening(8000), "policy.md: the stand-in API listens", srv.text()[-800:])
        rc, out, err = sh(client, user_env())
        t.check(rc == 0 and out == "200\n", "policy.md: the client command prints 200",
                (rc, out, err, srv.text()[-800:]))
    finally:
        srv.stop()
        if not had_dir:
            subprocess.run(["rm", "-rf", policy_dir])

# ---- Python blocks compile -----------------------------------------------------------
for rel in ("README.md", "docs/policy.md"):
    for i, (lang, b) in enumerate(blocks(rel)):
        if lang == "python":
            try:
                compile(b, f"{rel} block {i}", "exec")
                ok = True
            except SyntaxError as e:
                ok = e
            t.check(ok is True, f"{rel}: Python block {i} compiles", ok)

t.done()
