# The conformance suite's "protocol_error_job": a task that ends in a
# JSON-RPC error rather than a tool result. Here that is a real limit of the
# server: its result (about 1.4 MB as a CallToolResult) is more than a
# caller's tasks may keep (the suite's server runs with
# MCP_EXEC_TASKS_MAX_MB=1), so the task fails with -32603.
import time


def handler(args, ctx):
    time.sleep(1)
    return {"blob": "x" * 700000}
