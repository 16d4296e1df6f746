// GET /health, /v1/models, /metrics, /slots; POST /slots/:id?action=save|restore|erase, /tokenize, /detokenize.
import { basename } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ServerContext } from './context.js';
import { badRequest, HttpError } from './http-error.js';
import { DetokenizeBody, SlotBody, SlotParams, SlotQuery, TokenizeBody } from './schemas.js';
import { encodeWithin } from './prompt-tokens.js';
import { restoreSlot, saveSlot, slotPath } from './slot-files.js';

const utf8 = new TextDecoder();

export function adminRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  for (const path of ['/health', '/v1/health']) {
    r.get(path, async () => {
      ctx.need();
      return { status: 'ok' };
    });
  }

  const modelEntry = () => {
    const e = ctx.need();
    const hp = e.model.hp;
    return {
      id: ctx.modelName,
      object: 'model',
      created: Math.floor(Date.now() / 1000),
      owned_by: 'kvpack',
      meta: { n_vocab: hp.nVocab, n_ctx_train: hp.nCtxTrain, n_embd: hp.nEmbd, n_ctx_slot: e.o.ctx, size: e.model.weightBytes, cache_policy: e.policy },
    };
  };
  for (const path of ['/v1/models', '/models']) {
    r.get(path, async () => ({ object: 'list', data: [modelEntry()] }));
    // The SDK's models.retrieve(id): the one model under its name.
    r.get(`${path}/*`, async (req) => {
      const id = (req.params as { '*': string })['*'];
      const m = modelEntry();
      if (id !== m.id) throw new HttpError(404, 'not_found_error', `no model '${id}' (this server has '${m.id}')`, 'model', {}, undefined, 'model_not_found');
      return m;
    });
  }

  r.get('/metrics', async (_req, reply) => {
    const e = ctx.need();
    reply.header('content-type', e.metrics.contentType);
    return e.metrics.text();
  });

  r.get('/slots', async () => {
    const e = ctx.need();
    return e.scheduler.slots.map((s) => ({
      id: s.id,
      id_task: s.task?.id ?? -1,
      n_ctx: s.cache.capacity,
      is_processing: !s.idle,
      n_cached: s.cache.length,
      kv_bytes: s.cache.nbytes(),
      state: s.task?.state ?? 'idle',
    }));
  });

  r.post('/slots/:id', { schema: { params: SlotParams, querystring: SlotQuery, body: SlotBody } }, async (req) => {
    const e = ctx.need();
    const id = Number(req.params.id);
    const slot = e.scheduler.slots[id];
    if (!slot) throw new HttpError(404, 'not_found_error', `no slot ${id} (the server has ${e.scheduler.slots.length})`);
    if (!slot.idle) throw new HttpError(409, 'invalid_request_error', `slot ${id} is busy`);
    const t0 = performance.now();
    const action = req.query.action;
    if (action === 'erase') {
      const n = slot.cache.length;
      slot.erase();
      return { id_slot: id, n_erased: n };
    }
    const filename = req.body?.filename;
    const path = slotPath(ctx.slotSavePath, filename);
    if (action === 'save') {
      const r = saveSlot(e, slot, path);
      return { id_slot: id, filename: basename(path), ...r, timings: { save_ms: performance.now() - t0 } };
    }
    const r = restoreSlot(e, slot, path);
    return { id_slot: id, filename: basename(path), ...r, timings: { restore_ms: performance.now() - t0 } };
  });

  r.post('/tokenize', { schema: { body: TokenizeBody } }, async (req) => {
    const tok = ctx.need().model.tokenizer!;
    // In slices, as prompts are: a long text does not hold up other requests.
    const ids = await encodeWithin(tok, req.body.content, { addSpecial: req.body.add_special ?? false, parseSpecial: true }, Infinity);
    return { tokens: req.body.with_pieces ? ids.map((id) => ({ id, piece: utf8.decode(tok.piece(id)) })) : ids };
  });

  r.post('/detokenize', { schema: { body: DetokenizeBody } }, async (req) => {
    const e = ctx.need();
    const bad = req.body.tokens.findIndex((t) => t >= e.model.nVocab);
    if (bad >= 0) throw badRequest(`tokens[${bad}]: ${req.body.tokens[bad]} is outside the vocabulary (${e.model.nVocab})`, `tokens.${bad}`);
    return { content: e.model.tokenizer!.decode(req.body.tokens) };
  });
}
