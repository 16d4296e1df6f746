// `kvpack web`'s server (fastify + @fastify/static): the page bundle (dist/browser) with the headers that
// make it cross-origin isolated (COOP/COEP, so Web Workers share the wasm memory), and the models of a
// models directory (GGUF files and Hugging Face directories, models-dir.ts): listed at /models.json and
// served under /models/ with HTTP Range support, which the page's URL sources read tensor by tensor.
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import fastifyStatic from '@fastify/static';
import { ArgumentError, KvpackError } from '../errors.js';
import { listModels, servable } from './models-dir.js';

export { listModels, type ModelEntry } from './models-dir.js';

/** The bundle scripts/build-browser.mjs writes (relative to dist/src/web/server.js). */
export const PAGE_ROOT = fileURLToPath(new URL('../../browser/', import.meta.url));

export interface WebServerOptions {
  port: number;
  host: string;
  /** Directory whose .gguf files and Hugging Face directories the page lists and loads. */
  models?: string;
  /** Send COOP/COEP (default true); false serves the page without them (one thread). */
  isolation?: boolean;
}

export interface WebServer {
  /** http://host:port/ */
  readonly url: string;
  close(): Promise<void>;
}

export async function startWebServer(o: WebServerOptions): Promise<WebServer> {
  if (!existsSync(join(PAGE_ROOT, 'index.html'))) throw new KvpackError('NOT_BUILT', `the page is not built (${PAGE_ROOT}): run npm run build`);
  // @fastify/static wants an absolute root: a relative --models is taken from the working directory.
  const models = o.models === undefined ? undefined : resolve(o.models);
  if (models !== undefined && !(existsSync(models) && statSync(models).isDirectory())) throw new ArgumentError(`--models: '${o.models}' is not a directory`);
  const app = Fastify({ logger: false });
  if (o.isolation !== false) {
    app.addHook('onSend', async (_req, reply) => {
      reply.header('Cross-Origin-Opener-Policy', 'same-origin');
      reply.header('Cross-Origin-Embedder-Policy', 'require-corp');
      reply.header('Cross-Origin-Resource-Policy', 'same-origin');
    });
  }
  await app.register(fastifyStatic, { root: PAGE_ROOT, prefix: '/', index: 'index.html', cacheControl: false });
  app.get('/models.json', async () => (models === undefined ? [] : listModels(models)));
  if (models !== undefined) {
    // Only listed files: the directory may hold other things that are not the page's to serve.
    await app.register(fastifyStatic, {
      root: models,
      prefix: '/models/',
      decorateReply: false,
      acceptRanges: true,
      cacheControl: false,
      allowedPath: (p) => servable(models, p),
    });
  }
  try {
    await app.listen({ port: o.port, host: o.host });
  } catch (e) {
    await app.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new ArgumentError(`--port ${o.port} is already in use on ${o.host}`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new ArgumentError(`--host '${o.host}' is not an address of this machine`);
    throw e;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return { url: `http://${host}:${port}/`, close: () => app.close() };
}
