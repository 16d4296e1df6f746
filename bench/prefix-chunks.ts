// `npm run bench:prefix`: which --chunk-tokens a shared system prompt actually fills. For each chunk size,
// instance A (`kvpack serve`, 4 slots, --kv-store on a redis-server started here) answers requests that
// share one system prompt and differ in their question (4 concurrent clients), then instance B on the same
// store answers new questions: per instance the share of requests served from cache and of prompt tokens
// reused, A's prefix-cache bytes, and what the store holds (packed chunks, and resume rows: the exact rows a
// resume needs, stored at the deepest chunk boundary before each prompt end and where prompts diverged).
//
//   npm run bench:prefix -- [--model PATH] [--kv q2k] [--chunks 32,64,128,256] [--requests 24] [--resume-every N]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Redis } from 'ioredis';
import OpenAI from 'openai';
import { fromRoot } from '../test/paths.js';
import { RedisServer, redisMissing } from '../test/redis/harness.js';
import { declareOptions, option, printTable } from './harness.js';

const SYSTEM =
  'You are a helpful assistant who tells short stories for children. Every story has a little girl or ' +
  'a little boy, an animal friend, a small problem and a happy ending. Use simple words. Keep every sentence ' +
  'short. Do not use names of real people. Do not make the story sad or scary. Begin with "Once upon a time" ' +
  'and end with "The end." Now answer the request below. ';
const TOPICS = [
  'a red ball',
  'a lost cat',
  'a big tree',
  'the rain',
  'a birthday cake',
  'a boat',
  'the moon',
  'a dog named Max',
  'a garden',
  'a kite',
  'the sea',
  'a small bird',
  'a snowman',
  'a train',
  'a shoe',
  'a flower',
  'the park',
  'a cookie',
  'a toy car',
  'a fish',
  'a hat',
  'the sun',
  'a frog',
  'a box',
];
const question = (i: number) =>
  `Request ${i}: tell me a story about ${TOPICS[i % TOPICS.length]}${i >= TOPICS.length ? ` and ${TOPICS[(i * 7) % TOPICS.length]}` : ''}.`;

interface Side {
  requests: number;
  hits: number;
  prompt: number;
  cached: number;
}

async function startServe(args: string[]): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [fromRoot('bin', 'kvpack.js'), 'serve', '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /kvpack serve: (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`kvpack serve exited ${code}: ${err}`)));
  });
  return {
    url,
    stop: () =>
      new Promise((res) => {
        child.once('exit', () => res());
        child.kill('SIGTERM');
      }),
  };
}

async function drive(url: string, from: number, n: number, clients = 4): Promise<Side> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 600_000 });
  const side: Side = { requests: 0, hits: 0, prompt: 0, cached: 0 };
  let next = from;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < from + n) {
        const i = next++;
        const r = await client.completions.create({ model: 'x', prompt: SYSTEM + question(i), max_tokens: 8, temperature: 0 });
        const c = r.usage!.prompt_tokens_details?.cached_tokens ?? 0;
        side.requests++;
        side.prompt += r.usage!.prompt_tokens;
        side.cached += c;
        if (c > 0) side.hits++;
      }
    }),
  );
  return side;
}

async function metric(url: string, re: RegExp): Promise<number> {
  const m = re.exec(await (await fetch(`${url}/metrics`)).text());
  return m ? Number(m[1]) : 0;
}

/** Bytes of the values under the instances' namespace: packed chunks, and resume rows (keys ending ':resume'). */
async function storeBytes(admin: Redis): Promise<{ chunks: number; chunkBytes: number; resume: number; resumeBytes: number }> {
  const out = { chunks: 0, chunkBytes: 0, resume: 0, resumeBytes: 0 };
  for (const k of await admin.keys('kvpack:*')) {
    const n = await admin.strlen(k);
    if (k.endsWith(':resume')) {
      out.resume++;
      out.resumeBytes += n;
    } else {
      out.chunks++;
      out.chunkBytes += n;
    }
  }
  return out;
}

declareOptions('bench:prefix', 'prefix chunks through Redis per chunk size: hits, bytes, time to first token', {
  '--model': { kind: 'str', help: 'GGUF with a tokenizer', default: '../shared/models/stories260K.gguf' },
  '--kv': { kind: 'str', help: 'cache scheme', default: 'q2k' },
  '--chunks': { kind: 'ints', min: 1, help: 'chunk sizes in tokens', default: '32,64,128,256' },
  '--requests': { kind: 'int', min: 1, help: 'requests per chunk size', default: 24 },
  '--resume-every': { kind: 'int', min: 0, help: 'passed to kvpack serve as --resume-every', default: 0 },
});
const why = redisMissing();
if (why) {
  console.log(`bench:prefix needs redis-server: ${why}`);
  process.exit(0);
}
const shared = fromRoot('..', 'shared', 'models', 'stories260K.gguf');
const model = option('--model') ?? (existsSync(shared) ? shared : '');
if (!model) throw new Error('give --model PATH (a GGUF with a tokenizer): ../shared/models/stories260K.gguf is absent');
const kv = option('--kv') ?? 'q2k';
const sizes = (option('--chunks') ?? '32,64,128,256').split(',').map(Number);
const n = Number(option('--requests') ?? 24);
const every = option('--resume-every') ?? '0';
const rows: string[][] = [];
const kib = (b: number) => (b / 1024).toFixed(1);
const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(0)}%`;
for (const C of sizes) {
  const r = await RedisServer.start();
  try {
    const args = [
      '-m',
      model,
      '--kv',
      kv,
      '-np',
      '4',
      '-c',
      '512',
      '--chunk-tokens',
      String(C),
      '--resume-every',
      every,
      '--kv-store',
      r.url,
      '--kv-store-key',
      'bench prefix-chunks store key (a bench)',
    ];
    const a = await startServe(args);
    let sa: Side;
    let prefixBytes: number;
    try {
      sa = await drive(a.url, 0, n);
      prefixBytes = await metric(a.url, /^kvpack:prefix_cache_bytes\{kind="allocated"\} (\S+)$/m);
    } finally {
      await a.stop();
    }
    const b = await startServe(args);
    let sb: Side;
    try {
      sb = await drive(b.url, 1000, n);
    } finally {
      await b.stop();
    }
    const st = await storeBytes(r.admin());
    rows.push([
      String(C),
      `${sa.hits}/${sa.requests}`,
      pct(sa.cached, sa.prompt),
      `${sb.hits}/${sb.requests}`,
      pct(sb.cached, sb.prompt),
      kib(prefixBytes),
      `${st.chunks}`,
      kib(st.chunkBytes),
      `${st.resume}`,
      kib(st.resumeBytes),
    ]);
    console.error(`chunk-tokens ${C} done`);
  } finally {
    await r.stop();
  }
}
const tokens = 'prompt tokens: the system prompt and a question';
console.log(`bench:prefix: ${model}, --kv ${kv}, ${n} requests per instance (4 clients), ${tokens}, --resume-every ${every}`);
printTable(['chunk', 'A hits', 'A reused', 'B hits', 'B reused', 'A prefix KiB', 'chunks', 'chunk KiB', 'resume rows', 'resume KiB'], rows);
