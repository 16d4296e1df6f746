// `npm run load`: starts `kvpack serve` as a child process, runs 16 concurrent streaming clients with faults
// mixed in for a bounded time (default 2 min), then reports errors, slot leaks, resident memory against
// model + slots + --cache-ram, and TTFT / inter-token p50 and p99. Exits 1 on any error or leak.
// Flags: --model PATH (default ../shared/models/stories260K.gguf, else a tiny model written here),
// --seconds N, --clients N, --parallel N, --kv SCHEME, --cache-ram MiB, --chunk-tokens N.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fromRoot } from '../test/paths.js';
import { CHATML, writeChatModel } from '../test/fixtures/chat-model.js';
import { declareOptions, option } from './harness.js';
import { percentile, runLoad, type LoadResult } from './load-clients.js';

export interface LoadRunOptions {
  model: string;
  seconds: number;
  clients: number;
  parallel: number;
  kv: string;
  cacheRamMiB: number;
  ctx: number;
  /** --chunk-tokens of the server (default 32). */
  chunkTokens?: number;
}

export interface LoadReport extends LoadResult {
  leakedSlots: number;
  deferredAfter: number;
  rss: { baseline: number; peak: number; slotsPeak: number; prefixPeak: number; bound: number; model: number };
  /** 1-minute load average at the start and the end of the run. */
  load: [number, number];
}

const BODY_LIMIT = 64 << 10;
/** V8 heaps, socket buffers and fastify beyond the model and caches: generous, but a leak outgrows it. */
const SLACK_BYTES = 256 << 20;

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

async function startChild(o: LoadRunOptions): Promise<{ child: ChildProcess; url: string }> {
  const args = [
    fromRoot('bin', 'kvpack.js'),
    'serve',
    '-m',
    o.model,
    '--port',
    '0',
    '-np',
    String(o.parallel),
    '-c',
    String(o.ctx),
    '--kv',
    o.kv,
    '--cache-ram',
    String(o.cacheRamMiB),
    '--body-limit',
    String(BODY_LIMIT),
    '--max-queue',
    String(4 * o.clients),
    '--chunk-tokens',
    String(o.chunkTokens ?? 32),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /kvpack serve: (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`kvpack serve exited ${code}: ${err}`)));
  });
  return { child, url };
}

async function slotsState(url: string): Promise<{ busy: number; bytes: number }> {
  const s = (await (await fetch(`${url}/slots`)).json()) as { is_processing: boolean; kv_bytes: { allocated: number } }[];
  return { busy: s.filter((x) => x.is_processing).length, bytes: s.reduce((a, x) => a + x.kv_bytes.allocated, 0) };
}

async function gauge(url: string, re: RegExp): Promise<number> {
  const m = re.exec(await (await fetch(`${url}/metrics`)).text());
  return m ? Number(m[1]) : 0;
}

export async function loadRun(o: LoadRunOptions): Promise<LoadReport> {
  const load0 = loadavg()[0]!;
  const { child, url } = await startChild(o);
  try {
    const baseline = rssOf(child.pid!);
    let peak = baseline;
    let slotsPeak = 0;
    let prefixPeak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssOf(child.pid!));
      void slotsState(url).then(
        (s) => (slotsPeak = Math.max(slotsPeak, s.bytes)),
        () => {},
      );
      void gauge(url, /^kvpack:prefix_cache_bytes\{kind="allocated"\} (\S+)$/m).then(
        (b) => (prefixPeak = Math.max(prefixPeak, b)),
        () => {},
      );
    }, 100);
    const r = await runLoad({ url, clients: o.clients, durationMs: o.seconds * 1000, bodyLimit: BODY_LIMIT });
    // Disconnected streams are cancelled at the server's next step: give it a moment, then nothing may be busy.
    await new Promise((res) => setTimeout(res, 300));
    clearInterval(sampler);
    peak = Math.max(peak, rssOf(child.pid!));
    const after = await slotsState(url);
    const deferredAfter = await gauge(url, /^llamacpp:requests_deferred (\S+)$/m);
    // The idle server already holds the model (its weights live in the wasm arena) and the runtime.
    const bound = baseline + slotsPeak + o.cacheRamMiB * 2 ** 20 + SLACK_BYTES;
    const model = statSync(o.model).isFile() ? statSync(o.model).size : 0;
    return { ...r, leakedSlots: after.busy, deferredAfter, rss: { baseline, peak, slotsPeak, prefixPeak, bound, model }, load: [load0, loadavg()[0]!] };
  } finally {
    child.kill('SIGTERM');
    await new Promise((res) => child.once('exit', res));
  }
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

