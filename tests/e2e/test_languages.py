"""exec's `language`: bash and JavaScript beside Python, through the real
binary over stdio and HTTP. Per language: hello world, stdin, exit codes,
the wall-clock timeout, files in and out/, limit reporting and the result's
fields; the schema's enum lists exactly the languages the server runs, and
another value is a tool error naming them. The escape probes for each
language are in test_escape_lang.py.

Needs bash and Node.js on the host (scripts/deps.sh installs them); exits
77 (skipped) without them."""
import base64
import os
import shutil
import sys

from mcpx_harness import (Failures, HttpServer, McpHttpClient, StdioServer, base_env, structured,
                          tool_error_text)

if not shutil.which("bash") or not any(os.access(p, os.X_OK) for p in ("/usr/bin/node",)):
    print("SKIP: bash or /usr/bin/node missing (scripts/deps.sh installs them)")
    sys.exit(77)

t = Failures()
FIELDS = {"stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out", "signal",
          "limit", "cpu_ms", "max_rss_kb", "files", "files_truncated"}

# The default process budget: Node starts about a dozen threads, and
# RLIMIT_NPROC counts every task of uid 65532, which on a shared test
# machine includes other servers' runs (a fork-bomb probe elsewhere can
# take 32 of them for 20 s).
env = base_env(MCP_EXEC_MAX_PROCS=64, MCP_EXEC_MAX_FILE_MB=8)
s = StdioServer(env)
s.initialize()


def run(code, language, **kw):
    r = s.call(code, language=language, **kw)
    sc = structured(r)
    if sc is None:
        print("   (no structured result)", r)
        return {"stdout": "", "stderr": "", "exit_code": None, "limit": None, "files": [],
                "timed_out": None}
    return sc


# ---- what the server offers ----
tools = s.request("tools/list")["result"]["tools"]
ex = next(x for x in tools if x["name"] == "exec")
lang = ex["inputSchema"]["properties"].get("language", {})
t.check(lang.get("enum") == ["python", "bash", "javascript"] and lang.get("default") == "python",
        "inputSchema: language enum lists the three languages this host runs", lang)
t.check("bash (5." in ex["description"] and "javascript (Node.js " in ex["description"]
        and "Python 3 (3." in ex["description"],
        "the description names each language with its version", ex["description"][-700:])
r = s.call("print(1)", language="ruby")
err = tool_error_text(r)
t.check(err and "ruby" in err and "available: python, bash, javascript" in err,
        "an unknown language is a tool error naming the available ones", r)
r = s.call("print(1)", language=3)
t.check(tool_error_text(r) and "/properties/language" in tool_error_text(r),
        "a language that is not a string is a type error", r)

# ---- Python is unchanged, by default and by name ----
for how, kw in (("default", {}), ("named", {"language": "python"})):
    sc = structured(s.call("import sys; print(sys.version_info[0]); print('e', file=sys.stderr)",
                           **kw))
    t.check(sc and sc["stdout"] == "3\n" and sc["stderr"] == "e\n" and sc["exit_code"] == 0,
            f"python ({how}) runs as before", sc)

# ---- bash ----
sc = run("echo hello; echo oops >&2", "bash")
t.check(sc["stdout"] == "hello\n" and sc["stderr"] == "oops\n" and sc["exit_code"] == 0,
        "bash: hello world, stdout and stderr apart", sc)
t.check(set(sc) == FIELDS and sc["signal"] is None and sc["limit"] is None,
        "bash: the result has the same fields as Python's", sorted(sc))
sc = run('read -r first; echo "got $first"; tr a-z A-Z', "bash", stdin="one\ntwo three\n")
t.check(sc["stdout"] == "got one\nTWO THREE\n", "bash: stdin is the script's", sc)
sc = run("false\necho after\nexit 3", "bash")
t.check(sc["stdout"] == "after\n" and sc["exit_code"] == 3,
        "bash: no -e (a failed command does not end the script), exit code kept", sc)
