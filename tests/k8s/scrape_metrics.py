#!/usr/bin/python3
"""Start the real server on a loopback port, run one execution so that the
per-outcome counters have samples, and print its /metrics text. Used by
tests/k8s/run.sh to check that the alert rules, the KEDA query and the
dashboard only use metrics the server exports.

Usage: scrape_metrics.py /path/to/mcp-exec   (prints the exposition text)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
os.environ["MCPX_BIN"] = os.path.abspath(sys.argv[1])

import mcpx_harness  # noqa: E402

mcpx_harness.BIN = os.environ["MCPX_BIN"]
srv = mcpx_harness.HttpServer({"MCP_EXEC_AUTH_TOKEN": "scrape-metrics-token-0123456789"})
try:
    cli = mcpx_harness.McpHttpClient(srv, token="scrape-metrics-token-0123456789")
    cli.initialize()
    cli.call("print(1)")
    st, _h, body = srv.request("GET", "/metrics")
    if st != 200:
        sys.exit(f"/metrics answered {st}")
    sys.stdout.write(body.decode())
finally:
    srv.stop()
