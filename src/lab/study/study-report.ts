// The study report (report.md + report.html), rendered only from the saved files so the audit re-renders it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckList } from '../checks.js';
import type { Environment } from '../manifest.js';
import { envLine, esc, mdTables, readSection, type LabSection } from '../report.js';
import { memoryTable, type MemoryRow } from './memory.js';
import { negativeCheck, negativeTable, type CaseRecord } from './negative-controls.js';
import type { StudyConfig } from './study.js';
import { informative, shortAnswerRows, shortAnswerTable, type ShortAnswerRecord } from './short-answers.js';

const NEGATIVE_FILE = 'negative-controls/records.json';
const MEMORY_FILE = 'memory.json';
const SHORT_ANSWERS_FILE = 'short-answers/records.json';

const SEED: Record<string, string> = {
  'live-cache': 'Seed 000 on the live cache: per-layer attention error, equal-bytes arms, logits per text, loops',
  'window-sweep': 'Seed 000: the exact-window sweep',
  needles: 'Seed 000: needles at 25/50/90% depth, recalled exactly by greedy decode',
  anchors: 'Seed 002: exact-match at 50/100, anchors on all / probe-chosen / layer-0 layers, anchor precision, prompt protection vs decode-only anchors',
};

export interface StudyParts {
  readonly sections: LabSection[];
  readonly negative: { table: string[]; checks: CheckList };
  readonly memory: string[];
  /** Seed 000's short-answer probe (absent for a model without a tokenizer). */
  readonly shortAnswers?: { table: string[]; informative: boolean };
}

export function studyParts(dir: string, cfg: StudyConfig): StudyParts {
  const sections = cfg.runs.map((r) => readSection(join(dir, r), r));
  const cases = JSON.parse(readFileSync(join(dir, NEGATIVE_FILE), 'utf8')) as CaseRecord[];
  const checks = new CheckList();
  negativeCheck(cases, cfg.negative.errorFloor, checks);
  const rows = JSON.parse(readFileSync(join(dir, MEMORY_FILE), 'utf8')) as MemoryRow[];
  const m = cfg.model;
  let shortAnswers: StudyParts['shortAnswers'];
  if (existsSync(join(dir, SHORT_ANSWERS_FILE))) {
    const records = JSON.parse(readFileSync(join(dir, SHORT_ANSWERS_FILE), 'utf8')) as ShortAnswerRecord[];
    shortAnswers = { table: shortAnswerTable(cfg.shortAnswers, records), informative: informative(shortAnswerRows(cfg.shortAnswers, records)) };
  }
  return {
    shortAnswers,
    sections,
    negative: { table: negativeTable(cases, cfg.negative.errorFloor), checks },
    memory: memoryTable(rows, { layers: m.layers, kvHeads: m.kvHeads, headDim: m.headDim }, cfg.options.ctx),
  };
}

/** Tables the f16 model itself scores nothing on: flagged so a 0 is not read as a scheme's result. */
export function uninformative(p: StudyParts): string[] {
  const out = p.sections.filter((s) => s.headline.some((l) => l.includes('UNINFORMATIVE'))).map((s) => s.name);
  if (p.shortAnswers && !p.shortAnswers.informative) out.push('short-answers');
  return out;
}

function flagLines(p: StudyParts): string[] {
  const u = uninformative(p);
  return [
    u.length
      ? `**Uninformative on this model (the f16 model scores nothing there): ${u.join(', ')}.**`
      : 'Every table is informative: the f16 model scores on each.',
  ];
}

