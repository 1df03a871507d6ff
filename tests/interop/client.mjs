#!/usr/bin/env node
// tests/interop/client.mjs - drives mcp-exec with the official TypeScript MCP
// SDK client (@modelcontextprotocol/sdk, pinned in package.json), so the
// server is checked against a client that nobody on this project wrote.
//
//   node client.mjs --transport stdio --bin PATH/mcp-exec
//   node client.mjs --transport http  --url http://127.0.0.1:PORT/mcp --token TOK
//   node client.mjs --transport sse   --url http://127.0.0.1:PORT/sse --token TOK
//
// With --policy DIR (DIR/policy.json is the server's MCP_EXEC_POLICY, run.sh
// writes it with one function, interop_add), the client also lists and
// calls that function, calls it from exec code with mcpx.call, then
// rewrites the policy with a second function and waits for
// notifications/tools/list_changed (over stdio, the Streamable HTTP GET
// stream the SDK opens, or the legacy SSE stream).
//
// For stdio the SDK's StdioClientTransport starts the binary itself, with the
// environment passed explicitly (the SDK would otherwise keep only HOME, PATH
// and the like). For http/sse the token goes in X-MCP-AUTH through the
// transport's requestInit headers; the SSE transport also puts those on the
// GET that opens the stream.
//
// Prints "ok   <check>" or "FAIL <check>: <detail>" per check and, last,
// "N passed, N failed". Exit 0 only when every check passed; 2 on bad usage.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { CallToolResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { isDeepStrictEqual } from 'node:util';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const usage = 'usage: client.mjs --transport stdio|http|sse (--bin PATH | --url URL) [--token TOK] [--policy DIR]';
const opts = { transport: null, bin: null, url: null, token: null, policy: null };
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
  const ok = (opts.transport === 'stdio' && opts.bin) ||
    ((opts.transport === 'http' || opts.transport === 'sse') && opts.url);
  if (!ok) {
    console.error(usage);
    process.exit(2);
  }
}

const TAG = `[${opts.transport}]`;
let passed = 0;
let failed = 0;
function check(cond, what, detail) {
  if (cond) {
    passed++;
    console.log(`ok   ${TAG} ${what}`);
  } else {
    failed++;
    let d = '';
    if (detail !== undefined) {
      d = typeof detail === 'string' ? detail : JSON.stringify(detail);
      if (d.length > 600) d = d.slice(0, 600) + '...';
      d = ': ' + d.replace(/\n/g, '\\n');
    }
    console.log(`FAIL ${TAG} ${what}${d}`);
  }
  return cond;
}
function errText(e) {
  return e && e.message ? `${e.name}: ${e.message}` : String(e);
}
function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

// A hung server must not hang ctest: give up after 120 s with what we have.
const watchdog = setTimeout(() => {
  check(false, 'whole run finished within 120 s');
  if (stdioErr) console.log(`     | server stderr (tail): ${stdioErr.slice(-1500).replace(/\n/g, '\n     | ')}`);
  finish();
}, 120_000);
watchdog.unref();

const REQ = { timeout: 30_000 }; // per-request timeout for the ordinary calls
let stdioErr = '';

// Stopped from outside (run.sh's trap, ctest): take the stdio server down at
// once. Closing its stdin would let it finish a running call first, and
// SIGKILL takes its sandboxed children with it.
let stdioPid = null;
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    if (stdioPid) {
      try {
        process.kill(stdioPid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    process.exit(130);
  });
}

function makeTransport(token) {
  if (opts.transport === 'stdio') {
    const t = new StdioClientTransport({
      command: opts.bin,
      args: [],
      env: {
        PATH: '/usr/bin:/bin',
        MCP_EXEC_PYTHON: '/usr/bin/python3',
        MCP_EXEC_LOG_FORMAT: 'json',
        ...(opts.policy ? {
          MCP_EXEC_POLICY: `${opts.policy}/policy.json`,
          MCP_EXEC_WORKDIR_BASE: `${opts.policy}/runs`,
        } : {}),
        // warm (default: auto) or cold interpreters, as run.sh was asked
        ...(process.env.MCP_EXEC_WARM ? { MCP_EXEC_WARM: process.env.MCP_EXEC_WARM } : {}),
      },
      stderr: 'pipe',
    });
    return t;
  }
  const requestInit = token ? { headers: { 'X-MCP-AUTH': token } } : undefined;
  const url = new URL(opts.url);
  return opts.transport === 'http'
    ? new StreamableHTTPClientTransport(url, { requestInit })
    : new SSEClientTransport(url, { requestInit });
}

