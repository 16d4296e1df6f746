// needles (seed 000): token-id "facts" planted at 25/50/90% depth of a long context; after a cue (the fact's
// first tokens) the greedy continuation must reproduce the rest exactly. With an id-only model the facts are
// random ids and the filler is the model's own greedy text; a tiny model may recall nothing: the machinery
// (planting, cue, exact check, every scheme against the f16 cache) is what this tests there.
import { schemePolicy } from '../../cache/schemes.js';
import { FileFormatError } from '../../errors.js';
import type { Model } from '../../model/model.js';
import { Prng } from '../../numeric/prng.js';
import { klLabel, type ArmScore, type EvalArm } from '../eval.js';
import { defaultPrompts } from '../prompts.js';
import type { EvalPrompt, ReferenceSet } from '../reference-logits.js';
import { obj, num, nums, str, isNonNegInt, isPosInt, type Json } from '../spec.js';
import type { ArmRecord, ModelEvalSpec } from './model-runs.js';
import { parseModelEval } from './model-runs.js';

export interface NeedlesSpec extends ModelEvalSpec {
  readonly name: 'needles';
  readonly arms: readonly { name: string; scheme: string; window: number; sinks: number }[];
  /** Context length before the cue (filler + needle). */
  readonly context: number;
  readonly depths: readonly number[];
  /** Needle tokens; the first `cue` are repeated after the context, the rest is the answer (= horizon). */
  readonly needleTokens: number;
  readonly cue: number;
  readonly needlesPerDepth: number;
  readonly seed: number;
}

export function parseNeedles(json: unknown): NeedlesSpec {
  const o = obj(json, 'protocol') as Json;
  if (str(o, 'name') !== 'needles') throw new FileFormatError('protocol', 'name must be needles');
  if (!Array.isArray(o.arms) || o.arms.length === 0) throw new FileFormatError('protocol', "field 'arms' must be a non-empty array");
  const spec: NeedlesSpec = {
    name: 'needles',
    ...parseModelEval(o),
    arms: o.arms.map((x: unknown, i: number) => {
      const a = obj(x, `arms[${i}]`);
      return { name: str(a, 'name'), scheme: str(a, 'scheme'), window: num(a, 'window', isNonNegInt), sinks: num(a, 'sinks', isNonNegInt) };
    }),
    context: num(o, 'context', isPosInt),
    depths: nums(o, 'depths', (x) => x >= 0 && x < 1),
    needleTokens: num(o, 'needleTokens', isPosInt),
    cue: num(o, 'cue', isPosInt),
    needlesPerDepth: num(o, 'needlesPerDepth', isPosInt),
    seed: num(o, 'seed', isNonNegInt),
  };
  if (spec.cue >= spec.needleTokens || spec.horizon !== spec.needleTokens - spec.cue) throw new FileFormatError('protocol', 'horizon must equal needleTokens - cue (the answer), with cue < needleTokens');
  return spec;
}

export interface Needle {
  readonly prompt: string;
  readonly depth: number;
  /** Index in the context where the needle starts. */
  readonly at: number;
  readonly tokens: number[];
}

/** Filler from the model's own greedy text, a random needle spliced in at each depth, the cue appended. */
export function plantNeedles(model: Model, spec: NeedlesSpec): { prompts: EvalPrompt[]; needles: Needle[] } {
  const rng = new Prng(spec.seed);
  const prompts: EvalPrompt[] = [];
  const needles: Needle[] = [];
  spec.depths.forEach((depth, d) => {
    for (let j = 0; j < spec.needlesPerDepth; j++) {
      const filler = defaultPrompts(model, { count: 1, length: spec.context - spec.needleTokens, seedTokens: 8, seed: spec.seed * 1000 + d * 100 + j })[0]!.tokens;
      const tokens = Array.from({ length: spec.needleTokens }, () => 3 + rng.int(model.nVocab - 3));
      const at = Math.max(1, Math.round(depth * spec.context));
      const ctx = [...filler.slice(0, at), ...tokens, ...filler.slice(at)];
      const id = `d${Math.round(depth * 100)}-${j}`;
      prompts.push({ id, tokens: [...ctx, ...tokens.slice(0, spec.cue)] });
      needles.push({ prompt: id, depth, at, tokens });
    }
  });
  return { prompts, needles };
}

export function needleArms(spec: NeedlesSpec): EvalArm[] {
  return spec.arms.map((a) => ({ name: a.name, policy: schemePolicy(a.scheme, { window: a.window, sinks: a.sinks }) }));
}

/** Per arm and depth: needles recalled exactly (the greedy continuation after the cue equals the answer). */
export function recallTable(spec: NeedlesSpec, needles: readonly Needle[], records: readonly ArmRecord[], ref: ReferenceSet): { arm: string; recalled: Record<string, number>; total: number }[] {
  const rows = [{ arm: 'f16 reference', outcomes: ref.entries.map((e) => ({ prompt: e.prompt.id, continuation: e.continuation })) }, ...records.map((r) => ({ arm: r.arm.name, outcomes: r.outcomes }))];
  return rows.map((r) => {
    const recalled: Record<string, number> = {};
    for (const depth of spec.depths) recalled[String(depth)] = 0;
    for (const n of needles) {
      const got = r.outcomes.find((o) => o.prompt === n.prompt)!.continuation;
      if (got.join() === n.tokens.slice(spec.cue).join()) recalled[String(n.depth)]! += 1;
    }
    return { arm: r.arm, recalled, total: needles.length };
  });
}

export function needlesHeadline(spec: NeedlesSpec, needles: readonly Needle[], records: readonly ArmRecord[], ref: ReferenceSet, scores: readonly ArmScore[]): string[] {
  const by = new Map(scores.map((s) => [s.arm, s]));
  const per = spec.needlesPerDepth;
  return [
    `| arm | ${spec.depths.map((d) => `recalled @${Math.round(d * 100)}%`).join(' | ')} | exact vs f16 | ${klLabel(scores, 'KL mean (context)')} | eff. bits |`,
    `|---|${spec.depths.map(() => '---:').join('|')}|---:|---:|---:|`,
    ...recallTable(spec, needles, records, ref).map((r) => {
      const s = by.get(r.arm);
      const h = spec.horizons[spec.horizons.length - 1]!;
      return `| ${r.arm} | ${spec.depths.map((d) => `${r.recalled[String(d)]}/${per}`).join(' | ')} | ${s ? `${(100 * s.exactAt[h]!).toFixed(0)}%` : '-'} | ${s ? s.kl.toFixed(5) : '-'} | ${s ? s.effectiveBits.toFixed(2) : '16.00'} |`;
    }),
  ];
}
