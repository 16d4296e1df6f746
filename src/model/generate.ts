// Generation: prefill the prompt in chunks, mark the decode start on the cache, then run the shared
// GenerationLoop (generation-loop.ts) token by token until EOS, a stop string or maxTokens. Teacher-forced logits for the lab.
import { ArgumentError, EvictedError } from '../errors.js';
import type { KvCache } from '../cache/kvcache.js';
import type { Tokenizer } from './tokenizer/index.js';
import type { ForwardOptions } from './forward.js';
import { GenerationLoop, type Released, type StopReason } from './generation-loop.js';
import type { Sampler, SamplerOptions } from './sampler.js';

/** Prompt tokens per forward call: bounds activation memory ([chunk, nFf] floats) and paces progress reports. */
export const PREFILL_CHUNK = 256;

/** What generate needs of a model (Model satisfies it). */
export interface Generator {
  forward(tokens: readonly number[], cache: KvCache, opts?: ForwardOptions): Float32Array;
  readonly tokenizer?: Tokenizer;
  readonly eos: number[];
}

export interface GenerateOptions {
  maxTokens: number;
  sampler?: Sampler | SamplerOptions;
  /** Token ids that end generation (default: the model's). Pass [] to never stop on EOS. */
  eos?: readonly number[];
  /** Stop when the generated text contains one of these (needs a tokenizer); the text is cut before it. */
  stop?: readonly string[];
  /**
   * Called with text as it is released (whole characters; a partial stop-string match is held back until
   * it is decided) and the ids of the tokens that text begins ('' without a tokenizer).
   */
  onText?: (text: string, ids: readonly number[]) => void;
  /** Called after each prefill chunk with (done, total) prompt tokens. */
  onPrefill?: (done: number, total: number) => void;
}

export interface GenerateResult {
  prompt: number[];
  tokens: number[];
  text: string;
  stopReason: StopReason;
  prefillMs: number;
  decodeMs: number;
  /** Prompt tokens per second and generated tokens per second (0 when none). */
  prefillTps: number;
  decodeTps: number;
}

/** Runs tokens through the model in chunks of PREFILL_CHUNK; returns the last token's logits. */
export function prefill(model: Generator, cache: KvCache, tokens: readonly number[], onPrefill?: (done: number, total: number) => void): Float32Array {
  if (tokens.length === 0) throw new ArgumentError('prefill: empty prompt');
  let logits: Float32Array | undefined;
  for (let i = 0; i < tokens.length; i += PREFILL_CHUNK) {
    logits = model.forward(tokens.slice(i, i + PREFILL_CHUNK), cache);
    onPrefill?.(Math.min(tokens.length, i + PREFILL_CHUNK), tokens.length);
  }
  return logits!;
}

/**
 * Rewinds `cache` to `keep` positions to reuse a shared prefix; returns the positions kept. When
 * sliding-window layers already dropped what position `keep` reads, the cache is cleared instead (0):
 * the caller prefills everything again, as llama.cpp does for SWA caches.
 */
export function rewindForReuse(cache: KvCache, keep: number): number {
  try {
    cache.rewind(keep);
    return keep;
  } catch (e) {
    if (!(e instanceof EvictedError)) throw e;
    cache.clear();
    return 0;
  }
}

/** Generates after `prompt` (appended to `cache` at its current length), through the shared GenerationLoop. */
export function generate(model: Generator, cache: KvCache, prompt: readonly number[], o: GenerateOptions): GenerateResult {
  if (!Number.isInteger(o.maxTokens) || o.maxTokens < 0) throw new ArgumentError(`generate: maxTokens must be a non-negative integer, got ${o.maxTokens}`);
  if (o.stop?.length && !model.tokenizer) throw new ArgumentError('generate: stop strings need a model with a tokenizer');
  const loop = new GenerationLoop({ prompt, maxTokens: o.maxTokens, sampler: o.sampler, eos: o.eos ?? model.eos, stop: o.stop, tokenizer: model.tokenizer });
  const t0 = performance.now();
  let logits = prefill(model, cache, prompt, o.onPrefill);
  const t1 = performance.now();
  // Decode anchors (seed 002) start at the first generated position.
  cache.beginDecode();
  const out = (r: Released) => (r.text !== '' || r.ids.length > 0) && o.onText?.(r.text, r.ids);
  while (!loop.done) {
    out(loop.step(logits));
    // The last token is not fed: its logits would go unused.
    if (!loop.done) logits = model.forward([loop.last], cache);
  }
  const t2 = performance.now();
  return {
    prompt: [...prompt],
    tokens: loop.tokens,
    text: loop.text,
    stopReason: loop.reason!,
    prefillMs: t1 - t0,
    decodeMs: t2 - t1,
    prefillTps: prompt.length / ((t1 - t0) / 1000),
    decodeTps: loop.tokens.length > 0 ? loop.tokens.length / ((t2 - t1) / 1000) : 0,
  };
}

/**
 * Logits at every position of `tokens` [n, vocab] (row i predicts token i + 1), run in chunks over
 * `cache` from its current length: the lab's teacher forcing.
 */
export function teacherForcedLogits(model: Generator, tokens: readonly number[], cache: KvCache): Float32Array[] {
  const rows: Float32Array[] = [];
  for (let i = 0; i < tokens.length; i += PREFILL_CHUNK) {
    const chunk = tokens.slice(i, i + PREFILL_CHUNK);
    const all = model.forward(chunk, cache, { allLogits: true });
    const vocab = all.length / chunk.length;
    for (let t = 0; t < chunk.length; t++) rows.push(all.slice(t * vocab, (t + 1) * vocab));
  }
  return rows;
}
