// A pool of worker_threads over the shared arena memory: each worker instantiates the same embedded kernel
// module over the same memory, and the caller hands it one kernel call (a share of a matmul's rows) at a
// time through a control block in that memory. Workers spin briefly before Atomics.wait (a wait/notify round
// trip costs ~40 us, KERNELS.md), and the pool never starts more threads than cores, so spinners never
// compete for a core.
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { ArgumentError, KvpackError } from '../errors.js';
import { WASM_BASE64 } from '../kernels/wasm-binary.js';
import { wasmKernels, type WasmKernels } from '../kernels/wasm.js';

/** Control block per worker: [seq, done, kernel, argc, failed] i32, then up to MAX_ARGS f64 at +64. 64-byte lines apart. */
const CTL_BYTES = 256;
const ARGS_AT = 64;
const MAX_ARGS = 16;
/**
 * How long an idle worker (and a waiting caller) spins before sleeping: covers the gap between a layer's
 * matmuls, short enough not to overlap much with the attention pool's spinners (src/kernels/pool.ts).
 */
export const SPIN_MS = 0.1;

/** The worker program (eval'd, CommonJS): wait for a new seq, run exports[kernel](...args), publish done. */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { module, memory, ctl, names, spinMs } = workerData;
const inst = new WebAssembly.Instance(module, { env: { memory } });
const fns = names.map((n) => inst.exports[n]);
const i32 = new Int32Array(memory.buffer, ctl, 16);
const f64 = new Float64Array(memory.buffer, ctl + ${ARGS_AT}, ${MAX_ARGS});
const args = [];
let seen = 0;
for (;;) {
  let s = Atomics.load(i32, 0);
  if (s === seen) {
    const t0 = performance.now();
    for (let k = 1; s === seen; k++) {
      s = Atomics.load(i32, 0);
      if ((k & 255) === 0 && performance.now() - t0 > spinMs) break;
    }
    while (s === seen) { Atomics.wait(i32, 0, seen); s = Atomics.load(i32, 0); }
  }
  seen = s;
  const kernel = i32[2];
  if (kernel < 0) break;
  args.length = i32[3];
  for (let i = 0; i < args.length; i++) args[i] = f64[i];
  try { fns[kernel](...args); } catch { Atomics.store(i32, 4, 1); }
  Atomics.store(i32, 1, s);
  Atomics.notify(i32, 1);
}
`;

function decodeBase64(s: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(s, 'base64'));
}

/** Cores this process may use (os.availableParallelism where present). */
export function availableCores(): number {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/** Runs one kernel call per thread (the caller's thread included) and returns when all are done. */
export class ThreadPool {
  /** Threads including the caller's. */
  readonly threads: number;
  private readonly k: WasmKernels;
  private readonly workers: Worker[] = [];
  /** Per worker: its control block and the last seq handed to it. */
  private readonly ctl: { i32: Int32Array; f64: Float64Array; seq: number }[] = [];
  private readonly names: string[];
  private closed = false;

  /** `names`: the kernel exports workers may run (looked up by index per call). */
  constructor(threads: number, names: readonly string[]) {
    if (!Number.isInteger(threads) || threads < 1) throw new ArgumentError(`threads must be a positive integer, got ${threads}`);
    const k = wasmKernels();
    if (!k) throw new KvpackError('E_WASM', 'threads need the wasm kernels');
    this.k = k;
    this.names = [...names];
    // Never more threads than cores: a spinning thread without a core of its own stalls the others.
    this.threads = Math.min(threads, availableCores());
    const module = new WebAssembly.Module(decodeBase64(WASM_BASE64));
    for (let i = 1; i < this.threads; i++) {
      const ctl = k.arena.alloc(CTL_BYTES);
      const buf = k.arena.memory.buffer;
      this.ctl.push({ i32: new Int32Array(buf, ctl, 16), f64: new Float64Array(buf, ctl + ARGS_AT, MAX_ARGS), seq: 0 });
      const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { module, memory: k.arena.memory, ctl, names: this.names, spinMs: SPIN_MS } });
      w.unref();
      this.workers.push(w);
    }
  }

  /**
   * calls[i] = [kernel name, args] for thread i; calls[0] runs on the caller's thread. At most `threads`
   * calls. Throws when a worker's call trapped.
   */
  run(calls: ReadonlyArray<readonly [string, readonly number[]]>): void {
    if (this.closed) throw new KvpackError('E_THREADS', 'thread pool is closed');
    if (calls.length > this.threads) throw new ArgumentError(`${calls.length} calls for ${this.threads} threads`);
    for (let i = 1; i < calls.length; i++) {
      const [name, args] = calls[i]!;
      const c = this.ctl[i - 1]!;
      const seq = ++c.seq;
      const idx = this.names.indexOf(name);
      if (idx < 0 || args.length > MAX_ARGS) throw new ArgumentError(`thread pool: kernel '${name}' not registered or too many args`);
      c.f64.set(args);
      c.i32[2] = idx;
      c.i32[3] = args.length;
      Atomics.store(c.i32, 0, seq);
      Atomics.notify(c.i32, 0);
    }
    const [name0, args0] = calls[0]!;
    (this.k.exports[name0] as (...a: number[]) => void)(...args0);
    let failed = false;
    for (let i = 1; i < calls.length; i++) {
      const c = this.ctl[i - 1]!;
      waitFor(c.i32, c.seq);
      if (Atomics.exchange(c.i32, 4, 0) !== 0) failed = true;
    }
    if (failed) throw new KvpackError('E_THREADS', 'a worker kernel call trapped');
  }

  /** Stops the workers (they exit after their current call). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.ctl) {
      c.i32[2] = -1;
      Atomics.store(c.i32, 0, ++c.seq);
      Atomics.notify(c.i32, 0);
    }
    for (const w of this.workers) void w.terminate();
  }
}

/** Spin, then sleep, until i32[1] (done) reaches seq. */
function waitFor(i32: Int32Array, seq: number): void {
  let d = Atomics.load(i32, 1);
  if (d === seq) return;
  const t0 = performance.now();
  for (let k = 1; d !== seq; k++) {
    d = Atomics.load(i32, 1);
    if ((k & 255) === 0 && performance.now() - t0 > SPIN_MS) break;
  }
  while (d !== seq) {
    Atomics.wait(i32, 1, d, 50);
    d = Atomics.load(i32, 1);
  }
}
