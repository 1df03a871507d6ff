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
"""
import json
import os
import re
import shutil
import tempfile
import time

from mcpx_harness import Failures, StdioServer, base_env, structured, warm_mode

FILES = 30000
FEED_S = 20

t = Failures()
tmp = tempfile.mkdtemp(prefix="mcpx-cleanup-")
os.chmod(tmp, 0o755)
work = os.path.join(tmp, "work")
os.mkdir(work, 0o711)

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
s.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "exec", "arguments": {"code": MANY, "timeout_s": 120}}})

events = []       # in the order this test saw them
answers = {}
workdir = None
started_at = None
fed = 0
feed_ended = False
seen_err = 0      # bytes of the server's log already looked at
deadline = time.time() + 300
while time.time() < deadline and not ({10, 11, 12} <= answers.keys() and "finished" in events):
    s._pump(0.002 if workdir and not feed_ended else 0.2)
    # The log, line by line: this run's cleanup starting and finishing.
    end = s.errbuf.rfind(b"\n") + 1
    for line in s.errbuf[seen_err:end].decode(errors="replace").splitlines():
        m = re.search(r"cleanup started \(([^)]*)\)", line)
        if m and workdir is None:
            workdir = m.group(1)
            started_at = time.time()
            events.append("started")
            # Written while the removal is under way.
            s.send({"jsonrpc": "2.0", "id": 11, "method": "ping"})
            s.send({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                    "params": {"name": "exec", "arguments": {"code": "print(2)"}}})
        elif workdir and "cleanup finished (%s)" % workdir in line:
            events.append("finished")
    seen_err = end
    # Answers, as they come.
    while b"\n" in s.buf:
        line, s.buf = s.buf.split(b"\n", 1)
        m = json.loads(line)
        if m.get("id") in (10, 11, 12) and m["id"] not in answers:
            answers[m["id"]] = m
            events.append(m["id"])
    # Keep the removal going until the ping is answered.
    if workdir and not feed_ended:
        if 11 in answers or time.time() - started_at > FEED_S:
            feed_ended = True
            continue
        try:
            for _ in range(20):
                open(os.path.join(workdir, "feed%07d" % fed), "w").close()
                fed += 1
        except OSError:
            feed_ended = True  # the workdir is gone: its removal is over

print("   events in order:", events, "files added during the removal:", fed)
t.check(workdir is not None, "the server logged the start of the run's cleanup",
        s.stderr_text()[-1500:])
first = structured(answers.get(10))
t.check(first and first.get("stdout") == "made\n", "the run made its files", answers.get(10))
t.check("finished" in events and 11 in events
        and events.index(11) < events.index("finished"),
        "a ping written during the removal is answered before it is over "
        "(the removal is off the loop)", events)
t.check("finished" in events and 10 in events and events.index(10) < events.index("finished"),
        "the run's result does not wait for the removal of its files", events)
second = structured(answers.get(12))
t.check(second and second.get("stdout") == "2\n", "the next run ran", answers.get(12))
t.check("finished" in events and 12 in events and events.index("finished") < events.index(12),
        "the next run waits until the last run's files are removed", events)
t.check(not os.path.exists(workdir or "/nonexistent"), "the workdir is gone", workdir)

t.check(s.close() == 0, "the server exits cleanly", s.stderr_text()[-2000:])
shutil.rmtree(tmp, ignore_errors=True)
t.done()
