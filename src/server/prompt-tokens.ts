// Prompt text -> tokens without stalling the server: a text too long for the context is refused by its
// size before any tokenizing, and the rest is tokenized in slices of a few milliseconds (other requests'
// steps run between them), stopping as soon as it holds more tokens than the context.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { EncodeOptions, Tokenizer } from '../model/tokenizer/index.js';
import { HttpError } from './http-error.js';

/** Longest a tokenizing slice holds the event loop before it lets other work run. */
const SLICE_MS = 4;

const longest = new WeakMap<Tokenizer, number>();

/**
 * Most input bytes one token can stand for: the longest piece (special tokens' text included), or
 * Infinity when the normalizer may delete text (strip, replace): then only the token count limits.
 */
export function maxBytesPerToken(tok: Tokenizer): number {
  let m = longest.get(tok);
  if (m !== undefined) return m;
  m = 1;
  for (let id = 0; id < tok.size; id++) m = Math.max(m, tok.piece(id, true).length);
  const steps = tok.vocab.hf?.normalizer ?? [];
  // Unicode forms and lowercasing shrink a character at most from 4 bytes to 1.
  if (steps.some((s) => s.type === 'strip' || s.type === 'replace' || s.type === 'replaceRegex')) m = Infinity;
  else if (steps.length > 0) m *= 4;
  longest.set(tok, m);
  return m;
}

/**
 * The prompt does not fit the slot's context: OpenAI's type and code with llama-server's counts
 * (n_prompt_tokens is a lower bound when `atLeast`: counting stopped early).
 */
export function exceedContext(promptTokens: number, ctx: number, atLeast = false): HttpError {
  const n = `${atLeast ? 'at least ' : ''}${promptTokens}`;
  return new HttpError(
    400,
    'invalid_request_error',
    `the request has ${n} prompt tokens, the context holds ${ctx}`,
    null,
    { n_prompt_tokens: promptTokens, n_ctx: ctx },
    undefined,
    'context_length_exceeded',
  );
}

/** 400 before tokenizing when `bytes` of text cannot fit in fewer than `ctx` tokens. */
export function checkPromptBytes(tok: Tokenizer, bytes: number, ctx: number): void {
  const least = Math.ceil(bytes / maxBytesPerToken(tok));
  if (least >= ctx) throw exceedContext(least, ctx, true);
}

/** Tokenizes `text` in slices; 400 once it holds `ctx` tokens (a prompt must leave a position to generate; Infinity: no limit). */
export async function encodeWithin(tok: Tokenizer, text: string, opts: EncodeOptions, ctx: number): Promise<number[]> {
  checkPromptBytes(tok, Buffer.byteLength(text), ctx);
  const out: number[] = [];
  let start = performance.now();
  for (const _ of tok.encodeSteps(text, opts, out)) {
    if (out.length >= ctx) throw exceedContext(out.length, ctx, true);
    if (performance.now() - start > SLICE_MS) {
      await nextTurn();
      start = performance.now();
    }
  }
  return out;
}
