// A matmul job: the weights of a group cut into units of 4-row strips, run by the caller and the pool's
// workers taking units from a shared counter (assembly/matmul/run.ts), and the prefetch job that has idle
// workers read the next weights into cache.
import { threadBudget } from '../runtime/threads.js';
// The pool's workers start with the one unit-job kind attention registers: without it a matmul-only user
// (a bench, the API's matmul alone) never got a worker and ran every job on the calling thread, unannounced.
import '../attention/unit-jobs.js';
import { awaitShared, backgroundUnitsRun, postBackground, postShared, stopBackground, type SharedKernel } from '../runtime/pool.js';
import type { WasmKernels } from '../runtime/wasm.js';
import { ALWAYS_POOL_MACS, matmulConfig, PARALLEL_MIN_MACS } from './config.js';
import { ThreadChooser } from './chooser.js';
import { notePoolFaster } from '../runtime/pool-verdict.js';
import type { Packed, Plan } from './plan.js';
import type { MatmulKernel } from './table.js';
import type { PackedWeight } from './weights.js';

const chooser = new ThreadChooser();

/** The module's global of each job kernel id (assembly/matmul/run.ts K_*, exported: one definition). */
const KERNEL_GLOBALS: Readonly<Record<MatmulKernel | 'touch', string>> = {
  matmulVec: 'K_VEC',
  matmulQ8Tiled: 'K_Q8_TILED',
  matmulF32Tiled: 'K_F32_TILED',
  matmulQ8Relaxed: 'K_Q8_RELAXED',
  touch: 'K_TOUCH',
};
let ids: Record<MatmulKernel | 'touch', number> | null = null;
/** Job kernel ids read from the module's exports (the same in every space: one module). */
function kernelId(k: WasmKernels, kernel: MatmulKernel | 'touch'): number {
  if (!ids) {
    const e = k.exports as unknown as Record<string, WebAssembly.Global>;
    const read = (name: string) => e[name]!.value as number;
    ids = {
      matmulVec: read(KERNEL_GLOBALS.matmulVec),
      matmulQ8Tiled: read(KERNEL_GLOBALS.matmulQ8Tiled),
      matmulF32Tiled: read(KERNEL_GLOBALS.matmulF32Tiled),
      matmulQ8Relaxed: read(KERNEL_GLOBALS.matmulQ8Relaxed),
      touch: read(KERNEL_GLOBALS.touch),
    };
  }
  return ids[kernel];
}

/** One weight of a job: its plan, its packed activations and its output address. */
export interface Part {
  w: PackedWeight;
  p: Plan;
  x: Packed;
  y: number;
}

/** Units per thread a parallel call aims for, so a thread that starts late or stalls holds up at most a few. */
const UNITS_PER_THREAD = 8;
/** Multiply-adds per thread a job needs to be split at all (~2 us of work: a hand-off costs a few us). */
const MIN_UNIT_MACS = 1 << 16;
/**
 * But units are cut at least this big (~30 us of a q8_0 one-token matmul); the tail rule below still cuts a
 * job's last rows into quarter units. Each take is an atomic on a line the other core last wrote: a
 * ping-pong between two threads took ~500 ns a round trip on a 2-vCPU EPYC (family 26), and at 2^16 the
 * dim-768 decode jobs went out in 15-24 units. In-process A/B against 2^16, 12 alternated rounds: decode
 * after 128 (q4_0) 0.89x the step, at 1K (q8_0, q2k) 0.90-0.95x, at 8K 0.97-1.0x; with a busy process on the
 * other core 0.99x. The 8B shape's jobs already cut bigger units.
 */
const UNIT_FLOOR_MACS = 1 << 19;

/**
 * Totals over parallel calls: units run and how many of them the calling thread took (benchmarks report the
 * share); prefetches posted and the touch units the workers took of them before the next job.
 */
const splitStats = { calls: 0, units: 0, callerUnits: 0, prefetches: 0, prefetchUnits: 0 };
export function matmulSplitStats(): Readonly<typeof splitStats> {
  return { ...splitStats, prefetchUnits: backgroundUnitsRun() };
}

/** The job exports (assembly/matmul/run.ts) as the pool's shared-job kernel: a prefetch is its background job. */
const SHARED: SharedKernel = { run: 'matmulRun', cancel: 'matmulCancel', done: 'matmulJobDone' };

/** Per space, the shared job every thread takes units from (pool.ts postShared wants a fixed address). */
const jobs: number[] = [];
function jobOf(k: WasmKernels): number {
  return (jobs[k.index] ||= k.arena.alloc(k.exports['matmulJobBytes']!() as number));
}
let jobTag = 0;

/**
 * The parts' products into their outputs as one job, whose units (whole 4-row strips of one weight) are
 * split dynamically across the pool when that pays: the workers are woken and waited for once per job.
 */
