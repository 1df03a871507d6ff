#!/usr/bin/env node
// tests/interop/tasks_client.mjs - MCP tasks of protocol 2025-11-25 through
// the official TypeScript SDK's experimental tasks client
// (client.experimental.tasks of @modelcontextprotocol/sdk, pinned in
// package.json), against mcp-exec over Streamable HTTP:
//
//   node tasks_client.mjs --url http://127.0.0.1:PORT/mcp --token TOK --other-token TOK2
//
// It checks the capability and exec's execution.taskSupport; callToolStream
// (task created at once, polled, the final result the same as a direct
// call's, with related-task _meta from tasks/result); getTask,
// getTaskResult, listTasks; notifications/tasks/status on the session's GET
// stream; cancelTask of a sleeping run (cancelled, and a second cancel is
// -32602); a tool error as status "failed" whose tasks/result is the isError
// result; and that another caller (--other-token) gets for the task exactly
// what an unknown id gets.
//
// Prints "ok   <check>" or "FAIL <check>: <detail>" per check and, last,
// "N passed, N failed". Exit 0 only when every check passed; 2 on bad usage.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const usage = 'usage: tasks_client.mjs --url URL --token TOK --other-token TOK2';
const opts = { url: null, token: null, 'other-token': null };
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
  if (!opts.url || !opts.token || !opts['other-token']) {
    console.error(usage);
    process.exit(2);
  }
}

