// The fastify app: validation without type coercion (a wrong type is a 400 naming the field), the API key,
// 503 while loading or shutting down, one error shape for every failure, and the routes.
import fastify, { type FastifyInstance } from 'fastify';
import type { ServerContext } from './context.js';
import { HttpError, toHttpError } from './http-error.js';
import { adminRoutes } from './routes-admin.js';
import { openaiRoutes } from './routes-openai.js';

export interface AppOptions {
  /** Largest request body in bytes (413 above). */
  bodyLimit: number;
  apiKey?: string;
  /** Socket inactivity and request-receive timeout (llama-server's --timeout). */
  timeoutS: number;
}

/** Paths answered without the API key (llama-server's public endpoints). */
const PUBLIC = new Set(['/health', '/v1/health', '/v1/models', '/models']);
const isPublic = (path: string) => PUBLIC.has(path) || /^\/(v1\/)?models\/./.test(path);

export function buildApp(ctx: ServerContext, o: AppOptions): FastifyInstance {
  const app = fastify({
    bodyLimit: o.bodyLimit,
    connectionTimeout: o.timeoutS * 1000,
    requestTimeout: o.timeoutS * 1000,
    // close() runs after the drain: whatever connection is left is idle keep-alive or abandoned.
    forceCloseConnections: true,
    // Strict: "5" is not an integer and unknown fields are left alone.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
  });

  app.addHook('onRequest', async (req) => {
    const path = req.url.split('?')[0]!;
    if (ctx.state !== 'ready' && !path.endsWith('/health')) throw ctx.unavailable();
    if (o.apiKey && !isPublic(path)) {
      const auth = req.headers.authorization;
      // The scheme is case-insensitive (RFC 9110): "bearer KEY" is the same as "Bearer KEY".
      const bearer = auth ? /^bearer\s+(.+)$/i.exec(auth) : null;
      const given = bearer ? bearer[1]!.trim() : req.headers['x-api-key'];
      if (given !== o.apiKey) throw new HttpError(401, 'authentication_error', 'Invalid API Key');
    }
  });

  app.setErrorHandler((e, req, reply) => {
    const h = toHttpError(e);
    // A client that hung up mid-body is not a bad request: nobody reads the answer.
    if (req.raw.aborted || req.raw.socket?.destroyed) return reply.code(h.status).send(h.body());
    ctx.engine?.metrics.requestErrors.inc({ status: String(h.status) });
    if (h.retryAfter !== undefined) reply.header('retry-after', String(h.retryAfter));
    reply.code(h.status).send(h.body());
  });
  app.setNotFoundHandler((req, reply) => {
    const h = new HttpError(404, 'not_found_error', `no route ${req.method} ${req.url.split('?')[0]}`);
    ctx.engine?.metrics.requestErrors.inc({ status: '404' });
    reply.code(404).send(h.body());
  });

  openaiRoutes(app, ctx);
  adminRoutes(app, ctx);
  return app;
}
