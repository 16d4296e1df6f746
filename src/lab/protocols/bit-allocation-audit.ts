// bit-allocation auditor: recomputes inputs, packed bytes, errors, controls and the summary from the saved files.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckList, countFailures, near } from '../checks.js';
import { readF32, sameBytes, sameF32 } from '../arrays.js';
import { readCapture } from '../capture.js';
import { bitAllocationChecks } from './bit-allocation-checks.js';
import { layerStatistics, STATISTICS_FILE, statisticsLines, type LayerStatistics } from './bit-allocation-stats.js';
import {
  syntheticLayer,
  capturedLayer,
  encodeHeads,
  referenceOutput,
  evaluateArm,
  summarize,
  headline,
  CAPTURE_COPY,
  cacheFile,
  resultsCsv,
  type BitAllocationSpec,
  type LayerInput,
  type ArmResult,
  type LayerIndex,
} from './bit-allocation-core.js';

export function auditBitAllocation(dir: string, spec: BitAllocationSpec, checks: CheckList): void {
  const read = (rel: string) => new Uint8Array(readFileSync(join(dir, rel)));
  const json = <T>(rel: string) => JSON.parse(readFileSync(join(dir, rel), 'utf8')) as T;
  const index = json<{ layers: LayerIndex[] }>('inputs/index.json').layers;
  const layers: LayerInput[] = [];
  const synth = index.filter((l) => l.source === 'synthetic');
  checks.try('inputs: synthetic layers equal the frozen generator output', () => {
    if (synth.length !== spec.synthetic.layers.length) return [false, `${synth.length} saved, ${spec.synthetic.layers.length} in the protocol`];
    return countFailures(
      synth,
      (l) => {
        const g = syntheticLayer(spec, synth.indexOf(l));
        const [q, k, v] = readF32(read(l.file), g.q.length, g.k.length, g.v.length) as [Float32Array, Float32Array, Float32Array];
        layers.push({ ...g, q, k, v });
        return g.name === l.name && sameF32(q, g.q) && sameF32(k, g.k) && sameF32(v, g.v);
      },
      (l) => l.name,
    );
  });
  const captured = index.filter((l) => l.source === 'capture');
  if (captured.length > 0) {
    checks.try('inputs: captured layers read back from the saved capture file', () => {
      const cap = readCapture(read(CAPTURE_COPY));
      return countFailures(
        captured,
        (l) => {
          const cl = cap.layers.find((x) => x.layer === l.captureLayer);
          if (cl) layers.push(capturedLayer(cl, spec.captureQueries));
          return cl !== undefined && capturedLayer(cl, spec.captureQueries).name === l.name;
        },
        (l) => l.name,
      );
    });
  }
  if (layers.length !== index.length) return;
  const arms = [...spec.arms, spec.controlArm];
  const pairs = layers.flatMap((L) => arms.map((a) => ({ L, a, key: `${L.name} ${a.name}` })));
  checks.try('caches: re-encoding the saved inputs gives the saved K/V bytes', () =>
    countFailures(
      pairs,
      ({ L, a }) =>
        sameBytes(read(cacheFile(L.name, a.name, 'k')), encodeHeads(a.k, L.k, L.kvHeads, L.tokens, L.headDim)) &&
        sameBytes(read(cacheFile(L.name, a.name, 'v')), encodeHeads(a.v, L.v, L.kvHeads, L.tokens, L.headDim)),
      (p) => p.key,
    ),
  );
  const rows: ArmResult[] = [];
  const ok = checks.try('results: every number recomputed from the saved files', () => {
    const refs = new Map(layers.map((L) => [L.name, referenceOutput(L)]));
    for (const { L, a } of pairs) rows.push(evaluateArm(L, a, read(cacheFile(L.name, a.name, 'k')), read(cacheFile(L.name, a.name, 'v')), refs.get(L.name)!));
    const saved = json<ArmResult[]>('results.json');
    if (saved.length !== rows.length) return [false, `${saved.length} saved rows, ${rows.length} recomputed`];
    return countFailures(
      rows.map((r, i) => [r, saved[i]!] as const),
      ([r, s]) => near(r, s, spec.tolerance),
      ([r]) => `${r.layer} ${r.arm}`,
    );
  });
  checks.try('results.csv agrees with results.json', () => [
    readFileSync(join(dir, 'results.csv'), 'utf8') === resultsCsv(json<ArmResult[]>('results.json')),
    'byte-identical rendering',
  ]);
  if (!ok) return;
  const again = new CheckList();
  bitAllocationChecks(spec, rows, again);
  for (const c of again.checks) checks.add(`recomputed ${c.name}`, c.pass, c.detail);
  const stats = spec.version >= 2 ? layers.map(layerStatistics) : undefined;
  if (stats)
    checks.try('statistics.json recomputed from the saved inputs', () => [
      near(json<LayerStatistics[]>(STATISTICS_FILE), JSON.parse(JSON.stringify(stats)), spec.tolerance),
      `${stats.length} layers`,
    ]);
  checks.try('summary.json and headline.md recomputed from the results', () => {
    const s = summarize(spec, rows);
    const lines = [...headline(spec, s), ...(stats ? statisticsLines(stats) : [])];
    return [near(json('summary.json'), s, spec.tolerance) && readFileSync(join(dir, 'headline.md'), 'utf8') === lines.join('\n') + '\n', `${s.length} arms`];
  });
  checks.try('checks.json: the run recorded the same verdicts', () => {
    const s = json<{ name: string; pass: boolean }[]>('checks.json');
    const got = s.map((c) => `${c.name}:${c.pass}`);
    return [
      again.checks.every((c) => got.includes(`${c.name}:${c.pass}`)) && s.every((c) => c.pass),
      `${s.filter((c) => c.pass).length}/${s.length} recorded PASS`,
    ];
  });
}
