// One cross-check case: a model file, a prompt, a cache type and llama.cpp settings; both engines run the
// same step protocol and the result is judged against named tolerances (measured, see below).
import { writeGguf } from '../../src/gguf/writer.js';
import { loadModel, type Model } from '../../src/model/model.js';
import { diffRuns, formatDiff, type RunDiff, type StepRun } from './compare.js';
import { kvpackRun } from './kvpack.js';
import type { CacheType, LlamaCpp } from './llamacpp.js';
import { crossModel, crossPrompt, type CrossArch, type CrossWeightType } from './models.js';

/**
 * f16 cache: llama.cpp rounds Q (and, without flash attention, the softmax weights; with it, the V sum)
 * to f16 where we keep f32. Measured over 4 archs x f32/f16 weights, 48 + 160 steps, max |diff| / max
 * |logit| and per-step KL max: 1.5e-3 / 1.7e-6 with flash attention off, 4.1e-3 / 1.2e-5 with it on.
 * Tolerances: 2.5-6x.
 */
export const F16_TOL = {
  off: { maxRel: 5e-3, klMax: 1e-5 },
  on: { maxRel: 1e-2, klMax: 5e-5 },
} as const;
/**
 * q8_0 / q4_0 caches: same blocks on both sides, but llama.cpp also quantizes Q to q8_0 for the K dot
 * product. Measured KL mean <= 5.2e-5 (q8_0) and <= 9.3e-4 (q4_0), top-1 >= 93.1% (48 + 160 steps). Tolerances: ~3x.
 */
export const QUANT_KL_MEAN: Readonly<Record<Exclude<CacheType, 'f16'>, number>> = { q8_0: 2e-4, q4_0: 3e-3 };
export const QUANT_TOP1_MIN = 0.9;
/**
 * Same format, not just same size: for q4_0 llama.cpp-vs-ours must sit far below ours-f16-vs-ours-q4_0
 * (measured ratio <= 0.057; llama.cpp's Hadamard-rotated cache, a different quantization, gave ~1.5).
 */
export const Q4_SAME_FORMAT_RATIO = 0.25;

export interface CaseSpec {
  arch: CrossArch;
  weightType: CrossWeightType;
  cache: CacheType;
  flashAttention: boolean;
  promptLength: number;
  steps: number;
}

export interface CaseResult {
  spec: CaseSpec;
  diff: RunDiff;
  /** q8_0/q4_0: KL(ours f16 || ours quantized) on the same tokens, the size of the format's own error. */
  formatKl?: number;
  /** f16 when the free-running tokens split: the step and llama.cpp's top-2 margin there. */
  nearTie?: { step: number; margin: number };
  failures: string[];
}

export function caseName(s: CaseSpec): string {
  return `${s.arch} ${s.weightType} weights, ${s.cache} cache, fa ${s.flashAttention ? 'on' : 'off'}, prompt ${s.promptLength} + ${s.steps} steps`;
}

/**
 * f16: both engines decode greedily on their own, tokens must be identical. Quantized: our engine is fed
 * llama.cpp's greedy tokens (teacher forcing), so each step's logits are compared on the same history.
 */
export async function runCase(lc: LlamaCpp, path: string, spec: CaseSpec): Promise<CaseResult> {
  writeGguf(path, crossModel(spec.arch, { weightType: spec.weightType }));
  const ours = loadModel(path);
  const theirs = await lc.loadModel(path);
  try {
    const prompt = crossPrompt(spec.arch, spec.promptLength);
    const ref = await lc.run(theirs, prompt, spec.steps, { cache: spec.cache, flashAttention: spec.flashAttention });
    if (spec.cache === 'f16') return { spec, ...compareF16(ref, ours, prompt, spec.steps, F16_TOL[spec.flashAttention ? 'on' : 'off']) };
    const mine = kvpackRun(ours, prompt, spec.steps, spec.cache, ref.tokens);
    const exact = kvpackRun(ours, prompt, spec.steps, 'f16', ref.tokens);
    const diff = diffRuns(ref, mine);
    const formatKl = diffRuns(exact, mine).klMean;
    return { spec, diff, formatKl, failures: judgeQuant(spec.cache, diff, formatKl) };
  } finally {
    await theirs.dispose();
  }
}

/**
 * Greedy tokens must be identical. When they split, our engine is re-run on llama.cpp's tokens: the split
 * is accepted only as a near-tie (its margin <= 2 x the max logit difference, and no other step's argmax
 * differs beyond that), and the logit tolerances then hold over the whole run.
 */
export function compareF16(
  ref: StepRun,
  ours: Model,
  prompt: readonly number[],
  steps: number,
  tol: { maxRel: number; klMax: number },
): Omit<CaseResult, 'spec'> {
  const free = diffRuns(ref, kvpackRun(ours, prompt, steps, 'f16'));
  const failures: string[] = [];
  let diff = free;
  let nearTie: CaseResult['nearTie'];
  if (free.sameTokens < free.steps) {
    diff = diffRuns(ref, kvpackRun(ours, prompt, steps, 'f16', ref.tokens));
    nearTie = { step: free.sameTokens, margin: free.divergeMargin };
    if (free.divergeMargin > 2 * diff.maxAbs)
      failures.push(`greedy tokens split at step ${free.sameTokens} with a margin of ${free.divergeMargin.toFixed(4)} (not a near-tie)`);
  }
  if (diff.unexplainedFlips > 0) failures.push(`${diff.unexplainedFlips} steps pick another token beyond a near-tie`);
  if (diff.maxRel > tol.maxRel) failures.push(`max relative logit difference ${diff.maxRel.toExponential(2)} > ${tol.maxRel}`);
  if (diff.klMax > tol.klMax) failures.push(`KL max ${diff.klMax.toExponential(2)} > ${tol.klMax}`);
  return { diff, nearTie, failures };
}

function judgeQuant(cache: Exclude<CacheType, 'f16'>, d: RunDiff, formatKl: number): string[] {
  const f: string[] = [];
  if (d.klMean > QUANT_KL_MEAN[cache]) f.push(`KL mean ${d.klMean.toExponential(2)} > ${QUANT_KL_MEAN[cache]}`);
  if (d.top1 < QUANT_TOP1_MIN) f.push(`top-1 agreement ${(100 * d.top1).toFixed(1)}% < ${100 * QUANT_TOP1_MIN}%`);
  if (cache === 'q4_0' && d.klMean > Q4_SAME_FORMAT_RATIO * formatKl) {
    f.push(`KL to llama.cpp ${d.klMean.toExponential(2)} is not << the q4_0 error itself ${formatKl.toExponential(2)}: different quantization?`);
  }
  return f;
}

export function formatResult(r: CaseResult): string {
  let extra = r.formatKl === undefined ? '' : `, format KL ${r.formatKl.toExponential(2)}`;
  if (r.nearTie)
    extra += `; free-running tokens split at step ${r.nearTie.step} on a near-tie (margin ${r.nearTie.margin.toFixed(4)}), logits compared on llama.cpp's tokens`;
  return `${r.failures.length ? 'FAIL' : 'PASS'} ${caseName(r.spec)}: ${formatDiff(r.diff)}${extra}${r.failures.length ? ` -- ${r.failures.join('; ')}` : ''}`;
}