function newClient() {
  return new Client({ name: 'mcp-exec-interop', version: '1.0.0' }, { capabilities: {} });
}

// tools/call exec with `args`; request options (timeout, onprogress, signal) in `extra`.
async function exec(client, args, extra = {}) {
  return client.callTool({ name: 'exec', arguments: args }, undefined, { ...REQ, ...extra });
}

// The running-executions gauge of an HTTP server (no auth on /metrics).
async function runningGauge() {
  const r = await fetch(new URL('/metrics', opts.url));
  const m = /^mcp_exec_running (\d+)/m.exec(await r.text());
  return m ? Number(m[1]) : NaN;
}

// Live descendants of pid (Linux /proc), to see that a cancelled run's
// sandboxed Python is gone on stdio, where there is no /metrics.
function descendants(pid) {
  const parent = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      if (f[0] !== 'Z') parent.set(Number(d), Number(f[1]));
    } catch {
      // the process ended meanwhile
    }
  }
  const out = [];
  for (const p of parent.keys()) {
    for (let q = parent.get(p), n = 0; q && n < 64; q = parent.get(q), n++) {
      if (q === pid) {
        out.push(p);
        break;
      }
    }
  }
  return out;
}

async function main() {
  // ---- auth is really required (HTTP transports with a token) ----
  if (opts.transport !== 'stdio' && opts.token) {
    const c = newClient();
    try {
      await c.connect(makeTransport(null), REQ);
      check(false, 'connect without X-MCP-AUTH is refused', 'connected');
      await c.close();
    } catch (e) {
      check(/401|Unauthorized/i.test(errText(e)), 'connect without X-MCP-AUTH is refused (401)', errText(e));
    }
  }

  // ---- initialize ----
  const client = newClient();
  const transport = makeTransport(opts.token);
  let negotiated = null;
  const setPV = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiated = v;
    if (setPV) setPV(v);
  };
  client.onerror = () => {}; // non-fatal transport noise is judged by the checks
  try {
    await client.connect(transport, REQ);
  } catch (e) {
    check(false, 'initialize', errText(e));
    finish();
  }
  if (opts.transport === 'stdio') stdioPid = transport.pid;
  if (opts.transport === 'stdio' && transport.stderr) {
    transport.stderr.on('data', (d) => {
      stdioErr += d.toString();
      if (stdioErr.length > 65536) stdioErr = stdioErr.slice(-32768);
    });
  }
  const info = client.getServerVersion();
  const caps = client.getServerCapabilities();
  check(info && typeof info.name === 'string' && typeof info.version === 'string',
    `initialize: serverInfo ${info?.name} ${info?.version}`, info);
  check(negotiated === '2025-11-25', `initialize: protocol version ${negotiated}`, negotiated);
  check(caps && typeof caps.tools === 'object', 'initialize: tools capability declared', caps);
  if (opts.transport === 'http') {
    const sid = transport.sessionId;
    check(typeof sid === 'string' && /^[\x21-\x7e]+$/.test(sid), 'Streamable HTTP session id (visible ASCII)', sid);
  }

  // ---- ping ----
  try {
    const r = await client.ping(REQ);
    check(isDeepStrictEqual(r, {}), 'ping -> {}', r);
  } catch (e) {
    check(false, 'ping', errText(e));
  }

  // ---- tools/list ----
  let execTool = null;
  try {
    const { tools, nextCursor } = await client.listTools(undefined, REQ);
    const t = tools.find((x) => x.name === 'exec');
    execTool = t;
    check(t, 'tools/list has exec', tools.map((x) => x.name));
    check(nextCursor === undefined, 'tools/list: no nextCursor', nextCursor);
    check(t && typeof t.description === 'string' && t.description.length > 0, 'exec has a description', t);
    const is = t?.inputSchema;
    check(is && is.type === 'object' && is.properties?.code?.type === 'string' &&
      Array.isArray(is.required) && is.required.includes('code'),
      'exec inputSchema: object with required string "code"', is);
    const os = t?.outputSchema;
    check(os && os.type === 'object' && ['stdout', 'stderr', 'exit_code'].every((k) => os.properties?.[k]),
      'exec outputSchema: object with stdout/stderr/exit_code', os);
  } catch (e) {
    check(false, 'tools/list', errText(e));
  }

  // ---- exec print(6*7) ----
  // The SDK validates structuredContent against the outputSchema it got
  // from tools/list and rejects the call if it does not conform.
  try {
    const r = await exec(client, { code: 'print(6*7)' });
    const sc = r.structuredContent;
    check(r.isError === false, 'exec print(6*7): isError false', r);
    check(sc && sc.stdout === '42\n' && sc.exit_code === 0, 'exec print(6*7): structuredContent.stdout == "42\\n"', sc);
    const txt = r.content?.find((b) => b.type === 'text');
    let parsed;
    try {
      parsed = JSON.parse(txt?.text);
    } catch {
      parsed = undefined;
    }
    check(parsed !== undefined && isDeepStrictEqual(parsed, sc),
      'exec print(6*7): text block is the same object as JSON', r.content);
  } catch (e) {
    check(false, 'exec print(6*7)', errText(e));
  }

  // ---- non-zero exit: a result, not a tool error ----
  try {
    const r = await exec(client, { code: 'import sys\nprint("bye")\nsys.exit(3)' });
    const sc = r.structuredContent;
    check(r.isError === false && sc?.exit_code === 3 && sc?.stdout === 'bye\n',
      'exec sys.exit(3): isError false, exit_code 3', r);
  } catch (e) {
    check(false, 'exec sys.exit(3)', errText(e));
  }

  // ---- bad arguments: a tool error the model can read ----
  for (const [what, args] of [['missing code', {}], ['code not a string', { code: 42 }],
    ['unknown argument', { code: 'print(1)', bogus: true }]]) {
    try {
      const r = await exec(client, args);
      const txt = r.content?.find((b) => b.type === 'text')?.text;
      check(r.isError === true && typeof txt === 'string' && txt.length > 0,
        `exec with bad arguments (${what}): isError true with a message`, r);
    } catch (e) {
      // -32602 as a JSON-RPC error would also be defensible for 2025-06-18
      // and older, but the session negotiated 2025-11-25.
      check(false, `exec with bad arguments (${what})`, errText(e));
    }
  }

  // ---- files in, a chart and a file out ----
  // A CSV goes in, pandas sums it, plt.show() draws the chart: it must
  // arrive as an image block the SDK accepts, with PNG bytes, plus the text
  // file as an embedded resource. callTool has already parsed the result
  // with the SDK's CallToolResultSchema and checked structuredContent
  // against the outputSchema from tools/list; both are done here again
  // explicitly, so the check does not rest on that default.
  try {
    const code = 'import pandas as pd, matplotlib.pyplot as plt\n' +
      "df = pd.read_csv('data/in.csv')\nprint(df['v'].sum())\n" +
      "df.plot(title='v')\nplt.show()\n" +
      "open('out/summary.txt', 'w').write('sum=%d' % df['v'].sum())\n";
    const r = await exec(client, { code, files: [{ path: 'data/in.csv', content: 'v\n1\n2\n3\n' }] },
      { timeout: 90_000 });
    const sc = r.structuredContent;
    check(r.isError === false && sc?.stdout === '6\n', 'exec with files: the CSV was read (stdout "6")', sc);
    const parsed = CallToolResultSchema.safeParse(r);
    check(parsed.success, "exec with files: result valid under the SDK's CallToolResultSchema",
      parsed.error?.issues);
    const validate = execTool?.outputSchema && new AjvJsonSchemaValidator().getValidator(execTool.outputSchema);
    const v = validate ? validate(sc) : { valid: false, errorMessage: 'no outputSchema' };
    check(v.valid, "exec with files: structuredContent valid against the tool's outputSchema", v.errorMessage);
    const img = r.content?.find((b) => b.type === 'image');
    const png = img ? Buffer.from(img.data, 'base64') : Buffer.alloc(0);
    const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    check(img?.mimeType === 'image/png' && png.length > 33 && png.subarray(0, 8).equals(sig) &&
      png.subarray(12, 16).toString('latin1') === 'IHDR' && png.readUInt32BE(16) > 0 && png.readUInt32BE(20) > 0,
      `exec with files: plt.show() chart is an image block with PNG bytes (${png.length} bytes)`,
      img ? { mimeType: img.mimeType, head: png.subarray(0, 24).toString('hex') } : r.content);
    const res = r.content?.find((b) => b.type === 'resource')?.resource;
    check(res?.uri === 'file:///out/summary.txt' && res?.text === 'sum=6' && res?.mimeType === 'text/plain',
      'exec with files: out/summary.txt is an embedded text resource', res);
    const listed = Object.fromEntries((sc?.files ?? []).map((f) => [f.path, f]));
    check(listed['out/figure-1.png']?.returned === true && listed['out/figure-1.png']?.bytes === png.length &&
      listed['out/summary.txt']?.returned === true,
      'exec with files: structuredContent.files lists both', sc?.files);
  } catch (e) {
    check(false, 'exec with files', errText(e));
  }

  // ---- progress ----
  try {
    const seen = [];
    const t0 = Date.now();
    const r = await exec(client,
      { code: 'import time\nfor i in range(5):\n    print("tick", i, flush=True)\n    time.sleep(0.25)' },
      { onprogress: (p) => seen.push(p) });
    const vals = seen.map((p) => p.progress);
    check(r.structuredContent?.stdout === 'tick 0\ntick 1\ntick 2\ntick 3\ntick 4\n',
      'exec with onprogress: result intact', r.structuredContent);
    check(seen.length >= 1, `exec with onprogress: ${seen.length} progress notification(s) in ${Date.now() - t0} ms`, seen);
    check(vals.every((v, i) => typeof v === 'number' && (i === 0 || v > vals[i - 1])),
      'progress values increase', vals);
  } catch (e) {
    check(false, 'exec with onprogress', errText(e));
  }

  // ---- cancellation via AbortSignal (the SDK sends notifications/cancelled) ----
  try {
    const ac = new AbortController();
    const t0 = Date.now();
    const p = exec(client, { code: 'import time\ntime.sleep(60)', timeout_s: 120 },
      { signal: ac.signal, timeout: 90_000 });
    // The server's processes while the sleep runs: the sandboxed Python
    // running it and, with warm interpreters, one waiting for the next call.
    // In fork-server mode both are children of a zygote (one scientific,
    // one plain), which outlives runs by design and is left out: a server
    // child running the mcp-exec-zygote binary, with or without children.
    let during = [];
    setTimeout(() => {
      if (opts.transport === 'stdio' && transport.pid) {
        const all = descendants(transport.pid);
        const ppid = (p) => {
          try {
            const st = readFileSync(`/proc/${p}/stat`, 'utf8');
            return Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
          } catch {
            return 0;
          }
        };
        const parents = new Map(all.map((p) => [p, ppid(p)]));
        const cmdline = (p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, 'utf8');
          } catch {
            return '';
          }
        };
        const zygotes = new Set(all.filter((p) => parents.get(p) === transport.pid &&
          cmdline(p).includes('mcp-exec-zygote')));
        during = all.filter((p) => !zygotes.has(p));
      }
      ac.abort('interop test cancels');
    }, 700);
    let rejected = false;
    try {
      await p;
    } catch {
      rejected = true;
    }
    // The 60 s sleep is still running when the abort rejects: ordering, not timing.
    check(rejected, 'aborted exec rejects', Date.now() - t0);
    const t1 = Date.now();
    const r = await exec(client, { code: 'print("after")' }, { timeout: 10_000 });
    const dt = Date.now() - t1;
    check(r.structuredContent?.stdout === 'after\n',
      `next exec after the abort works (${dt} ms)`, { r, dt });
    // The sandboxed sleep(60) must really be gone, not just forgotten.
    // Interpreters are one-shot, so after the abort and one more call on
    // each zygote (plain above, scientific here) none of them may be left.
    if (opts.transport === 'stdio' && transport.pid) {
      const sci = await exec(client, { code: 'import numpy\nprint("sci")' }, { timeout: 30_000 });
      check(sci.structuredContent?.stdout === 'sci\n', 'a scientific call after the abort works', sci);
      let left = during;
      for (let i = 0; i < 30 && left.length; i++) {
        const now = new Set(descendants(transport.pid));
        left = during.filter((p) => now.has(p));
        if (left.length) await new Promise((res) => setTimeout(res, 100));
      }
      check(during.length > 0 && left.length === 0,
        `cancelled run ended on the server (its processes ${during.join(',')} are gone)`, { during, left });
    } else if (opts.transport !== 'stdio') {
      let n = NaN;
      for (let i = 0; i < 30; i++) {
        n = await runningGauge();
        if (n === 0) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      check(n === 0, 'cancelled run ended on the server (mcp_exec_running 0)', n);
    }
    const pr = await client.ping(REQ);
    check(isDeepStrictEqual(pr, {}), 'ping after the abort', pr);
  } catch (e) {
    check(false, 'cancellation', errText(e));
  }

  if (opts.policy) await functions(client);

  // ---- close (Streamable HTTP: DELETE the session; 405 is acceptable) ----
  try {
    if (opts.transport === 'http') await transport.terminateSession();
    await client.close();
    check(true, 'close');
  } catch (e) {
    check(false, 'close', errText(e));
  }
  if (failed && stdioErr) console.log(`     | server stderr (tail): ${stdioErr.slice(-1500).replace(/\n/g, '\n     | ')}`);
  finish();
}

