// The lab report (report.md + report.html with inline SVG), rendered only from saved run files so an audit
// can re-render it and compare bytes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scatterChart, barChart, type Series } from './svg.js';
import type { Environment } from './manifest.js';
import type { Comparison } from './protocols/residual-window-core.js';
import type { ArmSummary } from './protocols/bit-allocation-core.js';
import { protocols, getProtocol } from './protocol.js';
import { modelCharts } from './model-charts.js';

export interface LabSection {
  readonly name: string;
  readonly title: string;
  readonly headline: string[];
  readonly checks: { name: string; pass: boolean; detail: string }[];
  readonly charts: string[];
}

const json = <T>(dir: string, rel: string) => JSON.parse(readFileSync(join(dir, rel), 'utf8')) as T;

function residualWindowCharts(dir: string): string[] {
  const rows = json<Comparison[]>(dir, 'results.json');
  const spec = json<{ headDim: number; windows: number[]; distributions: string[] }>(dir, 'protocol.json');
  const D = spec.headDim;
  // Frontier: mean relL2 over seeds vs effective bits (file bytes incl. header, scales, padding) per (N, R).
  const series: Series[] = spec.distributions.map((d) => {
    const keys = [...new Set(rows.filter((r) => r.distribution === d).map((r) => `${r.tokens}/${r.window}`))];
    const points = keys
      .map((k) => {
        const sel = rows.filter((r) => r.distribution === d && `${r.tokens}/${r.window}` === k);
        const bits = (sel[0]!.fileBytes * 8) / (2 * sel[0]!.tokens * D);
        return [bits, (100 * sel.reduce((s, r) => s + r.relL2, 0)) / sel.length] as const;
      })
      .sort((a, b) => a[0] - b[0]);
    return { name: d, points };
  });
  const bars = spec.distributions.map((d) => ({
    name: d,
    values: spec.windows.map((R) => {
      const sel = rows.filter((r) => r.distribution === d && r.window === R);
      return (100 * sel.reduce((s, r) => s + r.relL2, 0)) / sel.length;
    }),
  }));
  return [
    scatterChart('residual-window: error vs effective bits (each N and R)', 'effective bits per K/V element (file bytes)', 'attention relL2 (%)', series),
    barChart(
      'residual-window: mean relL2 by window R',
      'attention relL2 (%)',
      spec.windows.map((R) => `R=${R}`),
      bars,
    ),
  ];
}

function bitAllocationCharts(dir: string): string[] {
  const s = json<ArmSummary[]>(dir, 'summary.json').filter((a) => a.effectiveBits < 16);
  const layers = Object.keys(s[0]!.relRms);
  return [
    scatterChart(
      'bit-allocation: mean error vs effective bits per arm',
      'effective bits per K/V element (scales included)',
      'attention relRms (%)',
      s.map((a) => ({ name: a.arm, points: [[a.effectiveBits, 100 * a.relRmsMean]] })),
    ),
    barChart(
      'bit-allocation: per-layer error',
      'attention relRms (%)',
      layers,
      s.map((a) => ({ name: a.arm, values: layers.map((l) => 100 * a.relRms[l]!) })),
    ),
  ];
}

/** Reads one finished sub-run directory into a report section. */
export function readSection(dir: string, name: string): LabSection {
  const charts = name === 'residual-window' ? residualWindowCharts(dir) : name === 'bit-allocation' ? bitAllocationCharts(dir) : modelCharts(name, dir);
  return {
    name,
    title: getProtocol(name).title,
    headline: readFileSync(join(dir, 'headline.md'), 'utf8').trimEnd().split('\n'),
    checks: json(dir, 'checks.json'),
    charts,
  };
}

/** Registered model protocols without a section in this report. */
function notRunModelProtocols(sections: readonly LabSection[]): { name: string; title: string }[] {
  return [...protocols.values()].filter((p) => p.needsModel && !sections.some((s) => s.name === p.name));
}

export function envLine(e: Environment): string {
  return `node ${e.node}, ${e.platform}/${e.arch}, ${e.cpuModel} x ${e.cpuCount}`;
}

export function renderMarkdown(sections: readonly LabSection[], env: Environment, model: string | null): string {
  const out = ['# kvpack lab report', '', `Environment: ${envLine(env)}. Every number below is recomputed by \`kvpack protocol audit <this dir>\`.`, ''];
  for (const s of sections) {
    out.push(`## ${s.name}: ${s.title}`, '', ...s.headline, '', 'Checks:', '');
    for (const c of s.checks) out.push(`- ${c.pass ? 'PASS' : 'FAIL'} ${c.name}${c.detail ? ` (${c.detail})` : ''}`);
    out.push('', `Raw numbers: \`${s.name}/results.csv\`; charts in report.html.`, '');
  }
  const notRun = notRunModelProtocols(sections);
  if (notRun.length) {
    out.push('## Model protocols not run', '');
    for (const p of notRun) out.push(`- ${p.name}: ${p.title} — ${model ? 'not selected' : 'needs -m MODEL'}`);
    out.push('');
  }
  return out.join('\n');
}

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Pipe tables to HTML tables; other lines become paragraphs (enough for our own headline tables). */
export function mdTables(lines: readonly string[]): string {
  const out: string[] = [];
  let rows: string[][] = [];
  const flush = () => {
    if (!rows.length) return;
    const [head, , ...body] = rows;
    out.push(
      `<table><thead><tr>${head!.map((c) => `<th>${esc(c)}</th>`).join('')}</tr></thead><tbody>${body.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`,
    );
    rows = [];
  };
  for (const l of lines) {
    if (l.startsWith('|'))
      rows.push(
        l
          .slice(1, -1)
          .split('|')
          .map((c) => c.trim()),
      );
    else {
      flush();
      if (l.trim()) out.push(`<p>${esc(l)}</p>`);
    }
  }
  flush();
  return out.join('\n');
}

export function renderHtml(sections: readonly LabSection[], env: Environment, model: string | null): string {
  const body = sections.map((s) =>
    [
      `<h2>${esc(s.name)}: ${esc(s.title)}</h2>`,
      mdTables(s.headline),
      `<div class="charts">${s.charts.join('\n')}</div>`,
      `<ul>${s.checks.map((c) => `<li class="${c.pass ? 'pass' : 'fail'}">${c.pass ? 'PASS' : 'FAIL'} ${esc(c.name)}${c.detail ? ` (${esc(c.detail)})` : ''}</li>`).join('')}</ul>`,
    ].join('\n'),
  );
  const notRun = notRunModelProtocols(sections);
  const planned = notRun.length
    ? `<h2>Model protocols not run</h2><ul>${notRun.map((p) => `<li>${esc(p.name)}: ${esc(p.title)} — ${model ? 'not selected' : 'needs -m MODEL'}</li>`).join('')}</ul>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kvpack lab report</title>
<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}.pass{color:#060}.fail{color:#b00;font-weight:bold}.charts svg{margin:0.5em 1em 0.5em 0}</style>
</head><body>
<h1>kvpack lab report</h1>
<p>Environment: ${esc(envLine(env))}. Every number is recomputed by <code>kvpack protocol audit &lt;this dir&gt;</code>.</p>
${body.join('\n')}
${planned}
</body></html>
`;
}