sc = run("echo $0; pwd; [ \"$HOME\" = \"$PWD\" ] && echo home; shopt -q login_shell || echo nologin",
         "bash")
t.check(sc["stdout"].startswith("main.sh\n") and "home\n" in sc["stdout"]
        and "nologin" in sc["stdout"], "bash: main.sh in the workdir, not a login shell", sc)
sc = run("for t in jq sqlite3 gawk grep sed find file sort uniq; do command -v $t >/dev/null "
         "&& echo have $t || echo MISSING $t; done", "bash")
t.check("MISSING" not in sc["stdout"] and sc["stdout"].count("have") == 9,
        "bash: jq, sqlite3, gawk, grep, sed, find, file and coreutils are there", sc["stdout"])
csv = "city,n\nOslo,3\nLima,1\nOslo,2\n"
sc = run("mkdir -p out\n"
         "tail -n +2 data/in.csv | cut -d, -f1 | sort | uniq -c | sort -rn > out/counts.txt\n"
         "echo '{\"a\":[1,2,3]}' | jq '.a | add'\n"
         "sqlite3 :memory: 'select 6*7;'\n"
         "printf '\\x89PNG\\r\\n\\x1a\\n' > out/x.png; file -b --mime-type out/counts.txt\n",
         "bash", files=[{"path": "data/in.csv", "content": csv}])
got = {f["path"]: f for f in sc.get("files", [])}
t.check(sc["stdout"] == "6\n42\ntext/plain\n" and "out/counts.txt" in got
        and got["out/counts.txt"]["returned"], "bash: files in, out/ back, jq and sqlite3 run", sc)
sc = run("sleep 30", "bash", timeout_s=1)
t.check(sc["timed_out"] is True and sc["limit"] == "timeout" and sc["exit_code"] == -1,
        "bash: the wall-clock timeout ends the script", sc)
sc = run("exec head -c 20M /dev/zero > big", "bash")
t.check(sc["limit"] == "file_size" and sc["signal"] == "SIGXFSZ",
        "bash: RLIMIT_FSIZE is reported as limit file_size", sc)
sc = run("kill -SEGV $$", "bash")
t.check(sc["signal"] == "SIGSEGV" and sc["exit_code"] == -1, "bash: a signal is reported", sc)

# ---- javascript ----
sc = run("console.log('hello'); console.error('oops')", "javascript")
t.check(sc["stdout"] == "hello\n" and sc["stderr"] == "oops\n" and sc["exit_code"] == 0,
        "javascript: hello world, console.log is stdout", sc)
t.check(set(sc) == FIELDS and sc["signal"] is None and sc["limit"] is None,
        "javascript: the result has the same fields as Python's", sorted(sc))
sc = run("let d = ''; for await (const c of process.stdin) d += c;\n"
         "console.log(d.trim().split('\\n').map(Number).reduce((a, b) => a + b, 0));",
         "javascript", stdin="1\n2\n39\n")
t.check(sc["stdout"] == "42\n", "javascript: stdin, top-level await (an ES module)", sc)
sc = run("import path from 'node:path';\nconsole.log(path.basename(process.argv[1]));\n"
         "process.exitCode = 4;", "javascript")
t.check(sc["stdout"] == "main.mjs\n" and sc["exit_code"] == 4,
        "javascript: main.mjs, import works, exit code kept", sc)
sc = run("throw new Error('boom')", "javascript")
t.check(sc["exit_code"] == 1 and "Error: boom" in sc["stderr"] and sc["limit"] is None,
        "javascript: an uncaught error exits 1 with its stack on stderr", sc)