let passed = 0;
let failed = 0;
function check(cond, what, detail) {
  if (cond) {
    passed++;
    console.log(`ok   [tasks 2025-11-25] ${what}`);
  } else {
    failed++;
    let d = '';
    if (detail !== undefined) {
      d = typeof detail === 'string' ? detail : JSON.stringify(detail);
      if (d.length > 600) d = d.slice(0, 600) + '...';
      d = ': ' + d.replace(/\n/g, '\\n');
    }
    console.log(`FAIL [tasks 2025-11-25] ${what}${d}`);
  }
  return cond;
}
const errText = (e) => (e && e.message ? `${e.name}: ${e.message}` : String(e));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect(token) {
  const client = new Client({ name: 'mcp-exec-tasks-interop', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(opts.url), {
    requestInit: { headers: { 'X-MCP-AUTH': token } },
  });
  await client.connect(transport);
  return client;
}

// A task's error from a request that is expected to fail, or null.
async function rpcError(p) {
  try {
    await p;
    return null;
  } catch (e) {
    return { code: e.code, message: e.message };
  }
}

async function main() {
  const client = await connect(opts.token);
  const statuses = [];
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => statuses.push(n.params));

  // ---- negotiation ----
  const caps = client.getServerCapabilities();
  check(caps?.tasks?.requests?.tools?.call && caps.tasks.cancel && caps.tasks.list,
    'initialize: tasks capability with requests.tools.call, cancel and list', caps?.tasks);
  const { tools } = await client.listTools();
  const exec = tools.find((t) => t.name === 'exec');
  check(exec?.execution?.taskSupport === 'optional', 'tools/list: exec has execution.taskSupport "optional"',
    exec?.execution);

  // ---- callToolStream: created at once, polled, the final result ----
  const code = 'import time\nprint("begin", flush=True)\ntime.sleep(2)\nprint(6 * 7)';
  const direct = await client.callTool({ name: 'exec', arguments: { code } });
  const seen = [];
  let created = null;
  let result = null;
  for await (const m of client.experimental.tasks.callToolStream(
    { name: 'exec', arguments: { code } }, CallToolResultSchema, { task: { ttl: 120000 } })) {
    seen.push(m.type);
    if (m.type === 'taskCreated') created = m.task;
    if (m.type === 'result') result = m.result;
    if (m.type === 'error') check(false, 'callToolStream ends without an error', errText(m.error));
  }
  check(created && created.status === 'working' && typeof created.taskId === 'string',
    'callToolStream: CreateTaskResult with a working task', created);
  check(seen[0] === 'taskCreated' && seen.includes('taskStatus') && seen.at(-1) === 'result',
    'callToolStream: taskCreated, then taskStatus polls, then the result', seen);
  check(created && typeof created.ttl === 'number' && typeof created.pollInterval === 'number' &&
    !Number.isNaN(Date.parse(created.createdAt)) && !Number.isNaN(Date.parse(created.lastUpdatedAt)),
  'the task has ttl, pollInterval and ISO 8601 timestamps', created);
  check(result && result.structuredContent?.stdout === 'begin\n42\n' && result.isError === false,
    'the task\'s result: stdout and isError as exec returns them', result);
  check(result && direct.structuredContent &&
    JSON.stringify(Object.keys(result.structuredContent).sort()) ===
    JSON.stringify(Object.keys(direct.structuredContent).sort()) &&
    result.content.length === direct.content.length &&
    result.structuredContent.stdout === direct.structuredContent.stdout &&
    result.structuredContent.exit_code === direct.structuredContent.exit_code,
  'the task\'s result has the shape and output of a direct call\'s', { result, direct });

  if (created) {
    const id = created.taskId;
    const got = await client.experimental.tasks.getTask(id);
    check(got.taskId === id && got.status === 'completed', 'getTask: completed', got);
    const again = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
    check(again._meta?.['io.modelcontextprotocol/related-task']?.taskId === id &&
      again.structuredContent?.stdout === 'begin\n42\n',
    'getTaskResult: the result again, with related-task _meta', again);
    const list = await client.experimental.tasks.listTasks();
    check(list.tasks.some((t) => t.taskId === id && t.status === 'completed'),
      'listTasks: the task is listed as completed', list);
    // notifications/tasks/status: optional in the spec; this server sends
    // one when a task ends, on the session's GET stream.
    for (let i = 0; i < 50 && !statuses.some((s) => s.taskId === id); i++) await sleep(100);
    check(statuses.some((s) => s.taskId === id && s.status === 'completed'),
      'notifications/tasks/status: the task\'s end', statuses);

    // ---- another caller: the same answer as for an unknown id ----
    const other = await connect(opts['other-token']);
    const foreign = await rpcError(other.experimental.tasks.getTask(id));
    const unknown = await rpcError(other.experimental.tasks.getTask('0'.repeat(32)));
    check(foreign && unknown && foreign.code === -32602 && foreign.code === unknown.code &&
      foreign.message === unknown.message,
    'another caller\'s getTask: exactly the unknown-id error (-32602)', { foreign, unknown });
    const theirs = await other.experimental.tasks.listTasks();
    check(!theirs.tasks.some((t) => t.taskId === id), 'another caller\'s listTasks does not show it',
      theirs);
    await other.close();
  }

  // ---- cancel ----
  const sleeping = await client.request({
    method: 'tools/call',
    params: { name: 'exec', arguments: { code: 'import time\ntime.sleep(60)', timeout_s: 120 },
      task: { ttl: 60000 } },
  }, CreateTaskResultSchema);
  const sid = sleeping.task.taskId;
  const cancelled = await client.experimental.tasks.cancelTask(sid);
  check(cancelled.taskId === sid && cancelled.status === 'cancelled', 'cancelTask: cancelled', cancelled);
  const after = await client.experimental.tasks.getTask(sid);
  check(after.status === 'cancelled', 'getTask after cancelTask: cancelled', after);
  const twice = await rpcError(client.experimental.tasks.cancelTask(sid));
  check(twice && twice.code === -32602, 'cancelTask of a cancelled task: -32602', twice);

  // ---- a tool error: "failed", and tasks/result is the isError result ----
  const bad = await client.request({
    method: 'tools/call', params: { name: 'exec', arguments: { code: '   ' }, task: {} },
  }, CreateTaskResultSchema);
  let st = null;
  for (let i = 0; i < 100; i++) {
    st = await client.experimental.tasks.getTask(bad.task.taskId);
    if (st.status !== 'working') break;
    await sleep(st.pollInterval ?? 200);
  }
  check(st.status === 'failed' && typeof st.statusMessage === 'string',
    'a tool error makes the task "failed" with a statusMessage', st);
  const badResult = await client.experimental.tasks.getTaskResult(bad.task.taskId, CallToolResultSchema);
  check(badResult.isError === true && badResult.content?.[0]?.type === 'text',
    'tasks/result of the failed task: the isError result a direct call returns', badResult);

  await client.close();
}

try {
  await main();
} catch (e) {
  check(false, 'the tasks client ran to its end', errText(e));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
