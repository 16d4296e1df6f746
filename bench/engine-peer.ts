// The peer of bench/engine.ts: node-llama-cpp as its users run it (prebuilt CPU binaries, getLlama with no
// build), timed in a child process of its own so nothing of ours runs beside it. Per weight and KV type it
// is run at 1 and at N threads and the better of each figure is kept; the machine's load during the run is
// recorded (load average, and the CPU other processes used while it ran). bench/engine.ts compares it with
// native llama.cpp measured in the same run (bench/native-llama.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import os from 'node:os';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { cpuJiffies } from './native-llama.js';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp';

export interface PeerRequest {
  /** Weight type -> GGUF path. */
  models: Record<string, string>;
  kvs: string[];
  threads: number[];
  prompt: number;
  decode: number;
  /** Repeats per configuration (the best is kept: a busy machine only ever slows a run down). */
  repeats: number;
}

export interface PeerRow {
  weight: string;
  kv: string;
  prefillTps: number;
  decodeTps: number;
  /** Threads of the best prefill and decode runs. */
  prefillThreads: number;
  decodeThreads: number;
  /** Every run: [threads, prefill tok/s, decode tok/s]. */
  runs: [number, number, number][];
}

export interface PeerResult {
  engine: string;
  rows: PeerRow[];
  /** 1-minute load average before and after. */
  load: [number, number];
  /** Cores' worth of CPU other processes used while the peer ran (0 = it had the machine to itself). */
  otherCores: number;
}

/** node-llama-cpp's name and installed version, as the peer is labelled ("node-llama-cpp 3.22.1"). */
export function peerName(): string {
  // Its package.json is not exported: walk up from the resolved entry point.
  let dir = dirname(createRequire(import.meta.url).resolve('node-llama-cpp'));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      const p = JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string; version?: string };
      if (p.name === 'node-llama-cpp') return `node-llama-cpp ${p.version}`;
    }
    if (dirname(dir) === dir) return 'node-llama-cpp';
    dir = dirname(dir);
  }
}

/** Why the peer runs below native llama.cpp, printed when it does (measured in issue 13). */
export const PEER_SHORTFALL =
  "node-llama-cpp's prebuilt Linux binaries have no persistent thread pool (built without OpenMP): each decode step " +
  'runs on a libuv worker that starts a fresh ggml helper thread, and with 2 vCPUs both often land on one vCPU, where ' +
  "ggml's busy-waiting barriers take turns in 4 ms slices; the same libraries driven from a plain native loop reach " +
  '167-175 tok/s at 2 threads. This bench runs the prebuilt binaries; a local source build (`npx node-llama-cpp source build`) is not measured here.';

const LLAMA_KV: Record<string, string> = { f16: 'F16', q8_0: 'Q8_0', q4_0: 'Q4_0' };
type Tok = import('node-llama-cpp').Token;
const toks = (a: number[]): Tok[] => a as unknown as Tok[];
const tokens = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 300 + ((i * 7919 + seed * 104729) % 31700));

/** Runs inside the child: every (weight, kv, threads) configuration, `repeats` times. */
async function measure(req: PeerRequest): Promise<PeerResult> {
  const load0 = os.loadavg()[0]!;
  const j0 = cpuJiffies();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  const rows: PeerRow[] = [];
  for (const [wt, path] of Object.entries(req.models)) {
    const model = await llama.loadModel({ modelPath: path });
    for (const kv of req.kvs) {
      const kt = LLAMA_KV[kv];
      if (!kt) continue;
      const runs: [number, number, number][] = [];
      for (let r = 0; r < req.repeats; r++) {
        for (const threads of req.threads) {
          const ctx = await model.createContext({
            contextSize: req.prompt + req.decode + 64,
            threads,
            batchSize: 512,
            flashAttention: true,
            experimentalKvCacheKeyType: kt as never,
            experimentalKvCacheValueType: kt as never,
          });
          const seq = ctx.getSequence();
          await seq.evaluateWithoutGeneratingNewTokens(toks(tokens(32, 9)));
          await seq.clearHistory();
          let s = performance.now();
          await seq.evaluateWithoutGeneratingNewTokens(toks(tokens(req.prompt, 1)));
          const prefill = req.prompt / ((performance.now() - s) / 1000);
          s = performance.now();
          let got = 0;
          for await (const _ of seq.evaluate(toks([tokens(1, 3)[0]!]), { temperature: 0 })) {
            if (++got >= req.decode) break;
          }
          runs.push([threads, prefill, got / ((performance.now() - s) / 1000)]);
          await ctx.dispose();
        }
      }
      const bestP = runs.reduce((a, b) => (b[1] > a[1] ? b : a));
      const bestD = runs.reduce((a, b) => (b[2] > a[2] ? b : a));
      rows.push({ weight: wt, kv, prefillTps: bestP[1], decodeTps: bestD[2], prefillThreads: bestP[0], decodeThreads: bestD[0], runs });
    }
    await model.dispose();
  }
  await llama.dispose();
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const j1 = cpuJiffies();
  // Jiffies are 1/100 s on Linux: all CPUs' busy time minus the peer's own, per second of wall time.
  const otherCores = j0 && j1 ? Math.max(0, ((j1.busy - j0.busy) / 100 - (c.user + c.system) / 1e6) / wall) : NaN;
  return { engine: peerName(), rows, load: [load0, os.loadavg()[0]!], otherCores };
}

