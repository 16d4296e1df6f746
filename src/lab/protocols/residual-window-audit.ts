// residual-window auditor: recomputes every number from the saved inputs and caches, never from memory.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckList, countFailures, near } from '../checks.js';
import { readF32, sameBytes, sameF32 } from '../arrays.js';
import { packWindowCache } from '../window-cache.js';
import { residualWindowChecks, timingSummary, timingsCsv, resultsCsv, type ControlRow, type Timing } from './residual-window-checks.js';
import {
  inputsOf,
  inputPath,
  cachePath,
  makeInput,
  compare,
  f32ControlError,
  summarize,
  headline,
  blockwiseOutput,
  wholeDecodeOutput,
  type ResidualWindowSpec,
  type Comparison,
  type InputArrays,
} from './residual-window-core.js';

function parseTimings(text: string): Timing[] {
  const lines = text.trimEnd().split('\n');
  return lines.slice(1).map((l) => {
    const [input, window, method, rep, ns] = l.split(',');
    return { input: input!, window: Number(window), method: method as Timing['method'], rep: Number(rep), ns: Number(ns) };
  });
}

export function auditResidualWindow(dir: string, spec: ResidualWindowSpec, checks: CheckList): void {
  const read = (rel: string) => new Uint8Array(readFileSync(join(dir, rel)));
  const json = <T>(rel: string) => JSON.parse(readFileSync(join(dir, rel), 'utf8')) as T;
  const D = spec.headDim;
  const inputs = inputsOf(spec);
  const saved = new Map<string, InputArrays>();
  checks.try('inputs: saved arrays equal the frozen generator output', () => {
    const res = countFailures(
      inputs,
      (x) => {
        const [q, k, v] = readF32(read(inputPath(x)), D, x.tokens * D, x.tokens * D) as [Float32Array, Float32Array, Float32Array];
        saved.set(x.id, { q, k, v });
        const g = makeInput(spec, x);
        return sameF32(q, g.q) && sameF32(k, g.k) && sameF32(v, g.v);
      },
      (x) => x.id,
    );
    return res;
  });
  if (saved.size !== inputs.length) return;
  const pairs = inputs.flatMap((x) => spec.windows.map((R) => ({ x, R, key: `${x.id} R=${R}` })));
  checks.try('caches: re-encoding the saved inputs gives the saved cache bytes', () =>
    countFailures(
      pairs,
      ({ x, R }) => {
        const a = saved.get(x.id)!;
        return sameBytes(read(cachePath(x, R)), packWindowCache(spec.formats, a.k, a.v, x.tokens, D, R));
      },
      (p) => p.key,
    ),
  );
  const rows: Comparison[] = [];
  const recomputed = checks.try('results: every number recomputed from the saved files', () => {
    const savedRows = json<Comparison[]>('results.json');
    for (const { x, R } of pairs) rows.push(compare(spec, spec.formats, x, saved.get(x.id)!, R, read(cachePath(x, R))));
    if (savedRows.length !== rows.length) return [false, `${savedRows.length} saved rows, ${rows.length} recomputed`];
    return countFailures(
      rows.map((r, i) => [r, savedRows[i]!] as const),
      ([r, s]) => near(r, s, spec.tolerance),
      ([r]) => `${r.input} R=${r.window}`,
    );
  });
  checks.try('results.csv agrees with results.json', () => [
    readFileSync(join(dir, 'results.csv'), 'utf8') === resultsCsv(json<Comparison[]>('results.json')),
    'byte-identical rendering',
  ]);
  const controls: ControlRow[] = inputs.map((x) => ({ input: x.id, f32RelL2: f32ControlError(spec, saved.get(x.id)!, x.tokens) }));
  checks.try('controls.json recomputed', () => [near(json('controls.json'), controls, 0), `${controls.length} f32 controls`]);
  if (recomputed) {
    const again = new CheckList();
    residualWindowChecks(spec, rows, controls, again);
    for (const c of again.checks) checks.add(`recomputed ${c.name}`, c.pass, c.detail);
    checks.try('summary.json and headline.md recomputed from the results', () => {
      const s = summarize(spec, rows);
      const md = headline(spec, s).join('\n') + '\n';
      return [
        near(json('summary.json'), s, spec.tolerance) && readFileSync(join(dir, 'headline.md'), 'utf8') === md,
        `${s.byDistribution.length} distributions x ${spec.windows.length} windows`,
      ];
    });
  }
  checks.try('block-wise and whole-decode outputs identical (recomputed)', () =>
    countFailures(
      pairs,
      ({ x, R }) => {
        const c = read(cachePath(x, R)),
          q = saved.get(x.id)!.q;
        return sameF32(blockwiseOutput(spec.formats, c, q), wholeDecodeOutput(spec.formats, c, q));
      },
      (p) => p.key,
    ),
  );
  checks.try('timings: one raw timing per comparison x method x rep; summary recomputed', () => {
    const text = readFileSync(join(dir, 'timings.csv'), 'utf8');
    const t = parseTimings(text);
    const want = pairs.length * 2 * spec.timing.reps;
    const valid = t.every((r) => Number.isInteger(r.ns) && r.ns > 0 && (r.method === 'blockwise' || r.method === 'whole'));
    const ok = t.length === want && valid && timingsCsv(t) === text && near(json('timing-summary.json'), timingSummary(t, spec), 0);
    return [ok, `${t.length}/${want} timings`];
  });
  checks.try('checks.json: the run recorded the same verdicts', () => {
    const s = json<{ name: string; pass: boolean }[]>('checks.json');
    const again = new CheckList();
    residualWindowChecks(spec, rows, controls, again);
    const want = again.checks.map((c) => `${c.name}:${c.pass}`);
    const got = s.map((c) => `${c.name}:${c.pass}`);
    return [want.every((w) => got.includes(w)) && s.every((c) => c.pass), `${s.filter((c) => c.pass).length}/${s.length} recorded PASS`];
  });
}
