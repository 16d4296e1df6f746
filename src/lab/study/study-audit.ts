// Audit of a study directory: every sub-run audited in turn (its variant re-resolved against the built-in
// protocol), each sub-run's protocol.json hash as the study froze it, the negative controls re-derived from
// the saved records, the memory table recomputed, and the report re-rendered byte for byte.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckList } from '../checks.js';
import { near } from '../checks.js';
import { readManifest, PROTOCOL_COPY } from '../manifest.js';
import { sha256File } from '../hash.js';
import { memoryRows } from './memory.js';
import { renderStudyHtml, renderStudyMarkdown, studyParts } from './study-report.js';
import type { StudyConfig } from './study.js';
import { F16_ARM, type ShortAnswerRecord } from './short-answers.js';

export function auditStudy(dir: string, auditSub: (dir: string, checks: CheckList, prefix: string) => void, checks: CheckList): void {
  const cfg = JSON.parse(readFileSync(join(dir, PROTOCOL_COPY), 'utf8')) as StudyConfig;
  for (const r of cfg.runs) {
    auditSub(join(dir, r), checks, `${r}: `);
    checks.add(
      `${r}: protocol.json is the variant the study froze`,
      sha256File(join(dir, r, PROTOCOL_COPY)) === cfg.frozen[r],
      (cfg.frozen[r] ?? 'missing').slice(0, 12),
    );
  }
  checks.try('negative controls: every sabotage fails its control, the honest run passes all (re-derived from negative-controls/records.json)', () => {
    const p = studyParts(dir, cfg);
    const bad = p.negative.checks.checks.filter((c) => !c.pass);
    return [bad.length === 0 && p.negative.checks.checks.length > 0, bad.length ? `first: ${bad[0]!.name}` : `${p.negative.checks.checks.length} cases`];
  });
  checks.try('short-answers/records.json: one record per frozen arm (f16 first) and question, nothing else', () => {
    const f = join(dir, 'short-answers', 'records.json');
    if (!existsSync(f)) return [cfg.shortAnswers.questions.length === 0, 'no records (a model without a tokenizer has no questions)'];
    const records = JSON.parse(readFileSync(f, 'utf8')) as ShortAnswerRecord[];
    const want = [F16_ARM, ...cfg.shortAnswers.arms.map((a) => a.name)].flatMap((a) => cfg.shortAnswers.questions.map((q) => `${a}/${q.id}`));
    const got = records.map((r) => `${r.arm}/${r.question}`);
    return [want.join() === got.join(), `${got.length} records, ${want.length} expected`];
  });
  checks.try('memory.json recomputed from the model shape and context', () => {
    const m = cfg.model;
    const again = memoryRows({ layers: m.layers, kvHeads: m.kvHeads, headDim: m.headDim }, cfg.options.ctx);
    return [near(JSON.parse(JSON.stringify(again)), JSON.parse(readFileSync(join(dir, 'memory.json'), 'utf8')), 0), `${again.length} schemes`];
  });
  checks.try('report.md and report.html re-render from the saved runs', () => {
    const env = readManifest(join(dir, cfg.runs[0]!)).environment;
    const md = renderStudyMarkdown(dir, cfg, env) === readFileSync(join(dir, 'report.md'), 'utf8');
    const html = renderStudyHtml(dir, cfg, env) === readFileSync(join(dir, 'report.html'), 'utf8');
    return [md && html, `md ${md ? 'same' : 'differs'}, html ${html ? 'same' : 'differs'}`];
  });
}
