// What grows during `npm run load`: the load clients against an in-process server, sampling the process's
// RSS split into V8 heap, array buffers (wasm memory included) and the rest, and the prefix cache's entries,
// every 5 s; a forced GC at the end (run with --expose-gc) shows what is live versus garbage.
import { startServer } from '../src/server/server.js';
import { runLoad } from './load-clients.js';
import { declareOptions, option } from './harness.js';
import { existsSync } from 'node:fs';
import { fromRoot } from '../test/paths.js';

declareOptions('load-probe', 'what grows during npm run load: RSS split and prefix-cache entries every 5 s', {
  '--model': { kind: 'str', help: 'GGUF to serve', default: '../shared/models/stories260K.gguf' },
  '--seconds': { kind: 'num', help: 'load duration', default: 60 },
  '--cache-ram': { kind: 'num', help: 'prefix cache MiB', default: 64 },
});

const model = option('--model') ?? fromRoot('..', 'shared', 'models', 'stories260K.gguf');
if (!existsSync(model)) throw new Error(`no model at ${model}`);
const seconds = Number(option('--seconds') ?? 60);
const server = await startServer({
  modelPath: model,
  host: '127.0.0.1',
  port: 0,
  parallel: 4,
  ctx: 512,
  policy: { k: 'q8_0', v: 'q8_0' },
  attention: {},
  chunkTokens: 32,
  cacheRamBytes: Number(option('--cache-ram') ?? 64) * 2 ** 20,
  queueMax: 64,
  batching: true,
  prefillChunk: 128,
  timeoutS: 30,
  bodyLimit: 64 << 10,
  drainTimeoutMs: 5000,
});
await server.ready;
const mib = (b: number) => (b / 2 ** 20).toFixed(1);
const sample = (label: string) => {
  const m = process.memoryUsage();
  const p = server.ctx.engine!.prefix;
  console.log(
    `${label}: rss ${mib(m.rss)} heapUsed ${mib(m.heapUsed)} heapTotal ${mib(m.heapTotal)} arrayBuffers ${mib(m.arrayBuffers)} external ${mib(m.external)}; prefix entries ${p.size} allocated ${mib(p.bytes)}`,
  );
};
sample('idle');
const timer = setInterval(() => sample(`${Math.round(performance.now() / 1000)} s`), 5000);
await runLoad({ url: server.url, clients: 16, durationMs: seconds * 1000, bodyLimit: 64 << 10 });
clearInterval(timer);
sample('end');
(globalThis as { gc?: () => void }).gc?.();
sample('after gc');
await server.shutdown();
