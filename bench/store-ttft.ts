// bench:store, second part: time to first token for a long shared prefix on a second `kvpack serve`
// instance, full prefill vs Redis hit, per scheme. Instance A prefills prefix + its own question (a full
// prefill, timed), its exact chunks go to Redis behind the response; instance B then answers prefix +
// another question from the store. Both are timed from the openai client (request sent -> first token).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { schemePolicy } from '../src/cache/schemes.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import type { RedisChunkStore } from '../src/store/redis-store.js';
import { CHATML, writeChatModel } from '../test/fixtures/chat-model.js';

export interface TtftRow {
  scheme: string;
  prefixTokens: number;
  /** Instance A: prefix + question computed from scratch. */
  fullMs: number;
  /** Instance B: the prefix from Redis, the question computed. */
  hitMs: number;
  cachedTokens: number;
  /** Value bytes B read from Redis / A wrote there. */
  readBytes: number;
  writtenBytes: number;
}

/** A random qwen2 with a real tokenizer; width 1024, 4 layers, 4 KV heads x 64 (bench:serve's --synthetic, longer context). */
export function syntheticModel(ctx: number): string {
  const shape = { dim: 1024, layers: 4, heads: 16, kvHeads: 4, headDim: 64, ff: 2816, ctx };
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-bench-store-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return writeChatModel(dir, 'synthetic-1024', { template: CHATML, shape });
}

const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 10 + ((i * 37 + seed * 101 + ((i * i) % 17)) % 240));

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^${name.replace(/:/g, '\\:')} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** Streams one greedy completion; ms from the request to the first token, and the usage at the end. */
async function firstToken(s: RunningServer, prompt: number[]): Promise<{ ms: number; cached: number }> {
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 3_600_000 });
  const body = { model: 'x', prompt, max_tokens: 4, temperature: 0, ignore_eos: true, stream: true, stream_options: { include_usage: true } };
  const t0 = performance.now();
  let ms = 0;
  let cached = 0;
  for await (const ch of await client.completions.create(body as OpenAI.CompletionCreateParamsStreaming)) {
    if (ms === 0 && ch.choices.length > 0) ms = performance.now() - t0;
    if (ch.usage) cached = ch.usage.prompt_tokens_details?.cached_tokens ?? 0;
  }
  return { ms, cached };
}

export async function measureTtft(scheme: string, modelPath: string, tokens: number, url: string, flush: () => Promise<void>): Promise<TtftRow> {
  await flush();
  // A's deepest chunk boundary before its prompt end is the prefix end: its resume rows there let B resume
  // at the whole prefix (the question is shorter than a chunk).
  const question = 160;
  const lines: string[] = [];
  const start = () =>
    startServer({
      modelPath,
      host: '127.0.0.1',
      port: 0,
      parallel: 1,
      ctx: tokens + question + 64,
      policy: schemePolicy(scheme),
      attention: {},
      chunkTokens: 256,
      cacheRamBytes: 4 * 2 ** 30,
      queueMax: 4,
      batching: true,
      prefillChunk: 128,
      timeoutS: 3600,
      bodyLimit: 8 << 20,
      drainTimeoutMs: 1000,
      kvStore: url,
      kvStoreUnauthenticated: true,
      storeLog: (l) => lines.push(l),
    });
  const [a, b] = [await start(), await start()];
  try {
    await Promise.all([a.ready, b.ready]);
    for (const s of [a, b]) if (!(await (s.store as RedisChunkStore).waitReady(5000))) throw new Error(`redis at ${url} is not answering`);
    const prefix = ids(tokens, 1);
    const full = await firstToken(a, [...prefix, ...ids(question, 2)]);
    await a.store!.flush();
    const hit = await firstToken(b, [...prefix, ...ids(question, 3)]);
    if (hit.cached !== tokens) throw new Error(`${scheme}: the second instance reused ${hit.cached} of ${tokens} prefix tokens (${lines.join('; ')})`);
    return {
      scheme,
      prefixTokens: tokens,
      fullMs: full.ms,
      hitMs: hit.ms,
      cachedTokens: hit.cached,
      readBytes: await metric(b.url, 'kvpack:remote_store_read_bytes_total'),
      writtenBytes: await metric(a.url, 'kvpack:remote_store_written_bytes_total'),
    };
  } finally {
    await Promise.all([a.shutdown(), b.shutdown()]);
  }
}
