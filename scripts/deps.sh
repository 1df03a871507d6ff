#!/usr/bin/env bash
# Installs the Debian packages mcp-exec needs to build, run and test.
# Idempotent: packages already present are not reinstalled. Needs root (or sudo).
set -euo pipefail

BUILD="build-essential cmake pkg-config libwebsockets-dev libcjson-dev libseccomp-dev libssl-dev libcurl4-openssl-dev libpcre2-dev libhiredis-dev libpython3-dev"
RUNTIME="python3 python3-numpy python3-pandas python3-matplotlib python3-yaml python3-jinja2 python3-pil"
# exec's other languages (MCP_EXEC_LANGUAGES): bash with the tools a bash run
# is offered, and Debian's Node.js for JavaScript, as the image ships them.
LANGUAGES="bash coreutils grep sed gawk findutils jq sqlite3 file nodejs"
# clang and its runtime (libclang_rt.fuzzer, ASan, UBSan) build the libFuzzer
# harnesses that scripts/fuzz.sh runs; redis-server is the Redis store the
# store's tests start on loopback (its service is not started: tests run
# their own, by pid).
TEST="nodejs npm unzip clang libclang-rt-14-dev redis-server"
want="$BUILD $RUNTIME $LANGUAGES"
case "${1:-}" in
  --test) want="$want $TEST" ;;
esac

missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node may come from outside Debian (a preinstalled toolchain); accept any node >= 18 with npm.
# (The server runs JavaScript with /usr/bin/node when it exists, else the first
# node on its PATH: src/sandbox/language.c.)
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  missing=$(echo "$missing" | tr ' ' '\n' | grep -vx -e nodejs -e npm | tr '\n' ' ')
fi
missing=$(echo $missing)
if [ -n "$missing" ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "deps: installing $missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
