// OpenAI request bodies -> prompt tokens and task parameters (llama-server's defaults where OpenAI has none).
// Prompts are tokenized off the critical path (prompt-tokens.ts): a text too long is refused by its size.
import { randomInt } from 'node:crypto';
import { renderChatForTokens, withOneBos, type ChatMessage } from '../model/chat.js';
import { badRequest } from './http-error.js';
import type { Engine } from './engine.js';
import { checkPromptBytes, encodeWithin, exceedContext } from './prompt-tokens.js';
import type { ChatBody, CompletionBody } from './schemas.js';
import type { TaskParams } from './task.js';
import { refuseUnsupported } from './unsupported.js';

type Sampling = Omit<ChatBody, 'messages' | 'logprobs' | 'top_logprobs'>;

/** What one request runs: a task per prompt and choice (choices of one prompt fork from its prefill). */
export interface Plan {
  /** Per prompt, its n choices' parameters (seeds seed, seed + 1, ...). */
  prompts: TaskParams[][];
  /** Completions' echo: the prompt's text (and its tokens' logprobs) precede each choice. */
  echo: boolean;
}

export async function chatPlan(engine: Engine, body: ChatBody): Promise<Plan> {
  const n = body.n ?? 1;
  refuseUnsupported(body, n);
  if (body.top_logprobs !== undefined && body.top_logprobs !== null && !body.logprobs) throw badRequest('top_logprobs: needs logprobs: true', 'top_logprobs');
  const tok = engine.model.tokenizer!;
  const messages: ChatMessage[] = body.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
  }));
  // Refused by size before the template renders: the rendered text is only longer.
  checkPromptBytes(
    tok,
    messages.reduce((s, m) => s + Buffer.byteLength(m.content), 0),
    engine.o.ctx,
  );
  const text = renderChatForTokens(tok, messages);
  const ids = withOneBos(tok, await encodeWithin(tok, text, { addSpecial: false, parseSpecial: true }, engine.o.ctx));
  const logprobs = body.logprobs ? (body.top_logprobs ?? 0) : null;
  return { prompts: [choices(engine, body, ids, logprobs, null, n)], echo: false };
}

export async function completionPlan(engine: Engine, body: CompletionBody): Promise<Plan> {
  const n = body.n ?? 1;
  refuseUnsupported(body, n);
  const p = body.prompt;
  const list: (string | number[])[] = typeof p === 'string' ? [p] : typeof p[0] === 'number' ? [p as number[]] : (p as (string | number[])[]);
  const tok = engine.model.tokenizer!;
  const ctx = engine.o.ctx;
  if (typeof list[0] === 'string') checkPromptBytes(tok, Math.max(...list.map((x) => Buffer.byteLength(x as string))), ctx);
  const echo = body.echo ?? false;
  const logprobs = body.logprobs ?? null;
  const prompts: TaskParams[][] = [];
  for (const [i, x] of list.entries()) {
    const at = list.length > 1 ? `prompt.${i}` : 'prompt';
    const ids = typeof x === 'string' ? await encodeWithin(tok, x, { parseSpecial: true }, ctx) : checkIds(engine, x, at);
    prompts.push(choices(engine, body, ids, logprobs, echo && logprobs !== null ? logprobs : null, n, at));
  }
  return { prompts, echo };
}

function checkIds(engine: Engine, ids: number[], at: string): number[] {
  const bad = ids.findIndex((t) => t >= engine.model.nVocab);
  if (bad >= 0) throw badRequest(`${at}[${bad}]: token ${ids[bad]} is outside the vocabulary (${engine.model.nVocab})`, `${at}.${bad}`);
  return ids;
}

/** The n choices' parameters for one prompt. */
function choices(
  engine: Engine,
  body: Sampling,
  prompt: number[],
  logprobs: number | null,
  promptLogprobs: number | null,
  n: number,
  at = 'messages',
): TaskParams[] {
  const base = taskParams(engine, body, prompt, logprobs, at);
  base.promptLogprobs = promptLogprobs;
  return Array.from({ length: n }, (_, j) => ({ ...base, sampler: { ...base.sampler, seed: (base.sampler.seed! + j) >>> 0 } }));
}

/** Task parameters from the sampling fields; the prompt must leave room in the slot's context. */
export function taskParams(engine: Engine, body: Sampling, prompt: number[], logprobs: number | null, at = 'prompt'): TaskParams {
  const ctx = engine.o.ctx;
  if (prompt.length === 0) throw badRequest('the prompt is empty (no tokens)', at);
  if (prompt.length >= ctx) throw exceedContext(prompt.length, ctx);
  const asked = body.max_completion_tokens ?? body.max_tokens;
  const stop = body.stop === undefined || body.stop === null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const bias = new Map<number, number>();
  for (const [k, v] of Object.entries(body.logit_bias ?? {})) {
    const id = Number(k);
    if (id >= engine.model.nVocab) throw badRequest(`logit_bias: token ${id} is outside the vocabulary (${engine.model.nVocab})`, 'logit_bias');
    bias.set(id, v);
  }
  return {
    prompt,
    maxTokens: Math.min(asked ?? Infinity, ctx - prompt.length),
    sampler: {
      temperature: body.temperature ?? 0.8,
      topK: body.top_k ?? 40,
      topP: body.top_p ?? 0.95,
      minP: body.min_p ?? 0.05,
      repeatPenalty: body.repeat_penalty ?? 1,
      presencePenalty: body.presence_penalty ?? 0,
      frequencyPenalty: body.frequency_penalty ?? 0,
      logitBias: bias,
      seed: body.seed === undefined || body.seed === null ? randomInt(2 ** 32) : body.seed >>> 0,
    },
    stop: stop.filter((s) => s !== ''),
    logprobs,
    promptLogprobs: null,
    key: engine.keyFor(body.cache_salt),
    slot: body.id_slot === undefined || body.id_slot < 0 ? undefined : body.id_slot,
    ignoreEos: body.ignore_eos ?? false,
  };
}
