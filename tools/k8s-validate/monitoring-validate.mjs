#!/usr/bin/env node
/*
 * monitoring-validate: offline checks of the PromQL and the Grafana dashboard
 * that ship with mcp-exec.
 *
 * Inputs (any mix):
 *   - YAML files (rendered charts): the expressions of every PrometheusRule,
 *     the query of every KEDA ScaledObject's prometheus trigger, and a
 *     prometheus-adapter rules file (seriesQuery, metricsQuery with its
 *     <<.LabelMatchers>>/<<.GroupBy>> placeholders filled in);
 *   - JSON files (Grafana dashboards): the document type-checks against
 *     @grafana/schema's Dashboard (unknown or misspelled fields are errors),
 *     and every panel target's expr and every query variable is PromQL once
 *     Grafana's variables ($__rate_interval, $namespace, ...) are filled in.
 *
 * Every expression is parsed with the Prometheus project's own grammar
 * (@prometheus-io/lezer-promql); a syntax error fails. With --metrics FILE
 * (a /metrics exposition from a real server), every metric an expression
 * names must be one the server exports, or one of EXTERNAL below.
 *
 * What it does not do: evaluate queries, or check Grafana panel options
 * beyond their types.
 *
 * Usage: node monitoring-validate.mjs [--metrics FILE] FILE...
 * Prints ok/FAIL lines and "N passed, N failed"; exits 1 on any failure.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";
import ts from "typescript";
import { parser } from "@prometheus-io/lezer-promql";

const HERE = path.dirname(fileURLToPath(import.meta.url));

/* Metrics that come from elsewhere than mcp-exec's /metrics. */
const EXTERNAL = new Set([
  "kube_pod_container_status_restarts_total", // kube-state-metrics
]);

/* Metric names of an exposition: families from # TYPE lines (histograms
 * also expose _bucket, _sum and _count). */
function exportedMetrics(text) {
  const names = new Set();
  for (const line of text.split("\n")) {
    const m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
    if (!m) continue;
    names.add(m[1]);
    if (m[2] === "histogram" || m[2] === "summary") {
      for (const s of ["_bucket", "_sum", "_count"]) names.add(m[1] + s);
    }
  }
  return names;
}

/* Parses one expression; returns { errors, metrics }. */
function analyse(expr) {
  const tree = parser.parse(expr);
  const errors = [];
  const metrics = new Set();
  tree.iterate({
    enter(n) {
      if (n.type.isError) errors.push(`syntax error at ${n.from}: ${JSON.stringify(expr.slice(n.from, n.from + 20))}`);
      if (n.name === "VectorSelector") {
        const id = n.node.getChild("Identifier");
        if (id) metrics.add(expr.slice(id.from, id.to));
      }
      if (n.name === "UnquotedLabelMatcher") {
        const label = n.node.getChild("LabelName");
        const value = n.node.getChild("StringLiteral");
        if (label && value && expr.slice(label.from, label.to) === "__name__") {
          const v = expr.slice(value.from + 1, value.to - 1);
          for (const alt of v.split("|")) metrics.add(alt);
        }
      }
    },
  });
  return { errors, metrics };
}

/* Grafana's variables, filled in so that the result is plain PromQL. */
function fillGrafana(expr) {
  return expr
    .replace(/\$__(rate_interval|interval|range)\b/g, "5m")
    .replace(/\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/g, "x");
}

function expressionsOfYaml(file) {
  const out = [];
  for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
    if (!doc || typeof doc !== "object") continue;
    if (doc.kind === "PrometheusRule") {
      for (const g of doc.spec?.groups ?? []) {
        for (const r of g.rules ?? []) out.push({ where: `${file}: ${r.alert ?? r.record}`, expr: String(r.expr) });
      }
    } else if (doc.kind === "ScaledObject") {
      for (const t of doc.spec?.triggers ?? []) {
        if (t.type === "prometheus") out.push({ where: `${file}: ScaledObject query`, expr: t.metadata.query });
      }
    } else if (doc.rules?.custom) {
      for (const r of doc.rules.custom) {
        const fill = (q) =>
          q.replace(/<<\.LabelMatchers>>/g, 'namespace="x",pod="y"').replace(/<<\.GroupBy>>/g, "pod");
        out.push({ where: `${file}: adapter seriesQuery`, expr: r.seriesQuery });
        out.push({ where: `${file}: adapter metricsQuery (${r.name?.as})`, expr: fill(r.metricsQuery) });
      }
    }
  }
  return out;
}

