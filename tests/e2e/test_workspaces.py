"""End-to-end: workspaces (docs/tool.md#workspaces), the same suite against
the directory store and a real Redis (redis-server started here with a
password on a free loopback port).

Two server processes share one store: a call on the first leaves files and
Python variables (values, a module by name, a function of the run's code),
a call on the second sees them, and names what could not be kept (an open
file, a generator). out/ starts empty and is not kept. A failed run saves
what it had; bash and JavaScript workspaces keep files. The size cap: a save
over it says so (saved: false) and the previous version stays. The idle TTL
ends a workspace. Another caller's workspace of the same name is its own and
never reached. MCP_EXEC_WORKSPACES=off and a profile refuse the argument with
a clear error; a profile's lower cap applies. Bad names are refused before
anything runs. The audit line names the workspace, restored and saved bytes."""
import json
import os
import time

from mcpx_harness import Failures, HttpServer, ScratchDir, structured, write_policy
from workspace_fixture import REDIS, Servers, Store, error_text, stores, ws_call

t = Failures()


def ws(sc):
    return sc.get("workspace") or {}


def across_servers(store):
    pair = Servers(store)
    a, b = pair.start(), pair.start()
    ca, cb = pair.client(a), pair.client(b)
    sc, body = ws_call(ca, "import json, os\nos.makedirs('notes', exist_ok=True)\n"
                       "open('notes/n.txt', 'w').write('kept text')\n"
                       "open('out/once.txt', 'w').write('x')\n"
                       "data = {'a': [1, 2]}\ncount = 1\n"
                       "def double(v):\n    return 2 * v + count\n"
                       "fh = open('notes/n.txt')\ngen = (i for i in range(3))\nprint('set')",
                       "nb-1")
    w = ws(sc)
    t.check(sc.get("stdout") == "set\n" and w.get("name") == "nb-1" and w.get("saved") is True,
            f"{store.kind}: the first call ran and saved", sc)
    t.check(w.get("files") == 1 and w.get("bytes", 0) > len("kept text"),
            f"{store.kind}: one file kept (out/ and main.py are not), bytes counted", w)
    t.check(set(w.get("variables", [])) >= {"json", "os", "data", "count", "double"},
            f"{store.kind}: values, modules and a function are kept", w.get("variables"))
    t.check(sorted(w.get("not_kept", [])) == ["fh", "gen"],
            f"{store.kind}: an open file and a generator are named as not kept", w)
    t.check("reason" not in w, f"{store.kind}: no reason when saved", w)

    sc, _ = ws_call(cb, "import os\nprint(data['a'], double(20), json.dumps(count),"
                    " open('notes/n.txt').read(), os.listdir('out'), 'fh' in globals())\n"
                    "count += 1", "nb-1")
    t.check(sc.get("stdout") == "[1, 2] 41 1 kept text [] False\n",
            f"{store.kind}: the second server's call sees the first's variables and files, "
            "and an empty out/", sc.get("stdout") or sc)
    # A failed run still saves what it assigned before the exception.
    sc, _ = ws_call(ca, "late = 'assigned'\nraise RuntimeError('boom')", "nb-1")
    t.check(sc.get("exit_code") == 1 and ws(sc).get("saved") is True and
            "late" in ws(sc).get("variables", []),
            f"{store.kind}: a run that raised saves what it had", sc)
    sc, _ = ws_call(cb, "print(late, count)", "nb-1")
    t.check(sc.get("stdout") == "assigned 2\n",
            f"{store.kind}: ... and the next call on the other server has it", sc)

    # Without the argument a call is as before: nothing of the workspace.
    st, _, body = ca.call("import os\nprint(sorted(os.listdir('.')), 'count' in globals())")
    sc = (body.get("result") or {}).get("structuredContent") or {}
    t.check(sc.get("stdout") == "['main.py', 'out'] False\n" and "workspace" not in sc,
            f"{store.kind}: a call without workspace is untouched", sc)

    # The audit line names the workspace, what was restored and saved.
    time.sleep(0.2)
    lines = [l for l in b.audit_lines() if l.get("workspace") == "nb-1"]
    t.check(lines and lines[-1].get("workspace_restored") is True and
            lines[-1].get("workspace_restored_bytes", 0) > 0 and
            lines[-1].get("workspace_saved") is True and
            lines[-1].get("workspace_saved_bytes", 0) > 0,
            f"{store.kind}: the audit line names the workspace, restored and saved bytes",
            lines[-1:] if lines else b.audit_lines()[-1:])
    # /metrics: the calls' restores and saves (the store's own series are
    # its operations).
    t.check(a.metric('mcp_exec_workspace_saves_total{outcome="saved"}') == 2 and
            a.metric('mcp_exec_workspace_restores_total{outcome="new"}') == 1 and
            a.metric('mcp_exec_workspace_restores_total{outcome="restored"}') == 1 and
            (a.metric("mcp_exec_workspace_lease_wait_seconds_count") or 0) == 2,
            f"{store.kind}: /metrics counts the calls' restores and saves",
            [a.metric('mcp_exec_workspace_saves_total{outcome="saved"}'),
             a.metric('mcp_exec_workspace_restores_total{outcome="new"}')])
    pair.stop()


