// live-cache (seed 000 on a real run): per-layer attention error of the live cache, the equal-bytes arms,
// teacher-forced logits per text with prompt and decode rows apart, loops and first tokens vs f16.
import { FileFormatError } from '../../errors.js';
import { bootstrapCi } from '../bootstrap.js';
import { exactCell, fmt, intervalNote, pct, scoreDigests, withCi, type ArmScore, type EvalArm, type ModelShape, type ScoredOutcome } from '../eval.js';
import { obj, num, str, isNonNegInt, isPosInt, type Json } from '../spec.js';
import type { ReferenceMeta } from '../reference-logits.js';
import { kvBytes } from '../../cache/accounting.js';
import { CONTROL_ARM, parseModelEval, type ArmRecord, type ModelEvalSpec } from './model-runs.js';

export interface LiveArmSpec {
  readonly name: string;
  readonly k: string;
  readonly v: string;
  readonly note: string;
  /** An f16 window over the latest positions (a study fills a 2-bit arm up to the budget with it; default 0). */
  readonly window: number;
  readonly sinks: number;
  /** Counted at the budget arm's bytes: the equal-bytes check holds it to them. */
  readonly equalBytes: boolean;
}

export interface LiveCacheSpec extends ModelEvalSpec {
  readonly name: 'live-cache';
  readonly arms: readonly LiveArmSpec[];
  readonly shortTokens: number;
  readonly loops: { readonly tail: number; readonly maxPeriod: number };
  /** The arm whose real bytes the equalBytes arms must match (within equalBytesTolerance, relative). */
  readonly budgetArm?: string;
  readonly equalBytesTolerance: number;
}

export function parseLiveCache(json: unknown): LiveCacheSpec {
  const o = obj(json, 'protocol') as Json;
  if (str(o, 'name') !== 'live-cache') throw new FileFormatError('protocol', 'name must be live-cache');
  if (!Array.isArray(o.arms) || o.arms.length === 0) throw new FileFormatError('protocol', "field 'arms' must be a non-empty array");
  const l = obj(o.loops, 'loops');
  const spec: LiveCacheSpec = {
    name: 'live-cache',
    ...parseModelEval(o),
    arms: o.arms.map((x: unknown, i: number) => {
      const a = obj(x, `arms[${i}]`);
      return {
        name: str(a, 'name'),
        k: str(a, 'k'),
        v: str(a, 'v'),
        note: typeof a.note === 'string' ? a.note : '',
        window: a.window === undefined ? 0 : num(a, 'window', isNonNegInt),
        sinks: a.sinks === undefined ? 0 : num(a, 'sinks', isNonNegInt),
        equalBytes: a.equalBytes === true,
      };
    }),
    shortTokens: num(o, 'shortTokens', isPosInt),
    loops: { tail: num(l, 'tail', isPosInt), maxPeriod: num(l, 'maxPeriod', isPosInt) },
    ...(typeof o.budgetArm === 'string' && { budgetArm: o.budgetArm }),
    equalBytesTolerance: o.equalBytesTolerance === undefined ? 0 : num(o, 'equalBytesTolerance', (x) => x >= 0 && x < 1),
  };
  if (spec.budgetArm !== undefined && !spec.arms.some((a) => a.name === spec.budgetArm))
    throw new FileFormatError('protocol', `field 'budgetArm' (${spec.budgetArm}) names no arm`);
  if (spec.shortTokens > spec.horizon) throw new FileFormatError('protocol', `field 'shortTokens' (${spec.shortTokens}) exceeds the horizon ${spec.horizon}`);
  return spec;
}

/** Every layer quantized: no window or sinks unless the arm names them (per-channel staging stays exact, named). */
export function liveArms(spec: LiveCacheSpec): EvalArm[] {
  return spec.arms.map((a) => ({ name: a.name, policy: { k: a.k, v: a.v, window: a.window, sinks: a.sinks } }));
}

/** Real cache bytes per cell (one position of one layer, all kv heads, K + V) over an arm's runs: cache.nbytes. */
export function measuredBytesPerCell(r: ArmRecord, layers: number): number {
  return r.outcomes.reduce((s, o) => s + o.bytes, 0) / r.outcomes.reduce((s, o) => s + o.positions * layers, 0);
}

