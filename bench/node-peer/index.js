// The Node peer used by bench/run.sh: a stateful Streamable HTTP MCP server on
// the official TypeScript SDK with one tool, exec_command {cmd, timeout?},
// run through child_process.exec, as the exec-server it stands in for does.
// Loopback only; no auth; for side-by-side measurements, not for production.
import express from "express";
import { randomUUID } from "node:crypto";
import { exec } from "node:child_process";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const HOST = process.env.HOST || "127.0.0.1";
const PORT = Number(process.env.PORT || 3005);

function newServer() {
  const server = new McpServer({ name: "exec-server", version: "1.0.0" });
  server.tool(
    "exec_command",
    "Run a shell command and return stdout, stderr and the exit code",
    { cmd: z.string(), timeout: z.number().optional() },
    async ({ cmd, timeout }) => {
      const result = await new Promise((resolve) => {
        exec(cmd, { timeout: Math.min(timeout ?? 120000, 120000), maxBuffer: 10 * 1024 * 1024 },
          (err, stdout, stderr) => resolve({ stdout, stderr, exitCode: err ? (err.code ?? 1) : 0 }));
      });
      return { content: [{ type: "text", text: JSON.stringify(result) }] };
    });
  return server;
}

const app = express();
app.use(express.json({ limit: "10mb" }));
const transports = {};

app.post("/mcp", async (req, res) => {
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? transports[sid] : undefined;
  if (!transport) {
    if (sid || !isInitializeRequest(req.body)) {
      res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no valid session" }, id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { transports[id] = transport; },
    });
    transport.onclose = () => { if (transport.sessionId) delete transports[transport.sessionId]; };
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});

const bySession = async (req, res) => {
  const transport = transports[req.headers["mcp-session-id"]];
  if (!transport) { res.status(400).send("Invalid or missing session ID"); return; }
  await transport.handleRequest(req, res);
};
app.get("/mcp", bySession);
app.delete("/mcp", bySession);
app.get("/health", (_req, res) => res.json({ status: "ok" }));

app.listen(PORT, HOST, () => console.error(`node peer listening on http://${HOST}:${PORT}/mcp`));