def other_languages(store):
    pair = Servers(store)
    a, b = pair.start(), pair.start()
    ca, cb = pair.client(a), pair.client(b)
    st, _, body = ca.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    langs = body["result"]["tools"][0]["inputSchema"]["properties"]["language"]["enum"]
    if "bash" in langs:
        sc, _ = ws_call(ca, "mkdir -p logs && echo one >> logs/run.log && "
                        "printf '#!/bin/sh\\necho tool\\n' > tool.sh && chmod +x tool.sh",
                        "sh-1", language="bash")
        t.check(ws(sc).get("saved") is True and ws(sc).get("variables") == [],
                f"{store.kind}: a bash workspace saves its files (no variables)", sc)
        sc, _ = ws_call(cb, "echo two >> logs/run.log && cat logs/run.log && ./tool.sh",
                        "sh-1", language="bash")
        t.check(sc.get("stdout") == "one\ntwo\ntool\n",
                f"{store.kind}: the next bash call, on the other server, has them "
                "(and the execute bit)", sc)
    else:
        print(f"skip {store.kind}: bash is not on this machine")
    if "javascript" in langs:
        sc, _ = ws_call(ca, "import fs from 'fs';\nfs.writeFileSync('state.json', "
                        "JSON.stringify({n: 1}));", "js-1", language="javascript")
        t.check(ws(sc).get("saved") is True, f"{store.kind}: a JavaScript workspace saves", sc)
        sc, _ = ws_call(cb, "import fs from 'fs';\nconst s = JSON.parse(fs.readFileSync("
                        "'state.json'));\nconsole.log(s.n + 1);", "js-1", language="javascript")
        t.check(sc.get("stdout") == "2\n",
                f"{store.kind}: the next JavaScript call, on the other server, reads it", sc)
        # A Python call on the same workspace keeps the files and adds variables.
        sc, _ = ws_call(ca, "print(open('state.json').read())\nv = 5", "js-1")
        t.check(sc.get("stdout") == '{"n":1}\n' and ws(sc).get("variables") == ["v"],
                f"{store.kind}: one workspace serves every language", sc)
        sc, _ = ws_call(cb, "console.log('js')", "js-1", language="javascript")
        sc, _ = ws_call(ca, "print(v)", "js-1")
        t.check(sc.get("stdout") == "5\n",
                f"{store.kind}: a JavaScript call in between keeps the Python variables", sc)
    else:
        print(f"skip {store.kind}: Node.js is not on this machine")
    pair.stop()