/** Runs the peer in a child process (this file) and returns its result; throws when it cannot run. */
export function runPeer(req: PeerRequest): PeerResult {
  const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname, JSON.stringify(req)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
  });
  return JSON.parse(out.trim().split('\n').pop()!) as PeerResult;
}

/** A long-context peer session in a child process: one context per thread count, filled alike. */
export interface LongPeer {
  /** Prefills every context to `to` positions. */
  fill(to: number): Promise<void>;
  /** Decode tok/s of `steps` steps per thread count. */
  decode(steps: number): Promise<Record<number, number>>;
  dispose(): Promise<void>;
}

/** Starts the long-context peer (this file with --serve): node-llama-cpp, f16 KV, flash attention. */
export async function startLongPeer(path: string, contextSize: number, threads: number[]): Promise<LongPeer> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, '--serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const pending: { resolve: (v: unknown) => void; reject: (e: Error) => void }[] = [];
  let buf = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const msg = JSON.parse(buf.slice(0, i)) as { error?: string; value?: unknown };
      buf = buf.slice(i + 1);
      const p = pending.shift()!;
      if (msg.error !== undefined) p.reject(new Error(msg.error));
      else p.resolve(msg.value);
    }
  });
  child.on('exit', () => {
    for (const p of pending.splice(0)) p.reject(new Error('the node-llama-cpp peer exited'));
  });
  const call = (req: object) =>
    new Promise<unknown>((resolve, reject) => {
      pending.push({ resolve, reject });
      child.stdin.write(`${JSON.stringify(req)}\n`);
    });
  await call({ op: 'open', path, contextSize, threads });
  return {
    fill: async (to) => void (await call({ op: 'fill', to })),
    decode: async (steps) => (await call({ op: 'decode', steps })) as Record<number, number>,
    dispose: async () => {
      await call({ op: 'close' });
      child.stdin.end();
    },
  };
}

/** The --serve side: one JSON request per line on stdin, one reply per line on stdout. */
async function serve(): Promise<void> {
  const { createInterface } = await import('node:readline');
  const { getLlama } = await import('node-llama-cpp');
  let lib: Llama | null = null;
  let model: LlamaModel | null = null;
  const ctxs: { threads: number; ctx: LlamaContext; seq: LlamaContextSequence; filled: number }[] = [];
  for await (const line of createInterface({ input: process.stdin })) {
    const req = JSON.parse(line) as { op: string; path?: string; contextSize?: number; threads?: number[]; to?: number; steps?: number };
    try {
      let value: unknown = null;
      if (req.op === 'open') {
        lib = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
        model = await lib.loadModel({ modelPath: req.path! });
        for (const threads of req.threads!) {
          const ctx = await model.createContext({
            contextSize: req.contextSize!,
            threads,
            batchSize: 2048,
            flashAttention: true,
            experimentalKvCacheKeyType: 'F16' as never,
            experimentalKvCacheValueType: 'F16' as never,
          });
          ctxs.push({ threads, ctx, seq: ctx.getSequence(), filled: 0 });
        }
      } else if (req.op === 'fill') {
        for (const c of ctxs) {
          const fill = Array.from({ length: req.to! - c.filled }, (_, i) => 300 + ((i * 7919 + req.to! * 104729) % 31000));
          for (let i = 0; i < fill.length; i += 2048) await c.seq.evaluateWithoutGeneratingNewTokens(toks(fill.slice(i, i + 2048)));
          c.filled = req.to!;
        }
      } else if (req.op === 'decode') {
        const out: Record<number, number> = {};
        for (const c of ctxs) {
          const t0 = performance.now();
          let got = 0;
          for await (const _ of c.seq.evaluate(toks([5]), { temperature: 0 })) {
            if (++got >= req.steps!) break;
          }
          c.filled += got + 1;
          out[c.threads] = got / ((performance.now() - t0) / 1000);
        }
        value = out;
      } else if (req.op === 'close') {
        for (const c of ctxs.splice(0)) await c.ctx.dispose();
        await model?.dispose();
        await lib?.dispose();
      }
      process.stdout.write(`${JSON.stringify({ value })}\n`);
    } catch (e) {
      process.stdout.write(`${JSON.stringify({ error: (e as Error).message })}\n`);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--serve') await serve();
  else process.stdout.write(`${JSON.stringify(await measure(JSON.parse(process.argv[2]!) as PeerRequest))}\n`);
}
