// `npm run bench:serve`: aggregate decode tokens/s of `kvpack serve` at 1, 2, 4 and 8 concurrent greedy
// streams, with continuous batching and without (one forward pass per slot), servers in this process over
// loopback. Configurations alternate within each round (the machine's speed drifts); medians over rounds.
// Flags: --model PATH (default ../shared/models/tinystories-656k.gguf, else stories260K.gguf), --synthetic
// (a random qwen2 of width 1024 with a real tokenizer, written here: big enough that weight reads dominate a
// decode step, as in real models), --kv SCHEME, --streams 1,2,4,8, --tokens N (per stream), --rounds N.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHATML, writeChatModel } from '../test/fixtures/chat-model.js';
import { fromRoot } from '../test/paths.js';
import { schemePolicy } from '../src/cache/schemes.js';
import { startServer } from '../src/server/server.js';
import { closeMatmulThreads } from '../src/model/matmul-wasm.js';
import { flag, median, option, printTable } from './harness.js';

const PROMPTS = ['Once upon a time', 'The little dog', 'One day, a girl named Sue', 'Tom and his mom went to', 'There was a big tree', 'The sun was hot and', 'A cat sat on', 'In the park, two friends'];

interface Stream {
  first: number;
  end: number;
  tokens: number;
}

async function oneStream(url: string, prompt: string, tokens: number): Promise<Stream> {
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt, max_tokens: tokens, temperature: 0, ignore_eos: true, stream: true }) });
  const reader = res.body!.getReader();
  let first = 0;
  let n = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const s = new TextDecoder().decode(value);
    const chunks = (s.match(/"text":"/g) ?? []).length;
    if (chunks > 0 && first === 0) first = performance.now();
    n += chunks;
  }
  return { first, end: performance.now(), tokens: n };
}

/** Decode tokens per second over the window where every stream had started decoding. */
async function aggregate(url: string, streams: number, tokens: number): Promise<number> {
  const rs = await Promise.all(Array.from({ length: streams }, (_, i) => oneStream(url, PROMPTS[i % PROMPTS.length]!, tokens)));
  const t0 = Math.min(...rs.map((r) => r.first));
  const t1 = Math.max(...rs.map((r) => r.end));
  // The finish chunk carries no text: tokens - 1 content chunks follow the first one.
  return rs.reduce((s, r) => s + r.tokens - 1, 0) / ((t1 - t0) / 1000);
}

function defaultModel(): string {
  for (const f of ['tinystories-656k.gguf', 'stories260K.gguf']) {
    const p = fromRoot('..', 'shared', 'models', f);
    if (existsSync(p)) return p;
  }
  throw new Error('no model: pass --model PATH');
}

/** ~45M parameters in f16 (expanded to f32 at load): a decode step reads ~180 MB of weights. */
function syntheticModel(): string {
  const shape = { dim: 1024, layers: 4, heads: 16, kvHeads: 4, headDim: 64, ff: 2816, ctx: 1024 };
  const dir = mkdtempSync(join(tmpdir(), 'kvpack-bench-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return writeChatModel(dir, 'synthetic-1024', { template: CHATML, shape });
}

const model = option('--model') ?? (flag('--synthetic') ? syntheticModel() : defaultModel());
const kv = option('--kv') ?? 'q8_0';
const counts = (option('--streams') ?? '1,2,4,8').split(',').map(Number);
const tokens = Number(option('--tokens') ?? 64);
const rounds = Number(option('--rounds') ?? 3);
const maxStreams = Math.max(...counts);
const servers = await Promise.all([true, false].map((batching) => startServer({
  modelPath: model, host: '127.0.0.1', port: 0, parallel: maxStreams, ctx: 512, policy: schemePolicy(kv), attention: {}, chunkTokens: 256,
  cacheRamBytes: 0, queueMax: 64, batching, prefillChunk: 128, timeoutS: 600, bodyLimit: 1 << 20, drainTimeoutMs: 1000,
})));
await Promise.all(servers.map((s) => s.ready));
const results = new Map<string, number[]>();
for (let r = 0; r < rounds; r++) {
  for (const n of counts) {
    for (const [i, s] of servers.entries()) {
      await aggregate(s.url, n, 8); // warm-up at this width
      const tps = await aggregate(s.url, n, tokens);
      const key = `${n}:${i}`;
      results.set(key, [...(results.get(key) ?? []), tps]);
    }
  }
}
for (const s of servers) await s.shutdown();
closeMatmulThreads();
console.log(`kvpack serve decode throughput: ${model}, --kv ${kv}, ${tokens} tokens per stream, median of ${rounds} rounds`);
printTable(['streams', 'batched tok/s', 'unbatched tok/s', 'batched / unbatched'], counts.map((n) => {
  const b = median(results.get(`${n}:0`)!);
  const u = median(results.get(`${n}:1`)!);
  return [String(n), b.toFixed(1), u.toFixed(1), (b / u).toFixed(2)];
}));
