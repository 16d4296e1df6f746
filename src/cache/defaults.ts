// The cache defaults every command and the library share (run, chat, eval, memory, serve, the page): one place,
// so the same scheme means the same cache everywhere. A command passes a region only when its flag is given.
import { ArgumentError } from '../errors.js';

/**
 * Exact recent window and attention sinks over a lossy bulk (seed 000's overlay: 128 positions + 4 sinks).
 * Over an exact bulk (f32/f16/bf16 K and V) there are no exact regions at all (policy.ts).
 */
export const DEFAULT_WINDOW = 128;
export const DEFAULT_SINKS = 4;
/** Precision of a lossy tensor's window and sinks ('f16', seed 000); an exact tensor's regions use its own format. */
export const DEFAULT_EXACT = 'f16';
/** Precision of a lossy tensor's decode anchors. */
export const DEFAULT_ANCHOR_PRECISION = 'f16';

/**
 * Cache capacity when -c is not given, the one rule of run, chat, serve (per slot) and the page: the model's
 * training context, capped at 4096 (llama.cpp's default -c) because a cache is sized for its capacity up
 * front. See defaultCapacity.
 */
export const DEFAULT_CTX = 4096;

/**
 * The default capacity for a model trained at nCtxTrain positions: min(nCtxTrain, DEFAULT_CTX), raised to
 * what a run needs (prompt + tokens to generate) but never past the training context by default (a model
 * read past it degrades; an explicit -c may go there).
 */
export function defaultCapacity(nCtxTrain: number, need = 0): number {
  if (need > nCtxTrain)
    throw new ArgumentError(`${need} positions (prompt + tokens to generate) exceed the model's context of ${nCtxTrain}; give -c to go past it`);
  return Math.max(need, Math.min(nCtxTrain, DEFAULT_CTX));
}

/**
 * -c of eval and probe: positions per measured sequence, not a cache to chat in (like llama-perplexity's
 * 512-token chunks), so their default is this length, at most the training context.
 */
export const DEFAULT_EVAL_CTX = 256;
