"""End-to-end: workspaces under contention and failure, against the directory
store and a real Redis (workspace_fixture.py).

Two concurrent calls on one workspace from two servers run one after the
other: both increments of a variable and both lines of a file survive (no
lost update). A call that waits for a workspace longer than the queue
timeout gives up and says why. A server killed at varied moments during a
save leaves the previous version or the new one, never a mix (every file
and the variable agree). Redis stopped during a run: the run's result still
comes back, saved: false with the reason, and once Redis is back the
previous version is whole; stopped and restarted within a run, the save
either lands or says why, and the workspace is whole either way."""
import json
import signal
import threading
import time

from mcpx_harness import Failures, ScratchDir, wait_until
from workspace_fixture import REDIS, Servers, Store, error_text, stores, ws_call

t = Failures()


def quietly(fn, *args):
    """fn(*args) for a thread whose server may be killed under it."""
    def run():
        try:
            fn(*args)
        except OSError:
            pass
    return run


def ws(sc):
    return sc.get("workspace") or {}


def serialised(store):
    pair = Servers(store)
    a, b = pair.start(), pair.start()
    ca, cb = pair.client(a), pair.client(b)
    ws_call(ca, "n = 0\nopen('log.txt', 'w').write('')", "counter")
    code = ("import time\nn = n + 1\nmine = n\ntime.sleep(1.5)\n"
            "open('log.txt', 'a').write(f'{mine}\\n')\nprint(mine)")
    results = {}

    def run(name, client):
        results[name] = ws_call(client, code, "counter")[0]

    threads = [threading.Thread(target=run, args=(k, c)) for k, c in (("a", ca), ("b", cb))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    outs = sorted((results.get(k) or {}).get("stdout", "") for k in ("a", "b"))
    t.check(outs == ["1\n", "2\n"] and all(ws(results[k]).get("saved") for k in results),
            f"{store.kind}: two concurrent calls from two servers ran one after the other", outs)
    sc, _ = ws_call(ca, "print(n, open('log.txt').read().split())", "counter")
    t.check(sc.get("stdout") == "2 ['1', '2']\n",
            f"{store.kind}: neither update is lost", sc.get("stdout"))
    pair.stop()


def lease_wait_bounded(store):
    pair = Servers(store, {"MCP_EXEC_QUEUE_TIMEOUT_S": "2"})
    a, b = pair.start(), pair.start()
    ca, cb = pair.client(a), pair.client(b)
    # Each server's first run waits for its warm interpreter to be proven,
    # which a 2 s queue timeout may not cover: one run each first.
    for c in (ca, cb):
        c.call("print(1)")
    holder = threading.Thread(target=lambda: ws_call(ca, "import time\ntime.sleep(8)", "busy"))
    holder.start()
    # The holder's run has started, so it holds the lease (taken before
    # the run, released after its save).
    wait_until(lambda: a.metric("mcp_exec_running") == 1, timeout=60)
    sc, body = ws_call(cb, "print('never')", "busy")
    text = error_text(body) or ""
    t.check("busy" in text and "in use" in text and "MCP_EXEC_QUEUE_TIMEOUT_S" in text,
            f"{store.kind}: a call waiting for a workspace in use gives up at the queue "
            "timeout and says why", body)
    holder.join(60)
    sc, _ = ws_call(cb, "print('now')", "busy")
    t.check(sc.get("stdout") == "now\n", f"{store.kind}: ... and gets it once it is free", sc)
    pair.stop()


def killed_mid_save(store):
    """A server killed at moments spread over a call that saves a workspace
    of 40 files of 256 KiB (the end of its run, its save, its answer: the
    same call timed once whole gives the span); each time the workspace
    that remains is one version, whole: every file and the variable agree."""
    pair = Servers(store)
    checker = pair.start()
    cc = pair.client(checker)
    write = ("import os\nos.makedirs('d', exist_ok=True)\n"
             "for i in range(40):\n    open(f'd/f{i}', 'w').write(str(V) * (256 << 10))\n"
             "v = V\n")
    verify = ("import os\nvals = {open(f'd/{f}').read(1) + str(len(open(f'd/{f}').read()))"
              " for f in os.listdir('d')}\nprint(v, sorted(vals), len(os.listdir('d')))")
    began = time.time()
    ws_call(cc, write.replace("V", "1"), "torn")
    span = time.time() - began
    for i, frac in enumerate((0.7, 0.8, 0.85, 0.9, 1.1)):
        victim = pair.start()
        cv = pair.client(victim)
        digit = str((2 + i) % 10)
        th = threading.Thread(target=quietly(ws_call, cv, write.replace("V", digit), "torn"))
        th.start()
        time.sleep(span * frac)
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        th.join(30)
        sc, _ = ws_call(cc, verify, "torn")
        out = sc.get("stdout", "")
        v = out.split(" ", 1)[0] if out else None
        whole = bool(v) and out == f"{v} ['{v}{256 << 10}'] 40\n"
        t.check(whole, f"{store.kind}: killed at {frac:.2f} of a call's span: one version "
                f"({v}), whole", out or sc)
    pair.stop()


def redis_down_mid_run(store):
    pair = Servers(store)
    a = pair.start()
    ca = pair.client(a)
    ws_call(ca, "v = 'before'\nopen('f.txt', 'w').write('before')", "outage")
    result = {}
    th = threading.Thread(target=lambda: result.update(ws_call(
        ca, "import time\ntime.sleep(2)\nv = 'after'\nopen('f.txt', 'w').write('after')\n"
        "print('ran')", "outage")[0]))
    th.start()
    # Stopped once the run has started (the workspace is taken and loaded).
    wait_until(lambda: a.metric("mcp_exec_running") == 1, timeout=60)
    store.redis.stop()
    th.join(120)
    w = ws(result)
    t.check(result.get("stdout") == "ran\n" and w.get("saved") is False and w.get("reason"),
            "redis: stopped mid-run, the run's result comes back, saved false with the reason",
            result)
    t.check(store.redis.password not in json.dumps(result) and "6379" not in json.dumps(result),
            "redis: the reason carries neither the password nor the address", w.get("reason"))
    store.redis.start()
    deadline = time.time() + 60
    sc = {}
    while time.time() < deadline:
        sc, body = ws_call(ca, "print(v, open('f.txt').read())", "outage")
        if sc.get("stdout"):
            break
        time.sleep(0.5)
    t.check(sc.get("stdout") == "before before\n",
            "redis: back, the previous version is whole", sc or body)

    # Stopped and started again within one run: saved, or not with a
    # reason; whole either way.
    result.clear()
    th = threading.Thread(target=lambda: result.update(ws_call(
        ca, "import time\ntime.sleep(3)\nv = 'again'\nopen('f.txt', 'w').write('again')\n"
        "print('ran')", "outage")[0]))
    th.start()
    wait_until(lambda: a.metric("mcp_exec_running") == 1, timeout=60)
    store.redis.stop()
    time.sleep(0.5)
    store.redis.start()
    th.join(120)
    w = ws(result)
    t.check(result.get("stdout") == "ran\n" and (w.get("saved") is True or w.get("reason")),
            "redis: restarted mid-run, the run's result comes back", result)
    sc, _ = ws_call(ca, "print(v, open('f.txt').read())", "outage")
    want = "again again\n" if w.get("saved") else "before before\n"
    t.check(sc.get("stdout") == want, f"redis: ... and the workspace is whole "
            f"(saved={w.get('saved')})", sc)
    pair.stop()


for kind in stores():
    if kind == "redis" and not REDIS:
        print("skip redis: redis-server is not installed (scripts/deps.sh --test)")
        continue
    scratch = ScratchDir(f"mcpx-e2e-wsf-{kind}-")
    store = Store(kind, scratch)
    try:
        serialised(store)
        lease_wait_bounded(store)
        killed_mid_save(store)
        if kind == "redis":
            redis_down_mid_run(store)
    finally:
        store.close()
        scratch.remove()
t.done()