sc = run("import fs from 'node:fs';\nconst rows = fs.readFileSync('data/in.json', 'utf8');\n"
         
         "fs.writeFileSync('out/sum.json', JSON.stringify({sum: JSON.parse(rows).reduce((a, b) => a + b)}));\n"
         "fs.writeFileSync('out/bytes.bin', Buffer.from([0, 1, 2, 255]));",
         "javascript", files=[{"path": "data/in.json", "content": "[1, 2, 3]"}])
got = {f["path"]: f for f in sc.get("files", [])}
t.check(sc["exit_code"] == 0 and got.get("out/sum.json", {}).get("returned")
        and got.get("out/bytes.bin", {}).get("bytes") == 4,
        "javascript: files in, out/ back", sc)
sc = run("setInterval(() => {}, 1000);", "javascript", timeout_s=1)
t.check(sc["timed_out"] is True and sc["limit"] == "timeout", "javascript: the timeout ends it", sc)
sc = run("const a = []; for (;;) a.push(new Array(1e6).fill(1.5));", "javascript", timeout_s=60)
t.check(sc["limit"] == "memory" and sc["exit_code"] != 0,
        "javascript: a growing heap ends with limit memory", {k: sc[k] for k in ("exit_code", "signal", "limit")})
# V8's heap is sized from the run's memory limit (--max-old-space-size),
# not from V8's own default (2 GiB and more on 64-bit).
HEAP = ("import v8 from 'node:v8';\n"
        "console.log(process.execArgv.join(' '), "
        "Math.round(v8.getHeapStatistics().heap_size_limit / 1048576));")
sc = run(HEAP, "javascript")
args, _, heap_mb = sc["stdout"].strip().rpartition(" ")
t.check(args == "--max-old-space-size=512" and 512 <= int(heap_mb or 0) < 640,
        "javascript: node gets --max-old-space-size=MCP_EXEC_MEMORY_MB (512), V8's heap limit "
        "follows it", sc["stdout"])
sc = run("const w = new Array(1024).fill(0); console.log(typeof WebAssembly, w.length)",
         "javascript")
t.check(sc["stdout"] == "object 1024\n", "javascript: the runtime is whole (WebAssembly present)", sc)

# ---- the audit line names the language ----
audit = [l for l in s.stderr_text().splitlines() if '"audit"' in l and '"exec"' in l]
t.check(any('"language":"bash"' in l for l in audit)
        and any('"language":"javascript"' in l for l in audit)
        and any('"language":"python"' in l for l in audit),
        "each run's audit line names its language", audit[-3:])
s.close()

# ---- a profile's lower memory_mb reaches V8 too ----
from mcpx_harness import ScratchDir, write_policy

scratch = ScratchDir("mcpx-languages-")
policy_file = os.path.join(scratch.secrets, "policy.json")
write_policy(policy_file, {"profiles": [{"name": "small", "callers": ["stdio"], "tools": ["exec"],
                                         "limits": {"memory_mb": 200}}]})
s5 = StdioServer(dict(env, MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=scratch.workdir()))
s5.initialize()
sc = structured(s5.call(HEAP, language="javascript")) or {}
args, _, heap_mb = sc.get("stdout", "").strip().rpartition(" ")
t.check(args == "--max-old-space-size=200" and 200 <= int(heap_mb or 0) < 320,
        "javascript: a profile's memory_mb (200) is the heap's limit", sc)
s5.close()
scratch.remove()

# ---- MCP_EXEC_LANGUAGES limits the set ----
s2 = StdioServer(base_env(MCP_EXEC_LANGUAGES="python,bash"))
s2.initialize()
ex = next(x for x in s2.request("tools/list")["result"]["tools"] if x["name"] == "exec")
t.check(ex["inputSchema"]["properties"]["language"]["enum"] == ["python", "bash"]
        and "javascript" not in ex["description"],
        "MCP_EXEC_LANGUAGES=python,bash: javascript is not offered", ex["inputSchema"]["properties"]["language"])
