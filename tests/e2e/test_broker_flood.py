"""What a run can make the server hold through its broker channel (issue 21
A): a run that writes small frames (an unknown op) and never reads the
answers is no longer read either, so its writes block and the server's
resident memory stays flat; a run that reads them gets every answer; and what
the server holds for a run's fetches counts towards the run's memory budget,
which stops the run with limit "memory".

Nothing here is timed: the flood stops when the run's writes have been
refused for a while (the server stopped reading) or when it has written
FLOOD bytes (the server kept reading: the bug), and the checks compare
byte counts and the server's VmRSS, not durations.
"""
import os
import shutil
import tempfile
import threading
import time

from egress_fixture import Upstream, write_policy
from mcpx_harness import Failures, StdioServer, base_env, structured, warm_mode

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-flood-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")          # where runs live
secrets = os.path.join(tmp, "secrets")    # the policy, which runs must not read
os.mkdir(work, 0o711)
os.mkdir(secrets, 0o755)
policy_file = os.path.join(secrets, "policy.json")
up = Upstream()
URL = f"http://127.0.0.1:{up.port}/"
write_policy(policy_file, {
    "egress": [{"name": "local", "url_prefix": URL, "allow_cidrs": ["127.0.0.1/32"],
                "max_response_bytes": 64 << 20, "timeout_s": 60}],
    "exec": {"egress": ["local"], "max_in_flight": 4, "max_requests": 40}})

# 4 MB of 25-byte frames: before the fix the server kept about 5 KiB per
# frame (800 MB); with it, it reads a bounded amount and stops.
FLOOD = 4 << 20
RSS_GROWTH_MAX_KB = 32 << 10


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class RssPeak:
    """The largest VmRSS of pid while the block runs (sampled by a thread)."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, rss_kb(pid), threading.Event()

    def _loop(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, rss_kb(self.pid))
            except OSError:
                return
            self.stop.wait(0.01)

    def __enter__(self):
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join()
        self.peak = max(self.peak, rss_kb(self.pid))


FLOOD_CODE = f"""
import json, os, struct, time, mcpx
fd = mcpx._get_channel().fd
j = json.dumps({{"id": 1, "op": "nope"}}).encode()
chunk = (struct.pack(">II", len(j), 0) + j) * 2000
os.set_blocking(fd, False)
written, refused_since, view = 0, None, memoryview(chunk)
while written < {FLOOD}:
    try:
        n = os.write(fd, view)      # whole frames only: the rest goes next
        written += n
        view = view[n:] if n < len(view) else memoryview(chunk)
        refused_since = None
    except BlockingIOError:
        # The server stopped reading: give it two seconds to change its mind.
        refused_since = refused_since or time.monotonic()
        if time.monotonic() - refused_since > 2:
            break
        time.sleep(0.01)
print("written", written)
"""

READER_CODE = """
import json, os, struct, threading, mcpx
ch = mcpx._get_channel()
N = 3000
j = json.dumps({"id": 7, "op": "nope"}).encode()
frames = (struct.pack(">II", len(j), 0) + j) * N
def writer():
    view = memoryview(frames)
    while view:
        view = view[os.write(ch.fd, view):]
threading.Thread(target=writer, daemon=True).start()
answers = [ch._read_frame()[0] for _ in range(N)]
print(len(answers), all(a.get("id") == 7 and "error" in a for a in answers))
"""

HOLD_CODE = f"""
import json, os, struct, time, mcpx
fd = mcpx._get_channel().fd
for i in range(4):
    j = json.dumps({{"id": i + 1, "op": "fetch", "url": {URL!r} + "big?n=30000000"}}).encode()
    os.write(fd, struct.pack(">II", len(j), 0) + j)
time.sleep(120)  # never reads: only a budget ends this run before its timeout
print("not stopped")
"""


def lines(sc):
    return [l for l in (sc or {}).get("stdout", "").splitlines() if l]


env = base_env(MCP_EXEC_POLICY=policy_file, MCP_EXEC_WORKDIR_BASE=work, MCP_EXEC_PRELOAD="json", MCP_EXEC_MEMORY_MB=128)
s = StdioServer(env)
s.initialize()
if warm_mode(env) == "fork-server":
    t.check(s.wait_fork_server(), "the fork server's zygote became ready")
pid = s.proc.pid
# A first run, so the server's own start-up allocations are behind us.
sc = structured(s.call("import mcpx; print(1)"))
t.check(lines(sc) == ["1"], "a run with a channel works", sc)

base = rss_kb(pid)
with RssPeak(pid) as m:
    sc = structured(s.call(FLOOD_CODE, timeout=120))
out = lines(sc)
written = int(out[0].split()[1]) if out and out[0].startswith("written ") else None
print(f"   server VmRSS {base} KiB before the flood, peak {m.peak} KiB; the run wrote {written} bytes")
t.check(written is not None and written < FLOOD,
        "the server stops reading a run that does not read its answers (the run's writes block)",
        (written, sc))
t.check(m.peak - base < RSS_GROWTH_MAX_KB,
        "the server's resident memory stays bounded while a run floods its channel",
        (base, m.peak))

sc = structured(s.call(READER_CODE, timeout=120))
t.check(lines(sc) == ["3000 True"],
        "a run that reads its answers gets one for every frame, past the queue's cap", sc)

sc = structured(s.call(HOLD_CODE, timeout=180, timeout_s=60))
t.check(sc and sc.get("limit") == "memory",
        "what the server holds for a run's unread fetches counts towards its memory budget",
        sc and {k: sc.get(k) for k in ("limit", "exit_code", "stdout", "stderr")})
t.check("of its memory are the server's" in s.stderr_text(),
        "the log says the memory was the server's, held for the run")

t.check(s.close() == 0, "the server exits cleanly", s.stderr_text()[-2000:])
shutil.rmtree(tmp, ignore_errors=True)
t.done()
