// upstream_server.mjs - an MCP server built with the official TypeScript
// SDK (McpServer + StreamableHTTPServerTransport, stateful sessions, pinned
// in package-lock.json), for mcp-exec to use as an upstream: run code calls
// its tools through mcpx.call (run.sh, upstream_check). Listens on
// 127.0.0.1:0 and prints "PORT <n>" on stdout. With --json it answers with
// JSON bodies instead of event streams. It requires "Authorization: Bearer
// $UPSTREAM_TOKEN" and records nothing but whether it matched.
//
// Tools: echo {text} (text), add {a, b} (structuredContent with an
// outputSchema), fail (isError), picture (an image block).
import { randomUUID } from "node:crypto";
import http from "node:http";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const json = process.argv.includes("--json");
const token = process.env.UPSTREAM_TOKEN || "";
const transports = new Map();
let authorized = 0;
let refused = 0;

function build() {
  const server = new McpServer({ name: "sdk-upstream", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes the text.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "add",
    {
      description: "Adds a and b.",
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => ({
      content: [{ type: "text", text: JSON.stringify({ sum: a + b }) }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool("fail", { description: "Fails." }, async () => ({
    content: [{ type: "text", text: "sdk tool failed" }],
    isError: true,
  }));
  server.registerTool("picture", { description: "A picture." }, async () => ({
    content: [{ type: "image", data: Buffer.from("png").toString("base64"), mimeType: "image/png" }],
  }));
  server.registerTool("auth_count", { description: "Requests with and without the token." },
    async () => ({ content: [{ type: "text", text: `${authorized} ${refused}` }],
      structuredContent: { authorized, refused } }));
  return server;
}

const httpd = http.createServer(async (req, res) => {
  if (token && req.headers.authorization !== `Bearer ${token}`) {
    refused++;
    res.writeHead(401).end();
    return;
  }
  authorized++;
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (sid || !body || body.method !== "initialize") {
      res.writeHead(sid ? 404 : 400).end();
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    await build().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});

httpd.listen(0, "127.0.0.1", () => {
  console.log(`PORT ${httpd.address().port}`);
});