function header(cfg: StudyConfig, env: Environment): string[] {
  const m = cfg.model;
  const o = cfg.options;
  const prompts = o.texts.length
    ? `the user's texts (${o.texts.map((t) => `${t.file} sha256 ${t.sha256.slice(0, 12)}`).join('; ')}), each BOS + its first ${o.promptTokens} tokens (a shorter one continued by the model's greedy f16 text)`
    : `${o.prompts} ${o.openings === 'doc' ? 'doc-style (reStructuredText)' : 'story'} openings continued by the model's own greedy f16 text to ${o.promptTokens} tokens`;
  return [
    `Model: **${m.file}**, sha256 \`${m.sha256}\`, architecture ${m.arch}: ${m.layers} layers, ${m.heads} heads / ${m.kvHeads} KV heads, head dim ${m.headDim}, vocab ${m.vocab}, trained context ${m.ctxTrain}.`,
    '',
    `Command: \`${cfg.command}\``,
    '',
    `Context ${o.ctx}: prompts of ${o.promptTokens} tokens + ${o.horizon} greedy tokens; prompts: ${prompts}. Environment: ${envLine(env)}.`,
    '',
    'Every figure with [lo, hi] carries a bootstrap 95% interval over prompts; exact@h is n/a where the horizon does not reach h; bulk bits (the quantized stream alone) stand beside effective bits (every region, scales, padding, and the f32 "staged" positions of part-filled per-channel groups, which read exact). KL figures are exact over the full vocabulary: the KL of each row is computed at run time from the float32 logits and saved (`kl/`); the saved reference is its top-k digest (`inputs/reference.kvrefd`: top-k log-probs under the exact log-sum-exp, tail, target, argmax; the sha256 of the float32 logits recorded), which the audit uses to rescore top-1 and NLL and to bound every saved KL row from below. Each part is a variant of a built-in protocol (its patch and hash in its protocol.json); `kvpack protocol audit <this dir>` recomputes every number, re-renders this report and catches an edited file.',
    '',
  ];
}

export function renderStudyMarkdown(dir: string, cfg: StudyConfig, env: Environment): string {
  const p = studyParts(dir, cfg);
  const out = [`# kvpack study: ${cfg.model.file}`, '', ...header(cfg, env), ...flagLines(p), ''];
  for (const s of p.sections) {
    out.push(`## ${SEED[s.name] ?? s.title} (\`${s.name}/\`)`, '', ...s.headline, '', 'Checks:', '');
    for (const c of s.checks) out.push(`- ${c.pass ? 'PASS' : 'FAIL'} ${c.name}${c.detail ? ` (${c.detail})` : ''}`);
    out.push('');
  }
  if (p.shortAnswers) out.push(`## Seed 000's short-answer probe and loops (\`short-answers/\`, ${cfg.shortAnswers.source})`, '', ...p.shortAnswers.table, '');
  out.push('## Negative controls (`negative-controls/`)', '', ...p.negative.table, '');
  for (const c of p.negative.checks.checks) out.push(`- ${c.pass ? 'PASS' : 'FAIL'} ${c.name}`);
  out.push('', '## Memory (`memory.json`)', '', ...p.memory, '');
  return out.join('\n');
}

export function renderStudyHtml(dir: string, cfg: StudyConfig, env: Environment): string {
  const p = studyParts(dir, cfg);
  const body = p.sections.map((s) =>
    [
      `<h2>${esc(SEED[s.name] ?? s.title)}</h2>`,
      mdTables(s.headline),
      `<div class="charts">${s.charts.join('\n')}</div>`,
      `<ul>${s.checks.map((c) => `<li class="${c.pass ? 'pass' : 'fail'}">${c.pass ? 'PASS' : 'FAIL'} ${esc(c.name)}${c.detail ? ` (${esc(c.detail)})` : ''}</li>`).join('')}</ul>`,
    ].join('\n'),
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kvpack study: ${esc(cfg.model.file)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:1300px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}.pass{color:#060}.fail{color:#b00;font-weight:bold}.charts svg{margin:0.5em 1em 0.5em 0}</style>
</head><body>
<h1>kvpack study: ${esc(cfg.model.file)}</h1>
${mdTables([...header(cfg, env), ...flagLines(p)])}
${body.join('\n')}
${p.shortAnswers ? `<h2>Seed 000's short-answer probe and loops</h2>\n${mdTables(p.shortAnswers.table)}` : ''}
<h2>Negative controls</h2>
${mdTables(p.negative.table)}
<ul>${p.negative.checks.checks.map((c) => `<li class="${c.pass ? 'pass' : 'fail'}">${c.pass ? 'PASS' : 'FAIL'} ${esc(c.name)}</li>`).join('')}</ul>
<h2>Memory</h2>
${mdTables(p.memory)}
</body></html>
`;
}
