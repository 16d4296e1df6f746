// Evaluation prompts: a JSON-lines file (token ids or text), or deterministic defaults for id-only models:
// seeded random token ids continued by the model's own greedy text (natural-ish for the model).
import { readWholeFile } from '../io/files.js';
import { ArgumentError, FileFormatError } from '../errors.js';
import type { Model } from '../model/model.js';
import { Prng } from '../numeric/prng.js';
import { CAPTURE_POLICY } from './capture-model.js';
import type { EvalPrompt } from './reference-logits.js';
import { runSequence } from './sequence.js';

export interface DefaultPromptSpec {
  readonly count: number;
  /** Total prompt length in tokens (BOS + seed tokens + greedy continuation). */
  readonly length: number;
  /** Random ids after BOS that make the prompts differ. */
  readonly seedTokens: number;
  readonly seed: number;
}

/** Ids that are not control tokens: llama2.c-style vocabularies put <unk>/<s>/</s> at 0..2. */
const FIRST_ORDINARY_ID = 3;

/** Seeded ids, then the model's greedy continuation over an exact cache, cut to `length`. */
export function defaultPrompts(model: Model, s: DefaultPromptSpec): EvalPrompt[] {
  if (s.seedTokens + 1 > s.length) throw new ArgumentError(`prompts: length ${s.length} leaves no room for BOS + ${s.seedTokens} seed tokens`);
  const rng = new Prng(s.seed);
  return Array.from({ length: s.count }, (_, i) => {
    const head = [model.bos, ...Array.from({ length: s.seedTokens }, () => FIRST_ORDINARY_ID + rng.int(model.nVocab - FIRST_ORDINARY_ID))];
    const rest = s.length - head.length;
    const tokens = rest > 0 ? [...head, ...runSequence(model, CAPTURE_POLICY, head, rest).continuation] : head;
    return { id: `p${i}`, tokens };
  });
}

/** JSON lines: `[1, 2, 3]`, `{"tokens": [...]}`, `"text"` or `{"text": "..."}` (text needs a tokenizer). */
export function readPromptsFile(path: string, model: Model): EvalPrompt[] {
  const lines = readWholeFile(path, 'prompts file').toString('utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
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
      if (!ids.every((t) => Number.isInteger(t) && t >= 0 && t < model.nVocab)) throw new FileFormatError('prompts', `${path}:${i + 1}: token ids must be integers in [0, ${model.nVocab})`);
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
