// window-sweep (seed 000): exact recent window 0/128/512/1024 (scaled to the model's context) x schemes;
// KL, top-1, exact-match and tokens/s vs the f16 cache.
import { schemePolicy } from '../../cache/schemes.js';
import { FileFormatError } from '../../errors.js';
import { exactCell, fmt, intervalNote, klLabel, pct, withCi, type ArmScore, type EvalArm } from '../eval.js';
import { obj, num, nums, str, isNonNegInt, type Json } from '../spec.js';
import { parseModelEval, schemeList, type ModelEvalSpec } from './model-runs.js';

export interface WindowSweepSpec extends ModelEvalSpec {
  readonly name: 'window-sweep';
  readonly schemes: readonly string[];
  /** Seed 000's windows (positions at its 5K-200K contexts). */
  readonly windows: readonly number[];
  /** Multiplier bringing those windows to this protocol's context (frozen, stated in the table). */
  readonly windowScale: number;
  /** Exact sink positions kept whenever the window is on (seed 000's overlay covers sinks + window). */
  readonly sinksWithWindow: number;
}

export function parseWindowSweep(json: unknown): WindowSweepSpec {
  const o = obj(json, 'protocol') as Json;
  if (str(o, 'name') !== 'window-sweep') throw new FileFormatError('protocol', 'name must be window-sweep');
  return {
    name: 'window-sweep',
    ...parseModelEval(o),
    schemes: schemeList(o, 'schemes'),
    windows: nums(o, 'windows', isNonNegInt),
    windowScale: num(o, 'windowScale', (x) => x > 0 && x <= 1),
    sinksWithWindow: num(o, 'sinksWithWindow', isNonNegInt),
  };
}

export interface SweepArm extends EvalArm {
  readonly scheme: string;
  readonly window: number;
  readonly windowScaled: number;
  readonly sinks: number;
}

export function sweepArms(spec: WindowSweepSpec): SweepArm[] {
  return spec.schemes.flatMap((scheme) =>
    spec.windows.map((window) => {
      const windowScaled = Math.round(window * spec.windowScale);
      const sinks = windowScaled > 0 ? spec.sinksWithWindow : 0;
      return { name: `${scheme}/w${windowScaled}`, scheme, window, windowScaled, sinks, policy: schemePolicy(scheme, { window: windowScaled, sinks }) };
    }),
  );
}

export function sweepHeadline(spec: WindowSweepSpec, scores: readonly ArmScore[]): string[] {
  const arms = sweepArms(spec);
  const by = new Map(scores.map((s) => [s.arm, s]));
  const h = spec.horizons;
  return [
    `| scheme | window (seed 000) | window here (x${spec.windowScale}) | sinks | ${klLabel(scores, 'KL prompt')} | ${klLabel(scores, 'KL decode')} | top-1 prompt | top-1 decode | ${h.map((x) => `exact@${x}`).join(' | ')} | bulk bits | eff. bits | staged | decode tok/s |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|${h.map(() => '---:').join('|')}|---:|---:|---:|---:|`,
    ...arms.map((a) => {
      const s = by.get(a.name)!;
      return `| ${a.scheme} | ${a.window} | ${a.windowScaled} | ${a.sinks} | ${withCi(s, 'klPrompt', s.klPrompt, 5)} | ${withCi(s, 'klDecode', s.klDecode, 5)} | ${pct(s, 'top1Prompt', s.top1Prompt, 1)} | ${pct(s, 'top1Decode', s.top1Decode, 1)} | ${h.map((x) => exactCell(s, x)).join(' | ')} | ${fmt(s.bulkBits, 2)} | ${fmt(s.effectiveBits, 2)} | ${fmt(s.stagedPositions, 0)} | ${s.decodeTps.toFixed(0)} |`;
    }),
    '',
    ...intervalNote(scores),
  ];
}