/** Equal bytes: every equalBytes arm's measured bytes per cell within the tolerance of the budget arm's. */
export function equalBytesRows(
  spec: LiveCacheSpec,
  records: readonly ArmRecord[],
  layers: number,
): { arm: string; bytes: number; budget: number; ok: boolean }[] {
  const b = records.find((r) => r.arm.name === spec.budgetArm);
  if (!b) return [];
  const budget = measuredBytesPerCell(b, layers);
  return spec.arms
    .filter((a) => a.equalBytes)
    .map((a) => {
      const bytes = measuredBytesPerCell(records.find((r) => r.arm.name === a.name)!, layers);
      return { arm: a.name, bytes, budget, ok: Math.abs(bytes - budget) <= spec.equalBytesTolerance * budget };
    });
}

/** The continuation ends in a loop: its last `tail` tokens repeat with some period <= maxPeriod. */
export function endsInLoop(tokens: readonly number[], tail: number, maxPeriod: number): boolean {
  if (tokens.length < tail) return false;
  const from = tokens.length - tail;
  for (let p = 1; p <= maxPeriod; p++) {
    let ok = true;
    for (let i = from + p; i < tokens.length && ok; i++) ok = tokens[i] === tokens[i - p];
    if (ok) return true;
  }
  return false;
}

/** Bulk bytes of one position in one layer (all kv heads, K + V), from the cache's own formula (packed heads, no
 * partial groups: measured at 4096 positions), so a head dim below a block reads as the cache stores it. */
function bytesPerCell(a: LiveArmSpec, kvHeads: number, headDim: number): number {
  return kvBytes({ ctx: 4096, layers: 1, kvHeads, headDim, policy: { k: a.k, v: a.v, window: 0, sinks: 0 } }).bulk / 4096;
}

function equalNote(spec: LiveCacheSpec): string {
  if (!spec.budgetArm) return '';
  return ` Equal bytes = measured B/cell within ${(100 * spec.equalBytesTolerance).toFixed(1)}% of ${spec.budgetArm}'s; an arm whose 2-bit pair costs less fills the difference with an f16 window of the latest positions (KIVI's full-precision residual), so the equality holds at this run's length, not per cell at every length.`;
}

const mean = (x: readonly number[]) => x.reduce((s, v) => s + v, 0) / x.length;
const cell = (x: readonly number[], d: number, scale = 100) => {
  const [lo, hi] = bootstrapCi(x);
  return `${(scale * mean(x)).toFixed(d)} [${(scale * lo).toFixed(d)}, ${(scale * hi).toFixed(d)}]`;
};

/** Scores of one prompt alone (the per-text table). */
function perPrompt(
  ref: ReferenceMeta,
  refDigests: readonly Float32Array[],
  topK: number,
  arm: EvalArm,
  runs: readonly ScoredOutcome[],
  shape: ModelShape,
  horizons: readonly number[],
  i: number,
): ArmScore {
  const one: ReferenceMeta = { ...ref, entries: [ref.entries[i]!] };
  return scoreDigests(one, [refDigests[i]!], topK, arm, [runs[i]!], shape, horizons);
}

export interface LiveTables {
  readonly perText: { prompt: string; arm: string; score: ArmScore }[];
}

