// POST /v1/chat/completions and /v1/completions (also without /v1): stream and non-stream, one handler
// each, sharing how tasks' output reaches the response. A request runs one task per prompt and choice
// (choice index = prompt index x n + j, as OpenAI numbers a batch).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ServerContext } from './context.js';
import type { Engine } from './engine.js';
import { toHttpError } from './http-error.js';
import type { TokenLogprob } from '../model/logprobs.js';
import {
  chatChunk,
  chatLogprobs,
  chatResponse,
  completionChunk,
  completionLogprobs,
  completionResponse,
  echoLogprobs,
  responseId,
  usageChunk,
  type Choice,
  type Kind,
} from './openai-format.js';
import { chatPlan, completionPlan, type Plan } from './openai-request.js';
import { ChatBody, CompletionBody } from './schemas.js';
import { SseStream } from './sse.js';
import type { Task, TaskResult, TaskSink } from './task.js';

export function openaiRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  for (const path of ['/v1/chat/completions', '/chat/completions']) {
    r.post(path, { schema: { body: ChatBody } }, async (req, reply) => {
      const engine = ctx.need();
      const b = req.body;
      const plan = await chatPlan(engine, b);
      return respond(engine, ctx, 'chat', plan, [], !!b.stream, !!b.stream_options?.include_usage, req, reply);
    });
  }
  for (const path of ['/v1/completions', '/completions']) {
    r.post(path, { schema: { body: CompletionBody } }, async (req, reply) => {
      const engine = ctx.need();
      const b = req.body;
      const plan = await completionPlan(engine, b);
      const p = b.prompt;
      const list = typeof p === 'string' ? [p] : typeof p[0] === 'number' ? [p as number[]] : (p as (string | number[])[]);
      // Echo gives the prompt back as it was sent (token prompts as their text).
      const texts = plan.echo ? list.map((x) => (typeof x === 'string' ? x : engine.model.tokenizer!.decode(x))) : [];
      return respond(engine, ctx, 'completion', plan, texts, !!b.stream, !!b.stream_options?.include_usage, req, reply);
    });
  }
}

/** Submits every task (one refusal refuses the request before anything is sent) and answers as a stream or one body. */
function respond(
  engine: Engine,
  ctx: ServerContext,
  kind: Kind,
  plan: Plan,
  echoTexts: string[],
  stream: boolean,
  includeUsage: boolean,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<unknown> | undefined {
  const c = { id: responseId(kind), created: Math.floor(Date.now() / 1000), model: ctx.modelName };
  const tok = engine.model.tokenizer!;
  const n = plan.prompts[0]!.length;
  const params = plan.prompts.flat();
  const total = params.length;
  const wantLogprobs = params[0]!.logprobs !== null;
  const echoText = (i: number) => (plan.echo ? echoTexts[Math.floor(i / n)]! : '');
  const results: TaskResult[] = new Array(total);
  const tasks: Task[] = [];
  const submit = (sinks: TaskSink[]) => {
    try {
      for (const [p, choices] of plan.prompts.entries()) tasks.push(...engine.scheduler.submitGroup(choices, sinks.slice(p * n, (p + 1) * n)));
    } catch (e) {
      for (const t of tasks) t.cancel();
      throw e;
    }
  };
  // The client left while its prompt was being tokenized: nothing to run.
  if (req.raw.socket?.destroyed) {
    reply.hijack();
    return undefined;
  }
  if (!stream) {
    return new Promise((resolve, reject) => {
      let left = total;
      let failed = false;
      const choice = (i: number, r: TaskResult): Choice => {
        const text = echoText(i) + r.text;
        if (!wantLogprobs) return { text, logprobs: null, finishReason: r.finishReason };
        if (kind === 'chat') return { text, logprobs: chatLogprobs(tok, r.logprobs), finishReason: r.finishReason };
        const lps =
          plan.echo && r.promptLogprobs
            ? echoLogprobs(tok, params[i]!.prompt, r.promptLogprobs, r.logprobs)
            : completionLogprobs(tok, r.logprobs, echoText(i).length);
        return { text, logprobs: lps, finishReason: r.finishReason };
      };
      const sinks = params.map(
        (_, i): TaskSink => ({
          token() {},
          done(r) {
            results[i] = r;
            if (--left > 0 || failed) return;
            const choices = results.map((r, j) => choice(j, r));
            resolve(kind === 'chat' ? chatResponse(c, choices, results, n) : completionResponse(c, choices, results, n));
          },
          fail(e) {
            if (failed) return;
            failed = true;
            for (const t of tasks) t.cancel();
            reject(toHttpError(e));
          },
        }),
      );
      submit(sinks);
      // A client that goes away cancels its generation (the slots are freed before the next step).
      reply.raw.on('close', () => left > 0 && !failed && tasks.forEach((t) => t.cancel()));
    });
  }
  const sse = new SseStream(reply.raw, { pause: () => tasks.forEach((t) => t.pause()), resume: () => tasks.forEach((t) => t.resume()) });
  const sent: number[] = params.map((_, i) => echoText(i).length);
  let left = total;
  let ended = false;
  const lp = (i: number, lps: readonly TokenLogprob[]) =>
    !wantLogprobs ? null : kind === 'chat' ? chatLogprobs(tok, lps) : completionLogprobs(tok, lps, sent[i]!);
  // Echo: the prompt goes first, with its own tokens' logprobs (known once its prefill ran).
  const headSent = params.map(() => !plan.echo);
  const head = (i: number) => {
    if (headSent[i]) return;
    headSent[i] = true;
    const pl = tasks[i]?.promptLogprobs;
    sse.send(completionChunk(c, i, echoText(i), null, wantLogprobs && pl ? echoLogprobs(tok, params[i]!.prompt, pl, []) : null));
  };
  const sinks = params.map(
    (_, i): TaskSink => ({
      token(text, lps) {
        head(i);
        sse.send(kind === 'chat' ? chatChunk(c, i, { content: text }, null, lp(i, lps)) : completionChunk(c, i, text, null, lp(i, lps)));
        sent[i]! += text.length;
      },
      done(r) {
        results[i] = r;
        head(i);
        // The finish chunk carries no content; usage follows in its own chunk with no choices.
        const fin = kind === 'chat' ? chatChunk(c, i, {}, r.finishReason) : completionChunk(c, i, '', r.finishReason);
        sse.send({ ...fin, timings: r.timings });
        if (--left > 0) return;
        ended = true;
        if (includeUsage) sse.send(usageChunk(kind, c, results, n));
        sse.end();
      },
      fail(e) {
        if (ended) return;
        ended = true;
        for (const t of tasks) t.cancel();
        sse.error(toHttpError(e).body());
      },
    }),
  );
  submit(sinks);
  reply.hijack();
  reply.raw.on('close', () => ended || tasks.forEach((t) => t.cancel()));
  if (kind === 'chat') for (let i = 0; i < total; i++) sse.send(chatChunk(c, i, { role: 'assistant' }, null));
  return undefined;
}
