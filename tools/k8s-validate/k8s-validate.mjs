#!/usr/bin/env node
/*
 * k8s-validate: offline schema validation of Kubernetes manifests.
 *
 * kubectl's client-side dry run still needs an API server, so CI validates
 * rendered manifests with two independent checks that need no network:
 *
 *   1. schema: the ajv validators that kubernetes-models precompiled from the
 *      upstream OpenAPI spec (types, required fields, enums, formats such as
 *      Quantity). They do not reject unknown fields, because the OpenAPI
 *      schemas do not set additionalProperties: false.
 *   2. type:   every document is compiled in memory as
 *      `const doc: I<Kind> = <json>` against the same models' TypeScript
 *      types. TypeScript's excess-property check rejects unknown or
 *      misspelled fields at any depth (imagePullPolicyy, policyType, ...).
 *
 * Custom resources are validated the same way when a kubernetes-models CRD
 * package is pinned for their group (ServiceMonitor and PrometheusRule:
 * prometheus-operator; ScaledObject: keda; CiliumNetworkPolicy: cilium).
 * Any other apiVersion/kind fails as unknown, unless --skip-unknown is given,
 * in which case it is reported as "skip".
 *
 * What it does not do: the API server's semantic validation (selector and
 * template label consistency, name formats beyond the schema patterns,
 * admission, CEL rules).
 *
 * Usage: node k8s-validate.mjs [--skip-unknown] [--quiet] FILE... ('-' = stdin)
 * Prints one "ok"/"FAIL"/"skip" line per document and "N passed, N failed";
 * exits 1 when any document failed (or nothing was validated), 2 on usage errors.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";
import ts from "typescript";

const HERE = path.dirname(fileURLToPath(import.meta.url));

/* Where the models for an apiVersion live. Core and built-in groups come from
 * kubernetes-models; CRD groups need their own pinned package. */
const CRD_PACKAGES = {
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
  "keda.sh": "@kubernetes-models/keda",
  "cilium.io": "@kubernetes-models/cilium",
};

function modelModule(apiVersion) {
  if (typeof apiVersion !== "string" || !/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion)) {
    return null;
  }
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  if (group in CRD_PACKAGES) return `${CRD_PACKAGES[group]}/${apiVersion}`;
  return `kubernetes-models/${apiVersion}`;
}

const moduleCache = new Map();
async function loadModel(apiVersion, kind) {
  const spec = modelModule(apiVersion);
  if (!spec || typeof kind !== "string" || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) return null;
  if (!moduleCache.has(spec)) {
    moduleCache.set(spec, await import(spec).catch(() => null));
  }
  const mod = moduleCache.get(spec);
  const Model = mod && mod[kind];
  /* Every top-level kind's class carries static apiVersion and kind; helper
   * types exported from the same module (e.g. ObjectMeta) do not match. */
  if (typeof Model !== "function" || Model.kind !== kind || Model.apiVersion !== apiVersion) {
    return null;
  }
  return { Model, spec };
}

/* The API server treats an explicit null as "unset"; Helm templates produce
 * them (e.g. `creationTimestamp: null`). Drop them like the server would. */
function dropNulls(v) {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (v && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = dropNulls(x);
    return out;
  }
  return v;
}

function readSource(file) {
  return file === "-" ? fs.readFileSync(0, "utf8") : fs.readFileSync(file, "utf8");
}

/* Walk from the AST node at a diagnostic's position up to the document root
 * and name the JSON path (spec.template.spec.containers[0].imagePullPolicyy). */
