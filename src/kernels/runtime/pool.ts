// The one worker_threads pool of the process: workers instantiate the same wasm module over the shared arena
// memory and serve three kinds of job: attention units taken from a shared counter (runJob), one kernel
// call per worker (runCalls), and a shared job that hands out its own units (postShared: the matmuls). The calling thread works too and then waits, so
// callers stay synchronous. One set of spinners for everything: never more busy threads than cores.
// Workers come from the platform (pool-host.ts: worker_threads; pool-host.browser.ts: Web Workers, started
// ahead of use by startPool); a failed start means single-threaded.
import { PoolError } from '../../errors.js';
import type { WasmKernels } from './wasm.js';
import { unitJobs, type UnitJobs } from './unit-jobs.js';
import {
  CALL_SLOT,
  CTL_WORDS,
  DONE,
  ERR,
  ERR_BYTES,
  GEN,
  HOLD,
  JOB_CALLS,
  JOB_LEN,
  JOB_SHARED,
  JOB_UNITS,
  KIND,
  MAX_CALL_ARGS,
  MAX_UNITS,
  QUIT,
  READY,
  SHARED_FN,
  SHARED_WORKERS,
  SPACE,
  armTickets,
  recordedError,
  takeUnit,
  wakeWorkers,
} from './pool-control.js';
import { onSpaceAdded, spaces } from './spaces.js';
import { host } from './pool-host.js';
import { setThreadBudget, threadBudget } from './threads.js';

const cores = host.cores;

/** Bytes for the JSON of a unit job's few strings (formats, kernel names). */
const JOB_BYTES = 1 << 14;
/** Numbers a pooled job may take (1 MiB); a job packed bigger runs on the calling thread. */
const JOB_NUMS = 1 << 17;
/** Segments a pooled job of `kind` may have. */
const jobSegs = (kind: UnitJobs) => Math.floor(JOB_NUMS / kind.packedLength(1));

/**
 * Busy-wait before Atomics.wait: a wake-up after wait costs ~40 us (KERNELS.md), a spin a few us. Long enough
 * to cover the gap between a layer's matmuls and its attention, so a decode step wakes no sleeping worker.
 */
export const SPIN_MS = 0.1;
/**
 * Back-off when the other cores are busy (a shared machine): a job whose workers took some but under a
 * quarter of the units twice in a row means they barely ran, and then the wait for their last unit costs more
 * than they saved (bench probeThreshold: 0.78-0.94x with the second core loaded). The next BACKOFF_JOBS jobs
 * then run on the calling thread alone before the pool is tried again.
 */
const BACKOFF_JOBS = 32;
let backoff = 0;
let starved = 0;

/** Startup wait for workers to instantiate the module (first use only). */
const START_TIMEOUT_MS = 5000;

interface Pool {
  readonly workers: number;
  readonly ctl: Int32Array;
  readonly jobBytes: Uint8Array;
  readonly jobNums: Float64Array;
  readonly calls: Float64Array;
  readonly errText: Uint8Array;
  /** Export name -> index in the module's export list (the order every worker sees too). */
  readonly exportIndex: ReadonlyMap<string, number>;
  readonly handles: { terminate(): unknown }[];
  /** Spaces the workers instantiated the kernels over (a space added later needs a new pool). */
  readonly spaces: number;
  readonly sharedJobs: Int32Array;
}

let pool: Pool | null = null;
let poolFailed = '';
/** Set when a memory space was added after the pool started: the next job that can block restarts it. */
let stale = false;
onSpaceAdded(() => {
  stale = pool !== null;
});
/** Each worker's unit scratch per space, kept across pool restarts (scratchFor). */
const workerScratch: number[][] = [];

/** Worker i's scratch in space k, taken from that arena once, so jobs never grow memory on a worker's behalf. */
function scratchFor(k: WasmKernels, i: number): number {
  const perSpace = (workerScratch[k.index] ??= []);
  return (perSpace[i] ??= k.arena.alloc(unitJobs().scratchBytes));
}

