// Evaluation prompts: a JSON-lines file (token ids or text), or deterministic defaults. With a tokenizer the
// defaults are story openings (story-openings.ts: a held-out set for evaluation, a calibration set for the
// probe) continued by the model's own greedy text; id-only models (or `source: 'ids'`) get seeded random ids
// continued the same way.
import { readWholeFile } from '../io/files.js';
import { ArgumentError, FileFormatError } from '../errors.js';
import { PREFILL_CHUNK } from '../model/generate.js';
import type { Model } from '../model/model.js';
import { argmax } from '../model/sampler.js';
import type { Tokenizer } from '../model/tokenizer/index.js';
import { Prng } from '../numeric/prng.js';
import { REFERENCE_POLICY, type EvalPrompt } from './reference-logits.js';
import { storyOpenings, type StorySet } from './story-openings.js';

export interface DefaultPromptSpec {
  readonly count: number;
  /** Total prompt length in tokens (opening or BOS + seed ids, then the greedy continuation). */
  readonly length: number;
  /** Id prompts: random ids after BOS that make the prompts differ. */
  readonly seedTokens: number;
  /** Picks the openings (story prompts) or the ids (id prompts). */
  readonly seed: number;
  /** Story prompts: which opening set (default heldout: evaluation). */
  readonly set?: StorySet;
  /** auto (default): story text when the model has a tokenizer, else ids; ids: always ids (id-level work). */
  readonly source?: 'auto' | 'ids';
  /**
   * The user's texts (a study's --text files): each one a prompt, BOS + its tokens cut to `length` (a shorter
   * text is continued by the model's greedy f16 text to `length`); `count` of them, in order.
   */
  readonly texts?: readonly { readonly id: string; readonly text: string }[];
}

/** Where a default prompt came from: saved beside protocol runs so a reader sees the text. */
export interface PromptSource {
  readonly id: string;
  readonly kind: 'story' | 'ids' | 'text';
  readonly set?: StorySet;
  /** Indices into storyOpenings[set]: the first opening, then one per story the model ended and we restarted. */
  readonly openings?: readonly number[];
  /** The prompt decoded (special tokens shown), when the model has a tokenizer. */
  readonly text?: string;
  readonly tokens: readonly number[];
}

/** Ids that are not control tokens: llama2.c-style vocabularies put <unk>/<s>/</s> at 0..2. */
const FIRST_ORDINARY_ID = 3;

/**
 * An opening as the model would see it mid-text: encoded with a trailing space, and a final token that is only
 * whitespace dropped. BPE vocabularies that merge the space into the word before ("to\u2581") need the space;
 * SentencePiece ones put it on the next word, where a lone trailing space token would be out of place.
 */
export function encodeOpening(tok: Tokenizer, text: string, addSpecial: boolean): number[] {
  const ids = tok.encode(text.trimEnd() + ' ', { addSpecial });
  const last = ids[ids.length - 1];
  return last !== undefined && ids.length > 1 && tok.decode([last]).trim() === '' ? ids.slice(0, -1) : ids;
}

/**
 * Greedy continuation over the reference's f16 cache (the text the reference itself would write; f32 runs the
 * slow reference attention at head dim 8) until `length` tokens. When the model ends a story (an
 * end-of-generation token) the end token is kept and the next opening follows, as in packed training text.
 */
function continueGreedy(model: Model, head: readonly number[], length: number, next?: () => number[]): { tokens: number[]; restarts: number } {
  const out = [...head];
  let restarts = 0;
  if (out.length >= length) return { tokens: out.slice(0, length), restarts };
  const cache = model.createCache({ policy: REFERENCE_POLICY, capacity: length + 256 });
  try {
    let logits: Float32Array = new Float32Array(0);
    for (let i = 0; i < out.length; i += PREFILL_CHUNK) logits = model.forward(out.slice(i, i + PREFILL_CHUNK), cache);
    const V = model.nVocab;
    while (out.length < length) {
      const t = argmax(logits.subarray(logits.length - V));
      const feed = next && model.tokenizer?.isEog(t) ? [t, ...next()] : [t];
      if (feed.length > 1) restarts++;
      out.push(...feed);
      if (out.length < length) logits = model.forward(feed, cache);
    }
  } finally {
    cache.dispose();
  }
  return { tokens: out.slice(0, length), restarts };
}

/** A seeded order of 0..n-1 (Fisher-Yates). */
function permutation(n: number, seed: number): number[] {
  const rng = new Prng(seed);
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
}

