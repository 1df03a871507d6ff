#!/usr/bin/env bash
# What one call costs the server's process and the runs it starts, two
# builds alternating (one server at a time, MCP_EXEC_PYTHON=/usr/bin/python3,
# the given MCP_EXEC_WARM), from /proc/<server>/stat before and after N calls
# of one client with THINK_MS between them:
#   server cpu/call      the server's own utime + stime per call, ms
#   server faults/call   its own minor page faults per call
#   runs cpu/call        the CPU of the runs it reaped itself (cutime +
#                        cstime: cold, bash and JavaScript runs; a fork
#                        server's children are the zygote's), per call, ms
#   runs faults/call     their minor page faults per call
#   p50                  the client's p50 latency, ms
# These count work, not time: a loaded machine changes them far less than
# latencies (the p50 is printed for reference only).
#
#   bash bench/server_cost.sh BUILD_A BUILD_B [ROUNDS]
#   LANG_ARGS='{"code":"true","language":"bash"}' N=200 THINK_MS=20 MCP_EXEC_WARM=0 \
#     bash bench/server_cost.sh /tmp/mcpx-ab/2c2053d/build-release build-release 3
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=${1:?usage: bash bench/server_cost.sh BUILD_A BUILD_B [ROUNDS]}
B=${2:?usage: bash bench/server_cost.sh BUILD_A BUILD_B [ROUNDS]}
ROUNDS=${3:-3}
N=${N:-200}
THINK_MS=${THINK_MS:-20}
ARGS=${LANG_ARGS:-'{"code":"true","language":"bash"}'}
CL=$ROOT/build-release/mcp-exec-client
[ -x "$CL" ] || CL=$B/mcp-exec-client
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT

# utime stime cutime cstime (ticks) minflt cminflt
stat_of() { awk '{print $14, $15, $16, $17, $10, $11}' "/proc/$1/stat"; }

one() { # label build
  local log port s0 s1 r
  log=$(mktemp)
  MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=/usr/bin/python3 \
    MCP_EXEC_WARM=${MCP_EXEC_WARM:-auto} "$2/mcp-exec" 2>"$log" >/dev/null &
  pid=$!
  port=$(server_port "$log" "$1") || exit 1
  for _ in $(seq 1 100); do grep -q 'fork server ready\|warm: after-reap\|warm: off' "$log" && break; sleep 0.1; done
  sleep 1
  "$CL" bench --url "http://127.0.0.1:$port/mcp" --clients 1 --calls 5 --tool exec --args "$ARGS" >/dev/null
  s0=$(stat_of "$pid")
  r=$("$CL" bench --url "http://127.0.0.1:$port/mcp" --clients 1 --calls "$N" --think-ms "$THINK_MS" \
      --tool exec --args "$ARGS" --expect '"exit_code":0' | grep -o 'p50_ms=[0-9.]*\|errors=[0-9]*' | tr '\n' ' ')
  s1=$(stat_of "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  rm -f "$log"
  awk -v l="$1" -v n="$N" -v hz="$(getconf CLK_TCK)" -v r="$r" -v a="$s0" -v b="$s1" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    printf "%s\tserver cpu/call %.2f ms\tserver faults/call %.1f\truns cpu/call %.2f ms\truns faults/call %.1f\t%s\n",
      l, (y[1] + y[2] - x[1] - x[2]) * 1000 / hz / n, (y[5] - x[5]) / n,
      (y[3] + y[4] - x[3] - x[4]) * 1000 / hz / n, (y[6] - x[6]) / n, r }'
}

echo "A = $A, B = $B, $ROUNDS rounds, $N calls of $ARGS, think ${THINK_MS} ms, MCP_EXEC_WARM=${MCP_EXEC_WARM:-auto}; $(date -u '+%F %H:%M UTC')"
echo "load before: $(uptime)"
for r in $(seq 1 "$ROUNDS"); do
  one "A r$r" "$A"
  one "B r$r" "$B"
done
echo "load after:  $(uptime)"
