#!/usr/bin/env node
// tests/interop/ext_tasks_client.mjs - MCP tasks through
// @modelcontextprotocol/ext-tasks (the official tasks requester, pinned in
// package.json) on the SDK's v2 client (@modelcontextprotocol/client),
// against mcp-exec over Streamable HTTP, in both generations:
//
//   node ext_tasks_client.mjs --url http://127.0.0.1:PORT/mcp --token TOK
//
//   - 2026-07-28 (the io.modelcontextprotocol/tasks extension): the client
//     pinned to 2026-07-28 sees the extension in server/discover; the
//     package's session, with the raw dispatch it requires for the
//     extension's wire shapes (a plain fetch here, with the routing headers
//     SEP-2663 asks for), calls exec: a quick call settles as an immediate
//     result, a long one as a task the session polls with tasks/get until
//     it completes; a long one cancelled through the session settles as
//     cancelled.
//   - 2025-11-25 (experimental tasks): the same package on the same client
//     in its default (legacy) mode calls exec as a task (preference
//     "prefer") and settles it through tasks/get and tasks/result.
// Each settled result is checked against exec's output.
//
// Prints "ok   <check>" or "FAIL <check>: <detail>" per check and, last,
// "N passed, N failed". Exit 0 only when every check passed; 2 on bad usage.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';

const usage = 'usage: ext_tasks_client.mjs --url URL --token TOK';
const opts = { url: null, token: null };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in opts) || i + 1 >= argv.length) {
      console.error(usage);
      process.exit(2);
    }
    opts[k] = argv[++i];
  }
  if (!opts.url || !opts.token) {
    console.error(usage);
    process.exit(2);
  }
}

let passed = 0;
let failed = 0;
function check(cond, what, detail) {
  if (cond) {
    passed++;
    console.log(`ok   [ext-tasks] ${what}`);
  } else {
    failed++;
    let d = '';
    if (detail !== undefined) {
      d = typeof detail === 'string' ? detail : JSON.stringify(detail);
      if (d.length > 600) d = d.slice(0, 600) + '...';
      d = ': ' + d.replace(/\n/g, '\\n');
    }
    console.log(`FAIL [ext-tasks] ${what}${d}`);
  }
  return cond;
}
const errText = (e) => (e && e.message ? `${e.name}: ${e.message}` : String(e));
const INFO = { name: 'mcp-exec-ext-tasks-interop', version: '1.0.0' };
const HEADERS = { 'X-MCP-AUTH': opts.token };

// The raw dispatch the package requires for the 2026-07-28 extension's wire
// shapes: one POST per request with the 2026-07-28 headers (Mcp-Name is
// the tool's name for tools/call and the task id for tasks/*).
let rawId = 0;
const seenMethods = [];
async function rawDispatch(request) {
  const params = request.params ?? {};
  const headers = {
    ...HEADERS,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': request.method,
  };
  if (request.method === 'tools/call') headers['Mcp-Name'] = params.name;
  else if (typeof params.taskId === 'string') headers['Mcp-Name'] = params.taskId;
  seenMethods.push(request.method);
  const id = ++rawId;
  const res = await fetch(opts.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id, method: request.method, params }),
  });
  const text = await res.text();
  let msg;
  if ((res.headers.get('content-type') || '').startsWith('text/event-stream')) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const m = JSON.parse(line.slice(5));
      if (m.id === id) msg = m;
    }
  } else {
    msg = JSON.parse(text);
  }
  if (!msg) throw new Error(`no answer to ${request.method} (HTTP ${res.status})`);
  return msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
}

async function connect(modern) {
  const client = new Client(INFO, modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: HEADERS } }));
  return client;
}

async function modern() {
  const client = await connect(true);
  check(client.getProtocolEra() === 'modern', '2026-07-28: the v2 client negotiated the modern era',
    client.getProtocolEra());
  const caps = client.getServerCapabilities();
  check(caps?.extensions?.['io.modelcontextprotocol/tasks'] !== undefined,
    '2026-07-28: server/discover lists io.modelcontextprotocol/tasks', caps);
  const session = createTaskSessionFromClient(client, {
    endpointId: 'mcp-exec-interop-v2',
    rawDispatch,
    v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo: INFO, clientCapabilities: {} },
  });
  try {
    const quick = await session.callTool('exec', { code: 'print(6 * 7)' });
    const q = resultFromTaskOutcome((await quick.settle()).outcome);
    check(q.structuredContent?.stdout === '42\n', '2026-07-28: a quick exec settles with its result',
      q);
    const slow = await session.callTool('exec', {
      code: 'import time\nprint("begin", flush=True)\ntime.sleep(2)\nprint("end")',
    });
    check(slow.kind === 'task', '2026-07-28: a long exec comes back as a task', slow.kind);
    const { outcome } = await slow.settle();
    const r = resultFromTaskOutcome(outcome);
    check(outcome.status === 'completed' && r.structuredContent?.stdout === 'begin\nend\n' &&
      r.isError === false, '2026-07-28: the task settles with exec\'s result (tasks/get polled)',
    outcome);
    check(seenMethods.includes('tasks/get') && !seenMethods.includes('tasks/result'),
      '2026-07-28: polled with tasks/get, never tasks/result', seenMethods);
    const doomed = await session.callTool('exec', { code: 'import time\ntime.sleep(60)', timeout_s: 90 });
    check(doomed.kind === 'task', '2026-07-28: a 60-second exec is a task', doomed.kind);
    await doomed.cancel();
    const c = (await doomed.settle()).outcome;
    check(c.status === 'cancelled' && seenMethods.includes('tasks/cancel'),
      '2026-07-28: cancelled through the session (tasks/cancel), it settles as cancelled', c);
  } finally {
    await session.close();
  }
}

async function legacy() {
  const client = await connect(false);
  check(client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined,
    '2025-11-25: the v2 client in legacy mode sees the tasks capability');
  const session = createTaskSessionFromClient(client, { endpointId: 'mcp-exec-interop-v1' });
  try {
    const ex = await session.callTool('exec', { code: 'import time\ntime.sleep(1)\nprint("v1")' },
      { task: { preference: 'prefer' } });
    check(ex.kind === 'task', '2025-11-25: exec called as a task (its taskSupport is optional)',
      ex.kind);
    const { outcome } = await ex.settle();
    const r = resultFromTaskOutcome(outcome);
    check(outcome.status === 'completed' && r.structuredContent?.stdout === 'v1\n',
      '2025-11-25: the task settles with exec\'s result', outcome);
  } finally {
    await session.close();
  }
}

for (const [name, fn] of [['2026-07-28', modern], ['2025-11-25', legacy]]) {
  try {
    await fn();
  } catch (e) {
    check(false, `${name}: the scenario ran to its end`, errText(e) + (e.stack ? ' ' + e.stack : ''));
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