def size_cap(store):
    pair = Servers(store, {"MCP_EXEC_WORKSPACE_MAX_MB": "1"})
    a, b = pair.start(), pair.start()
    ca, cb = pair.client(a), pair.client(b)
    sc, _ = ws_call(ca, "open('small.txt', 'w').write('v1')\nv = 1", "cap-1")
    t.check(ws(sc).get("saved") is True, f"{store.kind}: a small workspace saves", sc)
    sc, body = ws_call(cb, "open('big.bin', 'wb').write(b'x' * (2 << 20))\n"
                       "open('small.txt', 'w').write('v2')\nv = 2\nprint('ran')", "cap-1")
    w = ws(sc)
    t.check(sc.get("stdout") == "ran\n" and w.get("saved") is False and
            "1048576" in (w.get("reason") or "") and "MCP_EXEC_WORKSPACE_MAX_MB" in w["reason"],
            f"{store.kind}: over the cap: the run's result, saved false with the reason", w)
    sc, _ = ws_call(ca, "import os\nprint(open('small.txt').read(), v, os.path.exists('big.bin'))",
                    "cap-1")
    t.check(sc.get("stdout") == "v1 1 False\n",
            f"{store.kind}: the previous version stays whole", sc.get("stdout"))
    # A reset drops the saved version first: when its own save fails, the
    # workspace is left empty, not as it was.
    sc, _ = ws_call(cb, "open('big.bin', 'wb').write(b'x' * (2 << 20))", "cap-1",
                    workspace_reset=True)
    t.check(ws(sc).get("saved") is False and ws(sc).get("files") == 0,
            f"{store.kind}: a reset whose save fails says so", ws(sc))
    sc, _ = ws_call(ca, "import os\nprint(sorted(os.listdir('.')), 'v' in globals())", "cap-1")
    t.check(sc.get("stdout") == "['main.py', 'out'] False\n",
            f"{store.kind}: ... and leaves the workspace empty", sc.get("stdout"))
    # Variables count too: one too big is not kept, the rest are.
    sc, _ = ws_call(ca, "huge = b'y' * (2 << 20)\nsmall = 3", "cap-1")
    w = ws(sc)
    t.check(w.get("saved") is True and "huge" in w.get("not_kept", []) and
            "small" in w.get("variables", []),
            f"{store.kind}: a variable over the cap is not kept, the others are", w)
    pair.stop()


def ttl(store):
    # 6 s: the second call comes well within it even on a loaded machine.
    pair = Servers(store, {"MCP_EXEC_WORKSPACE_TTL_S": "6"})
    a = pair.start()
    ca = pair.client(a)
    sc, _ = ws_call(ca, "x = 1", "ttl-1")
    sc, _ = ws_call(ca, "print(x)", "ttl-1")
    t.check(sc.get("stdout") == "1\n", f"{store.kind}: within its TTL a workspace is there", sc)
    # Idle for longer than the TTL (and whatever a sweep may add).
    deadline = time.time() + 60
    gone = False
    time.sleep(6)
    while not gone and time.time() < deadline:
        sc, _ = ws_call(ca, "print('x' in globals())", "ttl-probe")  # another workspace
        st, _, body = ca.post({"jsonrpc": "2.0", "id": 77, "method": "resources/list"})
        names = [r.get("uri", "") for r in ((body or {}).get("result") or {}).get("resources", [])]
        gone = not any(u.startswith("workspace://ttl-1/") for u in names)
        if not gone:
            time.sleep(0.5)
    sc, _ = ws_call(ca, "print('x' in globals())", "ttl-1")
    t.check(gone and sc.get("stdout") == "False\n",
            f"{store.kind}: idle past its TTL, the workspace is gone", sc)
    pair.stop()