function jsonPathAt(sf, pos) {
  let node = findInnermost(sf, pos);
  const parts = [];
  while (node) {
    const parent = node.parent;
    if (ts.isPropertyAssignment(node)) {
      parts.unshift(node.name.text ?? node.name.getText(sf));
    } else if (parent && ts.isArrayLiteralExpression(parent)) {
      parts.unshift(`[${parent.elements.indexOf(node)}]`);
    }
    if (ts.isVariableDeclaration(node)) break;
    node = parent;
  }
  return parts.join(".").replace(/\.\[/g, "[");
}

function findInnermost(sf, pos) {
  let found = sf;
  const visit = (n) => {
    if (pos >= n.getStart(sf) && pos < n.getEnd()) {
      found = n;
      ts.forEachChild(n, visit);
    }
  };
  ts.forEachChild(sf, visit);
  return found;
}

/* Type-check all documents in one in-memory program: one virtual .mts file
 * per document, resolved against this folder's node_modules. */
function typeCheck(entries) {
  const vdir = path.join(HERE, ".k8s-validate-virtual");
  const files = new Map();
  entries.forEach((e, i) => {
    const name = path.join(vdir, `doc${i}.mts`);
    e.vfile = name;
    files.set(
      name,
      `import type { I${e.kind} } from ${JSON.stringify(e.spec)};\n` +
        `const doc: I${e.kind} = ${JSON.stringify(e.doc, null, 2)};\n` +
        `export { doc };\n`,
    );
  });
  if (files.size === 0) return;

  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2022.d.ts"],
    types: [],
  };
  const host = ts.createCompilerHost(options, true);
  const realGetSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, langVersion, onError, shouldCreate) => {
    const text = files.get(path.resolve(fileName));
    if (text !== undefined) return ts.createSourceFile(fileName, text, langVersion, true);
    return realGetSourceFile(fileName, langVersion, onError, shouldCreate);
  };
  const realFileExists = host.fileExists.bind(host);
  host.fileExists = (f) => files.has(path.resolve(f)) || realFileExists(f);
  const realReadFile = host.readFile.bind(host);
  host.readFile = (f) => files.get(path.resolve(f)) ?? realReadFile(f);

  const program = ts.createProgram([...files.keys()], options, host);
  for (const e of entries) {
    const sf = program.getSourceFile(e.vfile);
    const diags = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
    for (const d of diags) {
      const msg = ts.flattenDiagnosticMessageText(d.messageText, " ").replace(/\s+/g, " ");
      const where = d.start !== undefined ? jsonPathAt(sf, d.start) : "";
      e.errors.push(`type: ${where ? where + ": " : ""}${msg}`);
    }
  }
}

async function main(argv) {
  const args = argv.filter((a) => !a.startsWith("--") || a === "--");
  const flags = new Set(argv.filter((a) => a.startsWith("--") && a !== "--"));
  for (const f of flags) {
    if (!["--skip-unknown", "--quiet"].includes(f)) {
      console.error(`k8s-validate: unknown option ${f}`);
      return 2;
    }
  }
  if (args.length === 0) {
    console.error("usage: k8s-validate.mjs [--skip-unknown] [--quiet] FILE... ('-' = stdin)");
    return 2;
  }

  const entries = [];
  const results = []; // { label, errors, skipped }
  for (const file of args) {
    let docs;
    try {
      docs = yaml.loadAll(readSource(file));
    } catch (err) {
      results.push({ label: `${file}`, errors: [`yaml: ${err.message.split("\n")[0]}`] });
      continue;
    }
    let idx = -1;
    for (const raw of docs) {
      idx++;
      if (raw === null || raw === undefined) continue; // empty document between ---
      const label0 = `${file}#${idx}`;
      if (typeof raw !== "object" || Array.isArray(raw)) {
        results.push({ label: label0, errors: ["document is not a mapping"] });
        continue;
      }
      const doc = dropNulls(raw);
      const { apiVersion, kind } = doc;
      const name = doc.metadata?.name ?? "?";
      const label = `${label0} ${apiVersion} ${kind}/${name}`;
      const found = await loadModel(apiVersion, kind);
      if (!found) {
        if (flags.has("--skip-unknown")) {
          results.push({ label, errors: [], skipped: true });
        } else {
          results.push({ label, errors: [`unknown apiVersion/kind ${apiVersion} ${kind} (no pinned model)`] });
        }
        continue;
      }
      const e = { label, kind, spec: found.spec, doc, errors: [] };
      try {
        new found.Model(doc).validate();
      } catch (err) {
        e.errors.push(`schema: ${err.message}`);
      }
      entries.push(e);
      results.push(e);
    }
  }

  typeCheck(entries);

  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const r of results) {
    if (r.skipped) {
      skipped++;
      console.log(`skip ${r.label} (no model; not validated)`);
    } else if (r.errors.length === 0) {
      passed++;
      if (!flags.has("--quiet")) console.log(`ok   ${r.label}`);
    } else {
      failed++;
      console.log(`FAIL ${r.label}`);
      for (const m of r.errors) console.log(`     ${m}`);
    }
  }
  console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
  return failed > 0 || passed === 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
