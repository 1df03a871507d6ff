"""End-to-end: files in, pictures and files out, with the real binary.

A CSV passed in and summed by pandas; a binary file passed as base64; a
matplotlib chart drawn with plt.show() returned as an image block whose
bytes decode as a PNG; text and binary files returned as embedded
resources; symlink attacks (to a secret file, /proc/self/environ, another
run's directory, out/ itself, a directory on the way) and hard links that
return nothing through them; the caps; bad paths and invalid base64 as tool
errors before anything runs; nothing left on disk after the call; and the
same over Streamable HTTP (stateful and 2026-07-28) and legacy SSE."""
import base64
import hashlib
import json
import os
import shutil
import socket
import struct
import tempfile
import time
import zlib

from mcpx_harness import (Failures, HttpServer, McpHttpClient, StdioServer, base_env,
                          parse_sse, structured, tool_error_text, warm_mode)

t = Failures()
MARKER = "e2e-files-secret-7f3a9c"

# A workdir base of our own, so the test can plant "another run" beside the
# real ones and see that nothing is left behind. uid 65532 needs search
# permission on it.
BASE = tempfile.mkdtemp(prefix="mcpx-e2e-files-")
os.chmod(BASE, 0o711)
# A secret only the server's uid can read, outside every path a run may read.
SECRET_DIR = tempfile.mkdtemp(prefix="mcpx-e2e-secret-")
SECRET = os.path.join(SECRET_DIR, "token")
with open(SECRET, "w") as f:
    f.write(MARKER)
os.chmod(SECRET, 0o600)
# "Another run": a workdir beside ours with an output file, owned like a
# run's when we are root.
VICTIM = os.path.join(BASE, "run-victim")
os.makedirs(os.path.join(VICTIM, "out"))
with open(os.path.join(VICTIM, "out", "result.txt"), "w") as f:
    f.write(MARKER)
if os.geteuid() == 0:
    for p in (VICTIM, os.path.join(VICTIM, "out"), os.path.join(VICTIM, "out", "result.txt")):
        os.chown(p, 65532, 65532)


def content(resp):
    try:
        return resp["result"]["content"]
    except (KeyError, TypeError):
        return []


def blocks(resp, kind):
    return [b for b in content(resp) if b.get("type") == kind]


def files_of(resp):
    sc = structured(resp)
    return {f["path"]: f for f in (sc or {}).get("files", [])}


