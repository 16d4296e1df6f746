// bench:store — what a long shared prefix costs in Redis per scheme: bytes per chunk, bytes moved per prefix,
// Redis memory per prefix (INFO memory used_memory delta) -> prefixes held per GiB, and the time to fetch a
// prefix back and import it into a fresh cache; then time to first token on a second `kvpack serve`
// instance, full prefill vs Redis hit (store-ttft.ts). Writes to a real redis-server (started here, or --redis URL).
//
//   npm run bench:store -- [--tokens 8192] [--schemes f16,q8_0,q4_0,q2k] [--layers 16 --kv-heads 8 --head-dim 64 | -m MODEL.gguf]
//                          [--redis redis://127.0.0.1:6379/15] [--no-ttft] [--json PATH]
// The TTFT part serves -m MODEL (it needs a tokenizer) or, by default, a random width-1024 qwen2 written here.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { KvCache } from '../src/cache/kvcache.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { Prng } from '../src/numeric/prng.js';
import { readGguf } from '../src/gguf/reader.js';
import { readHparams } from '../src/gguf/model.js';
import { exportChunk, exportResumeRows, importChunks } from '../src/store/cache-chunks.js';
import { RedisChunkStore } from '../src/store/redis-store.js';
import { RedisServer, redisMissing } from '../test/redis/harness.js';
import { declareOptions, flag, median, option, printTable } from './harness.js';
import { measureTtft, syntheticModel, type TtftRow } from './store-ttft.js';

interface Shape {
  name: string;
  layers: number;
  kvHeads: number;
  headDim: number;
}

export interface StoreRow {
  scheme: string;
  chunkTokens: number;
  chunks: number;
  /** Payload bytes of one chunk (every layer's packed K and V, chunk codec header included). */
  chunkBytes: number;
  /** Payload bytes of the resume rows at the prefix end (the exact rows a query there reads: about W - 1 per layer). */
  resumeBytes: number;
  /** Bytes sent to / read from Redis for the whole prefix (values with their store header and checksum). */
  prefixBytesMoved: number;
  /** used_memory growth in Redis for one prefix. */
  redisBytesPerPrefix: number;
  prefixesPerGiB: number;
  /** Median ms to fetch the prefix (pipelined GETs, values verified). */
  fetchMs: number;
  /** Median ms to import the fetched chunks into an empty cache. */
  importMs: number;
}