export function printReport(o: LoadRunOptions, r: LoadReport): void {
  const ms = (xs: number[], p: number) => `${percentile(xs, p).toFixed(1)} ms`;
  console.log(
    `load: ${o.clients} clients, ${(r.elapsedMs / 1000).toFixed(1)} s, ${o.parallel} slots x ${o.ctx} positions, --kv ${o.kv}, --cache-ram ${o.cacheRamMiB} MiB, model ${o.model}; load average ${r.load[0].toFixed(2)} -> ${r.load[1].toFixed(2)}`,
  );
  console.log(
    `  requests ${r.requests}: ${r.streams} streams (${r.tokens} tokens, ${(r.tokens / (r.elapsedMs / 1000)).toFixed(1)} tok/s), ${r.disconnects} disconnects, ${r.faults} bad requests answered 4xx`,
  );
  console.log(`  errors ${r.errors.length}; slots left busy ${r.leakedSlots}; requests left queued ${r.deferredAfter}`);
  for (const e of r.errors.slice(0, 10)) console.log(`    ${e}`);
  console.log(`  TTFT p50 ${ms(r.ttft, 50)} p99 ${ms(r.ttft, 99)}; inter-token p50 ${ms(r.interToken, 50)} p99 ${ms(r.interToken, 99)}`);
  const x = r.rss;
  const other = x.peak - x.baseline - x.slotsPeak - x.prefixPeak;
  console.log(
    `  RSS idle ${mib(x.baseline)} (model file ${mib(x.model)}, the rest Node, V8 and the server), peak ${mib(x.peak)}: ${x.peak <= x.bound ? 'within' : 'OVER'} the bound ${mib(x.bound)} = idle + slots' KV peak ${mib(x.slotsPeak)} + --cache-ram ${o.cacheRamMiB} MiB + ${mib(SLACK_BYTES)} slack`,
  );
  console.log(
    `  peak - idle = ${mib(x.peak - x.baseline)}: slots' KV ${mib(x.slotsPeak)}, prefix cache ${mib(x.prefixPeak)} (allocated, of ${o.cacheRamMiB} MiB), other ${mib(other)} (JS heap, sockets, wasm memory grown in 16 MiB steps)`,
  );
}

/** True when the run had no error, no leak, and memory stayed in bounds. */
export function loadOk(r: LoadReport): boolean {
  return r.errors.length === 0 && r.leakedSlots === 0 && r.deferredAfter === 0 && r.rss.peak <= r.rss.bound;
}

function defaultModel(): string {
  const shared = fromRoot('..', 'shared', 'models', 'stories260K.gguf');
  if (existsSync(shared)) return shared;
  return writeChatModel(mkdtempSync(join(tmpdir(), 'kvpack-load-')), 'tiny-chat', { template: CHATML });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  declareOptions('load', 'N concurrent streaming clients with faults mixed in against an in-process server', {
    '--model': { kind: 'str', help: 'GGUF to serve', default: '../shared/models/stories260K.gguf, else a tiny chat model' },
    '--seconds': { kind: 'num', help: 'load duration', default: 120 },
    '--clients': { kind: 'int', min: 1, help: 'concurrent clients', default: 16 },
    '--parallel': { kind: 'int', min: 1, help: 'server slots', default: 4 },
    '--kv': { kind: 'str', help: 'cache scheme', default: 'q8_0' },
    '--cache-ram': { kind: 'num', help: 'prefix cache MiB', default: 64 },
    '--ctx': { kind: 'int', min: 1, help: 'context per slot', default: 512 },
    '--chunk-tokens': { kind: 'int', min: 1, help: 'prefix chunk tokens', default: 32 },
  });
  const o: LoadRunOptions = {
    model: option('--model') ?? defaultModel(),
    seconds: Number(option('--seconds') ?? 120),
    clients: Number(option('--clients') ?? 16),
    parallel: Number(option('--parallel') ?? 4),
    kv: option('--kv') ?? 'q8_0',
    cacheRamMiB: Number(option('--cache-ram') ?? 64),
    ctx: Number(option('--ctx') ?? 512),
    chunkTokens: Number(option('--chunk-tokens') ?? 32),
  };
  const r = await loadRun(o);
  printReport(o, r);
  process.exitCode = loadOk(r) ? 0 : 1;
}
