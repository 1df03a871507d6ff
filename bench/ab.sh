#!/usr/bin/env bash
# A/B of two builds' warm path, alternating, on 127.0.0.1 (one server at a
# time, default settings, MCP_EXEC_PYTHON=/usr/bin/python3), with one
# client (this tree's mcp-exec-client) for both. Per build and round:
#   print1 spaced   print(1) every 50 ms, p50 (40 calls)
#   b2b calls/s     print(1) back to back, one client (200 calls), and p50
#   numpy spaced    `import numpy` every 300 ms, p50 (30 calls)
#   idle RSS        the server's VmRSS after those, idle for a second
#   cpu/call        the server's own CPU (utime+stime from /proc) per
#                   back-to-back call: the per-call breakdown on the
#                   server's side that no shared-machine noise inflates
#                   much (it counts only the server's work)
#   faults/call     the server's minor page faults per back-to-back call
#   bash spaced     with AB_BASH=1 (both builds must have bash): `true` in
#                   bash every 50 ms, p50 (40 calls; the prepared bash takes
#                   them in fork-server mode)
#   4 clients       print(1) from 4 clients at once, back to back (50 calls
#                   each), calls/s; beside it, once per round, the cold spawn
#                   rate of `/usr/bin/python3 -c 'print(1)'` with 4 such
#                   processes at a time (what 4 clients would get without a
#                   server), so the ratio is the issue-30 goal's (>= 2x)
# then a table with every round and the medians.
#
#   bash bench/ab.sh 7a0166c [ROUNDS]          # builds that commit and this tree
#   bash bench/ab.sh BUILD_A BUILD_B [ROUNDS]  # two existing build directories
#   AB_ENV_B="MCP_EXEC_PRELOAD=numpy" bash bench/ab.sh 7a0166c
#   AB_STRACE=1 bash bench/ab.sh 7a0166c 1     # + strace -c of the server, 200 calls each
#
# With a commit, it is checked out with `git worktree add` under
# ${AB_DIR:-/tmp/mcpx-ab}/<commit> and built as this tree is, Release
# (scripts/build.sh with BUILD_TYPE=Release), this tree into
# build-release/. ROUNDS defaults to 3. AB_ENV_A / AB_ENV_B: extra
# environment for each server. The machine's load (uptime) is printed
# before and after: the runs alternate so that both builds see the same
# load, but a shared machine still makes single numbers noisy.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)

build_release() { # source-dir
  (cd "$1" && BUILD_DIR=build-release BUILD_TYPE=Release bash scripts/build.sh >/dev/null)
}

if [ -d "${1:-}" ] && [ -d "${2:-}" ]; then
  A=$1 B=$2 ROUNDS=${3:-3} NAME_A=$1 NAME_B=$2
else
  REV=${1:?usage: bash bench/ab.sh COMMIT [ROUNDS] | BUILD_A BUILD_B [ROUNDS]}
  ROUNDS=${2:-3}
  SHA=$(git -C "$ROOT" rev-parse --short "$REV^{commit}")
  WT=${AB_DIR:-/tmp/mcpx-ab}/$SHA
  if [ ! -d "$WT" ]; then
    mkdir -p "$(dirname "$WT")"
    git -C "$ROOT" worktree add --detach "$WT" "$SHA" >/dev/null
  fi
  echo "building $SHA in $WT/build-release and this tree in $ROOT/build-release (Release)" >&2
  build_release "$WT"
  build_release "$ROOT"
  A=$WT/build-release B=$ROOT/build-release
  NAME_A=$SHA NAME_B="$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo +)"
fi
CL=$ROOT/build-release/mcp-exec-client
[ -x "$CL" ] || CL=$B/mcp-exec-client
OUT=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT

field() { grep -o "$1=[0-9.]*" | head -1 | cut -d= -f2; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
faults() { awk '{print $10}' "/proc/$1/stat"; }

# One client's bench (one line of key=value pairs); when it fails, the
# line says errors=, and the server's log goes to stderr (a server that
# died says why there).
bench() { # server-log bench-args...
  local log=$1 out
  shift
  if ! out=$("$CL" bench --clients 1 "$@" 2>&1); then
    echo "bench $*: $out" | head -3 >&2
    echo "server log (last lines):" >&2
    grep -v '"audit"' "$log" | tail -20 >&2
  fi
  echo "$out" | grep -m1 'p50_ms=' || echo "errors=1"
}

one() { # build label extra-env round
  local build=$1 label=$2 env=$3 round=$4 log="$OUT/$2-$4.log" port pid
  # shellcheck disable=SC2086
  env MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=127.0.0.1:0 MCP_EXEC_PYTHON=/usr/bin/python3 \
    MCP_EXEC_MAX_QUEUE=64 MCP_EXEC_LOG_LEVEL=info $env \
    "$build/mcp-exec" 2>"$log" >/dev/null &
  pid=$!
  pids+=("$pid")
  port=$(server_port "$log" "$label") || exit 1
  local url="http://127.0.0.1:$port/mcp" p1='{"code":"print(1)"}'
  local np='{"code":"import numpy; print(numpy.zeros(3).sum())"}'
  local sp b2b nps conc bsh rss c0 c1 f0 f1 hz
  hz=$(getconf CLK_TCK)
  # The zygote's preload and first child: not measured.
  for _ in $(seq 1 100); do grep -q 'fork server ready\|warm: after-reap\|warm: off' "$log" && break; sleep 0.1; done
  sleep 1
  sp=$(bench "$log" --url "$url" --calls 40 --warmup 3 --think-ms 50 --tool exec --args "$p1")
  c0=$(cpu_ticks "$pid") f0=$(faults "$pid")
  b2b=$(bench "$log" --url "$url" --calls 200 --warmup 5 --tool exec --args "$p1")
  c1=$(cpu_ticks "$pid") f1=$(faults "$pid")
  nps=$(bench "$log" --url "$url" --calls 30 --warmup 2 --think-ms 300 --tool exec --args "$np")
  conc=$("$CL" bench --url "$url" --clients 4 --calls 50 --warmup 2 --tool exec --args "$p1" 2>&1 |
    grep -m1 'calls_per_s=' || echo "errors=1")
  bsh=""
  if [ -n "${AB_BASH:-}" ]; then
    bsh=$(bench "$log" --url "$url" --calls 40 --warmup 3 --think-ms 50 --tool exec \
      --args '{"code":"true","language":"bash"}')
  fi
  sleep 1
  rss=$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status" 2>/dev/null || echo "")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$round" \
    "$(echo "$sp" | field p50_ms)" "$(echo "$b2b" | field calls_per_s)" \
    "$(echo "$b2b" | field p50_ms)" "$(echo "$nps" | field p50_ms)" "$rss" \
    "$(awk -v a="$c0" -v b="$c1" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) * 1000 / hz / 205}')" \
    "$(awk -v a="$f0" -v b="$f1" 'BEGIN {printf "%.0f", (b - a) / 205}')" \
    "$(printf '%s\n%s\n%s\n%s\n' "$sp" "$b2b" "$nps" "$conc" | grep -o 'errors=[0-9]*' | cut -d= -f2 | awk '{s += $1} END {print s + 0}')" \
    "$(echo "$conc" | field calls_per_s)" "$(echo "$bsh" | field p50_ms)" \
    >>"$OUT/rows.tsv"
  tail -1 "$OUT/rows.tsv" >&2
  if [ -n "${AB_STRACE:-}" ]; then
    strace -c -q -p "$pid" -o "$OUT/$label.strace" &
    local st=$!
    sleep 0.5
    "$CL" bench --url "$url" --clients 1 --calls 200 --tool exec --args "$p1" >/dev/null
    kill -INT "$st"; wait "$st" 2>/dev/null || true
    echo "== strace -c of the $label server over 200 back-to-back print(1) calls:"
    head -25 "$OUT/$label.strace"
  fi
  kill "$pid" 2>/dev/null || echo "$label round $round: the server had exited" >&2
  wait "$pid" 2>/dev/null || true
}

# Cold `python3 -c 'print(1)'` processes per second, 4 at a time (N each).
cold_rate() {
  local n=${AB_COLD_N:-25} t0 t1
  t0=$(date +%s.%N)
  for _ in 1 2 3 4; do
    (for _ in $(seq 1 "$n"); do /usr/bin/python3 -c 'print(1)' >/dev/null; done) &
  done
  wait
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN {printf "%.1f", 4 * n / (b - a)}'
}

echo "A = $NAME_A ($A), B = $NAME_B ($B), $ROUNDS rounds; $(date -u '+%F %H:%M UTC')"
echo "load before: $(uptime)"
for r in $(seq 1 "$ROUNDS"); do
  one "$A" A "${AB_ENV_A:-}" "$r"
  one "$B" B "${AB_ENV_B:-}" "$r"
  cr=$(cold_rate)
  echo "cold python3 -c, 4 at a time, round $r: $cr per s" >&2
  printf 'C\t%s\t%s\n' "$r" "$cr" >>"$OUT/rows.tsv"
done
echo "load after:  $(uptime)"
python3 - "$OUT/rows.tsv" "$NAME_A" "$NAME_B" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
cold = [float(r[2]) for r in rows if r[0] == "C"]
rows = [r for r in rows if r[0] != "C"]
names = {"A": sys.argv[2], "B": sys.argv[3]}
cols = ["print(1) every 50 ms, p50 ms", "back to back, calls/s", "back to back, p50 ms",
        "numpy every 300 ms, p50 ms", "idle RSS, MiB", "server CPU per call, ms",
        "server page faults per call", "errors", "4 clients, calls/s",
        "bash true every 50 ms, p50 ms"]
by = {k: [r for r in rows if r[0] == k] for k in "AB"}
print()
print("| measurement | A: %s | B: %s | B/A (medians) |" % (names["A"], names["B"]))
print("|---|---|---|---:|")
for i, c in enumerate(cols):
    vals = {k: [float(r[2 + i]) for r in by[k] if len(r) > 2 + i and r[2 + i] not in ("", None)]
            for k in "AB"}
    if not vals["A"] and not vals["B"]:
        continue
    med = {k: statistics.median(v) if v else float("nan") for k, v in vals.items()}
    fmt = lambda v: ("%g" % v)
    ratio = med["B"] / med["A"] if med["A"] else float("nan")
    print("| %s | %s (median %s) | %s (median %s) | %.2f |" % (
        c, ", ".join(fmt(v) for v in vals["A"]), fmt(med["A"]),
        ", ".join(fmt(v) for v in vals["B"]), fmt(med["B"]), ratio))
if cold:
    print("| cold `python3 -c 'print(1)'`, 4 at a time, per s | %s (median %s) | | |" % (
        ", ".join("%g" % v for v in cold), "%g" % statistics.median(cold)))
    for k in "AB":
        v = [float(r[10]) for r in by[k] if len(r) > 10 and r[10]]
        if v:
            print("| 4 clients / cold spawn rate, %s | %.2f | | |" % (
                names[k], statistics.median(v) / statistics.median(cold)))
EOF