/** Headline tables from the saved records and scores (run and audit both render them). */
export function liveHeadline(
  spec: LiveCacheSpec,
  scores: readonly ArmScore[],
  records: readonly ArmRecord[],
  perText: readonly { prompt: string; arm: string; score: ArmScore }[],
  shape: ModelShape,
): string[] {
  const by = new Map(scores.map((s) => [s.arm, s]));
  const arms = records.filter((r) => r.arm.name !== CONTROL_ARM);
  const control = records.find((r) => r.arm.name === CONTROL_ARM)!;
  const L = control.outcomes[0]?.attention?.length ?? 0;
  const layerErr = (r: ArmRecord, l: number) => r.outcomes.map((o) => o.attention!.find((a) => a.layer === l)!.vsF16RelRms);
  const out: string[] = [
    `Per-layer attention error: relative RMS (%) of the engine's attention output at the last decode step vs float64 attention over the appended K/V rounded to f16, on the live cache of each prompt's free run; mean over ${control.outcomes.length} prompts [bootstrap 95%]. Control f16: the same comparison for the f16 cache (f32 vs float64 arithmetic only).`,
    '',
    `| layer | f16 control | ${arms.map((r) => r.arm.name).join(' | ')} |`,
    `|---:|---:|${arms.map(() => '---:').join('|')}|`,
    ...Array.from({ length: L }, (_, l) => `| L${l} | ${cell(layerErr(control, l), 5)} | ${arms.map((r) => cell(layerErr(r, l), 3)).join(' | ')} |`),
    '',
    `Equal-bytes arms (bit-allocation's splits on the live model): bytes per cell = one position of one layer, all kv heads, K + V. "measured" = the cache's own real bytes (cache.nbytes at the end of each free run: bulk, scales, padding, f32 staging, window) / positions / layers; "bulk formula" = the bulk format alone at this model (${shape.kvHeads} kv heads x ${shape.headDim}) and at seed 000's cell (2 x 256).${equalNote(spec)}`,
    '',
    `| arm | K | V | window | equal bytes | B/cell measured | bulk formula B/cell here | bulk formula B/cell seed 000 | attention relRms (mean over layers) | KL prompt | KL decode | top-1 prompt | top-1 decode | ${spec.horizons.map((h) => `exact@${h}`).join(' | ')} | bulk bits | eff. bits | staged |`,
    `|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|${spec.horizons.map(() => '---:').join('|')}|---:|---:|---:|`,
    ...spec.arms.map((a) => {
      const s = by.get(a.name)!;
      const r = records.find((x) => x.arm.name === a.name)!;
      const perLayer = r.outcomes.map((o) => mean(o.attention!.map((x) => x.vsF16RelRms)));
      const eq = a.name === spec.budgetArm ? 'budget' : a.equalBytes ? 'yes' : 'no';
      return `| ${a.name} | ${a.k} | ${a.v} | ${a.window ? `${a.window} + ${a.sinks} sinks` : '0'} | ${eq} | ${measuredBytesPerCell(r, shape.layers).toFixed(1)} | ${bytesPerCell(a, shape.kvHeads, shape.headDim)} | ${bytesPerCell(a, 2, 256)} | ${cell(perLayer, 3)}% | ${withCi(s, 'klPrompt', s.klPrompt, 4)} | ${withCi(s, 'klDecode', s.klDecode, 4)} | ${pct(s, 'top1Prompt', s.top1Prompt, 1)} | ${pct(s, 'top1Decode', s.top1Decode, 1)} | ${spec.horizons.map((h) => exactCell(s, h)).join(' | ')} | ${fmt(s.bulkBits, 2)} | ${s.effectiveBits.toFixed(2)} | ${fmt(s.stagedPositions, 0)} |`;
    }),
    '',
    'Teacher-forced logits per text vs the f16 cache: top-1 agreement / mean KL over the prompt rows (p) and the decode rows (d).',
    '',
    `| text | ${spec.arms.map((a) => a.name).join(' | ')} |`,
    `|---|${spec.arms.map(() => '---').join('|')}|`,
    ...[...new Set(perText.map((x) => x.prompt))].map(
      (p) =>
        `| ${p} | ${spec.arms
          .map((a) => {
            const s = perText.find((x) => x.prompt === p && x.arm === a.name)!.score;
            return `p ${(100 * s.top1Prompt).toFixed(1)}% / ${s.klPrompt.toFixed(3)}, d ${s.top1Decode === null ? 'n/a' : `${(100 * s.top1Decode).toFixed(1)}% / ${s.klDecode!.toFixed(3)}`}`;
          })
          .join(' | ')} |`,
    ),
    '',
    `Behaviour on these prompts: loops = continuations whose last ${spec.loops.tail} tokens repeat with a period <= ${spec.loops.maxPeriod}; first ${spec.shortTokens} = the first ${spec.shortTokens} greedy tokens equal f16's (a study's short-answer probe asks real questions).`,
    '',
    `| arm | loops | first ${spec.shortTokens} as f16 | decode tok/s |`,
    '|---|---:|---:|---:|',
    ...records.map((r) => {
      const loops = r.outcomes.filter((o) => endsInLoop(o.continuation, spec.loops.tail, spec.loops.maxPeriod)).length;
      const short = r.outcomes.filter(
        (o, i) => o.continuation.slice(0, spec.shortTokens).join() === control.outcomes[i]!.continuation.slice(0, spec.shortTokens).join(),
      ).length;
      return `| ${r.arm.name} | ${loops}/${r.outcomes.length} | ${short}/${r.outcomes.length} | ${by.get(r.arm.name)!.decodeTps.toFixed(0)} |`;
    }),
    '',
    ...intervalNote(scores),
  ];
  return out;
}

export { perPrompt };
