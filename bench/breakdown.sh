#!/usr/bin/env bash
# Where a warm print(1) call's time goes, measured on the running processes
# rather than estimated. Starts one warm server (fork-server mode where the
# kernel allows it) on 127.0.0.1 and, with N back-to-back calls each:
#   1. client latency (mcp-exec-client bench), nothing attached;
#   2. perf stat on the server, then on the zygote with its children (the
#      runs): CPU time, page faults, context switches per call;
#   3. strace -c on the server: which syscalls its share of a call spends;
#   4. strace -f -tt of three calls on the server and the zygote's children:
#      a timeline of one call from request to reply (strace slows every
#      syscall, so only the order and the relative gaps carry over).
# Writes $OUT/breakdown-*.txt and prints a summary.
#
#   bash bench/breakdown.sh            # N=500 OUT=bench/results
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-500}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
command -v perf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null; }
command -v strace >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; }
bash scripts/build.sh >/dev/null

BIN=build/mcp-exec
CLIENT=build/mcp-exec-client
log="$OUT/breakdown-server.log"
MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=/usr/bin/python3 MCP_EXEC_WARM=auto \
  MCP_EXEC_LOG_LEVEL=info "$BIN" 2>"$log" &
SRV=$!
trap 'kill $SRV 2>/dev/null || true; wait 2>/dev/null || true' EXIT
port=$(server_port "$log" "breakdown") || exit 1
ZYG=$(awk '{print $1}' "/proc/$SRV/task/$SRV/children")
URL="http://127.0.0.1:$port/mcp"
bench() {
  "$CLIENT" bench --url "$URL" --clients 1 --calls "$1" --tool exec --args '{"code":"print(1)"}' \
    --expect '"exit_code":0' --warmup 5 | grep '^p50_ms='
}
echo "load: $(uptime)" | tee "$OUT/breakdown-load.txt"
echo "server $SRV, zygote $ZYG ($(grep -c 'fork server ready' "$log") fork server ready)"

bench "$N" | tee "$OUT/breakdown-latency.txt"
perf stat -e task-clock,page-faults,context-switches -p "$SRV" -o "$OUT/breakdown-perf-server.txt" & P=$!
sleep 0.5; bench "$N" >/dev/null; kill -INT $P; wait $P 2>/dev/null || true
perf stat -e task-clock,page-faults,context-switches -p "$ZYG" -o "$OUT/breakdown-perf-runs.txt" & P=$!
sleep 0.5; bench "$N" >/dev/null; kill -INT $P; wait $P 2>/dev/null || true
strace -c -p "$SRV" -o "$OUT/breakdown-strace-server.txt" & P=$!
sleep 0.5; bench "$N" >/dev/null; kill -INT $P; wait $P 2>/dev/null || true
strace -f -tt -p "$SRV" -p "$ZYG" -o "$OUT/breakdown-timeline.txt" \
  -e trace=read,write,writev,sendmsg,recvmsg,sendto,recvfrom,wait4,waitid,exit_group,close_range,seccomp,landlock_restrict_self,clone & P=$!
sleep 0.5; bench 3 >/dev/null; sleep 0.3; kill -INT $P; wait $P 2>/dev/null || true

per() { # file event -> value per call
  awk -v ev="$2" -v n="$N" '$0 ~ ev {gsub(",", "", $1); printf "%.3f", $1 / (n + 5)}' "$1"
}
{
  echo "per call (N=$N, 5 warm-up calls counted in):"
  echo "  server   cpu_ms=$(per "$OUT/breakdown-perf-server.txt" task-clock) faults=$(per "$OUT/breakdown-perf-server.txt" page-faults) cs=$(per "$OUT/breakdown-perf-server.txt" context-switches)"
  echo "  runs     cpu_ms=$(per "$OUT/breakdown-perf-runs.txt" task-clock) faults=$(per "$OUT/breakdown-perf-runs.txt" page-faults) cs=$(per "$OUT/breakdown-perf-runs.txt" context-switches)"
  echo "server syscalls (strace -c, top 12 by time):"
  sed -n '3,14p' "$OUT/breakdown-strace-server.txt"
} | tee "$OUT/breakdown-summary.txt"
