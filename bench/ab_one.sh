#!/usr/bin/env bash
# One warm-path measure of two builds, alternating, over many rounds: the
# p50 of spaced calls (the client waits THINK_MS between them), one fresh
# server per build and round, default settings, MCP_EXEC_PYTHON=/usr/bin/python3.
# For a measure whose rounds scatter more than the difference bench/ab.sh
# looks for (spaced numpy: +-6 % between rounds of one build); prints every
# round (the client's p50, and the medians of the run's own wall_ms and
# cpu_ms from the server's audit lines: what the run took, apart from the
# server), the medians and B/A.
#
#   bash bench/ab_one.sh BUILD_A BUILD_B [ROUNDS] [ARGS_JSON] [THINK_MS] [CALLS]
#   bash bench/ab_one.sh /tmp/mcpx-ab/8d4bc99/build-release build-release 8
#
# ARGS_JSON defaults to the numpy call of bench/ab.sh, THINK_MS to 300,
# CALLS to 40 (3 unmeasured first), ROUNDS to 8. Build A's directory first
# with `bash bench/ab.sh <commit> 1` (or scripts/build.sh). AB_PRE=N makes
# N back-to-back `print(1)` calls before the measured ones, as bench/ab.sh
# does before its numpy calls; AB_PRE_ARGS replaces their arguments (JSON).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=${1:?usage: bash bench/ab_one.sh BUILD_A BUILD_B [ROUNDS] [ARGS_JSON] [THINK_MS] [CALLS]}
B=${2:?}
ROUNDS=${3:-8}
ARGS=${4:-'{"code":"import numpy; print(numpy.zeros(3).sum())"}'}
THINK=${5:-300}
CALLS=${6:-40}
PRE_ARGS=${AB_PRE_ARGS:-'{"code":"print(1)"}'}
CL=$ROOT/build-release/mcp-exec-client
[ -x "$CL" ] || CL=$B/mcp-exec-client
OUT=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$OUT"; }
trap cleanup EXIT

one() { # build label round
  local log="$OUT/$2-$3.log" port p50
  env MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=/usr/bin/python3 \
    MCP_EXEC_LOG_LEVEL=info "$1/mcp-exec" 2>"$log" >/dev/null &
  pid=$!
  port=$(server_port "$log" "$2") || exit 1
  for _ in $(seq 1 100); do grep -q 'fork server ready\|warm: after-reap\|warm: off' "$log" && break; sleep 0.1; done
  sleep 1
  if [ "${AB_PRE:-0}" -gt 0 ]; then
    "$CL" bench --url "http://127.0.0.1:$port/mcp" --clients 1 --calls "$AB_PRE" --tool exec \
      --args "$PRE_ARGS" >/dev/null 2>&1 || true
  fi
  p50=$("$CL" bench --url "http://127.0.0.1:$port/mcp" --clients 1 --calls "$CALLS" --warmup 3 \
    --think-ms "$THINK" --tool exec --args "$ARGS" 2>&1 | grep -o 'p50_ms=[0-9.]*' | cut -d= -f2)
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "${p50:-nan}" "$(audit_median "$log" wall_ms)" \
    "$(audit_median "$log" cpu_ms)" | tee -a "$OUT/rows.tsv"
}

# The median of one field over the last CALLS audit lines of a log.
audit_median() { # log field
  grep '"audit"' "$1" | tail -n "$CALLS" | grep -o "\"$2\":[0-9]*" | cut -d: -f2 | sort -n |
    awk '{a[NR] = $1} END {print NR ? a[int((NR + 1) / 2)] : "nan"}'
}

echo "columns: build, round, p50 ms, the run's wall_ms and cpu_ms (medians)"
echo "A = $A, B = $B, $ROUNDS rounds of $CALLS calls every $THINK ms: $ARGS; $(date -u '+%F %H:%M UTC')"
echo "load before: $(uptime)"
for r in $(seq 1 "$ROUNDS"); do
  one "$A" A "$r"
  one "$B" B "$r"
done
echo "load after:  $(uptime)"
python3 - "$OUT/rows.tsv" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for i, what in ((2, "p50 ms"), (3, "run wall_ms"), (4, "run cpu_ms")):
    med = {k: statistics.median(float(r[i]) for r in rows if r[0] == k) for k in "AB"}
    print("%s, median of rounds: A %.2f, B %.2f, B/A %.3f" % (what, med["A"], med["B"],
                                                            med["B"] / med["A"]))
EOF