function expressionsOfDashboard(file, dash) {
  const out = [];
  const panels = [...(dash.panels ?? [])];
  for (const p of dash.panels ?? []) panels.push(...(p.panels ?? []));
  for (const p of panels) {
    for (const t of p.targets ?? []) {
      if (t.expr) out.push({ where: `${file}: panel "${p.title}" ${t.refId}`, expr: fillGrafana(t.expr) });
    }
  }
  for (const v of dash.templating?.list ?? []) {
    const m = /^label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\)$/.exec(v.query ?? "");
    if (m) out.push({ where: `${file}: variable ${v.name}`, expr: fillGrafana(m[1]) });
  }
  return out;
}

/* Type-checks each dashboard against @grafana/schema's Dashboard type; the
 * excess-property check rejects unknown or misspelled fields. */
function typeCheckDashboards(dashes) {
  const errors = new Map();
  if (dashes.length === 0) return errors;
  const vdir = path.join(HERE, ".monitoring-validate-virtual");
  const files = new Map();
  dashes.forEach((d, i) => {
    const name = path.join(vdir, `dash${i}.mts`);
    d.vfile = name;
    files.set(name, `import type { Dashboard } from "@grafana/schema";\n` +
      `const dash: Dashboard = ${JSON.stringify(d.doc, null, 2)};\nexport { dash };\n`);
  });
  const options = {
    strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"], types: [],
  };
  const host = ts.createCompilerHost(options, true);
  const getSF = host.getSourceFile.bind(host);
  host.getSourceFile = (f, lv, onErr, create) => {
    const text = files.get(path.resolve(f));
    return text !== undefined ? ts.createSourceFile(f, text, lv, true) : getSF(f, lv, onErr, create);
  };
  const exists = host.fileExists.bind(host);
  host.fileExists = (f) => files.has(path.resolve(f)) || exists(f);
  const read = host.readFile.bind(host);
  host.readFile = (f) => files.get(path.resolve(f)) ?? read(f);
  const program = ts.createProgram([...files.keys()], options, host);
  for (const d of dashes) {
    const sf = program.getSourceFile(d.vfile);
    const diags = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
    errors.set(d.file, diags.map((x) => "type: " + ts.flattenDiagnosticMessageText(x.messageText, " ").replace(/\s+/g, " ")));
  }
  return errors;
}

function main(argv) {
  let known = null;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--metrics") known = exportedMetrics(fs.readFileSync(argv[++i], "utf8"));
    else if (argv[i].startsWith("--")) {
      console.error(`monitoring-validate: unknown option ${argv[i]}`);
      return 2;
    } else files.push(argv[i]);
  }
  if (files.length === 0) {
    console.error("usage: monitoring-validate.mjs [--metrics FILE] FILE...");
    return 2;
  }
  let passed = 0;
  let failed = 0;
  const report = (ok, what, errs = []) => {
    if (ok) passed++;
    else failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
    for (const e of errs) console.log(`     ${e}`);
  };
  const exprs = [];
  const dashes = [];
  for (const f of files) {
    try {
      if (f.endsWith(".json")) {
        const doc = JSON.parse(fs.readFileSync(f, "utf8"));
        dashes.push({ file: f, doc });
        exprs.push(...expressionsOfDashboard(f, doc));
      } else {
        exprs.push(...expressionsOfYaml(f));
      }
    } catch (e) {
      report(false, `${f}: cannot read`, [e.message.split("\n")[0]]);
    }
  }
  for (const [file, errs] of typeCheckDashboards(dashes)) {
    report(errs.length === 0, `${file}: a Grafana Dashboard (@grafana/schema)`, errs);
  }
  for (const { where, expr } of exprs) {
    const { errors, metrics } = analyse(expr);
    const unknown = known ? [...metrics].filter((m) => !known.has(m) && !EXTERNAL.has(m)) : [];
    const errs = [...errors, ...unknown.map((m) => `metric ${m} is not exported by the server`)];
    if (metrics.size === 0) errs.push("names no metric");
    report(errs.length === 0, `${where}: ${[...metrics].join(", ")}`, errs);
  }
  if (passed + failed === 0) report(false, "nothing to check");
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
