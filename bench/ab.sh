#!/usr/bin/env bash
# A/B of two builds' warm path, alternating, on 127.0.0.1 (one server at a
# time, MCP_EXEC_WARM=auto). Per build and round: print(1) with one client,
# spaced (300 ms think time) and back to back; 4 clients back to back; and a
# spaced numpy call. Prints one line per measurement (mcp-exec-client bench).
#
#   bash bench/ab.sh BUILD_A BUILD_B [ROUNDS]          # e.g. /tmp/before/build build
#   AB_ENV_B="MCP_EXEC_PRELOAD=numpy" bash bench/ab.sh build build
#
# AB_ENV_A / AB_ENV_B: extra environment for each server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
A=$1 B=$2 ROUNDS=${3:-2}
OUT=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT

one() { # build label extra-env
  local build=$1 label=$2 env=$3 log="$OUT/$2.log" port="" pid cl="$1/mcp-exec-client"
  # shellcheck disable=SC2086
  env MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=/usr/bin/python3 \
    MCP_EXEC_WARM=auto MCP_EXEC_MAX_QUEUE=64 MCP_EXEC_LOG_LEVEL=info $env \
    "$build/mcp-exec" 2>"$log" >/dev/null &
  pid=$!
  pids+=("$pid")
  port=$(server_port "$log" "$label") || exit 1
  local url="http://127.0.0.1:$port/mcp" p1='{"code":"print(1)"}'
  local np='{"code":"import numpy; print(numpy.zeros(3).sum())"}'
  sleep 1
  printf '%s print1 spaced: ' "$label"
  "$cl" bench --url "$url" --clients 1 --calls 40 --warmup 3 --think-ms 300 --tool exec --args "$p1" | grep latency
  printf '%s print1 seq:    ' "$label"
  "$cl" bench --url "$url" --clients 1 --calls 200 --warmup 5 --tool exec --args "$p1" | grep latency
  printf '%s print1 conc4:  ' "$label"
  "$cl" bench --url "$url" --clients 4 --calls 50 --warmup 2 --tool exec --args "$p1" | grep -E 'latency|throughput' | tr -s ' \n' ' '
  echo
  printf '%s numpy spaced:  ' "$label"
  "$cl" bench --url "$url" --clients 1 --calls 30 --warmup 2 --think-ms 300 --tool exec --args "$np" | grep latency
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

uptime
for r in $(seq 1 "$ROUNDS"); do
  one "$A" "r$r A" "${AB_ENV_A:-}"
  one "$B" "r$r B" "${AB_ENV_B:-}"
done
uptime
