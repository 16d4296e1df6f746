// `audit DIR`: the generic manifest checks, then the protocol's own recomputation from the saved files.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckList } from './checks.js';
import { auditManifest, readManifest, PROTOCOL_COPY } from './manifest.js';
import { protocols } from './protocol.js';
import { readSection, renderMarkdown, renderHtml } from './report.js';
import { auditVariant, type VariantRecord } from './variant.js';
import { auditStudy } from './study/study-audit.js';
import { STUDY } from './study/study.js';

/** Audits one run directory (a protocol run, or a lab run whose sub-runs are audited in turn). */
export function auditRun(dir: string, checks = new CheckList(), prefix = ''): CheckList {
  const sub = new CheckList();
  let ok = sub.try('manifest.json is a kvpack run manifest', () => [readManifest(dir).kind === 'kvpack-run', dir]);
  if (ok) {
    const m = readManifest(dir);
    auditManifest(dir, m, sub);
    if (m.protocol.name === STUDY) {
      auditStudy(dir, (d, c, pre) => void auditRun(d, c, pre), sub);
    } else if (m.protocol.name === LAB) {
      const cfg = JSON.parse(readFileSync(join(dir, PROTOCOL_COPY), 'utf8')) as { runs?: string[]; model?: string | null };
      const runs = cfg.runs ?? [];
      for (const r of runs) auditRun(join(dir, r), sub, `${r}: `);
      sub.try('report.md and report.html re-render from the saved runs', () => {
        const env = readManifest(join(dir, runs[0]!)).environment;
        const sections = runs.map((r) => readSection(join(dir, r), r));
        const md = renderMarkdown(sections, env, cfg.model ?? null) === readFileSync(join(dir, 'report.md'), 'utf8');
        const html = renderHtml(sections, env, cfg.model ?? null) === readFileSync(join(dir, 'report.html'), 'utf8');
        return [md && html, `md ${md ? 'same' : 'differs'}, html ${html ? 'same' : 'differs'}`];
      });
    } else {
      const p = protocols.get(m.protocol.name);
      ok = sub.add('protocol is registered', p !== undefined, m.protocol.name);
      if (p) {
        let spec: unknown;
        // The spec comes from the run's own protocol.json (hash-checked above), not the repo's current file.
        if (
          sub.try('protocol.json parses', () => {
            spec = p.parse(JSON.parse(readFileSync(join(dir, PROTOCOL_COPY), 'utf8')));
            return [true, m.protocol.name];
          })
        ) {
          auditVariant(
            JSON.parse(readFileSync(join(dir, PROTOCOL_COPY), 'utf8')) as Record<string, unknown>,
            m.protocol.variant as VariantRecord | undefined,
            sub,
          );
          try {
            p.audit(dir, spec, sub);
          } catch (e) {
            sub.add('protocol audit ran to completion', false, (e as Error).message);
          }
        }
      }
    }
  }
  checks.merge(sub, prefix);
  return checks;
}

/** protocol.json name of a lab run (its "protocol" lists the sub-runs and the report files). */
export const LAB = 'lab';