export function runJob(k: WasmKernels, parts: readonly Part[], n: number, scratch: number, stride: number, maxThreads: number): void {
  const e = k.exports;
  let macs = 0;
  for (const { w } of parts) macs += w.rows * w.cols * n;
  const threads = Math.min(maxThreads, Math.floor(macs / MIN_UNIT_MACS) || 1);
  // Big calls skip the chooser (ALWAYS_POOL_MACS); the rest use the pool while it is measured faster.
  const fixed = matmulConfig().threadChoice === 'always' || macs >= ALWAYS_POOL_MACS;
  const parallel = threads > 1 && macs >= PARALLEL_MIN_MACS && (fixed || chooser.choose(macs));
  // Only a clear win holds the workers awake and prefetches; a re-timing of the pool (one thread winning: a
  // busy machine) does neither.
  const chosen = parallel && (fixed || (!chooser.probing && chooser.clearlyFaster(macs)));
  // Units of at least UNIT_FLOOR_MACS, about UNITS_PER_THREAD per thread over the whole job.
  const unitMacs = Math.max(UNIT_FLOOR_MACS, macs / (threads * UNITS_PER_THREAD));
  const job = jobOf(k);
  // A prefetch still running would take units of the job rewritten below.
  stopBackground();
  usingPool = chosen;
  jobTag = (jobTag + 1) >>> 0;
  const t0 = performance.now();
  let count = 0;
  const part = ({ w, p, x, y }: Part, r0: number, rows: number, unitRows: number) =>
    e['matmulPart']!(
      job,
      count++,
      kernelId(k, p.kernel),
      w.type,
      w.ptr + r0 * w.rowBytes,
      w.rowBytes,
      rows,
      w.cols,
      x.q,
      x.d,
      x.s,
      n,
      y + r0 * 4,
      w.rows,
      unitRows,
      scratch,
      stride,
    );
  parts.forEach((pt, i) => {
    const { rows, cols } = pt.w;
    // (The job's counter holds at most 0xffff units in all. Units are whole 4-row groups: the four-row layouts,
    // q8_0x4 / q4_0x4 / q4_Kx4, start a kernel call on a group.)
    const unitRows = parallel ? Math.ceil(Math.max(unitMacs / (cols * n), (rows * (parts.length + 1)) / 0xfff0) / 4) * 4 : rows;
    // The job's last rows, about a unit per thread, go in quarter units: the threads then finish within a
    // quarter unit of each other. (Splits on a multiple of 4 rows: every row keeps its place in its 4-row group.)
    const tail = parallel && i === parts.length - 1 ? Math.min(rows - (rows % 4), threads * unitRows) : 0;
    const split = tail ? rows - tail - ((rows - tail) % 4) : rows;
    if (split > 0) part(pt, 0, split, unitRows);
    if (split < rows) part(pt, split, rows - split, Math.max(4, Math.ceil(unitRows / 16) * 4));
  });
  const units = e['matmulArm']!(job, count, jobTag) as number;
  if (parallel) postShared(k, SHARED.run, job, threads - 1, chosen);
  const mine = e['matmulRun']!(job, 0) as number;
  // Also when not posted: a worker still in its loop from an earlier job (a prefetch, a late wake) may
  // have taken a unit of this one, and must finish it before the activations and the job are rewritten.
  if (mine < units) awaitShared(k, e['matmulJobDone']!(job) as number, units);
  if (parallel) {
    splitStats.calls++;
    splitStats.units += units;
    splitStats.callerUnits += mine;
  }
  if (threads > 1 && macs >= PARALLEL_MIN_MACS && !fixed) chooser.record(macs, parallel, performance.now() - t0);
  if (threads > 1 && macs >= VERDICT_MIN_MACS) notePoolFaster(fixed || chooser.poolFaster(macs));
}

/**
 * Jobs from this size tell attention whether the pool is winning (runtime/pool-verdict.ts): at dim 768 the
 * gate/up and down jobs (3.1M, 1.6M multiply-adds), whose one-thread and pool times differ by more than the noise.
 */
const VERDICT_MIN_MACS = 1 << 20;

/** Whether the last job ran on the pool by choice (a prefetch only pays while the pool is in use). */
let usingPool = false;
/** Bytes of weight rows per prefetch unit: a cancel waits for at most one such unit (~5 us). */
const PREFETCH_UNIT_BYTES = 64 << 10;

/**
 * Has the pool's workers read `group`'s weight rows into cache, in order, while this thread does something
 * else (a decode step's attention, when the workers would only spin): the next job cancels whatever they
 * have not reached. Does nothing when the last job did not use the pool (one thread chosen: a busy machine).
 * Only the weights in the first one's memory space are read (a job addresses one space).
 */
export function matmulPrefetch(group: readonly PackedWeight[]): void {
  const k = group[0]?.space;
  if (!k || !usingPool || !jobs[k.index]) return;
  const job = jobs[k.index]!;
  const e = k.exports;
  stopBackground();
  const mine = group.filter((w) => w.space === k);
  const most = Math.min(mine.length, e['matmulJobParts']!() as number);
  for (let i = 0; i < most; i++) {
    const w = mine[i]!;
    const unitRows = Math.max(1, Math.floor(PREFETCH_UNIT_BYTES / w.rowBytes));
    e['matmulPart']!(job, i, kernelId(k, 'touch'), w.type, w.ptr, w.rowBytes, w.rows, w.cols, 0, 0, 0, 0, 0, 0, unitRows, 0, 0);
  }
  jobTag = (jobTag + 1) >>> 0;
  e['matmulArm']!(job, most, jobTag);
  const workers = threadBudget() - 1;
  // The pool stops it before its next post (attention, the next matmul), so the workers take that at once.
  const posted = postBackground(k, SHARED, job, workers) > 0;
  if (posted) splitStats.prefetches++;
  // No worker to take it (the pool did not start): nothing may be left armed.
  else e[SHARED.cancel]!(job);
}
