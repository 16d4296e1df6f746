// Response bodies and stream chunks in the shapes the official OpenAI client parses, with llama-server's
// `timings` alongside.
import { randomBytes } from 'node:crypto';
import type { Tokenizer } from '../model/tokenizer/index.js';
import type { TokenLogprob } from './logprobs.js';
import type { TaskResult } from './task.js';

export type Kind = 'chat' | 'completion';

const utf8 = new TextDecoder();

export function responseId(kind: Kind): string {
  return `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
}

export function usage(r: TaskResult) {
  return { prompt_tokens: r.promptTokens, completion_tokens: r.tokens.length, total_tokens: r.promptTokens + r.tokens.length, prompt_tokens_details: { cached_tokens: r.cachedTokens } };
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
  const tokens: string[] = [];
  const textOffset: number[] = [];
  let at = offset;
  for (const l of lps) {
    const t = utf8.decode(tok.piece(l.id));
    tokens.push(t);
    textOffset.push(at);
    at += t.length;
  }
  return {
    tokens,
    token_logprobs: lps.map((l) => l.logprob),
    top_logprobs: lps.map((l) => Object.fromEntries(l.top.map((t) => [utf8.decode(tok.piece(t.id)), t.logprob]))),
    text_offset: textOffset,
  };
}

interface Common {
  id: string;
  created: number;
  model: string;
}

export function chatChunk(c: Common, delta: Record<string, unknown>, finish: string | null, logprobs: unknown = null) {
  return { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model, choices: [{ index: 0, delta, logprobs, finish_reason: finish }] };
}

export function completionChunk(c: Common, text: string, finish: string | null, logprobs: unknown = null) {
  return { id: c.id, object: 'text_completion', created: c.created, model: c.model, choices: [{ index: 0, text, logprobs, finish_reason: finish }] };
}

/** The usage chunk that ends a stream with stream_options.include_usage. */
export function usageChunk(kind: Kind, c: Common, r: TaskResult) {
  return { id: c.id, object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', created: c.created, model: c.model, choices: [], usage: usage(r), timings: r.timings };
}

export function chatResponse(c: Common, r: TaskResult, logprobs: unknown) {
  return {
    id: c.id, object: 'chat.completion', created: c.created, model: c.model,
    choices: [{ index: 0, message: { role: 'assistant', content: r.text }, logprobs, finish_reason: r.finishReason }],
    usage: usage(r), timings: r.timings,
  };
}

export function completionResponse(c: Common, r: TaskResult, logprobs: unknown) {
  return {
    id: c.id, object: 'text_completion', created: c.created, model: c.model,
    choices: [{ index: 0, text: r.text, logprobs, finish_reason: r.finishReason }],
    usage: usage(r), timings: r.timings,
  };
}
