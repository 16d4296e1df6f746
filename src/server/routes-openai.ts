// POST /v1/chat/completions and /v1/completions (also without /v1): stream and non-stream, one handler
// each, sharing how a task's output reaches the response.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ServerContext } from './context.js';
import type { Engine } from './engine.js';
import { toHttpError } from './http-error.js';
import { chatChunk, chatLogprobs, chatResponse, completionChunk, completionLogprobs, completionResponse, responseId, usageChunk, type Kind } from './openai-format.js';
import { chatPrompt, completionPrompt, taskParams } from './openai-request.js';
import { ChatBody, CompletionBody } from './schemas.js';
import { SseStream } from './sse.js';
import type { Task, TaskParams, TaskResult, TaskSink } from './task.js';
import type { TokenLogprob } from './logprobs.js';

export function openaiRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  for (const path of ['/v1/chat/completions', '/chat/completions']) {
    r.post(path, { schema: { body: ChatBody } }, (req, reply) => {
      const engine = ctx.need();
      const b = req.body;
      const params = taskParams(engine, b, chatPrompt(engine, b), b.logprobs ? (b.top_logprobs ?? 0) : null);
      return respond(engine, ctx, 'chat', params, !!b.stream, !!b.stream_options?.include_usage, reply);
    });
  }
  for (const path of ['/v1/completions', '/completions']) {
    r.post(path, { schema: { body: CompletionBody } }, (req, reply) => {
      const engine = ctx.need();
      const b = req.body;
      const params = taskParams(engine, b, completionPrompt(engine, b), b.logprobs ?? null);
      return respond(engine, ctx, 'completion', params, !!b.stream, !!b.stream_options?.include_usage, reply);
    });
  }
}

/** Submits the task (a refusal is thrown before anything is sent) and answers as a stream or one body. */
function respond(engine: Engine, ctx: ServerContext, kind: Kind, params: TaskParams, stream: boolean, includeUsage: boolean, reply: FastifyReply): Promise<unknown> | undefined {
  const c = { id: responseId(kind), created: Math.floor(Date.now() / 1000), model: ctx.modelName };
  const tok = engine.model.tokenizer!;
  const lp = (lps: readonly TokenLogprob[], offset: number, r?: TaskResult) => {
    if (params.logprobs === null) return null;
    const all = r ? r.logprobs : lps;
    return kind === 'chat' ? chatLogprobs(tok, all) : completionLogprobs(tok, all, offset);
  };
  if (!stream) {
    return new Promise((resolve, reject) => {
      let settled = false;
      const sink: TaskSink = {
        token() {},
        done(r) {
          settled = true;
          resolve(kind === 'chat' ? chatResponse(c, r, lp([], 0, r)) : completionResponse(c, r, lp([], 0, r)));
        },
        fail(e) {
          settled = true;
          reject(toHttpError(e));
        },
      };
      const task = engine.scheduler.submit(params, sink);
      // A client that goes away cancels its generation (the slot is freed before the next step).
      reply.raw.on('close', () => settled || task.cancel());
    });
  }
  let task: Task | undefined;
  const sse = new SseStream(reply.raw, { pause: () => task?.pause(), resume: () => task?.resume() });
  let sent = 0;
  let ended = false;
  const sink: TaskSink = {
    token(text, lps) {
      sse.send(kind === 'chat' ? chatChunk(c, { content: text }, null, lp(lps, 0)) : completionChunk(c, text, null, lp(lps, sent)));
      sent += text.length;
    },
    done(r) {
      ended = true;
      // The finish chunk carries no content; usage follows in its own chunk with no choices.
      const fin = kind === 'chat' ? chatChunk(c, {}, r.finishReason) : completionChunk(c, '', r.finishReason);
      sse.send({ ...fin, timings: r.timings });
      if (includeUsage) sse.send(usageChunk(kind, c, r));
      sse.end();
    },
    fail(e) {
      ended = true;
      sse.error(toHttpError(e).body());
    },
  };
  task = engine.scheduler.submit(params, sink);
  reply.hijack();
  reply.raw.on('close', () => ended || task!.cancel());
  if (kind === 'chat') sse.send(chatChunk(c, { role: 'assistant' }, null));
  return undefined;
}