def png_ok(data):
    """True when data is a complete PNG: signature, IHDR first, every chunk's
    CRC right, and the IDAT stream inflating to exactly height rows."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return False
    pos, idat, ihdr = 8, b"", None
    while pos + 12 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        if zlib.crc32(kind + body) != crc:
            return False
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    if not ihdr or ihdr[0] == 0 or ihdr[1] == 0:
        return False
    w, h, depth, ctype = ihdr[:4]
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    return len(raw) == h * (1 + (w * channels * depth + 7) // 8)


def no_marker(resp):
    return MARKER not in json.dumps(resp)


def leftovers():
    """Files of runs still on disk under BASE, the planted victim aside."""
    found = []
    for root, dirs, names in os.walk(BASE):
        if root.startswith(VICTIM):
            continue
        found += [os.path.join(root, n) for n in names
                  if n in ("sales.csv", "blob.bin", "figure-1.png", "report.txt")]
    return found


env = base_env(MCP_EXEC_WORKDIR_BASE=BASE, MCPX_E2E_ENV_MARKER=MARKER)
s = StdioServer(env)
s.initialize()

# ---- the tool says what it takes and gives ----
r = s.request("tools/list")
tool = next((x for x in (r or {}).get("result", {}).get("tools", []) if x["name"] == "exec"), {})
fin = tool.get("inputSchema", {}).get("properties", {}).get("files", {})
t.check(fin.get("type") == "array" and set(fin.get("items", {}).get("properties", {}))
        == {"path", "content", "content_base64"}, "inputSchema documents files", fin)
fout = tool.get("outputSchema", {}).get("properties", {}).get("files", {})
t.check(set(fout.get("items", {}).get("required", [])) ==
        {"path", "bytes", "mime_type", "sha256", "returned"},
        "outputSchema documents structuredContent.files", fout)
t.check("out/" in tool.get("description", "") and "plt.show()" in tool.get("description", ""),
        "description documents files and out/", tool.get("description"))

# ---- a CSV in, summed by pandas; a binary file in ----
csv = "region,amount\nnorth,10\nsouth,20\neast,30.5\n"
blob = bytes(range(256)) * 4
r = s.call("import pandas as pd, hashlib\n"
           "df = pd.read_csv('data/sales.csv')\n"
           "print(df['amount'].sum())\n"
           "print(hashlib.sha256(open('blob.bin', 'rb').read()).hexdigest())\n"
           "import os; print(sorted(os.listdir('.')))\n",
           files=[{"path": "data/sales.csv", "content": csv},
                  {"path": "blob.bin", "content_base64": base64.b64encode(blob).decode()}])
sc = structured(r)
lines = (sc or {}).get("stdout", "").splitlines()
t.check(sc and sc["exit_code"] == 0 and lines[:1] == ["60.5"], "CSV passed in and summed by pandas", r)
t.check(lines[1:2] == [hashlib.sha256(blob).hexdigest()], "binary file passed as base64 arrives intact",
        lines)
t.check(lines[2:3] == ["['blob.bin', 'data', 'main.py', 'out']"],
        "the workdir holds main.py, the files and an empty out/", lines)
t.check(sc and sc["files"] == [] and len(content(r)) == 1, "nothing in out/: no files listed", r)

# ---- MCP_EXEC_PRELOAD=auto: a fork server's runs start with matplotlib
# loaded and no figure open; other modes do not import it for them ----
mode = warm_mode(env)
if mode == "fork-server":
    s.wait_fork_server()
r = s.call("import sys\nprint('matplotlib.pyplot' in sys.modules)\n"
           "import matplotlib.pyplot as plt\nprint(plt.get_fignums())\n")
want = "True\n[]\n" if mode == "fork-server" else "False\n[]\n"
t.check(structured(r) and structured(r)["stdout"] == want,
        f"preload auto in {mode} mode: matplotlib preloaded only by the fork server", r)

# ---- a chart via plt.show() comes back as a PNG image block ----
r = s.call("import matplotlib.pyplot as plt\n"
           "plt.plot([1, 4, 9, 16])\nplt.title('squares')\nplt.show()\n"
           "plt.figure(); plt.bar(['a', 'b'], [3, 5]); plt.show()\n"
           "plt.show()\n"
           "print('drawn')\n", timeout=120)
sc = structured(r)
imgs = blocks(r, "image")
t.check(sc and sc["exit_code"] == 0 and sc["stdout"] == "drawn\n" and sc["stderr"] == "",
        "plt.show() runs without a display and without a warning", sc)
t.check(len(imgs) == 2 and all(b["mimeType"] == "image/png" for b in imgs),
        "two plt.show() calls give two PNG image blocks", [b.get("mimeType") for b in imgs])
listed = files_of(r)
t.check(sorted(listed) == ["out/figure-1.png", "out/figure-2.png"], "figures saved as out/figure-N.png",
        list(listed))
for b, name in zip(imgs, ["out/figure-1.png", "out/figure-2.png"]):
    data = base64.b64decode(b["data"], validate=True)
    t.check(png_ok(data), f"{name}: the image block's bytes decode as a PNG (signature, IHDR, CRCs, IDAT)")
    f = listed.get(name, {})
    t.check(f.get("returned") is True and f.get("bytes") == len(data) and f.get("mime_type") == "image/png"
            and f.get("sha256") == hashlib.sha256(data).hexdigest() and "reason" not in f,
            f"{name}: listed with its size, type and sha256", f)

# A chart saved directly, and the usual agent habit of matplotlib.use('Agg').
r = s.call("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
           "fig, ax = plt.subplots(); ax.plot([0, 1]); fig.savefig('out/direct.png')\n"
           "plt.show()\n", timeout=120)
listed = files_of(r)
t.check(set(listed) == {"out/direct.png", "out/figure-1.png"} and len(blocks(r, "image")) == 2,
        "savefig into out/ and plt.show() after matplotlib.use('Agg') both come back", list(listed))

# ---- text and binary files come back as embedded resources ----
r = s.call("open('out/report.txt', 'w').write('total: 60.5\\n')\n"
           "open('out/table.csv', 'w').write('a,b\\n1,2\\n')\n"
           "open('out/data.bin', 'wb').write(bytes([0, 1, 2, 255, 0]))\n"
           "import os; os.makedirs('out/sub'); open('out/sub/x y.json', 'w').write('{}')\n")
res = {b["resource"]["uri"]: b["resource"] for b in blocks(r, "resource")}
t.check(res.get("file:///out/report.txt", {}).get("text") == "total: 60.5\n"
        and res["file:///out/report.txt"].get("mimeType") == "text/plain"
        and "blob" not in res["file:///out/report.txt"], "a text file comes back as a text resource", res)
t.check(res.get("file:///out/table.csv", {}).get("mimeType") == "text/csv", "a CSV is text/csv", res)
d = res.get("file:///out/data.bin", {})
t.check(d.get("mimeType") == "application/octet-stream" and "text" not in d
        and base64.b64decode(d.get("blob", "")) == bytes([0, 1, 2, 255, 0]),
        "a binary file comes back as a blob resource", d)
t.check(res.get("file:///out/sub/x%20y.json", {}).get("text") == "{}",
        "files in subdirectories, URI percent-encoded", list(res))
t.check(list(files_of(r)) == ["out/data.bin", "out/report.txt", "out/sub/x y.json", "out/table.csv"],
        "structuredContent.files lists every file, sorted", list(files_of(r)))
t.check(json.loads(content(r)[0]["text"]) == structured(r), "the text block is still the structuredContent")

# ---- symlink and hard-link attacks return nothing through them ----
r = s.call(f"import os\n"
           f"os.symlink({SECRET!r}, 'out/token')\n"
           f"os.symlink('/proc/self/environ', 'out/environ')\n"
           f"os.symlink('/proc/1/environ', 'out/environ1')\n"
           f"os.symlink({VICTIM!r}, 'out/other-run')\n"
           f"os.symlink({os.path.join(VICTIM, 'out', 'result.txt')!r}, 'out/other-file')\n"
           f"os.symlink('../../..', 'out/up')\n"
           f"os.mkfifo('out/fifo')\n"
           f"open('kept.txt', 'w').write('mine')\n"
           f"os.link('kept.txt', 'out/hard-inside')\n"
           f"for src in ({SECRET!r}, {os.path.join(VICTIM, 'out', 'result.txt')!r}):\n"
           f"    try:\n"
           f"        os.link(src, 'out/hard-outside')\n"
           f"        print('linked', src)\n"
           f"    except OSError as e:\n"
           f"        print('link refused', e.errno)\n"
           f"open('out/plain.txt', 'w').write('ok')\n")
listed = files_of(r)
attack = ["out/token", "out/environ", "out/environ1", "out/other-run", "out/other-file", "out/up",
          "out/fifo", "out/hard-inside"]
t.check(all(listed.get(p, {}).get("returned") is False
            and listed[p].get("reason") == "not a regular file"
            and listed[p].get("sha256") is None for p in attack),
        "every link, the FIFO and the hard link are listed as not a regular file",
        {p: listed.get(p) for p in attack})
if "out/hard-outside" in listed:
    t.check(listed["out/hard-outside"]["returned"] is False, "a hard link from outside is not read",
            listed["out/hard-outside"])
t.check(no_marker(r), "no secret, environment or other run's data in the result")
t.check(listed.get("out/plain.txt", {}).get("returned") is True and len(blocks(r, "resource")) == 1,
        "the run's own plain file still comes back", listed)
t.check(structured(r) and structured(r)["exit_code"] == 0, "the attacks do not change the run's result",
        structured(r))

r = s.call(f"import os, shutil\nshutil.rmtree('out')\nos.symlink({VICTIM + '/out'!r}, 'out')\n")
t.check(list(files_of(r)) == ["out"] and files_of(r)["out"]["returned"] is False
        and files_of(r)["out"]["reason"] == "not a regular file" and no_marker(r),
        "a symlinked out/ itself returns nothing", structured(r))
r = s.call(f"import os\nos.symlink({VICTIM!r}, 'out/sub')\n"
           f"os.makedirs('out/real/deeper')\nos.symlink({VICTIM + '/out'!r}, 'out/real/deeper/link')\n")
listed = files_of(r)
t.check(set(listed) == {"out/sub", "out/real/deeper/link"}
        and all(f["returned"] is False and f["reason"] == "not a regular file" for f in listed.values())
        and no_marker(r), "symlinked intermediate directories are not entered", listed)

# Names with control or bidi characters never come back raw.
r = s.call("open('out/a\\x1b[2Jb', 'w').write('x')\n"
           "open('out/gpj\\u202e.exe', 'w').write('x')\n"
           "open('out/new\\nline', 'w').write('x')\n")
listed = files_of(r)
t.check(set(listed) == {"out/a%1B[2Jb", "out/gpj%E2%80%AE.exe", "out/new%0Aline"}
        and all(f["returned"] is False and f["reason"] == "unsafe name" for f in listed.values())
        and no_marker(r),
        "out/ names with ESC, U+202E or a newline are listed escaped as unsafe names", listed)

# ---- caps ----
caps = StdioServer(base_env(MCP_EXEC_WORKDIR_BASE=BASE, MCP_EXEC_MAX_FILES_OUT=2,
                            MCP_EXEC_MAX_FILES_OUT_BYTES=1000, MCP_EXEC_MAX_FILES_IN_BYTES=100))
caps.initialize()
r = caps.call("for n in ('a', 'b', 'c'):\n    open('out/' + n, 'w').write(n * 10)\n"
              "open('out/0-big', 'w').write('x' * 2000)\nprint('done')\n")
listed = files_of(r)
sc = structured(r)
t.check(sc and sc["stdout"] == "done\n" and sc["exit_code"] == 0 and sc["truncated"] is False,
        "output beyond the caps leaves the run's result unaffected", sc)
t.check(listed.get("out/a", {}).get("returned") is True and listed.get("out/b", {}).get("returned") is True,
        "the first files within the caps are returned", listed)
t.check(listed.get("out/0-big", {}).get("reason") == "too large" and listed["out/0-big"]["bytes"] == 2000,
        "a file beyond the byte cap is listed as too large", listed.get("out/0-big"))
t.check(listed.get("out/c", {}).get("reason") == "too many" and listed["out/c"]["returned"] is False,
        "a file beyond the count cap is listed as too many", listed.get("out/c"))
t.check(len(content(r)) == 3, "only returned files get content blocks", len(content(r)))
before = caps.stderr_text().count('"audit"')
r = caps.call("print('must not run')", files=[{"path": "a", "content": "x" * 60},
                                              {"path": "b", "content": "y" * 41}])
err = tool_error_text(r) or ""
t.check("MCP_EXEC_MAX_FILES_IN_BYTES" in err and "100 bytes" in err,
        "input files over the byte cap: a clear tool error", r)
r = caps.call("print('fits')", files=[{"path": "a", "content": "x" * 60},
                                      {"path": "b", "content": "y" * 40}])
t.check(structured(r) and structured(r)["stdout"] == "fits\n", "input files exactly at the cap run", r)
t.check(caps.stderr_text().count('"audit"') == before + 1, "the refused call never ran (no audit line)")
t.check(caps.close() == 0 and "Sanitizer" not in caps.stderr_text(), "the capped server exits cleanly",
        caps.stderr_text()[-2000:])

# ---- bad paths and invalid base64: tool errors before anything runs ----
before = s.stderr_text().count('"audit"')
for path, why in [("../escape.txt", '".." segments are not allowed'),
                  ("/etc/passwd", "absolute paths are not allowed"),
                  ("a//b", "empty segments"), ("./a", '"." segments are not allowed'),
                  ("a/", "empty segments"), ("", "the path is empty"),
                  ("main.py", "main.py is where the code goes"),
                  ("main.py/x", "main.py is where the code goes"),
                  ("a\x1b[2Jb", "control characters are not allowed"),
                  ("gpj\u202e.exe", "control characters are not allowed")]:
    r = s.call("open('/tmp/x', 'w')", files=[{"path": path, "content": "x"}])
    err = tool_error_text(r) or ""
    t.check(err.startswith("files[0]") and why in err, f"bad path {path!r}: {why}", r)
for bad in ["not base64!", "AAE", "A", "AA==AA==", "AA\nAA=="]:
    r = s.call("print(1)", files=[{"path": "x.bin", "content_base64": bad}])
    err = tool_error_text(r) or ""
    if bad == "AAE":
        t.check(structured(r) is not None, "unpadded base64 is accepted", r)
        continue
    t.check("content_base64 is not valid base64" in err, f"invalid base64 {bad!r} is a tool error", r)
r = s.call("print(1)", files=[{"path": "a", "content": "1", "content_base64": "MQ=="}])
t.check("exactly one of content" in (tool_error_text(r) or ""), "content and content_base64 together", r)
r = s.call("print(1)", files={"path": "a"})
t.check("/properties/files" in (tool_error_text(r) or ""), "files must be an array", r)
t.check(s.stderr_text().count('"audit"') == before + 1, "none of the refused calls ran")

# ---- nothing is stored after the call ----
t.check(leftovers() == [], "no input or output file is left on disk after the calls", leftovers())
rc = s.close()
t.check(rc == 0 and "Sanitizer" not in s.stderr_text(), "the server exits cleanly on stdin EOF",
        (rc, s.stderr_text()[-2000:]))

# ---- every transport: Streamable HTTP (stateful, 2026-07-28), legacy SSE ----
TOKEN = "e2e-files-token-0123456789abcdef"
srv = HttpServer({"MCP_EXEC_AUTH_TOKEN": TOKEN, "MCP_EXEC_WORKDIR_BASE": BASE})
CHART = ("import pandas as pd, matplotlib.pyplot as plt\n"
         "df = pd.read_csv('in.csv')\nprint(df['v'].sum())\n"
         "df.plot(); plt.show()\n")
ARGS = {"code": CHART, "files": [{"path": "in.csv", "content": "v\n1\n2\n"}]}


def chart_ok(resp, what):
    sc = structured(resp)
    imgs = blocks(resp, "image")
    ok = (sc and sc["stdout"] == "3\n" and len(imgs) == 1 and imgs[0]["mimeType"] == "image/png"
          and png_ok(base64.b64decode(imgs[0]["data"])))
    t.check(ok, what, sc or resp)


c = McpHttpClient(srv, TOKEN)
c.initialize()
st, h, body = c.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "exec", "arguments": ARGS}}, timeout=120)
chart_ok(body, "Streamable HTTP (session): CSV in, chart out")

sl = {"X-MCP-AUTH": TOKEN, "Accept": "application/json, text/event-stream",
      "Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28",
      "Mcp-Method": "tools/call", "Mcp-Name": "exec"}
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
st, h, raw = srv.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                         "params": {"name": "exec", "arguments": ARGS, "_meta": meta}}), sl, timeout=120)
body = json.loads(raw) if raw else None
chart_ok(body, "Streamable HTTP 2026-07-28 (stateless): CSV in, chart out")
t.check(body and body["result"].get("resultType") == "complete", "the stateless result carries resultType")

sock = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
sock.sendall((f"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
              f"X-MCP-AUTH: {TOKEN}\r\n\r\n").encode())
buf = b""
while b"/messages?sessionId=" not in buf or not buf.endswith(b"\n\n"):
    chunk = sock.recv(65536)
    if not chunk:
        break
    buf += chunk
endpoint = [d for e, d in parse_sse(buf.split(b"\r\n\r\n", 1)[-1]) if e == "endpoint"]
hdr = {"X-MCP-AUTH": TOKEN, "Content-Type": "application/json"}


def sse_reply(rid):
    global buf
    deadline = time.time() + 120
    while time.time() < deadline:
        events = buf.split(b"\r\n\r\n", 1)[-1]
        for ev, data in parse_sse(events[:events.rfind(b"\n\n") + 2]):
            m = json.loads(data) if ev == "message" else {}
            if m.get("id") == rid:
                return m
        chunk = sock.recv(1 << 20)
        if not chunk:
            return None
        buf += chunk
    return None


if t.check(endpoint, "legacy SSE endpoint event", buf[:200]):
    srv.request("POST", endpoint[0], json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}}), hdr)
    sse_reply(1)
    srv.request("POST", endpoint[0], json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), hdr)
    srv.request("POST", endpoint[0], json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                 "params": {"name": "exec", "arguments": ARGS}}), hdr)
    chart_ok(sse_reply(2), "legacy SSE (2024-11-05): CSV in, chart out")
sock.close()
srv.stop()
t.check(leftovers() == [], "nothing left on disk after the HTTP calls", leftovers())

shutil.rmtree(BASE, ignore_errors=True)
shutil.rmtree(SECRET_DIR, ignore_errors=True)
t.done()
