#!/usr/bin/env python3
"""What a workspace adds to an exec call (issue 31), for each store.

One mcp-exec over Streamable HTTP per store (a directory store, and a
Debian redis-server started here on a free loopback port with a password),
and for each: the same call (`code: "pass"`) without a workspace and with
one that holds

  empty   nothing (the call still takes the lease, looks for the workspace,
          writes the variables' header, runs the runner's save, collects)
  1mib    16 files of 64 KiB
  10mib   16 files of 640 KiB
  df      a pandas DataFrame of 1 000 000 rows (an int64 and a float64
          column, 16 MB pickled) as a variable, no file

every call restoring it before the code and saving it after. The workspace
is made by one unmeasured call first. Calls alternate between the
scenarios round by round (so a slow minute of the machine hits them all),
WARMUP unmeasured calls each first; the median and p90 of each are printed,
with the median minus the no-workspace median. A second server with pandas
in its preload gives the df row again (restoring a DataFrame imports pandas
in the run).

  /usr/bin/python3 bench/workspace.py                 # build/mcp-exec, ROUNDS=15, both stores
  ROUNDS=30 STORES=redis /usr/bin/python3 bench/workspace.py

Only the standard library; all traffic on 127.0.0.1.
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
os.environ.setdefault("MCPX_BIN", os.path.join(HERE, "..", "build", "mcp-exec"))

from mcpx_harness import HttpServer, McpHttpClient, ScratchDir, structured  # noqa: E402
from workspace_fixture import REDIS, Store  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "15"))
WARMUP = int(os.environ.get("WARMUP", "3"))
STORES = [s for s in os.environ.get("STORES", "dir,redis").split(",") if s]

SETUP = {
    "empty": None,
    "1mib": "import os\nos.makedirs('d', exist_ok=True)\n"
            "for i in range(16):\n    open(f'd/f{i}', 'wb').write(os.urandom(64 << 10))\n",
    "10mib": "import os\nos.makedirs('d', exist_ok=True)\n"
             "for i in range(16):\n    open(f'd/f{i}', 'wb').write(os.urandom(640 << 10))\n",
    "df": "import numpy as np, pandas as pd\n"
          "df = pd.DataFrame({'a': np.arange(1_000_000), 'b': np.random.rand(1_000_000)})\n"
          "del np, pd\n",
}


def call(client, **args):
    t0 = time.perf_counter()
    st, _, body = client.call("pass", **args)
    dt = (time.perf_counter() - t0) * 1000
    sc = structured(body if isinstance(body, dict) else None) or {}
    if sc.get("exit_code") != 0 or ("workspace" in args and not sc["workspace"].get("saved")):
        raise RuntimeError(f"a call failed: {body}")
    return dt, sc


def server(store, scratch, extra=None):
    env = dict(store.env())
    env["MCP_EXEC_WORKDIR_BASE"] = scratch.workdir(f"work-{store.kind}-{len(extra or {})}")
    env.update(extra or {})
    srv = HttpServer(env)
    c = McpHttpClient(srv)
    c.initialize()
    return srv, c


def measure(srv, c, names):
    """{scenario: [ms, ...]} over ROUNDS alternating rounds. The server's
    stderr (an audit line a call) is drained as it comes: a full pipe would
    stop the server at its next log line."""
    times = {n: [] for n in names}
    for n in names:
        for _ in range(WARMUP):
            call(c, **({} if n == "none" else {"workspace": f"bench-{n}"}))
            srv.drain_stderr()
    for _ in range(ROUNDS):
        for n in names:
            dt, _ = call(c, **({} if n == "none" else {"workspace": f"bench-{n}"}))
            times[n].append(dt)
            srv.drain_stderr()
            srv.err = b""
    return times


def report(label, times, sizes):
    base = statistics.median(times["none"])
    print(f"\n{label}: median and p90 of {ROUNDS} calls each (ms)")
    print(f"{'workspace':<22}{'bytes':>12}{'median':>10}{'p90':>10}{'added':>10}")
    for n, ts in times.items():
        ts = sorted(ts)
        med = statistics.median(ts)
        p90 = ts[min(len(ts) - 1, int(len(ts) * 0.9))]
        added = "" if n == "none" else f"{med - base:+.1f}"
        print(f"{n:<22}{sizes.get(n, ''):>12}{med:>10.1f}{p90:>10.1f}{added:>10}")


def main():
    for kind in STORES:
        if kind == "redis" and not REDIS:
            print("skip redis: redis-server is not installed")
            continue
        scratch = ScratchDir(f"mcpx-bench-ws-{kind}-")
        store = Store(kind, scratch)
        try:
            srv, c = server(store, scratch)
            sizes = {}
            for n, code in SETUP.items():
                if code:
                    st, _, body = c.call(code, workspace=f"bench-{n}", timeout_s=120)
                    sizes[n] = (structured(body) or {}).get("workspace", {}).get("bytes")
                else:
                    sizes[n] = 0
            times = measure(srv, c, ["none", *SETUP])
            report(f"{kind} store, warm mode {os.environ.get('MCPX_TEST_WARM', 'auto')}",
                   times, sizes)
            srv.stop()
            srv, c = server(store, scratch,
                            {"MCP_EXEC_PRELOAD": "numpy,pandas,mcpx_matplotlib_warm"})
            times = measure(srv, c, ["none", "df"])
            report(f"{kind} store, pandas preloaded", times, sizes)
            srv.stop()
        finally:
            store.close()
            scratch.remove()


main()
