// readme_configs.mjs README BIN URL TOKEN - the README's MCP client
// configuration snippets ("mcpServers"), loaded by a config loader nobody
// here wrote: LangChain's MCP adapters (MultiServerMCPClient), pinned in
// package-lock.json. Each snippet is used as the README shows it, with only
// its placeholders filled in: the checkout's path in the stdio one (BIN),
// the test server's URL and token in the HTTP one. Through each, the client
// lists the tools and calls exec. Prints ok/FAIL lines and "N passed, N
// failed"; exits 1 on a failure.
import { readFileSync } from "node:fs";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";

const [readme, bin, url, token] = process.argv.slice(2);
let passed = 0;
let failed = 0;
function check(cond, what, got) {
  if (cond) {
    passed++;
    console.log(`ok   ${what}`);
  } else {
    failed++;
    console.log(`FAIL ${what}` + (got === undefined ? "" : `: got ${String(got).slice(0, 800)}`));
  }
}

// The fenced json blocks that configure a client.
const snippets = [];
const re = /```json\n([\s\S]*?)```/g;
for (let m; (m = re.exec(readFileSync(readme, "utf8"))); )
  if (m[1].includes('"mcpServers"')) snippets.push(m[1]);
check(snippets.length === 2, "README shows a stdio and an HTTP client configuration", snippets.length);

async function tryConfig(label, text) {
  let config;
  try {
    config = JSON.parse(text);
  } catch (e) {
    check(false, `${label}: the snippet is JSON`, e.message);
    return;
  }
  const client = new MultiServerMCPClient({ mcpServers: config.mcpServers, throwOnLoadError: true });
  try {
    const tools = await client.getTools();
    const exec = tools.find((t) => t.name === "exec" || t.name.endsWith("__exec"));
    check(exec !== undefined, `${label}: LangChain loads the config and lists exec`,
          tools.map((t) => t.name).join(","));
    if (exec) {
      const r = await exec.invoke({ code: "print(6*7)" });
      const text = typeof r === "string" ? r : JSON.stringify(r);
      check(/\\"stdout\\":\\"42\\n\\"|"stdout":"42\\n"/.test(text), `${label}: exec through it prints 42`, text);
    }
  } catch (e) {
    check(false, `${label}: LangChain loads the config`, e.stack || e);
  } finally {
    await client.close().catch(() => {});
  }
}

const stdio = snippets.find((s) => s.includes('"command"'));
const http = snippets.find((s) => s.includes('"url"'));
if (stdio) {
  const path = JSON.parse(stdio).mcpServers.exec.command;
  check(path.endsWith("/build/mcp-exec"), "the stdio snippet names build/mcp-exec", path);
  await tryConfig("stdio snippet", stdio.replace(path, bin));
}
if (http) {
  const shown = JSON.parse(http).mcpServers.exec;
  const placeholder = shown.headers && shown.headers["X-MCP-AUTH"];
  check(placeholder && !placeholder.includes("${"), "the HTTP snippet shows a literal token", placeholder);
  await tryConfig("HTTP snippet", http.replace(shown.url, url).replace(placeholder, token));
  // The placeholder left as it stands is refused: the snippet really carries the auth.
  const refused = new MultiServerMCPClient({
    mcpServers: JSON.parse(http.replace(shown.url, url)).mcpServers,
    throwOnLoadError: true,
  });
  let err = null;
  try {
    await refused.getTools();
  } catch (e) {
    err = e;
  } finally {
    await refused.close().catch(() => {});
  }
  check(err !== null, "HTTP snippet: without the real token the server refuses", err);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
