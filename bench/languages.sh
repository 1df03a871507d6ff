#!/usr/bin/env bash
# Cold start of each language side by side with its bare runtime, in
# alternating rounds so drift hits every target alike:
#   - the floors (hyperfine): `bash -c true`, `node -e 0`, and for
#     reference `/usr/bin/python3 -c pass`, each a bare process start;
#   - mcp-exec (one server, MCP_EXEC_WARM as given, default auto) serving
#     one call at a time over Streamable HTTP with mcp-exec-client bench:
#     `true` in bash (taken by the prepared bash in fork-server mode,
#     bash_pool.h; and cold, on the second server), `0` in JavaScript
#     (always cold), and `pass` in Python, cold (a second server with
#     MCP_EXEC_WARM=0).
# The server's overhead per call is its p50 minus the floor's mean: the
# sandbox setup, the workdir, the pipes, the reap and the HTTP round trip.
# Prints lines and writes them to $OUT/languages.txt.
#
#   ROUNDS=3 N=100 THINK_MS=300 bash bench/languages.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-3}
N=${N:-100}
THINK_MS=${THINK_MS:-300}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
: >"$OUT/languages.txt"

command -v hyperfine >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null; }
BIN=build/mcp-exec
CLIENT=build/mcp-exec-client
PY=/usr/bin/python3
NODE=/usr/bin/node
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
FLOOR_JSON=$(mktemp)
trap 'cleanup; rm -f "$FLOOR_JSON"' EXIT

start() { # name warm -> PORT_<name>
  local name=$1 warm=$2 log="$OUT/server-lang-$1.log"
  MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=$PY MCP_EXEC_WARM=$warm \
    MCP_EXEC_LOG_LEVEL=info "$BIN" 2>"$log" &
  pids+=("$!")
  eval "PORT_$name=$(server_port "$log" "$name")"
}
start main "${MCP_EXEC_WARM:-auto}"
start cold 0

floor() { # label "command line" (hyperfine -N splits it into words)
  hyperfine -N --warmup 10 --runs 100 --export-json "$FLOOR_JSON" "$2" >/dev/null
  $PY -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(sys.argv[2], "mean_ms=%.2f" % (r["mean"]*1000), "median_ms=%.2f" % (r["median"]*1000))' \
    "$FLOOR_JSON" "$1" | tee -a "$OUT/languages.txt"
}
call() { # label port args
  local line
  line=$("$CLIENT" bench --url "http://127.0.0.1:$2/mcp" --clients 1 --calls "$N" --tool exec \
         --args "$3" --expect '"exit_code":0' --warmup 5 --think-ms "$THINK_MS" | grep '^p50_ms=' || true)
  echo "$1 $line" | tee -a "$OUT/languages.txt"
}

echo "start: $(uptime)" | tee -a "$OUT/languages.txt"
for r in $(seq 1 "$ROUNDS"); do
  floor "r$r floor bash" "/usr/bin/bash -c true"
  call "r$r mcp-exec bash" "$PORT_main" '{"code":"true","language":"bash"}'
  call "r$r mcp-exec bash-cold" "$PORT_cold" '{"code":"true","language":"bash"}'
  floor "r$r floor node" "$NODE -e 0"
  call "r$r mcp-exec javascript" "$PORT_main" '{"code":"0","language":"javascript"}'
  floor "r$r floor python" "$PY -c pass"
  call "r$r mcp-exec python-cold" "$PORT_cold" '{"code":"pass"}'
done
echo "end: $(uptime)" | tee -a "$OUT/languages.txt"