err = tool_error_text(s2.call("console.log(1)", language="javascript"))
t.check(err and "available: python, bash" in err, "and asking for it names what is", err)
s2.close()
s3 = StdioServer(base_env(MCP_EXEC_LANGUAGES="python"))
s3.initialize()
ex = next(x for x in s3.request("tools/list")["result"]["tools"] if x["name"] == "exec")
t.check(ex["inputSchema"]["properties"]["language"]["enum"] == ["python"]
        and ex["title"] == "Run Python code" and "Languages:" not in ex["description"],
        "MCP_EXEC_LANGUAGES=python: the tool reads as before, enum [python]", ex["inputSchema"]["properties"]["language"])
s3.close()

# ---- a runtime that cannot start in the sandbox ----
# Node needs about a dozen threads; with MCP_EXEC_MAX_PROCS=4 it fails its
# start-up proof: auto leaves JavaScript out, a list that names it refuses
# to start. RLIMIT_NPROC is the uid's, and is set to what the uid has plus
# the budget: run as root, these servers get a uid of their own (as in a
# pod), since other tests' runs of uid 65532 would lend them their tasks.
import subprocess
from mcpx_harness import BIN, bin_for_uid

OWN_UID = 40123
own_bin, own_uid = BIN, None
if os.geteuid() == 0:
    own_bin = bin_for_uid()

    def own_uid():
        os.setgroups([])
        os.setresgid(OWN_UID, OWN_UID, OWN_UID)
        os.setresuid(OWN_UID, OWN_UID, OWN_UID)
s4 = StdioServer(base_env(MCP_EXEC_MAX_PROCS=4), preexec=own_uid, binary=own_bin)
s4.initialize()
ex = next(x for x in s4.request("tools/list")["result"]["tools"] if x["name"] == "exec")
t.check(ex["inputSchema"]["properties"]["language"]["enum"] == ["python", "bash"],
        "auto: a runtime that does not start in the sandbox is left out",
        ex["inputSchema"]["properties"]["language"])
s4.close()
t.check("language javascript off: /usr/bin/node does not run in the sandbox" in s4.stderr_text(),
        "and the log says why", s4.stderr_text()[-400:])
p = subprocess.run([own_bin], env=base_env(MCP_EXEC_MAX_PROCS=4, MCP_EXEC_LANGUAGES="python,javascript"),
                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                   preexec_fn=own_uid)
t.check(p.returncode == 69 and "language javascript: /usr/bin/node does not run in the sandbox" in p.stderr,
        "named in MCP_EXEC_LANGUAGES, it stops the start (exit 69)", (p.returncode, p.stderr[-300:]))
p = subprocess.run([own_bin, "--check-config"],
                   env=base_env(MCP_EXEC_MAX_PROCS=4, MCP_EXEC_LANGUAGES="python,javascript"),
                   capture_output=True, text=True, timeout=120, preexec_fn=own_uid)
t.check(p.returncode == 78 and "languages: FAILED: language javascript" in p.stdout,
        "--check-config says so and exits 78", (p.returncode, p.stdout[-300:]))

# ---- over HTTP, with files ----
srv = HttpServer()
c = McpHttpClient(srv)
c.initialize()
for language, code, want in (
        ("bash", "mkdir -p out; wc -l < in.txt > out/n.txt; cat out/n.txt", "2\n"),
        ("javascript", "import fs from 'node:fs';"
         " fs.writeFileSync('out/n.txt', String(fs.readFileSync('in.txt', 'utf8').split('\\n').length - 1));"
         " console.log(fs.readFileSync('out/n.txt', 'utf8'))", "2\n")):
    st, h, body = c.call(code, language=language,
                         files=[{"path": "in.txt", "content_base64": base64.b64encode(b"a\nb\n").decode()}])
    sc = structured(body)
    t.check(st == 200 and sc and sc["stdout"] == want and sc["files"] and sc["files"][0]["path"] == "out/n.txt",
            f"{language} over Streamable HTTP with files in and out", body)
srv.stop()
t.done()
