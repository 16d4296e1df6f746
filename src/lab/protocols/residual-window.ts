// residual-window (seed 003) runner: 18 inputs x R in {0,16,64} = 54 comparisons, controls, byte audit, timing.
import { CheckList } from '../checks.js';
import { residualWindowChecks, timingSummary, timingsCsv, resultsCsv, type ControlRow, type Timing } from './residual-window-checks.js';
import { RunWriter } from '../manifest.js';
import { f32Bytes, sameF32 } from '../arrays.js';
import { packWindowCache, type WindowFormats } from '../window-cache.js';
import type { Protocol, RunOptions, RunResult } from '../protocol-types.js';
import {
  parseResidualWindow,
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
} from './residual-window-core.js';
import { auditResidualWindow } from './residual-window-audit.js';

function timeOnce(fn: () => void): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

/** Alternates which method runs first each rep, so warm-up and cache effects do not favor one. */
function timeComparison(formats: WindowFormats, cache: Uint8Array, q: Float32Array, input: string, window: number, reps: number): Timing[] {
  const out: Timing[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const order = rep % 2 === 0 ? (['blockwise', 'whole'] as const) : (['whole', 'blockwise'] as const);
    for (const method of order) {
      const ns = timeOnce(() => (method === 'blockwise' ? blockwiseOutput(formats, cache, q) : wholeDecodeOutput(formats, cache, q)));
      out.push({ input, window, method, rep, ns });
    }
  }
  return out;
}

export function runResidualWindow(spec: ResidualWindowSpec, protocolBytes: Uint8Array, out: string, opts: RunOptions = {}): RunResult {
  const w = new RunWriter(out, spec.name, protocolBytes);
  // The sabotage hook stores the bulk as f32 while everything else believes it is quantized.
  const formats: WindowFormats = opts.sabotageDisableQuantization
    ? { k: spec.formats.window, v: spec.formats.window, window: spec.formats.window }
    : spec.formats;
  const inputs = inputsOf(spec);
  const total = inputs.length * spec.windows.length;
  const rows: Comparison[] = [];
  const controls: ControlRow[] = [];
  const timings: Timing[] = [];
  let identical = 0;
  let done = 0;
  for (const x of inputs) {
    const a = makeInput(spec, x);
    w.write(inputPath(x), f32Bytes(a.q, a.k, a.v), 'input');
    controls.push({ input: x.id, f32RelL2: f32ControlError(spec, a, x.tokens) });
    for (const R of spec.windows) {
      const cache = packWindowCache(formats, a.k, a.v, x.tokens, spec.headDim, R);
      w.write(cachePath(x, R), cache, 'output');
      rows.push(compare(spec, formats, x, a, R, cache));
      if (sameF32(blockwiseOutput(formats, cache, a.q), wholeDecodeOutput(formats, cache, a.q))) identical++;
      timings.push(...timeComparison(formats, cache, a.q, x.id, R, spec.timing.reps));
      opts.progress?.(++done, total);
    }
  }
  const checks = new CheckList();
  residualWindowChecks(spec, rows, controls, checks);
  checks.add('block-wise and whole-decode outputs are identical', identical === total, `${identical}/${total}`);
  const summary = summarize(spec, rows);
  w.write('inputs/index.json', JSON.stringify({ layout: 'float32 LE: q[headDim], k[N, headDim], v[N, headDim]', inputs }, null, 2) + '\n', 'meta');
  w.writeJson('results.json', rows, 'output');
  w.write('results.csv', resultsCsv(rows), 'output');
  w.writeJson('controls.json', controls, 'output');
  w.writeJson('summary.json', summary, 'output');
  w.write('timings.csv', timingsCsv(timings), 'output');
  w.writeJson('timing-summary.json', timingSummary(timings, spec), 'output');
  w.writeJson('checks.json', checks.checks, 'output');
  const lines = headline(spec, summary);
  w.write('headline.md', lines.join('\n') + '\n', 'output');
  w.finish();
  return { dir: w.out, pass: checks.pass, checks, headline: lines };
}

export const residualWindow: Protocol = {
  name: 'residual-window',
  title: 'Residual windows: do recent tokens deserve higher precision? (seed 003)',
  file: 'protocols/residual-window.json',
  needsModel: false,
  parse: parseResidualWindow,
  run: (spec, bytes, out, opts) => runResidualWindow(spec as ResidualWindowSpec, bytes, out, opts),
  audit: (dir, spec, checks) => auditResidualWindow(dir, spec as ResidualWindowSpec, checks),
};
