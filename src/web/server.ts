// `kvpack web`'s server (fastify + @fastify/static): the page bundle (dist/browser) with the headers that
// make it cross-origin isolated (COOP/COEP, so Web Workers share the wasm memory), and the GGUF files of a
// models directory: listed at /models.json and served under /models/ with HTTP Range support, which the
// page's URL source reads tensor by tensor.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import fastifyStatic from '@fastify/static';
import { ArgumentError, KvpackError } from '../errors.js';

/** The bundle scripts/build-browser.mjs writes (relative to dist/src/web/server.js). */
export const PAGE_ROOT = fileURLToPath(new URL('../../browser/', import.meta.url));

export interface WebServerOptions {
  port: number;
  host: string;
  /** Directory whose .gguf files the page lists and loads. */
  models?: string;
  /** Send COOP/COEP (default true); false serves the page without them (one thread). */
  isolation?: boolean;
}

export interface WebServer {
  /** http://host:port/ */
  readonly url: string;
  close(): Promise<void>;
}

export interface ModelEntry {
  name: string;
  size: number;
}

/** The .gguf files directly in `dir`, by name. */
export function listModels(dir: string): ModelEntry[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.gguf'))
    .map((e) => ({ name: e.name, size: statSync(join(dir, e.name)).size }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export async function startWebServer(o: WebServerOptions): Promise<WebServer> {
  if (!existsSync(join(PAGE_ROOT, 'index.html'))) throw new KvpackError('E_NOT_BUILT', `the page is not built (${PAGE_ROOT}): run npm run build`);
  const models = o.models;
  if (models !== undefined && !(existsSync(models) && statSync(models).isDirectory())) throw new ArgumentError(`--models: '${models}' is not a directory`);
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
    // Only the listed kind of file: the directory may hold other things that are not the page's to serve.
    await app.register(fastifyStatic, { root: models, prefix: '/models/', decorateReply: false, acceptRanges: true, cacheControl: false, allowedPath: (p) => p.endsWith('.gguf') });
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
