#!/usr/bin/env bash
# One command: install what is needed, build, and run mcp-exec.
# Default: stdio (for an MCP client config). `scripts/run.sh --transport=http`
# serves Streamable HTTP on 127.0.0.1:8080. Any mcp-exec flag may be passed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh >&2
export MCP_EXEC_PYTHON=${MCP_EXEC_PYTHON:-/usr/bin/python3}
export MCP_EXEC_LOG_FORMAT=${MCP_EXEC_LOG_FORMAT:-text}
exec ./build/mcp-exec "$@"