function shapeFromArgs(): Shape {
  const model = option('-m') ?? option('--model');
  if (model) {
    const h = readHparams(readGguf(model).metadata);
    return { name: model, layers: h.nLayer, kvHeads: h.nHeadKv, headDim: h.headDim };
  }
  // Default: Llama-3.2-1B's KV shape (16 layers, 8 KV heads x 64).
  const num = (flag: string, d: number) => {
    const v = Number(option(flag) ?? d);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${flag} must be a positive integer`);
    return v;
  };
  return { name: 'flags', layers: num('--layers', 16), kvHeads: num('--kv-heads', 8), headDim: num('--head-dim', 64) };
}

async function usedMemory(admin: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
}

/** A cache holding `tokens` positions of random K/V (one random chunk of rows repeated: Redis stores bytes, not meaning). */
function filledCache(scheme: string, shape: Shape, tokens: number): KvCache {
  const cache = new KvCache({ layers: shape.layers, kvHeads: shape.kvHeads, headDim: shape.headDim, capacity: tokens, policy: schemePolicy(scheme) });
  const C = cache.chunkTokens;
  const rows = (seed: number) => new Prng(seed).normals(C * shape.kvHeads * shape.headDim);
  for (let l = 0; l < shape.layers; l++) {
    const k = rows(1 + 2 * l);
    const v = rows(2 + 2 * l);
    for (let t = 0; t < tokens; t += C) cache.append(l, k, v);
  }
  return cache;
}

async function measure(scheme: string, shape: Shape, tokens: number, url: string, admin: Redis): Promise<StoreRow> {
  const cache = filledCache(scheme, shape, tokens);
  const C = cache.chunkTokens;
  const chunks = Array.from({ length: tokens / C }, (_, c) => exportChunk(cache, c));
  const resumeBytes = exportResumeRows(cache, tokens).length;
  const keys = chunks.map((_, c) => createHash('sha256').update(`${scheme}/${c}`).digest('hex'));
  cache.dispose();
  // Big queue so the bench measures Redis, not drops; a generous timeout for f16's large values.
  const store = new RedisChunkStore(url, {
    namespace: 'kvpack-bench',
    unauthenticated: true,
    maxQueueBytes: 4 * 2 ** 30,
    maxQueueEntries: 1 << 16,
    lookupTimeoutMs: 60_000,
    commandTimeoutMs: 60_000,
  });
  if (!(await store.waitReady(5000))) throw new Error(`redis at ${url} is not answering`);
  await admin.flushdb('SYNC');
  const before = await usedMemory(admin);
  chunks.forEach((b, c) => store.put(keys[c]!, b));
  await store.flush();
  const after = await usedMemory(admin);
  const s = store.stats();
  if (s.writtenChunks !== chunks.length)
    throw new Error(`${scheme}: only ${s.writtenChunks} of ${chunks.length} chunks written (errors ${s.errors}, dropped ${s.droppedWrites})`);
  const fetchMs: number[] = [];
  const importMs: number[] = [];
  for (let rep = 0; rep < 5; rep++) {
    const t0 = performance.now();
    const got = await store.getChain(keys);
    const t1 = performance.now();
    const fresh = new KvCache({ layers: shape.layers, kvHeads: shape.kvHeads, headDim: shape.headDim, capacity: tokens, policy: schemePolicy(scheme) });
    importChunks(fresh, got);
    fetchMs.push(t1 - t0);
    importMs.push(performance.now() - t1);
    if (fresh.length !== tokens) throw new Error(`${scheme}: imported ${fresh.length} of ${tokens} positions`);
    fresh.dispose();
  }
  await admin.flushdb('SYNC');
  await store.close();
  const perPrefix = after - before;
  return {
    scheme,
    chunkTokens: C,
    chunks: chunks.length,
    chunkBytes: chunks[0]!.length,
    resumeBytes,
    prefixBytesMoved: s.writtenBytes,
    redisBytesPerPrefix: perPrefix,
    prefixesPerGiB: 2 ** 30 / perPrefix,
    fetchMs: median(fetchMs),
    importMs: median(importMs),
  };
}

export async function benchStore(): Promise<{ rows: StoreRow[]; ttft: TtftRow[] }> {
  const tokens = Number(option('--tokens') ?? 8192);
  const schemeList = (option('--schemes') ?? 'f16,q8_0,q4_0,q2k').split(',');
  const shape = shapeFromArgs();
  if (!Number.isInteger(tokens) || tokens % 256 !== 0 || tokens < 256) throw new Error('--tokens must be a positive multiple of 256 (whole chunks)');
  let server: RedisServer | null = null;
  let url = option('--redis');
  if (!url) {
    const why = redisMissing();
    if (why) {
      console.log(`bench:store skipped: ${why}`);
      return { rows: [], ttft: [] };
    }
    server = await RedisServer.start();
    url = server.url;
  }
  const host = /^redis:\/\/([^/]+)(?:\/(\d+))?$/.exec(url);
  if (!host) throw new Error('--redis: this bench measures one plain redis:// server (INFO memory), e.g. redis://127.0.0.1:6379/15');
  const [h, p] = host[1]!.split(':');
  const admin = new Redis({ host: h, port: Number(p ?? 6379), db: Number(host[2] ?? 0) });
  try {
    console.log(
      `prefix of ${tokens} tokens, ${shape.layers} layers x ${shape.kvHeads} KV heads x ${shape.headDim} (${shape.name}); redis ${url}; load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
    const rows: StoreRow[] = [];
    for (const scheme of schemeList) rows.push(await measure(scheme, shape, tokens, url, admin));
    const f16 = rows.find((r) => r.scheme === 'f16');
    printTable(
      [
        'scheme',
        'bytes/chunk',
        'resume rows B',
        'in chunks',
        'MiB moved/prefix',
        'vs f16',
        'Redis MiB/prefix',
        'prefixes/GiB',
        'vs f16',
        'fetch ms',
        'import ms',
      ],
      rows.map((r) => [
        r.scheme,
        String(r.chunkBytes),
        String(r.resumeBytes),
        (r.resumeBytes / r.chunkBytes).toFixed(2),
        (r.prefixBytesMoved / 2 ** 20).toFixed(2),
        f16 ? `${(f16.prefixBytesMoved / r.prefixBytesMoved).toFixed(2)}x` : '-',
        (r.redisBytesPerPrefix / 2 ** 20).toFixed(2),
        r.prefixesPerGiB.toFixed(2),
        f16 ? `${(r.prefixesPerGiB / f16.prefixesPerGiB).toFixed(2)}x` : '-',
        r.fetchMs.toFixed(1),
        r.importMs.toFixed(1),
      ]),
    );
    // Redis memory includes jemalloc's size classes (a value just over 8 MiB takes a 10 MiB class), so the
    // memory ratio can differ from the bytes-moved ratio: both are printed, neither is adjusted.
    const ttft: TtftRow[] = [];
    if (!flag('--no-ttft')) {
      const model = option('-m') ?? option('--model') ?? syntheticModel(tokens + 1024);
      console.log(
        `\ntime to first token, prefix of ${tokens} tokens + a 160-token question, second instance (${model.endsWith('synthetic-1024.gguf') ? 'random qwen2: width 1024, 4 layers, 4 KV heads x 64' : model}); load average ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}`,
      );
      for (const scheme of schemeList) {
        const row = await measureTtft(scheme, model, tokens, url, async () => void (await admin.flushdb('SYNC')));
        ttft.push(row);
        console.log(`  ${scheme}: full ${(row.fullMs / 1000).toFixed(2)} s, hit ${(row.hitMs / 1000).toFixed(2)} s`);
      }
      const f16t = ttft.find((r) => r.scheme === 'f16');
      printTable(
        ['scheme', 'full prefill s', 'Redis hit s', 'speedup', 'cached', 'MiB read', 'vs f16', 'MiB written'],
        ttft.map((r) => [
          r.scheme,
          (r.fullMs / 1000).toFixed(2),
          (r.hitMs / 1000).toFixed(2),
          `${(r.fullMs / r.hitMs).toFixed(1)}x`,
          String(r.cachedTokens),
          (r.readBytes / 2 ** 20).toFixed(2),
          f16t ? `${(f16t.readBytes / r.readBytes).toFixed(2)}x` : '-',
          (r.writtenBytes / 2 ** 20).toFixed(2),
        ]),
      );
      console.log(
        `load average after: ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}`,
      );
    }
    const json = option('--json');
    if (json) writeFileSync(json, JSON.stringify({ tokens, shape, rows, ttft }, null, 2));
    return { rows, ttft };
  } finally {
    admin.disconnect();
    await server?.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  declareOptions('bench:store', 'KV chunks in Redis per scheme: bytes, put/fetch/import times; then time to first token', {
    '-m': { kind: 'str', help: 'same as --model' },
    '--model': { kind: 'str', help: 'GGUF whose KV shape is stored (and served for the TTFT part)', default: "Llama-3.2-1B's KV shape; synthetic for TTFT" },
    '--layers': { kind: 'int', min: 1, help: 'layers without --model', default: 16 },
    '--kv-heads': { kind: 'int', min: 1, help: 'KV heads without --model', default: 8 },
    '--head-dim': { kind: 'int', min: 1, help: 'head dim without --model', default: 64 },
    '--tokens': { kind: 'int', min: 256, help: 'positions stored (whole 256-token chunks)', default: 8192 },
    '--schemes': { kind: 'strs', help: 'cache schemes', default: 'f16,q8_0,q4_0,q2k' },
    '--redis': { kind: 'str', help: 'redis:// URL of a running server', default: 'a redis-server of its own' },
    '--no-ttft': { kind: 'switch', help: 'skip time to first token' },
    '--json': { kind: 'str', help: 'also write the results to this file' },
  });
  benchStore().catch((e: Error) => {
    console.error(`bench:store: ${e.message}`);
    process.exit(1);
  });
}
