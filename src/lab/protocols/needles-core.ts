// needles (seed 000): facts planted at 25/50/90% depth of a ~450-token context, recalled by copying after a
// cue. With a tokenizer the fact is a made-up character name planted in a story ("She had a pet frog named
// Zorba. ..."); the cue ends where the name must come next ('She said, "Come here,') and the greedy
// continuation must reproduce the name's tokens exactly (and, as partial recall, up to its first letter
// token). Id-only models get random token ids spliced into their own greedy text, the cue being the ids'
// first tokens. Every recall is reported beside the f16 reference's own, so a 0 is read as the model's limit.
import { schemePolicy } from '../../cache/schemes.js';
import { ArgumentError, FileFormatError } from '../../errors.js';
import type { Model } from '../../model/model.js';
import type { Tokenizer } from '../../model/tokenizer/index.js';
import { Prng } from '../../numeric/prng.js';
import { klLabel, type ArmScore, type EvalArm } from '../eval.js';
import { defaultPrompts } from '../prompts.js';
import type { EvalPrompt, ReferenceMeta } from '../reference-logits.js';
import { obj, num, nums, str, isNonNegInt, isPosInt, type Json } from '../spec.js';
import type { ArmRecord, ModelEvalSpec } from './model-runs.js';
import { parseModelEval } from './model-runs.js';

/** Text needles: a name-free story, made-up names, the sentence that plants one, the cue that calls it. */
export interface TextNeedles {
  readonly story: string;
  readonly names: readonly string[];
  /** `{name}` stands for the name. */
  readonly plant: string;
  readonly cue: string;
  /** Text after the name when the answer is tokenized (its tokens are not part of the answer). */
  readonly after: string;
}

/** Id needles (models without a tokenizer). */
export interface IdNeedles {
  readonly needleTokens: number;
  /** Needle tokens repeated after the context; the rest is the answer. */
  readonly cue: number;
  readonly needlesPerDepth: number;
  readonly seed: number;
}

export interface NeedlesSpec extends ModelEvalSpec {
  readonly name: 'needles';
  readonly arms: readonly { name: string; scheme: string; window: number; sinks: number }[];
  /** Prompt length before the cue, at most (text: the story is cut to fit; ids: exactly). */
  readonly context: number;
  readonly depths: readonly number[];
  readonly text: TextNeedles;
  readonly ids: IdNeedles;
  /** Depth tolerance of the planting check: |needle start / context - depth|. */
  readonly depthTolerance: number;
}

export function parseNeedles(json: unknown): NeedlesSpec {
  const o = obj(json, 'protocol') as Json;
  if (str(o, 'name') !== 'needles') throw new FileFormatError('protocol', 'name must be needles');
  if (!Array.isArray(o.arms) || o.arms.length === 0) throw new FileFormatError('protocol', "field 'arms' must be a non-empty array");
  const t = obj(o.text, 'text');
  const i = obj(o.ids, 'ids');
  if (!Array.isArray(t.names) || t.names.length === 0 || !t.names.every((n) => typeof n === 'string' && /^\p{L}+$/u.test(n)))
    throw new FileFormatError('protocol', "field 'text.names' must be a non-empty array of single words");
  const spec: NeedlesSpec = {
    name: 'needles',
    ...parseModelEval(o),
    arms: o.arms.map((x: unknown, k: number) => {
      const a = obj(x, `arms[${k}]`);
      return { name: str(a, 'name'), scheme: str(a, 'scheme'), window: num(a, 'window', isNonNegInt), sinks: num(a, 'sinks', isNonNegInt) };
    }),
    context: num(o, 'context', isPosInt),
    depths: nums(o, 'depths', (x) => x > 0 && x < 1),
    text: { story: str(t, 'story'), names: t.names as string[], plant: str(t, 'plant'), cue: str(t, 'cue'), after: str(t, 'after') },
    ids: {
      needleTokens: num(i, 'needleTokens', isPosInt),
      cue: num(i, 'cue', isPosInt),
      needlesPerDepth: num(i, 'needlesPerDepth', isPosInt),
      seed: num(i, 'seed', isNonNegInt),
    },
    depthTolerance: num(o, 'depthTolerance', (x) => x > 0 && x < 1),
  };
  if (!spec.text.plant.includes('{name}')) throw new FileFormatError('protocol', "field 'text.plant' must contain {name}");
  if (spec.ids.cue >= spec.ids.needleTokens || spec.horizon < spec.ids.needleTokens - spec.ids.cue)
    throw new FileFormatError('protocol', 'ids: cue < needleTokens and horizon >= needleTokens - cue (the answer)');
  return spec;
}

