#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_*.c) with clang into
# build-fuzz/ (AddressSanitizer + UndefinedBehaviorSanitizer + coverage) and
# runs each one for FUZZ_SECONDS seconds (default 30), starting from its
# checked-in seeds (tests/fuzz/corpus/<name>/). Fails on the first crash,
# sanitizer report, leak, timeout or harness assertion, printing the report
# and the input that caused it (kept in build-fuzz/fuzz-artifacts/).
#
#   bash scripts/fuzz.sh                       # every harness, 30 s each
#   FUZZ_SECONDS=3600 bash scripts/fuzz.sh mcp # one harness for an hour
#
# New inputs that add coverage accumulate in build-fuzz/fuzz-corpus/<name>/
# across runs (not in the source tree).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
SECS=${FUZZ_SECONDS:-30}

CC=clang cmake -S . -B "$BUILD_DIR" -DMCPX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" >/dev/null

if [ $# -eq 0 ]; then
  set -- $(for f in tests/fuzz/fuzz_*.c; do basename "$f" .c | sed 's/^fuzz_//'; done)
fi
mkdir -p "$BUILD_DIR/fuzz-artifacts"
for name in "$@"; do
  bin="$BUILD_DIR/tests/fuzz/fuzz_$name"
  work="$BUILD_DIR/fuzz-corpus/$name"
  log="$BUILD_DIR/fuzz-$name.log"
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  mkdir -p "$work"
  if ! "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$BUILD_DIR/fuzz-artifacts/$name-" "${dict[@]}" \
      "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
    echo "fuzz: $name FAILED (log: $log)" >&2
    grep -v '^#' "$log" | tail -n 60 >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  echo "fuzz: $name ok: $runs runs in ${SECS}s ($rate/s), $cov"
done
