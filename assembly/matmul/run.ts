// Threaded matmuls, split dynamically: a job in shared memory names one kernel call over `rows` weight rows
// (or a few, one per weight of a group), cut into units of `unitRows`; every thread (the caller and each pool worker) runs matmulRun(job, thread),
// which takes units from the job's counter until none are left, so a thread that starts late (a stalled
// vCPU, a sleeping worker) just takes fewer and holds up no one. The counter carries the job's tag and unit
// count, and the rest of the job is read only after a unit is taken: a worker that woke for an old job
// cannot take a unit of a newer one under the old one's arguments, and the caller rewrites a job only once
// every unit of the one before is done.
import { matmulQ8Tiled } from './tile_q8';
import { matmulF32Tiled } from './tile_f32';
import { matmulVec } from './vec';
import { matmulQ8Relaxed } from './relaxed_tile';
import { keep } from './touch';

// Kernel ids, exported (src/kernels/matmul/job.ts reads them from the module).
export const K_VEC: i32 = 0;
export const K_Q8_TILED: i32 = 3;
export const K_F32_TILED: i32 = 4;
/** relaxed_tile.ts (relaxed-SIMD builds only; the dispatch never names it in a baseline build). */
export const K_Q8_RELAXED: i32 = 6;
/** Reads a unit's weight rows without computing: pulls them into cache ahead of their matmul (matmulPrefetch). */
export const K_TOUCH: i32 = 5;

// Job layout (64-byte aligned): ticket u64 (tag << 32 | units << 16 | next unit) | done i32 (units
// finished) | part count, units | then up to MAX_PARTS calls (the weights of one group, q/k/v or gate/up, which
// read the same activations, the last one's final rows as a part of smaller units), one cache line each: kernel, type, w, rowBytes, rows, cols, xq, xd, xs, n,
// y, yStride, unitRows, scratch, scratchStride, and the end of its units in the job's numbering. One job per
// group: the workers are woken and waited for once per group, not once per weight. The ticket, the done
// count and the fields sit on cache lines of their own, so taking a unit does not evict the fields another
// thread is about to read.
const TICKET: usize = 0;
const DONE: usize = 64;
const PARTS: usize = 128;
const F: usize = 192;
const MAX_PARTS: i32 = 5;

/** Bytes of one job. */
export function matmulJobBytes(): i32 {
  return <i32>F + MAX_PARTS * 64;
}

/** Most weights one job holds. */
export function matmulJobParts(): i32 {
  return MAX_PARTS;
}

/** Address of a job's done count (the i32 a waiting caller watches). */
export function matmulJobDone(job: usize): usize {
  return job + DONE;
}

@inline function field(part: usize, i: usize): i32 {
  return load<i32>(part + (i << 2));
}

/**
 * Writes call `part` (< MAX_PARTS) of a job: `rows` weight rows in units of `unitRows`, numbered after the
 * units of the parts before it. Returns the job's units so far (at most 0xffff in all). Arm it with matmulArm.
 */
export function matmulPart(job: usize, part: i32, kernel: i32, type: i32, w: usize, rowBytes: i32, rows: i32, cols: i32, xq: usize, xd: usize, xs: usize, n: i32, y: usize, yStride: i32, unitRows: i32, scratch: usize, scratchStride: i32): i32 {
  const f = job + F + (<usize>part << 6);
  const before = part > 0 ? load<i32>(f - 4) : 0;
  const end = before + (rows + unitRows - 1) / unitRows;
  store<i32>(f, kernel);
  store<i32>(f, type, 4);
  store<i32>(f, <i32>w, 8);
  store<i32>(f, rowBytes, 12);
  store<i32>(f, rows, 16);
  store<i32>(f, cols, 20);
  store<i32>(f, <i32>xq, 24);
  store<i32>(f, <i32>xd, 28);
  store<i32>(f, <i32>xs, 32);
  store<i32>(f, n, 36);
  store<i32>(f, <i32>y, 40);
  store<i32>(f, yStride, 44);
  store<i32>(f, unitRows, 48);
  store<i32>(f, <i32>scratch, 52);
  store<i32>(f, scratchStride, 56);
  store<i32>(f, end, 60);
  return end;
}

/**
 * Arms a job of `parts` calls written by matmulPart (the done count first, the ticket last, both
 * atomically, so a thread that sees the ticket sees the job). Returns the number of units.
 */
