// bit-allocation (seed 000) runner: equal-bytes K/V bit splits, attention relRms per layer, negative controls.
import { readFileSync } from 'node:fs';
import { CheckList } from '../checks.js';
import { RunWriter } from '../manifest.js';
import { f32Bytes } from '../arrays.js';
import { readCapture } from '../capture.js';
import type { Protocol, RunOptions, RunResult } from '../protocol-types.js';
import { bitAllocationChecks } from './bit-allocation-checks.js';
import { auditBitAllocation } from './bit-allocation-audit.js';
import { layerStatistics, STATISTICS_FILE, statisticsLines } from './bit-allocation-stats.js';
import {
  parseBitAllocation,
  syntheticLayer,
  capturedLayer,
  encodeHeads,
  referenceOutput,
  evaluateArm,
  summarize,
  headline,
  CAPTURE_COPY,
  layerFile,
  cacheFile,
  resultsCsv,
  type BitAllocationSpec,
  type LayerInput,
  type ArmResult,
  type LayerIndex,
} from './bit-allocation-core.js';

export function runBitAllocation(spec: BitAllocationSpec, protocolBytes: Uint8Array, out: string, opts: RunOptions = {}): RunResult {
  const w = new RunWriter(out, spec.name, protocolBytes);
  const layers: LayerInput[] = spec.synthetic.layers.map((_, i) => syntheticLayer(spec, i));
  const index: LayerIndex[] = layers.map((l) => ({ name: l.name, source: l.source, file: layerFile(l.name) }));
  for (const l of layers) w.write(layerFile(l.name), f32Bytes(l.q, l.k, l.v), 'input');
  if (opts.capture) {
    // The capture is copied in whole and hashed; the audit re-reads layers from the copy.
    const bytes = new Uint8Array(readFileSync(opts.capture));
    w.write(CAPTURE_COPY, bytes, 'input');
    for (const cl of readCapture(bytes).layers) {
      const l = capturedLayer(cl, spec.captureQueries);
      layers.push(l);
      index.push({ name: l.name, source: 'capture', file: CAPTURE_COPY, captureLayer: cl.layer });
    }
  }
  const arms = [...spec.arms, spec.controlArm];
  const rows: ArmResult[] = [];
  let done = 0;
  for (const L of layers) {
    const ref = referenceOutput(L);
    for (const a of arms) {
      // The sabotage hook stores f32 while every record still names the arm's formats.
      const stored = opts.sabotageDisableQuantization ? { k: 'f32', v: 'f32' } : a;
      const kb = encodeHeads(stored.k, L.k, L.kvHeads, L.tokens, L.headDim);
      const vb = encodeHeads(stored.v, L.v, L.kvHeads, L.tokens, L.headDim);
      w.write(cacheFile(L.name, a.name, 'k'), kb, 'output');
      w.write(cacheFile(L.name, a.name, 'v'), vb, 'output');
      rows.push(evaluateArm(L, a, kb, vb, ref, stored));
      opts.progress?.(++done, layers.length * arms.length);
    }
  }
  const checks = new CheckList();
  bitAllocationChecks(spec, rows, checks);
  const summary = summarize(spec, rows);
  // v2: the statistics that say how close each synthetic layer is to the captured ones, next to the errors.
  const stats = spec.version >= 2 ? layers.map(layerStatistics) : undefined;
  const lines = [...headline(spec, summary), ...(stats ? statisticsLines(stats) : [])];
  if (stats) w.writeJson(STATISTICS_FILE, stats, 'output');
  w.writeJson(
    'inputs/index.json',
    { layout: 'float32 LE: q[queries, heads, headDim], k[kvHeads, tokens, headDim], v[kvHeads, tokens, headDim]', layers: index },
    'meta',
  );
  w.writeJson('results.json', rows, 'output');
  w.write('results.csv', resultsCsv(rows), 'output');
  w.writeJson('summary.json', summary, 'output');
  w.writeJson('checks.json', checks.checks, 'output');
  w.write('headline.md', lines.join('\n') + '\n', 'output');
  w.finish();
  return { dir: w.out, pass: checks.pass, checks, headline: lines };
}

export const bitAllocation: Protocol = {
  name: 'bit-allocation',
  title: 'Where do the bits belong at equal bytes: K or V? (seed 000)',
  file: 'protocols/bit-allocation.json',
  needsModel: false,
  parse: parseBitAllocation,
  run: (spec, bytes, out, opts) => runBitAllocation(spec as BitAllocationSpec, bytes, out, opts),
  audit: (dir, spec, checks) => auditBitAllocation(dir, spec as BitAllocationSpec, checks),
};