export interface Needle {
  readonly prompt: string;
  readonly depth: number;
  /** Token index in the prompt where the planted text starts. */
  readonly at: number;
  /** Prompt length (the cue included). */
  readonly length: number;
  /** The made-up name (text needles). */
  readonly name?: string;
  /** What the greedy continuation must start with. */
  readonly answer: number[];
  /** Index in `answer` of its first token holding a letter: partial recall is answer[0..onset] reproduced. */
  readonly onset: number;
}

/** Prompt text with the plant before sentence `cut` of `sentences`, then the cue on a new line. */
function needleText(sentences: readonly string[], cut: number, plant: string, cue: string): { before: string; text: string } {
  const before = sentences.slice(0, cut).join('');
  const rest = sentences.slice(cut).join('').trimEnd();
  return { before, text: `${before}${plant}${rest ? ' ' + rest : ''}\n${cue}` };
}

/** Sentences with their trailing space, never split inside a quotation (a plant goes between sentences). */
export function storySentences(story: string): string[] {
  const out: string[] = [];
  let open = '';
  for (const piece of story.match(/[^.!?]+[.!?]+"?\s*/g) ?? []) {
    open += piece;
    if ((open.match(/"/g)?.length ?? 0) % 2 === 0) {
      out.push(open);
      open = '';
    }
  }
  if (open) out.push(open);
  return out;
}

const hasLetter = (tok: Tokenizer, id: number) => /\p{L}/u.test(tok.decode([id]));

/**
 * Encodes prompt + ' ' + name + after as one text (the tokens the model would see) and splits it where the
 * name begins: the prompt is every token wholly before the name's first letter, the answer the tokens up to
 * the name's last letter.
 */
function splitAtName(tok: Tokenizer, promptText: string, name: string, after: string): { prompt: number[]; answer: number[] } {
  const ids = tok.encode(`${promptText} ${name}${after}`);
  const full = tok.decode(ids);
  const start = full.lastIndexOf(name);
  if (start < 0) throw new ArgumentError(`needles: '${name}' does not survive a tokenizer round trip`);
  const end = start + name.length;
  const upTo = (n: number) => tok.decode(ids.slice(0, n)).length;
  let p = ids.length;
  while (p > 0 && upTo(p) > start) p--;
  let q = p;
  while (q < ids.length && upTo(q) < end) q++;
  return { prompt: ids.slice(0, p), answer: ids.slice(p, q) };
}

/** Text needles: each name at each depth of the story (cut to fit `context` tokens with the longest name). */
function plantText(tok: Tokenizer, spec: NeedlesSpec): { prompts: EvalPrompt[]; needles: Needle[] } {
  const t = spec.text;
  let sentences = storySentences(t.story);
  const longest = [...t.names].sort((a, b) => b.length - a.length)[0]!;
  const plantOf = (name: string) => t.plant.replaceAll('{name}', name);
  const fits = (s: readonly string[]) => tok.encode(needleText(s, s.length >> 1, plantOf(longest), t.cue).text).length <= spec.context;
  while (sentences.length > 2 && !fits(sentences)) sentences = sentences.slice(0, -1);
  if (!fits(sentences)) throw new ArgumentError(`needles: context ${spec.context} is too short for the story's first sentences, the plant and the cue`);
  // Token offset of each sentence start (and of the cue): the plant goes at the one nearest the depth.
  const starts = [...sentences.keys(), sentences.length].map((k) => (k === 0 ? 1 : tok.encode(sentences.slice(0, k).join('')).length));
  const prompts: EvalPrompt[] = [];
  const needles: Needle[] = [];
  for (const depth of spec.depths) {
    for (const name of t.names) {
      const total = tok.encode(needleText(sentences, 0, plantOf(name), t.cue).text).length;
      let cut = 0;
      for (let k = 1; k <= sentences.length; k++) if (Math.abs(starts[k]! - depth * total) < Math.abs(starts[cut]! - depth * total)) cut = k;
      const { before, text } = needleText(sentences, cut, plantOf(name), t.cue);
      const { prompt, answer } = splitAtName(tok, text.trimEnd(), name, t.after);
      const onset = answer.findIndex((id) => hasLetter(tok, id));
      if (onset < 0 || !tok.decode(answer).trim().startsWith(name)) throw new ArgumentError(`needles: the answer tokens of '${name}' do not spell it`);
      if (answer.length > spec.horizon) throw new ArgumentError(`needles: '${name}' is ${answer.length} tokens, more than the horizon ${spec.horizon}`);
      const id = `d${Math.round(depth * 100)}-${name}`;
      prompts.push({ id, tokens: prompt });
      needles.push({ prompt: id, depth, at: cut === 0 ? 1 : tok.encode(before).length, length: prompt.length, name, answer, onset });
    }
  }
  return { prompts, needles };
}

/** Id needles: random ids spliced into the model's own greedy text at each depth; the cue is their start. */
function plantIds(model: Model, spec: NeedlesSpec): { prompts: EvalPrompt[]; needles: Needle[] } {
  const s = spec.ids;
  const rng = new Prng(s.seed);
  const prompts: EvalPrompt[] = [];
  const needles: Needle[] = [];
  spec.depths.forEach((depth, d) => {
    for (let j = 0; j < s.needlesPerDepth; j++) {
      const filler = defaultPrompts(model, {
        count: 1,
        length: spec.context - s.needleTokens,
        seedTokens: 8,
        seed: s.seed * 1000 + d * 100 + j,
        source: 'ids',
      })[0]!.tokens;
      const tokens = Array.from({ length: s.needleTokens }, () => 3 + rng.int(model.nVocab - 3));
      const at = Math.min(filler.length, Math.max(1, Math.round(depth * spec.context)));
      const ctx = [...filler.slice(0, at), ...tokens, ...filler.slice(at)];
      const id = `d${Math.round(depth * 100)}-${j}`;
      const prompt = [...ctx, ...tokens.slice(0, s.cue)];
      prompts.push({ id, tokens: prompt });
      needles.push({ prompt: id, depth, at, length: prompt.length, answer: tokens.slice(s.cue), onset: 0 });
    }
  });
  return { prompts, needles };
}

/** Text needles when the model has a tokenizer, id needles otherwise. */
export function plantNeedles(model: Model, spec: NeedlesSpec): { prompts: EvalPrompt[]; needles: Needle[] } {
  return model.tokenizer ? plantText(model.tokenizer, spec) : plantIds(model, spec);
}

export function needleArms(spec: NeedlesSpec): EvalArm[] {
  return spec.arms.map((a) => ({ name: a.name, policy: schemePolicy(a.scheme, { window: a.window, sinks: a.sinks }) }));
}

const startsWith = (got: readonly number[], want: readonly number[]) => want.every((t, i) => got[i] === t);

export interface RecallRow {
  readonly arm: string;
  /** Per depth: needles whose whole answer came back, and those recalled up to the onset token. */
  readonly exact: Record<string, number>;
  readonly onset: Record<string, number>;
  readonly perDepth: number;
}

/** Per arm and depth: needles recalled exactly and up to the onset (the f16 reference first). */
export function recallTable(spec: NeedlesSpec, needles: readonly Needle[], records: readonly ArmRecord[], ref: ReferenceMeta): RecallRow[] {
  const rows = [
    { arm: 'f16 reference', outcomes: ref.entries.map((e) => ({ prompt: e.prompt.id, continuation: e.continuation })) },
    ...records.map((r) => ({ arm: r.arm.name, outcomes: r.outcomes })),
  ];
  return rows.map((r) => {
    const exact: Record<string, number> = {};
    const onset: Record<string, number> = {};
    for (const depth of spec.depths) exact[String(depth)] = onset[String(depth)] = 0;
    for (const n of needles) {
      const got = r.outcomes.find((o) => o.prompt === n.prompt)!.continuation;
      if (startsWith(got, n.answer)) exact[String(n.depth)]! += 1;
      if (startsWith(got, n.answer.slice(0, n.onset + 1))) onset[String(n.depth)]! += 1;
    }
    return { arm: r.arm, exact, onset, perDepth: needles.length / spec.depths.length };
  });
}

/** The f16 reference (first row) recalls at least one needle exactly: otherwise the table measures nothing. */
export function needlesInformative(rows: readonly RecallRow[]): boolean {
  const f16 = rows[0];
  return f16 !== undefined && Object.values(f16.exact).some((n) => n > 0);
}

/** What was planted, under the table (from the saved needles). */
function needlesLine(spec: NeedlesSpec, needles: readonly Needle[]): string {
  const lengths = needles.map((n) => n.length);
  const span = `${Math.min(...lengths)}-${Math.max(...lengths)}-token prompts`;
  if (needles[0]?.name === undefined)
    return `Needles: ${needles.length} random-id needles of ${spec.ids.needleTokens} tokens (cue ${spec.ids.cue}) in the model's own greedy text, ${span}; exact = every answer token, onset = the first.`;
  return `Needles: ${needles.length / spec.depths.length} made-up names x ${spec.depths.length} depths, each planted as "${spec.text.plant}" in the story, cue "${spec.text.cue}", ${span}; exact = the name's every token, onset = up to its first token holding a letter. The f16 reference row is what the model itself recalls.`;
}

export function needlesHeadline(
  spec: NeedlesSpec,
  needles: readonly Needle[],
  records: readonly ArmRecord[],
  ref: ReferenceMeta,
  scores: readonly ArmScore[],
): string[] {
  const by = new Map(scores.map((s) => [s.arm, s]));
  const pct = (d: number) => `${Math.round(d * 100)}%`;
  const h = spec.horizons[spec.horizons.length - 1]!;
  const rows = recallTable(spec, needles, records, ref);
  const f16 = rows[0]!;
  const recalled = spec.depths.reduce((s, d) => s + f16.exact[String(d)]!, 0);
  return [
    needlesInformative(rows)
      ? `f16 reference: ${recalled}/${needles.length} needles recalled exactly.`
      : `**UNINFORMATIVE on this model: the f16 reference recalls none of the ${needles.length} needles exactly, so every arm's 0 is the model's limit and the table measures no scheme.**`,
    '',
    `| arm | ${spec.depths.map((d) => `exact @${pct(d)}`).join(' | ')} | ${spec.depths.map((d) => `onset @${pct(d)}`).join(' | ')} | same answer as f16 | ${klLabel(scores, 'KL mean (context)')} | eff. bits |`,
    `|---|${spec.depths.map(() => '---:').join('|')}|${spec.depths.map(() => '---:').join('|')}|---:|---:|---:|`,
    ...rows.map((r) => {
      const s = by.get(r.arm);
      const cell = (x: Record<string, number>) => spec.depths.map((d) => `${x[String(d)]}/${r.perDepth}`).join(' | ');
      return `| ${r.arm} | ${cell(r.exact)} | ${cell(r.onset)} | ${s ? `${(100 * s.exactAt[h]!).toFixed(0)}%` : '-'} | ${s ? s.kl.toFixed(5) : '-'} | ${s ? s.effectiveBits.toFixed(2) : '16.00'} |`;
    }),
    '',
    needlesLine(spec, needles),
  ];
}
