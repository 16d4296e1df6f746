// OpenAI request bodies -> prompt tokens and task parameters (llama-server's defaults where OpenAI has none).
import { randomInt } from 'node:crypto';
import { chatPromptTokens, type ChatMessage } from '../model/chat.js';
import { badRequest, exceedContext } from './http-error.js';
import type { Engine } from './engine.js';
import type { ChatBody, CompletionBody } from './schemas.js';
import type { TaskParams } from './task.js';

type Sampling = Omit<ChatBody, 'messages' | 'logprobs' | 'top_logprobs'>;

export function chatPrompt(engine: Engine, body: ChatBody): number[] {
  const messages: ChatMessage[] = body.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content === null ? '' : m.content.map((p) => p.text).join(''),
  }));
  return chatPromptTokens(engine.model.tokenizer!, messages);
}

export function completionPrompt(engine: Engine, body: CompletionBody): number[] {
  const p = body.prompt;
  if (typeof p === 'string' || typeof p[0] === 'string') return engine.model.tokenizer!.encode(typeof p === 'string' ? p : (p[0] as string), { parseSpecial: true });
  const ids = p as number[];
  const bad = ids.findIndex((t) => t >= engine.model.nVocab);
  if (bad >= 0) throw badRequest(`prompt[${bad}]: token ${ids[bad]} is outside the vocabulary (${engine.model.nVocab})`, `prompt.${bad}`);
  return ids;
}

/** Task parameters from the sampling fields; the prompt must leave room in the slot's context. */
export function taskParams(engine: Engine, body: Sampling, prompt: number[], logprobs: number | null): TaskParams {
  const ctx = engine.o.ctx;
  if (prompt.length === 0) throw badRequest('the prompt is empty (no tokens)', 'prompt');
  if (prompt.length >= ctx) throw exceedContext(prompt.length, ctx);
  const asked = body.max_completion_tokens ?? body.max_tokens;
  const stop = body.stop === undefined || body.stop === null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  return {
    prompt,
    maxTokens: Math.min(asked ?? Infinity, ctx - prompt.length),
    sampler: {
      temperature: body.temperature ?? 0.8,
      topK: body.top_k ?? 40,
      topP: body.top_p ?? 0.95,
      minP: body.min_p ?? 0.05,
      repeatPenalty: body.repeat_penalty ?? 1,
      seed: body.seed === undefined || body.seed === null ? randomInt(2 ** 32) : body.seed >>> 0,
    },
    stop: stop.filter((s) => s !== ''),
    logprobs,
    key: engine.keyFor(body.cache_salt),
    slot: body.id_slot === undefined || body.id_slot < 0 ? undefined : body.id_slot,
    ignoreEos: body.ignore_eos ?? false,
  };
}
