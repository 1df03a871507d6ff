"""Turns bench/run.sh's raw numbers into the table of docs/benchmarks.md:
medians over rounds, and each target's ratio next to its goal."""
import glob
import json
import os
import re
import statistics
import sys

out = sys.argv[1]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def floor(kind):
    vals = []
    for f in sorted(glob.glob(os.path.join(out, f"floor-{kind}-*.json"))):
        vals.append(json.load(open(f))["results"][0]["median"] * 1000)
    return med(vals)


rows = {}
for line in open(os.path.join(out, "bench.txt")):
    m = re.match(r"(\S+) (.+?) (p50_ms=.*)$", line.strip())
    if not m or m.group(1) == "leak":
        continue
    kv = dict(x.split("=", 1) for x in m.group(3).split())
    rows.setdefault(m.group(2), []).append({k: float(v) for k, v in kv.items() if re.match(r"^[\d.]+$", v)})


def stat(label, key):
    return med([r[key] for r in rows.get(label, []) if key in r])


fp, fn, ft = floor("print"), floor("numpy"), floor("true")
print("| measurement | p50 ms | p90 ms | p99 ms | calls/s | errors |")
print("|---|---:|---:|---:|---:|---:|")
print(f"| floor: cold `python3 -c 'print(1)'` (hyperfine median) | {fp:.1f} | | | {1000 / fp:.1f} | |")
print(f"| floor: cold `python3 -c 'import numpy'` | {fn:.1f} | | | | |")
print(f"| floor: fork+exec `/bin/true` | {ft:.2f} | | | | |")
for label in sorted(rows):
    if label.startswith("leak"):
        continue
    print(f"| {label} | {stat(label, 'p50_ms'):.1f} | {stat(label, 'p90_ms'):.1f} | "
          f"{stat(label, 'p99_ms'):.1f} | {stat(label, 'calls_per_s'):.1f} | "
          f"{int(sum(r.get('errors', 0) for r in rows[label]))} |")

print()
print("| target | goal | measured | met |")
print("|---|---|---|---|")


def target(name, goal, value, ok):
    print(f"| {name} | {goal} | {value} | {'yes' if ok else 'NO'} |")


for kind in ("seq", "spaced"):
    w = stat(f"ours-warm print1 {kind}", "p50_ms")
    w99 = stat(f"ours-warm print1 {kind}", "p99_ms")
    target(f"warm print(1) p50 / cold python ({kind})", "<= 0.10", f"{w / fp:.3f}", w / fp <= 0.10)
    peer = stat(f"peer print1 {kind}", "p50_ms")
    target(f"warm print(1) p50 / Node peer p50 ({kind})", "<= 0.08", f"{w / peer:.3f}", w / peer <= 0.08)
    target(f"warm print(1) p99 / cold python ({kind})", "<= 0.25", f"{w99 / fp:.3f}", w99 / fp <= 0.25)
    wn = stat(f"ours-warm numpy {kind}", "p50_ms")
    target(f"warm numpy p50 / cold `import numpy` ({kind})", "<= 0.05", f"{wn / fn:.3f}", wn / fn <= 0.05)
    target(f"warm print(1) p50 / fork+exec floor ({kind})", "(information)", f"{w / ft:.1f}x", True)
tp = stat("ours-warm print1 conc", "calls_per_s")
target("warm throughput, 4 clients / cold spawn rate (1/p50)", ">= 6", f"{tp * fp / 1000:.2f}",
       tp * fp / 1000 >= 6)
c = stat("ours-cold print1 seq", "p50_ms")
target("cold path p50 / bare interpreter", "<= 1.05", f"{c / fp:.2f}", c / fp <= 1.05)
try:
    idle = dict(x.split("=") for x in open(os.path.join(out, "rss-idle.txt")).read().split())
    target("server RSS idle", "<= 8 MiB", f"{int(idle['idle_rss_kb_warm']) / 1024:.1f} MiB",
           int(idle["idle_rss_kb_warm"]) <= 8192)
    leak = dict(x.split("=") for x in open(os.path.join(out, "rss-leak.txt")).read().split())
    grow = int(leak["rss_after_kb"]) - int(leak["rss_before_kb"])
    target(f"RSS growth after {leak['leak_n']} executions", "< 1 MiB", f"{grow} KiB", grow < 1024)
except (OSError, KeyError):
    pass
try:
    print()
    print("Machine load (uptime) at the start and end of the run:")
    print()
    for line in open(os.path.join(out, "load.txt")):
        print("    " + line.rstrip())
except OSError:
    pass
