#!/usr/bin/env bash
# The page faults of warm runs, two builds alternating: per round one fresh
# server per build (default settings, MCP_EXEC_PYTHON=/usr/bin/python3),
# CALLS spaced calls recorded with `perf record -e page-faults` (every fault
# of the machine), and for each warm child (the processes named
# mcp-exec-zygote apart from the zygotes) its faults split at its longest
# pause, the wait for its code: "waiting" are the faults of the fork and the
# rehearsal while it waits (off the call's path when calls are spaced),
# "run" those after the code arrived, each a copy-on-write or mapping fault
# on the call's path. Prints the medians per round, then over the rounds.
#
#   bash bench/run_faults.sh BUILD_A BUILD_B [ROUNDS] [ARGS_JSON]
#   bash bench/run_faults.sh /tmp/mcpx-ab/8d4bc99/build-release build-release 6
#
# Needs perf (Debian's linux-perf) and root or perf_event_paranoid <= 0.
# ARGS_JSON defaults to bench/ab.sh's numpy call; ROUNDS to 6; CALLS (env)
# to 8; AB_PRE=N makes N back-to-back `print(1)` calls first.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=${1:?usage: bash bench/run_faults.sh BUILD_A BUILD_B [ROUNDS] [ARGS_JSON]}
B=${2:?}
ROUNDS=${3:-6}
ARGS=${4:-'{"code":"import numpy; print(numpy.zeros(3).sum())"}'}
CALLS=${CALLS:-8}
CL=$ROOT/build-release/mcp-exec-client
[ -x "$CL" ] || CL=$B/mcp-exec-client
command -v perf >/dev/null || { echo "run_faults.sh: needs perf (apt-get install linux-perf)" >&2; exit 1; }
OUT=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT

one() { # build label round
  local log="$OUT/$2-$3.log" port
  env MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=/usr/bin/python3 \
    MCP_EXEC_LOG_LEVEL=info "$1/mcp-exec" 2>"$log" >/dev/null &
  pid=$!
  port=$(server_port "$log" "$2") || exit 1
  for _ in $(seq 1 100); do grep -q 'fork server ready\|warm: after-reap\|warm: off' "$log" && break; sleep 0.1; done
  sleep 0.5
  if [ "${AB_PRE:-0}" -gt 0 ]; then
    "$CL" bench --url "http://127.0.0.1:$port/mcp" --clients 1 --calls "$AB_PRE" --tool exec \
      --args '{"code":"print(1)"}' >/dev/null 2>&1 || true
  fi
  "$CL" bench --url "http://127.0.0.1:$port/mcp" --clients 1 --calls 3 --tool exec \
    --args "$ARGS" >/dev/null 2>&1 || true
  perf record -q -a -c 1 -e page-faults -o "$OUT/perf.data" -- \
    "$CL" bench --url "http://127.0.0.1:$port/mcp" --clients 1 --calls "$CALLS" --think-ms 150 \
    --tool exec --args "$ARGS" >/dev/null 2>&1
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
  # Per child: the faults before and after its longest pause. The zygotes
  # fault far more than their children and drop out of the median.
  perf script -i "$OUT/perf.data" -F comm,pid,time 2>/dev/null |
    awk '$1 == "mcp-exec-zygote" {
        t = $3 + 0; p = $2
        if (p in last && t - last[p] > gap[p]) { gap[p] = t - last[p]; pre[p] = n[p] }
        last[p] = t; n[p]++ }
      END { for (p in n) if (p in gap) print pre[p], n[p] - pre[p] }' |
    python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin]
print("%s\t%s\t%d\t%d" % (sys.argv[1], sys.argv[2],
      statistics.median_low(int(r[0]) for r in rows), statistics.median_low(int(r[1]) for r in rows)))
' "$2" "$3" | tee -a "$OUT/rows.tsv"
}

echo "columns: build, round, faults of a warm child while waiting, faults of its run (medians)"
echo "A = $A, B = $B, $ROUNDS rounds of $CALLS calls: $ARGS; $(date -u '+%F %H:%M UTC')"
for r in $(seq 1 "$ROUNDS"); do
  one "$A" A "$r"
  one "$B" B "$r"
done
python3 - "$OUT/rows.tsv" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for i, what in ((2, "faults while waiting"), (3, "faults of the run")):
    med = {k: statistics.median(float(r[i]) for r in rows if r[0] == k) for k in "AB"}
    print("%s, median of rounds: A %.1f, B %.1f, B-A %+.1f" % (what, med["A"], med["B"],
                                                              med["B"] - med["A"]))
EOF
