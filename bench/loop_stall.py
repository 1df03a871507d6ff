#!/usr/bin/python3
"""The event loop's longest stall (issue 30, item 2): how long the server's
one thread was kept from serving anyone while it did warm-path work.

Per build and round, with the servers alternating (A, B, A, B, ...), three
scenarios, each measured by a /healthz poller (a thread that asks
/healthz back to back on fresh loopback connections and keeps the slowest
answer) and, where the build has it, by the server's own gauge
(mcp_exec_loop_stall_max_seconds, the longest callback since the
previous scrape of /metrics, scraped before and after):

  b2b      200 back-to-back print(1) calls (every warm run reaped through
           the zygote, the next child asked beside each run)
  renewal  a zygote renewal (MCP_EXEC_WARM_MAX_RUNS=10: 12 calls, then the
           pause that lets the successor start; measured from the last
           call until the old zygote has been stopped and reaped)
  cgroup   200 back-to-back calls with per-run cgroups, each removed after
           its run; only where the server can make them (root on a cgroup
           v2 host with the memory and pids controllers): elsewhere it says
           why not

The poller's slowest answer includes the machine's scheduling noise (on a
loaded 2-CPU machine, tens of milliseconds): compare A and B within one
run, and read the gauge where both builds have it.

    /usr/bin/python3 bench/loop_stall.py BUILD_A BUILD_B [ROUNDS]   # default 3
    /usr/bin/python3 bench/loop_stall.py BUILD [ROUNDS]            # one build

BUILD_* are build directories (with mcp-exec and mcp-exec-client); the
client of the last one drives both. bench/ab.sh builds a commit into
/tmp/mcpx-ab/<sha>/build-release: the same directories work here.
"""
import http.client
import os
import re
import statistics
import subprocess
import sys
import threading
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Server:
    def __init__(self, build, extra=None):
        env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_TRANSPORT": "http",
               "MCP_EXEC_ADDR": "127.0.0.1:0", "MCP_EXEC_PYTHON": "/usr/bin/python3",
               "MCP_EXEC_LOG_FORMAT": "json", "MCP_EXEC_MAX_QUEUE": "64"}
        env.update(extra or {})
        self.log = open(os.path.join("/tmp", f"loop_stall_{os.getpid()}.log"), "w+")
        self.proc = subprocess.Popen([os.path.join(build, "mcp-exec")], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.log)
        self.port = None
        deadline = time.time() + 60
        while time.time() < deadline and self.port is None:
            m = re.search(r"listening on http://[0-9.]+:(\d+)", self.text())
            self.port = int(m.group(1)) if m else None
            time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("the server did not start: " + self.text()[-2000:])
        while time.time() < deadline and not re.search(
                r"fork server ready|warm interpreters: (off|after-reap)", self.text()):
            time.sleep(0.05)

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", path, headers={"Host": f"127.0.0.1:{self.port}"})
        body = c.getresponse().read()
        c.close()
        return body.decode(errors="replace")

    def gauge(self):
        """The server's longest callback since the last scrape (ms), or None
        for a build without the gauge."""
        m = re.search(r"^mcp_exec_loop_stall_max_seconds (\S+)$", self.get("/metrics"), re.M)
        return float(m.group(1)) * 1000 if m else None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        os.unlink(self.log.name)


class Poller(threading.Thread):
    """Asks /healthz back to back until stopped; keeps every latency."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.lat, self.halt = port, [], threading.Event()

    def run(self):
        while not self.halt.is_set():
            t0 = time.monotonic()
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                c.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{self.port}"})
                c.getresponse().read()
                c.close()
            except OSError:
                continue
            self.lat.append((time.monotonic() - t0) * 1000)

    def stop(self):
        self.halt.set()
        self.join()
        return max(self.lat) if self.lat else float("nan"), len(self.lat)


def calls(client, s, n):
    url = f"http://127.0.0.1:{s.port}/mcp"
    subprocess.run([client, "bench", "--url", url, "--calls", str(n), "--tool", "exec",
                    "--args", '{"code":"print(1)"}'], stdout=subprocess.DEVNULL, check=False)


def measure(s, work):
    """(poller max ms, polls, gauge ms) over work()."""
    s.gauge()
    p = Poller(s.port)
    p.start()
    work()
    worst, n = p.stop()
    return worst, n, s.gauge()


def renewal(client, s):
    """From the last call of a zygote's share to the old zygote's end."""
    def work():
        before = s.text().count("fork server renewed")
        calls(client, s, 12)
        deadline = time.time() + 120
        while time.time() < deadline and s.text().count("fork server renewed") == before:
            time.sleep(0.05)
        time.sleep(1)  # the old zygote is stopped once its last run is reaped
    return work


def cgroups_usable(build):
    out = subprocess.run([os.path.join(build, "mcp-exec"), "--check-config"],
                         capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "MCP_EXEC_PYTHON": "/usr/bin/python3"}).stdout
    line = next((l for l in out.splitlines() if l.startswith("run budget:")), "")
    return "method: cgroup" in line, line


def one(build, client, label, rnd, rows):
    s = Server(build)
    try:
        rows.append((label, rnd, "b2b") + measure(s, lambda: calls(client, s, 200)))
    finally:
        s.stop()
    s = Server(build, {"MCP_EXEC_WARM_MAX_RUNS": "10"})
    try:
        calls(client, s, 2)
        rows.append((label, rnd, "renewal") + measure(s, renewal(client, s)))
    finally:
        s.stop()
    usable, why = cgroups_usable(build)
    if usable:
        s = Server(build)
        try:
            rows.append((label, rnd, "cgroup") + measure(s, lambda: calls(client, s, 200)))
        finally:
            s.stop()
    elif rnd == 1 and label == "A":
        print(f"cgroup scenario skipped here: {why}")
    for r in rows[-3:]:
        if r[0] == label and r[1] == rnd:
            print("%s round %d %-8s healthz max %7.1f ms (%d polls)  gauge %s" % (
                r[0], r[1], r[2], r[3], r[4], "-" if r[5] is None else "%.1f ms" % r[5]),
                flush=True)


def main():
    args = sys.argv[1:]
    builds = [a for a in args if os.path.isdir(a)]
    rounds = int(next((a for a in args if a.isdigit()), "3"))
    if not builds:
        sys.exit(__doc__)
    client = os.path.join(builds[-1], "mcp-exec-client")
    names = dict(zip("AB", builds))
    print("builds: " + ", ".join(f"{k} = {v}" for k, v in names.items()))
    print(f"load before: {load()}  ({time.strftime('%F %H:%M UTC', time.gmtime())})")
    rows = []
    for rnd in range(1, rounds + 1):
        for label, build in names.items():
            one(build, client, label, rnd, rows)
    print(f"load after:  {load()}")
    print()
    print("| scenario | build | healthz max, ms (rounds) | median | gauge, ms (rounds) |")
    print("|---|---|---|---:|---|")
    for sc in ("b2b", "renewal", "cgroup"):
        for label in names:
            rs = [r for r in rows if r[0] == label and r[2] == sc]
            if not rs:
                continue
            hz = [r[3] for r in rs]
            g = [r[5] for r in rs if r[5] is not None]
            print("| %s | %s | %s | %.1f | %s |" % (
                sc, label, ", ".join("%.1f" % v for v in hz), statistics.median(hz),
                ", ".join("%.1f" % v for v in g) if g else "-"))


if __name__ == "__main__":
    main()
