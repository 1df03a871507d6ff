#!/usr/bin/env bash
# Does preloading matplotlib in the warm environment pay? Four servers on one
# machine, measured in alternating rounds so drift hits all alike:
#
#   fork-np      MCP_EXEC_WARM=auto        MCP_EXEC_PRELOAD=numpy
#   fork-plt     MCP_EXEC_WARM=auto        MCP_EXEC_PRELOAD=numpy,matplotlib.pyplot
#   fork-mpl     MCP_EXEC_WARM=auto        MCP_EXEC_PRELOAD=numpy,mcpx_matplotlib_warm
#   reap-np      MCP_EXEC_WARM=after-reap  MCP_EXEC_PRELOAD=numpy
#   reap-mpl     MCP_EXEC_WARM=after-reap  MCP_EXEC_PRELOAD=numpy,mcpx_matplotlib_warm
#
# (mcpx_matplotlib_warm imports pyplot and draws one chart into memory, so
# the Agg backend and the fonts are loaded too; python/.)
# (auto is the fork server on kernels with Landlock ABI >= 6; after-reap is
# what other kernels get.) Per server and round: a chart (import pyplot,
# plot, plt.show() into out/) and print(1), back to back and spaced by
# THINK_MS as an agent's calls are. Before the rounds, the idle memory of
# each server's process tree (server, zygote, waiting interpreter): RSS and
# PSS summed from /proc/<pid>/smaps_rollup. Prints the raw lines and a
# table of medians over rounds; writes both to $OUT.
#
#   bash bench/preload.sh            # ROUNDS=3 N=30 THINK_MS=300
#   NAMES="fork-np fork-mpl" KINDS="print-seq print-spaced" ROUNDS=5 N=40 bash bench/preload.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-3}
N=${N:-30}
THINK_MS=${THINK_MS:-300}
OUT=${OUT:-bench/results/preload}
mkdir -p "$OUT"
rm -f "$OUT"/*.txt

bash scripts/build.sh >/dev/null
BIN=build/mcp-exec
CLIENT=build/mcp-exec-client
PY=/usr/bin/python3
read -r -a NAMES <<<"${NAMES:-fork-np fork-plt fork-mpl reap-np reap-mpl}"
read -r -a KINDS <<<"${KINDS:-chart-seq print-seq chart-spaced print-spaced}"
declare -A WARM=([fork-np]=auto [fork-plt]=auto [fork-mpl]=auto [reap-np]=after-reap
  [reap-mpl]=after-reap)
declare -A PRELOAD=([fork-np]=numpy [fork-plt]=numpy,matplotlib.pyplot
  [fork-mpl]=numpy,mcpx_matplotlib_warm [reap-np]=numpy [reap-mpl]=numpy,mcpx_matplotlib_warm)
declare -A PORT PID
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

for name in "${NAMES[@]}"; do
  log="$OUT/server-$name.log"
  env -i PATH=/usr/bin:/bin MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=$PY \
    MCP_EXEC_WARM="${WARM[$name]}" MCP_EXEC_PRELOAD="${PRELOAD[$name]}" MCP_EXEC_LOG_LEVEL=info \
    "$BIN" 2>"$log" &
  pid=$!
  pids+=("$pid")
  port=""
  port=$(server_port "$log" "$name") || exit 1
  PORT[$name]=$port
  PID[$name]=$pid
done

# The whole tree of a server: its pid and every descendant.
tree() {
  local p=$1 c
  echo "$p"
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do tree "$c"; done
}
# Idle memory: wait until every interpreter has preloaded (one warm-up call
# each, then the next one is prepared), then sum RSS and PSS over the tree.
CHART='{"code":"import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()"}'
PRINT='{"code":"print(1)"}'
for name in "${NAMES[@]}"; do
  "$CLIENT" bench --url "http://127.0.0.1:${PORT[$name]}/mcp" --clients 1 --calls 1 --tool exec \
    --args "$PRINT" --expect '"exit_code":0' --warmup 1 >/dev/null
done
sleep 5
for name in "${NAMES[@]}"; do
  rss=0 pss=0 n=0
  for p in $(tree "${PID[$name]}"); do
    read -r r s < <(awk '/^Rss:/ {r=$2} /^Pss:/ {s=$2} END {print r+0, s+0}' /proc/"$p"/smaps_rollup 2>/dev/null || echo "0 0")
    rss=$((rss + r)) pss=$((pss + s)) n=$((n + 1))
  done
  echo "idle $name processes=$n rss_kb=$rss pss_kb=$pss" | tee -a "$OUT/idle.txt"
done

bench() { # label name args think-ms
  local line
  line=$("$CLIENT" bench --url "http://127.0.0.1:${PORT[$2]}/mcp" --clients 1 --calls "$N" --tool exec \
         --args "$3" --expect '"exit_code":0' --warmup 2 --think-ms "$4" | grep '^p50_ms=' || true)
  echo "$1 $2 $line" | tee -a "$OUT/bench.txt"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r/$ROUNDS"
  for name in "${NAMES[@]}"; do
    for kind in "${KINDS[@]}"; do
      case $kind in
        chart-seq) bench "r$r $kind" "$name" "$CHART" 0 ;;
        print-seq) bench "r$r $kind" "$name" "$PRINT" 0 ;;
        chart-spaced) bench "r$r $kind" "$name" "$CHART" "$THINK_MS" ;;
        print-spaced) bench "r$r $kind" "$name" "$PRINT" "$THINK_MS" ;;
      esac
    done
  done
done

NAMES="${NAMES[*]}" KINDS="${KINDS[*]}" $PY - "$OUT" <<'EOF' | tee "$OUT/table.md"
import os, re, statistics, sys
out = sys.argv[1]
rows, idle = {}, {}
for line in open(f"{out}/bench.txt"):
    m = re.match(r"r\d+ (\S+) (\S+) (p50_ms=.*)$", line.strip())
    if m:
        kv = dict(x.split("=", 1) for x in m.group(3).split())
        rows.setdefault((m.group(1), m.group(2)), []).append(kv)
for line in open(f"{out}/idle.txt"):
    kv = dict(x.split("=", 1) for x in line.split()[2:])
    idle[line.split()[1]] = kv
med = lambda k, key: statistics.median(float(r[key]) for r in rows[k])
names = os.environ["NAMES"].split()
print("| p50 / p90 ms (medians over rounds) | " + " | ".join(names) + " |")
print("|---|" + "---:|" * len(names))
for kind in os.environ["KINDS"].split():
    cells = [f"{med((kind, n), 'p50_ms'):.0f} / {med((kind, n), 'p90_ms'):.0f}" for n in names]
    print(f"| {kind} | " + " | ".join(cells) + " |")
errs = sum(int(r["errors"]) for v in rows.values() for r in v)
print(f"| errors | {errs} in total |" + " |" * (len(names) - 1))
print("| idle RSS / PSS MiB (processes) | " + " | ".join(
    f"{int(idle[n]['rss_kb']) / 1024:.0f} / {int(idle[n]['pss_kb']) / 1024:.0f} ({idle[n]['processes']})"
    for n in names) + " |")
EOF