def callers(store):
    pair = Servers(store)
    a, b = pair.start(), pair.start()
    alice, bob = pair.client(a, "alice"), pair.client(b, "bob")
    ws_call(alice, "secret = 'alice-only'\nopen('mine.txt', 'w').write('alice')", "team")
    sc, _ = ws_call(bob, "import os\nprint('secret' in globals(), os.path.exists('mine.txt'))\n"
                    "secret = 'bob'", "team")
    t.check(sc.get("stdout") == "False False\n",
            f"{store.kind}: another caller's workspace of the same name is not reached", sc)
    sc, _ = ws_call(alice, "print(secret, open('mine.txt').read())", "team")
    t.check(sc.get("stdout") == "alice-only alice\n",
            f"{store.kind}: ... nor changed by the other caller's save", sc)
    pair.stop()


def refusals(store):
    pair = Servers(store)
    a = pair.start()
    ca = pair.client(a)
    for bad in ("", "UPPER", "-lead", "a/b", "../x", "x" * 65, "sp ace", "ü"):
        sc, body = ws_call(ca, "print(1)", bad)
        t.check(error_text(body) and "workspace" in error_text(body),
                f"{store.kind}: workspace name {bad!r} refused", body)
    sc, body = ws_call(ca, "print(1)", "a" * 64)
    t.check(ws(sc).get("saved") is True, f"{store.kind}: a 64-character name is fine", body)
    # An input file replaces the workspace's file of the same path.
    ws_call(ca, "open('in.txt', 'w').write('old')", "inputs")
    sc, _ = ws_call(ca, "print(open('in.txt').read())", "inputs",
                    files=[{"path": "in.txt", "content": "new"}])
    t.check(sc.get("stdout") == "new\n", f"{store.kind}: an input file replaces the "
            "workspace's", sc)
    sc, body = ws_call(ca, "print(1)", "inputs", files=[{"path": "in.txt/x", "content": "y"}])
    t.check("conflicts with the workspace's file in.txt" in (error_text(body) or ""),
            f"{store.kind}: an input file under a workspace file is refused", body)
    pair.stop()


def rpc(client, method, params=None):
    """A request's answer: (result, error)."""
    client.next_id += 1
    st, _, body = client.post({"jsonrpc": "2.0", "id": client.next_id, "method": method,
                               "params": params or {}})
    if isinstance(body, list):
        body = next((m for m in body if "result" in m or "error" in m), None)
    body = body or {}
    return body.get("result"), body.get("error")