/** The pool when it can serve a job on k's space (a browser pool started before k was added cannot). */
function poolFor(k: WasmKernels, p: Pool | null): Pool | null {
  return p && k.index < p.spaces ? p : null;
}
/** Cores the machine reports. */
export function coreCount(): number {
  return cores;
}

/** Sets the one thread budget (threads.ts; 1 = never use workers), rounded down into 1..cores. */
export function setThreads(n: number): void {
  setThreadBudget(Math.max(1, Math.min(Math.floor(n), cores)));
}

/** Threads a pool job may use: the thread budget, 1 when workers cannot run here. */
export function getThreads(): number {
  return host.unavailable ? 1 : threadBudget();
}

/** Why the pool is unavailable ('' when it runs or was never needed). */
export function poolFailure(): string {
  return poolFailed || host.unavailable;
}

/** Starts workers (once) for `threads - 1` helpers; returns null when they cannot run here. */
function ensurePool(k: WasmKernels, want: number): Pool | null {
  if (pool && stale && host.blockingStart) stopPool();
  // Where workers start only ahead of use (browsers), the pool startPool made serves every size of call.
  if (pool && (pool.workers >= want || !host.blockingStart)) return poolFor(k, pool);
  if (host.unavailable || poolFailed || !host.blockingStart) return null;
  if (pool) stopPool();
  try {
    const p = spawnPool(k, want);
    const t0 = Date.now();
    while (Atomics.load(p.ctl, READY) < want && Date.now() - t0 < START_TIMEOUT_MS) Atomics.wait(p.ctl, READY, Atomics.load(p.ctl, READY), 50);
    if (Atomics.load(p.ctl, READY) < want) throw new PoolError(`workers did not start within ${START_TIMEOUT_MS} ms`);
    pool = p;
    stale = false;
    return poolFor(k, pool);
  } catch (e) {
    poolFailed = (e as Error).message;
    return null;
  }
}

/**
 * Starts `want` workers without blocking and resolves true once all are ready (false when they cannot
 * run here: poolFailure() or the host says why). The only way a browser gets threads: a Web Worker does
 * not start while the thread that created it blocks in Atomics.wait.
 */