export function matmulArm(job: usize, parts: i32, tag: u32): i32 {
  const units = load<i32>(job + F + (<usize>(parts - 1) << 6) + 60);
  store<i32>(job + PARTS, parts);
  atomic.store<i32>(job + PARTS, units, 4);
  atomic.store<i32>(job + DONE, 0);
  atomic.store<u64>(job + TICKET, (<u64>tag << 32) | (<u64>units << 16));
  return units;
}

/**
 * Ends a job early: no unit is handed out after this. Returns the units taken before (the done count to wait
 * for), which also becomes the job's total, so the thread finishing the last of them notifies a waiting caller.
 */
export function matmulCancel(job: usize): i32 {
  for (;;) {
    const t = atomic.load<u64>(job + TICKET);
    const next = <i32>(t & 0xffff);
    const units = <i32>((t >> 16) & 0xffff);
    if (next >= units) return units;
    // Total first: a unit taken before the cancel and finished after it compares its done count with it.
    atomic.store<i32>(job + PARTS, next, 4);
    if (atomic.cmpxchg<u64>(job + TICKET, t, (t & ~(<u64>0xffffffff)) | (<u64>next << 16) | <u64>next) == t) return next;
    atomic.store<i32>(job + PARTS, units, 4);
  }
  return 0;
}

/** One byte of every 64 of `bytes` at p, summed (for keep): the lines come into this core's caches. */
@inline function touchRange(p: usize, bytes: usize): u32 {
  let s: u32 = 0;
  const end = p + bytes;
  let q = p;
  for (; q + 192 < end; q += 256) s += <u32>load<u8>(q) + <u32>load<u8>(q, 64) + <u32>load<u8>(q, 128) + <u32>load<u8>(q, 192);
  for (; q < end; q += 64) s += <u32>load<u8>(q);
  return s;
}

/** Takes the job's next unit, or -1 when none is left. */
@inline function takeUnit(job: usize): i32 {
  for (;;) {
    const t = atomic.load<u64>(job + TICKET);
    const next = <i32>(t & 0xffff);
    if (next >= <i32>((t >> 16) & 0xffff)) return -1;
    if (atomic.cmpxchg<u64>(job + TICKET, t, t + 1) == t) return next;
  }
  return -1;
}

/** Runs units of the job until none is left; `thread` picks this thread's scratch. Returns the units it ran. */
export function matmulRun(job: usize, thread: i32): i32 {
  let ran = 0;
  for (;;) {
    const u = takeUnit(job);
    if (u < 0) return ran;
    // The part holding unit u, and the unit's place in it.
    const parts = load<i32>(job + PARTS);
    let f = job + F;
    let first = 0;
    for (let p = 1; p < parts && u >= field(f, 15); p++) {
      first = field(f, 15);
      f += 64;
    }
    const kernel = field(f, 0);
    const type = field(f, 1);
    const rowBytes = field(f, 3);
    const rows = field(f, 4);
    const cols = field(f, 5);
    const xq = <usize>field(f, 6);
    const xd = <usize>field(f, 7);
    const xs = <usize>field(f, 8);
    const n = field(f, 9);
    const yStride = field(f, 11);
    const unitRows = field(f, 12);
    const scratch = <usize>field(f, 13) + <usize>thread * <usize>field(f, 14);
    const r0 = (u - first) * unitRows;
    const nr = min(unitRows, rows - r0);
    const w = <usize>field(f, 2) + <usize>r0 * <usize>rowBytes;
    const y = <usize>field(f, 10) + (<usize>r0 << 2);
    if (kernel == K_VEC) matmulVec(type, w, rowBytes, nr, cols, xq, xd, xs, n, y, yStride);
    else if (kernel == K_Q8_TILED) matmulQ8Tiled(type, w, rowBytes, nr, cols, xq, xd, xs, n, y, yStride, scratch);
    else if (ASC_FEATURE_RELAXED_SIMD && kernel == K_Q8_RELAXED) matmulQ8Relaxed(type, w, rowBytes, nr, cols, xq, xd, xs, n, y, yStride, scratch);
    else if (kernel == K_F32_TILED) matmulF32Tiled(type, w, rowBytes, nr, cols, xq, n, y, yStride, scratch);
    else keep(touchRange(w, <usize>nr * <usize>rowBytes));
    ran++;
    // The thread that finishes the last unit wakes a caller sleeping on the done count.
    if (atomic.add<i32>(job + DONE, 1) + 1 == atomic.load<i32>(job + PARTS, 4)) atomic.notify(job + DONE, 1);
  }
  return ran;
}
