// Response bodies and stream chunks in the shapes the official OpenAI client parses, with llama-server's
// `timings` alongside.
import { randomBytes } from 'node:crypto';
import type { Tokenizer } from '../model/tokenizer/index.js';
import type { TokenLogprob } from '../model/logprobs.js';
import type { TaskResult } from './task.js';

export type Kind = 'chat' | 'completion';

const utf8 = new TextDecoder();

export function responseId(kind: Kind): string {
  return `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
}

/** Usage of a request's choices: each prompt counted once (its first choice prefilled it), every choice's tokens. */
export function usage(rs: readonly TaskResult[], perPrompt = 1) {
  const firsts = rs.filter((_, i) => i % perPrompt === 0);
  const prompt = firsts.reduce((s, r) => s + r.promptTokens, 0);
  const completion = rs.reduce((s, r) => s + r.tokens.length, 0);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: firsts.reduce((s, r) => s + r.cachedTokens, 0) },
  };
}

/** Chat logprobs: {content: [{token, logprob, bytes, top_logprobs}]}. */
export function chatLogprobs(tok: Tokenizer, lps: readonly TokenLogprob[]) {
  const entry = (id: number, logprob: number) => {
    const piece = tok.piece(id);
    return { token: utf8.decode(piece), logprob, bytes: Array.from(piece) };
  };
  return { content: lps.map((l) => ({ ...entry(l.id, l.logprob), top_logprobs: l.top.map((t) => entry(t.id, t.logprob)) })) };
}

/** Completions logprobs: parallel arrays, top alternatives as {token: logprob} maps; offsets from `offset`. */
export function completionLogprobs(tok: Tokenizer, lps: readonly TokenLogprob[], offset: number) {
  return completionLogprobsWith(
    tok,
    lps.map((l) => ({ id: l.id, lp: l })),
    offset,
  );
}

/**
 * The same with the prompt first (echo): prompt token 0 has no logprob (null, as OpenAI), tokens 1.. those
 * the prefill computed, then the completion's.
 */
export function echoLogprobs(tok: Tokenizer, prompt: readonly number[], promptLps: readonly TokenLogprob[], lps: readonly TokenLogprob[]) {
  const head = prompt.map((id, i) => ({ id, lp: i === 0 ? null : promptLps[i - 1]! }));
  return completionLogprobsWith(tok, [...head, ...lps.map((l) => ({ id: l.id, lp: l }))], 0);
}

function completionLogprobsWith(tok: Tokenizer, entries: readonly { id: number; lp: TokenLogprob | null }[], offset: number) {
  const tokens: string[] = [];
  const textOffset: number[] = [];
  let at = offset;
  for (const e of entries) {
    const t = utf8.decode(tok.piece(e.id));
    tokens.push(t);
    textOffset.push(at);
    at += t.length;
  }
  return {
    tokens,
    token_logprobs: entries.map((e) => (e.lp ? e.lp.logprob : null)),
    top_logprobs: entries.map((e) => (e.lp ? Object.fromEntries(e.lp.top.map((t) => [utf8.decode(tok.piece(t.id)), t.logprob])) : null)),
    text_offset: textOffset,
  };
}

interface Common {
  id: string;
  created: number;
  model: string;
}

export function chatChunk(c: Common, index: number, delta: Record<string, unknown>, finish: string | null, logprobs: unknown = null) {
  return { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, choices: [{ index, delta, logprobs, finish_reason: finish }] };
}

export function completionChunk(c: Common, index: number, text: string, finish: string | null, logprobs: unknown = null) {
  return { id: c.id, object: 'text_completion', created: c.created, model: c.model, choices: [{ index, text, logprobs, finish_reason: finish }] };
}

/** The usage chunk that ends a stream with stream_options.include_usage. */
export function usageChunk(kind: Kind, c: Common, rs: readonly TaskResult[], perPrompt: number) {
  return {
    id: c.id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created: c.created,
    model: c.model,
    choices: [],
    usage: usage(rs, perPrompt),
    timings: rs[0]!.timings,
  };
}

/** One choice of a whole response: chat's message or completions' text. */
export interface Choice {
  text: string;
  logprobs: unknown;
  finishReason: string;
}

export function chatResponse(c: Common, choices: readonly Choice[], rs: readonly TaskResult[], perPrompt: number) {
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: c.model,
    choices: choices.map((ch, index) => ({ index, message: { role: 'assistant', content: ch.text }, logprobs: ch.logprobs, finish_reason: ch.finishReason })),
    usage: usage(rs, perPrompt),
    timings: rs[0]!.timings,
  };
}

export function completionResponse(c: Common, choices: readonly Choice[], rs: readonly TaskResult[], perPrompt: number) {
  return {
    id: c.id,
    object: 'text_completion',
    created: c.created,
    model: c.model,
    choices: choices.map((ch, index) => ({ index, text: ch.text, logprobs: ch.logprobs, finish_reason: ch.finishReason })),
    usage: usage(rs, perPrompt),
    timings: rs[0]!.timings,
  };
}
