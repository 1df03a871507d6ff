#!/usr/bin/env node
// tests/interop/workspace_client.mjs - issue 31's "done when", through the
// official TypeScript SDK client (pinned in package-lock.json): an agent
// loads a CSV into a pandas DataFrame with `df = pd.read_csv(...)` in one
// exec call on one server process and plots `df` in the next call on
// another server process that shares the workspaces' store, with nothing
// read again: the first call deletes the CSV after loading it, and the
// second finds no CSV and no data file, only `df`.
//
//   node workspace_client.mjs URL_A URL_B TOKEN
//
// Both servers are started by run.sh with the same token and the same
// MCP_EXEC_WORKSPACES. The SDK checks each result's structuredContent
// against exec's outputSchema (which declares `workspace`); the resources
// the servers announce are listed and read through the SDK too.
// Prints "ok"/"FAIL" per check and "N passed, N failed" last.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [urlA, urlB, token] = process.argv.slice(2);
if (!urlA || !urlB || !token) {
  console.error('usage: workspace_client.mjs URL_A URL_B TOKEN');
  process.exit(2);
}
const REQ = { timeout: 120000 };
let passed = 0;
let failed = 0;
function check(cond, what, detail) {
  if (cond) {
    passed++;
    console.log(`ok   [workspace] ${what}`);
  } else {
    failed++;
    let d = detail === undefined ? '' : typeof detail === 'string' ? detail : JSON.stringify(detail);
    if (d.length > 600) d = d.slice(0, 600) + '...';
    console.log(`FAIL [workspace] ${what}${d ? ': ' + d.replace(/\n/g, '\\n') : ''}`);
  }
  return cond;
}
function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

async function connect(url) {
  const client = new Client({ name: 'mcp-exec-workspace-interop', version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { 'X-MCP-AUTH': token } },
  }), REQ);
  return client;
}

const CSV = 'day,visits\n' + Array.from({ length: 30 }, (_, i) => `${i + 1},${100 + ((i * 37) % 50)}`).join('\n') + '\n';

const LOAD = `import os
import pandas as pd
df = pd.read_csv('data/visits.csv')
os.remove('data/visits.csv')
os.rmdir('data')
print(len(df), df['visits'].sum())
`;

// A cold interpreter (the server's first call, before its zygote is ready)
// builds matplotlib's font cache where MPLCONFIGDIR and HOME point: the
// workdir (fontlist-v*.json, .cache/fontconfig). Those are left out of the
// listing; the CSV and its directory must not be there.
const PLOT = `import os
import matplotlib.pyplot as plt
# Nothing to read again: the CSV is gone, df is here.
print(sorted(n for n in os.listdir('.') if n != '.cache' and not n.startswith('fontlist-')))
ax = df.plot(x='day', y='visits', title='visits per day')
plt.show()
print(df.shape, int(df['visits'].max()))
`;

async function main() {
  let a, b;
  try {
    a = await connect(urlA);
    b = await connect(urlB);
  } catch (e) {
    check(false, 'connect to both servers', String(e));
    finish();
  }
  const tools = await a.listTools(undefined, REQ);
  const exec = tools.tools.find((t) => t.name === 'exec');
  check(exec && exec.inputSchema.properties.workspace &&
        /workspace/.test(exec.description),
        'exec offers workspace (inputSchema and description)', exec?.inputSchema);
  check(!!a.getServerCapabilities()?.resources, 'the server announces resources');

  const expected = CSV.trim().split('\n').slice(1).reduce((s, l) => s + Number(l.split(',')[1]), 0);
  const r1 = await a.callTool({
    name: 'exec',
    arguments: { code: LOAD, workspace: 'analysis', workspace_reset: true,
                 files: [{ path: 'data/visits.csv', content: CSV }] },
  }, undefined, REQ);
  const sc1 = r1.structuredContent || {};
  check(!r1.isError && sc1.stdout === `30 ${expected}\n`, 'server A: df = pd.read_csv(...)', sc1);
  check(sc1.workspace && sc1.workspace.saved === true && sc1.workspace.variables.includes('df') &&
        sc1.workspace.files === 0,
        'server A: the workspace is saved with df (and no file: the CSV was deleted)', sc1.workspace);

  const r2 = await b.callTool({ name: 'exec', arguments: { code: PLOT, workspace: 'analysis' } },
    undefined, REQ);
  const sc2 = r2.structuredContent || {};
  check(!r2.isError && sc2.stdout === `['main.py', 'out']\n(30, 2) 149\n`,
        'server B: df is there, and nothing to read again (no CSV in the workdir)', sc2);
  const img = (r2.content || []).find((c) => c.type === 'image');
  const png = img ? Buffer.from(img.data, 'base64') : Buffer.alloc(0);
  check(img && img.mimeType === 'image/png' && png.subarray(1, 4).toString() === 'PNG' &&
        png.subarray(12, 16).toString() === 'IHDR',
        'server B: the plot of df comes back as a PNG image', img ? { mimeType: img.mimeType, bytes: png.length } : r2.content);
  check(sc2.workspace && sc2.workspace.saved === true && sc2.workspace.variables.includes('df'),
        'server B: the workspace still holds df after the plot', sc2.workspace);

  const list = await b.listResources(undefined, REQ);
  const entry = list.resources.find((r) => r.uri === 'workspace://analysis/');
  check(!!entry, 'resources/list on server B names the workspace', list.resources);
  const read = await a.readResource({ uri: 'workspace://analysis/' }, REQ);
  let listing = {};
  try {
    listing = JSON.parse(read.contents[0].text);
  } catch {
    // judged below
  }
  const dataFiles = Array.isArray(listing.files)
    ? listing.files.filter((f) => !f.path.startsWith('.cache/') && !f.path.startsWith('fontlist-'))
    : null;
  check(Array.isArray(listing.variables) && listing.variables.includes('df') &&
        Array.isArray(dataFiles) && dataFiles.length === 0,
        'resources/read on server A: the listing names df and no data file (matplotlib\'s cache aside)', listing);
  await a.close();
  await b.close();
  finish();
}

main().catch((e) => {
  check(false, 'no exception', e && e.stack ? e.stack : String(e));
  finish();
});
