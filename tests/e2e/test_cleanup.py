"""A run's leftovers are removed off the server's loop, and the next run
waits for them (issue 21 G).

A run leaves 30 000 files in its workdir. Once the server logs that their
removal started, this test keeps adding files to the workdir, as long as
it needs the removal to stay under way (at most FEED_S seconds), and
meanwhile writes a ping and a second exec. Nothing is timed; the checks
are about order:
- the ping is answered while the removal is still under way (before the
  server logs "cleanup finished"); when the loop did the removal, the ping
  waited for it, and so for the whole FEED_S;
- the first run's result does not wait for the removal either;
- the second run starts only once the removal is over: its result comes
  after "cleanup finished" (a run's /dev/shm entries are found by owner and
  time, so the next run must not overlap the last one's wipe).
Events this test reads from the server's stdout and stderr in one read have
no order between them; an attempt where that matters is made again.
"""
import json
import os
import re
import shutil
import tempfile
import time

from mcpx_harness import Failures, StdioServer, base_env, for_server, structured, warm_mode

FILES = 30000
FEED_S = 20

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-cleanup-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")
os.mkdir(work, 0o711)
for_server(work)

env = base_env(MCP_EXEC_WORKDIR_BASE=work, MCP_EXEC_LOG_LEVEL="debug",
               MCP_EXEC_MAX_DISK_MB=1024, MCP_EXEC_CPU_S=120)
s = StdioServer(env)
s.initialize()
if warm_mode(env) == "fork-server":
    t.check(s.wait_fork_server(), "the fork server's zygote became ready")

MANY = f"""
for i in range({FILES}):
    open('f%05d' % i, 'w').close()
print('made')
"""
seen_err = 0  # bytes of the server's log already looked at


def attempt(base):
    """One run that leaves FILES files, the ping and the next run written
    during the removal of its workdir. Returns the events, each with the
    number of the read that brought it (two in one read have no order),
    the answers and the workdir."""
    global seen_err
    rid, pid, nid = base, base + 1, base + 2
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "exec", "arguments": {"code": MANY, "timeout_s": 120}}})
    events = {}
    answers = {}
    workdir = None
    started_at = None
    fed = 0
    feed_ended = False
    reads = 0
    deadline = time.time() + 300
    while time.time() < deadline and not ({rid, pid, nid} <= answers.keys()
                                          and "finished" in events):
        s._pump(0.002 if workdir and not feed_ended else 0.2)
        reads += 1
        # The log, line by line: this run's cleanup starting and finishing.
        end = s.errbuf.rfind(b"\n") + 1
        for line in s.errbuf[seen_err:end].decode(errors="replace").splitlines():
            m = re.search(r"cleanup started \(([^)]*)\)", line)
            if m and workdir is None:
                workdir = m.group(1)
                started_at = time.time()
                events["started"] = reads
                # Written while the removal is under way.
                s.send({"jsonrpc": "2.0", "id": pid, "method": "ping"})
                s.send({"jsonrpc": "2.0", "id": nid, "method": "tools/call",
                        "params": {"name": "exec", "arguments": {"code": "print(2)"}}})
            elif workdir and "cleanup finished (%s)" % workdir in line:
                events["finished"] = reads
        seen_err = end
        # Answers, as they come.
        while b"\n" in s.buf:
            line, s.buf = s.buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") in (rid, pid, nid) and m["id"] not in answers:
                answers[m["id"]] = m
                events[{rid: "result", pid: "ping", nid: "next"}[m["id"]]] = reads
        # Keep the removal going until the ping is answered.
        if workdir and not feed_ended:
            if pid in answers or time.time() - started_at > FEED_S:
                feed_ended = True
                continue
            try:
                for _ in range(20):
                    open(os.path.join(workdir, "feed%07d" % fed), "w").close()
                    fed += 1
            except OSError:
                feed_ended = True  # the workdir is gone: its removal is over
    print(f"   attempt {base}: events (read numbers) {events}, files added during the "
          f"removal: {fed}")
    return events, [answers.get(i) for i in (rid, pid, nid)], workdir


# Events that came in the same read have no order: such an attempt says
# nothing, and another is made (the test's own process can be off the CPU
# for the whole removal on a loaded machine).
for base in (10, 20, 30):
    events, (first, ping, second), workdir = attempt(base)
    pairs = [("ping", "finished"), ("result", "finished"), ("finished", "next")]
    if all(a in events and b in events and events[a] != events[b] for a, b in pairs):
        break
    print("   inconclusive: two of the events came in one read")


def before(a, b):
    return a in events and b in events and events[a] < events[b]


t.check(workdir is not None, "the server logged the start of the run's cleanup",
        s.stderr_text()[-1500:])
t.check((structured(first) or {}).get("stdout") == "made\n", "the run made its files", first)
t.check(before("ping", "finished"),
        "a ping written during the removal is answered before it is over "
        "(the removal is off the loop)", events)
t.check(before("result", "finished"),
        "the run's result does not wait for the removal of its files", events)
t.check((structured(second) or {}).get("stdout") == "2\n", "the next run ran", second)
t.check(before("finished", "next"),
        "the next run waits until the last run's files are removed", events)
t.check(not os.path.exists(workdir or "/nonexistent"), "the workdir is gone", workdir)

t.check(s.close() == 0, "the server exits cleanly", s.stderr_text()[-2000:])
shutil.rmtree(tmp, ignore_errors=True)
t.done()
