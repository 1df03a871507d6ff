#!/usr/bin/env bash
# Side-by-side benchmark on one machine, in alternating rounds so drift hits
# every target alike:
#   - the floors: a cold `/usr/bin/python3 -c ...` process, and fork+exec of
#     /bin/true (what any new process costs here), both with hyperfine
#   - mcp-exec with warm interpreters, and with MCP_EXEC_WARM=0 (cold path)
#   - the Node peer: the official TypeScript SDK with one exec_command tool
#     over Streamable HTTP (bench/node-peer, pinned by its lockfile)
# All traffic stays on 127.0.0.1. Prints a table and writes it to
# $OUT/table.md; raw numbers are in $OUT/*.txt.
#
#   bash bench/run.sh                  # ROUNDS=3 N=200 CLIENTS=4 LEAK_N=10000 THINK_MS=300
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-3}
N=${N:-200}
CLIENTS=${CLIENTS:-4}
LEAK_N=${LEAK_N:-10000}
THINK_MS=${THINK_MS:-300}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
rm -f "$OUT"/bench.txt "$OUT"/load.txt "$OUT"/rss-*.txt  # its own; breakdown.sh keeps its summaries here too

bash scripts/deps.sh --test
command -v hyperfine >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null; }
bash scripts/build.sh >/dev/null
(cd bench/node-peer && [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error)

BIN=build/mcp-exec
CLIENT=build/mcp-exec-client
PY=/usr/bin/python3
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

start_ours() { # name warm-mode -> sets PORT_<name>, PID_<name>
  local name=$1 warm=$2 log="$OUT/server-$1.log"
  MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=$PY MCP_EXEC_WARM=$warm \
    MCP_EXEC_MAX_QUEUE=64 MCP_EXEC_LOG_LEVEL=info "$BIN" 2>"$log" &
  local pid=$! port=""
  pids+=("$pid")
  port=$(server_port "$log" "$name") || exit 1
  eval "PORT_$name=$port PID_$name=$pid"
}

start_ours warm auto
start_ours cold 0
PEER_PORT=$(( (RANDOM % 20000) + 30000 ))
(cd bench/node-peer && PATH=/usr/bin:/bin HOST=127.0.0.1 PORT=$PEER_PORT exec node index.js) 2>"$OUT/server-peer.log" &
pids+=("$!")
for _ in $(seq 1 100); do grep -q listening "$OUT/server-peer.log" 2>/dev/null && break; sleep 0.1; done

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
echo "idle_rss_kb_warm=$(rss_kb "$PID_warm") idle_rss_kb_cold=$(rss_kb "$PID_cold")" | tee "$OUT/rss-idle.txt"
# The machine is shared: its load goes beside the numbers.
echo "start: $(uptime)" | tee "$OUT/load.txt"

bench() { # label url clients calls tool args expect [think-ms]
  local label=$1 url=$2 c=$3 n=$4 tool=$5 args=$6 expect=$7 think=${8:-0}
  local line
  line=$("$CLIENT" bench --url "$url" --clients "$c" --calls "$n" --tool "$tool" --args "$args" \
         --expect "$expect" --warmup 5 --think-ms "$think" | grep '^p50_ms=' || true)
  echo "$label $line" | tee -a "$OUT/bench.txt"
}

PRINT='{"code":"print(1)"}'
NUMPY='{"code":"import numpy; print(numpy.__version__)"}'
PEER_PRINT="{\"cmd\":\"$PY -c 'print(1)'\"}"
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r/$ROUNDS"
  hyperfine -N --warmup 10 --runs 100 --export-json "$OUT/floor-print-$r.json" \
    "$PY -c 'print(1)'" >/dev/null
  hyperfine -N --warmup 3 --runs 30 --export-json "$OUT/floor-numpy-$r.json" \
    "$PY -c 'import numpy'" >/dev/null
  hyperfine -N --warmup 20 --runs 300 --export-json "$OUT/floor-true-$r.json" /bin/true >/dev/null
  bench "r$r ours-warm print1 seq" "http://127.0.0.1:$PORT_warm/mcp" 1 "$N" exec "$PRINT" '"exit_code":0'
  bench "r$r ours-cold print1 seq" "http://127.0.0.1:$PORT_cold/mcp" 1 "$N" exec "$PRINT" '"exit_code":0'
  bench "r$r peer print1 seq" "http://127.0.0.1:$PEER_PORT/mcp" 1 "$N" exec_command "$PEER_PRINT" 'exitCode'
  bench "r$r ours-warm numpy seq" "http://127.0.0.1:$PORT_warm/mcp" 1 $((N / 4)) exec "$NUMPY" '"exit_code":0'
  # An agent thinks between tool calls: THINK_MS (default 300) apart.
  bench "r$r ours-warm print1 spaced" "http://127.0.0.1:$PORT_warm/mcp" 1 $((N / 4)) exec "$PRINT" '"exit_code":0' "$THINK_MS"
  bench "r$r ours-cold print1 spaced" "http://127.0.0.1:$PORT_cold/mcp" 1 $((N / 4)) exec "$PRINT" '"exit_code":0' "$THINK_MS"
  bench "r$r peer print1 spaced" "http://127.0.0.1:$PEER_PORT/mcp" 1 $((N / 4)) exec_command "$PEER_PRINT" 'exitCode' "$THINK_MS"
  bench "r$r ours-warm numpy spaced" "http://127.0.0.1:$PORT_warm/mcp" 1 $((N / 4)) exec "$NUMPY" '"exit_code":0' "$THINK_MS"
  bench "r$r ours-warm print1 conc" "http://127.0.0.1:$PORT_warm/mcp" "$CLIENTS" $((N / CLIENTS)) exec "$PRINT" '"exit_code":0'
  bench "r$r ours-cold print1 conc" "http://127.0.0.1:$PORT_cold/mcp" "$CLIENTS" $((N / CLIENTS)) exec "$PRINT" '"exit_code":0'
  bench "r$r peer print1 conc" "http://127.0.0.1:$PEER_PORT/mcp" "$CLIENTS" $((N / CLIENTS)) exec_command "$PEER_PRINT" 'exitCode'
done

if [ "$LEAK_N" -gt 0 ]; then
  before=$(rss_kb "$PID_warm")
  bench "leak ours-warm print1" "http://127.0.0.1:$PORT_warm/mcp" "$CLIENTS" $((LEAK_N / CLIENTS)) exec "$PRINT" '"exit_code":0'
  sleep 1
  echo "leak_n=$LEAK_N rss_before_kb=$before rss_after_kb=$(rss_kb "$PID_warm")" | tee "$OUT/rss-leak.txt"
fi

echo "end: $(uptime)" | tee -a "$OUT/load.txt"
$PY bench/summarize.py "$OUT" | tee "$OUT/table.md"