// The policy's functions as tools: listed, called, called from exec, and a
// reload announced with notifications/tools/list_changed.
async function functions(client) {
  let changed;
  const heard = new Promise((res) => { changed = res; });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed(true));
  try {
    const { tools } = await client.listTools(undefined, REQ);
    const f = tools.find((x) => x.name === 'interop_add');
    check(f && f.title === 'Add two numbers' && f.inputSchema?.required?.includes('a') &&
      f.outputSchema?.properties?.sum?.type === 'number',
      'tools/list shows the function with its title and schemas', f);
    // The SDK checks structuredContent against the outputSchema it listed.
    const r = await client.callTool({ name: 'interop_add', arguments: { a: 2, b: 3.5 } }, undefined, REQ);
    check(r.isError === false && isDeepStrictEqual(r.structuredContent, { sum: 5.5 }),
      'calling the function: its result as structuredContent', r);
    const bad = await client.callTool({ name: 'interop_add', arguments: { a: 'x' } }, undefined, REQ);
    const txt = bad.content?.find((b) => b.type === 'text')?.text ?? '';
    check(bad.isError === true && txt.includes('/a: must be number') && txt.includes('"b"'),
      'invalid arguments: a tool error naming each failure', bad);
    const e = await exec(client, { code: 'import mcpx\nprint(mcpx.call("interop_add", a=1, b=2)["sum"])' });
    check(e.structuredContent?.stdout === '3\n', 'exec code calls the function with mcpx.call', e.structuredContent);
  } catch (err) {
    check(false, 'functions', errText(err));
  }
  try {
    const file = `${opts.policy}/policy.json`;
    const policy = JSON.parse(readFileSync(file, 'utf8'));
    policy.functions.push({ ...policy.functions[0], name: 'interop_added', title: 'Added later' });
    writeFileSync(`${file}.tmp`, JSON.stringify(policy));
    renameSync(`${file}.tmp`, file);
    const got = await Promise.race([heard, new Promise((res) => setTimeout(() => res(false), 30_000))]);
    check(got === true, 'a policy change: notifications/tools/list_changed arrives');
    const { tools } = await client.listTools(undefined, REQ);
    check(tools.some((x) => x.name === 'interop_added'), 'tools/list then shows the new function',
      tools.map((x) => x.name));
  } catch (err) {
    check(false, 'list_changed', errText(err));
  }
}

main().catch((e) => {
  check(false, 'unexpected error', errText(e) + '\n' + (e && e.stack));
  finish();
});