export async function startPool(k: WasmKernels, want: number): Promise<boolean> {
  if (pool && pool.workers >= want) return true;
  if (host.unavailable || poolFailed) return false;
  if (pool) stopPool();
  try {
    const p = spawnPool(k, want);
    const t0 = Date.now();
    while (Atomics.load(p.ctl, READY) < want) {
      if (Date.now() - t0 > START_TIMEOUT_MS) throw new PoolError(`workers did not start within ${START_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    pool = p;
    stale = false;
    return true;
  } catch (e) {
    poolFailed = (e as Error).message;
    return false;
  }
}

/** Shared control words and `want` started workers (not yet known to be ready), over every space so far. */
function spawnPool(k: WasmKernels, want: number): Pool {
  const all = spaces();
  const ctl = new Int32Array(new SharedArrayBuffer(CTL_WORDS * 4));
  Atomics.store(ctl, SHARED_FN, -1);
  const jobBytes = new Uint8Array(new SharedArrayBuffer(JOB_BYTES));
  const kind = unitJobs();
  const jobNums = new Float64Array(new SharedArrayBuffer(kind.packedLength(jobSegs(kind)) * 8));
  const calls = new Float64Array(new SharedArrayBuffer(want * CALL_SLOT * 8));
  const errText = new Uint8Array(new SharedArrayBuffer(ERR_BYTES));
  const sharedJobs = new Int32Array(new SharedArrayBuffer(all.length * 4));
  const memories = all.map((s) => s.arena.memory);
  const handles = [];
  for (let i = 0; i < want; i++) {
    const scratch = all.map((s) => scratchFor(s, i));
    handles.push(
      host.spawn({ id: i, memories, module: k.module, ctl, jobBytes, jobNums, calls, errText, scratch, sharedJobs, spinMs: SPIN_MS }, kind.workerUrl),
    );
  }
  const exportIndex = new Map(WebAssembly.Module.exports(k.module).map((e, i) => [e.name, i]));
  return { workers: want, ctl, jobBytes, jobNums, calls, errText, exportIndex, handles, spaces: all.length, sharedJobs };
}

/**
 * Attention jobs and kernel calls handed to workers since start, the units of those jobs the workers ran
 * (the rest ran on the caller), and the posts that had to wake a sleeping worker.
 */
const shared = { jobs: 0, workerUnits: 0, calls: 0, wakes: 0 };

/** Workers running now, and the jobs, units and calls they were handed (the proof that threads ran). */
export function poolStats(): { workers: number; jobs: number; workerUnits: number; calls: number; wakes: number } {
  return { workers: pool?.workers ?? 0, ...shared };
}

/** Callers holding the workers awake (holdWorkers / releaseWorkers), and whether a post raised HOLD for them. */
let holds = 0;

/**
 * Keeps the workers spinning between jobs, not sleeping, from the next post until releaseWorkers (calls
 * nest): a decode step hands them a job every ~0.1 ms with gaps (attention at short context, the small ops)
 * about as long as their spin, and a wake costs ~0.1 ms on this machine kind. Nothing spins for a caller that
 * posts nothing (one thread chosen: a busy machine), as HOLD is raised by a post.
 */
export function holdWorkers(): void {
  holds++;
}

export function releaseWorkers(): void {
  holds = Math.max(0, holds - 1);
  if (holds === 0 && pool) Atomics.store(pool.ctl, HOLD, 0);
}

/** After a post bumped GEN: holds the workers if asked (and `hold`), wakes a sleeping one. */
function announce(ctl: Int32Array, hold = true): void {
  if (hold && holds > 0 && Atomics.load(ctl, HOLD) === 0) Atomics.store(ctl, HOLD, 1);
  if (wakeWorkers(ctl)) shared.wakes++;
}

/** Stops the workers (tests; process exit does not need it, workers are unref'd). */
export function stopPool(): void {
  if (!pool) return;
  Atomics.store(pool.ctl, QUIT, 1);
  Atomics.add(pool.ctl, GEN, 1);
  Atomics.notify(pool.ctl, GEN);
  for (const h of pool.handles) void h.terminate();
  pool = null;
}

/**
 * The exports of a shared job (assembly/matmul/run.ts): `run`(job, thread) takes units from the job's counter
 * until none are left, `cancel`(job) stops the taking and returns the units taken, `done`(job) is the address
 * of the count of units finished.
 */
export interface SharedKernel {
  readonly run: string;
  readonly cancel: string;
  readonly done: string;
}

/** The shared job posted as background work (a weight prefetch), until the next post stops it. */
let background: { k: WasmKernels; job: number; kernel: SharedKernel } | null = null;
/** Units background jobs had run when they were stopped (the proof a prefetch did something). */
let backgroundUnits = 0;

/**
 * Stops the background job, if one is posted: no unit is taken after this, and the ones taken are waited for.
 * Every other post of the pool does this first, so its workers take the new job at once; a caller that
 * rewrites the shared job's memory calls it before.
 */
export function stopBackground(): void {
  const b = background;
  if (!b) return;
  background = null;
  const e = b.k.exports;
  const taken = e[b.kernel.cancel]!(b.job) as number;
  awaitShared(b.k, e[b.kernel.done]!(b.job) as number, taken);
  backgroundUnits += taken;
}

/** Units run by background jobs before they were stopped, since start. */
export function backgroundUnitsRun(): number {
  return backgroundUnits;
}

/**
 * Runs every unit of the job on `nThreads` threads (this one included) and returns when all are done, with
 * the threads it offered the units to: 1 when it ran them all here (the pool cannot start, the job does not
 * fit the pool's buffers, or a back-off after workers that barely ran).
 */
export function runJob<J extends { readonly units: number }, S>(k: WasmKernels, kind: UnitJobs<J, S>, job: J, mainScratch: S, nThreads: number): number {
  if (kind !== unitJobs()) throw new PoolError('runJob: the job is not of the registered unit-job kind (the workers could not run it)');
  if (nThreads > 1 && backoff > 0) {
    backoff--;
    nThreads = 1;
  }
  const p = nThreads > 1 ? ensurePool(k, nThreads - 1) : null;
  if (!p) {
    for (let u = 0; u < job.units; u++) kind.run(k.exports, k.arena.memory, job, u, mainScratch);
    return 1;
  }
  const text = kind.segments(job) <= jobSegs(kind) ? new TextEncoder().encode(JSON.stringify(kind.pack(job, p.jobNums))) : null;
  if (!text || text.length > JOB_BYTES || job.units > MAX_UNITS) {
    for (let u = 0; u < job.units; u++) kind.run(k.exports, k.arena.memory, job, u, mainScratch);
    return 1;
  }
  const { ctl } = p;
  stopBackground();
  shared.jobs++;
  p.jobBytes.set(text);
  Atomics.store(ctl, SPACE, k.index);
  Atomics.store(ctl, JOB_LEN, text.length);
  Atomics.store(ctl, KIND, JOB_UNITS);
  Atomics.store(ctl, DONE, 0);
  Atomics.store(ctl, ERR, 0);
  const gen = Atomics.load(ctl, GEN) + 1;
  armTickets(ctl, gen);
  Atomics.store(ctl, GEN, gen);
  announce(ctl);
  let mine = 0;
  for (;;) {
    const u = takeUnit(ctl, gen, job.units);
    if (u < 0) break;
    kind.run(k.exports, k.arena.memory, job, u, mainScratch);
    mine++;
  }
  if (mine > 0) Atomics.add(ctl, DONE, mine);
  waitDone(ctl, job.units);
  const theirs = job.units - mine;
  shared.workerUnits += theirs;
  // Workers that took no unit cost this thread no wait (it ran them all): only late, few units count.
  if (theirs > 0 && theirs * 4 < job.units) {
    if (++starved >= 2) {
      backoff = BACKOFF_JOBS;
      starved = 0;
    }
  } else if (theirs > 0) starved = 0;
  const failed = recordedError(ctl, p.errText);
  if (failed) throw new PoolError(`a pool worker failed on its unit (${failed.message})`, failed);
  return 1 + p.workers;
}

/** Spins for SPIN_MS, then sleeps, until the DONE word reaches `target`. */
function waitDone(ctl: Int32Array, target: number): void {
  const spinUntil = performance.now() + SPIN_MS;
  let done = Atomics.load(ctl, DONE);
  while (done < target) {
    if (performance.now() > spinUntil) Atomics.wait(ctl, DONE, done, 100);
    done = Atomics.load(ctl, DONE);
  }
}

/** One kernel call: an export of the kernel module by name, and its numeric arguments. */
export type KernelCall = readonly [name: string, args: readonly number[]];

/**
 * Runs calls[0] on this thread and calls[i] on worker i-1 at the same time; returns when all are done.
 * Calls without a worker (pool unavailable or smaller) run here afterwards. Throws E_THREADS when a
 * worker's call trapped or names no kernel.
 */
export function runCalls(k: WasmKernels, calls: readonly KernelCall[]): void {
  const p = calls.length > 1 ? ensurePool(k, Math.min(calls.length, cores) - 1) : null;
  const sent = p ? Math.min(calls.length - 1, p.workers) : 0;
  if (p && sent > 0) {
    const { ctl } = p;
    stopBackground();
    shared.calls += sent;
    for (let w = 0; w < p.workers; w++) {
      const slot = w * CALL_SLOT;
      if (w >= sent) {
        p.calls[slot] = -1;
        continue;
      }
      const [name, args] = calls[w + 1]!;
      const idx = p.exportIndex.get(name);
      if (idx === undefined || args.length > MAX_CALL_ARGS) throw new PoolError(`pool: no kernel export '${name}' or more than ${MAX_CALL_ARGS} args`);
      p.calls[slot] = idx;
      p.calls[slot + 1] = args.length;
      p.calls.set(args, slot + 2);
    }
    Atomics.store(ctl, SPACE, k.index);
    Atomics.store(ctl, KIND, JOB_CALLS);
    Atomics.store(ctl, DONE, 0);
    Atomics.store(ctl, ERR, 0);
    Atomics.add(ctl, GEN, 1);
    announce(ctl);
  }
  const call = (c: KernelCall) => (k.exports[c[0]] as (...a: readonly number[]) => void)(...c[1]);
  call(calls[0]!);
  for (let i = sent + 1; i < calls.length; i++) call(calls[i]!);
  if (p && sent > 0) {
    waitDone(p.ctl, sent);
    const failed = recordedError(p.ctl, p.errText);
    if (failed) throw new PoolError(`pool: a worker kernel call failed (${failed.message})`, failed);
  }
}

/**
 * Wakes up to `workers` pool workers to run export `name`(job, thread number 1..workers) and returns at once:
 * for kernels that take their work from a counter in the job itself (assembly/matmul/run.ts), so the caller
 * runs the same export as thread 0 and then waits on the job's own done count (awaitShared); a worker that
 * wakes late finds less to do, or nothing. The export and job address are fixed at a pool's first post: a
 * late worker reads them while a newer post may be under way, which only fixed values make harmless.
 * Returns the workers woken (0 when the pool cannot run). `hold` false: this post does not start a hold
 * (holdWorkers), for a one-off use of the pool (re-timing it while one thread is faster).
 */
export function postShared(k: WasmKernels, name: string, job: number, workers: number, hold = true): number {
  const p = workers > 0 ? ensurePool(k, Math.min(workers, cores - 1)) : null;
  if (!p) return 0;
  const { ctl } = p;
  const idx = p.exportIndex.get(name);
  if (idx === undefined) throw new PoolError(`pool: no kernel export '${name}'`);
  const fn = Atomics.load(ctl, SHARED_FN);
  if (fn < 0) Atomics.store(ctl, SHARED_FN, idx);
  else if (fn !== idx) throw new PoolError('pool: one shared-job export per pool');
  const at = Atomics.load(p.sharedJobs, k.index);
  if (at === 0) Atomics.store(p.sharedJobs, k.index, job | 0);
  else if (at >>> 0 !== job) throw new PoolError('pool: one shared job per space (its address cannot change)');
  const n = Math.min(workers, p.workers);
  Atomics.store(ctl, SHARED_WORKERS, n);
  Atomics.store(ctl, SPACE, k.index);
  Atomics.store(ctl, KIND, JOB_SHARED);
  Atomics.store(ctl, ERR, 0);
  Atomics.add(ctl, GEN, 1);
  announce(ctl, hold);
  // Each worker woken runs the shared kernel call (a threaded matmul): counted with the kernel calls.
  shared.calls += n;
  return n;
}

/**
 * Posts a shared job as background work (postShared, for at most `workers`): the next post of the pool, or
 * stopBackground, stops it. Returns the workers woken (0: nothing runs it, and it stays armed for the caller to cancel).
 */
export function postBackground(k: WasmKernels, kernel: SharedKernel, job: number, workers: number): number {
  stopBackground();
  const n = postShared(k, kernel.run, job, workers);
  if (n > 0) background = { k, job, kernel };
  return n;
}

let words: Int32Array | null = null;

/**
 * Waits until the i32 at arena address `ptr` reaches `target` (spinning SPIN_MS, then sleeping until the
 * kernel's notify); throws PoolError when a worker's shared call trapped.
 */
export function awaitShared(k: WasmKernels, ptr: number, target: number): void {
  const buf = k.arena.memory.buffer as unknown as SharedArrayBuffer;
  if (words?.buffer !== buf) words = new Int32Array(buf);
  const i = ptr >>> 2;
  let v = Atomics.load(words, i);
  if (v >= target) return;
  const spinUntil = performance.now() + SPIN_MS;
  while (v < target) {
    if (pool && Atomics.load(pool.ctl, ERR)) throw new PoolError('pool: a worker kernel call trapped', recordedError(pool.ctl, pool.errText));
    if (performance.now() > spinUntil) Atomics.wait(words, i, v, 10);
    v = Atomics.load(words, i);
  }
}