/** Story prompts: `count` openings of the set in a seeded order, each continued greedily to `length`. */
function storyPrompts(model: Model, tok: Tokenizer, s: DefaultPromptSpec): { prompts: EvalPrompt[]; sources: PromptSource[] } {
  const set = s.set ?? 'heldout';
  const all = storyOpenings[set];
  if (s.count > all.length) throw new ArgumentError(`prompts: ${s.count} story prompts asked of the ${set} set, which has ${all.length} openings`);
  const order = permutation(all.length, s.seed);
  const prompts: EvalPrompt[] = [];
  const sources: PromptSource[] = [];
  for (let i = 0; i < s.count; i++) {
    const used = [order[i]!];
    // After an end of story the next openings of the same seeded order follow (wrapping around).
    const next = () => {
      const k = order[(i + used.length) % all.length]!;
      used.push(k);
      return encodeOpening(tok, all[k]!, true);
    };
    const head = encodeOpening(tok, all[order[i]!]!, true);
    const { tokens } = continueGreedy(model, head, s.length, next);
    const id = `p${i}`;
    prompts.push({ id, tokens });
    sources.push({ id, kind: 'story', set, openings: used, text: tok.decode(tokens, { special: true }), tokens });
  }
  return { prompts, sources };
}

/** Seeded ids after BOS, continued greedily (the form for models without a tokenizer). */
function idPrompts(model: Model, s: DefaultPromptSpec): { prompts: EvalPrompt[]; sources: PromptSource[] } {
  if (s.seedTokens + 1 > s.length) throw new ArgumentError(`prompts: length ${s.length} leaves no room for BOS + ${s.seedTokens} seed tokens`);
  const rng = new Prng(s.seed);
  const prompts = Array.from({ length: s.count }, (_, i) => {
    const head = [model.bos, ...Array.from({ length: s.seedTokens }, () => FIRST_ORDINARY_ID + rng.int(model.nVocab - FIRST_ORDINARY_ID))];
    return { id: `p${i}`, tokens: continueGreedy(model, head, s.length).tokens };
  });
  const tok = model.tokenizer;
  return { prompts, sources: prompts.map((p) => ({ id: p.id, kind: 'ids', ...(tok && { text: tok.decode(p.tokens, { special: true }) }), tokens: p.tokens })) };
}

/** The default prompts and where each came from. */
export function defaultPromptSet(model: Model, s: DefaultPromptSpec): { prompts: EvalPrompt[]; sources: PromptSource[] } {
  const tok = model.tokenizer;
  if (s.texts) return textPrompts(model, s);
  return tok && (s.source ?? 'auto') === 'auto' ? storyPrompts(model, tok, s) : idPrompts(model, s);
}

/** The user's texts as prompts (DefaultPromptSpec.texts). */
function textPrompts(model: Model, s: DefaultPromptSpec): { prompts: EvalPrompt[]; sources: PromptSource[] } {
  const tok = model.tokenizer;
  if (!tok) throw new ArgumentError('prompts: texts need a model with a tokenizer');
  const texts = s.texts!;
  if (s.count > texts.length) throw new ArgumentError(`prompts: ${s.count} prompts asked of ${texts.length} texts`);
  const prompts: EvalPrompt[] = [];
  const sources: PromptSource[] = [];
  for (const t of texts.slice(0, s.count)) {
    const head = tok.encode(t.text, { addSpecial: true }).slice(0, s.length);
    const { tokens } = continueGreedy(model, head, s.length);
    prompts.push({ id: t.id, tokens });
    sources.push({ id: t.id, kind: 'text', text: tok.decode(tokens, { special: true }), tokens });
  }
  return { prompts, sources };
}

export function defaultPrompts(model: Model, s: DefaultPromptSpec): EvalPrompt[] {
  return defaultPromptSet(model, s).prompts;
}

/** JSON lines: `[1, 2, 3]`, `{"tokens": [...]}`, `"text"` or `{"text": "..."}` (text needs a tokenizer). */
export function readPromptsFile(path: string, model: Model): EvalPrompt[] {
  const lines = readWholeFile(path, 'prompts file')
    .toString('utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  if (lines.length === 0) throw new FileFormatError('prompts', `${path} has no prompts`);
  return lines.map((line, i) => {
    let x: unknown;
    try {
      x = JSON.parse(line);
    } catch (e) {
      throw new FileFormatError('prompts', `${path}:${i + 1}: not JSON (${(e as Error).message})`);
    }
    const o = (typeof x === 'object' && x !== null && !Array.isArray(x) ? x : {}) as { tokens?: unknown; text?: unknown; id?: unknown };
    const ids = Array.isArray(x) ? x : o.tokens;
    const text = typeof x === 'string' ? x : o.text;
    const id = typeof o.id === 'string' ? o.id : `p${i}`;
    if (Array.isArray(ids)) {
      if (!ids.every((t) => Number.isInteger(t) && t >= 0 && t < model.nVocab))
        throw new FileFormatError('prompts', `${path}:${i + 1}: token ids must be integers in [0, ${model.nVocab})`);
      return { id, tokens: ids as number[] };
    }
    if (typeof text === 'string') {
      if (!model.tokenizer) throw new ArgumentError(`${path}:${i + 1}: a text prompt needs a tokenizer (${model.tokenizerProblem ?? 'none'}); give token ids`);
      // encode adds BOS itself when the vocabulary asks for it (llama.cpp add_special).
      return { id, tokens: model.tokenizer.encode(text) };
    }
    throw new FileFormatError('prompts', `${path}:${i + 1}: expected token ids or text`);
  });
}