def resources(store):
    pair = Servers(store)
    a, b = pair.start(), pair.start()
    alice, bob = pair.client(a, "alice"), pair.client(b, "bob")
    st, _, body = alice.post({"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}}, extra={"Mcp-Session-Id": ""})
    caps = ((body or {}).get("result") or {}).get("capabilities", {})
    t.check("resources" in caps, f"{store.kind}: initialize announces resources", caps)
    ws_call(alice, "import os\nos.makedirs('sub', exist_ok=True)\n"
            "open('a.txt', 'w').write('hello')\nopen('b.bin', 'wb').write(bytes(range(256)))\n"
            "open('sub/\u00fc c.csv', 'w').write('x,y')\nx = 1", "res-1")
    res, err = rpc(alice, "resources/list")
    uris = [r.get("uri") for r in (res or {}).get("resources", [])]
    t.check("workspace://res-1/" in uris, f"{store.kind}: resources/list names the workspace",
            res or err)
    res, err = rpc(bob, "resources/list")
    t.check(res is not None and not any("res-1" in r.get("uri", "")
                                        for r in res.get("resources", [])),
            f"{store.kind}: ... and not to another caller", res or err)
    res, err = rpc(alice, "resources/read", {"uri": "workspace://res-1/"})
    listing = json.loads(((res or {}).get("contents") or [{}])[0].get("text", "{}"))
    paths = sorted(f["path"] for f in listing.get("files", []))
    t.check(paths == ["a.txt", "b.bin", "sub/\u00fc c.csv"] and
            listing.get("variables") == ["os", "x"],
            f"{store.kind}: the workspace's listing: its files and variables", listing)
    res, err = rpc(alice, "resources/read", {"uri": "workspace://res-1/a.txt"})
    c = ((res or {}).get("contents") or [{}])[0]
    t.check(c.get("text") == "hello" and c.get("mimeType") == "text/plain",
            f"{store.kind}: a text file reads as text", res or err)
    res, err = rpc(alice, "resources/read", {"uri": "workspace://res-1/b.bin"})
    c = ((res or {}).get("contents") or [{}])[0]
    import base64
    t.check(base64.b64decode(c.get("blob", "")) == bytes(range(256)),
            f"{store.kind}: a binary file reads as a base64 blob", res or err)
    uri = next((f["uri"] for f in listing.get("files", []) if f["path"].startswith("sub/")), "")
    res, err = rpc(alice, "resources/read", {"uri": uri})
    t.check(uri == "workspace://res-1/sub/%C3%BC%20c.csv" and
            ((res or {}).get("contents") or [{}])[0].get("text") == "x,y",
            f"{store.kind}: a path with a space and a non-ASCII letter, percent-encoded", uri)
    res, err = rpc(bob, "resources/read", {"uri": "workspace://res-1/a.txt"})
    t.check(err and err.get("code") == -32002,
            f"{store.kind}: another caller's file is not found", res or err)
    for bad in ("workspace://res-1/nope.txt", "workspace://res-1/../x", "file:///etc/passwd",
                "workspace://UP/a", "workspace://res-1/.mcpx/vars.in"):
        res, err = rpc(alice, "resources/read", {"uri": bad})
        t.check(err and err.get("code") == -32002, f"{store.kind}: {bad} is not found",
                res or err)
    # The 2026-07-28 generation: no session; the headers name the method
    # and, for a read, the uri.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}

    def stateless(method, params, name=None):
        h = {"X-MCP-AUTH": pair.tokens.tokens["alice"], "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if name:
            h["Mcp-Name"] = name
        st, _, raw = a.request("POST", "/mcp", json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": method,
             "params": dict(params, _meta=meta)}), h, timeout=120)
        return json.loads(raw) if raw else {}

    body = stateless("tools/call", {"name": "exec", "arguments": {
        "code": "print(x)", "workspace": "res-1"}}, "exec")
    sc = (body.get("result") or {}).get("structuredContent") or {}
    t.check(sc.get("stdout") == "1\n" and ws(sc).get("saved") is True,
            f"{store.kind}: a stateless (2026-07-28) call uses the workspace", body)
    body = stateless("resources/read", {"uri": "workspace://res-1/a.txt"},
                     "workspace://res-1/a.txt")
    t.check(((body.get("result") or {}).get("contents") or [{}])[0].get("text") == "hello",
            f"{store.kind}: a stateless resources/read with Mcp-Name the uri", body)
    body = stateless("resources/read", {"uri": "workspace://res-1/a.txt"}, "workspace://res-1/b")
    t.check((body.get("error") or {}).get("code") == -32020,
            f"{store.kind}: ... and a different Mcp-Name is a HeaderMismatch", body)
    res, err = rpc(alice, "resources/templates/list")
    t.check(res and res["resourceTemplates"][0]["uriTemplate"] == "workspace://{name}/{+path}",
            f"{store.kind}: the template", res or err)
    # Reset: the saved files and variables are dropped; what the run
    # leaves is the workspace. Left empty, it is deleted.
    sc, _ = ws_call(alice, "import os\nprint(sorted(os.listdir('.')), 'x' in globals())\ny = 2",
                    "res-1", workspace_reset=True)
    t.check(sc.get("stdout") == "['main.py', 'out'] False\n" and
            ws(sc).get("variables") == ["os", "y"] and ws(sc).get("files") == 0,
            f"{store.kind}: workspace_reset starts it empty", sc)
    sc, _ = ws_call(alice, "pass", "res-1", workspace_reset=True)
    res, err = rpc(alice, "resources/list")
    t.check(ws(sc).get("saved") is True and ws(sc).get("files") == 0 and
            not any("res-1" in r.get("uri", "") for r in (res or {}).get("resources", [])),
            f"{store.kind}: reset and left empty, the workspace is deleted", res or err)
    pair.stop()


def over_stdio(store):
    """The caller on stdio is "stdio": its workspaces are its own too, kept
    between two server processes that share the store."""
    from mcpx_harness import StdioServer, base_env
    env = base_env(MCP_EXEC_WORKDIR_BASE=store.scratch.workdir("stdio-work"), **store.env())
    first = StdioServer(env)
    first.initialize()
    r = first.call("import json\nnote = json.dumps({'k': 1})\nopen('s.txt', 'w').write('stdio')",
                   workspace="over-stdio")
    sc = structured(r) or {}
    first.close()
    second = StdioServer(env)
    second.initialize()
    r = second.call("print(note, open('s.txt').read())", workspace="over-stdio")
    sc = structured(r) or {}
    t.check(sc.get("stdout") == '{"k": 1} stdio\n',
            f"{store.kind}: over stdio, the next server process has the workspace", sc or r)
    r = second.request("resources/list")
    uris = [x.get("uri") for x in (r.get("result") or {}).get("resources", [])]
    t.check("workspace://over-stdio/" in uris, f"{store.kind}: ... and lists it over stdio", r)
    second.close()


def off_and_profiles():
    scratch = ScratchDir("mcpx-e2e-ws-off-")
    srv = HttpServer({"MCP_EXEC_WORKSPACES": "off",
                      "MCP_EXEC_WORKDIR_BASE": scratch.workdir()})
    from mcpx_harness import McpHttpClient
    c = McpHttpClient(srv)
    c.initialize()
    st, _, body = c.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    props = body["result"]["tools"][0]["inputSchema"]["properties"]
    t.check("workspace" not in props, "off: the inputSchema has no workspace", list(props))
    sc, body = ws_call(c, "print(1)", "w")
    t.check("MCP_EXEC_WORKSPACES=off" in (error_text(body) or ""),
            "off: the argument is refused with a clear error", body)
    srv.stop()

    store = Store("dir", scratch)
    policy = os.path.join(scratch.secrets, "policy.json")
    write_policy(policy, {"profiles": [
        {"name": "nows", "callers": ["alice"], "tools": ["exec"], "workspaces": False},
        {"name": "small", "callers": ["bob"], "tools": ["exec"],
         "workspaces": {"max_mb": 1, "max": 1}}]})
    pair = Servers(store, {"MCP_EXEC_POLICY": policy})
    s = pair.start()
    alice, bob = pair.client(s, "alice"), pair.client(s, "bob")
    sc, body = ws_call(alice, "print(1)", "w")
    t.check("profile nows" in (error_text(body) or ""),
            "profile: workspaces off for its callers, said with the profile", body)
    sc, _ = ws_call(bob, "open('b.bin', 'wb').write(b'x' * (2 << 20))", "w")
    t.check(ws(sc).get("saved") is False and "1048576" in (ws(sc).get("reason") or ""),
            "profile: its lower max_mb applies", sc)
    sc, _ = ws_call(bob, "x = 1", "w")
    sc, body = ws_call(bob, "y = 1", "w2")
    t.check(ws(sc).get("saved") is False and "1" in (ws(sc).get("reason") or ""),
            "profile: its max workspaces per caller applies", ws(sc) or body)
    pair.stop()
    scratch.remove()


for kind in stores():
    if kind == "redis" and not REDIS:
        print("skip redis: redis-server is not installed (scripts/deps.sh --test)")
        continue
    scratch = ScratchDir(f"mcpx-e2e-ws-{kind}-")
    store = Store(kind, scratch)
    try:
        across_servers(store)
        other_languages(store)
        size_cap(store)
        ttl(store)
        callers(store)
        resources(store)
        over_stdio(store)
        refusals(store)
    finally:
        store.close()
        scratch.remove()
off_and_profiles()
t.done()
