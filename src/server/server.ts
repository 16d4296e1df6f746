// Starting and stopping `kvpack serve`: listen first (GET /health answers 503 while the model loads), then
// load and wire the engine; shutdown stops accepting, drains in-flight requests (bounded), then closes.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { isHfModelFile } from '../hf/model-files.js';
import type { FastifyInstance } from 'fastify';
import { ArgumentError } from '../errors.js';
import { defaultCapacity } from '../cache/defaults.js';
import { loadModel, type Model } from '../model/model.js';
import { warmUp, type WarmupReport } from './warmup.js';
import { RedisChunkStore } from '../store/redis-store.js';
import type { ChunkStore } from '../store/chunk-store.js';
import { buildApp, type AppOptions } from './app.js';
import { ServerContext } from './context.js';
import { Engine, type EngineOptions } from './engine.js';

/** llama.cpp's default context when -c is not given (capped by the training context). */

export interface ServeOptions extends AppOptions, Omit<EngineOptions, 'ctx'> {
  modelPath: string;
  /** Name in responses and /v1/models (default: the file name). */
  alias?: string;
  host: string;
  port: number;
  /** Positions per slot; default min(training context, 4096). */
  ctx?: number;
  slotSavePath?: string;
  /** Longest a shutdown waits for in-flight requests before ending them. */
  drainTimeoutMs: number;
  /** Remote prefix store: redis://HOST:PORT[/DB], rediss://..., redis-cluster://h1:p1,h2:p2 (see store/url.ts). */
  kvStore?: string;
  /** Expiry of every key written there (default one day). */
  kvStoreTtlS?: number;
  /** Longest a request waits for the remote lookup before its prefill starts without it (default 500 ms). */
  kvStoreTimeoutMs?: number;
  /** The secret the store's values are signed with (default KVPACK_STORE_KEY); the same on every instance. */
  kvStoreKey?: string;
  /** Run a shared store without a key (values only checksummed: anyone who can write to it feeds every instance). */
  kvStoreUnauthenticated?: boolean;
  /** Skip the warm-up before ready (llama-server's --no-warmup); default false. */
  noWarmup?: boolean;
  /** Told what the warm-up ran (the CLI logs it). */
  onWarmup?: (r: WarmupReport) => void;
  /** Loads the model (default loadModel); tests hold it to observe the loading state. */
  load?: (path: string) => Model | Promise<Model>;
}

export interface RunningServer {
  readonly url: string;
  readonly app: FastifyInstance;
  readonly ctx: ServerContext;
  /** The remote prefix store in use (--kv-store or an injected one), else null. */
  readonly store: ChunkStore | null;
  /** Resolves when the model is loaded (rejects when loading failed). */
  readonly ready: Promise<void>;
  /** Stops accepting, drains (at most drainTimeoutMs), closes the listener and frees the caches. */
  shutdown(): Promise<void>;
}

/** sha256 of the model file, streamed (the event loop keeps answering /health meanwhile). */
export function fileDigest(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (b) => h.update(b))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}

/**
 * The model's digest: a file's sha256, or for a Hugging Face directory the sha256 over the files its
 * loader reads (name and digest of each, in name order), so a changed weight or tokenizer changes it.
 */
export async function modelDigest(path: string): Promise<string> {
  if (!(await stat(path)).isDirectory()) return fileDigest(path);
  const names = (await readdir(path, { withFileTypes: true }))
    .filter((e) => e.isFile() && isHfModelFile(e.name))
    .map((e) => e.name)
    .sort();
  const h = createHash('sha256');
  for (const n of names) h.update(`${n}\0${await fileDigest(join(path, n))}\n`);
  return h.digest('hex');
}

export async function startServer(o: ServeOptions): Promise<RunningServer> {
  // A bad address fails here, before anything listens; the client then connects in the background.
  const ownStore = o.kvStore
    ? new RedisChunkStore(o.kvStore, {
        ttlSeconds: o.kvStoreTtlS,
        lookupTimeoutMs: o.kvStoreTimeoutMs,
        log: o.storeLog,
        key: o.kvStoreKey,
        unauthenticated: o.kvStoreUnauthenticated,
      })
    : null;
  const chunkStore = o.chunkStore ?? ownStore ?? undefined;
  const ctx = new ServerContext(o.alias ?? basename(resolve(o.modelPath)), o.slotSavePath);
  const app = buildApp(ctx, o);
  try {
    await app.listen({ host: o.host, port: o.port });
  } catch (e) {
    await ownStore?.close(0);
    throw e;
  }
  const addr = app.server.address();
  const url = typeof addr === 'object' && addr ? `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}` : String(addr);
  const ready = (async () => {
    const digest = await modelDigest(o.modelPath);
    const model = await (o.load ?? loadModel)(o.modelPath);
    if (!model.tokenizer) throw new ArgumentError(`${o.modelPath}: ${model.tokenizerProblem ?? 'no tokenizer'}; serve needs a model with a tokenizer`);
    const ctxSize = o.ctx ?? defaultCapacity(model.hp.nCtxTrain);
    const engine = new Engine(model, digest, { ...o, ctx: ctxSize, chunkStore });
    // Before any request can reach a slot. It holds the event loop (at most WARMUP_MS), as the load does: /health answers after.
    try {
      if (!o.noWarmup) o.onWarmup?.(warmUp(model, { policy: engine.policy, attention: o.attention, chunkTokens: o.chunkTokens, ctx: ctxSize }));
    } catch (e) {
      engine.dispose();
      throw e;
    }
    ctx.engine = engine;
    if (ctx.state === 'loading') ctx.state = 'ready';
  })();
  ready.catch((e: Error) => {
    ctx.state = 'failed';
    ctx.problem = e.message;
  });
  let closing: Promise<void> | null = null;
  const shutdown = () =>
    (closing ??= (async () => {
      ctx.state = 'draining';
      const engine = ctx.engine;
      if (engine) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((r) => (timer = setTimeout(r, o.drainTimeoutMs)));
        await Promise.race([engine.scheduler.drain(), timeout]);
        clearTimeout(timer);
        engine.scheduler.stopAll();
      }
      await app.close();
      engine?.dispose();
      // Queued writes get a last second to go out.
      await ownStore?.close();
    })());
  return { url, app, ctx, store: chunkStore ?? null, ready, shutdown };
}
