// gateway_client.mjs URL TOKEN NAME ARGS_JSON - the official TypeScript SDK
// Client (pinned in package-lock.json) calling one tool of an mcp-exec
// gateway over Streamable HTTP, the token in X-MCP-AUTH: what a third-party
// MCP client sees of an exposed upstream's tool (everything_check.py).
// Prints one JSON line {"tool": <its tools/list entry>, "result": <the
// CallToolResult as the SDK returned it>}; the SDK itself checks the result
// against CallToolResultSchema and structuredContent against the tool's
// outputSchema. Exits 1 on any error, with the message on stderr.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, name, args] = process.argv.slice(2);
const client = new Client({ name: 'mcp-exec-gateway-check', version: '1.0.0' }, { capabilities: {} });
try {
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { 'X-MCP-AUTH': token } } }),
  );
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === name) || null;
  const result = await client.callTool({ name, arguments: JSON.parse(args || '{}') });
  process.stdout.write(JSON.stringify({ tool, result }) + '\n');
  await client.close();
} catch (e) {
  process.stderr.write(`gateway_client: ${e?.stack || e}\n`);
  process.exit(1);
}
