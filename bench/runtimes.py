#!/usr/bin/python3
"""mcp-exec under gVisor (runsc) beside runc, on the same machine, in the
pod's posture: the same OCI bundle (tests/e2e/runsc_wrap.py: read-only root,
uid 65532, no capabilities) run by either runtime, the server over stdio,
MCP_EXEC_WARM as given (default auto: fork-server under runc on a kernel
with Landlock ABI 6, after-reap under gVisor, which has no Landlock).

Per runtime and round, the client's round trip (write the request, read the
result) of:
  print1-spaced  print(1), THINK_MS between calls (the warm interpreter is
                 ready when the call comes)
  print1-b2b     print(1) back to back (calls/s)
  numpy          import numpy; print(numpy.arange(10).sum()), spaced
  bash           echo 1, spaced
  javascript     console.log(1), spaced
Rounds alternate the runtimes, so drift hits both alike. Prints one line
per runtime, metric and round, then the medians over the rounds, and writes
them to $OUT/runtimes.txt.

    ROUNDS=3 N=30 THINK_MS=300 python3 bench/runtimes.py
    (root; runsc from scripts/deps.sh --gvisor, runc from Debian)
"""
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRAP = [sys.executable, os.path.join(ROOT, "tests", "e2e", "runsc_wrap.py")]
ROUNDS = int(os.environ.get("ROUNDS", "3"))
N = int(os.environ.get("N", "30"))
THINK = int(os.environ.get("THINK_MS", "300")) / 1000
OUT = os.environ.get("OUT", os.path.join(ROOT, "bench", "results"))
BIN = os.environ.get("MCPX_BIN", os.path.join(ROOT, "build", "mcp-exec"))

CASES = [("print1-spaced", "python", "print(1)", True),
         ("print1-b2b", "python", "print(1)", False),
         ("numpy", "python", "import numpy; print(numpy.arange(10).sum())", True),
         ("bash", "bash", "echo 1", True),
         ("javascript", "javascript", "console.log(1)", True)]


class Server:
    def __init__(self, runtime, binary):
        env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_PYTHON": "/usr/bin/python3",
               "MCP_EXEC_LOG_LEVEL": "warn", "MCP_EXEC_WARM": os.environ.get("MCPX_WARM", "auto"),
               "MCPX_OCI_RUNTIME": runtime}
        if os.environ.get("MCPX_RUNSC"):
            env["MCPX_RUNSC"] = os.environ["MCPX_RUNSC"]
        # A uid of its own (the pod's would be its own host range with
        # hostUsers: false): under runc RLIMIT_NPROC counts every task of
        # the uid on the host, other servers' runs of 65532 included.
        uid = str(70000 + os.getpid() % 20000)
        self.p = subprocess.Popen(WRAP + ["--uid", uid, "--", binary], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.id = 0
        self.call_raw("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def call_raw(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the server ended")
            m = json.loads(line)
            if m.get("id") == self.id:
                return m

    def exec(self, language, code):
        t = time.perf_counter()
        r = self.call_raw("tools/call", {"name": "exec",
                                         "arguments": {"code": code, "language": language}})
        ms = (time.perf_counter() - t) * 1000
        sc = r.get("result", {}).get("structuredContent") or {}
        if sc.get("exit_code") != 0:
            raise RuntimeError(f"{language} {code!r}: {r}")
        return ms

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def measure(srv, language, code, spaced):
    srv.exec(language, code)  # the first call of a kind starts what it needs
    lat = []
    t0 = time.perf_counter()
    for _ in range(N):
        if spaced:
            time.sleep(THINK)
        lat.append(srv.exec(language, code))
    wall = time.perf_counter() - t0 - (N * THINK if spaced else 0)
    lat.sort()
    return statistics.median(lat), lat[int(0.9 * (len(lat) - 1))], N / wall


def main():
    if os.geteuid() != 0:
        sys.exit("bench/runtimes.py: needs root (runsc and runc run the bundle)")
    os.makedirs(OUT, exist_ok=True)
    # The server and its zygote where uid 65532 can run them.
    bindir = "/tmp/mcpx-bench-bin"
    os.makedirs(bindir, exist_ok=True)
    os.chmod(bindir, 0o755)
    for name in ("mcp-exec", "mcp-exec-zygote"):
        subprocess.run(["cp", os.path.join(os.path.dirname(BIN), name), bindir], check=True)
    binary = os.path.join(bindir, "mcp-exec")
    runsc_v = subprocess.run([os.environ.get("MCPX_RUNSC", "runsc"), "--version"],
                             capture_output=True, text=True).stdout.split("\n")[0]
    results = {}
    lines = [f"# {runsc_v}; runc {subprocess.run(['runc', '--version'], capture_output=True, text=True).stdout.split()[2]}; "
             f"N={N} THINK_MS={int(THINK * 1000)} ROUNDS={ROUNDS} MCP_EXEC_WARM={os.environ.get('MCPX_WARM', 'auto')}"]
    print(lines[0], flush=True)
    for rnd in range(ROUNDS):
        for runtime in (("runc", "runsc") if rnd % 2 == 0 else ("runsc", "runc")):
            srv = Server(runtime, binary)
            for name, language, code, spaced in CASES:
                p50, p90, rate = measure(srv, language, code, spaced)
                results.setdefault((runtime, name), []).append((p50, p90, rate))
                line = (f"round {rnd + 1} {runtime:5} {name:14} p50 {p50:7.1f} ms  p90 {p90:7.1f} ms"
                        + ("" if spaced else f"  {rate:6.1f} calls/s"))
                print(line, flush=True)
                lines.append(line)
            srv.close()
    lines.append("# medians over the rounds: p50 ms (p90 ms) [calls/s back to back]")
    for name, _, _, spaced in CASES:
        row = []
        for runtime in ("runc", "runsc"):
            v = results[(runtime, name)]
            p50 = statistics.median(x[0] for x in v)
            p90 = statistics.median(x[1] for x in v)
            rate = statistics.median(x[2] for x in v)
            row.append(f"{runtime} {p50:.1f} ({p90:.1f})" + ("" if spaced else f" [{rate:.1f}/s]"))
        lines.append(f"{name:14} " + "   ".join(row))
        print(lines[-1], flush=True)
    with open(os.path.join(OUT, "runtimes.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
